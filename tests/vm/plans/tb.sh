# The shim's Thunderbolt service over an emulated host-to-host cable
# (tbemu.ko: two hosts in this kernel): XDomain login on both hosts, one
# usb4v device each, channels negotiated over XDomain with their own rings,
# HopIDs and paths, and the unmodified tools across. Leaves the soft cable
# loaded again for the next plan.
. /etc/u4v/tb-lib.sh

# a budget of 4 channels per peer: the raw test holds up to 3 at once
tb_load && tb_load_shim tb_channels=4
step tb_load $?
tb_wait_devs 2 30
rc=$?
ls -l $TB_SVC 2>/dev/null
dmesg | grep -E 'usb4verbs|tbemu|thunderbolt' | tail -20
D0=$(tb_dev 0) D1=$(tb_dev 1)
[ -n "$D0" ] && [ -n "$D1" ] && [ -e $TB_SVC/0-1.0 ] && [ -e $TB_SVC/1-1.0 ] || rc=1
step tb_login_both_hosts $rc "host0=$D0 host1=$D1"

if [ $rc = 0 ] && [ $have_provider = 1 ]; then
	timeout 30 ibv_devinfo -v >/tmp/devinfo 2>&1
	rc=$?
	cat /tmp/devinfo
	grep -q "hca_id:.*$D0" /tmp/devinfo && grep -q "hca_id:.*$D1" /tmp/devinfo &&
		grep -q 'PORT_ACTIVE' /tmp/devinfo || rc=1
	step tb_ibv_devinfo $rc

	if [ $have_ktest = 1 ]; then
		U4V_KTEST_DEV0=$D0 U4V_KTEST_DEV1=$D1 timeout 120 u4v_ktest 1
		rc=$?
		tb_show
		step tb_ktest $rc
	fi
	f0=$(tb_frames)
	# host 1 serves, host 0 connects: end 0 opens the channel over XDomain
	pair tb_rc_pingpong "ibv_rc_pingpong -d $D1 -g 0 -n 200 -c" "ibv_rc_pingpong -d $D0 -g 0 -n 200 -c"
	f1=$(tb_frames)
	tb_show
	[ "$f1" -ge $((f0 + 400)) ] && [ "$(tb_errors)" = 0 ]
	step tb_frames_through_rings $? "frames=$((f1 - f0)) errors=$(tb_errors) paths=$(tb_stat 0 paths)/$(tb_stat 1 paths)"
else
	skipstep tb_ibv_devinfo "no devices or provider not built"
fi

tb_restore
step tb_restore_soft_cable $?
