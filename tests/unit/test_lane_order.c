// SPDX-License-Identifier: MIT
/*
 * The receiver's lane order (ctx/lanes.c, u4v_lanes_rx_next) over two
 * scripted lanes: frames come out in lane sequence order; a frame whose
 * predecessor may still come on an empty lane waits, for the lane wait and
 * no longer; a frame the wait gave up on that comes after all is passed on
 * without taking the order back (the later frames do not wait for it
 * again), and makes the next wait twice as long, up to the most; one that
 * never comes halves it again. While a UC / UD message is part taken, the
 * wait for its rest is the longest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine_int.h"

#define QLEN 8

/* One lane: the lane sequences of the frames in its RX ring. */
struct fake_lane {
	uint16_t seq[QLEN];
	uint8_t opcode[QLEN];
	uint32_t n;
	uint8_t head[U4W_BASE_LEN];
};

static struct fake_lane lanes[2];

static int fake_peek(struct u4l_chan *chan, struct u4l_rx_frame *f)
{
	struct fake_lane *l = (struct fake_lane *)chan;

	if (!l->n)
		return 0;
	memset(l->head, 0, sizeof(l->head));
	l->head[0] = l->opcode[0];
	u4w_set_lane_seq(l->head, l->seq[0]);
	f->buf = f->head = l->head;
	f->len = sizeof(l->head);
	f->flags = 0;
	return 1;
}

static const struct u4l_ops fake_ops = { .name = "fake", .rx_peek = fake_peek };

struct env {
	struct u4v_ctx ctx;
	struct u4l_counters cnt;
	struct u4v_peer peer;
};

static void env_init(struct env *e)
{
	memset(e, 0, sizeof(*e));
	memset(lanes, 0, sizeof(lanes));
	e->ctx.ops = &fake_ops;
	e->ctx.cnt = &e->cnt;
	e->peer.lanes[0] = (struct u4l_chan *)&lanes[0];
	e->peer.lanes[1] = (struct u4l_chan *)&lanes[1];
	e->peer.chan = e->peer.lanes[0];
	e->peer.striped = true;
}

static void arrive_op(int lane, uint16_t seq, uint8_t opcode)
{
	struct fake_lane *l = &lanes[lane];

	assert_true(l->n < QLEN);
	l->opcode[l->n] = opcode;
	l->seq[l->n++] = seq;
}

/* An RC frame (RC recovers its order). */
static void arrive(int lane, uint16_t seq)
{
	arrive_op(lane, seq, U4W_RC | U4W_WRITE_MIDDLE);
}

/* The frame rx_next gives, released from its lane; -1 when none. */
static int next(struct env *e)
{
	struct u4l_rx_frame f;
	struct u4l_chan *chan = u4v_lanes_rx_next(&e->ctx, &e->peer, &f);
	struct fake_lane *l = (struct fake_lane *)chan;
	uint16_t seq;

	if (!chan)
		return -1;
	seq = u4w_lane_seq(f.head);
	assert_int_equal(seq, l->seq[0]);
	memmove(l->seq, l->seq + 1, (l->n - 1) * sizeof(l->seq[0]));
	memmove(l->opcode, l->opcode + 1, --l->n);
	return seq;
}

/*
 * Ask until the frame comes, checking every answer against the clock: none
 * while the wait (wait_ns from its start) cannot have ended, the frame once
 * it must have. Returns the frame.
 */
static int next_after_wait(struct env *e, uint64_t wait_ns)
{
	uint64_t since, before, after;
	int got, asks = 0;

	assert_int_equal(next(e), -1); /* the wait begins */
	since = e->peer.rx_wait_since;
	assert_true(since != 0);
	for (;;) {
		before = u4v_now();
		got = next(e);
		after = u4v_now();
		asks++;
		if (got >= 0)
			break;
		assert_true(before < since + wait_ns);
		assert_true(asks < 100000000);
	}
	assert_true(after >= since + wait_ns);
	return got;
}

