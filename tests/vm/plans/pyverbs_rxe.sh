# rdma-core's pyverbs suite, unmodified, on Soft-RoCE (rxe over a dummy
# netdev): the reference the plan pyverbs (run after this one) compares
# usb4verbs with. Soft-RoCE's own errors are its own: this step checks that
# the suite ran.
if [ ! -e /opt/pyverbs/guest.sh ]; then
	skipstep pyverbs_rxe "python3, python3-pyverbs or rdma-core's tests not installed on the host"
else
	. /opt/pyverbs/guest.sh
	ip addr add 10.99.0.1/24 dev dummy0 && ip link set dummy0 up &&
		timeout 20 rdma link add rxe0 type rxe netdev dummy0
	rc=$?
	step pyverbs_rxe_add $rc
	if [ $rc = 0 ]; then
		pyverbs_run rxe rxe0
		step pyverbs_rxe $? "$(grep -E '^(OK|FAILED)' /tmp/pyverbs_rxe.log | tail -1)"
		timeout 20 rdma link delete rxe0
	fi
fi
