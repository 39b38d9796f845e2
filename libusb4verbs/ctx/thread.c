// SPDX-License-Identifier: MIT
/*
 * The per-context progress thread.
 *
 * A passive target (perftest's ib_write_bw server never calls verbs) is
 * served by a per-context thread that sleeps on the link, where the peer's
 * doorbell wakes it (a futex in the cable's shared memory, an eventfd on
 * the kernel path), and also wakes on a timer, so that frames completed
 * without a wake-up are still found. While the application itself polls for
 * much, the thread only naps: it neither competes for frames nor makes
 * senders pay for wake-ups.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <time.h>

#include "ctx/progress.h"
#include "engine_int.h"

/* A cover is pushed on no more often than this: polls come every few us. */
#define COVER_STEP_NS (APP_POLL_RECENT_NS / 4)
#define THREAD_POLL_NS 2000000ull     /* timer poll for stranded frames */
/*
 * Idle: no frame taken and no verbs call for IDLE_NS. Then the timer poll
 * backs off to IDLE_POLL_NS (each wake-up costs some 20 us of CPU): a
 * frame that completes without a wake-up after a quiet spell is found by
 * the next frame that does wake us (an RC requester probes within 1-10
 * ms) or by that poll.
 */
#define IDLE_NS 100000000ull
#define IDLE_POLL_NS 50000000ull
/*
 * An application that armed a CQ in the last EVENTS_RECENT_NS, and has
 * not polled since, sleeps on completion events (see wire_nap_at()).
 */
#define EVENTS_RECENT_NS 10000000ull
/* wire_nap_at(): naps for a throttled wire, at most and at least */
#define WIRE_NAP_MAX_NS U4V_TX_QUEUE_NS
#define WIRE_NAP_MIN_NS 5000ull

/*
 * Do QPs wait in line for a channel whose TX ring has room? (A QP queues
 * behind those waiting even when the ring is not full, so wait() may not
 * end for them.)
 */
static bool tx_waiting(struct u4v_ctx *ctx)
{
	uint32_t i;

	for (i = 0; i < U4L_MAX_CTX; i++) {
		struct u4v_peer *peer = &ctx->peers[i];
		bool room = false;

		if (!__atomic_load_n(&peer->pending_head, __ATOMIC_RELAXED))
			continue;
		pthread_mutex_lock(&peer->tx_lock);
		if (peer->pending_head && peer->chan)
			room = u4v_tx_room(peer);
		pthread_mutex_unlock(&peer->tx_lock);
		if (room)
			return true;
	}
	return false;
}

/* The earlier of a and b, 0 being none. */
static uint64_t earlier(uint64_t a, uint64_t b)
{
	return !a || (b && b < a) ? b : a;
}

/*
 * at, or parts/4 of the way to due if that is earlier and a nap's worth
 * away: a frame due sooner (an ACK on its way) is taken with the rest.
 */
static uint64_t nap_until(uint64_t at, uint64_t now, uint64_t due,
			  unsigned int parts)
{
	if (due <= now + WIRE_NAP_MIN_NS)
		return at;
	return earlier(at, now + (due - now) / 4 * parts);
}

/*
 * When a throttled wire next has work for the thread of a context whose
 * application sleeps on completion events: three quarters of the way to
 * the arrival of the last frame already on its way to us (what came by
 * then is taken faster than the wire brings the rest, and the RX ring
 * keeps a quarter of that in hand for the wire), and for a peer whose QPs
 * wait for a full TX ring, half the way to the departure of its last
 * queued frame (the other half keeps the wire busy while the thread
 * refills it). Never past a QP timer, a held ACK or a lane wait, nor
 * WIRE_NAP_MAX_NS away. 0: nothing known, or sooner than WIRE_NAP_MIN_NS
 * (a nap would only add its wake-up).
 *
 * At 20 Gb/s a frame arrives or leaves every 1.6 us: spinning between
 * them, or a wake-up for each, kept a core busy on each side of a stream
 * whatever the application did; so the thread takes them in batches, as
 * a NIC moderates its interrupts. Only for an application that waits on
 * events: one that polls moves the context itself, and a passive target
 * (nobody calls in) or one that spins on memory is served as before, at
 * once, whatever that costs.
 */
