// SPDX-License-Identifier: MIT
/*
 * UD receive: qkey check, reassembly of two-frame messages (a 4096-byte
 * datagram does not fit one frame with its headers), the 40-byte GRH area
 * at the start of the receive buffer. Nothing is acknowledged; a message
 * with a missing frame is dropped.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "rel/psn.h"
#include "wire/opcode.h"

#define GRH_LEN 40u
#define PARTIAL_MAX_NS 100000000ull /* forget a half message after 100 ms */

/* Bytes of a RoCE packet around a UD payload: BTH, DETH, ICRC, UDP. */
#define BTH_LEN 12u
#define DETH_LEN 8u
#define ICRC_LEN 4u
#define UDP_LEN 8u
#define IPV4_LEN 20u
#define IPPROTO_UDP_ 17u
#define IB_NEXT_HDR 0x1bu
#define IPV4_DF 0x4000u
/* A UD completion's sl on a RoCE port: the GRH area's L3 header (fill_grh) */
#define ROCE_L3_GRH 0x0u
#define ROCE_L3_IPV6 0x1u
#define ROCE_L3_IPV4 0x2u
#define ROCE_L3_UDP 0x8u

static void put_be16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

/* The IPv4 header checksum: ones' complement of the ones' complement sum. */
static uint16_t ipv4_csum(const uint8_t *iph)
{
	uint32_t sum = 0;
	unsigned int i;

	for (i = 0; i < IPV4_LEN; i += 2)
		sum += (uint32_t)iph[i] << 8 | iph[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static bool ipv4_mapped(const uint8_t *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid, prefix, sizeof(prefix));
}

/*
 * What RoCE hardware and Soft-RoCE leave in the GRH area of a UD receive:
 * for RoCE v2 between IPv4(-mapped) GIDs the packet's IPv4 header in bytes
 * 20-39 (0-19 zero), else its IPv6 header (RoCE v2: next header UDP) or
 * the IB GRH (RoCE v1: next header 0x1B). ibv_init_ah_from_wc(3) and UCX
 * read it back; the lengths are those of the RoCE packet that would have
 * carried the datagram. Returns what the completion's sl says of that area
 * on a RoCE port, as RoCE hardware (mlx5) reports it and UCX's ud_verbs
 * reads it to find the destination address there: bits 2:0 the L3 header
 * (0 IB GRH, 1 IPv6, 2 IPv4), bit 3 set for UDP (RoCE v2).
 */
static uint8_t fill_grh(uint8_t *grh, const struct u4w_hdr *h,
			uint32_t paylen)
{
	bool imm = u4w_opinfo(h->opcode)->flags & U4W_OPF_IMM;
	uint32_t ib_len = BTH_LEN + DETH_LEN + (imm ? 4 : 0) +
			  ((paylen + 3) & ~3u) + ICRC_LEN;
	uint32_t vtf;

	memset(grh, 0, GRH_LEN);
	if (!(h->flags & U4W_F_GRH))
		return 0;
	if (h->roce_v2 && ipv4_mapped(h->sgid) && ipv4_mapped(h->dgid)) {
		uint8_t *iph = grh + GRH_LEN - IPV4_LEN;

		iph[0] = 0x45; /* version 4, 5 words */
		iph[1] = h->tclass;
		put_be16(iph + 2, (uint16_t)(IPV4_LEN + UDP_LEN + ib_len));
		put_be16(iph + 6, IPV4_DF);
		iph[8] = h->hop_limit;
		iph[9] = IPPROTO_UDP_;
		memcpy(iph + 12, h->sgid + 12, 4);
		memcpy(iph + 16, h->dgid + 12, 4);
		put_be16(iph + 10, ipv4_csum(iph));
		return ROCE_L3_UDP | ROCE_L3_IPV4;
	}
	vtf = htobe32(6u << 28 | (uint32_t)h->tclass << 20 | h->flow_label);
	memcpy(grh, &vtf, 4);
	put_be16(grh + 4,
		 (uint16_t)(ib_len + (h->roce_v2 ? UDP_LEN : 0)));
	grh[6] = h->roce_v2 ? IPPROTO_UDP_ : IB_NEXT_HDR;
	grh[7] = h->hop_limit;
	memcpy(grh + 8, h->sgid, 16);
	memcpy(grh + 24, h->dgid, 16);
	return h->roce_v2 ? ROCE_L3_UDP | ROCE_L3_IPV6 : ROCE_L3_GRH;
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
		struct u4v_pd *pd = u4v_rq_pd(qp);

		/* the receive's buffers are checked as they are written */
		wc.sl = fill_grh(grh, h, alen + blen);
		wc.status = u4v_sge_copy_in(pd, w.sge, w.num_sge, 0, grh,
					    GRH_LEN);
		if (!wc.status)
			wc.status = u4v_sge_copy_in(pd, w.sge, w.num_sge,
						    GRH_LEN, a, alen);
		if (!wc.status && blen)
			wc.status = u4v_sge_copy_in(pd, w.sge, w.num_sge,
						    GRH_LEN + alen, b, blen);
		wc.byte_len = total;
		if (h->flags & U4W_F_GRH)
			wc.wc_flags |= IBV_WC_GRH;
		if (u4w_opinfo(h->opcode)->flags & U4W_OPF_IMM) {
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
