// SPDX-License-Identifier: MIT
/*
 * Every opcode on every QP type where ibv_post_send(3) allows it, between
 * the two ends of a software cable in one process, at the sizes around the
 * frame granule (0, 1, 4031, 4032, 4033, 65536, 1 MiB; 64 MiB for RC SEND,
 * WRITE and READ; UD up to 4096), with checksums at the target, completion
 * fields checked, and guard bytes after every placed message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

#define BIG (64u << 20)
#define GUARD 64u
#define GRH 40u
#define TMO 20000

static uint32_t start_psn; /* 0: the testlib default */

static void pair_up(struct u4vt_area_pair *p, const char *tag,
		    enum ibv_qp_type type, size_t cap)
{
	struct u4vt_qp_opts o;

	u4vt_qp_opts_default(&o);
	o.psn = start_psn;
	u4vt_area_pair_up(p, tag, type, &o, cap + GUARD + GRH);
}

static int post(struct u4vt_area_pair *p, enum ibv_wr_opcode op, uint64_t id,
		int flags, size_t len, uint64_t raddr, uint32_t imm,
		uint32_t qkey)
{
	struct ibv_sge sge = { (uintptr_t)p->src, (uint32_t)len,
			       u4v_mr_lkey(p->ms) };
	struct ibv_send_wr wr, *bad = NULL;

	u4vt_send_wr(&wr, op, id, flags, &sge, 1);
	wr.imm_data = imm;
	if (p->q.type == IBV_QPT_UD) {
		u4vt_send_wr_ud(&wr, p->ah, u4v_qp_num(p->q.qb));
		wr.wr.ud.remote_qkey = qkey;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = u4v_mr_rkey(p->md);
	}
	return u4v_post_send(p->q.qa, &wr, &bad);
}

/* The next completion on cq: a success of wr id and opcode op. */
static struct ibv_wc expect_wc(struct u4v_cq *cq, const char *side, uint64_t id,
			       enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	assert_int_equal(u4vt_poll(cq, &wc, 1, TMO), 1);
	if (wc.status)
		fail_msg("%s wr %llu: status %d", side,
			 (unsigned long long)wc.wr_id, wc.status);
	assert_int_equal(wc.wr_id, id);
	assert_int_equal(wc.opcode, op);
	return wc;
}

static void expect_send_wc(struct u4vt_area_pair *p, uint64_t id,
			   enum ibv_wc_opcode op, size_t len)
{
	struct ibv_wc wc = expect_wc(p->q.a.cq, "requester", id, op);

	assert_int_equal(wc.qp_num, u4v_qp_num(p->q.qa));
	if (op == IBV_WC_RDMA_READ)
		assert_int_equal(wc.byte_len, len);
}

static void expect_recv_wc(struct u4vt_area_pair *p, uint64_t id,
			   enum ibv_wc_opcode op, uint32_t byte_len, bool imm,
			   uint32_t imm_val)
{
	struct ibv_wc wc = expect_wc(p->q.b.cq, "responder", id, op);

	assert_int_equal(wc.byte_len, byte_len);
	assert_int_equal(wc.qp_num, u4v_qp_num(p->q.qb));
	assert_int_equal(!!(wc.wc_flags & IBV_WC_WITH_IMM), imm);
	if (imm)
		assert_int_equal(wc.imm_data, imm_val);
	if (p->q.type == IBV_QPT_UD)
		assert_int_equal(wc.src_qp, u4v_qp_num(p->q.qa));
}

static void check_placed(const uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t i;

	if (u4vt_sum(dst, len) != u4vt_sum(src, len))
		fail_msg("%zu-byte payload differs at the target", len);
	for (i = 0; i < GUARD; i++)
		if (dst[len + i] != 0xee)
			fail_msg("%zu-byte message: guard byte %zu overwritten",
				 len, i);
}

static void prepare(struct u4vt_area_pair *p, size_t len, uint64_t seed)
{
	u4vt_fill(p->src, len, seed);
	memset(p->dst, 0xee, len + GUARD + GRH);
}

