/* SPDX-License-Identifier: MIT */
/*
 * Software cable: contexts, channels, wait/kick, and the u4l_ops table.
 *
 * Control plane (attach/detach, channel create/free) runs under the
 * segment's robust process-shared mutex; the data path (sim_ring.c) takes
 * no lock shared with the peer except the E2E pump try-lock.
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

static bool pid_alive(int32_t pid)
{
	if (pid <= 0)
		return false;
	if (pid == getpid())
		return true;
	return !(kill(pid, 0) < 0 && errno == ESRCH);
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
		if (pid_alive(s->ctx[i].pid))
			continue;
		sim_ctx_free_locked(dev->fd, s, i);
		n++;
	}
	return n;
}

static void dev_unmap(struct sim_dev *dev)
{
	munmap(dev->seg, dev->map_len);
	close(dev->fd);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

static void handle_free(struct sim_chan_h *h)
{
	free(h->scratch);
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
		if (x->state == SIM_CTX_ALIVE && x->pid == getpid() &&
		    x->gen == dev->gen)
			sim_ctx_free_locked(dev->fd, s, dev->id);
		sim_unlock(s);
	}
	for (uint32_t i = 0; i < U4L_MAX_CTX; i++)
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
	return pid_alive(
	    __atomic_load_n(&s->ctx[remote].pid, __ATOMIC_RELAXED));
}

/* A process-local handle on channel slot idx, or NULL (ENOMEM / gone). */
static struct sim_chan_h *handle_new(struct sim_dev *dev, uint32_t idx)
{
	struct sim_seg *s = dev->seg;
	struct sim_chan_ent *e = &s->chans[idx];
	uint32_t gs = __atomic_load_n(&e->gs, __ATOMIC_ACQUIRE);
	uint32_t a = e->ctx[0], b = e->ctx[1], me = dev->id;

	if (!(gs & SIM_CHAN_ACTIVE) || a >= U4L_MAX_CTX || b >= U4L_MAX_CTX ||
	    (a != me && b != me))
		return NULL;
	struct sim_chan_h *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->scratch = malloc(U4L_FRAME_MAX);
	if (!h->scratch) {
		free(h);
		return NULL;
	}
	h->dev = dev;
	h->idx = idx;
	h->ent = e;
	h->gs = gs;
	h->c = (struct sim_chan *)((char *)s + s->chan_off +
				   (uint64_t)idx * s->chan_stride);
	h->depth = s->ring_depth;
	h->mask = s->ring_depth - 1;
	h->loop = e->loop;
	h->self = a == b;
	h->txd = a == me ? 0 : 1;
	h->rxd = h->self ? 0 : h->txd ^ 1;
	h->remote = a == me ? b : a;
	h->rcv_ctx[0] = b;
	h->rcv_ctx[1] = a;
	h->snd_end[0] = e->end[0] & 1;
	h->snd_end[1] = e->end[1] & 1;
	h->rcv_end[0] = e->end[1] & 1;
	h->rcv_end[1] = e->end[0] & 1;
	h->tx_snap.seq = h->rx_snap.seq = 1; /* odd: never a valid seq */
	sim_ring_layout(s, idx, 0, &h->ring[0]);
	sim_ring_layout(s, idx, 1, &h->ring[1]);
#ifdef MADV_POPULATE_WRITE
	/*
	 * The rings were punched out when the slot was taken: fault them in
	 * now rather than one page per frame during the first ring pass
	 * (~20 us a round trip for the first ~200 messages otherwise).
	 * Contents are untouched; failure only costs those faults.
	 */
	madvise((char *)h->c + SIM_PAGE, s->chan_stride - SIM_PAGE,
		MADV_POPULATE_WRITE);
#endif
	return h;
}

static void handle_retire(struct sim_dev *dev, uint32_t remote)
{
	struct sim_chan_h *h = dev->handles[remote];

	__atomic_store_n(&dev->handles[remote], NULL, __ATOMIC_RELEASE);
	/* Other threads may still hold it: freed at close. */
	h->next_dead = dev->graveyard;
	dev->graveyard = h;
}

static int find_chan_locked(struct sim_seg *s, uint32_t x, uint32_t y)
{
	for (uint32_t i = 0; i < s->nslots; i++) {
		struct sim_chan_ent *e = &s->chans[i];
		if (!(__atomic_load_n(&e->gs, __ATOMIC_RELAXED) &
		      SIM_CHAN_ACTIVE) || e->orphan)
			continue;
		if ((e->ctx[0] == x && e->ctx[1] == y) ||
		    (e->ctx[0] == y && e->ctx[1] == x))
			return (int)i;
	}
	return -1;
}

