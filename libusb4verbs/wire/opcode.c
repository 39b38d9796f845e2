// SPDX-License-Identifier: MIT
/* The opcode table and the work-request opcode matrix. */
#include "wire/opcode.h"

#define RC 1u
#define UC 2u
#define UD 4u

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

static uint8_t transport_bit(uint8_t transport)
{
	switch (transport) {
	case U4W_RC:
		return RC;
	case U4W_UC:
		return UC;
	case U4W_UD:
		return UD;
	default:
		return 0;
	}
}

const struct u4w_opinfo *u4w_opinfo(uint8_t opcode)
{
	const struct u4w_opinfo *info;

	if (U4W_OP(opcode) >= U4W_NUM_OPS)
		return NULL;
	info = &u4w_ops[U4W_OP(opcode)];
	if (!(info->transports & transport_bit(U4W_TRANSPORT(opcode))))
		return NULL;
	/* UD messages carry a DETH on every frame */
	return info;
}

bool u4w_wr_allowed(enum ibv_qp_type qpt, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return qpt == IBV_QPT_RC || qpt == IBV_QPT_UC ||
		       qpt == IBV_QPT_UD;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return qpt == IBV_QPT_RC || qpt == IBV_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return qpt == IBV_QPT_RC;
	default:
		/* memory windows, invalidation, TSO, driver ops: unsupported */
		return false;
	}
}

enum u4w_op u4w_wr_frame_op(enum ibv_wr_opcode op, uint32_t index,
			    uint32_t nframes)
{
	bool first = index == 0, last = index + 1 == nframes;
	bool write = op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool imm = op == IBV_WR_SEND_WITH_IMM ||
		   op == IBV_WR_RDMA_WRITE_WITH_IMM;

	switch (op) {
	case IBV_WR_RDMA_READ:
		return U4W_READ_REQ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return U4W_CMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return U4W_FETCH_ADD;
	default:
		break;
	}
	if (first && last)
		return write ? (imm ? U4W_WRITE_ONLY_IMM : U4W_WRITE_ONLY) :
			       (imm ? U4W_SEND_ONLY_IMM : U4W_SEND_ONLY);
	if (first)
		return write ? U4W_WRITE_FIRST : U4W_SEND_FIRST;
	if (last)
		return write ? (imm ? U4W_WRITE_LAST_IMM : U4W_WRITE_LAST) :
			       (imm ? U4W_SEND_LAST_IMM : U4W_SEND_LAST);
	return write ? U4W_WRITE_MIDDLE : U4W_SEND_MIDDLE;
}

enum ibv_wc_opcode u4w_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}
