// SPDX-License-Identifier: MIT
/*
 * The completer: ACKs, NAKs, READ responses and atomic responses arriving
 * at the requester. It decides which WQEs are done and what to send again,
 * and produces the send queue's completions, in order.
 */
#include <string.h>

#include "engine_int.h"
#include "frag/frag.h"
#include "rel/psn.h"
#include "rel/timer.h"
#include "wire/opcode.h"

static void finish(struct u4v_swqe *w, enum ibv_wc_status status)
{
	if (w->state == U4V_WQE_DONE)
		return;
	w->state = U4V_WQE_DONE;
	w->status = status;
}

/* Forward progress: the retry budgets are whole again, the timer restarts. */
static void progress(struct u4v_qp *qp)
{
	qp->retries_left = qp->retry_cnt;
	qp->rnr_left = qp->rnr_retry;
	qp->busy_waits = 0;
	u4v_req_arm_timer(qp, u4v_now());
}

/*
 * The PSNs [*a, *b] of READ / atomic WQE w within [lo, hi], if it still
 * waits for responses there.
 */
static bool rd_span(const struct u4v_swqe *w, uint32_t lo, uint32_t hi,
		    uint32_t *a, uint32_t *b)
{
	uint32_t last = psn_add(w->first_psn, w->npsn - 1);

	if (!u4v_rd_atomic(w->opcode) || w->state == U4V_WQE_DONE ||
	    psn_lt(last, lo) || psn_lt(hi, w->first_psn))
		return false;
	*a = psn_lt(w->first_psn, lo) ? lo : w->first_psn;
	*b = psn_lt(hi, last) ? hi : last;
	return true;
}

/*
 * The responder sent every response up to psn (an ACK or a later response
 * says so): those of (acked_psn, psn] that have not come are lost, holes
 * to ask for again. Returns the PSN up to which they could be noted: psn,
 * or less when the hole table is full.
 */
static uint32_t note_lost(struct u4v_qp *qp, uint32_t psn)
{
	uint32_t lo = psn_add(qp->acked_psn, 1), i = qp->sq_head, n, a, b;

	if (psn_lt(psn, lo))
		return psn;
	for (n = 0; n < qp->sq_count; n++, i++) {
		struct u4v_swqe *w = u4v_sq_at(qp, i);

		if (!w->psn_assigned || psn_lt(psn, w->first_psn))
			break;
		if (rd_span(w, lo, psn, &a, &b) &&
		    u4v_holes_add(&qp->rd_holes, a,
				  (uint32_t)psn_diff(b, a) + 1))
			return psn_add(a, U4V_PSN_MASK);
	}
	return psn;
}

/*
 * A NAK says which requests arrived, not which READ responses went out
 * (they may still wait in the responder's queue): it acknowledges no
 * further than the first READ / atomic response not in yet.
 */
static uint32_t nak_limit(struct u4v_qp *qp, uint32_t psn)
{
	uint32_t lo = psn_add(qp->acked_psn, 1), i = qp->sq_head, n, a, b;

	for (n = 0; n < qp->sq_count; n++, i++) {
		struct u4v_swqe *w = u4v_sq_at(qp, i);

		if (!w->psn_assigned || psn_lt(psn, w->first_psn))
			break;
		if (rd_span(w, lo, psn, &a, &b))
			return psn_add(a, U4V_PSN_MASK);
	}
	return psn;
}

enum ack_kind {
	ACK_AETH,     /* an ACK: every response up to it was sent */
	ACK_RESPONSE, /* a response, placed by the caller */
	ACK_NAK,      /* the PSN before a NAK's */
};

/*
 * Everything up to and including psn is acknowledged. A SEND / WRITE
 * covered by it is done whatever its state: after a rewind its frames may
 * be queued for resending while the originals were in fact delivered. A
 * READ or atomic is done when its responses are in. False if psn could not
 * be taken (nothing new, or no room to note the responses it overtook).
 */
static bool ack_to(struct u4v_qp *qp, uint32_t psn, enum ack_kind kind)
{
	uint32_t i = qp->sq_head, n, upto;
	uint32_t last_sent = psn_add(qp->sq_psn, U4V_PSN_MASK);

	if (psn_diff(psn, qp->acked_psn) <= 0 || psn_diff(psn, last_sent) > 0)
		return false;
	if (kind == ACK_NAK) {
		upto = nak_limit(qp, psn);
	} else {
		uint32_t before = kind == ACK_RESPONSE ?
					  psn_add(psn, U4V_PSN_MASK) :
					  psn;

		upto = note_lost(qp, before);
		if (upto == before)
			upto = psn;
	}
	if (psn_diff(upto, qp->acked_psn) <= 0)
		return false;
	qp->acked_psn = upto;
	qp->dup_acks = 0;
	progress(qp);
	for (n = 0; n < qp->sq_count; n++, i++) {
		struct u4v_swqe *w = u4v_sq_at(qp, i);
		uint32_t last = psn_add(w->first_psn, w->npsn - 1);

		if (!w->psn_assigned || psn_diff(last, upto) > 0)
			break;
		if (w->state != U4V_WQE_DONE && !u4v_rd_atomic(w->opcode))
			finish(w, IBV_WC_SUCCESS);
	}
	/* the send cursor never rests on a finished WQE */
	while (qp->sq_send != qp->sq_tail &&
	       u4v_sq_at(qp, qp->sq_send)->state == U4V_WQE_DONE)
		qp->sq_send = qp->sq_send + 1;
	return upto == psn;
}

