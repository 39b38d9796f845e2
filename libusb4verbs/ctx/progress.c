// SPDX-License-Identifier: MIT
/*
 * Progress: take frames off every channel, dispatch them to their QPs, send
 * coalesced ACKs, push QPs that waited for TX space, run retransmit timers.
 *
 * A passive target (perftest's ib_write_bw server never calls verbs) is
 * served by a per-context thread that sleeps on the link and also wakes on a
 * timer, so that frames completed without a wakeup are still found. While the
 * application itself polls, the thread only naps: it neither competes for
 * frames nor makes senders pay for wake-ups.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <time.h>

#include "ctx/progress.h"
#include "engine_int.h"
#include "wire/opcode.h"

/*
 * An application that polled a CQ in the last 0.5 ms, and waits
 * for much, moves the context itself: the thread naps until that poll is
 * 0.5 ms old (ended early when a CQ is armed). Shorter naps cost a third
 * of unthrottled bandwidth on a 2-core machine. One that waits for a
 * single send or nothing is watched every WATCH_NS instead.
 */
#define APP_POLL_RECENT_NS 500000ull
#define WATCH_NS 30000ull	      /* does an idle application poll again? */
#define THREAD_POLL_NS 2000000ull     /* timer poll for stranded frames */
#define TIMER_SCAN_NS 50000ull	      /* how often retransmit timers run */

void u4v_progress_recv_posted(struct u4v_ctx *ctx)
{
	/* frames wait for a receive WQE: deliver them now */
	if (atomic_load_explicit(&ctx->held_qps, memory_order_relaxed))
		u4v_ctx_progress(ctx);
}

void u4v_progress_app_poll(struct u4v_ctx *ctx)
{
	atomic_store_explicit(&ctx->app_poll_ns, u4v_now(),
			      memory_order_relaxed);
}

static struct u4v_qp *lookup_qp(struct u4v_ctx *ctx, uint32_t qpn)
{
	uint32_t idx = qpn & U4V_QPN_IDX_MASK;

	if (u4v_qpn_ctx(qpn) != ctx->ctx_id || idx >= ctx->nqps_slots)
		return NULL;
	return ctx->qps[idx];
}

struct rx_batch {
	struct u4v_qp *touched[U4V_RX_BUDGET];
	uint32_t ntouched;
};

/* A UC/UD frame that waits for a receive WQE is copied aside (qp/hold.c). */
static void rx_frame(struct u4v_ctx *ctx, struct u4v_peer *peer,
		     const struct u4l_rx_frame *f, struct rx_batch *batch)
{
	bool consumed = true, held_before;
	const struct u4w_opinfo *info;
	struct u4w_hdr h;
	struct u4v_qp *qp;
	const uint8_t *payload;

	if (f->flags & U4L_RX_CRC_ERR) {
		__atomic_fetch_add(&ctx->cnt->crc_discards, 1,
				   __ATOMIC_RELAXED);
		return;
	}
	if (u4w_decode(f->buf, f->len, &h)) {
		__atomic_fetch_add(&ctx->cnt->bad_frames, 1, __ATOMIC_RELAXED);
		return;
	}
	qp = lookup_qp(ctx, h.dst_qpn);
	info = u4w_opinfo(h.opcode);
	if (!qp || U4W_TRANSPORT(h.opcode) != u4w_qpt_transport(qp->type)) {
		__atomic_fetch_add(&ctx->cnt->bad_frames, 1, __ATOMIC_RELAXED);
		return;
	}
	payload = (const uint8_t *)f->buf + u4w_hdr_len(h.opcode);
	pthread_mutex_lock(&qp->lock);
	held_before = qp->held_count;
	if (held_before && (qp->type == IBV_QPT_UD ||
			    (qp->type == IBV_QPT_UC && qp->peer == peer))) {
		consumed = false; /* behind frames already waiting: keep order */
	} else if (qp->type == IBV_QPT_UD) {
		consumed = u4v_ud_frame(qp, &h, payload, true);
	} else if (qp->peer != peer || h.src_qpn != qp->dest_qpn) {
		/* not from the QP this one is connected to */
		__atomic_fetch_add(&ctx->cnt->bad_frames, 1, __ATOMIC_RELAXED);
	} else if (info->flags & U4W_OPF_REQUEST) {
		consumed = u4v_resp_frame(qp, peer, &h, payload, f->buf,
					  f->len, true);
		if (qp->ack_pending && !qp->in_batch &&
		    batch->ntouched < U4V_RX_BUDGET) {
			qp->in_batch = true;
			batch->touched[batch->ntouched++] = qp;
		}
	} else {
		u4v_comp_frame(qp, &h, payload);
	}
	if (!consumed && !u4v_hold_push(qp, f->buf, f->len))
		__atomic_fetch_add(&ctx->cnt->bad_frames, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&qp->lock);
}

