/* SPDX-License-Identifier: MIT */
/*
 * The opcode table: one row per wire opcode, driving the codec (which
 * extension headers), the responder (what a frame does) and the requester
 * (which frame opcode a work request's n-th frame gets).
 */
#ifndef U4V_OPCODE_H
#define U4V_OPCODE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "wire/wire.h"

enum u4w_ext {
	U4W_EXT_RETH = 1u << 0,
	U4W_EXT_ATOMETH = 1u << 1,
	U4W_EXT_DETH = 1u << 2,
	U4W_EXT_IMM = 1u << 3,
	U4W_EXT_AETH = 1u << 4,
	U4W_EXT_ATOMACK = 1u << 5,
};

enum u4w_opflags {
	U4W_OPF_REQUEST = 1u << 0,   /* requester → responder */
	U4W_OPF_RESPONSE = 1u << 1,  /* responder → requester */
	U4W_OPF_FIRST = 1u << 2,     /* first frame of a message */
	U4W_OPF_LAST = 1u << 3,	     /* last frame of a message */
	U4W_OPF_PAYLOAD = 1u << 4,   /* may carry payload */
	U4W_OPF_SEND = 1u << 5,	     /* consumes a receive WQE */
	U4W_OPF_WRITE = 1u << 6,     /* places into an MR */
	U4W_OPF_READ = 1u << 7,	     /* read request / response */
	U4W_OPF_ATOMIC = 1u << 8,    /* atomic request / response */
	U4W_OPF_IMM = 1u << 9,	     /* completes with immediate data */
};

struct u4w_opinfo {
	const char *name;
	uint16_t ext;	    /* enum u4w_ext */
	uint16_t flags;	    /* enum u4w_opflags */
	uint8_t transports; /* bit per transport allowed: 1 RC, 2 UC, 4 UD */
};

extern const struct u4w_opinfo u4w_ops[U4W_NUM_OPS];

/* Row for a full wire opcode, or NULL when the opcode is not valid. */
const struct u4w_opinfo *u4w_opinfo(uint8_t opcode);

/* Transport bits of u4w_opinfo.transports and the wire transport. */
uint8_t u4w_qpt_bit(enum ibv_qp_type qpt);
uint8_t u4w_qpt_transport(enum ibv_qp_type qpt);

/*
 * The opcode × QP-type matrix of ibv_post_send(3): may a work request with
 * this opcode be posted on this QP type?
 */
bool u4w_wr_allowed(enum ibv_qp_type qpt, enum ibv_wr_opcode op);

/*
 * Frame op of frame `index` of `nframes` of a work request (SEND, WRITE and
 * their _WITH_IMM variants); READ/atomics use one request frame.
 */
enum u4w_op u4w_wr_frame_op(enum ibv_wr_opcode op, uint32_t index,
			    uint32_t nframes);

/* Completion opcode reported to the requester for a work request. */
enum ibv_wc_opcode u4w_wc_opcode(enum ibv_wr_opcode op);

#endif
