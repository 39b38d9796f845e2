// SPDX-License-Identifier: MIT
/*
 * The ibv_modify_qp(3) state table per QP type: every legal transition with
 * its required mask succeeds; a missing required attribute, a forbidden one
 * or an illegal transition is EINVAL and leaves the QP as it was; bad values
 * are EINVAL; → ERR flushes every posted WR with IBV_WC_WR_FLUSH_ERR, and
 * → RESET empties the queues without completions.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

static const enum ibv_qp_type qpts[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
enum { RC, UC, UD };

/* Every attribute bit the tests reason about. */
static const int universe[] = {
	IBV_QP_PKEY_INDEX,	   IBV_QP_PORT,		 IBV_QP_QKEY,
	IBV_QP_AV,		   IBV_QP_PATH_MTU,	 IBV_QP_TIMEOUT,
	IBV_QP_RETRY_CNT,	   IBV_QP_RNR_RETRY,	 IBV_QP_RQ_PSN,
	IBV_QP_MAX_QP_RD_ATOMIC,   IBV_QP_MIN_RNR_TIMER, IBV_QP_SQ_PSN,
	IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_CAP,		 IBV_QP_DEST_QPN,
	IBV_QP_ACCESS_FLAGS,	   IBV_QP_EN_SQD_ASYNC_NOTIFY,
};
/* Bits whose acceptance the tests do not insist on either way. */
#define LENIENT (IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE)

/* The table from ibv_modify_qp(3) / IBTA 11.2.4.2, written out. */
struct spec {
	enum ibv_qp_state from, to;
	int req[3], opt[3];
};

#define RTS_OPT_RC (IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER)
#define RTS_OPT_UC (IBV_QP_ACCESS_FLAGS)
#define RTS_OPT_UD (IBV_QP_QKEY)

static const struct spec table[] = {
	{ IBV_QPS_RESET, IBV_QPS_INIT,
	  { IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY },
	  { 0, 0, 0 } },
	{ IBV_QPS_INIT, IBV_QPS_INIT,
	  { 0, 0, 0 },
	  { IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY } },
	{ IBV_QPS_INIT, IBV_QPS_RTR,
	  { IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	    IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, 0 },
	  { IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
	    IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
	    IBV_QP_PKEY_INDEX | IBV_QP_QKEY } },
	{ IBV_QPS_RTR, IBV_QPS_RTS,
	  { IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
	    IBV_QP_SQ_PSN, IBV_QP_SQ_PSN },
	  { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD } },
	{ IBV_QPS_RTS, IBV_QPS_RTS,
	  { 0, 0, 0 },
	  { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD } },
	{ IBV_QPS_RTS, IBV_QPS_SQD,
	  { 0, 0, 0 },
	  { IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY,
	    IBV_QP_EN_SQD_ASYNC_NOTIFY } },
	{ IBV_QPS_SQD, IBV_QPS_RTS,
	  { 0, 0, 0 },
	  { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD } },
	{ IBV_QPS_SQD, IBV_QPS_SQD,
	  { 0, 0, 0 },
	  { IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		    IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
		    IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
		    IBV_QP_MIN_RNR_TIMER | IBV_QP_PORT,
	    IBV_QP_AV | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT,
	    IBV_QP_PKEY_INDEX | IBV_QP_QKEY } },
};

struct rig {
	struct u4vt_pair p;	/* no QPs of its own */
	struct u4v_qp *peer[3]; /* on end b: a live destination */
};

static int rig_setup(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));
	int t;

	assert_non_null(r);
	u4vt_pair_ends(&r->p, "state", NULL, -1);
	r->p.o.max_send_wr = 16;
	r->p.o.max_recv_wr = 16;
	for (t = 0; t < 3; t++)
		r->peer[t] = u4vt_qp_create(&r->p.b, qpts[t], &r->p.o);
	*state = r;
	return 0;
}

