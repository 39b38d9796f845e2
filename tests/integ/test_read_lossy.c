// SPDX-License-Identifier: MIT
/*
 * RC READ over cables that lose frames at random (seeded, so each run
 * loses the same ones):
 * - one READ of max_msg_sz (1 GiB) at drop 1e-3 completes with every byte
 *   equal to the source, and the responder sends little more than the READ
 *   itself: each lost response costs about one resend, not the rest;
 * - a long run of 64 KiB READs at drop 1e-2, data verified;
 * - every opcode mixed with messages up to 256 KiB at drop 1e-2.
 * The retry budget (retry_cnt 7) must suffice throughout: forward progress
 * gives it back, so only a peer that stopped answering exhausts it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define GIB (1ull << 30)

static void lossy_cfg(struct u4l_sim_config *cfg, double drop, uint64_t seed)
{
	u4vt_cable_config(cfg);
	cfg->seed = seed;
	cfg->faults[0].drop = drop;
	cfg->faults[1].drop = drop;
}

static void test_read_1gib_drop_1e3(void **state)
{
	const uint32_t nframes = (uint32_t)((GIB + 4031) / 4032);
	struct u4l_sim_config cfg;
	struct u4l_counters c[2];
	struct u4vt_pair p;
	struct u4v_mr *ms, *md;
	uint8_t *src, *dst;
	struct ibv_wc wc;
	uint64_t t0;

	(void)state;
	if (u4vt_avail_mb() < 3072) {
		fprintf(stderr, "skipped: %llu MiB available\n",
			(unsigned long long)u4vt_avail_mb());
		skip();
	}
	src = u4vt_map(GIB);
	dst = u4vt_map(GIB);
	u4vt_fill(src, GIB, 1);
	memset(dst, 0xee, GIB);
	lossy_cfg(&cfg, 1e-3, 1001);
	u4vt_pair_up(&p, "rd1g", IBV_QPT_RC, &cfg, NULL, 0);
	ms = rel_reg(p.b.pd, src, GIB, IBV_ACCESS_REMOTE_READ);
	md = rel_reg(p.a.pd, dst, GIB, IBV_ACCESS_LOCAL_WRITE);
	t0 = u4vt_now_ms();
	assert_int_equal(rel_post(p.qa, IBV_WR_RDMA_READ, 7, dst,
				  (uint32_t)GIB, u4v_mr_lkey(md),
				  (uintptr_t)src, u4v_mr_rkey(ms)),
			 0);
	wc = rel_wait1(p.a.cq, 240000);
	assert_int_equal(u4l_sim_stat(p.shm, c), 0);
	fprintf(stderr, "  1 GiB READ: %llu ms, status %d\n",
		(unsigned long long)(u4vt_now_ms() - t0), wc.status);
	rel_print_counters("requester", &c[0]);
	rel_print_counters("responder", &c[1]);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_true(wc.byte_len == GIB);
	assert_true(memcmp(dst, src, GIB) == 0);
	assert_true(c[0].fault_drop > 100); /* ~1 in 1000 of 266306 */
	/* about one resend per loss, not a restart */
	assert_true(c[1].tx_frames < nframes + nframes / 50);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	u4vt_pair_down(&p);
	u4vt_unmap(src, GIB);
	u4vt_unmap(dst, GIB);
}

static void run_traffic(const char *tag, double drop, uint64_t seed,
			unsigned int ops, uint32_t min_len, uint32_t max_len,
			int nqp, uint64_t messages)
{
	const char *shm = u4vt_shm_name(tag);
	struct u4l_sim_config cfg;
	struct u4l_counters c;
	struct u4vt_end a, b;
	struct tr_cfg tc;
	struct tr_result r;
	int ret;

	lossy_cfg(&cfg, drop, seed);
	u4vt_cable_create(shm, &cfg);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open(&b, shm, 1);
	tr_cfg_default(&tc);
	tc.nqp = nqp;
	tc.messages = messages;
	tc.min_len = min_len;
	tc.max_len = max_len;
	tc.ops = ops;
	tc.window = 16;
	tc.seed = seed;
	tc.timeout = 14; /* 67 ms, as perftest */
	tc.retry_cnt = 7;
	tc.timeout_ms = 120000;
	ret = tr_run(&tc, a.ctx, a.pd, b.ctx, b.pd, &r);
	rel_counters(shm, &c);
	fprintf(stderr,
		"[%s] %s: %llu msgs, %llu verified, %.1f MiB, %.2f s\n", tag,
		ret ? "FAIL" : "ok", (unsigned long long)r.completed,
		(unsigned long long)r.verified, r.bytes / 1048576.0, r.secs);
	rel_print_counters(tag, &c);
	if (ret)
		fail_msg("%s: %s", tag, r.msg);
	assert_int_equal(r.completed, messages);
	assert_true(c.fault_drop > 0);
	assert_true(c.retransmits > 0);
	u4vt_end_close(&a);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
}

static void test_read_64k_run_drop_1e2(void **state)
{
	(void)state;
	run_traffic("rd64k", 1e-2, 1002, TR_READ, 65536, 65536, 1, 3000);
}

static void test_all_ops_256k_drop_1e2(void **state)
{
	(void)state;
	run_traffic("mix256k", 1e-2, 1003, TR_ALL, TR_HDR, 262144, 2, 1500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_64k_run_drop_1e2),
		cmocka_unit_test(test_all_ops_256k_drop_1e2),
		cmocka_unit_test(test_read_1gib_drop_1e3),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
