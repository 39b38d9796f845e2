// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu: the DMA engine's own check (reading the dma_check parameter).
 *
 * The shim, when right, never makes the engine refuse anything, so the VM
 * tests would not see a refusal the engine forgot to make. This check
 * drives one ring pair across the cable itself, as a driver would (the
 * tb_ring and path API, descriptors in the rings' memory, the producer and
 * consumer registers in BAR 0), and breaks one NHI rule at a time: each
 * must be refused (counted under its name, logged, the frame not
 * delivered), and a correct frame must then still get through intact.
 */
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/io.h>

#include "tbemu.h"

#define TBC_DEPTH 8
#define TBC_PDF 1		 /* the RX ring takes PDF 1 only */
#define TBC_NOWHERE (1ull << 46) /* no RAM there */

struct tbc {
	struct tbe_host *h[2]; /* h[0] sends, h[1] receives */
	struct tb_xdomain *xd[2];
	struct tb_ring *tx, *rx;
	int out_hop, in_hop;
	bool paths;
	u8 *src, *dst;
	u32 tx_pos, rx_pos; /* next TX descriptor; next RX one filled */
	char *buf;
	int n, fails;
};

static struct tbe_desc *tbc_desc(struct tb_ring *ring, u32 pos)
{
	return (struct tbe_desc *)ring->descriptors + pos % TBC_DEPTH;
}

static void tbc_reg(struct tbc *c, struct tb_ring *ring, u32 val)
{
	iowrite32(
	    val, tbe_ring_slot(c->h[!ring->is_tx], ring->is_tx, ring->hop) + 8);
	tbe_dma_kick(); /* the engine looks now, not within a second */
}

/* TX descriptor tx_pos: len bytes of src (or phys), then the producer. */
static void tbc_send(struct tbc *c, u32 len, u32 pdf, u32 flags, u64 phys)
{
	struct tbe_desc *d = tbc_desc(c->tx, c->tx_pos);

	d->phys = phys ?: virt_to_phys(c->src);
	d->time = 0;
	WRITE_ONCE(d->len_flags, (len & 0xfff) | pdf << 12 | pdf << 16 |
				     flags << TBE_FLAGS_SHIFT);
	c->tx_pos++;
	tbc_reg(c, c->tx, (c->tx_pos % TBC_DEPTH) << 16);
}

/* RX descriptor pos owned by the ring (POSTED) or not, into dst / phys. */
static void tbc_post(struct tbc *c, u32 pos, bool posted, u64 phys)
{
	struct tbe_desc *d = tbc_desc(c->rx, pos);

	d->phys = phys ?: virt_to_phys(c->dst);
	d->time = 0;
	WRITE_ONCE(d->len_flags,
		   posted ? TBE_DESC_POSTED << TBE_FLAGS_SHIFT : 0);
}

static u64 tbc_stat(struct tbe_host *h, size_t off)
{
	u64 v;

	mutex_lock(&tbe_engine_lock);
	v = *(u64 *)((char *)&h->stats + off);
	mutex_unlock(&tbe_engine_lock);
	return v;
}

#define TBC_STAT(h, f) tbc_stat(h, offsetof(struct tbe_stats, f))

static __printf(4, 5) void tbc_report(struct tbc *c, const char *name, bool ok,
				      const char *fmt, ...)
{
	va_list ap;

	c->n += scnprintf(c->buf + c->n, PAGE_SIZE - c->n, "dma_check %s %s ",
			  name, ok ? "PASS" : "FAIL");
	va_start(ap, fmt);
	c->n += vscnprintf(c->buf + c->n, PAGE_SIZE - c->n, fmt, ap);
	va_end(ap);
	c->n += scnprintf(c->buf + c->n, PAGE_SIZE - c->n, "\n");
	c->fails += !ok;
}

/*
 * Break one rule: act, then within 2 s host h's counter at offset off must
 * have risen by one, and nothing must have been delivered.
 */
static void tbc_refused(struct tbc *c, const char *name, int h, size_t off,
			void (*act)(struct tbc *c))
{
	u64 before = tbc_stat(c->h[h], off), now = before;
	u64 frames = TBC_STAT(c->h[1], frames);
	int i;

	act(c);
	for (i = 0; i < 400 && now == before; i++) {
		usleep_range(5000, 6000);
		now = tbc_stat(c->h[h], off);
	}
	msleep(20); /* anything delivered after all shows now */
	tbc_report(c, name,
		   now == before + 1 && TBC_STAT(c->h[1], frames) == frames,
		   "host%d counter +%llu delivered=%llu", h, now - before,
		   TBC_STAT(c->h[1], frames) - frames);
}

