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

static int check_send_wr(struct u4v_qp *qp, const struct ibv_send_wr *wr,
			 uint64_t *length)
{
	bool atomic = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		      wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
	bool inl = (wr->send_flags & IBV_SEND_INLINE) &&
		   wr->opcode != IBV_WR_RDMA_READ && !atomic;
	int local_access = 0;
	uint64_t total = 0;
	int i;

	if (!u4w_wr_allowed(qp->type, wr->opcode))
		return EINVAL;
	if (wr->send_flags & ~KNOWN_SEND_FLAGS)
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return EINVAL;
	if (wr->num_sge && !wr->sg_list)
		return EINVAL;
	if (atomic && (wr->num_sge != 1 || wr->sg_list[0].length < 8 ||
		       (wr->wr.atomic.remote_addr & 7)))
		return EINVAL;
	if (wr->opcode == IBV_WR_RDMA_READ || atomic)
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

static void fill_wqe(struct u4v_qp *qp, struct u4v_swqe *w,
		     const struct ibv_send_wr *wr, uint64_t length,
		     uint32_t slot)
{
	bool atomic = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		      wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
	int i;

	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm = wr->imm_data;
	w->length = length;
	w->sge = &qp->sq_sges[(size_t)slot * qp->cap.max_send_sge];
	w->num_sge = (uint32_t)wr->num_sge;
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, sizeof(*w->sge) * w->num_sge);
	if (atomic) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		w->sge[0].length = 8;
	} else if (wr->opcode != IBV_WR_SEND &&
		   wr->opcode != IBV_WR_SEND_WITH_IMM) {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	if (qp->type == IBV_QPT_UD) {
		struct u4v_ah *ah = container_of(wr->wr.ud.ah, struct u4v_ah,
						 ibv);

		w->remote_qpn = wr->wr.ud.remote_qpn;
		w->remote_qkey = wr->wr.ud.remote_qkey;
		/* a qkey with the high bit set means "use the QP's own" */
		if (w->remote_qkey & 0x80000000u)
			w->remote_qkey = qp->qkey;
		w->remote_ctx = u4v_qpn_ctx(w->remote_qpn);
		w->ah_global = ah->attr.is_global;
	}
	if ((wr->send_flags & IBV_SEND_INLINE) && !atomic &&
	    wr->opcode != IBV_WR_RDMA_READ) {
		uint64_t off = 0;

		w->inline_data = qp->sq_inline +
				 (size_t)slot * qp->cap.max_inline_data;
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(w->inline_data + off,
			       (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			off += wr->sg_list[i].length;
		}
	}
	w->state = U4V_WQE_POSTED;
	w->status = IBV_WC_SUCCESS;
	w->nframes = wr->opcode == IBV_WR_RDMA_READ || atomic ?
			     1 :
			     u4f_nframes(length);
	w->npsn = wr->opcode == IBV_WR_RDMA_READ ? u4f_nframes(length) :
						   w->nframes;
}

int u4v_post_send(struct u4v_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr)
{
	int ret = 0;
	bool posted = false;

	if (!qp || !wr)
		return EINVAL;
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
		ret = u4v_rq_post(&qp->rq, qp->pd, wr);
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
