// SPDX-License-Identifier: MIT
/*
 * The requester: turns send WQEs into frames, keeps them for retransmission
 * (a WQE's frames can be rebuilt from the application's buffer, which belongs
 * to the device until the completion), and runs the retransmit timer.
 */
#include <string.h>

#include "ctx/progress.h"
#include "engine_int.h"
#include "frag/frag.h"
#include "rel/psn.h"
#include "rel/timer.h"
#include "wire/opcode.h"

static uint32_t rd_limit(const struct u4v_qp *qp)
{
	return qp->max_rd_atomic ? qp->max_rd_atomic : 1;
}

/*
 * Frame idx of WQE w. For a READ, idx is the first response asked for and
 * rd_n how many (0: to the end). False when it could not be sent now: the
 * TX ring is full, or its payload could not be read (its MR went or moved,
 * an ODP page is gone), and then the WQE completed with that status and
 * the QP went to the error state, where pushing again does nothing.
 */
static bool emit_frame(struct u4v_qp *qp, struct u4v_peer *peer,
		       struct u4v_swqe *w, uint32_t idx, uint32_t rd_n)
{
	struct u4w_hdr h;
	uint32_t paylen = 0;
	const void *payload = NULL;
	uint64_t off = (uint64_t)idx * U4W_GRANULE;
	bool last = idx + 1 == w->nframes || u4v_rd_atomic(w->opcode);
	unsigned int wrf = u4w_wr_flags(w->opcode);
	int ret;

	memset(&h, 0, sizeof(h));
	h.opcode = u4w_qpt_transport(qp->type) |
		   u4w_wr_frame_op(w->opcode, idx, w->nframes);
	h.src_qpn = qp->qpn;
	h.dst_qpn = qp->type == IBV_QPT_UD ? w->remote_qpn : qp->dest_qpn;
	h.psn = psn_add(w->first_psn, idx);
	if (last && (w->send_flags & IBV_SEND_SOLICITED))
		h.flags |= U4W_F_SOLICITED;
	if (last && qp->type == IBV_QPT_RC)
		h.flags |= U4W_F_ACKREQ;
	if (wrf & U4W_WRF_READ) {
		h.va = w->remote_addr + off;
		h.rkey = w->rkey;
		h.dma_len = (uint32_t)(w->length - off);
		if (rd_n && (uint64_t)rd_n * U4W_GRANULE < h.dma_len)
			h.dma_len = rd_n * U4W_GRANULE;
	} else if (wrf & U4W_WRF_ATOMIC) {
		h.va = w->remote_addr;
		h.rkey = w->rkey;
		h.compare = w->compare;
		h.swap_add = w->swap_add;
	} else {
		if (idx == 0 && (wrf & U4W_WRF_RDMA)) {
			h.va = w->remote_addr;
			h.rkey = w->rkey;
			h.dma_len = (uint32_t)w->length;
		}
		if (last)
			h.imm = w->imm;
		if (last && (wrf & U4W_WRF_INV))
			h.inv_rkey = w->rkey;
		paylen = u4f_frame_len(w->length, idx);
		if (w->inline_data)
			payload = w->inline_data + off;
	}
	if (qp->type == IBV_QPT_UD) {
		h.qkey = w->remote_qkey;
		u4v_ah_grh(w->ah, &h);
	}
	h.paylen = (uint16_t)paylen;
	ret = u4v_tx_frame(peer, &h, payload, paylen, qp->pd, w->sge,
			   w->num_sge, off);
	if (!ret)
		qp->tx_last = peer->tx_total;
	if (ret && ret != U4V_TX_FULL) {
		w->state = U4V_WQE_DONE;
		w->status = (enum ibv_wc_status)ret;
		u4v_qp_to_error(qp);
	}
	return !ret;
}

/*
 * What to ask for when READ / atomic WQE w is sent (again): responses
 * [*idx, *idx + *n). Its whole request while nothing is acknowledged past
 * its start (the request may have been lost). After that, the responder
 * executed it and every response up to acked_psn was sent: the lost ones
 * are holes, asked for on their own, and the tail may merely be slow. Then
 * only its last response is asked for, which costs one frame: if it was
 * sent, it arrives after the others and shows which were lost; if not, the
 * rest is still on its way. False: nothing to ask for.
 */
