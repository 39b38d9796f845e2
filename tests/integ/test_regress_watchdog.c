// SPDX-License-Identifier: MIT
/*
 * Field-report defect 3: a receiver-side watchdog errored the connection at
 * 5.00 s while the sender's retransmit was due at 5.09 s, and its error-ACK
 * killed the sender's QP too. Here the path goes dark (requests lost, or
 * only ACKs lost) for several retransmit periods, or is slow and lossy: the
 * transfer recovers, no completion with an error appears on either side,
 * both QPs stay in RTS and carry traffic both ways afterwards.
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

#define LEN (256u * 1024)

struct wd {
	struct u4vt_pair p;
	struct u4l_sim_config cfg;
	struct u4v_mr *ma, *mb;
	uint8_t *a, *b;
};

static void wd_up(struct wd *w, const char *tag, uint8_t timeout)
{
	struct u4vt_qp_opts o;

	u4vt_qp_opts_default(&o);
	o.timeout = timeout;
	o.retry_cnt = 7;
	u4vt_pair_up(&w->p, tag, IBV_QPT_RC, &w->cfg, &o, 0);
	w->a = malloc(2 * LEN);
	w->b = malloc(2 * LEN);
	w->ma = rel_reg(w->p.a.pd, w->a, 2 * LEN, REL_ACC_ALL);
	w->mb = rel_reg(w->p.b.pd, w->b, 2 * LEN, REL_ACC_ALL);
}

static void wd_down(struct wd *w)
{
	assert_int_equal(u4v_dereg_mr(w->ma), 0);
	assert_int_equal(u4v_dereg_mr(w->mb), 0);
	u4vt_pair_down(&w->p);
	free(w->a);
	free(w->b);
}

/* One SEND a->b with payload check; both sides must report success. */
static void wd_send(struct wd *w, struct u4v_qp *from, struct u4v_qp *to,
		    uint8_t *src, struct u4v_mr *ms, uint8_t *dst,
		    struct u4v_mr *md, struct u4v_cq *scq, struct u4v_cq *rcq,
		    uint64_t seed, int bound_ms)
{
	struct ibv_wc wc;

	u4vt_fill(src, LEN, seed);
	memset(dst, 0, LEN);
	assert_int_equal(rel_post_recv(to, seed, dst, LEN, u4v_mr_lkey(md)),
			 0);
	assert_int_equal(rel_post(from, IBV_WR_SEND, seed, src, LEN,
				  u4v_mr_lkey(ms), 0, 0), 0);
	wc = rel_wait1(scq, bound_ms);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	wc = rel_wait1(rcq, bound_ms);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, LEN);
	assert_memory_equal(src, dst, LEN);
}

static void wd_both_ways(struct wd *w, uint64_t seed)
{
	wd_send(w, w->p.qa, w->p.qb, w->a, w->ma, w->b, w->mb, w->p.a.cq,
		w->p.b.cq, seed, 10000);
	wd_send(w, w->p.qb, w->p.qa, w->b + LEN, w->mb, w->a + LEN, w->ma,
		w->p.b.cq, w->p.a.cq, seed + 1, 10000);
	assert_int_equal(u4v_qp_state(w->p.qa), IBV_QPS_RTS);
	assert_int_equal(u4v_qp_state(w->p.qb), IBV_QPS_RTS);
}

/*
 * A dark period of `dark_ms` in direction dir (drop, or ACK loss only) while
 * a SEND and an RDMA WRITE are outstanding: they complete after it.
 */
