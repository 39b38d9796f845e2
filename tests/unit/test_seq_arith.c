// SPDX-License-Identifier: MIT
/*
 * Arithmetic the transport leans on: 24-bit PSNs at the wrap, segmentation
 * (u4f_nframes / u4f_frame_len), the reorder buffer in every order, the QP
 * timer encodings (ack timeout, RNR delay table).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frag/frag.h"
#include "rel/psn.h"
#include "rel/timer.h"
#include "testlib.h"
#include "wire/wire.h"

/* ---- PSN ---------------------------------------------------------------- */

static void test_psn_add_wrap(void **state)
{
	(void)state;
	assert_int_equal(psn_add(0, 0), 0);
	assert_int_equal(psn_add(0xfffffe, 1), 0xffffff);
	assert_int_equal(psn_add(0xffffff, 1), 0);
	assert_int_equal(psn_add(0xffffff, 2), 1);
	assert_int_equal(psn_add(0xfffff0, 0x20), 0x10);
	/* adding the mask is subtracting one */
	assert_int_equal(psn_add(0, U4V_PSN_MASK), 0xffffff);
	assert_int_equal(psn_add(5, U4V_PSN_MASK), 4);
	/* n beyond 24 bits still lands in range */
	assert_int_equal(psn_add(0x10, 0x1000000), 0x10);
	assert_int_equal(psn_add(0xffffff, 0xffffffff), 0xfffffe);
	for (uint32_t p = 0xffff00; p != 0x100; p = psn_add(p, 1))
		assert_true(psn_add(p, 1) <= U4V_PSN_MASK);
}

static void test_psn_diff_wrap(void **state)
{
	(void)state;
	assert_int_equal(psn_diff(0, 0), 0);
	assert_int_equal(psn_diff(0, 0xffffff), 1);
	assert_int_equal(psn_diff(0xffffff, 0), -1);
	assert_int_equal(psn_diff(5, 0xfffffb), 10);
	assert_int_equal(psn_diff(0xfffffb, 5), -10);
	assert_int_equal(psn_diff(0x7fffff, 0), 0x7fffff);
	assert_int_equal(psn_diff(0, 0x7fffff), -0x7fffff);
	assert_int_equal(psn_diff(0x800001, 0), -0x7fffff);
	/* stray high bits (a raw 32-bit value) do not leak into the result */
	assert_int_equal(psn_diff(0xff000003, 0x00000001), 2);
	/* diff and add agree everywhere near the wrap */
	for (uint32_t b = 0xfff000; b != 0x1000; b = psn_add(b, 0x55))
		for (int32_t d = -300; d <= 300; d += 7)
			assert_int_equal(psn_diff(psn_add(b, (uint32_t)d &
							      U4V_PSN_MASK),
						  b),
					 d);
}

static void test_psn_lt_le_wrap(void **state)
{
	(void)state;
	assert_true(psn_lt(0xffffff, 0));
	assert_false(psn_lt(0, 0xffffff));
	assert_true(psn_le(0xffffff, 0));
	assert_false(psn_le(0, 0xffffff));
	assert_false(psn_lt(7, 7));
	assert_true(psn_le(7, 7));
	assert_true(psn_lt(0xfffff0, 0x10));
	assert_false(psn_lt(0x10, 0xfffff0));
	assert_true(psn_le(0xffffff, 0xffffff));
	assert_false(psn_lt(0, 0));
	/* ordering is consistent across the wrap for a window of 1024 */
	for (uint32_t i = 0; i < 1024; i++) {
		uint32_t a = psn_add(0xfffe00, i), b = psn_add(a, 1);

		assert_true(psn_lt(a, b));
		assert_true(psn_le(a, b));
		assert_false(psn_lt(b, a));
		assert_false(psn_le(b, a));
	}
}

/* ---- segmentation ------------------------------------------------------- */

