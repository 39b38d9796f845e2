// SPDX-License-Identifier: MIT
/*
 * The responder (RC and UC): executes request frames in PSN order, holds
 * frames that arrive ahead of their turn, queues the READ and atomic
 * responses and ACKs it owes (resp_tx.c sends them). There is no
 * receiver-side watchdog: only the requester's retransmit timer decides that
 * a peer is gone.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "frag/frag.h"
#include "rel/psn.h"
#include "wire/opcode.h"

enum exec_result {
	EXEC_OK,   /* executed; epsn advanced */
	EXEC_RNR,  /* no receive WQE: try again later */
	EXEC_NAK,  /* refused with *syndrome */
};

static bool take_rwqe(struct u4v_qp *qp)
{
	if (qp->have_rwqe)
		return true;
	qp->have_rwqe = qp->srq ? u4v_srq_take(qp->srq, &qp->cur_rwqe,
					       qp->cur_sges) :
				  u4v_rq_take(&qp->rq, &qp->cur_rwqe,
					      qp->cur_sges);
	return qp->have_rwqe;
}

static void recv_complete(struct u4v_qp *qp, enum ibv_wc_status status,
			  enum ibv_wc_opcode opcode, uint32_t byte_len,
			  const struct u4w_hdr *h)
{
	const struct u4w_opinfo *info = u4w_opinfo(h->opcode);
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = qp->cur_rwqe.wr_id;
	wc.status = status;
	wc.opcode = opcode;
	wc.byte_len = byte_len;
	wc.qp_num = qp->qpn;
	wc.src_qp = h->src_qpn;
	if (info->flags & U4W_OPF_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = h->imm;
	} else if (info->flags & U4W_OPF_INV) {
		wc.wc_flags |= IBV_WC_WITH_INV;
		wc.invalidated_rkey = h->inv_rkey;
	}
	qp->have_rwqe = false;
	u4v_cq_push(qp->rcq, &wc, h->flags & U4W_F_SOLICITED);
}

/*
 * May an RDMA READ or WRITE request touch the memory its RETH names? A
 * zero-length one names none: its R_Key and VA are not validated (IBTA
 * C9-88; UCX flushes with zero-length WRITEs of rkey 0), only the QP's
 * access flags. *mr is set for a nonzero length.
 */
static bool rdma_allowed(struct u4v_qp *qp, const struct u4w_hdr *h,
			 int access, struct u4v_mr **mr)
{
	if (!u4v_qp_allows(qp, access))
		return false;
	return !h->dma_len || !u4v_mr_check_remote(qp, h->rkey, h->va,
						   h->dma_len, access, mr);
}

