// SPDX-License-Identifier: MIT
/* Completion queues and completion events. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/progress.h"
#include "engine_int.h"

int u4v_create_cq(struct u4v_ctx *ctx, int cqe, struct u4v_cq **out)
{
	struct u4v_cq *cq;

	if (cqe < 1 || (uint32_t)cqe > U4V_MAX_CQE)
		return EINVAL;
	if (!u4v_quota_take(ctx, &ctx->ncq, U4V_MAX_CQ))
		return ENOMEM;
	cq = calloc(1, sizeof(*cq));
	if (cq)
		cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
	if (!cq || !cq->ring) {
		free(cq);
		u4v_quota_give(ctx, &ctx->ncq);
		return ENOMEM;
	}
	cq->ctx = ctx;
	cq->size = (uint32_t)cqe;
	u4v_mutex_init(&cq->lock);
	*out = cq;
	return 0;
}

int u4v_destroy_cq(struct u4v_cq *cq)
{
	struct u4v_ctx *ctx = cq->ctx;

	if (atomic_load(&cq->refs))
		return EBUSY;
	u4v_quota_give(ctx, &ctx->ncq);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq->ts);
	free(cq);
	return 0;
}

int u4v_cq_set_timestamps(struct u4v_cq *cq, unsigned int clocks)
{
	struct u4v_cq_ts *ts = NULL;

	if (clocks & ~(unsigned int)(U4V_CQ_TS_RAW | U4V_CQ_TS_WALL))
		return EINVAL;
	if (clocks) {
		ts = calloc(cq->size, sizeof(*ts));
		if (!ts)
			return ENOMEM;
	}
	pthread_mutex_lock(&cq->lock);
	free(cq->ts);
	cq->ts = ts;
	cq->ts_clocks = clocks;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

int u4v_cq_depth(struct u4v_cq *cq)
{
	return (int)cq->size;
}

int u4v_resize_cq(struct u4v_cq *cq, int cqe)
{
	struct u4v_cq_ts *ts = NULL;
	struct ibv_wc *ring;
	uint32_t i;

	if (cqe < 1 || (uint32_t)cqe > U4V_MAX_CQE)
		return EINVAL;
	ring = calloc((size_t)cqe, sizeof(*ring));
	if (ring && cq->ts_clocks)
		ts = calloc((size_t)cqe, sizeof(*ts));
	if (!ring || (cq->ts_clocks && !ts)) {
		free(ring);
		return ENOMEM;
	}
	pthread_mutex_lock(&cq->lock);
	if ((uint32_t)cqe < cq->count) {
		pthread_mutex_unlock(&cq->lock);
		free(ring);
		free(ts);
		return EINVAL;
	}
	for (i = 0; i < cq->count; i++) {
		ring[i] = cq->ring[(cq->head + i) % cq->size];
		if (ts)
			ts[i] = cq->ts[(cq->head + i) % cq->size];
	}
	free(cq->ring);
	free(cq->ts);
	cq->ring = ring;
	cq->ts = ts;
	cq->size = (uint32_t)cqe;
	cq->head = 0;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

bool u4v_cq_push(struct u4v_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	u4v_cq_event_fn fn = NULL;
	bool first_overflow = false, ok = true;
	void *arg = NULL;

	pthread_mutex_lock(&cq->lock);
	if (cq->count == cq->size) {
		first_overflow = !cq->overflowed;
		cq->overflowed = true;
		ok = false;
	} else {
		uint32_t at = (cq->head + cq->count) % cq->size;

		cq->ring[at] = *wc;
		if (cq->ts) {
			cq->ts[at].raw = cq->ts_clocks & U4V_CQ_TS_RAW ?
				u4v_clock_ns(CLOCK_MONOTONIC_RAW) : 0;
			cq->ts[at].wall = cq->ts_clocks & U4V_CQ_TS_WALL ?
				u4v_clock_ns(CLOCK_REALTIME) : 0;
		}
		cq->count++;
	}
	/* an error completion also ends a solicited-only wait */
	if (cq->armed == 1 || (cq->armed == 2 && (solicited || !ok ||
						  wc->status))) {
		cq->armed = 0;
		fn = cq->event_fn;
		arg = cq->event_arg;
	}
	pthread_mutex_unlock(&cq->lock);
	if (fn)
		fn(cq, arg);
	if (first_overflow)
		u4v_async_event(cq->ctx, cq->handle, IBV_EVENT_CQ_ERR);
	return ok;
}

