# SPDX-License-Identifier: MIT
#
# One outcome per test of a `run_tests.py -v` log (rdma-core's pyverbs
# suite): "module.Class.test ok|error|fail|skip [reason]". unittest's
# verbose lines end in "... ok", "... ERROR", "... FAIL" or "... skipped
# 'why'", on the line that names the test or on its docstring line after it
# (or alone on a line, when the test printed something). Used by
# tests/e2e/pyverbs.sh and by the VM plan tests/vm/plans/pyverbs.sh (busybox
# awk: nothing beyond POSIX awk).
match($0, /^test_[A-Za-z0-9_]+ \(tests\.[A-Za-z0-9_.]+\)/) {
	id = substr($0, RSTART, RLENGTH)
	sub(/^test_[A-Za-z0-9_]+ \(/, "", id)
	sub(/\)$/, "", id)
}
id != "" && /( \.\.\. |^)ok$/ { print id, "ok"; id = "" }
id != "" && /( \.\.\. |^)ERROR$/ { print id, "error"; id = "" }
id != "" && /( \.\.\. |^)FAIL$/ { print id, "fail"; id = "" }
id != "" && / \.\.\. skipped / {
	why = $0
	sub(/.* \.\.\. skipped /, "", why)
	print id, "skip", why
	id = ""
}
