#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Run a server and a client verbs program on the two ends of one software
# cable and check both succeed.
#
#   run_pair.sh --name TEST [--port P] [--timeout S] [--expect REGEX]...
#               [--up "UP OPTIONS"] [--wait tcp|cm] [--crossed "B0 B1"]
#               [--counter "NAME MIN"]... [--ends] [--spurious "STATUS REGEX"]...
#               -- SERVER CMD... ::: CLIENT CMD...
#
# In both commands @D0@ / @D1@ become the cable's device names (server runs
# on end 0, client on end 1), @A0@ / @A1@ the ends' addresses and @PORT@ the
# port. The client starts once the server listens on that port: on TCP
# (--wait tcp, the default: perftest's and the pingpongs' side channel) or
# in rdma_cm (--wait cm: an rdma_cm listener of the cable). With --crossed,
# end 0 must have received at least B0 bytes over the cable and end 1 B1.
# With --counter, both ends' counter NAME (usb4v-sim stat) must add up to
# at least MIN. With --ends each side runs in its own end's view (usb4v-sim exec --end),
# where that end's device alone is visible, named @D0@ on both. With
# --spurious, a program that exits with STATUS after its last line matched
# REGEX counts as having exited 0: a failure the tool's own code makes
# after its work is done and checked (named where the test is declared).
# "@SEMI@" in a command becomes ";" (CMake cannot pass one). The cable is named
# after the driver's pid and the port (e2e<pid>-<port>) so that tests, and
# test runs of several build trees, can run in parallel. Every
# process runs under timeout(1) (and stdbuf(1), so a killed tool's output is
# kept); whatever is left is killed on exit and the cable brought down. Each --expect regex must match a line of the client's
# or server's output; the matching lines (the tool's figures) are printed as
# RESULT lines so that CI logs show them. The cable's counters are printed at
# the end.
#
# Exit status: 0 if both programs exited 0 and every regex matched.

# shellcheck disable=SC2034 # E2E_TEST is read by lib.sh
here=$(cd "$(dirname "$0")" && pwd)
E2E_TEST=pair
port=18515
tmo=60
expects=()
upopts=()
wait_kind=tcp
crossed=
counters=()
views=("" "")
spurious=()

while [ $# -gt 0 ]; do
	case $1 in
	--name) E2E_TEST=$2; shift 2 ;;
	--port) port=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	--expect) expects+=("$2"); shift 2 ;;
	--up) read -r -a upopts <<<"$2"; shift 2 ;;
	--wait) wait_kind=$2; shift 2 ;;
	--crossed) crossed=$2; shift 2 ;;
	--counter) counters+=("$2"); shift 2 ;;
	--ends) views=("--end 0" "--end 1"); shift ;;
	--spurious) spurious+=("$2"); shift 2 ;;
	--) shift; break ;;
	*) echo "run_pair.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
