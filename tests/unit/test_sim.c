// SPDX-License-Identifier: MIT
/*
 * The software cable: rings, wire model, E2E flow control, channels and
 * their budget, dead processes, two-process transfers, wait/kick, segment
 * validation. Fault injection: test_sim_faults.c.
 */
#define _GNU_SOURCE
#include "sim_test.h"

/* ---- tests ---- */

static void test_roundtrip(void **state)
{
	const char *n = make_cable("rt", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb, *again;
	struct u4l_rx_frame f;

	pair(n, &a, &b, &ca, &cb);
	assert_null(b->ops->chan_accept(b));
	assert_int_equal(b->ops->chan_get(b, a->ops->ctx_id(a), &again), 0);
	assert_ptr_equal(again, cb);
	assert_int_equal(a->ops->chan_get(a, b->ops->ctx_id(b), &again), 0);
	assert_ptr_equal(again, ca);
	assert_true(a->ops->ctx_alive(a, b->ops->ctx_id(b)));
	assert_string_equal(a->ops->name, "sim");

	for (int dir = 0; dir < 2; dir++) {
		struct u4l_dev *s = dir ? b : a, *r = dir ? a : b;
		struct u4l_chan *cs = dir ? cb : ca, *cr = dir ? ca : cb;
		uint32_t next = 0;
		for (uint32_t seq = 0; seq < 1000; seq++) {
			while (!send1(s, cs, seq, U4L_PDF_DATA, true)) {
				while (r->ops->rx_peek(cr, &f) == 1) {
					assert_int_equal(check_frame(&f),
							 next++);
					assert_int_equal(f.flags, 0);
					r->ops->rx_release(cr);
				}
			}
		}
		while (r->ops->rx_peek(cr, &f) == 1) {
			assert_int_equal(check_frame(&f), next++);
			r->ops->rx_release(cr);
		}
		assert_int_equal(next, 1000);
	}
	struct u4l_counters c[2];
	stat_of(n, c);
	assert_int_equal(c[0].tx_frames, 1000);
	assert_int_equal(c[1].rx_frames, 1000);
	assert_int_equal(c[1].tx_frames, 1000);
	assert_int_equal(c[0].rx_frames, 1000);
	assert_int_equal(c[0].tx_bytes, c[1].rx_bytes);
	assert_int_equal(c[1].rx_overflow, 0);
	assert_ptr_equal(a->ops->counters(a), a->ops->counters(a));
	a->ops->counters(a)->retransmits += 3;
	stat_of(n, c);
	assert_int_equal(c[0].retransmits, 3);
	a->ops->close(a);
	b->ops->close(b);
	assert_int_equal(u4l_sim_destroy(n), 0);
	assert_int_equal(u4l_sim_destroy(n), -ENOENT);
}

static void depth16(struct u4l_sim_config *c)
{
	c->ring_depth = 16;
}

static void test_ring_full(void **state)
{
	const char *n = make_cable("full", NULL, depth16);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	uint32_t sent = 0;

	pair(n, &a, &b, &ca, &cb);
	assert_int_equal(a->ops->tx_space(ca), 16);
	/* 16 frames fill the peer's RX ring, 16 more wait in TX (E2E). */
	while (send1(a, ca, sent, U4L_PDF_DATA, true))
		assert_true(++sent <= 64);
	assert_int_equal(sent, 32);
	assert_null(a->ops->tx_slot(ca));
	assert_int_equal(a->ops->tx_space(ca), 0);
	/* Releasing one RX slot pumps one backlogged frame: one TX slot. */
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	assert_int_equal(check_frame(&f), 0);
	b->ops->rx_release(cb);
	assert_int_equal(a->ops->tx_space(ca), 1);
	for (uint32_t i = 1; i < 32; i++) {
		assert_int_equal(b->ops->rx_peek(cb, &f), 1);
		assert_int_equal(check_frame(&f), i);
		b->ops->rx_release(cb);
	}
	assert_int_equal(b->ops->rx_peek(cb, &f), 0);
	b->ops->rx_release(cb); /* nothing peeked: must not desync */
	assert_int_equal(a->ops->tx_space(ca), 16);
	assert_true(send1(a, ca, 32, U4L_PDF_DATA, true));
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	assert_int_equal(check_frame(&f), 32);
	/* Invalid lengths are never delivered. */
	b->ops->rx_release(cb);
	assert_non_null(a->ops->tx_slot(ca));
	a->ops->tx_post(ca, 0, U4L_PDF_DATA);
	assert_non_null(a->ops->tx_slot(ca));
	a->ops->tx_post(ca, U4L_FRAME_MAX + 1, U4L_PDF_DATA);
	a->ops->tx_doorbell(ca);
	assert_int_equal(b->ops->rx_peek(cb, &f), 0);
	assert_int_equal(a->ops->tx_space(ca), 16);
	/* Full-size frames: length 4096 encodes as 0 in the descriptor. */
	uint8_t *buf = a->ops->tx_slot(ca);
	memset(buf, 0xab, U4L_FRAME_MAX);
	a->ops->tx_post(ca, U4L_FRAME_MAX, U4L_PDF_DATA);
	a->ops->tx_doorbell(ca);
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	assert_int_equal(f.len, U4L_FRAME_MAX);
	assert_int_equal(((const uint8_t *)f.buf)[U4L_FRAME_MAX - 1], 0xab);
	b->ops->rx_release(cb);
	a->ops->close(a);
	b->ops->close(b);
}

static void rate_1g(struct u4l_sim_config *c)
{
	c->rate_bps = 1000000000ull;
	c->latency_ns = 0;
}

static void test_throttled(void **state)
{
	const char *n = make_cable("rate", NULL, rate_1g);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	const uint32_t N = 2000;
	uint32_t sent = 0, got = 0;

	pair(n, &a, &b, &ca, &cb);
	assert_int_equal(a->ops->wire_rate(a), 125000000ull);
	uint64_t t0 = u4l_now_ns();
	while (got < N) {
		while (sent < N && a->ops->tx_slot(ca)) {
			uint8_t *buf = a->ops->tx_slot(ca);
			memset(buf, (int)sent, U4L_FRAME_MAX);
			a->ops->tx_post(ca, U4L_FRAME_MAX, U4L_PDF_DATA);
			sent++;
		}
		a->ops->tx_doorbell(ca);
		while (b->ops->rx_peek(cb, &f) == 1) {
			assert_int_equal(((const uint8_t *)f.buf)[100],
					 (uint8_t)got);
			got++;
			b->ops->rx_release(cb);
		}
		assert_true(u4l_now_ns() - t0 < 30000000000ull);
	}
	double el = (double)(u4l_now_ns() - t0);
	double expect = (double)N * U4L_FRAME_MAX * 8.0; /* ns at 1 Gb/s */
	assert_true(el >= 0.9 * expect);
	assert_true(el < 20.0 * expect);
	a->ops->close(a);
	b->ops->close(b);
}

static void lat_50ms(struct u4l_sim_config *c)
{
	c->latency_ns = 50000000;
}

static void test_arrival_gating(void **state)
{
	const char *n = make_cable("gate", NULL, lat_50ms);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;

	pair(n, &a, &b, &ca, &cb);
	uint64_t t0 = u4l_now_ns();
	assert_true(send1(a, ca, 7, U4L_PDF_DATA, true));
	assert_int_equal(b->ops->rx_peek(cb, &f), 0);
	/* TX completes at departure (unthrottled: immediately). */
	assert_int_equal(a->ops->tx_space(ca), 256);
	int r;
	while ((r = b->ops->rx_peek(cb, &f)) == 0)
		assert_true(u4l_now_ns() - t0 < 5000000000ull);
	assert_int_equal(r, 1);
	assert_true(u4l_now_ns() - t0 >= 50000000ull);
	assert_int_equal(check_frame(&f), 7);
	b->ops->rx_release(cb);

	/* wait() sleeps until the arrival time, not to the deadline. */
	t0 = u4l_now_ns();
	assert_true(send1(a, ca, 8, U4L_PDF_DATA, true));
	b->ops->wait(b, t0 + 2000000000ull, 0);
	while (b->ops->rx_peek(cb, &f) == 0)
		b->ops->wait(b, t0 + 2000000000ull, 0);
	uint64_t el = u4l_now_ns() - t0;
	assert_true(el >= 50000000ull);
	assert_true(el < 1500000000ull);
	b->ops->rx_release(cb);
	a->ops->close(a);
	b->ops->close(b);
}

static void test_e2e_slow_receiver(void **state)
{
	const char *n = make_cable("e2e", NULL, depth16);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	uint32_t sent = 0, next = 0;

	pair(n, &a, &b, &ca, &cb);
	for (int round = 0; next < 500 && round < 100000; round++) {
		while (sent < 500 && send1(a, ca, sent, U4L_PDF_DATA, true))
			sent++;
		/* slow: at most 3 frames per round */
		for (int k = 0; k < 3 && b->ops->rx_peek(cb, &f) == 1; k++) {
			assert_int_equal(check_frame(&f), next++);
			b->ops->rx_release(cb);
		}
	}
	assert_int_equal(next, 500);
	struct u4l_counters c[2];
	stat_of(n, c);
	assert_int_equal(c[1].rx_overflow, 0);
	assert_int_equal(c[1].rx_frames, 500);
	a->ops->close(a);
	b->ops->close(b);
}

static void e2e_off(struct u4l_sim_config *c)
{
	c->ring_depth = 16;
	c->e2e = 0;
}

static void test_e2e_off_overflow(void **state)
{
	const char *n = make_cable("ovf", NULL, e2e_off);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	uint32_t got = 0;

	pair(n, &a, &b, &ca, &cb);
	for (uint32_t s = 0; s < 64; s++)
		assert_true(
		    send1(a, ca, s, U4L_PDF_DATA, true)); /* never full */
	while (b->ops->rx_peek(cb, &f) == 1) {
		assert_int_equal(check_frame(&f), got++);
		b->ops->rx_release(cb);
	}
	assert_int_equal(got, 16);
	struct u4l_counters c[2];
	stat_of(n, c);
	assert_int_equal(c[1].rx_overflow, 48);
	assert_int_equal(c[0].tx_frames, 64);
	assert_int_equal(c[1].rx_frames, 16);
	assert_int_equal(c[0].rx_overflow, 0);
	a->ops->close(a);
	b->ops->close(b);
}

/* Fault runs: N frames a -> b, receiver drains as it goes. */
static void two_chans(struct u4l_sim_config *c)
{
	c->max_channels = 2;
}

static void test_channel_budget(void **state)
{
	const char *n = make_cable("budget", NULL, two_chans);
	struct u4l_dev *a1 = open_end(n, 0), *a2 = open_end(n, 0),
		       *a3 = open_end(n, 0);
	struct u4l_dev *b1 = open_end(n, 1);
	struct u4l_chan *c, *c2;
	uint32_t B = b1->ops->ctx_id(b1);

	assert_int_equal(a1->ops->chan_get(a1, B, &c), 0);
	assert_int_equal(a2->ops->chan_get(a2, B, &c), 0);
	assert_int_equal(a3->ops->chan_get(a3, B, &c), -ENOSPC);
	/* Loopback channels are free, as are channels to oneself. */
	assert_int_equal(a1->ops->chan_get(a1, a2->ops->ctx_id(a2), &c), 0);
	assert_int_equal(a3->ops->chan_get(a3, a1->ops->ctx_id(a1), &c), 0);
	assert_int_equal(a3->ops->chan_get(a3, a3->ops->ctx_id(a3), &c2), 0);
	assert_int_equal(a3->ops->chan_get(a3, B, &c), -ENOSPC);
	/* Unknown contexts. */
	assert_int_equal(a3->ops->chan_get(a3, 63, &c), -EHOSTUNREACH);
	assert_int_equal(a3->ops->chan_get(a3, 1000, &c), -EHOSTUNREACH);
	assert_false(a3->ops->ctx_alive(a3, 63));

	/* Loopback delivers, and a self channel loops back to itself. */
	struct u4l_rx_frame f;
	assert_true(send1(a3, c2, 5, U4L_PDF_DATA, true));
	assert_int_equal(a3->ops->rx_peek(c2, &f), 1);
	assert_int_equal(check_frame(&f), 5);
	a3->ops->rx_release(c2);
	struct u4l_counters cnt[2];
	stat_of(n, cnt);
	assert_int_equal(cnt[0].tx_frames, 0); /* loopback is not on the wire */

	/* Closing a1 frees its cross-cable channel: a3 may now connect. */
	uint32_t A1 = a1->ops->ctx_id(a1);
	a1->ops->close(a1);
	assert_int_equal(a3->ops->chan_get(a3, A1, &c), -EHOSTUNREACH);
	assert_int_equal(a3->ops->chan_get(a3, B, &c), 0);
	a2->ops->close(a2);
	a3->ops->close(a3);
	b1->ops->close(b1);
}

static void test_accept_once(void **state)
{
	const char *n = make_cable("accept", NULL, NULL);
	struct u4l_dev *a = open_end(n, 0), *b = open_end(n, 1),
		       *a2 = open_end(n, 0);
	struct u4l_chan *c1, *c2, *x;
	uint32_t B = b->ops->ctx_id(b);

	assert_true(a->ops->ctx_id(a) != B);
	assert_null(b->ops->chan_accept(b));
	assert_int_equal(a->ops->chan_get(a, B, &c1), 0);
	assert_int_equal(a2->ops->chan_get(a2, B, &c2), 0);
	struct u4l_chan *g1 = b->ops->chan_accept(b),
			*g2 = b->ops->chan_accept(b);
	assert_non_null(g1);
	assert_non_null(g2);
	assert_ptr_not_equal(g1, g2);
	assert_null(b->ops->chan_accept(b));
	uint32_t r1 = b->ops->chan_remote(g1), r2 = b->ops->chan_remote(g2);
	assert_true((r1 == a->ops->ctx_id(a) && r2 == a2->ops->ctx_id(a2)) ||
		    (r2 == a->ops->ctx_id(a) && r1 == a2->ops->ctx_id(a2)));
	assert_int_equal(b->ops->chan_get(b, r1, &x), 0);
	assert_ptr_equal(x, g1);
	/* Loopback: a2 learns of a's channel through accept too. */
	assert_int_equal(a->ops->chan_get(a, a2->ops->ctx_id(a2), &x), 0);
	struct u4l_chan *gl = a2->ops->chan_accept(a2);
	assert_non_null(gl);
	assert_int_equal(a2->ops->chan_remote(gl), a->ops->ctx_id(a));
	assert_null(a2->ops->chan_accept(a2));
	/* Found by chan_get before accept: accept does not report it again. */
	struct u4l_dev *b2 = open_end(n, 1);
	assert_int_equal(a->ops->chan_get(a, b2->ops->ctx_id(b2), &x), 0);
	assert_int_equal(b2->ops->chan_get(b2, a->ops->ctx_id(a), &x), 0);
	assert_null(b2->ops->chan_accept(b2));
	/* A dead peer's channel: no frames, tx goes nowhere, no crash. */
	struct u4l_rx_frame f;
	a->ops->close(a);
	assert_int_equal(b2->ops->rx_peek(x, &f), 0);
	for (int i = 0; i < 600; i++)
		assert_true(send1(b2, x, (uint32_t)i, U4L_PDF_DATA, true));
	b2->ops->rx_release(x);
	assert_int_equal(b2->ops->tx_space(x), 256);
	b2->ops->close(b2);
	a2->ops->close(a2);
	b->ops->close(b);
}

static void test_dead_pid_reclaim(void **state)
{
	const char *n = make_cable("reclaim", NULL, NULL);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct u4l_dev *d;
		uint32_t id = 999;
		if (u4l_sim_open(n, 1, &d) == 0)
			id = d->ops->ctx_id(d);
		if (write(pfd[1], &id, 4) != 4)
			_exit(2);
		_exit(0); /* no close: the slot is left behind */
	}
	uint32_t child_id;
	assert_int_equal(read(pfd[0], &child_id, 4), 4);
	close(pfd[0]);
	close(pfd[1]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(child_id < U4L_MAX_CTX);

	struct u4l_dev *devs[U4L_MAX_CTX];
	int nd = 0;
	devs[nd++] = open_end(n, 0);
	assert_false(devs[0]->ops->ctx_alive(devs[0], child_id));
	struct u4l_chan *c;
	assert_int_equal(devs[0]->ops->chan_get(devs[0], child_id, &c),
			 -EHOSTUNREACH);
	while (nd < (int)U4L_MAX_CTX - 1) {
		devs[nd] = open_end(n, (uint32_t)nd & 1);
		nd++;
	}
	/* Table full but for the dead child's slot: reclaimed on demand. */
	struct u4l_dev *last = open_end(n, 1);
	assert_int_equal(last->ops->ctx_id(last), child_id);
	struct u4l_dev *none;
	assert_int_equal(u4l_sim_open(n, 0, &none), -EMFILE);
	last->ops->close(last);
	for (int i = 0; i < nd; i++)
		devs[i]->ops->close(devs[i]);
}

static void budget1(struct u4l_sim_config *c)
{
	c->max_channels = 1;
}

static void test_dead_pid_channel_budget(void **state)
{
	const char *n = make_cable("rbudget", NULL, budget1);
	struct u4l_dev *a = open_end(n, 0), *b = open_end(n, 1);
	uint32_t A = a->ops->ctx_id(a);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct u4l_dev *d;
		struct u4l_chan *c;
		if (u4l_sim_open(n, 1, &d) || d->ops->chan_get(d, A, &c))
			_exit(1);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The dead child holds the only channel; chan_get reclaims it. */
	struct u4l_chan *c;
	assert_int_equal(b->ops->chan_get(b, A, &c), 0);
	a->ops->close(a);
	b->ops->close(b);
}

static void two_process(const char *tag, void (*tweak)(struct u4l_sim_config *),
			uint32_t N, uint64_t wait_ns)
{
	const char *n = make_cable(tag, NULL, tweak);
	struct u4l_dev *a = open_end(n, 0);
	uint32_t A = a->ops->ctx_id(a);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Receiver: accept the channel, verify every frame, echo a
		 * count. */
		struct u4l_dev *b;
		struct u4l_chan *cb = NULL;
		struct u4l_rx_frame f;
		uint32_t next = 0, id;
		if (u4l_sim_open(n, 1, &b))
			_exit(10);
		id = b->ops->ctx_id(b);
		if (write(pfd[1], &id, 4) != 4)
			_exit(11);
		uint64_t deadline = u4l_now_ns() + 20000000000ull;
		while (!cb && u4l_now_ns() < deadline) {
			cb = b->ops->chan_accept(b);
			if (!cb)
				b->ops->wait(b, u4l_now_ns() + 100000000ull, 0);
		}
		if (!cb || b->ops->chan_remote(cb) != A)
			_exit(12);
		while (next < N && u4l_now_ns() < deadline) {
			int r = b->ops->rx_peek(cb, &f);
			if (r == 1) {
				if (check_frame(&f) != next)
					_exit(13);
				next++;
				b->ops->rx_release(cb);
			} else {
				b->ops->wait(b, u4l_now_ns() + wait_ns, 0);
			}
		}
		if (next != N)
			_exit(14);
		/* answer with one frame */
		void *buf = b->ops->tx_slot(cb);
		if (!buf)
			_exit(15);
		fill_frame(buf, frame_len(N), N);
		b->ops->tx_post(cb, frame_len(N), U4L_PDF_CTRL);
		b->ops->tx_doorbell(cb);
		usleep(200000);
		b->ops->close(b);
		_exit(0);
	}
	uint32_t B;
	assert_int_equal(read(pfd[0], &B, 4), 4);
	close(pfd[0]);
	close(pfd[1]);
	struct u4l_chan *ca;
	assert_int_equal(a->ops->chan_get(a, B, &ca), 0);
	uint64_t deadline = u4l_now_ns() + 20000000000ull;
	for (uint32_t s = 0; s < N; s++)
		while (!send1(a, ca, s, U4L_PDF_DATA, true)) {
			assert_true(u4l_now_ns() < deadline);
			a->ops->wait(a, u4l_now_ns() + wait_ns, 0);
		}
	struct u4l_rx_frame f;
	int r;
	while ((r = a->ops->rx_peek(ca, &f)) == 0) {
		assert_true(u4l_now_ns() < deadline);
		a->ops->wait(a, u4l_now_ns() + 50000000ull, 0);
	}
	assert_int_equal(check_frame(&f), N);
	a->ops->rx_release(ca);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_false(a->ops->ctx_alive(a, B));
	a->ops->close(a);
}

