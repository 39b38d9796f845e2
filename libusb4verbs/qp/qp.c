// SPDX-License-Identifier: MIT
/* Queue pairs: creation, the state machine of ibv_modify_qp(3), flushing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/progress.h"
#include "engine_int.h"
#include "qp/modify.h"
#include "rel/psn.h"

static int check_init(const struct u4v_qp_init *init)
{
	const struct ibv_qp_cap *c = &init->cap;

	if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UC &&
	    init->qp_type != IBV_QPT_UD)
		return EOPNOTSUPP;
	if (!init->send_cq || !init->recv_cq)
		return EINVAL;
	/* an SRQ can be attached to RC and UD QPs only */
	if (init->srq && init->qp_type == IBV_QPT_UC)
		return EINVAL;
	if (c->max_send_wr > U4V_MAX_QP_WR || c->max_send_sge > U4V_MAX_SGE ||
	    c->max_inline_data > U4V_MAX_INLINE)
		return EINVAL;
	if (!init->srq &&
	    (c->max_recv_wr > U4V_MAX_QP_WR || c->max_recv_sge > U4V_MAX_SGE))
		return EINVAL;
	return 0;
}

static int alloc_queues(struct u4v_qp *qp)
{
	struct ibv_qp_cap *c = &qp->cap;
	uint32_t wqe_room;

	/* granted = requested, at least 1; the inline area per WQE */
	if (!c->max_send_wr)
		c->max_send_wr = 1;
	if (!c->max_send_sge)
		c->max_send_sge = 1;
	/*
	 * Inline data shares a WQE's room with its gather list, as on
	 * hardware (rxe and mlx5 grant at least that much): rdma_xclient and
	 * others post small inline sends without asking for inline room.
	 */
	wqe_room = c->max_send_sge * (uint32_t)sizeof(struct ibv_sge);
	if (wqe_room > U4V_MAX_INLINE)
		wqe_room = U4V_MAX_INLINE;
	if (c->max_inline_data < wqe_room)
		c->max_inline_data = wqe_room;
	/* a power of two: the ring indices run free and wrap cleanly */
	qp->sq_size = 1;
	while (qp->sq_size < c->max_send_wr)
		qp->sq_size <<= 1;
	c->max_send_wr = qp->sq_size;
	qp->sq = calloc(qp->sq_size, sizeof(*qp->sq));
	qp->sq_sges = calloc((size_t)qp->sq_size * c->max_send_sge,
			     sizeof(*qp->sq_sges));
	if (c->max_inline_data)
		qp->sq_inline = malloc((size_t)qp->sq_size *
				       c->max_inline_data);
	if (!qp->sq || !qp->sq_sges || (c->max_inline_data && !qp->sq_inline))
		return ENOMEM;
	/* responder state of READ and atomics, whoever feeds the receives */
	if (qp->type == IBV_QPT_RC) {
		qp->jobs = calloc(U4V_RESP_JOBS, sizeof(*qp->jobs));
		qp->rd_hist = calloc(U4V_MAX_QP_RD_ATOM, sizeof(*qp->rd_hist));
		qp->atomics = calloc(U4V_MAX_QP_RD_ATOM, sizeof(*qp->atomics));
		if (!qp->jobs || !qp->rd_hist || !qp->atomics)
			return ENOMEM;
	}
	if (qp->srq) {
		c->max_recv_wr = 0;
		c->max_recv_sge = 0;
		return 0;
	}
	if (!c->max_recv_sge)
		c->max_recv_sge = 1;
	return u4v_rq_init(&qp->rq, c->max_recv_wr, c->max_recv_sge);
}

static void free_queues(struct u4v_qp *qp)
{
	uint32_t i;

	free(qp->sq);
	free(qp->sq_sges);
	free(qp->sq_inline);
	u4v_rq_destroy(&qp->rq);
	free(qp->jobs);
	free(qp->rd_hist);
	free(qp->atomics);
	u4f_reorder_destroy(&qp->req_reorder);
	u4v_hold_clear(qp);
	for (i = 0; i < U4V_UD_PARTIALS; i++)
		free(qp->ud_part[i].buf);
}

int u4v_create_qp(struct u4v_pd *pd, struct u4v_qp_init *init,
		  struct u4v_qp **out)
{
	struct u4v_ctx *ctx = pd->ctx;
	struct u4v_qp *qp;
	uint32_t idx;
	int ret;

	ret = check_init(init);
	if (ret)
		return ret;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return ENOMEM;
	qp->ctx = ctx;
	qp->pd = pd;
	qp->type = init->qp_type;
	qp->state = IBV_QPS_RESET;
	qp->scq = init->send_cq;
	qp->rcq = init->recv_cq;
	qp->srq = init->srq;
	qp->cap = init->cap;
	qp->sq_sig_all = init->sq_sig_all;
	qp->port = 1;
	qp->path_mtu = U4V_MTU;
	u4v_mutex_init(&qp->lock);
	u4f_reorder_init(&qp->req_reorder, U4V_WINDOW);
	ret = alloc_queues(qp);
	if (ret)
		goto err;
	ret = u4v_progress_start(ctx);
	if (ret)
		goto err;

