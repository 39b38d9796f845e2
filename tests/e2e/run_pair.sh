#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Run a server and a client verbs program on the two ends of one software
# cable and check both succeed.
#
#   run_pair.sh --name TEST [--port P] [--timeout S] [--expect REGEX]...
#               [--up "UP OPTIONS"] -- SERVER CMD... ::: CLIENT CMD...
#
# In both commands @D0@ / @D1@ become the cable's device names (server runs
# on end 0, client on end 1) and @PORT@ the TCP port. The cable is named
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

while [ $# -gt 0 ]; do
	case $1 in
	--name) E2E_TEST=$2; shift 2 ;;
	--port) port=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	--expect) expects+=("$2"); shift 2 ;;
	--up) read -r -a upopts <<<"$2"; shift 2 ;;
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
	command -v "$tool" >/dev/null || e2e_die "'$tool' is not installed"
done

# The port CTest assigned is distinct per test; another build tree's run
# may hold it, then any free one will do.
if e2e_listening "$port"; then
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + RANDOM % 20000))
		e2e_listening "$p" || { port=$p; break; }
	done
	e2e_log "TCP port busy, using $port"
fi
cable="$E2E_ID-$port"
e2e_up "$cable" "${upopts[@]}"

subst() {
	local a out=()
	for a in "$@"; do
		a=${a//@D0@/$D0}
		a=${a//@D1@/$D1}
		a=${a//@PORT@/$port}
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
timeout -k 5 "$tmo" "$SIM" exec --name "$cable" -- stdbuf -oL -eL "${server[@]}" >"$slog" 2>&1 &
spid=$!
E2E_PIDS+=("$spid")

# The client connects once: wait until the server listens (or died).
for ((i = 0; i < 200; i++)); do
	e2e_listening "$port" && break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.1
done
if ! e2e_listening "$port"; then
	e2e_show server "$slog"
	if kill -0 "$spid" 2>/dev/null; then
		e2e_die "server did not listen on port $port within 20 s"
	fi
	wait "$spid"
	e2e_die "server exited (status $?) before listening on port $port"
fi

timeout -k 5 "$tmo" "$SIM" exec --name "$cable" -- stdbuf -oL -eL "${client[@]}" >"$clog" 2>&1 &
cpid=$!
E2E_PIDS+=("$cpid")
wait "$cpid"
crc=$?

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

"$SIM" stat --name "$cable" | sed "s/^/[$E2E_TEST] stat| /"
e2e_finish
