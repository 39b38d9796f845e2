// SPDX-License-Identifier: MIT
/*
 * CQ and SRQ rules: creation limits, an SRQ cannot be attached to a UC QP,
 * objects in use cannot be destroyed, a CQ overrun is reported once as an
 * IBV_EVENT_CQ_ERR async event record on the context's async fd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine_int.h"
#include "testlib.h"

static int rig_setup(void **state)
{
	u4vt_pair_new(state, "cqsrq", 0);
	return 0;
}

static void test_srq_attach_rules(void **state)
{
	struct u4vt_pair *r = *state;
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 2 };
	struct u4v_qp_init init = { 0 };
	struct u4v_srq *srq;
	struct u4v_qp *qp = NULL;
	static uint8_t buf[64];
	struct u4v_mr *mr = u4vt_reg(&r->a, buf, 64, U4VT_ACCESS_ALL);

	assert_int_equal(u4v_create_srq(r->a.pd, &sa, &srq), 0);
	init.send_cq = r->a.cq;
	init.recv_cq = r->a.cq;
	init.srq = srq;
	init.cap.max_send_wr = 4;
	init.cap.max_send_sge = 1;
	/* UC: refused */
	init.qp_type = IBV_QPT_UC;
	assert_int_equal(u4v_create_qp(r->a.pd, &init, &qp), EINVAL);
	assert_null(qp);
	/* RC and UD: fine; their own RQ is refused */
	init.qp_type = IBV_QPT_RC;
	assert_int_equal(u4v_create_qp(r->a.pd, &init, &qp), 0);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1,
					 .qp_access_flags = U4VT_ACCESS_ALL };

		assert_int_equal(u4v_modify_qp(qp, &a,
					       IBV_QP_STATE | IBV_QP_PORT |
						       IBV_QP_PKEY_INDEX |
						       IBV_QP_ACCESS_FLAGS),
				 0);
	}
	assert_int_equal(u4vt_post_recv1(qp, 1, (uintptr_t)buf, 8,
					 u4v_mr_lkey(mr)),
			 EINVAL);
	assert_int_equal(u4vt_post_srq_recv1(srq, 1, (uintptr_t)buf, 8,
					     u4v_mr_lkey(mr)),
			 0);
	/* in use: cannot go */
	assert_int_equal(u4v_destroy_srq(srq), EBUSY);
	assert_int_equal(u4v_destroy_cq(r->a.cq), EBUSY);
	assert_int_equal(u4v_dealloc_pd(r->a.pd), EBUSY);
	assert_int_equal(u4v_destroy_qp(qp), 0);
	init.qp_type = IBV_QPT_UD;
	assert_int_equal(u4v_create_qp(r->a.pd, &init, &qp), 0);
	assert_int_equal(u4v_destroy_srq(srq), EBUSY);
	assert_int_equal(u4v_destroy_qp(qp), 0);
	assert_int_equal(u4v_destroy_srq(srq), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
}

