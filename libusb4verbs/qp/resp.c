// SPDX-License-Identifier: MIT
/*
 * The responder (RC and UC): executes request frames in PSN order, holds
 * frames that arrive ahead of their turn, answers with coalesced ACKs, NAKs,
 * READ responses and atomic responses. There is no receiver-side watchdog:
 * only the requester's retransmit timer decides that a peer is gone.
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

static bool qp_allows(const struct u4v_qp *qp, int access)
{
	return (qp->access & access) == access;
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
	if (!qp_allows(qp, access))
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

static enum exec_result exec_write(struct u4v_qp *qp, const struct u4w_hdr *h,
				   const uint8_t *payload, uint8_t *syndrome)
{
	const struct u4w_opinfo *info = u4w_opinfo(h->opcode);
	struct u4v_mr *mr = NULL;

	/*
	 * The immediate needs a receive WQE: find it before anything changes,
	 * since an RNR NAK makes the requester send this very frame again.
	 */
	if ((info->flags & U4W_OPF_IMM) && !take_rwqe(qp))
		return EXEC_RNR;
	if (info->flags & U4W_OPF_FIRST) {
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
	} else if (!qp->in_msg || !qp->wr_mr) {
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	if (qp->msg_off + h->paylen > qp->wr_len ||
	    (!(info->flags & U4W_OPF_LAST) && h->paylen != U4W_GRANULE) ||
	    ((info->flags & U4W_OPF_LAST) &&
	     qp->msg_off + h->paylen != qp->wr_len)) {
		qp->in_msg = false;
		qp->wr_mr = NULL;
		*syndrome = U4W_AETH_NAK_INV_REQ;
		return EXEC_NAK;
	}
	/*
	 * The MR may have been deregistered since the first frame: check the
	 * key again for the bytes this frame writes (dereg_mr waits for us).
	 */
	if (h->paylen &&
	    u4v_mr_check_remote(qp, qp->wr_rkey, qp->wr_va + qp->msg_off,
				h->paylen, IBV_ACCESS_REMOTE_WRITE, &mr)) {
		qp->in_msg = false;
		qp->wr_mr = NULL;
		*syndrome = U4W_AETH_NAK_REM_ACCESS;
		return EXEC_NAK;
	}
	/* payload NULL: placed ahead (place_ahead); ODP memory may be gone */
	if (h->paylen && payload &&
	    u4v_mr_write(mr, qp->wr_va + qp->msg_off, payload, h->paylen)) {
		qp->in_msg = false;
		qp->wr_mr = NULL;
		*syndrome = U4W_AETH_NAK_REM_ACCESS;
		return EXEC_NAK;
	}
	qp->msg_off += h->paylen;
	if (info->flags & U4W_OPF_LAST) {
		qp->in_msg = false;
		qp->wr_mr = NULL;
		if (info->flags & U4W_OPF_IMM)
			recv_complete(qp, IBV_WC_SUCCESS,
				      IBV_WC_RECV_RDMA_WITH_IMM,
				      (uint32_t)qp->wr_len, h);
	}
	return EXEC_OK;
}

/*
 * Queue a response job. A replay goes behind the replays already queued,
 * ahead of new requests: a requester asks again for what it lost and
 * expects those answers in the order it asked. NULL when full.
 */
static struct u4v_resp_job *add_job(struct u4v_qp *qp, uint32_t psn,
				    bool replay)
{
	struct u4v_resp_job *job;
	uint32_t at = replay ? qp->nreplays : qp->njobs;

	if (replay ? qp->nreplays == U4V_RESP_REPLAYS :
		     qp->njobs - qp->nreplays == U4V_MAX_QP_RD_ATOM)
		return NULL;
	memmove(&qp->jobs[at + 1], &qp->jobs[at],
		sizeof(*qp->jobs) * (qp->njobs - at));
	qp->njobs++;
	qp->nreplays += replay;
	job = &qp->jobs[at];
	memset(job, 0, sizeof(*job));
	job->psn = psn;
	job->nframes = 1;
	return job;
}

/* READ responses [psn, ...) for len bytes from va. */
static bool add_read_job(struct u4v_qp *qp, uint32_t psn, uint64_t va,
			 uint64_t len, uint32_t rkey, bool replay)
{
	struct u4v_resp_job *job = add_job(qp, psn, replay);

	if (!job)
		return false;
	job->nframes = u4f_nframes(len);
	job->va = va;
	job->len = len;
	job->rkey = rkey;
	return true;
}

