#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The suites too long for CI (tools/run-tests.sh), in one place. Each
# section builds what it needs, logs to build/long-run/<section>.log and
# prints one line:  LONG-RUN <section> PASS|FAIL|SKIP <seconds>s <detail>
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
	[roots]="README's commands in fresh Debian 12 and 13 roots (tools/roots/ci.sh dev-bookworm dev-trixie)"
	[vm_pyverbs]="rdma-core's pyverbs suite in the VM: Soft-RoCE, then usb4verbs over the kernel shim"
	[ucx]="UCP bandwidth pairs (1 GiB each), ucp_check and Open MPI over UCX across a cable losing 1e-3 of its frames"
)
order=(soak sweep valgrind fuzz roots vm_pyverbs ucx)

release_tree() {
	cmake -S "$top" -B "$top/build/release" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		>/dev/null && cmake --build "$top/build/release" -j"$jobs" >/dev/null
}
fuzz_tree() {
	cmake -S "$top" -B "$top/build/fuzz" -DCMAKE_C_COMPILER=clang \
		-DU4V_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
		cmake --build "$top/build/fuzz" --target fuzz -j"$jobs" >/dev/null
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
# Every fuzz target the fuzz tree builds (tests/fuzz/fuzz_*), one after
# the other, U4V_FUZZ_RUNS (10^7) executions each, from its tracked seed
# corpus (only read) and a working corpus kept under $out/fuzz/<target>
# (a later run goes on from it), with the target's own -max_len
# (tests/fuzz/fuzz_options.h). U4V_FUZZ_TARGETS="fuzz_rx fuzz_sim" runs
# only those. Each target's whole log is $out/fuzz/<target>.log, a finding
# $out/fuzz/<target>-crash-* (also -leak-, -timeout-, -oom-); the section
# log gets libFuzzer's last status line and final stats per target.
run_fuzz() {
	local t t0 name seed rc=0 runs=${U4V_FUZZ_RUNS:-10000000} dir="$out/fuzz"
	local only=" ${U4V_FUZZ_TARGETS:-} "
	fuzz_tree || return 1
	mkdir -p "$dir"
	for t in "$top"/build/fuzz/tests/fuzz/fuzz_*; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		[ "$only" = "  " ] || [[ $only == *" $name "* ]] || continue
		seed=()
		[ -d "$top/tests/fuzz/corpus/$name" ] &&
			seed=("$top/tests/fuzz/corpus/$name")
		mkdir -p "$dir/$name"
		echo "== $name ($runs runs; log $dir/$name.log)"
		t0=$SECONDS
		if ! "$t" -runs="$runs" -print_final_stats=1 \
			-artifact_prefix="$dir/$name-" "$dir/$name" "${seed[@]}" \
			>"$dir/$name.log" 2>&1; then
			# SIGINT (stopped by hand) is no finding, nor a full run
			if grep -q 'libFuzzer: run interrupted' "$dir/$name.log"; then
				echo "STOPPED by hand: $name"
			else
				echo "FINDING in $name: see $dir/$name.log"
			fi
			rc=1
		fi
		echo "$name: $((SECONDS - t0)) s"
		grep -E '^#[0-9]+' "$dir/$name.log" | tail -1
		grep -E '^(stat::|SUMMARY)' "$dir/$name.log"
	done
	return $rc
}

run_roots() {
	"$top/tools/roots/ci.sh" "$out/roots" dev-bookworm dev-trixie
}

# One VM (tests/vm/plans/pyverbs_rxe.sh, pyverbs.sh): the suite on rxe0,
# then on usb4v0; fails when usb4verbs errs, fails or does not pass a test
# Soft-RoCE passes. (CI runs the usb4v0 half alone: vm/pyverbs.)
# The counts are the PYVERBS lines at the end of the log. Skips (77) without
# qemu, a kernel image or headers, like the VM tests of CI.
run_vm_pyverbs() {
	release_tree && "$top/tests/vm/run-vm.sh" --plans "pyverbs_rxe pyverbs" --timeout 600 \
		--src "$top" --build "$top/build/release" --out "$out/vm_pyverbs"
}

# The CI's UCX and MPI checks (tests/e2e/ucx.cmake), longer and over a
# lossy cable: each pair moves 1 GiB one way; the cable's counters must show
# it crossed.
run_ucx() {
	local e2e=$top/tests/e2e rel=$top/build/release rc=0 port=22000 t dir
	local tls=UCX_TLS=rc_verbs,ud_verbs lossy="--drop 0.001"
	release_tree || return 1
	export USB4V_SIM=$rel/tools/usb4v-sim/usb4v-sim
	for t in tag_bw:to0 ucp_put_bw:to0 ucp_get:to1 stream_bw:to0 ucp_am_bw:to0; do
		dir=${t#*:} t=${t%:*}
		bash "$e2e/run_pair.sh" --name "ucx_lossy_$t" --port $((port++)) \
			--timeout 900 --up "$lossy" --expect "^Final" \
			--crossed "$([ "$dir" = to0 ] && echo "1073741824 0" || echo "0 1073741824")" \
			-- env $tls UCX_NET_DEVICES=@D0@:1 ucx_perftest -p @PORT@ \
			::: env $tls UCX_NET_DEVICES=@D1@:1 ucx_perftest 127.0.0.1 \
			-p @PORT@ -t "$t" -s 1048576 -n 1024 || rc=1
	done
	bash "$e2e/run_pair.sh" --name ucx_lossy_ucp_check --port $((port++)) \
		--timeout 300 --up "$lossy" --expect "^ucp_check: 9 checks passed" \
		-- env $tls UCX_NET_DEVICES=@D0@:1 "$rel/tests/ucx/ucp_check" -p @PORT@ -t 280 \
		::: env $tls UCX_NET_DEVICES=@D1@:1 "$rel/tests/ucx/ucp_check" -p @PORT@ \
		-t 280 127.0.0.1 || rc=1
	bash "$e2e/mpi.sh" --name mpi_ucx_lossy --timeout 900 --up "$lossy" \
		"$rel/tests/mpi/mpi_pingpong" -t 880 || rc=1
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
	"run_$s" >"$out/$s.log" 2>&1
	case $? in
	0) v=PASS ;;
	77) v=SKIP ;;
	*) v=FAIL; status=1 ;;
	esac
	echo "LONG-RUN $s $v $(( $(date +%s) - t0 ))s ${what[$s]} (log: $out/$s.log)"
done
exit $status
