// SPDX-License-Identifier: MIT
/*
 * Memory windows over a software cable: type 1 and type 2 binds, access
 * through a window checked against its range, rights and QP, the bind
 * rules (each a completion with IBV_WC_MW_BIND_ERR), local invalidation,
 * SEND with invalidate (IBV_WC_WITH_INV at the receiver), and the object
 * rules (dereg_mr busy while bound, dealloc and QP destruction unbind).
 * Payloads are checked byte for byte.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"

#define AREA 65536u
#define WIN_OFF 4096u /* the window: [b + WIN_OFF, + WIN_LEN) */
#define WIN_LEN 8192u
#define TMO 5000

#define RW_ALL                                                                 \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                    \
	 IBV_ACCESS_REMOTE_ATOMIC)

/* a requests, b owns the memory and binds the windows on qb */
struct rig {
	struct u4vt_pair p;
	uint8_t *la, *rb;
	struct u4v_mr *ma, *mb;
};

static struct rig *rig_up(const char *tag, enum ibv_qp_type type)
{
	struct rig *r = calloc(1, sizeof(*r));
	struct u4vt_qp_opts o;

	assert_non_null(r);
	u4vt_qp_opts_default(&o);
	o.access = RW_ALL | IBV_ACCESS_LOCAL_WRITE;
	u4vt_pair_up(&r->p, tag, type, NULL, &o, 0);
	r->la = u4vt_map(AREA);
	r->rb = u4vt_map(AREA);
	r->ma = u4vt_reg(&r->p.a, r->la, AREA, U4VT_ACCESS_ALL);
	r->mb = u4vt_reg(&r->p.b, r->rb, AREA,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	return r;
}

static void rig_down(struct rig *r)
{
	/* the QPs first: a type 2 window bound through one holds its MR */
	assert_int_equal(u4v_destroy_qp(r->p.qa), 0);
	assert_int_equal(u4v_destroy_qp(r->p.qb), 0);
	r->p.qa = r->p.qb = NULL;
	assert_int_equal(u4v_dereg_mr(r->ma), 0);
	assert_int_equal(u4v_dereg_mr(r->mb), 0);
	u4vt_pair_down(&r->p);
	u4vt_unmap(r->la, AREA);
	u4vt_unmap(r->rb, AREA);
	free(r);
}

/* The next completion on cq: its status (and opcode, checked). */
static enum ibv_wc_status next_wc(struct u4v_cq *cq, uint64_t wr_id,
				  struct ibv_wc *out)
{
	struct ibv_wc wc;

