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

static void test_eight_rc_qps(void **state)
{
	const char *shm = u4vt_shm_name("fan8");
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa[NQP], *qb[NQP];
	struct u4v_cq *cqa[NQP], *cqb[NQP];
	size_t per = (size_t)MSG * 4; /* send-src, write-src, read-dst, rx */
	uint8_t *la = u4vt_map(per * NQP), *rb = u4vt_map(per * NQP);
	struct u4v_mr *ma, *mb;
	int q, r;

	(void)state;
	u4vt_cable_create(shm, NULL);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open(&b, shm, 1);
	u4vt_qp_opts_default(&o);
	ma = u4vt_reg(&a, la, per * NQP, U4VT_ACCESS_ALL);
	mb = u4vt_reg(&b, rb, per * NQP, U4VT_ACCESS_ALL);
	for (q = 0; q < NQP; q++) {
		struct u4vt_end ea = a, eb = b;

		assert_int_equal(u4v_create_cq(a.ctx, 64, &cqa[q]), 0);
		assert_int_equal(u4v_create_cq(b.ctx, 64, &cqb[q]), 0);
		ea.cq = cqa[q];
		eb.cq = cqb[q];
		qa[q] = u4vt_qp_create(&ea, IBV_QPT_RC, &o);
		qb[q] = u4vt_qp_create(&eb, IBV_QPT_RC, &o);
	}
	for (q = 0; q < NQP; q++) {
		u4vt_qp_connect(qa[q], IBV_QPT_RC, u4v_qp_num(qb[q]), &o);
		u4vt_qp_connect(qb[q], IBV_QPT_RC, u4v_qp_num(qa[q]), &o);
	}
	for (r = 0; r < ROUNDS; r++) {
		/* post everything on every QP first, then collect */
		for (q = 0; q < NQP; q++) {
			uint8_t *l = la + per * q, *rm = rb + per * q;
			uint64_t seed = (uint64_t)r * 100 + q;

			u4vt_fill(l, MSG, seed);		/* SEND src */
			u4vt_fill(l + MSG, MSG, seed + 50);	/* WRITE src */
			u4vt_fill(rm + MSG, MSG, seed + 70);	/* READ src */
			memset(l + 2 * MSG, 0, MSG);
			memset(rm + 3 * MSG, 0, MSG);
			assert_int_equal(u4vt_post_recv1(qb[q], seed,
							 (uintptr_t)rm +
								 3 * MSG,
							 MSG,
							 u4v_mr_lkey(mb)),
					 0);
			assert_int_equal(u4vt_post_send1(qa[q], IBV_WR_SEND, 1,
							 IBV_SEND_SIGNALED,
							 (uintptr_t)l, MSG,
							 u4v_mr_lkey(ma), 0, 0,
							 0),
					 0);
			assert_int_equal(
				u4vt_post_send1(qa[q], IBV_WR_RDMA_WRITE, 2,
						IBV_SEND_SIGNALED,
						(uintptr_t)l + MSG, MSG,
						u4v_mr_lkey(ma), (uintptr_t)rm,
						u4v_mr_rkey(mb), 0),
				0);
			assert_int_equal(
				u4vt_post_send1(qa[q], IBV_WR_RDMA_READ, 3,
						IBV_SEND_SIGNALED,
						(uintptr_t)l + 2 * MSG, MSG,
						u4v_mr_lkey(ma),
						(uintptr_t)rm + MSG,
						u4v_mr_rkey(mb), 0),
				0);
		}
		for (q = 0; q < NQP; q++) {
			uint8_t *l = la + per * q, *rm = rb + per * q;
			uint64_t seed = (uint64_t)r * 100 + q;
			struct ibv_wc wc[3];
			int i;

			/* in order, exactly once, on this QP's own CQ */
			assert_int_equal(u4vt_poll(cqa[q], wc, 3, TMO), 3);
			for (i = 0; i < 3; i++) {
				if (wc[i].status || wc[i].wr_id != (uint64_t)i + 1)
					fail_msg("round %d qp %d: wr %llu "
						 "status %d",
						 r, q,
						 (unsigned long long)wc[i].wr_id,
						 wc[i].status);
				assert_int_equal(wc[i].qp_num,
						 u4v_qp_num(qa[q]));
			}
			assert_int_equal(u4vt_poll(cqb[q], wc, 1, TMO), 1);
			assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[0].wr_id, seed);
			assert_int_equal(wc[0].byte_len, MSG);
			assert_true(u4vt_sum(rm + 3 * MSG, MSG) ==
				    u4vt_sum(l, MSG));
			assert_true(u4vt_sum(rm, MSG) ==
				    u4vt_sum(l + MSG, MSG));
			assert_true(u4vt_sum(l + 2 * MSG, MSG) ==
				    u4vt_sum(rm + MSG, MSG));
		}
	}
	for (q = 0; q < NQP; q++) {
		assert_int_equal(u4v_destroy_qp(qa[q]), 0);
		assert_int_equal(u4v_destroy_qp(qb[q]), 0);
		assert_int_equal(u4v_destroy_cq(cqa[q]), 0);
		assert_int_equal(u4v_destroy_cq(cqb[q]), 0);
	}
	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	u4vt_end_close(&a);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
	u4vt_unmap(la, per * NQP);
	u4vt_unmap(rb, per * NQP);
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
			struct ibv_sge sge = { (uintptr_t)&ad->res[posted], 8,
					       u4v_mr_lkey(ad->mr) };
			struct ibv_send_wr w = { 0 }, *bad;

			w.wr_id = posted;
			w.sg_list = &sge;
			w.num_sge = 1;
			w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			w.send_flags = IBV_SEND_SIGNALED;
			w.wr.atomic.remote_addr = ad->raddr;
			w.wr.atomic.rkey = ad->rkey;
			w.wr.atomic.compare_add = 1;
			ACHK(u4v_post_send(ad->qp, &w, &bad) == 0);
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
		ad[i].qp = u4vt_qp_create(&a[i], IBV_QPT_RC, &o);
		qb[i] = u4vt_qp_create(&b, IBV_QPT_RC, &o);
		u4vt_qp_connect(ad[i].qp, IBV_QPT_RC, u4v_qp_num(qb[i]), &o);
		u4vt_qp_connect(qb[i], IBV_QPT_RC, u4v_qp_num(ad[i].qp), &o);
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
