#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# Helpers for the guest's plans (sourced by /init). Every step prints
#   U4V-STEP <name> PASS|FAIL|SKIP [detail]
# and every command a step runs is bounded.

step() { # name rc [detail]
	if [ "$2" = 0 ]; then echo "U4V-STEP $1 PASS $3"; else echo "U4V-STEP $1 FAIL rc=$2 $3"; fi
}
skipstep() { echo "U4V-STEP $1 SKIP $2"; }

have_provider=0
[ -e /etc/libibverbs.d/usb4verbs.driver ] && have_provider=1
have_ktest=0
[ -x /usr/bin/u4v_ktest ] && have_ktest=1

# The soft cable's ends have net devices, as thunderbolt-net gives a real
# cable's: a veth pair, u4va (end 0) and u4vb (end 1), whose addresses are
# their GIDs. iproute2's ip: the shell prefers busybox's by name.
IP=/usr/bin/ip
u4v_netdevs() {
	$IP link add u4va type veth peer name u4vb &&
		$IP link set u4va up && $IP link set u4vb up
}
# Load usb4verbs.ko (soft cable) with extra parameters; unload it.
u4v_load() {
	insmod /lib/modules/usb4verbs.ko soft_cable=1 soft_netdevs=u4va,u4vb "$@"
}
u4v_unload() { timeout 60 rmmod usb4verbs; }
u4v_loaded() { [ -d /sys/module/usb4verbs ]; }

# The guest-side budget: start no new tool pair after this many seconds of
# uptime, so the whole run ends before the host's timeout.
BUDGET=$(cat /etc/u4v-budget 2>/dev/null || echo 200)
uptime_s() { cut -d. -f1 /proc/uptime; }
budget_left() { [ "$(uptime_s)" -lt "$BUDGET" ]; }

# Wait (up to 20 s) until something listens on TCP port $1 (in network
# namespace $2, if given): under TCG on a busy host a server can take
# seconds to get there.
wait_listen() {
	hex=$(printf '%04X' "$1")
	i=0
	while [ $i -lt 100 ]; do
		${2:+$IP netns exec $2} cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
			awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {f=1} END {exit !f}' && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

# Wait (up to 20 s) until an rdma_cm id listens on port $1 (any namespace).
# rdma_listen() shows the id in LISTEN before it makes the CM's listens on
# the devices; a request between the two is rejected (reason 8, no
# listener), which a TCG guest on a busy host lets happen: half a second
# more covers that window.
wait_cm_listen() {
	i=0
	while [ $i -lt 100 ]; do
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*:$1 " &&
			sleep 0.5 && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

# Two processes over the cable: the client gets "localhost" appended (or
# PAIR_HOST, empty for nothing). Both tools take their TCP side channel on
# port 18515 unless PAIR_PORT says; the client starts once the server
# listens there (PAIR_WAIT=wait_cm_listen: in rdma_cm; PAIR_NS: the
# server's network namespace). PAIR_RETRY_IF: a regex of the logs for
# which a failed pair runs again (three tries in all).
pair() { # name server-cmd client-cmd
	name=$1; srv=$2; cli=$3
	if ! budget_left; then
		step $name 1 "not run: VM time budget (${BUDGET}s) spent"
		return
	fi
	for try in 1 2 3; do
		timeout 35 $srv >/tmp/$name.srv 2>&1 &
		spid=$!
		${PAIR_WAIT:-wait_listen} "${PAIR_PORT:-18515}" ${PAIR_NS:-} ||
			echo "U4V-INFO $name: server not listening after 20 s"
		timeout 30 $cli ${PAIR_HOST-localhost} >/tmp/$name.cli 2>&1
		crc=$?
		wait $spid
		src=$?
		echo "--- $name server"; cat /tmp/$name.srv
		echo "--- $name client"; cat /tmp/$name.cli
		[ $crc = 0 ] && [ $src = 0 ] && break
		# PAIR_RETRY_IF: a failure of the host, not of the cable
		[ -n "${PAIR_RETRY_IF:-}" ] && [ $try -lt 3 ] &&
			cat /tmp/$name.srv /tmp/$name.cli | grep -qE "$PAIR_RETRY_IF" ||
			break
		echo "U4V-INFO $name: once more after /$PAIR_RETRY_IF/"
	done
	[ $crc = 0 ] && [ $src = 0 ]
	step $name $? "client=$crc server=$src"
}

bw_of() { # MB/s of a perftest log's last result line: bytes x message rate
	# (the BW column has two decimals: slow atomics under TCG round to 0.00)
	awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 {v=$1 * $5} END {if (v != "") printf "%.4f\n", v}' "$1"
}
positive() { awk -v b="${1:-0}" 'BEGIN { exit !(b + 0 > 0) }'; }
good_bw() { # the client's figure, else the server's for the same run
	# under TCG perftest's cycle-counter calibration can fail on one side
	# ("Correlation coefficient r^2 < 0.9") and report 0 for a good run
	for side in cli srv; do
		bw=$(bw_of /tmp/$1.$side)
		if positive "$bw"; then echo "$bw"; return; fi
	done
}
perf_figure() {
	bw=$(good_bw $1)
	echo "PERF $1 ${bw:-0}"
	positive "$bw"
	step ${1}_figure $? "MB/s=${bw:-none}"
}
perf2() { # label server-dev client-dev tool args...
	label=$1; sdev=$2; cdev=$3; tool=$4; shift 4
	pair "${label}" "$tool -d $sdev -F $*" "$tool -d $cdev -F $*"
	# both sides' calibration failed (the guest stalled): up to two more
	# runs for a figure
	for again in 1 2; do
		[ -z "$(good_bw $label)" ] || break
		echo "U4V-INFO $label: no figure (perftest calibration), once more"
		pair "${label}" "$tool -d $sdev -F $*" "$tool -d $cdev -F $*"
	done
	perf_figure $label
}
perf() { # label dev tool args...
	label=$1; dev=$2; tool=$3; shift 3
	perf2 "$label" $dev $dev $tool "$@"
}