	assert_int_equal(u4vt_poll(cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	if (out)
		*out = wc;
	return wc.status;
}

/* Post a signaled bind on qp; returns u4v_post_send's value. */
static int post_bind(struct u4v_qp *qp, struct u4v_mw *mw, uint32_t rkey,
		     struct u4v_mr *mr, uint64_t addr, uint64_t len,
		     unsigned int access, uint64_t wr_id)
{
	struct ibv_mr ibmr = { .lkey = mr ? u4v_mr_lkey(mr) : 0 };
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw ? u4v_mw_ibv(mw) : NULL;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr ? &ibmr : NULL;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return u4v_post_send(qp, &wr, &bad);
}

/* Bind to mr through qp (of b); returns the window's new rkey. */
static uint32_t bind_mr(struct rig *r, struct u4v_qp *qp, struct u4v_mw *mw,
			struct u4v_mr *mr, uint64_t off, uint64_t len,
			unsigned int access)
{
	uint32_t rkey = ibv_inc_rkey(u4v_mw_ibv(mw)->rkey);
	struct ibv_wc wc;

	assert_int_equal(post_bind(qp, mw, rkey, mr, (uintptr_t)r->rb + off,
				   len, access, 77),
			 0);
	assert_int_equal(next_wc(r->p.b.cq, 77, &wc), IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	return rkey;
}

static uint32_t bind_ok(struct rig *r, struct u4v_qp *qp, struct u4v_mw *mw,
			uint64_t off, uint64_t len, unsigned int access)
{
	return bind_mr(r, qp, mw, r->mb, off, len, access);
}

static void bind_fails(struct rig *r, struct u4v_qp *qp, struct u4v_mw *mw,
		       struct u4v_mr *mr, uint64_t addr, uint64_t len,
		       unsigned int access)
{
	assert_int_equal(post_bind(qp, mw, ibv_inc_rkey(u4v_mw_ibv(mw)->rkey),
				   mr, addr, len, access, 78),
			 0);
	assert_int_equal(next_wc(r->p.b.cq, 78, NULL), IBV_WC_MW_BIND_ERR);
	u4vt_pair_reconnect(&r->p); /* the error took the QP to ERR */
}

/* A type 2 window bound at qb over the window range of mb; its R_Key. */
static uint32_t window2(struct rig *r, unsigned int access, struct u4v_mw **mw)
{
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, IBV_MW_TYPE_2, mw), 0);
	return bind_ok(r, r->p.qb, *mw, WIN_OFF, WIN_LEN, access);
}

/* One remote operation from qa to rkey/va; its completion status. */
static enum ibv_wc_status remote_op(struct rig *r, struct u4v_qp *qa,
				    enum ibv_wr_opcode op, uint32_t rkey,
				    uint64_t off, uint32_t len)
{
	uint64_t va = (uintptr_t)r->rb + off;
	enum ibv_wc_status st;
	int ret;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		ret = u4vt_post_atomic(qa, op, 5, (uintptr_t)r->la,
				       u4v_mr_lkey(r->ma), va, rkey, 3, 0);
	else
		ret = u4vt_post_send1(qa, op, 5, IBV_SEND_SIGNALED,
				      (uintptr_t)r->la, len,
				      u4v_mr_lkey(r->ma), va, rkey, 0);
	assert_int_equal(ret, 0);
	st = next_wc(r->p.a.cq, 5, NULL);
	if (st != IBV_WC_SUCCESS)
		u4vt_pair_reconnect(&r->p);
	return st;
}

static void test_alloc(void **state)
{
	struct rig *r = rig_up("alloc", IBV_QPT_RC);
	struct u4v_mw *m1, *m2, *bad = NULL;

	(void)state;
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, IBV_MW_TYPE_1, &m1), 0);
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, IBV_MW_TYPE_2, &m2), 0);
	assert_int_equal(u4v_mw_ibv(m1)->type, IBV_MW_TYPE_1);
	assert_int_equal(u4v_mw_ibv(m2)->type, IBV_MW_TYPE_2);
	assert_int_not_equal(u4v_mw_ibv(m1)->rkey, u4v_mw_ibv(m2)->rkey);
	assert_ptr_equal(u4v_mw_from_ibv(u4v_mw_ibv(m1)), m1);
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, (enum ibv_mw_type)3, &bad),
			 EINVAL);
	assert_null(bad);
	/* an unbound window opens nothing, not even with its own key */
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE,
				   u4v_mw_ibv(m2)->rkey, WIN_OFF, 8),
			 IBV_WC_REM_ACCESS_ERR);
	/* windows keep their PD */
	assert_int_equal(u4v_dealloc_mw(m1), 0);
	assert_int_equal(u4v_dealloc_mw(m2), 0);
	rig_down(r);
}

