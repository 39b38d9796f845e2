# rdma-core's pyverbs suite, unmodified (tests/run_tests.py of the installed
# rdma-core), on usb4verbs over the kernel shim. Fails on any error or
# failure, when a test of the must-pass list (tests/e2e/pyverbs-must-pass.txt
# less its software-cable-only lines) did not pass, and, when the plan
# pyverbs_rxe ran before, when a test passed on Soft-RoCE but not here.
if [ ! -e /opt/pyverbs/guest.sh ]; then
	skipstep pyverbs "python3, python3-pyverbs or rdma-core's tests not installed on the host"
elif [ $have_provider = 0 ]; then
	skipstep pyverbs "provider not built"
else
	. /opt/pyverbs/guest.sh
	pyverbs_run usb4v usb4v0
	rc=$?
	awk '$2 == "error" || $2 == "fail" { bad = 1 } END { exit bad }' \
		/tmp/pyverbs_usb4v.out || rc=1
	# what must pass: the list, and what passed on Soft-RoCE
	{
		grep -v -e '^#' -e '^$' -e '#.*sim-only' /opt/pyverbs/must-pass.txt |
			awk '{ print $1 }'
		[ -e /tmp/pyverbs_rxe.out ] && awk '$2 == "ok" { print $1 }' /tmp/pyverbs_rxe.out
	} | sort -u >/tmp/pyverbs_must
	awk 'FILENAME == ARGV[1] { if ($2 == "ok") ok[$1] = 1; next }
		!($1 in ok) { print }' /tmp/pyverbs_usb4v.out /tmp/pyverbs_must \
		>/tmp/pyverbs_behind
	sed 's/^/U4V-PYVERBS-BEHIND /' /tmp/pyverbs_behind
	[ -s /tmp/pyverbs_behind ] && rc=1
	[ $rc = 0 ] || sed -n '/^=\{20,\}$/,$p' /tmp/pyverbs_usb4v.log | tail -80
	step pyverbs_usb4v $rc "$(grep -E '^(OK|FAILED)' /tmp/pyverbs_usb4v.log | tail -1)"
fi
