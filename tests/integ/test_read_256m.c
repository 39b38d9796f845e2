// SPDX-License-Identifier: MIT
/*
 * One RDMA READ of 256 MiB (max_msg_sz is 1 GiB; a quarter of it keeps the
 * test fast and the memory modest). Both buffers are fresh mappings that are
 * never memset: the source gets a sparse pattern (one sample per 1 MiB at a
 * varying offset, plus both ends), the rest of it reads as zero pages; the
 * destination is pre-marked at the same samples and checked there, in the
 * zero gaps next to them, and at the first and last bytes. Skipped when the
 * machine is short of memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

#define LEN (256ull << 20)
#define STEP (1ull << 20)
#define SAMPLE 512u

static size_t sample_off(uint64_t i)
{
	/* a varying offset inside each MiB, crossing frame boundaries */
	return (size_t)(i * STEP + (i * 4032 * 7 + i * 13) % (STEP - SAMPLE));
}

static void test_read_256_mib(void **state)
{
	const char *shm = u4vt_shm_name("r256");
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb;
	uint8_t *dst, *src;
	struct u4v_mr *md, *ms;
	struct ibv_wc wc;
	uint64_t i, t0;

	(void)state;
	if (u4vt_avail_mb() < 1024) {
		fprintf(stderr, "skipped: %llu MiB available\n",
			(unsigned long long)u4vt_avail_mb());
		skip();
	}
	dst = u4vt_map(LEN);
	src = u4vt_map(LEN);
	for (i = 0; i < LEN / STEP; i++) {
		u4vt_fill(src + sample_off(i), SAMPLE, i + 1);
		memset(dst + sample_off(i), 0xee, SAMPLE);
	}
	u4vt_fill(src, 64, 777);
	u4vt_fill(src + LEN - 64, 64, 778);
	u4vt_cable_create(shm, NULL);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open(&b, shm, 1);
	u4vt_qp_opts_default(&o);
	u4vt_qp_pair(&a, &b, IBV_QPT_RC, &o, &qa, &qb);
	md = u4vt_reg(&a, dst, LEN, IBV_ACCESS_LOCAL_WRITE);
	ms = u4vt_reg(&b, src, LEN, IBV_ACCESS_REMOTE_READ);
	t0 = u4vt_now_ms();
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_RDMA_READ, 256,
					 IBV_SEND_SIGNALED, (uintptr_t)dst,
					 (uint32_t)LEN, u4v_mr_lkey(md),
					 (uintptr_t)src, u4v_mr_rkey(ms), 0),
			 0);
	assert_int_equal(u4vt_poll(a.cq, &wc, 1, 120000), 1);
	fprintf(stderr, "256 MiB READ: %llu ms\n",
		(unsigned long long)(u4vt_now_ms() - t0));
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 256);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_true(wc.byte_len == LEN);
	for (i = 0; i < LEN / STEP; i++) {
		size_t off = sample_off(i);

		if (u4vt_sum(dst + off, SAMPLE) != u4vt_sum(src + off, SAMPLE))
			fail_msg("sample %llu at %zu differs",
				 (unsigned long long)i, off);
		/* the (mostly zero-page) bytes around it arrived as well */
		if (off >= 64)
			assert_memory_equal(dst + off - 64, src + off - 64, 64);
		if (off + SAMPLE + 64 <= LEN)
			assert_memory_equal(dst + off + SAMPLE,
					    src + off + SAMPLE, 64);
	}
	assert_memory_equal(dst, src, 64);
	assert_memory_equal(dst + LEN - 64, src + LEN - 64, 64);
	assert_int_equal(u4v_destroy_qp(qa), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	u4vt_end_close(&a);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
	u4vt_unmap(dst, LEN);
	u4vt_unmap(src, LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_256_mib),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