/* Type 2: write, read and atomic inside the window, nothing outside. */
static void test_type2_access(void **state)
{
	struct rig *r = rig_up("t2", IBV_QPT_RC);
	uint32_t old, rkey;
	uint64_t cell;
	struct u4v_mw *mw;

	(void)state;
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, IBV_MW_TYPE_2, &mw), 0);
	old = u4v_mw_ibv(mw)->rkey;
	rkey = bind_ok(r, r->p.qb, mw, WIN_OFF, WIN_LEN, RW_ALL);
	assert_int_equal(rkey & ~0xffu, old & ~0xffu);
	u4vt_fill(r->la, WIN_LEN, 11);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey, WIN_OFF,
				   WIN_LEN),
			 IBV_WC_SUCCESS);
	assert_memory_equal(r->la, r->rb + WIN_OFF, WIN_LEN);
	memset(r->la, 0, WIN_LEN);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_READ, rkey,
				   WIN_OFF + 100, 5000),
			 IBV_WC_SUCCESS);
	assert_memory_equal(r->la, r->rb + WIN_OFF + 100, 5000);
	memcpy(&cell, r->rb + WIN_OFF + 64, 8);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey,
				   WIN_OFF + 64, 8),
			 IBV_WC_SUCCESS);
	cell += 3;
	assert_memory_equal(&cell, r->rb + WIN_OFF + 64, 8);
	/* the key before the bind; a byte before and after the window */
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, old, WIN_OFF,
				   8),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey,
				   WIN_OFF - 1, 8),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_READ, rkey,
				   WIN_OFF + WIN_LEN - 7, 8),
			 IBV_WC_REM_ACCESS_ERR);
	/* the MR's own rkey gives no remote access (the MR has none) */
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE,
				   u4v_mr_rkey(r->mb), WIN_OFF, 8),
			 IBV_WC_REM_ACCESS_ERR);
	/* bound: its MR cannot go */
	assert_int_equal(u4v_dereg_mr(r->mb), EBUSY);
	assert_int_equal(u4v_dealloc_mw(mw), 0);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey, WIN_OFF,
				   8),
			 IBV_WC_REM_ACCESS_ERR);
	rig_down(r);
}

/* A window grants what it was bound with; a type 2 one only to its QP. */
static void test_type2_rights_and_qp(void **state)
{
	struct rig *r = rig_up("t2r", IBV_QPT_RC);
	struct u4v_qp *qa2, *qb2;
	struct u4v_mw *mw;
	uint32_t rkey;

	(void)state;
	rkey = window2(r, IBV_ACCESS_REMOTE_READ, &mw);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_READ, rkey, WIN_OFF,
				   64),
			 IBV_WC_SUCCESS);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey, WIN_OFF,
				   64),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey,
				   WIN_OFF, 8),
			 IBV_WC_REM_ACCESS_ERR);
	/* another QP pair between the same contexts */
	u4vt_qp_pair(&r->p.a, &r->p.b, IBV_QPT_RC, &r->p.o, &qa2, &qb2);
	assert_int_equal(u4vt_post_send1(qa2, IBV_WR_RDMA_READ, 6,
					 IBV_SEND_SIGNALED, (uintptr_t)r->la,
					 64, u4v_mr_lkey(r->ma),
					 (uintptr_t)r->rb + WIN_OFF, rkey, 0),
			 0);
	assert_int_equal(next_wc(r->p.a.cq, 6, NULL), IBV_WC_REM_ACCESS_ERR);
	/* the QP it is bound to goes: the window is free, its MR too */
	assert_int_equal(u4v_dereg_mr(r->mb), EBUSY);
	assert_int_equal(u4v_destroy_qp(r->p.qb), 0);
	r->p.qb = qb2;
	assert_int_equal(u4v_destroy_qp(r->p.qa), 0);
	r->p.qa = qa2;
	u4vt_pair_reconnect(&r->p);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_READ, rkey, WIN_OFF,
				   64),
			 IBV_WC_REM_ACCESS_ERR);
	/* free again: a new bind through the other QP works */
	rkey = bind_ok(r, r->p.qb, mw, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_READ, rkey, WIN_OFF,
				   64),
			 IBV_WC_SUCCESS);
	assert_int_equal(u4v_dealloc_mw(mw), 0);
	rig_down(r);
}