static void test_srq_limits(void **state)
{
	struct u4vt_pair *r = *state;
	struct ibv_srq_attr sa;
	struct u4v_srq *srq;
	static uint8_t buf[64];
	struct u4v_mr *mr = u4vt_reg(&r->a, buf, 64, U4VT_ACCESS_ALL);
	int i;

	sa = (struct ibv_srq_attr){ .max_wr = 0, .max_sge = 1 };
	assert_int_equal(u4v_create_srq(r->a.pd, &sa, &srq), EINVAL);
	sa = (struct ibv_srq_attr){ .max_wr = U4V_MAX_SRQ_WR + 1,
				    .max_sge = 1 };
	assert_int_equal(u4v_create_srq(r->a.pd, &sa, &srq), EINVAL);
	sa = (struct ibv_srq_attr){ .max_wr = 4, .max_sge = U4V_MAX_SGE + 1 };
	assert_int_equal(u4v_create_srq(r->a.pd, &sa, &srq), EINVAL);
	sa = (struct ibv_srq_attr){ .max_wr = 4, .max_sge = 1,
				    .srq_limit = 5 };
	assert_int_equal(u4v_create_srq(r->a.pd, &sa, &srq), EINVAL);
	sa = (struct ibv_srq_attr){ .max_wr = 4, .max_sge = 1 };
	assert_int_equal(u4v_create_srq(r->a.pd, &sa, &srq), 0);
	/* full at max_wr: ENOMEM, bad_wr the one that did not fit */
	for (i = 0; i < 4; i++)
		assert_int_equal(u4vt_post_srq_recv1(srq, i, (uintptr_t)buf,
						     8, u4v_mr_lkey(mr)),
				 0);
	assert_int_equal(u4vt_post_srq_recv1(srq, 9, (uintptr_t)buf, 8,
					     u4v_mr_lkey(mr)),
			 ENOMEM);
	/* grow keeps the posted ones; shrinking below them is refused */
	sa.max_wr = 2;
	assert_int_equal(u4v_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL);
	sa.max_wr = 8;
	assert_int_equal(u4v_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), 0);
	assert_int_equal(u4vt_post_srq_recv1(srq, 9, (uintptr_t)buf, 8,
					     u4v_mr_lkey(mr)),
			 0);
	sa.srq_limit = 3;
	assert_int_equal(u4v_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	memset(&sa, 0, sizeof(sa));
	assert_int_equal(u4v_query_srq(srq, &sa), 0);
	assert_int_equal(sa.max_wr, 8);
	assert_int_equal(sa.srq_limit, 3);
	/* too many SGEs (keys are checked when a message is written) */
	{
		struct ibv_sge sg[2] = { { (uintptr_t)buf, 4, u4v_mr_lkey(mr) },
					 { (uintptr_t)buf + 4, 4,
					   u4v_mr_lkey(mr) } };
		struct ibv_recv_wr w = { .wr_id = 10, .sg_list = sg,
					 .num_sge = 2 },
				   *bad;

		assert_int_equal(u4v_post_srq_recv(srq, &w, &bad), EINVAL);
		assert_ptr_equal(bad, &w);
	}
	assert_int_equal(u4v_destroy_srq(srq), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
}

static void test_cq_limits(void **state)
{
	struct u4vt_pair *r = *state;
	struct u4v_cq *cq;

	assert_int_equal(u4v_create_cq(r->a.ctx, 0, &cq), EINVAL);
	assert_int_equal(u4v_create_cq(r->a.ctx, -1, &cq), EINVAL);
	assert_int_equal(u4v_create_cq(r->a.ctx, (int)U4V_MAX_CQE + 1, &cq),
			 EINVAL);
	assert_int_equal(u4v_create_cq(r->a.ctx, 1, &cq), 0);
	assert_int_equal(u4v_cq_depth(cq), 1);
	assert_int_equal(u4v_resize_cq(cq, 0), EINVAL);
	assert_int_equal(u4v_resize_cq(cq, 100), 0);
	assert_true(u4v_cq_depth(cq) >= 100);
	assert_int_equal(u4v_poll_cq(cq, -1, NULL), -EINVAL);
	assert_int_equal(u4v_destroy_cq(cq), 0);
}

/*
 * An RC QP pair between the rig's ends whose a side completes on a CQ of
 * cqe entries of its own, and 64 bytes registered on each end.
 */
struct cq_qps {
	struct u4v_cq *cq;
	struct u4v_qp *qa, *qb;
	uint8_t src[64], dst[64];
	struct u4v_mr *ms, *md;
};

static void cq_qps_up(struct u4vt_pair *r, struct cq_qps *c, int cqe,
		      const struct u4vt_qp_opts *o)
{
	struct u4vt_end own = r->a;

	assert_int_equal(u4v_create_cq(r->a.ctx, cqe, &c->cq), 0);
	own.cq = c->cq;
	u4vt_qp_pair(&own, &r->b, IBV_QPT_RC, o, &c->qa, &c->qb);
	c->ms = u4vt_reg(&r->a, c->src, 64, U4VT_ACCESS_ALL);
	c->md = u4vt_reg(&r->b, c->dst, 64, U4VT_ACCESS_ALL);
}

static void cq_qps_down(struct cq_qps *c)
{
	assert_int_equal(u4v_destroy_qp(c->qa), 0);
	assert_int_equal(u4v_destroy_qp(c->qb), 0);
	assert_int_equal(u4v_destroy_cq(c->cq), 0);
	assert_int_equal(u4v_dereg_mr(c->ms), 0);
	assert_int_equal(u4v_dereg_mr(c->md), 0);
}

/* An 8-byte RDMA WRITE of c's src to its dst + off through qp. */
static int cq_qps_write(struct cq_qps *c, struct u4v_qp *qp, uint64_t wr_id,
			int flags, size_t off)
{
	return u4vt_post_send1(qp, IBV_WR_RDMA_WRITE, wr_id, flags,
			       (uintptr_t)c->src, 8, u4v_mr_lkey(c->ms),
			       (uintptr_t)c->dst + off, u4v_mr_rkey(c->md), 0);
}

/* Drive ctx until cq holds n completions (5 s at most), without polling. */
static void wait_queued(struct u4v_ctx *ctx, struct u4v_cq *cq, uint32_t n)
{
	uint64_t end = u4vt_now_ms() + 5000;

	while (__atomic_load_n(&cq->count, __ATOMIC_RELAXED) < n &&
	       u4vt_now_ms() < end)
		u4v_ctx_progress(ctx);
	assert_int_equal(cq->count, n);
}

/* A send CQ of 2 entries gets 6 completions: one CQ_ERR event. */
static void test_cq_overrun_async_event(void **state)
{
	struct u4vt_pair *r = *state;
	struct u4vt_qp_opts o;
	struct cq_qps c;
	struct ibv_wc wc[8];
	uint64_t element;
	uint32_t type;
	int i, got;

	u4vt_qp_opts_default(&o);
	o.sq_sig_all = 1;
	cq_qps_up(r, &c, 2, &o);
	u4v_cq_set_handle(c.cq, 0xc0ffee);
	/* nothing yet */
	assert_int_equal(u4vt_async_read(r->evfd[0], &element, &type, 0), 0);
	for (i = 0; i < 6; i++)
		assert_int_equal(cq_qps_write(&c, c.qa, i, 0, 8 * i), 0);
	/* wait for the responder to have executed all six */
	for (i = 0; i < 5000 && u4vt_async_read(r->evfd[0], &element, &type,
						 1) == 0;
	     i++)
		u4v_ctx_progress(r->a.ctx);
	assert_true(i < 5000);
	assert_true(element == 0xc0ffee);
	assert_int_equal(type, IBV_EVENT_CQ_ERR);
	/* reported once, not per lost completion */
	assert_int_equal(u4vt_async_read(r->evfd[0], &element, &type, 200), 0);
	got = u4v_poll_cq(c.cq, 8, wc);
	assert_int_equal(got, 2);
	assert_int_equal(wc[0].wr_id, 0);
	assert_int_equal(wc[1].wr_id, 1);
	cq_qps_down(&c);
}

/* Resizing keeps queued completions in order; not below their count. */
static void test_cq_resize_keeps_entries(void **state)
{
	struct u4vt_pair *r = *state;
	struct u4vt_qp_opts o;
	struct cq_qps c;
	struct ibv_wc wc[8];
	int i;

	u4vt_qp_opts_default(&o);
	cq_qps_up(r, &c, 8, &o);
	for (i = 0; i < 5; i++)
		assert_int_equal(
		    cq_qps_write(&c, c.qa, i, IBV_SEND_SIGNALED, 0), 0);
	/* all five queued, none taken */
	wait_queued(r->a.ctx, c.cq, 5);
	assert_int_equal(u4v_resize_cq(c.cq, 4), EINVAL);
	assert_int_equal(u4v_resize_cq(c.cq, 16), 0);
	assert_int_equal(u4v_poll_cq(c.cq, 8, wc), 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(wc[i].wr_id, i);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	}
	cq_qps_down(&c);
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Completion timestamps: taken when each completion is made, in the
 * device clock (CLOCK_MONOTONIC_RAW) and the wall clock; they stay with
 * their completions through a resize and a QP's RESET (which removes its
 * completions); the device clock can be read (query_rt_values).
 */
static void test_cq_timestamps(void **state)
{
	struct u4vt_pair *r = *state;
	struct u4vt_qp_opts o;
	struct u4vt_end own;
	struct cq_qps c;
	struct u4v_qp *qa1, *qb1;
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	uint64_t raw0, wall0, raw1, wall1, last = 0, now;
	struct u4v_cq_ts ts;
	struct ibv_wc wc;
	int i;

	u4vt_qp_opts_default(&o);
	cq_qps_up(r, &c, 8, &o);
	assert_int_equal(u4v_cq_set_timestamps(c.cq, 4), EINVAL);
	assert_int_equal(
	    u4v_cq_set_timestamps(c.cq, U4V_CQ_TS_RAW | U4V_CQ_TS_WALL), 0);
	/* a second pair on the same CQ */
	own = r->a;
	own.cq = c.cq;
	u4vt_qp_pair(&own, &r->b, IBV_QPT_RC, &o, &qa1, &qb1);
	raw0 = clock_ns(CLOCK_MONOTONIC_RAW);
	wall0 = clock_ns(CLOCK_REALTIME);
	/* 3 on QP 0, then 3 on QP 1, one at a time: ordered timestamps */
	for (i = 0; i < 6; i++) {
		assert_int_equal(cq_qps_write(&c, i < 3 ? c.qa : qa1, i,
					      IBV_SEND_SIGNALED, 0),
				 0);
		wait_queued(r->a.ctx, c.cq, (uint32_t)i + 1);
	}
	raw1 = clock_ns(CLOCK_MONOTONIC_RAW);
	wall1 = clock_ns(CLOCK_REALTIME);
	assert_int_equal(u4v_resize_cq(c.cq, 16), 0);
	assert_int_equal(u4v_modify_qp(c.qa, &reset, IBV_QP_STATE), 0);
	for (i = 3; i < 6; i++) {
		assert_int_equal(u4v_poll_cq_ts(c.cq, &wc, &ts), 1);
		assert_int_equal(wc.wr_id, i);
		assert_true(ts.raw >= raw0 && ts.raw <= raw1 && ts.raw >= last);
		assert_true(ts.wall >= wall0 && ts.wall <= wall1);
		last = ts.raw;
	}
	assert_int_equal(u4v_poll_cq_ts(c.cq, &wc, &ts), 0);
	assert_int_equal(u4v_query_rt_values(r->a.ctx, &v), 0);
	now = (uint64_t)v.raw_clock.tv_sec * 1000000000ull +
	      (uint64_t)v.raw_clock.tv_nsec;
	assert_true(now >= raw1 && now <= clock_ns(CLOCK_MONOTONIC_RAW));
	v.comp_mask = 2;
	assert_int_equal(u4v_query_rt_values(r->a.ctx, &v), EINVAL);
	assert_int_equal(u4v_destroy_qp(qa1), 0);
	assert_int_equal(u4v_destroy_qp(qb1), 0);
	cq_qps_down(&c);
}

/* A receive list stops at the bad WR: earlier ones posted, bad_wr set. */
static void test_post_recv_list_partial(void **state)
{
	struct u4vt_pair *r = *state;
	struct u4vt_qp_opts o;
	struct u4v_qp *qp;
	static uint8_t buf[256];
	struct u4v_mr *mr = u4vt_reg(&r->a, buf, sizeof(buf), U4VT_ACCESS_ALL);
	struct ibv_sge sge[3];
	struct ibv_recv_wr wr[3], *bad = NULL;
	struct ibv_wc wc[4];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int i;

	u4vt_qp_opts_default(&o);
	qp = u4vt_qp_create(&r->a, IBV_QPT_RC, &o);
	u4vt_qp_connect(qp, IBV_QPT_RC, u4v_qp_num(qp), &o);
	for (i = 0; i < 3; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)buf + 64 * i, 64,
					   u4v_mr_lkey(mr) };
		wr[i] = (struct ibv_recv_wr){ .wr_id = 10 + i,
					      .sg_list = &sge[i],
					      .num_sge = 1,
					      .next = i < 2 ? &wr[i + 1] :
							      NULL };
	}
	wr[1].num_sge = -1;
	errno = 0;
	assert_int_equal(u4v_post_recv(qp, wr, &bad), EINVAL);
	assert_int_equal(errno, 0);
	assert_ptr_equal(bad, &wr[1]);
	/* exactly one was posted: ERR flushes it alone */
	assert_int_equal(u4v_modify_qp(qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(u4vt_poll(r->a.cq, wc, 4, 200), 1);
	assert_int_equal(wc[0].wr_id, 10);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(u4v_destroy_qp(qp), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, rig_setup, u4vt_pair_teardown)
	const struct CMUnitTest tests[] = {
		T(test_srq_attach_rules),
		T(test_srq_limits),
		T(test_cq_limits),
		T(test_cq_overrun_async_event),
		T(test_cq_resize_keeps_entries),
		T(test_cq_timestamps),
		T(test_post_recv_list_partial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
