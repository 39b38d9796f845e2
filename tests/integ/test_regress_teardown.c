// SPDX-License-Identifier: MIT
/*
 * Teardown with traffic in flight (run under ASan/LSan: U4V_SANITIZE=ON):
 * destroy QPs, CQs, MRs and whole contexts while frames fly in both
 * directions. No use after free, no double free, no leak (LeakSanitizer
 * checks at exit), no hang; the surviving side ends with status 12 or
 * flushes, and a fresh pair on the same cable still works.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define LEN 40000u
#define DEPTH 32

struct flight {
	struct u4vt_pair p;
	struct u4v_mr *ma, *mb;
	uint8_t *a, *b;
};

static void fly(struct flight *f, const char *tag)
{
	struct u4vt_qp_opts o;
	int i;

	u4vt_qp_opts_default(&o);
	o.timeout = 10; /* 4 ms: the survivor gives up fast */
	o.retry_cnt = 2;
	o.max_send_wr = DEPTH * 2;
	o.max_recv_wr = DEPTH * 2;
	u4vt_pair_up(&f->p, tag, IBV_QPT_RC, NULL, &o, 0);
	f->a = malloc(LEN * DEPTH);
	f->b = malloc(LEN * DEPTH);
	f->ma = rel_reg(f->p.a.pd, f->a, LEN * DEPTH, REL_ACC_ALL);
	f->mb = rel_reg(f->p.b.pd, f->b, LEN * DEPTH, REL_ACC_ALL);
	for (i = 0; i < DEPTH; i++) {
		uint8_t *sa = f->a + (size_t)i * LEN, *sb = f->b + (size_t)i * LEN;

		rel_post_recv(f->p.qb, i, sb, LEN, u4v_mr_lkey(f->mb));
		rel_post_recv(f->p.qa, i, sa, LEN, u4v_mr_lkey(f->ma));
		/* both directions: SEND, WRITE and READ in flight */
		assert_int_equal(rel_post(f->p.qa, i % 3 == 0 ? IBV_WR_SEND :
						   i % 3 == 1 ?
						   IBV_WR_RDMA_WRITE :
						   IBV_WR_RDMA_READ,
					  i, sa, LEN, u4v_mr_lkey(f->ma),
					  (uintptr_t)sb, u4v_mr_rkey(f->mb)),
				 0);
		assert_int_equal(rel_post(f->p.qb, i % 2 ? IBV_WR_SEND :
						   IBV_WR_RDMA_WRITE,
					  i, sb, LEN, u4v_mr_lkey(f->mb),
					  (uintptr_t)sa, u4v_mr_rkey(f->ma)),
				 0);
	}
}

/* Poll cq until quiet for 100 ms or a status 12 (bounded). */
static void drain(struct u4v_cq *cq)
{
	struct ibv_wc wc[16];
	uint64_t end = u4vt_now_ms() + 5000;

	while (u4vt_poll(cq, wc, 16, 100) > 0)
		assert_true(u4vt_now_ms() < end);
}

/* The order in which things are destroyed, mid-flight. */
enum order { REQ_QP_FIRST, RESP_QP_FIRST, MR_FIRST, CTX_B_FIRST };

/* Destroy f's objects in order ord while its traffic flies; then the rest. */
static void destroy_in_order(struct flight *f, enum order ord)
{
	switch (ord) {
	case REQ_QP_FIRST:
		assert_int_equal(u4v_destroy_qp(f->p.qa), 0);
		f->p.qa = NULL;
		drain(f->p.b.cq);
		break;
	case RESP_QP_FIRST:
		assert_int_equal(u4v_destroy_qp(f->p.qb), 0);
		f->p.qb = NULL;
		drain(f->p.a.cq); /* ends in 12 + flushes */
		break;
	case MR_FIRST:
		assert_int_equal(u4v_dereg_mr(f->mb), 0);
		f->mb = NULL;
		assert_int_equal(u4v_dereg_mr(f->ma), 0);
		f->ma = NULL;
		drain(f->p.a.cq);
		drain(f->p.b.cq);
		break;
	case CTX_B_FIRST:
		assert_int_equal(u4v_destroy_qp(f->p.qb), 0);
		f->p.qb = NULL;
		assert_int_equal(u4v_dereg_mr(f->mb), 0);
		f->mb = NULL;
		u4vt_end_close(&f->p.b);
		drain(f->p.a.cq);
		break;
	}
	if (f->p.qa)
		assert_int_equal(u4v_destroy_qp(f->p.qa), 0);
	if (f->p.qb)
		assert_int_equal(u4v_destroy_qp(f->p.qb), 0);
	f->p.qa = f->p.qb = NULL;
	if (f->ma)
		assert_int_equal(u4v_dereg_mr(f->ma), 0);
	if (f->mb)
		assert_int_equal(u4v_dereg_mr(f->mb), 0);
	/* everything unused now: CQs and PDs go */
	if (ord != CTX_B_FIRST)
		u4vt_end_close(&f->p.b);
}