static uint64_t wire_nap_at(struct u4v_ctx *ctx, uint64_t now)
{
	uint64_t at = 0, rx, tx;
	uint32_t i, l;

	for (i = 0; i < U4L_MAX_CTX; i++) {
		struct u4v_peer *peer = &ctx->peers[i];
		bool waits = __atomic_load_n(&peer->pending_head,
					     __ATOMIC_RELAXED) != NULL;

		for (l = 0; l < U4L_MAX_LANES; l++) {
			struct u4l_chan *chan = __atomic_load_n(
			    &peer->lanes[l], __ATOMIC_ACQUIRE);

			if (!chan)
				continue;
			ctx->ops->wire_due(chan, &rx, &tx);
			at = nap_until(at, now, rx, 3);
			if (waits)
				at = nap_until(at, now, tx, 2);
		}
	}
	if (!at)
		return 0;
	if (at > now + WIRE_NAP_MAX_NS)
		at = now + WIRE_NAP_MAX_NS;
	if (ctx->next_timer_ns < at)
		at = ctx->next_timer_ns;
	at = earlier(at, ctx->ack_hold_due);
	at = earlier(at, ctx->lane_wait_due);
	return at >= now + WIRE_NAP_MIN_NS ? at : 0;
}

/*
 * Does the application sleep on completion events (and not poll), on a
 * throttled link that says when the wire has a batch (wire_nap_at)?
 */
static bool events_batched(struct u4v_ctx *ctx, uint64_t now, bool app_recent)
{
	uint64_t armed = atomic_load_explicit(&ctx->app_armed_ns,
					      memory_order_relaxed);

	return !app_recent && armed && armed + EVENTS_RECENT_NS > now &&
	       ctx->ops->wire_due && ctx->ops->wire_rate(ctx->link);
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
	atomic_store_explicit(&ctx->app_armed_ns, u4v_now(),
			      memory_order_relaxed);
	atomic_store(&ctx->app_poll_ns, 0);
	if (ctx->ops->rx_cover) {
		atomic_store(&ctx->rx_covered, false);
		atomic_store(&ctx->cover_until, 0);
		ctx->ops->rx_cover(ctx->link, 0, false);
	}
	end_nap(ctx);
}

/*
 * Nap for the wire (wire_nap_at): arming a CQ does not end it (the thread
 * is not `napping`), so the application pays no wake-up per event it asks
 * for, nor does a sender: its doorbell wakes sleepers on the link only.
 */
static void wire_nap(struct u4v_ctx *ctx, uint64_t ns, uint32_t seq)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull),
			       (long)(ns % 1000000000ull) };

	syscall(SYS_futex, &ctx->nap_seq, FUTEX_WAIT_PRIVATE, seq, &ts, NULL,
		0);
}

/*
 * While the application polls on (perftest's ib_write_lat polls its send
 * CQ until the peer's ACK, which comes behind the peer's answer, see
 * ack_may_wait), the peer's frames need wake nobody: its poll takes them.
 * Once its poll returns work it may spin on memory instead, so data frames
 * wake the thread again; its ACKs it takes itself while it polls. Either
 * holds until APP_POLL_RECENT_NS after the application's last poll, in the
 * link, whose senders then wake the thread again: nobody need end a cover.
 * The thread still looks when it lapses, for a frame that came under it
 * (the application stopped polling without a completion); finding that
 * the application polled since, it sleeps on without a pass and looks
 * later next time (lapse_next). Polls come every few microseconds: a
 * cover of the same kind is pushed on every COVER_STEP_NS.
 */
void u4v_progress_cover(struct u4v_ctx *ctx, bool on)
{
	uint64_t until, old;

	if (!ctx->ops->rx_cover)
		return;
	until = atomic_load_explicit(&ctx->app_poll_ns, memory_order_relaxed);
	if (until)
		until += APP_POLL_RECENT_NS;
	old = atomic_load_explicit(&ctx->cover_until, memory_order_relaxed);
	if (atomic_load_explicit(&ctx->rx_covered, memory_order_relaxed) ==
		on &&
	    until < old + COVER_STEP_NS)
		return;
	atomic_store(&ctx->rx_covered, on);
	atomic_store(&ctx->cover_until, until);
	ctx->ops->rx_cover(ctx->link, until, on);
	/*
	 * A polling spell begins (the last cover ended before this poll): a
	 * thread asleep since before it would look for frames under the
	 * cover too late (an idle context's sleeps are 50 ms): it looks
	 * again now. Dekker with thread_sleep(). Within a spell the thread's
	 * sleeps were chosen for it: no fence on the poll path.
	 */
	if (!until || old + APP_POLL_RECENT_NS > until)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&ctx->thread_sleeps_until) > until + LAPSE_MAX_NS)
		ctx->ops->kick(ctx->link);
}

/*
 * The thread sleeps on the link until deadline. While the application
 * polls, the peer's ACKs need not wake it: the link's cover says so, or,
 * without one, the wait's flag (until the deadline, which is then no later
 * than APP_POLL_RECENT_NS after that poll, see sleep_deadline). polled_on:
 * it polled since the thread last fell asleep, so the frames its cover
 * covers, there already or on their way, are its own too.
 */
