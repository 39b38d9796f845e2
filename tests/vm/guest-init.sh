#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# /init of the usb4verbs test VM. Every step prints
#   U4V-STEP <name> PASS|FAIL|SKIP [detail]
# and the run ends with U4V-DONE, then powers off. Every command is bounded.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /usr/sbin /sbin /root
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
ip link set lo up
export PATH=/usr/bin:/bin:/sbin:/usr/sbin
export HOME=/root
PLAN=$(cat /etc/u4v-plan)
echo "U4V-BEGIN plan=$PLAN kernel=$(uname -r) cpus=$(nproc)"

step() { # name rc [detail]
	if [ "$2" = 0 ]; then echo "U4V-STEP $1 PASS $3"; else echo "U4V-STEP $1 FAIL rc=$2 $3"; fi
}
skipstep() { echo "U4V-STEP $1 SKIP $2"; }
finish() {
	echo "U4V-DONE"
	sync
	poweroff -f
	sleep 10
}

# Kernel modules: the distro's, then ours.
rc=0
for m in $(cat /lib/modules/order); do
	insmod /lib/modules/$m 2>/tmp/insmod.err || { cat /tmp/insmod.err; rc=1; }
done
step modules_distro $rc
insmod /lib/modules/usb4verbs.ko soft_cable=1
step load_usb4verbs $?
devs=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')
case "$devs" in *usb4v0*usb4v1*) step ib_devices 0 "[$devs]" ;; *) step ib_devices 1 "[$devs]" ;; esac
ls -l /dev/infiniband/

# The kernel path without libibverbs: channels, frames, bogus doorbells.
if [ -x /usr/bin/u4v_ktest ]; then
	timeout 60 u4v_ktest 2
	step ktest $?
	# allow_direct=0: direct mode refused even for root
	timeout 20 u4v_ktest refused
	step direct_refused_param $?
else
	skipstep ktest "u4v_ktest not built"
fi

have_provider=0
[ -e /etc/libibverbs.d/usb4verbs.driver ] && have_provider=1

# Two processes over the cable: server on usb4v1, client on usb4v0.
# The whole VM step must stay under 5 minutes: stop starting pairs late.
BUDGET=$(cat /etc/u4v-budget 2>/dev/null || echo 200)
uptime_s() { cut -d. -f1 /proc/uptime; }
pair() { # name server-cmd client-cmd  (the client gets "localhost" appended)
	name=$1; srv=$2; cli=$3
	if [ "$(uptime_s)" -ge "$BUDGET" ]; then
		step $name 1 "not run: VM time budget (${BUDGET}s) spent"
		return
	fi
	timeout 35 $srv >/tmp/$name.srv 2>&1 &
	spid=$!
	sleep 1
	timeout 30 $cli localhost >/tmp/$name.cli 2>&1
	crc=$?
	wait $spid
	src=$?
	echo "--- $name server"; cat /tmp/$name.srv
	echo "--- $name client"; cat /tmp/$name.cli
	[ $crc = 0 ] && [ $src = 0 ]
	step $name $? "client=$crc server=$src"
}
perf() { # label dev tool args...
	label=$1; dev=$2; tool=$3; shift 3
	perf2 "$label" $dev $dev $tool "$@"
}
bw_of() { # the BW average column of a perftest log's last result line
	awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 {v=$4} END {print v}' "$1"
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
	# both sides' calibration failed: one more run for a figure
	if [ -z "$(good_bw $label)" ]; then
		echo "U4V-INFO $label: no figure (perftest calibration), once more"
		pair "${label}" "$tool -d $sdev -F $*" "$tool -d $cdev -F $*"
	fi
	perf_figure $label
}

if [ "$PLAN" = extra ] && [ -e /etc/u4v-extra.sh ]; then
	. /etc/u4v-extra.sh
fi

