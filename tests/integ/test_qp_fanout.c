// SPDX-License-Identifier: MIT
/*
 * Many QPs at once in one process: 8 RC QPs each moving its own payloads
 * (SEND, WRITE, READ, interleaved across the QPs), and fetch-and-add racing
 * from two QPs of two contexts, each driven by its own thread, on one
 * target cell: exact final sum, every intermediate value returned once.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

#define TMO 20000
#define NQP 8
#define MSG (300u * 1024 + 17) /* not a multiple of the granule */
#define ROUNDS 6

/* NQP RC QP pairs, each QP on its own CQ, and their memory. */
struct fan {
	struct u4v_qp *qa[NQP], *qb[NQP];
	struct u4v_cq *cqa[NQP], *cqb[NQP];
	size_t per; /* a QP's share: send-src, write-src, read-dst, rx */
	uint8_t *la, *rb;
	struct u4v_mr *ma, *mb;
};

/* Round r on QP q: a SEND, a WRITE and a READ, and the receive. */
static void fan_post(struct fan *f, int q, int r)
{
	uint8_t *l = f->la + f->per * q, *rm = f->rb + f->per * q;
	uint64_t seed = (uint64_t)r * 100 + q;
	uint32_t lk = u4v_mr_lkey(f->ma), rk = u4v_mr_rkey(f->mb);

	u4vt_fill(l, MSG, seed);	     /* SEND src */
	u4vt_fill(l + MSG, MSG, seed + 50);  /* WRITE src */
	u4vt_fill(rm + MSG, MSG, seed + 70); /* READ src */
	memset(l + 2 * MSG, 0, MSG);
	memset(rm + 3 * MSG, 0, MSG);
	assert_int_equal(u4vt_post_recv1(f->qb[q], seed,
					 (uintptr_t)rm + 3 * MSG, MSG,
					 u4v_mr_lkey(f->mb)),
			 0);
	assert_int_equal(u4vt_post_send1(f->qa[q], IBV_WR_SEND, 1,
					 IBV_SEND_SIGNALED, (uintptr_t)l, MSG,
					 lk, 0, 0, 0),
			 0);
	assert_int_equal(u4vt_post_send1(f->qa[q], IBV_WR_RDMA_WRITE, 2,
					 IBV_SEND_SIGNALED, (uintptr_t)l + MSG,
					 MSG, lk, (uintptr_t)rm, rk, 0),
			 0);
	assert_int_equal(u4vt_post_send1(f->qa[q], IBV_WR_RDMA_READ, 3,
					 IBV_SEND_SIGNALED,
					 (uintptr_t)l + 2 * MSG, MSG, lk,
					 (uintptr_t)rm + MSG, rk, 0),
			 0);
}

/* Round r on QP q: in order, exactly once, on its own CQs; payloads. */
static void fan_check(struct fan *f, int q, int r)
{
	uint8_t *l = f->la + f->per * q, *rm = f->rb + f->per * q;
	uint64_t seed = (uint64_t)r * 100 + q;
	struct ibv_wc wc[3];
	int i;

	assert_int_equal(u4vt_poll(f->cqa[q], wc, 3, TMO), 3);
	for (i = 0; i < 3; i++) {
		if (wc[i].status || wc[i].wr_id != (uint64_t)i + 1)
			fail_msg("round %d qp %d: wr %llu status %d", r, q,
				 (unsigned long long)wc[i].wr_id, wc[i].status);
		assert_int_equal(wc[i].qp_num, u4v_qp_num(f->qa[q]));
	}
	assert_int_equal(u4vt_poll(f->cqb[q], wc, 1, TMO), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, seed);
	assert_int_equal(wc[0].byte_len, MSG);
	assert_true(u4vt_sum(rm + 3 * MSG, MSG) == u4vt_sum(l, MSG));
	assert_true(u4vt_sum(rm, MSG) == u4vt_sum(l + MSG, MSG));
	assert_true(u4vt_sum(l + 2 * MSG, MSG) == u4vt_sum(rm + MSG, MSG));
}

static void test_eight_rc_qps(void **state)
{
	const char *shm = u4vt_shm_name("fan8");
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct fan f;
	int q, r;

	(void)state;
	f.per = (size_t)MSG * 4;
	f.la = u4vt_map(f.per * NQP);
	f.rb = u4vt_map(f.per * NQP);
	u4vt_cable_create(shm, NULL);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open(&b, shm, 1);
	u4vt_qp_opts_default(&o);
	f.ma = u4vt_reg(&a, f.la, f.per * NQP, U4VT_ACCESS_ALL);
	f.mb = u4vt_reg(&b, f.rb, f.per * NQP, U4VT_ACCESS_ALL);
	u4vt_qp_pairs(&a, &b, NQP, 64, &o, f.qa, f.qb, f.cqa, f.cqb);
	for (r = 0; r < ROUNDS; r++) {
		/* post everything on every QP first, then collect */
		for (q = 0; q < NQP; q++)
			fan_post(&f, q, r);
		for (q = 0; q < NQP; q++)
			fan_check(&f, q, r);
	}
	u4vt_qp_pairs_down(NQP, f.qa, f.qb, f.cqa, f.cqb);
	assert_int_equal(u4v_dereg_mr(f.ma), 0);
	assert_int_equal(u4v_dereg_mr(f.mb), 0);
	u4vt_end_close(&a);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
	u4vt_unmap(f.la, f.per * NQP);
	u4vt_unmap(f.rb, f.per * NQP);
}

