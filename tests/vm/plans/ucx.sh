# UCX over the kernel shim: Debian's ucx_info and ucx_perftest, unmodified,
# with UCX_TLS and each side's UCX_NET_DEVICES only, and ucp_check (one
# checked transfer per UCP operation). UCP pairs run one side per end. The
# UCT pairs run both sides on usb4v0 (the kernel's loopback channel):
# ucx_perftest hands the client's -d to the server, and this VM holds both
# ends under different names.
ucp() { # name test [args...]: a UCP ucx_perftest pair across the cable
	name=$1; shift
	pair $name "env UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=usb4v1:1 ucx_perftest -p 18515" \
		"env UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=usb4v0:1 ucx_perftest -p 18515 -w 10 $*"
}
uct() { # name tl test [args...]: a UCT pair on usb4v0
	name=$1; tl=$2; shift 2
	pair $name "ucx_perftest -p 18515" "ucx_perftest -p 18515 -x $tl -d usb4v0:1 -w 10 $*"
}
if [ $have_provider = 1 ] && command -v ucx_perftest >/dev/null; then
	timeout 60 ucx_info -d >/tmp/ucx_info 2>&1
	rc=$?
	for d in usb4v0 usb4v1; do
		for tl in rc_verbs ud_verbs; do
			awk '/^# *Transport:/ { t = $3 } /^# *Device:/ { print t, $3 }' \
				/tmp/ucx_info | grep -qx "$tl $d:1" || rc=1
		done
	done
	[ $rc = 0 ] || cat /tmp/ucx_info
	step ucx_info $rc
	ucp ucp_tag_lat -t tag_lat -n 200
	ucp ucp_tag_bw -t tag_bw -s 65536 -n 100
	ucp ucp_put_bw -t ucp_put_bw -s 65536 -n 100
	ucp ucp_get -t ucp_get -s 65536 -n 100
	ucp ucp_fadd -t ucp_fadd -n 200
	ucp ucp_stream_bw -t stream_bw -s 65536 -n 100
	ucp ucp_am_bw -t ucp_am_bw -s 65536 -n 100
	if command -v ucp_check >/dev/null; then
		pair ucp_check "env UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=usb4v1:1 ucp_check -p 18515 -t 30" \
			"env UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=usb4v0:1 ucp_check -p 18515 -t 30"
	else
		skipstep ucp_check "not built"
	fi
	uct uct_rc_am_bcopy rc_verbs -t am_bw -D bcopy -s 4096 -n 200
	uct uct_rc_put_zcopy rc_verbs -t put_bw -D zcopy -s 65536 -n 100
	uct uct_rc_get_zcopy rc_verbs -t get -D zcopy -s 65536 -n 100
	uct uct_rc_fadd rc_verbs -t fadd -n 200
	uct uct_ud_am ud_verbs -t am_lat -n 200
else
	skipstep ucx_info "provider or ucx_perftest missing"
fi