static void run_send(struct u4vt_area_pair *p, size_t len, bool imm,
		     uint64_t seed)
{
	uint32_t grh = p->q.type == IBV_QPT_UD ? GRH : 0;
	uint32_t v = (uint32_t)(0xa5000000u ^ len);

	prepare(p, len, seed);
	assert_int_equal(u4vt_post_recv1(p->q.qb, seed, (uintptr_t)p->dst,
					 (uint32_t)(len + grh),
					 u4v_mr_lkey(p->md)),
			 0);
	assert_int_equal(post(p, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			      seed + 1, IBV_SEND_SIGNALED, len, 0, v,
			      0x11111111),
			 0);
	expect_send_wc(p, seed + 1, IBV_WC_SEND, len);
	expect_recv_wc(p, seed, IBV_WC_RECV, (uint32_t)(len + grh), imm, v);
	check_placed(p->dst + grh, p->src, len);
}

static void run_write(struct u4vt_area_pair *p, size_t len, bool imm,
		      uint64_t seed)
{
	uint32_t v = (uint32_t)(0x5a000000u ^ len);
	struct ibv_wc wc;

	prepare(p, len, seed);
	if (imm)
		assert_int_equal(u4vt_post_recv1(p->q.qb, seed, 0, 0, 0), 0);
	assert_int_equal(post(p, imm ? IBV_WR_RDMA_WRITE_WITH_IMM :
				       IBV_WR_RDMA_WRITE,
			      seed + 1, IBV_SEND_SIGNALED, len,
			      (uintptr_t)p->dst, v, 0),
			 0);
	expect_send_wc(p, seed + 1, IBV_WC_RDMA_WRITE, len);
	if (imm)
		expect_recv_wc(p, seed, IBV_WC_RECV_RDMA_WITH_IMM,
			       (uint32_t)len, true, v);
	if (p->q.type == IBV_QPT_UC && !imm) {
		uint64_t end = u4vt_now_ms() + TMO;

		/* nothing tells the UC requester it arrived: wait for it */
		while (u4vt_sum(p->dst, len) != u4vt_sum(p->src, len) &&
		       u4vt_now_ms() < end)
			usleep(1000);
	}
	check_placed(p->dst, p->src, len);
	/* a plain WRITE consumes no receive */
	if (!imm)
		assert_int_equal(u4vt_poll(p->q.b.cq, &wc, 1, 0), 0);
}

static void run_read(struct u4vt_area_pair *p, size_t len, uint64_t seed)
{
	u4vt_fill(p->dst, len, seed);
	memset(p->src, 0xee, len + GUARD);
	assert_int_equal(post(p, IBV_WR_RDMA_READ, seed, IBV_SEND_SIGNALED,
			      len, (uintptr_t)p->dst, 0, 0),
			 0);
	expect_send_wc(p, seed, IBV_WC_RDMA_READ, len);
	check_placed(p->src, p->dst, len);
}

