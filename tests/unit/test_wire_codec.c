// SPDX-License-Identifier: MIT
/*
 * The frame codec: every opcode × transport round-trips with random field
 * values, and every kind of malformed header is refused (version, unknown
 * opcode, reserved bits, length mismatch both ways, payload where none is
 * allowed, paylen > granule, bad syndrome / rnr_timer, truncation at every
 * length below the header). Decoding always works on an exact-size heap copy
 * so that ASan catches any read past the frame.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"
#include "wire/opcode.h"
#include "wire/wire.h"

static const uint8_t transports[] = { U4W_RC, U4W_UC, U4W_UD };

static uint64_t rng = 0x1234567887654321ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Is (transport, op) a legal wire opcode? The contract, written out. */
static bool expect_valid(uint8_t t, unsigned int op)
{
	if (op >= U4W_NUM_OPS)
		return false;
	switch (t) {
	case U4W_RC:
		return true;
	case U4W_UC:
		return op <= U4W_WRITE_ONLY_IMM || op == U4W_SEND_LAST_INV ||
		       op == U4W_SEND_ONLY_INV;
	case U4W_UD:
		return op <= U4W_SEND_ONLY_IMM;
	default:
		return false;
	}
}

static unsigned int expected_hdr_len(uint8_t opcode, uint8_t flags)
{
	unsigned int op = U4W_OP(opcode), n = U4W_BASE_LEN;

	if (U4W_TRANSPORT(opcode) == U4W_UD && (flags & U4W_F_GRH))
		n += 36; /* GRH: sgid, dgid, flow label and version */
	if (op == U4W_WRITE_FIRST || op == U4W_WRITE_ONLY ||
	    op == U4W_WRITE_ONLY_IMM || op == U4W_READ_REQ)
		n += 16; /* RETH */
	if (op == U4W_CMP_SWAP || op == U4W_FETCH_ADD)
		n += 28; /* ATOMETH */
	if (U4W_TRANSPORT(opcode) == U4W_UD)
		n += 8; /* DETH */
	if (op == U4W_SEND_LAST_IMM || op == U4W_SEND_ONLY_IMM ||
	    op == U4W_WRITE_LAST_IMM || op == U4W_WRITE_ONLY_IMM)
		n += 4; /* ImmDt */
	if (op == U4W_SEND_LAST_INV || op == U4W_SEND_ONLY_INV)
		n += 4; /* IETH */
	if (op == U4W_READ_RESP_FIRST || op == U4W_READ_RESP_LAST ||
	    op == U4W_READ_RESP_ONLY || op == U4W_ACK || op == U4W_ATOMIC_ACK)
		n += 8; /* AETH */
	if (op == U4W_ATOMIC_ACK)
		n += 8;
	return n;
}

static bool has_payload(unsigned int op)
{
	return op <= U4W_WRITE_ONLY_IMM ||
	       (op >= U4W_READ_RESP_FIRST && op <= U4W_READ_RESP_ONLY) ||
	       op == U4W_SEND_LAST_INV || op == U4W_SEND_ONLY_INV;
}

/* Decode a copy of exactly len bytes of frame. */
static int decode_exact(const void *frame, size_t len, struct u4w_hdr *h)
{
	void *copy = malloc(len ? len : 1);
	int ret;

	assert_non_null(copy);
	memcpy(copy, frame, len);
	ret = u4w_decode(copy, len, h);
	free(copy);
	return ret;
}