	pthread_mutex_lock(&ctx->progress_lock);
	pthread_mutex_lock(&ctx->obj_lock);
	if (!ctx->qps)
		ctx->qps = calloc(U4V_MAX_QP, sizeof(*ctx->qps));
	for (idx = 0; ctx->qps && idx < U4V_MAX_QP && ctx->qps[idx]; idx++)
		;
	if (!ctx->qps || idx == U4V_MAX_QP) {
		pthread_mutex_unlock(&ctx->obj_lock);
		pthread_mutex_unlock(&ctx->progress_lock);
		ret = ENOMEM;
		goto err;
	}
	qp->qpn = ((ctx->ctx_id + 1) << U4V_QPN_IDX_BITS) | idx;
	ctx->qps[idx] = qp;
	if (idx >= ctx->nqps_slots)
		ctx->nqps_slots = idx + 1;
	ctx->nqps++;
	pthread_mutex_unlock(&ctx->obj_lock);
	pthread_mutex_unlock(&ctx->progress_lock);

	atomic_fetch_add(&pd->refs, 1);
	atomic_fetch_add(&qp->scq->refs, 1);
	atomic_fetch_add(&qp->rcq->refs, 1);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->refs, 1);
	init->cap = qp->cap;
	*out = qp;
	return 0;
err:
	free_queues(qp);
	pthread_mutex_destroy(&qp->lock);
	free(qp);
	return ret;
}

static void unschedule(struct u4v_qp *qp)
{
	struct u4v_peer *peer;
	uint32_t i;

	for (i = 0; i < U4L_MAX_CTX; i++) {
		struct u4v_qp **pp;

		peer = &qp->ctx->peers[i];
		pthread_mutex_lock(&peer->tx_lock);
		peer->pending_tail = NULL;
		for (pp = &peer->pending_head; *pp;) {
			if (*pp == qp) {
				*pp = qp->pending_next;
				continue;
			}
			peer->pending_tail = *pp;
			pp = &(*pp)->pending_next;
		}
		pthread_mutex_unlock(&peer->tx_lock);
	}
	qp->on_pending = false;
}

/* An ACK held for the application's answer goes out now (ctx/progress.c). */
void u4v_qp_flush_held_ack(struct u4v_qp *qp)
{
	pthread_mutex_lock(&qp->lock);
	if (qp->ack_due) {
		u4v_ack_hold_end(qp);
		u4v_resp_tx(qp);
	}
	pthread_mutex_unlock(&qp->lock);
}

int u4v_destroy_qp(struct u4v_qp *qp)
{
	struct u4v_ctx *ctx = qp->ctx;

	u4v_qp_flush_held_ack(qp);
	/* no progress pass may still hold it once it leaves the table */
	pthread_mutex_lock(&ctx->progress_lock);
	pthread_mutex_lock(&ctx->obj_lock);
	ctx->qps[qp->qpn & U4V_QPN_IDX_MASK] = NULL;
	ctx->nqps--;
	pthread_mutex_unlock(&ctx->obj_lock);
	unschedule(qp);
	pthread_mutex_unlock(&ctx->progress_lock);

	u4v_mw_qp_gone(qp);
	atomic_fetch_sub(&qp->pd->refs, 1);
	atomic_fetch_sub(&qp->scq->refs, 1);
	atomic_fetch_sub(&qp->rcq->refs, 1);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->refs, 1);
	free_queues(qp);
	pthread_mutex_destroy(&qp->lock);
	free(qp);
	return 0;
}

uint32_t u4v_qp_num(const struct u4v_qp *qp)
{
	return qp->qpn;
}

enum ibv_qp_state u4v_qp_state(const struct u4v_qp *qp)
{
	return qp->state;
}

void u4v_qp_set_handle(struct u4v_qp *qp, uint64_t handle)
{
	qp->handle = handle;
}

/* Complete every outstanding WQE with IBV_WC_WR_FLUSH_ERR. */
void u4v_qp_flush(struct u4v_qp *qp)
{
	struct u4v_rwqe w;
	struct ibv_sge sges[U4V_MAX_SGE];
	struct ibv_wc wc;

	u4v_comp_flush(qp);
	if (qp->have_rwqe) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = qp->cur_rwqe.wr_id;
		wc.status = IBV_WC_WR_FLUSH_ERR;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = qp->qpn;
		u4v_cq_push(qp->rcq, &wc, false);
		qp->have_rwqe = false;
	}
	while (u4v_rq_take(&qp->rq, &w, sges)) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w.wr_id;
		wc.status = IBV_WC_WR_FLUSH_ERR;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = qp->qpn;
		u4v_cq_push(qp->rcq, &wc, false);
	}
	qp->retry_deadline = qp->probe_deadline = 0;
	qp->rnr_deadline = 0;
	qp->njobs = qp->nreplays = 0;
	u4v_holes_reset(&qp->rd_holes);
	u4f_reorder_clear(&qp->req_reorder);
}

