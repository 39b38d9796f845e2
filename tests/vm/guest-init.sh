#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# /init of the usb4verbs test VM: loads the distribution's modules and
# usb4verbs.ko (soft_cable=1), runs the plans named in /etc/u4v/plan-list in
# order (tests/vm/plans/<name>.sh, helpers from guest-lib.sh), checks the
# kernel log, prints U4V-DONE and powers off. The host judges the markers.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /usr/sbin /sbin /root
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
ip link set lo up
export PATH=/usr/bin:/bin:/sbin:/usr/sbin
export HOME=/root
PLANS=$(cat /etc/u4v/plan-list)
echo "U4V-BEGIN plans=[$PLANS] kernel=$(uname -r) cpus=$(nproc)"
. /etc/u4v/guest-lib.sh

# Kernel modules: the distribution's, then ours.
rc=0
for m in $(cat /lib/modules/order); do
	insmod /lib/modules/$m 2>/tmp/insmod.err || { cat /tmp/insmod.err; rc=1; }
done
step modules_distro $rc
u4v_netdevs
step netdevs $?
u4v_load
step load_usb4verbs $?
devs=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')
case "$devs" in *usb4v0*usb4v1*) step ib_devices 0 "[$devs]" ;; *) step ib_devices 1 "[$devs]" ;; esac
ls -l /dev/infiniband/

for plan in $PLANS; do
	echo "U4V-PLAN $plan"
	. /etc/u4v/plans/$plan.sh
done

dmesg | grep -iE 'usb4verbs|BUG|WARNING|Oops|general protection' | head -40
if dmesg | grep -qE 'BUG:|WARNING:|Oops|general protection'; then
	step kernel_clean 1
else
	step kernel_clean 0
fi
echo "U4V-DONE"
sync
poweroff -f
sleep 10
