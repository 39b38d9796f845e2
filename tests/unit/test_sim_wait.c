// SPDX-License-Identifier: MIT
/*
 * The software cable's wait and kick: what ends a sleep (a frame, a kick, a
 * new channel, a freed TX slot) and what does not (RX under an application's
 * cover, CTRL frames under U4L_WAIT_DATA, covered frames under
 * U4L_WAIT_COVERED), and how a cover ends.
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

/* A frame is there on c: take it. */
static void take1(struct u4l_dev *d, struct u4l_chan *c)
{
	struct u4l_rx_frame f;

	assert_int_equal(d->ops->rx_peek(c, &f), 1);
	d->ops->rx_release(c);
}

/* How long d's wait() for at most timeout_ns with flags slept. */
static uint64_t timed_wait(struct u4l_dev *d, uint64_t timeout_ns,
			   uint32_t flags)
{
	uint64_t t0 = u4l_now_ns();

	d->ops->wait(d, t0 + timeout_ns, flags);
	return u4l_now_ns() - t0;
}

/* timed_wait while fn(arg) runs on a thread of its own (acting at 50 ms). */
static uint64_t wait_while(struct u4l_dev *d, void *(*fn)(void *), void *arg,
			   uint64_t timeout_ns, uint32_t flags)
{
	pthread_t th;
	uint64_t el;

	assert_int_equal(pthread_create(&th, NULL, fn, arg), 0);
	el = timed_wait(d, timeout_ns, flags);
	pthread_join(th, NULL);
	return el;
}

