#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Install the Debian packages this project needs, if any is missing, on
# Debian 12 (bookworm) or 13 (trixie). Needs root (or sudo) only when
# something has to be installed.
#
#   tools/deps.sh [--vm]     --vm adds what CI's kernel, VM and Debian-root
#                            tests need
set -euo pipefail

# One package a line: "NAME [GROUP]"; a package without a group is always
# needed, one in group "vm" only with --vm. Every name must exist on both
# releases: tools/roots/dev.sh installs this list in a Debian 13 root.
# Where a package's name carries a version that differs between releases,
# use the distribution's unversioned package (libclang-rt-dev, not
# libclang-rt-14-dev).
table='
build-essential
cmake
pkg-config
libibverbs-dev
ibverbs-utils
ibverbs-providers
rdma-core
python3-pyverbs
perftest
libcmocka-dev
clang
libclang-rt-dev
valgrind
python3
procps
psmisc
iproute2
gnuplot-nox
debhelper
dh-dkms
dpkg-dev
git
rdmacm-utils
librdmacm-dev
libfabric-bin
ucx-utils
libucx-dev
openmpi-bin
libopenmpi-dev
debootstrap          vm
zstd                 vm
lintian              vm
qemu-system-x86      vm
busybox-static       vm
linux-image-amd64    vm
linux-headers-amd64  vm
kmod                 vm
cpio                 vm
xz-utils             vm
sparse               vm
'

want_vm=0
[ "${1:-}" = "--vm" ] && want_vm=1

pkgs=()
while read -r name group; do
	[ -n "$name" ] || continue
	[ "${group:-}" = vm ] && [ $want_vm = 0 ] && continue
	pkgs+=("$name")
done <<<"$table"

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || {
		echo "deps: not root and no sudo: install these as root" >&2
		exit 1
	}
	sudo=sudo
fi
apt=($sudo env DEBIAN_FRONTEND=noninteractive apt-get)
"${apt[@]}" update -qq
"${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
