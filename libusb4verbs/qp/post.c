// SPDX-License-Identifier: MIT
/*
 * Posting work requests: every check of ibv_post_send(3) / ibv_post_recv(3)
 * happens here, before anything is queued. A refused WR returns its errno
 * value and sets bad_wr; earlier WRs of the list stay posted.
 */
#include <errno.h>
#include <string.h>

#include "ctx/progress.h"
#include "engine_int.h"
#include "frag/frag.h"
#include "wire/opcode.h"

#define KNOWN_SEND_FLAGS                                                      \
	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |            \
	 IBV_SEND_INLINE)

/*
 * A bind names a window of this context and an MR (when it has a length);
 * whether the bind is allowed is decided when it executes (a completion
 * with IBV_WC_MW_BIND_ERR), as the window's state may change before then.
 */
static int check_bind_wr(struct u4v_qp *qp, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;
	struct u4v_mw *mw;

	if (!wr->bind_mw.mw)
		return EINVAL;
	mw = u4v_mw_from_ibv(wr->bind_mw.mw);
	if (mw->pd->ctx != qp->ctx || (bi->length && !bi->mr))
		return EINVAL;
	return 0;
}

static int check_send_wr(struct u4v_qp *qp, const struct ibv_send_wr *wr,
			 uint64_t *length)
{
	unsigned int wrf = u4w_wr_flags(wr->opcode);
	bool atomic = wrf & U4W_WRF_ATOMIC;
	bool inl = (wr->send_flags & IBV_SEND_INLINE) &&
		   (wrf & U4W_WRF_PAYLOAD);
	int local_access = 0;
	uint64_t total = 0;
	int i;

	if (!u4w_wr_allowed(qp->type, wr->opcode))
		return EINVAL;
	if (wr->send_flags & ~KNOWN_SEND_FLAGS)
		return EINVAL;
	if (wrf & U4W_WRF_LOCAL) { /* no SGEs, no payload */
		*length = 0;
		return wr->opcode == IBV_WR_BIND_MW ? check_bind_wr(qp, wr) : 0;
	}
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return EINVAL;
	if (wr->num_sge && !wr->sg_list)
		return EINVAL;
	if (atomic && (wr->num_sge != 1 || wr->sg_list[0].length < 8 ||
		       (wr->wr.atomic.remote_addr & 7)))
		return EINVAL;
	if (wrf & U4W_WRF_RESPONSE) /* the response is written locally */
		local_access = IBV_ACCESS_LOCAL_WRITE;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (atomic)
		total = 8;
	if (total > U4V_MAX_MSG_SZ)
		return EINVAL;
	if (qp->type == IBV_QPT_UD) {
		if (total > 4096 || !wr->wr.ud.ah ||
		    u4v_qpn_ctx(wr->wr.ud.remote_qpn) >= U4L_MAX_CTX)
			return EINVAL;
	}
	if (inl) {
		if (total > qp->cap.max_inline_data)
			return EINVAL;
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			const struct ibv_sge *s = &wr->sg_list[i];

			if (!s->length)
				continue;
			if (u4v_mr_check_local(qp->pd, s->lkey, s->addr,
					       atomic ? 8 : s->length,
					       local_access))
				return EINVAL;
		}
	}
	*length = total;
	return 0;
}

/* The operands of the opcode: remote address and key, atomic values, bind. */
static void fill_operands(struct u4v_swqe *w, const struct ibv_send_wr *wr,
			  unsigned int wrf)
{
	if (wrf & U4W_WRF_ATOMIC) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			w->swap_add = wr->wr.atomic.compare_add;
		} else {
			w->compare = wr->wr.atomic.compare_add;
			w->swap_add = wr->wr.atomic.swap;
		}
		w->sge[0].length = 8;
	} else if (wrf & U4W_WRF_RDMA) {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	} else if (wrf & U4W_WRF_INV) {
		w->rkey = wr->invalidate_rkey;
	} else if (wr->opcode == IBV_WR_BIND_MW) {
		const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;

		w->rkey = wr->bind_mw.rkey;
		w->bind_mw_key = u4v_mw_from_ibv(wr->bind_mw.mw)->key_base;
		w->bind_lkey = bi->length ? bi->mr->lkey : 0;
		w->bind_addr = bi->addr;
		w->bind_len = bi->length;
		w->bind_access = (int)bi->mw_access_flags;
	}
}