/* A random header with only the fields the opcode carries. */
static void random_hdr(struct u4w_hdr *h, uint8_t opcode)
{
	unsigned int op = U4W_OP(opcode);
	unsigned int hl;

	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->flags = rnd() & (U4W_F_SOLICITED | U4W_F_ACKREQ);
	if (U4W_TRANSPORT(opcode) == U4W_UD && (rnd() & 1)) {
		h->flags |= U4W_F_GRH;
		for (hl = 0; hl < 16; hl++) {
			h->sgid[hl] = (uint8_t)rnd();
			h->dgid[hl] = (uint8_t)rnd();
		}
		h->flow_label = rnd() & 0xfffff;
		h->roce_v2 = rnd() & 1;
		h->tclass = (uint8_t)rnd();
		h->hop_limit = (uint8_t)rnd();
	}
	hl = expected_hdr_len(opcode, h->flags);
	h->dst_qpn = rnd() & 0xffffff;
	h->src_qpn = rnd() & 0xffffff;
	h->psn = rnd() & 0xffffff;
	if (has_payload(op)) {
		uint32_t max = 4096 - hl < U4W_GRANULE ? 4096 - hl :
							  U4W_GRANULE;

		switch (rnd() % 4) {
		case 0:
			h->paylen = 0;
			break;
		case 1:
			h->paylen = (uint16_t)max;
			break;
		default:
			h->paylen = (uint16_t)(rnd() % (max + 1));
		}
	}
	if (op == U4W_WRITE_FIRST || op == U4W_WRITE_ONLY ||
	    op == U4W_WRITE_ONLY_IMM || op == U4W_READ_REQ) {
		h->va = rnd();
		h->rkey = (uint32_t)rnd();
		h->dma_len = (uint32_t)rnd();
	}
	if (op == U4W_CMP_SWAP || op == U4W_FETCH_ADD) {
		h->va = rnd();
		h->rkey = (uint32_t)rnd();
		h->swap_add = rnd();
		h->compare = rnd();
	}
	if (U4W_TRANSPORT(opcode) == U4W_UD)
		h->qkey = (uint32_t)rnd();
	if (op == U4W_SEND_LAST_IMM || op == U4W_SEND_ONLY_IMM ||
	    op == U4W_WRITE_LAST_IMM || op == U4W_WRITE_ONLY_IMM)
		h->imm = (uint32_t)rnd();
	if (op == U4W_SEND_LAST_INV || op == U4W_SEND_ONLY_INV)
		h->inv_rkey = (uint32_t)rnd();
	if (op == U4W_READ_RESP_FIRST || op == U4W_READ_RESP_LAST ||
	    op == U4W_READ_RESP_ONLY || op == U4W_ACK ||
	    op == U4W_ATOMIC_ACK) {
		h->syndrome = (uint8_t)(rnd() % (U4W_AETH_MAX + 1));
		h->rnr_timer = (uint8_t)(rnd() % 32);
		h->msn = rnd() & 0xffffff;
	}
	if (op == U4W_ATOMIC_ACK)
		h->orig = rnd();
}

static void assert_hdr_equal(const struct u4w_hdr *a, const struct u4w_hdr *b)
{
	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->paylen, b->paylen);
	assert_int_equal(a->dst_qpn, b->dst_qpn);
	assert_int_equal(a->src_qpn, b->src_qpn);
	assert_int_equal(a->psn, b->psn);
	assert_true(a->va == b->va);
	assert_int_equal(a->rkey, b->rkey);
	assert_int_equal(a->dma_len, b->dma_len);
	assert_true(a->swap_add == b->swap_add);
	assert_true(a->compare == b->compare);
	assert_int_equal(a->qkey, b->qkey);
	assert_int_equal(a->imm, b->imm);
	assert_int_equal(a->inv_rkey, b->inv_rkey);
	assert_memory_equal(a->sgid, b->sgid, 16);
	assert_memory_equal(a->dgid, b->dgid, 16);
	assert_int_equal(a->flow_label, b->flow_label);
	assert_int_equal(a->roce_v2, b->roce_v2);
	assert_int_equal(a->tclass, b->tclass);
	assert_int_equal(a->hop_limit, b->hop_limit);
	assert_int_equal(a->syndrome, b->syndrome);
	assert_int_equal(a->rnr_timer, b->rnr_timer);
	assert_int_equal(a->msn, b->msn);
	assert_true(a->orig == b->orig);
}

/* Build a frame: headers + paylen bytes of pattern; returns total length. */
static size_t build(uint8_t *frame, const struct u4w_hdr *h)
{
	unsigned int hl = u4w_encode(frame, h);

	assert_int_equal(hl, expected_hdr_len(h->opcode, h->flags));
	memset(frame + hl, 0xa5, h->paylen);
	return hl + h->paylen;
}