static bool add_atomic_job(struct u4v_qp *qp, uint32_t psn, uint64_t orig,
			   bool replay)
{
	struct u4v_resp_job *job = add_job(qp, psn, replay);

	if (!job)
		return false;
	job->atomic = true;
	job->orig = orig;
	return true;
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
	    !add_read_job(qp, h->psn, h->va, h->dma_len, h->rkey, false)) {
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
	if (!qp_allows(qp, IBV_ACCESS_REMOTE_ATOMIC) ||
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
	add_atomic_job(qp, h->psn, orig, false);
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

/* Build an AETH-carrying frame. Caller holds peer->tx_lock. */
static bool emit_aeth(struct u4v_qp *qp, uint8_t op, uint8_t syndrome,
		      uint32_t psn, uint64_t orig)
{
	struct u4w_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = U4W_RC | op;
	h.dst_qpn = qp->dest_qpn;
	h.src_qpn = qp->qpn;
	h.psn = psn;
	h.syndrome = syndrome;
	h.rnr_timer = qp->min_rnr_timer;
	h.msn = qp->msn;
	h.orig = orig;
	return !u4v_tx_frame(qp->peer, &h, NULL, 0, NULL, NULL, 0, 0);
}

static bool send_now(struct u4v_qp *qp, uint8_t op, uint8_t syndrome,
		     uint32_t psn, uint64_t orig)
{
	struct u4v_peer *peer = qp->peer;
	bool ok;

	pthread_mutex_lock(&peer->tx_lock);
	ok = emit_aeth(qp, op, syndrome, psn, orig);
	u4v_tx_doorbell(peer);
	pthread_mutex_unlock(&peer->tx_lock);
	return ok;
}

void u4v_send_ack(struct u4v_qp *qp, uint8_t syndrome, uint32_t psn)
{
	if (!send_now(qp, U4W_ACK, syndrome, psn, 0) &&
	    syndrome == U4W_AETH_ACK) {
		qp->ack_pending = true;
		u4v_peer_schedule(qp->peer, qp);
	}
}

/* The PSN an ACK may cover: not past READ responses still unsent. */
static uint32_t ackable_psn(const struct u4v_qp *qp)
{
	uint32_t a = psn_add(qp->epsn, U4V_PSN_MASK);

	if (qp->njobs > qp->nreplays) {
		const struct u4v_resp_job *job = &qp->jobs[qp->nreplays];
		uint32_t lim = psn_add(job->psn + job->next, U4V_PSN_MASK);

		if (psn_lt(lim, a))
			a = lim;
	}
	return a;
}

/*
 * Response frame k of a READ job, read from the memory its rkey names now
 * (checked again for every frame). 0, U4V_TX_FULL, or an error status: the
 * MR or window went, or its memory could not be read, while being read.
 * A replay serves again what was sent before: by then its requester may
 * have the data and the application may have freed the buffer under a live
 * MR, which a registration cache (UCX's) deregisters only later (hardware
 * would read the pinned pages). A replay therefore reads with a copy that
 * cannot fault, where this process may make one (odp.c).
 */
static int read_frame(struct u4v_qp *qp, const struct u4v_resp_job *job,
		      uint32_t k, bool replay)
{
	uint8_t replay_buf[U4W_GRANULE];
	uint32_t n = job->nframes;
	uint32_t op = n == 1	     ? U4W_READ_RESP_ONLY :
		      k == 0	     ? U4W_READ_RESP_FIRST :
		      k + 1 == n     ? U4W_READ_RESP_LAST :
				       U4W_READ_RESP_MIDDLE;
	uint32_t len = u4f_frame_len(job->len, k);
	uint64_t va = job->va + (uint64_t)k * U4W_GRANULE;
	struct u4v_mr *mr = NULL;
	struct ibv_sge src;
	struct u4w_hdr h;

	if (len && u4v_mr_check_remote(qp, job->rkey, va, len,
				       IBV_ACCESS_REMOTE_READ, &mr))
		return IBV_WC_REM_ACCESS_ERR;
	memset(&h, 0, sizeof(h));
	h.opcode = U4W_RC | op;
	h.dst_qpn = qp->dest_qpn;
	h.src_qpn = qp->qpn;
	h.psn = psn_add(job->psn, k);
	h.msn = qp->msn;
	h.paylen = (uint16_t)len;
	if (replay && len && u4v_odp_available()) {
		if (u4v_odp_read(replay_buf, va, len))
			return IBV_WC_REM_ACCESS_ERR;
		return u4v_tx_frame(qp->peer, &h, replay_buf, len, NULL, NULL,
				    0, 0);
	}
	src = (struct ibv_sge){ va, len, mr ? mr->lkey : 0 };
	return u4v_tx_frame(qp->peer, &h, NULL, len, qp->pd, &src, 1, 0);
}

/* READ responses and the pending ACK. Caller holds peer->tx_lock. */
static bool resp_tx_locked(struct u4v_qp *qp)
{
	while (qp->njobs) {
		struct u4v_resp_job *job = &qp->jobs[0];
		bool replay = qp->nreplays != 0; /* replays come first */

		if (job->atomic && !job->next) {
			if (!emit_aeth(qp, U4W_ATOMIC_ACK, U4W_AETH_ACK,
				       job->psn, job->orig))
				return false;
			job->next = 1;
		}
		while (job->next < job->nframes) {
			int ret = read_frame(qp, job, job->next, replay);

			if (ret == U4V_TX_FULL)
				return false;
			if (ret) {
				if (!emit_aeth(qp, U4W_ACK,
					       U4W_AETH_NAK_REM_ACCESS,
					       psn_add(job->psn, job->next), 0))
					return false;
				job->next = job->nframes;
				break;
			}
			job->next++;
		}
		memmove(&qp->jobs[0], &qp->jobs[1],
			sizeof(*qp->jobs) * --qp->njobs);
		if (qp->nreplays)
			qp->nreplays--;
		else
			qp->ack_pending = true;
	}
	if (qp->ack_pending) {
		if (!emit_aeth(qp, U4W_ACK, U4W_AETH_ACK, ackable_psn(qp), 0))
			return false;
		qp->ack_pending = false;
		qp->ack_due = 0;
		qp->unacked = 0;
	}
	return true;
}

void u4v_resp_tx(struct u4v_qp *qp)
{
	struct u4v_peer *peer = qp->peer;
	bool done;

	if (qp->type != IBV_QPT_RC || !peer ||
	    (!qp->njobs && !qp->ack_pending))
		return;
	pthread_mutex_lock(&peer->tx_lock);
	done = resp_tx_locked(qp);
	u4v_tx_doorbell(peer);
	pthread_mutex_unlock(&peer->tx_lock);
	if (!done)
		u4v_peer_schedule(peer, qp);
}

void u4v_resp_flush_ack(struct u4v_qp *qp)
{
	u4v_resp_tx(qp);
}

/* Is a response for psn queued and not sent yet? */
static bool job_queued(const struct u4v_qp *qp, uint32_t psn)
{
	uint32_t i;

	for (i = 0; i < qp->njobs; i++) {
		const struct u4v_resp_job *job = &qp->jobs[i];
		int32_t d = psn_diff(psn, job->psn);

		if (d >= (int32_t)job->next && (uint32_t)d < job->nframes)
			return true;
	}
	return false;
}

/* Responses of READ rec sent so far (the rest is still to come). */
static uint32_t read_sent(const struct u4v_qp *qp,
			  const struct u4v_read_rec *rec)
{
	uint32_t i;

	for (i = qp->nreplays; i < qp->njobs; i++)
		if (qp->jobs[i].psn == rec->psn)
			return qp->jobs[i].next;
	return rec->nframes;
}

/*
 * A READ request again: the requester lost responses (or the request was
 * duplicated). If it asks for a part of a READ executed lately (the same
 * va, rkey, length within it), that part is served again from the MR, as
 * far as it was sent; requests for anything else are dropped.
 */
static void read_again(struct u4v_qp *qp, const struct u4w_hdr *h)
{
	const struct u4v_read_rec *rec = NULL;
	uint32_t i, idx, n, sent;
	uint64_t off;

	if (!qp_allows(qp, IBV_ACCESS_REMOTE_READ))
		return;
	for (i = 0; i < U4V_MAX_QP_RD_ATOM && !rec; i++) {
		const struct u4v_read_rec *r = &qp->rd_hist[i];
		int32_t d = psn_diff(h->psn, r->psn);

		if (r->valid && d >= 0 && (uint32_t)d < r->nframes)
			rec = r;
	}
	if (!rec)
		return;
	idx = (uint32_t)psn_diff(h->psn, rec->psn);
	off = (uint64_t)idx * U4W_GRANULE;
	if (h->rkey != rec->rkey || h->va != rec->va + off ||
	    h->dma_len > rec->len - off)
		return;
	sent = read_sent(qp, rec);
	if (idx >= sent)
		return; /* on its way */
	n = u4f_nframes(h->dma_len);
	if (n > sent - idx)
		n = sent - idx;
	if (job_queued(qp, h->psn))
		return; /* a replay already queued will send it */
	if (add_read_job(qp, h->psn, h->va,
			 n * (uint64_t)U4W_GRANULE < h->dma_len ?
				 n * (uint64_t)U4W_GRANULE :
				 h->dma_len,
			 h->rkey, true))
		u4v_resp_tx(qp);
}

/*
 * An atomic request again: it is executed once; the saved result goes out
 * again (unless the first answer has not gone out yet). One older than the
 * results kept is dropped.
 */
static void atomic_again(struct u4v_qp *qp, const struct u4w_hdr *h)
{
	uint32_t i;

	if (job_queued(qp, h->psn))
		return;
	for (i = 0; i < U4V_MAX_QP_RD_ATOM; i++) {
		struct u4v_atomic_done *d = &qp->atomics[i];

		if (d->valid && d->psn == h->psn) {
			if (add_atomic_job(qp, h->psn, d->orig, true))
				u4v_resp_tx(qp);
			return;
		}
	}
}

static void duplicate(struct u4v_qp *qp, const struct u4w_hdr *h)
{
	const struct u4w_opinfo *info = u4w_opinfo(h->opcode);

	u4l_count(&qp->ctx->cnt->dup_frames_rcvd, 1);
	if (info->flags & U4W_OPF_READ) {
		read_again(qp, h);
		return;
	}
	if (info->flags & U4W_OPF_ATOMIC) {
		atomic_again(qp, h);
		return;
	}
	qp->ack_pending = true; /* tell the requester where we are */
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
		qp->nak_sent = false;
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

/*
 * An RDMA WRITE frame that arrives ahead of a hole inside the message being
 * written: its place is known (the message's start PSN, va and length are),
 * so its payload goes straight into the MR and only its header waits for
 * the hole. Saves the copy into the reorder buffer that would cost a busy
 * receiver dearly while a retransmission crosses a full TX ring.
 */
static bool place_ahead(struct u4v_qp *qp, const struct u4w_hdr *h,
			const uint8_t *payload, const void *frame)
{
	uint32_t op = U4W_OP(h->opcode), first, n, idx;
	struct u4v_mr *mr = NULL;
	uint64_t va;
	bool last;

	if (!qp->in_msg || !qp->wr_mr ||
	    (op != U4W_WRITE_MIDDLE && op != U4W_WRITE_LAST &&
	     op != U4W_WRITE_LAST_IMM))
		return false;
	/* every frame executed so far carried a whole granule */
	first = psn_add(qp->epsn, U4V_PSN_MASK + 1 -
				  (uint32_t)(qp->msg_off / U4W_GRANULE));
	n = u4f_nframes(qp->wr_len);
	idx = (uint32_t)psn_diff(h->psn, first);
	if (psn_diff(h->psn, first) <= 0 || idx >= n)
		return false; /* not this message */
	last = idx + 1 == n;
	if (last != (op != U4W_WRITE_MIDDLE) ||
	    h->paylen != u4f_frame_len(qp->wr_len, idx))
		return false;
	va = qp->wr_va + (uint64_t)idx * U4W_GRANULE;
	/* written before it is held as placed: a write that fails (ODP
	 * memory gone) leaves the frame to be held whole and refused later */
	if (u4v_mr_check_remote(qp, qp->wr_rkey, va, h->paylen,
				IBV_ACCESS_REMOTE_WRITE, &mr) ||
	    u4v_mr_write(mr, va, payload, h->paylen))
		return false;
	return !u4f_reorder_hold_placed(&qp->req_reorder, qp->epsn, h->psn,
					frame, u4w_hdr_len(h->opcode, h->flags));
}

static void rc_frame(struct u4v_qp *qp, const struct u4w_hdr *h,
		     const uint8_t *payload, const void *frame, uint32_t len)
{
	int32_t d = psn_diff(h->psn, qp->epsn);
	enum exec_result r;
	uint8_t syndrome = 0;
	void *held;
	uint32_t hlen;

	if (d < 0) {
		duplicate(qp, h);
		return;
	}
	if (d > 0) {
		bool held_ok = place_ahead(qp, h, payload, frame) ||
			       !u4f_reorder_hold(&qp->req_reorder, qp->epsn,
						 h->psn, frame, len);

		if (held_ok)
			u4l_count(&qp->ctx->cnt->ooo_frames, 1);
		if (!qp->nak_sent) {
			qp->nak_sent = true;
			u4l_count(&qp->ctx->cnt->seq_naks_sent, 1);
			u4v_send_ack(qp, U4W_AETH_NAK_SEQ, qp->epsn);
		}
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
