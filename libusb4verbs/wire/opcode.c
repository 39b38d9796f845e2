// SPDX-License-Identifier: MIT
/* The frame-opcode table and the work-request opcode table. */
#include "wire/opcode.h"

#define RC U4W_TB_RC
#define UC U4W_TB_UC
#define UD U4W_TB_UD

#define REQ U4W_OPF_REQUEST
#define RSP U4W_OPF_RESPONSE
#define FST U4W_OPF_FIRST
#define LST U4W_OPF_LAST
#define PAY U4W_OPF_PAYLOAD

const struct u4w_opinfo u4w_ops[U4W_NUM_OPS] = {
	[U4W_SEND_FIRST] = { "SEND_FIRST", 0,
			     REQ | FST | PAY | U4W_OPF_SEND, RC | UC | UD },
	[U4W_SEND_MIDDLE] = { "SEND_MIDDLE", 0, REQ | PAY | U4W_OPF_SEND,
			      RC | UC | UD },
	[U4W_SEND_LAST] = { "SEND_LAST", 0, REQ | LST | PAY | U4W_OPF_SEND,
			    RC | UC | UD },
	[U4W_SEND_LAST_IMM] = { "SEND_LAST_IMM", U4W_EXT_IMM,
				REQ | LST | PAY | U4W_OPF_SEND | U4W_OPF_IMM,
				RC | UC | UD },
	[U4W_SEND_ONLY] = { "SEND_ONLY", 0,
			    REQ | FST | LST | PAY | U4W_OPF_SEND,
			    RC | UC | UD },
	[U4W_SEND_ONLY_IMM] = { "SEND_ONLY_IMM", U4W_EXT_IMM,
				REQ | FST | LST | PAY | U4W_OPF_SEND |
					U4W_OPF_IMM,
				RC | UC | UD },
	[U4W_WRITE_FIRST] = { "WRITE_FIRST", U4W_EXT_RETH,
			      REQ | FST | PAY | U4W_OPF_WRITE, RC | UC },
	[U4W_WRITE_MIDDLE] = { "WRITE_MIDDLE", 0, REQ | PAY | U4W_OPF_WRITE,
			       RC | UC },
	[U4W_WRITE_LAST] = { "WRITE_LAST", 0, REQ | LST | PAY | U4W_OPF_WRITE,
			     RC | UC },
	[U4W_WRITE_LAST_IMM] = { "WRITE_LAST_IMM", U4W_EXT_IMM,
				 REQ | LST | PAY | U4W_OPF_WRITE |
					 U4W_OPF_IMM | U4W_OPF_SEND,
				 RC | UC },
	[U4W_WRITE_ONLY] = { "WRITE_ONLY", U4W_EXT_RETH,
			     REQ | FST | LST | PAY | U4W_OPF_WRITE, RC | UC },
	[U4W_WRITE_ONLY_IMM] = { "WRITE_ONLY_IMM", U4W_EXT_RETH | U4W_EXT_IMM,
				 REQ | FST | LST | PAY | U4W_OPF_WRITE |
					 U4W_OPF_IMM | U4W_OPF_SEND,
				 RC | UC },
	[U4W_READ_REQ] = { "READ_REQ", U4W_EXT_RETH,
			   REQ | FST | LST | U4W_OPF_READ, RC },
	[U4W_READ_RESP_FIRST] = { "READ_RESP_FIRST", U4W_EXT_AETH,
				  RSP | FST | PAY | U4W_OPF_READ, RC },
	[U4W_READ_RESP_MIDDLE] = { "READ_RESP_MIDDLE", 0,
				   RSP | PAY | U4W_OPF_READ, RC },
	[U4W_READ_RESP_LAST] = { "READ_RESP_LAST", U4W_EXT_AETH,
				 RSP | LST | PAY | U4W_OPF_READ, RC },
	[U4W_READ_RESP_ONLY] = { "READ_RESP_ONLY", U4W_EXT_AETH,
				 RSP | FST | LST | PAY | U4W_OPF_READ, RC },
	[U4W_ACK] = { "ACK", U4W_EXT_AETH, RSP | FST | LST, RC },
	[U4W_ATOMIC_ACK] = { "ATOMIC_ACK", U4W_EXT_AETH | U4W_EXT_ATOMACK,
			     RSP | FST | LST | U4W_OPF_ATOMIC, RC },
	[U4W_CMP_SWAP] = { "CMP_SWAP", U4W_EXT_ATOMETH,
			   REQ | FST | LST | U4W_OPF_ATOMIC, RC },
	[U4W_FETCH_ADD] = { "FETCH_ADD", U4W_EXT_ATOMETH,
			    REQ | FST | LST | U4W_OPF_ATOMIC, RC },
	[U4W_SEND_LAST_INV] = { "SEND_LAST_INV", U4W_EXT_IETH,
				REQ | LST | PAY | U4W_OPF_SEND | U4W_OPF_INV,
				RC | UC },
	[U4W_SEND_ONLY_INV] = { "SEND_ONLY_INV", U4W_EXT_IETH,
				REQ | FST | LST | PAY | U4W_OPF_SEND |
					U4W_OPF_INV,
				RC | UC },
};

