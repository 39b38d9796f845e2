// SPDX-License-Identifier: MIT
/*
 * CQ and SRQ rules: creation limits, an SRQ cannot be attached to a UC QP,
 * objects in use cannot be destroyed, a CQ overrun is reported once as an
 * IBV_EVENT_CQ_ERR async event record on the context's async fd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

struct rig {
	const char *shm;
	int evfd[2];
	struct u4vt_end a, b;
};

static int rig_setup(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));

	r->shm = u4vt_shm_name("cqsrq");
	assert_int_equal(pipe2(r->evfd, O_NONBLOCK | O_CLOEXEC), 0);
	u4vt_cable_create(r->shm, NULL);
	u4vt_end_open_async(&r->a, r->shm, 0, r->evfd[1]);
	u4vt_end_open(&r->b, r->shm, 1);
	*state = r;
	return 0;
}

static int rig_teardown(void **state)
{
	struct rig *r = *state;

	u4vt_end_close(&r->a);
	u4vt_end_close(&r->b);
	u4l_sim_destroy(r->shm);
	close(r->evfd[0]);
	close(r->evfd[1]);
	free(r);
	return 0;
}

static void test_srq_attach_rules(void **state)
{
	struct rig *r = *state;
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
	struct rig *r = *state;
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
	/* bad lkey / too many SGEs */
	assert_int_equal(u4vt_post_srq_recv1(srq, 10, (uintptr_t)buf, 8,
					     u4v_mr_lkey(mr) ^ 0x40000),
			 EINVAL);
	assert_int_equal(u4v_destroy_srq(srq), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
}

static void test_cq_limits(void **state)
{
	struct rig *r = *state;
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

/* A send CQ of 2 entries gets 6 completions: one CQ_ERR event. */
static void test_cq_overrun_async_event(void **state)
{
	struct rig *r = *state;
	struct u4vt_qp_opts o;
	struct u4vt_end small;
	struct u4v_cq *cq2;
	struct u4v_qp *qa, *qb;
	static uint8_t src[64], dst[64];
	struct u4v_mr *ms, *md;
	struct ibv_wc wc[8];
	uint64_t element;
	uint32_t type;
	int i, got;

	assert_int_equal(u4v_create_cq(r->a.ctx, 2, &cq2), 0);
	u4v_cq_set_handle(cq2, 0xc0ffee);
	small = r->a;
	small.cq = cq2;
	u4vt_qp_opts_default(&o);
	o.sq_sig_all = 1;
	qa = u4vt_qp_create(&small, IBV_QPT_RC, &o);
	qb = u4vt_qp_create(&r->b, IBV_QPT_RC, &o);
	u4vt_qp_connect(qa, IBV_QPT_RC, u4v_qp_num(qb), &o);
	u4vt_qp_connect(qb, IBV_QPT_RC, u4v_qp_num(qa), &o);
	ms = u4vt_reg(&r->a, src, 64, U4VT_ACCESS_ALL);
	md = u4vt_reg(&r->b, dst, 64, U4VT_ACCESS_ALL);
	/* nothing yet */
	assert_int_equal(u4vt_async_read(r->evfd[0], &element, &type, 0), 0);
	for (i = 0; i < 6; i++)
		assert_int_equal(u4vt_post_send1(qa, IBV_WR_RDMA_WRITE, i, 0,
						 (uintptr_t)src, 8,
						 u4v_mr_lkey(ms),
						 (uintptr_t)dst + 8 * i,
						 u4v_mr_rkey(md), 0),
				 0);
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
	got = u4v_poll_cq(cq2, 8, wc);
	assert_int_equal(got, 2);
	assert_int_equal(wc[0].wr_id, 0);
	assert_int_equal(wc[1].wr_id, 1);
	assert_int_equal(u4v_destroy_qp(qa), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
	assert_int_equal(u4v_destroy_cq(cq2), 0);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
}

/* Resizing keeps queued completions in order; not below their count. */
static void test_cq_resize_keeps_entries(void **state)
{
	struct rig *r = *state;
	struct u4vt_qp_opts o;
	struct u4vt_end small;
	struct u4v_cq *cq;
	struct u4v_qp *qa, *qb;
	static uint8_t src[64], dst[64];
	struct u4v_mr *ms, *md;
	struct ibv_wc wc[8];
	int i;

	assert_int_equal(u4v_create_cq(r->a.ctx, 8, &cq), 0);
	small = r->a;
	small.cq = cq;
	u4vt_qp_opts_default(&o);
	qa = u4vt_qp_create(&small, IBV_QPT_RC, &o);
	qb = u4vt_qp_create(&r->b, IBV_QPT_RC, &o);
	u4vt_qp_connect(qa, IBV_QPT_RC, u4v_qp_num(qb), &o);
	u4vt_qp_connect(qb, IBV_QPT_RC, u4v_qp_num(qa), &o);
	ms = u4vt_reg(&r->a, src, 64, U4VT_ACCESS_ALL);
	md = u4vt_reg(&r->b, dst, 64, U4VT_ACCESS_ALL);
	for (i = 0; i < 5; i++)
		assert_int_equal(u4vt_post_send1(qa, IBV_WR_RDMA_WRITE, i,
						 IBV_SEND_SIGNALED,
						 (uintptr_t)src, 8,
						 u4v_mr_lkey(ms), (uintptr_t)dst,
						 u4v_mr_rkey(md), 0),
				 0);
	/* wait until all five are queued, without taking them */
	for (i = 0; i < 4000 && __atomic_load_n(&cq->count, __ATOMIC_RELAXED) <
					5;
	     i++) {
		u4v_ctx_progress(r->a.ctx);
		usleep(500);
	}
	assert_int_equal(u4v_resize_cq(cq, 4), EINVAL);
	assert_int_equal(u4v_resize_cq(cq, 16), 0);
	assert_int_equal(u4v_poll_cq(cq, 8, wc), 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(wc[i].wr_id, i);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	}
	assert_int_equal(u4v_destroy_qp(qa), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
	assert_int_equal(u4v_destroy_cq(cq), 0);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
}

/* A receive list stops at the bad WR: earlier ones posted, bad_wr set. */
static void test_post_recv_list_partial(void **state)
{
	struct rig *r = *state;
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
	sge[1].lkey ^= 0x20000;
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
#define T(f) cmocka_unit_test_setup_teardown(f, rig_setup, rig_teardown)
	const struct CMUnitTest tests[] = {
		T(test_srq_attach_rules),
		T(test_srq_limits),
		T(test_cq_limits),
		T(test_cq_overrun_async_event),
		T(test_cq_resize_keeps_entries),
		T(test_post_recv_list_partial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
