/* SPDX-License-Identifier: MIT */
/*
 * Software cable: the rings as each end uses them (TX, RX, what wait()
 * looks at). The DMA engine that moves frames between them, with the wire
 * model, the faults and the wake-ups, is in sim_dma.c.
 *
 * Data path between the two processes is lock-free: the sender hands TX
 * descriptors over by a release store of dir.tx_prod (the doorbell); the
 * receiver owns its RX ring and hands slots back by a release store of
 * POSTED into the descriptor.
 */
#define _GNU_SOURCE
#include <string.h>

#include "sim_int.h"

/* Where direction d of channel slot idx lives (private geometry only). */
void sim_ring_layout(const struct sim_map *m, uint32_t idx, uint32_t d,
		     struct sim_ring *r)
{
	const struct sim_geom *g = &m->g;
	struct sim_seg *s = m->seg;
	uint32_t depth = g->depth;
	uint64_t slot = sim_slot_off(g, idx);
	uint64_t base = slot + SIM_PAGE + d * g->dir_size;
	uint64_t pools = base + g->dir_size - 2ull * depth * U4L_FRAME_MAX;
	char *p = (char *)s + base;

	r->ctl = &((struct sim_chan *)((char *)s + slot))->dir[d];
	r->tx_desc = (struct sim_desc *)p;
	p += (size_t)depth * sizeof(struct sim_desc);
	r->rx_desc = (struct sim_desc *)p;
	p += (size_t)depth * sizeof(struct sim_desc);
	r->rx_meta = (struct sim_meta *)p;
	p += (size_t)depth * sizeof(struct sim_meta);
	r->tx_done = (uint64_t *)p;
	r->held = (uint8_t *)s + pools - SIM_PAGE;
	r->tx_pool_off = pools;
	r->rx_pool_off = pools + (uint64_t)depth * U4L_FRAME_MAX;
	r->tx_pool = (uint8_t *)s + r->tx_pool_off;
	r->rx_pool = (uint8_t *)s + r->rx_pool_off;
}

#define RX_POSTED_W sim_d_make(0, 0, SIM_DF_POSTED | SIM_DF_INTERRUPT)

/* Fresh rings for a new channel (segment lock held, slot punched). */
void sim_chan_init_rings(const struct sim_map *m, uint32_t idx)
{
	for (uint32_t d = 0; d < 2; d++) {
		struct sim_ring r;
		sim_ring_layout(m, idx, d, &r);
		memset(r.ctl, 0, sizeof(*r.ctl));
		for (uint32_t j = 0; j < m->g.depth; j++) {
			r.rx_desc[j].addr =
			    r.rx_pool_off + (uint64_t)j * U4L_FRAME_MAX;
			r.rx_desc[j].time = 0;
			__atomic_store_n(&r.rx_desc[j].w, RX_POSTED_W,
					 __ATOMIC_RELAXED);
		}
	}
}

bool sim_chan_dead(struct sim_chan_h *h)
{
	if (__atomic_load_n(&h->dead, __ATOMIC_RELAXED))
		return true;
	if (__atomic_load_n(&h->ent->gs, __ATOMIC_ACQUIRE) == h->gs)
		return false;
	__atomic_store_n(&h->dead, 1, __ATOMIC_RELAXED);
	return true;
}

bool sim_chan_tx_dead(struct sim_chan_h *h)
{
	return sim_chan_dead(h) ||
	       __atomic_load_n(&h->ent->orphan, __ATOMIC_ACQUIRE);
}

bool sim_chan_gone(struct u4l_chan *chan)
{
	return sim_chan_tx_dead((struct sim_chan_h *)chan);
}

/* ---- TX (one thread per channel at a time: the engine's TX lock) ---- */

static void tx_reap(struct sim_chan_h *h)
{
	struct sim_ring *r = &h->ring[h->txd];
	uint32_t reap = h->tx_reap, prod = h->tx_prod;

	for (uint32_t n = 0; reap != prod && n < h->depth; n++) {
		uint32_t i = reap & h->mask;
		uint32_t w =
		    __atomic_load_n(&r->tx_desc[i].w, __ATOMIC_ACQUIRE);
		if (!(sim_d_flags(w) & SIM_DF_COMPLETED))
			break;
		uint64_t t = SIM_ONCE(r->tx_done[i]);
		if (t > h->tx_now) {
			h->tx_now = u4l_now_ns();
			if (t > h->tx_now && t - h->tx_now < SIM_FUTURE_MAX_NS)
				break; /* still on the wire */
		}
		reap++;
	}
	__atomic_store_n(&h->tx_reap, reap, __ATOMIC_RELAXED);
}

static inline bool tx_backlog(struct sim_chan_h *h)
{
	return __atomic_load_n(&h->ring[h->txd].ctl->backlog, __ATOMIC_RELAXED);
}