static void test_nframes(void **state)
{
	const uint64_t g = U4W_GRANULE;

	(void)state;
	assert_int_equal(U4W_GRANULE, 4032);
	assert_int_equal(u4f_nframes(0), 1);
	assert_int_equal(u4f_nframes(1), 1);
	assert_int_equal(u4f_nframes(g - 1), 1);
	assert_int_equal(u4f_nframes(g), 1);
	assert_int_equal(u4f_nframes(g + 1), 2);
	assert_int_equal(u4f_nframes(2 * g), 2);
	assert_int_equal(u4f_nframes(2 * g + 1), 3);
	assert_int_equal(u4f_nframes(4096), 2);
	assert_int_equal(u4f_nframes(65536), 17);
	assert_int_equal(u4f_nframes(1u << 30), (uint32_t)(((1ull << 30) +
							     g - 1) / g));
	assert_int_equal(u4f_nframes(1ull << 40),
			 (uint32_t)(((1ull << 40) + g - 1) / g));
}

static void check_frames_cover(uint64_t len)
{
	uint32_t n = u4f_nframes(len), i;
	uint64_t total = 0;

	uint32_t bad = UINT32_MAX;

	for (i = 0; i < n; i++) {
		uint32_t fl = u4f_frame_len(len, i);

		total += fl;
		if (i + 1 < n ? fl != U4W_GRANULE :
				(len && (fl < 1 || fl > U4W_GRANULE)))
			bad = i;
	}
	if (bad != UINT32_MAX)
		fail_msg("len %llu: frame %u has the wrong length",
			 (unsigned long long)len, bad);
	assert_true(total == len);
	assert_int_equal(u4f_frame_len(len, n), 0);
}

static void test_frame_len(void **state)
{
	const uint64_t g = U4W_GRANULE;
	static const uint64_t lens[] = { 0, 1, 4031, 4032, 4033, 8063, 8064,
					 8065, 65536, 1u << 20 };

	(void)state;
	assert_int_equal(u4f_frame_len(0, 0), 0);
	assert_int_equal(u4f_frame_len(1, 0), 1);
	assert_int_equal(u4f_frame_len(1, 1), 0);
	assert_int_equal(u4f_frame_len(g - 1, 0), g - 1);
	assert_int_equal(u4f_frame_len(g, 0), g);
	assert_int_equal(u4f_frame_len(g, 1), 0);
	assert_int_equal(u4f_frame_len(g + 1, 0), g);
	assert_int_equal(u4f_frame_len(g + 1, 1), 1);
	assert_int_equal(u4f_frame_len(g + 1, 2), 0);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		check_frames_cover(lens[i]);
	/* huge: the last frame of a 1 TiB message, no overflow */
	{
		uint64_t len = 1ull << 40;
		uint32_t n = u4f_nframes(len);

		assert_int_equal(u4f_frame_len(len, n - 1),
				 (uint32_t)(len - (uint64_t)(n - 1) * g));
		assert_int_equal(u4f_frame_len(len, n - 2), g);
		assert_int_equal(u4f_frame_len(len, n), 0);
		assert_int_equal(u4f_frame_len(len, UINT32_MAX), 0);
	}
	/* the largest message the device takes */
	check_frames_cover(1ull << 30);
}

/* ---- reorder buffer ----------------------------------------------------- */

static void frame_for(uint32_t psn, uint8_t *buf, uint32_t *len)
{
	*len = 8 + psn % 13;
	memset(buf, 0, *len);
	memcpy(buf, &psn, 4);
}

static void hold(struct u4f_reorder *r, uint32_t expected, uint32_t psn,
		 int want)
{
	uint8_t buf[32];
	uint32_t len;

	frame_for(psn, buf, &len);
	/* headers and payload apart, as they come from a software cable */
	assert_int_equal(u4f_reorder_hold(r, expected, psn, buf, 4, buf + 4,
					  len - 4),
			 want);
}

static bool take(struct u4f_reorder *r, uint32_t expected)
{
	void *f;
	uint32_t len, psn;
	uint8_t want[32];
	uint32_t wlen;

	if (!u4f_reorder_take(r, expected, &f, &len))
		return false;
	frame_for(expected, want, &wlen);
	assert_int_equal(len, wlen);
	memcpy(&psn, f, 4);
	assert_int_equal(psn, expected);
	assert_memory_equal(f, want, len);
	free(f);
	return true;
}

