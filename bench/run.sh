#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One command that benchmarks usb4verbs honestly over a software cable and
# draws the pictures:
#
#   bench/run.sh [--quick] [--force] [--out DIR] [--build DIR] [--no-build]
#                [--reps N] [--rate GBITS] [--suites LIST]
#
#   --quick      everyday mode (< 3 minutes): fewer sizes/points, shorter runs
#   --force      run even if the CPU frequency governor is not `performance`
#   --out DIR    results directory (default bench/results)
#   --build DIR  build tree (default build/release; configured if missing)
#   --no-build   do not (re)build the needed targets first
#   --reps N     repetitions of every point (default 3 quick, 5 full; >= 3)
#   --rate G     wire model rate in Gbit/s (default 20)
#   --suites L   only these suites (comma-separated names, as listed below)
#
# What it measures (unmodified perftest through `usb4v-sim exec` unless
# noted), every point repeated N times, spread kept (min/median/max):
#   bw_size     bandwidth vs message size: send RC/UC/UD, write RC/UC, read RC
#   lat_size    latency vs size: ib_send_lat, ib_write_lat (RC); after each
#               ib_write_lat -s 8, the host's floor under its tail:
#               bench/shm_pingpong, two processes spinning on one shared
#               word, same iterations paced to its typical, perftest's
#               figures
#   qp_scale    aggregate write bandwidth vs QPs, one process (-q) and two
#               perftest pairs at once on one cable (different ports)
#   events      ib_send_bw poll vs event mode (-e)
#   threads     bench/threads_bw: 1/2/4 threads, each its own QP, one context
#   faults      ib_write_bw 64 KiB with --drop 1e-3 and/or --stranded 1/280
#   read_faults ib_read_bw 64 KiB and 1 MiB, clean vs --drop 1e-3 and 1e-2
#   loss        ib_write_bw 64 KiB, 1 QP, -D 4: per seed 1-5 a clean run,
#               then --drop 1e-3 and 1e-2 with that seed, each against the
#               clean run beside it; a seed's ratio is the median of 3
#               such rounds (1 with --quick) (issue 14's targets: median
#               >= 0.90, none < 0.80 at 1e-3; median >= 0.70 at 1e-2)
#   stripe      rings slower than the wire: ib_write_bw 64 KiB, 1 QP, per
#               repetition at --rate R alone, then with --ring-rate R/2
#               (the QP stripes over two lanes; issue 14: >= 0.95 of the
#               first), the same with lanes measured (USB4V_LANES=auto, as
#               on a kernel device), with one channel only (no second lane:
#               what striping is worth), and -q 2/4/8/16 with the ring rate
#               (flat against -q 1 of the same repetition)
#   cpu_cmp     the same bytes over TCP loopback (bench/tcp_bw) and over
#               usb4verbs (ib_write_bw, 20 Gb/s and unthrottled): CPU-s/GiB
#   cost        issue 14's software cost, each repetition TCP then usb4verbs:
#               ib_write_bw 64 KiB over an unthrottled cable vs bench/tcp_bw
#               (one stream, 64 KiB writes; target >= 1.5x), CPU-s per GiB
#               of ib_send_bw -e at --rate vs TCP (target <= 1x), and
#               instructions per 64 KiB message (callgrind, engine_bw
#               --inproc: both ends in one thread, marginal between two
#               message counts)
#   sw_cost     unthrottled software cost: 8-byte RC RTT (engine_bw --lat
#               -r 0, ib_send_lat over a rate-0 cable), instructions per
#               message (callgrind on engine_bw, total Ir / messages), and
#               the CPU of an idle context (engine_bw --idle)
# CPU is sampled for the whole machine over each run (/proc/stat deltas)
# and per side (user+sys of each process, all its threads).
#
# Output: results.csv (one row per repetition and metric, with the commit,
# cable settings and machine in every row), points.csv (min/median/max per
# point), *.png plots, summary.md, logs/. Exit status: 0 ok, 1 some runs
# failed (still reported), 2 usage, 3 refused by the readiness gate.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=tools/cable-lib.sh
. "$root/tools/cable-lib.sh"
build=$root/build/release
out=$here/results
quick=0
force=0
dobuild=1
reps=
rate=20
suites=
cmdline="bench/run.sh${*:+ $*}"

usage() { sed -n '4,18p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift ;;
	--force) force=1; shift ;;
	--out) out=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--no-build) dobuild=0; shift ;;
	--reps) reps=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--suites) suites=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bench/run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
[ -n "$reps" ] || reps=$((quick ? 3 : 5))
if ! [[ $reps =~ ^[0-9]+$ ]] || [ "$reps" -lt 3 ]; then
	echo "bench/run.sh: --reps must be >= 3" >&2
	exit 2
