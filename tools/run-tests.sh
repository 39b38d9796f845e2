#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The whole test suite, as CI runs it:
#   1. an ASan + UBSan build of everything; the engine's unit and
#      integration tests run in it;
#   2. a -Werror release build; the provider runs there inside the
#      distribution's unmodified tools (perftest, ibverbs-utils), which are
#      not built with sanitizers;
#   3. Debian 13 and 12 in debootstrap roots (as root, where Debian's
#      archive or a cached root is there): the packages built from the
#      source package, lintian (13), installed, used and purged; unstable
#      reported (tools/roots/ci.sh); Debian 13's root with its own kernel;
#   4. the kernel shim in QEMU, on this machine's kernel and on Debian 13's.
# Exits non-zero when any test fails.
#
#   tools/run-tests.sh [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh "${U4V_DEPS_ARGS:-}"

jobs=$(nproc)
out=${U4V_BUILD_DIR:-build}
status=0

cmake -S . -B "$out/asan" -DCMAKE_BUILD_TYPE=Debug -DU4V_SANITIZE=ON \
	-DU4V_WERROR=ON >/dev/null
cmake --build "$out/asan" -j"$jobs"
cmake -S . -B "$out/release" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DU4V_VM_TESTS=ON \
	-DU4V_WERROR=ON -DU4V_VM_KROOTS= >/dev/null
cmake --build "$out/release" -j"$jobs"

# verify_asan_link_order=0: tests re-exec themselves with the sim shim
# preloaded in front of the ASan runtime.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:verify_asan_link_order=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "== engine tests under ASan + UBSan"
(cd "$out/asan" && ctest --output-on-failure -L 'unit|integ' "$@") ||
	status=1
echo "== fuzzing (libFuzzer: bounded passes, regression inputs)"
# the fuzz tree is clang's: everything is built there too, -Werror, for
# the warnings gcc does not give
cmake -S . -B "$out/fuzz" -DCMAKE_C_COMPILER=clang -DU4V_FUZZ=ON \
	-DU4V_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$out/fuzz" -j"$jobs" >/dev/null
cmake --build "$out/fuzz" --target fuzz -j"$jobs" >/dev/null
(cd "$out/fuzz" && ctest --output-on-failure -L fuzz) || status=1
echo "== Debian packages (provider, tools, DKMS module source)"
tools/check-package.sh || status=1
echo "== tool-level tests (unmodified libibverbs, perftest, ibverbs-utils)"
(cd "$out/release" && ctest --output-on-failure -L e2e -j2 "$@") ||
	status=1
echo "== Debian 13 and 12 roots: packages from the source package; unstable reported"
tools/roots/ci.sh "$out/roots" trixie bookworm unstable kroot-trixie || status=1
# One VM at a time, after the rest: an emulated (TCG) guest that shares
# the host's cores with another guest or with e2e tools runs slowly enough
# for perftest's clock calibration and RC timeouts to misjudge it. The
# kernel and verbs tests boot Debian 13's kernel too, from the root made
# above (none without root or a cached root: those two are not registered).
echo "== kernel shim in a VM (Debian's kernels under QEMU)"
kroots=
if kroot=$(tools/roots/kroot.sh trixie 2>/dev/null); then
	kroots=trixie=$kroot
fi
cmake -S . -B "$out/release" -DU4V_VM_KROOTS="$kroots" >/dev/null
(cd "$out/release" && ctest --output-on-failure -L vm -j1 "$@") ||
	status=1
exit $status
