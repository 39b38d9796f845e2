// SPDX-License-Identifier: MIT
/*
 * Shared receive queues over the software cable: one SRQ feeding two RC QPs,
 * one feeding a UD QP, the srq_limit async event (fires once, when the
 * posted count drops below the limit, then disarms), and
 * IBV_EVENT_QP_LAST_WQE_REACHED when an SRQ-attached QP enters ERR, and an
 * SRQ-attached RC QP serving RDMA READ and atomics (UCX's rc_verbs QPs all
 * take their receives from an SRQ; READ and atomics there crashed the
 * responder).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define TMO 20000
#define SLOT 16384u
#define NSLOT 64u

struct rig {
	struct u4vt_pair p; /* the ends; b's async events at p.evfd[0] */
	uint8_t *src, *dst;
	struct u4v_mr *ms, *md;
};

static int rig_setup(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	u4vt_pair_ends(&r->p, "srq", NULL, 1);
	r->src = u4vt_map(SLOT * NSLOT);
	r->dst = u4vt_map(SLOT * NSLOT);
	r->ms = u4vt_reg(&r->p.a, r->src, SLOT * NSLOT, U4VT_ACCESS_ALL);
	r->md = u4vt_reg(&r->p.b, r->dst, SLOT * NSLOT, U4VT_ACCESS_ALL);
	*state = r;
	return 0;
}

static int rig_teardown(void **state)
{
	struct rig *r = *state;

	u4v_dereg_mr(r->ms);
	u4v_dereg_mr(r->md);
	u4vt_unmap(r->src, SLOT * NSLOT);
	u4vt_unmap(r->dst, SLOT * NSLOT);
	u4vt_pair_down(&r->p);
	free(r);
	return 0;
}

static struct u4v_srq *make_srq(struct rig *r, uint32_t max_wr,
				uint64_t handle)
{
	struct ibv_srq_attr sa = { .max_wr = max_wr, .max_sge = 2 };
	struct u4v_srq *srq;

	assert_int_equal(u4v_create_srq(r->p.b.pd, &sa, &srq), 0);
	u4v_srq_set_handle(srq, handle);
	return srq;
}

static void post_slots(struct rig *r, struct u4v_srq *srq, uint32_t first,
		       uint32_t n)
{
	uint32_t i;

	for (i = first; i < first + n; i++) {
		/* two SGEs per receive: 100 bytes, then the rest */
		struct ibv_sge sge[2] = {
			{ (uintptr_t)r->dst + (size_t)i * SLOT, 100,
			  u4v_mr_lkey(r->md) },
			{ (uintptr_t)r->dst + (size_t)i * SLOT + 100,
			  SLOT - 100, u4v_mr_lkey(r->md) },
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = sge,
					  .num_sge = 2 },
				   *bad;

		memset(r->dst + (size_t)i * SLOT, 0, SLOT);
		assert_int_equal(u4v_post_srq_recv(srq, &wr, &bad), 0);
	}
}

/* Message m: 8-byte id, then u4vt_fill(m); len bytes in all. */
static void make_msg(uint8_t *p, uint64_t m, uint32_t len)
{
	u4vt_fill(p, len, m);
	if (len >= 8)
		memcpy(p, &m, 8);
}

static void check_msg(const uint8_t *p, uint32_t len)
{
	uint8_t tmp[SLOT];
	uint64_t m;

	assert_true(len >= 8);
	memcpy(&m, p, 8);
	make_msg(tmp, m, len);
	if (memcmp(tmp, p, len))
		fail_msg("message %llu corrupt", (unsigned long long)m);
}

static void test_srq_two_rc_qps(void **state)
{
	struct rig *r = *state;
	struct u4v_srq *srq = make_srq(r, NSLOT, 0x5151);
	struct u4vt_qp_opts o = r->p.o;
	struct u4v_qp *qa[2], *qb[2];
	int per_qp[2] = { 0, 0 }, seen[NSLOT] = { 0 };
	struct ibv_wc wc[40];
	int i, n;

	o.srq = srq;
	for (i = 0; i < 2; i++) {
		qa[i] = u4vt_qp_create(&r->p.a, IBV_QPT_RC, &r->p.o);
		qb[i] = u4vt_qp_create(&r->p.b, IBV_QPT_RC, &o);
		u4vt_qp_connect(qa[i], IBV_QPT_RC, u4v_qp_num(qb[i]), &r->p.o);
		u4vt_qp_connect(qb[i], IBV_QPT_RC, u4v_qp_num(qa[i]), &o);
	}
	post_slots(r, srq, 0, 40);
	for (i = 0; i < 40; i++) {
		uint32_t len = 8 + (uint32_t)i * 397 % (SLOT - 8);
		uint8_t *p = r->src + (size_t)i * SLOT;

		make_msg(p, 1000 + i, len);
		assert_int_equal(u4vt_post_send1(qa[i % 2], IBV_WR_SEND, i,
						 IBV_SEND_SIGNALED,
						 (uintptr_t)p, len,
						 u4v_mr_lkey(r->ms), 0, 0, 0),
				 0);
	}
	assert_int_equal(u4vt_poll(r->p.a.cq, wc, 40, TMO), 40);
	for (i = 0; i < 40; i++)
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	n = u4vt_poll(r->p.b.cq, wc, 40, TMO);
	assert_int_equal(n, 40);
	for (i = 0; i < n; i++) {
		uint8_t *slot = r->dst + wc[i].wr_id * SLOT;

		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_true(wc[i].wr_id < 40);
		assert_int_equal(seen[wc[i].wr_id]++, 0);
		if (wc[i].qp_num == u4v_qp_num(qb[0]))
			per_qp[0]++;
		else if (wc[i].qp_num == u4v_qp_num(qb[1]))
			per_qp[1]++;
		else
			fail_msg("completion for QP 0x%x", wc[i].qp_num);
		check_msg(slot, wc[i].byte_len);
		assert_int_equal(slot[wc[i].byte_len], 0);
	}
	assert_int_equal(per_qp[0], 20);
	assert_int_equal(per_qp[1], 20);
	for (i = 0; i < 2; i++) {
		assert_int_equal(u4v_destroy_qp(qa[i]), 0);
		assert_int_equal(u4v_destroy_qp(qb[i]), 0);
	}
	assert_int_equal(u4v_destroy_srq(srq), 0);
}

