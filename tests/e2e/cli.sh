#!/bin/bash
# SPDX-License-Identifier: MIT
#
# usb4v-sim command-line behaviour.
#
#   cli.sh [--name TAG] SECTION
#
# SECTION: misuse     every misuse exits 2 with a message on stderr
#          lifecycle  up / list / stat / set / down, lowest free index
#          down_clean `down` leaves nothing: cable dir, segment, state dir
#          parallel   concurrent `up`s get distinct device numbers
#          exec_env   what `exec` sets up (also --end), exit status passthrough
# Cable names start with e2e<pid>-SECTION so that sections (and runs from
# several build trees) can run in parallel.

# shellcheck disable=SC2034 # E2E_TEST is read by lib.sh
here=$(cd "$(dirname "$0")" && pwd)
E2E_TEST=cli # log tag, used by lib.sh
while [ $# -gt 1 ]; do
	case $1 in
	--name) E2E_TEST=$2; shift 2 ;;
	*) break ;;
	esac
done
section=${1:?section}
# shellcheck source=lib.sh
. "$here/lib.sh"
P=$E2E_ID-$section
uid=$(id -u)

# run EXPECTED_STATUS STDERR_REGEX ARGS...: usb4v-sim ARGS must exit with
# EXPECTED_STATUS and print something matching STDERR_REGEX on stderr.
run() {
	local want=$1 re=$2 rc
	shift 2
	"$SIM" "$@" >"$E2E_LOGDIR/out" 2>"$E2E_LOGDIR/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		e2e_fail "usb4v-sim $*: exit $rc, want $want; stderr: $(head -c 300 "$E2E_LOGDIR/err")"
	elif [ -n "$re" ] && ! grep -Eq -- "$re" "$E2E_LOGDIR/err"; then
		e2e_fail "usb4v-sim $*: stderr lacks /$re/: $(head -c 300 "$E2E_LOGDIR/err")"
	else
		e2e_log "ok: usb4v-sim $* -> $rc $(head -n1 "$E2E_LOGDIR/err")"
	fi
}


case $section in
misuse)
	c=$P-m
	run 2 "Usage"
	run 2 "unknown command" frobnicate
	run 2 "invalid cable name" up --name 'a/b'
	run 2 "invalid cable name" up --name ''
	run 2 "invalid cable name" up --name ..
	run 2 "invalid cable name" up --name 'with space'
	run 2 "invalid cable name" up --name "$(printf 'x%.0s' {1..33})"
	run 2 "unknown option" up --name "$c" --frobnicate 1
	run 2 "unexpected argument" up "$c"
	run 2 "needs a value" up --name "$c" --rate
	run 2 "in \[0,1\]" up --name "$c" --drop 1.5
	run 2 "in \[0,1\]" up --name "$c" --dup -0.1
	run 2 "in \[0,1\]" up --name "$c" --reorder 2
	run 2 "in \[0,1\]" up --name "$c" --crc 1.01
	run 2 "in \[0,1\]" up --name "$c" --stranded -1
	run 2 "in \[0,1\]" up --name "$c" --ack-drop 7
	run 2 "not a number" up --name "$c" --drop abc
	run 2 "not a number" up --name "$c" --drop nan
	run 2 "non-negative" up --name "$c" --rate -1
	run 2 "non-negative" up --name "$c" --latency -5
	run 2 "on' or 'off" up --name "$c" --e2e maybe
	run 2 "power of two" up --name "$c" --ring-depth 100
	run 2 "out of range" up --name "$c" --ring-depth 8
	run 2 "out of range" up --name "$c" --ring-depth 8192
	run 2 "non-negative integer" up --name "$c" --channels x
	run 2 "non-negative integer" up --name "$c" --seed -3
	run 2 "given twice" up --name "$c" --rate 1 --rate 2
	run 2 "does not apply" down --name "$c" --rate 1
	run 2 "unexpected argument|does not apply|unknown option" list --name "$c"
	run 2 "no such cable" down --name "$c"
	run 2 "no such cable" stat --name "$c"
	run 2 "no such cable" set --name "$c" --drop 0.1
	run 2 "no such cable" exec --name "$c" -- true
	# nothing above may have created the cable
	[ -e "$(e2e_state_dir)/$c" ] && e2e_fail "a failed command left $(e2e_state_dir)/$c"
	[ -e "/dev/shm/usb4v-sim-$uid-$c" ] && e2e_fail "a failed command left /dev/shm/usb4v-sim-$uid-$c"

	e2e_up "$c"
	run 2 "taken" up --name "$c"
	run 2 "missing '--'" exec --name "$c" true
	run 2 "missing '--'" exec --name "$c"
	run 2 "no command" exec --name "$c" --
	run 2 "out of range" exec --name "$c" --end 2 -- true
	run 2 "non-negative integer" exec --name "$c" --end x -- true
	run 2 "does not apply" up --name "$c-2" --end 0
	run 2 "live cable" set --name "$c" --ring-depth 64
	run 2 "live cable" set --name "$c" --channels 2
	run 2 "nothing to change" set --name "$c"
	run 2 "in \[0,1\]" set --name "$c" --drop 3
	run 0 "" --help
	grep -q "exec" "$E2E_LOGDIR/out" || e2e_fail "--help does not describe exec"
	run 0 "" down --name "$c"
	;;

