// SPDX-License-Identifier: MIT
/* Putting frames on a channel: header, payload copy, descriptor, doorbell. */
#include <string.h>

#include "engine_int.h"

/*
 * Caller holds peer->tx_lock. Payload comes from a flat buffer or, when
 * payload is NULL, from an SGE list at sge_off. False: the TX ring is full.
 */
bool u4v_tx_frame(struct u4v_peer *peer, const struct u4w_hdr *h,
		  const void *payload, uint32_t paylen,
		  const struct ibv_sge *sge, uint32_t nsge, uint64_t sge_off)
{
	const struct u4l_ops *ops = peer->ops;
	uint8_t *buf = ops->tx_slot(peer->chan);
	unsigned int hlen;

	if (!buf)
		return false;
	hlen = u4w_encode(buf, h);
	if (paylen) {
		if (payload)
			memcpy(buf + hlen, payload, paylen);
		else
			u4v_sge_copy_out(sge, nsge, sge_off, buf + hlen,
					 paylen);
	}
	ops->tx_post(peer->chan, hlen + paylen,
		     U4W_OP(h->opcode) == U4W_ACK ? U4L_PDF_CTRL :
						    U4L_PDF_DATA);
	peer->tx_posted++;
	return true;
}

/* Caller holds peer->tx_lock. */
void u4v_tx_doorbell(struct u4v_peer *peer)
{
	const struct u4l_ops *ops = peer->ops;

	if (!peer->tx_posted)
		return;
	ops->tx_doorbell(peer->chan);
	peer->tx_posted = 0;
}