void u4v_qp_enter_error(struct u4v_qp *qp)
{
	bool was_error = qp->state == IBV_QPS_ERR;

	qp->state = IBV_QPS_ERR;
	if (!was_error && qp->srq)
		u4v_async_event(qp->ctx, qp->handle,
				IBV_EVENT_QP_LAST_WQE_REACHED);
}

void u4v_qp_to_error(struct u4v_qp *qp)
{
	u4v_qp_enter_error(qp);
	u4v_qp_flush(qp);
}

static void reset_state(struct u4v_qp *qp)
{
	uint32_t i;

	qp->sq_head = qp->sq_send = qp->sq_tail = 0;
	qp->sq_count = 0;
	qp->rq.head = 0;
	qp->rq.count = 0;
	qp->have_rwqe = false;
	qp->in_msg = false;
	qp->uc_drop = false;
	qp->wr_mr = NULL;
	qp->wr_va = qp->wr_len = 0;
	qp->msg_off = 0;
	qp->msn = 0;
	qp->unacked = 0;
	qp->resend_one = false;
	qp->dup_acks = 0;
	u4v_hold_clear(qp);
	qp->njobs = qp->nreplays = 0;
	qp->rd_pending = 0;
	u4v_holes_reset(&qp->rd_holes);
	qp->ack_pending = false;
	u4v_ack_hold_end(qp);
	u4v_resp_filled(qp);
	qp->wr_ahead.valid = false;
	qp->pending_nak = 0;
	qp->retry_deadline = qp->rnr_deadline = qp->probe_deadline = 0;
	qp->peer = NULL;
	for (i = 0; qp->atomics && i < U4V_MAX_QP_RD_ATOM; i++)
		qp->atomics[i].valid = false;
	for (i = 0; qp->rd_hist && i < U4V_MAX_QP_RD_ATOM; i++)
		qp->rd_hist[i].valid = false;
	for (i = 0; i < U4V_UD_PARTIALS; i++)
		qp->ud_part[i].used = false;
	u4f_reorder_clear(&qp->req_reorder);
}

int u4v_modify_qp(struct u4v_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state cur, next;
	struct u4v_peer *peer = NULL;
	int ret;

	u4v_qp_flush_held_ack(qp);
	pthread_mutex_lock(&qp->lock);
	cur = qp->state;
	next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	ret = u4v_modify_check(qp, attr, mask, cur, next);
	if (ret)
		goto out;
	if ((mask & IBV_QP_DEST_QPN) && qp->type != IBV_QPT_UD) {
		int err = 0;

		peer = u4v_peer_get(qp->ctx, u4v_qpn_ctx(attr->dest_qp_num),
				    true, &err);
		if (!peer) {
			ret = err;
			goto out;
		}
	}
	u4v_modify_apply(qp, attr, mask);
	if (peer) {
		qp->peer = peer;
		qp->remote_ctx = u4v_qpn_ctx(attr->dest_qp_num);
	}
	if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
		reset_state(qp);
		/* a QP back in RESET starts afresh: its completions not yet
		 * polled go too (as libmlx4/libmlx5 clean their CQs) */
		u4v_cq_clean(qp->scq, qp->qpn);
		if (qp->rcq != qp->scq)
			u4v_cq_clean(qp->rcq, qp->qpn);
	}
	if (next == IBV_QPS_RTS && cur == IBV_QPS_RTR) {
		qp->acked_psn = psn_add(qp->sq_psn, U4V_PSN_MASK);
		qp->retries_left = qp->retry_cnt;
		qp->rnr_left = qp->rnr_retry;
	}
	qp->state = next;
	if (next == IBV_QPS_ERR && cur != IBV_QPS_ERR) {
		qp->state = cur;
		u4v_qp_to_error(qp);
	}
	if (next == IBV_QPS_RTS && cur != IBV_QPS_RTS)
		u4v_qp_tx(qp); /* WRs posted while in SQD */
out:
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

int u4v_query_qp(struct u4v_qp *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init)
{
	pthread_mutex_lock(&qp->lock);
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = qp->path_mtu;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qkey = qp->qkey;
	attr->rq_psn = qp->epsn;
	attr->sq_psn = qp->sq_psn;
	attr->dest_qp_num = qp->dest_qpn;
	attr->qp_access_flags = qp->access;
	attr->cap = qp->cap;
	attr->ah_attr = qp->ah_attr;
	attr->pkey_index = qp->pkey_index;
	attr->sq_draining = qp->state == IBV_QPS_SQD && qp->sq_send != qp->sq_tail;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->port_num = qp->port;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	attr->rnr_retry = qp->rnr_retry;
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_type = qp->type;
		init->cap = qp->cap;
		init->sq_sig_all = qp->sq_sig_all;
	}
	pthread_mutex_unlock(&qp->lock);
	(void)mask;
	return 0;
}
