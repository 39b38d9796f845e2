// SPDX-License-Identifier: MIT
/*
 * The opcode × QP-type matrix of ibv_post_send(3): in the table
 * (u4w_wr_allowed), in frame sequencing (u4w_wr_frame_op, u4w_wc_opcode),
 * and through u4v_post_send on real, connected QPs: an allowed WR returns 0
 * and completes; a refused one returns EINVAL, sets bad_wr to itself, leaves
 * the earlier WRs of its list posted and the later ones not, and never
 * touches errno.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"
#include "wire/opcode.h"
#include "wire/wire.h"

static const enum ibv_qp_type qpts[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };

/* A bind comes before the invalidation of what it bound. */
static const enum ibv_wr_opcode std_ops[] = {
	IBV_WR_SEND,		    IBV_WR_SEND_WITH_IMM,
	IBV_WR_RDMA_WRITE,	    IBV_WR_RDMA_WRITE_WITH_IMM,
	IBV_WR_RDMA_READ,	    IBV_WR_ATOMIC_CMP_AND_SWP,
	IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_BIND_MW,
	IBV_WR_LOCAL_INV,	    IBV_WR_SEND_WITH_INV,
};
#define NSTD (sizeof(std_ops) / sizeof(std_ops[0]))

/* Opcodes the device does not implement on any QP type. */
static const enum ibv_wr_opcode other_ops[] = {
	IBV_WR_TSO, IBV_WR_DRIVER1, IBV_WR_ATOMIC_WRITE,
	(enum ibv_wr_opcode)99, (enum ibv_wr_opcode)-1,
};

/* ibv_post_send(3), written out. */
static bool spec_allowed(enum ibv_qp_type t, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return t == IBV_QPT_RC || t == IBV_QPT_UC || t == IBV_QPT_UD;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
	case IBV_WR_SEND_WITH_INV:
		return t == IBV_QPT_RC || t == IBV_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return t == IBV_QPT_RC;
	default:
		return false;
	}
}

static void test_table_matrix(void **state)
{
	size_t t, o;

	(void)state;
	for (t = 0; t < 3; t++) {
		for (o = 0; o < NSTD; o++)
			if (u4w_wr_allowed(qpts[t], std_ops[o]) !=
			    spec_allowed(qpts[t], std_ops[o]))
				fail_msg("qpt %d op %d: allowed %d", qpts[t],
					 std_ops[o],
					 u4w_wr_allowed(qpts[t], std_ops[o]));
		for (o = 0; o < sizeof(other_ops) / sizeof(other_ops[0]); o++)
			assert_false(u4w_wr_allowed(qpts[t], other_ops[o]));
	}
	/* QP types the device does not have allow nothing */
	for (o = 0; o < NSTD; o++) {
		assert_false(u4w_wr_allowed(IBV_QPT_RAW_PACKET, std_ops[o]));
		assert_false(u4w_wr_allowed(IBV_QPT_XRC_SEND, std_ops[o]));
		assert_false(u4w_wr_allowed(IBV_QPT_DRIVER, std_ops[o]));
	}
}

