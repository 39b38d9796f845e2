// SPDX-License-Identifier: MIT
/*
 * Bad input at every engine entry point: each call returns its documented
 * errno value (or error completion), and a good operation right after it
 * still works - the bad call left nothing broken behind.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine_int.h" /* async_fd: the provider sets it at open */

#include "u4vt_rel.h"

#define BUF 65536u

struct env {
	struct u4vt_pair p;
	uint8_t *a, *b;
	struct u4v_mr *ma, *mb, *mro; /* mro: a's buffer, no LOCAL_WRITE */
};

static struct env *env_up(const char *tag, enum ibv_qp_type type)
{
	struct env *e = calloc(1, sizeof(*e));

	u4vt_pair_up(&e->p, tag, type, NULL, NULL, 0);
	e->a = calloc(1, BUF);
	e->b = calloc(1, BUF);
	e->ma = rel_reg(e->p.a.pd, e->a, BUF, REL_ACC_ALL);
	e->mb = rel_reg(e->p.b.pd, e->b, BUF, REL_ACC_ALL);
	e->mro = rel_reg(e->p.a.pd, e->a, BUF, 0);
	return e;
}

static void env_down(struct env *e)
{
	assert_int_equal(u4v_dereg_mr(e->ma), 0);
	assert_int_equal(u4v_dereg_mr(e->mb), 0);
	assert_int_equal(u4v_dereg_mr(e->mro), 0);
	u4vt_pair_down(&e->p);
	free(e->a);
	free(e->b);
	free(e);
}

/* The proof that nothing broke: an RC/UC WRITE, or a UD SEND, gets there. */
static void good_op(struct env *e)
{
	struct ibv_wc wc;

	u4vt_fill(e->a, 1000, 77);
	if (e->p.type == IBV_QPT_UD)
		return;
	assert_int_equal(rel_post(e->p.qa, IBV_WR_RDMA_WRITE, 4242, e->a, 1000,
				  u4v_mr_lkey(e->ma), (uintptr_t)e->b + 5000,
				  u4v_mr_rkey(e->mb)), 0);
	wc = rel_wait1(e->p.a.cq, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 4242);
	if (e->p.type == IBV_QPT_RC)
		assert_memory_equal(e->a, e->b + 5000, 1000);
}

static int post(struct env *e, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int ret = u4v_post_send(e->p.qa, wr, &bad);

	if (ret)
		assert_ptr_equal(bad, wr);
	return ret;
}

static void wr_init(struct env *e, struct ibv_send_wr *wr, struct ibv_sge *s,
		    enum ibv_wr_opcode op, uint32_t len)
{
	memset(wr, 0, sizeof(*wr));
	s->addr = (uintptr_t)e->a;
	s->length = len;
	s->lkey = u4v_mr_lkey(e->ma);
	wr->wr_id = 1;
	wr->sg_list = s;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->wr.rdma.remote_addr = (uintptr_t)e->b;
	wr->wr.rdma.rkey = u4v_mr_rkey(e->mb);
}

/* SGE lists: too many (the QP has 4), a negative count, none, too long. */
static void bad_sge_lists(struct env *e)
{
	struct ibv_send_wr wr;
	struct ibv_sge s, sg[8];

	wr_init(e, &wr, &s, IBV_WR_SEND, 100);
	for (int i = 0; i < 8; i++)
		sg[i] = s;
	wr.sg_list = sg;
	wr.num_sge = 5;
	assert_int_equal(post(e, &wr), EINVAL);
	wr.num_sge = -1;
	assert_int_equal(post(e, &wr), EINVAL);
	wr.sg_list = NULL;
	wr.num_sge = 1;
	assert_int_equal(post(e, &wr), EINVAL);
	/* beyond max_msg_sz in total */
	wr_init(e, &wr, &s, IBV_WR_RDMA_WRITE, 100);
	sg[0] = s;
	sg[1] = s;
	sg[1].length = U4V_MAX_MSG_SZ;
	wr.sg_list = sg;
	wr.num_sge = 2;
	assert_int_equal(post(e, &wr), EINVAL);
}

