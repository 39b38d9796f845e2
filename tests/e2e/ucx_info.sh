#!/bin/bash
# SPDX-License-Identifier: MIT
#
# UCX sees both ends of a software cable: Debian's unmodified `ucx_info -d`
# inside `usb4v-sim exec` lists the rc_verbs and ud_verbs transports on
# usb4vsimN:1 of each end (UCX stat()s and access()es the device node and
# reads /sys/class/infiniband itself; the shim answers for the cable).
#
#   ucx_info.sh [--name TAG] [--timeout S]

# shellcheck disable=SC2034 # E2E_TEST is read by lib.sh
here=$(cd "$(dirname "$0")" && pwd)
E2E_TEST=ucx_info # log tag, used by lib.sh
tmo=30
# shellcheck source=lib.sh
. "$here/lib.sh"
e2e_opts "$@"

e2e_need ucx_info ucx-utils
cable=$E2E_ID-ucx-info
e2e_up "$cable"

out=$E2E_LOGDIR/ucx_info.log
e2e_exec "$cable" "$out" ucx_info -d
rc=$?
[ "$rc" -eq 0 ] || { e2e_show ucx_info "$out"; e2e_die "ucx_info -d exited $rc"; }

# "#      Transport: rc_verbs" is followed by "#         Device: usb4vsim0:1"
pairs=$(awk '/^# *Transport:/ { tl = $3 } /^# *Device:/ { print tl, $3 }' "$out")
for dev in "$D0" "$D1"; do
	for tl in rc_verbs ud_verbs; do
		if grep -qx "$tl $dev:1" <<<"$pairs"; then
			e2e_log "RESULT: $tl on $dev:1"
		else
			e2e_fail "ucx_info -d lists no $tl on $dev:1"
		fi
	done
done
[ "$E2E_FAILS" -eq 0 ] || e2e_show ucx_info "$out"
e2e_finish
