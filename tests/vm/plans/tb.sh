# The shim's Thunderbolt service over an emulated host-to-host cable
# (tbemu.ko: two hosts in this kernel): XDomain login on both hosts, one
# usb4v device each, channels negotiated over XDomain with their own rings,
# HopIDs and paths, the unmodified tools across, the channel budget (the
# shim's and the NHI's rings) and direct mode on the NHI's register BAR.
# Leaves the soft cable loaded again for the next plan.
. /etc/u4v/tb-lib.sh

# a budget of 8 channels per peer: the raw test holds up to 6 at once
# (four lanes of one pair of contexts; the emulated NHI has 7 ring pairs)
tb_load && tb_load_shim tb_channels=8
step tb_load $?
tb_wait_devs 2 30
rc=$?
ls -l $TB_SVC 2>/dev/null
dmesg | grep -E 'usb4verbs|tbemu|thunderbolt' | tail -20
D0=$(tb_dev 0) D1=$(tb_dev 1)
[ -n "$D0" ] && [ -n "$D1" ] && [ -e $TB_SVC/0-1.0 ] && [ -e $TB_SVC/1-1.0 ] || rc=1
step tb_login_both_hosts $rc "host0=$D0 host1=$D1"

if [ $rc = 0 ] && [ $have_provider = 1 ] && [ $have_ktest = 1 ]; then
	timeout 30 ibv_devinfo -v >/tmp/devinfo 2>&1
	rc=$?
	cat /tmp/devinfo
	grep -q "hca_id:.*$D0" /tmp/devinfo && grep -q "hca_id:.*$D1" /tmp/devinfo &&
		grep -q 'PORT_ACTIVE' /tmp/devinfo || rc=1
	step tb_ibv_devinfo $rc

	tb_ktest 1
	rc=$?
	tb_show
	step tb_ktest $rc

	f0=$(tb_frames)
	# host 1 serves, host 0 connects: end 0 opens the channel over XDomain
	pair tb_rc_pingpong "ibv_rc_pingpong -d $D1 -g 0 -n 200 -c" "ibv_rc_pingpong -d $D0 -g 0 -n 200 -c"
	# (no UD pingpong: its address handle needs a GID, and the port's GIDs
	# come from thunderbolt-net's device, which tbemu does not emulate)
	pair tb_srq_pingpong "ibv_srq_pingpong -d $D1 -g 0 -n 200 -c" "ibv_srq_pingpong -d $D0 -g 0 -n 200 -c"
	perf2 tb_write_bw $D1 $D0 ib_write_bw -n 1000
	# completion events: RX interrupts of the emulated NHI, CQ events
	perf2 tb_send_bw_e $D0 $D1 ib_send_bw -e -n 1000
	f1=$(tb_frames)
	tb_show
	[ "$f1" -ge $((f0 + 2000)) ] && [ "$(tb_errors)" = 0 ] &&
		[ "$(tb_stat 0 rx_overflow)" = 0 ] && [ "$(tb_stat 1 rx_overflow)" = 0 ]
	step tb_frames_through_rings $? "frames=$((f1 - f0)) errors=$(tb_errors) paths=$(tb_stat 0 paths)/$(tb_stat 1 paths) irqs=$(tb_stat 0 irqs)/$(tb_stat 1 irqs)"

	# one channel per peer (the default: firmware CMs give one DMA tunnel)
	tb_reload_shim
	step tb_reload_budget_1 $?
	tb_ktest budget
	step tb_budget_shim $?
	# tools: a second pair of processes gets an error at connect, at once
	U4V_KTEST_DEV0=$D0 U4V_KTEST_DEV1=$D1 timeout 60 u4v_ktest hold >/tmp/hold.out 2>&1 &
	hpid=$!
	i=0
	while ! grep -q holding /tmp/hold.out && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
	pair_fails tb_budget_spent_tools 30 "ibv_rc_pingpong -d $D1 -g 0 -n 50" "ibv_rc_pingpong -d $D0 -g 0 -n 50"
	kill $hpid
	wait $hpid
	pair tb_budget_back "ibv_rc_pingpong -d $D1 -g 0 -n 50 -c" "ibv_rc_pingpong -d $D0 -g 0 -n 50 -c"
	# the NHI's rings spent: 4 MSI-X vectors, 2 of them the control
	# channel's, leave one ring pair per host whatever tb_channels says
	echo 4 >$TBE/msix_vectors
	tb_reload_shim tb_channels=8
	tb_ktest budget
	step tb_budget_nhi_rings $?
	echo 16 >$TBE/msix_vectors

	# direct mode: the doorbell pages are the NHI's ring registers (BAR 0)
	tb_reload_shim allow_direct=1 tb_channels=2
	step tb_reload_direct $?
	# frames move on the process's stores into BAR 0, no system call
	f0=$(tb_frames)
	tb_ktest direct 0.5 nhi
	rc=$?
	f1=$(tb_frames)
	[ $rc = 0 ] && [ "$f1" -ge $((f0 + 6000)) ]
	step tb_direct_ktest $? "frames=$((f1 - f0))"
	export USB4V_NHI_DIRECT=1
	f0=$(tb_frames)
	pair tb_direct_rc_pingpong "ibv_rc_pingpong -d $D1 -g 0 -n 200 -c" "ibv_rc_pingpong -d $D0 -g 0 -n 200 -c"
	perf2 tb_direct_write_bw $D1 $D0 ib_write_bw -n 1000
	unset USB4V_NHI_DIRECT
	f1=$(tb_frames)
	tb_show
	[ "$f1" -ge $((f0 + 1000)) ] && [ "$(tb_errors)" = 0 ]
	step tb_direct_frames $? "frames=$((f1 - f0)) errors=$(tb_errors)"
else
	skipstep tb_ibv_devinfo "no devices, or provider / u4v_ktest not built"
fi

tb_restore
step tb_restore_soft_cable $?
