// SPDX-License-Identifier: MIT
/*
 * UD receive: qkey check, reassembly of two-frame messages (a 4096-byte
 * datagram does not fit one frame with its headers), the 40-byte GRH area
 * at the start of the receive buffer. Nothing is acknowledged; a message
 * with a missing frame is dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "rel/psn.h"
#include "wire/opcode.h"

#define GRH_LEN 40u
#define PARTIAL_MAX_NS 100000000ull /* forget a half message after 100 ms */

static void fill_grh(uint8_t *grh, uint32_t paylen, const struct u4v_qp *qp)
{
	uint32_t vtf = 6u << 28; /* IPv6 version, no class, no flow */

	memset(grh, 0, GRH_LEN);
	grh[0] = (uint8_t)(vtf >> 24);
	grh[4] = (uint8_t)(paylen >> 8);
	grh[5] = (uint8_t)paylen;
	grh[6] = 0x1b; /* next header: IB transport */
	grh[7] = 64;   /* hop limit */
	(void)qp;
}

static void deliver(struct u4v_qp *qp, const struct u4w_hdr *h,
		    const uint8_t *a, uint32_t alen, const uint8_t *b,
		    uint32_t blen)
{
	struct ibv_sge sges[U4V_MAX_SGE];
	struct u4v_rwqe w;
	struct ibv_wc wc;
	uint8_t grh[GRH_LEN];
	uint32_t total = GRH_LEN + alen + blen;
	bool got;

	got = qp->srq ? u4v_srq_take(qp->srq, &w, sges) :
			u4v_rq_take(&qp->rq, &w, sges);
	if (!got)
		return; /* UD: no receive posted, the datagram is lost */
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w.wr_id;
	wc.qp_num = qp->qpn;
	wc.src_qp = h->src_qpn;
	wc.opcode = IBV_WC_RECV;
	if (total > w.length) {
		wc.status = IBV_WC_LOC_LEN_ERR;
	} else {
		fill_grh(grh, alen + blen, qp);
		u4v_sge_copy_in(w.sge, w.num_sge, 0, grh, GRH_LEN);
		u4v_sge_copy_in(w.sge, w.num_sge, GRH_LEN, a, alen);
		if (blen)
			u4v_sge_copy_in(w.sge, w.num_sge, GRH_LEN + alen, b,
					blen);
		wc.byte_len = total;
		if (h->flags & U4W_F_GRH)
			wc.wc_flags |= IBV_WC_GRH;
		if (U4W_OP(h->opcode) == U4W_SEND_ONLY_IMM ||
		    U4W_OP(h->opcode) == U4W_SEND_LAST_IMM) {
			wc.wc_flags |= IBV_WC_WITH_IMM;
			wc.imm_data = h->imm;
		}
	}
	u4v_cq_push(qp->rcq, &wc, h->flags & U4W_F_SOLICITED);
}

static struct u4v_ud_partial *find_partial(struct u4v_qp *qp, uint32_t src)
{
	uint32_t i;

	for (i = 0; i < U4V_UD_PARTIALS; i++)
		if (qp->ud_part[i].used && qp->ud_part[i].src_qpn == src)
			return &qp->ud_part[i];
	return NULL;
}

static struct u4v_ud_partial *new_partial(struct u4v_qp *qp, uint32_t src,
					  uint64_t now)
{
	struct u4v_ud_partial *p = find_partial(qp, src), *oldest = NULL;
	uint32_t i;

	if (p)
		return p;
	for (i = 0; i < U4V_UD_PARTIALS; i++) {
		p = &qp->ud_part[i];
		if (!p->used || now - p->stamp > PARTIAL_MAX_NS)
			return p;
		if (!oldest || p->stamp < oldest->stamp)
			oldest = p;
	}
	return oldest; /* evict: that message is lost */
}

bool u4v_ud_frame(struct u4v_qp *qp, const struct u4w_hdr *h,
		  const uint8_t *payload, bool may_hold)
{
	uint32_t op = U4W_OP(h->opcode);
	struct u4v_ud_partial *p;
	uint64_t now;

	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS &&
	    qp->state != IBV_QPS_SQD)
		return true;
	if (h->qkey != qp->qkey)
		return true; /* wrong qkey: silently dropped, as the spec says */
	if (may_hold && op != U4W_SEND_FIRST && op != U4W_SEND_MIDDLE &&
	    !u4v_rwqe_ready(qp))
		return false;
	switch (op) {
	case U4W_SEND_ONLY:
	case U4W_SEND_ONLY_IMM:
		deliver(qp, h, payload, h->paylen, NULL, 0);
		return true;
	case U4W_SEND_FIRST:
		if (h->paylen != U4W_GRANULE)
			return true;
		now = u4v_now();
		p = new_partial(qp, h->src_qpn, now);
		if (!p->buf)
			p->buf = malloc(U4W_GRANULE);
		if (!p->buf)
			return true;
		memcpy(p->buf, payload, h->paylen);
		p->used = true;
		p->src_qpn = h->src_qpn;
		p->next_psn = psn_add(h->psn, 1);
		p->len = h->paylen;
		p->stamp = now;
		return true;
	case U4W_SEND_LAST:
	case U4W_SEND_LAST_IMM:
		p = find_partial(qp, h->src_qpn);
		if (!p)
			return true;
		p->used = false;
		if (p->next_psn != h->psn || p->len + h->paylen > 4096)
			return true; /* a frame in between was lost */
		deliver(qp, h, p->buf, p->len, payload, h->paylen);
		return true;
	default:
		return true;
	}
}
