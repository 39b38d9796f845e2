/* SPDX-License-Identifier: MIT */
/*
 * Software cable: rings, doorbell, wire model, fault injection, wake-ups.
 *
 * Data path between the two processes is lock-free: the sender hands TX
 * descriptors over by a release store of dir.tx_prod (the doorbell); the
 * receiver owns its RX ring and hands slots back by a release store of
 * POSTED into the descriptor. Moving frames from TX to RX (the "DMA engine")
 * is done by whoever calls it - the sender's doorbell, or the receiver when
 * it releases RX slots while frames wait for them (E2E backlog) - under a
 * per-direction try-lock with a `need` flag, so nobody ever blocks on it and
 * no request to run is lost: a caller that fails the try-lock leaves `need`
 * set, and the holder runs the engine again after unlocking.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sim_int.h"

#define SIM_FUTURE_MAX_NS 60000000000ull /* later than this = corrupted */

void sim_ring_layout(struct sim_seg *s, uint32_t idx, uint32_t d,
		     struct sim_ring *r)
{
	uint32_t depth = s->ring_depth;
	uint64_t slot = s->chan_off + (uint64_t)idx * s->chan_stride;
	uint64_t base = slot + SIM_PAGE + d * s->dir_size;
	uint64_t pools = base + s->dir_size - 2ull * depth * U4L_FRAME_MAX;
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
void sim_chan_init_rings(struct sim_seg *s, uint32_t idx)
{
	for (uint32_t d = 0; d < 2; d++) {
		struct sim_ring r;
		sim_ring_layout(s, idx, d, &r);
		memset(r.ctl, 0, sizeof(*r.ctl));
		for (uint32_t j = 0; j < s->ring_depth; j++) {
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

/*
 * Wake context ctx if one of its threads sleeps in wait(). The caller has
 * published what the sleeper looks for (frames, kick, accept) before this.
 * Dekker with wait(): sleeper increments `sleepers` then checks; waker
 * publishes, fences, then reads `sleepers`. No syscall when nobody sleeps.
 */
void sim_wake_ctx(struct sim_seg *s, uint32_t ctx)
{
	struct sim_ctx_slot *x = &s->ctx[ctx % U4L_MAX_CTX];

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&x->sleepers, __ATOMIC_SEQ_CST))
		return;
	__atomic_add_fetch(&x->wake, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &x->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static inline uint64_t now_ns(void)
{
	return u4l_now_ns();
}

/* Reserve the wire of direction `end` for one frame; returns departure. */
static uint64_t wire_reserve(struct sim_seg *s, uint32_t end, uint64_t now,
			     uint32_t len, uint64_t rate_bps)
{
	uint64_t ser = (uint64_t)len * 8000000000ull / rate_bps;
	uint64_t *fa = &s->wire[end & 1].free_at;
	uint64_t cur = __atomic_load_n(fa, __ATOMIC_RELAXED), dep = now + ser;

	for (int k = 0; k < 1000; k++) {
		uint64_t start = cur > now ? cur : now;
		if (start - now > SIM_FUTURE_MAX_NS) /* corrupted: restart */
			start = now;
		dep = start + ser;
		if (__atomic_compare_exchange_n(fa, &cur, dep, true,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			break;
	}
	return dep;
}

static inline bool rx_posted(struct sim_ring *r, uint32_t j, int mo)
{
	uint32_t fl = sim_d_flags(__atomic_load_n(&r->rx_desc[j].w, mo));
	return (fl & (SIM_DF_POSTED | SIM_DF_COMPLETED)) == SIM_DF_POSTED;
}

/*
 * Is RX slot j posted? With E2E, if not, raise `backlog` so that the
 * receiver pumps when it releases a slot, then look again (Dekker with
 * sim_rx_release(): it stores POSTED, then reads `backlog`).
 */
static bool rx_slot(struct sim_ring *r, uint32_t j, bool e2e)
{
	if (rx_posted(r, j, __ATOMIC_ACQUIRE))
		return true;
	if (!e2e)
		return false;
	__atomic_store_n(&r->ctl->backlog, 1, __ATOMIC_SEQ_CST);
	return rx_posted(r, j, __ATOMIC_SEQ_CST);
}

static void deliver(struct sim_ring *r, uint32_t j, const uint8_t *src,
		    uint32_t len, uint32_t pdf, uint32_t dflags,
		    uint32_t mflags, uint64_t arrival, bool garble)
{
	uint8_t *dst = r->rx_pool + (size_t)j * U4L_FRAME_MAX;

	memcpy(dst, src, len);
	if (garble) { /* what a CRC error would have let through */
		dst[0] ^= 0x5a;
		dst[len / 2] ^= 0xa5;
		dst[len - 1] ^= 0xff;
	}
	r->rx_meta[j].arrival_ns = arrival;
	r->rx_meta[j].flags = mflags;
	r->rx_desc[j].addr = r->rx_pool_off + (uint64_t)j * U4L_FRAME_MAX;
	r->rx_desc[j].time = (uint32_t)arrival;
	if (!(mflags & U4L_RX_NOWAKE))
		dflags |= SIM_DF_INTERRUPT;
	__atomic_store_n(&r->rx_desc[j].w,
			 sim_d_make(len, pdf, SIM_DF_COMPLETED | dflags),
			 __ATOMIC_RELEASE);
}

struct run_acc {
	uint64_t tx_frames, tx_bytes, rx_frames, rx_bytes;
	uint64_t drop, dup, reorder, crc, stranded, overflow;
	bool wake, moved;
};

/* Deliver the reorder-held frame into RX slot *fill if one is posted. */
static bool deliver_held(struct sim_ring *r, uint32_t mask, uint32_t *fill,
			 bool e2e, struct run_acc *acc)
{
	struct sim_dir_ctl *ctl = r->ctl;
	uint32_t j = *fill & mask, w = ctl->held_w;

	if (!rx_slot(r, j, e2e)) {
		if (e2e)
			return false;
		acc->overflow++;
		ctl->held = 0;
		return true;
	}
	deliver(r, j, r->held, sim_d_len(w), sim_d_pdf(w),
		sim_d_flags(w) & SIM_DF_RX_CRC,
		ctl->held_mflags & U4L_RX_NOWAKE, ctl->held_arrival, false);
	(*fill)++;
	acc->rx_frames++;
	acc->rx_bytes += sim_d_len(w);
	if (!(ctl->held_mflags & U4L_RX_NOWAKE))
		acc->wake = true;
	ctl->held = 0;
	return true;
}

static inline void tx_complete(struct sim_ring *r, uint32_t i, uint32_t w,
			       uint64_t t)
{
	r->tx_done[i] = t;
	__atomic_store_n(&r->tx_desc[i].w,
			 w | SIM_DF_COMPLETED << SIM_D_FLAGS_SHIFT,
			 __ATOMIC_RELEASE);
}

static u4l_sim_test_hook test_hook;
static void *test_hook_arg;

void u4l_sim_set_test_hook(u4l_sim_test_hook fn, void *arg)
{
	__atomic_store_n(&test_hook_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&test_hook, fn, __ATOMIC_RELEASE);
}

static enum u4l_sim_verdict test_verdict(uint32_t end, const void *frame,
					 uint32_t len)
{
	u4l_sim_test_hook fn = __atomic_load_n(&test_hook, __ATOMIC_ACQUIRE);

	return fn ? fn(__atomic_load_n(&test_hook_arg, __ATOMIC_RELAXED), end,
		       frame, len) :
		    U4L_SIM_PASS;
}

/* The DMA engine for direction d; ctl->lock held. */
static void engine_move(struct sim_chan_h *h, uint32_t d, struct sim_snap *snap,
			bool doorbell)
{
	struct sim_seg *s = h->dev->seg;
	struct sim_ring *r = &h->ring[d];
	struct sim_dir_ctl *ctl = r->ctl;
	uint32_t mask = h->mask, depth = h->depth;
	uint32_t se = h->snd_end[d], re = h->rcv_end[d];
	struct run_acc acc = {0};
	bool stalled = false;

	sim_snap_refresh(s, snap);
	bool loop = h->loop;
	bool e2e = loop || snap->e2e; /* software loopback never overflows */
	bool faults = !loop && snap->any_fault[se];
	uint64_t rate = loop ? 0 : snap->rate_bps;
	uint64_t lat = loop ? 0 : snap->latency_ns;
	const struct u4l_sim_faults *f = &snap->faults[se];

	uint32_t prod = __atomic_load_n(&ctl->tx_prod, __ATOMIC_ACQUIRE);
	uint32_t moved = ctl->tx_moved, fill = ctl->rx_fill;
	uint32_t run = ++ctl->run_seq;
	if (ctl->held > 2)
		ctl->held = 0;	  /* corrupted */
	if (prod - moved > depth) /* corrupted by the sender: resynchronise */
		moved = prod;
	uint64_t now = now_ns();

	for (uint32_t n = 0; moved != prod && n < depth; n++) {
		uint32_t i = moved & mask;
		/* A held frame that was already passed goes first. */
		if (ctl->held == 2 &&
		    !deliver_held(r, mask, &fill, e2e, &acc)) {
			stalled = true;
			break;
		}
		uint32_t w =
		    __atomic_load_n(&r->tx_desc[i].w, __ATOMIC_RELAXED);
		uint32_t fl = sim_d_flags(w), len = sim_d_len(w),
			 pdf = sim_d_pdf(w);
		if ((fl & (SIM_DF_POSTED | SIM_DF_COMPLETED)) !=
		    SIM_DF_POSTED) {
			/* not a valid post (bad length at tx_post): complete,
			 * drop */
			tx_complete(r, i, w, now);
			moved++;
			acc.moved = true;
			continue;
		}
		uint32_t j = fill & mask;
		bool have = rx_slot(r, j, e2e);
		if (!have && e2e) {
			stalled = true;
			break;
		}
		uint64_t dep = rate ? wire_reserve(s, se, now, len, rate) : now;
		uint64_t arr = dep + lat;
		const uint8_t *src = r->tx_pool + (size_t)i * U4L_FRAME_MAX;
		enum u4l_sim_verdict v =
		    loop ? U4L_SIM_PASS : test_verdict(se, src, len);
		bool drop = false, dup = false, reorder = false, crc = false,
		     str = false;
		if (v != U4L_SIM_PASS) {
			drop = v == U4L_SIM_DROP;
			dup = v == U4L_SIM_DUP;
		} else if (faults) {
			drop = sim_chance(s, se, f->drop);
			if (!drop && pdf == U4L_PDF_CTRL)
				drop = sim_chance(s, se, f->drop_ctrl);
			if (!drop) {
				dup = sim_chance(s, se, f->dup);
				crc = sim_chance(s, se, f->crc);
				str = sim_chance(s, se, f->stranded);
				reorder = sim_chance(s, se, f->reorder);
			}
		}
		acc.tx_frames++;
		acc.tx_bytes += len;
		uint32_t dfl = crc ? SIM_DF_RX_CRC : 0,
			 mfl = str ? U4L_RX_NOWAKE : 0;
		if (drop) {
			acc.drop++;
		} else if (!have) {
			acc.overflow++;
		} else if (reorder && !ctl->held) {
			/* Hold it; it goes right after the next frame. */
			memcpy(r->held, src, len);
			if (crc) {
				r->held[0] ^= 0x5a;
				r->held[len / 2] ^= 0xa5;
				r->held[len - 1] ^= 0xff;
			}
			ctl->held_w = sim_d_make(len, pdf, dfl);
			ctl->held_mflags = mfl;
			ctl->held_arrival = arr;
			ctl->held_run = run;
			ctl->held = 1;
			acc.reorder++;
			acc.crc += crc;
			acc.stranded += str;
		} else {
			deliver(r, j, src, len, pdf, dfl, mfl, arr, crc);
			fill++;
			acc.rx_frames++;
			acc.rx_bytes += len;
			acc.crc += crc;
			acc.stranded += str;
			if (!str)
				acc.wake = true;
			if (dup &&
			    rx_posted(r, fill & mask, __ATOMIC_ACQUIRE)) {
				/* an identical copy, garbled bytes included */
				deliver(r, fill & mask,
					r->rx_pool + (size_t)j * U4L_FRAME_MAX,
					len, pdf, dfl, mfl, arr, false);
				fill++;
				acc.dup++;
				acc.rx_frames++;
				acc.rx_bytes += len;
			}
			if (ctl->held) {
				ctl->held = 2; /* passed: due now */
				if (arr > ctl->held_arrival)
					ctl->held_arrival = arr;
				deliver_held(r, mask, &fill, e2e, &acc);
			}
			if (v == U4L_SIM_DUP_LATE && !ctl->held) {
				memcpy(r->held, src, len);
				ctl->held_w = sim_d_make(len, pdf, dfl);
				ctl->held_mflags = mfl;
				ctl->held_arrival = arr;
				ctl->held_run = run;
				ctl->held = 1;
				acc.dup++;
			}
		}
		tx_complete(r, i, w, dep);
		moved++;
		acc.moved = true;
	}
	/* Nothing passed a frame held by an earlier doorbell: flush it now. */
	if (!stalled && ctl->held &&
	    (ctl->held == 2 || (doorbell && ctl->held_run != run))) {
		ctl->held = 2;
		if (!deliver_held(r, mask, &fill, e2e, &acc))
			stalled = true;
	}
	if (!stalled)
		__atomic_store_n(&ctl->backlog, 0, __ATOMIC_RELAXED);
	ctl->tx_moved = moved;
	ctl->rx_fill = fill;

	if (!loop &&
	    (acc.tx_frames | acc.rx_frames | acc.drop | acc.overflow)) {
		struct u4l_counters *ts = &s->counters[se],
				    *rs = &s->counters[re];
#define ADD(p, v)                                                              \
	do {                                                                   \
		if (v)                                                         \
			__atomic_fetch_add(&(p), (v), __ATOMIC_RELAXED);       \
	} while (0)
		ADD(ts->tx_frames, acc.tx_frames);
		ADD(ts->tx_bytes, acc.tx_bytes);
		ADD(rs->rx_frames, acc.rx_frames);
		ADD(rs->rx_bytes, acc.rx_bytes);
		ADD(rs->fault_drop, acc.drop);
		ADD(rs->fault_dup, acc.dup);
		ADD(rs->fault_reorder, acc.reorder);
		ADD(rs->fault_crc, acc.crc);
		ADD(rs->fault_stranded, acc.stranded);
		ADD(rs->rx_overflow, acc.overflow);
#undef ADD
	}
	if (acc.wake)
		sim_wake_ctx(s, h->rcv_ctx[d]);
	/* A receiver's pump freed TX slots: the sender may wait for them. */
	if (acc.moved && d != h->txd)
		sim_wake_ctx(s, h->rcv_ctx[d ^ 1]);
}

/*
 * Run the engine for direction d unless someone else is running it; in that
 * case leave `need` set and the holder runs it again for us.
 */
static void engine_run(struct sim_chan_h *h, uint32_t d, struct sim_snap *snap,
		       bool doorbell)
{
	struct sim_dir_ctl *ctl = h->ring[d].ctl;

	for (int tries = 0; tries < 64; tries++) {
		uint32_t unlocked = 0;
		__atomic_store_n(&ctl->need, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_compare_exchange_n(&ctl->lock, &unlocked, 1,
						 false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			return;
		__atomic_exchange_n(&ctl->need, 0, __ATOMIC_SEQ_CST);
		engine_move(h, d, snap, doorbell && tries == 0);
		__atomic_store_n(&ctl->lock, 0, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&ctl->need, __ATOMIC_SEQ_CST))
			return;
	}
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
		uint64_t t = r->tx_done[i];
		if (t > h->tx_now) {
			h->tx_now = now_ns();
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
	if (h->tx_prod - h->tx_reap >= h->depth) {
		tx_reap(h);
		if (h->tx_prod - h->tx_reap >= h->depth && tx_backlog(h)) {
			engine_run(h, h->txd, &h->tx_snap, false);
			tx_reap(h);
		}
		if (h->tx_prod - h->tx_reap >= h->depth)
			return NULL;
	}
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
	engine_run(h, h->txd, &h->tx_snap, true);
}

uint32_t sim_tx_space(struct u4l_chan *chan)
{
	struct sim_chan_h *h = (struct sim_chan_h *)chan;

	if (sim_chan_tx_dead(h))
		return h->depth;
	tx_reap(h);
	if (h->tx_prod != h->tx_reap && tx_backlog(h)) {
		engine_run(h, h->txd, &h->tx_snap, false);
		tx_reap(h);
	}
	return h->depth - (h->tx_prod - h->tx_reap);
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
	uint64_t arr = m->arrival_ns;
	if (arr > h->rx_now) {
		h->rx_now = now_ns();
		if (arr > h->rx_now && arr - h->rx_now < SIM_FUTURE_MAX_NS)
			return 0; /* still on the wire */
	}
	frame->buf = r->rx_pool + (size_t)j * U4L_FRAME_MAX;
	frame->len = sim_d_len(w);
	frame->flags = ((sim_d_flags(w) & SIM_DF_RX_CRC) ? U4L_RX_CRC_ERR : 0) |
		       (m->flags & U4L_RX_NOWAKE);
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
		engine_run(h, h->rxd, &h->rx_snap, false);
}

/* ---- wait() support: runs concurrently with TX and RX ---- */

bool sim_chan_ready(struct sim_chan_h *h, uint64_t now, uint64_t *next)
{
	if (sim_chan_dead(h))
		return false;
	struct sim_ring *r = &h->ring[h->rxd];
	uint32_t j = __atomic_load_n(&h->rx_cons, __ATOMIC_RELAXED) & h->mask;
	uint32_t w = __atomic_load_n(&r->rx_desc[j].w, __ATOMIC_ACQUIRE);
	if (sim_d_flags(w) & SIM_DF_COMPLETED) {
		const struct sim_meta *m = &r->rx_meta[j];
		/* A stranded frame at the head does not end a sleep. */
		if (!(m->flags & U4L_RX_NOWAKE)) {
			if (m->arrival_ns <= now ||
			    m->arrival_ns - now >= SIM_FUTURE_MAX_NS)
				return true;
			if (m->arrival_ns < *next)
				*next = m->arrival_ns;
		}
	}
	/*
	 * The oldest TX slot: wake when it leaves the wire. A full ring whose
	 * oldest slot is free again (a receiver's pump moved it) is "ready" so
	 * that a sender waiting for TX space cannot miss that wakeup.
	 */
	struct sim_ring *t = &h->ring[h->txd];
	uint32_t reap = __atomic_load_n(&h->tx_reap, __ATOMIC_RELAXED);
	uint32_t prod = __atomic_load_n(&h->tx_prod, __ATOMIC_RELAXED);
	if (reap != prod) {
		uint32_t i = reap & h->mask;
		w = __atomic_load_n(&t->tx_desc[i].w, __ATOMIC_SEQ_CST);
		if (sim_d_flags(w) & SIM_DF_COMPLETED) {
			uint64_t done = t->tx_done[i];
			if (done > now) {
				if (done < *next)
					*next = done;
			} else if (prod - reap >= h->depth) {
				return true;
			}
		}
	}
	return false;
}