fi
[[ $rate =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "bench/run.sh: bad --rate" >&2; exit 2; }
want() { [ -z "$suites" ] || [[ ,$suites, == *,$1,* ]]; }
case $out in /*) ;; *) out=$PWD/$out ;; esac
case $build in /*) ;; *) build=$PWD/$build ;; esac

T_START=$(date +%s)
log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$out/run.log" >&2; }

mkdir -p "$out" || exit 1
rm -rf "$out/logs" "$out"/*.png "$out"/*.csv "$out/summary.md" "$out/run.log" "$out/plots" \
	"$out/commands.tsv"
mkdir -p "$out/logs"

# ---------------------------------------------------------------- readiness
shopt -s nullglob
govs=(/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)
shopt -u nullglob
if [ ${#govs[@]} -eq 0 ]; then
	governor=none
	log "no cpufreq: governor not checked"
else
	bad=$(for g in "${govs[@]}"; do
		v=$(cat "$g" 2>/dev/null)
		[ "$v" = performance ] || echo "${g%/cpufreq/*}=$v"
	done)
	if [ -n "$bad" ]; then
		governor=not-performance
		{
			echo "############################################################"
			echo "# CPU FREQUENCY GOVERNOR IS NOT 'performance':"
			echo "$bad" | sed 's/^/#   /'
			echo "# Figures would depend on frequency scaling. Fix with e.g."
			echo "#   sudo cpupower frequency-set -g performance"
			echo "# or pass --force to measure anyway (recorded in every row)."
			echo "############################################################"
		} | tee -a "$out/run.log" >&2
		[ "$force" -eq 1 ] || exit 3
		governor=not-performance-forced
	else
		governor=performance
		log "cpufreq governor: performance on all CPUs"
	fi
fi

for tool in timeout stdbuf awk python3 gnuplot ib_send_bw ib_write_bw \
	ib_read_bw ib_send_lat ib_write_lat cmake git; do
	command -v "$tool" >/dev/null || { log "missing tool: $tool (tools/deps.sh installs it)"; exit 1; }
done
have_valgrind=1
command -v valgrind >/dev/null || have_valgrind=0

# -------------------------------------------------------------------- build
targets=(usb4v-sim usb4v_sim_shim u4v_provider engine_bw threads_bw tcp_bw shm_pingpong)
if [ "$dobuild" -eq 1 ]; then
	# configure every time: a tree configured before a bench program was
	# added has no rule for it (make does not reconfigure for a target)
	log "configuring $build"
	timeout 600 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		>"$out/logs/build.log" 2>&1 || { log "cmake configure failed (logs/build.log)"; exit 1; }
	log "building ${targets[*]} in $build"
	timeout 1200 cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" \
		>>"$out/logs/build.log" 2>&1 || { log "build failed (logs/build.log)"; exit 1; }
fi
SIM=$build/tools/usb4v-sim/usb4v-sim
ENGINE_BW=$build/bench/engine_bw
THREADS_BW=$build/bench/threads_bw
TCP_BW=$build/bench/tcp_bw
SHM_PINGPONG=$build/bench/shm_pingpong
for f in "$SIM" "$ENGINE_BW" "$THREADS_BW" "$TCP_BW" "$SHM_PINGPONG"; do
	[ -x "$f" ] || { log "missing $f (build it or drop --no-build)"; exit 1; }
done
build_type=$(awk -F= '/^CMAKE_BUILD_TYPE:/{print $2}' "$build/CMakeCache.txt" 2>/dev/null)

# ----------------------------------------------------------------- metadata
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit+dirty"
ncpu=$(nproc)
cpu_model=$(awk -F': *' '/^model name/{print $2; exit}' /proc/cpuinfo | tr ',;' '  ')
[ -n "$cpu_model" ] || cpu_model=unknown
kernel=$(uname -r)
perftest_ver=$(ib_send_bw --version 2>/dev/null | awk '{print $NF; exit}')
HZ=$(getconf CLK_TCK)
if [ "$quick" -eq 1 ]; then MODE=quick; DUR=1; else MODE=full; DUR=2; fi
log "mode=$MODE reps=$reps rate=${rate}Gb/s commit=$commit nproc=$ncpu cpu='$cpu_model' kernel=$kernel"
log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (the machine may be shared: see summary.md)"
cap=$(awk -v r="$rate" 'BEGIN{printf "%.4f", r*4032/4048}')

# ------------------------------------------------------- cleanup machinery
TMP=$(mktemp -d /tmp/u4v-bench.XXXXXX)
PIDS=()
CABLES=()
cleanup() {
	local c
	cable_stop_pids "${PIDS[@]}"
	for c in "${CABLES[@]}"; do "$SIM" down --name "$c" >/dev/null 2>&1; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Cables of this run are "bench<pid>-<n>"; remove those of runs that died.
cable_sweep "$SIM" bench | while read -r name; do
	log "removed stale cable $name"
done

ncable=0
CABLE=
cable_up() { # options...; sets CABLE D0 D1
	local o
	ncable=$((ncable + 1))
	CABLE=bench$$-$ncable
	CABLES+=("$CABLE")
	o=$("$SIM" up --name "$CABLE" "$@" 2>"$TMP/up.err") || { log "usb4v-sim up $* failed: $(cat "$TMP/up.err")"; return 1; }
	cable_devs "$o" || { log "usb4v-sim up printed '$o'"; return 1; }
}
cable_down() {
	local c
	"$SIM" down --name "$CABLE" >/dev/null 2>&1
	local keep=()
	for c in "${CABLES[@]}"; do [ "$c" = "$CABLE" ] || keep+=("$c"); done
	CABLES=("${keep[@]}")
}
cable_retx() { # sum of both ends' retransmits
	"$SIM" stat --name "$CABLE" 2>/dev/null | awk '$1=="retransmits"{print $2+$3; f=1} END{if(!f) print ""}'
}

PORT=$((21000 + ($$ % 400) * 50))
next_port() { # a distinct port not in use
	local i
	for ((i = 0; i < 200; i++)); do
		PORT=$((PORT + 1))
		[ "$PORT" -gt 60000 ] && PORT=21000
		cable_tcp_listening "$PORT" || return 0
	done
	return 1
}

cpu_snap() { # whole machine: busy jiffies (user nice system irq softirq)
	awk '/^cpu /{print $2+$3+$4+$7+$8; exit}' /proc/stat
}
now() { date +%s.%N; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a-b}'; }
med_min() { # "v1 v2 ..." -> "median minimum" (empty for no values)
	tr ' ' '\n' <<<"$1" | awk 'NF' | sort -g |
		awk '{a[NR] = $1} END{if (NR) print a[int((NR + 1) / 2)], a[1]}'
}

# Run "$@" and write its children's CPU (user+sys, s) to file $1.
WRAP='tf=$1; shift; "$@"; rc=$?; times > "$tf"; exit $rc'
proc_cpu() { # times file -> seconds (children user+sys)
	[ -s "$1" ] || { echo ""; return; }
	sed -n 2p "$1" | awk '{
		s = 0
		for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); s += a[1] * 60 + a[2] }
		printf "%.3f", s }'
}

declare -A IR
# ------------------------------------------------------------- CSV output
CSV=$out/results.csv
echo "suite,point,tool,op,conn,size,qps,procs,threads,mode,rate_gbps,drop,stranded,rep,metric,value,unit,capacity_gbps,efficiency,bytes,wall_s,machine_cpu_s,machine_busy_cores,server_cpu_s,client_cpu_s,retransmits,ok,note,load1,commit,nproc,cpu_model,kernel,governor,perftest,build_type,bench_mode,timestamp" >"$CSV"
FAILS=0
# Fields of the current run, set by the runners, then emit METRIC VALUE UNIT.
declare -A R
reset_r() {
	R=([suite]="" [point]="" [tool]="" [op]="" [conn]="" [size]="" [qps]=1 [procs]=1 [threads]=1
		[mode]=poll [rate]="$rate" [drop]=0 [stranded]=0 [rep]="" [bytes]="" [wall]=""
		[mcpu]="" [mcores]="" [scpu]="" [ccpu]="" [retx]="" [ok]=1 [note]="" [load1]="")
}
emit() { # metric value unit
	local eff='' capc=''
	if [ "$3" = Gbps ] && [ -n "$2" ] && awk -v r="${R[rate]}" 'BEGIN{exit !(r > 0)}'; then
		capc=$(awk -v r="${R[rate]}" 'BEGIN{printf "%.4f", r*4032/4048}')
		eff=$(awk -v g="$2" -v c="$capc" 'BEGIN{printf "%.4f", g/c}')
	fi
	printf '%s\n' "${R[suite]},${R[point]},${R[tool]},${R[op]},${R[conn]},${R[size]},${R[qps]},${R[procs]},${R[threads]},${R[mode]},${R[rate]},${R[drop]},${R[stranded]},${R[rep]},$1,$2,$3,$capc,$eff,${R[bytes]},${R[wall]},${R[mcpu]},${R[mcores]},${R[scpu]},${R[ccpu]},${R[retx]},${R[ok]},${R[note]},${R[load1]},$commit,$ncpu,$cpu_model,$kernel,$governor,$perftest_ver,$build_type,$MODE,$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$CSV"
}
fail_note() { R[ok]=0; R[note]="${R[note]:+${R[note]} }$1"; FAILS=$((FAILS + 1)); }
# machine_cpu B0 B1 T0 T1 (cpu_snap, now before and after): R[wall], R[mcpu]
# (busy CPU-s of the whole machine) and R[mcores] (busy cores on average)
machine_cpu() {
	R[wall]=$(fsub "$4" "$3")
	R[mcpu]=$(awk -v d=$(($2 - $1)) -v hz="$HZ" 'BEGIN{printf "%.3f", d/hz}')
	R[mcores]=$(awk -v c="${R[mcpu]}" -v w="${R[wall]}" 'BEGIN{printf "%.3f", (w > 0 ? c/w : 0)}')
}
# emit_cpu_per_gib BYTES: CPU-s per GiB moved, the machine's and the processes'
emit_cpu_per_gib() {
	local gib
	gib=$(awk -v b="$1" 'BEGIN{print b/2^30}')
	emit machine_cpu_s_per_gib "$(awk -v c="${R[mcpu]}" -v g="$gib" 'BEGIN{printf "%.4f", c/g}')" s/GiB
	emit proc_cpu_s_per_gib "$(awk -v a="${R[ccpu]:-0}" -v b="${R[scpu]:-0}" -v g="$gib" 'BEGIN{printf "%.4f", (a+b)/g}')" s/GiB
}

# --------------------------------------------------------- perftest pairs
# pt_run NPAIRS TIMEOUT UPOPTS -- TOOL ARGS...
# Brings up a cable with UPOPTS, runs NPAIRS server/client pairs of TOOL at
# once (different ports), end 0 = server, end 1 = client. Fills R[...] and
# PT_BW (sum of the clients' average Gb/s), PT_MPPS, PT_LAT (min typ avg p99).
pt_run() {
	local npairs=$1 tmo=$2 upopts=$3 i p cpid spid st b0 b1 t0 t1 tag alive
	shift 4
	local ports=() spids=() cpids=()
	PT_BW='' PT_MPPS='' PT_LAT=''
	R[load1]=$(cut -d' ' -f1 /proc/loadavg)
	# shellcheck disable=SC2086
	cable_up $upopts || { fail_note cable; return 1; }
	tag=$CABLE
	for ((i = 0; i < npairs; i++)); do
		next_port || { fail_note no-port; cable_down; return 1; }
		ports+=("$PORT")
		timeout -k 3 "$tmo" bash -c "$WRAP" wrap "$TMP/$tag-s$i.cpu" \
			"$SIM" exec --name "$CABLE" -- stdbuf -oL -eL "$@" -d "$D0" -p "$PORT" \
			>"$out/logs/$tag-server$i.log" 2>&1 &
		spids+=($!)
		PIDS+=($!)
	done
	for ((i = 0; i < npairs; i++)); do
		for ((p = 0; p < 400; p++)); do
			cable_tcp_listening "${ports[$i]}" && break
			kill -0 "${spids[$i]}" 2>/dev/null || break
			sleep 0.05
		done
	done
	b0=$(cpu_snap)
	t0=$(now)
	for ((i = 0; i < npairs; i++)); do
		timeout -k 3 "$tmo" bash -c "$WRAP" wrap "$TMP/$tag-c$i.cpu" \
			"$SIM" exec --name "$CABLE" -- stdbuf -oL -eL "$@" -d "$D1" -p "${ports[$i]}" 127.0.0.1 \
			>"$out/logs/$tag-client$i.log" 2>&1 &
		cpids+=($!)
		PIDS+=($!)
	done
	for cpid in "${cpids[@]}"; do
		wait "$cpid"
		st=$?
		[ "$st" -eq 124 ] && fail_note client-timeout
		[ "$st" -ne 0 ] && [ "$st" -ne 124 ] && fail_note "client-exit-$st"
	done
	t1=$(now)
	b1=$(cpu_snap)
	for spid in "${spids[@]}"; do
		alive=1
		for ((i = 0; i < 50; i++)); do
			kill -0 "$spid" 2>/dev/null || { alive=0; break; }
			sleep 0.1
		done
		if [ "$alive" -eq 1 ]; then
			kill -TERM "$spid" 2>/dev/null
			fail_note server-hung
		fi
		wait "$spid"
		st=$?
		[ "$alive" -eq 0 ] && [ "$st" -ne 0 ] && fail_note "server-exit-$st"
	done
	machine_cpu "$b0" "$b1" "$t0" "$t1"
	local sc=0 cc=0 v
	for ((i = 0; i < npairs; i++)); do
		v=$(proc_cpu "$TMP/$tag-s$i.cpu"); sc=$(awk -v a="$sc" -v b="${v:-0}" 'BEGIN{printf "%.3f", a+b}')
		v=$(proc_cpu "$TMP/$tag-c$i.cpu"); cc=$(awk -v a="$cc" -v b="${v:-0}" 'BEGIN{printf "%.3f", a+b}')
	done
	R[scpu]=$sc R[ccpu]=$cc
	R[retx]=$(cable_retx)
	"$SIM" stat --name "$CABLE" >"$out/logs/$tag-stat.txt" 2>&1
	cable_down
	# Figures: the client's result line(s).
	PT_BW=$(cat "$out/logs/$tag"-client*.log | awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 && NF < 9 {s += $4; n++} END{if (n) printf "%.3f", s}')
	PT_MPPS=$(cat "$out/logs/$tag"-client*.log | awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 && NF < 9 {s += $5; n++} END{if (n) printf "%.6f", s}')
	PT_LAT=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 9 {print $3, $5, $6, $8, $9; exit}' "$out/logs/$tag-client0.log")
	R[note]="${R[note]:+${R[note]} }log=$tag"
	return 0
}

# One perftest bandwidth point: suite point tool conn size qps procs mode upopts extra-args...
bw_point() {
	local suite=$1 point=$2 tool=$3 conn=$4 size=$5 qps=$6 procs=$7 mode=$8 upopts=$9
	shift 9
	local r op=${tool#ib_}
	op=${op%_bw}
	for ((r = 1; r <= reps; r++)); do
		reset_r
		R[suite]=$suite R[point]=$point R[tool]=$tool R[op]=$op R[conn]=$conn R[size]=$size
		R[qps]=$qps R[procs]=$procs R[mode]=$mode R[rep]=$r
		local d s
		d=$(sed -n 's/.*--drop \([^ ]*\).*/\1/p' <<<"$upopts"); [ -n "$d" ] && R[drop]=$d
		s=$(sed -n 's/.*--stranded \([^ ]*\).*/\1/p' <<<"$upopts"); [ -n "$s" ] && R[stranded]=$s
		local q=$((qps / procs)) how=(-D "$DUR")
		[ -n "${BW_ITERS:-}" ] && how=(-n "$BW_ITERS") R[bytes]=$((BW_ITERS * size * qps))
		pt_run "$procs" $((DUR + 40)) "--rate $rate $upopts" -- "$tool" -F --report_gbits \
			-c "$conn" -s "$size" -q "$q" "${how[@]}" "$@"
		[ -n "$PT_BW" ] || fail_note no-result
		emit gbps "$PT_BW" Gbps
		emit msg_rate "$PT_MPPS" Mpps
		printf '  %-34s rep %d: %8s Gb/s  cpu(machine) %5s s  retx %s %s\n' "$point" "$r" "${PT_BW:-FAIL}" "${R[mcpu]}" "${R[retx]:-?}" "$([ "${R[ok]}" = 1 ] || echo "[${R[note]}]")" | tee -a "$out/run.log" >&2
	done
}

