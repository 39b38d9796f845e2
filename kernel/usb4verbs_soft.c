// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: the software DMA engine.
 *
 * It stands in for the NHI on the soft cable and on loopback channels:
 * frames posted on one half's TX ring are copied into the other half's
 * posted RX buffers, in ring order, and both descriptors are completed the
 * way the hardware completes them. With no RX descriptor posted the TX
 * ring stalls (end-to-end flow control) until the receiver gives buffers
 * back; a dead receiver completes TX frames without delivering them.
 */
#include <linux/string.h>

#include "usb4verbs.h"

static u32 u4v_soft_pack(u32 len, u32 sof, u32 eof, u32 flags)
{
	return (len & U4V_DESC_LEN_MASK) | (eof << U4V_DESC_EOF_SHIFT) |
	       (sof << U4V_DESC_SOF_SHIFT) | (flags << U4V_DESC_FLAGS_SHIFT);
}

/* Under chan->lock. */
void u4v_soft_pump(struct u4v_half *tx, u32 *delivered, u32 *completed)
{
	struct u4v_half *rx = tx->peer;
	u32 tmask = tx->depth - 1;
	u32 rmask = rx->depth - 1;

	*delivered = 0;
	*completed = 0;
	while (tx->tx_done != tx->tx_prod) {
		u32 tpos = tx->tx_done & tmask;
		struct u4v_tx_meta *m = &tx->tx_meta[tpos];
		u32 done_flags = U4V_DESC_POSTED | U4V_DESC_COMPLETED;

		if (!rx->dead) {
			u32 rpos = rx->rx_done & rmask;

			/* posted RX descriptors are [rx_rel, rx_rel + depth - 1) */
			if (rx->rx_done - rx->rx_rel >= rx->depth - 1)
				break;
			memcpy(rx->rx_pool + (size_t)rpos * U4V_FRAME_SIZE,
			       tx->tx_pool + (size_t)m->slot * U4V_FRAME_SIZE,
			       m->len);
			/* payload before the COMPLETED bit, as DMA would */
			smp_store_release(&rx->rx_desc[rpos].len_flags,
					  u4v_soft_pack(m->len, m->sof, m->eof,
							done_flags));
			rx->rx_done++;
			(*delivered)++;
		}
		smp_store_release(&tx->tx_desc[tpos].len_flags,
				  u4v_soft_pack(m->len, m->sof, m->eof,
						done_flags));
		tx->tx_done++;
		(*completed)++;
	}
}