static void test_opcode_table(void **state)
{
	unsigned int t, op, code;

	(void)state;
	for (code = 0; code < 256; code++) {
		uint8_t tr = U4W_TRANSPORT(code);
		bool valid = expect_valid(tr, U4W_OP(code));

		if (valid != (u4w_opinfo((uint8_t)code) != NULL))
			fail_msg("opcode 0x%02x: valid %d, table says %d", code,
				 valid, u4w_opinfo((uint8_t)code) != NULL);
		assert_int_equal(u4w_hdr_len((uint8_t)code, 0),
				 valid ? expected_hdr_len((uint8_t)code, 0) :
					 0);
		assert_int_equal(u4w_hdr_len((uint8_t)code, U4W_F_GRH),
				 valid ? expected_hdr_len((uint8_t)code,
							  U4W_F_GRH) :
					 0);
	}
	for (t = 0; t < 3; t++)
		for (op = 0; op < U4W_NUM_OPS; op++) {
			uint8_t code = transports[t] | op;
			const struct u4w_opinfo *i = u4w_opinfo(code);

			if (!i)
				continue;
			/* the link gives the engine this much as headers */
			assert_true(u4w_hdr_len(code, U4W_F_GRH) <= U4W_HDR_MAX);
			assert_true(u4w_hdr_len(code, 0) <= U4W_HDR_MAX);
			/* headers + a full granule fit one NHI frame */
			if (i->flags & U4W_OPF_PAYLOAD)
				assert_true(u4w_hdr_len(code, U4W_F_GRH) +
						    U4W_GRANULE <=
					    4096);
			assert_int_equal(!!(i->flags & U4W_OPF_PAYLOAD),
					 has_payload(op));
		}
}

static void test_roundtrip_random(void **state)
{
	static uint8_t frame[8192];
	unsigned int t, op, iter;

	(void)state;
	for (t = 0; t < 3; t++)
		for (op = 0; op < U4W_NUM_OPS; op++) {
			uint8_t code = transports[t] | op;

			if (!expect_valid(transports[t], op))
				continue;
			for (iter = 0; iter < 200; iter++) {
				struct u4w_hdr h, d;
				size_t len;

				random_hdr(&h, code);
				len = build(frame, &h);
				memset(&d, 0x5a, sizeof(d));
				if (decode_exact(frame, len, &d))
					fail_msg("%s/0x%02x: decode failed",
						 u4w_ops[op].name, code);
				assert_hdr_equal(&h, &d);
				/* payload starts right after the headers */
				if (h.paylen)
					assert_int_equal(
						frame[u4w_hdr_len(
							code, h.flags)],
						0xa5);
			}
		}
}

/* The byte layout is little-endian and stable: a known-answer vector. */
static void test_golden_layout(void **state)
{
	uint8_t f[64];
	struct u4w_hdr h = { 0 };
	static const uint8_t want[] = {
		U4W_RC | U4W_WRITE_ONLY, U4W_F_ACKREQ, 0x03, 0x00, /* paylen 3 */
		0x56, 0x34, 0x12, U4W_VERSION, /* dst 0x123456, version */
		0xcc, 0xbb, 0xaa, 0x00,	       /* src 0xaabbcc */
		0x03, 0x02, 0x01, 0x00,	       /* psn 0x010203 */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* va */
		0xef, 0xbe, 0xad, 0xde, /* rkey */
		0x03, 0x00, 0x00, 0x00, /* dma_len */
	};
	struct u4w_hdr d;

	(void)state;
	h.opcode = U4W_RC | U4W_WRITE_ONLY;
	h.flags = U4W_F_ACKREQ;
	h.paylen = 3;
	h.dst_qpn = 0x123456;
	h.src_qpn = 0xaabbcc;
	h.psn = 0x010203;
	h.va = 0x1122334455667788ull;
	h.rkey = 0xdeadbeef;
	h.dma_len = 3;
	assert_int_equal(u4w_encode(f, &h), sizeof(want));
	assert_memory_equal(f, want, sizeof(want));
	memcpy(f + sizeof(want), "abc", 3);
	assert_int_equal(decode_exact(f, sizeof(want) + 3, &d), 0);
	assert_hdr_equal(&h, &d);
}