void u4v_cq_clean(struct u4v_cq *cq, uint32_t qpn)
{
	uint32_t i, kept = 0;

	pthread_mutex_lock(&cq->lock);
	for (i = 0; i < cq->count; i++) {
		uint32_t from = (cq->head + i) % cq->size;
		uint32_t to = (cq->head + kept) % cq->size;

		if (cq->ring[from].qp_num == qpn)
			continue;
		cq->ring[to] = cq->ring[from];
		if (cq->ts)
			cq->ts[to] = cq->ts[from];
		kept++;
	}
	cq->count = kept;
	pthread_mutex_unlock(&cq->lock);
}

/* Before looking: let progress run when there is nothing to take. */
static void poll_progress(struct u4v_cq *cq)
{
	/* an armed CQ means the application will sleep on its event */
	if (!__atomic_load_n(&cq->armed, __ATOMIC_RELAXED))
		u4v_progress_app_poll(cq->ctx);
	if (!__atomic_load_n(&cq->count, __ATOMIC_RELAXED) &&
	    !u4v_progress_try(cq->ctx) &&
	    !__atomic_load_n(&cq->count, __ATOMIC_RELAXED))
		/*
		 * Another thread is moving the context and ours has nothing
		 * to do: on a machine with more spinning threads than cores,
		 * give the CPU to that thread (or to the peer) instead of
		 * spinning through its time slice.
		 */
		sched_yield();
}

/*
 * An application that found nothing polls on (unless it armed the CQ to
 * sleep on its event); one that found work may spin on memory next.
 */
static void poll_cover(struct u4v_cq *cq, int got)
{
	u4v_progress_cover(
	    cq->ctx, !got && !__atomic_load_n(&cq->armed, __ATOMIC_RELAXED));
}

int u4v_poll_cq_ts(struct u4v_cq *cq, struct ibv_wc *wc,
		   struct u4v_cq_ts *ts)
{
	int got = 0;

	poll_progress(cq);
	pthread_mutex_lock(&cq->lock);
	if (cq->count) {
		*wc = cq->ring[cq->head];
		if (cq->ts)
			*ts = cq->ts[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
		got = 1;
	}
	pthread_mutex_unlock(&cq->lock);
	poll_cover(cq, got);
	return got;
}

int u4v_poll_cq(struct u4v_cq *cq, int n, struct ibv_wc *wc)
{
	int got = 0;

	if (n < 0)
		return -EINVAL;
	poll_progress(cq);
	pthread_mutex_lock(&cq->lock);
	while (got < n && cq->count) {
		wc[got++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	pthread_mutex_unlock(&cq->lock);
	poll_cover(cq, got);
	return got;
}

int u4v_req_notify_cq(struct u4v_cq *cq, int solicited_only)
{
	pthread_mutex_lock(&cq->lock);
	cq->armed = solicited_only ? 2 : 1;
	pthread_mutex_unlock(&cq->lock);
	u4v_progress_app_blocks(cq->ctx);
	return 0;
}

void u4v_cq_set_event_fn(struct u4v_cq *cq, u4v_cq_event_fn fn, void *arg)
{
	pthread_mutex_lock(&cq->lock);
	cq->event_fn = fn;
	cq->event_arg = arg;
	pthread_mutex_unlock(&cq->lock);
}

void u4v_cq_set_handle(struct u4v_cq *cq, uint64_t handle)
{
	cq->handle = handle;
}