/*
 * The frame of TX descriptor tx_pos - 1 (len bytes of src) arrives in RX
 * descriptor rx_pos, intact, and both descriptors complete. That RX
 * descriptor is then posted again behind the others (depth - 1 posted).
 */
static void tbc_expect(struct tbc *c, const char *name, u32 len)
{
	struct tbe_desc *rd = tbc_desc(c->rx, c->rx_pos);
	struct tbe_desc *td = tbc_desc(c->tx, c->tx_pos - 1);
	u32 lf = 0;
	int i;

	for (i = 0; i < 400; i++) {
		lf = smp_load_acquire(&rd->len_flags);
		if (TBE_DESC_FLAGS(lf) & TBE_DESC_COMPLETED)
			break;
		usleep_range(5000, 6000);
	}
	tbc_report(
	    c, name,
	    (TBE_DESC_FLAGS(lf) & TBE_DESC_COMPLETED) &&
		TBE_DESC_LEN(lf) == (len & 0xfff) &&
		!memcmp(c->src, c->dst, len) &&
		(TBE_DESC_FLAGS(READ_ONCE(td->len_flags)) & TBE_DESC_COMPLETED),
	    "len=%u rx_flags=%#x", len, TBE_DESC_FLAGS(lf));
	tbc_post(c, c->rx_pos, true, 0);
	c->rx_pos++;
	tbc_reg(c, c->rx, (c->rx_pos + TBC_DEPTH - 1) % TBC_DEPTH);
}

/* A correct frame gets through. */
static void tbc_good(struct tbc *c, const char *name, u32 len)
{
	memset(c->dst, 0, PAGE_SIZE);
	get_random_bytes(c->src, len);
	tbc_send(c, len, TBC_PDF, TBE_DESC_POSTED, 0);
	tbc_expect(c, name, len);
}

static void tbc_doorbell_stopped(struct tbc *c)
{
	tbc_send(c, 64, TBC_PDF, TBE_DESC_POSTED, 0);
}

static void tbc_no_path(struct tbc *c)
{
	tbc_send(c, 64, TBC_PDF, TBE_DESC_POSTED, 0);
}

static void tbc_tx_not_posted(struct tbc *c)
{
	tbc_send(c, 64, TBC_PDF, 0, 0);
}

/* the same descriptor, owned by the ring now: it goes */
static void tbc_tx_repost(struct tbc *c)
{
	struct tbe_desc *d = tbc_desc(c->tx, c->tx_pos - 1);

	WRITE_ONCE(d->len_flags,
		   d->len_flags | TBE_DESC_POSTED << TBE_FLAGS_SHIFT);
	tbc_reg(c, c->tx, (c->tx_pos % TBC_DEPTH) << 16);
}

static void tbc_rx_not_posted(struct tbc *c)
{
	tbc_post(c, c->rx_pos, false, 0);
	tbc_send(c, 64, TBC_PDF, TBE_DESC_POSTED, 0);
}

static void tbc_tx_nowhere(struct tbc *c)
{
	tbc_post(c, c->rx_pos, true, 0);
	tbc_send(c, 64, TBC_PDF, TBE_DESC_POSTED, TBC_NOWHERE);
}

static void tbc_rx_nowhere(struct tbc *c)
{
	tbc_post(c, c->rx_pos, true, TBC_NOWHERE);
	tbc_send(c, 64, TBC_PDF, TBE_DESC_POSTED, 0);
}

static void tbc_pdf(struct tbc *c)
{
	tbc_send(c, 64, TBC_PDF + 2, TBE_DESC_POSTED, 0);
}

static void tbc_tx_bad_producer(struct tbc *c)
{
	tbc_reg(c, c->tx, TBC_DEPTH << 16);
}

static void tbc_tx_producer_back(struct tbc *c)
{
	tbc_reg(c, c->tx, (c->tx_pos % TBC_DEPTH) << 16);
}

static void tbc_rx_bad_consumer(struct tbc *c)
{
	tbc_reg(c, c->rx, TBC_DEPTH + 3);
	tbc_send(c, 64, TBC_PDF, TBE_DESC_POSTED, 0);
}

