// SPDX-License-Identifier: MIT
/*
 * On-demand paging over a software cable: ODP MRs over memory that is not
 * there yet, is gone or is read-only, and the implicit MR over the whole
 * address space. Every access to such memory ends in an access error
 * completion, never a signal; payloads that do land are checked.
 *
 * An ODP MR follows the process's current mapping, as Linux's does: an
 * address unmapped and mapped again is reached in its new mapping. So a
 * page these tests take away stays reserved (take_away()): after a plain
 * munmap any thread of the process may map the hole again before the
 * remote access comes (under ASan the progress thread's first TLS block
 * did, issue 12), and the access then rightly lands there. Memory that is
 * not mapped at all is the null page (an explicit MR there, and the
 * implicit MR's) and the top of the address space.
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

#include "testlib.h"

#define TMO 5000
#define ODP IBV_ACCESS_ON_DEMAND
#define RW_ODP (U4VT_ACCESS_ALL | ODP)

struct rig {
	struct u4vt_pair p; /* RC */
	size_t psz;
	uint8_t *la; /* a's plain buffer */
	struct u4v_mr *ma;
};

static int rig_setup(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));
	struct u4vt_qp_opts o;

	assert_non_null(r);
	r->psz = (size_t)sysconf(_SC_PAGESIZE);
	u4vt_qp_opts_default(&o);
	o.access = U4VT_ACCESS_ALL;
	u4vt_pair_up(&r->p, "odp", IBV_QPT_RC, NULL, &o, 0);
	r->la = u4vt_map(16 * r->psz);
	r->ma = u4vt_reg(&r->p.a, r->la, 16 * r->psz, U4VT_ACCESS_ALL);
	*state = r;
	return 0;
}

static int rig_teardown(void **state)
{
	struct rig *r = *state;

	assert_int_equal(u4v_dereg_mr(r->ma), 0);
	u4vt_unmap(r->la, 16 * r->psz);
	u4vt_pair_down(&r->p);
	free(r);
	return 0;
}

/* One operation from a to b's (va, rkey); a's completion status. */
static enum ibv_wc_status op(struct rig *r, enum ibv_wr_opcode opc,
			     uint64_t va, uint32_t len, uint32_t rkey)
{
	struct ibv_wc wc;
	int ret;

	if (opc == IBV_WR_ATOMIC_FETCH_AND_ADD)
		ret = u4vt_post_atomic(r->p.qa, opc, 9, (uintptr_t)r->la,
				       u4v_mr_lkey(r->ma), va, rkey, 5, 0);
	else
		ret = u4vt_post_send1(r->p.qa, opc, 9, IBV_SEND_SIGNALED,
				      (uintptr_t)r->la, len,
				      u4v_mr_lkey(r->ma), va, rkey, 0);
	assert_int_equal(ret, 0);
	assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.wr_id, 9);
	if (wc.status)
		u4vt_pair_reconnect(&r->p);
	return wc.status;
}

/*
 * Take [p, p + len) away from the application: a PROT_NONE reservation in
 * its place, which no other mapping can take and which fails every access
 * as a missing page does (Linux's ODP: EFAULT from hmm_range_fault).
 */
static void take_away(void *p, size_t len)
{
	assert_ptr_equal(mmap(p, len, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
				      MAP_NORESERVE,
			      -1, 0),
			 p);
}

static bool odp_offered(struct rig *r)
{
	struct ibv_device_attr_ex a;

	assert_int_equal(u4v_query_device(r->p.b.ctx, &a, sizeof(a)), 0);
	return a.odp_caps.general_caps & IBV_ODP_SUPPORT;
}

