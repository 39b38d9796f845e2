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

bool u4v_allow_direct;
module_param_named(allow_direct, u4v_allow_direct, bool, 0444);
MODULE_PARM_DESC(allow_direct,
		 "Allow direct mode (writable rings, CAP_SYS_RAWIO only)");

static void u4v_cable_release(struct kref *ref)
{
	kfree(container_of(ref, struct u4v_cable, ref));
}

struct u4v_cable *u4v_cable_alloc(const struct u4v_cable_ops *ops,
				  u32 max_channels, u64 wire_rate)
{
	struct u4v_cable *cable = kzalloc(sizeof(*cable), GFP_KERNEL);

	if (!cable)
		return NULL;
	mutex_init(&cable->lock);
	kref_init(&cable->ref);
	cable->ops = ops;
	cable->max_channels = max_channels;
	cable->wire_rate = wire_rate;
	cable->up = true;
	init_waitqueue_head(&cable->engine_wq);
	return cable;
}

void u4v_cable_put(struct u4v_cable *cable)
{
	kref_put(&cable->ref, u4v_cable_release);
}

/* Under cable->lock: publish the live set to every context's status page. */
static void u4v_cable_publish(struct u4v_cable *cable)
{
	u32 i;

	for (i = 0; i < U4V_MAX_CTX; i++) {
		struct u4v_ucontext *c = cable->ctx[i];

		if (!c)
			continue;
		WRITE_ONCE(c->status->alive_mask, cable->alive_mask);
		WRITE_ONCE(c->status->cable_up, cable->up);
		if (c->evfd)
			eventfd_signal(c->evfd, 1);
	}
}

/* Give a new context an id on its cable (round robin: late reuse). */
int u4v_ctx_attach(struct u4v_ucontext *uctx)
{
	struct u4v_cable *cable = uctx->dev->cable;
	u32 i, id;
	int ret = -EBUSY;

	mutex_lock(&cable->lock);
	if (!cable->up) {
		ret = -ENODEV;
		goto out;
	}
	for (i = 0; i < U4V_MAX_CTX; i++) {
		id = (cable->next_ctx + i) % U4V_MAX_CTX;
		if (cable->ctx[id])
			continue;
		cable->ctx[id] = uctx;
		cable->next_ctx = id + 1;
		cable->alive_mask |= BIT_ULL(id);
		uctx->ctx_id = id;
		uctx->status->ctx_id = id;
		if (uctx->direct && !cable->nr_direct++)
			wake_up(&cable->engine_wq);
		u4v_cable_publish(cable);
		ret = 0;
		break;
	}
out:
	mutex_unlock(&cable->lock);
	return ret;
}

void u4v_ctx_detach(struct u4v_ucontext *uctx)
{
	struct u4v_cable *cable = uctx->dev->cable;

	mutex_lock(&cable->lock);
	if (cable->ctx[uctx->ctx_id] == uctx) {
		cable->ctx[uctx->ctx_id] = NULL;
		cable->alive_mask &= ~BIT_ULL(uctx->ctx_id);
		cable->nr_direct -= uctx->direct;
	}
	u4v_ctx_release_chans(uctx);
	u4v_cable_publish(cable);
	mutex_unlock(&cable->lock);
}

/* The cable went away (unplug, logout): tell every context. */
void u4v_cable_down(struct u4v_cable *cable)
{
	mutex_lock(&cable->lock);
	cable->up = false;
	u4v_cable_publish(cable);
	mutex_unlock(&cable->lock);
}

/* The soft cable: two local devices joined in kernel memory. */
static struct u4v_cable *soft;

static const struct u4v_cable_ops u4v_soft_cable_ops = {
	/* no hardware: the soft engine moves frames for every channel */
};

static int u4v_soft_cable_create(void)
{
	int i, ret;

	soft = u4v_cable_alloc(&u4v_soft_cable_ops, u4v_soft_channels, 0);
	if (!soft)
		return -ENOMEM;
	for (i = 0; i < 2; i++) {
		soft->end[i] = u4v_dev_create(soft, i, NULL,
					      0x0200005500000000ull | (i + 1));
		if (!soft->end[i]) {
			ret = -ENOMEM;
			goto err;
		}
		ret = u4v_dev_register(soft->end[i], "usb4v%d");
		if (ret) {
			ib_dealloc_device(&soft->end[i]->ibdev);
			soft->end[i] = NULL;
			goto err;
		}
	}
	ret = u4v_allow_direct ? u4v_soft_engine_start(soft) : 0;
	if (ret)
		goto err;
	return 0;
err:
	for (i = 0; i < 2; i++)
		if (soft->end[i])
			u4v_dev_destroy(soft->end[i]);
	u4v_cable_put(soft);
	soft = NULL;
	return ret;
}

static void u4v_soft_cable_destroy(void)
{
	int i;

	if (!soft)
		return;
	u4v_soft_engine_stop(soft);
	u4v_cable_down(soft);
	for (i = 0; i < 2; i++)
		if (soft->end[i])
			u4v_dev_destroy(soft->end[i]);
	u4v_cable_put(soft);
	soft = NULL;
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