/* Type 1: any QP of the PD; rebinding moves it; length 0 unbinds. */
static void test_type1(void **state)
{
	struct rig *r = rig_up("t1", IBV_QPT_RC);
	struct u4v_mw *mw;
	uint32_t k1, k2, k3;

	(void)state;
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, IBV_MW_TYPE_1, &mw), 0);
	k1 = bind_ok(r, r->p.qb, mw, WIN_OFF, WIN_LEN,
		     IBV_ACCESS_REMOTE_WRITE);
	u4vt_fill(r->la, 512, 3);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, k1, WIN_OFF,
				   512),
			 IBV_WC_SUCCESS);
	assert_memory_equal(r->la, r->rb + WIN_OFF, 512);
	/* rebind elsewhere with the next key: the old key is dead */
	u4v_mw_ibv(mw)->rkey = k1;
	k2 = bind_ok(r, r->p.qb, mw, 2 * WIN_LEN, 512, IBV_ACCESS_REMOTE_WRITE);
	assert_int_not_equal(k1, k2);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, k1, WIN_OFF,
				   8),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, k2,
				   2 * WIN_LEN, 512),
			 IBV_WC_SUCCESS);
	assert_memory_equal(r->la, r->rb + 2 * WIN_LEN, 512);
	/* zero length: unbound; the MR can go then */
	u4v_mw_ibv(mw)->rkey = k2;
	k3 = ibv_inc_rkey(k2);
	assert_int_equal(post_bind(r->p.qb, mw, k3, r->mb, (uintptr_t)r->rb, 0,
				   0, 79),
			 0);
	assert_int_equal(next_wc(r->p.b.cq, 79, NULL), IBV_WC_SUCCESS);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, k3,
				   2 * WIN_LEN, 8),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_dealloc_mw(mw), 0);
	rig_down(r);
}

/* The bind rules of IBTA 10.6.7: each refusal is a bind-error completion. */
static void test_bind_rules(void **state)
{
	struct rig *r = rig_up("rules", IBV_QPT_RC);
	uint64_t b = (uintptr_t)r->rb;
	struct u4v_mr *nobind, *nolw;
	struct u4v_mw *mw, *other;
	struct u4v_pd *pd2;

	(void)state;
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, IBV_MW_TYPE_2, &mw), 0);
	nobind = u4vt_reg(&r->p.b, r->rb, AREA, IBV_ACCESS_LOCAL_WRITE);
	nolw = u4vt_reg(&r->p.b, r->rb, AREA, IBV_ACCESS_MW_BIND);
	/* C10-73: the MR allows no binding */
	bind_fails(r, r->p.qb, mw, nobind, b, 64, IBV_ACCESS_REMOTE_READ);
	/* C10-74: remote write or atomic needs local write on the MR */
	bind_fails(r, r->p.qb, mw, nolw, b, 64, IBV_ACCESS_REMOTE_WRITE);
	bind_fails(r, r->p.qb, mw, nolw, b, 64, IBV_ACCESS_REMOTE_ATOMIC);
	/* a read-only window on an MR without local write is fine */
	bind_mr(r, r->p.qb, mw, nolw, 0, 64, IBV_ACCESS_REMOTE_READ);
	/* o10-37.2.30: a bound type 2 window is not bound again */
	bind_fails(r, r->p.qb, mw, r->mb, b, 64, IBV_ACCESS_REMOTE_READ);
	assert_int_equal(u4v_dealloc_mw(mw), 0);
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, IBV_MW_TYPE_2, &mw), 0);
	/* C10-75: outside the MR, at either end */
	bind_fails(r, r->p.qb, mw, r->mb, b - 1, 64, IBV_ACCESS_REMOTE_READ);
	bind_fails(r, r->p.qb, mw, r->mb, b + AREA - 63, 64,
		   IBV_ACCESS_REMOTE_READ);
	/* o10-37.2.40: a type 2 window is not bound to nothing */
	bind_fails(r, r->p.qb, mw, r->mb, b, 0, IBV_ACCESS_REMOTE_READ);
	/* zero-based windows are not offered */
	bind_fails(r, r->p.qb, mw, r->mb, b, 64,
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED);
	/* C10-72: a window of another PD */
	assert_int_equal(u4v_alloc_pd(r->p.b.ctx, &pd2), 0);
	assert_int_equal(u4v_alloc_mw(pd2, IBV_MW_TYPE_2, &other), 0);
	bind_fails(r, r->p.qb, other, r->mb, b, 64, IBV_ACCESS_REMOTE_READ);
	assert_int_equal(u4v_dealloc_pd(pd2), EBUSY);
	assert_int_equal(u4v_dealloc_mw(other), 0);
	assert_int_equal(u4v_dealloc_pd(pd2), 0);
	/* malformed requests are refused at post time */
	assert_int_equal(post_bind(r->p.qb, NULL, 1, r->mb, b, 64, 0, 81),
			 EINVAL);
	assert_int_equal(post_bind(r->p.qb, mw, 1, NULL, b, 64, 0, 81), EINVAL);
	/* the rules are still there after all this: a good bind works */
	bind_ok(r, r->p.qb, mw, 0, 64, IBV_ACCESS_REMOTE_READ);
	assert_int_equal(u4v_dealloc_mw(mw), 0);
	assert_int_equal(u4v_dereg_mr(nobind), 0);
	assert_int_equal(u4v_dereg_mr(nolw), 0);
	rig_down(r);
}