lifecycle)
	a=$P-a b=$P-b c=$P-c
	e2e_up "$a" --rate 10 --latency 2.5 --e2e off --drop 0.01 --dup 0.02 \
		--reorder 0.03 --crc 0.04 --stranded 0.05 --ack-drop 0.06 \
		--ring-depth 64 --channels 3 --seed 42
	a0=$D0
	run 0 "" stat --name "$a"
	cp "$E2E_LOGDIR/out" "$E2E_LOGDIR/stat-a"
	e2e_show stat "$E2E_LOGDIR/stat-a"
	for f in tx_frames tx_bytes rx_frames rx_bytes fault_drop fault_dup \
		fault_reorder fault_crc fault_stranded rx_overflow retransmits \
		dup_acks stranded_rescues rnr_naks_sent rnr_naks_rcvd \
		seq_naks_sent seq_naks_rcvd dup_frames_rcvd crc_discards \
		bad_frames ooo_frames; do
		grep -Eq "^  $f +[0-9]+ +[0-9]+\$" "$E2E_LOGDIR/stat-a" ||
			e2e_fail "stat does not print counter $f for both ends"
	done
	for re in "rate +10 Gbit/s" "latency +2.5 us" "ring_depth +64" \
		"channels +3" "e2e +off" "seed +42" \
		"end0->end1 drop=0.01 dup=0.02 reorder=0.03 crc=0.04 stranded=0.05 ack_drop=0.06" \
		"end1->end0 drop=0.01 dup=0.02 reorder=0.03 crc=0.04 stranded=0.05 ack_drop=0.06"; do
		grep -Eq -- "$re" "$E2E_LOGDIR/stat-a" || e2e_fail "stat lacks /$re/"
	done
	run 0 "" set --name "$a" --drop 0.5 --rate 0
	"$SIM" stat --name "$a" >"$E2E_LOGDIR/stat-a2" 2>&1
	grep -q "drop=0.5 " "$E2E_LOGDIR/stat-a2" || e2e_fail "set --drop 0.5 not visible in stat"
	grep -q "unthrottled" "$E2E_LOGDIR/stat-a2" || e2e_fail "set --rate 0 not visible in stat"
	grep -q "dup=0.02 " "$E2E_LOGDIR/stat-a2" || e2e_fail "set changed an option it was not given"

	e2e_up "$b"
	b0=$D0
	"$SIM" list >"$E2E_LOGDIR/list" 2>&1 || e2e_fail "list failed"
	e2e_show list "$E2E_LOGDIR/list"
	grep -Eq "^$a +$a0 " "$E2E_LOGDIR/list" || e2e_fail "list lacks $a"
	grep -Eq "^$b +$b0 " "$E2E_LOGDIR/list" || e2e_fail "list lacks $b"
	[ "$a0" != "$b0" ] || e2e_fail "two live cables share device $a0"
	# every end of every cable has its own loopback address
	addrs=$( { "$SIM" stat --name "$a"; "$SIM" stat --name "$b"; } |
		awk '$3 == "GID" { print $2 }')
	[ "$(wc -l <<<"$addrs")" -eq 4 ] || e2e_fail "stat shows addresses '$addrs'"
	[ "$(sort -u <<<"$addrs" | grep -c '^127\.')" -eq 4 ] ||
		e2e_fail "the ends of two cables do not have 4 distinct 127/8 addresses: $addrs"
	# the lowest free index is reused
	"$SIM" down --name "$a" || e2e_fail "down $a failed"
	e2e_up "$c"
	[ "$D0" = "$a0" ] || e2e_log "note: $c got $D0, $a had $a0 (another cable took the index?)"
	n0=${D0#usb4vsim}
	[ $((n0 % 2)) -eq 0 ] || e2e_fail "end 0 device $D0 is not even"
	[ "$D1" = "usb4vsim$((n0 + 1))" ] || e2e_fail "end 1 is $D1, not usb4vsim$((n0 + 1))"
	# the sysfs tree carries the provider's file
	sf=$(e2e_state_dir)/$c/sysfs/class/infiniband/$D1/usb4v_sim
	grep -qx "shm=/usb4v-sim-$uid-$c end=1" "$sf" || e2e_fail "$sf: $(cat "$sf" 2>&1)"
	"$SIM" down --name "$b" || e2e_fail "down $b failed"
	"$SIM" down --name "$c" || e2e_fail "down $c failed"
	;;

down_clean)
	c=$P-d
	e2e_up "$c"
	dir=$(e2e_state_dir)/$c
	[ -d "$dir/sysfs/class/infiniband_verbs" ] || e2e_fail "$dir has no sysfs tree"
	[ -e "/dev/shm/usb4v-sim-$uid-$c" ] || e2e_fail "segment /dev/shm/usb4v-sim-$uid-$c missing after up"
	perm=$(stat -c %a "$(e2e_state_dir)")
	[ "$perm" = 700 ] || e2e_fail "state dir mode is $perm, not 700"
	"$SIM" down --name "$c" || e2e_fail "down failed"
	[ -e "$dir" ] && e2e_fail "down left $dir"
	[ -e "/dev/shm/usb4v-sim-$uid-$c" ] && e2e_fail "down left /dev/shm/usb4v-sim-$uid-$c"
	"$SIM" list 2>&1 | grep -q "^$c " && e2e_fail "list still shows $c"
	run 2 "no such cable" down --name "$c"
	# a crash between segment and directory: down cleans up either half
	e2e_up "$c"
	rm -rf "$dir"
	run 2 "taken" up --name "$c"
	run 0 "" down --name "$c"
	[ -e "/dev/shm/usb4v-sim-$uid-$c" ] && e2e_fail "down left a segment without directory"
	e2e_up "$c"
	rm -f "/dev/shm/usb4v-sim-$uid-$c"
	run 2 "stale" exec --name "$c" -- true
	"$SIM" list 2>&1 | grep -q "^$c .*stale" || e2e_fail "list does not flag a stale cable"
	run 0 "" down --name "$c"
	[ -e "$dir" ] && e2e_fail "down left the directory of a stale cable"
	;;