/* A UD WR's destination: its AH, QPN and Q_Key. */
static void fill_ud_dest(struct u4v_qp *qp, struct u4v_swqe *w,
			 const struct ibv_send_wr *wr)
{
	w->remote_qpn = wr->wr.ud.remote_qpn;
	w->remote_qkey = wr->wr.ud.remote_qkey;
	/* a qkey with the high bit set means "use the QP's own" */
	if (w->remote_qkey & 0x80000000u)
		w->remote_qkey = qp->qkey;
	w->remote_ctx = u4v_qpn_ctx(w->remote_qpn);
	w->ah = container_of(wr->wr.ud.ah, struct u4v_ah, ibv);
}

/* An inline WR's payload, gathered now into the slot's inline buffer. */
static void copy_inline(struct u4v_qp *qp, struct u4v_swqe *w,
			const struct ibv_send_wr *wr, uint32_t slot)
{
	uint64_t off = 0;
	int i;

	w->inline_data = qp->sq_inline + (size_t)slot * qp->cap.max_inline_data;
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(w->inline_data + off,
		       (const void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
}

static void fill_wqe(struct u4v_qp *qp, struct u4v_swqe *w,
		     const struct ibv_send_wr *wr, uint64_t length,
		     uint32_t slot)
{
	unsigned int wrf = u4w_wr_flags(wr->opcode);

	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm = wr->imm_data;
	w->length = length;
	w->sge = &qp->sq_sges[(size_t)slot * qp->cap.max_send_sge];
	w->num_sge = wrf & U4W_WRF_LOCAL ? 0 : (uint32_t)wr->num_sge;
	if (w->num_sge)
		memcpy(w->sge, wr->sg_list, sizeof(*w->sge) * w->num_sge);
	fill_operands(w, wr, wrf);
	if (qp->type == IBV_QPT_UD)
		fill_ud_dest(qp, w, wr);
	if ((wr->send_flags & IBV_SEND_INLINE) && (wrf & U4W_WRF_PAYLOAD))
		copy_inline(qp, w, wr, slot);
	w->state = U4V_WQE_POSTED;
	w->status = IBV_WC_SUCCESS;
	/* a READ takes one request frame and a PSN per response frame; a
	 * local operation none */
	w->nframes = wrf & U4W_WRF_PAYLOAD ? u4f_nframes(length) :
		     wrf & U4W_WRF_LOCAL   ? 0 :
					     1;
	w->npsn = wrf & U4W_WRF_READ ? u4f_nframes(length) : w->nframes;
}

int u4v_post_send(struct u4v_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr)
{
	int ret = 0;
	bool posted = false;

	if (!qp || !wr)
		return EINVAL;
	u4v_progress_app_call(qp->ctx);
	pthread_mutex_lock(&qp->lock);
	switch (qp->state) {
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
	case IBV_QPS_ERR:
	case IBV_QPS_SQE:
		break;
	default:
		ret = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		uint64_t length = 0;
		uint32_t slot;

		ret = check_send_wr(qp, wr, &length);
		if (!ret && qp->sq_count == qp->sq_size)
			ret = ENOMEM;
		if (ret)
			goto out;
		slot = qp->sq_tail & (qp->sq_size - 1);
		fill_wqe(qp, &qp->sq[slot], wr, length, slot);
		qp->sq_tail = qp->sq_tail + 1;
		qp->sq_count++;
		posted = true;
	}
out:
	if (ret && bad_wr)
		*bad_wr = wr;
	if (posted) {
		if (qp->state == IBV_QPS_ERR || qp->state == IBV_QPS_SQE)
			u4v_qp_flush(qp);
		else
			u4v_qp_tx(qp);
	}
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

int u4v_post_recv(struct u4v_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	int ret = 0;

	if (!qp || !wr)
		return EINVAL;
	pthread_mutex_lock(&qp->lock);
	if (qp->srq || qp->state == IBV_QPS_RESET) {
		ret = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		ret = u4v_rq_post(&qp->rq, wr);
		if (ret)
			break;
	}
	if (qp->state == IBV_QPS_ERR)
		u4v_qp_flush(qp);
out:
	if (ret && bad_wr)
		*bad_wr = wr;
	pthread_mutex_unlock(&qp->lock);
	u4v_progress_recv_posted(qp->ctx);
	return ret;
}
