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

struct pair {
	const char *shm;
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb;
};

static void pair_up(struct pair *p, const char *tag, enum ibv_qp_type type,
		    const struct u4l_sim_config *cfg)
{
	p->shm = u4vt_shm_name(tag);
	u4vt_cable_create(p->shm, cfg);
	u4vt_end_open(&p->a, p->shm, 0);
	u4vt_end_open(&p->b, p->shm, 1);
	u4vt_qp_opts_default(&p->o);
	p->qa = u4vt_qp_create(&p->a, type, &p->o);
	p->qb = u4vt_qp_create(&p->b, type, &p->o);
	u4vt_qp_connect(p->qa, type, u4v_qp_num(p->qb), &p->o);
	u4vt_qp_connect(p->qb, type, u4v_qp_num(p->qa), &p->o);
}

static void pair_down(struct pair *p)
{
	assert_int_equal(u4v_destroy_qp(p->qa), 0);
	assert_int_equal(u4v_destroy_qp(p->qb), 0);
	u4vt_end_close(&p->a);
	u4vt_end_close(&p->b);
	u4l_sim_destroy(p->shm);
}

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

static void send_recv_size(struct pair *p, size_t len, uint64_t seed)
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
	struct pair p;
	size_t i;

	(void)state;
	pair_up(&p, "send", IBV_QPT_RC, NULL);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		send_recv_size(&p, sizes[i], i + 1);
	pair_down(&p);
}

static void test_write_read_atomic(void **state)
{
	const size_t len = 3u << 20;
	uint8_t *la = big_alloc(len), *rb = big_alloc(len);
	uint64_t *cell = (uint64_t *)(rb + 64), orig = 0;
	struct u4v_mr *ma, *mb;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr = { .wr_id = 5 }, *rbad;
	struct ibv_wc wc;
	struct pair p;

	(void)state;
	pair_up(&p, "wra", IBV_QPT_RC, NULL);
	assert_int_equal(u4v_reg_mr(p.a.pd, la, len,
				    IBV_ACCESS_LOCAL_WRITE, &ma), 0);
	assert_int_equal(u4v_reg_mr(p.b.pd, rb, len,
				    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ |
					    IBV_ACCESS_REMOTE_ATOMIC,
				    &mb), 0);

	/* RDMA WRITE with immediate: data placed, one receive consumed */
	u4vt_fill(la, len, 42);
	sge = (struct ibv_sge){ (uintptr_t)la, (uint32_t)len, u4v_mr_lkey(ma) };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = 0xabcdef01;
	wr.wr.rdma.remote_addr = (uintptr_t)rb;
	wr.wr.rdma.rkey = u4v_mr_rkey(mb);
	assert_int_equal(u4v_post_recv(p.qb, &rwr, &rbad), 0);
	assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
	assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(u4vt_poll(p.b.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.imm_data, 0xabcdef01);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_true(u4vt_sum(la, len) == u4vt_sum(rb, len));

	/* RDMA READ back into a cleared buffer */
	memset(la, 0, len);
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr_id = 2;
	assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
	assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc.byte_len, len);
	assert_true(u4vt_sum(la, len) == u4vt_sum(rb, len));

	/* atomics: fetch-and-add then compare-and-swap */
	*cell = 100;
	sge = (struct ibv_sge){ (uintptr_t)&orig, 8, 0 };
	sge.addr = (uintptr_t)la;
	sge.lkey = u4v_mr_lkey(ma);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = (uintptr_t)cell;
	wr.wr.atomic.rkey = u4v_mr_rkey(mb);
	wr.wr.atomic.compare_add = 5;
	assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
	assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_FETCH_ADD);
	memcpy(&orig, la, 8);
	assert_int_equal(orig, 100);
	assert_int_equal(*cell, 105);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 105;
	wr.wr.atomic.swap = 7;
	assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
	assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_COMP_SWAP);
	memcpy(&orig, la, 8);
	assert_int_equal(orig, 105);
	assert_int_equal(*cell, 7);

	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	big_free(la, len);
	big_free(rb, len);
	pair_down(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_sizes),
		cmocka_unit_test(test_write_read_atomic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
