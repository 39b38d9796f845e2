# Faults on the emulated cable (tbemu's parameters): lost, late and
# scrambled XDomain packets, a peer whose shim does not answer, refused or
# taken HopIDs, refused paths. A connect they spoil fails cleanly, in
# bounded time, and leaves nothing behind: with one channel per peer the
# next connect works. Logins under faults get through by retrying.
. /etc/u4v/tb-lib.sh
# the hardware's timeout: lost and late packets cost 1 s each
TB_TIMEOUT_MS=1000

# fault name end param set [clear]: u4v_ktest retry, end's connect spoilt
tb_fault() {
	tb_ktest retry $2 $TBE/$3 $4 ${5:-0}
	rc=$?
	echo ${5:-0} >$TBE/$3
	step $1 $rc
}

tb_load && tb_load_shim && tb_wait_devs 2 30
step tbfault_up $?

D0=$(tb_dev 0) D1=$(tb_dev 1)
if [ $have_ktest = 1 ] && [ -n "$D0" ] && [ -n "$D1" ]; then
	# the counted faults hit only the channel's OPEN and its answer
	# (U4K_MSG_OPEN): never a live set still on its way
	echo 3 >$TBE/xd_fault_type
	tb_fault tbfault_open_lost 0 xd_drop_req 1
	tb_fault tbfault_open_answer_lost 0 xd_drop_resp 1
	# end 1 asks: end 0's OPEN loses its answer (the first response)
	tb_fault tbfault_req_open_answer_lost 1 xd_drop_resp 1
	tb_fault tbfault_open_answer_garbled 0 xd_garble_resp 1
	tb_fault tbfault_open_garbled 0 xd_garble_req 1
	# only the message after the header: types and ids of the protocol
	echo 68 >$TBE/xd_garble_from
	tb_fault tbfault_open_body_garbled 0 xd_garble_req 1
	tb_fault tbfault_open_answer_body_garbled 0 xd_garble_resp 1
	echo 28 >$TBE/xd_garble_from
	tb_fault tbfault_peer_silent 0 xd_mute 1 -1
	echo $((TB_TIMEOUT_MS + 500)) >$TBE/xd_delay_ms
	tb_fault tbfault_open_late 0 xd_delay_count 1
	tb_fault tbfault_hopid_refused 0 refuse_hopid 1
	tb_fault tbfault_hopid_refused_end1 1 refuse_hopid 1
	tb_fault tbfault_hopid_taken 0 hopid_busy 1
	tb_fault tbfault_paths_refused 0 refuse_paths 1
	tb_fault tbfault_paths_refused_end1 1 refuse_paths 1
	echo 0 >$TBE/xd_fault_type

	# tools: a peer that answers nothing: a clean error at connect
	if [ $have_provider = 1 ]; then
		echo 1 >$TBE/xd_mute
		pair_fails tbfault_silent_peer_tools 30 "ibv_rc_pingpong -d $D1 -g 0 -n 50" "ibv_rc_pingpong -d $D0 -g 0 -n 50"
		echo -1 >$TBE/xd_mute
		sleep 2 # the live sets lost meanwhile are sent again every second
		pair tbfault_peer_back_tools "ibv_rc_pingpong -d $D1 -g 0 -n 50 -c" "ibv_rc_pingpong -d $D0 -g 0 -n 50 -c"
	fi

	# logins: late (past the timeout) and scrambled answers
	echo 4 >$TBE/xd_delay_count
	tb_reload_shim
	step tbfault_login_late $? "devices=$(tb_ndevs)"
	echo 0 >$TBE/xd_delay_count
	echo 2 >$TBE/xd_garble_resp
	tb_reload_shim
	step tbfault_login_garbled $? "devices=$(tb_ndevs)"
	echo 0 >$TBE/xd_garble_resp
	tb_show
	[ "$(tb_errors)" = 0 ]
	step tbfault_no_refused_descriptors $? "errors=$(tb_errors)"

	# the emulated DMA refuses what the NHI would, each rule broken once on a
	# ring pair of its own, and says so in the kernel log
	n0=$(dmesg | grep -c "DMA refused")
	timeout 120 cat $TBE/dma_check >/tmp/dma_check
	cat /tmp/dma_check
	dmesg | grep "DMA refused"
	n1=$(dmesg | grep -c "DMA refused")
	# 9 of the rules are driver errors the log names; 2 are silent losses
	grep -q "^dma_check result PASS" /tmp/dma_check && [ $((n1 - n0)) -ge 9 ]
	step tbfault_dma_refusals $? "logged=$((n1 - n0))"
else
	skipstep tbfault_open_lost "no devices or u4v_ktest not built"
fi
tb_restore
step tbfault_restore_soft_cable $?
