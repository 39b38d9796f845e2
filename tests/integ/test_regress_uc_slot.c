// SPDX-License-Identifier: MIT
/*
 * Field-report defect 2: every UC send leaked a send-queue slot, so a
 * connection died at exactly max_send_wr = 1. Thousands of UC sends through
 * a 1-deep send queue, signaled and unsignaled, SEND and RDMA WRITE with
 * immediate: every one completes (or retires) and arrives intact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define N 3000
#define RQ 64
#define LEN 5000u /* two frames */

/* A UC pair with a 1-deep send queue, and how far its run has come. */
struct ucs {
	struct u4vt_pair p;
	struct u4v_mr *ma, *mb;
	uint8_t *src, *dst;
	enum ibv_wr_opcode op;
	int signaled;
	uint32_t sent, got, enomem;
};

/* Message u->sent, unless the one slot is still busy (ENOMEM). */
static void ucs_send(struct ucs *u)
{
	struct ibv_wc wc;
	int ret;

	tr_make(u->src, LEN, 0, u->sent, u->sent, 2);
	ret = u4vt_post_send1(u->p.qa, u->op, u->sent,
			      u->signaled ? IBV_SEND_SIGNALED : 0,
			      (uintptr_t)u->src, LEN, u4v_mr_lkey(u->ma),
			      (uintptr_t)u->dst + (size_t)(u->sent % RQ) * LEN,
			      u4v_mr_rkey(u->mb), u->sent);
	if (ret == ENOMEM) {
		/* the one slot is busy: only until progress */
		u->enomem++;
		assert_true(u->enomem < 1000000);
		return;
	}
	assert_int_equal(ret, 0);
	u->sent++;
	if (u->signaled) {
		wc = rel_wait1(u->p.a.cq, 2000);
		assert_int_equal(wc.status, 0);
		assert_int_equal(wc.wr_id, u->sent - 1);
	}
}

/* One arrival, checked in order, its receive posted again; or none. */
static bool ucs_receive(struct ucs *u)
{
	struct ibv_wc wc;
	struct tr_hdr h;
	uint8_t *m;

	if (u4v_poll_cq(u->p.b.cq, 1, &wc) != 1)
		return false;
	m = u->dst +
	    (size_t)(u->op == IBV_WR_SEND ? wc.wr_id : wc.imm_data % RQ) * LEN;
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(tr_check(m, wc.byte_len, 0, &h), 0);
	assert_int_equal(h.rcv_idx, u->got);
	u->got++;
	assert_int_equal(rel_post_recv(u->p.qb, wc.wr_id,
				       u->dst + (size_t)wc.wr_id * LEN, LEN,
				       u4v_mr_lkey(u->mb)),
			 0);
	return true;
}

static void run(int signaled, enum ibv_wr_opcode op, const char *tag)
{
	struct u4vt_qp_opts o;
	struct ucs u = {.op = op, .signaled = signaled};
	uint64_t deadline = u4vt_now_ms() + 30000;
	struct ibv_wc wc;
	uint32_t i;

	u.src = malloc(LEN);
	u.dst = malloc((size_t)RQ * LEN);
	u4vt_qp_opts_default(&o);
	o.max_send_wr = 1;
	o.max_recv_wr = RQ;
	u4vt_pair_up(&u.p, tag, IBV_QPT_UC, NULL, &o, 0);
	u.ma = rel_reg(u.p.a.pd, u.src, LEN, IBV_ACCESS_LOCAL_WRITE);
	u.mb = rel_reg(u.p.b.pd, u.dst, (size_t)RQ * LEN,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	for (i = 0; i < RQ; i++)
		assert_int_equal(rel_post_recv(u.p.qb, i,
					       u.dst + (size_t)i * LEN, LEN,
					       u4v_mr_lkey(u.mb)),
				 0);
	while (u.got < N) {
		assert_true(u4vt_now_ms() < deadline);
		if (u.sent < N && u.sent - u.got < RQ / 2)
			ucs_send(&u);
		if (!ucs_receive(&u) && !signaled)
			u4v_poll_cq(u.p.a.cq, 1,
				    &wc); /* progress, expect none */
	}
	fprintf(stderr,
		"[%s] %u UC messages through a 1-deep SQ (%u ENOMEM "
		"retries)\n",
		tag, u.got, u.enomem);
	/* the slot is free at the end: one more post succeeds at once */
	assert_int_equal(rel_post(u.p.qa, op, 999999, u.src, LEN,
				  u4v_mr_lkey(u.ma), (uintptr_t)u.dst,
				  u4v_mr_rkey(u.mb)),
			 0);
	assert_int_equal(u4v_qp_state(u.p.qa), IBV_QPS_RTS);
	assert_int_equal(u4v_dereg_mr(u.ma), 0);
	assert_int_equal(u4v_dereg_mr(u.mb), 0);
	u4vt_pair_down(&u.p);
	free(u.src);
	free(u.dst);
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
