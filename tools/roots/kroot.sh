#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A Debian root holding that release's own kernel, for the VM tests
# (tests/vm/run-vm.sh boots it, U4V_VM_KROOT): the kernel image and its
# modules taken from linux-image-<ver> with apt-get download + dpkg-deb -x
# (no initramfs is made), and what builds an out-of-tree module for it:
# linux-headers-amd64 (the matching headers), build-essential (the
# release's compiler, the one the kernel was built with) and sparse.
# Kept, extracted, under the cache (tools/roots/lib.sh) and remade with
# the recipe or the week; prints its directory. Needs root.
#
#   tools/roots/kroot.sh SUITE
# Exit status: 0 (path printed), 77 no archive and nothing cached.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
suite=${1:?suite}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root" >&2; exit 77; }
roots_init

recipe_kroot() { # dir suite
	local dir=$1 suite=$2 kver
	root_extract "$ROOTS_BASE" "$dir"
	root_apt "$dir" "$suite" update
	root_apt "$dir" "$suite" --no-install-recommends install build-essential \
		sparse kmod linux-headers-amd64
	kver=$(ls "$dir/usr/src" | sed -n 's/^linux-headers-\(.*-amd64\)$/\1/p' | head -1)
	[ -n "$kver" ]
	(
		flock 8
		in_root "$dir" --apt-cache "$suite" bash -c \
			"cd /var/cache/apt/archives && apt-get -q download linux-image-$kver"
	) 8>"$ROOTS_CACHE/apt-$suite.lock"
	dpkg-deb -x "$ROOTS_CACHE/apt-$suite"/linux-image-"$kver"_*.deb "$dir"
	depmod -b "$dir" "$kver"
	[ -e "$dir/boot/vmlinuz-$kver" ] && [ -e "$dir/lib/modules/$kver/build/Makefile" ]
}

ROOTS_BASE=$(roots_minbase "$suite") || {
	echo "SKIP: no $suite root cached, and no debootstrap or Debian's archive to make one" >&2
	exit 77
}
key=$(roots_hash "$(declare -f recipe_kroot)" "$ROOTS_BASE")
t=$(root_tarball "$suite" kroot "$key" recipe_kroot) || roots_die "$suite: no kernel root"
dir=$ROOTS_CACHE/kroots/$(basename "$t" .tar.zst)
mkdir -p "$ROOTS_CACHE/kroots"
(
	flock 9
	if [ ! -e "$dir/.complete" ]; then
		roots_remove "$dir.tmp"
		root_extract "$t" "$dir.tmp"
		mv "$dir.tmp" "$dir"
		touch "$dir/.complete"
	fi
	# older ones of this suite go once no test can still be using them
	find "$ROOTS_CACHE/kroots" -maxdepth 1 -name "$suite-kroot-*" -mtime +8 |
		while read -r d; do [ "$d" = "$dir" ] || roots_remove "$d"; done
) 9>"$ROOTS_CACHE/kroots.lock"
echo "$dir"