static void tbc_rx_stopped(struct tbc *c)
{
	tb_ring_stop(c->rx);
	tbc_send(c, 64, TBC_PDF, TBE_DESC_POSTED, 0);
}

/*
 * The RX ring restarted raw: 256-byte buffers. A 4096-byte frame fills
 * one and says BUFFER_OVERRUN (the NHI's bit 2, written back).
 */
static void tbc_overrun(struct tbc *c)
{
	struct tbe_desc *rd = tbc_desc(c->rx, c->rx_pos);
	u64 before = TBC_STAT(c->h[1], overrun);
	u32 lf = 0;
	int i;

	memset(c->dst, 0, PAGE_SIZE);
	get_random_bytes(c->src, PAGE_SIZE);
	tbc_send(c, 0, TBC_PDF, TBE_DESC_POSTED, 0);
	for (i = 0; i < 400; i++) {
		lf = smp_load_acquire(&rd->len_flags);
		if (TBE_DESC_FLAGS(lf) & TBE_DESC_COMPLETED)
			break;
		usleep_range(5000, 6000);
	}
	tbc_report(c, "rx_frame_longer_than_buffer",
		   (TBE_DESC_FLAGS(lf) & TBE_DESC_OVERRUN) &&
		       TBC_STAT(c->h[1], overrun) == before + 1 &&
		       TBE_DESC_LEN(lf) == TB_FRAME_SIZE &&
		       !memcmp(c->src, c->dst, TB_FRAME_SIZE) &&
		       !memchr_inv(c->dst + TB_FRAME_SIZE, 0,
				   PAGE_SIZE - TB_FRAME_SIZE),
		   "rx_flags=%#x len=%u", TBE_DESC_FLAGS(lf), TBE_DESC_LEN(lf));
}

static int tbc_paths(struct tbc *c)
{
	int ret =
	    tb_xdomain_enable_paths(c->xd[0], c->out_hop, c->tx->hop, -1, -1);

	if (ret)
		return ret;
	ret = tb_xdomain_enable_paths(c->xd[1], -1, -1, c->in_hop, c->rx->hop);
	if (ret)
		tb_xdomain_disable_paths(c->xd[0], c->out_hop, c->tx->hop, -1,
					 -1);
	c->paths = !ret;
	return ret;
}

static void tbc_rx_start(struct tbc *c)
{
	u32 i;

	for (i = 0; i < TBC_DEPTH; i++)
		tbc_post(c, i, i < TBC_DEPTH - 1, 0);
	c->rx_pos = 0;
	tbc_reg(c, c->rx, 0);
	tb_ring_start(c->rx);
	tbc_reg(c, c->rx, TBC_DEPTH - 1);
}

static void tbc_run(struct tbc *c)
{
	tbc_refused(c, "doorbell_ring_not_started", 0,
		    offsetof(struct tbe_stats, stopped_doorbell),
		    tbc_doorbell_stopped);
	/* what a stopped ring was told is forgotten: tb_ring_stop() state */
	c->tx_pos = 0;
	tbc_reg(c, c->tx, 0);
	tb_ring_start(c->tx);
	tbc_rx_start(c);
	tbc_refused(c, "tx_path_not_enabled", 0,
		    offsetof(struct tbe_stats, no_path), tbc_no_path);
	if (tbc_paths(c)) {
		tbc_report(c, "paths", false, "enable_paths failed");
		return;
	}
	tbc_good(c, "frame_through", 4096);
	tbc_refused(c, "tx_desc_not_owned", 0,
		    offsetof(struct tbe_stats, not_posted), tbc_tx_not_posted);
	/* the ring waited at it: now owned, it goes */
	memset(c->dst, 0, PAGE_SIZE);
	tbc_tx_repost(c);
	tbc_expect(c, "tx_desc_owned_goes", 64);
	tbc_refused(c, "rx_desc_not_owned", 1,
		    offsetof(struct tbe_stats, not_posted), tbc_rx_not_posted);
	tbc_refused(c, "tx_buffer_outside_ram", 0,
		    offsetof(struct tbe_stats, dma_fault), tbc_tx_nowhere);
	tbc_refused(c, "rx_buffer_outside_ram", 1,
		    offsetof(struct tbe_stats, dma_fault), tbc_rx_nowhere);
	tbc_post(c, c->rx_pos, true, 0);
	tbc_refused(c, "rx_pdf_outside_masks", 1,
		    offsetof(struct tbe_stats, pdf), tbc_pdf);
	tbc_refused(c, "tx_producer_outside_ring", 0,
		    offsetof(struct tbe_stats, bad_doorbell),
		    tbc_tx_bad_producer);
	tbc_tx_producer_back(c);
	tbc_refused(c, "rx_consumer_outside_ring", 1,
		    offsetof(struct tbe_stats, bad_doorbell),
		    tbc_rx_bad_consumer);
	tbc_reg(c, c->rx, (c->rx_pos + TBC_DEPTH - 1) % TBC_DEPTH);
	tbc_good(c, "frame_through_after", 1500);
	tbc_refused(c, "rx_ring_not_started", 1,
		    offsetof(struct tbe_stats, rx_stopped), tbc_rx_stopped);
	c->rx->flags &= ~RING_FLAG_FRAME;
	tbc_rx_start(c);
	tbc_overrun(c);
}

