# SPDX-License-Identifier: MIT
# Guest side of the pyverbs plans (staged as /opt/pyverbs/guest.sh, sourced
# by tests/vm/plans/pyverbs*.sh): run rdma-core's suite, unmodified, on one
# device and print its counts.

# pyverbs_run label dev: /tmp/pyverbs_<label>.log (the suite's output) and
# .out (one outcome per test, tests/e2e/pyverbs-outcomes.awk); prints
#   U4V-PYVERBS <label> dev=.. rc=.. ran=.. ok=.. errors=.. failures=.. skipped=..
# and one U4V-PYVERBS-BAD line per error or failure. 0: the suite ran and
# every test it ran has one outcome.
pyverbs_run() {
	if ! budget_left; then
		echo "U4V-INFO pyverbs_$1: not run, VM time budget (${BUDGET}s) spent"
		return 1
	fi
	(cd /opt/pyverbs && timeout 240 /usr/bin/python3 tests/run_tests.py \
		--dev "$2" -v) >/tmp/pyverbs_$1.log 2>&1
	prc=$?
	awk -f /opt/pyverbs/outcomes.awk /tmp/pyverbs_$1.log >/tmp/pyverbs_$1.out
	ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' /tmp/pyverbs_$1.log)
	n() { awk -v o="$1" '$2 == o' /tmp/pyverbs_$2.out | wc -l; }
	nok=$(n ok $1) nerr=$(n error $1) nfail=$(n fail $1) nskip=$(n skip $1)
	echo "U4V-PYVERBS $1 dev=$2 rc=$prc ran=${ran:-0} ok=$nok errors=$nerr failures=$nfail skipped=$nskip"
	awk '$2 == "error" || $2 == "fail" { print "U4V-PYVERBS-BAD '"$1"'", $1, $2 }' \
		/tmp/pyverbs_$1.out
	[ -n "$ran" ] && [ $((nok + nerr + nfail + nskip)) = "$ran" ]
}
