// SPDX-License-Identifier: MIT
/*
 * The RC responder behind a hole: request frames that arrive after a
 * missing PSN. They are held until the hole fills and then executed in
 * order (qp/resp.c); what this file adds is that the payload of an RDMA
 * WRITE frame whose place is known goes straight into the MR, and that
 * the NAK asking for the hole is sent again while the hole stays.
 */
#include "engine_int.h"
#include "frag/frag.h"
#include "rel/psn.h"
#include "wire/opcode.h"

/*
 * NAK(sequence) again after this long while the hole stays, doubling up
 * to U4V_NAK_AGAIN_MAX_NS: a lost NAK or a lost resend would otherwise
 * wait for the requester's probe or its ACK timeout (10 and 67 ms at
 * perftest's setting). Longer than a resend takes on a busy host, most of
 * the time; one too early costs a duplicate frame.
 */
#define U4V_NAK_AGAIN_NS 500000ull
#define U4V_NAK_AGAIN_MAX_NS 16000000ull

/* The RDMA WRITE message a frame ahead belongs to: where its frames go. */
struct wr_msg {
	uint32_t first; /* PSN of its FIRST frame */
	uint32_t rkey;
	uint64_t va, len;
};

/* Does m hold h->psn as a frame before its last? *idx: its index. */
static bool msg_holds(const struct wr_msg *m, const struct u4w_hdr *h,
		      uint32_t *idx)
{
	int32_t d = psn_diff(h->psn, m->first);

	if (d < 0 || (uint32_t)d + 1 >= u4f_nframes(m->len))
		return false;
	*idx = (uint32_t)d;
	return true;
}

/*
 * The message of a WRITE frame ahead of a hole, if its place is known: the
 * message being written (its start PSN, va and length are), or the last
 * one whose FIRST frame came ahead of the hole, which is noted here. The
 * LAST frame of a message is not placed ahead, so its last byte is still
 * written last (an application may poll for it, as on hardware).
 */
static bool write_msg(struct u4v_qp *qp, const struct u4w_hdr *h,
		      struct wr_msg *m, uint32_t *idx)
{
	uint32_t op = U4W_OP(h->opcode);

	if (op == U4W_WRITE_FIRST) {
		if (!u4v_qp_allows(qp, IBV_ACCESS_REMOTE_WRITE) ||
		    h->dma_len > U4V_MAX_MSG_SZ)
			return false;
		qp->wr_ahead = (struct u4v_wr_ahead){
			.psn = h->psn, .rkey = h->rkey, .va = h->va,
			.len = h->dma_len, .valid = true };
		*m = (struct wr_msg){ h->psn, h->rkey, h->va, h->dma_len };
		return msg_holds(m, h, idx);
	}
	if (op != U4W_WRITE_MIDDLE)
		return false;
	if (qp->in_msg && qp->wr_mr) {
		/* every frame executed so far carried a whole granule */
		*m = (struct wr_msg){
			psn_add(qp->epsn, U4V_PSN_MASK + 1 -
					  (uint32_t)(qp->msg_off / U4W_GRANULE)),
			qp->wr_rkey, qp->wr_va, qp->wr_len };
		if (msg_holds(m, h, idx))
			return true;
	}
	/* a FIRST noted ahead is of use while it is still ahead */
	if (!qp->wr_ahead.valid || psn_diff(qp->wr_ahead.psn, qp->epsn) <= 0)
		return false;
	*m = (struct wr_msg){ qp->wr_ahead.psn, qp->wr_ahead.rkey,
			      qp->wr_ahead.va, qp->wr_ahead.len };
	return msg_holds(m, h, idx);
}

/*
 * Place the payload of WRITE frame h, ahead of a hole, into the MR and
 * hold only its header. Saves the copy into the reorder buffer and the
 * one out of it, which a busy receiver pays for every frame past every
 * hole. The key is checked for exactly the bytes written (and again when
 * the frame's turn comes); a frame that cannot be placed is held whole.
 */
static bool place_ahead(struct u4v_qp *qp, const struct u4w_hdr *h,
			const uint8_t *payload, const void *frame)
{
	struct u4v_mr *mr = NULL;
	struct wr_msg m;
	uint32_t idx;
	uint64_t va;

	if (!write_msg(qp, h, &m, &idx) ||
	    (U4W_OP(h->opcode) == U4W_WRITE_FIRST) != !idx ||
	    h->paylen != u4f_frame_len(m.len, idx))
		return false;
	va = m.va + (uint64_t)idx * U4W_GRANULE;
	/* written before it is held as placed: a write that fails (ODP
	 * memory gone) leaves the frame to be held whole and refused later */
	if (u4v_mr_check_remote(qp, m.rkey, va, h->paylen,
				IBV_ACCESS_REMOTE_WRITE, &mr) ||
	    u4v_mr_write(mr, va, payload, h->paylen))
		return false;
	return !u4f_reorder_hold_placed(&qp->req_reorder, qp->epsn, h->psn,
					frame, u4w_hdr_len(h->opcode, h->flags));
}

/* Ask for epsn: NAK(sequence), and when to ask again. */
static void nak_hole(struct u4v_qp *qp, uint64_t now)
{
	uint64_t wait = U4V_NAK_AGAIN_NS << (qp->naks < 5 ? qp->naks : 5);

	if (wait > U4V_NAK_AGAIN_MAX_NS)
		wait = U4V_NAK_AGAIN_MAX_NS;
	qp->nak_sent = true;
	qp->nak_due = now + wait;
	qp->naks++;
	u4l_count(&qp->ctx->cnt->seq_naks_sent, 1);
	u4v_send_ack(qp, U4W_AETH_NAK_SEQ, qp->epsn);
}

void u4v_resp_ahead(struct u4v_qp *qp, const struct u4w_hdr *h,
		    const uint8_t *payload, const void *frame, uint32_t len)
{
	uint64_t now;

	if (place_ahead(qp, h, payload, frame) ||
	    !u4f_reorder_hold(&qp->req_reorder, qp->epsn, h->psn, frame,
			      len - h->paylen, payload, h->paylen))
		u4l_count(&qp->ctx->cnt->ooo_frames, 1);
	now = u4v_now();
	if (!qp->nak_sent || now >= qp->nak_due)
		nak_hole(qp, now);
}

void u4v_resp_hole_check(struct u4v_qp *qp)
{
	if (!qp->nak_sent && qp->req_reorder.count)
		nak_hole(qp, u4v_now());
}

void u4v_resp_filled(struct u4v_qp *qp)
{
	qp->nak_sent = false;
	qp->nak_due = 0;
	qp->naks = 0;
}

uint64_t u4v_resp_timer(struct u4v_qp *qp, uint64_t now)
{
	if (qp->type != IBV_QPT_RC || !qp->nak_due ||
	    (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS &&
	     qp->state != IBV_QPS_SQD))
		return 0;
	if (now >= qp->nak_due)
		nak_hole(qp, now);
	return qp->nak_due;
}
