// SPDX-License-Identifier: MIT
/*
 * The software cable's lanes and ring rate: a lane is a channel of its own
 * between two contexts (accepted by the peer as such, in the channel
 * budget, never on a loopback), and with a ring rate no frame of a ring
 * arrives sooner than that ring could have moved it, while the wire's own
 * rate still holds for the rings together.
 */
#include "sim_test.h"

static void three_chans(struct u4l_sim_config *c)
{
	c->max_channels = 3;
}

/* The peer's handle of a channel, found by accept, with its lane. */
static struct u4l_chan *accept_lane(struct u4l_dev *b, uint32_t lane)
{
	struct u4l_chan *c = b->ops->chan_accept(b);

	assert_non_null(c);
	assert_int_equal(b->ops->chan_lane(c), lane);
	return c;
}

static void test_lanes_are_channels(void **state)
{
	const char *n = make_cable("lanes", NULL, three_chans);
	struct u4l_dev *a = open_end(n, 0), *b = open_end(n, 1),
		       *a2 = open_end(n, 0);
	uint32_t A = a->ops->ctx_id(a), B = b->ops->ctx_id(b);
	struct u4l_chan *c0, *c1, *x, *b0, *b1;
	struct u4l_rx_frame f;

	(void)state;
	assert_int_equal(a->ops->chan_get(a, B, &c0), 0);
	assert_int_equal(a->ops->chan_get_lane(a, B, 1, &c1), 0);
	assert_ptr_not_equal(c0, c1);
	assert_int_equal(a->ops->chan_lane(c0), 0);
	assert_int_equal(a->ops->chan_lane(c1), 1);
	assert_int_equal(a->ops->chan_get_lane(a, B, 1, &x), 0);
	assert_ptr_equal(x, c1);
	b0 = accept_lane(b, 0);
	b1 = accept_lane(b, 1);
	assert_null(b->ops->chan_accept(b));
	assert_int_equal(b->ops->chan_remote(b1), A);
	assert_int_equal(b->ops->chan_get_lane(b, A, 1, &x), 0);
	assert_ptr_equal(x, b1);
	/* each lane carries its own frames, both ways */
	assert_true(send1(a, c1, 7, U4L_PDF_DATA, true));
	assert_true(send1(a, c0, 8, U4L_PDF_DATA, true));
	assert_int_equal(b->ops->rx_peek(b1, &f), 1);
	assert_int_equal(check_frame(&f), 7);
	b->ops->rx_release(b1);
	assert_int_equal(b->ops->rx_peek(b1, &f), 0);
	assert_int_equal(b->ops->rx_peek(b0, &f), 1);
	assert_int_equal(check_frame(&f), 8);
	b->ops->rx_release(b0);
	assert_true(send1(b, b1, 9, U4L_PDF_CTRL, true));
	assert_int_equal(a->ops->rx_peek(c1, &f), 1);
	assert_int_equal(check_frame(&f), 9);
	a->ops->rx_release(c1);
	/* lanes out of range, and none on a loopback */
	assert_int_equal(a->ops->chan_get_lane(a, B, 0, &x), -EINVAL);
	assert_int_equal(a->ops->chan_get_lane(a, B, U4L_MAX_LANES, &x),
			 -EINVAL);
	assert_int_equal(a->ops->chan_get_lane(a, a2->ops->ctx_id(a2), 1, &x),
			 -EOPNOTSUPP);
	/* the budget counts lanes: 3 channels, 2 taken, lane 3 of 4 fits */
	assert_int_equal(a->ops->chan_get_lane(a, B, 2, &x), 0);
	assert_int_equal(a->ops->chan_get_lane(a, B, 3, &x), -ENOSPC);
	assert_int_equal(a2->ops->chan_get(a2, B, &x), -ENOSPC);
	/* a leaving peer takes its lanes with it: the budget is back */
	a->ops->close(a);
	assert_int_equal(a2->ops->chan_get(a2, B, &x), 0);
	assert_int_equal(a2->ops->chan_get_lane(a2, B, 1, &x), 0);
	assert_int_equal(a2->ops->chan_get_lane(a2, B, 2, &x), 0);
	a2->ops->close(a2);
	b->ops->close(b);
}

/* Rate 2 Gb/s for the wire, 1 Gb/s for a ring, no latency. */
static void ring_half(struct u4l_sim_config *c)
{
	c->rate_bps = 2000000000ull;
	c->ring_rate_bps = 1000000000ull;
	c->latency_ns = 0;
}

