# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared helpers of the end-to-end test drivers (sourced, bash).
#
# Environment:
#   USB4V_SIM   path of the usb4v-sim binary (set by CTest)
#   E2E_KEEP    if set, keep logs in $E2E_LOGDIR (default: a temp dir)

set -u

: "${USB4V_SIM:?USB4V_SIM must point at the usb4v-sim binary}"
SIM=$USB4V_SIM
# shellcheck source=tools/cable-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../tools/cable-lib.sh"
E2E_FAILS=0
E2E_PIDS=()
E2E_CABLES=()
E2E_LOGDIR=${E2E_LOGDIR:-$(mktemp -d /tmp/u4v-e2e.XXXXXX)}
# Cables of this driver are named "$E2E_ID-..." so that test runs of several
# build trees on one machine (same user, same state dir) never collide.
# shellcheck disable=SC2034 # used by the drivers
E2E_ID=e2e$$

e2e_log() { printf '[%s] %s\n' "${E2E_TEST:-e2e}" "$*"; }

e2e_fail() {
	E2E_FAILS=$((E2E_FAILS + 1))
	printf '[%s] FAIL: %s\n' "${E2E_TEST:-e2e}" "$*"
}

e2e_die() {
	printf '[%s] FAIL: %s\n' "${E2E_TEST:-e2e}" "$*"
	exit 1
}

# e2e_need TOOL [PACKAGE]: fail unless TOOL is on PATH (PACKAGE has it).
e2e_need() {
	command -v "$1" >/dev/null ||
		e2e_die "'$1' is not installed${2:+ ($2)}"
}

# e2e_exec CABLE OUT CMD...: CMD inside `usb4v-sim exec` on CABLE, killed
# after the driver's $tmo seconds, its output into OUT; CMD's status (124:
# timed out).
e2e_exec() {
	local cable=$1 out=$2

	shift 2
	timeout -k 5 "$tmo" "$SIM" exec --name "$cable" -- "$@" >"$out" 2>&1
}

# e2e_opts ARGS...: the options of a driver that takes no others:
# --name TAG (the log tag, E2E_TEST) and --timeout S (the driver's tmo).
# shellcheck disable=SC2034 # tmo is the driver's
e2e_opts() {
	while [ $# -gt 0 ]; do
		case $1 in
		--name) E2E_TEST=$2; shift 2 ;;
		--timeout) tmo=$2; shift 2 ;;
		*) echo "$(basename "$0"): unknown argument '$1'" >&2; exit 2 ;;
		esac
	done
}

# Kill what we started (by pid, process group first), bring our cables down.
e2e_cleanup() {
	local c
	cable_stop_pids "${E2E_PIDS[@]}"
	for c in "${E2E_CABLES[@]}"; do
		"$SIM" down --name "$c" >/dev/null 2>&1
	done
	if [ -z "${E2E_KEEP:-}" ]; then
		rm -rf "$E2E_LOGDIR"
	fi
}
trap e2e_cleanup EXIT
trap 'exit 130' INT TERM

# Bring down cables left by drivers that died without cleaning up (killed
# by a CTest timeout): "e2e<pid>-..." whose pid is gone.
e2e_sweep() {
	local name
	cable_sweep "$SIM" e2e | while read -r name; do
		e2e_log "removed stale cable $name"
	done
}

# e2e_up NAME [OPTIONS...]: bring a cable up; sets D0 and D1.
e2e_up() {
	local name=$1 out
	shift
	e2e_sweep
	"$SIM" down --name "$name" >/dev/null 2>&1
	E2E_CABLES+=("$name")
	out=$("$SIM" up --name "$name" "$@") || e2e_die "usb4v-sim up --name $name $* failed"
	cable_devs "$out" ||
		e2e_die "usb4v-sim up printed '$out', not two device names"
	e2e_log "cable $name: $D0 <-> $D1"
}

# Is TCP port $1 in LISTEN state (IPv4 or IPv6)?
# (The server is started only after this says no, see run_pair.sh.)
e2e_listening() {
	cable_tcp_listening "$1"
}

# e2e_addrs NAME: the IPv4 addresses of the cable's ends into A0 and A1.
e2e_addrs() {
	local out
	out=$("$SIM" stat --name "$1") || e2e_die "usb4v-sim stat --name $1 failed"
	A0=$(awk -v d="$D0" '$1 == d && $3 == "GID" { print $2 }' <<<"$out")
	A1=$(awk -v d="$D1" '$1 == d && $3 == "GID" { print $2 }' <<<"$out")
	[[ $A0 =~ ^127\. && $A1 =~ ^127\. ]] ||
		e2e_die "usb4v-sim stat shows no addresses for $D0/$D1"
	e2e_log "addresses: $D0 $A0, $D1 $A1"
}

# e2e_cm_listening CABLE PORT: does an rdma_cm id listen on PORT of the
# cable? Listeners are abstract unix sockets named after the cable's
# rendezvous token (usb4v-sim's cm_wire.h) in state LISTEN (flags 00010000).
e2e_cm_listening() {
	local token
	token=$(sed -n 's/^cm=//p' "$(e2e_state_dir)/$1/cable" 2>/dev/null)
	[ -n "$token" ] || return 1
	awk -v t="@usb4v-cm/$token/" -v p="/$2" 'index($NF, t) == 1 &&
		substr($NF, length($NF) - length(p) + 1) == p &&
		$4 == "00010000" { f = 1 } END { exit !f }' /proc/net/unix
}

# The state directory usb4v-sim uses (its rule, usb4v-sim(1)).
e2e_state_dir() {
	if [ -n "${USB4V_SIM_DIR:-}" ]; then
		echo "$USB4V_SIM_DIR"
	elif [ -n "${XDG_RUNTIME_DIR:-}" ]; then
		echo "$XDG_RUNTIME_DIR/usb4v-sim"
	else
		echo "/tmp/usb4v-sim-$(id -u)"
	fi
}

# e2e_crossed STATFILE B0 B1: the payload crossed the cable - end 0
# received at least B0 bytes, end 1 B1 (rx_bytes of usb4v-sim stat).
e2e_crossed() {
	local r0 r1
	read -r r0 r1 < <(awk '$1 == "rx_bytes" { print $2, $3 }' "$1")
	if [ "${r0:-0}" -ge "$2" ] && [ "${r1:-0}" -ge "$3" ]; then
		e2e_log "ok: payload crossed the cable (rx_bytes $r0 >= $2, $r1 >= $3)"
	else
		e2e_fail "payload did not cross the cable: rx_bytes $r0 / $r1, want >= $2 / $3"
	fi
}

# e2e_counter STATFILE NAME MIN: both ends' counter NAME of usb4v-sim stat
# add up to at least MIN.
e2e_counter() {
	local n
	n=$(awk -v c="$2" '$1 == c { print $2 + $3 }' "$1")
	if [ "${n:-0}" -ge "$3" ]; then
		e2e_log "ok: $2 $n >= $3"
	else
		e2e_fail "$2 ${n:-missing}, want >= $3"
	fi
}

# Print a log file with a prefix so it lands in the CTest output.
e2e_show() {
	local tag=$1 file=$2
	[ -f "$file" ] || return 0
	sed "s/^/[${E2E_TEST:-e2e}] $tag| /" "$file"
}

e2e_finish() {
	if [ "$E2E_FAILS" -ne 0 ]; then
		e2e_log "$E2E_FAILS check(s) failed"
		exit 1
	fi
	e2e_log "PASS"
	exit 0
}
