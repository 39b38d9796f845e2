// SPDX-License-Identifier: MIT
/*
 * Remote access violations: RDMA WRITE / READ / atomics outside the MR,
 * without the access flag (on the MR or on the QP), with a wrong rkey, or
 * with an rkey of another PD. Each ends as IBV_WC_REM_ACCESS_ERR at the
 * requester; the target's memory is untouched (checksum before and after);
 * the target QP stays in RTS and a fresh requester QP can use the same MR
 * right after. UC: the violating message is dropped, memory untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define TLEN 65536u

enum viol { OUTSIDE, NO_MR_FLAG, NO_QP_FLAG, BAD_RKEY, OTHER_PD };

/*
 * A fresh QP pair of type on p's contexts WRITEs 9000 bytes of src into
 * a good MR over at (after the failed QP's flushes); they arrive.
 */
static void fresh_requester_works(struct u4vt_pair *p, enum ibv_qp_type type,
				  uint8_t *src, struct u4v_mr *ms, uint8_t *at)
{
	struct u4v_mr *mt_ok = rel_reg(p->b.pd, at, TLEN, REL_ACC_ALL);
	struct u4vt_qp_opts o;
	struct u4v_qp *q1, *q2;
	struct ibv_wc wc;

	u4vt_qp_opts_default(&o);
	u4vt_qp_pair(&p->a, &p->b, type, &o, &q1, &q2);
	assert_int_equal(rel_post(q1, IBV_WR_RDMA_WRITE, 2, src, 9000,
				  u4v_mr_lkey(ms), (uintptr_t)at,
				  u4v_mr_rkey(mt_ok)),
			 0);
	while (u4vt_poll(p->a.cq, &wc, 1, 5000) == 1 && wc.wr_id != 2)
		; /* flushes of the failed QP first */
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	if (type == IBV_QPT_UC) {
		uint64_t end = u4vt_now_ms() + 2000;

		while (memcmp(src, at, 9000) && u4vt_now_ms() < end)
			u4v_poll_cq(p->b.cq, 1, &wc);
	}
	assert_memory_equal(src, at, 9000);
	assert_int_equal(u4v_destroy_qp(q1), 0);
	assert_int_equal(u4v_destroy_qp(q2), 0);
	assert_int_equal(u4v_dereg_mr(mt_ok), 0);
}

static void one(enum ibv_qp_type type, enum ibv_wr_opcode op, enum viol v,
		const char *tag)
{
	struct u4vt_qp_opts o;
	struct u4vt_pair p;
	struct u4v_pd *pd2 = NULL;
	struct u4v_mr *ms, *mt;
	uint8_t *src = calloc(1, TLEN), *tgt = malloc(TLEN + 8192);
	uint64_t before;
	uint64_t raddr;
	uint32_t rkey, len = op == IBV_WR_RDMA_READ || op == IBV_WR_RDMA_WRITE ?
				     9000 : 8;
	int mr_acc = REL_ACC_ALL;
	struct ibv_wc wc;

	u4vt_qp_opts_default(&o);
	if (v == NO_QP_FLAG)
		o.access = IBV_ACCESS_LOCAL_WRITE;
	if (v == NO_MR_FLAG)
		mr_acc = IBV_ACCESS_LOCAL_WRITE; /* no remote access at all */
	u4vt_pair_up(&p, tag, type, NULL, &o, 0);
	u4vt_fill(tgt, TLEN + 8192, 99);
	before = u4vt_sum(tgt, TLEN + 8192);
	ms = rel_reg(p.a.pd, src, TLEN, IBV_ACCESS_LOCAL_WRITE);
	if (v == OTHER_PD) {
		assert_int_equal(u4v_alloc_pd(p.b.ctx, &pd2), 0);
		mt = rel_reg(pd2, tgt + 4096, TLEN, mr_acc);
	} else {
		mt = rel_reg(p.b.pd, tgt + 4096, TLEN, mr_acc);
	}
	raddr = (uintptr_t)tgt + 4096;
	rkey = u4v_mr_rkey(mt);
	switch (v) {
	case OUTSIDE: /* straddles the end of the MR */
		raddr += TLEN - (len > 8 ? 4096 : 0);
		break;
	case BAD_RKEY:
		rkey ^= 0x80000000u;
		break;
	default:
		break;
	}
	u4vt_fill(src, TLEN, 5);
	assert_int_equal(rel_post(p.qa, op, 1, src, len, u4v_mr_lkey(ms),
				  raddr, rkey), 0);
	wc = rel_wait1(p.a.cq, 5000);
	if (type == IBV_QPT_RC) {
		assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
		assert_int_equal(u4v_qp_state(p.qa), IBV_QPS_ERR);
	} else {
		/* UC: no response; the target drops the message */
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(u4vt_poll(p.b.cq, &wc, 1, 100), 0);
	}
	assert_true(u4vt_sum(tgt, TLEN + 8192) == before);
	assert_int_equal(u4v_qp_state(p.qb), IBV_QPS_RTS);

	/* a fresh requester on the same contexts uses a good MR fine */
	fresh_requester_works(&p, type, src, ms, tgt + 4096);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(mt), 0);
	if (pd2)
		assert_int_equal(u4v_dealloc_pd(pd2), 0);
	u4vt_pair_down(&p);
	free(src);
	free(tgt);
}

static void all_violations(enum ibv_qp_type type, enum ibv_wr_opcode op,
			   const char *tag)
{
	static const enum viol vs[] = { OUTSIDE, NO_MR_FLAG, NO_QP_FLAG,
					BAD_RKEY, OTHER_PD };
	size_t i;

	for (i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
		one(type, op, vs[i], tag);
}

static void test_rc_write(void **state)
{
	(void)state;
	all_violations(IBV_QPT_RC, IBV_WR_RDMA_WRITE, "rw");
}

static void test_rc_read(void **state)
{
	(void)state;
	all_violations(IBV_QPT_RC, IBV_WR_RDMA_READ, "rr");
}

static void test_rc_atomic(void **state)
{
	(void)state;
	all_violations(IBV_QPT_RC, IBV_WR_ATOMIC_FETCH_AND_ADD, "rf");
	all_violations(IBV_QPT_RC, IBV_WR_ATOMIC_CMP_AND_SWP, "rc");
}

static void test_uc_write(void **state)
{
	(void)state;
	all_violations(IBV_QPT_UC, IBV_WR_RDMA_WRITE, "uw");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_write),
		cmocka_unit_test(test_rc_read),
		cmocka_unit_test(test_rc_atomic),
		cmocka_unit_test(test_uc_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