static bool rd_tail(const struct u4v_qp *qp, const struct u4v_swqe *w,
		    uint32_t *idx, uint32_t *n)
{
	uint32_t last = psn_add(w->first_psn, w->npsn - 1);

	if (psn_lt(qp->acked_psn, w->first_psn)) {
		*idx = 0;
		*n = 0; /* all of it */
		return true;
	}
	if (!psn_lt(qp->acked_psn, last))
		return false;
	*idx = w->npsn - 1;
	*n = 1;
	return true;
}

/* Send request frame idx of w, or for a READ / atomic its tail. */
static bool emit_next(struct u4v_qp *qp, struct u4v_peer *peer,
		      struct u4v_swqe *w, uint32_t idx)
{
	uint32_t n = 0;

	if (qp->type == IBV_QPT_RC && u4v_rd_atomic(w->opcode) &&
	    !rd_tail(qp, w, &idx, &n))
		return true;
	return emit_frame(qp, peer, w, idx, n);
}

/* Ask for hole of w again. False when the TX ring is full. */
static bool ask(struct u4v_qp *qp, struct u4v_peer *peer, struct u4v_swqe *w,
		struct u4v_hole *hole)
{
	uint32_t idx = (uint32_t)psn_diff(hole->psn, w->first_psn);

	if (!emit_frame(qp, peer, w, idx, hole->n))
		return false;
	u4v_holes_asked(&qp->rd_holes, hole);
	u4l_count(&qp->ctx->cnt->retransmits, 1);
	return true;
}

/* Ask for the holes not asked for yet. False when the TX ring is full. */
static bool send_asks(struct u4v_qp *qp, struct u4v_peer *peer)
{
	struct u4v_holes *t = &qp->rd_holes;
	uint32_t i = 0;

	while (t->unasked && i < t->count) {
		struct u4v_hole *hole = &t->h[i];
		struct u4v_swqe *w;

		if (hole->seq) {
			i++;
			continue;
		}
		w = u4v_req_find(qp, hole->psn);
		if (!w || w->state == U4V_WQE_DONE) {
			u4v_holes_remove(t, hole); /* slot i holds another */
			continue;
		}
		if (!ask(qp, peer, w, hole))
			return false;
		i++;
	}
	return true;
}

/*
 * Is anything waiting for an acknowledgement? A WQE that got its PSNs is,
 * even when a rewind queued it again and the ring is full: the timer must
 * keep running so that a dead peer always ends in status 12.
 */
static bool wqe_outstanding(struct u4v_qp *qp)
{
	uint32_t i = qp->sq_head, n;

	for (n = 0; n < qp->sq_count; n++, i++) {
		const struct u4v_swqe *w = u4v_sq_at(qp, i);

		if (!w->psn_assigned)
			return false;
		if (w->state != U4V_WQE_DONE)
			return true;
	}
	return false;
}

/* The single resend a NAK asked for, if any. False: no TX space for it. */
static bool resend_asked(struct u4v_qp *qp)
{
	if (!qp->resend_one)
		return true;
	if (!u4v_req_resend(qp, qp->resend_psn))
		return false;
	qp->resend_one = false;
	return true;
}

/*
 * Give w its PSNs, unless it must wait: SQD admits no new WQE, an RC READ
 * or atomic waits for the initiator depth, a fenced WQE for the READs and
 * atomics before it.
 */
static bool assign_psns(struct u4v_qp *qp, struct u4v_swqe *w)
{
	bool rc = qp->type == IBV_QPT_RC;

	if (qp->state == IBV_QPS_SQD)
		return false;
	if (rc && u4v_rd_atomic(w->opcode) && qp->rd_pending >= rd_limit(qp))
		return false;
	if (rc && (w->send_flags & IBV_SEND_FENCE) && qp->rd_pending)
		return false;
	w->first_psn = qp->sq_psn;
	qp->sq_psn = psn_add(qp->sq_psn, w->npsn);
	w->psn_assigned = true;
	if (rc && u4v_rd_atomic(w->opcode))
		qp->rd_pending++;
	return true;
}

enum frames_sent {
	FRAMES_ALL,	/* every frame of the WQE is out */
	FRAMES_WINDOW,	/* the window is full: wait for ACKs */
	FRAMES_TX_FULL, /* no TX space: try again when there is */
};

/* The frames of w not sent yet, while the window and TX space allow. */
static enum frames_sent send_frames(struct u4v_qp *qp, struct u4v_peer *peer,
				    struct u4v_swqe *w)
{
	bool rc = qp->type == IBV_QPT_RC;

