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

static void run(const struct u4l_sim_config *cfg, const char *tag)
{
	const char *shm = u4vt_shm_name(tag);
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa[NQP], *qb[NQP];
	struct u4v_cq *cqa[NQP];
	struct u4v_mr *ma, *mb;
	uint8_t *src = malloc((size_t)NQP * SIZE);
	uint8_t *dst = calloc(NQP, (size_t)ITERS * SIZE / 64 + SIZE);
	long posted[NQP] = { 0 }, done[NQP] = { 0 };
	uint64_t deadline = u4vt_now_ms() + 60000;
	size_t dst_len = (size_t)NQP * ((size_t)ITERS * SIZE / 64 + SIZE);
	int q, live = NQP;

	assert_non_null(src);
	assert_non_null(dst);
	u4vt_cable_create(shm, cfg);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open(&b, shm, 1);
	u4vt_qp_opts_default(&o);
	o.max_send_wr = 64;
	u4vt_fill(src, (size_t)NQP * SIZE, 77);
	assert_int_equal(u4v_reg_mr(a.pd, src, (size_t)NQP * SIZE,
				    IBV_ACCESS_LOCAL_WRITE, &ma), 0);
	assert_int_equal(u4v_reg_mr(b.pd, dst, dst_len,
				    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE,
				    &mb), 0);
	for (q = 0; q < NQP; q++) {
		assert_int_equal(u4v_create_cq(a.ctx, 256, &cqa[q]), 0);
		struct u4vt_end ea = a;

		ea.cq = cqa[q];
		qa[q] = u4vt_qp_create(&ea, IBV_QPT_RC, &o);
		qb[q] = u4vt_qp_create(&b, IBV_QPT_RC, &o);
	}
	for (q = 0; q < NQP; q++) {
		u4vt_qp_connect(qa[q], IBV_QPT_RC, u4v_qp_num(qb[q]), &o);
		u4vt_qp_connect(qb[q], IBV_QPT_RC, u4v_qp_num(qa[q]), &o);
	}
	while (live) {
		assert_true(u4vt_now_ms() < deadline);
		for (q = 0; q < NQP; q++) {
			struct ibv_wc wc[16];
			int n, i;

			while (posted[q] < ITERS &&
			       posted[q] - done[q] < WINDOW) {
				/* each WR writes its own slice: 1/64 of SIZE */
				uint32_t len = SIZE / 64;
				struct ibv_sge sge = {
					(uintptr_t)src + (size_t)q * SIZE +
						(posted[q] % 64) * len,
					SIZE, u4v_mr_lkey(ma)
				};
				struct ibv_send_wr wr = { 0 }, *bad;

				sge.addr = (uintptr_t)src + (size_t)q * SIZE;
				wr.wr_id = ((uint64_t)q << 32) | posted[q];
				wr.sg_list = &sge;
				wr.num_sge = 1;
				wr.opcode = IBV_WR_RDMA_WRITE;
				wr.send_flags = IBV_SEND_SIGNALED;
				wr.wr.rdma.remote_addr =
					(uintptr_t)dst +
					(size_t)q * (dst_len / NQP) +
					(size_t)posted[q] * len;
				wr.wr.rdma.rkey = u4v_mr_rkey(mb);
				int ret = u4v_post_send(qa[q], &wr, &bad);

				assert_int_equal(ret, 0);
				posted[q]++;
			}
			n = u4v_poll_cq(cqa[q], 16, wc);
			assert_true(n >= 0);
			for (i = 0; i < n; i++) {
				if (wc[i].status)
					fail_msg("qp %d wr %ld: status %d", q,
						 (long)(wc[i].wr_id & 0xffffffff),
						 wc[i].status);
				/* exactly once, in order */
				assert_int_equal(wc[i].wr_id,
						 ((uint64_t)q << 32) | done[q]);
				done[q]++;
				if (done[q] == ITERS)
					live--;
			}
		}
	}
	for (q = 0; q < NQP; q++) {
		/* the last WR of each QP wrote SIZE bytes at its offset */
		size_t off = (size_t)q * (dst_len / NQP) +
			     (size_t)(ITERS - 1) * (SIZE / 64);

		assert_true(u4vt_sum(dst + off, SIZE) ==
			    u4vt_sum(src + (size_t)q * SIZE, SIZE));
		assert_int_equal(u4v_destroy_qp(qa[q]), 0);
		assert_int_equal(u4v_destroy_qp(qb[q]), 0);
		assert_int_equal(u4v_destroy_cq(cqa[q]), 0);
	}
	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	u4vt_end_close(&a);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
	free(src);
	free(dst);
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
