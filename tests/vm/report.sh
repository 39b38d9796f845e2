#!/bin/sh
# SPDX-License-Identifier: MIT
# Summarise a VM serial log: step verdicts, throughput, usb4verbs / rxe.
LOG=$1
tr -d '\r' <"$LOG" | awk '
/^U4V-STEP/ { n[$3]++ }
/^PERF / { bw[$2] = $3 }
/^U4V-PYVERBS / { pyv[$2] = $0; sub(/^U4V-PYVERBS [^ ]+ /, "", pyv[$2]) }
END {
	printf "steps: %d pass, %d fail, %d skip\n", n["PASS"], n["FAIL"], n["SKIP"]
	split("write_bw read_bw send_bw_e atomic_bw", t, " ")
	for (i = 1; i <= 4; i++) {
		u = bw["usb4v_" t[i]]; r = bw["rxe_" t[i]]
		if (u == "" && r == "") continue
		printf "PERF-RATIO %-11s usb4v %8s MB/s  rxe %8s MB/s  ratio %s\n", t[i], u, r,
			(r > 0 && u != "") ? sprintf("%.2f", u / r) : "n/a"
	}
	if (bw["direct_write_bw"] != "" && bw["usb4v_write_bw"] != "")
		printf "PERF-DIRECT write_bw    direct %8s MB/s  safe %8s MB/s\n",
			bw["direct_write_bw"], bw["usb4v_write_bw"]
	for (d in pyv)
		printf "PYVERBS %-6s %s\n", d, pyv[d]
}'