static void test_frame_op_sequence(void **state)
{
	static const struct {
		enum ibv_wr_opcode op;
		enum u4w_op only, first, middle, last;
	} seq[] = {
		{ IBV_WR_SEND, U4W_SEND_ONLY, U4W_SEND_FIRST, U4W_SEND_MIDDLE,
		  U4W_SEND_LAST },
		{ IBV_WR_SEND_WITH_IMM, U4W_SEND_ONLY_IMM, U4W_SEND_FIRST,
		  U4W_SEND_MIDDLE, U4W_SEND_LAST_IMM },
		{ IBV_WR_RDMA_WRITE, U4W_WRITE_ONLY, U4W_WRITE_FIRST,
		  U4W_WRITE_MIDDLE, U4W_WRITE_LAST },
		{ IBV_WR_RDMA_WRITE_WITH_IMM, U4W_WRITE_ONLY_IMM,
		  U4W_WRITE_FIRST, U4W_WRITE_MIDDLE, U4W_WRITE_LAST_IMM },
		{ IBV_WR_SEND_WITH_INV, U4W_SEND_ONLY_INV, U4W_SEND_FIRST,
		  U4W_SEND_MIDDLE, U4W_SEND_LAST_INV },
	};
	size_t s;
	uint32_t n, i;

	(void)state;
	for (s = 0; s < sizeof(seq) / sizeof(seq[0]); s++) {
		assert_int_equal(u4w_wr_frame_op(seq[s].op, 0, 1),
				 seq[s].only);
		for (n = 2; n <= 6; n++)
			for (i = 0; i < n; i++) {
				enum u4w_op want = i == 0     ? seq[s].first :
						   i + 1 == n ? seq[s].last :
								seq[s].middle;

				assert_int_equal(
					u4w_wr_frame_op(seq[s].op, i, n), want);
			}
		/* a very long message keeps MIDDLE until its last frame */
		assert_int_equal(u4w_wr_frame_op(seq[s].op, 1000, 266306),
				 seq[s].middle);
		assert_int_equal(u4w_wr_frame_op(seq[s].op, 266305, 266306),
				 seq[s].last);
	}
	for (n = 1; n < 4; n++) {
		assert_int_equal(u4w_wr_frame_op(IBV_WR_RDMA_READ, 0, n),
				 U4W_READ_REQ);
		assert_int_equal(u4w_wr_frame_op(IBV_WR_ATOMIC_CMP_AND_SWP, 0,
						 n),
				 U4W_CMP_SWAP);
		assert_int_equal(u4w_wr_frame_op(IBV_WR_ATOMIC_FETCH_AND_ADD,
						 0, n),
				 U4W_FETCH_ADD);
	}
	/* every frame op is legal on the wire for the QP types that allow
	 * the WR opcode, and for no other */
	for (s = 0; s < NSTD; s++) {
		if (u4w_wr_flags(std_ops[s]) & U4W_WRF_LOCAL)
			continue;
		for (size_t t = 0; t < 3; t++)
			for (n = 1; n <= 3; n++)
				for (i = 0; i < n; i++) {
					uint8_t code =
						u4w_qpt_transport(qpts[t]) |
						u4w_wr_frame_op(std_ops[s], i,
								n);

					if (!spec_allowed(qpts[t], std_ops[s]))
						continue;
					/* UD datagrams are at most two frames */
					if (qpts[t] == IBV_QPT_UD && n > 2)
						continue;
					assert_non_null(u4w_opinfo(code));
				}
	}
}

/*
 * Every row of the work-request table agrees with itself: its frame ops
 * are requests of the kind its flags say, legal on every transport it is
 * allowed on, and its name is set.
 */
static void test_wr_table_rows(void **state)
{
	size_t s, t, p;

	(void)state;
	for (s = 0; s < NSTD; s++) {
		const struct u4w_wrinfo *info = u4w_wrinfo(std_ops[s]);

		assert_non_null(info);
		assert_non_null(info->name);
		if (info->flags & U4W_WRF_LOCAL) { /* no frames at all */
			for (p = 0; p < 4; p++)
				assert_int_equal(info->frame_op[p],
						 U4W_NUM_OPS);
			assert_false(info->flags & ~(U4W_WRF_LOCAL |
						     U4W_WRF_INV));
			continue;
		}
		for (p = 0; p < 4; p++) {
			const struct u4w_opinfo *fo =
				&u4w_ops[info->frame_op[p]];

			assert_true(fo->flags & U4W_OPF_REQUEST);
			assert_int_equal(!!(fo->flags & U4W_OPF_PAYLOAD),
					 !!(info->flags & U4W_WRF_PAYLOAD));
			if (info->flags & U4W_WRF_RESPONSE)
				assert_true(fo->flags &
					    (U4W_OPF_READ | U4W_OPF_ATOMIC));
			for (t = 0; t < 3; t++)
				if (info->qp_types & u4w_qpt_bit(qpts[t]))
					assert_true(fo->transports &
						    u4w_qpt_bit(qpts[t]));
		}
		/* immediate and invalidated key travel on the last frame */
		assert_int_equal(!!(u4w_ops[info->frame_op[U4W_POS_LAST]].flags &
				    U4W_OPF_IMM),
				 !!(info->flags & U4W_WRF_IMM));
		assert_int_equal(!!(u4w_ops[info->frame_op[U4W_POS_LAST]].flags &
				    U4W_OPF_INV),
				 !!(info->flags & U4W_WRF_INV));
	}
	for (s = 0; s < sizeof(other_ops) / sizeof(other_ops[0]); s++)
		assert_null(u4w_wrinfo(other_ops[s]));
}

