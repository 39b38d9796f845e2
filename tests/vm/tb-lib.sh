# SPDX-License-Identifier: MIT
# Guest helpers of the emulated-Thunderbolt plans (tb*.sh): tbemu.ko (two
# hosts, one cable: tests/tbemu) in place of thunderbolt.ko, and
# usb4verbs-tb.ko, the shim built against tbemu's symbols. Sourced once.

TBE=/sys/module/tbemu/parameters
TB_SVC=/sys/bus/thunderbolt/drivers/usb4verbs

# Load tbemu (args: its parameters) in place of thunderbolt.ko and of the
# soft cable; then tb_load_shim (args: usb4verbs' parameters).
tb_load() {
	u4v_loaded && u4v_unload
	[ -d /sys/module/thunderbolt ] && rmmod thunderbolt
	insmod /lib/modules/tbemu.ko "$@"
}
# XDomain requests wait TB_TIMEOUT_MS: under TCG, with tools spinning on
# both vCPUs, the peer's workqueue can take over the hardware's 1 s.
TB_TIMEOUT_MS=4000
tb_load_shim() {
	insmod /lib/modules/usb4verbs-tb.ko tb_timeout_ms=$TB_TIMEOUT_MS "$@"
}
tb_unload_shim() { timeout 60 rmmod usb4verbs; }
tb_unload() { tb_unload_shim; timeout 60 rmmod tbemu; }
# Back to the distribution's thunderbolt.ko and the soft cable.
tb_restore() {
	unset PAIR_RETRY_IF
	u4v_loaded && tb_unload_shim
	[ -d /sys/module/tbemu ] && timeout 60 rmmod tbemu
	insmod /lib/modules/thunderbolt.ko 2>/dev/null
	u4v_load
}

# Under TCG on a busy host the guest's clock jumps and its CPUs stall for
# longer than ibv_rc_pingpong's fixed ACK timeout (67 ms, 7 retries): a
# pair that ends in "retry counter exceeded" runs again, up to twice (said
# in the log); tb_restore ends that. Frames the emulated NHI refused
# still fail the plans' *_frames steps.
PAIR_RETRY_IF='retry counter exceeded'

tb_ndevs() { ls -d /sys/class/infiniband/usb4v* 2>/dev/null | wc -l; }
# Wait (up to $2 s, default 30) until there are $1 usb4v devices.
tb_wait_devs() {
	i=0
	while [ "$(tb_ndevs)" != "$1" ] && [ $i -lt $((${2:-30} * 5)) ]; do
		sleep 0.2
		i=$((i + 1))
	done
	[ "$(tb_ndevs)" = "$1" ]
}

# The PCI function of emulated host $1 (from tbemu's stats).
tb_pci() { sed -n "s/^host$1 pci=\([^ ]*\) .*/\1/p" $TBE/stats; }
# The usb4v device host $1's shim registered (its parent is host $1's NHI).
tb_dev() {
	pci=$(tb_pci "$1")
	for d in /sys/class/infiniband/usb4v*; do
		[ -e "$d" ] || continue
		[ "$(basename "$(readlink -f "$d/device")")" = "$pci" ] &&
			basename "$d" && return 0
	done
	return 1
}
# Counter $2 of host $1.
tb_stat() { sed -n "s/^host$1 .* $2=\([0-9]*\).*/\1/p" $TBE/stats; }
# Frames the engine delivered into both hosts' rings so far.
tb_frames() { echo $(($(tb_stat 0 frames) + $(tb_stat 1 frames))); }
# Counters that must stay 0: descriptors the shim got wrong.
tb_errors() {
	n=0
	for h in 0 1; do
		for c in not_posted bad_doorbell stopped_doorbell dma_fault pdf overrun; do
			n=$((n + $(tb_stat $h $c)))
		done
	done
	echo $n
}
tb_show() { echo "--- tbemu"; cat $TBE/stats; }

# Reload the shim (args: its parameters) and wait for both hosts' devices.
tb_reload_shim() {
	tb_unload_shim || return 1
	tb_load_shim "$@" || return 1
	tb_wait_devs 2 30 || return 1
	D0=$(tb_dev 0) D1=$(tb_dev 1)
}
# u4v_ktest with end 0 / end 1 on host 0's / host 1's device.
tb_ktest() { U4V_KTEST_DEV0=$D0 U4V_KTEST_DEV1=$D1 timeout 120 u4v_ktest "$@"; }

# Two processes over the cable that must both fail, each within $2 s (a
# clean error, not a hang).
pair_fails() { # name secs server-cmd client-cmd
	name=$1
	timeout "$2" $3 >/tmp/$name.srv 2>&1 &
	spid=$!
	wait_listen "${PAIR_PORT:-18515}" || echo "U4V-INFO $name: server not listening after 20 s"
	timeout "$2" $4 localhost >/tmp/$name.cli 2>&1
	crc=$?
	wait $spid
	src=$?
	echo "--- $name server"; cat /tmp/$name.srv
	echo "--- $name client"; cat /tmp/$name.cli
	[ $crc != 0 ] && [ $crc != 124 ] && [ $src != 0 ] && [ $src != 124 ]
	step $name $? "client=$crc server=$src (both must fail, in time)"
}
