// SPDX-License-Identifier: MIT
/*
 * The software cable's TX queue bound (u4l_ops.tx_bound): at most that
 * many frames wait on the TX ring, tx_space() counts against it, a sender
 * that found no slot under it is woken when one frees, and a bound out of
 * range means the whole ring.
 */
#include "sim_test.h"

/* Send until no slot is given; the number sent. */
static uint32_t fill(struct u4l_dev *a, struct u4l_chan *ca, uint32_t seq)
{
	uint32_t sent = 0;

	while (send1(a, ca, seq + sent, U4L_PDF_DATA, true))
		assert_true(++sent <= 64);
	return sent;
}

static void drain(struct u4l_dev *b, struct u4l_chan *cb, uint32_t seq,
		  uint32_t n)
{
	struct u4l_rx_frame f;

	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(b->ops->rx_peek(cb, &f), 1);
		assert_int_equal(check_frame(&f), (int64_t)(seq + i));
		b->ops->rx_release(cb);
	}
	assert_int_equal(b->ops->rx_peek(cb, &f), 0);
}

static void test_bound_limits_queue(void **state)
{
	const char *n = make_cable("bound", NULL, depth16);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	uint32_t sent;

	(void)state;
	pair(n, &a, &b, &ca, &cb);
	a->ops->tx_bound(ca, 4);
	assert_int_equal(a->ops->tx_space(ca), 4);
	/* 16 fill the peer's RX ring, 4 (not 16) wait in TX (E2E) */
	sent = fill(a, ca, 0);
	assert_int_equal(sent, 20);
	assert_null(a->ops->tx_slot(ca));
	assert_int_equal(a->ops->tx_space(ca), 0);
	/* one RX slot released pumps one waiting frame: one TX slot */
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	assert_int_equal(check_frame(&f), 0);
	b->ops->rx_release(cb);
	assert_int_equal(a->ops->tx_space(ca), 1);
	drain(b, cb, 1, sent - 1);
	assert_int_equal(a->ops->tx_space(ca), 4);
	/* out of range: the whole ring */
	a->ops->tx_bound(ca, 0);
	assert_int_equal(a->ops->tx_space(ca), 16);
	a->ops->tx_bound(ca, 17);
	assert_int_equal(a->ops->tx_space(ca), 16);
	assert_int_equal(fill(a, ca, sent), 32);
	drain(b, cb, sent, 32);
	a->ops->close(a);
	b->ops->close(b);
}

/* A sender held by the bound sleeps until a slot under it frees. */
static void test_bound_wait(void **state)
{
	const char *n = make_cable("boundwait", NULL, depth16);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct releaser r;
	uint64_t t0, el;
	pthread_t th;

	(void)state;
	pair(n, &a, &b, &ca, &cb);
	a->ops->tx_bound(ca, 4);
	assert_int_equal(fill(a, ca, 0), 20);
	r = (struct releaser){ .d = b, .c = cb };
	assert_int_equal(pthread_create(&th, NULL, release_fn, &r), 0);
	t0 = u4l_now_ns();
	a->ops->wait(a, t0 + 5000000000ull, 0);
	el = u4l_now_ns() - t0;
	pthread_join(th, NULL);
	assert_true(el < 2000000000ull);
	assert_non_null(a->ops->tx_slot(ca));
	a->ops->close(a);
	b->ops->close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_bound_limits_queue, cleanup),
		cmocka_unit_test_teardown(test_bound_wait, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
