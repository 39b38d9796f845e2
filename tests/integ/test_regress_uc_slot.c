// SPDX-License-Identifier: MIT
/*
 * Field-report defect 2: every UC send leaked a send-queue slot, so a
 * connection died at exactly max_send_wr = 1. Thousands of UC sends through
 * a 1-deep send queue, signaled and unsignaled, SEND and RDMA WRITE with
 * immediate: every one completes (or retires) and arrives intact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define N 3000
#define RQ 64
#define LEN 5000u /* two frames */

static void run(int signaled, enum ibv_wr_opcode op, const char *tag)
{
	struct u4vt_qp_opts o;
	struct rel_pair p;
	struct u4v_mr *ma, *mb;
	uint8_t *src = malloc(LEN), *dst = malloc((size_t)RQ * LEN);
	uint32_t sent = 0, got = 0, enomem = 0, i;
	uint64_t deadline = u4vt_now_ms() + 30000;

	u4vt_qp_opts_default(&o);
	o.max_send_wr = 1;
	o.max_recv_wr = RQ;
	rel_pair_up(&p, tag, IBV_QPT_UC, NULL, &o, 0);
	ma = rel_reg(p.a.pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	mb = rel_reg(p.b.pd, dst, (size_t)RQ * LEN,
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	for (i = 0; i < RQ; i++)
		assert_int_equal(rel_post_recv(p.qb, i, dst + (size_t)i * LEN,
					       LEN, u4v_mr_lkey(mb)), 0);
	while (got < N) {
		struct ibv_wc wc;

		assert_true(u4vt_now_ms() < deadline);
		if (sent < N && sent - got < RQ / 2) {
			struct ibv_sge s = { (uintptr_t)src, LEN,
					     u4v_mr_lkey(ma) };
			struct ibv_send_wr wr = { 0 }, *bad;
			int ret;

			tr_make(src, LEN, 0, sent, sent, 2);
			wr.wr_id = sent;
			wr.sg_list = &s;
			wr.num_sge = 1;
			wr.opcode = op;
			wr.imm_data = sent;
			wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
			wr.wr.rdma.remote_addr =
				(uintptr_t)dst + (size_t)(sent % RQ) * LEN;
			wr.wr.rdma.rkey = u4v_mr_rkey(mb);
			ret = u4v_post_send(p.qa, &wr, &bad);
			if (ret == ENOMEM) {
				/* the one slot is busy: only until progress */
				enomem++;
				assert_true(enomem < 1000000);
			} else {
				assert_int_equal(ret, 0);
				sent++;
				if (signaled) {
					wc = rel_wait1(p.a.cq, 2000);
					assert_int_equal(wc.status, 0);
					assert_int_equal(wc.wr_id, sent - 1);
				}
			}
		}
		if (u4v_poll_cq(p.b.cq, 1, &wc) == 1) {
			struct tr_hdr h;
			uint8_t *m = op == IBV_WR_SEND ?
					     dst + (size_t)wc.wr_id * LEN :
					     dst + (size_t)(wc.imm_data % RQ) *
							   LEN;

			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(tr_check(m, wc.byte_len, 0, &h), 0);
			assert_int_equal(h.rcv_idx, got);
			got++;
			assert_int_equal(rel_post_recv(p.qb, wc.wr_id,
						       dst + (size_t)wc.wr_id *
								     LEN,
						       LEN, u4v_mr_lkey(mb)),
					 0);
		} else if (!signaled) {
			u4v_poll_cq(p.a.cq, 1, &wc); /* progress, expect none */
		}
	}
	fprintf(stderr, "[%s] %u UC messages through a 1-deep SQ (%u ENOMEM "
		"retries)\n", tag, got, enomem);
	/* the slot is free at the end: one more post succeeds at once */
	assert_int_equal(rel_post(p.qa, op, 999999, src, LEN, u4v_mr_lkey(ma),
				  (uintptr_t)dst, u4v_mr_rkey(mb)), 0);
	assert_int_equal(u4v_qp_state(p.qa), IBV_QPS_RTS);
	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	rel_pair_down(&p);
	free(src);
	free(dst);
}

static void test_uc_send_signaled(void **state)
{
	(void)state;
	run(1, IBV_WR_SEND, "ucs1");
}

static void test_uc_send_unsignaled(void **state)
{
	(void)state;
	run(0, IBV_WR_SEND, "ucs0");
}

static void test_uc_write_imm_unsignaled(void **state)
{
	(void)state;
	run(0, IBV_WR_RDMA_WRITE_WITH_IMM, "ucw0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uc_send_signaled),
		cmocka_unit_test(test_uc_send_unsignaled),
		cmocka_unit_test(test_uc_write_imm_unsignaled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
