// SPDX-License-Identifier: MIT
/*
 * Several RC QPs share one channel: every WR completes exactly once, in
 * order per QP, with the right payload at the target.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"

#define NQP 4
#define SIZE 65536u
#define ITERS 600
#define WINDOW 16

/* The QPs, their memory and how far each has come. */
struct multi {
	struct u4v_qp *qa[NQP], *qb[NQP];
	struct u4v_cq *cqa[NQP];
	struct u4v_mr *ma, *mb;
	uint8_t *src, *dst;
	size_t dst_len;
	long posted[NQP], done[NQP];
};

/*
 * QP q's WRITEs, up to WINDOW outstanding: each writes SIZE bytes from the
 * QP's source at the next 1/64 of SIZE of its target slice.
 */
static void multi_post(struct multi *m, int q)
{
	const uint32_t len = SIZE / 64;

	while (m->posted[q] < ITERS && m->posted[q] - m->done[q] < WINDOW) {
		uint64_t remote = (uintptr_t)m->dst +
				  (size_t)q * (m->dst_len / NQP) +
				  (size_t)m->posted[q] * len;

		assert_int_equal(
		    u4vt_post_send1(
			m->qa[q], IBV_WR_RDMA_WRITE,
			((uint64_t)q << 32) | m->posted[q], IBV_SEND_SIGNALED,
			(uintptr_t)m->src + (size_t)q * SIZE, SIZE,
			u4v_mr_lkey(m->ma), remote, u4v_mr_rkey(m->mb), 0),
		    0);
		m->posted[q]++;
	}
}

/* QP q's completions: each exactly once, in order. How many QPs finished. */
static int multi_poll(struct multi *m, int q)
{
	struct ibv_wc wc[16];
	int n, i, finished = 0;

	n = u4v_poll_cq(m->cqa[q], 16, wc);
	assert_true(n >= 0);
	for (i = 0; i < n; i++) {
		if (wc[i].status)
			fail_msg("qp %d wr %ld: status %d", q,
				 (long)(wc[i].wr_id & 0xffffffff),
				 wc[i].status);
		assert_int_equal(wc[i].wr_id, ((uint64_t)q << 32) | m->done[q]);
		m->done[q]++;
		if (m->done[q] == ITERS)
			finished++;
	}
	return finished;
}

static void run(const struct u4l_sim_config *cfg, const char *tag)
{
	const char *shm = u4vt_shm_name(tag);
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct multi m = {0};
	uint64_t deadline = u4vt_now_ms() + 60000;
	int q, live = NQP;

	m.src = malloc((size_t)NQP * SIZE);
	m.dst = calloc(NQP, (size_t)ITERS * SIZE / 64 + SIZE);
	m.dst_len = (size_t)NQP * ((size_t)ITERS * SIZE / 64 + SIZE);
	assert_non_null(m.src);
	assert_non_null(m.dst);
	u4vt_cable_create(shm, cfg);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open(&b, shm, 1);
	u4vt_qp_opts_default(&o);
	o.max_send_wr = 64;
	u4vt_fill(m.src, (size_t)NQP * SIZE, 77);
	m.ma = u4vt_reg(&a, m.src, (size_t)NQP * SIZE, IBV_ACCESS_LOCAL_WRITE);
	m.mb = u4vt_reg(&b, m.dst, m.dst_len,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	u4vt_qp_pairs(&a, &b, NQP, 256, &o, m.qa, m.qb, m.cqa, NULL);
	while (live) {
		assert_true(u4vt_now_ms() < deadline);
		for (q = 0; q < NQP; q++) {
			multi_post(&m, q);
			live -= multi_poll(&m, q);
		}
	}
	for (q = 0; q < NQP; q++) {
		/* the last WR of each QP wrote SIZE bytes at its offset */
		size_t off = (size_t)q * (m.dst_len / NQP) +
			     (size_t)(ITERS - 1) * (SIZE / 64);

		assert_true(u4vt_sum(m.dst + off, SIZE) ==
			    u4vt_sum(m.src + (size_t)q * SIZE, SIZE));
	}
	u4vt_qp_pairs_down(NQP, m.qa, m.qb, m.cqa, NULL);
	assert_int_equal(u4v_dereg_mr(m.ma), 0);
	assert_int_equal(u4v_dereg_mr(m.mb), 0);
	u4vt_end_close(&a);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
	free(m.src);
	free(m.dst);
}

static void test_four_qps_unthrottled(void **state)
{
	(void)state;
	run(NULL, "mq0");
}

static void test_four_qps_wire(void **state)
{
	struct u4l_sim_config cfg;

	(void)state;
	u4l_sim_config_default(&cfg);
	run(&cfg, "mq20");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_four_qps_unthrottled),
		cmocka_unit_test(test_four_qps_wire),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
