// SPDX-License-Identifier: MIT
/*
 * ibv_create_cq_ex: the start_poll / next_poll / end_poll iterator and the
 * read_* accessors, over one ibv_wc polled from the engine at a time.
 */
#include <errno.h>
#include <stdlib.h>

#include "u4vp.h"

/*
 * The standard work-completion fields (every entry the engine makes has
 * them) and the completion timestamps (the engine takes them when it makes
 * the completion: the device clock, nanoseconds, and the wall clock).
 */
#define U4VP_CQ_EX_WC_FLAGS                                                    \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |                        \
	 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | \
	 IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS |                   \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                                 \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static int fetch(struct u4vp_cq *cq)
{
	int n = u4v_poll_cq_ts(cq->eng, &cq->cur, &cq->cur_ts);

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

/* The read_* accessors of ibv_cq_ex(3): one field of the current entry. */
#define CQ_EX_READ(type, name, entry, field)                                  \
	static type read_##name(struct ibv_cq_ex *cq_ex)                       \
	{                                                                      \
		return to_ucq_ex(cq_ex)->entry.field;                          \
	}

CQ_EX_READ(enum ibv_wc_opcode, opcode, cur, opcode)
CQ_EX_READ(uint32_t, vendor_err, cur, vendor_err)
CQ_EX_READ(unsigned int, wc_flags, cur, wc_flags)
CQ_EX_READ(uint32_t, byte_len, cur, byte_len)
CQ_EX_READ(__be32, imm_data, cur, imm_data)
CQ_EX_READ(uint32_t, qp_num, cur, qp_num)
CQ_EX_READ(uint32_t, src_qp, cur, src_qp)
CQ_EX_READ(uint32_t, slid, cur, slid)
CQ_EX_READ(uint8_t, sl, cur, sl)
CQ_EX_READ(uint8_t, dlid_path_bits, cur, dlid_path_bits)
CQ_EX_READ(uint64_t, completion_ts, cur_ts, raw)
CQ_EX_READ(uint64_t, completion_wallclock_ns, cur_ts, wall)

/* The read_* accessors of the fields wc_flags asks for, and the three
 * every CQ has. */
static void set_readers(struct ibv_cq_ex *x, uint64_t wc_flags)
{
	x->read_opcode = read_opcode;
	x->read_vendor_err = read_vendor_err;
	x->read_wc_flags = read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		x->read_completion_ts = read_completion_ts;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		x->read_completion_wallclock_ns = read_completion_wallclock_ns;
}

struct ibv_cq_ex *u4vp_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct u4vp_cq *cq;
	struct ibv_cq_ex *x;
	unsigned int clocks = 0;
	int err;

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
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		clocks |= U4V_CQ_TS_RAW;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		clocks |= U4V_CQ_TS_WALL;
	err = u4v_cq_set_timestamps(cq->eng, clocks);
	if (err) {
		u4vp_destroy_cq(&cq->cq);
		errno = err;
		return NULL;
	}

	cq->wc_flags = attr->wc_flags;
	x = &cq->cq_ex;
	x->cq_context = attr->cq_context;
	x->start_poll = start_poll;
	x->next_poll = next_poll;
	x->end_poll = end_poll;
	set_readers(x, attr->wc_flags);
	return x;
}
