# Direct mode: allow_direct=1, root with CAP_SYS_RAWIO only; the unmodified
# tools over direct channels (USB4V_NHI_DIRECT=1) when the provider is there.
if [ $have_ktest = 1 ] && u4v_unload; then
	u4v_load allow_direct=1
	step load_allow_direct $?
	timeout 60 u4v_ktest direct 1
	step direct_mode $?
	timeout 20 u4v_ktest nocap
	step direct_refused_nocap $?
	timeout 20 u4v_ktest nobody
	step direct_refused_uid $?
	if [ $have_provider = 1 ]; then
		export USB4V_NHI_DIRECT=1
		pair direct_rc_pingpong "ibv_rc_pingpong -d usb4v1 -g 0 -n 200" "ibv_rc_pingpong -d usb4v0 -g 0 -n 200"
		perf2 direct_write_bw usb4v1 usb4v0 ib_write_bw -n 1000
		unset USB4V_NHI_DIRECT
	fi
	u4v_unload
	step unload_direct $?
	u4v_load
else
	skipstep direct_mode "u4v_ktest not built or module busy"
fi
