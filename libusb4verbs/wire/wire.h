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
	U4W_NUM_OPS
};

#define U4W_OP(opcode) ((opcode) & 0x1f)
#define U4W_TRANSPORT(opcode) ((opcode) & 0xe0)

/* Base header flags. */
enum u4w_flags {
	U4W_F_SOLICITED = 1u << 0, /* raise a solicited event at the target */
	U4W_F_ACKREQ = 1u << 1,	   /* ask for an ACK now (end of a burst) */
	U4W_F_GRH = 1u << 2,	   /* UD: the sender's AH was global */
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
	/* DETH: UD */
	uint32_t qkey;
	/* ImmDt */
	uint32_t imm; /* as the application gave it (big-endian value) */
	/* AETH: ACK, READ_RESP_FIRST/LAST/ONLY, ATOMIC_ACK */
	uint8_t syndrome;
	uint8_t rnr_timer;
	uint32_t msn; /* 24 bits */
	/* ATOMICACKETH */
	uint64_t orig;
};

/* Length of the headers (base + extensions) of an opcode; 0 if invalid. */
unsigned int u4w_hdr_len(uint8_t opcode);
/* Write the headers; returns their length (the payload follows). */
unsigned int u4w_encode(void *frame, const struct u4w_hdr *hdr);
/* The payload length a header announces (header bytes only are read). */
uint16_t u4w_peek_paylen(const void *frame);
/*
 * Decode and validate a received frame of len bytes. Returns 0 and fills hdr
 * (payload at frame + return of u4w_hdr_len) or a negative errno: EPROTO
 * (version, unknown opcode, reserved bits), EMSGSIZE (length mismatch).
 */
int u4w_decode(const void *frame, size_t len, struct u4w_hdr *hdr);

#endif
