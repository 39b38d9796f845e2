#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Run a command in a Debian root (tools/roots/lib.sh: own mount namespace,
# /proc /sys /dev /dev/pts /dev/shm bound, unmounted when it ends); each
# --bind DIR is shown at the same path inside.
#
#   tools/roots/in-root.sh [--bind DIR]... ROOT CMD...
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
opts=()
while [ "${1:-}" = --bind ]; do
	opts+=(--bind "$2")
	shift 2
done
root=${1:?root}
shift
in_root "$root" "${opts[@]}" "$@"
