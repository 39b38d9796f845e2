#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Check what the Debian packages carry: the provider and its driver file,
# usb4v-sim and its shim, the man pages, the DKMS source of every object
# the module's Kbuild lists; that libusb4verbs depends on a bounded range
# of libibverbs1; and that debian/changelog has the project's version.
# Without --debs, builds them first from the tracked tree (a scratch copy).
# Exits non-zero when the build fails or anything is missing.
#
#   tools/check-package.sh [--debs DIR]   DIR: where the .debs are
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "${1:-}" = --debs ]; then
	debs=$(realpath "$2")
else
	mkdir "$work/src"
	git ls-files -z | xargs -0 cp --parents -t "$work/src"
	(cd "$work/src" && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || {
		tail -40 "$work/build.log"
		echo "package: dpkg-buildpackage failed" >&2
		exit 1
	}
	debs=$work
fi

status=0
has() { # deb path-regex
	if ! dpkg-deb -c "$debs/$1" | awk '{print $6}' | grep -Eq "$2"; then
		echo "package: $1 lacks $2" >&2
		status=1
	fi
}
ver=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
up=${ver%-*}
# one version: CMake's project() is the source of it
cmake_ver=$(sed -n 's/^project(usb4verbs VERSION \([0-9.]*\).*/\1/p' "$top/CMakeLists.txt")
[ "$up" = "$cmake_ver" ] || {
	echo "package: debian/changelog says $up, CMakeLists.txt $cmake_ver" >&2
	status=1
}
arch=$(dpkg --print-architecture)
lib=libusb4verbs_${ver}_$arch.deb
tools=usb4verbs-tools_${ver}_$arch.deb
dkms=usb4verbs-dkms_${ver}_all.deb
has "$lib" '/libibverbs/libusb4verbs-rdmav[0-9]+\.so$'
has "$lib" '^\./etc/libibverbs\.d/usb4verbs\.driver$'
has "$lib" '/man7/usb4verbs\.7\.gz$'
has "$tools" '/man1/usb4v-sim\.1\.gz$'
dep=$(dpkg-deb -f "$debs/$lib" Depends)
bounded='libibverbs1 \(>= [0-9]+~\), libibverbs1 \(<< [0-9]+~\)'
[[ $dep =~ $bounded ]] || {
	echo "package: $lib does not bound libibverbs1 on both sides: $dep" >&2
	status=1
}
has "$tools" '^\./usr/bin/usb4v-sim$'
has "$tools" '/libusb4v-sim-shim\.so$'
has "$dkms" "^\./usr/src/usb4verbs-$up/dkms\.conf$"
has "$dkms" "^\./usr/src/usb4verbs-$up/include/uapi/rdma/usb4verbs-abi\.h$"
# the source of every object the module links (usb4verbs-y)
for obj in $(grep -o 'usb4verbs_[a-z]*\.o' kernel/Kbuild); do
	has "$dkms" "^\./usr/src/usb4verbs-$up/${obj%.o}\.c$"
done
[ $status = 0 ] && echo "package: $lib $tools $dkms built and complete"
exit $status
