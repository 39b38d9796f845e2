# SPDX-License-Identifier: MIT
# Guest helpers of the address and rdma_cm plans (rdmacm.sh over the soft
# cable, tbcm.sh over the emulated Thunderbolt cable): two cable ends as two
# hosts, each end's device D0 / D1, its net device E0 / E1 and the
# processes using it in network namespace N0 / N1 at address A0 / A1. The
# tools find each other by address; every tool's payload must show in the
# receiving end's cable counters (hw_counters). Sourced by the plan, which
# sets D0 D1 E0 E1 first.
N0=u4v-n0 N1=u4v-n1
A0=10.77.0.1 A1=10.77.0.2
ZERO_GID=0000:0000:0000:0000:0000:0000:0000:0000

gids() { cat /sys/class/infiniband/$1/ports/1/gids/* 2>/dev/null; }
v4gid() { # the sysfs text of IPv4 address $1's RoCE v2 GID
	echo "$1" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n", $1, $2, $3, $4 }'
}
wait_gid() { # dev gid yes|no: up to 10 s for the GID to come or go
	i=0
	while [ $i -lt 50 ]; do
		if gids $1 | grep -qx "$2"; then [ $3 = yes ] && return 0
		else [ $3 = no ] && return 0; fi
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}
cnt() { cat /sys/class/infiniband/$1/ports/1/hw_counters/$2 2>/dev/null || echo 0; }
snap() { # counters before a tool runs
	rx0=$(cnt $D0 cable_rx_bytes) rx1=$(cnt $D1 cable_rx_bytes)
}
crossed() { # name min0 min1: each end received at least that many bytes
	d0=$(($(cnt $D0 cable_rx_bytes) - rx0)) d1=$(($(cnt $D1 cable_rx_bytes) - rx1))
	[ $d0 -ge $2 ] && [ $d1 -ge $3 ]
	step ${1}_crossed $? "rx_bytes $D0 +$d0 (>= $2) $D1 +$d1 (>= $3)"
}
gid_index() { # dev addr: the index of the address's RoCE v2 GID
	g=$(v4gid $2)
	for f in /sys/class/infiniband/$1/ports/1/gids/*; do
		[ "$(cat $f)" = "$g" ] && basename $f && return 0
	done
	return 1
}
expect() { # name file regex
	grep -qE "$3" "$2"
	step ${1}_output $? "/$3/"
}
ns_pair() { # name wait port server-cmd client-cmd (in their namespaces)
	snap
	PAIR_WAIT=$2 PAIR_PORT=$3 PAIR_NS=$N0 PAIR_HOST=
	pair $1 "$IP netns exec $N0 $4" "$IP netns exec $N1 $5"
	unset PAIR_WAIT PAIR_PORT PAIR_NS PAIR_HOST
}

# Each end's net device into its namespace (unregistered and registered
# again), with its address; the port's GIDs follow, and hold no address
# of the other end.
cm_netns_addresses() {
	rc=0
	$IP link set $E0 netns $N0 && $IP link set $E1 netns $N1 || rc=1
	for n in 0 1; do
		eval ns=\$N$n dev=\$E$n addr=\$A$n
		$IP -n $ns link set lo up && $IP -n $ns link set $dev mtu 9000 up &&
			$IP -n $ns addr add $addr/24 dev $dev || rc=1
	done
	wait_gid $D0 "$(v4gid $A0)" yes && wait_gid $D1 "$(v4gid $A1)" yes || rc=1
	gids $D0 | grep -qx "$(v4gid $A1)" && rc=1
	gids $D1 | grep -qx "$(v4gid $A0)" && rc=1
	gids $D0 | grep -vx $ZERO_GID; gids $D1 | grep -vx $ZERO_GID
	step gids_follow_addresses $rc
}

# $1: a step name; net_rc: whether end 1's namespace reaches end 0's address
cm_ping() {
	timeout 20 $IP netns exec $N1 ping -c 1 -W 10 $A0 >/dev/null
	net_rc=$?
	step $1 $net_rc
}

# The tools, by address: servers in end 0's namespace, clients in end 1's,
# side channels over TCP between the namespaces.
addr_tools() {
	# each side takes the GID of its own address, as ML transports do
	g0=$(gid_index $D0 $A0) g1=$(gid_index $D1 $A1)
	for t in rc ud; do
		ns_pair ${t}_pingpong_gid wait_listen 18515 \
			"ibv_${t}_pingpong -d $D0 -g $g0 -n 200 -c" \
			"ibv_${t}_pingpong -d $D1 -g $g1 -n 200 -c $A0"
		# the tool counts both directions: each end received half
		n=$(awk '/ bytes in / { print int($1 / 2); exit }' \
			/tmp/${t}_pingpong_gid.cli)
		crossed ${t}_pingpong_gid ${n:-1} ${n:-1}
		expect ${t}_pingpong_gid /tmp/${t}_pingpong_gid.cli "remote address: .* GID ::ffff:$A0$"
	done
	# perftest picks the IPv4-mapped RoCE v2 GID by itself
	ns_pair send_bw_addr wait_listen 18515 "ib_send_bw -d $D0 -F -n 200 -s 65536" \
		"ib_send_bw -d $D1 -F -n 200 -s 65536 $A0"
	crossed send_bw_addr 13107200 0
	expect send_bw_addr /tmp/send_bw_addr.cli "GID: (00:){10}255:255:10:77:00:02"
}
# rdma_cm through the kernel's CM, its MADs on QP1 across the cable:
# servers listen on end 0's address, clients resolve it from end 1's
# namespace (a local resolution would find $D0 and cross nothing).
P=7471
cm_pair() { # name min0 min1 server-cmd client-cmd [regex...]
	n=$1 m0=$2 m1=$3 s=$4 c=$5
	shift 5
	P=$((P + 1))
	ns_pair $n wait_cm_listen $P "$(echo "$s" | sed "s/@P@/$P/g")" \
		"$(echo "$c" | sed "s/@P@/$P/g")"
	crossed $n $m0 $m1
	for re in "$@"; do expect $n /tmp/$n.cli "$re"; done
}
# CM_SKIP: tool groups (perftest, fi_msg, fi_rdm) the plan does not run, with
# its reason in CM_SKIP_WHY
cm_skipped() { # group step
	case " ${CM_SKIP:-} " in
	*" $1 "*) skipstep $2 "${CM_SKIP_WHY:-}"; return 0 ;;
	esac
	return 1
}
cm_tools() {
	cm_pair rping 20480 20480 "rping -s -a $A0 -p @P@ -v -V -C 20 -S 1024" \
		"rping -c -a $A0 -p @P@ -v -V -C 20 -S 1024" \
		"^ping data: rdma-ping-19: "
	# under TCG perftest's clock calibration fails now and then, and the
	# tool with it (exit 1, no report): once more then
	retry_was=${PAIR_RETRY_IF:-}
	PAIR_RETRY_IF="${retry_was:+$retry_was|}Correlation coefficient r\^2"
	for t in send write; do
		cm_skipped perftest ${t}_bw_cm && continue
		cm_pair ${t}_bw_cm 13107200 0 \
			"ib_${t}_bw -R -d $D0 -p @P@ -n 200 -s 65536" \
			"ib_${t}_bw -R -d $D1 -p @P@ -n 200 -s 65536 $A0" \
			"^ *65536 +200 "
	done
	PAIR_RETRY_IF=$retry_was
	# udaddy: UD, its peers' QPNs and qkeys from SIDR
	P=7173 # cm_pair takes the next port: udaddy listens on 7174
	cm_pair udaddy 1000 1000 "udaddy" "udaddy -s $A0" \
		"^data transfers complete" "^return status 0"
	cm_pair ucmatose 40000 40000 "ucmatose -p @P@ -c 4 -C 10 -S 1000" \
		"ucmatose -p @P@ -c 4 -C 10 -S 1000 -s $A0" \
		"^data transfers complete" "^return status 0"
	# libfabric's verbs provider, connected and reliable-datagram
	# endpoints; -c checks the data; its side channel is TCP on @P@
	for ep in msg rdm; do
		cm_skipped fi_$ep fi_pingpong_$ep && continue
		[ $ep = msg ] && prov=verbs || prov="verbs;ofi_rxm"
		P=$((P + 1))
		snap
		PAIR_PORT=$P PAIR_NS=$N0 PAIR_HOST=
		pair fi_pingpong_$ep \
			"$IP netns exec $N0 fi_pingpong -p $prov -e $ep -B $P -I 100 -S 1024 -c" \
			"$IP netns exec $N1 fi_pingpong -p $prov -e $ep -P $P -I 100 -S 1024 -c $A0"
		unset PAIR_PORT PAIR_NS PAIR_HOST
		crossed fi_pingpong_$ep 102400 102400
		expect fi_pingpong_$ep /tmp/fi_pingpong_$ep.cli "^1k[[:space:]]+100[[:space:]]+=100[[:space:]]"
	done
	# nobody listens: the peer's CM rejects at once, no hang
	t0=$(uptime_s)
	timeout 30 $IP netns exec $N1 rping -c -a $A0 -p 7400 -C 1 >/tmp/cm_nolistener 2>&1
	rc=$?
	cat /tmp/cm_nolistener
	[ $rc != 0 ] && [ $rc != 124 ] && grep -q REJECTED /tmp/cm_nolistener &&
		[ $(($(uptime_s) - t0)) -lt 10 ]
	step cm_nolistener $? "rc=$rc after $(($(uptime_s) - t0)) s"
}
