// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: the net device that shares the cable; its addresses are the
 * port's GIDs.
 *
 * The port is a RoCE v2 port, so ib_core keeps its GID table (roce_gid_mgmt)
 * in step with the addresses of the net device associated with it by
 * ib_device_set_netdev(), as for any RoCE device: a link-local GID from the
 * device's MAC, and one GID per IPv4 (mapped) and IPv6 address, added and
 * removed as the addresses come and go. Which device shares the cable, the
 * cable says (netdev_match): thunderbolt-net's on the same XDomain, or the
 * one soft_netdevs names. It may appear after us and go before us: a
 * notifier binds a matching device when it registers (a move to another
 * network namespace unregisters and registers it again) and unbinds it when
 * it unregisters, whereupon the core drops its GIDs. Without one the table
 * is empty.
 */
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>

#include "usb4verbs.h"

static LIST_HEAD(u4k_netdev_devs); /* every u4k_dev, by netdev_node */
static DEFINE_MUTEX(u4k_netdev_lock);

/* Outside RTNL (the core's rescan takes it): the bound device's GIDs. */
static void u4k_netdev_rescan(struct work_struct *work)
{
	rdma_roce_rescan_device(&container_of(work, struct u4k_dev,
					      gid_work)->ibdev);
}

/* Under RTNL and u4k_netdev_lock. */
static void u4k_netdev_bind(struct u4k_dev *dev, struct net_device *ndev)
{
	if (dev->ndev || ndev->reg_state != NETREG_REGISTERED ||
	    !dev->cable->ops->netdev_match ||
	    !dev->cable->ops->netdev_match(dev->cable, ndev) ||
	    ib_device_set_netdev(&dev->ibdev, ndev, 1))
		return;
	dev->ndev = ndev;
	/* the core's own notifier work may have looked before we bound it */
	schedule_work(&dev->gid_work);
	ibdev_info(&dev->ibdev, "GIDs follow %s\n", netdev_name(ndev));
}

static int u4k_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct u4k_dev *dev;

	if (event != NETDEV_REGISTER && event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	mutex_lock(&u4k_netdev_lock);
	list_for_each_entry(dev, &u4k_netdev_devs, netdev_node) {
		if (event == NETDEV_REGISTER) {
			u4k_netdev_bind(dev, ndev);
		} else if (dev->ndev == ndev) {
			/* the core removes its GIDs on this same event */
			ib_device_set_netdev(&dev->ibdev, NULL, 1);
			dev->ndev = NULL;
		}
	}
	mutex_unlock(&u4k_netdev_lock);
	return NOTIFY_DONE;
}

static struct notifier_block u4k_netdev_nb = {
	.notifier_call = u4k_netdev_event,
};

/* A registered device: bind the matching net device, if it exists yet. */
void u4k_netdev_add(struct u4k_dev *dev)
{
	struct net_device *ndev;
	struct net *net;

	INIT_WORK(&dev->gid_work, u4k_netdev_rescan);
	rtnl_lock();
	down_read(&net_rwsem);
	mutex_lock(&u4k_netdev_lock);
	list_add_tail(&dev->netdev_node, &u4k_netdev_devs);
	for_each_net(net)
		for_each_netdev(net, ndev)
			u4k_netdev_bind(dev, ndev);
	mutex_unlock(&u4k_netdev_lock);
	up_read(&net_rwsem);
	rtnl_unlock();
}

/* Before unregistering: no binding after this (the core drops the last). */
void u4k_netdev_del(struct u4k_dev *dev)
{
	mutex_lock(&u4k_netdev_lock);
	list_del(&dev->netdev_node);
	mutex_unlock(&u4k_netdev_lock);
	cancel_work_sync(&dev->gid_work);
}

int u4k_netdev_init(void)
{
	return register_netdevice_notifier(&u4k_netdev_nb);
}

void u4k_netdev_exit(void)
{
	unregister_netdevice_notifier(&u4k_netdev_nb);
}