/* What query_device says is what the engine does (or skip: no copies). */
static void test_caps(void **state)
{
	struct rig *r = *state;
	struct ibv_device_attr_ex a;
	struct u4v_mr *mr;

	assert_int_equal(u4v_query_device(r->p.b.ctx, &a, sizeof(a)), 0);
	if (!(a.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		/* a seccomp policy forbids process_vm_*v: no ODP offered */
		assert_int_equal(u4v_reg_mr(r->p.b.pd, r->la, 64, ODP, &mr),
				 EOPNOTSUPP);
		skip();
	}
	assert_true(a.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT);
	assert_true(a.odp_caps.per_transport_caps.rc_odp_caps &
		    IBV_ODP_SUPPORT_WRITE);
	assert_true(a.odp_caps.per_transport_caps.ud_odp_caps &
		    IBV_ODP_SUPPORT_SEND);
	/* huge pages are a promise for explicit ODP MRs only */
	assert_int_equal(u4v_reg_mr(r->p.b.pd, r->la, 64, IBV_ACCESS_HUGETLB,
				    &mr),
			 EINVAL);
	assert_int_equal(u4v_reg_mr(r->p.b.pd, NULL, SIZE_MAX,
				    ODP | IBV_ACCESS_HUGETLB, &mr),
			 EINVAL);
}

/*
 * An explicit ODP MR over pages not there yet, then gone, then read-only:
 * remote write, read and atomic land where the memory is, and end in a
 * remote access error where it is not.
 */
static void test_remote_access(void **state)
{
	struct rig *r = *state;
	size_t psz = r->psz, len = 4 * psz;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct u4v_mr *mr;
	uint64_t cell = 0;
	uint32_t rk;

	if (!odp_offered(r))
		skip();
	assert_true(m != MAP_FAILED);
	/* page 3 is not there when registering: fine for ODP */
	take_away(m + 3 * psz, psz);
	assert_int_equal(u4v_reg_mr(r->p.b.pd, m, len, RW_ODP, &mr), 0);
	rk = u4v_mr_rkey(mr);
	/* never touched before: the write faults the pages in */
	u4vt_fill(r->la, 2 * psz, 1);
	assert_int_equal(op(r, IBV_WR_RDMA_WRITE, (uintptr_t)m, 2 * psz, rk),
			 IBV_WC_SUCCESS);
	assert_memory_equal(m, r->la, 2 * psz);
	memset(r->la, 0, 2 * psz);
	assert_int_equal(op(r, IBV_WR_RDMA_READ, (uintptr_t)m + 100,
			    2 * psz - 100, rk),
			 IBV_WC_SUCCESS);
	assert_memory_equal(r->la, m + 100, 2 * psz - 100);
	assert_int_equal(op(r, IBV_WR_ATOMIC_FETCH_AND_ADD,
			    (uintptr_t)m + 2 * psz, 8, rk),
			 IBV_WC_SUCCESS);
	memcpy(&cell, m + 2 * psz, 8);
	assert_true(cell == 5);
	/* the page not there: write, read, atomic, and across its edge */
	assert_int_equal(op(r, IBV_WR_RDMA_WRITE, (uintptr_t)m + 3 * psz, 64,
			    rk),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(op(r, IBV_WR_RDMA_READ, (uintptr_t)m + 3 * psz, 64,
			    rk),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(op(r, IBV_WR_RDMA_WRITE, (uintptr_t)m + 3 * psz - 32,
			    64, rk),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(op(r, IBV_WR_ATOMIC_FETCH_AND_ADD,
			    (uintptr_t)m + 3 * psz, 8, rk),
			 IBV_WC_REM_ACCESS_ERR);
	/* a page that goes after registration, and one made read-only */
	take_away(m, psz);
	assert_int_equal(op(r, IBV_WR_RDMA_READ, (uintptr_t)m, 64, rk),
			 IBV_WC_REM_ACCESS_ERR);
	/* mapped again: the MR reaches the new page, its contents */
	assert_ptr_equal(mmap(m, psz, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
			 m);
	u4vt_fill(m, psz, 4);
	memset(r->la, 0, psz);
	assert_int_equal(op(r, IBV_WR_RDMA_READ, (uintptr_t)m, (uint32_t)psz,
			    rk),
			 IBV_WC_SUCCESS);
	assert_memory_equal(r->la, m, psz);
	u4vt_fill(r->la, 64, 5);
	assert_int_equal(op(r, IBV_WR_RDMA_WRITE, (uintptr_t)m + 8, 64, rk),
			 IBV_WC_SUCCESS);
	assert_memory_equal(m + 8, r->la, 64);
	assert_int_equal(mprotect(m + psz, psz, PROT_READ), 0);
	memset(r->la, 0x77, 64);
	assert_int_equal(op(r, IBV_WR_RDMA_WRITE, (uintptr_t)m + psz, 64, rk),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(op(r, IBV_WR_ATOMIC_FETCH_AND_ADD,
			    (uintptr_t)m + psz, 8, rk),
			 IBV_WC_REM_ACCESS_ERR);
	/* read-only memory is still read, and was not written */
	assert_int_equal(op(r, IBV_WR_RDMA_READ, (uintptr_t)m + psz, 64, rk),
			 IBV_WC_SUCCESS);
	assert_int_not_equal(r->la[0], 0x77);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	munmap(m, len);
}

/*
 * Memory not mapped at all, where no thread can map anything meanwhile: an
 * explicit ODP MR inside the null page (from address 1), which mmap never
 * hands out (its lowest is one page up, and vm.mmap_min_addr).
 */
static void test_never_mapped(void **state)
{
	struct rig *r = *state;
	uint32_t len = (uint32_t)r->psz - 1, rk;
	struct u4v_mr *mr;
	struct ibv_sge s;

	if (!odp_offered(r))
		skip();
	assert_int_equal(u4v_reg_mr(r->p.b.pd, (void *)1, len, RW_ODP, &mr),
			 0);
	rk = u4v_mr_rkey(mr);
	assert_int_equal(op(r, IBV_WR_RDMA_WRITE, 1, 64, rk),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(op(r, IBV_WR_RDMA_READ, 1 + len - 64, 64, rk),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(op(r, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 8, rk),
			 IBV_WC_REM_ACCESS_ERR);
	s = (struct ibv_sge){ 1, len, u4v_mr_lkey(mr) };
	assert_int_equal(u4v_advise_mr(r->p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				       IBV_ADVISE_MR_FLAG_FLUSH, &s, 1),
			 EFAULT);
	assert_int_equal(u4v_dereg_mr(mr), 0);
}

/* Local buffers in ODP MRs: a send from, a receive into, a READ into. */
static void test_local_access(void **state)
{
	struct rig *r = *state;
	size_t psz = r->psz;
	uint8_t *m = u4vt_map(2 * psz), *d = u4vt_map(2 * psz);
	struct u4v_mr *ms, *md;
	struct ibv_wc wc;

	if (!odp_offered(r))
		skip();
	assert_int_equal(u4v_reg_mr(r->p.a.pd, m, 2 * psz, RW_ODP, &ms), 0);
	assert_int_equal(u4v_reg_mr(r->p.b.pd, d, 2 * psz, RW_ODP, &md), 0);
	/* a send from and a receive into ODP memory */
	u4vt_fill(m, psz, 3);
	assert_int_equal(u4vt_post_recv1(r->p.qb, 1, (uintptr_t)d, psz,
					 u4v_mr_lkey(md)),
			 0);
	assert_int_equal(u4vt_post_send1(r->p.qa, IBV_WR_SEND, 2,
					 IBV_SEND_SIGNALED, (uintptr_t)m, psz,
					 u4v_mr_lkey(ms), 0, 0, 0),
			 0);
	assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(u4vt_poll(r->p.b.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(d, m, psz);
	/* a receive buffer gone: the receive and the sender fail */
	take_away(d + psz, psz);
	assert_int_equal(u4vt_post_recv1(r->p.qb, 3, (uintptr_t)d + psz, psz,
					 u4v_mr_lkey(md)),
			 0);
	assert_int_equal(u4vt_post_send1(r->p.qa, IBV_WR_SEND, 4,
					 IBV_SEND_SIGNALED, (uintptr_t)m, 64,
					 u4v_mr_lkey(ms), 0, 0, 0),
			 0);
	assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.status, IBV_WC_REM_OP_ERR);
	assert_int_equal(u4vt_poll(r->p.b.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	u4vt_pair_reconnect(&r->p);
	/* a send from a page gone: the send fails locally */
	take_away(m + psz, psz);
	assert_int_equal(u4vt_post_send1(r->p.qa, IBV_WR_SEND, 5,
					 IBV_SEND_SIGNALED,
					 (uintptr_t)m + psz - 8, 64,
					 u4v_mr_lkey(ms), 0, 0, 0),
			 0);
	assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	u4vt_pair_reconnect(&r->p);
	/* a READ into a read-only page: the response cannot land */
	assert_int_equal(mprotect(m, psz, PROT_READ), 0);
	assert_int_equal(u4vt_post_send1(r->p.qa, IBV_WR_RDMA_READ, 6,
					 IBV_SEND_SIGNALED, (uintptr_t)m, 64,
					 u4v_mr_lkey(ms), (uintptr_t)d,
					 u4v_mr_rkey(md), 0),
			 0);
	assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	u4vt_pair_reconnect(&r->p);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	u4vt_unmap(m, 2 * psz);
	u4vt_unmap(d, 2 * psz);
}

/* The implicit MR: one key for every address of the process. */
static void test_implicit(void **state)
{
	struct rig *r = *state;
	uint8_t *x = u4vt_map(r->psz), *y = malloc(3000);
	struct u4v_mr *mr;
	uint32_t rk;

	if (!odp_offered(r))
		skip();
	assert_non_null(y);
	assert_int_equal(u4v_reg_mr(r->p.b.pd, NULL, SIZE_MAX, RW_ODP, &mr), 0);
	rk = u4v_mr_rkey(mr);
	u4vt_fill(r->la, 3000, 8);
	assert_int_equal(op(r, IBV_WR_RDMA_WRITE, (uintptr_t)y, 3000, rk),
			 IBV_WC_SUCCESS);
	assert_memory_equal(y, r->la, 3000);
	assert_int_equal(op(r, IBV_WR_RDMA_WRITE, (uintptr_t)x, 100, rk),
			 IBV_WC_SUCCESS);
	assert_memory_equal(x, r->la, 100);
	/* the null page and the top of the address space are not there */
	assert_int_equal(op(r, IBV_WR_RDMA_WRITE, 0, 8, rk),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(op(r, IBV_WR_RDMA_READ, UINT64_MAX - 4095, 64, rk),
			 IBV_WC_REM_ACCESS_ERR);
	/* ... nor past it */
	assert_int_equal(op(r, IBV_WR_RDMA_READ, UINT64_MAX - 31, 64, rk),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	free(y);
	u4vt_unmap(x, r->psz);
}

static void test_advise(void **state)
{
	struct rig *r = *state;
	size_t psz = r->psz;
	uint8_t *m = u4vt_map(4 * psz);
	struct u4v_mr *mr, *ro;
	struct ibv_sge s;

	if (!odp_offered(r))
		skip();
	assert_int_equal(u4v_reg_mr(r->p.b.pd, m, 4 * psz, RW_ODP, &mr), 0);
	assert_int_equal(u4v_reg_mr(r->p.b.pd, m, psz, ODP, &ro), 0);
	s = (struct ibv_sge){ (uintptr_t)m, (uint32_t)(2 * psz),
			      u4v_mr_lkey(mr) };
	assert_int_equal(u4v_advise_mr(r->p.b.pd,
				       IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				       IBV_ADVISE_MR_FLAG_FLUSH, &s, 1),
			 0);
	assert_int_equal(u4v_advise_mr(r->p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				       0, &s, 1),
			 0);
	assert_int_equal(u4v_advise_mr(r->p.b.pd,
				       IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				       IBV_ADVISE_MR_FLAG_FLUSH, &s, 1),
			 0);
	/* refused: unknown advice or flag, nothing, outside the MR, a plain
	 * MR, another PD, write advice on an MR without local write */
	assert_int_equal(u4v_advise_mr(r->p.b.pd, 3, 0, &s, 1), EINVAL);
	assert_int_equal(u4v_advise_mr(r->p.b.pd, 0, 2, &s, 1), EINVAL);
	assert_int_equal(u4v_advise_mr(r->p.b.pd, 0, 0, &s, 0), EINVAL);
	s.length = (uint32_t)(4 * psz + 1);
	assert_int_equal(u4v_advise_mr(r->p.b.pd, 0, 0, &s, 1), EINVAL);
	s = (struct ibv_sge){ (uintptr_t)r->la, 64, u4v_mr_lkey(r->ma) };
	assert_int_equal(u4v_advise_mr(r->p.a.pd, 0, 0, &s, 1), EINVAL);
	s = (struct ibv_sge){ (uintptr_t)m, 64, u4v_mr_lkey(mr) };
	assert_int_equal(u4v_advise_mr(r->p.a.pd, 0, 0, &s, 1), EINVAL);
	s = (struct ibv_sge){ (uintptr_t)m, 64, u4v_mr_lkey(ro) };
	assert_int_equal(u4v_advise_mr(r->p.b.pd,
				       IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0,
				       &s, 1),
			 EINVAL);
	/* read-only pages: read advice is fine, write advice is refused */
	assert_int_equal(mprotect(m + psz, psz, PROT_READ), 0);
	s = (struct ibv_sge){ (uintptr_t)m + psz, (uint32_t)psz,
			      u4v_mr_lkey(mr) };
	assert_int_equal(u4v_advise_mr(r->p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				       IBV_ADVISE_MR_FLAG_FLUSH, &s, 1),
			 0);
	assert_int_equal(u4v_advise_mr(r->p.b.pd,
				       IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				       IBV_ADVISE_MR_FLAG_FLUSH, &s, 1),
			 EFAULT);
	/* a range that is not there: a flushing prefetch says so */
	take_away(m + 3 * psz, psz);
	s = (struct ibv_sge){ (uintptr_t)m + 2 * psz, (uint32_t)(2 * psz),
			      u4v_mr_lkey(mr) };
	assert_int_equal(u4v_advise_mr(r->p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				       IBV_ADVISE_MR_FLAG_FLUSH, &s, 1),
			 EFAULT);
	assert_int_equal(u4v_advise_mr(r->p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				       0, &s, 1),
			 0);
	assert_int_equal(u4v_dereg_mr(ro), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	u4vt_unmap(m, 4 * psz);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_caps, rig_setup,
						rig_teardown),
		cmocka_unit_test_setup_teardown(test_remote_access, rig_setup,
						rig_teardown),
		cmocka_unit_test_setup_teardown(test_never_mapped, rig_setup,
						rig_teardown),
		cmocka_unit_test_setup_teardown(test_local_access, rig_setup,
						rig_teardown),
		cmocka_unit_test_setup_teardown(test_implicit, rig_setup,
						rig_teardown),
		cmocka_unit_test_setup_teardown(test_advise, rig_setup,
						rig_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
