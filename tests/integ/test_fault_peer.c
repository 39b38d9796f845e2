// SPDX-License-Identifier: MIT
/*
 * Fault matrix, second half: a peer process killed mid-transfer (status 12
 * within the bound timeout/retry_cnt imply), RC SEND without a receive
 * (finite rnr_retry: status 13; rnr_retry 7: completes once a receive is
 * posted), UC with lost fragments (messages dropped whole, never partial),
 * UD with loss (datagrams intact or absent), UD to a context id that a
 * new context took over (the datagrams reach the new holder).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "u4vt_rel.h"

/* ---- peer killed mid-transfer ---------------------------------------- */

static pid_t child_pid = -1;

static void kill_child(void)
{
	if (child_pid > 0) {
		kill(child_pid, SIGKILL);
		waitpid(child_pid, NULL, 0);
		child_pid = -1;
	}
}

/* The target: receives forever until killed (alarm() as a backstop). */
static void child_main(const char *shm, int wfd, int rfd)
{
	struct u4vt_end b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qp;
	struct u4v_mr *mr;
	uint32_t qpn, remote = 0;
	uint8_t *buf;
	struct ibv_wc wc[16];
	int i, n;

	alarm(30);
	u4vt_end_open(&b, shm, 1);
	u4vt_qp_opts_default(&o);
	o.max_recv_wr = 64;
	qp = u4vt_qp_create(&b, IBV_QPT_RC, &o);
	qpn = u4v_qp_num(qp);
	if (write(wfd, &qpn, 4) != 4 || read(rfd, &remote, 4) != 4)
		_exit(2);
	u4vt_qp_connect(qp, IBV_QPT_RC, remote, &o);
	buf = malloc(64 * 65536);
	mr = rel_reg(b.pd, buf, 64 * 65536, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < 64; i++)
		rel_post_recv(qp, i, buf + (size_t)i * 65536, 65536,
			      u4v_mr_lkey(mr));
	for (;;) {
		n = u4v_poll_cq(b.cq, 16, wc);
		for (i = 0; i < n; i++)
			rel_post_recv(qp, wc[i].wr_id,
				      buf + (size_t)wc[i].wr_id * 65536, 65536,
				      u4v_mr_lkey(mr));
	}
}

/* The target in a process of its own; *rfd, *wfd: our ends of its pipes. */
static void spawn_target(const char *shm, int *rfd, int *wfd)
{
	int p2c[2], c2p[2];

	assert_int_equal(pipe(p2c), 0);
	assert_int_equal(pipe(c2p), 0);
	/* fork before any context exists: no progress threads yet */
	child_pid = fork();
	assert_true(child_pid >= 0);
	if (child_pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		child_main(shm, c2p[1], p2c[0]);
		_exit(0);
	}
	close(p2c[0]);
	close(c2p[1]);
	*rfd = c2p[0];
	*wfd = p2c[1];
}

struct kill_run {
	uint64_t ok;		    /* sends completed successfully */
	uint64_t t_kill;	    /* when the target was killed (ms) */
	uint64_t t_err;		    /* when the first error completed */
	int status;		    /* its status; -1: none within 20 s */
	struct u4l_counters before; /* the cable's, at the kill */
};

/* 64 KiB SENDs, 16 in flight; the target killed after 200; to the error. */
static void send_until_error(const char *shm, struct u4vt_end *a,
			     struct u4v_qp *qp, uint8_t *buf,
			     struct u4v_mr *mr, struct kill_run *run)
{
	uint64_t posted = 0, deadline = u4vt_now_ms() + 20000;

	run->status = -1;
	while (u4vt_now_ms() < deadline && run->status < 0) {
		struct ibv_wc wc[16];
		int i, n;

		/*
		 * Keep posting after the kill too: the peer may have acknowledged
		 * everything in flight just before it died, and those ACKs are
		 * still delivered.
		 */
		while (posted - run->ok < 16) {
			if (rel_post(qp, IBV_WR_SEND, posted, buf, 65536,
				     u4v_mr_lkey(mr), 0, 0))
				break;
			posted++;
		}
		if (!run->t_kill && run->ok >= 200) {
			rel_counters(shm, &run->before);
			kill_child();
			run->t_kill = u4vt_now_ms();
		}
		n = u4v_poll_cq(a->cq, 16, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_SUCCESS) {
				run->ok++;
			} else if (run->status < 0) {
				run->status = wc[i].status;
				run->t_err = u4vt_now_ms();
			}
		}
	}
}