/* ---- FAA from two threads / two QPs / two contexts ----------------------- */

#define NFAA 3000
#define WIN 16

struct adder {
	struct u4vt_end *e;
	struct u4v_qp *qp;
	struct u4v_mr *mr;
	uint64_t *res;
	uint64_t raddr;
	uint32_t rkey;
	int err; /* 0, or the line that failed */
};

#define ACHK(x)                                                               \
	do {                                                                  \
		if (!(x)) {                                                   \
			ad->err = __LINE__;                                   \
			return NULL;                                          \
		}                                                             \
	} while (0)

static void *adder_main(void *arg)
{
	struct adder *ad = arg;
	int posted = 0, done = 0;
	uint64_t end = u4vt_now_ms() + 60000;

	while (done < NFAA) {
		struct ibv_wc wc[16];
		int n, i;

		ACHK(u4vt_now_ms() < end);
		while (posted < NFAA && posted - done < WIN) {
			ACHK(u4vt_post_atomic(
				 ad->qp, IBV_WR_ATOMIC_FETCH_AND_ADD, posted,
				 (uintptr_t)&ad->res[posted],
				 u4v_mr_lkey(ad->mr), ad->raddr, ad->rkey, 1,
				 0) == 0);
			posted++;
		}
		n = u4v_poll_cq(ad->e->cq, 16, wc);
		ACHK(n >= 0);
		for (i = 0; i < n; i++) {
			ACHK(wc[i].status == IBV_WC_SUCCESS);
			ACHK(wc[i].wr_id == (uint64_t)done);
			done++;
		}
	}
	return NULL;
}

static void test_faa_race_two_qps(void **state)
{
	const char *shm = u4vt_shm_name("faa");
	struct u4vt_end a[2], b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qb[2];
	struct adder ad[2];
	pthread_t th[2];
	uint64_t *cell = u4vt_map(4096);
	uint8_t *seen = calloc(2 * NFAA + 1, 1);
	struct u4v_mr *mc;
	int i, j;

	(void)state;
	u4vt_cable_create(shm, NULL);
	u4vt_end_open(&b, shm, 1);
	u4vt_qp_opts_default(&o);
	mc = u4vt_reg(&b, cell, 4096, U4VT_ACCESS_ALL);
	*cell = 0;
	for (i = 0; i < 2; i++) {
		/* two contexts on end 0: two channels into the target */
		u4vt_end_open(&a[i], shm, 0);
		memset(&ad[i], 0, sizeof(ad[i]));
		ad[i].e = &a[i];
		ad[i].res = calloc(NFAA, 8);
		ad[i].mr = u4vt_reg(&a[i], ad[i].res, NFAA * 8,
				    IBV_ACCESS_LOCAL_WRITE);
		u4vt_qp_pair(&a[i], &b, IBV_QPT_RC, &o, &ad[i].qp, &qb[i]);
		ad[i].raddr = (uintptr_t)cell;
		ad[i].rkey = u4v_mr_rkey(mc);
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, adder_main,
						&ad[i]),
				 0);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 2; i++)
		if (ad[i].err)
			fail_msg("adder %d failed at line %d", i, ad[i].err);
	assert_true(*cell == 2 * NFAA);
	for (i = 0; i < 2; i++)
		for (j = 0; j < NFAA; j++) {
			uint64_t v = ad[i].res[j];

			assert_true(v < 2 * NFAA);
			assert_int_equal(seen[v]++, 0);
			if (j)
				assert_true(v > ad[i].res[j - 1]);
		}
	for (i = 0; i < 2; i++) {
		assert_int_equal(u4v_destroy_qp(ad[i].qp), 0);
		assert_int_equal(u4v_destroy_qp(qb[i]), 0);
		assert_int_equal(u4v_dereg_mr(ad[i].mr), 0);
		u4vt_end_close(&a[i]);
		free(ad[i].res);
	}
	assert_int_equal(u4v_dereg_mr(mc), 0);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
	u4vt_unmap(cell, 4096);
	free(seen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eight_rc_qps),
		cmocka_unit_test(test_faa_race_two_qps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
