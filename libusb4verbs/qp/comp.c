// SPDX-License-Identifier: MIT
/*
 * The completer: ACKs, NAKs, READ responses and atomic responses arriving
 * at the requester. It decides which WQEs are done and what to send again.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "frag/frag.h"
#include "rel/psn.h"
#include "rel/timer.h"
#include "wire/opcode.h"

static bool is_rd_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static void finish(struct u4v_qp *qp, struct u4v_swqe *w,
		   enum ibv_wc_status status)
{
	if (w->state == U4V_WQE_DONE)
		return;
	if (w->state == U4V_WQE_SENT && is_rd_atomic(w->opcode) &&
	    qp->rd_pending)
		qp->rd_pending--;
	w->state = U4V_WQE_DONE;
	w->status = status;
}

/*
 * Everything up to and including psn is acknowledged. A WQE covered by the
 * ACK is done whatever its state: after a rewind its frames may be queued
 * for resending while the originals were in fact delivered.
 */
static void ack_to(struct u4v_qp *qp, uint32_t psn)
{
	uint32_t i = qp->sq_head, n;
	uint32_t last_sent = psn_add(qp->sq_psn, U4V_PSN_MASK);

	if (psn_diff(psn, qp->acked_psn) <= 0 || psn_diff(psn, last_sent) > 0)
		return;
	qp->acked_psn = psn;
	qp->retries_left = qp->retry_cnt;
	qp->rnr_left = qp->rnr_retry;
	qp->dup_acks = 0;
	u4v_req_arm_timer(qp, u4v_now());
	for (n = 0; n < qp->sq_count; n++, i++) {
		struct u4v_swqe *w = u4v_sq_at(qp, i);
		uint32_t last = psn_add(w->first_psn, w->npsn - 1);

		if (!w->psn_assigned || psn_diff(last, psn) > 0)
			break;
		if (w->state == U4V_WQE_DONE)
			continue;
		if (!is_rd_atomic(w->opcode)) {
			w->state = U4V_WQE_SENT; /* so finish() counts it */
			finish(qp, w, IBV_WC_SUCCESS);
		} else if (!qp->resend_one) {
			/* acknowledged past a read whose data is missing */
			qp->resend_one = true;
			qp->resend_psn = psn_add(w->first_psn, w->resp_frames);
		}
	}
	/* the send cursor never rests on a finished WQE */
	while (qp->sq_send != qp->sq_tail &&
	       u4v_sq_at(qp, qp->sq_send)->state == U4V_WQE_DONE)
		qp->sq_send = qp->sq_send + 1;
}

static void fail_at(struct u4v_qp *qp, uint32_t psn, enum ibv_wc_status st)
{
	struct u4v_swqe *w = u4v_req_find(qp, psn);

	if (!w)
		w = u4v_sq_at(qp, qp->sq_head);
	if (qp->sq_count)
		finish(qp, w, st);
}

