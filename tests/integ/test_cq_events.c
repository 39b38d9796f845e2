// SPDX-License-Identifier: MIT
/*
 * Completion events the way ibv_*_pingpong -e uses them: arm, poll once,
 * block until the event; a ping-pong on RC, UC and UD never loses a
 * wake-up, and solicited-only arming fires only for solicited messages.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "testlib.h"

#define ITERS 300
#define SIZE 4096u

struct side {
	struct u4vt_end e;
	struct u4v_qp *qp;
	struct u4v_mr *mr;
	struct u4v_ah *ah;
	uint8_t buf[2 * SIZE + 64];
	sem_t events;
	uint32_t remote_qpn;
	enum ibv_qp_type type;
	bool initiator;
	int failed;
};

static void on_event(struct u4v_cq *cq, void *arg)
{
	struct side *s = arg;

	(void)cq;
	sem_post(&s->events);
}

static void post_recv(struct side *s)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + SIZE, SIZE + 64,
			       u4v_mr_lkey(s->mr) };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	assert_int_equal(u4v_post_recv(s->qp, &wr, &bad), 0);
}

static void post_send(struct side *s)
{
	struct ibv_sge sge = { (uintptr_t)s->buf, SIZE, u4v_mr_lkey(s->mr) };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	if (s->type == IBV_QPT_UD) {
		wr.wr.ud.ah = &s->ah->ibv;
		wr.wr.ud.remote_qpn = s->remote_qpn;
		wr.wr.ud.remote_qkey = 0x11111111;
		sge.length = SIZE - 64;
	}
	assert_int_equal(u4v_post_send(s->qp, &wr, &bad), 0);
}

/* Wait for the event with a bound; false on timeout (a lost wake-up). */
static bool wait_event(struct side *s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	while (sem_timedwait(&s->events, &ts))
		if (errno != EINTR)
			return false;
	return true;
}

static void *pingpong(void *arg)
{
	struct side *s = arg;
	int sends = 0, recvs = 0, i;

	for (i = 0; i < 16; i++)
		post_recv(s);
	if (s->initiator)
		post_send(s);
	while (recvs < ITERS || (s->initiator && sends < ITERS)) {
		struct ibv_wc wc[2];
		int n, k;

		if (!wait_event(s)) {
			struct ibv_wc w[4];

			s->failed = 1;
			fprintf(stderr, "%s: no event after sends %d recvs %d; "
				"CQ holds %d\n", s->initiator ? "a" : "b",
				sends, recvs, u4v_poll_cq(s->e.cq, 4, w));
			return NULL;
		}
		u4v_req_notify_cq(s->e.cq, 0);
		n = u4v_poll_cq(s->e.cq, 2, wc);
		for (k = 0; k < n; k++) {
			if (wc[k].status) {
				s->failed = 2;
				return NULL;
			}
			if (wc[k].opcode == IBV_WC_SEND) {
				sends++;
				continue;
			}
			recvs++;
			post_recv(s);
			if (!s->initiator || recvs < ITERS)
				post_send(s);
		}
	}
	return NULL;
}

static void run(enum ibv_qp_type type, const char *tag)
{
	const char *shm = u4vt_shm_name(tag);
	struct side *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct side *s[2] = { a, b };
	struct u4vt_qp_opts o;
	pthread_t th[2];
	int i;

	u4vt_cable_create(shm, NULL);
	u4vt_qp_opts_default(&o);
	for (i = 0; i < 2; i++) {
		u4vt_end_open(&s[i]->e, shm, (uint32_t)i);
		sem_init(&s[i]->events, 0, 0);
		u4v_cq_set_event_fn(s[i]->e.cq, on_event, s[i]);
		/* armed before anything can arrive, as the pingpongs do */
		u4v_req_notify_cq(s[i]->e.cq, 0);
		s[i]->qp = u4vt_qp_create(&s[i]->e, type, &o);
		s[i]->type = type;
		assert_int_equal(u4v_reg_mr(s[i]->e.pd, s[i]->buf,
					    sizeof(s[i]->buf),
					    IBV_ACCESS_LOCAL_WRITE, &s[i]->mr),
				 0);
		s[i]->ah = u4vt_ah(s[i]->e.pd);
	}
	a->initiator = true;
	a->remote_qpn = u4v_qp_num(b->qp);
	b->remote_qpn = u4v_qp_num(a->qp);
	u4vt_qp_connect(a->qp, type, a->remote_qpn, &o);
	u4vt_qp_connect(b->qp, type, b->remote_qpn, &o);
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, pingpong, s[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(a->failed, 0);
	assert_int_equal(b->failed, 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(u4v_destroy_qp(s[i]->qp), 0);
		assert_int_equal(u4v_destroy_ah(s[i]->ah), 0);
		assert_int_equal(u4v_dereg_mr(s[i]->mr), 0);
		u4vt_end_close(&s[i]->e);
		sem_destroy(&s[i]->events);
	}
	u4l_sim_destroy(shm);
	free(a);
	free(b);
}

static void test_events_rc(void **state)
{
	(void)state;
	run(IBV_QPT_RC, "evrc");
}

static void test_events_uc(void **state)
{
	(void)state;
	run(IBV_QPT_UC, "evuc");
}

static void test_events_ud(void **state)
{
	(void)state;
	run(IBV_QPT_UD, "evud");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events_rc),
		cmocka_unit_test(test_events_uc),
		cmocka_unit_test(test_events_ud),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
