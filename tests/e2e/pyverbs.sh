#!/bin/bash
# SPDX-License-Identifier: MIT
#
# rdma-core's own pyverbs test suite, as Debian's rdma-core package ships it
# (/usr/share/doc/rdma-core/tests, partly gzipped), run by its own
# run_tests.py against one end of a software cable with Debian's pyverbs
# (python3-pyverbs, /usr/bin/python3). Fails on any error or failure, and
# when a test of pyverbs-must-pass.txt (what Soft-RoCE passes and more) did
# not pass. Prints the counts and every skip reason as RESULT lines.
#
#   pyverbs.sh [--name TAG] [--timeout S] [--dev-end 0|1]

# shellcheck disable=SC2034 # E2E_TEST is read by lib.sh
here=$(cd "$(dirname "$0")" && pwd)
E2E_TEST=pyverbs
tmo=300
src=${U4V_PYVERBS_TESTS:-/usr/share/doc/rdma-core/tests}
python=/usr/bin/python3 # Debian's: the one pyverbs is installed for
must=$here/pyverbs-must-pass.txt
# shellcheck source=lib.sh
. "$here/lib.sh"
e2e_opts "$@"

[ -f "$src/run_tests.py" ] ||
	e2e_die "$src/run_tests.py missing: install rdma-core (tools/deps.sh)"
"$python" -c 'import pyverbs.device' 2>/dev/null ||
	e2e_die "$python cannot import pyverbs: install python3-pyverbs (tools/deps.sh)"

# a copy of the suite, gunzipped, as its README says to run it
suite=$E2E_LOGDIR/suite
mkdir -p "$suite" && cp -r "$src" "$suite/" ||
	e2e_die "cannot copy $src"
gunzip -f "$suite"/tests/*.py.gz 2>/dev/null

# rdma-core 56's suite (Debian 13) looks up a RoCE port's net device with
# `rdma link show -j`, RDMA netlink, which lists kernel devices only: every
# test that sets up a port of a software cable's device errs there. It runs
# with Debian 12's suite (rdma-core 44), and on the kernel shim in the VM.
if grep -q "'rdma', 'link'" "$suite"/tests/base.py 2>/dev/null; then
	echo "SKIP: this rdma-core's pyverbs suite asks RDMA netlink ('rdma link') for the port's net device; a software cable's device is no kernel device"
	exit 77
fi

cable=$E2E_ID-pyverbs
e2e_up "$cable"
out=$E2E_LOGDIR/suite.log
(cd "$suite" && timeout -k 10 "$tmo" "$SIM" exec --name "$cable" -- \
	"$python" tests/run_tests.py --dev "$D0" -v) >"$out" 2>&1
rc=$?
[ $rc -eq 124 ] && e2e_fail "the suite did not end within $tmo s"

# one outcome per test id (module.Class.test)
outcomes=$E2E_LOGDIR/outcomes.txt
awk -f "$here/pyverbs-outcomes.awk" "$out" >"$outcomes"

count() { awk -v o="$1" '$2 == o' "$outcomes" | wc -l; }
n_ok=$(count ok)
n_err=$(count error)
n_fail=$(count fail)
n_skip=$(count skip)
ran=$(sed -n 's/^Ran \([0-9]*\) tests\? in .*/\1/p' "$out")
echo "RESULT: pyverbs ran=${ran:-0} ok=$n_ok errors=$n_err failures=$n_fail skipped=$n_skip"
# the reasons, with numbers folded so that alike ones count together
awk '$2 == "skip" { $1 = ""; $2 = ""; sub(/^  /, ""); gsub(/[0-9]+/, "N"); print }' \
	"$outcomes" | sort | uniq -c | sort -rn |
	sed 's/^ *\([0-9]*\) /RESULT: pyverbs skipped \1: /'

if [ -z "$ran" ] || [ "$ran" -eq 0 ]; then
	e2e_show suite "$out"
	e2e_fail "the suite ran no tests"
fi
[ $((n_ok + n_err + n_fail + n_skip)) -eq "${ran:-0}" ] ||
	e2e_fail "$((n_ok + n_err + n_fail + n_skip)) outcomes read for $ran tests"
if [ "$n_err" -ne 0 ] || [ "$n_fail" -ne 0 ] || [ $rc -ne 0 ]; then
	awk '$2 == "error" || $2 == "fail"' "$outcomes" |
		sed "s/^/[$E2E_TEST] not passed: /"
	sed -n '/^=\{20,\}$/,$p' "$out" >"$E2E_LOGDIR/tracebacks.log"
	e2e_show traceback "$E2E_LOGDIR/tracebacks.log"
	e2e_fail "errors=$n_err failures=$n_fail (run_tests.py exited $rc)"
fi
# every test that must pass did
missing=0
while read -r id _; do
	case $id in '' | '#'*) continue ;; esac
	if ! grep -qx "$id ok" "$outcomes"; then
		e2e_log "did not pass: $id ($(awk -v i="$id" '$1 == i { $1 = ""; print }' "$outcomes"))"
		missing=$((missing + 1))
	fi
done <"$must"
[ $missing -eq 0 ] || e2e_fail "$missing test(s) of $(basename "$must") did not pass"
e2e_finish