static void test_wait(void **state)
{
	const char *n = make_cable("wait", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;

	pair(n, &a, &b, &ca, &cb);
	/* timeout */
	uint64_t el = timed_wait(b, 100000000ull, 0);
	assert_true(el >= 95000000ull);
	assert_true(el < 1000000000ull);
	/* delivery ends the wait */
	struct waker w = {.d = a, .c = ca};
	assert_true(wait_while(b, waker_fn, &w, 5000000000ull, 0) <
		    2000000000ull);
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	/* a ready frame: no sleep at all */
	assert_true(timed_wait(b, 5000000000ull, 0) < 1000000000ull);
	b->ops->rx_release(cb);
	/* kick from another thread */
	struct waker k = {.d = b, .kick = true};
	assert_true(wait_while(b, waker_fn, &k, 5000000000ull, 0) <
		    2000000000ull);
	/* a new channel for us ends the wait */
	struct u4l_dev *a2 = open_end(n, 0);
	struct u4l_chan *x;
	assert_int_equal(a2->ops->chan_get(a2, b->ops->ctx_id(b), &x), 0);
	assert_true(timed_wait(b, 5000000000ull, 0) < 1000000000ull);
	assert_non_null(b->ops->chan_accept(b));
	a2->ops->close(a2);
	a->ops->close(a);
	b->ops->close(b);
}

struct sleeper {
	struct u4l_dev *d;
	uint64_t end; /* when wait() returned */
};

static void *sleeper_fn(void *p)
{
	struct sleeper *s = p;

	timed_wait(s->d, 5000000000ull, 0);
	s->end = u4l_now_ns();
	return NULL;
}

/*
 * rx_cover(all): frames do not end a sleep (the application polling takes
 * them). Ended early: a frame that came while covered ends the sleep then.
 */
static void test_rx_covered(void **state)
{
	const char *n = make_cable("covered", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	pthread_t th;
	uint64_t t0;

	pair(n, &a, &b, &ca, &cb);
	b->ops->rx_cover(b, u4l_now_ns() + 900000000ull, true);
	struct waker data = {.d = a, .c = ca};
	assert_true(wait_while(b, waker_fn, &data, 400000000ull, 0) >=
		    390000000ull);
	take1(b, cb);
	/* a sleeper not woken while covered is woken by the uncover */
	struct sleeper s = {.d = b};
	assert_int_equal(pthread_create(&th, NULL, sleeper_fn, &s), 0);
	usleep(50000);
	assert_true(send1(a, ca, 4, U4L_PDF_DATA, true));
	usleep(100000);
	t0 = u4l_now_ns();
	b->ops->rx_cover(b, 0, false);
	pthread_join(th, NULL);
	/* it slept until the uncover, however late the thread started */
	assert_true(s.end >= t0);
	assert_true(u4l_now_ns() - t0 < 2000000000ull);
	take1(b, cb);
	/* uncovered, a frame ends the sleep as before */
	assert_true(wait_while(b, waker_fn, &data, 5000000000ull, 0) <
		    2000000000ull);
	a->ops->close(a);
	b->ops->close(b);
}

/*
 * A cover lapses by itself: a frame that comes under the cover does not
 * end a sleep under way (its deadline does), one after the lapse does, and
 * one there when a sleep begins ends it at once. A cover of ACK / NAK only lets
 * data end a sleep. One that reaches implausibly far ahead (a scribbled
 * segment) is no cover.
 */
static void test_rx_cover_lapse(void **state)
{
	const char *n = make_cable("lapse", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;

	pair(n, &a, &b, &ca, &cb);
	/* a frame under the cover, the sleep under way: its deadline */
	uint64_t until = u4l_now_ns() + 900000000ull;
	b->ops->rx_cover(b, until, true);
	struct waker data = {.d = a, .c = ca};
	assert_true(wait_while(b, waker_fn, &data, 400000000ull, 0) >=
		    390000000ull);
	/* the cover has lapsed: the frame there does not let a sleep start */
	while (u4l_now_ns() <= until)
		usleep(10000);
	assert_true(timed_wait(b, 5000000000ull, 0) < 1000000000ull);
	/* under a new cover too: the frame is there */
	b->ops->rx_cover(b, u4l_now_ns() + 900000000ull, true);
	assert_true(timed_wait(b, 5000000000ull, 0) < 1000000000ull);
	b->ops->rx_cover(b, 0, false);
	take1(b, cb);
	/* after the lapse a frame ends a sleep at once */
	assert_true(wait_while(b, waker_fn, &data, 5000000000ull, 0) <
		    2000000000ull);
	take1(b, cb);
	/* a cover of ACK / NAK: those wait, data does not */
	b->ops->rx_cover(b, u4l_now_ns() + 900000000ull, false);
	struct waker ctrl = {.d = a, .c = ca, .pdf = U4L_PDF_CTRL};
	assert_true(wait_while(b, waker_fn, &ctrl, 400000000ull, 0) >=
		    390000000ull);
	take1(b, cb);
	assert_true(wait_while(b, waker_fn, &data, 5000000000ull, 0) <
		    2000000000ull);
	take1(b, cb);
	/* an ACK under that cover is woken for when the cover ends early */
	b->ops->rx_cover(b, u4l_now_ns() + 900000000ull, false);
	struct sleeper s = {.d = b};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, sleeper_fn, &s), 0);
	usleep(50000);
	assert_true(send1(a, ca, 4, U4L_PDF_CTRL, true));
	usleep(100000);
	uint64_t t0 = u4l_now_ns();
	b->ops->rx_cover(b, 0, false);
	pthread_join(th, NULL);
	assert_true(s.end >= t0);
	assert_true(u4l_now_ns() - t0 < 2000000000ull);
	take1(b, cb);
	/* a cover an hour ahead is none */
	b->ops->rx_cover(b, u4l_now_ns() + 3600000000000ull, true);
	assert_true(wait_while(b, waker_fn, &data, 5000000000ull, 0) <
		    2000000000ull);
	a->ops->close(a);
	b->ops->close(b);
}

/*
 * U4L_WAIT_COVERED: while the application's cover of every frame is in
 * force, a frame already there is its polls' and does not end the sleep
 * (without the flag it does, at once); under a cover of ACK / NAK only, or
 * once the cover has lapsed, it ends the sleep at once as before.
 */
static void test_wait_covered(void **state)
{
	const char *n = make_cable("wcovered", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	uint64_t until;

	pair(n, &a, &b, &ca, &cb);
	assert_true(send1(a, ca, 1, U4L_PDF_DATA, true));
	until = u4l_now_ns() + 900000000ull;
	b->ops->rx_cover(b, until, true);
	assert_true(timed_wait(b, 300000000ull, U4L_WAIT_COVERED) >=
		    290000000ull);
	assert_true(timed_wait(b, 5000000000ull, 0) < 1000000000ull);
	b->ops->rx_cover(b, until, false);
	assert_true(timed_wait(b, 5000000000ull, U4L_WAIT_COVERED) <
		    1000000000ull);
	until = u4l_now_ns() + 100000000ull;
	b->ops->rx_cover(b, until, true);
	while (u4l_now_ns() <= until)
		usleep(10000);
	assert_true(timed_wait(b, 5000000000ull, U4L_WAIT_COVERED) <
		    1000000000ull);
	take1(b, cb);
	a->ops->close(a);
	b->ops->close(b);
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

	pair(n, &a, &b, &ca, &cb);
	for (; sent < 16; sent++)
		assert_true(send1(a, ca, sent, U4L_PDF_DATA, true));
	for (uint32_t i = 0; i < 16; i++) {
		assert_int_equal(b->ops->rx_peek(cb, &f), 1);
		b->ops->rx_release(cb);
	}
	assert_true(timed_wait(a, 100000000ull, 0) >= 95000000ull);
	/* 16 in the RX ring, 16 waiting in TX: then no slot */
	while (send1(a, ca, sent, U4L_PDF_DATA, true))
		assert_true(++sent <= 64);
	assert_null(a->ops->tx_slot(ca));
	struct releaser r = {.d = b, .c = cb};
	assert_true(wait_while(a, release_fn, &r, 5000000000ull, 0) <
		    2000000000ull);
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

	pair(n, &a, &b, &ca, &cb);
	struct waker ctrl = {.d = a, .c = ca, .pdf = U4L_PDF_CTRL};
	assert_true(wait_while(b, waker_fn, &ctrl, 400000000ull,
			       U4L_WAIT_DATA) >= 390000000ull);
	/* it is there, so the next sleep does not start */
	assert_true(timed_wait(b, 5000000000ull, U4L_WAIT_DATA) <
		    1000000000ull);
	take1(b, cb);
	/* a CTRL frame ends a sleep without the flag */
	assert_true(wait_while(b, waker_fn, &ctrl, 5000000000ull, 0) <
		    2000000000ull);
	take1(b, cb);
	/* a data frame ends a U4L_WAIT_DATA sleep */
	struct waker data = {.d = a, .c = ca};
	assert_true(wait_while(b, waker_fn, &data, 5000000000ull,
			       U4L_WAIT_DATA) < 2000000000ull);
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
	    cmocka_unit_test_teardown(test_rx_cover_lapse, cleanup),
	    cmocka_unit_test_teardown(test_wait_covered, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