uint8_t u4w_qpt_bit(enum ibv_qp_type qpt)
{
	switch (qpt) {
	case IBV_QPT_RC:
		return RC;
	case IBV_QPT_UC:
		return UC;
	case IBV_QPT_UD:
		return UD;
	default:
		return 0;
	}
}

uint8_t u4w_qpt_transport(enum ibv_qp_type qpt)
{
	return qpt == IBV_QPT_UD ? U4W_UD : qpt == IBV_QPT_UC ? U4W_UC : U4W_RC;
}

#define WPAY U4W_WRF_PAYLOAD
#define RDMA U4W_WRF_RDMA
#define WIMM U4W_WRF_IMM
#define WINV U4W_WRF_INV
#define LOCAL U4W_WRF_LOCAL
/* frame ops of the only, first, middle and last frame (U4W_NUM_OPS: none,
 * a local operation) */
#define SEQ(only, first, middle, last)                                         \
	{ U4W_##only, U4W_##first, U4W_##middle, U4W_##last }
#define ONE(only) SEQ(only, only, only, only)

static const struct u4w_wrinfo u4w_wr_ops[] = {
	[IBV_WR_SEND] = { "SEND", RC | UC | UD, WPAY, IBV_WC_SEND,
			  SEQ(SEND_ONLY, SEND_FIRST, SEND_MIDDLE, SEND_LAST) },
	[IBV_WR_SEND_WITH_IMM] = { "SEND_WITH_IMM", RC | UC | UD, WPAY | WIMM,
				   IBV_WC_SEND,
				   SEQ(SEND_ONLY_IMM, SEND_FIRST, SEND_MIDDLE,
				       SEND_LAST_IMM) },
	[IBV_WR_RDMA_WRITE] = { "RDMA_WRITE", RC | UC, WPAY | RDMA,
				IBV_WC_RDMA_WRITE,
				SEQ(WRITE_ONLY, WRITE_FIRST, WRITE_MIDDLE,
				    WRITE_LAST) },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { "RDMA_WRITE_WITH_IMM", RC | UC,
					 WPAY | RDMA | WIMM, IBV_WC_RDMA_WRITE,
					 SEQ(WRITE_ONLY_IMM, WRITE_FIRST,
					     WRITE_MIDDLE, WRITE_LAST_IMM) },
	[IBV_WR_RDMA_READ] = { "RDMA_READ", RC, RDMA | U4W_WRF_READ,
			       IBV_WC_RDMA_READ, ONE(READ_REQ) },
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { "ATOMIC_CMP_AND_SWP", RC,
					U4W_WRF_ATOMIC, IBV_WC_COMP_SWAP,
					ONE(CMP_SWAP) },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { "ATOMIC_FETCH_AND_ADD", RC,
					  U4W_WRF_ATOMIC, IBV_WC_FETCH_ADD,
					  ONE(FETCH_ADD) },
	[IBV_WR_LOCAL_INV] = { "LOCAL_INV", RC | UC, LOCAL | WINV,
			       IBV_WC_LOCAL_INV, ONE(NUM_OPS) },
	[IBV_WR_BIND_MW] = { "BIND_MW", RC | UC, LOCAL, IBV_WC_BIND_MW,
			     ONE(NUM_OPS) },
	[IBV_WR_SEND_WITH_INV] = { "SEND_WITH_INV", RC | UC, WPAY | WINV,
				   IBV_WC_SEND,
				   SEQ(SEND_ONLY_INV, SEND_FIRST, SEND_MIDDLE,
				       SEND_LAST_INV) },
};

const struct u4w_wrinfo *u4w_wrinfo(enum ibv_wr_opcode op)
{
	const struct u4w_wrinfo *info;

	if ((unsigned int)op >= sizeof(u4w_wr_ops) / sizeof(u4w_wr_ops[0]))
		return NULL;
	info = &u4w_wr_ops[op];
	return info->name ? info : NULL;
}

bool u4w_wr_allowed(enum ibv_qp_type qpt, enum ibv_wr_opcode op)
{
	const struct u4w_wrinfo *info = u4w_wrinfo(op);

	return info && (info->qp_types & u4w_qpt_bit(qpt));
}

enum u4w_op u4w_wr_frame_op(enum ibv_wr_opcode op, uint32_t index,
			    uint32_t nframes)
{
	const struct u4w_wrinfo *info = u4w_wrinfo(op);
	bool first = index == 0, last = index + 1 == nframes;

	if (!(info->flags & U4W_WRF_PAYLOAD) || (first && last))
		return info->frame_op[U4W_POS_ONLY];
	return info->frame_op[first ? U4W_POS_FIRST :
			      last  ? U4W_POS_LAST :
				      U4W_POS_MIDDLE];
}

enum ibv_wc_opcode u4w_wc_opcode(enum ibv_wr_opcode op)
{
	return u4w_wrinfo(op)->wc_opcode;
}