void *sim_tx_slot(struct u4l_chan *chan)
{
	struct sim_chan_h *h = (struct sim_chan_h *)chan;

	if (sim_chan_tx_dead(h))
		return h->scratch;
	if (h->tx_prod - h->tx_reap >= h->tx_bound) {
		tx_reap(h);
		if (h->tx_prod - h->tx_reap >= h->tx_bound && tx_backlog(h)) {
			sim_engine_run(h, h->txd, &h->tx_snap, false);
			tx_reap(h);
		}
		if (h->tx_prod - h->tx_reap >= h->tx_bound) {
			__atomic_store_n(&h->tx_full, 1, __ATOMIC_SEQ_CST);
			return NULL;
		}
	}
	if (h->tx_full)
		__atomic_store_n(&h->tx_full, 0, __ATOMIC_RELAXED);
	return h->ring[h->txd].tx_pool +
	       (size_t)(h->tx_prod & h->mask) * U4L_FRAME_MAX;
}

void sim_tx_post(struct u4l_chan *chan, uint32_t len, enum u4l_pdf pdf)
{
	struct sim_chan_h *h = (struct sim_chan_h *)chan;
	struct sim_ring *r = &h->ring[h->txd];

	if (sim_chan_tx_dead(h) || h->tx_prod - h->tx_reap >= h->depth)
		return;
	uint32_t i = h->tx_prod & h->mask;
	bool ok = len >= 1 && len <= U4L_FRAME_MAX;
	r->tx_desc[i].addr = r->tx_pool_off + (uint64_t)i * U4L_FRAME_MAX;
	r->tx_desc[i].time = 0;
	/* An invalid length is posted without POSTED: the engine drops it. */
	__atomic_store_n(&r->tx_desc[i].w,
			 ok ? sim_d_make(len, pdf, SIM_DF_POSTED) : 0,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&h->tx_prod, h->tx_prod + 1, __ATOMIC_RELAXED);
}

void sim_tx_doorbell(struct u4l_chan *chan)
{
	struct sim_chan_h *h = (struct sim_chan_h *)chan;
	struct sim_dir_ctl *ctl = h->ring[h->txd].ctl;

	if (sim_chan_tx_dead(h))
		return;
	__atomic_store_n(&ctl->tx_prod, h->tx_prod, __ATOMIC_RELEASE);
	sim_engine_run(h, h->txd, &h->tx_snap, true);
}

uint32_t sim_tx_space(struct u4l_chan *chan)
{
	struct sim_chan_h *h = (struct sim_chan_h *)chan;

	if (sim_chan_tx_dead(h))
		return h->depth;
	tx_reap(h);
	if (h->tx_prod != h->tx_reap && tx_backlog(h)) {
		sim_engine_run(h, h->txd, &h->tx_snap, false);
		tx_reap(h);
	}
	return h->tx_prod - h->tx_reap >= h->tx_bound ?
		       0 :
		       h->tx_bound - (h->tx_prod - h->tx_reap);
}

void sim_tx_bound(struct u4l_chan *chan, uint32_t frames)
{
	struct sim_chan_h *h = (struct sim_chan_h *)chan;

	if (frames < 1 || frames > h->depth)
		frames = h->depth;
	__atomic_store_n(&h->tx_bound, frames, __ATOMIC_RELAXED);
}

/* ---- RX (one thread per channel at a time: the engine's RX lock) ---- */

int sim_rx_peek(struct u4l_chan *chan, struct u4l_rx_frame *frame)
{
	struct sim_chan_h *h = (struct sim_chan_h *)chan;
	struct sim_ring *r = &h->ring[h->rxd];

	if (sim_chan_dead(h))
		return 0;
	uint32_t j = h->rx_cons & h->mask;
	uint32_t w = __atomic_load_n(&r->rx_desc[j].w, __ATOMIC_ACQUIRE);
	if (!(sim_d_flags(w) & SIM_DF_COMPLETED))
		return 0;
	const struct sim_meta *m = &r->rx_meta[j];
	uint64_t arr = SIM_ONCE(m->arrival_ns);
	if (arr > h->rx_now) {
		h->rx_now = u4l_now_ns();
		if (arr > h->rx_now && arr - h->rx_now < SIM_FUTURE_MAX_NS)
			return 0; /* still on the wire */
	}
	/*
	 * The peer can write its RX pool (our RX ring's buffers) at any
	 * moment: the engine decodes a private copy of the headers, so what
	 * it validated is what it uses. The payload is read where it lies,
	 * copied once to its destination.
	 */
	frame->len = sim_d_len(w);
	frame->buf = r->rx_pool + (size_t)j * U4L_FRAME_MAX;
	memcpy(h->rx_copy, frame->buf,
	       frame->len < U4L_RX_HEAD ? frame->len : U4L_RX_HEAD);
	frame->head = h->rx_copy;
	frame->flags = ((sim_d_flags(w) & SIM_DF_RX_CRC) ? U4L_RX_CRC_ERR : 0) |
		       (SIM_ONCE(m->flags) & U4L_RX_NOWAKE);
	return 1;
}

