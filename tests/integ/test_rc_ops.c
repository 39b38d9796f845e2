// SPDX-License-Identifier: MIT
/*
 * Every opcode on RC between the two ends of a software cable, in one
 * process, with payload checksums.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "testlib.h"

static void *big_alloc(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

static void big_free(void *p, size_t len)
{
	munmap(p, len ? len : 1);
}

static void send_recv_size(struct u4vt_pair *p, size_t len, uint64_t seed)
{
	void *src = big_alloc(len), *dst = big_alloc(len + 64);
	struct u4v_mr *ms, *md;
	struct ibv_sge ss = { (uintptr_t)src, (uint32_t)len, 0 };
	struct ibv_sge ds = { (uintptr_t)dst, (uint32_t)len + 64, 0 };
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &ds, .num_sge = 1 };
	struct ibv_send_wr swr = { .wr_id = 9, .sg_list = &ss, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *sbad;
	struct ibv_wc wc;

	u4vt_fill(src, len, seed);
	assert_int_equal(u4v_reg_mr(p->a.pd, src, len, IBV_ACCESS_LOCAL_WRITE,
				    &ms), 0);
	assert_int_equal(u4v_reg_mr(p->b.pd, dst, len + 64,
				    IBV_ACCESS_LOCAL_WRITE, &md), 0);
	ss.lkey = u4v_mr_lkey(ms);
	ds.lkey = u4v_mr_lkey(md);
	assert_int_equal(u4v_post_recv(p->qb, &rwr, &rbad), 0);
	assert_int_equal(u4v_post_send(p->qa, &swr, &sbad), 0);
	assert_int_equal(u4vt_poll(p->a.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(u4vt_poll(p->b.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, len);
	assert_int_equal(wc.qp_num, u4v_qp_num(p->qb));
	assert_true(u4vt_sum(src, len) == u4vt_sum(dst, len));
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	big_free(src, len);
	big_free(dst, len + 64);
}

static void test_send_sizes(void **state)
{
	static const size_t sizes[] = { 0, 1, 8, 4031, 4032, 4033, 8064,
					65536, 1 << 20, 64u << 20 };
	struct u4vt_pair p;
	size_t i;

	(void)state;
	u4vt_pair_up(&p, "send", IBV_QPT_RC, NULL, NULL, 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		send_recv_size(&p, sizes[i], i + 1);
	u4vt_pair_down(&p);
}

/* The next completion on p's send CQ: a success of opcode op. */
static struct ibv_wc send_done(struct u4vt_pair *p, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	assert_int_equal(u4vt_poll(p->a.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, op);
	return wc;
}

static void test_write_read_atomic(void **state)
{
	const size_t len = 3u << 20;
	uint8_t *la = big_alloc(len), *rb = big_alloc(len);
	uint64_t *cell = (uint64_t *)(rb + 64);
	struct u4v_mr *ma, *mb;
	struct ibv_wc wc;
	struct u4vt_pair p;

	(void)state;
	u4vt_pair_up(&p, "wra", IBV_QPT_RC, NULL, NULL, 0);
	ma = u4vt_reg(&p.a, la, len, IBV_ACCESS_LOCAL_WRITE);
	mb = u4vt_reg(&p.b, rb, len, U4VT_ACCESS_ALL);

	/* RDMA WRITE with immediate: data placed, one receive consumed */
	u4vt_fill(la, len, 42);
	assert_int_equal(u4vt_post_recv1(p.qb, 5, 0, 0, 0), 0);
	assert_int_equal(u4vt_post_send1(p.qa, IBV_WR_RDMA_WRITE_WITH_IMM, 1,
					 IBV_SEND_SIGNALED, (uintptr_t)la,
					 (uint32_t)len, u4v_mr_lkey(ma),
					 (uintptr_t)rb, u4v_mr_rkey(mb),
					 0xabcdef01),
			 0);
	send_done(&p, IBV_WC_RDMA_WRITE);
	assert_int_equal(u4vt_poll(p.b.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.imm_data, 0xabcdef01);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_true(u4vt_sum(la, len) == u4vt_sum(rb, len));

	/* RDMA READ back into a cleared buffer */
	memset(la, 0, len);
	assert_int_equal(u4vt_post_send1(p.qa, IBV_WR_RDMA_READ, 2,
					 IBV_SEND_SIGNALED, (uintptr_t)la,
					 (uint32_t)len, u4v_mr_lkey(ma),
					 (uintptr_t)rb, u4v_mr_rkey(mb), 0),
			 0);
	wc = send_done(&p, IBV_WC_RDMA_READ);
	assert_int_equal(wc.byte_len, len);
	assert_true(u4vt_sum(la, len) == u4vt_sum(rb, len));

	/* atomics: fetch-and-add then compare-and-swap */
	*cell = 100;
	assert_true(u4vt_atomic(p.qa, p.a.cq, IBV_WR_ATOMIC_FETCH_AND_ADD, 3,
				la, u4v_mr_lkey(ma), cell, u4v_mr_rkey(mb), 5,
				0) == 100);
	assert_int_equal(*cell, 105);
	assert_true(u4vt_atomic(p.qa, p.a.cq, IBV_WR_ATOMIC_CMP_AND_SWP, 4, la,
				u4v_mr_lkey(ma), cell, u4v_mr_rkey(mb), 105,
				7) == 105);
	assert_int_equal(*cell, 7);

	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	big_free(la, len);
	big_free(rb, len);
	u4vt_pair_down(&p);
}

/*
 * Zero-length RDMA WRITE, WRITE with immediate and READ name no memory: the
 * responder does not validate their R_Key or VA (IBTA C9-88). UCX flushes
 * an endpoint with a zero-length inline WRITE of rkey 0 and address 0.
 */
static void test_zero_length_rdma(void **state)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ };
	static const int flags[] = { IBV_SEND_INLINE, 0 };
	uint8_t *la = big_alloc(4096), *rb = big_alloc(4096);
	struct u4v_mr *ma, *mb;
	struct ibv_wc wc;
	struct u4vt_pair p;
	size_t i, f;

	(void)state;
	u4vt_pair_up(&p, "zlen", IBV_QPT_RC, NULL, NULL, 0);
	ma = u4vt_reg(&p.a, la, 4096, U4VT_ACCESS_ALL);
	mb = u4vt_reg(&p.b, rb, 4096, U4VT_ACCESS_ALL);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		for (f = 0; f < 2; f++) {
			uint64_t id = i * 2 + f;

			if (ops[i] == IBV_WR_RDMA_READ && flags[f])
				continue;
			if (ops[i] == IBV_WR_RDMA_WRITE_WITH_IMM)
				assert_int_equal(u4vt_post_recv1(p.qb, id, 0, 0,
								 0),
						 0);
			/* no SGE, rkey 0, address 0 */
			assert_int_equal(u4vt_post_send1(p.qa, ops[i], id,
							 IBV_SEND_SIGNALED |
								 flags[f],
							 0, 0, 0, 0, 0,
							 0x5a5a0000 + id),
					 0);
			assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 20000), 1);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, id);
			assert_int_equal(wc.byte_len, 0);
			if (ops[i] != IBV_WR_RDMA_WRITE_WITH_IMM)
				continue;
			assert_int_equal(u4vt_poll(p.b.cq, &wc, 1, 20000), 1);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
			assert_int_equal(wc.byte_len, 0);
			assert_int_equal(wc.imm_data, 0x5a5a0000 + id);
		}
	}
	/* the QP still works, and a nonzero length still checks its key */
	u4vt_fill(la, 4096, 9);
	assert_int_equal(u4vt_post_send1(p.qa, IBV_WR_RDMA_WRITE, 10,
					 IBV_SEND_SIGNALED, (uintptr_t)la, 4096,
					 u4v_mr_lkey(ma), (uintptr_t)rb,
					 u4v_mr_rkey(mb), 0),
			 0);
	assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(u4vt_sum(la, 4096) == u4vt_sum(rb, 4096));
	assert_int_equal(u4vt_post_send1(p.qa, IBV_WR_RDMA_WRITE, 11,
					 IBV_SEND_SIGNALED, (uintptr_t)la, 1,
					 u4v_mr_lkey(ma), (uintptr_t)rb, 0, 0),
			 0);
	assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	big_free(la, 4096);
	big_free(rb, 4096);
	u4vt_pair_down(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_sizes),
		cmocka_unit_test(test_write_read_atomic),
		cmocka_unit_test(test_zero_length_rdma),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