static void thread_wait(struct u4v_ctx *ctx, uint64_t deadline,
			bool app_recent, bool polled_on)
{
	uint32_t flags = 0;

	if (app_recent && !ctx->ops->rx_cover)
		flags |= U4L_WAIT_DATA;
	if (polled_on)
		flags |= U4L_WAIT_COVERED;
	ctx->ops->wait(ctx->link, deadline, flags);
}

/*
 * When the idle thread must look again: soon while the context was active
 * lately, at the next timer, at a held ACK's due time (unless the
 * application polls). An application that polls takes its ACKs itself:
 * only the peer's data (an RDMA WRITE it may spin on) needs a wake-up,
 * until that poll is old. Its passes do the timer poll's work meanwhile:
 * the thread looks `lapse` past that poll (lapse_next), for frames that
 * came under its cover, and, if an ACK is held for its answer, no later
 * than when that poll is old. *poll: the deadline is the timer poll's, or
 * that look's.
 */
static uint64_t sleep_deadline(const struct u4v_ctx *ctx, uint64_t now,
			       uint64_t idle_for, uint64_t app, bool app_recent,
			       uint64_t lapse, bool *poll)
{
	uint64_t deadline = now + (idle_for < IDLE_NS ? THREAD_POLL_NS :
							 IDLE_POLL_NS);
	uint64_t timer_poll;

	if (app_recent) {
		deadline = app + lapse;
		if (atomic_load_explicit(&ctx->acks_held,
					 memory_order_relaxed) &&
		    lapse > APP_POLL_RECENT_NS)
			deadline = ctx->ack_hold_due > app + APP_POLL_RECENT_NS ?
					   ctx->ack_hold_due :
					   app + APP_POLL_RECENT_NS;
	}
	timer_poll = deadline;
	if (ctx->next_timer_ns < deadline)
		deadline = ctx->next_timer_ns;
	if (!app_recent && ctx->ack_hold_due && ctx->ack_hold_due < deadline)
		deadline = ctx->ack_hold_due;
	if (ctx->lane_wait_due && ctx->lane_wait_due < deadline)
		deadline = ctx->lane_wait_due;
	*poll = deadline == timer_poll;
	return deadline;
}

struct thread_state {
	uint64_t last_frame, last_active;
	uint64_t lapse;	/* see lapse_next() */
	uint64_t slept;	/* when the last sleep began */
	bool poll_due;	/* it ended at the timer poll's deadline */
	bool ping_pong; /* the application polled for one send or nothing */
	uint32_t work;	/* the application's outstanding work, last seen */
};

/* Sleep on the link until the thread has something to do. */
static void thread_sleep(struct u4v_ctx *ctx, struct thread_state *st,
			 uint64_t now, uint64_t app, bool app_recent,
			 bool polled_on)
{
	bool poll;
	uint64_t deadline = sleep_deadline(ctx, now, now - st->last_active,
					   app, app_recent, st->lapse, &poll);

	st->slept = now;
	atomic_store(&ctx->thread_sleeps_until, deadline);
	/* a poll since `app` was read kicks us, or is seen here */
	if (app_recent ||
	    atomic_load(&ctx->app_poll_ns) + APP_POLL_RECENT_NS <= now)
		thread_wait(ctx, deadline, app_recent, polled_on);
	atomic_store(&ctx->thread_sleeps_until, 0);
	st->poll_due = poll && u4v_now() >= deadline;
}

/*
 * The timer poll found a ping-pong application that has polled since the
 * sleep began: its passes did the poll's work (frames, timers), and frames
 * that need the thread wake it. The thread sleeps again without a pass: on
 * a 2-core host this wake-up takes a spinning application's core, so it
 * should be short (a pass behind the application's lock made it 15-45 us).
 * Not for one that waits for much: on a host with more runnable threads
 * than cores it may be descheduled, and skipping passes for it made
 * ibv_rc_pingpong twice as slow.
 */
static bool poll_done_by_app(const struct thread_state *st, uint64_t app,
			     bool app_recent)
{
	return st->poll_due && st->ping_pong && app_recent && app >= st->slept;
}

