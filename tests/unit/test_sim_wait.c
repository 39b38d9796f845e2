// SPDX-License-Identifier: MIT
/*
 * The software cable's wait and kick: what ends a sleep (a frame, a kick, a
 * new channel, a freed TX slot) and what does not (covered RX, CTRL frames
 * under U4L_WAIT_DATA).
 */
#define _GNU_SOURCE
#include "sim_test.h"

struct waker {
	struct u4l_dev *d;
	struct u4l_chan *c;
	bool kick;
	enum u4l_pdf pdf; /* 0: DATA */
};

static void *waker_fn(void *p)
{
	struct waker *w = p;
	usleep(50000);
	if (w->kick)
		w->d->ops->kick(w->d);
	else
		send1(w->d, w->c, 3, w->pdf ? w->pdf : U4L_PDF_DATA, true);
	return NULL;
}

static void test_wait(void **state)
{
	const char *n = make_cable("wait", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	pthread_t th;

	pair(n, &a, &b, &ca, &cb);
	/* timeout */
	uint64_t t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 100000000ull, 0);
	uint64_t el = u4l_now_ns() - t0;
	assert_true(el >= 95000000ull);
	assert_true(el < 1000000000ull);
	/* delivery ends the wait */
	struct waker w = {.d = a, .c = ca};
	assert_int_equal(pthread_create(&th, NULL, waker_fn, &w), 0);
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 5000000000ull, 0);
	el = u4l_now_ns() - t0;
	pthread_join(th, NULL);
	assert_true(el < 2000000000ull);
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	/* a ready frame: no sleep at all */
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 5000000000ull, 0);
	assert_true(u4l_now_ns() - t0 < 1000000000ull);
	b->ops->rx_release(cb);
	/* kick from another thread */
	struct waker k = {.d = b, .kick = true};
	assert_int_equal(pthread_create(&th, NULL, waker_fn, &k), 0);
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 5000000000ull, 0);
	el = u4l_now_ns() - t0;
	pthread_join(th, NULL);
	assert_true(el < 2000000000ull);
	/* a new channel for us ends the wait */
	struct u4l_dev *a2 = open_end(n, 0);
	struct u4l_chan *x;
	assert_int_equal(a2->ops->chan_get(a2, b->ops->ctx_id(b), &x), 0);
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 5000000000ull, 0);
	assert_true(u4l_now_ns() - t0 < 1000000000ull);
	assert_non_null(b->ops->chan_accept(b));
	a2->ops->close(a2);
	a->ops->close(a);
	b->ops->close(b);
}

struct sleeper {
	struct u4l_dev *d;
	uint64_t el; /* how long wait() slept */
};

static void *sleeper_fn(void *p)
{
	struct sleeper *s = p;
	uint64_t t0 = u4l_now_ns();

	s->d->ops->wait(s->d, t0 + 5000000000ull, 0);
	s->el = u4l_now_ns() - t0;
	return NULL;
}

/*
 * rx_covered(on): frames do not end a sleep (the application polling takes
 * them). off: a frame that came while covered ends the sleep then.
 */
static void test_rx_covered(void **state)
{
	const char *n = make_cable("covered", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	pthread_t th;
	uint64_t t0, el;

	pair(n, &a, &b, &ca, &cb);
	b->ops->rx_covered(b, true);
	struct waker data = {.d = a, .c = ca};
	assert_int_equal(pthread_create(&th, NULL, waker_fn, &data), 0);
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 400000000ull, 0);
	el = u4l_now_ns() - t0;
	pthread_join(th, NULL);
	assert_true(el >= 390000000ull);
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	b->ops->rx_release(cb);
	/* a sleeper not woken while covered is woken by the uncover */
	struct sleeper s = {.d = b};
	assert_int_equal(pthread_create(&th, NULL, sleeper_fn, &s), 0);
	usleep(50000);
	assert_true(send1(a, ca, 4, U4L_PDF_DATA, true));
	usleep(100000);
	t0 = u4l_now_ns();
	b->ops->rx_covered(b, false);
	pthread_join(th, NULL);
	assert_true(s.el >= 140000000ull);
	assert_true(u4l_now_ns() - t0 < 2000000000ull);
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	b->ops->rx_release(cb);
	/* uncovered, a frame ends the sleep as before */
	assert_int_equal(pthread_create(&th, NULL, waker_fn, &data), 0);
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 5000000000ull, 0);
	el = u4l_now_ns() - t0;
	pthread_join(th, NULL);
	assert_true(el < 2000000000ull);
	a->ops->close(a);
	b->ops->close(b);
}

