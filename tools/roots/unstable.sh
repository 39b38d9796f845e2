#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Debian unstable, which moves without us: does the provider still build
# and load against its libibverbs, and the kernel module build against its
# kernel headers (W=1 and sparse)? Prints UNSTABLE lines and always exits
# 0 (77 when it cannot run): CI reports, unstable does not fail it.
# Needs root; roots: tools/roots/lib.sh.
#
#   tools/roots/unstable.sh [OUTDIR]
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
suite=sid
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
roots_private_shm "$0" "$@"
roots_init
out=${1:-$ROOTS_WORK/out}
mkdir -p "$out"
say() { echo "UNSTABLE: $*"; }

recipe_unstable() { # dir suite
	local dir=$1 suite=$2
	root_extract "$ROOTS_BASE" "$dir"
	root_apt "$dir" "$suite" update
	root_apt "$dir" "$suite" --no-install-recommends install build-essential \
		cmake libibverbs-dev librdmacm-dev libcmocka-dev ibverbs-utils \
		ibverbs-providers perftest procps linux-headers-amd64 sparse kmod
}
ROOTS_BASE=$(roots_minbase "$suite") || {
	echo "SKIP: no unstable root cached, and no debootstrap or Debian's archive to make one"
	exit 77
}
t=$(root_tarball "$suite" unstable "$(roots_hash "$(declare -f recipe_unstable)" "$ROOTS_BASE")" recipe_unstable) || {
	say "no root ($(ls "$ROOTS_WORK"/make-*.log 2>/dev/null | head -1))"
	exit 0
}
root=$ROOTS_WORK/unstable
root_extract "$t" "$root"
rc=$(in_root "$root" dpkg-query -W -f='${Version}' libibverbs-dev)
kver=$(ls "$root/usr/src" | sed -n 's/^linux-headers-\(.*-amd64\)$/\1/p' | head -1)
roots_copy_tree "$top" "$root/root/usb4verbs"

# provider: configure (the private-ABI gate), build with -Werror, load it
if in_root "$root" bash -c 'cd /root/usb4verbs &&
	cmake -S . -B build -DU4V_WERROR=ON && cmake --build build -j"$(nproc)"' \
	>"$out/build.log" 2>&1; then
	say "rdma-core $rc: provider $(cd "$root/root/usb4verbs/build/providers/usb4verbs" && ls libusb4verbs-rdmav*.so) builds with -Werror ($(in_root "$root" gcc -dumpfullversion))"
	if in_root "$root" --netns bash -c 'cd /root/usb4verbs/build &&
		ctest --output-on-failure -R "integ/test_provider_load|e2e/ibv_devinfo|e2e/write_bw_rc$|e2e/rc_pingpong_chk"' \
		>"$out/load.log" 2>&1; then
		say "rdma-core $rc: $(grep 'tests passed' "$out/load.log") (provider load, ibv_devinfo, ib_write_bw, ibv_rc_pingpong -c)"
	else
		say "rdma-core $rc: provider tests FAIL: $(grep -E '\*\*\*|Failed  ' "$out/load.log" | tr -s ' ' | tr '\n' ';')"
	fi
else
	say "rdma-core $rc: provider build FAIL: $(grep -m3 -E 'Error|error:' "$out/build.log" | tr '\n' ' ')"
fi

# kernel module: W=1 and sparse. Debian's 7.x headers lack
# scripts/checker-valid.sh, so C=1 would skip sparse: ask for it directly.
mkdir -p "$root/tmp/kmod"
cp -a "$top/kernel/." "$root/tmp/kmod/"
krc=0
in_root "$root" make -C "/lib/modules/$kver/build" M=/tmp/kmod W=1 \
	KBUILD_CHECKSRC=1 modules >"$out/kmod.log" 2>&1 || krc=$?
nw=$(grep -cE '^[^ ]*usb4verbs[a-z_]*\.[ch]:[0-9]+(:[0-9]+)?: (warning|error)' "$out/kmod.log" || true)
nc=$(grep -c '  CHECK ' "$out/kmod.log" || true)
if [ $krc -eq 0 ]; then
	say "linux $kver: module builds, $nw warnings in our files (W=1; sparse checked $nc files)"
else
	say "linux $kver: module build FAIL, $nw warnings/errors in our files: $(grep -m3 -E 'error' "$out/kmod.log" | tr '\n' ' ')"
fi
exit 0