static int rig_teardown(void **state)
{
	struct rig *r = *state;
	int t;

	for (t = 0; t < 3; t++)
		u4v_destroy_qp(r->peer[t]);
	u4vt_pair_down(&r->p);
	free(r);
	return 0;
}

/* Valid values for every attribute. */
static void full_attr(struct rig *r, int t, struct ibv_qp_attr *a,
		      enum ibv_qp_state to)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = to;
	a->pkey_index = 0;
	a->port_num = 1;
	a->qkey = 0x11111111;
	a->qp_access_flags = U4VT_ACCESS_ALL;
	a->ah_attr.port_num = 1;
	a->path_mtu = IBV_MTU_4096;
	a->dest_qp_num = u4v_qp_num(r->peer[t]);
	a->rq_psn = 0x10;
	a->sq_psn = 0x10;
	a->max_dest_rd_atomic = 4;
	a->max_rd_atomic = 4;
	a->min_rnr_timer = 3;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->cap.max_send_wr = 16;
	a->cap.max_recv_wr = 16;
	a->cap.max_send_sge = 4;
	a->cap.max_recv_sge = 4;
	a->cap.max_inline_data = 256;
	a->en_sqd_async_notify = 1;
}

static const struct spec *find(enum ibv_qp_state from, enum ibv_qp_state to)
{
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].from == from && table[i].to == to)
			return &table[i];
	return NULL;
}

static int modify(struct rig *r, struct u4v_qp *qp, int t,
		  enum ibv_qp_state to, int mask)
{
	struct ibv_qp_attr a;

	full_attr(r, t, &a, to);
	return u4v_modify_qp(qp, &a, mask | IBV_QP_STATE);
}

/* A fresh QP of type t brought to state s along the legal path. */
static struct u4v_qp *qp_in(struct rig *r, int t, enum ibv_qp_state s)
{
	static const enum ibv_qp_state path[] = { IBV_QPS_INIT, IBV_QPS_RTR,
						  IBV_QPS_RTS, IBV_QPS_SQD };
	struct u4v_qp *qp = u4vt_qp_create(&r->p.a, qpts[t], &r->p.o);
	enum ibv_qp_state cur = IBV_QPS_RESET;
	size_t i;

	if (s == IBV_QPS_ERR) {
		assert_int_equal(modify(r, qp, t, IBV_QPS_ERR, 0), 0);
		return qp;
	}
	for (i = 0; i < 4 && cur != s; i++) {
		const struct spec *sp = find(cur, path[i]);

		assert_int_equal(modify(r, qp, t, path[i], sp->req[t]), 0);
		cur = path[i];
	}
	assert_int_equal(u4v_qp_state(qp), s);
	return qp;
}

static void check_state(struct u4v_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	assert_int_equal(u4v_qp_state(qp), s);
	assert_int_equal(u4v_query_qp(qp, &a, IBV_QP_STATE, &init), 0);
	assert_int_equal(a.qp_state, s);
}

/* fn for every QP type and every transition of the table. */
static void each_transition(struct rig *r,
			    void (*fn)(struct rig *r, int t,
				       const struct spec *sp, const void *arg),
			    const void *arg)
{
	size_t i;
	int t;

	for (t = 0; t < 3; t++)
		for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			fn(r, t, &table[i], arg);
}

/* A fresh QP of type t in sp's from-state moves to its to-state with mask. */
static void moves(struct rig *r, int t, const struct spec *sp, int mask)
{
	struct u4v_qp *qp = qp_in(r, t, sp->from);
	int ret = modify(r, qp, t, sp->to, mask);

	if (ret)
		fail_msg("qpt %d %d->%d with mask 0x%x: %d", qpts[t], sp->from,
			 sp->to, mask, ret);
	check_state(qp, sp->to);
	assert_int_equal(u4v_destroy_qp(qp), 0);
}