static void test_wc_opcode(void **state)
{
	(void)state;
	assert_int_equal(u4w_wc_opcode(IBV_WR_SEND), IBV_WC_SEND);
	assert_int_equal(u4w_wc_opcode(IBV_WR_SEND_WITH_IMM), IBV_WC_SEND);
	assert_int_equal(u4w_wc_opcode(IBV_WR_RDMA_WRITE), IBV_WC_RDMA_WRITE);
	assert_int_equal(u4w_wc_opcode(IBV_WR_RDMA_WRITE_WITH_IMM),
			 IBV_WC_RDMA_WRITE);
	assert_int_equal(u4w_wc_opcode(IBV_WR_RDMA_READ), IBV_WC_RDMA_READ);
	assert_int_equal(u4w_wc_opcode(IBV_WR_ATOMIC_CMP_AND_SWP),
			 IBV_WC_COMP_SWAP);
	assert_int_equal(u4w_wc_opcode(IBV_WR_ATOMIC_FETCH_AND_ADD),
			 IBV_WC_FETCH_ADD);
	assert_int_equal(u4w_wc_opcode(IBV_WR_BIND_MW), IBV_WC_BIND_MW);
	assert_int_equal(u4w_wc_opcode(IBV_WR_LOCAL_INV), IBV_WC_LOCAL_INV);
	assert_int_equal(u4w_wc_opcode(IBV_WR_SEND_WITH_INV), IBV_WC_SEND);
}

/* ---- through u4v_post_send on real QPs ---------------------------------- */

#define BUF 65536

struct rig {
	struct u4vt_pair p; /* the ends (no QPs: one pair per type below) */
	struct u4v_qp *qa[3], *qb[3];
	uint8_t *la, *rb;
	struct u4v_mr *ma, *mb;
	struct u4v_ah *ah;
	/* per QP type: a window of a's to bind and invalidate locally, one
	 * of b's bound through qb for a SEND with invalidate */
	struct u4v_mw *mwa[3], *mwb[3];
	uint32_t bound_a[3], bound_b[3];
	struct ibv_mr ibma; /* ma as a bind names it */
};

static void drain(struct u4v_cq *cq)
{
	struct ibv_wc wc[64];

	while (u4vt_poll(cq, wc, 64, 50) > 0)
		;
}

/* A type 2 window of b's, bound through qb[t], and one of a's unbound. */
static void bind_b(struct rig *r, size_t t)
{
	struct ibv_mr mr = { .lkey = u4v_mr_lkey(r->mb) };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;

	assert_int_equal(u4v_alloc_mw(r->p.a.pd, IBV_MW_TYPE_2, &r->mwa[t]), 0);
	assert_int_equal(u4v_alloc_mw(r->p.b.pd, IBV_MW_TYPE_2, &r->mwb[t]), 0);
	r->bound_b[t] = ibv_inc_rkey(u4v_mw_ibv(r->mwb[t])->rkey);
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = u4v_mw_ibv(r->mwb[t]);
	wr.bind_mw.rkey = r->bound_b[t];
	wr.bind_mw.bind_info.mr = &mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)r->rb;
	wr.bind_mw.bind_info.length = 64;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	assert_int_equal(u4v_post_send(r->qb[t], &wr, &bad), 0);
	assert_int_equal(u4vt_poll(r->p.b.cq, &wc, 1, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

static int rig_setup(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));
	size_t t;
	int i;

	assert_non_null(r);
	u4vt_pair_ends(&r->p, "matrix", NULL, -1);
	r->p.o.max_send_wr = 64;
	r->la = calloc(1, BUF);
	r->rb = calloc(1, BUF);
	r->ma = u4vt_reg(&r->p.a, r->la, BUF,
			 U4VT_ACCESS_ALL | IBV_ACCESS_MW_BIND);
	r->mb = u4vt_reg(&r->p.b, r->rb, BUF,
			 U4VT_ACCESS_ALL | IBV_ACCESS_MW_BIND);
	for (t = 0; t < 3; t++) {
		u4vt_qp_pair(&r->p.a, &r->p.b, qpts[t], &r->p.o, &r->qa[t],
			     &r->qb[t]);
		for (i = 0; i < 200; i++)
			assert_int_equal(u4vt_post_recv1(r->qb[t], 1000 + i,
							 (uintptr_t)r->rb +
								 BUF / 2,
							 BUF / 2,
							 u4v_mr_lkey(r->mb)),
					 0);
		if (qpts[t] != IBV_QPT_UD)
			bind_b(r, t);
	}
	r->ah = u4vt_ah(r->p.a.pd);
	*state = r;
	return 0;
}