/*
 * A NAK ends the WQE its PSN belongs to. One that names no outstanding WQE
 * answers a stale duplicate (a READ request that was sent again and served
 * again after the original completed): it is dropped, never charged to
 * another WQE.
 */
static void fail_at(struct u4v_qp *qp, uint32_t psn, enum ibv_wc_status st)
{
	struct u4v_swqe *w = u4v_req_find(qp, psn);

	if (w)
		finish(w, st);
}

/*
 * Does an ACK that repeats acked_psn hint at a lost request frame? Only if
 * a SEND / WRITE follows: a responder also repeats its ACK after each READ
 * it served, and lost READ responses are holes, found otherwise.
 */
static bool dup_ack_counts(struct u4v_qp *qp)
{
	uint32_t next = psn_add(qp->acked_psn, 1);
	struct u4v_swqe *w;

	if (next == qp->sq_psn)
		return false;
	w = u4v_req_find(qp, next);
	return w && !u4v_rd_atomic(w->opcode);
}

static void on_aeth(struct u4v_qp *qp, const struct u4w_hdr *h)
{
	uint32_t prev = psn_add(h->psn, U4V_PSN_MASK);
	struct u4l_counters *cnt = qp->ctx->cnt;

	switch (h->syndrome) {
	case U4W_AETH_ACK:
		if (h->psn == qp->acked_psn && dup_ack_counts(qp)) {
			u4l_count(&cnt->dup_acks, 1);
			if (++qp->dup_acks == U4V_DUP_ACK_THRESH) {
				qp->dup_acks = 0;
				qp->resend_one = true;
				qp->resend_psn = u4v_req_oldest_missing(qp);
			}
		}
		ack_to(qp, h->psn, ACK_AETH);
		break;
	case U4W_AETH_RNR_NAK:
		ack_to(qp, prev, ACK_NAK);
		u4l_count(&cnt->rnr_naks_rcvd, 1);
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
		ack_to(qp, prev, ACK_NAK);
		u4l_count(&cnt->seq_naks_rcvd, 1);
		qp->resend_one = true;
		qp->resend_psn = h->psn;
		break;
	case U4W_AETH_NAK_INV_REQ:
		ack_to(qp, prev, ACK_NAK);
		fail_at(qp, h->psn, IBV_WC_REM_INV_REQ_ERR);
		break;
	case U4W_AETH_NAK_REM_ACCESS:
		ack_to(qp, prev, ACK_NAK);
		fail_at(qp, h->psn, IBV_WC_REM_ACCESS_ERR);
		break;
	default:
		ack_to(qp, prev, ACK_NAK);
		fail_at(qp, h->psn, IBV_WC_REM_OP_ERR);
		break;
	}
}

/* Is h a well-formed response for w? */
static bool response_fits(const struct u4v_swqe *w, const struct u4w_hdr *h)
{
	uint32_t op = U4W_OP(h->opcode);
	uint32_t idx = (uint32_t)psn_diff(h->psn, w->first_psn);

	if (h->syndrome != U4W_AETH_ACK)
		return false;
	if (!(u4w_wr_flags(w->opcode) & U4W_WRF_READ))
		return op == U4W_ATOMIC_ACK;
	if (op == U4W_ATOMIC_ACK)
		return false;
	/* a part asked for again begins with FIRST (or is ONLY) anywhere */
	if (idx == 0 && op != U4W_READ_RESP_FIRST && op != U4W_READ_RESP_ONLY)
		return false;
	if (idx + 1 == w->npsn && op != U4W_READ_RESP_LAST &&
	    op != U4W_READ_RESP_ONLY)
		return false;
	return h->paylen == u4f_frame_len(w->length, idx);
}

/*
 * A READ or atomic response. Every frame has its place (frame i of a READ
 * at i * granule), so one that overtook lost ones is placed at once and
 * the lost ones become holes; a hole's frame fills it. Anything else is a
 * duplicate.
 */