/* With the required mask only, then with every optional attribute too. */
static void legal(struct rig *r, int t, const struct spec *sp, const void *arg)
{
	(void)arg;
	moves(r, t, sp, sp->req[t]);
	moves(r, t, sp, sp->req[t] | sp->opt[t]);
}

static void test_legal_transitions(void **state)
{
	each_transition(*state, legal, NULL);
}

static void test_to_reset_and_err_from_anywhere(void **state)
{
	static const enum ibv_qp_state from[] = { IBV_QPS_RESET, IBV_QPS_INIT,
						  IBV_QPS_RTR, IBV_QPS_RTS,
						  IBV_QPS_SQD, IBV_QPS_ERR };
	struct rig *r = *state;
	size_t i;
	int t;

	for (t = 0; t < 3; t++)
		for (i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
			struct u4v_qp *qp = qp_in(r, t, from[i]);

			/* no other attribute may come with it */
			assert_int_equal(modify(r, qp, t, IBV_QPS_ERR,
						IBV_QP_SQ_PSN),
					 EINVAL);
			check_state(qp, from[i]);
			assert_int_equal(modify(r, qp, t, IBV_QPS_ERR, 0), 0);
			check_state(qp, IBV_QPS_ERR);
			assert_int_equal(modify(r, qp, t, IBV_QPS_RESET,
						IBV_QP_PKEY_INDEX),
					 EINVAL);
			assert_int_equal(modify(r, qp, t, IBV_QPS_RESET, 0), 0);
			check_state(qp, IBV_QPS_RESET);
			assert_int_equal(u4v_destroy_qp(qp), 0);
			/* and straight to RESET */
			qp = qp_in(r, t, from[i]);
			assert_int_equal(modify(r, qp, t, IBV_QPS_RESET, 0), 0);
			check_state(qp, IBV_QPS_RESET);
			/* usable again from RESET */
			assert_int_equal(
				modify(r, qp, t, IBV_QPS_INIT,
				       find(IBV_QPS_RESET,
					    IBV_QPS_INIT)->req[t]),
				0);
			assert_int_equal(u4v_destroy_qp(qp), 0);
		}
}

/* What a refusal tries: each mask bad() makes of one attribute bit. */
struct refusal {
	const char *what;
	bool (*bad)(const struct spec *sp, int t, int bit, int *mask);
};

/* Each mask is refused (EINVAL) and leaves a QP in sp's from-state there. */
static void refuses(struct rig *r, int t, const struct spec *sp,
		    const void *arg)
{
	const struct refusal *rf = arg;
	struct u4v_qp *qp = qp_in(r, t, sp->from);
	int b, mask;

	for (b = 0; b < 31; b++) {
		int bit = 1 << b;

		if (!rf->bad(sp, t, bit, &mask))
			continue;
		if (modify(r, qp, t, sp->to, mask) != EINVAL)
			fail_msg("qpt %d %d->%d %s 0x%x accepted", qpts[t],
				 sp->from, sp->to, rf->what, bit);
		check_state(qp, sp->from);
	}
	assert_int_equal(u4v_destroy_qp(qp), 0);
}

/* The required mask less one of its bits. */
static bool without_required(const struct spec *sp, int t, int bit, int *mask)
{
	*mask = sp->req[t] & ~bit;
	return sp->req[t] & bit;
}

/* The required mask and an attribute neither required nor optional. */
static bool with_forbidden(const struct spec *sp, int t, int bit, int *mask)
{
	size_t u;

	*mask = sp->req[t] | bit;
	if ((sp->req[t] | sp->opt[t] | LENIENT) & bit)
		return false;
	for (u = 0; u < sizeof(universe) / sizeof(universe[0]); u++)
		if (universe[u] == bit)
			return true;
	return false;
}

static void test_missing_required(void **state)
{
	static const struct refusal rf = {"without", without_required};

	each_transition(*state, refuses, &rf);
}