static int rig_teardown(void **state)
{
	struct rig *r = *state;
	size_t t;

	for (t = 0; t < 3; t++) {
		if (r->mwa[t])
			assert_int_equal(u4v_dealloc_mw(r->mwa[t]), 0);
		if (r->mwb[t])
			assert_int_equal(u4v_dealloc_mw(r->mwb[t]), 0);
		u4v_destroy_qp(r->qa[t]);
		u4v_destroy_qp(r->qb[t]);
	}
	u4v_destroy_ah(r->ah);
	u4v_dereg_mr(r->ma);
	u4v_dereg_mr(r->mb);
	u4vt_pair_down(&r->p);
	free(r->la);
	free(r->rb);
	free(r);
	return 0;
}

/* A well-formed WR of opcode op for QP type t (fields for every arm). */
static void make_wr(struct rig *r, size_t t, enum ibv_wr_opcode op,
		    uint64_t wr_id, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	bool atomic = op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		      op == IBV_WR_ATOMIC_FETCH_AND_ADD;

	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)r->la + 64;
	sge->length = atomic ? 8 : 64;
	sge->lkey = u4v_mr_lkey(r->ma);
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->imm_data = 0x01020304;
	if (qpts[t] == IBV_QPT_UD) {
		wr->wr.ud.ah = &r->ah->ibv;
		wr->wr.ud.remote_qpn = u4v_qp_num(r->qb[t]);
		wr->wr.ud.remote_qkey = 0x11111111;
	} else if (atomic) {
		wr->wr.atomic.remote_addr = (uintptr_t)r->rb + 8;
		wr->wr.atomic.rkey = u4v_mr_rkey(r->mb);
		wr->wr.atomic.compare_add = 1;
	} else {
		wr->wr.rdma.remote_addr = (uintptr_t)r->rb + 128;
		wr->wr.rdma.rkey = u4v_mr_rkey(r->mb);
	}
	if (op == IBV_WR_BIND_MW && r->mwa[t]) {
		r->ibma.lkey = u4v_mr_lkey(r->ma);
		r->bound_a[t] = ibv_inc_rkey(u4v_mw_ibv(r->mwa[t])->rkey);
		wr->bind_mw.mw = u4v_mw_ibv(r->mwa[t]);
		wr->bind_mw.rkey = r->bound_a[t];
		wr->bind_mw.bind_info.mr = &r->ibma;
		wr->bind_mw.bind_info.addr = (uintptr_t)r->la;
		wr->bind_mw.bind_info.length = 64;
		wr->bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	}
	if (op == IBV_WR_LOCAL_INV)
		wr->invalidate_rkey = r->bound_a[t];
	if (op == IBV_WR_SEND_WITH_INV)
		wr->invalidate_rkey = r->bound_b[t];
}

static void test_post_each_opcode(void **state)
{
	struct rig *r = *state;
	size_t t, o;
	uint64_t id = 1;

	for (t = 0; t < 3; t++) {
		for (o = 0;
		     o < NSTD + sizeof(other_ops) / sizeof(other_ops[0]);
		     o++) {
			enum ibv_wr_opcode op =
				o < NSTD ? std_ops[o] : other_ops[o - NSTD];
			struct ibv_send_wr wr, *bad = (void *)0x1;
			struct ibv_sge sge;
			struct ibv_wc wc;
			int ret;

			make_wr(r, t, op, id, &wr, &sge);
			errno = EALREADY;
			ret = u4v_post_send(r->qa[t], &wr, &bad);
			assert_int_equal(errno, EALREADY);
			if (spec_allowed(qpts[t], op)) {
				if (ret)
					fail_msg("qpt %d op %d refused: %d",
						 qpts[t], op, ret);
				assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1,
							   5000),
						 1);
				assert_int_equal(wc.wr_id, id);
				assert_int_equal(wc.status, IBV_WC_SUCCESS);
				assert_int_equal(wc.opcode, u4w_wc_opcode(op));
			} else {
				if (ret != EINVAL)
					fail_msg("qpt %d op %d: ret %d, want "
						 "EINVAL",
						 qpts[t], op, ret);
				assert_ptr_equal(bad, &wr);
				assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, 30),
						 0);
			}
			id++;
		}
		drain(r->p.b.cq);
	}
}

