// SPDX-License-Identifier: MIT
/*
 * Field-report defect 1: a frame that completes without waking the receiver
 * froze the run for good. Here the target never polls on its own: it sleeps
 * until its CQ's event callback fires (run by the progress thread), so a
 * stranded frame is found only if the engine polls on a timer. Every request
 * must be delivered and answered within a bound, and every stranded frame
 * must be counted as rescued.
 */
#include <errno.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "u4vt_rel.h"

#define MSG 256u
#define PER_MSG_BOUND_MS 1000

static sem_t ev;

static void on_event(struct u4v_cq *cq, void *arg)
{
	(void)cq;
	(void)arg;
	sem_post(&ev);
}

/* Forget stale events, then ask for one at the next completion. */
static void arm(struct u4v_cq *cq)
{
	while (!sem_trywait(&ev))
		;
	assert_int_equal(u4v_req_notify_cq(cq, 0), 0);
}

/*
 * Sleep until the CQ's event fires - no polling meanwhile, since a poll
 * would drive progress itself - then take the completion.
 */
static int wait_event_driven(struct u4v_cq *cq, struct ibv_wc *wc, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	for (;;) {
		if (!sem_timedwait(&ev, &ts))
			break;
		if (errno != EINTR)
			return 0;
	}
	return u4v_poll_cq(cq, 1, wc);
}

/* A requester a and an event-driven target b with their buffers. */
struct pp {
	struct u4vt_pair p;
	struct u4v_mr *ma, *mb;
	uint8_t *abuf, *bbuf;
	const char *tag;
};

/* The target takes request i (woken by the engine only) and answers it. */
static void pp_target(struct pp *x, uint32_t i)
{
	struct ibv_wc wc;
	struct tr_hdr h;

	if (wait_event_driven(x->p.b.cq, &wc, PER_MSG_BOUND_MS) != 1)
		fail_msg("%s: request %u never delivered (frozen)", x->tag, i);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(tr_check(x->bbuf, wc.byte_len, 0, &h), 0);
	assert_int_equal(h.rcv_idx, i);
	assert_int_equal(
	    rel_post_recv(x->p.qb, 0, x->bbuf, MSG, u4v_mr_lkey(x->mb)), 0);
	memcpy(x->bbuf + 2 * MSG, x->bbuf, MSG); /* reply with the same */
	arm(x->p.b.cq);
	assert_int_equal(rel_post(x->p.qb, IBV_WR_SEND, i, x->bbuf + 2 * MSG,
				  MSG, u4v_mr_lkey(x->mb), 0, 0),
			 0);
}

/* The initiator's send completion and the reply, in either order. */
static void pp_initiator(struct pp *x, uint32_t i)
{
	int got_send = 0, got_recv = 0;
	struct ibv_wc wc;

	while (got_send + got_recv < 2) {
		if (u4vt_poll(x->p.a.cq, &wc, 1, PER_MSG_BOUND_MS) != 1)
			fail_msg("%s: round %u: no reply", x->tag, i);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (wc.opcode != IBV_WC_RECV) {
			got_send++;
			continue;
		}
		got_recv++;
		assert_memory_equal(x->abuf + MSG, x->abuf, MSG);
		assert_int_equal(rel_post_recv(x->p.qa, 0, x->abuf + MSG, MSG,
					       u4v_mr_lkey(x->ma)),
				 0);
	}
}

/* Round trip i; how long it took. */
static uint64_t pp_round(struct pp *x, uint32_t i)
{
	uint64_t ts = u4vt_now_ms();
	struct ibv_wc wc;

	tr_make(x->abuf, MSG, 0, i, i, 1);
	arm(x->p.b.cq);
	assert_int_equal(rel_post(x->p.qa, IBV_WR_SEND, i, x->abuf, MSG,
				  u4v_mr_lkey(x->ma), 0, 0),
			 0);
	pp_target(x, i);
	pp_initiator(x, i);
	/* the target's send completion */
	if (wait_event_driven(x->p.b.cq, &wc, PER_MSG_BOUND_MS) != 1)
		fail_msg("%s: round %u: reply never completed", x->tag, i);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	return u4vt_now_ms() - ts;
}

static void ping_pong(double stranded, uint32_t rounds, const char *tag)
{
	struct u4l_sim_config cfg;
	struct u4l_counters c;
	struct pp x = {.tag = tag};
	uint64_t t0 = u4vt_now_ms(), worst = 0;
	struct ibv_wc wc;
	uint32_t i;

	x.abuf = calloc(4, MSG);
	x.bbuf = calloc(4, MSG);
	u4vt_cable_config(&cfg);
	cfg.seed = 280;
	cfg.faults[0].stranded = stranded; /* requests */
	cfg.faults[1].stranded = stranded; /* replies and ACKs */
	u4vt_pair_up(&x.p, tag, IBV_QPT_RC, &cfg, NULL, 0);
	u4v_cq_set_event_fn(x.p.b.cq, on_event, NULL);
	x.ma = rel_reg(x.p.a.pd, x.abuf, 4 * MSG, IBV_ACCESS_LOCAL_WRITE);
	x.mb = rel_reg(x.p.b.pd, x.bbuf, 4 * MSG, IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(
	    rel_post_recv(x.p.qb, 0, x.bbuf, MSG, u4v_mr_lkey(x.mb)), 0);
	assert_int_equal(
	    rel_post_recv(x.p.qa, 0, x.abuf + MSG, MSG, u4v_mr_lkey(x.ma)), 0);
	for (i = 0; i < rounds; i++) {
		uint64_t took = pp_round(&x, i);

		if (took > worst)
			worst = took;
	}
	/* let frames still on the wire (last ACKs) be taken */
	assert_int_equal(u4vt_poll(x.p.a.cq, &wc, 1, 50), 0);
	assert_int_equal(u4vt_poll(x.p.b.cq, &wc, 1, 50), 0);
	rel_counters(x.p.shm, &c);
	rel_print_counters(tag, &c);
	fprintf(stderr, "[%s] %u round trips in %.2f s, worst %llu ms\n", tag,
		rounds, (u4vt_now_ms() - t0) / 1000.0,
		(unsigned long long)worst);
	assert_true(c.fault_stranded > 0);
	assert_int_equal(c.stranded_rescues, c.fault_stranded);
	assert_int_equal(u4v_qp_state(x.p.qa), IBV_QPS_RTS);
	assert_int_equal(u4v_qp_state(x.p.qb), IBV_QPS_RTS);
	u4v_cq_set_event_fn(x.p.b.cq, NULL, NULL);
	assert_int_equal(u4v_dereg_mr(x.ma), 0);
	assert_int_equal(u4v_dereg_mr(x.mb), 0);
	u4vt_pair_down(&x.p);
	free(x.abuf);
	free(x.bbuf);
}

/* The field report's rate: one frame in 280 completes without a wakeup. */
static void test_stranded_1_in_280(void **state)
{
	(void)state;
	ping_pong(1.0 / 280, 3000, "s280");
}

/* Every frame stranded: only the timer poll finds anything. */
static void test_stranded_all(void **state)
{
	(void)state;
	ping_pong(1.0, 200, "sall");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stranded_1_in_280),
		cmocka_unit_test(test_stranded_all),
	};

	sem_init(&ev, 0, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