parallel)
	pids=()
	for i in 1 2 3 4 5 6; do
		"$SIM" down --name "$P-$i" >/dev/null 2>&1
		E2E_CABLES+=("$P-$i")
		"$SIM" up --name "$P-$i" >"$E2E_LOGDIR/up-$i" 2>&1 &
		pids+=($!)
	done
	for i in 1 2 3 4 5 6; do
		wait "${pids[$((i - 1))]}" || e2e_fail "parallel up $i failed: $(cat "$E2E_LOGDIR/up-$i")"
	done
	devs=$(cat "$E2E_LOGDIR"/up-* | tr ' ' '\n' | grep -c .)
	uniq=$(cat "$E2E_LOGDIR"/up-* | tr ' ' '\n' | grep . | sort -u | wc -l)
	e2e_log "devices: $(cat "$E2E_LOGDIR"/up-* | tr '\n' ' ')"
	[ "$devs" -eq 12 ] && [ "$uniq" -eq 12 ] || e2e_fail "parallel ups gave $uniq distinct of $devs devices"
	for i in 1 2 3 4 5 6; do
		"$SIM" down --name "$P-$i" >/dev/null 2>&1 &
	done
	wait
	for i in 1 2 3 4 5 6; do
		[ -e "$(e2e_state_dir)/$P-$i" ] && e2e_fail "parallel down left $P-$i"
	done
	;;

