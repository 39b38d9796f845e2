# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shell helpers shared by the scripts that drive software cables
# (tests/e2e/lib.sh, bench/run.sh): sourced, bash. Each caller keeps its own
# logging and naming; what is the same for all of them is here once.

# cable_stop_pids PID...: TERM each, give it 2 s, then KILL; reap them.
cable_stop_pids() {
	local pid
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "$@"; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
}

# cable_sweep SIM PREFIX: bring down the cables "PREFIX<pid>-..." whose
# process is gone (a driver killed by a timeout); prints each one removed.
cable_sweep() {
	local sim=$1 prefix=$2 name
	"$sim" list 2>/dev/null | while read -r name _; do
		[[ $name =~ ^$prefix([0-9]+)- ]] || continue
		kill -0 "${BASH_REMATCH[1]}" 2>/dev/null && continue
		"$sim" down --name "$name" >/dev/null 2>&1 && echo "$name"
	done
}

# cable_devs OUTPUT: the two device names `usb4v-sim up` printed, into D0
# and D1; fails if OUTPUT is not two of them.
cable_devs() {
	read -r D0 D1 <<<"$1"
	[[ $D0 =~ ^usb4vsim[0-9]+$ && $D1 =~ ^usb4vsim[0-9]+$ ]]
}

# cable_tcp_listening PORT: is TCP port PORT in LISTEN state (IPv4 or IPv6)?
cable_tcp_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}
