// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: the soft cable and the software DMA engine.
 *
 * soft_cable=1 makes usb4v0 and usb4v1, two cable ends in one kernel,
 * each a cable of its own as on two hosts: they talk through the channel
 * protocol by function call, and the engine here moves their frames.
 *
 * The engine stands in for the NHI on the soft cable and on loopback
 * channels: frames posted on one half's TX ring are copied into the other
 * half's posted RX buffers, in ring order, and both descriptors are
 * completed the way the hardware completes them. With no RX descriptor
 * posted the TX ring stalls (end-to-end flow control) until the receiver
 * gives buffers back; a dead receiver completes TX frames unseen.
 *
 * Safe-mode channels move on the doorbell system call. Direct-mode
 * channels have no system call to hook: like the NHI, which notices a
 * producer register write by itself, one kernel thread polls the doorbell
 * pages of direct contexts (every 10-20 us while frames flow, every
 * 0.5-1 ms after 0.2 s without work, not at all without a direct context).
 */
#include <linux/string.h>
#include <linux/kthread.h>
#include <linux/delay.h>
#include <linux/platform_device.h>
#include <linux/dma-mapping.h>
#include <linux/netdevice.h>

#include "usb4verbs.h"

/* Under chan->lock. */
void u4k_soft_pump(struct u4k_half *tx, u32 *delivered, u32 *completed)
{
	struct u4k_half *rx = tx->peer;
	u64 pool = (u64)tx->depth * U4V_FRAME_SIZE;
	u32 tpos, rpos, lf, len, done;
	struct u4v_desc *d;
	u64 off;

	*delivered = 0;
	*completed = 0;
	for (; tx->tx_done != tx->tx_prod; tx->tx_done++, (*completed)++) {
		tpos = tx->tx_done & (tx->depth - 1);
		d = &tx->tx_desc[tpos];
		lf = READ_ONCE(d->len_flags);
		len = (lf & U4V_DESC_LEN_MASK) ?: U4V_FRAME_SIZE;
		/* a direct-mode poster wrote d: never read outside its pool */
		off = READ_ONCE(d->phys) - tx->buf[U4V_MAP_TX_POOL]->dma;
		if (off > pool - len)
			off = (u64)tpos * U4V_FRAME_SIZE;
		done = u4k_desc_pack(len, (lf >> U4V_DESC_SOF_SHIFT) &
					  U4V_DESC_PDF_MASK,
				     (lf >> U4V_DESC_EOF_SHIFT) &
					  U4V_DESC_PDF_MASK,
				     U4V_DESC_POSTED | U4V_DESC_COMPLETED);
		if (!rx->dead) {
			/* posted RX descriptors: [rx_rel, rx_rel + depth - 1) */
			if (rx->rx_done - rx->rx_rel >= rx->depth - 1)
				break;
			rpos = rx->rx_done & (rx->depth - 1);
			memcpy(rx->rx_pool + (size_t)rpos * U4V_FRAME_SIZE,
			       tx->tx_pool + off, len);
			/* payload before the COMPLETED bit, as DMA would */
			smp_store_release(&rx->rx_desc[rpos].len_flags, done);
			rx->rx_done++;
			(*delivered)++;
		}
		smp_store_release(&d->len_flags, done);
	}
}

static struct u4k_cable *soft[2];
/* DMA device of both ends: their memory takes the Thunderbolt path */
static struct platform_device *u4k_soft_pdev;
static struct task_struct *u4k_engine;
static DECLARE_WAIT_QUEUE_HEAD(u4k_engine_wq);

/* One pass over every direct context's channels of one end. */
static bool u4k_soft_scan(struct u4k_cable *cable)
{
	struct u4k_half *h;
	struct u4k_ucontext *c;
	bool busy = false;
	u32 i, j;

	mutex_lock(&cable->lock);
	for (i = 0; i < U4V_MAX_CTX; i++) {
		c = cable->ctx[i];
		/* every lane of every remote context, in one flat sweep */
		for (j = 0; c && c->direct && j < U4V_MAX_CTX * U4V_MAX_LANES;
		     j++) {
			h = c->halves[j / U4V_MAX_LANES][j % U4V_MAX_LANES];
			if (h && u4k_direct_poll(h))
				busy = true;
		}
	}
	mutex_unlock(&cable->lock);
	return busy;
}

static bool u4k_soft_direct_users(void)
{
	return READ_ONCE(soft[0]->nr_direct) || READ_ONCE(soft[1]->nr_direct);
}