static void test_in_order(void **state)
{
	struct env e;

	(void)state;
	env_init(&e);
	arrive(1, 1);
	arrive(0, 0);
	arrive(0, 2);
	arrive(1, 3);
	for (int s = 0; s < 4; s++)
		assert_int_equal(next(&e), s);
	assert_int_equal(next(&e), -1);
	/* every lane has a later frame at its head: no wait, it was lost */
	arrive(0, 5);
	arrive(1, 6);
	assert_int_equal(next(&e), 5);
	assert_int_equal(e.cnt.lane_waits, 0);
}

static void test_late_frame(void **state)
{
	struct env e;

	(void)state;
	env_init(&e);
	arrive(0, 0);
	arrive(1, 1);
	assert_int_equal(next(&e), 0);
	assert_int_equal(next(&e), 1);
	arrive(0, 3); /* 2 is late on lane 1 */
	assert_int_equal(next_after_wait(&e, U4V_LANE_WAIT_NS), 3);
	assert_int_equal(e.cnt.lane_waits, 1);
	arrive(1, 2); /* it comes after all */
	assert_int_equal(next(&e), 2);
	assert_int_equal(e.cnt.lane_late, 1);
	/* the order goes on from 4: no wait for what came already */
	arrive(1, 4);
	assert_int_equal(next(&e), 4);
	assert_int_equal(e.cnt.lane_waits, 1);
	/* the next wait is twice as long */
	arrive(1, 6);
	assert_int_equal(next_after_wait(&e, 2 * U4V_LANE_WAIT_NS), 6);
	/* 5 never comes: a loss; the wait after it is halved back */
	arrive(0, 8);
	assert_int_equal(next_after_wait(&e, 2 * U4V_LANE_WAIT_NS), 8);
	arrive(0, 10);
	assert_int_equal(next_after_wait(&e, U4V_LANE_WAIT_NS), 10);
}

static void test_wait_bounded(void **state)
{
	uint64_t wait = U4V_LANE_WAIT_NS;
	uint16_t s = 0;
	struct env e;

	(void)state;
	env_init(&e);
	arrive(0, s);
	assert_int_equal(next(&e), s++);
	/* every wait's frame comes late: the wait grows to the most, no more */
	for (int k = 0; k < 6; k++) {
		arrive(0, (uint16_t)(s + 1));
		assert_int_equal(next_after_wait(&e, wait), s + 1);
		arrive(1, s);
		assert_int_equal(next(&e), s);
		s = (uint16_t)(s + 2);
		wait = wait * 2 < U4V_LANE_WAIT_MAX_NS ? wait * 2 :
							 U4V_LANE_WAIT_MAX_NS;
	}
	assert_int_equal(wait, U4V_LANE_WAIT_MAX_NS);
	assert_int_equal(e.peer.rx_wait_ns, U4V_LANE_WAIT_MAX_NS);
	assert_int_equal(e.cnt.lane_late, 6);
}

static void test_ud_message_waits_longest(void **state)
{
	struct env e;

	(void)state;
	env_init(&e);
	arrive_op(0, 0, U4W_UD | U4W_SEND_FIRST);
	assert_int_equal(next(&e), 0);
	assert_true(e.peer.rx_msg_open);
	/* its rest is late on lane 0: the longest wait, whatever it is now */
	arrive(1, 2);
	assert_int_equal(next_after_wait(&e, U4V_LANE_WAIT_MAX_NS), 2);
	assert_false(e.peer.rx_msg_open);
	/* a whole message closes it; the wait is the adaptive one again */
	arrive_op(0, 3, U4W_UC | U4W_SEND_FIRST);
	arrive_op(0, 4, U4W_UC | U4W_SEND_LAST);
	assert_int_equal(next(&e), 3);
	assert_true(e.peer.rx_msg_open);
	assert_int_equal(next(&e), 4);
	assert_false(e.peer.rx_msg_open);
	arrive(1, 6);
	assert_int_equal(next_after_wait(&e, U4V_LANE_WAIT_NS), 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_late_frame),
		cmocka_unit_test(test_wait_bounded),
		cmocka_unit_test(test_ud_message_waits_longest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
