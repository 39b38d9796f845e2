// SPDX-License-Identifier: MIT
/*
 * Field-report defect 5: the device advertised a max_msg_sz twice what it
 * could register. Here the advertised U4V_MAX_MSG_SZ (1 GiB) is moved for
 * real: an RC SEND and an RDMA WRITE of exactly 1 GiB from a sparse
 * (MAP_NORESERVE) source, checked on sampled pages; READ of 1 GiB back;
 * one byte more is refused at post time. RLIMIT_MEMLOCK plays no part.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define GIB ((size_t)U4V_MAX_MSG_SZ)
#define PG 4096u
#define STRIDE 257u /* sampled pages: every 257th, and the last */

static void stamp(uint8_t *buf, size_t len, uint64_t seed)
{
	size_t pg;

	for (pg = 0; pg * PG < len; pg += STRIDE)
		u4vt_fill(buf + pg * PG, PG, seed + pg);
	u4vt_fill(buf + len - PG, PG, seed + 1);
}

/* Sampled pages carry the stamp; pages in between are as the source's. */
static void check(const uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t pg;

	for (pg = 0; pg * PG < len; pg += STRIDE / 3) {
		if (u4vt_sum(dst + pg * PG, PG) != u4vt_sum(src + pg * PG, PG))
			fail_msg("page %zu of 1 GiB differs", pg);
	}
	assert_true(u4vt_sum(dst + len - PG, PG) ==
		    u4vt_sum(src + len - PG, PG));
}

static void test_max_msg_1gib(void **state)
{
	struct ibv_port_attr pa;
	struct u4l_counters c;
	struct u4vt_pair p;
	struct u4v_mr *ms, *md;
	struct ibv_wc wc;
	uint8_t *src = u4vt_map_anon(GIB + PG), *dst = u4vt_map_anon(GIB + PG);
	uint64_t t0;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	u4vt_pair_up(&p, "max", IBV_QPT_RC, NULL, NULL, 0);
	assert_int_equal(u4v_query_port(p.a.ctx, 1, &pa), 0);
	assert_int_equal(pa.max_msg_sz, U4V_MAX_MSG_SZ);
	stamp(src, GIB, 77);
	ms = rel_reg(p.a.pd, src, GIB + PG, REL_ACC_ALL);
	md = rel_reg(p.b.pd, dst, GIB + PG, REL_ACC_ALL);

	/* SEND of exactly max_msg_sz */
	t0 = u4vt_now_ms();
	assert_int_equal(rel_post_recv(p.qb, 1, dst, GIB + PG,
				       u4v_mr_lkey(md)), 0);
	assert_int_equal(rel_post(p.qa, IBV_WR_SEND, 1, src, GIB,
				  u4v_mr_lkey(ms), 0, 0), 0);
	wc = rel_wait_both(p.a.cq, p.b.cq, 50000);
	assert_int_equal(wc.byte_len, GIB);
	check(dst, src, GIB);
	fprintf(stderr, "[max] 1 GiB SEND in %llu ms\n",
		(unsigned long long)(u4vt_now_ms() - t0));

	/* RDMA WRITE of exactly max_msg_sz, shifted by one page */
	t0 = u4vt_now_ms();
	assert_int_equal(rel_post(p.qa, IBV_WR_RDMA_WRITE, 2, src, GIB,
				  u4v_mr_lkey(ms), (uintptr_t)dst + PG,
				  u4v_mr_rkey(md)), 0);
	wc = rel_wait1(p.a.cq, 50000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	check(dst + PG, src, GIB);
	fprintf(stderr, "[max] 1 GiB RDMA WRITE in %llu ms\n",
		(unsigned long long)(u4vt_now_ms() - t0));

	/* one byte more: refused, and the QP still works */
	assert_int_equal(rel_post(p.qa, IBV_WR_RDMA_WRITE, 3, src, GIB + 1,
				  u4v_mr_lkey(ms), (uintptr_t)dst,
				  u4v_mr_rkey(md)), EINVAL);
	assert_int_equal(rel_post(p.qa, IBV_WR_RDMA_WRITE, 4, src, 64,
				  u4v_mr_lkey(ms), (uintptr_t)dst,
				  u4v_mr_rkey(md)), 0);
	wc = rel_wait1(p.a.cq, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 4);

	rel_counters(p.shm, &c);
	rel_print_counters("max", &c);
	assert_true(c.rx_bytes >= 2 * GIB);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	u4vt_pair_down(&p);
	u4vt_unmap(src, GIB + PG);
	u4vt_unmap(dst, GIB + PG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_max_msg_1gib),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
