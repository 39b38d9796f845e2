# The unmodified tools: Soft-RoCE first (the reference), then usb4verbs with
# the same commands; the host turns the PERF lines into usb4v/rxe ratios.
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