static void test_peer_killed(void **state)
{
	const char *shm = u4vt_shm_name("kill");
	int rfd, wfd;
	struct u4vt_end a;
	struct u4vt_qp_opts o;
	struct u4v_qp *qp;
	struct u4v_mr *mr;
	struct u4l_counters after;
	struct kill_run run = {0};
	struct ibv_wc wc[16];
	uint32_t remote = 0, qpn;
	uint8_t *buf;
	uint64_t bound_ms;
	int n;

	(void)state;
	u4vt_cable_create(shm, NULL);
	spawn_target(shm, &rfd, &wfd);
	alarm(50);
	u4vt_end_open(&a, shm, 0);
	u4vt_qp_opts_default(&o);
	o.timeout = 12;	  /* 16.8 ms */
	o.retry_cnt = 3;
	o.max_send_wr = 16;
	qp = u4vt_qp_create(&a, IBV_QPT_RC, &o);
	qpn = u4v_qp_num(qp);
	if (read(rfd, &remote, 4) != 4 || write(wfd, &qpn, 4) != 4) {
		kill_child();
		fail_msg("qpn exchange with the child failed");
	}
	u4vt_qp_connect(qp, IBV_QPT_RC, remote, &o);
	buf = malloc(65536);
	u4vt_fill(buf, 65536, 3);
	mr = rel_reg(a.pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE);
	/* (retry_cnt + 1) timeouts, plus scheduling slack on a loaded host */
	bound_ms = (uint64_t)(o.retry_cnt + 1) * (4096ull << o.timeout) /
			   1000000 + 1500;
	send_until_error(shm, &a, qp, buf, mr, &run);
	kill_child();
	assert_true(run.t_kill != 0);
	fprintf(stderr, "[kill] %llu sends ok before the kill; status %d %llu ms "
		"after it (bound %llu ms)\n", (unsigned long long)run.ok,
		run.status, (unsigned long long)(run.t_err - run.t_kill),
		(unsigned long long)bound_ms);
	assert_int_equal(run.status, IBV_WC_RETRY_EXC_ERR);
	assert_true(run.t_err - run.t_kill <= bound_ms);
	assert_int_equal(u4v_qp_state(qp), IBV_QPS_ERR);
	/* the rest are flushed, nothing hangs */
	while ((n = u4vt_poll(a.cq, wc, 16, 200)) > 0)
		while (n--)
			assert_int_equal(wc[n].status, IBV_WC_WR_FLUSH_ERR);
	rel_counters(shm, &after);
	rel_print_counters("kill", &after);
	assert_true(after.retransmits - run.before.retransmits >= o.retry_cnt);
	assert_int_equal(u4v_destroy_qp(qp), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	u4vt_end_close(&a);
	u4l_sim_destroy(shm);
	free(buf);
	alarm(0);
}

/* ---- RNR --------------------------------------------------------------- */

static void test_rnr_finite(void **state)
{
	struct u4vt_pair p;
	struct u4vt_qp_opts o;
	struct u4l_counters c;
	struct u4v_mr *mr;
	struct ibv_wc wc;
	char buf[256];
	uint64_t t0, dt;

	(void)state;
	u4vt_qp_opts_default(&o);
	o.rnr_retry = 2;
	o.min_rnr_timer = 14; /* 1.28 ms per RNR wait */
	o.timeout = 12;
	u4vt_pair_up(&p, "rnr3", IBV_QPT_RC, NULL, &o, 0);
	mr = rel_reg(p.a.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	t0 = u4vt_now_ms();
	assert_int_equal(rel_post(p.qa, IBV_WR_SEND, 1, buf, sizeof(buf),
				  u4v_mr_lkey(mr), 0, 0), 0);
	wc = rel_wait1(p.a.cq, 5000);
	dt = u4vt_now_ms() - t0;
	fprintf(stderr, "[rnr] status %d after %llu ms\n", wc.status,
		(unsigned long long)dt);
	/* 13, not 12: the peer answered, it had no receive */
	assert_int_equal(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(wc.wr_id, 1);
	assert_true(dt < 1000);
	rel_counters(p.shm, &c);
	assert_int_equal(c.rnr_naks_rcvd, o.rnr_retry + 1);
	assert_true(c.rnr_naks_sent >= c.rnr_naks_rcvd);
	/* the responder is untouched: still RTS, nothing completed there */
	assert_int_equal(u4v_qp_state(p.qb), IBV_QPS_RTS);
	assert_int_equal(u4vt_poll(p.b.cq, &wc, 1, 50), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	u4vt_pair_down(&p);
}

/* An RC pair whose requester retries RNR forever (rnr_retry 7), quickly. */
static void rnr_forever_pair_up(struct u4vt_pair *p, const char *tag)
{
	struct u4vt_qp_opts o;

	u4vt_qp_opts_default(&o);
	o.rnr_retry = 7;
	o.min_rnr_timer = 1;
	u4vt_pair_up(p, tag, IBV_QPT_RC, NULL, &o, 0);
}

static void test_rnr_infinite(void **state)
{
	struct u4vt_pair p;
	struct u4l_counters c;
	struct u4v_mr *ma, *mb;
	struct ibv_wc wc;
	static uint8_t src[10000], dst[10000];

	(void)state;
	rnr_forever_pair_up(&p, "rnr7");
	ma = rel_reg(p.a.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	mb = rel_reg(p.b.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	u4vt_fill(src, sizeof(src), 9);
	assert_int_equal(rel_post(p.qa, IBV_WR_SEND, 1, src, sizeof(src),
				  u4v_mr_lkey(ma), 0, 0), 0);
	/* 300 ms without a receive: no completion, no error, RNR NAKs flow */
	assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 300), 0);
	rel_counters(p.shm, &c);
	assert_true(c.rnr_naks_rcvd > 7);
	assert_int_equal(u4v_qp_state(p.qa), IBV_QPS_RTS);
	assert_int_equal(rel_post_recv(p.qb, 2, dst, sizeof(dst),
				       u4v_mr_lkey(mb)), 0);
	wc = rel_wait1(p.a.cq, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	wc = rel_wait1(p.b.cq, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, sizeof(src));
	assert_memory_equal(src, dst, sizeof(src));
	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	u4vt_pair_down(&p);
}

/*
 * RDMA WRITE with immediate into a QP without a receive: RNR NAKs, then the
 * same frame again once a receive is posted. A one-frame message (first and
 * last at once) must not be taken for a second message starting inside the
 * first, and the data lands once.
 */
static void test_rnr_write_imm(void **state)
{
	static const uint32_t sizes[] = { 0, 100, 10000 };
	static uint8_t src[10000], dst[10000];
	struct u4vt_pair p;
	struct u4v_mr *ma, *mb;
	struct ibv_wc wc;
	size_t i;

	(void)state;
	rnr_forever_pair_up(&p, "rnrimm");
	ma = rel_reg(p.a.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	mb = rel_reg(p.b.pd, dst, sizeof(dst),
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ibv_sge s = { (uintptr_t)src, sizes[i],
				     u4v_mr_lkey(ma) };
		struct ibv_send_wr wr, *bad;

		u4vt_fill(src, sizeof(src), i + 1);
		memset(dst, 0, sizeof(dst));
		rel_wr(&wr, &s, i, IBV_WR_RDMA_WRITE_WITH_IMM);
		wr.num_sge = sizes[i] ? 1 : 0;
		wr.imm_data = 0x1000 + (uint32_t)i;
		wr.wr.rdma.remote_addr = (uintptr_t)dst;
		wr.wr.rdma.rkey = u4v_mr_rkey(mb);
		assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
		/* RNR NAKs for a while: nothing completes, nothing fails */
		assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 50), 0);
		assert_int_equal(rel_post_recv(p.qb, 100 + i, NULL, 0, 0), 0);
		wc = rel_wait1(p.a.cq, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		wc = rel_wait1(p.b.cq, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.imm_data, 0x1000 + i);
		assert_int_equal(wc.byte_len, sizes[i]);
		assert_memory_equal(src, dst, sizes[i]);
	}
	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	u4vt_pair_down(&p);
}

/* ---- UC / UD loss ------------------------------------------------------ */

#define LOSS_RQ 64
#define LOSS_MAX 12032u

struct loss_run {
	struct u4vt_pair p;
	struct u4v_mr *ms, *mr;
	struct u4v_ah *ah;
	uint8_t *src, *rbuf;
	uint32_t next_idx, expect;
	uint64_t sent, got, lost, bad;
	uint32_t offset; /* 40 for UD: the GRH */
};

static void loss_recv(struct loss_run *l, const struct ibv_wc *wc)
{
	uint8_t *m = l->rbuf + (size_t)wc->wr_id * (LOSS_MAX + 64);
	struct tr_hdr h;

	if (wc->status || wc->byte_len < l->offset ||
	    tr_check(m + l->offset, wc->byte_len - l->offset, 0, &h)) {
		fprintf(stderr, "bad completion: status %d len %u\n",
			wc->status, wc->byte_len);
		l->bad++;
	} else if ((int32_t)(h.rcv_idx - l->expect) < 0) {
		l->bad++; /* duplicate or reordered */
	} else {
		l->lost += h.rcv_idx - l->expect;
		l->expect = h.rcv_idx + 1;
		l->got++;
	}
	assert_int_equal(rel_post_recv(l->p.qb, wc->wr_id, m, LOSS_MAX + 64,
				       u4v_mr_lkey(l->mr)), 0);
}

/* Send n messages in bursts of 16, waiting each time for the target. */
static void loss_send(struct loss_run *l, uint32_t n, uint32_t len_a,
		      uint32_t len_b)
{
	struct ibv_wc wc[16];
	uint32_t i, k;

	for (i = 0; i < n; i += 16) {
		for (k = 0; k < 16 && i + k < n; k++) {
			uint32_t len = (i + k) & 1 ? len_b : len_a;
			uint8_t *s = l->src + (size_t)k * LOSS_MAX;
			struct ibv_sge sge = { (uintptr_t)s, len,
					       u4v_mr_lkey(l->ms) };
			struct ibv_send_wr wr = { 0 }, *bad;

			tr_make(s, len, 0, l->next_idx, l->next_idx, 5);
			l->next_idx++;
			wr.wr_id = l->sent++;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (l->ah) {
				wr.wr.ud.ah = &l->ah->ibv;
				wr.wr.ud.remote_qpn = u4v_qp_num(l->p.qb);
				wr.wr.ud.remote_qkey = 0x11111111;
			}
			assert_int_equal(u4v_post_send(l->p.qa, &wr, &bad), 0);
		}
		/* sender completions: UC/UD complete at once, all successful */
		for (k = 0; k < 16 && i + k < n; k++) {
			struct ibv_wc s = rel_wait1(l->p.a.cq, 5000);

			assert_int_equal(s.status, IBV_WC_SUCCESS);
		}
		/* target: whatever arrives within 30 ms of quiet */
		for (;;) {
			int got = u4vt_poll(l->p.b.cq, wc, 16, 30), j;

			for (j = 0; j < got; j++)
				loss_recv(l, &wc[j]);
			if (!got)
				break;
		}
	}
}

static void loss_test(enum ibv_qp_type type, const char *tag, uint32_t len_a,
		      uint32_t len_b)
{
	struct loss_run l;
	struct u4l_sim_config cfg;
	struct u4l_counters c;
	struct u4vt_qp_opts o;
	uint64_t lost1;
	uint32_t i;

	memset(&l, 0, sizeof(l));
	u4vt_cable_config(&cfg);
	cfg.seed = 31;
	cfg.faults[0].drop = 0.05;
	u4vt_qp_opts_default(&o);
	o.max_recv_wr = LOSS_RQ;
	u4vt_pair_up(&l.p, tag, type, &cfg, &o, 0);
	l.offset = type == IBV_QPT_UD ? 40 : 0;
	l.src = malloc(16 * LOSS_MAX);
	l.rbuf = malloc((size_t)LOSS_RQ * (LOSS_MAX + 64));
	l.ms = rel_reg(l.p.a.pd, l.src, 16 * LOSS_MAX, IBV_ACCESS_LOCAL_WRITE);
	l.mr = rel_reg(l.p.b.pd, l.rbuf, (size_t)LOSS_RQ * (LOSS_MAX + 64),
		       IBV_ACCESS_LOCAL_WRITE);
	if (type == IBV_QPT_UD) {

		l.ah = u4vt_ah(l.p.a.pd);
	}
	for (i = 0; i < LOSS_RQ; i++)
		assert_int_equal(rel_post_recv(l.p.qb, i,
					       l.rbuf + (size_t)i *
							(LOSS_MAX + 64),
					       LOSS_MAX + 64,
					       u4v_mr_lkey(l.mr)), 0);
	loss_send(&l, 480, len_a, len_b);
	rel_counters(l.p.shm, &c);
	rel_print_counters(tag, &c);
	fprintf(stderr, "[%s] lossy: sent %llu got %llu lost %llu bad %llu\n",
		tag, (unsigned long long)l.sent, (unsigned long long)l.got,
		(unsigned long long)l.lost, (unsigned long long)l.bad);
	assert_int_equal(l.bad, 0);
	assert_true(c.fault_drop > 0);
	assert_true(l.lost > 0);
	/* a message with a lost frame is gone, nothing else */
	assert_true(l.lost <= c.fault_drop);
	assert_int_equal(l.got + l.lost + (l.next_idx - l.expect), l.sent);
	/* later messages are fine once the path is clean */
	cfg.faults[0].drop = 0;
	assert_int_equal(u4l_sim_reconfigure(l.p.shm, &cfg), 0);
	lost1 = l.lost;
	l.expect = l.next_idx; /* trailing losses of phase 1 are counted */
	loss_send(&l, 64, len_a, len_b);
	fprintf(stderr, "[%s] clean: got %llu, lost %llu\n", tag,
		(unsigned long long)l.got,
		(unsigned long long)(l.lost - lost1));
	assert_int_equal(l.bad, 0);
	assert_int_equal(l.lost, lost1);
	assert_int_equal(l.expect, l.next_idx);
	if (l.ah)
		assert_int_equal(u4v_destroy_ah(l.ah), 0);
	assert_int_equal(u4v_dereg_mr(l.ms), 0);
	assert_int_equal(u4v_dereg_mr(l.mr), 0);
	u4vt_pair_down(&l.p);
	free(l.src);
	free(l.rbuf);
}

static void test_uc_lost_fragment(void **state)
{
	(void)state;
	/* 3-frame and 2-frame messages: a lost frame drops only its message */
	loss_test(IBV_QPT_UC, "ucloss", LOSS_MAX, 8000);
}

static void test_ud_loss(void **state)
{
	(void)state;
	/* 2-frame datagrams (4096 bytes) and 1-frame ones */
	loss_test(IBV_QPT_UD, "udloss", 4096, 1000);
}

/* ---- UD to a context id taken over by a new context ------------------- */

#define NEWID_LEN 1000

/* n datagrams a -> qpn, each received and checked at b. Returns count. */
static int ud_round(struct u4vt_end *a, struct u4v_qp *qa, struct u4v_ah *ah,
		    struct u4vt_end *b, struct u4v_qp *qb, int n, uint64_t seed)
{
	uint8_t *src = malloc(NEWID_LEN), *dst = malloc(NEWID_LEN + 40);
	uint8_t *want = malloc(NEWID_LEN);
	struct u4v_mr *ms = rel_reg(a->pd, src, NEWID_LEN, 0);
	struct u4v_mr *md = rel_reg(b->pd, dst, NEWID_LEN + 40,
				    IBV_ACCESS_LOCAL_WRITE);
	int i, good = 0;

	for (i = 0; i < n; i++) {
		struct ibv_wc wc;

		u4vt_fill(src, NEWID_LEN, seed + i);
		memcpy(want, src, NEWID_LEN);
		memset(dst, 0, NEWID_LEN + 40);
		assert_int_equal(rel_post_recv(qb, i, dst, NEWID_LEN + 40,
					       u4v_mr_lkey(md)), 0);
		assert_int_equal(rel_post_ud(qa, i, src, NEWID_LEN,
					     u4v_mr_lkey(ms), ah,
					     u4v_qp_num(qb)), 0);
		assert_int_equal(rel_wait1(a->cq, 5000).status,
				 IBV_WC_SUCCESS);
		if (u4vt_poll(b->cq, &wc, 1, 1000) == 1 &&
		    wc.status == IBV_WC_SUCCESS && wc.byte_len == NEWID_LEN + 40 &&
		    !memcmp(dst + 40, want, NEWID_LEN))
			good++;
	}
	/* a receive still posted cannot write dst once md is gone */
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	free(src);
	free(dst);
	free(want);
	return good;
}

static void test_ud_new_incarnation(void **state)
{
	const char *shm = u4vt_shm_name("udnew");
	struct u4vt_end a, b, b2;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb, *qb2;
	struct u4v_ah *ah;
	uint32_t qpn_b;
	int tries, got;

	(void)state;
	u4vt_cable_create(shm, NULL);
	u4vt_qp_opts_default(&o);
	u4vt_end_open(&a, shm, 0);
	u4vt_end_open(&b, shm, 1);
	qa = u4vt_qp_create(&a, IBV_QPT_UD, &o);
	qb = u4vt_qp_create(&b, IBV_QPT_UD, &o);
	u4vt_qp_connect(qa, IBV_QPT_UD, 0, &o);
	u4vt_qp_connect(qb, IBV_QPT_UD, 0, &o);
	ah = u4vt_ah(a.pd);
	qpn_b = u4v_qp_num(qb);
	assert_int_equal(ud_round(&a, qa, ah, &b, qb, 4, 100), 4);

	/* b leaves; new contexts come until one holds b's id (and QPN) */
	assert_int_equal(u4v_destroy_qp(qb), 0);
	u4vt_end_close(&b);
	for (tries = 0; tries < 2 * 64; tries++) {
		u4vt_end_open(&b2, shm, 1);
		qb2 = u4vt_qp_create(&b2, IBV_QPT_UD, &o);
		if (u4v_qp_num(qb2) == qpn_b)
			break;
		assert_int_equal(u4v_destroy_qp(qb2), 0);
		u4vt_end_close(&b2);
	}
	assert_int_equal(u4v_qp_num(qb2), qpn_b);
	u4vt_qp_connect(qb2, IBV_QPT_UD, 0, &o);
	/* the sender's cached channel led to the old context: not any more */
	got = ud_round(&a, qa, ah, &b2, qb2, 4, 200);
	fprintf(stderr, "[udnew] %d of 4 datagrams reached the new context "
		"after %d opens\n", got, tries + 1);
	assert_int_equal(got, 4);
	assert_int_equal(u4v_destroy_ah(ah), 0);
	assert_int_equal(u4v_destroy_qp(qb2), 0);
	assert_int_equal(u4v_destroy_qp(qa), 0);
	u4vt_end_close(&b2);
	u4vt_end_close(&a);
	u4l_sim_destroy(shm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peer_killed),
		cmocka_unit_test(test_rnr_finite),
		cmocka_unit_test(test_rnr_infinite),
		cmocka_unit_test(test_rnr_write_imm),
		cmocka_unit_test(test_uc_lost_fragment),
		cmocka_unit_test(test_ud_loss),
		cmocka_unit_test(test_ud_new_incarnation),
	};
	int ret = cmocka_run_group_tests(tests, NULL, NULL);

	kill_child();
	return ret;
}
