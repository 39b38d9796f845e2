// SPDX-License-Identifier: MIT
/*
 * The ibv_wr_* API (ibv_qp_ex): work requests are built into a provider-owned
 * batch between wr_start and wr_complete, then handed to the engine as one
 * ibv_post_send list. Inline data is copied when it is set, so the
 * application's buffer is free as soon as the setter returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "u4vp.h"

#define U4VP_SEND_OPS                                                          \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |      \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                  \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |        \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW |        \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV)

static void fail(struct u4vp_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/* Open a new work request with the qp_ex's current wr_id and wr_flags. */
static struct u4vp_wr *new_wr(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op)
{
	struct u4vp_qp *qp = to_uqp_ex(qpx);
	struct u4vp_wr *w;

	if (qp->wr_err)
		return NULL;
	if (qp->nwr == qp->wr_cap) {
		uint32_t cap = qp->wr_cap ? qp->wr_cap * 2 : 8;
		struct u4vp_wr *n;

		if (qp->wr_cap >= U4V_MAX_QP_WR) {
			fail(qp, ENOMEM);
			return NULL;
		}
		n = realloc(qp->wrs, (size_t)cap * sizeof(*n));
		if (!n) {
			fail(qp, ENOMEM);
			return NULL;
		}
		qp->wrs = n;
		qp->wr_cap = cap;
	}
	w = &qp->wrs[qp->nwr++];
	memset(&w->wr, 0, sizeof(w->wr));
	w->inl_len = 0;
	w->wr.wr_id = qpx->wr_id;
	w->wr.send_flags = qpx->wr_flags;
	w->wr.opcode = op;
	return w;
}

/* The request the data/address setters apply to. */
static struct u4vp_wr *cur_wr(struct ibv_qp_ex *qpx)
{
	struct u4vp_qp *qp = to_uqp_ex(qpx);

	if (qp->wr_err)
		return NULL;
	if (!qp->nwr) {
		fail(qp, EINVAL); /* setter before an opcode */
		return NULL;
	}
	return &qp->wrs[qp->nwr - 1];
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	new_wr(qpx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct u4vp_wr *w = new_wr(qpx, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->wr.imm_data = imm;
}

static void set_rdma(struct u4vp_wr *w, uint32_t rkey, uint64_t raddr)
{
	w->wr.wr.rdma.rkey = rkey;
	w->wr.wr.rdma.remote_addr = raddr;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	struct u4vp_wr *w = new_wr(qpx, IBV_WR_RDMA_WRITE);

	if (w)
		set_rdma(w, rkey, raddr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t raddr, __be32 imm)
{
	struct u4vp_wr *w = new_wr(qpx, IBV_WR_RDMA_WRITE_WITH_IMM);

	if (w) {
		set_rdma(w, rkey, raddr);
		w->wr.imm_data = imm;
	}
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	struct u4vp_wr *w = new_wr(qpx, IBV_WR_RDMA_READ);

	if (w)
		set_rdma(w, rkey, raddr);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t raddr, uint64_t compare, uint64_t swap)
{
	struct u4vp_wr *w = new_wr(qpx, IBV_WR_ATOMIC_CMP_AND_SWP);

	if (w) {
		w->wr.wr.atomic.rkey = rkey;
		w->wr.wr.atomic.remote_addr = raddr;
		w->wr.wr.atomic.compare_add = compare;
		w->wr.wr.atomic.swap = swap;
	}
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t raddr, uint64_t add)
{
	struct u4vp_wr *w = new_wr(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD);

	if (w) {
		w->wr.wr.atomic.rkey = rkey;
		w->wr.wr.atomic.remote_addr = raddr;
		w->wr.wr.atomic.compare_add = add;
	}
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *bind_info)
{
	struct u4vp_wr *w = new_wr(qpx, IBV_WR_BIND_MW);

	if (w) {
		w->wr.bind_mw.mw = mw;
		w->wr.bind_mw.rkey = rkey;
		w->wr.bind_mw.bind_info = *bind_info;
	}
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct u4vp_wr *w = new_wr(qpx, IBV_WR_LOCAL_INV);

	if (w)
		w->wr.invalidate_rkey = invalidate_rkey;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct u4vp_wr *w = new_wr(qpx, IBV_WR_SEND_WITH_INV);

	if (w)
		w->wr.invalidate_rkey = invalidate_rkey;
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct u4vp_wr *w = cur_wr(qpx);

	if (w) {
		w->wr.wr.ud.ah = ah;
		w->wr.wr.ud.remote_qpn = remote_qpn;
		w->wr.wr.ud.remote_qkey = remote_qkey;
	}
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct u4vp_wr *w = cur_wr(qpx);

	if (!w)
		return;
	w->sge[0] =
	    (struct ibv_sge){.addr = addr, .length = length, .lkey = lkey};
	w->wr.num_sge = 1;
	w->inl_len = 0;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	struct u4vp_wr *w = cur_wr(qpx);

	if (!w)
		return;
	if (num_sge > U4V_MAX_SGE) {
		fail(to_uqp_ex(qpx), EINVAL);
		return;
	}
	if (num_sge)
		memcpy(w->sge, sg_list, num_sge * sizeof(*sg_list));
	w->wr.num_sge = (int)num_sge;
	w->inl_len = 0;
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct u4vp_wr *w = cur_wr(qpx);
	size_t i, len = 0;

	if (!w)
		return;
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > U4V_MAX_INLINE - len) {
			fail(to_uqp_ex(qpx), EINVAL);
			return;
		}
		if (buf_list[i].length)
			memcpy(w->inl + len, buf_list[i].addr,
			       buf_list[i].length);
		len += buf_list[i].length;
	}
	w->inl_len = (uint32_t)len;
	w->wr.send_flags |= IBV_SEND_INLINE;
	w->wr.num_sge = 1;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = {.addr = addr, .length = length};

	wr_set_inline_data_list(qpx, 1, &buf);
}

/* Setters for features this device does not have: fail the batch. */
static void wr_unsup_rkey(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	fail(to_uqp_ex(qpx), EOPNOTSUPP);
}

static void wr_unsup_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
			 uint16_t mss)
{
	fail(to_uqp_ex(qpx), EOPNOTSUPP);
}

