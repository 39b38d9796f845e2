#!/bin/bash
# SPDX-License-Identifier: MIT
#
# usb4v-sim as an ordinary user: bring a cable up, see it with ibv_devinfo,
# run an ib_write_bw pair and an rping pair (rdma_cm, by address) across it,
# take it down, and check that nothing is left in the user's state
# directory or /dev/shm. Runs as 'nobody' when started as root (skips, 77,
# when that is not possible).
set -u
sim=${USB4V_SIM:?}
port=${1:-18999}
user=nobody
if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null ||
	! runuser -u "$user" -- test -x "$sim"; then
	echo "SKIP: needs root to switch to $user, and $sim readable by $user"
	exit 77
fi
uid=$(id -u "$user")
as() { runuser -u "$user" -- env -u XDG_RUNTIME_DIR -u USB4V_SIM_DIR "$@"; }
name=e2e-unpriv-$$
fail=0
cleanup() {
	pkill -u "$user" -f "ib_write_bw -d usb4vsim.* -p $port" 2>/dev/null
	pkill -u "$user" -f "rping -s -a .* -p $port" 2>/dev/null
	as "$sim" down --name "$name" >/dev/null 2>&1
}
trap cleanup EXIT

read -r d0 d1 < <(as "$sim" up --name "$name") || { echo "FAIL: up"; exit 1; }
as "$sim" exec --name "$name" -- ibv_devinfo -d "$d0" | grep -q PORT_ACTIVE ||
	{ echo "FAIL: ibv_devinfo as $user"; fail=1; }
as timeout 30 "$sim" exec --name "$name" -- ib_write_bw -d "$d0" -p "$port" \
	-F -n 500 >/dev/null 2>&1 &
srv=$!
sleep 1
out=$(as timeout 30 "$sim" exec --name "$name" -- ib_write_bw -d "$d1" \
	-p "$port" -F -n 500 127.0.0.1 2>&1)
rc=$?
wait "$srv" || { echo "FAIL: server as $user"; fail=1; }
[ $rc -eq 0 ] || { echo "FAIL: client as $user ($rc)"; fail=1; }
echo "$out" | grep -A1 "#bytes" | sed 's/^/RESULT: /'

# rdma_cm: the server on end 0's address, the client resolves it (end 1)
a0=$(as "$sim" stat --name "$name" | awk -v d="$d0" '$1 == d && $3 == "GID" { print $2 }')
as timeout 30 "$sim" exec --name "$name" -- rping -s -a "$a0" -p "$port" \
	-V -C 10 >/dev/null 2>&1 &
srv=$!
sleep 1
out=$(as timeout 30 "$sim" exec --name "$name" -- rping -c -a "$a0" \
	-p "$port" -v -V -C 10 2>&1)
rc=$?
wait "$srv" || { echo "FAIL: rping server as $user"; fail=1; }
[ $rc -eq 0 ] && grep -q "rdma-ping-9: " <<<"$out" ||
	{ echo "FAIL: rping client as $user ($rc): $out"; fail=1; }
as "$sim" down --name "$name" || { echo "FAIL: down"; fail=1; }
if ls "/tmp/usb4v-sim-$uid/$name" >/dev/null 2>&1 ||
	ls /dev/shm | grep -q "usb4v-sim-$uid-$name"; then
	echo "FAIL: leftovers after down"
	fail=1
fi
[ $fail -eq 0 ] && echo "PASS: usb4v-sim as $user"
exit $fail