void sim_rx_release(struct u4l_chan *chan)
{
	struct sim_chan_h *h = (struct sim_chan_h *)chan;
	struct sim_ring *r = &h->ring[h->rxd];

	if (sim_chan_dead(h))
		return;
	uint32_t j = h->rx_cons & h->mask;
	uint32_t w = __atomic_load_n(&r->rx_desc[j].w, __ATOMIC_ACQUIRE);
	if (!(sim_d_flags(w) & SIM_DF_COMPLETED))
		return; /* nothing was peeked: keep the ring in step */
	/* seq_cst: ordered before the backlog load below (see rx_slot()) */
	__atomic_store_n(&r->rx_desc[j].w, RX_POSTED_W, __ATOMIC_SEQ_CST);
	__atomic_store_n(&h->rx_cons, h->rx_cons + 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&r->ctl->backlog, __ATOMIC_SEQ_CST))
		sim_engine_run(h, h->rxd, &h->rx_snap, false);
}

/* ---- wait() support: runs concurrently with TX and RX ---- */

/* t if it is still ahead (and not garbled by the peer), else 0. */
static uint64_t ahead(uint64_t t, uint64_t now)
{
	return t > now && t - now < SIM_FUTURE_MAX_NS ? t : 0;
}

/*
 * The wire delivers in order and departs in order, so the last frame
 * moved into our RX ring arrives last, and the last one posted on our TX
 * ring departs last. A TX frame not moved yet (waiting for an RX slot of
 * the peer's) has no departure time: not known.
 */
void sim_wire_due(struct u4l_chan *chan, uint64_t *rx, uint64_t *tx)
{
	struct sim_chan_h *h = (struct sim_chan_h *)chan;
	struct sim_ring *r = &h->ring[h->rxd], *t = &h->ring[h->txd];
	uint32_t cons = __atomic_load_n(&h->rx_cons, __ATOMIC_RELAXED);
	uint32_t fill = SIM_ONCE(r->ctl->rx_fill), w, i;
	uint32_t prod = __atomic_load_n(&h->tx_prod, __ATOMIC_RELAXED);
	uint64_t now = u4l_now_ns();

	*rx = *tx = 0;
	if (sim_chan_dead(h))
		return;
	if (fill != cons && fill - cons <= h->depth) {
		i = (fill - 1) & h->mask;
		w = __atomic_load_n(&r->rx_desc[i].w, __ATOMIC_ACQUIRE);
		if (sim_d_flags(w) & SIM_DF_COMPLETED)
			*rx = ahead(SIM_ONCE(r->rx_meta[i].arrival_ns), now);
	}
	if (prod != __atomic_load_n(&h->tx_reap, __ATOMIC_RELAXED)) {
		i = (prod - 1) & h->mask;
		w = __atomic_load_n(&t->tx_desc[i].w, __ATOMIC_ACQUIRE);
		if (sim_d_flags(w) & SIM_DF_COMPLETED)
			*tx = ahead(SIM_ONCE(t->tx_done[i]), now);
	}
}

bool sim_chan_ready(struct sim_chan_h *h, uint64_t now, uint64_t *next,
		    bool rx)
{
	if (sim_chan_dead(h))
		return false;
	struct sim_ring *r = &h->ring[h->rxd];
	uint32_t j = __atomic_load_n(&h->rx_cons, __ATOMIC_RELAXED) & h->mask;
	uint32_t w = __atomic_load_n(&r->rx_desc[j].w, __ATOMIC_ACQUIRE);
	if (rx && (sim_d_flags(w) & SIM_DF_COMPLETED)) {
		const struct sim_meta *m = &r->rx_meta[j];
		uint64_t arr = SIM_ONCE(m->arrival_ns);
		/* A stranded frame at the head does not end a sleep. */
		if (!(SIM_ONCE(m->flags) & U4L_RX_NOWAKE)) {
			if (arr <= now || arr - now >= SIM_FUTURE_MAX_NS)
				return true;
			if (arr < *next)
				*next = arr;
		}
	}
	/*
	 * A sender that found the ring full (its bound reached) waits for
	 * the oldest TX slot:
	 * wake when it leaves the wire. A full ring whose oldest slot is free
	 * again (a receiver's pump moved it) is "ready" so that it cannot miss
	 * that wakeup. Slots are reaped lazily, so a ring nobody waits on may
	 * look full: that is no reason to wake.
	 */
	struct sim_ring *t = &h->ring[h->txd];
	uint32_t reap = __atomic_load_n(&h->tx_reap, __ATOMIC_RELAXED);
	uint32_t prod = __atomic_load_n(&h->tx_prod, __ATOMIC_RELAXED);
	if (reap != prod && __atomic_load_n(&h->tx_full, __ATOMIC_SEQ_CST)) {
		uint32_t i = reap & h->mask;
		w = __atomic_load_n(&t->tx_desc[i].w, __ATOMIC_SEQ_CST);
		if (sim_d_flags(w) & SIM_DF_COMPLETED) {
			uint64_t done = SIM_ONCE(t->tx_done[i]);
			if (done > now) {
				if (done < *next)
					*next = done;
			} else if (prod - reap >=
				   __atomic_load_n(&h->tx_bound,
						   __ATOMIC_RELAXED)) {
				return true;
			}
		}
	}
	return false;
}
