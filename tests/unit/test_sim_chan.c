// SPDX-License-Identifier: MIT
/*
 * The software cable's channels: the cross-cable budget, accept, contexts
 * of dead processes reclaimed, frames delivered before a peer closed.
 */
#define _GNU_SOURCE
#include "sim_test.h"

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
	    cmocka_unit_test_teardown(test_channel_budget, cleanup),
	    cmocka_unit_test_teardown(test_accept_once, cleanup),
	    cmocka_unit_test_teardown(test_dead_pid_reclaim, cleanup),
	    cmocka_unit_test_teardown(test_dead_pid_channel_budget, cleanup),
	    cmocka_unit_test_teardown(test_peer_close_keeps_delivered, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