static void test_srq_ud(void **state)
{
	struct rig *r = *state;
	struct u4v_srq *srq = make_srq(r, NSLOT, 0x5252);
	struct u4vt_qp_opts o = r->p.o;
	struct u4v_qp *qa[2], *qb;
	struct u4v_ah *ah;
	struct ibv_wc wc[32];
	int i, n;

	o.srq = srq;
	qb = u4vt_qp_create(&r->p.b, IBV_QPT_UD, &o);
	u4vt_qp_connect(qb, IBV_QPT_UD, 0, &o);
	for (i = 0; i < 2; i++) {
		qa[i] = u4vt_qp_create(&r->p.a, IBV_QPT_UD, &r->p.o);
		u4vt_qp_connect(qa[i], IBV_QPT_UD, 0, &r->p.o);
	}
	ah = u4vt_ah(r->p.a.pd);
	post_slots(r, srq, 0, 16);
	for (i = 0; i < 16; i++) {
		uint32_t len = 8 + (uint32_t)i * 271 % 4089;
		uint8_t *p = r->src + (size_t)i * SLOT;

		make_msg(p, 2000 + i, len);
		assert_int_equal(rel_post_ud(qa[i % 2], i, p, len,
					     u4v_mr_lkey(r->ms), ah,
					     u4v_qp_num(qb)), 0);
	}
	assert_int_equal(u4vt_poll(r->p.a.cq, wc, 16, TMO), 16);
	n = u4vt_poll(r->p.b.cq, wc, 16, TMO);
	assert_int_equal(n, 16);
	for (i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].qp_num, u4v_qp_num(qb));
		assert_true(wc[i].src_qp == u4v_qp_num(qa[0]) ||
			    wc[i].src_qp == u4v_qp_num(qa[1]));
		check_msg(r->dst + wc[i].wr_id * SLOT + 40,
			  wc[i].byte_len - 40);
	}
	assert_int_equal(u4v_destroy_ah(ah), 0);
	assert_int_equal(u4v_destroy_qp(qa[0]), 0);
	assert_int_equal(u4v_destroy_qp(qa[1]), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
	assert_int_equal(u4v_destroy_srq(srq), 0);
}

static void send_n(struct rig *r, struct u4v_qp *qa, int n, uint64_t id0)
{
	struct ibv_wc wc[16];
	int i;

	for (i = 0; i < n; i++) {
		make_msg(r->src, id0 + i, 64);
		assert_int_equal(u4vt_post_send1(qa, IBV_WR_SEND, id0 + i,
						 IBV_SEND_SIGNALED,
						 (uintptr_t)r->src, 64,
						 u4v_mr_lkey(r->ms), 0, 0, 0),
				 0);
		assert_int_equal(u4vt_poll(r->p.a.cq, wc, 1, TMO), 1);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		assert_int_equal(u4vt_poll(r->p.b.cq, wc, 1, TMO), 1);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	}
}