static void on_aeth(struct u4v_qp *qp, const struct u4w_hdr *h)
{
	uint32_t prev = psn_add(h->psn, U4V_PSN_MASK);
	struct u4l_counters *cnt = qp->ctx->cnt;

	switch (h->syndrome) {
	case U4W_AETH_ACK:
		if (h->psn == qp->acked_psn &&
		    psn_add(qp->acked_psn, 1) != qp->sq_psn) {
			__atomic_fetch_add(&cnt->dup_acks, 1, __ATOMIC_RELAXED);
			if (++qp->dup_acks == U4V_DUP_ACK_THRESH) {
				qp->dup_acks = 0;
				qp->resend_one = true;
				qp->resend_psn = psn_add(qp->acked_psn, 1);
			}
		}
		ack_to(qp, h->psn);
		break;
	case U4W_AETH_RNR_NAK:
		ack_to(qp, prev);
		__atomic_fetch_add(&cnt->rnr_naks_rcvd, 1, __ATOMIC_RELAXED);
		if (qp->rnr_retry != 7) {
			if (!qp->rnr_left) {
				fail_at(qp, h->psn, IBV_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			qp->rnr_left--;
		}
		qp->rnr_deadline = u4v_now() + u4v_rnr_delay_ns(h->rnr_timer);
		qp->retry_deadline = qp->probe_deadline = 0;
		qp->resend_one = false;
		u4v_req_rewind(qp, h->psn);
		break;
	case U4W_AETH_NAK_SEQ:
		ack_to(qp, prev);
		__atomic_fetch_add(&cnt->seq_naks_rcvd, 1, __ATOMIC_RELAXED);
		qp->resend_one = true;
		qp->resend_psn = h->psn;
		break;
	case U4W_AETH_NAK_INV_REQ:
		ack_to(qp, prev);
		fail_at(qp, h->psn, IBV_WC_REM_INV_REQ_ERR);
		break;
	case U4W_AETH_NAK_REM_ACCESS:
		ack_to(qp, prev);
		fail_at(qp, h->psn, IBV_WC_REM_ACCESS_ERR);
		break;
	default:
		ack_to(qp, prev);
		fail_at(qp, h->psn, IBV_WC_REM_OP_ERR);
		break;
	}
}

/* The oldest READ / atomic WQE still waiting for its response. */
static struct u4v_swqe *waiting_response(struct u4v_qp *qp)
{
	uint32_t i = qp->sq_head, n;

	for (n = 0; n < qp->sq_count; n++, i++) {
		struct u4v_swqe *w = u4v_sq_at(qp, i);

		if (!w->psn_assigned)
			break;
		if (w->state == U4V_WQE_SENT && is_rd_atomic(w->opcode))
			return w;
	}
	return NULL;
}

static uint32_t expected_resp_psn(const struct u4v_swqe *w)
{
	return psn_add(w->first_psn, w->resp_frames);
}

/* Place one in-order response. False: malformed, dropped. */
static bool take_response(struct u4v_qp *qp, struct u4v_swqe *w,
			  const struct u4w_hdr *h, const uint8_t *payload)
{
	uint32_t op = U4W_OP(h->opcode);

	if (h->syndrome != U4W_AETH_ACK)
		return false;
	if (w->opcode == IBV_WR_RDMA_READ) {
		uint32_t idx = w->resp_frames;
		bool first = idx == 0, last = idx + 1 == w->npsn;
		uint32_t want = first && last ? U4W_READ_RESP_ONLY :
				first	      ? U4W_READ_RESP_FIRST :
				last	      ? U4W_READ_RESP_LAST :
						U4W_READ_RESP_MIDDLE;

		/* a re-requested read restarts with FIRST/ONLY mid-way */
		if (op != want && !(idx && (op == U4W_READ_RESP_FIRST ||
					    op == U4W_READ_RESP_ONLY) &&
				    (want == U4W_READ_RESP_MIDDLE ||
				     want == U4W_READ_RESP_LAST)))
			return false;
		if (h->paylen != u4f_frame_len(w->length, idx))
			return false;
		u4v_sge_copy_in(w->sge, w->num_sge,
				(uint64_t)idx * U4W_GRANULE, payload,
				h->paylen);
		w->resp_frames++;
		if (w->resp_frames == w->npsn)
			finish(qp, w, IBV_WC_SUCCESS);
	} else {
		if (op != U4W_ATOMIC_ACK)
			return false;
		memcpy((void *)(uintptr_t)w->sge[0].addr, &h->orig, 8);
		w->resp_frames = 1;
		finish(qp, w, IBV_WC_SUCCESS);
	}
	ack_to(qp, h->psn);
	return true;
}

static void on_response(struct u4v_qp *qp, const struct u4w_hdr *h,
			const uint8_t *payload, const void *frame,
			uint32_t len)
{
	struct u4v_swqe *w = waiting_response(qp);
	void *held;
	uint32_t hlen;
	int32_t d;

	if (!w)
		return; /* stale duplicate */
	d = psn_diff(h->psn, expected_resp_psn(w));
	if (d < 0)
		return;
	if (d > 0) {
		if (!u4f_reorder_hold(&qp->resp_reorder, expected_resp_psn(w),
				      h->psn, frame, len))
			__atomic_fetch_add(&qp->ctx->cnt->ooo_frames, 1,
					   __ATOMIC_RELAXED);
		return;
	}
	if (!take_response(qp, w, h, payload))
		return;
	/* frames that were waiting for this one */
	while ((w = waiting_response(qp)) &&
	       u4f_reorder_take(&qp->resp_reorder, expected_resp_psn(w), &held,
				&hlen)) {
		struct u4w_hdr hh;

		if (!u4w_decode(held, hlen, &hh))
			take_response(qp, w, &hh,
				      (const uint8_t *)held +
					      u4w_hdr_len(hh.opcode));
		free(held);
	}
}

void u4v_comp_frame(struct u4v_qp *qp, const struct u4w_hdr *h,
		    const uint8_t *payload, const void *frame, uint32_t len)
{
	if (qp->type != IBV_QPT_RC ||
	    (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD))
		return;
	if (U4W_OP(h->opcode) == U4W_ACK)
		on_aeth(qp, h);
	else
		on_response(qp, h, payload, frame, len);
	u4v_req_complete_ready(qp);
	if (qp->state != IBV_QPS_ERR)
		u4v_qp_tx(qp);
}