static void test_reorder_init(void **state)
{
	struct u4f_reorder r;

	(void)state;
	assert_int_equal(u4f_reorder_init(&r, 0), -EINVAL);
	assert_int_equal(u4f_reorder_init(&r, 3), -EINVAL);
	assert_int_equal(u4f_reorder_init(&r, 6), -EINVAL);
	assert_int_equal(u4f_reorder_init(&r, 8), 0);
	assert_false(take(&r, 0)); /* empty, no slots yet */
	u4f_reorder_destroy(&r);
}

/* A message of n frames delivered in a given order, starting at base. */
static void deliver_in_order(uint32_t base, const uint32_t *order,
			     uint32_t n, uint32_t window)
{
	struct u4f_reorder r;
	uint32_t expected = base, i, delivered = 0;

	assert_int_equal(u4f_reorder_init(&r, window), 0);
	for (i = 0; i < n; i++) {
		uint32_t psn = psn_add(base, order[i]);

		if (psn == expected) {
			delivered++;
			expected = psn_add(expected, 1);
			while (take(&r, expected)) {
				delivered++;
				expected = psn_add(expected, 1);
			}
		} else {
			hold(&r, expected, psn, 0);
		}
	}
	assert_int_equal(delivered, n);
	assert_int_equal(expected, psn_add(base, n));
	assert_int_equal(r.count, 0);
	u4f_reorder_destroy(&r);
}

static void test_reorder_orders(void **state)
{
	static const uint32_t bases[] = { 0, 100, 0xfffffe, 0xfffff8,
					  0xffffff };
	uint32_t order[8], i, b, p;

	(void)state;
	for (b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		/* tail before head: 7, 6, ..., 0 */
		for (i = 0; i < 8; i++)
			order[i] = 7 - i;
		deliver_in_order(bases[b], order, 8, 8 * 2);
		/* head last, rest in order */
		for (i = 0; i < 7; i++)
			order[i] = i + 1;
		order[7] = 0;
		deliver_in_order(bases[b], order, 8, 8);
		/* all 5040 permutations of 7 frames... sampled: rotations
		 * and interleavings */
		for (p = 0; p < 8; p++) {
			for (i = 0; i < 8; i++)
				order[i] = (i * 3 + p) % 8; /* a permutation */
			deliver_in_order(bases[b], order, 8, 8 * 2);
			for (i = 0; i < 8; i++)
				order[i] = (i + p) % 8; /* rotation */
			deliver_in_order(bases[b], order, 8, 8 * 2);
		}
	}
}

static void test_reorder_duplicates_and_window(void **state)
{
	struct u4f_reorder r;
	uint32_t e = 0xfffffd; /* the held frames straddle the wrap */

	(void)state;
	assert_int_equal(u4f_reorder_init(&r, 8), 0);
	hold(&r, e, psn_add(e, 1), 0);
	hold(&r, e, psn_add(e, 1), -EEXIST); /* duplicate */
	hold(&r, e, psn_add(e, 4), 0);	     /* 0x000001 */
	hold(&r, e, psn_add(e, 4), -EEXIST);
	hold(&r, e, psn_add(e, 7), 0); /* last slot of the window */
	hold(&r, e, psn_add(e, 8), -ENOSPC); /* beyond the window */
	hold(&r, e, psn_add(e, 100), -ENOSPC);
	hold(&r, e, e, -ENOSPC);	       /* not ahead: the expected one */
	hold(&r, e, psn_add(e, U4V_PSN_MASK), -ENOSPC); /* behind */
	hold(&r, e, psn_add(e, 0x800000), -ENOSPC);	/* far: behind */
	assert_int_equal(r.count, 3);
	/* nothing to take for e itself */
	assert_false(take(&r, e));
	assert_true(take(&r, psn_add(e, 1)));
	assert_false(take(&r, psn_add(e, 1))); /* taken once only */
	assert_false(take(&r, psn_add(e, 2)));
	assert_int_equal(r.count, 2);
	/* a stale frame (older than expected) is dropped, not returned */
	assert_false(take(&r, psn_add(e, 12))); /* slot of e+4, stale */
	assert_int_equal(r.count, 1);
	assert_false(take(&r, psn_add(e, 4)));
	/* clear frees everything; a later hold works again */
	u4f_reorder_clear(&r);
	assert_int_equal(r.count, 0);
	assert_false(take(&r, psn_add(e, 7)));
	hold(&r, e, psn_add(e, 2), 0);
	assert_true(take(&r, psn_add(e, 2)));
	u4f_reorder_destroy(&r);
}