/* A valid frame with paylen payload bytes for code; returns its length. */
static size_t valid_frame(uint8_t *f, uint8_t code, uint16_t paylen)
{
	struct u4w_hdr h;

	random_hdr(&h, code);
	h.paylen = has_payload(U4W_OP(code)) ? paylen : 0;
	return build(f, &h);
}

/* The same, UD with or without the GRH. */
static size_t valid_ud_frame(uint8_t *f, uint8_t code, bool grh)
{
	struct u4w_hdr h;

	do
		random_hdr(&h, code);
	while (!(h.flags & U4W_F_GRH) != !grh);
	h.paylen = 0;
	return build(f, &h);
}

/*
 * The lane sequence rides in the top bytes of the source QPN and PSN words:
 * every value reads back, encode leaves 0 there, and the decoder returns
 * the same QPN and PSN whatever it is.
 */
static void test_lane_seq(void **state)
{
	uint8_t f[64];
	struct u4w_hdr h = { 0 }, d;
	unsigned int len;
	uint32_t v;

	(void)state;
	h.opcode = U4W_RC | U4W_SEND_ONLY;
	h.dst_qpn = 0x10002;
	h.src_qpn = 0xffffff;
	h.psn = 0xfffffe;
	len = u4w_encode(f, &h);
	assert_int_equal(u4w_lane_seq(f), 0);
	for (v = 0; v <= 0xffff; v += 0x0101) {
		u4w_set_lane_seq(f, (uint16_t)v);
		assert_int_equal(u4w_lane_seq(f), v);
		assert_int_equal(decode_exact(f, len, &d), 0);
		assert_hdr_equal(&h, &d);
	}
	u4w_set_lane_seq(f, 0x8001);
	assert_int_equal(f[11], 0x01);
	assert_int_equal(f[15], 0x80);
}

static void test_bad_version(void **state)
{
	static const uint8_t versions[] = { 0, 2, 3, 0x7f, 0x80, 0xff };
	uint8_t f[4096];
	struct u4w_hdr d;
	size_t len, i;

	(void)state;
	len = valid_frame(f, U4W_RC | U4W_SEND_ONLY, 10);
	assert_int_equal(decode_exact(f, len, &d), 0);
	for (i = 0; i < sizeof(versions); i++) {
		f[7] = versions[i];
		assert_int_equal(decode_exact(f, len, &d), -EPROTO);
	}
}

static void test_unknown_opcodes(void **state)
{
	uint8_t f[64];
	struct u4w_hdr d;
	unsigned int code;

	(void)state;
	for (code = 0; code < 256; code++) {
		if (u4w_opinfo((uint8_t)code))
			continue;
		/* an otherwise plausible frame: 16-byte base + 52 zeros */
		memset(f, 0, sizeof(f));
		f[0] = (uint8_t)code;
		f[7] = U4W_VERSION;
		for (size_t len = U4W_BASE_LEN; len <= sizeof(f); len += 4)
			if (decode_exact(f, len, &d) != -EPROTO)
				fail_msg("opcode 0x%02x len %zu accepted", code,
					 len);
	}
}