static void test_two_process(void **state)
{
	two_process("2proc", NULL, 20000, 10000000ull);
}

/*
 * Tiny rings, many frames, long waits: a lost wakeup or a lost E2E pump
 * (receiver's release racing the sender's doorbell) shows up as a stall
 * past the 20 s deadline.
 */
static void test_two_process_backpressure(void **state)
{
	uint64_t t0 = u4l_now_ns();
	two_process("2proc16", depth16, 100000, 3000000000ull);
	assert_true(u4l_now_ns() - t0 < 15000000000ull);
}

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

static void test_bad_segment(void **state)
{
	const char *n = cable_name("bad");
	struct u4l_dev *d = NULL;
	int fd = shm_open(n, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(u4l_sim_open(n, 0, &d), -EINVAL); /* empty */
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	char *p =
	    mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	memset(p, 0x5a, 1 << 20);
	assert_int_equal(u4l_sim_open(n, 0, &d), -EINVAL); /* bad magic */
	struct u4l_counters c[2];
	assert_int_equal(u4l_sim_stat(n, c), -EINVAL);
	munmap(p, 1 << 20);
	close(fd);
	shm_unlink(n);

	/* A valid cable of another layout version. */
	n = make_cable("badver", NULL, NULL);
	fd = shm_open(n, O_RDWR, 0);
	assert_true(fd >= 0);
	uint32_t *hdr =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(hdr != MAP_FAILED);
	hdr[2] += 1; /* version follows the 64-bit magic */
	assert_int_equal(u4l_sim_open(n, 0, &d), -EPROTO);
	hdr[2] -= 1;
	assert_int_equal(u4l_sim_open(n, 0, &d), 0);
	d->ops->close(d);
	/* Truncated file. */
	assert_int_equal(ftruncate(fd, 8192), 0);
	assert_int_equal(u4l_sim_open(n, 0, &d), -EINVAL);
	munmap(hdr, 4096);
	close(fd);

	/* Bad configs and arguments. */
	struct u4l_sim_config cfg;
	u4l_sim_config_default(&cfg);
	cfg.ring_depth = 100;
	assert_int_equal(u4l_sim_create(cable_name("cfg"), &cfg), -EINVAL);
	u4l_sim_config_default(&cfg);
	cfg.faults[1].drop = 1.5;
	assert_int_equal(u4l_sim_create(cable_name("cfg2"), &cfg), -EINVAL);
	assert_int_equal(u4l_sim_create(n, NULL), -EEXIST);
	assert_int_equal(u4l_sim_open(n, 2, &d), -EINVAL);
	assert_int_equal(u4l_sim_open(cable_name("nope"), 0, &d), -ENOENT);
}

static void test_defaults_reconfigure(void **state)
{
	struct u4l_sim_config cfg, rd;
	u4l_sim_config_default(&cfg);
	assert_int_equal(cfg.rate_bps, 20000000000ull);
	assert_int_equal(cfg.latency_ns, 1000);
	assert_int_equal(cfg.ring_depth, 256);
	assert_int_equal(cfg.max_channels, 16);
	assert_int_equal(cfg.e2e, 1);
	const char *n = cable_name("reconf");
	assert_int_equal(u4l_sim_create(n, NULL), 0);
	struct u4l_dev *a = open_end(n, 0);
	assert_int_equal(a->ops->wire_rate(a), 2500000000ull);
	cfg.rate_bps = 8000;
	cfg.latency_ns = 5;
	cfg.e2e = 0;
	cfg.ring_depth = 16;  /* ignored: fixed at create */
	cfg.max_channels = 1; /* ignored */
	cfg.faults[1].dup = 0.25;
	assert_int_equal(u4l_sim_reconfigure(n, &cfg), 0);
	assert_int_equal(u4l_sim_read_config(n, &rd), 0);
	assert_int_equal(rd.rate_bps, 8000);
	assert_int_equal(rd.latency_ns, 5);
	assert_int_equal(rd.e2e, 0);
	assert_int_equal(rd.ring_depth, 256);
	assert_int_equal(rd.max_channels, 16);
	assert_true(rd.faults[1].dup == 0.25);
	assert_int_equal(a->ops->wire_rate(a), 1000);
	cfg.faults[0].crc = -1;
	assert_int_equal(u4l_sim_reconfigure(n, &cfg), -EINVAL);
	a->ops->close(a);
}

static uint64_t shm_blocks(const char *n)
{
	int fd = shm_open(n, O_RDONLY, 0);
	struct stat st;
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	return (uint64_t)st.st_blocks * 512;
}

static void test_memory_released(void **state)
{
	const char *n = make_cable("punch", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;

	uint64_t base = shm_blocks(n);
	for (int round = 0; round < 3; round++) {
		pair(n, &a, &b, &ca, &cb);
		for (uint32_t s = 0; s < 2000; s++) {
			while (!send1(a, ca, s, U4L_PDF_DATA, true))
				while (b->ops->rx_peek(cb, &f) == 1)
					b->ops->rx_release(cb);
		}
		assert_true(shm_blocks(n) > base + 1000000);
		a->ops->close(a);
		b->ops->close(b);
		assert_true(shm_blocks(n) < base + 64 * 1024);
	}
}


/*
 * A sender that closes right after its last doorbell (a UC pingpong's last
 * reply) must not take the frames already delivered with it.
 */
static void test_peer_close_keeps_delivered(void **state)
{
	(void)state;
	const char *n = make_cable("orphan", NULL, NULL);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb, *c2;
	struct u4l_rx_frame f;

	pair(n, &a, &b, &ca, &cb);
	for (uint32_t i = 0; i < 8; i++)
		assert_true(send1(a, ca, i, U4L_PDF_DATA, true));
	a->ops->close(a);
	for (uint32_t i = 0; i < 8; i++) {
		uint64_t end = u4l_now_ns() + 1000000000ull;
		int r;

		while ((r = b->ops->rx_peek(cb, &f)) == 0 &&
		       u4l_now_ns() < end)
			;
		assert_int_equal(r, 1);
		assert_int_equal(check_frame(&f), (int)i);
		b->ops->rx_release(cb);
	}
	/* nothing more, and sends go nowhere without harm */
	assert_int_equal(b->ops->rx_peek(cb, &f), 0);
	assert_true(send1(b, cb, 9, U4L_PDF_DATA, true));
	/* a new context on that end gets a fresh channel, not the orphan */
	a = open_end(n, 0);
	assert_int_equal(a->ops->chan_get(a, b->ops->ctx_id(b), &c2), 0);
	assert_true(send1(a, c2, 3, U4L_PDF_DATA, true));
	a->ops->close(a);
	b->ops->close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_roundtrip, cleanup),
	    cmocka_unit_test_teardown(test_ring_full, cleanup),
	    cmocka_unit_test_teardown(test_throttled, cleanup),
	    cmocka_unit_test_teardown(test_arrival_gating, cleanup),
	    cmocka_unit_test_teardown(test_e2e_slow_receiver, cleanup),
	    cmocka_unit_test_teardown(test_e2e_off_overflow, cleanup),
	    cmocka_unit_test_teardown(test_channel_budget, cleanup),
	    cmocka_unit_test_teardown(test_accept_once, cleanup),
	    cmocka_unit_test_teardown(test_dead_pid_reclaim, cleanup),
	    cmocka_unit_test_teardown(test_dead_pid_channel_budget, cleanup),
	    cmocka_unit_test_teardown(test_two_process, cleanup),
	    cmocka_unit_test_teardown(test_peer_close_keeps_delivered, cleanup),
	    cmocka_unit_test_teardown(test_two_process_backpressure, cleanup),
	    cmocka_unit_test_teardown(test_wait, cleanup),
	    cmocka_unit_test_teardown(test_wait_tx, cleanup),
	    cmocka_unit_test_teardown(test_wait_data, cleanup),
	    cmocka_unit_test_teardown(test_rx_covered, cleanup),
	    cmocka_unit_test_teardown(test_bad_segment, cleanup),
	    cmocka_unit_test_teardown(test_defaults_reconfigure, cleanup),
	    cmocka_unit_test_teardown(test_memory_released, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
