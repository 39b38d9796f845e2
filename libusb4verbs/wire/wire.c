// SPDX-License-Identifier: MIT
/* Frame header encode / decode / validate. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "wire/opcode.h"
#include "wire/wire.h"

#define RETH_LEN 16u
#define ATOMETH_LEN 28u
#define DETH_LEN 8u
#define IMM_LEN 4u
#define AETH_LEN 8u
#define ATOMACK_LEN 8u
#define IETH_LEN 4u
#define GRH_LEN 36u
#define QPN_MASK 0xffffffu
#define FLOW_MASK 0xfffffu
#define FLOW_V2 (1u << 31)

/*
 * UD frames carry a DETH, and with U4W_F_GRH the sender's GRH: source and
 * destination GID, flow label and whether the source GID is RoCE v2 (36
 * bytes; traffic class and hop limit ride in the DETH's second word). With
 * the immediate that is 64 bytes of headers: a full granule still fits.
 */
static unsigned int ext_of(uint8_t opcode, uint8_t flags,
			   const struct u4w_opinfo *info)
{
	unsigned int ext = info->ext;

	if (U4W_TRANSPORT(opcode) == U4W_UD) {
		ext |= U4W_EXT_DETH;
		if (flags & U4W_F_GRH)
			ext |= U4W_EXT_GRH;
	}
	return ext;
}

static unsigned int ext_len(unsigned int ext)
{
	return (ext & U4W_EXT_RETH ? RETH_LEN : 0) +
	       (ext & U4W_EXT_ATOMETH ? ATOMETH_LEN : 0) +
	       (ext & U4W_EXT_DETH ? DETH_LEN : 0) +
	       (ext & U4W_EXT_IMM ? IMM_LEN : 0) +
	       (ext & U4W_EXT_IETH ? IETH_LEN : 0) +
	       (ext & U4W_EXT_GRH ? GRH_LEN : 0) +
	       (ext & U4W_EXT_AETH ? AETH_LEN : 0) +
	       (ext & U4W_EXT_ATOMACK ? ATOMACK_LEN : 0);
}

unsigned int u4w_hdr_len(uint8_t opcode, uint8_t flags)
{
	const struct u4w_opinfo *info = u4w_opinfo(opcode);

	return info ? U4W_BASE_LEN + ext_len(ext_of(opcode, flags, info)) : 0;
}

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
	return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
	return p + 8;
}

static const uint8_t *get16(const uint8_t *p, uint16_t *v)
{
	memcpy(v, p, 2);
	*v = le16toh(*v);
	return p + 2;
}

static const uint8_t *get32(const uint8_t *p, uint32_t *v)
{
	memcpy(v, p, 4);
	*v = le32toh(*v);
	return p + 4;
}

static const uint8_t *get64(const uint8_t *p, uint64_t *v)
{
	memcpy(v, p, 8);
	*v = le64toh(*v);
	return p + 8;
}

unsigned int u4w_encode(void *frame, const struct u4w_hdr *h)
{
	const struct u4w_opinfo *info = u4w_opinfo(h->opcode);
	unsigned int ext;
	uint8_t *p = frame;

	if (!info)
		return 0;
	ext = ext_of(h->opcode, h->flags, info);
	*p++ = h->opcode;
	*p++ = h->flags;
	p = put16(p, h->paylen);
	p = put32(p, (h->dst_qpn & QPN_MASK) | (uint32_t)U4W_VERSION << 24);
	p = put32(p, h->src_qpn & QPN_MASK);
	p = put32(p, h->psn & QPN_MASK);
	if (ext & U4W_EXT_RETH) {
		p = put64(p, h->va);
		p = put32(p, h->rkey);
		p = put32(p, h->dma_len);
	}
	if (ext & U4W_EXT_ATOMETH) {
		p = put64(p, h->va);
		p = put32(p, h->rkey);
		p = put64(p, h->swap_add);
		p = put64(p, h->compare);
	}
	if (ext & U4W_EXT_DETH) {
		p = put32(p, h->qkey);
		p = put32(p, ext & U4W_EXT_GRH ?
				     (uint32_t)h->tclass |
					     (uint32_t)h->hop_limit << 8 :
				     0);
	}
	if (ext & U4W_EXT_IMM)
		p = put32(p, h->imm);
	if (ext & U4W_EXT_IETH)
		p = put32(p, h->inv_rkey);
	if (ext & U4W_EXT_GRH) {
		memcpy(p, h->sgid, 16);
		memcpy(p + 16, h->dgid, 16);
		p = put32(p + 32, (h->flow_label & FLOW_MASK) |
					  (h->roce_v2 ? FLOW_V2 : 0));
	}
	if (ext & U4W_EXT_AETH) {
		*p++ = h->syndrome;
		*p++ = h->rnr_timer;
		p = put16(p, 0);
		p = put32(p, h->msn & QPN_MASK);
	}
	if (ext & U4W_EXT_ATOMACK)
		p = put64(p, h->orig);
	return (unsigned int)(p - (uint8_t *)frame);
}

