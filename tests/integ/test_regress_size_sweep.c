// SPDX-License-Identifier: MIT
/*
 * The field report's "cliff that was not there": a one-in-five failure above
 * 1.5 MiB read as a limit. Sweep message sizes (powers of 4 and odd sizes
 * around frame and MiB boundaries), five repeats at every point, SEND and
 * RDMA WRITE, and require 100 %.
 *
 * CI runs up to 64 MiB. The full sweep, 1 B ... 1 GiB:
 *   U4V_SWEEP_MAX=1073741824 ./tests/test_regress_size_sweep
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define REPEATS 5

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* Powers of 4 up to max and the odd sizes not above it, sorted; how many. */
static size_t sweep_sizes(size_t *sizes, size_t max)
{
	static const size_t odd[] = {
		3, 17, 4031, 4032, 4033, 8063, 8064, 8065, 65537,
		(size_t)1 << 20, ((size_t)3 << 19), ((size_t)3 << 19) + 1,
		((size_t)2 << 20) - 1, ((size_t)5 << 20) + 4031,
		((size_t)48 << 20) + 7, ((size_t)255 << 20) + 4033,
		((size_t)U4V_MAX_MSG_SZ) - 1,
	};
	size_t n = 0, i, s;

	for (s = 1; s <= max; s *= 4)
		sizes[n++] = s;
	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		if (odd[i] <= max)
			sizes[n++] = odd[i];
	qsort(sizes, n, sizeof(sizes[0]), cmp_size);
	return n;
}

/* Repeat r of len bytes: a SEND (even r) or a WRITE, whole, no byte more. */
static void sweep_one(struct u4vt_pair *p, struct u4v_mr *ms, struct u4v_mr *md,
		      uint8_t *src, uint8_t *dst, size_t max, size_t len, int r)
{
	enum ibv_wr_opcode op = r & 1 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
	uint32_t room =
	    (uint32_t)(max + 64 > UINT32_MAX ? UINT32_MAX : max + 64);
	uint64_t want;
	struct ibv_wc wc;

	u4vt_fill(src, len, len * 10 + (size_t)r);
	want = u4vt_sum(src, len);
	dst[len] = 0xa5; /* a guard byte after the message */
	if (op == IBV_WR_SEND)
		assert_int_equal(
		    rel_post_recv(p->qb, r, dst, room, u4v_mr_lkey(md)), 0);
	assert_int_equal(rel_post(p->qa, op, r, src, (uint32_t)len,
				  u4v_mr_lkey(ms), (uintptr_t)dst,
				  u4v_mr_rkey(md)),
			 0);
	wc = rel_wait1(p->a.cq, 60000);
	if (wc.status)
		fail_msg("size %zu repeat %d: status %d", len, r, wc.status);
	if (op == IBV_WR_SEND) {
		wc = rel_wait1(p->b.cq, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, len);
	}
	if (u4vt_sum(dst, len) != want)
		fail_msg("size %zu repeat %d: data differs", len, r);
	assert_int_equal(dst[len], 0xa5);
}

static void test_size_sweep(void **state)
{
	const char *env = getenv("U4V_SWEEP_MAX");
	size_t max = env ? strtoull(env, NULL, 0) : (size_t)64 << 20;
	size_t sizes[64], n, i;
	struct u4vt_pair p;
	struct u4v_mr *ms, *md;
	uint8_t *src, *dst;
	uint64_t t0 = u4vt_now_ms();
	int r;

	(void)state;
	if (max > U4V_MAX_MSG_SZ)
		max = U4V_MAX_MSG_SZ;
	n = sweep_sizes(sizes, max);
	src = u4vt_map_anon(max);
	dst = u4vt_map_anon(max + 64);
	assert_non_null(src);
	assert_non_null(dst);
	u4vt_pair_up(&p, "sweep", IBV_QPT_RC, NULL, NULL, 0);
	ms = rel_reg(p.a.pd, src, max, IBV_ACCESS_LOCAL_WRITE);
	md = rel_reg(p.b.pd, dst, max + 64, REL_ACC_ALL);
	for (i = 0; i < n; i++) {
		uint64_t ts = u4vt_now_ms();

		for (r = 0; r < REPEATS; r++)
			sweep_one(&p, ms, md, src, dst, max, sizes[i], r);
		fprintf(stderr, "[sweep] %11zu B: %d/%d ok (%llu ms)\n",
			sizes[i], REPEATS, REPEATS,
			(unsigned long long)(u4vt_now_ms() - ts));
	}
	fprintf(stderr, "[sweep] %zu sizes x %d repeats, 100 %%, %.1f s\n", n,
		REPEATS, (u4vt_now_ms() - t0) / 1000.0);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	u4vt_pair_down(&p);
	u4vt_unmap(src, max);
	u4vt_unmap(dst, max + 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_sweep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