/* A new QP pair between end 0 and the bystander on end 1: a SEND arrives. */
static void bystander_talks(struct u4vt_end *a, struct u4vt_end *fresh)
{
	static char s[64] = "after", d[64];
	struct u4vt_qp_opts o;
	struct u4v_qp *q1, *q2;
	struct u4v_mr *m1 = rel_reg(a->pd, s, 64, IBV_ACCESS_LOCAL_WRITE);
	struct u4v_mr *m2 = rel_reg(fresh->pd, d, 64, IBV_ACCESS_LOCAL_WRITE);

	u4vt_qp_opts_default(&o);
	u4vt_qp_pair(a, fresh, IBV_QPT_RC, &o, &q1, &q2);
	drain(a->cq);
	assert_int_equal(rel_post_recv(q2, 1, d, 64, u4v_mr_lkey(m2)), 0);
	assert_int_equal(
	    rel_post(q1, IBV_WR_SEND, 1, s, 64, u4v_mr_lkey(m1), 0, 0), 0);
	rel_wait_both(a->cq, fresh->cq, 5000);
	assert_string_equal(d, "after");
	assert_int_equal(u4v_destroy_qp(q1), 0);
	assert_int_equal(u4v_destroy_qp(q2), 0);
	assert_int_equal(u4v_dereg_mr(m1), 0);
	assert_int_equal(u4v_dereg_mr(m2), 0);
}

static void teardown_in_flight(enum order ord, const char *tag)
{
	struct flight f;
	struct ibv_wc wc;
	struct u4vt_end fresh;
	int it;

	for (it = 0; it < 5; it++) {
		memset(&f, 0, sizeof(f));
		fly(&f, tag);
		/* a bystander context on end 1, opened before the teardown */
		u4vt_end_open(&fresh, f.p.shm, 1);
		/* let some of it move */
		u4v_poll_cq(f.p.a.cq, 1, &wc);
		destroy_in_order(&f, ord);
		/* the bystander on end 1 still talks to end 0 */
		bystander_talks(&f.p.a, &fresh);
		u4vt_end_close(&fresh);
		u4vt_end_close(&f.p.a);
		u4l_sim_destroy(f.p.shm);
		free(f.a);
		free(f.b);
	}
}

/*
 * A peer context closes and a new one opens on the same end (a restarted
 * client process): it may get the same context id. A QP of the surviving
 * context must reach the new one.
 */
static void test_reconnect_after_peer_close(void **state)
{
	const char *shm = u4vt_shm_name("recon");
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb;
	static char s[64] = "hello", d[64];
	struct u4v_mr *ma, *mb;
	struct ibv_wc wc;
	uint32_t old_qpn;
	int round;

	(void)state;
	u4vt_cable_create(shm, NULL);
	u4vt_end_open(&a, shm, 0);
	u4vt_qp_opts_default(&o);
	/* ~0.27 s x 7 retries: ASan on a busy 2-core host, inside 5 s */
	o.timeout = 16;
	o.retry_cnt = 7;
	ma = rel_reg(a.pd, s, 64, IBV_ACCESS_LOCAL_WRITE);
	for (round = 0; round < 2; round++) {
		u4vt_end_open(&b, shm, 1);
		u4vt_qp_pair(&a, &b, IBV_QPT_RC, &o, &qa, &qb);
		old_qpn = u4v_qp_num(qb);
		mb = rel_reg(b.pd, d, 64, IBV_ACCESS_LOCAL_WRITE);
		memset(d, 0, sizeof(d));
		assert_int_equal(rel_post_recv(qb, 1, d, 64, u4v_mr_lkey(mb)),
				 0);
		assert_int_equal(rel_post(qa, IBV_WR_SEND, 1, s, 64,
					  u4v_mr_lkey(ma), 0, 0), 0);
		wc = rel_wait1(a.cq, 5000);
		fprintf(stderr, "[recon] round %d: peer QPN 0x%x, status %d\n",
			round, old_qpn, wc.status);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		wc = rel_wait1(b.cq, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_string_equal(d, "hello");
		assert_int_equal(u4v_destroy_qp(qa), 0);
		assert_int_equal(u4v_destroy_qp(qb), 0);
		assert_int_equal(u4v_dereg_mr(mb), 0);
		u4vt_end_close(&b);
	}
	assert_int_equal(u4v_dereg_mr(ma), 0);
	u4vt_end_close(&a);
	u4l_sim_destroy(shm);
}

/* Each order of teardown_in_flight, a test of its own. */
static struct teardown_case {
	const char *name, *tag;
	enum order ord;
} cases[] = {
    {"test_destroy_requester_qp", "tdreq", REQ_QP_FIRST},
    {"test_destroy_responder_qp", "tdresp", RESP_QP_FIRST},
    {"test_dereg_mrs_first", "tdmr", MR_FIRST},
    {"test_close_context", "tdctx", CTX_B_FIRST},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void test_teardown_in_flight(void **state)
{
	const struct teardown_case *c = *state;

	teardown_in_flight(c->ord, c->tag);
}

int main(void)
{
	struct CMUnitTest tests[NCASES + 1] = {
	    [NCASES] = cmocka_unit_test(test_reconnect_after_peer_close),
	};
	size_t i;

	for (i = 0; i < NCASES; i++)
		tests[i] = (struct CMUnitTest){
		    .name = cases[i].name,
		    .test_func = test_teardown_in_flight,
		    .initial_state = &cases[i],
		};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
