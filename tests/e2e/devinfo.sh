#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ibv_devices / ibv_devinfo -v through the distribution's libibverbs on both
# ends of a software cable: the devices are found, the port is active and the
# capabilities are those usb4verbs(7) documents (engine.h U4V_* constants).
#
#   devinfo.sh [--name TAG] [--timeout S]

# shellcheck disable=SC2034 # E2E_TEST is read by lib.sh
here=$(cd "$(dirname "$0")" && pwd)
E2E_TEST=devinfo # log tag, used by lib.sh
tmo=30
# shellcheck source=lib.sh
. "$here/lib.sh"
e2e_opts "$@"

e2e_need ibv_devinfo ibverbs-utils
cable=$E2E_ID-devinfo
e2e_up "$cable"

# expect FILE REGEX WHAT
expect() {
	if grep -Eq -- "$2" "$1"; then
		e2e_log "ok: $3: $(grep -E -m1 -- "$2" "$1" | sed 's/^[[:space:]]*//')"
	else
		e2e_fail "$3: no line matches /$2/"
	fi
}

out=$E2E_LOGDIR/devices.log
e2e_exec "$cable" "$out" ibv_devices
rc=$?
e2e_show ibv_devices "$out"
[ $rc -eq 0 ] || e2e_fail "ibv_devices exited with status $rc"
expect "$out" "^[[:space:]]*${D0}[[:space:]]+0255345600" "ibv_devices lists $D0 with its node GUID"
expect "$out" "^[[:space:]]*${D1}[[:space:]]+0255345600" "ibv_devices lists $D1 with its node GUID"

# Each end has its own loopback address (usb4v-sim stat), and its GIDs 2 and
# 3 are that address IPv4-mapped.
"$SIM" stat --name "$cable" >"$E2E_LOGDIR/stat.log" 2>&1 || e2e_fail "stat failed"
end_addr() { awk -v d="$1" '$1 == d && $3 == "GID" { print $2 }' "$E2E_LOGDIR/stat.log"; }
a0=$(end_addr "$D0")
a1=$(end_addr "$D1")
[[ $a0 =~ ^127\.[0-9]+\.[0-9]+\.[0-9]+$ && $a1 =~ ^127\.[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
	e2e_fail "stat shows no loopback address per end ('$a0', '$a1')"
[ "$a0" != "$a1" ] || e2e_fail "both ends have address $a0"
[ "$a0" != 127.0.0.1 ] || e2e_fail "end 0 has 127.0.0.1"

for dev in "$D0" "$D1"; do
	out=$E2E_LOGDIR/devinfo-$dev.log
	e2e_exec "$cable" "$out" ibv_devinfo -v -d "$dev"
	rc=$?
	e2e_show "$dev" "$out"
	[ $rc -eq 0 ] || e2e_fail "ibv_devinfo -v -d $dev exited with status $rc"
	num=${dev#usb4vsim}
	guid=$(printf '0255:3456:0000:%04x' "$num")
	expect "$out" "hca_id:[[:space:]]+$dev\$" "$dev: hca_id"
	expect "$out" "transport:[[:space:]]+InfiniBand \(0\)" "$dev: transport"
	expect "$out" "node_guid:[[:space:]]+$guid" "$dev: node_guid from sysfs"
	expect "$out" "vendor_id:[[:space:]]+0x8086" "$dev: vendor_id"
	expect "$out" "vendor_part_id:[[:space:]]+19252\$" "$dev: vendor_part_id 0x4b34"
	expect "$out" "phys_port_cnt:[[:space:]]+1\$" "$dev: one port"
	expect "$out" "state:[[:space:]]+PORT_ACTIVE \(4\)" "$dev: port active"
	expect "$out" "max_mtu:[[:space:]]+4096 \(5\)" "$dev: max_mtu"
	expect "$out" "active_mtu:[[:space:]]+4096 \(5\)" "$dev: active_mtu"
	expect "$out" "link_layer:[[:space:]]+Ethernet" "$dev: link layer"
	expect "$out" "max_msg_sz:[[:space:]]+0x40000000\$" "$dev: max_msg_sz 1 GiB"
	expect "$out" "max_qp:[[:space:]]+4096\$" "$dev: max_qp"
	expect "$out" "max_qp_wr:[[:space:]]+8192\$" "$dev: max_qp_wr"
	expect "$out" "max_sge:[[:space:]]+16\$" "$dev: max_sge"
	expect "$out" "max_cq:[[:space:]]+4096\$" "$dev: max_cq"
	expect "$out" "max_cqe:[[:space:]]+1048576\$" "$dev: max_cqe"
	expect "$out" "max_mr:[[:space:]]+65536\$" "$dev: max_mr"
	expect "$out" "max_mr_size:[[:space:]]+0x10000000000\$" "$dev: max_mr_size"
	expect "$out" "max_pd:[[:space:]]+4096\$" "$dev: max_pd"
	expect "$out" "max_qp_rd_atom:[[:space:]]+16\$" "$dev: max_qp_rd_atom"
	expect "$out" "max_srq:[[:space:]]+1024\$" "$dev: max_srq"
	expect "$out" "max_srq_wr:[[:space:]]+8192\$" "$dev: max_srq_wr"
	expect "$out" "max_ah:[[:space:]]+65536\$" "$dev: max_ah"
	expect "$out" "atomic_cap:[[:space:]]+ATOMIC_(HCA|GLOB)" "$dev: atomics"
	expect "$out" "gid_tbl_len:[[:space:]]+4\$" "$dev: gid_tbl_len"
	expect "$out" "pkey_tbl_len:[[:space:]]+1\$" "$dev: pkey_tbl_len"
	expect "$out" "GID\[  0\]:[[:space:]]+fe80:0000:0000:0000:$guid, RoCE v1" "$dev: GID 0"
	expect "$out" "GID\[  1\]:[[:space:]]+fe80::255:3456:0:$(printf '%x' "$num"), RoCE v2" "$dev: GID 1"
	addr=$(end_addr "$dev")
	IFS=. read -r o1 o2 o3 o4 <<<"$addr"
	hex=$(printf '%02x%02x:%02x%02x' "$o1" "$o2" "$o3" "$o4")
	expect "$out" "GID\[  2\]:[[:space:]]+0000:0000:0000:0000:0000:ffff:$hex, RoCE v1" "$dev: GID 2"
	expect "$out" "GID\[  3\]:[[:space:]]+::ffff:${addr//./\\.}, RoCE v2" "$dev: GID 3"
	expect "$out" "board_id:[[:space:]]+USB4V-SIM" "$dev: board_id"
done

# Both devices of one cable, and nothing else, are visible (real RDMA
# devices of the host are hidden by the shim).
out=$E2E_LOGDIR/list.log
e2e_exec "$cable" "$out" ibv_devinfo -l
e2e_show "ibv_devinfo -l" "$out"
expect "$out" "^2 HCAs found:" "exactly the cable's two devices are visible"

e2e_finish
