// SPDX-License-Identifier: MIT
/*
 * The responder's answers (RC): the queue of READ and atomic responses, the
 * ACKs and NAKs, and duplicate requests served again. resp.c executes the
 * requests and queues what they answer; this file puts the answers on the
 * wire in PSN order.
 */
#include <string.h>

#include "engine_int.h"
#include "frag/frag.h"
#include "rel/psn.h"
#include "wire/opcode.h"

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
bool u4v_resp_queue_read(struct u4v_qp *qp, uint32_t psn, uint64_t va,
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

bool u4v_resp_queue_atomic(struct u4v_qp *qp, uint32_t psn, uint64_t orig,
			   bool replay)
{
	struct u4v_resp_job *job = add_job(qp, psn, replay);

	if (!job)
		return false;
	job->atomic = true;
	job->orig = orig;
	return true;
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
		u4v_ack_hold_end(qp);
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

	if (!u4v_qp_allows(qp, IBV_ACCESS_REMOTE_READ))
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
	if (u4v_resp_queue_read(qp, h->psn, h->va,
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
			if (u4v_resp_queue_atomic(qp, h->psn, d->orig, true))
				u4v_resp_tx(qp);
			return;
		}
	}
}

void u4v_resp_duplicate(struct u4v_qp *qp, const struct u4w_hdr *h)
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
