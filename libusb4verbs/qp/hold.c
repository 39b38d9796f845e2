// SPDX-License-Identifier: MIT
/*
 * UC and UD frames waiting for a receive WQE. These transports have no RNR
 * NAK, so a message for an empty receive queue would be lost; a receiver
 * that reposts a little late (perftest's server) would lose most of a run.
 * The frame is copied aside on its QP, with every later frame of that QP
 * (order is kept), so the channel goes on serving the other QPs. It is
 * delivered once a receive is posted, or dropped, as the specification says,
 * after U4V_RQ_GRACE_NS or when U4V_HOLD_MAX frames wait.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "wire/opcode.h"

bool u4v_hold_push(struct u4v_qp *qp, const void *hdr, uint32_t hlen,
		   const void *payload, uint32_t paylen)
{
	struct u4v_held_frame *h;

	if (qp->held_count == U4V_HOLD_MAX)
		return false;
	if (!qp->held) {
		qp->held = calloc(U4V_HOLD_MAX, sizeof(*qp->held));
		if (!qp->held)
			return false;
	}
	h = &qp->held[(qp->held_head + qp->held_count) % U4V_HOLD_MAX];
	h->frame = malloc(hlen + paylen);
	if (!h->frame)
		return false;
	memcpy(h->frame, hdr, hlen);
	if (paylen)
		memcpy((uint8_t *)h->frame + hlen, payload, paylen);
	h->len = hlen + paylen;
	if (!qp->held_count++) {
		qp->held_since = u4v_now();
		atomic_fetch_add(&qp->ctx->held_qps, 1);
	}
	return true;
}

static void pop(struct u4v_qp *qp)
{
	free(qp->held[qp->held_head].frame);
	qp->held[qp->held_head].frame = NULL;
	qp->held_head = (qp->held_head + 1) % U4V_HOLD_MAX;
	if (!--qp->held_count)
		atomic_fetch_sub(&qp->ctx->held_qps, 1);
}

/* Deliver what can be delivered now. Caller holds qp->lock. */
void u4v_hold_drain(struct u4v_qp *qp)
{
	while (qp->held_count) {
		struct u4v_held_frame *f = &qp->held[qp->held_head];
		bool may_hold = u4v_now() - qp->held_since < U4V_RQ_GRACE_NS;
		const uint8_t *payload;
		struct u4w_hdr h;
		bool done;

		if (u4w_decode(f->frame, f->len, &h)) {
			pop(qp);
			continue;
		}
		payload = u4w_payload(f->frame, &h);
		done = qp->type == IBV_QPT_UD ?
			       u4v_ud_frame(qp, &h, payload, may_hold) :
			       u4v_resp_frame(qp, qp->peer, &h, payload, f->frame,
					      f->len, may_hold);
		if (!done)
			return;
		pop(qp);
		qp->held_since = u4v_now(); /* the next one gets its own wait */
	}
}

void u4v_hold_clear(struct u4v_qp *qp)
{
	while (qp->held_count)
		pop(qp);
	free(qp->held);
	qp->held = NULL;
	qp->held_head = 0;
}
