#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Open MPI over UCX across a software cable: Debian's unmodified mpirun
# starts two ranks of PROGRAM, one per end (mpi_rank.sh sets each rank's
# UCX_NET_DEVICES), with
#   --mca pml ucx  the point-to-point layer, and so the collectives, is UCX
#                  (Debian's /etc/openmpi/openmpi-mca-params.conf excludes
#                  it by default: "pml = ^ucx");
#   --mca btl self no byte-transfer layer that could move data between the
#                  ranks (vader's shared memory, tcp) is even initialised;
#   UCX_TLS=rc_verbs,ud_verbs  only the cable's verbs transports, no shared
#                  memory, no TCP.
# No other variable is set. PROGRAM must print "PASS, N ping-pong payload
# bytes"; each end must have received at least N/2 bytes over the cable.
#
#   mpi.sh [--name TAG] [--timeout S] [--up "UP OPTIONS"] PROGRAM [ARGS...]

# shellcheck disable=SC2034 # E2E_TEST is read by lib.sh
here=$(cd "$(dirname "$0")" && pwd)
E2E_TEST=mpi # log tag, used by lib.sh
tmo=120
upopts=()
while [ $# -gt 0 ]; do
	case $1 in
	--name) E2E_TEST=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	--up) read -r -a upopts <<<"$2"; shift 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "mpi.sh: no program" >&2; exit 2; }
# shellcheck source=lib.sh
. "$here/lib.sh"

e2e_need mpirun openmpi-bin
[ -x "$1" ] || e2e_die "$1 was not built (libopenmpi-dev missing?)"
cable=$E2E_ID-mpi
e2e_up "$cable" "${upopts[@]}"

log=$E2E_LOGDIR/mpirun.log
e2e_exec "$cable" "$log" \
	env UCX_TLS=rc_verbs,ud_verbs U4V_MPI_DEV0="$D0" U4V_MPI_DEV1="$D1" \
	mpirun --allow-run-as-root --oversubscribe -np 2 \
	--mca pml ucx --mca btl self \
	-x UCX_TLS -x U4V_MPI_DEV0 -x U4V_MPI_DEV1 \
	"$here/mpi_rank.sh" "$@"
rc=$?
e2e_show mpirun "$log"
[ "$rc" -eq 124 ] && e2e_die "mpirun timed out after ${tmo}s"
[ "$rc" -eq 0 ] || e2e_fail "mpirun exited with status $rc"

grep -E "^mpi_pingpong: +[0-9]+ B " "$log" | while IFS= read -r l; do
	e2e_log "RESULT: $l"
done
grep -q "^mpi_pingpong: allreduce .* ok" "$log" || e2e_fail "no allreduce result"
moved=$(sed -n 's/^mpi_pingpong: PASS, \([0-9]*\) ping-pong payload bytes$/\1/p' "$log")
[ -n "$moved" ] || e2e_fail "no PASS line"

"$SIM" stat --name "$cable" >"$E2E_LOGDIR/stat"
sed "s/^/[$E2E_TEST] stat| /" "$E2E_LOGDIR/stat"
# a ping-pong moves as much each way
[ -n "$moved" ] && e2e_crossed "$E2E_LOGDIR/stat" $((moved / 2)) $((moved / 2))
e2e_finish