static void test_forbidden_attribute(void **state)
{
	static const struct refusal rf = {"with forbidden", with_forbidden};

	each_transition(*state, refuses, &rf);
}

static void test_ud_path_mtu_refused(void **state)
{
	struct rig *r = *state;
	struct u4v_qp *qp = qp_in(r, UD, IBV_QPS_INIT);

	assert_int_equal(modify(r, qp, UD, IBV_QPS_RTR, IBV_QP_PATH_MTU),
			 EINVAL);
	check_state(qp, IBV_QPS_INIT);
	assert_int_equal(modify(r, qp, UD, IBV_QPS_RTR, 0), 0);
	assert_int_equal(modify(r, qp, UD, IBV_QPS_RTS,
				IBV_QP_SQ_PSN | IBV_QP_PATH_MTU),
			 EINVAL);
	check_state(qp, IBV_QPS_RTR);
	assert_int_equal(u4v_destroy_qp(qp), 0);
}

static void test_illegal_transitions(void **state)
{
	static const enum ibv_qp_state all[] = { IBV_QPS_RESET, IBV_QPS_INIT,
						 IBV_QPS_RTR, IBV_QPS_RTS,
						 IBV_QPS_SQD, IBV_QPS_ERR };
	struct rig *r = *state;
	size_t f, to;
	int t;

	for (t = 0; t < 3; t++)
		for (f = 0; f < 6; f++)
			for (to = 0; to < 8; to++) {
				enum ibv_qp_state ts = (enum ibv_qp_state)to;
				struct u4v_qp *qp;
				int m, masks[3];

				if (ts == IBV_QPS_RESET || ts == IBV_QPS_ERR ||
				    find(all[f], ts))
					continue;
				/* SQE / UNKNOWN as targets, everything else */
				qp = qp_in(r, t, all[f]);
				masks[0] = 0;
				masks[1] = find(IBV_QPS_RESET,
						IBV_QPS_INIT)->req[t];
				masks[2] = find(IBV_QPS_RTR,
						IBV_QPS_RTS)->req[t];
				for (m = 0; m < 3; m++)
					if (modify(r, qp, t, ts, masks[m]) !=
					    EINVAL)
						fail_msg("qpt %d %d->%zu mask "
							 "0x%x accepted",
							 qpts[t], all[f], to,
							 masks[m]);
				check_state(qp, all[f]);
				assert_int_equal(u4v_destroy_qp(qp), 0);
			}
}

