#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Fresh machine to first figure: install what is missing, build, bring up a
# software cable (20 Gb/s wire model), show one end with ibv_devinfo, run an
# unmodified ib_write_bw pair across it, take the cable down.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/release -j"$(nproc)" >/dev/null
sim=build/release/tools/usb4v-sim/usb4v-sim
name=quickstart-$$
port=$((20000 + $$ % 10000))

cleanup() {
	pkill -f "ib_write_bw -d usb4vsim.* -p $port" 2>/dev/null || true
	"$sim" down --name "$name" >/dev/null 2>&1 || true
}
trap cleanup EXIT

read -r dev0 dev1 < <("$sim" up --name "$name")
echo "== cable $name: $dev0 <-> $dev1"
"$sim" exec --name "$name" -- ibv_devinfo -d "$dev0"
echo "== ib_write_bw, server on $dev0, client on $dev1"
timeout 60 "$sim" exec --name "$name" -- \
	ib_write_bw -d "$dev0" -p "$port" -F -s 65536 -D 3 >/dev/null &
server=$!
sleep 1
timeout 60 "$sim" exec --name "$name" -- \
	ib_write_bw -d "$dev1" -p "$port" -F -s 65536 -D 3 127.0.0.1
wait "$server"
echo "== cable counters"
"$sim" stat --name "$name"
