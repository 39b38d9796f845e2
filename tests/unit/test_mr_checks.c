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

/* An unconnected RC QP of e's context on pd. */
static struct u4v_qp *rig_qp(const struct u4vt_end *e, struct u4v_pd *pd)
{
	struct u4vt_end on = *e;
	struct u4vt_qp_opts o;

	u4vt_qp_opts_default(&o);
	on.pd = pd;
	return u4vt_qp_create(&on, IBV_QPT_RC, &o);
}

/* r->qa: a QP of a's PD (remote checks are a QP's), not connected. */
static int rig_setup(void **state)
{
	struct u4vt_pair *r = u4vt_pair_new(state, "mr", -1);

	r->qa = rig_qp(&r->a, r->a.pd);
	return 0;
}

static void test_keys(void **state)
{
	struct u4vt_pair *r = *state;
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
		assert_int_equal(u4v_mr_check_remote(r->qa, old_r,
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
	struct u4vt_pair *r = *state;
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

/* What a kernel device's pinning refuses: no access, or no write access
 * where the MR's access lets anyone write (ib_access_writable). */
static void test_reg_mr_protection(void **state)
{
	struct u4vt_pair *r = *state;
	long psz = sysconf(_SC_PAGESIZE);
	const int rw[] = {IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_MW_BIND,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC};
	struct u4v_mr *mr;
	char *m;

	m = mmap(NULL, 3 * psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m + psz, psz, PROT_NONE), 0);
	assert_int_equal(u4v_reg_mr(r->a.pd, m, 3 * psz, 0, &mr), EFAULT);
	assert_int_equal(u4v_reg_mr(r->a.pd, m + psz, 8,
				    IBV_ACCESS_REMOTE_READ, &mr), EFAULT);
	/* read-only: readers may register it, writers may not */
	assert_int_equal(mprotect(m + psz, psz, PROT_READ), 0);
	assert_int_equal(u4v_reg_mr(r->a.pd, m, 3 * psz,
				    IBV_ACCESS_REMOTE_READ, &mr), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	for (size_t i = 0; i < sizeof(rw) / sizeof(rw[0]); i++)
		assert_int_equal(u4v_reg_mr(r->a.pd, m + psz - 8, 16, rw[i],
					    &mr), EFAULT);
	/* writable again: the same registrations succeed */
	assert_int_equal(mprotect(m + psz, psz, PROT_READ | PROT_WRITE), 0);
	for (size_t i = 0; i < sizeof(rw) / sizeof(rw[0]); i++) {
		assert_int_equal(u4v_reg_mr(r->a.pd, m + psz - 8, 16, rw[i],
					    &mr), 0);
		assert_int_equal(u4v_dereg_mr(mr), 0);
	}
	munmap(m, 3 * psz);
}

static void test_length_zero_mr(void **state)
{
	struct u4vt_pair *r = *state;
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
	assert_int_equal(u4v_mr_check_remote(r->qa, u4v_mr_rkey(mr),
					     (uintptr_t)buf + 8, 1,
					     IBV_ACCESS_REMOTE_WRITE, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_dereg_mr(mr), 0);
}

/* lk of an MR of len bytes at base on pd: exactly there, not a byte off. */
static void local_bounds(struct u4v_pd *pd, uint32_t lk, uint64_t base,
			 uint64_t len)
{
	assert_int_equal(u4v_mr_check_local(pd, lk, base, len, 0), 0);
	assert_int_equal(u4v_mr_check_local(pd, lk, base - 1, 1, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(pd, lk, base - 1, len, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(pd, lk, base, len + 1, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(pd, lk, base + len - 1, 1, 0), 0);
	assert_int_equal(u4v_mr_check_local(pd, lk, base + len, 1, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(pd, lk, base + 1, len, 0),
			 IBV_WC_LOC_PROT_ERR);
	/* lengths that overflow when added */
	assert_int_equal(
	    u4v_mr_check_local(pd, lk, base + 10, UINT64_MAX - 5, 0),
	    IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_local(pd, lk, UINT64_MAX - 5, 10, 0),
			 IBV_WC_LOC_PROT_ERR);
}

static void test_bounds_and_access(void **state)
{
	struct u4vt_pair *r = *state;
	static uint8_t buf[4096];
	uint64_t base = (uintptr_t)buf + 100, len = 1000;
	struct u4v_mr *mr, *ro;
	struct u4v_pd *pd2;
	struct u4v_qp *qp2;
	uint32_t lk, rk;

	mr = u4vt_reg(&r->a, buf + 100, len, U4VT_ACCESS_ALL);
	ro = u4vt_reg(&r->a, buf + 2000, 100, IBV_ACCESS_REMOTE_READ);
	lk = u4v_mr_lkey(mr);
	rk = u4v_mr_rkey(mr);
	/* local: exactly the MR, one byte off at either end */
	local_bounds(r->a.pd, lk, base, len);
	/* remote: same bounds, plus access */
	assert_int_equal(u4v_mr_check_remote(r->qa, rk, base, len,
					     IBV_ACCESS_REMOTE_WRITE, NULL),
			 0);
	assert_int_equal(u4v_mr_check_remote(r->qa, rk, base - 1, 2,
					     IBV_ACCESS_REMOTE_WRITE, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_mr_check_remote(r->qa, rk, base + len - 1, 2,
					     IBV_ACCESS_REMOTE_READ, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	/* the lkey is not an rkey and vice versa */
	assert_int_equal(u4v_mr_check_remote(r->qa, lk, base, 8,
					     IBV_ACCESS_REMOTE_READ, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, rk, base, 8, 0),
			 IBV_WC_LOC_PROT_ERR);
	/* read-only MR: no write, no atomic, no local write */
	assert_int_equal(u4v_mr_check_remote(r->qa, u4v_mr_rkey(ro),
					     (uintptr_t)buf + 2000, 100,
					     IBV_ACCESS_REMOTE_READ, NULL),
			 0);
	assert_int_equal(u4v_mr_check_remote(r->qa, u4v_mr_rkey(ro),
					     (uintptr_t)buf + 2000, 8,
					     IBV_ACCESS_REMOTE_WRITE, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_mr_check_remote(r->qa, u4v_mr_rkey(ro),
					     (uintptr_t)buf + 2000, 8,
					     IBV_ACCESS_REMOTE_ATOMIC, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_mr_check_local(r->a.pd, u4v_mr_lkey(ro),
					    (uintptr_t)buf + 2000, 8,
					    IBV_ACCESS_LOCAL_WRITE),
			 IBV_WC_LOC_PROT_ERR);
	/* another PD of the same context */
	assert_int_equal(u4v_alloc_pd(r->a.ctx, &pd2), 0);
	qp2 = rig_qp(&r->a, pd2);
	assert_int_equal(u4v_mr_check_local(pd2, lk, base, 8, 0),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_mr_check_remote(qp2, rk, base, 8,
					     IBV_ACCESS_REMOTE_READ, NULL),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_destroy_qp(qp2), 0);
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

static void e2e_up(struct u4vt_pair *r, struct e2e *e, int qp_access)
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
static enum ibv_wc_status run_op(struct u4vt_pair *r, struct e2e *e,
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

/* One remote access checked at the target, and the status it must get. */
struct wire_case {
	enum ibv_wr_opcode op;
	int mr_access, qp_access;
	int64_t off; /* from the MR start */
	uint32_t len;
	bool stale, other_pd;
	enum ibv_wc_status want;
};

/* A fresh QP pair and target MR for the case; its status checked. */
static void wire_case_run(struct u4vt_pair *r, const struct wire_case *c,
			  size_t i)
{
	struct e2e e;
	struct u4v_mr *md;
	struct u4v_pd *pd2 = NULL;
	enum ibv_wc_status st;
	struct ibv_wc wc[8];
	uint32_t rkey;

	e2e_up(r, &e, c->qp_access);
	if (c->other_pd)
		assert_int_equal(u4v_alloc_pd(r->b.ctx, &pd2), 0);
	assert_int_equal(u4v_reg_mr(pd2 ? pd2 : r->b.pd, e.dst + 1024, 4096,
				    c->mr_access, &md),
			 0);
	rkey = u4v_mr_rkey(md);
	if (c->stale) {
		assert_int_equal(u4v_dereg_mr(md), 0);
		md = NULL;
	}
	st = run_op(r, &e, c->op, (uintptr_t)e.dst + 1024 + c->off, c->len,
		    rkey);
	if (st != c->want)
		fail_msg("case %zu: status %d, want %d", i, st, c->want);
	if (md)
		assert_int_equal(u4v_dereg_mr(md), 0);
	if (pd2)
		assert_int_equal(u4v_dealloc_pd(pd2), 0);
	e2e_down(&e);
	/* flushes of the dead QPs, if any */
	u4vt_poll(r->a.cq, wc, 8, 10);
	u4vt_poll(r->b.cq, wc, 8, 10);
}

static void test_remote_checks_on_the_wire(void **state)
{
	static const struct wire_case cases[] = {
	    /* bounds: exact fit, one byte before, one byte past */
	    {IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 0, 4096,
	     false, false, IBV_WC_SUCCESS},
	    {IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, -1, 10, false,
	     false, IBV_WC_REM_ACCESS_ERR},
	    {IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 1, 4096,
	     false, false, IBV_WC_REM_ACCESS_ERR},
	    {IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 4095, 1,
	     false, false, IBV_WC_SUCCESS},
	    {IBV_WR_RDMA_READ, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 1, 4096, false,
	     false, IBV_WC_REM_ACCESS_ERR},
	    {IBV_WR_RDMA_READ, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 0, 4096, false,
	     false, IBV_WC_SUCCESS},
	    {IBV_WR_ATOMIC_FETCH_AND_ADD, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL,
	     4096, 8, false, false, IBV_WC_REM_ACCESS_ERR},
	    {IBV_WR_ATOMIC_FETCH_AND_ADD, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL,
	     4088, 8, false, false, IBV_WC_SUCCESS},
	    /* MR access flags */
	    {IBV_WR_RDMA_WRITE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
	     U4VT_ACCESS_ALL, 0, 8, false, false, IBV_WC_REM_ACCESS_ERR},
	    {IBV_WR_RDMA_READ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	     U4VT_ACCESS_ALL, 0, 8, false, false, IBV_WC_REM_ACCESS_ERR},
	    {IBV_WR_ATOMIC_FETCH_AND_ADD,
	     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ,
	     U4VT_ACCESS_ALL, 0, 8, false, false, IBV_WC_REM_ACCESS_ERR},
	    /* QP access flags */
	    {IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL,
	     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0, 8, false,
	     false, IBV_WC_REM_ACCESS_ERR},
	    {IBV_WR_RDMA_READ, U4VT_ACCESS_ALL,
	     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0, 8, false,
	     false, IBV_WC_REM_ACCESS_ERR},
	    {IBV_WR_ATOMIC_FETCH_AND_ADD, U4VT_ACCESS_ALL,
	     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0, 8, false,
	     false, IBV_WC_REM_ACCESS_ERR},
	    /* deregistered rkey; MR of another PD of the target */
	    {IBV_WR_RDMA_WRITE, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 0, 8, true,
	     false, IBV_WC_REM_ACCESS_ERR},
	    {IBV_WR_RDMA_READ, U4VT_ACCESS_ALL, U4VT_ACCESS_ALL, 0, 8, false,
	     true, IBV_WC_REM_ACCESS_ERR},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		wire_case_run(*state, &cases[i], i);
}

/* What registration refuses, reregistration refuses, leaving *md as it is. */
static void rereg_refused(struct u4v_mr **md)
{
	struct u4v_mr *before = *md;

	/* nothing, unknown flags, PD missing, bad access */
	assert_int_equal(u4v_rereg_mr(md, 0, NULL, NULL, 0, 0), EINVAL);
	assert_int_equal(u4v_rereg_mr(md, 8, NULL, NULL, 0, 0), EINVAL);
	assert_int_equal(
	    u4v_rereg_mr(md, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0), EINVAL);
	assert_int_equal(u4v_rereg_mr(md, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      NULL, 0, IBV_ACCESS_REMOTE_WRITE),
			 EINVAL);
	assert_ptr_equal(*md, before);
}

/* A type 2 window bound by qp over [addr, addr + 64) of md; it succeeds. */
static void bind_window(struct u4vt_pair *r, struct u4v_qp *qp,
			struct u4v_mw *mw, struct u4v_mr *md, void *addr)
{
	struct ibv_mr ibmr = {.lkey = u4v_mr_lkey(md)};
	struct ibv_send_wr wr = {.opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;

	wr.bind_mw.mw = u4v_mw_ibv(mw);
	wr.bind_mw.rkey = 1;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
	    &ibmr, (uintptr_t)addr, 64, IBV_ACCESS_REMOTE_READ};
	assert_int_equal(u4v_post_send(qp, &wr, &bad), 0);
	assert_int_equal(u4vt_poll(r->b.cq, &wc, 1, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

/* A fresh QP pair for e (an access error left the old one in ERR). */
static void e2e_renew(struct u4vt_pair *r, struct e2e *e)
{
	e2e_down(e);
	e2e_up(r, e, U4VT_ACCESS_ALL);
}

/*
 * ibv_rereg_mr: the keys stay and mean the new access, range or PD at once;
 * what registration refuses, reregistration refuses and leaves the MR as
 * it was; windows bound to it keep it.
 */
static void test_rereg(void **state)
{
	struct u4vt_pair *r = *state;
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	uint8_t *b2 = calloc(1, TB);
	struct u4v_mr *md;
	struct u4v_pd *pd2;
	struct u4v_mw *mw;
	struct e2e e;
	uint32_t rkey;

	e2e_up(r, &e, U4VT_ACCESS_ALL);
	md = u4vt_reg(&r->b, e.dst, 4096, rw);
	rkey = u4v_mr_rkey(md);
	u4vt_fill(e.src, 64, 1);
	assert_int_equal(run_op(r, &e, IBV_WR_RDMA_WRITE, (uintptr_t)e.dst,
				64, rkey),
			 IBV_WC_SUCCESS);
	assert_memory_equal(e.dst, e.src, 64);
	rereg_refused(&md);
	/* access: the same rkey no longer writes */
	assert_int_equal(u4v_rereg_mr(&md, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      NULL, 0, IBV_ACCESS_LOCAL_WRITE),
			 0);
	assert_int_equal(u4v_mr_rkey(md), rkey);
	assert_int_equal(run_op(r, &e, IBV_WR_RDMA_WRITE, (uintptr_t)e.dst, 8,
				rkey),
			 IBV_WC_REM_ACCESS_ERR);
	e2e_renew(r, &e);
	/* translation and access: the same rkey writes the new buffer only */
	assert_int_equal(u4v_rereg_mr(&md,
				      IBV_REREG_MR_CHANGE_TRANSLATION |
					      IBV_REREG_MR_CHANGE_ACCESS,
				      NULL, b2, 4096, rw),
			 0);
	u4vt_fill(e.src, 64, 2);
	assert_int_equal(run_op(r, &e, IBV_WR_RDMA_WRITE, (uintptr_t)b2, 64,
				rkey),
			 IBV_WC_SUCCESS);
	assert_memory_equal(b2, e.src, 64);
	assert_int_equal(run_op(r, &e, IBV_WR_RDMA_WRITE, (uintptr_t)e.dst, 8,
				rkey),
			 IBV_WC_REM_ACCESS_ERR);
	e2e_renew(r, &e);
	/* PD: the QP's PD no longer has it; the PD in use cannot go */
	assert_int_equal(u4v_alloc_pd(r->b.ctx, &pd2), 0);
	assert_int_equal(u4v_rereg_mr(&md, IBV_REREG_MR_CHANGE_PD, pd2, NULL,
				      0, 0),
			 0);
	assert_int_equal(run_op(r, &e, IBV_WR_RDMA_WRITE, (uintptr_t)b2, 8,
				rkey),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_dealloc_pd(pd2), EBUSY);
	assert_int_equal(u4v_rereg_mr(&md, IBV_REREG_MR_CHANGE_PD, r->b.pd,
				      NULL, 0, 0),
			 0);
	assert_int_equal(u4v_dealloc_pd(pd2), 0);
	e2e_renew(r, &e);
	assert_int_equal(run_op(r, &e, IBV_WR_RDMA_WRITE, (uintptr_t)b2, 8,
				rkey),
			 IBV_WC_SUCCESS);
	/* a window bound to it holds it */
	assert_int_equal(u4v_rereg_mr(&md, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      NULL, 0, rw | IBV_ACCESS_MW_BIND),
			 0);
	assert_int_equal(u4v_alloc_mw(r->b.pd, IBV_MW_TYPE_2, &mw), 0);
	bind_window(r, e.qb, mw, md, b2);
	assert_int_equal(u4v_rereg_mr(&md, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      NULL, 0, rw),
			 EBUSY);
	assert_int_equal(u4v_dealloc_mw(mw), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	e2e_down(&e);
	free(b2);
}

/* max_mr and max_mw are what a context can hold, not one less. */
static void test_key_limits(void **state)
{
	struct u4vt_pair *r = *state;
	static uint8_t buf[64];
	struct u4v_mr **mrs = calloc(U4V_MAX_MR, sizeof(*mrs));
	struct u4v_mw **mws = calloc(U4V_MAX_MW, sizeof(*mws));
	struct u4v_mr *extra_mr;
	struct u4v_mw *extra_mw;
	uint32_t i;

	assert_non_null(mrs);
	assert_non_null(mws);
	for (i = 0; i < U4V_MAX_MR; i++)
		assert_int_equal(u4v_reg_mr(r->b.pd, buf, sizeof(buf), 0,
					    &mrs[i]),
				 0);
	assert_int_equal(u4v_reg_mr(r->b.pd, buf, sizeof(buf), 0, &extra_mr),
			 ENOMEM);
	for (i = 0; i < U4V_MAX_MW; i++)
		assert_int_equal(u4v_alloc_mw(r->b.pd, IBV_MW_TYPE_2, &mws[i]),
				 0);
	assert_int_equal(u4v_alloc_mw(r->b.pd, IBV_MW_TYPE_1, &extra_mw),
			 ENOMEM);
	/* every key names its own object */
	assert_ptr_equal(u4v_mr_lookup(r->b.ctx, u4v_mr_lkey(mrs[0])), mrs[0]);
	assert_ptr_equal(u4v_mr_lookup(r->b.ctx,
				       u4v_mr_rkey(mrs[U4V_MAX_MR - 1])),
			 mrs[U4V_MAX_MR - 1]);
	/* a freed slot is taken again */
	assert_int_equal(u4v_dereg_mr(mrs[7]), 0);
	assert_int_equal(u4v_reg_mr(r->b.pd, buf, sizeof(buf), 0, &mrs[7]),
			 0);
	for (i = 0; i < U4V_MAX_MR; i++)
		assert_int_equal(u4v_dereg_mr(mrs[i]), 0);
	for (i = 0; i < U4V_MAX_MW; i++)
		assert_int_equal(u4v_dealloc_mw(mws[i]), 0);
	free(mrs);
	free(mws);
}

/*
 * The same QPs, connected again from RESET: with new PSNs, so that a frame
 * of the last connection still on its way is not taken for one of this.
 */
static void reconnect(struct u4v_qp *qa, struct u4v_qp *qb,
		      const struct u4vt_qp_opts *o)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct u4vt_qp_opts again = *o;
	static uint32_t gen;

	again.psn = (0x10000 * ++gen) & 0xffffff;
	assert_int_equal(u4v_modify_qp(qa, &reset, IBV_QP_STATE), 0);
	assert_int_equal(u4v_modify_qp(qb, &reset, IBV_QP_STATE), 0);
	u4vt_qp_connect(qa, IBV_QPT_RC, u4v_qp_num(qb), &again);
	u4vt_qp_connect(qb, IBV_QPT_RC, u4v_qp_num(qa), &again);
}

/*
 * A receive into [addr, addr + len) under lkey on qa, a SEND of len bytes
 * into it from qb: the receive completes with a local protection error and
 * the sender with a remote operation error, as rxe does. The QPs are
 * connected afresh after.
 */
static void recv_refused(struct u4vt_pair *r, struct u4v_qp *qa, struct u4v_qp *qb,
			 const struct u4vt_qp_opts *o, uint64_t addr,
			 uint32_t len, uint32_t lkey)
{
	static uint8_t src[4096];
	struct u4v_mr *ms = u4vt_reg(&r->b, src, sizeof(src), 0);
	struct ibv_wc wc;

	/* accepted when posted: the MR is checked when it is written */
	assert_int_equal(u4vt_post_recv1(qa, 6, addr, len, lkey), 0);
	assert_int_equal(u4vt_post_send1(qb, IBV_WR_SEND, 7, IBV_SEND_SIGNALED,
					 (uintptr_t)src, len, u4v_mr_lkey(ms),
					 0, 0, 0),
			 0);
	assert_int_equal(u4vt_poll(r->b.cq, &wc, 1, 5000), 1);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, IBV_WC_REM_OP_ERR);
	assert_int_equal(u4vt_poll(r->a.cq, &wc, 1, 5000), 1);
	assert_int_equal(wc.wr_id, 6);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	reconnect(qa, qb, o);
}

/*
 * [addr, addr + len) under lkey: a SEND from it is refused when posted
 * (EINVAL), a receive into it when a message is written (recv_refused).
 */
static void send_and_recv_refused(struct u4vt_pair *r, struct u4v_qp *qa,
				  struct u4v_qp *qb,
				  const struct u4vt_qp_opts *o, uint64_t wr_id,
				  uint64_t addr, uint32_t len, uint32_t lkey)
{
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_SEND, wr_id, 0, addr, len,
					 lkey, 0, 0, 0),
			 EINVAL);
	recv_refused(r, qa, qb, o, addr, len, lkey);
}

/*
 * Local checks: a send's buffers at post time (EINVAL, nothing queued); a
 * receive's when a message is written into them.
 */
static void test_local_checks(void **state)
{
	struct u4vt_pair *r = *state;
	static uint8_t buf[4096];
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb;
	struct u4v_mr *ro, *rw, *other;
	struct u4v_pd *pd2;
	struct ibv_wc wc;
	uint32_t lk;

	u4vt_qp_opts_default(&o);
	u4vt_qp_pair(&r->a, &r->b, IBV_QPT_RC, &o, &qa, &qb);
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
	recv_refused(r, qa, qb, &o, (uintptr_t)buf, 8, u4v_mr_lkey(ro));
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
					 (uintptr_t)buf + 1023, 2,
					 u4v_mr_lkey(rw), 0, 0, 0),
			 EINVAL);
	send_and_recv_refused(r, qa, qb, &o, 3, (uintptr_t)buf + 1024, 1025,
			      u4v_mr_lkey(rw));
	/* an MR of another PD */
	send_and_recv_refused(r, qa, qb, &o, 4, (uintptr_t)buf + 2048, 8,
			      u4v_mr_lkey(other));
	/* a deregistered lkey */
	lk = u4v_mr_lkey(rw);
	assert_int_equal(u4v_dereg_mr(rw), 0);
	send_and_recv_refused(r, qa, qb, &o, 5, (uintptr_t)buf + 1024, 8, lk);
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
#define T(f) cmocka_unit_test_setup_teardown(f, rig_setup, u4vt_pair_teardown)
	const struct CMUnitTest tests[] = {
		T(test_keys),
		T(test_registration_rules),
		T(test_reg_mr_protection),
		T(test_length_zero_mr),
		T(test_bounds_and_access),
		T(test_remote_checks_on_the_wire),
		T(test_rereg),
		T(test_key_limits),
		T(test_local_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