static void test_bad_values(void **state)
{
	struct rig *r = *state;
	struct ibv_qp_attr a;
	struct u4v_qp *qp;
	int mask;

#define TRY(qp_, t_, to_, mask_, field_, val_)                                \
	do {                                                                  \
		full_attr(r, t_, &a, to_);                                    \
		a.field_ = val_;                                              \
		if (u4v_modify_qp(qp_, &a, (mask_) | IBV_QP_STATE) != EINVAL)  \
			fail_msg("%s = %ld accepted", #field_, (long)(val_)); \
	} while (0)

	qp = qp_in(r, RC, IBV_QPS_RESET);
	mask = find(IBV_QPS_RESET, IBV_QPS_INIT)->req[RC];
	TRY(qp, RC, IBV_QPS_INIT, mask, port_num, 2);
	TRY(qp, RC, IBV_QPS_INIT, mask, port_num, 0);
	TRY(qp, RC, IBV_QPS_INIT, mask, pkey_index, 1);
	TRY(qp, RC, IBV_QPS_INIT, mask, qp_access_flags, 1 << 20);
	assert_int_equal(modify(r, qp, RC, IBV_QPS_INIT, mask), 0);
	mask = find(IBV_QPS_INIT, IBV_QPS_RTR)->req[RC];
	TRY(qp, RC, IBV_QPS_RTR, mask, path_mtu, 0);
	TRY(qp, RC, IBV_QPS_RTR, mask, path_mtu, 6);
	TRY(qp, RC, IBV_QPS_RTR, mask, max_dest_rd_atomic, 17);
	TRY(qp, RC, IBV_QPS_RTR, mask, min_rnr_timer, 32);
	TRY(qp, RC, IBV_QPS_RTR, mask, dest_qp_num, 0x1000000);
	TRY(qp, RC, IBV_QPS_RTR, mask, dest_qp_num, 0);
	TRY(qp, RC, IBV_QPS_RTR, mask, ah_attr.port_num, 2);
	check_state(qp, IBV_QPS_INIT);
	assert_int_equal(modify(r, qp, RC, IBV_QPS_RTR, mask), 0);
	mask = find(IBV_QPS_RTR, IBV_QPS_RTS)->req[RC];
	TRY(qp, RC, IBV_QPS_RTS, mask, timeout, 32);
	TRY(qp, RC, IBV_QPS_RTS, mask, retry_cnt, 8);
	TRY(qp, RC, IBV_QPS_RTS, mask, rnr_retry, 8);
	TRY(qp, RC, IBV_QPS_RTS, mask, max_rd_atomic, 17);
	check_state(qp, IBV_QPS_RTR);
	assert_int_equal(modify(r, qp, RC, IBV_QPS_RTS, mask), 0);
	/* a wrong IBV_QP_CUR_STATE */
	full_attr(r, RC, &a, IBV_QPS_RTS);
	a.cur_qp_state = IBV_QPS_INIT;
	assert_int_equal(u4v_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE),
			 EINVAL);
	a.cur_qp_state = IBV_QPS_RTS;
	assert_int_equal(u4v_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE),
			 0);
	/* a state that does not exist */
	full_attr(r, RC, &a, (enum ibv_qp_state)42);
	assert_int_equal(u4v_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	check_state(qp, IBV_QPS_RTS);
	assert_int_equal(u4v_destroy_qp(qp), 0);
#undef TRY
}

static void test_query_reflects_attributes(void **state)
{
	struct rig *r = *state;
	struct u4v_qp *qp = qp_in(r, RC, IBV_QPS_RTS);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	assert_int_equal(u4v_query_qp(qp, &a, -1, &init), 0);
	assert_int_equal(a.qp_state, IBV_QPS_RTS);
	assert_int_equal(a.path_mtu, IBV_MTU_4096);
	assert_int_equal(a.dest_qp_num, u4v_qp_num(r->peer[RC]));
	assert_int_equal(a.sq_psn, 0x10);
	assert_int_equal(a.rq_psn, 0x10);
	assert_int_equal(a.timeout, 14);
	assert_int_equal(a.retry_cnt, 7);
	assert_int_equal(a.rnr_retry, 7);
	assert_int_equal(a.min_rnr_timer, 3);
	assert_int_equal(a.max_rd_atomic, 4);
	assert_int_equal(a.max_dest_rd_atomic, 4);
	assert_int_equal(a.qp_access_flags, U4VT_ACCESS_ALL);
	assert_int_equal(a.port_num, 1);
	assert_int_equal(init.qp_type, IBV_QPT_RC);
	assert_int_equal(init.cap.max_send_wr, 16);
	assert_int_equal(u4v_destroy_qp(qp), 0);
}

/* ---- flushing ----------------------------------------------------------- */

static void expect_flushed(struct u4v_cq *cq, uint32_t qpn,
			   const uint64_t *ids, int n)
{
	struct ibv_wc wc[32];
	int i, j;

	assert_int_equal(u4vt_poll(cq, wc, n, 2000), n);
	for (i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].qp_num, qpn);
		for (j = 0; j < n && ids[j] != wc[i].wr_id; j++)
			;
		if (j == n)
			fail_msg("unexpected wr_id %llu",
				 (unsigned long long)wc[i].wr_id);
	}
	assert_int_equal(u4vt_poll(cq, wc, 1, 30), 0);
}