struct releaser {
	struct u4l_dev *d;
	struct u4l_chan *c;
};

static void *release_fn(void *p)
{
	struct releaser *r = p;
	struct u4l_rx_frame f;

	usleep(50000);
	if (r->d->ops->rx_peek(r->c, &f) == 1)
		r->d->ops->rx_release(r->c);
	return NULL;
}

/*
 * TX slots are reaped lazily, so a ring nobody waits on can look full: that
 * does not end a sleep. A sender that found no slot is woken when one
 * frees.
 */
static void test_wait_tx(void **state)
{
	const char *n = make_cable("waittx", NULL, depth16);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	uint32_t sent = 0;
	pthread_t th;
	uint64_t t0, el;

	pair(n, &a, &b, &ca, &cb);
	for (; sent < 16; sent++)
		assert_true(send1(a, ca, sent, U4L_PDF_DATA, true));
	for (uint32_t i = 0; i < 16; i++) {
		assert_int_equal(b->ops->rx_peek(cb, &f), 1);
		b->ops->rx_release(cb);
	}
	t0 = u4l_now_ns();
	a->ops->wait(a, t0 + 100000000ull, 0);
	el = u4l_now_ns() - t0;
	assert_true(el >= 95000000ull);
	/* 16 in the RX ring, 16 waiting in TX: then no slot */
	while (send1(a, ca, sent, U4L_PDF_DATA, true))
		assert_true(++sent <= 64);
	assert_null(a->ops->tx_slot(ca));
	struct releaser r = {.d = b, .c = cb};
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

/*
 * U4L_WAIT_DATA: an ACK / NAK frame (PDF CTRL) does not end the sleep, a
 * data frame does; a CTRL frame already there when it starts does.
 */
static void test_wait_data(void **state)
{
	const char *n = make_cable("waitdata", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	pthread_t th;
	uint64_t t0, el;

	pair(n, &a, &b, &ca, &cb);
	struct waker ctrl = {.d = a, .c = ca, .pdf = U4L_PDF_CTRL};
	assert_int_equal(pthread_create(&th, NULL, waker_fn, &ctrl), 0);
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 400000000ull, U4L_WAIT_DATA);
	el = u4l_now_ns() - t0;
	pthread_join(th, NULL);
	assert_true(el >= 390000000ull);
	/* it is there, so the next sleep does not start */
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 5000000000ull, U4L_WAIT_DATA);
	assert_true(u4l_now_ns() - t0 < 1000000000ull);
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	b->ops->rx_release(cb);
	/* a CTRL frame ends a sleep without the flag */
	assert_int_equal(pthread_create(&th, NULL, waker_fn, &ctrl), 0);
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 5000000000ull, 0);
	el = u4l_now_ns() - t0;
	pthread_join(th, NULL);
	assert_true(el < 2000000000ull);
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	b->ops->rx_release(cb);
	/* a data frame ends a U4L_WAIT_DATA sleep */
	struct waker data = {.d = a, .c = ca};
	assert_int_equal(pthread_create(&th, NULL, waker_fn, &data), 0);
	t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 5000000000ull, U4L_WAIT_DATA);
	el = u4l_now_ns() - t0;
	pthread_join(th, NULL);
	assert_true(el < 2000000000ull);
	a->ops->close(a);
	b->ops->close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_wait, cleanup),
	    cmocka_unit_test_teardown(test_wait_tx, cleanup),
	    cmocka_unit_test_teardown(test_wait_data, cleanup),
	    cmocka_unit_test_teardown(test_rx_covered, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
