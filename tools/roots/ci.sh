#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What is proven on Debian releases this machine does not run (needs root
# and, for a cold cache, debootstrap and Debian's archive; skipped without):
#   trixie      Debian 13: the packages built from the source package in a
#               build root, lintian, installed into a pristine root, used
#               as an ordinary user, purged (tools/roots/packages.sh);
#   bookworm    the same on Debian 12, without lintian;
#   unstable    rdma-core 65 and Linux 7.x: provider build and load, module
#               build; reported, never a failure (tools/roots/unstable.sh);
#   kroot-trixie  the Debian 13 root whose own kernel the VM tests boot
#               too (tools/roots/kroot.sh; made, or found in the cache);
#   dev-trixie, dev-bookworm   README's two commands as written, in a root
#               where only tools/deps.sh installed anything
#               (tools/roots/dev.sh).
# CI (tools/run-tests.sh) runs "trixie bookworm unstable kroot-trixie";
# tools/long-run.sh the rest. The sections run side by side (most of their
# time is one core's: dpkg, apt, debootstrap, lintian; roots of one release
# share its minimal root and its downloads, one apt at a time); each logs
# to OUTDIR/<section>.log, printed in order once it is done, and keeps its
# files in OUTDIR/<section>. Exit 1 when a section failed.
#
#   tools/roots/ci.sh OUTDIR SECTION...
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:?outdir}")
shift
mkdir -p "$out"
declare -A pid
for s in "$@"; do
	case $s in
	trixie) cmd=("$here/packages.sh" --lintian trixie "$out/$s") ;;
	bookworm) cmd=("$here/packages.sh" bookworm "$out/$s") ;;
	unstable) cmd=("$here/unstable.sh" "$out/$s") ;;
	kroot-*) cmd=("$here/kroot.sh" "${s#kroot-}") ;;
	dev-trixie | dev-bookworm) cmd=("$here/dev.sh" "${s#dev-}" "$out/$s") ;;
	*) echo "roots: unknown section $s" >&2; exit 2 ;;
	esac
	rm -f "$out/$s.rc"
	(
		t0=$SECONDS
		rc=0
		"${cmd[@]}" >"$out/$s.log" 2>&1 || rc=$?
		echo "$rc $((SECONDS - t0))" >"$out/$s.rc"
	) &
	pid[$s]=$!
done
status=0
for s in "$@"; do
	wait "${pid[$s]}"
	read -r rc secs <"$out/$s.rc" || { rc=1 secs="?"; }
	cat "$out/$s.log"
	case $rc in
	0) echo "roots: $s PASS ($secs s)" ;;
	77) echo "roots: $s SKIP ($secs s)" ;;
	*) echo "roots: $s FAIL ($secs s, logs: $out/$s.log, $out/$s)"; status=1 ;;
	esac
done
exit $status
