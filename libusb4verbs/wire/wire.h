/* SPDX-License-Identifier: MIT */
/*
 * The frame format: one codec, one place. A frame is one NHI buffer
 * (<= 4096 bytes): a 16-byte base header, the extension headers its opcode
 * calls for (fixed order, fixed sizes), then payload. Little-endian.
 */
#ifndef U4V_WIRE_H
#define U4V_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define U4W_VERSION 1
#define U4W_BASE_LEN 16u
/*
 * Payload per frame. 64 bytes of the 4096-byte frame stay free for headers
 * (the largest combination, base + RETH + IMM, is 36), so that the message
 * offset of every frame is (psn - first_psn) * granule whatever its opcode.
 */
#define U4W_GRANULE 4032u
/* The longest headers of any frame, with or without payload. */
#define U4W_HDR_MAX (4096u - U4W_GRANULE)

/* Transport in the opcode's top bits (as in InfiniBand's BTH). */
enum u4w_transport {
	U4W_RC = 0x00,
	U4W_UC = 0x20,
	U4W_UD = 0x60,
};

/* Operation in the opcode's low five bits. */
enum u4w_op {
	U4W_SEND_FIRST = 0,
	U4W_SEND_MIDDLE,
	U4W_SEND_LAST,
	U4W_SEND_LAST_IMM,
	U4W_SEND_ONLY,
	U4W_SEND_ONLY_IMM,
	U4W_WRITE_FIRST,
	U4W_WRITE_MIDDLE,
	U4W_WRITE_LAST,
	U4W_WRITE_LAST_IMM,
	U4W_WRITE_ONLY,
	U4W_WRITE_ONLY_IMM,
	U4W_READ_REQ,
	U4W_READ_RESP_FIRST,
	U4W_READ_RESP_MIDDLE,
	U4W_READ_RESP_LAST,
	U4W_READ_RESP_ONLY,
	U4W_ACK,
	U4W_ATOMIC_ACK,
	U4W_CMP_SWAP,
	U4W_FETCH_ADD,
	U4W_SEND_LAST_INV,
	U4W_SEND_ONLY_INV,
	U4W_NUM_OPS
};

#define U4W_OP(opcode) ((opcode) & 0x1f)
#define U4W_TRANSPORT(opcode) ((opcode) & 0xe0)

/* Base header flags. */
enum u4w_flags {
	U4W_F_SOLICITED = 1u << 0, /* raise a solicited event at the target */
	U4W_F_ACKREQ = 1u << 1,	   /* ask for an ACK now (end of a burst) */
	U4W_F_GRH = 1u << 2,	   /* UD: the sender's GRH follows (GRH ext) */
};

/* AETH syndromes. */
enum u4w_syndrome {
	U4W_AETH_ACK = 0,
	U4W_AETH_RNR_NAK,
	U4W_AETH_NAK_SEQ,
	U4W_AETH_NAK_INV_REQ,
	U4W_AETH_NAK_REM_ACCESS,
	U4W_AETH_NAK_REM_OP,
	U4W_AETH_MAX = U4W_AETH_NAK_REM_OP
};

/* The decoded header: every field any opcode can carry. */
struct u4w_hdr {
	uint8_t opcode;
	uint8_t flags;
	uint16_t paylen;
	uint32_t dst_qpn; /* 24 bits */
	uint32_t src_qpn; /* 24 bits */
	uint32_t psn;	  /* 24 bits */
	/* RETH: WRITE_FIRST/ONLY(_IMM), READ_REQ */
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
	/* ATOMETH: CMP_SWAP, FETCH_ADD (va, rkey above) */
	uint64_t swap_add;
	uint64_t compare;
	/* DETH: UD (traffic class and hop limit of the GRH, if any) */
	uint32_t qkey;
	uint8_t tclass, hop_limit;
	/* GRH: UD with U4W_F_GRH; what the receiver's GRH area shows */
	uint8_t sgid[16], dgid[16];
	uint32_t flow_label; /* 20 bits */
	bool roce_v2;	     /* the source GID is RoCE v2: UDP/IP */
	/* ImmDt */
	uint32_t imm; /* as the application gave it (big-endian value) */
	/* IETH: SEND_LAST_INV, SEND_ONLY_INV */
	uint32_t inv_rkey;
	/* AETH: ACK, READ_RESP_FIRST/LAST/ONLY, ATOMIC_ACK */
	uint8_t syndrome;
	uint8_t rnr_timer;
	uint32_t msn; /* 24 bits */
	/* ATOMICACKETH */
	uint64_t orig;
};

/*
 * Length of the headers (base + extensions) of a frame with this opcode and
 * these flags (UD's GRH depends on U4W_F_GRH); 0 if the opcode is invalid.
 */
unsigned int u4w_hdr_len(uint8_t opcode, uint8_t flags);
/* Where the payload of a decoded frame starts. */
static inline const uint8_t *u4w_payload(const void *frame,
					 const struct u4w_hdr *h)
{
	return (const uint8_t *)frame + u4w_hdr_len(h->opcode, h->flags);
}
/* Write the headers; returns their length (the payload follows). */
unsigned int u4w_encode(void *frame, const struct u4w_hdr *hdr);
/*
 * The lane sequence: a 16-bit count of the frames the sender put on the
 * channels to one context, in the top bytes of the base header's source
 * QPN and PSN words (u4w_encode writes 0 there; the sender stamps it when
 * it posts the frame). The receiver restores the order of frames striped
 * over several lanes with it (ctx/lanes.c); the decoder ignores it.
 */
#define U4W_LANE_SEQ_LO 11u /* byte offsets in the base header */
#define U4W_LANE_SEQ_HI 15u
static inline void u4w_set_lane_seq(void *frame, uint16_t seq)
{
	((uint8_t *)frame)[U4W_LANE_SEQ_LO] = (uint8_t)seq;
	((uint8_t *)frame)[U4W_LANE_SEQ_HI] = (uint8_t)(seq >> 8);
}
static inline uint16_t u4w_lane_seq(const void *frame)
{
	const uint8_t *p = frame;

	return (uint16_t)(p[U4W_LANE_SEQ_LO] | p[U4W_LANE_SEQ_HI] << 8);
}
/* The payload length a header announces (header bytes only are read). */
uint16_t u4w_peek_paylen(const void *frame);
/* A frame's opcode, its first byte (not validated: u4w_decode does that). */
static inline uint8_t u4w_peek_opcode(const void *frame)
{
	return *(const uint8_t *)frame;
}
/*
 * Decode and validate a received frame of len bytes. Returns 0 and fills hdr
 * (payload at frame + return of u4w_hdr_len) or a negative errno: EPROTO
 * (version, unknown opcode, reserved bits), EMSGSIZE (length mismatch).
 */
int u4w_decode(const void *frame, size_t len, struct u4w_hdr *hdr);

#endif