/* ns one frame of len bytes takes at bits_per_s */
static uint64_t ser_ns(uint32_t len, uint64_t bits_per_s)
{
	return (uint64_t)len * 8000000000ull / bits_per_s;
}

/*
 * Post nf frames on each of the lanes' channels (frame i of lane l has
 * sequence l * 1000 + i), ring once per lane, and record when the peer
 * first sees each: seen[l][i] in ns after the first doorbell.
 */
#define NF 8
static void timed_run(struct u4l_dev *a, struct u4l_chan **ca,
		      struct u4l_dev *b, struct u4l_chan **cb, uint32_t lanes,
		      uint64_t seen[][NF])
{
	uint32_t got[U4L_MAX_LANES] = { 0 }, total = 0, l, i;
	uint64_t t0;

	for (l = 0; l < lanes; l++)
		for (i = 0; i < NF; i++)
			assert_true(send1(a, ca[l], l * 1000 + i,
					  U4L_PDF_DATA, false));
	t0 = u4vt_now_ns();
	for (l = 0; l < lanes; l++)
		a->ops->tx_doorbell(ca[l]);
	while (total < lanes * NF) {
		assert_true(u4vt_now_ns() - t0 < 5000000000ull);
		for (l = 0; l < lanes; l++) {
			struct u4l_rx_frame f;

			if (b->ops->rx_peek(cb[l], &f) != 1)
				continue;
			assert_int_equal(check_frame(&f),
					 l * 1000 + got[l]);
			seen[l][got[l]++] = u4vt_now_ns() - t0;
			b->ops->rx_release(cb[l]);
			total++;
		}
	}
}

static void test_ring_rate_paces(void **state)
{
	const char *n = make_cable("ringrate", NULL, ring_half);
	struct u4l_dev *a = open_end(n, 0), *b = open_end(n, 1);
	uint32_t B = b->ops->ctx_id(b), l, i;
	struct u4l_chan *ca[2], *cb[2];
	uint64_t seen[2][NF], ring_ns, wire_ns, sum_ring = 0, sum_wire = 0;

	(void)state;
	assert_int_equal(a->ops->chan_get(a, B, &ca[0]), 0);
	assert_int_equal(a->ops->chan_get_lane(a, B, 1, &ca[1]), 0);
	cb[0] = accept_lane(b, 0);
	cb[1] = accept_lane(b, 1);
	/* one ring alone: no faster than the ring rate */
	timed_run(a, ca, b, cb, 1, seen);
	for (i = 0; i < NF; i++) {
		sum_ring += ser_ns(frame_len(i), 1000000000ull);
		assert_true(seen[0][i] >= sum_ring);
	}
	/* two rings at once: each at its pace, and the wire's for both */
	timed_run(a, ca, b, cb, 2, seen);
	for (i = 0; i < NF; i++) {
		for (l = 0; l < 2; l++) {
			ring_ns = 0;
			for (uint32_t k = 0; k <= i; k++)
				ring_ns += ser_ns(frame_len(l * 1000 + k),
						  1000000000ull);
			assert_true(seen[l][i] >= ring_ns);
		}
	}
	for (l = 0; l < 2; l++)
		for (i = 0; i < NF; i++)
			sum_wire += ser_ns(frame_len(l * 1000 + i),
					   2000000000ull);
	wire_ns = seen[0][NF - 1] > seen[1][NF - 1] ? seen[0][NF - 1] :
						       seen[1][NF - 1];
	assert_true(wire_ns >= sum_wire);
	a->ops->close(a);
	b->ops->close(b);
}

/* The ring rate is a live setting, and reads back. */
static void test_ring_rate_config(void **state)
{
	struct u4l_sim_config cfg;
	const char *n = make_cable("ringcfg", &cfg, ring_half);
	struct u4l_sim_config got;

	(void)state;
	assert_int_equal(u4l_sim_read_config(n, &got), 0);
	assert_int_equal(got.ring_rate_bps, 1000000000ull);
	cfg.ring_rate_bps = 5000000000ull;
	assert_int_equal(u4l_sim_reconfigure(n, &cfg), 0);
	assert_int_equal(u4l_sim_read_config(n, &got), 0);
	assert_int_equal(got.ring_rate_bps, 5000000000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_lanes_are_channels, cleanup),
		cmocka_unit_test_teardown(test_ring_rate_paces, cleanup),
		cmocka_unit_test_teardown(test_ring_rate_config, cleanup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