static const size_t sizes[] = { 0, 1, 4031, 4032, 4033, 65536, 1u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* SEND and RDMA WRITE of len, each without and with immediate. */
static void send_and_write(struct u4vt_area_pair *p, size_t len,
			   uint64_t *seed)
{
	run_send(p, len, false, *seed += 10);
	run_send(p, len, true, *seed += 10);
	run_write(p, len, false, *seed += 10);
	run_write(p, len, true, *seed += 10);
}

static void test_rc_all_opcodes(void **state)
{
	struct u4vt_area_pair p;
	size_t i;
	uint64_t seed = 1000;

	(void)state;
	pair_up(&p, "rc", IBV_QPT_RC, BIG);
	for (i = 0; i < NSIZES; i++) {
		send_and_write(&p, sizes[i], &seed);
		run_read(&p, sizes[i], seed += 10);
	}
	/* 64 MiB: SEND, WRITE, READ */
	run_send(&p, BIG, false, seed += 10);
	run_write(&p, BIG, false, seed += 10);
	run_read(&p, BIG, seed += 10);
	u4vt_area_pair_down(&p);
}

/* An atomic on cell, its result at src + off; the value it found. */
static uint64_t atomic(struct u4vt_area_pair *p, enum ibv_wr_opcode op,
		       uint64_t id, size_t off, uint64_t *cell,
		       uint64_t add_or_cmp, uint64_t swap)
{
	return u4vt_atomic(p->q.qa, p->q.a.cq, op, id, p->src + off,
			   u4v_mr_lkey(p->ms), cell, u4v_mr_rkey(p->md),
			   add_or_cmp, swap);
}

static void test_rc_atomics(void **state)
{
	struct u4vt_area_pair p;
	uint64_t *cell;
	struct ibv_wc wc;

	(void)state;
	pair_up(&p, "atom", IBV_QPT_RC, 4096);
	cell = (uint64_t *)(p.dst + 256);
	*cell = 0x1122334455667788ull;
	/* CAS that matches */
	assert_true(atomic(&p, IBV_WR_ATOMIC_CMP_AND_SWP, 1, 0, cell,
			   0x1122334455667788ull, 42) == 0x1122334455667788ull);
	assert_true(*cell == 42);
	/* CAS that does not: memory unchanged, the old value returned */
	assert_true(atomic(&p, IBV_WR_ATOMIC_CMP_AND_SWP, 2, 8, cell, 41, 99) ==
		    42);
	assert_true(*cell == 42);
	/* FAA with wrap-around */
	*cell = UINT64_MAX - 1;
	assert_true(atomic(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, 16, cell, 3,
			   0) == UINT64_MAX - 1);
	assert_true(*cell == 1);
	/* neighbours untouched, nothing at the responder's CQ */
	assert_true(*(uint64_t *)(p.dst + 248) == 0);
	assert_true(*(uint64_t *)(p.dst + 264) == 0);
	assert_int_equal(u4vt_poll(p.q.b.cq, &wc, 1, 0), 0);
	u4vt_area_pair_down(&p);
}

static void test_uc_all_opcodes(void **state)
{
	struct u4vt_area_pair p;
	size_t i;
	uint64_t seed = 5000;

	(void)state;
	pair_up(&p, "uc", IBV_QPT_UC, 1u << 20);
	for (i = 0; i < NSIZES; i++)
		send_and_write(&p, sizes[i], &seed);
	u4vt_area_pair_down(&p);
}

static void test_ud_send(void **state)
{
	static const size_t ud_sizes[] = { 0, 1, 4031, 4032, 4033, 4095,
					   4096 };
	struct u4vt_area_pair p;
	size_t i;
	uint64_t seed = 9000;

	(void)state;
	pair_up(&p, "ud", IBV_QPT_UD, 8192);
	for (i = 0; i < sizeof(ud_sizes) / sizeof(ud_sizes[0]); i++) {
		run_send(&p, ud_sizes[i], false, seed += 10);
		run_send(&p, ud_sizes[i], true, seed += 10);
	}
	/* over 4096: refused at post time */
	assert_int_equal(post(&p, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, 4097, 0, 0,
			      0x11111111),
			 EINVAL);
	u4vt_area_pair_down(&p);
}

static void test_ud_qkey_grh_and_short_buffer(void **state)
{
	struct u4vt_area_pair p;
	struct ibv_wc wc;
	struct u4v_ah *global;
	uint8_t grh[GRH];

	(void)state;
	pair_up(&p, "udq", IBV_QPT_UD, 8192);
	/* a wrong qkey: silently dropped, the receive stays posted */
	prepare(&p, 100, 1);
	assert_int_equal(u4vt_post_recv1(p.q.qb, 70, (uintptr_t)p.dst, 200 + GRH,
					 u4v_mr_lkey(p.md)),
			 0);
	assert_int_equal(post(&p, IBV_WR_SEND, 71, IBV_SEND_SIGNALED, 100, 0, 0,
			      0x22222222),
			 0);
	expect_send_wc(&p, 71, IBV_WC_SEND, 100);
	assert_int_equal(u4vt_poll(p.q.b.cq, &wc, 1, 200), 0);
	/* the high bit: use the sending QP's own qkey (0x11111111) */
	assert_int_equal(post(&p, IBV_WR_SEND, 72, IBV_SEND_SIGNALED, 100, 0, 0,
			      0x80000000u),
			 0);
	expect_send_wc(&p, 72, IBV_WC_SEND, 100);
	expect_recv_wc(&p, 70, IBV_WC_RECV, 100 + GRH, false, 0);
	check_placed(p.dst + GRH, p.src, 100);
	/* a global AH: the receive says IBV_WC_GRH; the GRH area is filled */
	global = u4vt_ah(p.q.a.pd);
	{
		struct u4v_ah *plain = p.ah;

		prepare(&p, 300, 2);
		p.ah = global;
		assert_int_equal(u4vt_post_recv1(p.q.qb, 73, (uintptr_t)p.dst,
						 300 + GRH, u4v_mr_lkey(p.md)),
				 0);
		assert_int_equal(post(&p, IBV_WR_SEND, 74, IBV_SEND_SIGNALED,
				      300, 0, 0, 0x11111111),
				 0);
		expect_send_wc(&p, 74, IBV_WC_SEND, 300);
		assert_int_equal(u4vt_poll(p.q.b.cq, &wc, 1, TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_true(wc.wc_flags & IBV_WC_GRH);
		memcpy(grh, p.dst, GRH);
		/* RoCE v2 between IPv4-mapped GIDs: the IPv4 header in bytes
		 * 20-39, from and to 127.0.0.1 (the provider's test checks
		 * every field and the round trip through libibverbs) */
		assert_int_equal(grh[0], 0);
		assert_int_equal(grh[20], 0x45);
		assert_int_equal(grh[29], 17);
		assert_memory_equal(grh + 32, "\x7f\0\0\x01", 4);
		assert_memory_equal(grh + 36, "\x7f\0\0\x01", 4);
		check_placed(p.dst + GRH, p.src, 300);
		p.ah = plain;
	}
	assert_int_equal(u4v_destroy_ah(global), 0);
	/* a receive buffer without room for GRH + payload: LOC_LEN_ERR */
	prepare(&p, 100, 3);
	assert_int_equal(u4vt_post_recv1(p.q.qb, 75, (uintptr_t)p.dst, 100,
					 u4v_mr_lkey(p.md)),
			 0);
	assert_int_equal(post(&p, IBV_WR_SEND, 76, IBV_SEND_SIGNALED, 100, 0, 0,
			      0x11111111),
			 0);
	expect_send_wc(&p, 76, IBV_WC_SEND, 100);
	assert_int_equal(u4vt_poll(p.q.b.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.wr_id, 75);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	u4vt_area_pair_down(&p);
}

/* A message longer than the receive buffer: both ends see an error. */
static void test_rc_send_too_long(void **state)
{
	struct u4vt_area_pair p;
	struct ibv_wc wc;

	(void)state;
	pair_up(&p, "long", IBV_QPT_RC, 65536);
	prepare(&p, 10000, 4);
	assert_int_equal(u4vt_post_recv1(p.q.qb, 80, (uintptr_t)p.dst, 9999,
					 u4v_mr_lkey(p.md)),
			 0);
	assert_int_equal(post(&p, IBV_WR_SEND, 81, IBV_SEND_SIGNALED, 10000, 0,
			      0, 0),
			 0);
	assert_int_equal(u4vt_poll(p.q.b.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.wr_id, 80);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(u4vt_poll(p.q.a.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.wr_id, 81);
	assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
	u4vt_area_pair_down(&p);
}

/*
 * UC / UD have no RNR: a message for an empty receive queue waits a grace
 * period (100 ms, commit 0c6f9bf) for a receive, then is dropped whole;
 * the next message then lands whole, from its own start.
 */
static void late_receive(enum ibv_qp_type type, const char *tag)
{
	uint32_t len = type == IBV_QPT_UD ? 4000 : 50000;
	uint32_t grh = type == IBV_QPT_UD ? GRH : 0;
	struct u4vt_area_pair p;
	struct ibv_wc wc;

	pair_up(&p, tag, type, 1u << 20);
	/* a receive posted within the grace period gets the message */
	prepare(&p, len, 1);
	assert_int_equal(post(&p, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, len, 0,
			      0, 0x11111111),
			 0);
	expect_send_wc(&p, 1, IBV_WC_SEND, len);
	usleep(10000);
	assert_int_equal(u4vt_post_recv1(p.q.qb, 2, (uintptr_t)p.dst, len + grh,
					 u4v_mr_lkey(p.md)),
			 0);
	expect_recv_wc(&p, 2, IBV_WC_RECV, len + grh, false, 0);
	check_placed(p.dst + grh, p.src, len);
	/* one posted after the grace period does not */
	prepare(&p, len, 3);
	assert_int_equal(post(&p, IBV_WR_SEND, 3, IBV_SEND_SIGNALED, len, 0,
			      0, 0x11111111),
			 0);
	expect_send_wc(&p, 3, IBV_WC_SEND, len);
	assert_int_equal(u4vt_poll(p.q.b.cq, &wc, 1, 400), 0);
	run_send(&p, len, false, 4);
	run_send(&p, 5, true, 5);
	if (type == IBV_QPT_UC)
		run_write(&p, 70000, true, 6);
	u4vt_area_pair_down(&p);
}

/*
 * A UC QP waiting for a receive must not stall the other QPs that share its
 * channel: an RC SEND right behind it completes well within the grace.
 */
static void test_uc_wait_does_not_block_channel(void **state)
{
	struct u4vt_area_pair uc, rc;
	struct ibv_wc wc;
	uint64_t t0, dt;

	(void)state;
	pair_up(&uc, "hol", IBV_QPT_UC, 65536);
	/* an RC pair on the same two contexts: the same channel */
	memset(&rc, 0, sizeof(rc));
	rc = uc;
	rc.q.type = IBV_QPT_RC;
	u4vt_qp_pair(&uc.q.a, &uc.q.b, IBV_QPT_RC, &uc.q.o, &rc.q.qa, &rc.q.qb);
	assert_int_equal(u4vt_post_recv1(rc.q.qb, 50, (uintptr_t)uc.dst + 8192,
					 4096, u4v_mr_lkey(uc.md)),
			 0);
	/* UC: no receive posted at the target */
	assert_int_equal(post(&uc, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, 100, 0,
			      0, 0),
			 0);
	expect_send_wc(&uc, 1, IBV_WC_SEND, 100);
	usleep(2000);
	t0 = u4vt_now_ms();
	assert_int_equal(post(&rc, IBV_WR_SEND, 2, IBV_SEND_SIGNALED, 100, 0,
			      0, 0),
			 0);
	assert_int_equal(u4vt_poll(rc.q.b.cq, &wc, 1, TMO), 1);
	dt = u4vt_now_ms() - t0;
	assert_int_equal(wc.wr_id, 50);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	if (dt > 50)
		fail_msg("RC SEND behind a UC QP waiting for a receive took "
			 "%llu ms",
			 (unsigned long long)dt);
	expect_send_wc(&rc, 2, IBV_WC_SEND, 100);
	assert_int_equal(u4v_destroy_qp(rc.q.qa), 0);
	assert_int_equal(u4v_destroy_qp(rc.q.qb), 0);
	u4vt_area_pair_down(&uc);
}

static void test_uc_ud_late_receive(void **state)
{
	(void)state;
	late_receive(IBV_QPT_UC, "uclate");
	late_receive(IBV_QPT_UD, "udlate");
}

/* Messages and READ responses whose PSNs cross 0xffffff → 0. */
static void test_psn_wrap(void **state)
{
	static const uint32_t starts[] = { 0xffffff, 0xfffff0, 0xfffe00 };
	size_t i;
	uint64_t seed = 20000;

	(void)state;
	for (i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		struct u4vt_area_pair p;
		int k;

		start_psn = starts[i];
		pair_up(&p, "wraprc", IBV_QPT_RC, 2u << 20);
		for (k = 0; k < 3; k++) {
			run_send(&p, 65536 + 4032 * k, k == 1, seed += 10);
			run_write(&p, 1u << 20, k == 2, seed += 10);
			run_read(&p, (1u << 20) + 7, seed += 10);
		}
		*(uint64_t *)(p.dst + 512) = 7;
		assert_int_equal(
			u4vt_post_atomic(p.q.qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 9,
					 (uintptr_t)p.src, u4v_mr_lkey(p.ms),
					 (uintptr_t)p.dst + 512,
					 u4v_mr_rkey(p.md), 3, 0),
			0);
		expect_send_wc(&p, 9, IBV_WC_FETCH_ADD, 8);
		assert_true(*(uint64_t *)p.src == 7);
		assert_true(*(uint64_t *)(p.dst + 512) == 10);
		u4vt_area_pair_down(&p);
		pair_up(&p, "wrapuc", IBV_QPT_UC, 1u << 20);
		for (k = 0; k < 3; k++) {
			run_send(&p, 65536 + 4032 * k, k == 1, seed += 10);
			run_write(&p, 300000, k == 2, seed += 10);
		}
		u4vt_area_pair_down(&p);
	}
	start_psn = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_all_opcodes),
		cmocka_unit_test(test_rc_atomics),
		cmocka_unit_test(test_uc_all_opcodes),
		cmocka_unit_test(test_ud_send),
		cmocka_unit_test(test_ud_qkey_grh_and_short_buffer),
		cmocka_unit_test(test_rc_send_too_long),
		cmocka_unit_test(test_psn_wrap),
		cmocka_unit_test(test_uc_ud_late_receive),
		cmocka_unit_test(test_uc_wait_does_not_block_channel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