static void on_response(struct u4v_qp *qp, const struct u4w_hdr *h,
			const uint8_t *payload)
{
	struct u4v_swqe *w = u4v_req_find(qp, h->psn);
	enum ibv_wc_status st;
	uint32_t seq = 0;

	if (!w || !u4v_rd_atomic(w->opcode) || w->state == U4V_WQE_DONE) {
		u4l_count(&qp->ctx->cnt->dup_frames_rcvd, 1);
		return;
	}
	if (!response_fits(w, h)) {
		u4l_count(&qp->ctx->cnt->bad_frames, 1);
		return;
	}
	if (psn_diff(h->psn, qp->acked_psn) > 0) {
		if (!ack_to(qp, h->psn, ACK_RESPONSE))
			return; /* no room to note what it overtook: lost */
	} else {
		int r = u4v_holes_fill(&qp->rd_holes, h->psn, &seq);

		if (r <= 0) {
			if (!r)
				u4l_count(&qp->ctx->cnt->dup_frames_rcvd, 1);
			return;
		}
		/* asks are served in order: older ones still open were lost */
		if (seq)
			u4v_holes_reask(&qp->rd_holes, seq);
		progress(qp);
	}
	/* the local buffers are checked as they are written */
	if (u4w_wr_flags(w->opcode) & U4W_WRF_READ)
		st = u4v_sge_copy_in(qp->pd, w->sge, w->num_sge,
				     (uint64_t)psn_diff(h->psn, w->first_psn) *
					     U4W_GRANULE,
				     payload, h->paylen);
	else
		st = u4v_sge_copy_in(qp->pd, w->sge, 1, 0, &h->orig, 8);
	if (st || ++w->resp_placed == w->npsn)
		finish(w, st);
}

/* A send WQE's completion, if it is signaled or failed. */
static void send_wc(struct u4v_qp *qp, const struct u4v_swqe *w,
		    enum ibv_wc_status status, enum ibv_wc_opcode opcode,
		    uint32_t byte_len)
{
	struct ibv_wc wc;

	if (!status && !qp->sq_sig_all && !(w->send_flags & IBV_SEND_SIGNALED))
		return;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = status;
	wc.opcode = opcode;
	wc.byte_len = byte_len;
	wc.qp_num = qp->qpn;
	u4v_cq_push(qp->scq, &wc, false);
}

/*
 * Retire finished WQEs in order and produce their completions, whoever
 * finished them: an ACK or response here, the requester (a UD send on its
 * way, a local operation, a payload it could not read, the retry timer).
 * The first error takes the QP down.
 */
void u4v_comp_retire(struct u4v_qp *qp)
{
	while (qp->sq_count) {
		struct u4v_swqe *w = u4v_sq_at(qp, qp->sq_head);

		if (w->state != U4V_WQE_DONE)
			break;
		/*
		 * The first error takes the QP down: it is in ERR before its
		 * completion can be polled (an application that sees the error
		 * and queries the QP finds ERR), the rest is flushed after it.
		 */
		if (w->status)
			u4v_qp_enter_error(qp);
		send_wc(qp, w, w->status, u4w_wc_opcode(w->opcode),
			(uint32_t)w->length);
		if (qp->sq_send == qp->sq_head)
			qp->sq_send = qp->sq_send + 1;
		if (w->psn_assigned && qp->type == IBV_QPT_RC &&
		    u4v_rd_atomic(w->opcode) && qp->rd_pending)
			qp->rd_pending--;
		qp->sq_head = qp->sq_head + 1;
		qp->sq_count--;
		if (w->status) {
			u4v_qp_flush(qp);
			return;
		}
	}
}

/*
 * The QP is in ERR: every WQE left in the send queue completes flushed
 * (one that finished with an error keeps its status).
 */
void u4v_comp_flush(struct u4v_qp *qp)
{
	while (qp->sq_count) {
		struct u4v_swqe *w = u4v_sq_at(qp, qp->sq_head);
		bool done = w->state == U4V_WQE_DONE;

		send_wc(qp, w, done ? w->status : IBV_WC_WR_FLUSH_ERR,
			IBV_WC_SEND, 0);
		qp->sq_head = qp->sq_head + 1;
		qp->sq_count--;
	}
	qp->sq_send = qp->sq_tail = qp->sq_head;
	qp->rd_pending = 0;
}

void u4v_comp_frame(struct u4v_qp *qp, const struct u4w_hdr *h,
		    const uint8_t *payload)
{
	if (qp->type != IBV_QPT_RC ||
	    (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD))
		return;
	if (U4W_OP(h->opcode) == U4W_ACK)
		on_aeth(qp, h);
	else
		on_response(qp, h, payload);
	u4v_comp_retire(qp);
	if (qp->state != IBV_QPS_ERR)
		u4v_qp_tx(qp);
}