static unsigned int rx_channel(struct u4v_ctx *ctx, struct u4v_peer *peer)
{
	struct u4l_chan *chan = __atomic_load_n(&peer->chan, __ATOMIC_ACQUIRE);
	struct rx_batch batch;
	struct u4l_rx_frame f;
	unsigned int n = 0;
	uint32_t i;

	batch.ntouched = 0;
	while (n < U4V_RX_BUDGET && ctx->ops->rx_peek(chan, &f) == 1) {
		rx_frame(ctx, peer, &f, &batch);
		if (f.flags & U4L_RX_NOWAKE)
			__atomic_fetch_add(&ctx->cnt->stranded_rescues, 1,
					   __ATOMIC_RELAXED);
		ctx->ops->rx_release(chan);
		n++;
	}
	/* one ACK per QP per batch: coalescing */
	for (i = 0; i < batch.ntouched; i++) {
		struct u4v_qp *qp = batch.touched[i];

		pthread_mutex_lock(&qp->lock);
		qp->in_batch = false;
		u4v_resp_flush_ack(qp);
		pthread_mutex_unlock(&qp->lock);
	}
	return n;
}

/*
 * Push the QPs that waited for TX space, one at a time: a QP taken off the
 * list may be queued again at once (by this pass or by a poster), so the
 * list is never walked outside the lock. Bounded by the length at entry.
 */
static void push_pending(struct u4v_peer *peer)
{
	struct u4v_qp *qp, *q;
	uint32_t n = 0;

	pthread_mutex_lock(&peer->tx_lock);
	for (q = peer->pending_head; q; q = q->pending_next)
		n++;
	pthread_mutex_unlock(&peer->tx_lock);
	while (n--) {
		pthread_mutex_lock(&peer->tx_lock);
		qp = peer->pending_head;
		if (qp) {
			peer->pending_head = qp->pending_next;
			if (!peer->pending_head)
				peer->pending_tail = NULL;
			qp->on_pending = false;
		}
		pthread_mutex_unlock(&peer->tx_lock);
		if (!qp)
			break;
		pthread_mutex_lock(&qp->lock);
		u4v_qp_tx(qp);
		pthread_mutex_unlock(&qp->lock);
	}
}

static void drain_held(struct u4v_ctx *ctx)
{
	uint32_t i;

	for (i = 0; i < ctx->nqps_slots; i++) {
		struct u4v_qp *qp = ctx->qps[i];

		if (!qp || !__atomic_load_n(&qp->held_count, __ATOMIC_RELAXED))
			continue;
		pthread_mutex_lock(&qp->lock);
		u4v_hold_drain(qp);
		pthread_mutex_unlock(&qp->lock);
	}
}

static void run_timers(struct u4v_ctx *ctx, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	uint32_t i;

	for (i = 0; i < ctx->nqps_slots; i++) {
		struct u4v_qp *qp = ctx->qps[i];

		if (!qp)
			continue;
		pthread_mutex_lock(&qp->lock);
		u4v_req_timer(qp, now);
		if (qp->retry_deadline && qp->retry_deadline < next)
			next = qp->retry_deadline;
		if (qp->probe_deadline && qp->probe_deadline < next)
			next = qp->probe_deadline;
		if (qp->rnr_deadline && qp->rnr_deadline < next)
			next = qp->rnr_deadline;
		pthread_mutex_unlock(&qp->lock);
	}
	ctx->next_timer_ns = next;
}

/* One pass; returns the number of frames taken. Caller holds progress_lock. */
static unsigned int progress_locked(struct u4v_ctx *ctx)
{
	struct u4l_chan *chan;
	unsigned int frames = 0;
	uint64_t now;
	uint32_t i;

	while ((chan = ctx->ops->chan_accept(ctx->link))) {
		uint32_t remote = ctx->ops->chan_remote(chan);

		/* a new channel also replaces one whose peer has left */
		if (remote < U4L_MAX_CTX)
			__atomic_store_n(&ctx->peers[remote].chan, chan,
					 __ATOMIC_RELEASE);
	}
	for (i = 0; i < U4L_MAX_CTX; i++) {
		struct u4v_peer *peer = &ctx->peers[i];

		if (!__atomic_load_n(&peer->chan, __ATOMIC_ACQUIRE))
			continue;
		frames += rx_channel(ctx, peer);
		if (peer->pending_head)
			push_pending(peer);
	}
	if (atomic_load_explicit(&ctx->held_qps, memory_order_relaxed))
		drain_held(ctx);
	now = u4v_now();
	if (now - ctx->last_timer_scan >= TIMER_SCAN_NS ||
	    now >= ctx->next_timer_ns) {
		ctx->last_timer_scan = now;
		run_timers(ctx, now);
	}
	return frames;
}

bool u4v_progress_try(struct u4v_ctx *ctx)
{
	if (pthread_mutex_trylock(&ctx->progress_lock))
		return false;
	progress_locked(ctx);
	pthread_mutex_unlock(&ctx->progress_lock);
	return true;
}

void u4v_ctx_progress(struct u4v_ctx *ctx)
{
	u4v_progress_try(ctx);
}