server=()
while [ $# -gt 0 ] && [ "$1" != ":::" ]; do server+=("$1"); shift; done
[ $# -gt 0 ] && shift
client=("$@")
if [ ${#server[@]} -eq 0 ] || [ ${#client[@]} -eq 0 ]; then
	echo "run_pair.sh: need SERVER CMD ::: CLIENT CMD" >&2
	exit 2
fi

# shellcheck source=lib.sh
. "$here/lib.sh"

for tool in timeout stdbuf "${server[0]}" "${client[0]}"; do
	e2e_need "$tool"
done

listening() {
	if [ "$wait_kind" = cm ]; then
		e2e_cm_listening "$cable" "$port"
	else
		e2e_listening "$port"
	fi
}

# The port CTest assigned is distinct per test; another build tree's run
# may hold it, then any free one will do. (rdma_cm ports are the cable's.)
if [ "$wait_kind" = tcp ] && e2e_listening "$port"; then
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + RANDOM % 20000))
		e2e_listening "$p" || { port=$p; break; }
	done
	e2e_log "TCP port busy, using $port"
fi
cable="$E2E_ID-$port"
e2e_up "$cable" "${upopts[@]}"
e2e_addrs "$cable"

subst() {
	local a out=()
	for a in "$@"; do
		a=${a//@D0@/$D0}
		a=${a//@D1@/$D1}
		a=${a//@A0@/$A0}
		a=${a//@A1@/$A1}
		a=${a//@PORT@/$port}
		a=${a//@SEMI@/;}
		out+=("$a")
	done
	printf '%s\0' "${out[@]}"
}
mapfile -d '' -t server < <(subst "${server[@]}")
mapfile -d '' -t client < <(subst "${client[@]}")

slog=$E2E_LOGDIR/server.log
clog=$E2E_LOGDIR/client.log
e2e_log "server: ${server[*]}"
e2e_log "client: ${client[*]}"

# stdbuf: keep what a killed (timed-out) tool printed.
# shellcheck disable=SC2086 # views[] are option words or nothing
timeout -k 5 "$tmo" "$SIM" exec --name "$cable" ${views[0]} -- stdbuf -oL -eL "${server[@]}" >"$slog" 2>&1 &
spid=$!
E2E_PIDS+=("$spid")

# status 0, or the status a --spurious entry excuses for the log's last line
excused() {
	local st=$1 log=$2 s last
	last=$(tail -n 1 "$log" 2>/dev/null)
	for s in "${spurious[@]}"; do
		if [ "$st" = "${s%% *}" ] && grep -qE -- "${s#* }" <<<"$last"; then
			e2e_log "NOTE: status $st after '$last' (the tool's own race, see the test's declaration): taken as 0"
			return 0
		fi
	done
	return "$st"
}

# The client connects once: wait until the server listens (or died).
for ((i = 0; i < 200; i++)); do
	listening && break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.1
done
if ! listening; then
	e2e_show server "$slog"
	if kill -0 "$spid" 2>/dev/null; then
		e2e_die "server did not listen on port $port within 20 s"
	fi
	wait "$spid"
	e2e_die "server exited (status $?) before listening on port $port"
fi

# shellcheck disable=SC2086
timeout -k 5 "$tmo" "$SIM" exec --name "$cable" ${views[1]} -- stdbuf -oL -eL "${client[@]}" >"$clog" 2>&1 &
cpid=$!
E2E_PIDS+=("$cpid")
wait "$cpid"
crc=$?
excused "$crc" "$clog" && crc=0

# A client that failed leaves the server waiting: give it a moment, then stop it.
if [ "$crc" -ne 0 ]; then
	for ((i = 0; i < 50; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$spid" 2>/dev/null
fi
wait "$spid"
src=$?
excused "$src" "$slog" && src=0

e2e_show server "$slog"
e2e_show client "$clog"

[ "$src" -eq 124 ] && e2e_fail "server timed out after ${tmo}s"
[ "$crc" -eq 124 ] && e2e_fail "client timed out after ${tmo}s"
[ "$src" -ne 0 ] && e2e_fail "server exited with status $src"
[ "$crc" -ne 0 ] && e2e_fail "client exited with status $crc"
for re in "${expects[@]}"; do
	if lines=$(cat "$slog" "$clog" | grep -E -- "$re"); then
		while IFS= read -r l; do
			e2e_log "RESULT: $l"
		done <<<"$lines"
	else
		e2e_fail "no output line matches /$re/"
	fi
done

"$SIM" stat --name "$cable" >"$E2E_LOGDIR/stat.log"
sed "s/^/[$E2E_TEST] stat| /" "$E2E_LOGDIR/stat.log"
[ -n "$crossed" ] && e2e_crossed "$E2E_LOGDIR/stat.log" $crossed
for c in "${counters[@]}"; do
	# shellcheck disable=SC2086 # "NAME MIN": two words
	e2e_counter "$E2E_LOGDIR/stat.log" $c
done
e2e_finish