static enum exec_result exec_send(struct u4v_qp *qp, const struct u4w_hdr *h,
				  const uint8_t *payload, uint8_t *syndrome)
{
	const struct u4w_opinfo *info = u4w_opinfo(h->opcode);

	if (info->flags & U4W_OPF_FIRST) {
		if (qp->in_msg) {
			*syndrome = U4W_AETH_NAK_INV_REQ;
			return EXEC_NAK;
		}
		if (!take_rwqe(qp))
			return EXEC_RNR;
		qp->msg_off = 0;
		qp->in_msg = true;
	} else if (!qp->in_msg || qp->wr_mr) {
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	if (!(info->flags & U4W_OPF_LAST) && h->paylen != U4W_GRANULE) {
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	if (qp->msg_off + h->paylen > qp->cur_rwqe.length) {
		recv_complete(qp, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, h);
		qp->in_msg = false;
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	/* the receive's buffers are checked as they are written */
	if (u4v_sge_copy_in(u4v_rq_pd(qp), qp->cur_rwqe.sge,
			    qp->cur_rwqe.num_sge, qp->msg_off, payload,
			    h->paylen)) {
		recv_complete(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, h);
		qp->in_msg = false;
		*syndrome = U4W_AETH_NAK_REM_OP;
		return EXEC_NAK;
	}
	qp->msg_off += h->paylen;
	if (!(info->flags & U4W_OPF_LAST))
		return EXEC_OK;
	qp->in_msg = false;
	/* SEND with invalidate: the window must be one this QP may drop */
	if ((info->flags & U4W_OPF_INV) &&
	    u4v_mw_remote_invalidate(qp, h->inv_rkey)) {
		recv_complete(qp, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 0, h);
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	recv_complete(qp, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)qp->msg_off,
		      h);
	return EXEC_OK;
}

/* A WRITE refused mid-message: the message is abandoned. */
static enum exec_result refuse_write(struct u4v_qp *qp, uint8_t code,
				     uint8_t *syndrome)
{
	qp->in_msg = false;
	qp->wr_mr = NULL;
	*syndrome = code;
	return EXEC_NAK;
}

/* The first frame of a WRITE: check its RETH, then start the message. */
static enum exec_result write_first(struct u4v_qp *qp, const struct u4w_hdr *h,
				    uint8_t *syndrome)
{
	struct u4v_mr *mr = NULL;

	if (qp->in_msg) {
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	if (!rdma_allowed(qp, h, IBV_ACCESS_REMOTE_WRITE, &mr)) {
		*syndrome = U4W_AETH_NAK_REM_ACCESS;
		return EXEC_NAK;
	}
	if (h->dma_len > U4V_MAX_MSG_SZ) {
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	qp->wr_mr = mr;
	qp->wr_rkey = h->rkey;
	qp->wr_va = h->va;
	qp->wr_len = h->dma_len;
	qp->msg_off = 0;
	qp->in_msg = true;
	return EXEC_OK;
}

static enum exec_result exec_write(struct u4v_qp *qp, const struct u4w_hdr *h,
				   const uint8_t *payload, uint8_t *syndrome)
{
	const struct u4w_opinfo *info = u4w_opinfo(h->opcode);
	bool last = info->flags & U4W_OPF_LAST;
	struct u4v_mr *mr = NULL;
	enum exec_result r;

	/*
	 * The immediate needs a receive WQE: find it before anything changes,
	 * since an RNR NAK makes the requester send this very frame again.
	 */
	if ((info->flags & U4W_OPF_IMM) && !take_rwqe(qp))
		return EXEC_RNR;
	if (info->flags & U4W_OPF_FIRST) {
		r = write_first(qp, h, syndrome);
		if (r != EXEC_OK)
			return r;
	} else if (!qp->in_msg || !qp->wr_mr) {
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	if (qp->msg_off + h->paylen > qp->wr_len ||
	    (!last && h->paylen != U4W_GRANULE) ||
	    (last && qp->msg_off + h->paylen != qp->wr_len))
		return refuse_write(qp, U4W_AETH_NAK_INV_REQ, syndrome);
	/*
	 * The MR may have been deregistered since the first frame: check the
	 * key again for the bytes this frame writes (dereg_mr waits for us).
	 */
	if (h->paylen &&
	    u4v_mr_check_remote(qp, qp->wr_rkey, qp->wr_va + qp->msg_off,
				h->paylen, IBV_ACCESS_REMOTE_WRITE, &mr))
		return refuse_write(qp, U4W_AETH_NAK_REM_ACCESS, syndrome);
	/* payload NULL: placed ahead (qp/ahead.c); ODP memory may be gone */
	if (h->paylen && payload &&
	    u4v_mr_write(mr, qp->wr_va + qp->msg_off, payload, h->paylen))
		return refuse_write(qp, U4W_AETH_NAK_REM_ACCESS, syndrome);
	qp->msg_off += h->paylen;
	if (last) {
		qp->in_msg = false;
		qp->wr_mr = NULL;
		if (info->flags & U4W_OPF_IMM)
			recv_complete(qp, IBV_WC_SUCCESS,
				      IBV_WC_RECV_RDMA_WITH_IMM,
				      (uint32_t)qp->wr_len, h);
	}
	return EXEC_OK;
}

static enum exec_result exec_read(struct u4v_qp *qp, const struct u4w_hdr *h,
				  uint8_t *syndrome)
{
	struct u4v_read_rec *rec;

	if (!rdma_allowed(qp, h, IBV_ACCESS_REMOTE_READ, NULL)) {
		*syndrome = U4W_AETH_NAK_REM_ACCESS;
		return EXEC_NAK;
	}
	if (h->dma_len > U4V_MAX_MSG_SZ ||
	    !u4v_resp_queue_read(qp, h->psn, h->va, h->dma_len, h->rkey,
				 false)) {
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	/* remembered to serve it again when responses are lost */
	rec = &qp->rd_hist[qp->rd_hist_next++ % U4V_MAX_QP_RD_ATOM];
	rec->psn = h->psn;
	rec->nframes = u4f_nframes(h->dma_len);
	rec->va = h->va;
	rec->len = h->dma_len;
	rec->rkey = h->rkey;
	rec->valid = true;
	return EXEC_OK;
}

static enum exec_result exec_atomic(struct u4v_qp *qp, const struct u4w_hdr *h,
				   uint8_t *syndrome)
{
	struct u4v_atomic_done *done;
	struct u4v_mr *mr = NULL;
	uint64_t orig;

	if (h->va & 7) {
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	if (!u4v_qp_allows(qp, IBV_ACCESS_REMOTE_ATOMIC) ||
	    u4v_mr_check_remote(qp, h->rkey, h->va, 8,
				IBV_ACCESS_REMOTE_ATOMIC, &mr)) {
		*syndrome = U4W_AETH_NAK_REM_ACCESS;
		return EXEC_NAK;
	}
	if (qp->njobs - qp->nreplays == U4V_MAX_QP_RD_ATOM) {
		*syndrome = U4W_AETH_NAK_INV_REQ; /* past max_dest_rd_atomic */
		return EXEC_NAK;
	}
	/*
	 * atomic against every other atomic on this target, in any process;
	 * ODP memory may be missing or read-only: a remote access error
	 */
	if (u4v_mr_atomic(mr, h->va, U4W_OP(h->opcode) == U4W_CMP_SWAP,
			  h->compare, h->swap_add, &orig)) {
		*syndrome = U4W_AETH_NAK_REM_ACCESS;
		return EXEC_NAK;
	}
	done = &qp->atomics[qp->atomic_next++ % U4V_MAX_QP_RD_ATOM];
	done->psn = h->psn;
	done->orig = orig;
	done->valid = true;
	u4v_resp_queue_atomic(qp, h->psn, orig, false);
	return EXEC_OK;
}

static enum exec_result exec_request(struct u4v_qp *qp,
				     const struct u4w_hdr *h,
				     const uint8_t *payload, uint8_t *syndrome)
{
	const struct u4w_opinfo *info = u4w_opinfo(h->opcode);

	if (info->flags & U4W_OPF_READ)
		return exec_read(qp, h, syndrome);
	if (info->flags & U4W_OPF_ATOMIC)
		return exec_atomic(qp, h, syndrome);
	if (info->flags & U4W_OPF_WRITE)
		return exec_write(qp, h, payload, syndrome);
	return exec_send(qp, h, payload, syndrome);
}

static void after_exec(struct u4v_qp *qp, const struct u4w_hdr *h,
		       enum exec_result r, uint8_t syndrome)
{
	const struct u4w_opinfo *info = u4w_opinfo(h->opcode);

	switch (r) {
	case EXEC_OK:
		qp->epsn = psn_add(qp->epsn, (info->flags & U4W_OPF_READ) ?
						     u4f_nframes(h->dma_len) :
						     1);
		if (info->flags & U4W_OPF_LAST)
			qp->msn = (qp->msn + 1) & U4V_PSN_MASK;
		u4v_resp_filled(qp);
		/* coalesce: ACK at message ends and every U4V_ACK_EVERY frames */
		if ((h->flags & U4W_F_ACKREQ) ||
		    ++qp->unacked >= U4V_ACK_EVERY ||
		    (info->flags & (U4W_OPF_READ | U4W_OPF_ATOMIC)))
			qp->ack_pending = true;
		break;
	case EXEC_RNR:
		u4l_count(&qp->ctx->cnt->rnr_naks_sent, 1);
		u4v_send_ack(qp, U4W_AETH_RNR_NAK, h->psn);
		break;
	case EXEC_NAK:
		qp->in_msg = false;
		qp->wr_mr = NULL;
		u4v_send_ack(qp, syndrome, h->psn);
		break;
	}
}

static void rc_frame(struct u4v_qp *qp, const struct u4w_hdr *h,
		     const uint8_t *payload, const void *frame, uint32_t len)
{
	int32_t d = psn_diff(h->psn, qp->epsn);
	enum exec_result r;
	uint8_t syndrome = 0;
	bool took = false;
	void *held;
	uint32_t hlen;

	if (d < 0) {
		u4v_resp_duplicate(qp, h);
		return;
	}
	if (d > 0) {
		u4v_resp_ahead(qp, h, payload, frame, len);
		return;
	}
	r = exec_request(qp, h, payload, &syndrome);
	after_exec(qp, h, r, syndrome);
	/* a tail that came before its head is executed now, in order */
	while (r == EXEC_OK) {
		struct u4w_hdr hh;
		bool placed;

		if (!u4f_reorder_take_placed(&qp->req_reorder, qp->epsn, &held,
					     &hlen, &placed))
			break;
		took = true;
		/* a placed frame kept only its header: its payload is in */
		if (!u4w_decode(held, placed ? hlen + u4w_peek_paylen(held) :
					       hlen,
				&hh)) {
			r = exec_request(qp, &hh,
					 placed ? NULL : u4w_payload(held, &hh),
					 &syndrome);
			after_exec(qp, &hh, r, syndrome);
		}
		free(held);
	}
	/* the hole filled; what was held ran up to the next one */
	if (took && r == EXEC_OK)
		u4v_resp_hole_check(qp);
}

bool u4v_rwqe_ready(struct u4v_qp *qp)
{
	if (qp->have_rwqe)
		return true;
	if (qp->srq)
		return __atomic_load_n(&qp->srq->rq.count, __ATOMIC_RELAXED) > 0;
	return qp->rq.count > 0;
}

/* Does this frame consume a receive WQE when it executes? */
static bool needs_rwqe(const struct u4w_hdr *h)
{
	unsigned int f = u4w_opinfo(h->opcode)->flags;

	/* a SEND takes it at its first frame, a WRITE with immediate at its
	 * last */
	return (f & U4W_OPF_SEND) && (f & (U4W_OPF_FIRST | U4W_OPF_WRITE));
}

/* UC: no ACKs; a message with a hole is dropped whole. */
static bool uc_frame(struct u4v_qp *qp, const struct u4w_hdr *h,
		     const uint8_t *payload, bool may_hold)
{
	const struct u4w_opinfo *info = u4w_opinfo(h->opcode);
	enum exec_result r;
	uint8_t syndrome;

	if (may_hold && h->psn == qp->epsn && !qp->uc_drop &&
	    needs_rwqe(h) && !u4v_rwqe_ready(qp))
		return false;

	if (h->psn != qp->epsn || (info->flags & U4W_OPF_FIRST)) {
		if (qp->in_msg) {
			/* abandon: the receive WQE is kept for the next one */
			qp->in_msg = false;
			qp->wr_mr = NULL;
		}
		qp->uc_drop = !(info->flags & U4W_OPF_FIRST);
	}
	qp->epsn = psn_add(h->psn, 1);
	if (qp->uc_drop)
		return true;
	r = exec_request(qp, h, payload, &syndrome);
	if (r != EXEC_OK) {
		qp->in_msg = false;
		qp->wr_mr = NULL;
		qp->uc_drop = !(info->flags & U4W_OPF_LAST);
	}
	return true;
}

bool u4v_resp_frame(struct u4v_qp *qp, struct u4v_peer *peer,
		    const struct u4w_hdr *h, const uint8_t *payload,
		    const void *frame, uint32_t len, bool may_hold)
{
	(void)peer;
	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS &&
	    qp->state != IBV_QPS_SQD)
		return true;
	if (qp->type == IBV_QPT_UC)
		return uc_frame(qp, h, payload, may_hold);
	rc_frame(qp, h, payload, frame, len);
	return true;
}