static void test_reserved_bits(void **state)
{
	uint8_t f[4096];
	struct u4w_hdr d;
	size_t len;
	int bit;

	(void)state;
	/* unknown flag bits */
	for (bit = 3; bit < 8; bit++) {
		len = valid_frame(f, U4W_RC | U4W_SEND_ONLY, 4);
		f[1] |= (uint8_t)(1u << bit);
		assert_int_equal(decode_exact(f, len, &d), -EPROTO);
	}
	/* DETH's second word (UD: base, DETH qkey, word): reserved, but
	 * for traffic class and hop limit when a GRH follows */
	for (bit = 0; bit < 32; bit++) {
		len = valid_ud_frame(f, U4W_UD | U4W_SEND_ONLY, false);
		f[U4W_BASE_LEN + 4 + bit / 8] |= (uint8_t)(1u << (bit % 8));
		assert_int_equal(decode_exact(f, len, &d), -EPROTO);
	}
	for (bit = 16; bit < 32; bit++) {
		len = valid_ud_frame(f, U4W_UD | U4W_SEND_ONLY, true);
		f[U4W_BASE_LEN + 4 + bit / 8] |= (uint8_t)(1u << (bit % 8));
		assert_int_equal(decode_exact(f, len, &d), -EPROTO);
	}
	/* the GRH's flow word: 20 bits of label, the version bit */
	for (bit = 20; bit < 31; bit++) {
		len = valid_ud_frame(f, U4W_UD | U4W_SEND_ONLY, true);
		f[U4W_BASE_LEN + 8 + 32 + bit / 8] |=
			(uint8_t)(1u << (bit % 8));
		assert_int_equal(decode_exact(f, len, &d), -EPROTO);
	}
	/* a GRH only on UD */
	len = valid_frame(f, U4W_RC | U4W_SEND_ONLY, 0);
	f[1] |= U4W_F_GRH;
	assert_int_equal(decode_exact(f, len, &d), -EPROTO);
	/* AETH: 16-bit pad and the top byte of the MSN (ACK: base, AETH) */
	for (bit = 0; bit < 16; bit++) {
		len = valid_frame(f, U4W_RC | U4W_ACK, 0);
		f[U4W_BASE_LEN + 2 + bit / 8] |= (uint8_t)(1u << (bit % 8));
		assert_int_equal(decode_exact(f, len, &d), -EPROTO);
	}
	for (bit = 24; bit < 32; bit++) {
		len = valid_frame(f, U4W_RC | U4W_ATOMIC_ACK, 0);
		f[U4W_BASE_LEN + 4 + bit / 8] |= (uint8_t)(1u << (bit % 8));
		assert_int_equal(decode_exact(f, len, &d), -EPROTO);
	}
}

static void test_bad_syndrome_rnr_timer(void **state)
{
	static const uint8_t codes[] = { U4W_RC | U4W_ACK,
					 U4W_RC | U4W_ATOMIC_ACK,
					 U4W_RC | U4W_READ_RESP_FIRST,
					 U4W_RC | U4W_READ_RESP_LAST,
					 U4W_RC | U4W_READ_RESP_ONLY };
	uint8_t f[4096];
	struct u4w_hdr h, d;
	unsigned int i, v;
	size_t len;

	(void)state;
	for (i = 0; i < sizeof(codes); i++) {
		for (v = 0; v < 256; v++) {
			random_hdr(&h, codes[i]);
			h.paylen = 0;
			h.syndrome = (uint8_t)v;
			len = build(f, &h);
			assert_int_equal(decode_exact(f, len, &d),
					 v <= U4W_AETH_MAX ? 0 : -EPROTO);
		}
		for (v = 0; v < 256; v++) {
			random_hdr(&h, codes[i]);
			h.paylen = 0;
			h.rnr_timer = (uint8_t)v;
			len = build(f, &h);
			assert_int_equal(decode_exact(f, len, &d),
					 v <= 31 ? 0 : -EPROTO);
		}
	}
}

static void test_length_mismatch(void **state)
{
	uint8_t f[8192];
	struct u4w_hdr d;
	unsigned int t, op;

	(void)state;
	memset(f, 0, sizeof(f));
	for (t = 0; t < 3; t++)
		for (op = 0; op < U4W_NUM_OPS; op++) {
			uint8_t code = transports[t] | op;
			uint16_t pl = has_payload(op) ? 100 : 0;
			size_t len;

			if (!expect_valid(transports[t], op))
				continue;
			len = valid_frame(f, code, pl);
			assert_int_equal(decode_exact(f, len, &d), 0);
			/* one byte more than the header says */
			assert_int_equal(decode_exact(f, len + 1, &d),
					 -EMSGSIZE);
			assert_int_equal(decode_exact(f, len + 4000, &d),
					 -EMSGSIZE);
			/* one byte less */
			assert_int_equal(decode_exact(f, len - 1, &d),
					 -EMSGSIZE);
		}
}

