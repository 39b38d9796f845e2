#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The suites too long for CI (tools/run-tests.sh), in one place. Each
# section builds what it needs, logs to build/long-run/<section>.log and
# prints one line:  LONG-RUN <section> PASS|FAIL <seconds>s <detail>
# Exits non-zero when any section failed.
#
#   tools/long-run.sh              every section, in order
#   tools/long-run.sh soak fuzz    only these
#   tools/long-run.sh --list       the sections and what they run
#
# Results of the last full run go into the closing note of the work that
# changed them (and docs/TESTING.md for the fuzzers).
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
out=${U4V_LONG_RUN_DIR:-$top/build/long-run}
jobs=$(nproc)

# section name -> one-line description; the function run_<name> does it
declare -A what=(
	[soak]="10^6 mixed messages on 4 QPs, drop 1e-3, stranding 1/280 (bench/soak)"
	[sweep]="RC size sweep up to 1 GiB, five repeats per size"
	[valgrind]="valgrind memcheck over a 3,000-message soak"
	[fuzz]="10^7 executions of each libFuzzer target"
)
order=(soak sweep valgrind fuzz)

release_tree() {
	cmake -S "$top" -B "$top/build/release" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		>/dev/null && cmake --build "$top/build/release" -j"$jobs" >/dev/null
}
fuzz_tree() {
	cmake -S "$top" -B "$top/build/fuzz" -DCMAKE_C_COMPILER=clang \
		-DU4V_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
		cmake --build "$top/build/fuzz" -j"$jobs" >/dev/null
}

run_soak() {
	release_tree && "$top/build/release/bench/soak" --messages 1000000
}
run_sweep() {
	release_tree && U4V_SWEEP_MAX=1073741824 \
		"$top/build/release/tests/test_regress_size_sweep"
}
run_valgrind() {
	release_tree && valgrind --error-exitcode=1 --leak-check=full \
		--errors-for-leak-kinds=definite \
		"$top/build/release/bench/soak" --messages 3000
}
# Every fuzz target the fuzz tree builds (tests/fuzz/fuzz_*), 10^7 runs
# each, from its corpus directory when it has one.
run_fuzz() {
	local t name corpus rc=0
	fuzz_tree || return 1
	for t in "$top"/build/fuzz/tests/fuzz/fuzz_*; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		corpus=()
		[ -d "$top/tests/fuzz/corpus/$name" ] &&
			corpus=("$(mktemp -d)" "$top/tests/fuzz/corpus/$name")
		echo "== $name"
		"$t" -max_len=16384 -runs=10000000 -print_final_stats=1 \
			"${corpus[@]}" 2>&1 | tail -25 || rc=1
	done
	return $rc
}

if [ "${1:-}" = --list ]; then
	for s in "${order[@]}"; do printf '%-10s %s\n' "$s" "${what[$s]}"; done
	exit 0
fi
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=("${order[@]}")
for s in "${sections[@]}"; do
	[ -n "${what[$s]:-}" ] || { echo "unknown section $s (--list)" >&2; exit 2; }
done

mkdir -p "$out"
status=0
for s in "${sections[@]}"; do
	t0=$(date +%s)
	if "run_$s" >"$out/$s.log" 2>&1; then v=PASS; else v=FAIL; status=1; fi
	echo "LONG-RUN $s $v $(( $(date +%s) - t0 ))s ${what[$s]} (log: $out/$s.log)"
done
exit $status
