// SPDX-License-Identifier: MIT
/*
 * An ACK held for the application's answer (ctx/progress.c, ack_may_wait):
 * a responder whose application polled lately and waits for nothing holds
 * the ACK of the peer's RDMA WRITE. If that application then moves its QP
 * to ERR (rdma_disconnect does) or destroys it, the held ACK goes out
 * first: the peer's WRITE completes successfully, not in retry exceeded
 * (perftest's rdma_cm runs end so).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define LEN 64u

static void write_then_teardown(bool destroy)
{
	uint8_t *s = malloc(LEN), *d = calloc(1, LEN);
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
	struct u4v_mr *ma, *mb;
	struct u4vt_pair p;
	struct ibv_wc wc;
	uint64_t end;

	u4vt_fill(s, LEN, 7);
	u4vt_pair_up(&p, destroy ? "ackhold_d" : "ackhold_e", IBV_QPT_RC, NULL,
		     NULL, 0);
	ma = rel_reg(p.a.pd, s, LEN, REL_ACC_ALL);
	mb = rel_reg(p.b.pd, d, LEN, REL_ACC_ALL);
	/* b's application polls and waits for nothing */
	assert_int_equal(u4v_poll_cq(p.b.cq, 1, &wc), 0);
	assert_int_equal(rel_post(p.qa, IBV_WR_RDMA_WRITE, 1, s, LEN,
				  u4v_mr_lkey(ma), (uintptr_t)d,
				  u4v_mr_rkey(mb)),
			 0);
	end = u4vt_now_ms() + 10000;
	while (memcmp(d, s, LEN) && u4vt_now_ms() < end)
		assert_int_equal(u4v_poll_cq(p.b.cq, 1, &wc), 0);
	assert_memory_equal(d, s, LEN);
	/* at once, as an application that got what it waited for */
	if (destroy) {
		assert_int_equal(u4v_destroy_qp(p.qb), 0);
		p.qb = NULL;
	} else {
		assert_int_equal(u4v_modify_qp(p.qb, &attr, IBV_QP_STATE), 0);
	}
	wc = rel_wait1(p.a.cq, 10000);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	u4vt_pair_down(&p);
	free(s);
	free(d);
}

static void test_held_ack_before_err(void **state)
{
	(void)state;
	write_then_teardown(false);
}

static void test_held_ack_before_destroy(void **state)
{
	(void)state;
	write_then_teardown(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_held_ack_before_err),
	    cmocka_unit_test(test_held_ack_before_destroy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