/* Create channel (me -> remote) (segment lock held). */
static int chan_create_locked(struct sim_dev *dev, uint32_t remote)
{
	struct sim_seg *s = dev->seg;
	uint32_t me = dev->id;
	bool loop = s->ctx[remote].end == dev->base.end;

	if (loop) {
		if (s->loop_used >= SIM_LOOP_CHANNELS)
			return -ENOSPC;
	} else if (s->cross_used >= s->max_channels) {
		if (!reclaim_dead_locked(dev) ||
		    s->cross_used >= s->max_channels)
			return -ENOSPC;
		if (s->ctx[remote].state != SIM_CTX_ALIVE)
			return -EHOSTUNREACH;
	}
	int idx = -1;
	for (uint32_t k = 0; k < s->nslots; k++) {
		/* round robin: a just-freed slot is reused last */
		uint32_t i = (s->chan_cursor + k) % s->nslots;
		if (!(__atomic_load_n(&s->chans[i].gs, __ATOMIC_RELAXED) &
		      SIM_CHAN_ACTIVE)) {
			idx = (int)i;
			break;
		}
	}
	if (idx < 0)
		return -ENOSPC;
	s->chan_cursor = (uint32_t)(idx + 1) % s->nslots;

	struct sim_chan_ent *e = &s->chans[idx];
	uint64_t off = s->chan_off + (uint64_t)idx * s->chan_stride;
	sim_punch(dev->fd, s, off + SIM_PAGE, s->chan_stride - SIM_PAGE);
	sim_chan_init_rings(s, (uint32_t)idx);
	e->ctx[0] = (uint8_t)me;
	e->ctx[1] = (uint8_t)remote;
	e->end[0] = (uint8_t)dev->base.end;
	e->end[1] = (uint8_t)(s->ctx[remote].end & 1);
	e->loop = loop;
	e->orphan = 0;
	__atomic_store_n(&e->accept_pending, remote != me, __ATOMIC_RELAXED);
	uint32_t gs = __atomic_load_n(&e->gs, __ATOMIC_RELAXED);
	__atomic_store_n(&e->gs, ((gs | SIM_CHAN_ACTIVE) + 2) | SIM_CHAN_ACTIVE,
			 __ATOMIC_RELEASE);
	if (loop)
		s->loop_used++;
	else
		s->cross_used++;
	if (remote != me) {
		__atomic_add_fetch(&s->ctx[remote].accept_gen, 1,
				   __ATOMIC_RELEASE);
		sim_wake_ctx(s, remote);
	}
	return idx;
}

static int sim_chan_get(struct u4l_dev *d, uint32_t remote,
			struct u4l_chan **out)
{
	struct sim_dev *dev = to_dev(d);
	struct sim_seg *s = dev->seg;
	struct sim_chan_h *h;
	int rc, idx;