static int u4k_soft_engine(void *data)
{
	unsigned int idle = 0;

	while (!kthread_should_stop()) {
		if (!u4k_soft_direct_users()) {
			wait_event_interruptible(u4k_engine_wq,
						 u4k_soft_direct_users() ||
						 kthread_should_stop());
			continue;
		}
		if (u4k_soft_scan(soft[0]) | u4k_soft_scan(soft[1]))
			idle = 0;
		if (++idle < 10000)
			usleep_range(10, 20);
		else
			usleep_range(500, 1000);
	}
	return 0;
}

void u4k_soft_engine_wake(void)
{
	wake_up(&u4k_engine_wq);
}

static int u4k_soft_send(struct u4k_cable *cable, struct u4k_msg *m)
{
	u4k_proto_recv(cable->priv, m);
	return 0;
}

/* A MAD for the other end's QP1: a function call, as the channel protocol */
static void u4k_soft_send_mad(struct u4k_cable *cable, struct u4k_mad *mad)
{
	struct u4k_cable *peer = cable->priv;

	if (READ_ONCE(peer->up) && peer->dev)
		u4k_gsi_recv(peer->dev, mad);
}

/* An end's net device is the one soft_netdevs names, in any namespace. */
static bool u4k_soft_netdev_match(struct u4k_cable *cable,
				  struct net_device *ndev)
{
	return (int)cable->end < u4k_nr_soft_netdevs &&
	       !strcmp(netdev_name(ndev), u4k_soft_netdevs[cable->end]);
}

/* End 1 joins the channel end 0 is opening: side[1] of the same chan. */
static struct u4k_half *u4k_soft_join(struct u4k_cable *cable,
				      struct u4k_ucontext *owner,
				      struct u4k_msg *m)
{
	return u4k_chan_pair(((struct u4k_cable *)cable->priv)->opening, owner);
}

static const struct u4k_cable_ops u4k_soft_cable_ops = {
	.send = u4k_soft_send,
	.chan_join = u4k_soft_join,
	.netdev_match = u4k_soft_netdev_match,
	.send_mad = u4k_soft_send_mad,
	/* no hardware: the engine moves frames for every channel */
};

void u4k_soft_cable_destroy(void)
{
	int i;

	if (u4k_engine)
		kthread_stop(u4k_engine);
	u4k_engine = NULL;
	for (i = 0; i < 2; i++)
		if (soft[i])
			u4k_cable_down(soft[i]);
	/* no MAD of one end is still on its way into the other */
	for (i = 0; i < 2; i++)
		if (soft[i] && soft[i]->dev)
			u4k_gsi_stop(soft[i]->dev);
	for (i = 0; i < 2; i++)
		if (soft[i] && soft[i]->dev)
			u4k_dev_remove(soft[i]->dev);
	for (i = 0; i < 2; i++) {
		if (soft[i])
			u4k_cable_put(soft[i]);
		soft[i] = NULL;
	}
	if (u4k_soft_pdev)
		platform_device_unregister(u4k_soft_pdev);
	u4k_soft_pdev = NULL;
}

int u4k_soft_cable_create(void)
{
	struct platform_device *pdev;
	struct u4k_dev *dev;
	struct task_struct *t;
	int i, ret;

	pdev = platform_device_register_simple("usb4verbs-soft", -1, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	u4k_soft_pdev = pdev;
	ret = dma_coerce_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		goto err;
	ret = -ENOMEM;
	for (i = 0; i < 2; i++) {
		soft[i] = u4k_cable_alloc(&u4k_soft_cable_ops, i,
					  u4k_soft_channels, 0);
		if (!soft[i])
			goto err;
	}
	soft[0]->priv = soft[1];
	soft[1]->priv = soft[0];
	for (i = 0; i < 2; i++) {
		dev = u4k_dev_add(soft[i], &pdev->dev,
				  0x0200005500000000ull | (i + 1));
		ret = PTR_ERR_OR_ZERO(dev);
		if (ret)
			goto err;
		soft[i]->dev = dev;
	}
	t = u4k_allow_direct ? kthread_run(u4k_soft_engine, NULL, "u4v-dma") :
			       NULL;
	ret = PTR_ERR_OR_ZERO(t);
	if (ret)
		goto err;
	u4k_engine = t;
	return 0;
err:
	u4k_soft_cable_destroy();
	return ret;
}