exec_env)
	c=$P-e
	e2e_up "$c"
	"$SIM" exec --name "$c" -- sh -c 'exit 7'
	rc=$?
	[ $rc -eq 7 ] || e2e_fail "exec -- sh -c 'exit 7' returned $rc"
	"$SIM" exec --name "$c" -- /nonexistent/program 2>/dev/null
	rc=$?
	[ $rc -eq 127 ] || e2e_fail "exec of a missing program returned $rc, want 127"
	LD_PRELOAD='' RDMAV_DRIVERS='' "$SIM" exec --name "$c" -- env >"$E2E_LOGDIR/env" 2>&1 ||
		e2e_fail "exec -- env failed: $(cat "$E2E_LOGDIR/env")"
	grep -qx "SYSFS_PATH=$(e2e_state_dir)/$c/sysfs" "$E2E_LOGDIR/env" || e2e_fail "SYSFS_PATH: $(grep SYSFS_PATH "$E2E_LOGDIR/env")"
	grep -qx "USB4V_SIM_CABLE=$c" "$E2E_LOGDIR/env" || e2e_fail "USB4V_SIM_CABLE not set"
	drv=$(sed -n 's/^RDMAV_DRIVERS=//p' "$E2E_LOGDIR/env")
	[[ $drv == /*/libusb4verbs ]] || e2e_fail "RDMAV_DRIVERS=$drv is not an absolute provider prefix"
	[ -f "$drv-rdmav${U4V_PABI:?}.so" ] || e2e_fail "RDMAV_DRIVERS=$drv: $drv-rdmav$U4V_PABI.so does not exist"
	pre=$(sed -n 's/^LD_PRELOAD=//p' "$E2E_LOGDIR/env")
	[[ $pre == /*/libusb4v-sim-shim.so ]] || e2e_fail "LD_PRELOAD=$pre"
	# an existing LD_PRELOAD is kept, after the shim
	LD_PRELOAD=libfoo-not-there.so "$SIM" exec --name "$c" -- printenv LD_PRELOAD >"$E2E_LOGDIR/pre" 2>/dev/null
	grep -q ":libfoo-not-there.so\$" "$E2E_LOGDIR/pre" || e2e_fail "existing LD_PRELOAD dropped: $(cat "$E2E_LOGDIR/pre")"
	# the shim only hides NETLINK_RDMA; the process otherwise works normally
	out=$("$SIM" exec --name "$c" -- sh -c 'echo hello | cat')
	[ "$out" = hello ] || e2e_fail "a pipeline under the shim printed '$out'"
	# middleware looks for the device node and reads /sys itself (UCX):
	# the node is a character device anyone may read and write, whichever
	# libc call asks (dash's test: stat + faccessat, coreutils' test:
	# euidaccess), and /sys/class/infiniband/DEV is the cable's tree
	# (device usb4vsimN's node is uverbsN)
	n0=/dev/infiniband/uverbs${D0#usb4vsim} n1=/dev/infiniband/uverbs${D1#usb4vsim}
	out=$("$SIM" exec --name "$c" -- sh -c "test -c $n1 && test -r $n1 &&
		test -w $n1 && /usr/bin/test -w $n0 && echo node-ok
		cat /sys/class/infiniband/$D1/ports/1/gid_attrs/types/3
		cat /sys/class/infiniband/$D1/node_desc" 2>&1)
	want=$(printf 'node-ok\nRoCE v2\nusb4verbs software cable %s end 1' "$c")
	[ "$out" = "$want" ] || e2e_fail "device node and /sys under exec: '$out'"
	# --end E: that end's device alone, under end 0's name, on either end
	for e in 0 1; do
		out=$("$SIM" exec --name "$c" --end $e -- sh -c "ibv_devices | awk 'NR > 2 { print \$1 }'
			cat /sys/class/infiniband/$D0/node_desc; test -w $n0 && echo node-ok" 2>&1)
		want=$(printf '%s\nusb4verbs software cable %s end %s\nnode-ok' "$D0" "$c" $e)
		[ "$out" = "$want" ] || e2e_fail "exec --end $e shows '$out', want '$want'"
	done
	;;

*)
	e2e_die "unknown section '$section'"
	;;
esac
e2e_finish