	while (w->next_frame < w->nframes) {
		uint32_t psn = psn_add(w->first_psn, w->next_frame);

		if (rc && psn_diff(psn, qp->acked_psn) > (int)U4V_WINDOW)
			return FRAMES_WINDOW;
		if (rc && psn_le(psn, qp->acked_psn) &&
		    !u4v_rd_atomic(w->opcode)) {
			w->next_frame++; /* delivered before a rewind */
			continue;
		}
		if (!emit_next(qp, peer, w, w->next_frame))
			return FRAMES_TX_FULL;
		w->next_frame++;
	}
	return FRAMES_ALL;
}

/* Send frames of WQEs in order while window, limits and TX space allow. */
static void push_connected(struct u4v_qp *qp, uint64_t now)
{
	struct u4v_peer *peer = qp->peer;
	bool blocked;

	pthread_mutex_lock(&peer->tx_lock);
	blocked = u4v_tx_queue_behind(peer, qp) || !send_asks(qp, peer) ||
		  !resend_asked(qp);
	while (!blocked && qp->sq_send != qp->sq_tail) {
		struct u4v_swqe *w = u4v_sq_at(qp, qp->sq_send);
		enum frames_sent sent;

		if (w->state == U4V_WQE_DONE) { /* acknowledged meanwhile */
			qp->sq_send = qp->sq_send + 1;
			continue;
		}
		if (!w->psn_assigned && !assign_psns(qp, w))
			break;
		if (u4w_wr_flags(w->opcode) & U4W_WRF_LOCAL) {
			/* bind / invalidate: here, in send-queue order */
			w->status = u4v_mw_local_op(qp, w);
			w->state = U4V_WQE_DONE;
			qp->sq_send = qp->sq_send + 1;
			continue;
		}
		sent = send_frames(qp, peer, w);
		if (sent != FRAMES_ALL) {
			blocked = sent == FRAMES_TX_FULL;
			break;
		}
		if (qp->type == IBV_QPT_RC) {
			w->state = U4V_WQE_SENT;
			if (!qp->retry_deadline)
				u4v_req_arm_timer(qp, now);
		} else {
			w->state = U4V_WQE_DONE; /* UC: nothing to wait for */
		}
		qp->sq_send = qp->sq_send + 1;
	}
	if (qp->type == IBV_QPT_RC && qp->sq_send == qp->sq_head &&
	    qp->sq_send != qp->sq_tail &&
	    u4v_sq_at(qp, qp->sq_send)->next_frame && !qp->retry_deadline)
		u4v_req_arm_timer(qp, now);
	u4v_tx_doorbell(peer);
	pthread_mutex_unlock(&peer->tx_lock);
	if (blocked)
		u4v_peer_schedule(peer, qp);
}

/* UD: every WQE names its own destination, so its own channel. */
static void push_ud(struct u4v_qp *qp)
{
	while (qp->sq_send != qp->sq_tail) {
		struct u4v_swqe *w = u4v_sq_at(qp, qp->sq_send);
		struct u4v_peer *peer;
		bool blocked = false;
		int err = 0;

		if (qp->state == IBV_QPS_SQD && !w->next_frame)
			return;
		if (!w->psn_assigned) {
			w->first_psn = qp->sq_psn;
			qp->sq_psn = psn_add(qp->sq_psn, w->npsn);
			w->psn_assigned = true;
		}
		peer = u4v_peer_get_ud(qp->ctx, w->remote_ctx, &err);
		if (peer) {
			pthread_mutex_lock(&peer->tx_lock);
			blocked = u4v_tx_queue_behind(peer, qp);
			while (!blocked && w->next_frame < w->nframes) {
				if (!emit_frame(qp, peer, w, w->next_frame,
						0)) {
					blocked = true;
					break;
				}
				w->next_frame++;
			}
			u4v_tx_doorbell(peer);
			pthread_mutex_unlock(&peer->tx_lock);
			if (blocked) {
				u4v_peer_schedule(peer, qp);
				return;
			}
		}
		/* no such peer: a UD datagram into the void is still sent */
		w->state = U4V_WQE_DONE;
		qp->sq_send = qp->sq_send + 1;
	}
}

void u4v_req_push(struct u4v_qp *qp)
{
	uint64_t now;

	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	if (qp->sq_send == qp->sq_tail && !qp->resend_one &&
	    !qp->rd_holes.unasked)
		return;
	now = u4v_now();
	if (qp->rnr_deadline) {
		if (now < qp->rnr_deadline)
			return;
		qp->rnr_deadline = 0;
	}
	if (qp->type == IBV_QPT_UD)
		push_ud(qp);
	else if (qp->peer)
		push_connected(qp, now);
	u4v_comp_retire(qp);
}

