// SPDX-License-Identifier: MIT
/*
 * Fault matrix over the software cable, RC, every opcode mixed on two QPs,
 * every message verified (sequence + checksum, see u4vt_traffic.h): each
 * fault class of sim.h in turn. Every case must deliver 100 % of its data
 * within its bound, and the counters must show that the fault happened and
 * what the engine did about it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u4vt_rel.h"

struct fcase {
	const char *tag;
	struct u4l_sim_config cfg;
	uint32_t slow_rx_ms;
	int b_no_thread;
	uint64_t messages;
	uint64_t bound_ms;
	struct u4l_counters c; /* out: both ends, after the run */
	double secs;
};

static void run_case(struct fcase *fc)
{
	const char *shm = u4vt_shm_name(fc->tag);
	struct u4vt_end a, b;
	struct tr_cfg tc;
	struct tr_result r;
	int ret;

	u4vt_cable_create(shm, &fc->cfg);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open_ex(&b, shm, 1, -1, fc->b_no_thread);
	tr_cfg_default(&tc);
	tc.nqp = 2;
	tc.messages = fc->messages ? fc->messages : 1200;
	tc.max_len = 12000; /* 1..3 frames */
	tc.window = 16;
	tc.seed = fc->cfg.seed;
	tc.timeout_ms = fc->bound_ms;
	tc.slow_rx_ms = fc->slow_rx_ms;
	ret = tr_run(&tc, a.ctx, a.pd, b.ctx, b.pd, &r);
	rel_counters(shm, &fc->c);
	fc->secs = r.secs;
	fprintf(stderr,
		"[%s] %s: %llu msgs, %llu verified, lost %llu dup %llu corrupt "
		"%llu bad status %llu, %.2f s (bound %.0f s)\n",
		fc->tag, ret ? "FAIL" : "ok", (unsigned long long)r.completed,
		(unsigned long long)r.verified, (unsigned long long)r.lost,
		(unsigned long long)r.dup, (unsigned long long)r.corrupt,
		(unsigned long long)r.bad_status, r.secs,
		fc->bound_ms / 1000.0);
	rel_print_counters(fc->tag, &fc->c);
	if (ret)
		fail_msg("%s: %s", fc->tag, r.msg);
	assert_int_equal(r.completed, tc.messages);
	assert_true(r.secs * 1000 < fc->bound_ms);
	u4vt_end_close(&a);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
}

static void fcase_init(struct fcase *fc, const char *tag, uint64_t seed)
{
	memset(fc, 0, sizeof(*fc));
	fc->tag = tag;
	u4vt_cable_config(&fc->cfg);
	fc->cfg.seed = seed;
	fc->bound_ms = 30000;
}

static void both(struct fcase *fc, size_t field_off, double v)
{
	*(double *)((char *)&fc->cfg.faults[0] + field_off) = v;
	*(double *)((char *)&fc->cfg.faults[1] + field_off) = v;
}

#define FAULT(fc, f, v) both(fc, offsetof(struct u4l_sim_faults, f), v)

static void test_drop_1e2(void **state)
{
	struct fcase fc;

	(void)state;
	fcase_init(&fc, "drop2", 11);
	FAULT(&fc, drop, 1e-2);
	run_case(&fc);
	assert_true(fc.c.fault_drop > 0);
	assert_true(fc.c.retransmits > 0);
}

static void test_drop_1e3(void **state)
{
	struct fcase fc;

	(void)state;
	fcase_init(&fc, "drop3", 12);
	FAULT(&fc, drop, 1e-3);
	fc.messages = 3000;
	run_case(&fc);
	assert_true(fc.c.fault_drop > 0);
	assert_true(fc.c.retransmits > 0);
}

static void test_dup(void **state)
{
	struct fcase fc;

	(void)state;
	fcase_init(&fc, "dup", 13);
	FAULT(&fc, dup, 2e-2);
	run_case(&fc);
	assert_true(fc.c.fault_dup > 0);
	/* duplicates of requests are discarded, of ACKs ignored */
	assert_true(fc.c.dup_frames_rcvd + fc.c.dup_acks > 0);
}

static void test_reorder(void **state)
{
	struct fcase fc;

	(void)state;
	fcase_init(&fc, "reorder", 14);
	FAULT(&fc, reorder, 2e-2);
	run_case(&fc);
	assert_true(fc.c.fault_reorder > 0);
	assert_true(fc.c.ooo_frames + fc.c.seq_naks_sent > 0);
}

static void test_crc(void **state)
{
	struct fcase fc;

	(void)state;
	fcase_init(&fc, "crc", 15);
	FAULT(&fc, crc, 1e-2);
	run_case(&fc);
	assert_true(fc.c.fault_crc > 0);
	/* every CRC-flagged frame was discarded, none executed */
	assert_int_equal(fc.c.crc_discards, fc.c.fault_crc);
	assert_true(fc.c.retransmits > 0);
}

static void test_stranded(void **state)
{
	struct fcase fc;

	(void)state;
	fcase_init(&fc, "strand", 16);
	FAULT(&fc, stranded, 1.0 / 280);
	fc.messages = 3000;
	run_case(&fc);
	assert_true(fc.c.fault_stranded > 0);
	/* every stranded frame was found by polling */
	assert_int_equal(fc.c.stranded_rescues, fc.c.fault_stranded);
}

static void test_ack_loss(void **state)
{
	struct fcase fc;

	(void)state;
	fcase_init(&fc, "acklos", 17);
	FAULT(&fc, drop_ctrl, 5e-2);
	run_case(&fc);
	assert_true(fc.c.fault_drop > 0);
	/* lost ACKs cost retransmits the responder recognises as duplicates,
	 * or are covered by the next ACK */
	assert_true(fc.c.tx_frames > fc.c.rx_frames);
}

static void test_rx_overflow_slow_receiver(void **state)
{
	struct fcase fc;

	(void)state;
	fcase_init(&fc, "ovf", 18);
	fc.cfg.e2e = 0;
	fc.cfg.ring_depth = 16;
	fc.b_no_thread = 1; /* the target moves only when it polls ... */
	fc.slow_rx_ms = 2;  /* ... every 2 ms */
	fc.messages = 600;
	run_case(&fc);
	assert_true(fc.c.rx_overflow > 0);
	assert_true(fc.c.retransmits > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_1e2),
		cmocka_unit_test(test_drop_1e3),
		cmocka_unit_test(test_dup),
		cmocka_unit_test(test_reorder),
		cmocka_unit_test(test_crc),
		cmocka_unit_test(test_stranded),
		cmocka_unit_test(test_ack_loss),
		cmocka_unit_test(test_rx_overflow_slow_receiver),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
