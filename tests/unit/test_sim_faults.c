// SPDX-License-Identifier: MIT
/* The software cable's fault injection, one class at a time, with a seed. */
#define _GNU_SOURCE
#include "sim_test.h"
struct fault_run {
	uint32_t got, crc, nowake, in_order_breaks, dups_identical, dups;
	uint8_t seen[4000];
	int32_t order[8000];
};

static struct u4l_sim_faults g_faults;
static uint64_t g_seed = 42;
static void set_faults(struct u4l_sim_config *c)
{
	c->faults[0] = g_faults;
	c->seed = g_seed;
}

static void fault_run(const char *tag, const struct u4l_sim_faults *fl,
		      uint32_t N, bool alt_ctrl, struct fault_run *fr,
		      struct u4l_counters c[2])
{
	g_faults = *fl;
	const char *n = make_cable(tag, NULL, set_faults);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	uint8_t prev[U4L_FRAME_MAX];
	uint32_t prev_len = 0, sent = 0;
	int64_t last = -1;

	memset(fr, 0, sizeof(*fr));
	pair(n, &a, &b, &ca, &cb);
	for (int guard = 0; guard < 1000000; guard++) {
		/* Small bursts: the RX ring keeps room for duplicates. */
		for (int burst = 0;
		     burst < 32 && sent < N &&
		     send1(a, ca, sent,
			   alt_ctrl && (sent & 1) ? U4L_PDF_CTRL : U4L_PDF_DATA,
			   true);
		     burst++)
			sent++;
		if (sent == N)
			a->ops->tx_doorbell(
			    ca); /* flushes a held (reordered) frame */
		int k = 0;
		while (b->ops->rx_peek(cb, &f) == 1) {
			k++;
			if (f.flags & U4L_RX_NOWAKE)
				fr->nowake++;
			if (f.flags & U4L_RX_CRC_ERR) {
				fr->crc++;
			} else {
				int64_t s = check_frame(&f);
				assert_true(s >= 0 && s < (int64_t)N);
				if (s == last) {
					fr->dups++;
					if (f.len == prev_len &&
					    !memcmp(prev, f.buf, f.len))
						fr->dups_identical++;
				} else {
					if (s < last)
						fr->in_order_breaks++;
					assert_true(fr->seen[s] < 255);
					fr->seen[s]++;
				}
				last = s;
				memcpy(prev, f.buf, f.len);
				prev_len = f.len;
				if (fr->got < 8000)
					fr->order[fr->got] = (int32_t)s;
			}
			fr->got++;
			b->ops->rx_release(cb);
		}
		if (sent == N && !k)
			break;
	}
	stat_of(n, c);
	a->ops->close(a);
	b->ops->close(b);
	assert_int_equal(u4l_sim_destroy(n), 0);
}

static void assert_near(uint64_t v, double expect)
{
	if (!((double)v > 0.7 * expect && (double)v < 1.3 * expect))
		fail_msg("count %llu not near %.1f", (unsigned long long)v,
			 expect);
}

static void test_fault_drop(void **state)
{
	struct u4l_sim_faults fl = {.drop = 0.2};
	static struct fault_run fr, fr2;
	struct u4l_counters c[2], c2[2];

	fault_run("fdrop", &fl, 2000, false, &fr, c);
	assert_near(c[1].fault_drop, 400);
	assert_int_equal(fr.got + c[1].fault_drop, 2000);
	assert_int_equal(c[1].rx_frames, fr.got);
	assert_int_equal(c[0].tx_frames, 2000);
	assert_int_equal(fr.in_order_breaks, 0);
	/* Same seed, same frames: same losses. */
	fault_run("fdrop2", &fl, 2000, false, &fr2, c2);
	assert_memory_equal(fr.seen, fr2.seen, sizeof(fr.seen));
	g_seed = 43;
	fault_run("fdrop3", &fl, 2000, false, &fr2, c2);
	g_seed = 42;
	assert_memory_not_equal(fr.seen, fr2.seen, 2000);
}