static void wr_unsup_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t raddr, const void *atomic_wr)
{
	fail(to_uqp_ex(qpx), EOPNOTSUPP);
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct u4vp_qp *qp = to_uqp_ex(qpx);

	qp->nwr = 0;
	qp->wr_err = 0;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	wr_start(qpx);
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct u4vp_qp *qp = to_uqp_ex(qpx);
	struct ibv_send_wr *bad = NULL;
	uint32_t i;
	int err = qp->wr_err;

	if (!err && qp->nwr) {
		/* Link now: the batch may have moved while it grew. */
		for (i = 0; i < qp->nwr; i++) {
			struct u4vp_wr *w = &qp->wrs[i];

			if (w->wr.send_flags & IBV_SEND_INLINE) {
				w->sge[0] = (struct ibv_sge){
				    .addr = (uintptr_t)w->inl,
				    .length = w->inl_len,
				};
				w->wr.num_sge = 1;
			}
			w->wr.sg_list = w->sge;
			w->wr.next =
			    i + 1 < qp->nwr ? &qp->wrs[i + 1].wr : NULL;
		}
		err = u4v_post_send(qp->eng, &qp->wrs[0].wr, &bad);
	}
	qp->nwr = 0;
	qp->wr_err = 0;
	return err;
}

int u4vp_qp_ex_init(struct u4vp_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;

	if (!send_ops_flags)
		return 0;
	if (send_ops_flags & ~(uint64_t)U4VP_SEND_OPS)
		return EOPNOTSUPP;
	qp->send_ops_flags = send_ops_flags;
	qp->vqp.comp_mask |= U4VP_QP_HAS_EX;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_unsup_tso;
	x->wr_set_xrc_srqn = wr_unsup_rkey;
	x->wr_atomic_write = wr_unsup_atomic_write;
	return 0;
}

void u4vp_qp_ex_fini(struct u4vp_qp *qp)
{
	free(qp->wrs);
	qp->wrs = NULL;
	qp->nwr = qp->wr_cap = 0;
}