static void dark(const char *tag, int dir, int ctrl_only, int dark_ms)
{
	struct u4l_counters c;
	struct ibv_wc wc;
	struct wd w;
	uint64_t t0;
	int i;

	memset(&w, 0, sizeof(w));
	u4vt_cable_config(&w.cfg);
	/* 4.096 us << 16 = 268 ms per retransmit, 7 retries: 2.1 s budget */
	wd_up(&w, tag, 16);
	wd_both_ways(&w, 1);
	if (ctrl_only)
		w.cfg.faults[dir].drop_ctrl = 1.0;
	else
		w.cfg.faults[dir].drop = 1.0;
	assert_int_equal(u4l_sim_reconfigure(w.p.shm, &w.cfg), 0);
	u4vt_fill(w.a, LEN, 5);
	assert_int_equal(rel_post_recv(w.p.qb, 5, w.b, LEN, u4v_mr_lkey(w.mb)),
			 0);
	assert_int_equal(rel_post(w.p.qa, IBV_WR_SEND, 5, w.a, LEN,
				  u4v_mr_lkey(w.ma), 0, 0), 0);
	assert_int_equal(rel_post(w.p.qa, IBV_WR_RDMA_WRITE, 6, w.a, LEN,
				  u4v_mr_lkey(w.ma), (uintptr_t)w.b + LEN,
				  u4v_mr_rkey(w.mb)), 0);
	t0 = u4vt_now_ms();
	/* both sides poll through the dark period: nothing may complete */
	while (u4vt_now_ms() - t0 < (uint64_t)dark_ms) {
		if (u4v_poll_cq(w.p.a.cq, 1, &wc) == 1 ||
		    (ctrl_only ? 0 : u4v_poll_cq(w.p.b.cq, 1, &wc) == 1))
			fail_msg("%s: completion (status %d) during the dark "
				 "period", tag, wc.status);
		if (ctrl_only && u4v_poll_cq(w.p.b.cq, 1, &wc) == 1) {
			/* the responder got the SEND: fine, must be good */
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, 5);
		}
		assert_int_equal(u4v_qp_state(w.p.qb), IBV_QPS_RTS);
		usleep(1000);
	}
	w.cfg.faults[dir].drop = 0;
	w.cfg.faults[dir].drop_ctrl = 0;
	assert_int_equal(u4l_sim_reconfigure(w.p.shm, &w.cfg), 0);
	for (i = 0; i < 2; i++) {
		wc = rel_wait1(w.p.a.cq, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 5 + i);
	}
	if (!ctrl_only) {
		wc = rel_wait1(w.p.b.cq, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	assert_memory_equal(w.a, w.b, LEN);
	assert_memory_equal(w.a, w.b + LEN, LEN);
	fprintf(stderr, "[%s] recovered %llu ms after a %d ms dark period\n",
		tag, (unsigned long long)(u4vt_now_ms() - t0 - dark_ms),
		dark_ms);
	wd_both_ways(&w, 7);
	rel_counters(w.p.shm, &c);
	rel_print_counters(tag, &c);
	assert_true(c.retransmits >= 2);
	if (ctrl_only)
		assert_true(c.dup_frames_rcvd > 0);
	wd_down(&w);
}

static void test_requests_lost_1s(void **state)
{
	(void)state;
	dark("wdreq", 0, 0, 1200);
}

static void test_acks_lost_1s(void **state)
{
	(void)state;
	dark("wdack", 1, 1, 1200);
}

/* A slow (50 Mb/s, 2 ms) and lossy (1 %) path: a 4 MiB write gets there. */
static void test_slow_lossy_path(void **state)
{
	const size_t len = 4u << 20;
	struct u4l_counters c;
	struct ibv_wc wc;
	struct u4v_mr *ms, *md;
	uint8_t *s = malloc(len), *d = calloc(1, len);
	struct wd w;
	uint64_t t0;

	(void)state;
	memset(&w, 0, sizeof(w));
	u4vt_cable_config(&w.cfg);
	w.cfg.rate_bps = 50000000;
	w.cfg.latency_ns = 2000000;
	w.cfg.seed = 4;
	w.cfg.faults[0].drop = 0.01;
	w.cfg.faults[1].drop = 0.01;
	wd_up(&w, "wdslow", 14); /* 67 ms: shorter than the pipe drains */
	ms = rel_reg(w.p.a.pd, s, len, IBV_ACCESS_LOCAL_WRITE);
	md = rel_reg(w.p.b.pd, d, len, REL_ACC_ALL);
	u4vt_fill(s, len, 8);
	t0 = u4vt_now_ms();
	assert_int_equal(rel_post(w.p.qa, IBV_WR_RDMA_WRITE, 1, s, len,
				  u4v_mr_lkey(ms), (uintptr_t)d,
				  u4v_mr_rkey(md)), 0);
	wc = rel_wait1(w.p.a.cq, 30000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(s, d, len);
	fprintf(stderr, "[wdslow] 4 MiB over 50 Mb/s + 1 %% loss in %llu ms\n",
		(unsigned long long)(u4vt_now_ms() - t0));
	rel_counters(w.p.shm, &c);
	rel_print_counters("wdslow", &c);
	assert_true(c.fault_drop > 0 && c.retransmits > 0);
	assert_int_equal(u4v_qp_state(w.p.qb), IBV_QPS_RTS);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	w.cfg.faults[0].drop = w.cfg.faults[1].drop = 0;
	w.cfg.rate_bps = 0;
	w.cfg.latency_ns = 0;
	assert_int_equal(u4l_sim_reconfigure(w.p.shm, &w.cfg), 0);
	wd_both_ways(&w, 9);
	wd_down(&w);
	free(s);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests_lost_1s),
		cmocka_unit_test(test_acks_lost_1s),
		cmocka_unit_test(test_slow_lossy_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
