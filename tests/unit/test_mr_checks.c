// SPDX-License-Identifier: MIT
/*
 * Memory regions: keys (lkey ≠ rkey, not sequential, not reusable after
 * deregistration), registration checks (access flag rules, unmapped ranges,
 * length 0), local checks at post time and remote checks at the responder
 * (bounds off by one at both ends, access flags, wrong PD, stale rkey).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine_int.h"
#include "testlib.h"

struct rig {
	const char *shm;
	struct u4vt_end a, b;
};

static int rig_setup(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));

	r->shm = u4vt_shm_name("mr");
	u4vt_cable_create(r->shm, NULL);
	u4vt_end_open(&r->a, r->shm, 0);
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
	free(r);
	return 0;
}

static void test_keys(void **state)
{
	struct rig *r = *state;
	enum { N = 32 };
	static uint8_t buf[N][64];
	struct u4v_mr *mr[N];
	uint32_t lk[N], rk[N];
	int i, j, same_step = 0;

	for (i = 0; i < N; i++) {
		mr[i] = u4vt_reg(&r->a, buf[i], 64, U4VT_ACCESS_ALL);
		lk[i] = u4v_mr_lkey(mr[i]);
		rk[i] = u4v_mr_rkey(mr[i]);
		assert_int_not_equal(lk[i], rk[i]);
	}
	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++) {
			assert_true(i == j || lk[i] != lk[j]);
			assert_true(i == j || rk[i] != rk[j]);
			assert_true(lk[i] != rk[j]);
		}
	/* not a counter: consecutive keys do not step by a constant */
	for (i = 2; i < N; i++)
		if (rk[i] - rk[i - 1] == rk[i - 1] - rk[i - 2])
			same_step++;
	assert_true(same_step < 3);
	for (i = 1; i < N; i++)
		assert_true(rk[i] != rk[i - 1] + 1 && lk[i] != lk[i - 1] + 1);
	/* the key changes when the same slot is registered again */
	{
		uint32_t old_l = lk[5], old_r = rk[5];
		struct u4v_mr *again;

		assert_int_equal(u4v_dereg_mr(mr[5]), 0);
		assert_null(u4v_mr_lookup(r->a.ctx, old_l));
		assert_int_equal(u4v_mr_check_local(r->a.pd, old_l,
						    (uintptr_t)buf[5], 8, 0),
				 IBV_WC_LOC_PROT_ERR);
		again = u4vt_reg(&r->a, buf[5], 64, U4VT_ACCESS_ALL);
		assert_int_not_equal(u4v_mr_lkey(again), old_l);
		assert_int_not_equal(u4v_mr_rkey(again), old_r);
		/* the stale keys do not open the new MR */
		assert_int_equal(u4v_mr_check_local(r->a.pd, old_l,
						    (uintptr_t)buf[5], 8, 0),
				 IBV_WC_LOC_PROT_ERR);
		assert_int_equal(u4v_mr_check_remote(r->a.pd, old_r,
						     (uintptr_t)buf[5], 8,
						     IBV_ACCESS_REMOTE_READ,
						     NULL),
				 IBV_WC_REM_ACCESS_ERR);
		assert_int_equal(u4v_mr_check_local(r->a.pd, u4v_mr_lkey(again),
						    (uintptr_t)buf[5], 8, 0),
				 IBV_WC_SUCCESS);
		mr[5] = again;
	}
	/* a PD in use cannot go */
	assert_int_equal(u4v_dealloc_pd(r->a.pd), EBUSY);
	for (i = 0; i < N; i++)
		assert_int_equal(u4v_dereg_mr(mr[i]), 0);
}