static void test_payload_where_none(void **state)
{
	static const unsigned int ops[] = { U4W_READ_REQ, U4W_ACK,
					    U4W_ATOMIC_ACK, U4W_CMP_SWAP,
					    U4W_FETCH_ADD };
	uint8_t f[4096];
	struct u4w_hdr h, d;
	size_t i, len;
	uint16_t pl;

	(void)state;
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		for (pl = 1; pl <= 64; pl *= 2) {
			random_hdr(&h, U4W_RC | ops[i]);
			h.paylen = pl; /* consistent with the frame length */
			len = build(f, &h);
			assert_true(decode_exact(f, len, &d) < 0);
		}
}

static void test_paylen_over_granule(void **state)
{
	static const uint8_t codes[] = { U4W_RC | U4W_SEND_ONLY,
					 U4W_UC | U4W_SEND_MIDDLE,
					 U4W_RC | U4W_READ_RESP_MIDDLE,
					 U4W_UD | U4W_SEND_ONLY };
	static uint8_t f[70000];
	struct u4w_hdr h, d;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(codes); i++) {
		random_hdr(&h, codes[i]);
		h.paylen = U4W_GRANULE;
		len = build(f, &h);
		assert_int_equal(decode_exact(f, len, &d), 0);
		h.paylen = U4W_GRANULE + 1;
		len = build(f, &h);
		assert_true(decode_exact(f, len, &d) < 0);
		h.paylen = 0xffff;
		len = build(f, &h);
		assert_true(decode_exact(f, len, &d) < 0);
	}
}

static void test_truncated_every_length(void **state)
{
	uint8_t f[8192];
	struct u4w_hdr d;
	unsigned int t, op;

	(void)state;
	for (t = 0; t < 3; t++)
		for (op = 0; op < U4W_NUM_OPS; op++) {
			uint8_t code = transports[t] | op;
			size_t len, hl, cut;

			if (!expect_valid(transports[t], op))
				continue;
			len = valid_frame(f, code, 0);
			hl = expected_hdr_len(code, f[1]);
			assert_int_equal(len, hl);
			for (cut = 0; cut < hl; cut++)
				if (decode_exact(f, cut, &d) >= 0)
					fail_msg("%s/0x%02x truncated to %zu "
						 "accepted",
						 u4w_ops[op].name, code, cut);
			if (!has_payload(op))
				continue;
			/* cut inside the payload */
			len = valid_frame(f, code, 50);
			hl = expected_hdr_len(code, f[1]);
			for (cut = hl; cut < len; cut++)
				assert_int_equal(decode_exact(f, cut, &d),
						 -EMSGSIZE);
		}
}

/* Random bytes never crash the decoder and rarely pass it. */
static void test_garbage(void **state)
{
	uint8_t f[256];
	struct u4w_hdr d;
	int i, ok = 0;

	(void)state;
	for (i = 0; i < 200000; i++) {
		size_t len = rnd() % sizeof(f), j;

		for (j = 0; j < len; j++)
			f[j] = (uint8_t)rnd();
		if (decode_exact(f, len, &d) == 0) {
			ok++;
			assert_int_equal(len, u4w_hdr_len(d.opcode, d.flags) +
						      d.paylen);
		}
	}
	assert_true(ok < 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opcode_table),
		cmocka_unit_test(test_roundtrip_random),
		cmocka_unit_test(test_golden_layout),
		cmocka_unit_test(test_lane_seq),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_unknown_opcodes),
		cmocka_unit_test(test_reserved_bits),
		cmocka_unit_test(test_bad_syndrome_rnr_timer),
		cmocka_unit_test(test_length_mismatch),
		cmocka_unit_test(test_payload_where_none),
		cmocka_unit_test(test_paylen_over_granule),
		cmocka_unit_test(test_truncated_every_length),
		cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
