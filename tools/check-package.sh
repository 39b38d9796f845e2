#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build the Debian packages from the tracked tree (in a scratch copy) and
# check what they carry: the provider and its driver file, usb4v-sim and
# its shim, and the DKMS source of every object the module's Kbuild lists.
# Exits non-zero when the build fails or anything is missing.
#
#   tools/check-package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir "$work/src"
git ls-files -z | xargs -0 cp --parents -t "$work/src"
(cd "$work/src" && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || {
	tail -40 "$work/build.log"
	echo "package: dpkg-buildpackage failed" >&2
	exit 1
}

status=0
has() { # deb path-regex
	if ! dpkg-deb -c "$work/$1" | awk '{print $6}' | grep -Eq "$2"; then
		echo "package: $1 lacks $2" >&2
		status=1
	fi
}
ver=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
up=${ver%-*}
arch=$(dpkg --print-architecture)
lib=libusb4verbs_${ver}_$arch.deb
tools=usb4verbs-tools_${ver}_$arch.deb
dkms=usb4verbs-dkms_${ver}_all.deb
has "$lib" '/libibverbs/libusb4verbs-rdmav[0-9]+\.so$'
has "$lib" '^\./etc/libibverbs\.d/usb4verbs\.driver$'
has "$lib" '/man7/usb4verbs\.7\.gz$'
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