static void test_reorder_window_one_and_full(void **state)
{
	struct u4f_reorder r;
	uint32_t i;

	(void)state;
	/* window 1: nothing can be held */
	assert_int_equal(u4f_reorder_init(&r, 1), 0);
	hold(&r, 10, 11, -ENOSPC);
	u4f_reorder_destroy(&r);
	/* fill a window of 64 completely (expected + 1 .. + 63) at the wrap */
	assert_int_equal(u4f_reorder_init(&r, 64), 0);
	for (i = 1; i < 64; i++)
		hold(&r, 0xffffe0, psn_add(0xffffe0, i), 0);
	assert_int_equal(r.count, 63);
	for (i = 1; i < 64; i++)
		assert_true(take(&r, psn_add(0xffffe0, i)));
	assert_int_equal(r.count, 0);
	u4f_reorder_destroy(&r);
}

/* ---- timers ------------------------------------------------------------- */

static void test_ack_timeout(void **state)
{
	(void)state;
	assert_true(u4v_ack_timeout_ns(0) == U4V_TIME_INFINITE);
	assert_true(u4v_ack_timeout_ns(1) == 8192);
	assert_true(u4v_ack_timeout_ns(14) == 4096ull << 14); /* ~67 ms */
	for (uint8_t t = 1; t <= 31; t++)
		assert_true(u4v_ack_timeout_ns(t) == 4096ull * (1ull << t));
	/* 4.096 us * 2^31 = ~8796 s: no overflow */
	assert_true(u4v_ack_timeout_ns(31) == 8796093022208ull);
}

static void test_rnr_delay_table(void **state)
{
	static const uint32_t us_x100[32] = {
		65536000, 1000,	   2000,    3000,    4000,    6000,    8000,
		12000,	  16000,   24000,   32000,   48000,   64000,   96000,
		128000,	  192000,  256000,  384000,  512000,  768000,  1024000,
		1536000,  2048000, 3072000, 4096000, 6144000, 8192000,
		12288000, 16384000, 24576000, 32768000, 49152000,
	}; /* IBTA table 45, in 10 ns units */
	uint8_t c;

	(void)state;
	/* endpoints: code 0 is the longest (655.36 ms), 1 the shortest */
	assert_true(u4v_rnr_delay_ns(0) == 655360000ull);
	assert_true(u4v_rnr_delay_ns(1) == 10000ull);
	assert_true(u4v_rnr_delay_ns(31) == 491520000ull);
	for (c = 0; c < 32; c++)
		assert_true(u4v_rnr_delay_ns(c) == (uint64_t)us_x100[c] * 10);
	/* monotonic from 1 to 31 */
	for (c = 2; c < 32; c++)
		assert_true(u4v_rnr_delay_ns(c) > u4v_rnr_delay_ns(c - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_psn_add_wrap),
		cmocka_unit_test(test_psn_diff_wrap),
		cmocka_unit_test(test_psn_lt_le_wrap),
		cmocka_unit_test(test_nframes),
		cmocka_unit_test(test_frame_len),
		cmocka_unit_test(test_reorder_init),
		cmocka_unit_test(test_reorder_orders),
		cmocka_unit_test(test_reorder_duplicates_and_window),
		cmocka_unit_test(test_reorder_window_one_and_full),
		cmocka_unit_test(test_ack_timeout),
		cmocka_unit_test(test_rnr_delay_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
