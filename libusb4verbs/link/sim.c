/* SPDX-License-Identifier: MIT */
/*
 * Software cable: contexts, channels, wait/kick, and the u4l_ops table.
 *
 * Control plane (attach/detach, channel create/free) runs under the
 * segment's robust process-shared mutex; the data path (sim_ring.c,
 * sim_dma.c) takes no lock shared with the peer except the E2E pump
 * try-lock.
 *
 * Lock order: dev->lock, then the segment mutex.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sim_int.h"

static inline struct sim_dev *to_dev(struct u4l_dev *d)
{
	return (struct sim_dev *)d;
}

/* Free contexts whose process is gone (segment lock held). */
static unsigned reclaim_dead_locked(struct sim_dev *dev)
{
	struct sim_seg *s = dev->seg;
	unsigned n = 0;

	for (uint32_t i = 0; i < U4L_MAX_CTX; i++) {
		if (__atomic_load_n(&s->ctx[i].state, __ATOMIC_RELAXED) !=
		    SIM_CTX_ALIVE)
			continue;
		if (sim_pid_alive((uint32_t)SIM_ONCE(s->ctx[i].pid)))
			continue;
		sim_ctx_free_locked(&dev->m, i);
		n++;
	}
	return n;
}

static void dev_unmap(struct sim_dev *dev)
{
	sim_unmap(&dev->m);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

static void handle_free(struct sim_chan_h *h)
{
	free(h->scratch);
	free(h->rx_copy);
	free(h);
}

static void sim_close(struct u4l_dev *d)
{
	struct sim_dev *dev = to_dev(d);
	struct sim_seg *s = dev->seg;

	if (sim_lock(s) == 0) {
		struct sim_ctx_slot *x = &s->ctx[dev->id];
		/* Only our own incarnation: not after reclamation, not in a
		 * fork child. */
		if (SIM_ONCE(x->state) == SIM_CTX_ALIVE &&
		    SIM_ONCE(x->pid) == getpid() &&
		    SIM_ONCE(x->gen) == dev->gen)
			sim_ctx_free_locked(&dev->m, dev->id);
		sim_unlock(s);
	}
	for (uint32_t i = 0; i < SIM_HANDLES; i++)
		if (dev->handles[i])
			handle_free(dev->handles[i]);
	while (dev->graveyard) {
		struct sim_chan_h *h = dev->graveyard;
		dev->graveyard = h->next_dead;
		handle_free(h);
	}
	dev_unmap(dev);
}

static uint32_t sim_ctx_id(struct u4l_dev *d)
{
	return to_dev(d)->id;
}

/* Alive = attached and its process exists (one kill(0) syscall). */
static bool sim_ctx_alive(struct u4l_dev *d, uint32_t remote)
{
	struct sim_seg *s = to_dev(d)->seg;

	if (remote >= U4L_MAX_CTX)
		return false;
	if (__atomic_load_n(&s->ctx[remote].state, __ATOMIC_ACQUIRE) !=
	    SIM_CTX_ALIVE)
		return false;
	return sim_pid_alive((uint32_t)SIM_ONCE(s->ctx[remote].pid));
}

/* A process-local handle on channel slot idx, or NULL (ENOMEM / gone). */
static struct sim_chan_h *handle_new(struct sim_dev *dev, uint32_t idx)
{
	const struct sim_geom *g = &dev->m.g;
	struct sim_seg *s = dev->seg;
	struct sim_chan_ent *e = &s->chans[idx];
	uint32_t gs = __atomic_load_n(&e->gs, __ATOMIC_ACQUIRE);
	uint32_t a = SIM_ONCE(e->ctx[0]), b = SIM_ONCE(e->ctx[1]);
	uint32_t end0 = SIM_ONCE(e->end[0]) & 1, end1 = SIM_ONCE(e->end[1]) & 1;
	uint32_t lane = SIM_ONCE(e->lane), me = dev->id;

	if (!(gs & SIM_CHAN_ACTIVE) || a >= U4L_MAX_CTX || b >= U4L_MAX_CTX ||
	    (a != me && b != me) || lane >= U4L_MAX_LANES)
		return NULL;
	struct sim_chan_h *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->scratch = malloc(U4L_FRAME_MAX);
	h->rx_copy = aligned_alloc(SIM_CL, U4L_FRAME_MAX);
	if (!h->scratch || !h->rx_copy) {
		handle_free(h);
		return NULL;
	}
	h->dev = dev;
	h->idx = idx;
	h->ent = e;
	h->gs = gs;
	h->c = (struct sim_chan *)((char *)s + sim_slot_off(g, idx));
	h->depth = g->depth;
	h->mask = g->depth - 1;
	h->tx_bound = g->depth;
	h->loop = SIM_ONCE(e->loop);
	h->self = a == b;
	h->txd = a == me ? 0 : 1;
	h->rxd = h->self ? 0 : h->txd ^ 1;
	h->remote = a == me ? b : a;
	h->lane = lane;
	h->rcv_ctx[0] = b;
	h->rcv_ctx[1] = a;
	h->snd_end[0] = end0;
	h->snd_end[1] = end1;
	h->rcv_end[0] = end1;
	h->rcv_end[1] = end0;
	h->tx_snap.seq = h->rx_snap.seq = 1; /* odd: never a valid seq */
	sim_ring_layout(&dev->m, idx, 0, &h->ring[0]);
	sim_ring_layout(&dev->m, idx, 1, &h->ring[1]);
#ifdef MADV_POPULATE_WRITE
	/*
	 * The rings were punched out when the slot was taken: fault them in
	 * now rather than one page per frame during the first ring pass
	 * (~20 us a round trip for the first ~200 messages otherwise).
	 * Contents are untouched; failure only costs those faults.
	 */
	madvise((char *)h->c + SIM_PAGE, g->chan_stride - SIM_PAGE,
		MADV_POPULATE_WRITE);
#endif
	return h;
}

static void handle_retire(struct sim_dev *dev, uint32_t ix)
{
	struct sim_chan_h *h = dev->handles[ix];

	__atomic_store_n(&dev->handles[ix], NULL, __ATOMIC_RELEASE);
	/* Other threads may still hold it: freed at close. */
	h->next_dead = dev->graveyard;
	dev->graveyard = h;
}

static int find_chan_locked(struct sim_dev *dev, uint32_t x, uint32_t y,
			    uint32_t lane)
{
	struct sim_seg *s = dev->seg;

	for (uint32_t i = 0; i < dev->m.g.nslots; i++) {
		struct sim_chan_ent *e = &s->chans[i];
		uint32_t a = SIM_ONCE(e->ctx[0]), b = SIM_ONCE(e->ctx[1]);

		if (!(SIM_ONCE(e->gs) & SIM_CHAN_ACTIVE) ||
		    SIM_ONCE(e->orphan) || SIM_ONCE(e->lane) != lane)
			continue;
		if ((a == x && b == y) || (a == y && b == x))
			return (int)i;
	}
	return -1;
}

/* Create lane `lane` of the channels me -> remote (segment lock held). */
static int chan_create_locked(struct sim_dev *dev, uint32_t remote,
			      uint32_t lane)
{
	const struct sim_geom *g = &dev->m.g;
	struct sim_seg *s = dev->seg;
	uint32_t me = dev->id;
	uint32_t remote_end = SIM_ONCE(s->ctx[remote].end) & 1;
	bool loop = remote_end == dev->base.end;

	if (loop && lane)
		return -EOPNOTSUPP; /* no wire model: another lane is no faster */
	if (loop) {
		if (SIM_ONCE(s->loop_used) >= SIM_LOOP_CHANNELS)
			return -ENOSPC;
	} else if (SIM_ONCE(s->cross_used) >= g->max_channels) {
		if (!reclaim_dead_locked(dev) ||
		    SIM_ONCE(s->cross_used) >= g->max_channels)
			return -ENOSPC;
		if (SIM_ONCE(s->ctx[remote].state) != SIM_CTX_ALIVE)
			return -EHOSTUNREACH;
	}
	int idx = -1;
	uint32_t cursor = SIM_ONCE(s->chan_cursor);
	for (uint32_t k = 0; k < g->nslots; k++) {
		/* round robin: a just-freed slot is reused last */
		uint32_t i = (cursor + k) % g->nslots;
		if (!(SIM_ONCE(s->chans[i].gs) & SIM_CHAN_ACTIVE)) {
			idx = (int)i;
			break;
		}
	}
	if (idx < 0)
		return -ENOSPC;
	s->chan_cursor = (uint32_t)(idx + 1) % g->nslots;

	struct sim_chan_ent *e = &s->chans[idx];
	sim_punch(&dev->m, sim_slot_off(g, (uint32_t)idx) + SIM_PAGE,
		  g->chan_stride - SIM_PAGE);
	sim_chan_init_rings(&dev->m, (uint32_t)idx);
	e->ctx[0] = (uint8_t)me;
	e->ctx[1] = (uint8_t)remote;
	e->end[0] = (uint8_t)dev->base.end;
	e->end[1] = (uint8_t)remote_end;
	e->loop = loop;
	e->lane = (uint8_t)lane;
	e->orphan = 0;
	__atomic_store_n(&e->accept_pending, remote != me, __ATOMIC_RELAXED);
	uint32_t gs = SIM_ONCE(e->gs);
	__atomic_store_n(&e->gs, ((gs | SIM_CHAN_ACTIVE) + 2) | SIM_CHAN_ACTIVE,
			 __ATOMIC_RELEASE);
	if (loop)
		__atomic_add_fetch(&s->loop_used, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&s->cross_used, 1, __ATOMIC_RELAXED);
	if (remote != me) {
		__atomic_add_fetch(&s->ctx[remote].accept_gen, 1,
				   __ATOMIC_RELEASE);
		sim_wake_ctx(s, remote);
	}
	return idx;
}

static int chan_lookup(struct sim_dev *dev, uint32_t remote, uint32_t lane,
		       struct u4l_chan **out)
{
	struct sim_seg *s = dev->seg;
	uint32_t ix = sim_handle_ix(remote, lane);
	struct sim_chan_h *h;
	int rc, idx;

	pthread_mutex_lock(&dev->lock);
	h = dev->handles[ix];
	if (h && !sim_chan_tx_dead(h)) {
		*out = (struct u4l_chan *)h;
		pthread_mutex_unlock(&dev->lock);
		return 0;
	}
	if (h)
		handle_retire(dev, ix);
	rc = sim_lock(s);
	if (rc)
		goto out;
	if (SIM_ONCE(s->ctx[remote].state) != SIM_CTX_ALIVE ||
	    !sim_pid_alive((uint32_t)SIM_ONCE(s->ctx[remote].pid))) {
		rc = -EHOSTUNREACH;
		goto out_seg;
	}
	idx = find_chan_locked(dev, dev->id, remote, lane);
	if (idx < 0) {
		idx = chan_create_locked(dev, remote, lane);
		if (idx < 0) {
			rc = idx;
			goto out_seg;
		}
	} else if (SIM_ONCE(s->chans[idx].ctx[1]) == dev->id) {
		/* We found it ourselves: chan_accept() will not report it. */
		__atomic_store_n(&s->chans[idx].accept_pending, 0,
				 __ATOMIC_RELAXED);
	}
	h = handle_new(dev, (uint32_t)idx);
	if (!h) {
		rc = -ENOMEM;
		goto out_seg;
	}
	__atomic_store_n(&dev->handles[ix], h, __ATOMIC_RELEASE);
	*out = (struct u4l_chan *)h;
	rc = 0;
out_seg:
	sim_unlock(s);
out:
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

static int sim_chan_get(struct u4l_dev *d, uint32_t remote,
			struct u4l_chan **out)
{
	if (remote >= U4L_MAX_CTX || !out)
		return -EHOSTUNREACH;
	return chan_lookup(to_dev(d), remote, 0, out);
}

static int sim_chan_get_lane(struct u4l_dev *d, uint32_t remote,
			     uint32_t lane, struct u4l_chan **out)
{
	if (remote >= U4L_MAX_CTX || !out)
		return -EHOSTUNREACH;
	if (!lane || lane >= U4L_MAX_LANES)
		return -EINVAL;
	return chan_lookup(to_dev(d), remote, lane, out);
}

static struct u4l_chan *sim_chan_accept(struct u4l_dev *d)
{
	struct sim_dev *dev = to_dev(d);
	struct sim_seg *s = dev->seg;
	struct sim_chan_h *h = NULL;
	uint32_t me = dev->id;
	uint32_t g = __atomic_load_n(&s->ctx[me].accept_gen, __ATOMIC_ACQUIRE);

	if (g == __atomic_load_n(&dev->accept_seen, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < dev->m.g.nslots && !h; i++) {
		struct sim_chan_ent *e = &s->chans[i];
		uint32_t one = 1;
		uint32_t remote = SIM_ONCE(e->ctx[0]), lane = SIM_ONCE(e->lane);
		if (!(__atomic_load_n(&e->gs, __ATOMIC_ACQUIRE) &
		      SIM_CHAN_ACTIVE) ||
		    SIM_ONCE(e->ctx[1]) != me || remote == me ||
		    remote >= U4L_MAX_CTX || lane >= U4L_MAX_LANES)
			continue;
		if (!__atomic_compare_exchange_n(&e->accept_pending, &one, 0,
						 false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		uint32_t ix = sim_handle_ix(remote, lane);
		struct sim_chan_h *old = dev->handles[ix];
		if (old && !sim_chan_dead(old) && old->idx == i)
			continue; /* already known through chan_get() */
		h = handle_new(dev, i);
		if (!h || h->remote != remote || h->lane != lane) {
			/* ENOMEM, freed or rewritten since: report it later */
			if (h)
				handle_free(h);
			h = NULL;
			__atomic_store_n(&e->accept_pending, 1,
					 __ATOMIC_RELAXED);
			break;
		}
		if (old)
			handle_retire(dev, ix);
		__atomic_store_n(&dev->handles[ix], h, __ATOMIC_RELEASE);
	}
	/* Seen all of generation g unless another channel is still pending. */
	bool more = false;
	for (uint32_t i = 0; h && i < dev->m.g.nslots && !more; i++) {
		struct sim_chan_ent *e = &s->chans[i];
		more = (__atomic_load_n(&e->gs, __ATOMIC_ACQUIRE) &
			SIM_CHAN_ACTIVE) &&
		       SIM_ONCE(e->ctx[1]) == me && SIM_ONCE(e->ctx[0]) != me &&
		       __atomic_load_n(&e->accept_pending, __ATOMIC_RELAXED);
	}
	if (!more)
		__atomic_store_n(&dev->accept_seen, g, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&dev->lock);
	return (struct u4l_chan *)h;
}

static uint32_t sim_chan_remote(struct u4l_chan *chan)
{
	return ((struct sim_chan_h *)chan)->remote;
}

static uint32_t sim_chan_lane(struct u4l_chan *chan)
{
	return ((struct sim_chan_h *)chan)->lane;
}

/*
 * The engine's progress thread should call prctl(PR_SET_TIMERSLACK, 1) so
 * that short futex timeouts (frame arrival times) are not rounded up by the
 * default 50 us timer slack.
 */
static void sim_wait(struct u4l_dev *d, uint64_t deadline_ns, uint32_t flags)
{
	struct sim_dev *dev = to_dev(d);
	struct sim_seg *s = dev->seg;
	struct sim_ctx_slot *x = &s->ctx[dev->id];
	uint64_t now = u4l_now_ns(), next = deadline_ns;
	bool ready = false, ctrl = !(flags & U4L_WAIT_DATA);
	/* frames under the cover are the polling application's */
	bool rx = !(flags & U4L_WAIT_COVERED) ||
		  !sim_cover_until(&x->cover_all_until, now);

	if (__atomic_exchange_n(&dev->kicked, 0, __ATOMIC_ACQ_REL) ||
	    now >= deadline_ns)
		return;
	__atomic_add_fetch(&x->sleepers, 1, __ATOMIC_SEQ_CST);
	if (ctrl)
		__atomic_add_fetch(&x->ctrl_sleepers, 1, __ATOMIC_SEQ_CST);
	uint32_t w = __atomic_load_n(&x->wake, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&dev->kicked, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&x->accept_gen, __ATOMIC_ACQUIRE) !=
		__atomic_load_n(&dev->accept_seen, __ATOMIC_RELAXED))
		ready = true;
	for (uint32_t i = 0; i < SIM_HANDLES && !ready; i++) {
		struct sim_chan_h *h =
		    __atomic_load_n(&dev->handles[i], __ATOMIC_ACQUIRE);
		if (h && sim_chan_ready(h, now, &next, rx))
			ready = true;
	}

	if (!ready && next > now) {
		uint64_t rel = next - now;
		struct timespec ts = {.tv_sec = (time_t)(rel / 1000000000ull),
				      .tv_nsec = (long)(rel % 1000000000ull)};
		syscall(SYS_futex, &x->wake, FUTEX_WAIT, w, &ts, NULL, 0);
	}
	if (ctrl)
		__atomic_sub_fetch(&x->ctrl_sleepers, 1, __ATOMIC_SEQ_CST);
	__atomic_sub_fetch(&x->sleepers, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&dev->kicked, 0, __ATOMIC_RELEASE);
}

/*
 * Until `until` the application polls and takes what comes: no frame wakes
 * a sleeper (all), or no ACK / NAK. The cover lapses by itself; when one
 * ends early, a frame that came under it is seen here and woken for now
 * (Dekker with the senders' wake_rx(), sim_dma.c).
 */
static void sim_rx_cover(struct u4l_dev *d, uint64_t until, bool all)
{
	struct sim_dev *dev = to_dev(d);
	struct sim_seg *s = dev->seg;
	struct sim_ctx_slot *x = &s->ctx[dev->id];
	uint64_t now = u4l_now_ns(), next = UINT64_MAX;
	uint64_t was_all = __atomic_exchange_n(&x->cover_all_until,
					       all ? until : 0,
					       __ATOMIC_SEQ_CST);
	uint64_t was_ctrl = __atomic_exchange_n(&x->cover_ctrl_until, until,
						__ATOMIC_SEQ_CST);

	if ((all || was_all <= now) && (until || was_ctrl <= now))
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < SIM_HANDLES; i++) {
		struct sim_chan_h *h =
		    __atomic_load_n(&dev->handles[i], __ATOMIC_ACQUIRE);

		if (h &&
		    (sim_chan_ready(h, now, &next, true) ||
		     next != UINT64_MAX)) {
			sim_wake_ctx(s, dev->id);
			return;
		}
	}
}

static void sim_kick(struct u4l_dev *d)
{
	struct sim_dev *dev = to_dev(d);
	struct sim_ctx_slot *x = &dev->seg->ctx[dev->id];

	__atomic_store_n(&dev->kicked, 1, __ATOMIC_SEQ_CST);
	/* Always bump: a sleeper that read `wake` before this must not block.
	 */
	__atomic_add_fetch(&x->wake, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&x->sleepers, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &x->wake, FUTEX_WAKE, INT32_MAX, NULL, NULL,
			0);
}

static struct u4l_counters *sim_counters(struct u4l_dev *d)
{
	return &to_dev(d)->seg->counters[d->end & 1];
}

static uint64_t sim_wire_rate(struct u4l_dev *d)
{
	return __atomic_load_n(&to_dev(d)->seg->cfg.rate_bps,
			       __ATOMIC_RELAXED) /
	       8;
}

static uint64_t sim_ring_rate(struct u4l_dev *d)
{
	return __atomic_load_n(&to_dev(d)->seg->cfg.ring_rate_bps,
			       __ATOMIC_RELAXED) /
	       8;
}

static const struct u4l_ops sim_ops = {
    .name = "sim",
    .close = sim_close,
    .ctx_id = sim_ctx_id,
    .ctx_alive = sim_ctx_alive,
    .chan_get = sim_chan_get,
    .chan_accept = sim_chan_accept,
    .chan_remote = sim_chan_remote,
    .chan_get_lane = sim_chan_get_lane,
    .chan_lane = sim_chan_lane,
    .chan_dead = sim_chan_gone,
    .tx_slot = sim_tx_slot,
    .tx_post = sim_tx_post,
    .tx_doorbell = sim_tx_doorbell,
    .tx_space = sim_tx_space,
    .tx_bound = sim_tx_bound,
    .rx_peek = sim_rx_peek,
    .rx_release = sim_rx_release,
    .wire_due = sim_wire_due,
    .wait = sim_wait,
    .kick = sim_kick,
    .rx_cover = sim_rx_cover,
    .counters = sim_counters,
    .wire_rate = sim_wire_rate,
    .ring_rate = sim_ring_rate,
};

int u4l_sim_open(const char *shm_name, uint32_t end, struct u4l_dev **out)
{
	struct sim_dev *dev;
	struct sim_seg *s;
	int rc, slot = -1;

	if (end > 1 || !out)
		return -EINVAL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	rc = sim_map(shm_name, true, &dev->m);
	if (rc) {
		free(dev);
		return rc;
	}
	pthread_mutex_init(&dev->lock, NULL);
	s = dev->seg = dev->m.seg;
	dev->base.ops = &sim_ops;
	dev->base.end = end;

	rc = sim_lock(s);
	if (rc) {
		dev_unmap(dev);
		return rc;
	}
	for (int pass = 0; pass < 2 && slot < 0; pass++) {
		if (pass == 1 && !reclaim_dead_locked(dev))
			break;
		for (uint32_t i = 0; i < U4L_MAX_CTX; i++) {
			if (SIM_ONCE(s->ctx[i].state) == SIM_CTX_FREE) {
				slot = (int)i;
				break;
			}
		}
	}
	if (slot < 0) {
		sim_unlock(s);
		dev_unmap(dev);
		return -EMFILE;
	}
	struct sim_ctx_slot *x = &s->ctx[slot];
	dev->id = (uint32_t)slot;
	/* Leftovers of a corrupted segment must not alias the new context. */
	sim_ctx_chans_free_locked(&dev->m, dev->id);
	x->end = end;
	x->pid = getpid();
	x->sleepers = 0;
	x->ctrl_sleepers = 0;
	x->cover_all_until = 0;
	x->cover_ctrl_until = 0;
	dev->gen = __atomic_add_fetch(&x->gen, 1, __ATOMIC_RELAXED);
	dev->accept_seen = __atomic_load_n(&x->accept_gen, __ATOMIC_RELAXED);
	__atomic_store_n(&x->state, SIM_CTX_ALIVE, __ATOMIC_RELEASE);
	sim_unlock(s);
	*out = &dev->base;
	return 0;
}
