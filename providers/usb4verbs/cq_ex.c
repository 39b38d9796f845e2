// SPDX-License-Identifier: MIT
/*
 * ibv_create_cq_ex: the start_poll / next_poll / end_poll iterator and the
 * read_* accessors, over one ibv_wc polled from the engine at a time.
 */
#include <errno.h>
#include <stdlib.h>

#include "u4vp.h"

/* The standard work-completion fields; every entry the engine makes has them.
 */
#define U4VP_CQ_EX_WC_FLAGS                                                    \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |                        \
	 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | \
	 IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS)

static int fetch(struct u4vp_cq *cq)
{
	int n = u4v_poll_cq(cq->eng, 1, &cq->cur);

	if (n < 0)
		return -n;
	if (n == 0)
		return ENOENT;
	cq->cq_ex.wr_id = cq->cur.wr_id;
	cq->cq_ex.status = cq->cur.status;
	return 0;
}

static int start_poll(struct ibv_cq_ex *cq_ex, struct ibv_poll_cq_attr *attr)
{
	if (attr && attr->comp_mask)
		return EINVAL;
	return fetch(to_ucq_ex(cq_ex));
}

static int next_poll(struct ibv_cq_ex *cq_ex)
{
	return fetch(to_ucq_ex(cq_ex));
}

static void end_poll(struct ibv_cq_ex *cq_ex)
{
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.vendor_err;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.wc_flags;
}

static uint32_t read_byte_len(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.byte_len;
}

static __be32 read_imm_data(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.imm_data;
}

static uint32_t read_qp_num(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.src_qp;
}

static uint32_t read_slid(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.slid;
}

static uint8_t read_sl(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.sl;
}

static uint8_t read_dlid_path_bits(struct ibv_cq_ex *cq_ex)
{
	return to_ucq_ex(cq_ex)->cur.dlid_path_bits;
}

struct ibv_cq_ex *u4vp_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct u4vp_cq *cq;
	struct ibv_cq_ex *x;

	if (attr->wc_flags & ~(uint64_t)U4VP_CQ_EX_WC_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* No parent domains; of the creation flags only the single-threaded
	 * hint, which needs nothing. */
	if ((attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > INT32_MAX ||
	    attr->comp_vector >= (uint32_t)context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = u4vp_cq_new(context, (int)attr->cqe, attr->channel);
	if (!cq)
		return NULL;

	cq->wc_flags = attr->wc_flags;
	x = &cq->cq_ex;
	x->cq_context = attr->cq_context;
	x->start_poll = start_poll;
	x->next_poll = next_poll;
	x->end_poll = end_poll;
	x->read_opcode = read_opcode;
	x->read_vendor_err = read_vendor_err;
	x->read_wc_flags = read_wc_flags;
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = read_dlid_path_bits;
	return x;
}