static void test_err_flushes(void **state)
{
	static const enum ibv_qp_state from[] = { IBV_QPS_INIT, IBV_QPS_RTR,
						  IBV_QPS_RTS, IBV_QPS_SQD };
	struct rig *r = *state;
	static uint8_t buf[4096];
	struct u4v_mr *mr = u4vt_reg(&r->p.a, buf, sizeof(buf), U4VT_ACCESS_ALL);
	uint32_t lk = u4v_mr_lkey(mr);
	size_t i;
	int t;

	for (t = 0; t < 3; t++)
		for (i = 0; i < 4; i++) {
			struct u4v_qp *qp = qp_in(r, t, from[i]);
			uint64_t ids[8] = { 1, 2, 3 };
			int n = 3;

			assert_int_equal(u4vt_post_recv1(qp, 1, (uintptr_t)buf,
							 64, lk),
					 0);
			assert_int_equal(u4vt_post_recv1(qp, 2, 0, 0, 0), 0);
			assert_int_equal(u4vt_post_recv1(qp, 3,
							 (uintptr_t)buf + 64,
							 64, lk),
					 0);
			if (from[i] == IBV_QPS_SQD && t != UD) {
				/* SQD holds sends: they are flushed too,
				 * signaled or not */
				assert_int_equal(
					u4vt_post_send1(qp, IBV_WR_RDMA_WRITE,
							4, IBV_SEND_SIGNALED,
							(uintptr_t)buf, 8, lk,
							0, 0, 0),
					0);
				assert_int_equal(
					u4vt_post_send1(qp, IBV_WR_RDMA_WRITE,
							5, 0, (uintptr_t)buf,
							8, lk, 0, 0, 0),
					0);
				ids[3] = 4;
				ids[4] = 5;
				n = 5;
			}
			assert_int_equal(modify(r, qp, t, IBV_QPS_ERR, 0), 0);
			expect_flushed(r->p.a.cq, u4v_qp_num(qp), ids, n);
			/* posting to an ERR QP: accepted and flushed */
			assert_int_equal(u4vt_post_recv1(qp, 6, (uintptr_t)buf,
							 64, lk),
					 0);
			ids[0] = 6;
			expect_flushed(r->p.a.cq, u4v_qp_num(qp), ids, 1);
			assert_int_equal(u4vt_post_send1(qp, IBV_WR_SEND, 7, 0,
							 (uintptr_t)buf, 8, lk,
							 0, 0, 0),
					 t == UD ? EINVAL : 0);
			if (t != UD) {
				ids[0] = 7;
				expect_flushed(r->p.a.cq, u4v_qp_num(qp), ids,
					       1);
			}
			/* → RESET: nothing more completes */
			assert_int_equal(modify(r, qp, t, IBV_QPS_RESET, 0), 0);
			assert_int_equal(u4vt_poll(r->p.a.cq,
						   (struct ibv_wc[1]){ 0 }, 1,
						   30),
					 0);
			assert_int_equal(u4v_destroy_qp(qp), 0);
		}
	assert_int_equal(u4v_dereg_mr(mr), 0);
}

