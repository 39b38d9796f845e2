// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: module entry, parameters, cables and the context id space.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/log2.h>

#include "usb4verbs.h"

unsigned int u4v_ring_depth = 256;
module_param_named(ring_depth, u4v_ring_depth, uint, 0444);
MODULE_PARM_DESC(ring_depth, "Descriptors per ring (power of two, 16..1024)");

static bool soft_cable;
module_param(soft_cable, bool, 0444);
MODULE_PARM_DESC(soft_cable,
		 "Create usb4v0/usb4v1 joined by a software DMA engine");

unsigned int u4v_soft_channels = 16;
module_param_named(soft_channels, u4v_soft_channels, uint, 0444);
MODULE_PARM_DESC(soft_channels, "Channel budget of the soft cable");

unsigned int u4v_tb_channels = 1;
module_param_named(tb_channels, u4v_tb_channels, uint, 0444);
MODULE_PARM_DESC(tb_channels,
		 "Channel budget per Thunderbolt peer (DMA tunnels, ring pairs)");

bool u4v_allow_direct;
module_param_named(allow_direct, u4v_allow_direct, bool, 0444);
MODULE_PARM_DESC(allow_direct,
		 "Allow direct mode (writable rings, CAP_SYS_RAWIO only)");

static void u4v_cable_release(struct kref *ref)
{
	kfree(container_of(ref, struct u4v_cable, ref));
}

struct u4v_cable *u4v_cable_alloc(const struct u4v_cable_ops *ops, u32 end,
				  u32 max_channels, u64 wire_rate)
{
	struct u4v_cable *cable = kzalloc(sizeof(*cable), GFP_KERNEL);

	if (!cable)
		return NULL;
	mutex_init(&cable->lock);
	kref_init(&cable->ref);
	cable->ops = ops;
	cable->end = end;
	cable->next_ctx = end * U4V_CTX_PER_END;
	cable->max_channels = max_channels;
	cable->wire_rate = wire_rate;
	cable->up = true;
	return cable;
}

void u4v_cable_put(struct u4v_cable *cable)
{
	kref_put(&cable->ref, u4v_cable_release);
}

/* Under cable->lock: publish the live set to every context's status page. */
void u4v_cable_publish(struct u4v_cable *cable)
{
	u64 alive = cable->local_mask | cable->remote_mask;
	u32 i;

	for (i = 0; i < U4V_MAX_CTX; i++) {
		struct u4v_ucontext *c = cable->ctx[i];

		if (!c)
			continue;
		WRITE_ONCE(c->status->alive_mask, alive);
		WRITE_ONCE(c->status->cable_up, cable->up);
		if (c->evfd)
			eventfd_signal(c->evfd, 1);
	}
}

/* The cable went away (unplug, logout): tell every context. */
void u4v_cable_down(struct u4v_cable *cable)
{
	mutex_lock(&cable->lock);
	cable->up = false;
	cable->remote_mask = 0;
	u4v_cable_publish(cable);
	mutex_unlock(&cable->lock);
}

/*
 * The soft cable: usb4v0 and usb4v1, two ends in one kernel. Each end is a
 * cable of its own, as on two hosts; they talk through the channel
 * protocol by function call, and the soft DMA engine moves their frames.
 */
static struct u4v_cable *soft[2];

static int u4v_soft_send(struct u4v_cable *cable, struct u4v_msg *m)
{
	u4v_proto_recv(cable->priv, m);
	return 0;
}

/* End 1 joins the channel end 0 is opening: side[1] of the same chan. */
static struct u4v_half *u4v_soft_join(struct u4v_cable *cable,
				      struct u4v_ucontext *owner,
				      struct u4v_msg *m)
{
	struct u4v_half *h0 = ((struct u4v_cable *)cable->priv)->opening;
	struct u4v_chan *chan = h0->chan;
	struct u4v_half *h1 = &chan->side[1];
	int ret;

	ret = u4v_half_init(h1, chan, owner, m->a, m->depth);
	if (ret)
		return ERR_PTR(ret);
	mutex_lock(&chan->lock);
	h0->peer = h1;
	h1->peer = h0;
	chan->nr_alive++;
	mutex_unlock(&chan->lock);
	return h1;
}

static const struct u4v_cable_ops u4v_soft_cable_ops = {
	.send = u4v_soft_send,
	.chan_join = u4v_soft_join,
	/* no hardware: the soft engine moves frames for every channel */
};

static void u4v_soft_cable_destroy(void)
{
	int i;

	u4v_soft_engine_stop();
	for (i = 0; i < 2; i++)
		if (soft[i])
			u4v_cable_down(soft[i]);
	for (i = 0; i < 2; i++) {
		if (soft[i] && soft[i]->dev)
			u4v_dev_destroy(soft[i]->dev);
	}
	for (i = 0; i < 2; i++) {
		if (soft[i])
			u4v_cable_put(soft[i]);
		soft[i] = NULL;
	}
}

static int u4v_soft_cable_create(void)
{
	struct u4v_dev *dev;
	int i, ret;

	for (i = 0; i < 2; i++) {
		soft[i] = u4v_cable_alloc(&u4v_soft_cable_ops, i,
					  u4v_soft_channels, 0);
		if (!soft[i])
			goto nomem;
	}
	soft[0]->priv = soft[1];
	soft[1]->priv = soft[0];
	for (i = 0; i < 2; i++) {
		dev = u4v_dev_create(soft[i], i, NULL,
				     0x0200005500000000ull | (i + 1));
		if (!dev)
			goto nomem;
		ret = u4v_dev_register(dev, "usb4v%d");
		if (ret) {
			ib_dealloc_device(&dev->ibdev);
			goto err;
		}
		soft[i]->dev = dev;
	}
	ret = u4v_allow_direct ? u4v_soft_engine_start(soft) : 0;
	if (ret)
		goto err;
	return 0;
nomem:
	ret = -ENOMEM;
err:
	u4v_soft_cable_destroy();
	return ret;
}

static int __init u4v_init(void)
{
	int ret;

	if (!is_power_of_2(u4v_ring_depth) ||
	    u4v_ring_depth < U4V_RING_DEPTH_MIN || u4v_ring_depth > 1024) {
		pr_err(U4V_DRV_NAME ": ring_depth must be a power of two in 16..1024\n");
		return -EINVAL;
	}
	ret = u4v_tb_init();
	if (ret)
		return ret;
	if (soft_cable) {
		ret = u4v_soft_cable_create();
		if (ret) {
			u4v_tb_exit();
			return ret;
		}
	}
	return 0;
}

static void __exit u4v_exit(void)
{
	u4v_soft_cable_destroy();
	u4v_tb_exit();
}

module_init(u4v_init);
module_exit(u4v_exit);

MODULE_DESCRIPTION("RDMA verbs over USB4/Thunderbolt host-to-host DMA rings");
MODULE_LICENSE("GPL");
