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
	free(cq);
	return 0;
}

int u4v_cq_depth(struct u4v_cq *cq)
{
	return (int)cq->size;
}

int u4v_resize_cq(struct u4v_cq *cq, int cqe)
{
	struct ibv_wc *ring;
	uint32_t i;

	if (cqe < 1 || (uint32_t)cqe > U4V_MAX_CQE)
		return EINVAL;
	ring = calloc((size_t)cqe, sizeof(*ring));
	if (!ring)
		return ENOMEM;
	pthread_mutex_lock(&cq->lock);
	if ((uint32_t)cqe < cq->count) {
		pthread_mutex_unlock(&cq->lock);
		free(ring);
		return EINVAL;
	}
	for (i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->size];
	free(cq->ring);
	cq->ring = ring;
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
		cq->ring[(cq->head + cq->count) % cq->size] = *wc;
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

int u4v_poll_cq(struct u4v_cq *cq, int n, struct ibv_wc *wc)
{
	int got = 0;

	if (n < 0)
		return -EINVAL;
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
	pthread_mutex_lock(&cq->lock);
	while (got < n && cq->count) {
		wc[got++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	pthread_mutex_unlock(&cq->lock);
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
