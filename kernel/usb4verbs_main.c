// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: module entry, parameters and cables.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/log2.h>

#include "usb4verbs.h"

unsigned int u4k_ring_depth = 256;
module_param_named(ring_depth, u4k_ring_depth, uint, 0444);
MODULE_PARM_DESC(ring_depth, "Descriptors per ring (power of two, 16..1024)");

static bool soft_cable;
module_param(soft_cable, bool, 0444);
MODULE_PARM_DESC(soft_cable,
		 "Create usb4v0/usb4v1 joined by a software DMA engine");

unsigned int u4k_soft_channels = 16;
module_param_named(soft_channels, u4k_soft_channels, uint, 0444);
MODULE_PARM_DESC(soft_channels, "Channel budget of the soft cable");

char *u4k_soft_netdevs[2];
int u4k_nr_soft_netdevs;
module_param_array_named(soft_netdevs, u4k_soft_netdevs, charp,
			 &u4k_nr_soft_netdevs, 0444);
MODULE_PARM_DESC(soft_netdevs,
		 "Net devices of the soft cable's ends (NAME0,NAME1): their addresses are the ends' GIDs");

unsigned int u4k_tb_channels = 1;
module_param_named(tb_channels, u4k_tb_channels, uint, 0444);
MODULE_PARM_DESC(tb_channels,
		 "Channel budget per Thunderbolt peer (DMA tunnels, ring pairs)");

unsigned int u4k_tb_timeout_ms = 1000;
module_param_named(tb_timeout_ms, u4k_tb_timeout_ms, uint, 0444);
MODULE_PARM_DESC(tb_timeout_ms,
		 "XDomain request timeout and login retry period, ms");

bool u4k_allow_direct;
module_param_named(allow_direct, u4k_allow_direct, bool, 0444);
MODULE_PARM_DESC(allow_direct,
		 "Allow direct mode (writable rings, CAP_SYS_RAWIO only)");

static void u4k_cable_release(struct kref *ref)
{
	kfree(container_of(ref, struct u4k_cable, ref));
}

struct u4k_cable *u4k_cable_alloc(const struct u4k_cable_ops *ops, u32 end,
				  u32 max_channels, u64 wire_rate)
{
	struct u4k_cable *cable = kzalloc(sizeof(*cable), GFP_KERNEL);

	if (!cable)
		return NULL;
	mutex_init(&cable->lock);
	kref_init(&cable->ref);
	cable->ops = ops;
	cable->end = end;
	cable->next_ctx = end * U4K_CTX_PER_END;
	cable->max_channels = max_channels;
	cable->wire_rate = wire_rate;
	cable->up = true;
	return cable;
}

void u4k_cable_put(struct u4k_cable *cable)
{
	kref_put(&cable->ref, u4k_cable_release);
}

/* Under cable->lock: publish the live set to every context's status page. */
void u4k_cable_publish(struct u4k_cable *cable)
{
	u64 alive = cable->local_mask | cable->remote_mask;
	struct u4k_ucontext *c;
	u32 i;

	for (i = 0; i < U4V_MAX_CTX; i++) {
		c = cable->ctx[i];
		if (!c)
			continue;
		WRITE_ONCE(c->status->alive_mask, alive);
		WRITE_ONCE(c->status->cable_up, cable->up);
		if (c->evfd)
			u4k_eventfd_signal(c->evfd);
	}
}

/* The cable went away (unplug, logout): tell every context. */
void u4k_cable_down(struct u4k_cable *cable)
{
	mutex_lock(&cable->lock);
	cable->up = false;
	cable->remote_mask = 0;
	u4k_cable_publish(cable);
	mutex_unlock(&cable->lock);
}

static int __init u4k_init(void)
{
	int ret;

	if (!is_power_of_2(u4k_ring_depth) ||
	    u4k_ring_depth < U4V_RING_DEPTH_MIN || u4k_ring_depth > 1024) {
		pr_err(U4K_DRV_NAME ": ring_depth must be a power of two in 16..1024\n");
		return -EINVAL;
	}
	ret = u4k_netdev_init();
	if (ret)
		return ret;
	ret = u4k_tb_init();
	if (ret)
		goto err_tb;
	ret = soft_cable ? u4k_soft_cable_create() : 0;
	if (!ret)
		return 0;
	u4k_tb_exit();
err_tb:
	u4k_netdev_exit();
	return ret;
}

static void __exit u4k_exit(void)
{
	u4k_soft_cable_destroy();
	u4k_tb_exit();
	u4k_netdev_exit();
}

module_init(u4k_init);
module_exit(u4k_exit);

MODULE_DESCRIPTION("RDMA verbs over USB4/Thunderbolt host-to-host DMA rings");
MODULE_LICENSE("GPL");
