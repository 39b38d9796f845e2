// SPDX-License-Identifier: MIT
/*
 * Teardown, deterministic half: the target deregisters an MR (and frees the
 * memory, as an application may once ibv_dereg_mr returned) in the middle
 * of a multi-frame RDMA WRITE into it, or while an RDMA READ from it is
 * being answered. After deregistration the engine must not touch that
 * memory: ASan reports any write or read of it as heap-use-after-free. The
 * requester must end with an error completion (remote access), not hang.
 *
 * The target has no progress thread: the test drives it one pass at a time
 * (u4v_ctx_progress takes at most 64 frames per channel per pass).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "u4vt_rel.h"

/* 600 frames: more than one progress pass and one TX ring (256) take */
#define LEN (600u * 4032u)

static void mid_flight(enum ibv_wr_opcode op, const char *tag)
{
	struct u4vt_qp_opts o;
	struct u4vt_pair p;
	struct u4v_mr *ma, *mb;
	uint8_t *a = malloc(LEN), *b = malloc(LEN);
	struct ibv_wc wc;
	int n = 0;

	u4vt_qp_opts_default(&o);
	/*
	 * 67 ms, 2 retries: the requester waits out the test's first pass at
	 * the target even on a busy host (4 ms timed a READ out before the
	 * test could look for its first responses)
	 */
	o.timeout = 14;
	o.retry_cnt = 2;
	u4vt_pair_up(&p, tag, IBV_QPT_RC, NULL, &o, 1);
	ma = rel_reg(p.a.pd, a, LEN, REL_ACC_ALL);
	mb = rel_reg(p.b.pd, b, LEN, REL_ACC_ALL);
	u4vt_fill(a, LEN, 1);
	u4vt_fill(b, LEN, 2);
	assert_int_equal(rel_post(p.qa, op, 1, a, LEN, u4v_mr_lkey(ma),
				  (uintptr_t)b, u4v_mr_rkey(mb)), 0);
	/* one pass at the target: the first frames are executed */
	u4v_ctx_progress(p.b.ctx);
	if (op == IBV_WR_RDMA_READ) /* requester takes some responses */
		assert_int_equal(u4v_poll_cq(p.a.cq, 1, &wc), 0);
	/* the application deregisters and frees the buffer */
	assert_int_equal(u4v_dereg_mr(mb), 0);
	free(b);
	/* the rest of the message arrives: it must go nowhere */
	while (n < 200) {
		u4v_ctx_progress(p.b.ctx);
		if (u4v_poll_cq(p.a.cq, 1, &wc) == 1)
			break;
		n++;
		usleep(5000);
	}
	assert_true(n < 200);
	fprintf(stderr, "[%s] requester status %d\n", tag, wc.status);
	assert_int_not_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(u4v_dereg_mr(ma), 0);
	u4vt_pair_down(&p);
	free(a);
}

static void test_dereg_during_write(void **state)
{
	(void)state;
	mid_flight(IBV_WR_RDMA_WRITE, "mrw");
}

static void test_dereg_during_read(void **state)
{
	(void)state;
	mid_flight(IBV_WR_RDMA_READ, "mrr");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dereg_during_write),
		cmocka_unit_test(test_dereg_during_read),
	};

	/* ASan stops at the first report: U4VT_FILTER=test_dereg_during_read */
	if (getenv("U4VT_FILTER"))
		cmocka_set_test_filter(getenv("U4VT_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
