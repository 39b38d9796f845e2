// SPDX-License-Identifier: MIT
/*
 * The requester's table of lost READ / atomic responses (rel/holes.h):
 * filling from either end and from the middle, duplicates, the PSN wrap, a
 * full table, the ask order and asking again for older asks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rel/holes.h"
#include "rel/psn.h"

static struct u4v_holes *fresh(void)
{
	static struct u4v_holes t;

	memset(&t, 0xa5, sizeof(t)); /* reset must not rely on zeroed memory */
	u4v_holes_reset(&t);
	return &t;
}

/* How many PSNs the table holds as missing. */
static uint32_t missing(const struct u4v_holes *t)
{
	uint32_t i, n = 0;

	for (i = 0; i < t->count; i++)
		n += t->h[i].n;
	return n;
}

static void test_fill_every_order(void **state)
{
	static const uint32_t orders[3][5] = {
		{ 100, 101, 102, 103, 104 },
		{ 104, 103, 102, 101, 100 },
		{ 102, 100, 104, 101, 103 },
	};
	uint32_t o, k, seq;

	(void)state;
	for (o = 0; o < 3; o++) {
		struct u4v_holes *t = fresh();

		assert_int_equal(u4v_holes_add(t, 100, 5), 0);
		assert_int_equal(t->unasked, 1);
		for (k = 0; k < 5; k++) {
			uint32_t p = orders[o][k];

			assert_non_null(u4v_holes_find(t, p));
			assert_int_equal(u4v_holes_fill(t, p, &seq), 1);
			assert_int_equal(seq, 0);
			assert_null(u4v_holes_find(t, p));
			/* the same PSN again is a duplicate */
			assert_int_equal(u4v_holes_fill(t, p, &seq), 0);
			assert_int_equal(missing(t), 4 - k);
		}
		assert_int_equal(t->count, 0);
		assert_int_equal(t->unasked, 0);
	}
}

static void test_outside_is_duplicate(void **state)
{
	struct u4v_holes *t = fresh();
	uint32_t seq;

	(void)state;
	assert_int_equal(u4v_holes_add(t, 10, 3), 0);
	assert_int_equal(u4v_holes_fill(t, 9, &seq), 0);
	assert_int_equal(u4v_holes_fill(t, 13, &seq), 0);
	assert_int_equal(missing(t), 3);
	assert_int_equal(u4v_holes_add(t, 20, 0), 0); /* nothing to note */
	assert_int_equal(t->count, 1);
}

static void test_wrap(void **state)
{
	struct u4v_holes *t = fresh();
	uint32_t seq, first;

	(void)state;
	assert_int_equal(u4v_holes_add(t, 0xfffffe, 4), 0); /* fe ff 0 1 */
	assert_true(u4v_holes_first(t, 0xfffff0, 0x20, &first));
	assert_int_equal(first, 0xfffffe);
	assert_int_equal(u4v_holes_fill(t, 0, &seq), 1);
	assert_int_equal(t->count, 2); /* split at the wrap */
	assert_non_null(u4v_holes_find(t, 0xffffff));
	assert_non_null(u4v_holes_find(t, 1));
	assert_null(u4v_holes_find(t, 0));
	assert_int_equal(u4v_holes_fill(t, 0xfffffe, &seq), 1);
	assert_true(u4v_holes_first(t, 0xfffff0, 0x20, &first));
	assert_int_equal(first, 0xffffff);
	/* a range that starts inside a hole reports its own start */
	assert_true(u4v_holes_first(t, 1, 5, &first));
	assert_int_equal(first, 1);
	assert_false(u4v_holes_first(t, 2, 100, &first));
}

static void test_full_table(void **state)
{
	struct u4v_holes *t = fresh();
	uint32_t i, seq;

	(void)state;
	for (i = 0; i < U4V_HOLES; i++)
		assert_int_equal(u4v_holes_add(t, i * 10, 3), 0);
	assert_int_equal(u4v_holes_add(t, 5000, 1), -ENOSPC);
	/* a split needs a slot: refused, nothing changes */
	assert_int_equal(u4v_holes_fill(t, 11, &seq), -ENOSPC);
	assert_non_null(u4v_holes_find(t, 11));
	assert_int_equal(missing(t), 3 * U4V_HOLES);
	/* filling an end needs none */
	assert_int_equal(u4v_holes_fill(t, 10, &seq), 1);
	assert_int_equal(u4v_holes_fill(t, 22, &seq), 1);
	/* a hole filled completely frees its slot */
	assert_int_equal(u4v_holes_fill(t, 11, &seq), 1);
	assert_int_equal(u4v_holes_fill(t, 12, &seq), 1);
	assert_int_equal(t->count, U4V_HOLES - 1);
	assert_int_equal(u4v_holes_add(t, 5000, 1), 0);
}

static void test_ask_order(void **state)
{
	struct u4v_holes *t = fresh();
	struct u4v_hole *a, *b, *c;
	uint32_t seq_a, seq_b, seq, first;

	(void)state;
	assert_int_equal(u4v_holes_add(t, 100, 2), 0);
	assert_int_equal(u4v_holes_add(t, 200, 2), 0);
	assert_int_equal(u4v_holes_add(t, 300, 2), 0);
	assert_int_equal(t->unasked, 3);
	a = u4v_holes_find(t, 100);
	b = u4v_holes_find(t, 200);
	c = u4v_holes_find(t, 300);
	u4v_holes_asked(t, a);
	u4v_holes_asked(t, b);
	u4v_holes_asked(t, c);
	assert_int_equal(t->unasked, 0);
	seq_a = a->seq;
	seq_b = b->seq;
	assert_true(seq_a && seq_a < seq_b && seq_b < c->seq);
	/* the answer to b came: a, asked before it, was lost again */
	assert_int_equal(u4v_holes_fill(t, 200, &seq), 1);
	assert_int_equal(seq, seq_b);
	u4v_holes_reask(t, seq);
	assert_int_equal(t->unasked, 1);
	assert_int_equal(u4v_holes_find(t, 100)->seq, 0);
	assert_int_equal(u4v_holes_find(t, 201)->seq, seq_b); /* b's rest */
	assert_true(u4v_holes_find(t, 300)->seq > seq_b);     /* c: later */
	/* asked again, a now comes after c */
	u4v_holes_asked(t, u4v_holes_find(t, 100));
	assert_true(u4v_holes_find(t, 100)->seq > u4v_holes_find(t, 300)->seq);
	/* a middle fill keeps the order on both halves */
	assert_int_equal(u4v_holes_add(t, 400, 3), 0);
	u4v_holes_asked(t, u4v_holes_find(t, 400));
	seq = u4v_holes_find(t, 400)->seq;
	assert_int_equal(u4v_holes_fill(t, 401, &seq_a), 1);
	assert_int_equal(seq_a, seq);
	assert_int_equal(u4v_holes_find(t, 402)->seq, seq);
	/* a timeout asks again for all */
	u4v_holes_reask(t, 0);
	assert_int_equal(t->unasked, t->count);
	/* removal keeps the count of unasked holes right */
	while (t->count)
		u4v_holes_remove(t, &t->h[0]);
	assert_int_equal(t->unasked, 0);
	assert_false(u4v_holes_first(t, 0, 1000, &first));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill_every_order),
		cmocka_unit_test(test_outside_is_duplicate),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_full_table),
		cmocka_unit_test(test_ask_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
