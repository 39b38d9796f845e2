// SPDX-License-Identifier: MIT
/*
 * Progress: take frames off every channel, dispatch them to their QPs, send
 * coalesced ACKs, push QPs that waited for TX space, run retransmit timers.
 * The per-context thread that makes passes when nobody calls in: thread.c.
 */
#include "ctx/progress.h"
#include "engine_int.h"
#include "wire/opcode.h"

/*
 * An ACK held for the application's answer (ack_may_wait) goes out with
 * that answer, or with the first pass after ACK_HOLD_NS: the application's
 * own while it polls, else the thread's (which sleeps no longer than
 * APP_POLL_RECENT_NS past the application's last poll).
 */
#define ACK_HOLD_NS 20000ull
#define TIMER_SCAN_NS 50000ull	      /* how often retransmit timers run */
#define RX_DRAIN_ROUNDS 16u	      /* RX budgets taken before a timeout */

void u4v_progress_app_call(struct u4v_ctx *ctx)
{
	/* a load first: the line stays shared while the flag is set */
	if (!atomic_load_explicit(&ctx->app_called, memory_order_relaxed))
		atomic_store_explicit(&ctx->app_called, true,
				      memory_order_relaxed);
}

void u4v_progress_recv_posted(struct u4v_ctx *ctx)
{
	u4v_progress_app_call(ctx);
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

/*
 * May the ACKs a batch owes wait for the application's answer? An
 * application that polled lately and waits for one send or nothing plays
 * ping-pong (ib_write_lat): it answers the peer's RDMA WRITE with its own
 * once it has seen the data in memory. Our ACK sent behind that answer
 * (u4v_qp_tx) lets the peer find the answer placed by the time its own
 * poll finds the completion the ACK brings, so its application never
 * spins on memory for data nobody has placed (which takes a wake-up of its
 * progress thread on a busy core). Held ACK_HOLD_NS at most. Caller holds
 * progress_lock.
 */
static bool ack_may_wait(struct u4v_ctx *ctx, uint64_t now)
{
	uint64_t app =
	    atomic_load_explicit(&ctx->app_poll_ns, memory_order_relaxed);

	return app + APP_POLL_RECENT_NS > now && u4v_app_cq_work(ctx) <= 1;
}

struct rx_batch {
	struct u4v_qp *touched[U4V_RX_BUDGET];
	uint32_t ntouched;
	int hold; /* ack_may_wait(), -1: not asked yet */
	uint64_t now;
};

/*
 * Hold the ACK a request just executed owes (ack_may_wait)? Not inside a
 * message (the requester's window may wait for it), nor beside READ
 * responses. A QP modified or destroyed sends it first (qp.c). Before the rest
 * of the batch runs: an ACK frame in it lets the requester push, and that must
 * not send our ACK first (u4v_qp_tx).
 */
static void hold_ack(struct u4v_ctx *ctx, struct u4v_qp *qp,
		     struct rx_batch *batch)
{
	if (qp->ack_due || qp->type != IBV_QPT_RC || qp->njobs || qp->in_msg)
		return;
	if (batch->hold < 0) {
		batch->now = u4v_now();
		batch->hold = ack_may_wait(ctx, batch->now);
	}
	if (!batch->hold)
		return;
	qp->ack_due = batch->now + ACK_HOLD_NS;
	atomic_fetch_add_explicit(&ctx->acks_held, 1, memory_order_relaxed);
	if (!ctx->ack_hold_due || ctx->ack_hold_due > qp->ack_due)
		ctx->ack_hold_due = qp->ack_due;
}

/* Every frame's headers are in the private copy rx_peek gives (f->head). */
_Static_assert(U4W_HDR_MAX <= U4L_RX_HEAD, "headers beyond U4L_RX_HEAD");

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
		u4l_count(&ctx->cnt->crc_discards, 1);
		return;
	}
	/* the headers from f->head, which the peer cannot change under us */
	if (u4w_decode(f->head, f->len, &h)) {
		u4l_count(&ctx->cnt->bad_frames, 1);
		return;
	}
	qp = lookup_qp(ctx, h.dst_qpn);
	info = u4w_opinfo(h.opcode);
	if (!qp || U4W_TRANSPORT(h.opcode) != u4w_qpt_transport(qp->type)) {
		u4l_count(&ctx->cnt->bad_frames, 1);
		return;
	}
	payload = u4w_payload(f->buf, &h);
	pthread_mutex_lock(&qp->lock);
	held_before = qp->held_count;
	if (held_before && (qp->type == IBV_QPT_UD ||
			    (qp->type == IBV_QPT_UC && qp->peer == peer))) {
		consumed = false; /* behind frames already waiting: keep order */
	} else if (qp->type == IBV_QPT_UD) {
		consumed = u4v_ud_frame(qp, &h, payload, true);
	} else if (qp->peer != peer || h.src_qpn != qp->dest_qpn) {
		/* not from the QP this one is connected to */
		u4l_count(&ctx->cnt->bad_frames, 1);
	} else if (info->flags & U4W_OPF_REQUEST) {
		consumed = u4v_resp_frame(qp, peer, &h, payload, f->head,
					  f->len, true);
		if (qp->ack_pending)
			hold_ack(ctx, qp, batch);
		if (qp->ack_pending && !qp->in_batch &&
		    batch->ntouched < U4V_RX_BUDGET) {
			qp->in_batch = true;
			batch->touched[batch->ntouched++] = qp;
		}
	} else {
		u4v_comp_frame(qp, &h, payload);
	}
	if (!consumed && !u4v_hold_push(qp, f->head, f->len - h.paylen,
					payload, h.paylen))
		u4l_count(&ctx->cnt->bad_frames, 1);
	pthread_mutex_unlock(&qp->lock);
}

