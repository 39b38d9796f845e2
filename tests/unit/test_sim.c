// SPDX-License-Identifier: MIT
/*
 * The software cable: rings, the wire model (rate, latency), E2E flow
 * control, segment validation, configuration, memory given back. Channels:
 * test_sim_chan.c; two processes: test_sim_procs.c; wait/kick:
 * test_sim_wait.c; fault injection: test_sim_faults.c.
 */
#define _GNU_SOURCE
#include "sim_test.h"

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

/* frames of a few hundred bytes stay on the wire for a quarter second */
static void rate_10k_lat_50ms(struct u4l_sim_config *c)
{
	c->rate_bps = 10000;
	c->latency_ns = 50000000;
}

/* wire_due(): when the last frame on its way arrives, and leaves. */
static void test_wire_due(void **state)
{
	const char *n = make_cable("due", NULL, rate_10k_lat_50ms);
	/* ns on the wire at 10 kb/s */
	const uint64_t ser =
	    (frame_len(0) + frame_len(1) + frame_len(2)) * 800000ull;
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	uint64_t rx, tx, t0;
	uint32_t i;

	pair(n, &a, &b, &ca, &cb);
	a->ops->wire_due(ca, &rx, &tx);
	assert_true(rx == 0 && tx == 0);
	t0 = u4l_now_ns();
	for (i = 0; i < 3; i++)
		assert_true(send1(a, ca, i, U4L_PDF_DATA, i == 2));
	/* the third frame leaves once the three are serialised */
	a->ops->wire_due(ca, &rx, &tx);
	assert_int_equal(rx, 0);
	assert_true(tx >= t0 + ser);
	assert_true(tx < t0 + ser + 1000000000ull);
	b->ops->wire_due(cb, &rx, &tx);
	assert_int_equal(tx, 0);
	assert_true(rx >= t0 + ser + 50000000ull);
	for (i = 0; i < 3; i++) {
		while (b->ops->rx_peek(cb, &f) == 0)
			assert_true(u4l_now_ns() - t0 < 5000000000ull);
		assert_int_equal(check_frame(&f), i);
		b->ops->rx_release(cb);
	}
	/* all there, all gone: nothing is due */
	b->ops->wire_due(cb, &rx, &tx);
	assert_true(rx == 0 && tx == 0);
	a->ops->wire_due(ca, &rx, &tx);
	assert_true(rx == 0 && tx == 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_roundtrip, cleanup),
	    cmocka_unit_test_teardown(test_ring_full, cleanup),
	    cmocka_unit_test_teardown(test_throttled, cleanup),
	    cmocka_unit_test_teardown(test_arrival_gating, cleanup),
	    cmocka_unit_test_teardown(test_wire_due, cleanup),
	    cmocka_unit_test_teardown(test_e2e_slow_receiver, cleanup),
	    cmocka_unit_test_teardown(test_e2e_off_overflow, cleanup),
	    cmocka_unit_test_teardown(test_bad_segment, cleanup),
	    cmocka_unit_test_teardown(test_defaults_reconfigure, cleanup),
	    cmocka_unit_test_teardown(test_memory_released, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
