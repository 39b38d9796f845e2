# Addresses over the kernel shim, with the soft cable's ends as two hosts:
# each end's net device (one side of the veth pair soft_netdevs names,
# u4v_netdevs) and the processes using that end live in a network namespace
# of their own, so a peer's address is never a local one. The ports' GIDs
# follow the net devices' addresses; tools find each other by address and
# every tool's payload must show in the receiving end's cable counters
# (hw_counters). Leaves the module and the net devices as guest-init set
# them up.
D0=usb4v0 D1=usb4v1 # end 0 and end 1
E0=u4va E1=u4vb   # their net devices (soft_netdevs)
. /etc/u4v/cm-lib.sh

u4v_unload
$IP link del $E0
u4v_load
step addr_load $?
# No net device yet: no GIDs at all (no address, no link-local one).
n=$(gids $D0; gids $D1)
echo "$n" | grep -vqx "$ZERO_GID"
[ $? = 1 ]
step gids_without_netdev $? "$(echo "$n" | grep -vcx "$ZERO_GID") GIDs"

# The net devices come after the module: the link-local GID from the MAC.
bound() { dmesg | grep -c "$1: GIDs follow $2"; }
b0=$(bound $D0 $E0) b1=$(bound $D1 $E1)
$IP netns add $N0 && $IP netns add $N1 && u4v_netdevs
step netns_veth $?
rc=0
for d in $D0 $D1; do
	i=0
	while ! gids $d | grep -q '^fe80:' && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
	gids $d | grep -q '^fe80:' || rc=1
done
[ $(bound $D0 $E0) -gt $b0 ] && [ $(bound $D1 $E1) -gt $b1 ] || rc=1
step gids_netdev_registered $rc
cm_netns_addresses
# What libibverbs shows: the address as a RoCE v2 GID, the kernel's table.
timeout 20 ibv_devinfo -v -d $D0 >/tmp/addr_devinfo 2>&1
rc=$?
grep -E 'gid_tbl_len|GID\[' /tmp/addr_devinfo
grep -qE "GID\[ *[0-9]+\]:[[:space:]]+::ffff:$A0, RoCE v2" /tmp/addr_devinfo &&
	grep -qE 'gid_tbl_len:[[:space:]]+16$' /tmp/addr_devinfo || rc=1
step gids_devinfo $rc
# IPv6 addresses come and go, and so do their GIDs.
G6=fd00:0077:0000:0000:0000:0000:0000:0001
$IP -n $N0 addr add fd00:77::1/64 dev $E0 nodad && wait_gid $D0 $G6 yes &&
	$IP -n $N0 addr del fd00:77::1/64 dev $E0 && wait_gid $D0 $G6 no
step gids_ipv6_come_and_go $?
cm_ping veth_ping

if [ $net_rc = 0 ]; then
	addr_tools
	cm_tools
else
	skipstep addr_tools "no network between the namespaces"
fi

# Unbound on unload with the devices in their namespaces; back to defaults.
u4v_unload
step addr_unload $?
$IP -n $N0 link del $E0 # now, not when the namespace is cleaned up
$IP netns del $N0; $IP netns del $N1
u4v_netdevs
u4v_load
