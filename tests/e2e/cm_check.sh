#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One case of cm_check (rdma_cm semantics through librdmacm) on a fresh
# software cable: the passive side on end 0's address, the active side
# resolving it from end 1.
#
#   cm_check.sh --name TAG --port P CM_CHECK CASE

# shellcheck disable=SC2034 # E2E_TEST is read by lib.sh
here=$(cd "$(dirname "$0")" && pwd)
E2E_TEST=cm_check
port=7471
while [ $# -gt 0 ]; do
	case $1 in
	--name) E2E_TEST=$2; shift 2 ;;
	--port) port=$2; shift 2 ;;
	*) break ;;
	esac
done
prog=$1
what=$2
# shellcheck source=lib.sh
. "$here/lib.sh"

cable=$E2E_ID-$port
e2e_up "$cable"
e2e_addrs "$cable"
out=$E2E_LOGDIR/cm_check.log
timeout -k 5 60 "$SIM" exec --name "$cable" -- \
	"$prog" "$what" "$A0" "$A1" "$D0" "$D1" "$port" >"$out" 2>&1
rc=$?
e2e_show "$what" "$out"
[ $rc -eq 0 ] || e2e_fail "cm_check $what exited with status $rc"
grep -q "^PASS: $what\$" "$out" || e2e_fail "cm_check $what did not pass"
sed -n 's/^RESULT: /RESULT: /p' "$out" | while IFS= read -r l; do e2e_log "$l"; done
e2e_finish