/* [ok, ok, refused, ok]: the first two run, the last is never posted. */
static void test_post_list_partial(void **state)
{
	struct rig *r = *state;
	size_t t;

	for (t = 0; t < 3; t++) {
		enum ibv_wr_opcode refused = qpts[t] == IBV_QPT_RC ?
						     IBV_WR_TSO :
					     qpts[t] == IBV_QPT_UC ?
						     IBV_WR_RDMA_READ :
						     IBV_WR_RDMA_WRITE;
		struct ibv_send_wr wr[4], *bad = NULL;
		struct ibv_sge sge[4];
		struct ibv_wc wc[4];
		int i;

		make_wr(r, t, IBV_WR_SEND, 11, &wr[0], &sge[0]);
		make_wr(r, t, IBV_WR_SEND_WITH_IMM, 12, &wr[1], &sge[1]);
		make_wr(r, t, refused, 13, &wr[2], &sge[2]);
		make_wr(r, t, IBV_WR_SEND, 14, &wr[3], &sge[3]);
		for (i = 0; i < 3; i++)
			wr[i].next = &wr[i + 1];
		errno = 0;
		assert_int_equal(u4v_post_send(r->qa[t], &wr[0], &bad), EINVAL);
		assert_int_equal(errno, 0);
		assert_ptr_equal(bad, &wr[2]);
		assert_int_equal(u4vt_poll(r->p.a.cq, wc, 2, 5000), 2);
		assert_int_equal(wc[0].wr_id, 11);
		assert_int_equal(wc[1].wr_id, 12);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
		assert_int_equal(u4vt_poll(r->p.a.cq, wc, 1, 100), 0);
		/* the receiver got exactly two messages */
		assert_int_equal(u4vt_poll(r->p.b.cq, wc, 2, 5000), 2);
		assert_true(wc[1].wc_flags & IBV_WC_WITH_IMM);
		assert_int_equal(u4vt_poll(r->p.b.cq, wc, 1, 100), 0);
	}
}