# lat_point SUITE POINT TOOL SIZE UPOPTS ITERS [AFTER]: AFTER, if given, is
# run after each repetition with the repetition's number, ITERS and the
# repetition's typical latency (us).
lat_point() {
	local suite=$1 point=$2 tool=$3 size=$4 upopts=$5 iters=$6 after=${7:-} r
	local op=${tool#ib_}
	op=${op%_lat}
	for ((r = 1; r <= reps; r++)); do
		reset_r
		R[suite]=$suite R[point]=$point R[tool]=$tool R[op]=$op R[conn]=RC R[size]=$size R[rep]=$r
		[[ $upopts =~ --rate\ ([0-9.]+) ]] && R[rate]=${BASH_REMATCH[1]}
		pt_run 1 60 "$upopts" -- "$tool" -F -c RC -s "$size" -n "$iters"
		local mn typ avg p99 p999
		read -r mn typ avg p99 p999 <<<"$PT_LAT"
		[ -n "$typ" ] || fail_note no-result
		emit lat_min_us "$mn" us
		emit lat_typical_us "$typ" us
		emit lat_avg_us "$avg" us
		emit lat_p99_us "$p99" us
		emit lat_p999_us "$p999" us
		printf '  %-34s rep %d: typical %8s us  avg %8s us  p99 %8s us\n' "$point" "$r" "${typ:-FAIL}" "$avg" "$p99" | tee -a "$out/run.log" >&2
		[ -z "$after" ] || "$after" "$r" "$iters" "$typ"
	done
}

# host_floor REP ITERS TYPICAL: what the host alone does to a spinning
# ping-pong (bench/shm_pingpong: two processes, one shared word, perftest's
# figures), run right after a repetition of ib_write_lat -s 8: the same
# iterations, each side pacing one way to that repetition's typical, so
# the ping-pong lasts as long and meets as many of the host's stalls.
host_floor() {
	local rep=$1 iters=$2 pace=$3 lg b0 b1 t0 t1
	reset_r
	R[suite]=lat_size R[point]=host_floor/8 R[tool]=shm_pingpong R[op]=spin R[conn]=shm
	R[size]=8 R[rate]=0 R[rep]=$rep R[load1]=$(cut -d' ' -f1 /proc/loadavg)
	lg=$out/logs/host_floor-$rep.log
	kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$lg" | head -1; }
	if [ -z "$pace" ]; then
		fail_note no-pace # ib_write_lat gave no typical
		: >"$lg"
	else
		R[note]="pace=${pace}us"
		b0=$(cpu_snap); t0=$(now)
		timeout -k 3 150 "$SHM_PINGPONG" -n "$iters" -w "$pace" >"$lg" 2>&1 || fail_note exit
		t1=$(now); b1=$(cpu_snap)
		machine_cpu "$b0" "$b1" "$t0" "$t1"
		[ -n "$(kv typical_us)" ] || fail_note no-result
	fi
	emit lat_min_us "$(kv min_us)" us
	emit lat_typical_us "$(kv typical_us)" us
	emit lat_avg_us "$(kv avg_us)" us
	emit lat_p99_us "$(kv p99_us)" us
	emit lat_p999_us "$(kv p999_us)" us
	printf '  %-34s rep %d: typical %8s us  avg %8s us  p99 %8s us  p99.9 %8s us\n' "host_floor/8" "$rep" "$(kv typical_us)" "$(kv avg_us)" "$(kv p99_us)" "$(kv p999_us)" | tee -a "$out/run.log" >&2
}

# tcp_point SUITE POINT REP TCP_BW-ARGS...: one run of bench/tcp_bw (TCP
# over loopback, one stream): goodput and, with -b BYTES, CPU-s per GiB.
tcp_point() {
	local suite=$1 point=$2 rep=$3 lg b0 b1 t0 t1 g bytes
	shift 3
	reset_r
	R[suite]=$suite R[point]=$point R[tool]=tcp_bw R[op]=stream R[conn]=TCP R[size]=65536
	R[rate]=0 R[rep]=$rep R[load1]=$(cut -d' ' -f1 /proc/loadavg)
	lg=$out/logs/$suite-${point//\//_}-$rep.log
	b0=$(cpu_snap); t0=$(now)
	timeout -k 3 120 "$TCP_BW" "$@" >"$lg" 2>&1 || fail_note exit
	t1=$(now); b1=$(cpu_snap)
	machine_cpu "$b0" "$b1" "$t0" "$t1"
	R[ccpu]=$(sed -n 's/.*sender_cpu_s=\([^ ]*\).*/\1/p' "$lg")
	R[scpu]=$(sed -n 's/.*receiver_cpu_s=\([^ ]*\).*/\1/p' "$lg")
	bytes=$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' "$lg")
	R[bytes]=$bytes
	g=$(sed -n 's/.*goodput_gbps=\([^ ]*\).*/\1/p' "$lg")
	[ -n "$g" ] || fail_note no-result
	emit gbps "$g" Gbps
	[ -n "$bytes" ] && [ "$bytes" -gt 0 ] && emit_cpu_per_gib "$bytes"
	printf '  %-34s rep %d: %8s Gb/s  processes %s+%s CPU-s\n' "$point" "$rep" "${g:-FAIL}" "${R[ccpu]}" "${R[scpu]}" | tee -a "$out/run.log" >&2
}

# cmd_note POINT COMMAND: the command behind a point, for summary.md
cmd_note() {
	printf '%s\t%s\n' "$1" "$2" >>"$out/commands.tsv"
}

# ======================================================================
# Suites
# ======================================================================
if [ "$quick" -eq 1 ]; then
	# everyday: the headline points only; the 1-QP 64 KiB WRITE of
	# bw_size is the baseline of qp_scale and faults (report.py)
	SIZES=(65536)
	SIZES_UD=(4096)
	OTHER_SIZES=(65536)
	QPS=(4 16)
	QPS2=(4)
	LAT_SIZES=(8 65536)
	WLAT_SIZES=(8)
	THREADS=(1 2 4)
	THR_SIZES=(65536)
	FAULTS=("--drop 0.001 --stranded 0.0035714")
	CLEAN_AGAIN=0
	CMP_BYTES=$((256 << 20))
	CMP_RATES=("$rate")
	EV_ITERS=2048
	LAT_ITERS=1000 # perftest's default
	CG_N=(5000)
	COST_BYTES=$((1 << 30))
	COST_BYTES_SMALL=$((256 << 20))
	COST_CG_N=(200 1000)
else
	SIZES=(64 256 1024 4096 16384 65536 262144 1048576)
	SIZES_UD=(64 256 1024 2048 4096)
	OTHER_SIZES=("${SIZES[@]}")
	QPS=(1 2 4 8 16)
	QPS2=(2 4 8 16)
	LAT_SIZES=(8 64 1024 4096 65536 1048576)
	WLAT_SIZES=("${LAT_SIZES[@]}")
	THREADS=(1 2 4)
	THR_SIZES=(4096 65536)
	FAULTS=("--drop 0.001" "--stranded 0.0035714" "--drop 0.001 --stranded 0.0035714")
	CLEAN_AGAIN=1
	CMP_BYTES=$((2 << 30))
	CMP_RATES=("$rate" 0)
	EV_ITERS=16384
	LAT_ITERS=1000
	CG_N=(2000 20000)
	COST_BYTES=$((4 << 30))
	COST_BYTES_SMALL=$((1 << 30))
	COST_CG_N=(500 4000)
fi

# ---- bandwidth vs size
if want bw_size; then
	log "suite bw_size: bandwidth vs message size (perftest -D $DUR, $reps reps)"
	for s in "${SIZES[@]}"; do bw_point bw_size "write/RC/$s" ib_write_bw RC "$s" 1 1 poll ""; done
	for s in "${OTHER_SIZES[@]}"; do
		bw_point bw_size "write/UC/$s" ib_write_bw UC "$s" 1 1 poll ""
		bw_point bw_size "send/RC/$s" ib_send_bw RC "$s" 1 1 poll ""
		bw_point bw_size "send/UC/$s" ib_send_bw UC "$s" 1 1 poll ""
		bw_point bw_size "read/RC/$s" ib_read_bw RC "$s" 1 1 poll ""
	done
	for s in "${SIZES_UD[@]}"; do bw_point bw_size "send/UD/$s" ib_send_bw UD "$s" 1 1 poll ""; done
fi

# ---- latency vs size
if want lat_size; then
	log "suite lat_size: latency vs size (ib_send_lat / ib_write_lat, $LAT_ITERS iterations)"
	for s in "${LAT_SIZES[@]}"; do
		lat_point lat_size "send_lat/RC/$s" ib_send_lat "$s" "--rate $rate" "$LAT_ITERS"
	done
	for s in "${WLAT_SIZES[@]}"; do
		after=
		[ "$s" = 8 ] && after=host_floor
		lat_point lat_size "write_lat/RC/$s" ib_write_lat "$s" "--rate $rate" "$LAT_ITERS" $after
	done
	cmd_note lat_size/write_lat/RC/8 "usb4v-sim up --rate $rate; ib_write_lat -F -c RC -s 8 -n $LAT_ITERS (server on end 0, client on end 1)"
	cmd_note lat_size/host_floor/8 "shm_pingpong -n $LAT_ITERS -w T (T: the typical of the ib_write_lat -s 8 repetition it follows)"
fi

# ---- QP scaling
if want qp_scale; then
	log "suite qp_scale: aggregate RC write 64 KiB vs QP count"
	for q in "${QPS[@]}"; do bw_point qp_scale "1proc/$q" ib_write_bw RC 65536 "$q" 1 poll ""; done
	for q in "${QPS2[@]}"; do bw_point qp_scale "2proc/$q" ib_write_bw RC 65536 "$q" 2 poll ""; done
fi

# ---- poll vs event
if want events; then
	log "suite events: ib_send_bw RC 64 KiB x $EV_ITERS, poll vs event (-e; perftest has no -D with -e)"
	BW_ITERS=$EV_ITERS bw_point events "send/poll" ib_send_bw RC 65536 1 1 poll ""
	BW_ITERS=$EV_ITERS bw_point events "send/event" ib_send_bw RC 65536 1 1 event "" -e
fi

# ---- faults
if want faults; then
	log "suite faults: ib_write_bw RC 64 KiB on a faulty cable vs clean"
	[ "$CLEAN_AGAIN" -eq 1 ] && bw_point faults "clean" ib_write_bw RC 65536 1 1 poll ""
	for f in "${FAULTS[@]}"; do
		name=$(sed 's/--drop /drop=/; s/--stranded /stranded=/; s/ /+/g' <<<"$f")
		bw_point faults "$name" ib_write_bw RC 65536 1 1 poll "$f"
	done
fi

# ---- READ on lossy cables: each size against its own clean run
if want read_faults; then
	log "suite read_faults: ib_read_bw RC 64 KiB / 1 MiB, clean vs drop 1e-3 / 1e-2"
	for s in 65536 1048576; do
		bw_point read_faults "read/$s/clean" ib_read_bw RC "$s" 1 1 poll ""
		for d in 0.001 0.01; do
			bw_point read_faults "read/$s/drop=$d" ib_read_bw RC "$s" 1 1 poll "--drop $d"
		done
	done
fi

# ---- threads (our libibverbs program under usb4v-sim exec)
if want threads; then
	log "suite threads: bench/threads_bw, T threads x own RC QP on one context"
	for s in "${THR_SIZES[@]}"; do
		for t in "${THREADS[@]}"; do
			for ((r = 1; r <= reps; r++)); do
				reset_r
				R[suite]=threads R[point]="write/$s/$t" R[tool]=threads_bw R[op]=write R[conn]=RC
				R[size]=$s R[qps]=$t R[threads]=$t R[rep]=$r R[load1]=$(cut -d' ' -f1 /proc/loadavg)
				cable_up --rate "$rate" || { fail_note cable; continue; }
				lg=$out/logs/$CABLE-threads.log
				b0=$(cpu_snap); t0=$(now)
				timeout -k 3 $((DUR + 30)) "$SIM" exec --name "$CABLE" -- "$THREADS_BW" \
					-d "$D0" -D "$D1" -t "$t" -s "$s" --seconds "$DUR" >"$lg" 2>&1
				st=$?
				t1=$(now); b1=$(cpu_snap)
				R[retx]=$(cable_retx)
				cable_down
				[ "$st" -eq 0 ] || fail_note "exit-$st"
				machine_cpu "$b0" "$b1" "$t0" "$t1"
				kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$lg" | head -1; }
				R[bytes]=$(kv bytes) R[ccpu]=$(kv init_cpu_s) R[scpu]=$(kv target_cpu_s)
				g=$(kv goodput_gbps)
				[ -n "$g" ] || fail_note no-result
				emit gbps "$g" Gbps
				emit thread_min_gbps "$(kv thread_min_gbps)" Gbps
				emit thread_max_gbps "$(kv thread_max_gbps)" Gbps
				printf '  %-34s rep %d: %8s Gb/s (per thread %s..%s)\n' "write/$s/${t}thr" "$r" "${g:-FAIL}" "$(kv thread_min_gbps)" "$(kv thread_max_gbps)" | tee -a "$out/run.log" >&2
			done
		done
	done
fi

# ---- CPU per GiB: TCP loopback vs usb4verbs, same bytes
if want cpu_cmp; then
	log "suite cpu_cmp: $((CMP_BYTES >> 20)) MiB in 64 KiB messages: TCP loopback vs usb4verbs"
	for ((r = 1; r <= reps; r++)); do
		tcp_point cpu_cmp tcp/65536 "$r" -s 65536 -b "$CMP_BYTES"
	done
	n_cmp=$((CMP_BYTES / 65536))
	for rr in "${CMP_RATES[@]}"; do
		for om in write/poll send/poll send/event; do
			op=${om%/*} m=${om#*/}
			ev=()
			[ "$m" = event ] && ev=(-e)
			for ((r = 1; r <= reps; r++)); do
				reset_r
				R[suite]=cpu_cmp R[point]="usb4verbs-$op/r$rr/$m" R[tool]=ib_${op}_bw R[op]=$op
				R[conn]=RC R[size]=65536 R[rate]=$rr R[rep]=$r R[mode]=$m R[bytes]=$CMP_BYTES
				pt_run 1 120 "--rate $rr" -- "ib_${op}_bw" -F --report_gbits -c RC -s 65536 -n "$n_cmp" "${ev[@]}"
				[ -n "$PT_BW" ] || fail_note no-result
				emit gbps "$PT_BW" Gbps
				emit_cpu_per_gib "$CMP_BYTES"
				printf '  %-34s rep %d: %8s Gb/s  machine %s CPU-s\n' "$op r=$rr $m" "$r" "${PT_BW:-FAIL}" "${R[mcpu]}" | tee -a "$out/run.log" >&2
			done
		done
	done
fi

# ---- unthrottled software cost
if want sw_cost; then
	log "suite sw_cost: 8-byte RC round trip with polling, unthrottled; instructions per message"
	for ((r = 1; r <= reps; r++)); do
		reset_r
		R[suite]=sw_cost R[point]="engine_lat/8" R[tool]=engine_bw R[op]=send R[conn]=RC R[size]=8
		R[rate]=0 R[rep]=$r R[load1]=$(cut -d' ' -f1 /proc/loadavg)
		lg=$out/logs/engine_lat-$r.log
		b0=$(cpu_snap); t0=$(now)
		timeout -k 3 120 "$ENGINE_BW" --lat -r 0 -n $((quick ? 5000 : 20000)) >"$lg" 2>&1 || fail_note exit
		t1=$(now); b1=$(cpu_snap)
		machine_cpu "$b0" "$b1" "$t0" "$t1"
		v=$(sed -n 's/.*rtt_us=\([^ ]*\).*/\1/p' "$lg")
		[ -n "$v" ] || fail_note no-result
		emit rtt_us "$v" us
		printf '  %-34s rep %d: rtt %s us\n' "engine_bw --lat -r 0" "$r" "${v:-FAIL}" | tee -a "$out/run.log" >&2
	done
	lat_point sw_cost "send_lat/r0/8" ib_send_lat 8 "--rate 0" $((quick ? 1000 : 5000))
	# what an idle context costs: two connected contexts, no traffic
	for ((r = 1; r <= reps; r++)); do
		reset_r
		R[suite]=sw_cost R[point]="idle/2ctx" R[tool]=engine_bw R[op]=none R[conn]=RC
		R[rep]=$r R[load1]=$(cut -d' ' -f1 /proc/loadavg)
		lg=$out/logs/engine_idle-$r.log
		timeout -k 3 60 "$ENGINE_BW" --idle --seconds $((quick ? 3 : 10)) >"$lg" 2>&1 || fail_note exit
		v=$(sed -n 's/.*cpu_pct_per_context=\([^ ]*\).*/\1/p' "$lg")
		[ -n "$v" ] || fail_note no-result
		emit idle_cpu_pct "$v" "%core"
		printf '  %-34s rep %d: %s %% of a core per context\n' "engine_bw --idle" "$r" "${v:-FAIL}" | tee -a "$out/run.log" >&2
	done

	if [ "$have_valgrind" -eq 1 ]; then
		# Instructions per message: callgrind on both processes of engine_bw
		# (initiator + passive target, all threads), unthrottled RC WRITE of 64
		# bytes: total Ir / messages. Full mode also runs a smaller count; the
		# difference (marginal) cancels setup and teardown.
		for ((r = 1; r <= reps; r++)); do
			IR=()
			for n in "${CG_N[@]}"; do
				d=$TMP/cg-$r-$n
				mkdir -p "$d"
				timeout -k 5 600 valgrind --tool=callgrind --trace-children=yes \
					--callgrind-out-file="$d/cg.%p" "$ENGINE_BW" --op write -s 64 -r 0 -n "$n" \
					>"$out/logs/callgrind-$r-$n.log" 2>&1
				IR[$n]=$(cat "$d"/cg.* 2>/dev/null | awk '/^summary:/{s += $2} END{print s + 0}')
			done
			reset_r
			R[suite]=sw_cost R[point]="callgrind/write/64" R[tool]=engine_bw R[op]=write R[conn]=RC
			R[size]=64 R[rate]=0 R[rep]=$r
			hi=${CG_N[-1]} lo=${CG_N[0]} ipm=''
			R[bytes]=$((hi * 64))
			[ "$lo" != "$hi" ] &&
				ipm=$(awk -v a="${IR[$hi]}" -v b="${IR[$lo]}" -v n=$((hi - lo)) 'BEGIN{if (a > b) printf "%.0f", (a-b)/n}')
			tot=$(awk -v a="${IR[$hi]}" -v n="$hi" 'BEGIN{if (a > 0) printf "%.0f", a/n}')
			[ -n "$tot" ] || fail_note no-result
			R[note]="Ir(n=$hi)=${IR[$hi]}${ipm:+ Ir(n=$lo)=${IR[$lo]}}"
			emit instr_per_msg "$tot" Ir/msg
			[ -n "$ipm" ] && emit instr_per_msg_marginal "$ipm" Ir/msg
			printf '  %-34s rep %d: %s instructions/message (total Ir / n=%s)%s\n' "callgrind engine_bw write 64B" "$r" "${tot:-FAIL}" "$hi" "${ipm:+, marginal $ipm}" | tee -a "$out/run.log" >&2
		done
	else
		log "valgrind not installed: instructions per message not measured"
	fi
fi

# ---- issue 14 item 4: the software cost, against TCP over loopback in the
# same run (each repetition runs TCP, then usb4verbs, side by side)
if want cost; then
	log "suite cost: 64 KiB, TCP loopback vs an unthrottled cable; CPU with completion events; instructions per message"
	# send_event_point POINT REP BYTES: ib_send_bw -e, 64 KiB, at --rate
	send_event_point() {
		reset_r
		R[suite]=cost R[point]=$1 R[tool]=ib_send_bw R[op]=send R[conn]=RC R[size]=65536
		R[mode]=event R[rep]=$2 R[bytes]=$3
		pt_run 1 120 "--rate $rate" -- ib_send_bw -F --report_gbits -c RC -s 65536 -n $(($3 / 65536)) -e
		[ -n "$PT_BW" ] || fail_note no-result
		emit gbps "$PT_BW" Gbps
		emit_cpu_per_gib "$3"
		printf '  %-34s rep %d: %8s Gb/s  processes %s+%s CPU-s\n' "ib_send_bw -e r=$rate $1" "$2" "${PT_BW:-FAIL}" "${R[ccpu]}" "${R[scpu]}" | tee -a "$out/run.log" >&2
	}
	proc_sum() { awk -v a="${R[ccpu]:-0}" -v b="${R[scpu]:-0}" 'BEGIN{printf "%.3f", a+b}'; }
	# emit_marginal_cpu PROC0 MACHINE0 OK0 DBYTES: CPU-s per GiB of the
	# bytes the current run moved beyond the smaller one's (PROC0,
	# MACHINE0: its CPU; OK0: it succeeded)
	emit_marginal_cpu() {
		local g
		[ "$3" = 1 ] || fail_note small-run-failed
		g=$(awk -v b="$4" 'BEGIN{print b/2^30}')
		emit proc_cpu_s_per_gib_marginal "$(awk -v c1="$(proc_sum)" -v c0="$1" -v g="$g" 'BEGIN{printf "%.4f", (c1-c0)/g}')" s/GiB
		emit machine_cpu_s_per_gib_marginal "$(awk -v c1="${R[mcpu]}" -v c0="$2" -v g="$g" 'BEGIN{printf "%.4f", (c1-c0)/g}')" s/GiB
	}
	cost_bytes_n=$((COST_BYTES / 65536))
	cmd_note cost/tcp_bw "tcp_bw -s 65536 --seconds $DUR"
	cmd_note cost/write_r0 "usb4v-sim up --rate 0; ib_write_bw -F --report_gbits -c RC -s 65536 -q 1 -D $DUR (server on end 0, client on end 1)"
	cmd_note cost/tcp_cpu "tcp_bw -s 65536 -b B, B = $COST_BYTES_SMALL and $COST_BYTES"
	cmd_note cost/send_event "usb4v-sim up --rate $rate; ib_send_bw -F --report_gbits -c RC -s 65536 -e -n N (both sides), N = $((COST_BYTES_SMALL / 65536)) and $cost_bytes_n"
	for ((r = 1; r <= reps; r++)); do
		tcp_point cost tcp_bw "$r" -s 65536 --seconds "$DUR"
		reset_r
		R[suite]=cost R[point]=write_r0 R[tool]=ib_write_bw R[op]=write R[conn]=RC R[size]=65536
		R[rate]=0 R[rep]=$r
		pt_run 1 $((DUR + 40)) "--rate 0" -- ib_write_bw -F --report_gbits -c RC -s 65536 -q 1 -D "$DUR"
		[ -n "$PT_BW" ] || fail_note no-result
		emit gbps "$PT_BW" Gbps
		printf '  %-34s rep %d: %8s Gb/s\n' "ib_write_bw r=0" "$r" "${PT_BW:-FAIL}" | tee -a "$out/run.log" >&2

		# CPU per GiB: a small and a large transfer of each; their
		# difference cancels what does not grow with the bytes (process
		# start, connection setup, perftest's CPU clock calibration: a
		# fifth of a second of busy waiting per process)
		tcp_point cost tcp_cpu_small "$r" -s 65536 -b "$COST_BYTES_SMALL"
		c0=$(proc_sum) m0=${R[mcpu]} ok0=${R[ok]}
		tcp_point cost tcp_cpu "$r" -s 65536 -b "$COST_BYTES"
		emit_marginal_cpu "$c0" "$m0" "$ok0" $((COST_BYTES - COST_BYTES_SMALL))
		send_event_point send_event_small "$r" "$COST_BYTES_SMALL"
		c0=$(proc_sum) m0=${R[mcpu]} ok0=${R[ok]}
		send_event_point send_event "$r" "$COST_BYTES"
		emit_marginal_cpu "$c0" "$m0" "$ok0" $((COST_BYTES - COST_BYTES_SMALL))
	done
	if [ "$have_valgrind" -eq 1 ]; then
		# Instructions per 64 KiB message: callgrind on engine_bw
		# --inproc, RC WRITE over an unthrottled cable: both ends in one
		# thread without progress threads, moved in turn, so the count
		# is the engine's work on both ends (no polling, no wake-ups)
		# and the same from run to run. Marginal between two counts:
		# setup and teardown cancel.
		lo=${COST_CG_N[0]} hi=${COST_CG_N[1]}
		cmd_note cost/callgrind "valgrind --tool=callgrind engine_bw --inproc -s 65536 -r 0 -n N, N = $lo and $hi: (Ir($hi) - Ir($lo)) / $((hi - lo))"
		for ((r = 1; r <= reps; r++)); do
			IR=()
			for n in "$lo" "$hi"; do
				d=$TMP/cgc-$r-$n
				mkdir -p "$d"
				timeout -k 5 900 valgrind --tool=callgrind \
					--callgrind-out-file="$d/cg.%p" "$ENGINE_BW" --inproc -s 65536 -r 0 \
					-n "$n" >"$out/logs/callgrind-64k-$r-$n.log" 2>&1
				IR[$n]=$(cat "$d"/cg.* 2>/dev/null | awk '/^summary:/{s += $2} END{print s + 0}')
			done
			reset_r
			R[suite]=cost R[point]=callgrind/write/65536 R[tool]=engine_bw R[op]=write R[conn]=RC
			R[size]=65536 R[rate]=0 R[rep]=$r
			R[note]="Ir(n=$hi)=${IR[$hi]} Ir(n=$lo)=${IR[$lo]}"
			ipm=$(awk -v a="${IR[$hi]}" -v b="${IR[$lo]}" -v n=$((hi - lo)) 'BEGIN{if (a > b && b > 0) printf "%.0f", (a-b)/n}')
			[ -n "$ipm" ] || fail_note no-result
			emit instr_per_msg_marginal "$ipm" Ir/msg
			printf '  %-34s rep %d: %s instructions per 64 KiB message (marginal, n=%s..%s)\n' "callgrind engine_bw write 64K" "$r" "${ipm:-FAIL}" "$lo" "$hi" | tee -a "$out/run.log" >&2
		done
	else
		log "valgrind not installed: instructions per 64 KiB message not measured"
	fi
fi

# ---- loss: every lossy run against a clean run made right beside it.
# A seed's ratio is the median of LOSS_ROUNDS rounds (clean, then each
# drop rate, with that seed): on a shared host one 4 s run moves 10-30%.
if want loss; then
	LOSS_DUR=4
	LOSS_ROUNDS=$([ "$quick" -eq 1 ] && echo 1 || echo 3)
	log "suite loss: ib_write_bw RC 64 KiB, 1 QP, -D $LOSS_DUR; per seed, $LOSS_ROUNDS round(s) of: clean, --drop 0.001, --drop 0.01"
	declare -A LOSS_RATIOS=()
	for seed in 1 2 3 4 5; do
		declare -A SEED_RATIOS=()
		for ((round = 1; round <= LOSS_ROUNDS; round++)); do
			clean=
			for d in 0 0.001 0.01; do
				reset_r
				R[suite]=loss R[tool]=ib_write_bw R[op]=write R[conn]=RC R[size]=65536
				R[rep]=$seed R[drop]=$d R[point]="clean/round$round"
				up="--rate $rate"
				[ "$d" = 0 ] || { R[point]="drop=$d/round$round" up="$up --drop $d --seed $seed"; }
				pt_run 1 $((LOSS_DUR + 40)) "$up" -- ib_write_bw -F --report_gbits -c RC \
					-s 65536 -q 1 -D "$LOSS_DUR"
				[ -n "$PT_BW" ] || fail_note no-result
				emit gbps "$PT_BW" Gbps
				if [ "$d" = 0 ]; then
					clean=$PT_BW
					continue
				fi
				ratio=$(awk -v a="$PT_BW" -v b="$clean" 'BEGIN{if (a > 0 && b > 0) printf "%.3f", a/b}')
				emit ratio_to_clean "$ratio" x
				SEED_RATIOS[$d]="${SEED_RATIOS[$d]:-} ${ratio:-0}"
				printf '  %-34s seed %d round %d: %8s Gb/s, clean %s: ratio %s  retx %s\n' "drop=$d" "$seed" "$round" "${PT_BW:-FAIL}" "${clean:-FAIL}" "${ratio:-?}" "${R[retx]:-?}" | tee -a "$out/run.log" >&2
			done
		done
		for d in 0.001 0.01; do
			read -r med _ <<<"$(med_min "${SEED_RATIOS[$d]}")"
			reset_r
			R[suite]=loss R[tool]=ib_write_bw R[op]=write R[conn]=RC R[size]=65536
			R[rep]=$seed R[drop]=$d R[point]="drop=$d" R[note]="median of rounds:${SEED_RATIOS[$d]}"
			emit ratio_to_clean "$med" x
			LOSS_RATIOS[$d]="${LOSS_RATIOS[$d]:-} ${med:-0}"
		done
		unset SEED_RATIOS
	done
	for d in 0.001 0.01; do
		read -r med mn <<<"$(med_min "${LOSS_RATIOS[$d]}")"
		target=$([ "$d" = 0.001 ] && echo "median >= 0.90, none < 0.80" || echo "median >= 0.70")
		met=$(awk -v d="$d" -v m="${med:-0}" -v n="${mn:-0}" 'BEGIN{print ((d == 0.001 ? m >= 0.90 && n >= 0.80 : m >= 0.70) ? "met" : "NOT met")}')
		log "loss drop=$d: per-seed ratios to clean${LOSS_RATIOS[$d]}; median ${med:-?}, min ${mn:-?} (target $target: $met)"
	done
fi

# ---- stripe: one QP over rings of half the wire's rate, against the wire
if want stripe; then
	ring=$(awk -v r="$rate" 'BEGIN{printf "%g", r / 2}')
	log "suite stripe: ib_write_bw RC 64 KiB, --rate $rate vs --ring-rate $ring (lanes), one channel, -q 2..16"
	declare -A STRIPE_RATIOS=() RING_RATIOS=()
	for ((r = 1; r <= reps; r++)); do
		wire='' ring1=''
		for point in wire ring ring/measured ring/1chan ring/q2 ring/q4 ring/q8 ring/q16; do
			reset_r
			q=1
			[[ $point == ring/q* ]] && q=${point#ring/q}
			R[suite]=stripe R[tool]=ib_write_bw R[op]=write R[conn]=RC R[size]=65536
			R[rep]=$r R[point]=$point R[qps]=$q
			up="--rate $rate"
			[ "$point" = wire ] || up="$up --ring-rate $ring"
			[ "$point" = ring/1chan ] && up="$up --channels 1"
			# measured: lanes as on a kernel device, which knows no ring rate
			[ "$point" = ring/measured ] && export USB4V_LANES=auto
			pt_run 1 $((DUR + 40)) "$up" -- ib_write_bw -F --report_gbits -c RC \
				-s 65536 -q "$q" -D "$DUR"
			unset USB4V_LANES
			[ -n "$PT_BW" ] || fail_note no-result
			emit gbps "$PT_BW" Gbps
			if [ "$point" = wire ]; then
				wire=$PT_BW
				continue
			fi
			ratio=$(awk -v a="$PT_BW" -v b="$wire" 'BEGIN{if (a > 0 && b > 0) printf "%.3f", a/b}')
			emit ratio_to_wire "$ratio" x
			STRIPE_RATIOS[$point]="${STRIPE_RATIOS[$point]:-} ${ratio:-0}"
			printf '  %-34s rep %d: %8s Gb/s, wire alone %s: ratio %s  retx %s\n' "$point" "$r" "${PT_BW:-FAIL}" "${wire:-FAIL}" "${ratio:-?}" "${R[retx]:-?}" | tee -a "$out/run.log" >&2
			[ "$point" = ring ] && ring1=$PT_BW
			# N QPs against the one QP of this repetition: the pair
			# sees the same host, a median of medians would not
			if [[ $point == ring/q* ]]; then
				ratio=$(awk -v a="$PT_BW" -v b="$ring1" 'BEGIN{if (a > 0 && b > 0) printf "%.3f", a/b}')
				emit ratio_to_ring "$ratio" x
				RING_RATIOS[$point]="${RING_RATIOS[$point]:-} ${ratio:-0}"
			fi
		done
	done
	cmd_note stripe/ring/measured "usb4v-sim up --rate $rate --ring-rate $ring; USB4V_LANES=auto ib_write_bw -F --report_gbits -c RC -s 65536 -q 1 -D $DUR (both sides: lanes measured, not from the ring rate)"
	for point in ring ring/measured ring/1chan ring/q2 ring/q4 ring/q8 ring/q16; do
		read -r med _ <<<"$(med_min "${STRIPE_RATIOS[$point]}")"
		log "stripe $point: ratios to the wire alone${STRIPE_RATIOS[$point]}; median ${med:-?}"
	done
	for point in ring/q2 ring/q4 ring/q8 ring/q16; do
		read -r med _ <<<"$(med_min "${RING_RATIOS[$point]}")"
		log "stripe $point: ratios to 1 QP of the same repetition${RING_RATIOS[$point]}; median ${med:-?}"
	done
fi

# ------------------------------------------------------------------ report
T_END=$(date +%s)
log "measurements done in $((T_END - T_START)) s; plotting"
python3 "$here/report.py" --csv "$CSV" --out "$out" --cmd "$cmdline" \
	--seconds $((T_END - T_START)) --capacity "$cap" --rate "$rate" \
	--fails "$FAILS" --governor "$governor" --mode "$MODE" \
	--commands "$out/commands.tsv" \
	>>"$out/run.log" 2>&1 || { log "report.py failed (see run.log)"; FAILS=$((FAILS + 1)); }
T_END=$(date +%s)
log "done in $((T_END - T_START)) s: $out/summary.md ($FAILS failed run(s))"
[ "$FAILS" -eq 0 ]