static void tbc_teardown(struct tbc *c)
{
	if (c->paths) {
		tb_xdomain_disable_paths(c->xd[0], c->out_hop, c->tx->hop, -1,
					 -1);
		tb_xdomain_disable_paths(c->xd[1], -1, -1, c->in_hop,
					 c->rx->hop);
	}
	if (c->out_hop > 0)
		tb_xdomain_release_out_hopid(c->xd[0], c->out_hop);
	if (c->in_hop > 0)
		tb_xdomain_release_in_hopid(c->xd[1], c->in_hop);
	if (c->tx) {
		if (c->tx->running)
			tb_ring_stop(c->tx);
		tb_ring_free(c->tx);
	}
	if (c->rx) {
		if (c->rx->running)
			tb_ring_stop(c->rx);
		tb_ring_free(c->rx);
	}
	free_page((unsigned long)c->src);
	free_page((unsigned long)c->dst);
}

/* Host 0 sends on HopID n, host 1 receives on it: one free at both. */
static void tbc_hops(struct tbc *c)
{
	int want = -1, i;

	for (i = 0; i < 16; i++) {
		c->in_hop = tb_xdomain_alloc_in_hopid(c->xd[1], want);
		if (c->in_hop < 0)
			return;
		c->out_hop = tb_xdomain_alloc_out_hopid(c->xd[0], c->in_hop);
		if (c->out_hop == c->in_hop)
			return;
		tb_xdomain_release_in_hopid(c->xd[1], c->in_hop);
		c->in_hop = -1;
		if (c->out_hop < 0)
			return;
		tb_xdomain_release_out_hopid(c->xd[0], c->out_hop);
		want = c->out_hop;
		c->out_hop = -1;
	}
}

/* Under tbe_lock (the cable stays as it is): the report into buf. */
int tbe_dma_check(char *buf)
{
	struct tbc c = {.buf = buf, .h = {tbe_hosts[0], tbe_hosts[1]}};

	if (!c.h[0] || !c.h[1] || !c.h[0]->xd || !c.h[1]->xd)
		return scnprintf(buf, PAGE_SIZE,
				 "dma_check result FAIL no cable\n");
	c.xd[0] = c.h[0]->xd;
	c.xd[1] = c.h[1]->xd;
	c.src = (u8 *)__get_free_page(GFP_KERNEL);
	c.dst = (u8 *)__get_free_page(GFP_KERNEL);
	c.tx = tb_ring_alloc_tx(&c.h[0]->nhi, -1, TBC_DEPTH, RING_FLAG_FRAME);
	c.rx = tb_ring_alloc_rx(&c.h[1]->nhi, -1, TBC_DEPTH, RING_FLAG_FRAME, 0,
				BIT(TBC_PDF), BIT(TBC_PDF), NULL, NULL);
	tbc_hops(&c);
	if (!c.src || !c.dst || !c.tx || !c.rx || c.out_hop < 0 ||
	    c.in_hop != c.out_hop)
		tbc_report(&c, "setup", false, "hops %d/%d", c.out_hop,
			   c.in_hop);
	else
		tbc_run(&c);
	tbc_teardown(&c);
	c.n += scnprintf(buf + c.n, PAGE_SIZE - c.n,
			 "dma_check result %s failures=%d\n",
			 c.fails ? "FAIL" : "PASS", c.fails);
	return c.n;
}
