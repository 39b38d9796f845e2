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
tb_load_shim() { insmod /lib/modules/usb4verbs-tb.ko "$@"; }
tb_unload_shim() { timeout 60 rmmod usb4verbs; }
tb_unload() { tb_unload_shim; timeout 60 rmmod tbemu; }
# Back to the distribution's thunderbolt.ko and the soft cable.
tb_restore() {
	u4v_loaded && tb_unload_shim
	[ -d /sys/module/tbemu ] && timeout 60 rmmod tbemu
	insmod /lib/modules/thunderbolt.ko 2>/dev/null
	u4v_load
}

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