static unsigned int rx_channel(struct u4v_ctx *ctx, struct u4v_peer *peer)
{
	struct u4l_chan *chan;
	struct rx_batch batch;
	struct u4l_rx_frame f;
	unsigned int n = 0;
	uint32_t i;

	batch.ntouched = 0;
	batch.hold = -1;
	batch.now = 0;
	while (n < U4V_RX_BUDGET && (chan = u4v_lanes_rx_next(ctx, peer, &f))) {
		rx_frame(ctx, peer, &f, &batch);
		if (f.flags & U4L_RX_NOWAKE)
			u4l_count(&ctx->cnt->stranded_rescues, 1);
		ctx->ops->rx_release(chan);
		n++;
	}
	if (n)
		__atomic_store_n(&peer->rx_seen, peer->rx_seen + n,
				 __ATOMIC_RELAXED);
	/* one ACK per QP per batch: coalescing */
	for (i = 0; i < batch.ntouched; i++) {
		struct u4v_qp *qp = batch.touched[i];

		pthread_mutex_lock(&qp->lock);
		qp->in_batch = false;
		/* a message begun since, or READ responses: no holding */
		if (!qp->ack_due || qp->in_msg || qp->njobs)
			u4v_resp_flush_ack(qp);
		pthread_mutex_unlock(&qp->lock);
	}
	return n;
}

/* The QP at the head of the channel's wait list, taken off it; or NULL. */
static struct u4v_qp *pending_pop(struct u4v_peer *peer)
{
	struct u4v_qp *qp;

	pthread_mutex_lock(&peer->tx_lock);
	qp = peer->pending_head;
	if (qp) {
		peer->pending_head = qp->pending_next;
		if (!peer->pending_head)
			peer->pending_tail = NULL;
		qp->on_pending = false;
	}
	pthread_mutex_unlock(&peer->tx_lock);
	return qp;
}

/*
 * Take frames from a channel: one budget's worth, or with `all` what has
 * come, bounded by RX_DRAIN_ROUNDS budgets (frames keep coming while the
 * ring empties: the peer's frames waiting for RX slots move in).
 */
static unsigned int rx_peer(struct u4v_ctx *ctx, struct u4v_peer *peer,
			    bool all)
{
	unsigned int n, total = 0, rounds = 0;

	do {
		n = rx_channel(ctx, peer);
		total += n;
	} while (all && n == U4V_RX_BUDGET && ++rounds < RX_DRAIN_ROUNDS);
	return total;
}

/*
 * Push the QPs that waited for TX space, one at a time: a QP taken off the
 * list may be queued again at once (by this pass or by a poster), so the
 * list is never walked outside the lock. Bounded by the length at entry.
 * First the ACKs they owe, each QP back in line behind its ACK: an ACK
 * held behind other QPs' requests would leave its peer's requester
 * waiting; then, in order, whatever they have to send (tx_turn lets each
 * pass those who queued up since).
 */
