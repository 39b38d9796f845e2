// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu: the DMA engine of both NHIs.
 *
 * It knows only what the hardware knows: the ring registers (base, size,
 * enable flag, PDF masks, the producer / consumer the driver writes) and
 * the descriptors in memory. A running TX ring sends the positions from
 * its own next one up to the producer register: each descriptor must be
 * POSTED; its frame (length 0 = 4096) crosses the cable if the sending
 * host has a path out of that ring and the other host a path from that
 * HopID to a running RX ring, into that ring's next posted descriptor (up
 * to the consumer register: one past the last one posted). The RX
 * descriptor gets the length, the PDFs and COMPLETED (BUFFER_OVERRUN when
 * the frame did not fit, CRC_ERROR when injected), then the TX descriptor
 * COMPLETED; an RX descriptor that asked for one raises the RX ring's
 * interrupt. Without E2E flow control (on both rings) a frame that finds
 * no posted RX descriptor is lost; with it the TX ring waits. Frames
 * without a path are lost too, as in a router with no path for the HopID.
 *
 * No register write traps, so a kernel thread scans the producer registers
 * of running TX rings: every 10-20 us while frames move, every 0.5-1 ms
 * after 0.2 s without any, not at all while no ring runs. There is no
 * IOMMU: a DMA address is a physical address, and one outside RAM is a
 * DMA fault (the descriptor is not processed).
 */
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/mm.h>

#include "tbemu.h"

#define TBE_BUDGET 64	     /* descriptors per ring per scan */
#define TBE_IDLE_SCANS 10000 /* ~0.2 s of fast scans */

static struct task_struct *tbe_dma_task;
static DECLARE_WAIT_QUEUE_HEAD(tbe_dma_wq);
static bool tbe_dma_woken; /* a ring started or paths came up */

enum tbe_verdict { TBE_SENT, TBE_LOST, TBE_WAIT };