	if (remote >= U4L_MAX_CTX || !out)
		return -EHOSTUNREACH;
	pthread_mutex_lock(&dev->lock);
	h = dev->handles[remote];
	if (h && !sim_chan_tx_dead(h)) {
		*out = (struct u4l_chan *)h;
		pthread_mutex_unlock(&dev->lock);
		return 0;
	}
	if (h)
		handle_retire(dev, remote);
	rc = sim_lock(s);
	if (rc)
		goto out;
	if (s->ctx[remote].state != SIM_CTX_ALIVE ||
	    !pid_alive(s->ctx[remote].pid)) {
		rc = -EHOSTUNREACH;
		goto out_seg;
	}
	idx = find_chan_locked(s, dev->id, remote);
	if (idx < 0) {
		idx = chan_create_locked(dev, remote);
		if (idx < 0) {
			rc = idx;
			goto out_seg;
		}
	} else if (s->chans[idx].ctx[1] == dev->id) {
		/* We found it ourselves: chan_accept() will not report it. */
		__atomic_store_n(&s->chans[idx].accept_pending, 0,
				 __ATOMIC_RELAXED);
	}
	h = handle_new(dev, (uint32_t)idx);
	if (!h) {
		rc = -ENOMEM;
		goto out_seg;
	}
	__atomic_store_n(&dev->handles[remote], h, __ATOMIC_RELEASE);
	*out = (struct u4l_chan *)h;
	rc = 0;
out_seg:
	sim_unlock(s);
out:
	pthread_mutex_unlock(&dev->lock);
	return rc;
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
	for (uint32_t i = 0; i < s->nslots && !h; i++) {
		struct sim_chan_ent *e = &s->chans[i];
		uint32_t one = 1;
		if (!(__atomic_load_n(&e->gs, __ATOMIC_ACQUIRE) &
		      SIM_CHAN_ACTIVE) ||
		    e->ctx[1] != me || e->ctx[0] == me ||
		    e->ctx[0] >= U4L_MAX_CTX)
			continue;
		if (!__atomic_compare_exchange_n(&e->accept_pending, &one, 0,
						 false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		uint32_t remote = e->ctx[0];
		struct sim_chan_h *old = dev->handles[remote];
		if (old && !sim_chan_dead(old) && old->idx == i)
			continue; /* already known through chan_get() */
		if (old)
			handle_retire(dev, remote);
		h = handle_new(dev, i);
		if (!h) { /* ENOMEM or freed meanwhile: report it later */
			__atomic_store_n(&e->accept_pending, 1,
					 __ATOMIC_RELAXED);
			break;
		}
		__atomic_store_n(&dev->handles[remote], h, __ATOMIC_RELEASE);
	}
	/* Seen all of generation g unless another channel is still pending. */
	bool more = false;
	for (uint32_t i = 0; h && i < s->nslots && !more; i++) {
		struct sim_chan_ent *e = &s->chans[i];
		more = (__atomic_load_n(&e->gs, __ATOMIC_ACQUIRE) &
			SIM_CHAN_ACTIVE) &&
		       e->ctx[1] == me && e->ctx[0] != me &&
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

/*
 * The engine's progress thread should call prctl(PR_SET_TIMERSLACK, 1) so
 * that short futex timeouts (frame arrival times) are not rounded up by the
 * default 50 us timer slack.
 */
static void sim_wait(struct u4l_dev *d, uint64_t deadline_ns)
{
	struct sim_dev *dev = to_dev(d);
	struct sim_seg *s = dev->seg;
	struct sim_ctx_slot *x = &s->ctx[dev->id];
	uint64_t now = u4l_now_ns(), next = deadline_ns;
	bool ready = false;

	if (__atomic_exchange_n(&dev->kicked, 0, __ATOMIC_ACQ_REL) ||
	    now >= deadline_ns)
		return;
	__atomic_add_fetch(&x->sleepers, 1, __ATOMIC_SEQ_CST);
	uint32_t w = __atomic_load_n(&x->wake, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&dev->kicked, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&x->accept_gen, __ATOMIC_ACQUIRE) !=
		__atomic_load_n(&dev->accept_seen, __ATOMIC_RELAXED))
		ready = true;
	for (uint32_t i = 0; i < U4L_MAX_CTX && !ready; i++) {
		struct sim_chan_h *h =
		    __atomic_load_n(&dev->handles[i], __ATOMIC_ACQUIRE);
		if (h && sim_chan_ready(h, now, &next))
			ready = true;
	}
	if (!ready && next > now) {
		uint64_t rel = next - now;
		struct timespec ts = {.tv_sec = (time_t)(rel / 1000000000ull),
				      .tv_nsec = (long)(rel % 1000000000ull)};
		syscall(SYS_futex, &x->wake, FUTEX_WAIT, w, &ts, NULL, 0);
	}
	__atomic_sub_fetch(&x->sleepers, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&dev->kicked, 0, __ATOMIC_RELEASE);
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

static const struct u4l_ops sim_ops = {
    .name = "sim",
    .close = sim_close,
    .ctx_id = sim_ctx_id,
    .ctx_alive = sim_ctx_alive,
    .chan_get = sim_chan_get,
    .chan_accept = sim_chan_accept,
    .chan_remote = sim_chan_remote,
    .chan_dead = sim_chan_gone,
    .tx_slot = sim_tx_slot,
    .tx_post = sim_tx_post,
    .tx_doorbell = sim_tx_doorbell,
    .tx_space = sim_tx_space,
    .rx_peek = sim_rx_peek,
    .rx_release = sim_rx_release,
    .wait = sim_wait,
    .kick = sim_kick,
    .counters = sim_counters,
    .wire_rate = sim_wire_rate,
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
	rc = sim_map(shm_name, true, &dev->fd, &dev->seg, &dev->map_len);
	if (rc) {
		free(dev);
		return rc;
	}
	pthread_mutex_init(&dev->lock, NULL);
	s = dev->seg;
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
			if (s->ctx[i].state == SIM_CTX_FREE) {
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
	sim_ctx_chans_free_locked(dev->fd, s, dev->id);
	x->end = end;
	x->pid = getpid();
	x->gen++;
	x->sleepers = 0;
	dev->gen = x->gen;
	dev->accept_seen = __atomic_load_n(&x->accept_gen, __ATOMIC_RELAXED);
	__atomic_store_n(&x->state, SIM_CTX_ALIVE, __ATOMIC_RELEASE);
	sim_unlock(s);
	*out = &dev->base;
	return 0;
}