if [ "$PLAN" = full ]; then
	# Soft-RoCE first (the reference), then usb4verbs: same commands.
	if timeout 20 rdma link add rxe0 type rxe netdev lo; then
		step rxe_add 0
		perf rxe_write_bw rxe0 ib_write_bw -n 1000
		perf rxe_read_bw rxe0 ib_read_bw -n 1000
		perf rxe_send_bw_e rxe0 ib_send_bw -e -n 1000
		perf rxe_atomic_bw rxe0 ib_atomic_bw -n 1000
		timeout 20 rdma link delete rxe0
	else
		step rxe_add 1
	fi

	if [ $have_provider = 1 ]; then
		timeout 30 ibv_devinfo -v >/tmp/devinfo 2>&1
		rc=$?
		cat /tmp/devinfo
		grep -q 'hca_id:.*usb4v0' /tmp/devinfo && grep -q 'hca_id:.*usb4v1' /tmp/devinfo || rc=1
		step ibv_devinfo $rc
		pair rc_pingpong "ibv_rc_pingpong -d usb4v1 -g 0 -n 200 -c" "ibv_rc_pingpong -d usb4v0 -g 0 -n 200 -c"
		pair ud_pingpong "ibv_ud_pingpong -d usb4v1 -g 0 -n 200 -c" "ibv_ud_pingpong -d usb4v0 -g 0 -n 200 -c"
		pair srq_pingpong "ibv_srq_pingpong -d usb4v1 -g 0 -n 200 -c" "ibv_srq_pingpong -d usb4v0 -g 0 -n 200 -c"
		perf2 usb4v_write_bw usb4v1 usb4v0 ib_write_bw -n 1000
		perf2 usb4v_read_bw usb4v1 usb4v0 ib_read_bw -n 1000
		perf2 usb4v_send_bw_e usb4v1 usb4v0 ib_send_bw -e -n 1000
		perf2 usb4v_atomic_bw usb4v1 usb4v0 ib_atomic_bw -n 1000
	else
		skipstep ibv_devinfo "provider not built"
	fi

fi

# Unload with an application still attached: the device must be
# disassociated, rmmod must finish, and the application must notice.
if [ -x /usr/bin/u4v_ktest ]; then
	timeout 60 u4v_ktest hold >/tmp/hold.out 2>&1 &
	hpid=$!
	i=0
	while ! grep -q holding /tmp/hold.out && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
	timeout 60 rmmod usb4verbs
	rc=$?
	[ -d /sys/module/usb4verbs ] && rc=1
	step unload_with_user $rc
	wait $hpid
	hrc=$?
	cat /tmp/hold.out
	step holder_saw_removal $hrc
else
	timeout 60 rmmod usb4verbs
	step unload $?
fi
# The channel budget: soft_channels=1 (ENOSPC, returned when a peer leaves).
if [ -x /usr/bin/u4v_ktest ] && [ ! -d /sys/module/usb4verbs ]; then
	insmod /lib/modules/usb4verbs.ko soft_cable=1 soft_channels=1
	step load_budget_1 $?
	timeout 60 u4v_ktest budget
	step channel_budget $?
	timeout 60 rmmod usb4verbs
	step unload_budget $?
fi
# Direct mode: allow_direct=1, root with CAP_SYS_RAWIO only.
if [ -x /usr/bin/u4v_ktest ] && [ ! -d /sys/module/usb4verbs ]; then
	insmod /lib/modules/usb4verbs.ko soft_cable=1 allow_direct=1
	step load_allow_direct $?
	timeout 60 u4v_ktest direct 1
	step direct_mode $?
	timeout 20 u4v_ktest nocap
	step direct_refused_nocap $?
	timeout 20 u4v_ktest nobody
	step direct_refused_uid $?
	if [ "$PLAN" = full ] && [ $have_provider = 1 ]; then
		# the unmodified tools over direct channels (USB4V_NHI_DIRECT=1)
		export USB4V_NHI_DIRECT=1
		pair direct_rc_pingpong "ibv_rc_pingpong -d usb4v1 -g 0 -n 200" "ibv_rc_pingpong -d usb4v0 -g 0 -n 200"
		perf2 direct_write_bw usb4v1 usb4v0 ib_write_bw -n 1000
		unset USB4V_NHI_DIRECT
	fi
	timeout 60 rmmod usb4verbs
	step unload_direct $?
fi
dmesg | grep -iE 'usb4verbs|BUG|WARNING|Oops|general protection' | head -40
if dmesg | grep -qE 'BUG:|WARNING:|Oops|general protection'; then
	step kernel_clean 1
else
	step kernel_clean 0
fi
finish