/* Find the sent WQE whose PSN range holds psn; NULL if none. */
struct u4v_swqe *u4v_req_find(struct u4v_qp *qp, uint32_t psn)
{
	uint32_t i = qp->sq_head, n;

	for (n = 0; n < qp->sq_count; n++, i++) {
		struct u4v_swqe *w = u4v_sq_at(qp, i);

		if (!w->psn_assigned)
			break;
		if (psn_diff(psn, w->first_psn) >= 0 &&
		    psn_diff(psn, w->first_psn) < (int32_t)w->npsn)
			return w;
	}
	return NULL;
}

/*
 * Send one frame again (fast recovery). Caller holds peer->tx_lock.
 * False only when the TX ring is full.
 */
bool u4v_req_resend(struct u4v_qp *qp, uint32_t psn)
{
	struct u4v_swqe *w = u4v_req_find(qp, psn);
	struct u4v_hole *hole;
	uint32_t idx, n;

	if (!w || w->state == U4V_WQE_DONE)
		return true;
	if (u4v_rd_atomic(w->opcode)) {
		hole = u4v_holes_find(&qp->rd_holes, psn);
		if (hole)
			return ask(qp, qp->peer, w, hole);
		if (!w->next_frame && w->state != U4V_WQE_SENT)
			return true; /* not sent yet */
		if (!rd_tail(qp, w, &idx, &n))
			return true;
		if (!emit_frame(qp, qp->peer, w, idx, n))
			return false;
		u4l_count(&qp->ctx->cnt->retransmits, 1);
		return true;
	}
	idx = (uint32_t)psn_diff(psn, w->first_psn);
	if (idx >= w->next_frame && w->state != U4V_WQE_SENT)
		return true; /* not sent yet: nothing to repeat */
	if (!emit_frame(qp, qp->peer, w, idx, 0))
		return false;
	u4l_count(&qp->ctx->cnt->retransmits, 1);
	return true;
}

/* Go back to psn: every frame from there on is sent again. */
void u4v_req_rewind(struct u4v_qp *qp, uint32_t psn)
{
	uint32_t i = qp->sq_head, n;
	bool found = false;

	for (n = 0; n < qp->sq_count; n++, i++) {
		struct u4v_swqe *w = u4v_sq_at(qp, i);
		int32_t d;

		if (!w->psn_assigned)
			break;
		if (w->state == U4V_WQE_DONE)
			continue; /* a READ past a hole can be done */
		if (!found) {
			d = psn_diff(psn, w->first_psn);
			if (d >= (int32_t)w->npsn)
				continue;
			found = true;
			qp->sq_send = i;
			w->next_frame = u4v_rd_atomic(w->opcode) || d < 0 ?
						0 :
						(uint32_t)d;
		} else {
			w->next_frame = 0;
		}
		if (w->state == U4V_WQE_SENT || w->next_frame < w->nframes)
			w->state = U4V_WQE_POSTED;
		if (w->state == U4V_WQE_POSTED && w->next_frame >= w->nframes)
			w->next_frame = 0;
	}
}

uint32_t u4v_req_oldest_missing(struct u4v_qp *qp)
{
	uint32_t next = psn_add(qp->acked_psn, 1), i = qp->sq_head, n, p;

	for (n = 0; n < qp->sq_count; n++, i++) {
		struct u4v_swqe *w = u4v_sq_at(qp, i);

		if (!w->psn_assigned)
			break;
		if (w->state == U4V_WQE_DONE)
			continue;
		if (u4v_rd_atomic(w->opcode) &&
		    u4v_holes_first(&qp->rd_holes, w->first_psn, w->npsn, &p))
			return p;
		return psn_diff(w->first_psn, next) > 0 ? w->first_psn : next;
	}
	return next;
}

/*
 * Probe before the timeout: a tail frame or an ACK lost while the window is
 * full leaves nothing that would reveal the loss, and the full retransmit
 * timeout (67 ms at perftest's setting) would idle the QP. Resending the
 * oldest unacknowledged frame costs one frame and draws an ACK or NAK.
 */