static void push_pending(struct u4v_peer *peer)
{
	struct u4v_qp *qp, *q;
	uint32_t n = 0, i;

	pthread_mutex_lock(&peer->tx_lock);
	for (q = peer->pending_head; q; q = q->pending_next)
		n++;
	pthread_mutex_unlock(&peer->tx_lock);
	for (i = 0; i < n && (qp = pending_pop(peer)); i++) {
		pthread_mutex_lock(&qp->lock);
		if (!qp->njobs) /* READ responses wait for their turn */
			u4v_resp_tx(qp);
		pthread_mutex_unlock(&qp->lock);
		u4v_peer_schedule(peer, qp);
	}
	for (i = 0; i < n && (qp = pending_pop(peer)); i++) {
		pthread_mutex_lock(&qp->lock);
		qp->tx_turn = true;
		u4v_qp_tx(qp);
		qp->tx_turn = false;
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
	uint64_t next = UINT64_MAX, next_ack = 0, nak;
	uint32_t i;

	for (i = 0; i < ctx->nqps_slots; i++) {
		struct u4v_qp *qp = ctx->qps[i];

		if (!qp)
			continue;
		pthread_mutex_lock(&qp->lock);
		u4v_req_timer(qp, now);
		nak = u4v_resp_timer(qp, now);
		if (nak && nak < next)
			next = nak;
		if (qp->ack_due && now >= qp->ack_due) {
			u4v_ack_hold_end(qp);
			u4v_resp_tx(qp);
		}
		if (qp->ack_due && (!next_ack || qp->ack_due < next_ack))
			next_ack = qp->ack_due;
		if (qp->retry_deadline && qp->retry_deadline < next)
			next = qp->retry_deadline;
		if (qp->probe_deadline && qp->probe_deadline < next)
			next = qp->probe_deadline;
		if (qp->rnr_deadline && qp->rnr_deadline < next)
			next = qp->rnr_deadline;
		pthread_mutex_unlock(&qp->lock);
	}
	ctx->next_timer_ns = next;
	ctx->ack_hold_due = next_ack;
}

/* One pass; returns the number of frames taken. Caller holds progress_lock. */
unsigned int u4v_progress_locked(struct u4v_ctx *ctx)
{
	struct u4l_chan *chan;
	unsigned int frames = 0;
	uint64_t now = u4v_now();
	uint32_t i;
	/*
	 * A timer that is due judges a peer silent only after the frames
	 * that came from it were taken: on a busy channel the ACK it waits
	 * for can sit behind a ring of requests. (A deadline passing during
	 * the pass is judged in the next one, the same way.) Otherwise a pass
	 * takes at most U4V_RX_BUDGET frames per channel.
	 */
	bool due = ctx->next_timer_ns && now >= ctx->next_timer_ns;

	while ((chan = ctx->ops->chan_accept(ctx->link))) {
		uint32_t remote = ctx->ops->chan_remote(chan);

		if (remote < U4L_MAX_CTX)
			u4v_lanes_accept(ctx, &ctx->peers[remote], chan);
	}
	ctx->lane_wait_due = 0; /* the pass sets it again if still waiting */
	for (i = 0; i < U4L_MAX_CTX; i++) {
		struct u4v_peer *peer = &ctx->peers[i];

		if (!__atomic_load_n(&peer->chan, __ATOMIC_ACQUIRE))
			continue;
		frames += rx_peer(ctx, peer, due);
		u4v_lanes_meter(ctx, peer, now);
		if (peer->pending_head)
			push_pending(peer);
	}
	if (atomic_load_explicit(&ctx->held_qps, memory_order_relaxed))
		drain_held(ctx);
	if (due || now - ctx->last_timer_scan >= TIMER_SCAN_NS ||
	    (ctx->ack_hold_due && now >= ctx->ack_hold_due)) {
		ctx->last_timer_scan = now;
		run_timers(ctx, now);
	}
	return frames;
}

bool u4v_progress_try(struct u4v_ctx *ctx)
{
	if (pthread_mutex_trylock(&ctx->progress_lock))
		return false;
	u4v_progress_locked(ctx);
	pthread_mutex_unlock(&ctx->progress_lock);
	if (!ctx->thread_running)
		u4v_lanes_grow(ctx); /* else the thread does, off the app's path */
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
uint32_t u4v_app_cq_work(struct u4v_ctx *ctx)
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