/* Other per-WR checks, all as return values with bad_wr, errno untouched. */
static void test_post_other_refusals(void **state)
{
	struct rig *r = *state;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge[20];
	struct ibv_wc wc;
	int i;

	/* num_sge over the QP's max_send_sge; negative */
	make_wr(r, 0, IBV_WR_SEND, 1, &wr, &sge[0]);
	for (i = 1; i < 20; i++)
		sge[i] = sge[0];
	wr.num_sge = (int)r->p.o.max_sge + 1;
	errno = 0;
	bad = NULL;
	assert_int_equal(u4v_post_send(r->qa[0], &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	wr.num_sge = -1;
	assert_int_equal(u4v_post_send(r->qa[0], &wr, &bad), EINVAL);
	/* unknown send flag */
	make_wr(r, 0, IBV_WR_SEND, 2, &wr, &sge[0]);
	wr.send_flags |= 1 << 20;
	assert_int_equal(u4v_post_send(r->qa[0], &wr, &bad), EINVAL);
	/* atomic: not 8-byte aligned, SGE shorter than 8, two SGEs */
	make_wr(r, 0, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, &wr, &sge[0]);
	wr.wr.atomic.remote_addr += 4;
	assert_int_equal(u4v_post_send(r->qa[0], &wr, &bad), EINVAL);
	make_wr(r, 0, IBV_WR_ATOMIC_CMP_AND_SWP, 3, &wr, &sge[0]);
	sge[0].length = 4;
	assert_int_equal(u4v_post_send(r->qa[0], &wr, &bad), EINVAL);
	/* inline over max_inline */
	make_wr(r, 0, IBV_WR_SEND, 4, &wr, &sge[0]);
	wr.send_flags |= IBV_SEND_INLINE;
	sge[0].length = r->p.o.max_inline + 1;
	assert_int_equal(u4v_post_send(r->qa[0], &wr, &bad), EINVAL);
	/* bad lkey, SGE outside its MR */
	make_wr(r, 0, IBV_WR_RDMA_WRITE, 5, &wr, &sge[0]);
	sge[0].lkey ^= 0x10000;
	assert_int_equal(u4v_post_send(r->qa[0], &wr, &bad), EINVAL);
	make_wr(r, 0, IBV_WR_RDMA_WRITE, 5, &wr, &sge[0]);
	sge[0].addr = (uintptr_t)r->la + BUF - 10;
	sge[0].length = 11;
	assert_int_equal(u4v_post_send(r->qa[0], &wr, &bad), EINVAL);
	/* message over max_msg_sz (two SGEs of 1 GiB: lengths only) */
	make_wr(r, 0, IBV_WR_RDMA_WRITE, 6, &wr, &sge[0]);
	sge[0].length = 1u << 30;
	sge[1] = sge[0];
	sge[1].length = 1;
	wr.num_sge = 2;
	assert_int_equal(u4v_post_send(r->qa[0], &wr, &bad), EINVAL);
	/* UD: over 4096 bytes, no AH, remote QPN of no context */
	make_wr(r, 2, IBV_WR_SEND, 7, &wr, &sge[0]);
	sge[0].length = 4097;
	assert_int_equal(u4v_post_send(r->qa[2], &wr, &bad), EINVAL);
	make_wr(r, 2, IBV_WR_SEND, 7, &wr, &sge[0]);
	wr.wr.ud.ah = NULL;
	assert_int_equal(u4v_post_send(r->qa[2], &wr, &bad), EINVAL);
	make_wr(r, 2, IBV_WR_SEND, 7, &wr, &sge[0]);
	wr.wr.ud.remote_qpn = 0;
	assert_int_equal(u4v_post_send(r->qa[2], &wr, &bad), EINVAL);
	assert_int_equal(errno, 0);
	assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, 100), 0);
	/* NULL wr: EINVAL, nothing else */
	assert_int_equal(u4v_post_send(r->qa[0], NULL, &bad), EINVAL);
}

/* A full send queue is ENOMEM, at the WR that did not fit. */
static void test_post_sq_full(void **state)
{
	struct rig *r = *state;
	struct ibv_send_wr wr[65], *bad = NULL;
	struct ibv_sge sge[65];
	struct ibv_wc wc[65];
	struct u4vt_qp_opts o = r->p.o;
	struct u4v_qp *q;
	int i;

	/* an SQD QP keeps what it is given: nothing drains meanwhile */
	o.max_send_wr = 8;
	q = u4vt_qp_create(&r->p.a, IBV_QPT_UC, &o);
	u4vt_qp_connect(q, IBV_QPT_UC, u4v_qp_num(r->qb[1]), &o);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD };

		assert_int_equal(u4v_modify_qp(q, &a, IBV_QP_STATE), 0);
	}
	for (i = 0; i < 9; i++) {
		make_wr(r, 1, IBV_WR_RDMA_WRITE, 100 + i, &wr[i], &sge[i]);
		wr[i].next = i < 8 ? &wr[i + 1] : NULL;
	}
	errno = 0;
	assert_int_equal(u4v_post_send(q, &wr[0], &bad), ENOMEM);
	assert_int_equal(errno, 0);
	assert_ptr_equal(bad, &wr[8]);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

		assert_int_equal(u4v_modify_qp(q, &a, IBV_QP_STATE), 0);
	}
	assert_int_equal(u4vt_poll(r->p.a.cq, wc, 9, 3000), 8);
	for (i = 0; i < 8; i++)
		assert_int_equal(wc[i].wr_id, 100 + i);
	assert_int_equal(u4v_destroy_qp(q), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_matrix),
		cmocka_unit_test(test_frame_op_sequence),
		cmocka_unit_test(test_wr_table_rows),
		cmocka_unit_test(test_wc_opcode),
		cmocka_unit_test_setup_teardown(test_post_each_opcode,
						rig_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_post_list_partial,
						rig_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_post_other_refusals,
						rig_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_post_sq_full, rig_setup,
						rig_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
