// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu: the net device that shares the cable, a stand-in for
 * thunderbolt-net (with net=1). As drivers/net/thunderbolt does, it
 * publishes a "network" directory, so each host's XDomain gets a "network"
 * service, and binds to that service with a net device ("thunderbolt%d")
 * whose parent is the service: what usb4verbs looks for to take the
 * device's addresses as its GIDs. A frame sent on one host's device comes
 * out of the other host's while the cable is plugged. Not its protocol:
 * no login, no rings; frames are handed over in the kernel, as veth does.
 */
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>

#include "tbemu.h"

#define TBE_NET_KEY "network"
#define TBE_NET_ID 1

struct tbe_net {
	int host;
};

/* c66189ca-1cce-4195-bdb8-49592e5f5a4f: thunderbolt-net's directory */
static const uuid_t tbe_net_uuid =
	UUID_INIT(0xc66189ca, 0x1cce, 0x4195,
		  0xbd, 0xb8, 0x49, 0x59, 0x2e, 0x5f, 0x5a, 0x4f);
static struct tb_property_dir *tbe_net_dir;
static struct net_device __rcu *tbe_net_devs[TBE_HOSTS];

static netdev_tx_t tbe_net_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct tbe_net *n = netdev_priv(dev);
	struct net_device *peer;

	rcu_read_lock();
	peer = rcu_dereference(tbe_net_devs[!n->host]);
	if (!peer || !READ_ONCE(tbe_hosts[n->host]->plugged))
		kfree_skb(skb); /* no cable, no peer: lost */
	else
		dev_forward_skb(peer, skb);
	rcu_read_unlock();
	return NETDEV_TX_OK;
}

static const struct net_device_ops tbe_net_ops = {
	.ndo_start_xmit = tbe_net_xmit,
	.ndo_set_mac_address = eth_mac_addr,
	.ndo_validate_addr = eth_validate_addr,
};

static int tbe_net_probe(struct tb_service *svc,
			 const struct tb_service_id *id)
{
	struct tbe_host *h = tbe_host_of_tb(tb_service_parent(svc)->tb);
	struct net_device *ndev;
	struct tbe_net *n;
	int ret;

	ndev = alloc_netdev(sizeof(*n), "thunderbolt%d", NET_NAME_ENUM,
			    ether_setup);
	if (!ndev)
		return -ENOMEM;
	n = netdev_priv(ndev);
	n->host = h->index;
	ndev->netdev_ops = &tbe_net_ops;
	ndev->max_mtu = 65522; /* thunderbolt-net's */
	eth_hw_addr_random(ndev);
	SET_NETDEV_DEV(ndev, &svc->dev);
	ret = register_netdev(ndev);
	if (ret) {
		free_netdev(ndev);
		return ret;
	}
	rcu_assign_pointer(tbe_net_devs[n->host], ndev);
	tb_service_set_drvdata(svc, ndev);
	return 0;
}

static void tbe_net_remove(struct tb_service *svc)
{
	struct net_device *ndev = tb_service_get_drvdata(svc);
	struct tbe_net *n = netdev_priv(ndev);

	RCU_INIT_POINTER(tbe_net_devs[n->host], NULL);
	synchronize_net();
	unregister_netdev(ndev);
	free_netdev(ndev);
}

static const struct tb_service_id tbe_net_ids[] = {
	{ TB_SERVICE(TBE_NET_KEY, TBE_NET_ID) },
	{ },
};

static struct tb_service_driver tbe_net_driver = {
	.driver.name = "tbemu-net",
	.probe = tbe_net_probe,
	.remove = tbe_net_remove,
	.id_table = tbe_net_ids,
};

int tbe_net_init(void)
{
	int ret;

	tbe_net_dir = tb_property_create_dir(&tbe_net_uuid);
	if (!tbe_net_dir)
		return -ENOMEM;
	tb_property_add_immediate(tbe_net_dir, "prtcid", TBE_NET_ID);
	tb_property_add_immediate(tbe_net_dir, "prtcvers", 1);
	tb_property_add_immediate(tbe_net_dir, "prtcrevs", 1);
	tb_property_add_immediate(tbe_net_dir, "prtcstns", 0);
	ret = tb_register_service_driver(&tbe_net_driver);
	if (!ret) {
		ret = tb_register_property_dir(TBE_NET_KEY, tbe_net_dir);
		if (!ret)
			return 0;
		tb_unregister_service_driver(&tbe_net_driver);
	}
	tb_property_free_dir(tbe_net_dir);
	return ret;
}

void tbe_net_exit(void)
{
	tb_unregister_property_dir(TBE_NET_KEY, tbe_net_dir);
	tb_unregister_service_driver(&tbe_net_driver);
	tb_property_free_dir(tbe_net_dir);
}