/*
 * The thread's look when an application's cover lapses is for one that
 * stopped polling with a frame under it. A look that finds it polled on
 * (poll_done_by_app) was a wake-up for nothing, and on a host whose cores
 * all spin (ping-pong on 2 cores) it costs a round trip 15-50 us: it made
 * most of ib_write_lat's 99th percentile, one iteration every 250 us. So
 * each such look doubles the next one's distance from the last poll, up
 * to LAPSE_MAX_NS; one that finds it stopped starts again at the cover's
 * own APP_POLL_RECENT_NS. The cover still lapses on time in the link
 * (frames that come later wake the thread): only a frame that came under
 * it waits for the look, and an RC peer's probe ends that wait sooner. On
 * a link without a cover the look ends the wait's data-only flag: it stays
 * at APP_POLL_RECENT_NS.
 */
static void lapse_next(struct u4v_ctx *ctx, struct thread_state *st,
		       bool polled_on)
{
	if (!polled_on || !ctx->ops->rx_cover)
		st->lapse = APP_POLL_RECENT_NS;
	else if (st->lapse < LAPSE_MAX_NS)
		st->lapse *= 2;
}

/*
 * Take progress_lock for a pass; false: napped instead. An application
 * waiting for much (a bandwidth run, posted receives) moves the context
 * with its polls: nap until that poll is old. One waiting for one send or
 * nothing may next spin on memory for the peer's RDMA WRITE (ib_write_lat)
 * without calling in: the thread sleeps on the link after its pass, where
 * the peer's doorbell wakes it.
 */
static bool lock_or_nap(struct u4v_ctx *ctx, struct thread_state *st,
			uint64_t now, uint64_t app, bool app_recent,
			uint32_t seq)
{
	if (pthread_mutex_trylock(&ctx->progress_lock)) {
		if (app_recent && st->work > 1) {
			nap(ctx, app + APP_POLL_RECENT_NS - now, seq);
			return false;
		}
		/*
		 * The application is in a pass, or was preempted in one: wait
		 * for it. Spinning would take the core it needs; a nap could
		 * sleep through the peer's next frame.
		 */
		pthread_mutex_lock(&ctx->progress_lock);
	}
	st->work = app_recent ? u4v_app_cq_work(ctx) : 0;
	st->ping_pong = app_recent && st->work <= 1;
	if (app_recent && st->work > 1) {
		pthread_mutex_unlock(&ctx->progress_lock);
		nap(ctx, app + APP_POLL_RECENT_NS - now, seq);
		return false;
	}
	return true;
}

static void *progress_thread(void *arg)
{
	struct u4v_ctx *ctx = arg;
	/* a context is active when its first QP starts the thread */
	struct thread_state st = { .last_active = u4v_now(),
				   .lapse = APP_POLL_RECENT_NS };

	/* timed waits should end on time, not 50 us late */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	while (!atomic_load(&ctx->stop)) {
		uint64_t now = u4v_now(), at;
		uint64_t app = atomic_load_explicit(&ctx->app_poll_ns,
						    memory_order_relaxed);
		uint32_t seq = atomic_load(&ctx->nap_seq);
		unsigned int frames;
		bool batched;

		/* app may be a little newer than now: compare without wrap */
		bool app_recent = app + APP_POLL_RECENT_NS > now;

		u4v_lanes_grow(ctx); /* what the last passes' meters asked */

		if (st.poll_due)
			lapse_next(ctx, &st,
				   poll_done_by_app(&st, app, app_recent));
		if (poll_done_by_app(&st, app, app_recent)) {
			st.last_active = now;
			thread_sleep(ctx, &st, now, app, true, true);
			continue;
		}
		st.poll_due = false;
		if (!lock_or_nap(ctx, &st, now, app, app_recent, seq))
			continue;
		frames = u4v_progress_locked(ctx);
		pthread_mutex_unlock(&ctx->progress_lock);
		if (frames) {
			st.last_frame = st.last_active = now;
			continue; /* more may be waiting */
		}
		batched = events_batched(ctx, now, app_recent);
		if (batched && !tx_waiting(ctx) &&
		    (at = wire_nap_at(ctx, now))) {
			wire_nap(ctx, at - now, seq);
			continue;
		}
		/*
		 * A burst is usually followed by more: polling a little longer
		 * spares the sender a wake-up system call per doorbell. Not
		 * while the application runs: it would compete for the core;
		 * nor when it sleeps on events and the wire comes in batches:
		 * it chose the CPU over the latency, and the wake-up is one
		 * per burst.
		 */
		if (!app_recent && !batched &&
		    now - st.last_frame < ctx->spin_ns) {
			__builtin_ia32_pause();
			continue;
		}
		if (tx_waiting(ctx))
			continue; /* QPs queued behind others: TX has room */
		if (atomic_exchange_explicit(&ctx->app_called, false,
					     memory_order_relaxed) ||
		    app_recent || atomic_load(&ctx->held_qps))
			st.last_active = now;
		thread_sleep(ctx, &st, now, app, app_recent, false);
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