static void test_srq_limit_event(void **state)
{
	struct rig *r = *state;
	struct u4v_srq *srq = make_srq(r, 16, 0x5353);
	struct u4vt_qp_opts o = r->p.o;
	struct ibv_srq_attr sa;
	struct u4v_qp *qa, *qb;
	uint64_t element;
	uint32_t type;

	o.srq = srq;
	qa = u4vt_qp_create(&r->p.a, IBV_QPT_RC, &r->p.o);
	qb = u4vt_qp_create(&r->p.b, IBV_QPT_RC, &o);
	u4v_qp_set_handle(qb, 0x9b9b);
	u4vt_qp_connect(qa, IBV_QPT_RC, u4v_qp_num(qb), &r->p.o);
	u4vt_qp_connect(qb, IBV_QPT_RC, u4v_qp_num(qa), &o);
	post_slots(r, srq, 0, 10);
	sa.srq_limit = 5;
	assert_int_equal(u4v_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	/* 10 → 5 posted: not below the limit yet */
	send_n(r, qa, 5, 100);
	assert_int_equal(u4vt_async_read(r->p.evfd[0], &element, &type, 50), 0);
	/* 5 → 4: below; the event names the SRQ */
	send_n(r, qa, 1, 200);
	assert_int_equal(u4vt_async_read(r->p.evfd[0], &element, &type, 2000),
			 1);
	assert_true(element == 0x5353);
	assert_int_equal(type, IBV_EVENT_SRQ_LIMIT_REACHED);
	/* it disarmed itself */
	memset(&sa, 0xff, sizeof(sa));
	assert_int_equal(u4v_query_srq(srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 0);
	send_n(r, qa, 2, 300);
	assert_int_equal(u4vt_async_read(r->p.evfd[0], &element, &type, 50), 0);
	/* re-armed above the current count: fires on the next take */
	sa.srq_limit = 8;
	assert_int_equal(u4v_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	send_n(r, qa, 1, 400);
	assert_int_equal(u4vt_async_read(r->p.evfd[0], &element, &type, 2000),
			 1);
	assert_true(element == 0x5353);
	assert_int_equal(type, IBV_EVENT_SRQ_LIMIT_REACHED);
	/* an SRQ QP entering ERR: last WQE reached, naming the QP */
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		assert_int_equal(u4v_modify_qp(qb, &a, IBV_QP_STATE), 0);
		assert_int_equal(u4vt_async_read(r->p.evfd[0], &element, &type,
						 2000),
				 1);
		assert_true(element == 0x9b9b);
		assert_int_equal(type, IBV_EVENT_QP_LAST_WQE_REACHED);
	}
	/* the SRQ's receives were not flushed by one QP's error */
	{
		struct ibv_wc wc;

		assert_int_equal(u4vt_poll(r->p.b.cq, &wc, 1, 50), 0);
	}
	assert_int_equal(u4v_destroy_qp(qa), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
	assert_int_equal(u4v_destroy_srq(srq), 0);
}

/* RDMA READ and atomics need no receive WQE: an SRQ QP serves them too. */
static void test_srq_rc_read_atomic(void **state)
{
	struct rig *r = *state;
	struct u4v_srq *srq = make_srq(r, 16, 0x5454);
	struct u4vt_qp_opts o = r->p.o;
	uint64_t *cell = (uint64_t *)(r->dst + SLOT), orig;
	uint8_t *rd = r->src + 2 * SLOT;
	struct u4v_qp *qa, *qb;
	struct ibv_wc wc;
	int i;

	o.srq = srq;
	qa = u4vt_qp_create(&r->p.a, IBV_QPT_RC, &r->p.o);
	qb = u4vt_qp_create(&r->p.b, IBV_QPT_RC, &o);
	u4vt_qp_connect(qa, IBV_QPT_RC, u4v_qp_num(qb), &r->p.o);
	u4vt_qp_connect(qb, IBV_QPT_RC, u4v_qp_num(qa), &o);
	make_msg(r->dst, 77, SLOT);
	memset(rd, 0, SLOT);
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_RDMA_READ, 1,
					 IBV_SEND_SIGNALED, (uintptr_t)rd,
					 SLOT, u4v_mr_lkey(r->ms),
					 (uintptr_t)r->dst,
					 u4v_mr_rkey(r->md), 0),
			 0);
	assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	check_msg(rd, SLOT);
	*cell = 1000;
	for (i = 0; i < 2; i++) {
		enum ibv_wr_opcode op = i ? IBV_WR_ATOMIC_CMP_AND_SWP :
					    IBV_WR_ATOMIC_FETCH_AND_ADD;

		/* fetch-and-add 5 (1000 -> 1005), then swap 1005 for 3 */
		assert_int_equal(u4vt_post_atomic(qa, op, 2 + i,
						  (uintptr_t)r->src,
						  u4v_mr_lkey(r->ms),
						  (uintptr_t)cell,
						  u4v_mr_rkey(r->md),
						  i ? 1005 : 5, 3),
				 0);
		assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		memcpy(&orig, r->src, 8);
		assert_int_equal(orig, i ? 1005 : 1000);
	}
	assert_int_equal(*cell, 3);
	/* no receive was consumed, none completed */
	assert_int_equal(u4vt_poll(r->p.b.cq, &wc, 1, 50), 0);
	assert_int_equal(u4v_destroy_qp(qa), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
	assert_int_equal(u4v_destroy_srq(srq), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, rig_setup, rig_teardown)
	const struct CMUnitTest tests[] = {
		T(test_srq_two_rc_qps),
		T(test_srq_ud),
		T(test_srq_limit_event),
		T(test_srq_rc_read_atomic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
