#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A new user of one Debian release (needs root; roots: tools/roots/lib.sh):
# in a root where tools/deps.sh installed what the project needs (cached;
# made from debootstrap's minimal root, which proves deps.sh there), copy
# the tracked tree and run README's two commands as they are written:
# tools/quickstart.sh, then tools/run-tests.sh (its VM tests and Debian
# roots skip there: no QEMU, no debootstrap); with --e2e only the
# tool-level suite (ctest -L e2e) in the tree the quick start built.
#
#   tools/roots/dev.sh [--e2e] SUITE [OUTDIR]
# Exit status: 0 pass, 1 fail, 77 no root/archive/cache to run with.
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
roots_start --e2e "$@"
e2e=$ROOTS_FLAG

# The root: minimal + what deps.sh installs (its list is part of the key).
recipe_dev() { # dir suite
	local dir=$1 suite=$2
	root_extract "$ROOTS_BASE" "$dir"
	mkdir -p "$dir/root/deps"
	cp "$top/tools/deps.sh" "$dir/root/deps/"
	root_apt "$dir" "$suite" update
	(
		flock 8
		in_root "$dir" --apt-cache "$suite" /root/deps/deps.sh
	) 8>"$ROOTS_CACHE/apt-$suite.lock"
	rm -rf "$dir/root/deps"
}
mb=$(roots_minbase "$suite") || {
	echo "SKIP: no $suite root cached, and no debootstrap or Debian's archive to make one"
	exit 77
}
ROOTS_BASE=$mb
t=$(root_tarball "$suite" dev "$(roots_hash "$(declare -f recipe_dev)" "$mb" "$(cat "$top/tools/deps.sh")")" recipe_dev) ||
	roots_die "$suite: no dev root"
root=$ROOTS_WORK/dev-$suite
root_extract "$t" "$root"

roots_log "== $suite: README's quick start in a copy of the tree"
# in /opt, readable by all: e2e/unprivileged runs usb4v-sim as nobody
roots_copy_tree "$top" "$root/opt/usb4verbs"
if in_root "$root" --netns bash -c 'cd /opt/usb4verbs && tools/quickstart.sh' \
	>"$out/quickstart.log" 2>&1; then
	grep -A1 '#bytes' "$out/quickstart.log" | tail -1 |
		sed "s/^/[roots] RESULT: $suite quick start ib_write_bw: /" >&2
else
	tail -30 "$out/quickstart.log" >&2
	fail "tools/quickstart.sh"
fi

if [ $e2e = 1 ]; then
	roots_log "== $suite: ctest -L e2e"
	if in_root "$root" --netns bash -c 'cd /opt/usb4verbs/build/release &&
		ctest -L e2e -j2 --output-on-failure' >"$out/e2e.log" 2>&1; then
		grep -E 'tests passed' "$out/e2e.log" | sed "s/^/[roots] $suite e2e: /" >&2
	else
		grep -E '\*\*\*|Failed|tests passed' "$out/e2e.log" | tail -20 >&2
		fail "ctest -L e2e"
	fi
else
	roots_log "== $suite: tools/run-tests.sh"
	if in_root "$root" --netns bash -c 'cd /opt/usb4verbs && tools/run-tests.sh' \
		>"$out/run-tests.log" 2>&1; then
		grep -E 'tests passed|roots:' "$out/run-tests.log" | sed "s/^/[roots] $suite run-tests: /" >&2
	else
		grep -E '\*\*\*|Failed|tests passed|roots:' "$out/run-tests.log" | tail -20 >&2
		fail "tools/run-tests.sh"
	fi
fi

if [ $ROOTS_FAILS -eq 0 ]; then
	roots_log "PASS: $suite: README's commands"
	exit 0
fi
roots_log "$suite: $ROOTS_FAILS failures (logs: $out)"
exit 1
