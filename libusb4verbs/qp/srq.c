// SPDX-License-Identifier: MIT
/* Receive queues: a QP's own RQ and shared receive queues (RC and UD). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/progress.h"
#include "engine_int.h"

int u4v_rq_init(struct u4v_rq *rq, uint32_t size, uint32_t max_sge)
{
	memset(rq, 0, sizeof(*rq));
	if (!size)
		return 0;
	rq->ring = calloc(size, sizeof(*rq->ring));
	rq->sges = calloc((size_t)size * (max_sge ? max_sge : 1),
			  sizeof(*rq->sges));
	if (!rq->ring || !rq->sges) {
		u4v_rq_destroy(rq);
		return ENOMEM;
	}
	rq->size = size;
	rq->max_sge = max_sge;
	return 0;
}

void u4v_rq_destroy(struct u4v_rq *rq)
{
	free(rq->ring);
	free(rq->sges);
	memset(rq, 0, sizeof(*rq));
}

/*
 * Validate and queue one receive WR. Returns 0 or an errno value. Its
 * buffers are checked against their MRs when a message is written into
 * them (as hardware does: the MR may change before, ibv_rereg_mr(3)); a
 * bad one completes the receive with IBV_WC_LOC_PROT_ERR.
 */
int u4v_rq_post(struct u4v_rq *rq, struct ibv_recv_wr *wr)
{
	struct u4v_rwqe *w;
	uint64_t total = 0;
	uint32_t slot, i;

	if (rq->count == rq->size)
		return ENOMEM;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	for (i = 0; i < (uint32_t)wr->num_sge; i++)
		total += wr->sg_list[i].length;
	slot = (rq->head + rq->count) % rq->size;
	w = &rq->ring[slot];
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	w->length = total;
	w->sge = &rq->sges[(size_t)slot * rq->max_sge];
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, sizeof(*w->sge) * w->num_sge);
	rq->count++;
	return 0;
}

/* Take the oldest receive WQE, copying its SGEs out (max U4V_MAX_SGE). */
bool u4v_rq_take(struct u4v_rq *rq, struct u4v_rwqe *out,
		 struct ibv_sge *sges)
{
	struct u4v_rwqe *w;

	if (!rq->count)
		return false;
	w = &rq->ring[rq->head];
	*out = *w;
	memcpy(sges, w->sge, sizeof(*sges) * w->num_sge);
	out->sge = sges;
	rq->head = (rq->head + 1) % rq->size;
	rq->count--;
	return true;
}

int u4v_create_srq(struct u4v_pd *pd, struct ibv_srq_attr *attr,
		   struct u4v_srq **out)
{
	struct u4v_ctx *ctx = pd->ctx;
	struct u4v_srq *srq;
	int ret;

	if (!attr || !attr->max_wr || attr->max_wr > U4V_MAX_SRQ_WR ||
	    attr->max_sge > U4V_MAX_SGE || attr->srq_limit > attr->max_wr)
		return EINVAL;
	if (!u4v_quota_take(ctx, &ctx->nsrq, U4V_MAX_SRQ))
		return ENOMEM;
	srq = calloc(1, sizeof(*srq));
	ret = srq ? u4v_rq_init(&srq->rq, attr->max_wr,
				attr->max_sge ? attr->max_sge : 1) :
		    ENOMEM;
	if (ret) {
		free(srq);
		u4v_quota_give(ctx, &ctx->nsrq);
		return ret;
	}
	u4v_mutex_init(&srq->lock);
	srq->pd = pd;
	srq->limit = attr->srq_limit;
	attr->max_sge = srq->rq.max_sge;
	atomic_fetch_add(&pd->refs, 1);
	*out = srq;
	return 0;
}

int u4v_modify_srq(struct u4v_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	int ret = 0;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	pthread_mutex_lock(&srq->lock);
	if (mask & IBV_SRQ_MAX_WR) {
		/* growing keeps posted WQEs; shrinking below them is refused */
		struct u4v_rq nrq;
		struct u4v_rwqe w;
		struct ibv_sge sges[U4V_MAX_SGE];

		if (!attr->max_wr || attr->max_wr > U4V_MAX_SRQ_WR ||
		    attr->max_wr < srq->rq.count) {
			ret = EINVAL;
			goto out;
		}
		ret = u4v_rq_init(&nrq, attr->max_wr, srq->rq.max_sge);
		if (ret)
			goto out;
		while (u4v_rq_take(&srq->rq, &w, sges)) {
			struct u4v_rwqe *d = &nrq.ring[nrq.count];

			*d = w;
			d->sge = &nrq.sges[(size_t)nrq.count * nrq.max_sge];
			memcpy(d->sge, sges, sizeof(*sges) * w.num_sge);
			nrq.count++;
		}
		u4v_rq_destroy(&srq->rq);
		srq->rq = nrq;
	}
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > srq->rq.size) {
			ret = EINVAL;
			goto out;
		}
		srq->limit = attr->srq_limit;
	}
out:
	pthread_mutex_unlock(&srq->lock);
	return ret;
}

int u4v_query_srq(struct u4v_srq *srq, struct ibv_srq_attr *attr)
{
	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->rq.size;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

int u4v_destroy_srq(struct u4v_srq *srq)
{
	struct u4v_ctx *ctx = srq->pd->ctx;

	if (atomic_load(&srq->refs))
		return EBUSY;
	u4v_quota_give(ctx, &ctx->nsrq);
	atomic_fetch_sub(&srq->pd->refs, 1);
	u4v_rq_destroy(&srq->rq);
	pthread_mutex_destroy(&srq->lock);
	free(srq);
	return 0;
}

int u4v_post_srq_recv(struct u4v_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	int ret = 0;

	pthread_mutex_lock(&srq->lock);
	for (; wr; wr = wr->next) {
		ret = u4v_rq_post(&srq->rq, wr);
		if (ret)
			break;
	}
	pthread_mutex_unlock(&srq->lock);
	if (ret && bad_wr)
		*bad_wr = wr;
	u4v_progress_recv_posted(srq->pd->ctx);
	return ret;
}

bool u4v_srq_take(struct u4v_srq *srq, struct u4v_rwqe *out,
		  struct ibv_sge *sges)
{
	bool got, limit_hit = false;

	pthread_mutex_lock(&srq->lock);
	got = u4v_rq_take(&srq->rq, out, sges);
	if (got && srq->limit && srq->rq.count < srq->limit) {
		srq->limit = 0; /* the event disarms the limit */
		limit_hit = true;
	}
	pthread_mutex_unlock(&srq->lock);
	if (limit_hit)
		u4v_async_event(srq->pd->ctx, srq->handle,
				IBV_EVENT_SRQ_LIMIT_REACHED);
	return got;
}

void u4v_srq_set_handle(struct u4v_srq *srq, uint64_t handle)
{
	srq->handle = handle;
}
