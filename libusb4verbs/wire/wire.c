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
#define QPN_MASK 0xffffffu

static unsigned int ext_of(uint8_t opcode, const struct u4w_opinfo *info)
{
	unsigned int ext = info->ext;

	if (U4W_TRANSPORT(opcode) == U4W_UD)
		ext |= U4W_EXT_DETH;
	return ext;
}

static unsigned int ext_len(unsigned int ext)
{
	return (ext & U4W_EXT_RETH ? RETH_LEN : 0) +
	       (ext & U4W_EXT_ATOMETH ? ATOMETH_LEN : 0) +
	       (ext & U4W_EXT_DETH ? DETH_LEN : 0) +
	       (ext & U4W_EXT_IMM ? IMM_LEN : 0) +
	       (ext & U4W_EXT_AETH ? AETH_LEN : 0) +
	       (ext & U4W_EXT_ATOMACK ? ATOMACK_LEN : 0);
}

unsigned int u4w_hdr_len(uint8_t opcode)
{
	const struct u4w_opinfo *info = u4w_opinfo(opcode);

	return info ? U4W_BASE_LEN + ext_len(ext_of(opcode, info)) : 0;
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
	ext = ext_of(h->opcode, info);
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
		p = put32(p, 0);
	}
	if (ext & U4W_EXT_IMM)
		p = put32(p, h->imm);
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

int u4w_decode(const void *frame, size_t len, struct u4w_hdr *h)
{
	const struct u4w_opinfo *info;
	const uint8_t *p = frame;
	unsigned int ext, hlen;
	uint32_t word;
	uint16_t pad16;

	if (len < U4W_BASE_LEN)
		return -EMSGSIZE;
	memset(h, 0, sizeof(*h));
	h->opcode = *p++;
	h->flags = *p++;
	info = u4w_opinfo(h->opcode);
	if (!info)
		return -EPROTO;
	if (h->flags & ~(U4W_F_SOLICITED | U4W_F_ACKREQ | U4W_F_GRH))
		return -EPROTO;
	ext = ext_of(h->opcode, info);
	hlen = U4W_BASE_LEN + ext_len(ext);
	p = get16(p, &h->paylen);
	p = get32(p, &word);
	if (word >> 24 != U4W_VERSION)
		return -EPROTO;
	h->dst_qpn = word & QPN_MASK;
	p = get32(p, &word);
	if (word & ~QPN_MASK)
		return -EPROTO;
	h->src_qpn = word;
	p = get32(p, &word);
	if (word & ~QPN_MASK)
		return -EPROTO;
	h->psn = word;
	if (len < hlen || len != hlen + h->paylen)
		return -EMSGSIZE;
	if (h->paylen > U4W_GRANULE ||
	    (h->paylen && !(info->flags & U4W_OPF_PAYLOAD)))
		return -EMSGSIZE;
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
		if (word)
			return -EPROTO;
	}
	if (ext & U4W_EXT_IMM)
		p = get32(p, &h->imm);
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
		p = get64(p, &h->orig);
	(void)p;
	return 0;
}