static void test_registration_rules(void **state)
{
	struct rig *r = *state;
	long psz = sysconf(_SC_PAGESIZE);
	uint8_t *m;
	struct u4v_mr *mr = NULL;

	m = mmap(NULL, 3 * psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	/* remote write / atomic need local write */
	assert_int_equal(u4v_reg_mr(r->a.pd, m, 64, IBV_ACCESS_REMOTE_WRITE,
				    &mr), EINVAL);
	assert_int_equal(u4v_reg_mr(r->a.pd, m, 64, IBV_ACCESS_REMOTE_ATOMIC,
				    &mr), EINVAL);
	assert_int_equal(u4v_reg_mr(r->a.pd, m, 64,
				    IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ,
				    &mr), EINVAL);
	/* remote read alone is fine, as is no access at all */
	assert_int_equal(u4v_reg_mr(r->a.pd, m, 64, IBV_ACCESS_REMOTE_READ,
				    &mr), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	assert_int_equal(u4v_reg_mr(r->a.pd, m, 64, 0, &mr), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	/* an access bit the device does not know */
	assert_int_equal(u4v_reg_mr(r->a.pd, m, 64, 1 << 25, &mr), EINVAL);
	/* an unmapped page in the middle, at the end, at the start */
	assert_int_equal(munmap(m + psz, psz), 0);
	assert_int_equal(u4v_reg_mr(r->a.pd, m, 3 * psz,
				    IBV_ACCESS_LOCAL_WRITE, &mr), EFAULT);
	assert_int_equal(u4v_reg_mr(r->a.pd, m + psz - 1, 2,
				    IBV_ACCESS_LOCAL_WRITE, &mr), EFAULT);
	assert_int_equal(u4v_reg_mr(r->a.pd, m + psz, 1,
				    IBV_ACCESS_LOCAL_WRITE, &mr), EFAULT);
	assert_int_equal(u4v_reg_mr(r->a.pd, m, psz, IBV_ACCESS_LOCAL_WRITE,
				    &mr), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	assert_int_equal(u4v_reg_mr(r->a.pd, NULL, 64,
				    IBV_ACCESS_LOCAL_WRITE, &mr), EFAULT);
	/* a range that wraps the address space */
	assert_int_not_equal(u4v_reg_mr(r->a.pd, (void *)(uintptr_t)-4096,
					 8192, 0, &mr), 0);
	munmap(m, psz);
	munmap(m + 2 * psz, psz);
}

static void test_length_zero_mr(void **state)
{
	struct rig *r = *state;
	static uint8_t buf[64];
	struct u4v_mr *mr = NULL;
	uint32_t lk;

	assert_int_equal(u4v_reg_mr(r->a.pd, buf + 8, 0, U4VT_ACCESS_ALL, &mr),
			 0);
	lk = u4v_mr_lkey(mr);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, (uintptr_t)buf + 8,
					    0, 0),
			 IBV_WC_SUCCESS);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, (uintptr_t)buf + 8,
					    1, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, (uintptr_t)buf + 7,
					    1, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_remote(r->a.pd, u4v_mr_rkey(mr),
					     (uintptr_t)buf + 8, 1,
					     IBV_ACCESS_REMOTE_WRITE, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_dereg_mr(mr), 0);
}

static void test_bounds_and_access(void **state)
{
	struct rig *r = *state;
	static uint8_t buf[4096];
	uint64_t base = (uintptr_t)buf + 100, len = 1000;
	struct u4v_mr *mr, *ro;
	struct u4v_pd *pd2;
	uint32_t lk, rk;

	mr = u4vt_reg(&r->a, buf + 100, len, U4VT_ACCESS_ALL);
	ro = u4vt_reg(&r->a, buf + 2000, 100, IBV_ACCESS_REMOTE_READ);
	lk = u4v_mr_lkey(mr);
	rk = u4v_mr_rkey(mr);
	/* local: exactly the MR, one byte off at either end */
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, base, len, 0), 0);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, base - 1, 1, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, base - 1, len, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, base, len + 1, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, base + len - 1, 1, 0),
			 0);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, base + len, 1, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, base + 1, len, 0),
			 IBV_WC_LOC_PROT_ERR);
	/* lengths that overflow when added */
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, base + 10,
					    UINT64_MAX - 5, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, UINT64_MAX - 5, 10, 0),
			 IBV_WC_LOC_PROT_ERR);
	/* remote: same bounds, plus access */
	assert_int_equal(u4v_mr_check_remote(r->a.pd, rk, base, len,
					     IBV_ACCESS_REMOTE_WRITE, NULL),
			 0);
	assert_int_equal(u4v_mr_check_remote(r->a.pd, rk, base - 1, 2,
					     IBV_ACCESS_REMOTE_WRITE, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_mr_check_remote(r->a.pd, rk, base + len - 1, 2,
					     IBV_ACCESS_REMOTE_READ, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	/* the lkey is not an rkey and vice versa */
	assert_int_equal(u4v_mr_check_remote(r->a.pd, lk, base, 8,
					     IBV_ACCESS_REMOTE_READ, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, rk, base, 8, 0),
			 IBV_WC_LOC_PROT_ERR);
	/* read-only MR: no write, no atomic, no local write */
	assert_int_equal(u4v_mr_check_remote(r->a.pd, u4v_mr_rkey(ro),
					     (uintptr_t)buf + 2000, 100,
					     IBV_ACCESS_REMOTE_READ, NULL),
			 0);
	assert_int_equal(u4v_mr_check_remote(r->a.pd, u4v_mr_rkey(ro),
					     (uintptr_t)buf + 2000, 8,
					     IBV_ACCESS_REMOTE_WRITE, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_mr_check_remote(r->a.pd, u4v_mr_rkey(ro),
					     (uintptr_t)buf + 2000, 8,
					     IBV_ACCESS_REMOTE_ATOMIC, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, u4v_mr_lkey(ro),
					    (uintptr_t)buf + 2000, 8,
					    IBV_ACCESS_LOCAL_WRITE),
			 IBV_WC_LOC_PROT_ERR);
	/* another PD of the same context */
	assert_int_equal(u4v_alloc_pd(r->a.ctx, &pd2), 0);
	assert_int_equal(u4v_mr_check_local(pd2, lk, base, 8, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_remote(pd2, rk, base, 8,
					     IBV_ACCESS_REMOTE_READ, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_dealloc_pd(pd2), 0);
	/* keys of one context mean nothing in another */
	assert_int_equal(u4v_mr_check_local(r->b.pd, lk, base, 8, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	assert_int_equal(u4v_dereg_mr(ro), 0);
	assert_int_equal(u4v_mr_check_local(r->a.pd, lk, base, 8, 0),
			 IBV_WC_LOC_PROT_ERR);
}

/* ---- the same rules, end to end ----------------------------------------- */

#define TB 8192

struct e2e {
	struct u4v_qp *qa, *qb;
	uint8_t *src, *dst;
	struct u4v_mr *ms;
};

static void e2e_up(struct rig *r, struct e2e *e, int qp_access)
{
	struct u4vt_qp_opts o;

	u4vt_qp_opts_default(&o);
	o.rnr_retry = 0;
	e->qa = u4vt_qp_create(&r->a, IBV_QPT_RC, &o);
	e->qb = u4vt_qp_create(&r->b, IBV_QPT_RC, &o);
	u4vt_qp_connect(e->qa, IBV_QPT_RC, u4v_qp_num(e->qb), &o);
	o.access = qp_access;
	u4vt_qp_connect(e->qb, IBV_QPT_RC, u4v_qp_num(e->qa), &o);
	e->src = calloc(1, TB);
	e->dst = calloc(1, TB);
	e->ms = u4vt_reg(&r->a, e->src, TB, IBV_ACCESS_LOCAL_WRITE);
}

static void e2e_down(struct e2e *e)
{
	assert_int_equal(u4v_destroy_qp(e->qa), 0);
	assert_int_equal(u4v_destroy_qp(e->qb), 0);
	assert_int_equal(u4v_dereg_mr(e->ms), 0);
	free(e->src);
	free(e->dst);
}

/* One WR from a; its completion status (and nothing for the target). */
static enum ibv_wc_status run_op(struct rig *r, struct e2e *e,
				 enum ibv_wr_opcode op, uint64_t raddr,
				 uint32_t len, uint32_t rkey)
{
	struct ibv_wc wc;
	int ret;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		ret = u4vt_post_atomic(e->qa, op, 77, (uintptr_t)e->src,
				       u4v_mr_lkey(e->ms), raddr, rkey, 1, 0);
	else
		ret = u4vt_post_send1(e->qa, op, 77, IBV_SEND_SIGNALED,
				      (uintptr_t)e->src, len,
				      u4v_mr_lkey(e->ms), raddr, rkey, 0);
	assert_int_equal(ret, 0);
	assert_int_equal(u4vt_poll(r->a.cq, &wc, 1, 5000), 1);
	assert_int_equal(wc.wr_id, 77);
	return wc.status;
}

static void test_remote_checks_on_the_wire(void **state)
{
	struct rig *r = *state;
	const int all = U4VT_ACCESS_ALL;
	static const struct {
		enum ibv_wr_opcode op;
		int mr_access, qp_access;
		int64_t off; /* from the MR start */
		uint32_t len;
		bool stale, other_pd;
		enum ibv_wc_status want;
	} cases[] = {
		/* bounds: exact fit, one byte before, one byte past */
		{ IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 0, 4096,
		  false, false, IBV_WC_SUCCESS },
		{ IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, -1, 10,
		  false, false, IBV_WC_REM_ACCESS_ERR },
		{ IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 1, 4096,
		  false, false, IBV_WC_REM_ACCESS_ERR },
		{ IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 4095, 1,
		  false, false, IBV_WC_SUCCESS },
		{ IBV_WR_RDMA_READ, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 1, 4096,
		  false, false, IBV_WC_REM_ACCESS_ERR },
		{ IBV_WR_RDMA_READ, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 0, 4096,
		  false, false, IBV_WC_SUCCESS },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, U4VT_ACCESS_ALL,
		  U4VT_ACCESS_ALL, 4096, 8, false, false,
		  IBV_WC_REM_ACCESS_ERR },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, U4VT_ACCESS_ALL,
		  U4VT_ACCESS_ALL, 4088, 8, false, false, IBV_WC_SUCCESS },
		/* MR access flags */
		{ IBV_WR_RDMA_WRITE, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_READ,
		  U4VT_ACCESS_ALL, 0, 8, false, false, IBV_WC_REM_ACCESS_ERR },
		{ IBV_WR_RDMA_READ, IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE,
		  U4VT_ACCESS_ALL, 0, 8, false, false, IBV_WC_REM_ACCESS_ERR },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ,
		  U4VT_ACCESS_ALL, 0, 8, false, false, IBV_WC_REM_ACCESS_ERR },
		/* QP access flags */
		{ IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0, 8, false,
		  false, IBV_WC_REM_ACCESS_ERR },
		{ IBV_WR_RDMA_READ, U4VT_ACCESS_ALL,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0, 8, false,
		  false, IBV_WC_REM_ACCESS_ERR },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, U4VT_ACCESS_ALL,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0, 8, false,
		  false, IBV_WC_REM_ACCESS_ERR },
		/* deregistered rkey; MR of another PD of the target */
		{ IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 0, 8,
		  true, false, IBV_WC_REM_ACCESS_ERR },
		{ IBV_WR_RDMA_READ, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 0, 8,
		  false, true, IBV_WC_REM_ACCESS_ERR },
	};
	size_t i;

	(void)all;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct e2e e;
		struct u4v_mr *md;
		struct u4v_pd *pd2 = NULL;
		enum ibv_wc_status st;
		uint32_t rkey;

		e2e_up(r, &e, cases[i].qp_access);
		if (cases[i].other_pd) {
			assert_int_equal(u4v_alloc_pd(r->b.ctx, &pd2), 0);
			assert_int_equal(u4v_reg_mr(pd2, e.dst + 1024, 4096,
						    cases[i].mr_access, &md),
					 0);
		} else {
			assert_int_equal(u4v_reg_mr(r->b.pd, e.dst + 1024,
						    4096, cases[i].mr_access,
						    &md),
					 0);
		}
		rkey = u4v_mr_rkey(md);
		if (cases[i].stale) {
			assert_int_equal(u4v_dereg_mr(md), 0);
			md = NULL;
		}
		st = run_op(r, &e, cases[i].op,
			    (uintptr_t)e.dst + 1024 + cases[i].off,
			    cases[i].len, rkey);
		if (st != cases[i].want)
			fail_msg("case %zu: status %d, want %d", i, st,
				 cases[i].want);
		if (md)
			assert_int_equal(u4v_dereg_mr(md), 0);
		if (pd2)
			assert_int_equal(u4v_dealloc_pd(pd2), 0);
		e2e_down(&e);
		/* flushes of the dead QPs, if any */
		{
			struct ibv_wc wc[8];

			u4vt_poll(r->a.cq, wc, 8, 10);
			u4vt_poll(r->b.cq, wc, 8, 10);
		}
	}
}

/* Local checks at post time: EINVAL, nothing queued. */
static void test_local_checks_at_post(void **state)
{
	struct rig *r = *state;
	static uint8_t buf[4096];
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb;
	struct u4v_mr *ro, *rw, *other;
	struct u4v_pd *pd2;
	struct ibv_wc wc;

	u4vt_qp_opts_default(&o);
	qa = u4vt_qp_create(&r->a, IBV_QPT_RC, &o);
	qb = u4vt_qp_create(&r->b, IBV_QPT_RC, &o);
	u4vt_qp_connect(qa, IBV_QPT_RC, u4v_qp_num(qb), &o);
	u4vt_qp_connect(qb, IBV_QPT_RC, u4v_qp_num(qa), &o);
	ro = u4vt_reg(&r->a, buf, 1024, 0);
	rw = u4vt_reg(&r->a, buf + 1024, 1024, IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(u4v_alloc_pd(r->a.ctx, &pd2), 0);
	assert_int_equal(u4v_reg_mr(pd2, buf + 2048, 1024, U4VT_ACCESS_ALL,
				    &other),
			 0);
	/* READ / atomic results land locally: need LOCAL_WRITE */
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_RDMA_READ, 1, 0,
					 (uintptr_t)buf, 8, u4v_mr_lkey(ro), 0,
					 0, 0),
			 EINVAL);
	assert_int_equal(u4vt_post_atomic(qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 1,
					  (uintptr_t)buf, u4v_mr_lkey(ro), 0,
					  0, 1, 0),
			 EINVAL);
	assert_int_equal(u4vt_post_recv1(qa, 1, (uintptr_t)buf, 8,
					 u4v_mr_lkey(ro)),
			 EINVAL);
	/* a SEND from a read-only MR is fine */
	{
		static uint8_t bbuf[64];
		struct u4v_mr *mb = u4vt_reg(&r->b, bbuf, 64,
					     IBV_ACCESS_LOCAL_WRITE);

		memset(buf, 0x3c, 64);
		assert_int_equal(u4vt_post_recv1(qb, 5, (uintptr_t)bbuf, 64,
						 u4v_mr_lkey(mb)),
				 0);
		assert_int_equal(u4vt_post_send1(qa, IBV_WR_SEND, 2,
						 IBV_SEND_SIGNALED,
						 (uintptr_t)buf, 64,
						 u4v_mr_lkey(ro), 0, 0, 0),
				 0);
		assert_int_equal(u4vt_poll(r->a.cq, &wc, 1, 5000), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(u4vt_poll(r->b.cq, &wc, 1, 5000), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_memory_equal(bbuf, buf, 64);
		assert_int_equal(u4v_dereg_mr(mb), 0);
	}
	/* one byte past the MR, one byte before */
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_SEND, 3, 0,
					 (uintptr_t)buf + 1024, 1025,
					 u4v_mr_lkey(rw), 0, 0, 0),
			 EINVAL);
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_SEND, 3, 0,
					 (uintptr_t)buf + 1023, 2,
					 u4v_mr_lkey(rw), 0, 0, 0),
			 EINVAL);
	assert_int_equal(u4vt_post_recv1(qa, 3, (uintptr_t)buf + 1024, 1025,
					 u4v_mr_lkey(rw)),
			 EINVAL);
	/* an MR of another PD */
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_SEND, 4, 0,
					 (uintptr_t)buf + 2048, 8,
					 u4v_mr_lkey(other), 0, 0, 0),
			 EINVAL);
	assert_int_equal(u4vt_post_recv1(qa, 4, (uintptr_t)buf + 2048, 8,
					 u4v_mr_lkey(other)),
			 EINVAL);
	/* a deregistered lkey */
	{
		uint32_t lk = u4v_mr_lkey(rw);

		assert_int_equal(u4v_dereg_mr(rw), 0);
		assert_int_equal(u4vt_post_send1(qa, IBV_WR_SEND, 5, 0,
						 (uintptr_t)buf + 1024, 8, lk,
						 0, 0, 0),
				 EINVAL);
		assert_int_equal(u4vt_post_recv1(qa, 5, (uintptr_t)buf + 1024,
						 8, lk),
				 EINVAL);
	}
	assert_int_equal(u4vt_poll(r->a.cq, &wc, 1, 50), 0);
	assert_int_equal(u4v_dealloc_pd(pd2), EBUSY);
	assert_int_equal(u4v_dereg_mr(other), 0);
	assert_int_equal(u4v_dealloc_pd(pd2), 0);
	assert_int_equal(u4v_dereg_mr(ro), 0);
	assert_int_equal(u4v_destroy_qp(qa), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_keys, rig_setup,
						rig_teardown),
		cmocka_unit_test_setup_teardown(test_registration_rules,
						rig_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_length_zero_mr, rig_setup,
						rig_teardown),
		cmocka_unit_test_setup_teardown(test_bounds_and_access,
						rig_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_remote_checks_on_the_wire,
						rig_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_local_checks_at_post,
						rig_setup, rig_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
