// SPDX-License-Identifier: MIT
/*
 * Field-report defect 4: a tail fragment arriving before its missing head
 * was treated as a protocol error and executed. The cable swaps frames
 * (reorder holds a frame and delivers it after the next one), so the tail
 * of a two-frame message arrives before its head: it must be held and the
 * message delivered intact, every time, with the QP healthy afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u4vt_rel.h"

/* One two-frame SEND with every frame reordered: LAST arrives first. */
static void test_single_tail_first(void **state)
{
	const uint32_t len = 6000;
	struct u4l_sim_config cfg;
	struct u4l_counters c;
	struct u4vt_pair p;
	struct u4v_mr *ma, *mb;
	uint8_t *s = malloc(len), *d = calloc(1, len);
	struct ibv_wc wc;
	int i;

	(void)state;
	u4vt_cable_config(&cfg);
	cfg.faults[0].reorder = 1.0;
	u4vt_pair_up(&p, "tail1", IBV_QPT_RC, &cfg, NULL, 0);
	ma = rel_reg(p.a.pd, s, len, IBV_ACCESS_LOCAL_WRITE);
	mb = rel_reg(p.b.pd, d, len, REL_ACC_ALL);
	for (i = 0; i < 20; i++) {
		u4vt_fill(s, len, 100 + i);
		memset(d, 0, len);
		assert_int_equal(rel_post_recv(p.qb, i, d, len,
					       u4v_mr_lkey(mb)), 0);
		assert_int_equal(rel_post(p.qa, i & 1 ? IBV_WR_SEND :
						      IBV_WR_RDMA_WRITE_WITH_IMM,
					  i, s, len, u4v_mr_lkey(ma),
					  (uintptr_t)d, u4v_mr_rkey(mb)), 0);
		wc = rel_wait_both(p.a.cq, p.b.cq, 5000);
		assert_int_equal(wc.byte_len, len);
		assert_memory_equal(s, d, len);
	}
	rel_counters(p.shm, &c);
	rel_print_counters("tail1", &c);
	assert_true(c.fault_reorder >= 20);
	/* tails were held (the cable swaps some pairs across messages) */
	assert_true(c.ooo_frames >= 5 && c.seq_naks_sent >= 5);
	assert_int_equal(u4v_qp_state(p.qa), IBV_QPS_RTS);
	assert_int_equal(u4v_qp_state(p.qb), IBV_QPS_RTS);
	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	u4vt_pair_down(&p);
	free(s);
	free(d);
}

/* A stream of multi-frame messages, all opcodes, heavy reordering + loss. */
static void test_stream_reordered(void **state)
{
	const char *shm = u4vt_shm_name("tails");
	struct u4l_sim_config cfg;
	struct u4l_counters c;
	struct u4vt_end a, b;
	struct tr_cfg tc;
	struct tr_result r;

	(void)state;
	u4vt_cable_config(&cfg);
	cfg.seed = 44;
	cfg.faults[0].reorder = 0.3;
	cfg.faults[1].reorder = 0.3;
	cfg.faults[0].drop = 0.005;
	u4vt_cable_create(shm, &cfg);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open(&b, shm, 1);
	tr_cfg_default(&tc);
	tc.min_len = 4033; /* always two frames or more */
	tc.max_len = 16000;
	tc.messages = 1500;
	tc.seed = 44;
	if (tr_run(&tc, a.ctx, a.pd, b.ctx, b.pd, &r))
		fail_msg("%s", r.msg);
	rel_counters(shm, &c);
	rel_print_counters("tails", &c);
	fprintf(stderr, "[tails] %llu messages verified in %.2f s\n",
		(unsigned long long)r.verified, r.secs);
	assert_true(c.fault_reorder > 100 && c.ooo_frames > 100);
	u4vt_end_close(&a);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_tail_first),
		cmocka_unit_test(test_stream_reordered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