static void test_post_in_wrong_state(void **state)
{
	/* receives may be posted from INIT on; sends from RTS */
	static const struct {
		enum ibv_qp_state s;
		int recv, send;
	} at[] = {
	    {IBV_QPS_RESET, EINVAL, EINVAL},
	    {IBV_QPS_INIT, 0, EINVAL},
	    {IBV_QPS_RTR, 0, EINVAL},
	};
	struct rig *r = *state;
	static uint8_t buf[64];
	struct u4v_mr *mr = u4vt_reg(&r->p.a, buf, sizeof(buf), U4VT_ACCESS_ALL);
	uint32_t lk = u4v_mr_lkey(mr);
	size_t i;
	int t;

	for (t = 0; t < 2; t++) {
		struct u4v_qp *qp = qp_in(r, t, IBV_QPS_RESET);

		errno = 0;
		for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
			if (i)
				assert_int_equal(
				    modify(r, qp, t, at[i].s,
					   find(at[i - 1].s, at[i].s)->req[t]),
				    0);
			assert_int_equal(
			    u4vt_post_recv1(qp, 1, (uintptr_t)buf, 8, lk),
			    at[i].recv);
			assert_int_equal(u4vt_post_send1(qp, IBV_WR_SEND, 1, 0,
							 (uintptr_t)buf, 8, lk,
							 0, 0, 0),
					 at[i].send);
		}
		assert_int_equal(errno, 0);
		assert_int_equal(u4v_destroy_qp(qp), 0);
	}
	assert_int_equal(u4v_dereg_mr(mr), 0);
}