static void post_inv(struct u4v_qp *qp, enum ibv_wr_opcode op, uint32_t rkey,
		     uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	wr.sg_list = len ? &sge : NULL;
	wr.num_sge = len ? 1 : 0;
	assert_int_equal(u4v_post_send(qp, &wr, &bad), 0);
}

static void test_local_invalidate(void **state)
{
	struct rig *r = rig_up("linv", IBV_QPT_RC);
	struct u4v_mw *mw, *m1;
	struct ibv_wc wc;
	uint32_t rkey;

	(void)state;
	rkey = window2(r, RW_ALL, &mw);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey, WIN_OFF,
				   8),
			 IBV_WC_SUCCESS);
	post_inv(r->p.qb, IBV_WR_LOCAL_INV, rkey, 90, 0, 0, 0);
	assert_int_equal(next_wc(r->p.b.cq, 90, &wc), IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_LOCAL_INV);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey, WIN_OFF,
				   8),
			 IBV_WC_REM_ACCESS_ERR);
	/* again: it is not bound any more */
	post_inv(r->p.qb, IBV_WR_LOCAL_INV, rkey, 91, 0, 0, 0);
	assert_int_equal(next_wc(r->p.b.cq, 91, NULL), IBV_WC_LOC_QP_OP_ERR);
	u4vt_pair_reconnect(&r->p);
	/* an MR's key and a type 1 window cannot be invalidated */
	post_inv(r->p.qb, IBV_WR_LOCAL_INV, u4v_mr_rkey(r->mb), 92, 0, 0, 0);
	assert_int_equal(next_wc(r->p.b.cq, 92, NULL), IBV_WC_LOC_QP_OP_ERR);
	u4vt_pair_reconnect(&r->p);
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, IBV_MW_TYPE_1, &m1), 0);
	rkey = bind_ok(r, r->p.qb, m1, WIN_OFF, WIN_LEN, RW_ALL);
	post_inv(r->p.qb, IBV_WR_LOCAL_INV, rkey, 93, 0, 0, 0);
	assert_int_equal(next_wc(r->p.b.cq, 93, NULL), IBV_WC_LOC_QP_OP_ERR);
	u4vt_pair_reconnect(&r->p);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey, WIN_OFF,
				   8),
			 IBV_WC_SUCCESS);
	assert_int_equal(u4v_dealloc_mw(m1), 0);
	assert_int_equal(u4v_dealloc_mw(mw), 0);
	rig_down(r);
}

