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
	U4W_EXT_IETH = 1u << 6,
	U4W_EXT_GRH = 1u << 7, /* UD with U4W_F_GRH: the sender's GRH */
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
	U4W_OPF_INV = 1u << 10,	     /* invalidates the rkey in its IETH */
};

/* A transport as a bit of struct u4w_opinfo's transports. */
enum u4w_transport_bit {
	U4W_TB_RC = 1u << 0,
	U4W_TB_UC = 1u << 1,
	U4W_TB_UD = 1u << 2,
};

struct u4w_opinfo {
	const char *name;
	uint16_t ext;	    /* enum u4w_ext */
	uint16_t flags;	    /* enum u4w_opflags */
	uint8_t transports; /* enum u4w_transport_bit: the transports allowed */
};

extern const struct u4w_opinfo u4w_ops[U4W_NUM_OPS];

static inline uint8_t u4w_transport_bit(uint8_t opcode)
{
	switch (U4W_TRANSPORT(opcode)) {
	case U4W_RC:
		return U4W_TB_RC;
	case U4W_UC:
		return U4W_TB_UC;
	case U4W_UD:
		return U4W_TB_UD;
	default:
		return 0;
	}
}

/*
 * The opcode's entry, NULL for an unknown operation or one its transport
 * does not have. Inline: every frame asks for it a dozen times.
 */
static inline const struct u4w_opinfo *u4w_opinfo(uint8_t opcode)
{
	const struct u4w_opinfo *info;

	if (U4W_OP(opcode) >= U4W_NUM_OPS)
		return NULL;
	info = &u4w_ops[U4W_OP(opcode)];
	return info->transports & u4w_transport_bit(opcode) ? info : NULL;
}

/* Transport bits of u4w_opinfo.transports and the wire transport. */
uint8_t u4w_qpt_bit(enum ibv_qp_type qpt);
uint8_t u4w_qpt_transport(enum ibv_qp_type qpt);

/*
 * The work-request opcode table: one row per enum ibv_wr_opcode the device
 * implements, beside the frame-opcode table above (as rxe keeps
 * rxe_wr_opcode_info next to rxe_opcode). It says which QP types allow the
 * opcode (ibv_post_send(3)), what the request does, which frame ops carry
 * it and which completion opcode the requester reports.
 */
enum u4w_wrflags {
	U4W_WRF_PAYLOAD = 1u << 0, /* data from the local SGEs to the peer */
	U4W_WRF_RDMA = 1u << 1,	   /* remote address and rkey (wr.rdma) */
	U4W_WRF_READ = 1u << 2,	   /* data back into the local SGEs */
	U4W_WRF_ATOMIC = 1u << 3,  /* wr.atomic; 8 bytes back into the SGE */
	U4W_WRF_IMM = 1u << 4,	   /* carries immediate data */
	U4W_WRF_INV = 1u << 5,	   /* names an rkey to invalidate */
	U4W_WRF_LOCAL = 1u << 6,   /* executed by the QP itself; no frames */
};

/* A response carries the result: READ and atomics wait for it. */
#define U4W_WRF_RESPONSE (U4W_WRF_READ | U4W_WRF_ATOMIC)

/* Index into u4w_wrinfo.frame_op. */
enum u4w_frame_pos { U4W_POS_ONLY, U4W_POS_FIRST, U4W_POS_MIDDLE, U4W_POS_LAST };

struct u4w_wrinfo {
	const char *name;
	uint8_t qp_types; /* bit per QP type allowed: u4w_qpt_bit() */
	uint8_t flags;	  /* enum u4w_wrflags */
	enum ibv_wc_opcode wc_opcode;
	uint8_t frame_op[4]; /* enum u4w_op by enum u4w_frame_pos */
};

/* Row of a work-request opcode, or NULL when the device has none. */
const struct u4w_wrinfo *u4w_wrinfo(enum ibv_wr_opcode op);

/* Flags of a work-request opcode; 0 when the device has none. */
static inline unsigned int u4w_wr_flags(enum ibv_wr_opcode op)
{
	const struct u4w_wrinfo *info = u4w_wrinfo(op);

	return info ? info->flags : 0;
}

/* The opcode × QP-type matrix: may op be posted on a QP of this type? */
bool u4w_wr_allowed(enum ibv_qp_type qpt, enum ibv_wr_opcode op);

/*
 * Frame op of frame `index` of `nframes` of a work request; READ and
 * atomics are one request frame.
 */
enum u4w_op u4w_wr_frame_op(enum ibv_wr_opcode op, uint32_t index,
			    uint32_t nframes);

/* Completion opcode reported to the requester for a work request. */
enum ibv_wc_opcode u4w_wc_opcode(enum ibv_wr_opcode op);

#endif