/* A chain whose third WR is bad: the first two go, bad_wr = third. */
static void chain_stops_at_bad(struct env *e)
{
	struct ibv_send_wr w[3], *bad = NULL;
	struct ibv_sge ss[3];
	struct ibv_wc wc[2];

	for (int i = 0; i < 3; i++) {
		wr_init(e, &w[i], &ss[i], IBV_WR_RDMA_WRITE, 64);
		w[i].wr_id = 10 + i;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	ss[2].lkey = 0;
	assert_int_equal(u4v_post_send(e->p.qa, w, &bad), EINVAL);
	assert_ptr_equal(bad, &w[2]);
	assert_int_equal(u4vt_poll(e->p.a.cq, wc, 2, 5000), 2);
	assert_int_equal(wc[0].wr_id, 10);
	assert_int_equal(wc[1].wr_id, 11);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
}

static void test_post_send_bad_wrs(void **state)
{
	struct env *e = env_up("bsend", IBV_QPT_RC);
	struct ibv_send_wr wr;
	struct ibv_sge s;

	(void)state;
	/* bad lkey, length beyond the MR, address before it */
	wr_init(e, &wr, &s, IBV_WR_SEND, 100);
	s.lkey ^= 0x10000;
	assert_int_equal(post(e, &wr), EINVAL);
	wr_init(e, &wr, &s, IBV_WR_SEND, BUF + 1);
	assert_int_equal(post(e, &wr), EINVAL);
	wr_init(e, &wr, &s, IBV_WR_SEND, 100);
	s.addr -= 1;
	assert_int_equal(post(e, &wr), EINVAL);
	/* an lkey of the other context's PD */
	wr_init(e, &wr, &s, IBV_WR_SEND, 100);
	s.lkey = u4v_mr_lkey(e->mb);
	assert_int_equal(post(e, &wr), EINVAL);
	/* READ into an MR without LOCAL_WRITE */
	wr_init(e, &wr, &s, IBV_WR_RDMA_READ, 100);
	s.lkey = u4v_mr_lkey(e->mro);
	assert_int_equal(post(e, &wr), EINVAL);
	/* misaligned atomic, short atomic buffer, two SGEs */
	wr_init(e, &wr, &s, IBV_WR_ATOMIC_FETCH_AND_ADD, 8);
	wr.wr.atomic.remote_addr = (uintptr_t)e->b + 4;
	wr.wr.atomic.rkey = u4v_mr_rkey(e->mb);
	assert_int_equal(post(e, &wr), EINVAL);
	wr.wr.atomic.remote_addr = (uintptr_t)e->b;
	s.length = 4;
	assert_int_equal(post(e, &wr), EINVAL);
	bad_sge_lists(e);
	/* inline longer than max_inline_data (256) */
	wr_init(e, &wr, &s, IBV_WR_SEND, 257);
	wr.send_flags |= IBV_SEND_INLINE;
	assert_int_equal(post(e, &wr), EINVAL);
	/* unknown flag, unknown opcode */
	wr_init(e, &wr, &s, IBV_WR_SEND, 100);
	wr.send_flags |= 1 << 20;
	assert_int_equal(post(e, &wr), EINVAL);
	wr_init(e, &wr, &s, (enum ibv_wr_opcode)77, 100);
	assert_int_equal(post(e, &wr), EINVAL);
	/* NULL arguments */
	assert_int_equal(u4v_post_send(e->p.qa, NULL, NULL), EINVAL);
	assert_int_equal(u4v_post_send(NULL, &wr, NULL), EINVAL);
	good_op(e);
	chain_stops_at_bad(e);
	good_op(e);
	env_down(e);
}

static void test_opcode_matrix(void **state)
{
	static const enum ibv_wr_opcode uc_bad[] = {
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD };
	static const enum ibv_wr_opcode ud_bad[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD };
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct env *e;
	size_t i;

	(void)state;
	e = env_up("buc", IBV_QPT_UC);
	for (i = 0; i < sizeof(uc_bad) / sizeof(uc_bad[0]); i++) {
		wr_init(e, &wr, &s, uc_bad[i], 8);
		assert_int_equal(post(e, &wr), EINVAL);
	}
	good_op(e);
	env_down(e);

	e = env_up("bud", IBV_QPT_UD);
	for (i = 0; i < sizeof(ud_bad) / sizeof(ud_bad[0]); i++) {
		wr_init(e, &wr, &s, ud_bad[i], 8);
		assert_int_equal(post(e, &wr), EINVAL);
	}
	/* UD: no AH, datagram over 4096 */
	{
		struct ibv_gid_entry sgid;
		struct ibv_ah_attr aa;
		struct u4v_ah *ah;
		struct ibv_wc wc;

		wr_init(e, &wr, &s, IBV_WR_SEND, 100);
		memset(&wr.wr, 0, sizeof(wr.wr));
		wr.wr.ud.remote_qpn = u4v_qp_num(e->p.qb);
		wr.wr.ud.remote_qkey = 0x11111111;
		assert_int_equal(post(e, &wr), EINVAL);
		ah = u4vt_ah(e->p.a.pd);
		wr.wr.ud.ah = &ah->ibv;
		s.length = 4097;
		assert_int_equal(post(e, &wr), EINVAL);
		/* another port; no GRH on a RoCE port; no or another GID */
		u4vt_ah_attr(&aa, &sgid);
		aa.port_num = 2;
		assert_int_equal(u4v_create_ah(e->p.a.pd, &aa, &sgid, &ah),
				 EINVAL);
		u4vt_ah_attr(&aa, &sgid);
		aa.is_global = 0;
		assert_int_equal(u4v_create_ah(e->p.a.pd, &aa, &sgid, &ah),
				 EINVAL);
		u4vt_ah_attr(&aa, &sgid);
		assert_int_equal(u4v_create_ah(e->p.a.pd, &aa, NULL, &ah),
				 EINVAL);
		aa.grh.sgid_index = 2;
		assert_int_equal(u4v_create_ah(e->p.a.pd, &aa, &sgid, &ah),
				 EINVAL);
		/* the good one */
		s.length = 100;
		assert_int_equal(rel_post_recv(e->p.qb, 1, e->b, 4200,
					       u4v_mr_lkey(e->mb)), 0);
		assert_int_equal(post(e, &wr), 0);
		wc = rel_wait1(e->p.b.cq, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 140);
		assert_memory_equal(e->a, e->b + 40, 100);
		wc = rel_wait1(e->p.a.cq, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(u4v_destroy_ah(ah), 0);
	}
	env_down(e);
}

static void test_wrong_state(void **state)
{
	struct u4vt_qp_opts o;
	struct u4vt_end a;
	struct u4v_qp *qp;
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct ibv_qp_attr at;
	struct env *e = env_up("bstate", IBV_QPT_RC);
	static char buf[64];
	struct u4v_mr *mr;
	struct ibv_wc wc;

	(void)state;
	a = e->p.a;
	u4vt_qp_opts_default(&o);
	qp = u4vt_qp_create(&a, IBV_QPT_RC, &o);
	mr = rel_reg(a.pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	wr_init(e, &wr, &s, IBV_WR_SEND, 64);
	s.addr = (uintptr_t)buf;
	s.lkey = u4v_mr_lkey(mr);
	/* RESET: neither send nor receive */
	assert_int_equal(u4v_post_send(qp, &wr, NULL), EINVAL);
	assert_int_equal(rel_post_recv(qp, 1, buf, 64, u4v_mr_lkey(mr)),
			 EINVAL);
	/* RESET -> RTS directly, and RTR without its required attributes */
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	assert_int_equal(u4v_modify_qp(qp, &at, IBV_QP_STATE), EINVAL);
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(u4v_modify_qp(qp, &at, IBV_QP_STATE |
					       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS), 0);
	/* INIT: receives yes, sends no */
	assert_int_equal(u4v_post_send(qp, &wr, NULL), EINVAL);
	assert_int_equal(rel_post_recv(qp, 1, buf, 64, u4v_mr_lkey(mr)), 0);
	at.qp_state = IBV_QPS_RTR;
	assert_int_equal(u4v_modify_qp(qp, &at, IBV_QP_STATE), EINVAL);
	/* bad values */
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 2;
	assert_int_equal(u4v_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PORT),
			 EINVAL);
	at.port_num = 1;
	at.qp_access_flags = 1 << 20;
	assert_int_equal(u4v_modify_qp(qp, &at, IBV_QP_STATE |
					       IBV_QP_ACCESS_FLAGS), EINVAL);
	assert_int_equal(u4v_qp_state(qp), IBV_QPS_INIT);
	/* ERR: posts are accepted and flushed */
	at.qp_state = IBV_QPS_ERR;
	assert_int_equal(u4v_modify_qp(qp, &at, IBV_QP_STATE), 0);
	wc = rel_wait1(a.cq, 1000); /* the receive posted in INIT */
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(u4v_post_send(qp, &wr, NULL), 0);
	wc = rel_wait1(a.cq, 1000);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(u4v_destroy_qp(qp), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	good_op(e);
	env_down(e);
}

static void test_create_bad_args(void **state)
{
	struct env *e = env_up("bcreate", IBV_QPT_RC);
	struct u4v_qp_init init;
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
	struct ibv_device_attr_ex da;
	struct ibv_port_attr pa;
	struct u4v_srq *srq;
	struct u4v_cq *cq;
	struct u4v_qp *qp;
	struct u4v_mr *mr;
	char *hole;

	(void)state;
	assert_int_equal(u4v_create_srq(e->p.a.pd, &sa, &srq), 0);
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_UC;
	init.send_cq = init.recv_cq = e->p.a.cq;
	init.srq = srq;
	assert_int_equal(u4v_create_qp(e->p.a.pd, &init, &qp), EINVAL);
	init.srq = NULL;
	init.qp_type = IBV_QPT_RAW_PACKET;
	assert_int_equal(u4v_create_qp(e->p.a.pd, &init, &qp), EOPNOTSUPP);
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = U4V_MAX_QP_WR + 1;
	assert_int_equal(u4v_create_qp(e->p.a.pd, &init, &qp), EINVAL);
	init.cap.max_send_wr = 1;
	init.cap.max_inline_data = U4V_MAX_INLINE + 1;
	assert_int_equal(u4v_create_qp(e->p.a.pd, &init, &qp), EINVAL);
	init.cap.max_inline_data = 0;
	init.cap.max_send_sge = U4V_MAX_SGE + 1;
	assert_int_equal(u4v_create_qp(e->p.a.pd, &init, &qp), EINVAL);
	init.cap.max_send_sge = 1;
	init.send_cq = NULL;
	assert_int_equal(u4v_create_qp(e->p.a.pd, &init, &qp), EINVAL);
	/* CQ, SRQ, MR */
	assert_int_equal(u4v_create_cq(e->p.a.ctx, 0, &cq), EINVAL);
	assert_int_equal(u4v_create_cq(e->p.a.ctx, U4V_MAX_CQE + 1, &cq),
			 EINVAL);
	assert_true(u4v_poll_cq(e->p.a.cq, -1, NULL) == -EINVAL);
	sa.max_wr = 0;
	assert_int_equal(u4v_create_srq(e->p.a.pd, &sa, &srq),
			 EINVAL);
	sa.max_wr = 4;
	sa.srq_limit = 5;
	{
		struct u4v_srq *s2;

		assert_int_equal(u4v_create_srq(e->p.a.pd, &sa, &s2), EINVAL);
	}
	assert_int_equal(u4v_reg_mr(e->p.a.pd, e->a, 64,
				    IBV_ACCESS_ZERO_BASED, &mr), EINVAL);
	assert_int_equal(u4v_reg_mr(e->p.a.pd, e->a, 64,
				    IBV_ACCESS_REMOTE_WRITE, &mr), EINVAL);
	assert_int_equal(u4v_reg_mr(e->p.a.pd, NULL, 64, 0, &mr), EFAULT);
	hole = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(hole != MAP_FAILED);
	munmap(hole + 4096, 4096);
	assert_int_equal(u4v_reg_mr(e->p.a.pd, hole, 8192, 0, &mr), EFAULT);
	munmap(hole, 4096);
	/* queries */
	assert_int_equal(u4v_query_port(e->p.a.ctx, 2, &pa), EINVAL);
	assert_int_equal(u4v_query_device(e->p.a.ctx, &da, 8), EINVAL);
	assert_int_equal(u4v_destroy_srq(srq), 0);
	good_op(e);
	env_down(e);
}

static void test_destroy_busy(void **state)
{
	struct env *e = env_up("bbusy", IBV_QPT_RC);
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
	struct u4vt_qp_opts o;
	struct u4v_srq *srq;
	struct u4v_ah *ah;
	struct u4v_qp *qp;
	struct u4v_cq *cq2;
	struct u4vt_end a;

	(void)state;
	/* PD with MRs and QPs, CQ with QPs */
	assert_int_equal(u4v_dealloc_pd(e->p.a.pd), EBUSY);
	assert_int_equal(u4v_destroy_cq(e->p.a.cq), EBUSY);
	good_op(e);
	/* SRQ with a QP */
	assert_int_equal(u4v_create_srq(e->p.b.pd, &sa, &srq), 0);
	assert_int_equal(u4v_create_cq(e->p.b.ctx, 16, &cq2), 0);
	a = e->p.b;
	a.cq = cq2;
	u4vt_qp_opts_default(&o);
	o.srq = srq;
	qp = u4vt_qp_create(&a, IBV_QPT_RC, &o);
	assert_int_equal(u4v_destroy_srq(srq), EBUSY);
	assert_int_equal(u4v_destroy_cq(cq2), EBUSY);
	/* post_recv on a QP with an SRQ is refused */
	assert_int_equal(rel_post_recv(qp, 1, e->b, 64, u4v_mr_lkey(e->mb)),
			 EINVAL);
	/* the SRQ still takes receives */
	{
		struct ibv_sge s = { (uintptr_t)e->b, 64, u4v_mr_lkey(e->mb) };
		struct ibv_recv_wr w = { .wr_id = 1, .sg_list = &s,
					 .num_sge = 1 }, *bad;

		assert_int_equal(u4v_post_srq_recv(srq, &w, &bad), 0);
	}
	/* PD with an AH only */
	{
		struct u4v_pd *pd;

		assert_int_equal(u4v_alloc_pd(e->p.a.ctx, &pd), 0);
		ah = u4vt_ah(pd);
		assert_int_equal(u4v_dealloc_pd(pd), EBUSY);
		assert_int_equal(u4v_destroy_ah(ah), 0);
		assert_int_equal(u4v_dealloc_pd(pd), 0);
	}
	assert_int_equal(u4v_destroy_qp(qp), 0);
	assert_int_equal(u4v_destroy_srq(srq), 0);
	assert_int_equal(u4v_destroy_cq(cq2), 0);
	good_op(e);
	env_down(e);
}

/* A SEND on p's own QP pair still arrives, whole. */
static void send_still_works(struct u4vt_pair *p)
{
	static char s[64] = "still", d[64];
	struct u4v_mr *m1 = rel_reg(p->a.pd, s, 64, IBV_ACCESS_LOCAL_WRITE);
	struct u4v_mr *m2 = rel_reg(p->b.pd, d, 64, IBV_ACCESS_LOCAL_WRITE);

	assert_int_equal(rel_post_recv(p->qb, 1, d, 64, u4v_mr_lkey(m2)), 0);
	assert_int_equal(
	    rel_post(p->qa, IBV_WR_SEND, 1, s, 64, u4v_mr_lkey(m1), 0, 0), 0);
	rel_wait_both(p->a.cq, p->b.cq, 5000);
	assert_string_equal(d, "still");
	assert_int_equal(u4v_dereg_mr(m1), 0);
	assert_int_equal(u4v_dereg_mr(m2), 0);
}

static void test_queue_full_and_cq_overflow(void **state)
{
	struct u4vt_qp_opts o;
	struct u4vt_pair p;
	struct u4v_cq *small;
	struct u4v_qp *qa, *qb;
	struct u4v_mr *ma;
	struct u4vt_end ea;
	struct ibv_wc wc[8];
	static char buf[64];
	int fds[2], i, n;
	uint64_t element;
	uint32_t type;

	(void)state;
	u4vt_pair_up(&p, "bfull", IBV_QPT_RC, NULL, NULL, 0);
	/* an async event pipe, as the provider would give */
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
	p.a.ctx->async_fd = fds[1];
	u4vt_qp_opts_default(&o);
	o.max_send_wr = 8;
	o.max_recv_wr = 2;
	assert_int_equal(u4v_create_cq(p.a.ctx, 4, &small), 0);
	u4v_cq_set_handle(small, 0xc0ffee);
	ea = p.a;
	ea.cq = small;
	u4vt_qp_pair(&ea, &p.b, IBV_QPT_RC, &o, &qa, &qb);
	ma = rel_reg(p.a.pd, buf, 64, IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_WRITE);
	/* RQ full */
	assert_int_equal(rel_post_recv(qa, 1, buf, 64, u4v_mr_lkey(ma)), 0);
	assert_int_equal(rel_post_recv(qa, 2, buf, 64, u4v_mr_lkey(ma)), 0);
	assert_int_equal(rel_post_recv(qa, 3, buf, 64, u4v_mr_lkey(ma)),
			 ENOMEM);
	/* SQ full: 8 posted with nobody polling may be refused at the 9th */
	for (i = 0; i < 8; i++)
		assert_int_equal(rel_post(qa, IBV_WR_RDMA_WRITE, i, buf, 64,
					  u4v_mr_lkey(ma), (uintptr_t)buf,
					  u4v_mr_rkey(ma)), 0);
	/* 8 signaled completions into a 4-entry CQ: overflow */
	for (i = 0; i < 3000 && !u4vt_async_read(fds[0], &element, &type, 1);
	     i++)
		u4v_ctx_progress(p.a.ctx);
	assert_true(i < 3000);
	assert_int_equal(type, IBV_EVENT_CQ_ERR);
	assert_int_equal(element, 0xc0ffee);
	n = u4v_poll_cq(small, 8, wc);
	assert_int_equal(n, 4);
	p.a.ctx->async_fd = -1;
	/* everything else still works: the default pair */
	send_still_works(&p);
	assert_int_equal(u4v_destroy_qp(qa), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
	assert_int_equal(u4v_destroy_cq(small), 0);
	assert_int_equal(u4v_dereg_mr(ma), 0);
	close(fds[0]);
	close(fds[1]);
	u4vt_pair_down(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_post_send_bad_wrs),
		cmocka_unit_test(test_opcode_matrix),
		cmocka_unit_test(test_wrong_state),
		cmocka_unit_test(test_create_bad_args),
		cmocka_unit_test(test_destroy_busy),
		cmocka_unit_test(test_queue_full_and_cq_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