/* RESET then reconnect: old receives are gone, new ones are used. */
static void test_reset_clears_and_reconnects(void **state)
{
	struct rig *r = *state;
	static uint8_t sbuf[64], rbuf[64];
	struct u4vt_qp_opts o = r->p.o;
	struct u4v_qp *qa, *qb;
	struct u4v_mr *ms, *md;
	struct ibv_wc wc;

	ms = u4vt_reg(&r->p.a, sbuf, 64, U4VT_ACCESS_ALL);
	md = u4vt_reg(&r->p.b, rbuf, 64, U4VT_ACCESS_ALL);
	u4vt_qp_pair(&r->p.a, &r->p.b, IBV_QPT_RC, &o, &qa, &qb);
	assert_int_equal(u4vt_post_recv1(qb, 100, (uintptr_t)rbuf, 64,
					 u4v_mr_lkey(md)),
			 0);
	assert_int_equal(u4vt_post_recv1(qb, 101, (uintptr_t)rbuf, 64,
					 u4v_mr_lkey(md)),
			 0);
	/* reset both; the two receives vanish without completions */
	assert_int_equal(modify(r, qa, RC, IBV_QPS_RESET, 0), 0);
	assert_int_equal(modify(r, qb, RC, IBV_QPS_RESET, 0), 0);
	assert_int_equal(u4vt_poll(r->p.b.cq, &wc, 1, 30), 0);
	u4vt_qp_connect(qa, IBV_QPT_RC, u4v_qp_num(qb), &o);
	u4vt_qp_connect(qb, IBV_QPT_RC, u4v_qp_num(qa), &o);
	assert_int_equal(u4vt_post_recv1(qb, 200, (uintptr_t)rbuf, 64,
					 u4v_mr_lkey(md)),
			 0);
	memset(sbuf, 0x77, 64);
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_SEND, 1, IBV_SEND_SIGNALED,
					 (uintptr_t)sbuf, 64, u4v_mr_lkey(ms),
					 0, 0, 0),
			 0);
	assert_int_equal(u4vt_poll(r->p.a.cq, &wc, 1, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(u4vt_poll(r->p.b.cq, &wc, 1, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 200);
	assert_memory_equal(rbuf, sbuf, 64);
	assert_int_equal(u4v_destroy_qp(qa), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
}

static int to_state(struct u4v_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return u4v_modify_qp(qp, &a, IBV_QP_STATE);
}

/*
 * RESET in the middle of an incoming multi-frame WRITE, then a new
 * connection: the responder must not remember the old message. The
 * responder's context has no progress thread, so the test decides exactly
 * how many frames it executes (one pass: at most 64 of the WRITE's 100).
 */
static void test_reset_mid_message(void **state)
{
	const char *shm = u4vt_shm_name("midreset");
	const uint32_t wlen = 100 * 4032, slen = 8000;
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb;
	uint8_t *src = u4vt_map(wlen), *dst = u4vt_map(wlen);
	struct u4v_mr *ms, *md;
	struct ibv_wc wc[4];
	uint64_t end;
	int i, n = 0;

	(void)state;
	u4vt_cable_create(shm, NULL);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open_ex(&b, shm, 1, -1, 1);
	u4vt_qp_opts_default(&o);
	u4vt_qp_pair(&a, &b, IBV_QPT_RC, &o, &qa, &qb);
	ms = u4vt_reg(&a, src, wlen, U4VT_ACCESS_ALL);
	md = u4vt_reg(&b, dst, wlen, U4VT_ACCESS_ALL);
	u4vt_fill(src, wlen, 1);
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_RDMA_WRITE, 1,
					 IBV_SEND_SIGNALED, (uintptr_t)src,
					 wlen, u4v_mr_lkey(ms),
					 (uintptr_t)dst, u4v_mr_rkey(md), 0),
			 0);
	usleep(10000);
	u4v_ctx_progress(b.ctx); /* part of the WRITE executes */
	assert_true(dst[0] == src[0] && dst[4032] == src[4032]);
	/* both sides down, old frames drained, both reset */
	assert_int_equal(to_state(qb, IBV_QPS_ERR), 0);
	assert_int_equal(to_state(qa, IBV_QPS_ERR), 0);
	for (i = 0; i < 20; i++) {
		u4v_ctx_progress(b.ctx);
		usleep(1000);
	}
	while (u4vt_poll(a.cq, wc, 4, 50) > 0)
		;
	while (u4vt_poll(b.cq, wc, 4, 50) > 0)
		;
	assert_int_equal(to_state(qa, IBV_QPS_RESET), 0);
	assert_int_equal(to_state(qb, IBV_QPS_RESET), 0);
	o.psn = 0x500000;
	u4vt_qp_connect(qa, IBV_QPT_RC, u4v_qp_num(qb), &o);
	u4vt_qp_connect(qb, IBV_QPT_RC, u4v_qp_num(qa), &o);
	/* a two-frame SEND on the new connection */
	memset(dst, 0, slen);
	assert_int_equal(u4vt_post_recv1(qb, 2, (uintptr_t)dst, slen,
					 u4v_mr_lkey(md)),
			 0);
	assert_int_equal(u4vt_post_send1(qa, IBV_WR_SEND, 3, IBV_SEND_SIGNALED,
					 (uintptr_t)src, slen, u4v_mr_lkey(ms),
					 0, 0, 0),
			 0);
	end = u4vt_now_ms() + 10000;
	while (!n && u4vt_now_ms() < end) {
		u4v_ctx_progress(b.ctx);
		n = u4v_poll_cq(a.cq, 1, wc);
	}
	assert_int_equal(n, 1);
	assert_int_equal(wc[0].wr_id, 3);
	if (wc[0].status != IBV_WC_SUCCESS)
		fail_msg("SEND after RESET mid-WRITE: status %d, want 0",
			 wc[0].status);
	assert_int_equal(u4vt_poll(b.cq, wc, 1, 5000), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, 2);
	assert_memory_equal(dst, src, slen);
	assert_int_equal(u4v_destroy_qp(qa), 0);
	assert_int_equal(u4v_destroy_qp(qb), 0);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	u4vt_end_close(&a);
	u4vt_end_close(&b);
	u4l_sim_destroy(shm);
	u4vt_unmap(src, wlen);
	u4vt_unmap(dst, wlen);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, rig_setup, rig_teardown)
	const struct CMUnitTest tests[] = {
		T(test_legal_transitions),
		T(test_to_reset_and_err_from_anywhere),
		T(test_missing_required),
		T(test_forbidden_attribute),
		T(test_ud_path_mtu_refused),
		T(test_illegal_transitions),
		T(test_bad_values),
		T(test_query_reflects_attributes),
		T(test_err_flushes),
		T(test_post_in_wrong_state),
		T(test_reset_clears_and_reconnects),
		cmocka_unit_test(test_reset_mid_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
