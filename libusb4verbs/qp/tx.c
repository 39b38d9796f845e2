// SPDX-License-Identifier: MIT
/* Putting frames on a channel: header, payload copy, descriptor, doorbell. */
#include <string.h>

#include "engine_int.h"

/*
 * Caller holds peer->tx_lock. Payload comes from a flat buffer of the
 * engine's or, when payload is NULL, from an SGE list of pd's MRs at
 * sge_off (checked as it is copied). 0: posted; U4V_TX_FULL: the TX ring
 * is full; else the status of a payload that could not be read (nothing
 * is posted then).
 */
int u4v_tx_frame(struct u4v_peer *peer, const struct u4w_hdr *h,
		 const void *payload, uint32_t paylen, struct u4v_pd *pd,
		 const struct ibv_sge *sge, uint32_t nsge, uint64_t sge_off)
{
	const struct u4l_ops *ops = peer->ops;
	struct u4l_chan *chan = peer->chan;
	enum ibv_wc_status st;
	uint32_t lane = 0;
	unsigned int hlen;
	uint8_t *buf;

	if (__atomic_load_n(&peer->striped, __ATOMIC_ACQUIRE))
		chan = u4v_lanes_tx_slot(peer, &buf, &lane);
	else
		buf = ops->tx_slot(chan);
	if (!buf || !chan)
		return U4V_TX_FULL;
	hlen = u4w_encode(buf, h);
	if (paylen) {
		if (payload) {
			memcpy(buf + hlen, payload, paylen);
		} else {
			/* the slot stays free for the next frame if this fails */
			st = u4v_sge_copy_out(pd, sge, nsge, sge_off,
					      buf + hlen, paylen);
			if (st)
				return (int)st;
		}
	}
	/*
	 * The lanes' doorbells go in the order of their frames, so that the
	 * wire takes them in lane sequence order as far as it can.
	 */
	if (peer->tx_posted && chan != peer->tx_chan)
		u4v_tx_doorbell(peer);
	u4w_set_lane_seq(buf, peer->tx_seq++);
	ops->tx_post(chan, hlen + paylen,
		     U4W_OP(h->opcode) == U4W_ACK ? U4L_PDF_CTRL :
						    U4L_PDF_DATA);
	peer->tx_chan = chan;
	__atomic_store_n(&peer->tx_bytes, peer->tx_bytes + hlen + paylen,
			 __ATOMIC_RELAXED); /* the lane meter reads it */
	if (u4v_lanes_turn_ends(peer, h->opcode))
		peer->tx_next = lane + 1;
	peer->tx_posted++;
	peer->tx_total++;
	return 0;
}

/*
 * Bound what a new channel queues on its TX ring to U4V_TX_QUEUE_NS of the
 * wire, or of one ring where a ring moves less (at least U4V_TX_QUEUE_MIN frames; an unthrottled link keeps the
 * whole ring). Everything queued departs before a retransmission or an
 * ACK posted behind it: a whole ring is hundreds of microseconds of the
 * wire, paid once per loss, and the receiver holds that many frames past
 * the hole meanwhile. The bound only has to cover the sender's refill: its
 * passes come far more often than the queue drains.
 */
void u4v_tx_bound(struct u4v_ctx *ctx, struct u4l_chan *chan)
{
	uint64_t rate = ctx->ops->wire_rate(ctx->link), frames;
	uint64_t ring = u4v_ring_rate(ctx);

	if (ring && (!rate || ring < rate))
		rate = ring; /* what one ring moves is what it must queue */
	if (!ctx->ops->tx_bound || !rate)
		return;
	frames = rate * U4V_TX_QUEUE_NS / 1000000000ull / U4L_FRAME_MAX;
	if (frames < U4V_TX_QUEUE_MIN)
		frames = U4V_TX_QUEUE_MIN;
	if (frames > UINT32_MAX)
		frames = UINT32_MAX;
	ctx->ops->tx_bound(chan, (uint32_t)frames);
}

/* Caller holds peer->tx_lock. */
void u4v_tx_doorbell(struct u4v_peer *peer)
{
	const struct u4l_ops *ops = peer->ops;

	if (!peer->tx_posted)
		return;
	ops->tx_doorbell(peer->tx_chan);
	peer->tx_posted = 0;
}

/*
 * Caller holds peer->tx_lock. True when QPs wait for TX space on this
 * channel and qp's turn has not come: it queues behind them. Ring space
 * freed for those waiting would otherwise go to whoever posts next, and a
 * waiting QP (with the ACKs its responder owes) could starve until its
 * peer's requester exceeds its retry budget on a clean cable.
 */
bool u4v_tx_queue_behind(const struct u4v_peer *peer, const struct u4v_qp *qp)
{
	return peer->pending_head && !qp->tx_turn;
}

/*
 * What a QP has to send: the responder's ACKs and READ responses first,
 * then the requester's frames. An ACK held for the application's answer
 * (ctx/progress.c, ack_may_wait) goes behind that answer, and waits on
 * while no answer goes out.
 */
void u4v_qp_tx(struct u4v_qp *qp)
{
	if (qp->ack_due) {
		uint64_t last = qp->tx_last;

		u4v_req_push(qp);
		if (qp->tx_last != last || qp->njobs)
			u4v_resp_tx(qp);
		return;
	}
	u4v_resp_tx(qp);
	u4v_req_push(qp);
}
