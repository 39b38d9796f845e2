#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Install the Debian 12 packages this project needs, if any is missing.
# Needs root (or sudo) only when something has to be installed.
#
#   tools/deps.sh [--vm]     --vm adds what the kernel/VM tests need
set -euo pipefail

pkgs=(build-essential cmake pkg-config libibverbs-dev ibverbs-utils
      ibverbs-providers rdma-core perftest libcmocka-dev clang
      libclang-rt-14-dev valgrind python3 procps psmisc iproute2 gnuplot-nox
      debhelper dh-dkms dpkg-dev git rdmacm-utils librdmacm-dev
      libfabric-bin)
if [ "${1:-}" = "--vm" ]; then
	pkgs+=(qemu-system-x86 busybox-static linux-image-amd64
	       linux-headers-amd64 kmod cpio xz-utils sparse)
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo=
[ "$(id -u)" -ne 0 ] && sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