/* What the shim got wrong: counted, and said in the kernel log. */
#define tbe_refuse(h, what, fmt, ...)                                        \
	do {                                                                 \
		(h)->stats.what++;                                           \
		dev_notice_ratelimited(&(h)->pdev->dev,                      \
				       "DMA refused (" #what "): " fmt "\n", \
				       ##__VA_ARGS__);                       \
	} while (0)

/* The kernel address of DMA range [dma, dma + len): RAM only. */
static void *tbe_dma_va(u64 dma, size_t len)
{
	unsigned long pfn;

	for (pfn = PHYS_PFN(dma); pfn <= PHYS_PFN(dma + len - 1); pfn++)
		if (!pfn_valid(pfn) || !page_is_ram(pfn))
			return NULL;
	return phys_to_virt(dma);
}

struct tbe_hw {
	u64 base;
	u32 size, reg, fsize, flags, masks;
};

static void tbe_hw_read(struct tbe_host *h, bool tx, int hop,
			struct tbe_hw *hw)
{
	void __iomem *slot = tbe_ring_slot(h, tx, hop);
	void __iomem *opt = tbe_ring_options(h, tx, hop);
	u32 sz = ioread32(slot + 12);

	hw->base = ioread32(slot) | (u64)ioread32(slot + 4) << 32;
	hw->reg = ioread32(slot + 8);
	hw->size = sz & 0xffff;
	hw->fsize = (sz >> 16) ?: TBE_FRAME;
	hw->flags = ioread32(opt);
	hw->masks = ioread32(opt + 4);
}

static struct tbe_desc *tbe_desc(struct tbe_host *h, const struct tbe_hw *hw,
				 u32 pos)
{
	struct tbe_desc *d = tbe_dma_va(hw->base + pos * sizeof(*d),
					sizeof(*d));

	if (!d)
		tbe_refuse(h, dma_fault, "descriptor %u at %#llx outside RAM",
			   pos, hw->base + pos * sizeof(*d));
	return d;
}

/* The running RX ring host h routes in HopID path to, or NULL. */
static struct tbe_ring *tbe_rx_ring(struct tbe_host *h, int path)
{
	struct tbe_tunnel *t = tbe_tunnel_rx(h, path);
	struct tb_ring *ring;

	if (!t) {
		h->stats.no_rx_path++;
		return NULL;
	}
	ring = h->nhi.rx_rings[t->rx_ring];
	if (!ring || !ring->running) {
		h->stats.rx_stopped++;
		return NULL;
	}
	return tbe_ring(ring);
}

/* One frame into host to's RX ring r (e2e: the TX ring has E2E on). */
static enum tbe_verdict tbe_rx(struct tbe_host *to, struct tbe_ring *r,
			       const void *src, u32 len, u32 sof, u32 eof,
			       bool e2e)
{
	struct tbe_hw hw;
	struct tbe_desc *d;
	u32 lf, flags, copy;
	void *dst;

	tbe_hw_read(to, false, r->ring.hop, &hw);
	if ((hw.reg & 0xffff) >= hw.size) {
		tbe_refuse(to, bad_doorbell,
			   "RX ring %d consumer %u outside its %u descriptors",
			   r->ring.hop, hw.reg & 0xffff, hw.size);
		return TBE_LOST;
	}
	/* posted: [hw, consumer register) */
	if (r->hw == (hw.reg & 0xffff)) {
		/* E2E on both rings: no credit, the TX ring waits */
		if (e2e && (hw.flags & TBE_RING_E2E))
			return TBE_WAIT;
		to->stats.rx_overflow++;
		return TBE_LOST;
	}
	d = tbe_desc(to, &hw, r->hw);
	if (!d)
		return TBE_LOST;
	lf = READ_ONCE(d->len_flags);
	if (!(TBE_DESC_FLAGS(lf) & TBE_DESC_POSTED)) {
		tbe_refuse(to, not_posted, "RX ring %d descriptor %u not posted",
			   r->ring.hop, r->hw);
		return TBE_LOST;
	}
	if (!(hw.flags & TBE_RING_RAW) &&
	    (!((hw.masks >> 16) & BIT(sof)) || !(hw.masks & BIT(eof)))) {
		tbe_refuse(to, pdf, "RX ring %d: PDFs %u/%u outside masks %#x",
			   r->ring.hop, sof, eof, hw.masks);
		return TBE_LOST;
	}
	copy = min(len, hw.fsize);
	dst = tbe_dma_va(READ_ONCE(d->phys), copy);
	if (!dst) {
		tbe_refuse(to, dma_fault,
			   "RX ring %d descriptor %u: buffer %#llx outside RAM",
			   r->ring.hop, r->hw, READ_ONCE(d->phys));
		return TBE_LOST;
	}
	memcpy(dst, src, copy);
	flags = TBE_DESC_COMPLETED | (len > copy ? TBE_DESC_OVERRUN : 0) |
		(tbe_fault(&tbe_crc_errors) ? TBE_DESC_CRC_ERROR : 0);
	if (len > copy)
		tbe_refuse(to, overrun,
			   "RX ring %d descriptor %u: %u-byte frame, %u-byte buffer",
			   r->ring.hop, r->hw, len, copy);
	d->time = 0;
	/* the payload before the descriptor that says it is there */
	smp_store_release(&d->len_flags, (copy & 0xfff) | eof << 12 |
					 sof << 16 | flags << TBE_FLAGS_SHIFT);
	r->hw = (r->hw + 1) % hw.size;
	to->stats.frames++;
	to->stats.bytes += copy;
	if (TBE_DESC_FLAGS(lf) & TBE_DESC_INTERRUPT)
		tbe_ring_irq(to, r);
	return TBE_SENT;
}

/* One frame of host h's TX ring hop, described by lf at phys. */
static enum tbe_verdict tbe_tx(struct tbe_host *h, int hop, u32 lf, u64 phys,
			       bool e2e)
{
	u32 len = TBE_DESC_LEN(lf) ?: TBE_FRAME;
	struct tbe_tunnel *t = tbe_tunnel_tx(h, hop);
	struct tbe_host *to = tbe_peer(h);
	struct tbe_ring *r;
	const void *src;

	src = tbe_dma_va(phys, len);
	if (!src) {
		tbe_refuse(h, dma_fault, "TX ring %d: buffer %#llx+%u outside RAM",
			   hop, phys, len);
		return TBE_LOST;
	}
	if (!t) {
		h->stats.no_path++;
		return TBE_LOST;
	}
	if (!to) {
		h->stats.unplugged++;
		return TBE_LOST;
	}
	r = tbe_rx_ring(to, t->tx_path);
	if (!r)
		return TBE_LOST;
	return tbe_rx(to, r, src, len, TBE_DESC_SOF(lf), TBE_DESC_EOF(lf),
		      e2e);
}

/* Send what the producer register of TX ring r allows. */
static bool tbe_tx_ring(struct tbe_host *h, struct tbe_ring *r)
{
	int hop = r->ring.hop, n = 0;
	enum tbe_verdict v;
	struct tbe_desc *d;
	struct tbe_hw hw;
	u32 prod, lf;

	tbe_hw_read(h, true, hop, &hw);
	if (!(hw.flags & TBE_RING_ENABLE))
		return false;
	prod = hw.reg >> 16;
	if (prod >= hw.size) {
		if (hw.reg != r->seen)
			tbe_refuse(h, bad_doorbell,
				   "TX ring %d producer %u outside its %u descriptors",
				   hop, prod, hw.size);
		r->seen = hw.reg;
		return false;
	}
	while (r->hw != prod && n < TBE_BUDGET) {
		d = tbe_desc(h, &hw, r->hw);
		if (!d)
			break;
		lf = READ_ONCE(d->len_flags);
		if (!(TBE_DESC_FLAGS(lf) & TBE_DESC_POSTED)) {
			/* counted once: the ring waits for the driver */
			if (r->seen != (hw.reg | BIT(0)))
				tbe_refuse(h, not_posted,
					   "TX ring %d descriptor %u not posted",
					   hop, r->hw);
			r->seen = hw.reg | BIT(0);
			break;
		}
		/* read after the producer, as the NHI fetches it */
		rmb();
		v = tbe_tx(h, hop, lf, READ_ONCE(d->phys),
			   hw.flags & TBE_RING_E2E);
		if (v == TBE_WAIT)
			break;
		smp_store_release(&d->len_flags,
				  lf | TBE_DESC_COMPLETED << TBE_FLAGS_SHIFT);
		r->hw = (r->hw + 1) % hw.size;
		h->stats.tx_done++;
		n++;
	}
	return n > 0;
}

/* A ring that is not running: a register write there moves nothing. */
static void tbe_stopped_ring(struct tbe_host *h, struct tbe_ring *r)
{
	u32 reg = ioread32(tbe_ring_slot(h, r->ring.is_tx, r->ring.hop) + 8);

	/* 0: the driver clearing the index before it starts the ring */
	if (reg != r->seen && reg)
		tbe_refuse(h, stopped_doorbell,
			   "%s ring %d not running: write of %#x ignored",
			   r->ring.is_tx ? "TX" : "RX", r->ring.hop, reg);
	r->seen = reg;
}

static bool tbe_scan(bool *any)
{
	struct tb_ring *ring;
	struct tbe_host *h;
	bool busy = false;
	int i, hop;

	for (i = 0; i < TBE_HOSTS; i++) {
		h = tbe_hosts[i];
		for (hop = 1; h && hop < h->nhi.hop_count; hop++) {
			ring = h->nhi.rx_rings[hop];
			if (ring && !ring->running)
				tbe_stopped_ring(h, tbe_ring(ring));
			ring = h->nhi.tx_rings[hop];
			if (!ring)
				continue;
			if (!ring->running) {
				tbe_stopped_ring(h, tbe_ring(ring));
				continue;
			}
			*any = true;
			busy |= tbe_tx_ring(h, tbe_ring(ring));
		}
	}
	return busy;
}

static int tbe_dma_thread(void *data)
{
	unsigned int idle = 0;
	bool any, busy;

	while (!kthread_should_stop()) {
		any = false;
		mutex_lock(&tbe_engine_lock);
		busy = tbe_scan(&any);
		mutex_unlock(&tbe_engine_lock);
		if (!any) {
			/* nothing runs: sleep until a ring starts */
			wait_event_interruptible_timeout(tbe_dma_wq,
				kthread_should_stop() || READ_ONCE(tbe_dma_woken),
				HZ);
		}
		if (xchg(&tbe_dma_woken, false))
			busy = true;
		if (!any)
			continue;
		idle = busy ? 0 : idle + 1;
		if (idle < TBE_IDLE_SCANS)
			usleep_range(10, 20);
		else
			usleep_range(500, 1000);
	}
	return 0;
}

void tbe_dma_kick(void)
{
	WRITE_ONCE(tbe_dma_woken, true);
	wake_up(&tbe_dma_wq);
}

int tbe_dma_start(void)
{
	tbe_dma_task = kthread_run(tbe_dma_thread, NULL, "tbemu-dma");
	/*
	 * The NHI's DMA runs beside the CPUs, not on them: as an ordinary
	 * thread it waits behind the processes that busy-poll for its
	 * frames (tens of ms under TCG), longer than a QP's ACK timeout.
	 */
	if (IS_ERR(tbe_dma_task))
		return PTR_ERR(tbe_dma_task);
	sched_set_fifo_low(tbe_dma_task);
	return 0;
}

void tbe_dma_stop(void)
{
	kthread_stop(tbe_dma_task);
}