static uint64_t probe_ns(uint64_t tmo)
{
	/*
	 * A quarter of the timeout, between 1 and 10 ms: short enough to
	 * matter, long enough that a receiver merely slow to be scheduled on
	 * a busy machine is not flooded with probes.
	 */
	uint64_t p = tmo / 4;

	if (p > 10000000)
		p = 10000000;
	if (p < 1000000)
		p = tmo / 2 < 1000000 ? tmo / 2 : 1000000;
	return p;
}

void u4v_req_arm_timer(struct u4v_qp *qp, uint64_t now)
{
	uint64_t tmo = u4v_ack_timeout_ns(qp->timeout);

	qp->retry_deadline = tmo == U4V_TIME_INFINITE ? UINT64_MAX : now + tmo;
	qp->probe_deadline = now + probe_ns(tmo);
	if (qp->peer)
		qp->tmo_rx_mark =
			__atomic_load_n(&qp->peer->rx_seen, __ATOMIC_RELAXED);
}

/*
 * Has qp requests that were not transmitted yet: waiting for TX space, or
 * handed to the TX ring and not gone from it (the link holds them: the
 * peer's receive ring is full, or the software cable's engine is held up)?
 * Caller holds qp->lock.
 */
static bool requests_held(struct u4v_qp *qp)
{
	struct u4v_peer *peer = qp->peer;
	uint32_t space;
	bool held;

	if (__atomic_load_n(&qp->on_pending, __ATOMIC_RELAXED))
		return true;
	pthread_mutex_lock(&peer->tx_lock);
	space = u4v_tx_space(peer);
	if (space > peer->tx_depth)
		peer->tx_depth = space;
	held = qp->tx_last + (peer->tx_depth - space) > peer->tx_total;
	pthread_mutex_unlock(&peer->tx_lock);
	return held;
}

/*
 * IBTA's transport timer runs from a request's transmission to its ACK.
 * A period in which qp's requests could not be transmitted (requests_held)
 * or in which the peer sent frames on the channel (it is there and
 * reachable: the ACK is queued behind its own traffic and ours, four rings
 * of it when both directions are full and the host is busy) is no
 * timeout: no retry is spent and nothing is sent again (a go-back-N into
 * full rings only adds to what the peer must work through). Probes still
 * go out and find real losses. At most U4V_BUSY_WAITS periods in a row;
 * then the timer counts again, so a peer that is gone ends every wait.
 */
static bool not_a_timeout(struct u4v_qp *qp)
{
	if (!qp->peer || qp->busy_waits >= U4V_BUSY_WAITS)
		return false;
	if (__atomic_load_n(&qp->peer->rx_seen, __ATOMIC_RELAXED) ==
		    qp->tmo_rx_mark &&
	    !requests_held(qp))
		return false;
	qp->busy_waits++;
	return true;
}

void u4v_req_timer(struct u4v_qp *qp, uint64_t now)
{
	if (qp->type != IBV_QPT_RC ||
	    (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD))
		return;
	if (qp->rnr_deadline) {
		if (now >= qp->rnr_deadline)
			u4v_qp_tx(qp);
		return;
	}
	if (!wqe_outstanding(qp)) {
		qp->retry_deadline = qp->probe_deadline = 0;
		return;
	}
	if (!qp->retry_deadline) {
		u4v_req_arm_timer(qp, now);
		return;
	}
	if (now < qp->retry_deadline) {
		if (qp->probe_deadline && now >= qp->probe_deadline) {
			qp->probe_deadline =
				now + probe_ns(u4v_ack_timeout_ns(qp->timeout));
			qp->resend_one = true;
			qp->resend_psn = u4v_req_oldest_missing(qp);
			u4v_qp_tx(qp);
		}
		return;
	}
	if (not_a_timeout(qp)) {
		u4v_req_arm_timer(qp, now);
		return;
	}
	if (!qp->retries_left) {
		/* the oldest unfinished WQE is the one never acknowledged */
		struct u4v_swqe *w = u4v_sq_at(qp, qp->sq_head);

		w->state = U4V_WQE_DONE;
		w->status = IBV_WC_RETRY_EXC_ERR;
		qp->retry_deadline = qp->probe_deadline = 0;
		u4v_comp_retire(qp);
		return;
	}
	qp->retries_left--;
	u4v_holes_reask(&qp->rd_holes, 0);
	u4v_req_rewind(qp, u4v_req_oldest_missing(qp));
	u4l_count(&qp->ctx->cnt->retransmits, 1);
	u4v_req_arm_timer(qp, now);
	u4v_qp_tx(qp);
}