/*
 * How much the application waits for on its CQs: sends not yet complete,
 * plus 2 while receives are posted. Under progress_lock (QPs stay alive).
 */
static uint32_t app_cq_work(struct u4v_ctx *ctx)
{
	uint32_t i, n = 0;

	for (i = 0; i < ctx->nqps_slots; i++) {
		struct u4v_qp *qp = ctx->qps[i];

		if (!qp)
			continue;
		n += __atomic_load_n(&qp->sq_count, __ATOMIC_RELAXED);
		if (__atomic_load_n(&qp->rq.count, __ATOMIC_RELAXED) ||
		    (qp->srq &&
		     __atomic_load_n(&qp->srq->rq.count, __ATOMIC_RELAXED)))
			n += 2;
	}
	return n;
}

/* Sleep while the application polls; u4v_progress_app_blocks() ends it. */
static void nap(struct u4v_ctx *ctx, uint64_t ns, uint32_t seq)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull),
			       (long)(ns % 1000000000ull) };

	/* Dekker with end_nap(): napping, then nap_seq */
	atomic_store(&ctx->napping, 1);
	if (atomic_load(&ctx->app_poll_ns) && atomic_load(&ctx->nap_seq) == seq)
		syscall(SYS_futex, &ctx->nap_seq, FUTEX_WAIT_PRIVATE, seq, &ts,
			NULL, 0);
	atomic_store(&ctx->napping, 0);
}

/* End the thread's nap (or the one it is about to take): it looks again. */
static void end_nap(struct u4v_ctx *ctx)
{
	atomic_fetch_add(&ctx->nap_seq, 1);
	if (atomic_load(&ctx->napping))
		syscall(SYS_futex, &ctx->nap_seq, FUTEX_WAKE_PRIVATE, 1, NULL,
			NULL, 0);
}

void u4v_progress_app_blocks(struct u4v_ctx *ctx)
{
	/* the application is about to sleep on an event: take over now */
	atomic_store(&ctx->app_poll_ns, 0);
	end_nap(ctx);
}

static void *progress_thread(void *arg)
{
	struct u4v_ctx *ctx = arg;
	uint64_t last_frame = 0, watched_app = 0;

	/* timed waits should end on time, not 50 us late */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	while (!atomic_load(&ctx->stop)) {
		uint64_t now = u4v_now(), deadline;
		uint64_t app = atomic_load_explicit(&ctx->app_poll_ns,
						    memory_order_relaxed);
		uint32_t seq = atomic_load(&ctx->nap_seq);
		unsigned int frames = 0;

		/* app may be a little newer than now: compare without wrap */
		bool app_recent = app + APP_POLL_RECENT_NS > now;

		if (pthread_mutex_trylock(&ctx->progress_lock)) {
			/* someone moves the context right now: the application? */
			if (app_recent) {
				nap(ctx, app + APP_POLL_RECENT_NS - now, seq);
				continue;
			}
		} else {
			uint32_t work = app_recent ? app_cq_work(ctx) : 0;

			/*
			 * An application waiting for much (a bandwidth run,
			 * posted receives) moves the context with its polls:
			 * nap until that poll is old. One waiting for one send
			 * or nothing may next spin on memory for the peer's
			 * RDMA WRITE (ib_write_lat): look again soon, and
			 * take over once it has not come back for WATCH_NS.
			 */
			if (app_recent && (work || app != watched_app)) {
				pthread_mutex_unlock(&ctx->progress_lock);
				if (!work)
					watched_app = app;
				nap(ctx, work > 1 ? app + APP_POLL_RECENT_NS - now :
						    WATCH_NS, seq);
				continue;
			}
			frames = progress_locked(ctx);
			pthread_mutex_unlock(&ctx->progress_lock);
		}
		if (frames) {
			last_frame = now;
			continue; /* more may be waiting */
		}
		/*
		 * A burst is usually followed by more: polling a little longer
		 * spares the sender a wake-up system call per doorbell.
		 */
		if (now - last_frame < ctx->spin_ns) {
			__builtin_ia32_pause();
			continue;
		}
		deadline = now + THREAD_POLL_NS;
		if (ctx->next_timer_ns < deadline)
			deadline = ctx->next_timer_ns;
		ctx->ops->wait(ctx->link, deadline);
	}
	return NULL;
}

int u4v_progress_start(struct u4v_ctx *ctx)
{
	int ret = 0;

	pthread_mutex_lock(&ctx->obj_lock);
	if (!ctx->thread_running && !ctx->thread_disabled) {
		atomic_store(&ctx->stop, false);
		ret = pthread_create(&ctx->thread, NULL, progress_thread, ctx);
		if (!ret)
			ctx->thread_running = true;
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	return ret;
}

void u4v_progress_stop(struct u4v_ctx *ctx)
{
	if (!ctx->thread_running)
		return;
	atomic_store(&ctx->stop, true);
	ctx->ops->kick(ctx->link);
	pthread_join(ctx->thread, NULL);
	ctx->thread_running = false;
}
