// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu: the tb_ring API, on the emulated NHI's registers.
 *
 * What the core's nhi.c does, and what the DMA engine (dma.c) reads back:
 * tb_ring_start() writes the descriptor base, the size (and the RX frame
 * size) and the ring's enable flag and PDF masks, and enables its interrupt;
 * tb_ring_stop() clears them. Its warnings are the core's: starting a
 * running ring, stopping a stopped one, freeing a running one, and an
 * interrupt bit that is already what it is set to (a ring stopped while
 * polling has its interrupt masked). Each ring holds an MSI-X vector
 * (the core's budget); ring 0 is the control channel's. Rings are not
 * usable with tb_ring_rx()/tb_ring_tx() frames: service drivers that use
 * their own descriptors (usb4verbs) never enqueue any.
 */
#include <linux/slab.h>
#include <linux/dma-mapping.h>

#include "tbemu.h"

#define TBE_RING_TYPE(r) ((r)->is_tx ? "TX ring" : "RX ring")

void __iomem *tbe_ring_slot(struct tbe_host *h, bool tx, int hop)
{
	return h->regs + (tx ? TBE_REG_TX_RING : TBE_REG_RX_RING) + hop * 16;
}

void __iomem *tbe_ring_options(struct tbe_host *h, bool tx, int hop)
{
	return h->regs + (tx ? TBE_REG_TX_OPTIONS : TBE_REG_RX_OPTIONS) +
	       hop * 32;
}

/* The ring's interrupt enable bit. Under nhi->lock. */
static void __iomem *tbe_irq_reg(struct tb_ring *ring, u32 *bit)
{
	int idx = ring->hop + (ring->is_tx ? 0 : ring->nhi->hop_count);

	*bit = BIT(idx % 32);
	return ring->nhi->iobase + TBE_REG_RING_INT + idx / 32 * 4;
}

static bool tbe_irq_enabled(struct tb_ring *ring)
{
	u32 bit;

	return ioread32(tbe_irq_reg(ring, &bit)) & bit;
}

static void tbe_irq_set(struct tb_ring *ring, bool on)
{
	u32 bit;
	void __iomem *reg = tbe_irq_reg(ring, &bit);
	u32 v = ioread32(reg);

	iowrite32(on ? v | bit : v & ~bit, reg);
}

/* ring_interrupt_active() of the core, with its warning. */
static void tbe_irq_active(struct tb_ring *ring, bool on)
{
	if (tbe_irq_enabled(ring) == on)
		dev_WARN(&ring->nhi->pdev->dev,
			 "interrupt for %s %d is already %s\n",
			 TBE_RING_TYPE(ring), ring->hop,
			 on ? "enabled" : "disabled");
	tbe_irq_set(ring, on);
}

/* The ring's interrupt fires (the engine completed an RX descriptor). */
static void tbe_irq_fire(struct tb_ring *ring)
{
	tbe_host_of_nhi(ring->nhi)->stats.irqs++;
	if (ring->start_poll) {
		/* polling mode: masked until tb_ring_poll_complete() */
		tbe_irq_set(ring, false);
		ring->start_poll(ring->poll_data);
	}
}

/* Under tbe_engine_lock: an RX completion that asked for an interrupt. */
void tbe_ring_irq(struct tbe_host *h, struct tbe_ring *r)
{
	unsigned long flags;

	spin_lock_irqsave(&h->nhi.lock, flags);
	spin_lock(&r->ring.lock);
	if (!r->ring.running)
		;
	else if (tbe_irq_enabled(&r->ring))
		tbe_irq_fire(&r->ring);
	else
		r->irq_pending = true;
	spin_unlock(&r->ring.lock);
	spin_unlock_irqrestore(&h->nhi.lock, flags);
}

void tb_ring_poll_complete(struct tb_ring *ring)
{
	struct tbe_ring *r = tbe_ring(ring);
	unsigned long flags;

	spin_lock_irqsave(&ring->nhi->lock, flags);
	spin_lock(&ring->lock);
	if (ring->start_poll) {
		tbe_irq_set(ring, true);
		/* a completion while masked fires as soon as it is unmasked */
		if (r->irq_pending && ring->running) {
			r->irq_pending = false;
			tbe_irq_fire(ring);
		}
	}
	spin_unlock(&ring->lock);
	spin_unlock_irqrestore(&ring->nhi->lock, flags);
}
EXPORT_SYMBOL_GPL(tb_ring_poll_complete);

static void tbe_ring_work(struct work_struct *work)
{
	/* no tb_ring_rx()/tb_ring_tx() frames to complete or cancel */
}

/* nhi_alloc_hop(): the first free hop from 1, or the one asked for. */
static int tbe_alloc_hop(struct tbe_host *h, struct tb_ring *ring)
{
	struct tb_ring **rings = ring->is_tx ? h->nhi.tx_rings :
					       h->nhi.rx_rings;
	int i, ret = 0;

	spin_lock_irq(&h->nhi.lock);
	for (i = 1; ring->hop < 0 && i < h->nhi.hop_count; i++)
		if (!rings[i])
			ring->hop = i;
	if (ring->hop <= 0 || ring->hop >= h->nhi.hop_count) {
		dev_warn(&h->pdev->dev, "invalid hop: %d\n", ring->hop);
		ret = -EINVAL;
	} else if (rings[ring->hop]) {
		dev_warn(&h->pdev->dev, "%s hop %d already allocated\n",
			 ring->is_tx ? "TX" : "RX", ring->hop);
		ret = -EBUSY;
	} else if (h->vectors >= tbe_msix_vectors) {
		ret = -ENOSPC; /* ring_request_msix(): no vector left */
	} else {
		rings[ring->hop] = ring;
		h->vectors++;
		h->stats.rings++;
	}
	spin_unlock_irq(&h->nhi.lock);
	return ret;
}

static struct tb_ring *tbe_ring_alloc(struct tb_nhi *nhi, int hop, int size,
				      bool tx, unsigned int flags,
				      int e2e_tx_hop, u16 sof_mask,
				      u16 eof_mask, void (*start_poll)(void *),
				      void *poll_data)
{
	struct tbe_host *h = tbe_host_of_nhi(nhi);
	struct tbe_ring *r = kzalloc(sizeof(*r), GFP_KERNEL);
	struct tb_ring *ring;

	if (!r)
		return NULL;
	ring = &r->ring;
	spin_lock_init(&ring->lock);
	INIT_LIST_HEAD(&ring->queue);
	INIT_LIST_HEAD(&ring->in_flight);
	INIT_WORK(&ring->work, tbe_ring_work);
	ring->nhi = nhi;
	ring->hop = hop;
	ring->is_tx = tx;
	ring->size = size;
	ring->flags = flags;
	ring->e2e_tx_hop = e2e_tx_hop;
	ring->sof_mask = sof_mask;
	ring->eof_mask = eof_mask;
	ring->start_poll = start_poll;
	ring->poll_data = poll_data;
	r->own_desc = dma_alloc_coherent(&nhi->pdev->dev,
					 size * sizeof(struct tbe_desc),
					 &r->own_dma, GFP_KERNEL);
	if (!r->own_desc)
		goto err;
	ring->descriptors = (void *)r->own_desc;
	ring->descriptors_dma = r->own_dma;
	mutex_lock(&tbe_engine_lock);
	hop = tbe_alloc_hop(h, ring);
	mutex_unlock(&tbe_engine_lock);
	if (!hop)
		return ring;
	dma_free_coherent(&nhi->pdev->dev, size * sizeof(struct tbe_desc),
			  r->own_desc, r->own_dma);
err:
	kfree(r);
	return NULL;
}

struct tb_ring *tb_ring_alloc_tx(struct tb_nhi *nhi, int hop, int size,
				 unsigned int flags)
{
	return tbe_ring_alloc(nhi, hop, size, true, flags, 0, 0, 0, NULL,
			      NULL);
}
EXPORT_SYMBOL_GPL(tb_ring_alloc_tx);

struct tb_ring *tb_ring_alloc_rx(struct tb_nhi *nhi, int hop, int size,
				 unsigned int flags, int e2e_tx_hop,
				 u16 sof_mask, u16 eof_mask,
				 void (*start_poll)(void *), void *poll_data)
{
	return tbe_ring_alloc(nhi, hop, size, false, flags, e2e_tx_hop,
			      sof_mask, eof_mask, start_poll, poll_data);
}
EXPORT_SYMBOL_GPL(tb_ring_alloc_rx);

void tb_ring_start(struct tb_ring *ring)
{
	struct tbe_host *h = tbe_host_of_nhi(ring->nhi);
	void __iomem *slot = tbe_ring_slot(h, ring->is_tx, ring->hop);
	void __iomem *opt = tbe_ring_options(h, ring->is_tx, ring->hop);
	/* frame mode: 4096-byte buffers (frame size 0); raw: 256 */
	u32 fsize = ring->flags & RING_FLAG_FRAME ? 0 : TB_FRAME_SIZE;
	u32 flags = TBE_RING_ENABLE |
		    (ring->flags & RING_FLAG_FRAME ? 0 : TBE_RING_RAW) |
		    (ring->flags & RING_FLAG_E2E ? TBE_RING_E2E : 0);
	struct tbe_ring *r = tbe_ring(ring);

	mutex_lock(&tbe_engine_lock);
	spin_lock_irq(&ring->nhi->lock);
	spin_lock(&ring->lock);
	if (ring->running) {
		dev_WARN(&ring->nhi->pdev->dev, "ring already started\n");
		goto out;
	}
	iowrite32(lower_32_bits(ring->descriptors_dma), slot);
	iowrite32(upper_32_bits(ring->descriptors_dma), slot + 4);
	iowrite32(ring->is_tx ? ring->size : fsize << 16 | ring->size,
		  slot + 12);
	iowrite32(ring->is_tx ? 0 : ring->sof_mask << 16 | ring->eof_mask,
		  opt + 4);
	iowrite32(flags, opt);
	r->hw = 0;
	r->irq_pending = false;
	tbe_irq_active(ring, true);
	ring->running = true;
out:
	spin_unlock(&ring->lock);
	spin_unlock_irq(&ring->nhi->lock);
	mutex_unlock(&tbe_engine_lock);
	tbe_dma_kick();
}
EXPORT_SYMBOL_GPL(tb_ring_start);

void tb_ring_stop(struct tb_ring *ring)
{
	struct tbe_host *h = tbe_host_of_nhi(ring->nhi);
	void __iomem *slot = tbe_ring_slot(h, ring->is_tx, ring->hop);

	/* the engine is not looking at the ring once this returns */
	mutex_lock(&tbe_engine_lock);
	spin_lock_irq(&ring->nhi->lock);
	spin_lock(&ring->lock);
	if (!ring->running) {
		dev_WARN(&ring->nhi->pdev->dev, "%s %d already stopped\n",
			 TBE_RING_TYPE(ring), ring->hop);
		goto out;
	}
	tbe_irq_active(ring, false);
	iowrite32(0, tbe_ring_options(h, ring->is_tx, ring->hop));
	iowrite32(0, slot);
	iowrite32(0, slot + 4);
	iowrite32(0, slot + 8);
	iowrite32(0, slot + 12);
	tbe_ring(ring)->seen = 0;
	ring->running = false;
out:
	spin_unlock(&ring->lock);
	spin_unlock_irq(&ring->nhi->lock);
	mutex_unlock(&tbe_engine_lock);
	flush_work(&ring->work);
}
EXPORT_SYMBOL_GPL(tb_ring_stop);

void tb_ring_free(struct tb_ring *ring)
{
	struct tbe_host *h = tbe_host_of_nhi(ring->nhi);
	struct tbe_ring *r = tbe_ring(ring);

	mutex_lock(&tbe_engine_lock);
	spin_lock_irq(&ring->nhi->lock);
	if (ring->is_tx)
		ring->nhi->tx_rings[ring->hop] = NULL;
	else
		ring->nhi->rx_rings[ring->hop] = NULL;
	h->vectors--;
	if (ring->running)
		dev_WARN(&ring->nhi->pdev->dev, "%s %d still running\n",
			 TBE_RING_TYPE(ring), ring->hop);
	spin_unlock_irq(&ring->nhi->lock);
	mutex_unlock(&tbe_engine_lock);
	/* the core frees ring->descriptors: they must be its own again */
	if (ring->descriptors != (void *)r->own_desc ||
	    ring->descriptors_dma != r->own_dma)
		dev_WARN(&ring->nhi->pdev->dev,
			 "%s %d freed with descriptors it did not allocate\n",
			 TBE_RING_TYPE(ring), ring->hop);
	dma_free_coherent(&ring->nhi->pdev->dev,
			  ring->size * sizeof(struct tbe_desc), r->own_desc,
			  r->own_dma);
	flush_work(&ring->work);
	kfree(r);
}
EXPORT_SYMBOL_GPL(tb_ring_free);

/* Under tbe_engine_lock: "tx3 on hw=12 reg=000c0000" per allocated ring. */
int tbe_rings_show(struct tbe_host *h, char *buf, int size)
{
	struct tb_ring *ring;
	int hop, tx, n = 0;

	for (hop = 1; hop < h->nhi.hop_count; hop++) {
		for (tx = 1; tx >= 0; tx--) {
			ring = tx ? h->nhi.tx_rings[hop] : h->nhi.rx_rings[hop];
			if (!ring)
				continue;
			n += scnprintf(buf + n, size - n,
				       " %s%d %s hw=%u reg=%08x", tx ? "tx" : "rx",
				       hop, ring->running ? "on" : "off",
				       tbe_ring(ring)->hw,
				       ioread32(tbe_ring_slot(h, tx, hop) + 8));
		}
	}
	return n;
}