/* SEND with invalidate, RC and UC: the receiver drops the window. */
static void send_inv(enum ibv_qp_type type)
{
	struct rig *r = rig_up(type == IBV_QPT_RC ? "sinv" : "sinvuc", type);
	uint8_t *dst = r->rb + 3 * WIN_LEN;
	struct u4v_mw *mw;
	struct ibv_wc wc;
	uint32_t rkey;

	rkey = window2(r, RW_ALL, &mw);
	assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey, WIN_OFF,
				   8),
			 IBV_WC_SUCCESS);
	if (type == IBV_QPT_RC) {
		/* only the QP the window is bound to may drop it */
		struct u4v_qp *qa2, *qb2;

		u4vt_qp_pair(&r->p.a, &r->p.b, type, &r->p.o, &qa2, &qb2);
		assert_int_equal(u4vt_post_recv1(qb2, 44, (uintptr_t)dst, 64,
						 u4v_mr_lkey(r->mb)),
				 0);
		post_inv(qa2, IBV_WR_SEND_WITH_INV, rkey, 45, 0, 0, 0);
		assert_int_equal(next_wc(r->p.a.cq, 45, NULL),
				 IBV_WC_REM_INV_REQ_ERR);
		assert_int_equal(next_wc(r->p.b.cq, 44, NULL),
				 IBV_WC_REM_INV_REQ_ERR);
		assert_int_equal(u4v_destroy_qp(qa2), 0);
		assert_int_equal(u4v_destroy_qp(qb2), 0);
		assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey,
					   WIN_OFF, 8),
				 IBV_WC_SUCCESS);
	}
	u4vt_fill(r->la, 5000, 21);
	assert_int_equal(u4vt_post_recv1(r->p.qb, 40, (uintptr_t)dst, 6000,
					 u4v_mr_lkey(r->mb)),
			 0);
	post_inv(r->p.qa, IBV_WR_SEND_WITH_INV, rkey, 41, (uintptr_t)r->la, 5000,
		 u4v_mr_lkey(r->ma));
	assert_int_equal(next_wc(r->p.a.cq, 41, &wc), IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(next_wc(r->p.b.cq, 40, &wc), IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 5000);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_false(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(wc.invalidated_rkey, rkey);
	assert_memory_equal(dst, r->la, 5000);
	if (type == IBV_QPT_RC)
		assert_int_equal(remote_op(r, r->p.qa, IBV_WR_RDMA_WRITE, rkey,
					   WIN_OFF, 8),
				 IBV_WC_REM_ACCESS_ERR);
	/* a key the receiver cannot drop: both ends see an invalid request */
	assert_int_equal(u4vt_post_recv1(r->p.qb, 42, (uintptr_t)dst, 6000,
					 u4v_mr_lkey(r->mb)),
			 0);
	post_inv(r->p.qa, IBV_WR_SEND_WITH_INV, rkey, 43, (uintptr_t)r->la, 0,
		 0);
	if (type == IBV_QPT_RC)
		assert_int_equal(next_wc(r->p.a.cq, 43, NULL),
				 IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(next_wc(r->p.b.cq, 42, NULL), IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(u4v_dealloc_mw(mw), 0);
	rig_down(r);
}

static void test_send_with_invalidate_rc(void **state)
{
	(void)state;
	send_inv(IBV_QPT_RC);
}

static void test_send_with_invalidate_uc(void **state)
{
	(void)state;
	send_inv(IBV_QPT_UC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_type2_access),
		cmocka_unit_test(test_type2_rights_and_qp),
		cmocka_unit_test(test_type1),
		cmocka_unit_test(test_bind_rules),
		cmocka_unit_test(test_local_invalidate),
		cmocka_unit_test(test_send_with_invalidate_rc),
		cmocka_unit_test(test_send_with_invalidate_uc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