uint16_t u4w_peek_paylen(const void *frame)
{
	uint16_t v;

	get16((const uint8_t *)frame + 2, &v);
	return v;
}

/* The base header of a frame of len bytes; *ext: its extensions. */
static int decode_base(const uint8_t *p, size_t len, struct u4w_hdr *h,
		       unsigned int *ext)
{
	const struct u4w_opinfo *info;
	unsigned int hlen;
	uint32_t word;

	h->opcode = *p++;
	h->flags = *p++;
	info = u4w_opinfo(h->opcode);
	if (!info)
		return -EPROTO;
	if (h->flags & ~(U4W_F_SOLICITED | U4W_F_ACKREQ | U4W_F_GRH) ||
	    ((h->flags & U4W_F_GRH) && U4W_TRANSPORT(h->opcode) != U4W_UD))
		return -EPROTO;
	*ext = ext_of(h->opcode, h->flags, info);
	hlen = U4W_BASE_LEN + ext_len(*ext);
	p = get16(p, &h->paylen);
	p = get32(p, &word);
	if (word >> 24 != U4W_VERSION)
		return -EPROTO;
	h->dst_qpn = word & QPN_MASK;
	/* the top bytes of these two words: the lane sequence */
	p = get32(p, &word);
	h->src_qpn = word & QPN_MASK;
	get32(p, &word);
	h->psn = word & QPN_MASK;
	if (len < hlen || len != hlen + h->paylen)
		return -EMSGSIZE;
	if (h->paylen > U4W_GRANULE ||
	    (h->paylen && !(info->flags & U4W_OPF_PAYLOAD)))
		return -EMSGSIZE;
	return 0;
}

/* The extensions ext names, in their order, from p (after the base). */
static int decode_ext(const uint8_t *p, unsigned int ext, struct u4w_hdr *h)
{
	uint32_t word;
	uint16_t pad16;

	if (ext & U4W_EXT_RETH) {
		p = get64(p, &h->va);
		p = get32(p, &h->rkey);
		p = get32(p, &h->dma_len);
	}
	if (ext & U4W_EXT_ATOMETH) {
		p = get64(p, &h->va);
		p = get32(p, &h->rkey);
		p = get64(p, &h->swap_add);
		p = get64(p, &h->compare);
	}
	if (ext & U4W_EXT_DETH) {
		p = get32(p, &h->qkey);
		p = get32(p, &word);
		if (word & ~(ext & U4W_EXT_GRH ? 0xffffu : 0))
			return -EPROTO;
		h->tclass = (uint8_t)word;
		h->hop_limit = (uint8_t)(word >> 8);
	}
	if (ext & U4W_EXT_IMM)
		p = get32(p, &h->imm);
	if (ext & U4W_EXT_IETH)
		p = get32(p, &h->inv_rkey);
	if (ext & U4W_EXT_GRH) {
		memcpy(h->sgid, p, 16);
		memcpy(h->dgid, p + 16, 16);
		p = get32(p + 32, &word);
		if (word & ~(FLOW_MASK | FLOW_V2))
			return -EPROTO;
		h->flow_label = word & FLOW_MASK;
		h->roce_v2 = word & FLOW_V2;
	}
	if (ext & U4W_EXT_AETH) {
		h->syndrome = *p++;
		h->rnr_timer = *p++;
		p = get16(p, &pad16);
		p = get32(p, &word);
		if (h->syndrome > U4W_AETH_MAX || h->rnr_timer > 31 || pad16 ||
		    (word & ~QPN_MASK))
			return -EPROTO;
		h->msn = word;
	}
	if (ext & U4W_EXT_ATOMACK)
		get64(p, &h->orig);
	return 0;
}

int u4w_decode(const void *frame, size_t len, struct u4w_hdr *h)
{
	unsigned int ext;
	int ret;

	if (len < U4W_BASE_LEN)
		return -EMSGSIZE;
	memset(h, 0, sizeof(*h));
	ret = decode_base(frame, len, h, &ext);
	if (ret)
		return ret;
	return decode_ext((const uint8_t *)frame + U4W_BASE_LEN, ext, h);
}
