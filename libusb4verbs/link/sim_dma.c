/* SPDX-License-Identifier: MIT */
/*
 * Software cable: the "DMA engine" that moves frames from a TX ring into
 * the peer's RX ring, with the wire model (rate, ring rate, latency), the
 * fault injection, the test hook and the wake-ups of the receiver.
 *
 * Moving frames is done by whoever calls it - the sender's doorbell, or
 * the receiver when it releases RX slots while frames wait for them (E2E
 * backlog) - under a per-direction try-lock with a `need` flag, so nobody
 * ever blocks on it and no request to run is lost: a caller that fails the
 * try-lock leaves `need` set, and the holder runs the engine again after
 * unlocking.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sim_int.h"

/*
 * Wake context ctx if one of its threads sleeps in wait(). The caller has
 * published what the sleeper looks for (frames, kick, accept) before this.
 * Dekker with wait(): sleeper increments `sleepers` then checks; waker
 * publishes, fences, then reads `sleepers`. No syscall when nobody sleeps.
 */
static void wake(struct sim_ctx_slot *x, const uint32_t *sleepers)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(sleepers, __ATOMIC_SEQ_CST))
		return;
	__atomic_add_fetch(&x->wake, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &x->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void sim_wake_ctx(struct sim_seg *s, uint32_t ctx)
{
	struct sim_ctx_slot *x = &s->ctx[ctx % U4L_MAX_CTX];

	wake(x, &x->sleepers);
}

/*
 * Frames delivered to ctx: data wakes every sleeper, ACK / NAK some; none
 * while the receiver's application covers them (sim_rx_cover), whose polls
 * take them. Dekker with sim_rx_cover(): the frames were published first.
 */
static void wake_rx(struct sim_seg *s, uint32_t ctx, bool data, uint64_t now)
{
	struct sim_ctx_slot *x = &s->ctx[ctx % U4L_MAX_CTX];

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (sim_cover_until(&x->cover_all_until, now) ||
	    (!data && sim_cover_until(&x->cover_ctrl_until, now)))
		return;
	wake(x, data ? &x->sleepers : &x->ctrl_sleepers);
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

/* What a CRC error would have let through. */
static void garble(uint8_t *p, uint32_t len)
{
	p[0] ^= 0x5a;
	p[len / 2] ^= 0xa5;
	p[len - 1] ^= 0xff;
}

static void deliver(struct sim_ring *r, uint32_t j, const uint8_t *src,
		    uint32_t len, uint32_t pdf, uint32_t dflags,
		    uint32_t mflags, uint64_t arrival, bool garbled)
{
	uint8_t *dst = r->rx_pool + (size_t)j * U4L_FRAME_MAX;

	memcpy(dst, src, len);
	if (garbled)
		garble(dst, len);
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
	bool wake, wake_ctrl, moved; /* wake: a data frame; _ctrl: ACK / NAK */
};

/*
 * The reorder-held frame of a direction. Its state lives in the shared
 * control block (whoever runs the engine next needs it): one run reads it
 * once and writes it back once.
 */
enum { HELD_NONE, HELD_WAITING, HELD_DUE /* passed: deliver now */ };

struct held {
	uint32_t state, run, w, mflags;
	uint64_t arrival;
};

static void held_load(const struct sim_dir_ctl *ctl, struct held *hd)
{
	hd->state = SIM_ONCE(ctl->held);
	if (hd->state > HELD_DUE)
		hd->state = HELD_NONE; /* corrupted */
	hd->run = SIM_ONCE(ctl->held_run);
	hd->w = SIM_ONCE(ctl->held_w);
	hd->mflags = SIM_ONCE(ctl->held_mflags);
	hd->arrival = SIM_ONCE(ctl->held_arrival);
}

static void held_store(struct sim_dir_ctl *ctl, const struct held *hd)
{
	ctl->held_run = hd->run;
	ctl->held_w = hd->w;
	ctl->held_mflags = hd->mflags;
	ctl->held_arrival = hd->arrival;
	ctl->held = hd->state;
}

/* Deliver the reorder-held frame into RX slot *fill if one is posted. */
static bool deliver_held(struct sim_ring *r, uint32_t mask, uint32_t *fill,
			 bool e2e, struct held *hd, struct run_acc *acc)
{
	uint32_t j = *fill & mask, w = hd->w;

	if (!rx_slot(r, j, e2e)) {
		if (e2e)
			return false;
		acc->overflow++;
		hd->state = HELD_NONE;
		return true;
	}
	deliver(r, j, r->held, sim_d_len(w), sim_d_pdf(w),
		sim_d_flags(w) & SIM_DF_RX_CRC, hd->mflags & U4L_RX_NOWAKE,
		hd->arrival, false);
	(*fill)++;
	acc->rx_frames++;
	acc->rx_bytes += sim_d_len(w);
	if (!(hd->mflags & U4L_RX_NOWAKE)) {
		if (sim_d_pdf(w) == U4L_PDF_CTRL)
			acc->wake_ctrl = true;
		else
			acc->wake = true;
	}
	hd->state = HELD_NONE;
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

static void count_run(struct sim_seg *s, uint32_t se, uint32_t re,
		      const struct run_acc *acc)
{
	struct u4l_counters *ts = &s->counters[se], *rs = &s->counters[re];

	if (!(acc->tx_frames | acc->rx_frames | acc->drop | acc->overflow))
		return;
#define ADD(p, v)                                                              \
	do {                                                                   \
		if (v)                                                         \
			u4l_count(&(p), (v));                                  \
	} while (0)
	ADD(ts->tx_frames, acc->tx_frames);
	ADD(ts->tx_bytes, acc->tx_bytes);
	ADD(rs->rx_frames, acc->rx_frames);
	ADD(rs->rx_bytes, acc->rx_bytes);
	ADD(rs->fault_drop, acc->drop);
	ADD(rs->fault_dup, acc->dup);
	ADD(rs->fault_reorder, acc->reorder);
	ADD(rs->fault_crc, acc->crc);
	ADD(rs->fault_stranded, acc->stranded);
	ADD(rs->rx_overflow, acc->overflow);
#undef ADD
}

/* One run of the DMA engine over direction d: what it reads once, and keeps. */
struct engine_run {
	struct sim_seg *s;
	struct sim_ring *r;
	const struct u4l_sim_faults *f;
	uint32_t mask, se, run, fill, prod, moved;
	bool loop, e2e, faults;
	uint64_t rate, ring_rate, lat, now;
	uint64_t ring_free; /* this direction's ring is free again */
	struct held hd;
	struct run_acc acc;
};

/*
 * When a frame of len bytes leaves: as the wire allows, and with a ring
 * rate no sooner than this ring can move it. The wire is reserved at its
 * own rate whatever the ring's pace, so that frames of other rings depart
 * in between (a ring-bound channel leaves the rest of the wire to others).
 */
static uint64_t depart(struct engine_run *e, uint32_t len)
{
	uint64_t dep =
	    e->rate ? wire_reserve(e->s, e->se, e->now, len, e->rate) : e->now;

	if (e->ring_rate) {
		uint64_t start = e->ring_free > e->now ? e->ring_free : e->now;

		e->ring_free =
		    start + (uint64_t)len * 8000000000ull / e->ring_rate;
		if (e->ring_free > dep)
			dep = e->ring_free;
	}
	return dep;
}

/* What happens to one frame on the wire. */
struct frame_fate {
	enum u4l_sim_verdict v;
	bool drop, dup, reorder, crc, str;
};

/* The test hook's verdict, else the cable's fault probabilities. */
static struct frame_fate fate_of(struct engine_run *e, const uint8_t *src,
				 uint32_t len, uint32_t pdf)
{
	struct frame_fate ff = {
	    .v = e->loop ? U4L_SIM_PASS : test_verdict(e->se, src, len),
	};

	if (ff.v != U4L_SIM_PASS) {
		ff.drop = ff.v == U4L_SIM_DROP;
		ff.dup = ff.v == U4L_SIM_DUP;
	} else if (e->faults) {
		ff.drop = sim_chance(e->s, e->se, e->f->drop);
		if (!ff.drop && pdf == U4L_PDF_CTRL)
			ff.drop = sim_chance(e->s, e->se, e->f->drop_ctrl);
		if (!ff.drop) {
			ff.dup = sim_chance(e->s, e->se, e->f->dup);
			ff.crc = sim_chance(e->s, e->se, e->f->crc);
			ff.str = sim_chance(e->s, e->se, e->f->stranded);
			ff.reorder = sim_chance(e->s, e->se, e->f->reorder);
		}
	}
	return ff;
}

/* Copy a frame aside as the direction's reorder-held frame. */
static void hold_frame(struct engine_run *e, const uint8_t *src, uint32_t len,
		       uint32_t w, uint32_t mflags, uint64_t arrival,
		       bool garbled)
{
	memcpy(e->r->held, src, len);
	if (garbled)
		garble(e->r->held, len);
	e->hd.w = w;
	e->hd.mflags = mflags;
	e->hd.arrival = arrival;
	e->hd.run = e->run;
	e->hd.state = HELD_WAITING;
}

/*
 * Frame (from TX slot src) into RX slot j, then its duplicate, the held
 * frame it passed, and a late duplicate held back.
 */
static void deliver_frame(struct engine_run *e, uint32_t j, const uint8_t *src,
			  uint32_t len, uint32_t pdf, uint64_t arr,
			  const struct frame_fate *ff)
{
	struct sim_ring *r = e->r;
	uint32_t dfl = ff->crc ? SIM_DF_RX_CRC : 0,
		 mfl = ff->str ? U4L_RX_NOWAKE : 0;

	deliver(r, j, src, len, pdf, dfl, mfl, arr, ff->crc);
	e->fill++;
	e->acc.rx_frames++;
	e->acc.rx_bytes += len;
	e->acc.crc += ff->crc;
	e->acc.stranded += ff->str;
	if (!ff->str && pdf == U4L_PDF_CTRL)
		e->acc.wake_ctrl = true;
	else if (!ff->str)
		e->acc.wake = true;
	if (ff->dup && rx_posted(r, e->fill & e->mask, __ATOMIC_ACQUIRE)) {
		/* an identical copy, garbled bytes included */
		deliver(r, e->fill & e->mask,
			r->rx_pool + (size_t)j * U4L_FRAME_MAX, len, pdf, dfl,
			mfl, arr, false);
		e->fill++;
		e->acc.dup++;
		e->acc.rx_frames++;
		e->acc.rx_bytes += len;
	}
	if (e->hd.state != HELD_NONE) {
		e->hd.state = HELD_DUE;
		if (arr > e->hd.arrival)
			e->hd.arrival = arr;
		deliver_held(r, e->mask, &e->fill, e->e2e, &e->hd, &e->acc);
	}
	if (ff->v == U4L_SIM_DUP_LATE && e->hd.state == HELD_NONE) {
		hold_frame(e, src, len, sim_d_make(len, pdf, dfl), mfl, arr,
			   false);
		e->acc.dup++;
	}
}

/*
 * Move the frame of TX slot i onto the wire and into the peer's RX ring.
 * Returns false when it must wait for an RX slot (E2E) and stays posted.
 */
static bool move_frame(struct engine_run *e, uint32_t i)
{
	struct sim_ring *r = e->r;
	uint32_t w = __atomic_load_n(&r->tx_desc[i].w, __ATOMIC_RELAXED);
	uint32_t len = sim_d_len(w), pdf = sim_d_pdf(w);

	if ((sim_d_flags(w) & (SIM_DF_POSTED | SIM_DF_COMPLETED)) !=
	    SIM_DF_POSTED) {
		/* not a valid post (bad length at tx_post): complete, drop */
		tx_complete(r, i, w, e->now);
		return true;
	}
	uint32_t j = e->fill & e->mask;
	bool have = rx_slot(r, j, e->e2e);
	if (!have && e->e2e)
		return false;
	uint64_t dep = depart(e, len);
	uint64_t arr = dep + e->lat;
	const uint8_t *src = r->tx_pool + (size_t)i * U4L_FRAME_MAX;
	struct frame_fate ff = fate_of(e, src, len, pdf);

	e->acc.tx_frames++;
	e->acc.tx_bytes += len;
	if (ff.drop) {
		e->acc.drop++;
	} else if (!have) {
		e->acc.overflow++;
	} else if (ff.reorder && e->hd.state == HELD_NONE) {
		/* Hold it; it goes right after the next frame. */
		hold_frame(e, src, len,
			   sim_d_make(len, pdf, ff.crc ? SIM_DF_RX_CRC : 0),
			   ff.str ? U4L_RX_NOWAKE : 0, arr, ff.crc);
		e->acc.reorder++;
		e->acc.crc += ff.crc;
		e->acc.stranded += ff.str;
	} else {
		deliver_frame(e, j, src, len, pdf, arr, &ff);
	}
	tx_complete(r, i, w, dep);
	return true;
}

/* Read the cable's settings and the direction's shared state, once. */
static void engine_begin(struct engine_run *e, struct sim_chan_h *h, uint32_t d,
			 struct sim_snap *snap)
{
	struct sim_dir_ctl *ctl = h->ring[d].ctl;

	e->s = h->dev->seg;
	e->r = &h->ring[d];
	e->mask = h->mask;
	e->se = h->snd_end[d];
	sim_snap_refresh(e->s, snap);
	e->loop = h->loop;
	e->e2e = e->loop || snap->e2e; /* software loopback never overflows */
	e->faults = !e->loop && snap->any_fault[e->se];
	e->rate = e->loop ? 0 : snap->rate_bps;
	e->ring_rate = e->loop ? 0 : snap->ring_rate_bps;
	e->lat = e->loop ? 0 : snap->latency_ns;
	e->f = &snap->faults[e->se];
	e->prod = __atomic_load_n(&ctl->tx_prod, __ATOMIC_ACQUIRE);
	e->moved = SIM_ONCE(ctl->tx_moved);
	e->fill = SIM_ONCE(ctl->rx_fill);
	e->run = SIM_ONCE(ctl->run_seq) + 1;
	ctl->run_seq = e->run;
	held_load(ctl, &e->hd);
	/* corrupted by the sender: resynchronise */
	if (e->prod - e->moved > h->depth)
		e->moved = e->prod;
	e->now = now_ns();
	e->ring_free = SIM_ONCE(ctl->ring_free_at);
	if (e->ring_free > e->now + SIM_FUTURE_MAX_NS) /* corrupted */
		e->ring_free = e->now;
}

/* Write the direction's state back, count, and wake whoever waits. */
static void engine_end(struct engine_run *e, struct sim_chan_h *h, uint32_t d,
		       bool stalled)
{
	struct sim_dir_ctl *ctl = e->r->ctl;

	if (!stalled)
		__atomic_store_n(&ctl->backlog, 0, __ATOMIC_RELAXED);
	held_store(ctl, &e->hd);
	ctl->tx_moved = e->moved;
	ctl->rx_fill = e->fill;
	ctl->ring_free_at = e->ring_free;

	if (!e->loop)
		count_run(e->s, e->se, h->rcv_end[d], &e->acc);
	if (e->acc.wake || e->acc.wake_ctrl)
		wake_rx(e->s, h->rcv_ctx[d], e->acc.wake, now_ns());
	/* A receiver's pump freed TX slots: the sender may wait for them. */
	if (e->acc.moved && d != h->txd)
		sim_wake_ctx(e->s, h->rcv_ctx[d ^ 1]);
}

/* The DMA engine for direction d; ctl->lock held. */
static void engine_move(struct sim_chan_h *h, uint32_t d, struct sim_snap *snap,
			bool doorbell)
{
	struct engine_run e = {0};
	bool stalled = false;

	engine_begin(&e, h, d, snap);
	for (uint32_t n = 0; e.moved != e.prod && n < h->depth; n++) {
		/* A held frame that was already passed goes first. */
		if (e.hd.state == HELD_DUE &&
		    !deliver_held(e.r, e.mask, &e.fill, e.e2e, &e.hd, &e.acc)) {
			stalled = true;
			break;
		}
		if (!move_frame(&e, e.moved & e.mask)) {
			stalled = true;
			break;
		}
		e.moved++;
		e.acc.moved = true;
	}
	/* Nothing passed a frame held by an earlier doorbell: flush it now. */
	if (!stalled && e.hd.state != HELD_NONE &&
	    (e.hd.state == HELD_DUE || (doorbell && e.hd.run != e.run))) {
		e.hd.state = HELD_DUE;
		if (!deliver_held(e.r, e.mask, &e.fill, e.e2e, &e.hd, &e.acc))
			stalled = true;
	}
	engine_end(&e, h, d, stalled);
}

/*
 * Run the engine for direction d unless someone else is running it; in that
 * case leave `need` set and the holder runs it again for us.
 */
void sim_engine_run(struct sim_chan_h *h, uint32_t d, struct sim_snap *snap,
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