static void test_fault_dup(void **state)
{
	struct u4l_sim_faults fl = {.dup = 0.2};
	static struct fault_run fr;
	struct u4l_counters c[2];

	fault_run("fdup", &fl, 2000, false, &fr, c);
	assert_near(c[1].fault_dup, 400);
	assert_int_equal(fr.dups, c[1].fault_dup);
	assert_int_equal(fr.dups_identical, fr.dups);
	assert_int_equal(fr.got, 2000 + c[1].fault_dup);
	for (int i = 0; i < 2000; i++)
		assert_int_equal(fr.seen[i], 1);
}

static void test_fault_reorder(void **state)
{
	struct u4l_sim_faults fl = {.reorder = 0.2};
	static struct fault_run fr;
	struct u4l_counters c[2];

	fault_run("freo", &fl, 2000, false, &fr, c);
	assert_near(c[1].fault_reorder, 400);
	assert_int_equal(fr.got, 2000); /* loses nothing */
	for (int i = 0; i < 2000; i++)
		assert_int_equal(fr.seen[i], 1);
	assert_true(fr.in_order_breaks > 100);
	/* A reordered frame comes right after its successor. */
	for (uint32_t i = 1; i < fr.got; i++)
		if (fr.order[i] < fr.order[i - 1])
			assert_int_equal(fr.order[i] + 1, fr.order[i - 1]);
}

static void test_fault_crc(void **state)
{
	struct u4l_sim_faults fl = {.crc = 0.2};
	static struct fault_run fr;
	struct u4l_counters c[2];

	fault_run("fcrc", &fl, 2000, false, &fr, c);
	assert_near(c[1].fault_crc, 400);
	assert_int_equal(fr.crc, c[1].fault_crc);
	assert_int_equal(fr.got, 2000);
}

static void test_fault_drop_ctrl(void **state)
{
	struct u4l_sim_faults fl = {.drop_ctrl = 0.5};
	static struct fault_run fr;
	struct u4l_counters c[2];

	fault_run("fctl", &fl, 2000, true, &fr, c);
	assert_near(c[1].fault_drop, 500);
	for (int i = 0; i < 2000; i += 2)
		assert_int_equal(fr.seen[i], 1); /* every DATA frame */
	assert_int_equal(fr.got + c[1].fault_drop, 2000);
}

static void test_fault_stranded(void **state)
{
	struct u4l_sim_faults fl = {.stranded = 0.2};
	static struct fault_run fr;
	struct u4l_counters c[2];

	fault_run("fstr", &fl, 2000, false, &fr, c);
	assert_near(c[1].fault_stranded, 400);
	assert_int_equal(fr.nowake, c[1].fault_stranded);
	assert_int_equal(fr.got, 2000);

	/* All stranded: the frame is there, but wait() is not ended by it. */
	g_faults = (struct u4l_sim_faults){.stranded = 1.0};
	const char *n = make_cable("fstr1", NULL, set_faults);
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct u4l_rx_frame f;
	pair(n, &a, &b, &ca, &cb);
	assert_true(send1(a, ca, 1, U4L_PDF_DATA, true));
	uint64_t t0 = u4l_now_ns();
	b->ops->wait(b, t0 + 100000000ull, 0);
	assert_true(u4l_now_ns() - t0 >= 90000000ull);
	assert_int_equal(b->ops->rx_peek(cb, &f), 1);
	assert_true(f.flags & U4L_RX_NOWAKE);
	assert_int_equal(check_frame(&f), 1);
	b->ops->rx_release(cb);
	a->ops->close(a);
	b->ops->close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_fault_drop, cleanup),
	    cmocka_unit_test_teardown(test_fault_dup, cleanup),
	    cmocka_unit_test_teardown(test_fault_reorder, cleanup),
	    cmocka_unit_test_teardown(test_fault_crc, cleanup),
	    cmocka_unit_test_teardown(test_fault_drop_ctrl, cleanup),
	    cmocka_unit_test_teardown(test_fault_stranded, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
