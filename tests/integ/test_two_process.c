// SPDX-License-Identifier: MIT
/*
 * The two ends of a software cable in two processes (fork): QPNs, rkeys and
 * addresses travel over pipes. Every opcode on every QP type where allowed,
 * in lockstep (the parent is the target and checks what landed; the child
 * is the requester and checks what came back), and fetch-and-add racing from
 * two child processes on one target cell (exact final sum, every
 * intermediate value returned exactly once).
 *
 * The children use no cmocka assertions: they report through the pipe and
 * their exit status. The parent kills them if it fails first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

#define TMO 20000
#define BIG (64u << 20)
#define AREA (BIG + 8192u)

/* ---- cmocka-free plumbing (usable in children) -------------------------- */

#define CHK(x)                                                                \
	do {                                                                  \
		if (!(x)) {                                                   \
			fprintf(stderr, "child %d: %s:%d: %s\n", getpid(),    \
				__FILE__, __LINE__, #x);                      \
			_exit(10 + __LINE__ % 200);                           \
		}                                                             \
	} while (0)

static pid_t children[2] = { -1, -1 };

static int io_all(int fd, void *buf, size_t len, bool wr, int ms)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = { fd, wr ? POLLOUT : POLLIN, 0 };
		ssize_t n;

		if (poll(&pfd, 1, ms) != 1)
			return -ETIMEDOUT;
		n = wr ? write(fd, p, len) : read(fd, p, len);
		if (n <= 0)
			return n ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

struct end {
	struct u4v_ctx *ctx;
	struct u4v_pd *pd;
	struct u4v_cq *cq;
};

static int end_open(struct end *e, const char *shm, uint32_t which)
{
	struct u4v_ctx_attr attr = { 0 };
	struct u4l_dev *link;
	int ret;

	memset(e, 0, sizeof(*e));
	ret = u4l_sim_open(shm, which, &link);
	if (ret)
		return -ret;
	attr.link = link;
	attr.node_guid = 0x2000 + which;
	attr.async_event_fd = -1;
	ret = u4v_ctx_open(&attr, &e->ctx);
	if (!ret)
		ret = u4v_alloc_pd(e->ctx, &e->pd);
	if (!ret)
		ret = u4v_create_cq(e->ctx, 4096, &e->cq);
	return ret;
}

static void end_close(struct end *e)
{
	if (e->cq)
		u4v_destroy_cq(e->cq);
	if (e->pd)
		u4v_dealloc_pd(e->pd);
	if (e->ctx)
		u4v_ctx_close(e->ctx);
}

static int qp_make(struct end *e, enum ibv_qp_type t, struct u4v_qp **qp)
{
	struct u4v_qp_init init = { 0 };

	init.qp_type = t;
	init.send_cq = e->cq;
	init.recv_cq = e->cq;
	init.cap.max_send_wr = 256;
	init.cap.max_recv_wr = 256;
	init.cap.max_send_sge = 2;
	init.cap.max_recv_sge = 2;
	return u4v_create_qp(e->pd, &init, qp);
}

static int qp_conn(struct u4v_qp *qp, enum ibv_qp_type t, uint32_t remote)
{
	struct u4vt_conn c;

	u4vt_conn_default(&c, remote);
	c.psn = 0xfffff0; /* the PSNs wrap early in the run */
	return u4vt_eng_connect(qp, t, &c);
}

static int poll_n(struct u4v_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	uint64_t end = u4vt_now_ms() + (uint64_t)ms;
	int got = 0;

	while (got < n) {
		int r = u4v_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (!r && u4vt_now_ms() > end)
			break;
	}
	return got;
}

/* A child must not fall back into cmocka's handlers. */
static void child_init(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	size_t i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
}

static void reap_children(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (children[i] > 0) {
			kill(children[i], SIGKILL);
			waitpid(children[i], NULL, 0);
			children[i] = -1;
		}
}

static int teardown(void **state)
{
	(void)state;
	reap_children();
	return 0;
}

static int wait_child(int i)
{
	int st = -1;
	uint64_t end = u4vt_now_ms() + 30000;

	while (waitpid(children[i], &st, WNOHANG) == 0) {
		if (u4vt_now_ms() > end) {
			kill(children[i], SIGKILL);
			waitpid(children[i], &st, 0);
			break;
		}
		usleep(2000);
	}
	children[i] = -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- every opcode, lockstep ----------------------------------------------- */

struct step {
	enum ibv_qp_type type;
	enum ibv_wr_opcode op;
	uint32_t len;
};

static struct step steps[128];
static int nsteps;

static void build_steps(void)
{
	static const uint32_t sz[] = { 0, 1, 4031, 4032, 4033, 65536,
				       1u << 20 };
	static const uint32_t udsz[] = { 0, 1, 4031, 4032, 4033, 4096 };
	static const enum ibv_wr_opcode rcops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ
	};
	size_t i, o;

	nsteps = 0;
	for (o = 0; o < 5; o++)
		for (i = 0; i < 7; i++) {
			steps[nsteps++] = (struct step){ IBV_QPT_RC, rcops[o],
							 sz[i] };
			if (o < 4)
				steps[nsteps++] = (struct step){ IBV_QPT_UC,
								 rcops[o],
								 sz[i] };
		}
	for (o = 0; o < 3; o++)
		steps[nsteps++] = (struct step){
			IBV_QPT_RC,
			(enum ibv_wr_opcode[]){ IBV_WR_SEND, IBV_WR_RDMA_WRITE,
						IBV_WR_RDMA_READ }[o],
			BIG
		};
	steps[nsteps++] = (struct step){ IBV_QPT_RC, IBV_WR_ATOMIC_CMP_AND_SWP,
					 8 };
	steps[nsteps++] = (struct step){ IBV_QPT_RC,
					 IBV_WR_ATOMIC_FETCH_AND_ADD, 8 };
	for (o = 0; o < 2; o++)
		for (i = 0; i < 6; i++)
			steps[nsteps++] = (struct step){
				IBV_QPT_UD,
				o ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, udsz[i]
			};
}

static int tindex(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? 0 : t == IBV_QPT_UC ? 1 : 2;
}

struct hello {
	uint32_t qpn[3];
	uint32_t rkey;
	uint64_t addr;
};

#define CELL_OFF 64u
#define CELL_INIT 0x0102030405060708ull

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* An RC, a UC and a UD QP on e, their numbers in me. 0 or an errno. */
static int qps_make(struct end *e, struct u4v_qp *qp[3], struct hello *me)
{
	static const enum ibv_qp_type types[3] = {IBV_QPT_RC, IBV_QPT_UC,
						  IBV_QPT_UD};
	int t, ret;

	for (t = 0; t < 3; t++) {
		ret = qp_make(e, types[t], &qp[t]);
		if (ret)
			return ret;
		me->qpn[t] = u4v_qp_num(qp[t]);
	}
	return 0;
}

/* The three QPs connected to the peer's. 0 or an errno. */
static int qps_connect(struct u4v_qp *qp[3], const struct hello *peer)
{
	int ret = qp_conn(qp[0], IBV_QPT_RC, peer->qpn[0]);

	if (!ret)
		ret = qp_conn(qp[1], IBV_QPT_UC, peer->qpn[1]);
	if (!ret)
		ret = qp_conn(qp[2], IBV_QPT_UD, 0);
	return ret;
}

/*
 * Step k of the requester: its WR posted from src and completed, the
 * data a READ or an atomic brought back checked. 0, or what went wrong.
 */
static int32_t request_step(int k, struct end *e, struct u4v_qp *qp[3],
			    struct u4v_ah *ah, const struct hello *peer,
			    uint8_t *src, struct u4v_mr *mr)
{
	const struct step *s = &steps[k];
	struct ibv_sge sge = {(uintptr_t)src, s->len, u4v_mr_lkey(mr)};
	struct ibv_send_wr w, *bad;
	struct ibv_wc wc;
	int32_t result = 0;

	if (s->op == IBV_WR_RDMA_READ)
		memset(src, 0, s->len);
	else
		u4vt_fill(src, s->len, 1000 + k);
	u4vt_send_wr(&w, s->op, k, IBV_SEND_SIGNALED, &sge, 1);
	w.imm_data = 0xabc00000u + k;
	if (s->type == IBV_QPT_UD) {
		u4vt_send_wr_ud(&w, ah, peer->qpn[2]);
	} else if (is_atomic(s->op)) {
		w.wr.atomic.remote_addr = peer->addr + CELL_OFF;
		w.wr.atomic.rkey = peer->rkey;
		w.wr.atomic.compare_add =
		    s->op == IBV_WR_ATOMIC_CMP_AND_SWP ? CELL_INIT : 5;
		w.wr.atomic.swap = 77;
	} else {
		w.wr.rdma.remote_addr = peer->addr;
		w.wr.rdma.rkey = peer->rkey;
	}
	if (u4v_post_send(qp[tindex(s->type)], &w, &bad))
		return 1;
	if (poll_n(e->cq, &wc, 1, TMO) != 1)
		return 2;
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)k)
		return 100 + wc.status;
	if (s->op == IBV_WR_RDMA_READ) {
		uint8_t *want = malloc(s->len ? s->len : 1);

		u4vt_fill(want, s->len, 5000 + k);
		if (u4vt_sum(src, s->len) != u4vt_sum(want, s->len))
			result = 3;
		free(want);
	} else if (is_atomic(s->op)) {
		uint64_t orig;

		memcpy(&orig, src, 8);
		if (orig != CELL_INIT)
			result = 4;
	}
	return result;
}

/* The requester: runs in the child. */
static void requester(const char *shm, int rd, int wr)
{
	struct end e;
	struct u4v_qp *qp[3];
	struct u4v_ah *ah;
	struct ibv_ah_attr aha;
	struct ibv_gid_entry sgid;
	struct hello me = { 0 }, peer;
	uint8_t *src = mmap(NULL, AREA, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct u4v_mr *mr;
	int k, t;

	CHK(src != MAP_FAILED);
	CHK(end_open(&e, shm, 0) == 0);
	CHK(u4v_reg_mr(e.pd, src, AREA, U4VT_ACCESS_ALL, &mr) == 0);
	CHK(qps_make(&e, qp, &me) == 0);
	CHK(io_all(wr, &me, sizeof(me), true, TMO) == 0);
	CHK(io_all(rd, &peer, sizeof(peer), false, TMO) == 0);
	CHK(qps_connect(qp, &peer) == 0);
	u4vt_ah_attr(&aha, &sgid);
	CHK(u4v_create_ah(e.pd, &aha, &sgid, &ah) == 0);
	for (k = 0; k < nsteps; k++) {
		int32_t result, go;

		CHK(io_all(rd, &go, 4, false, 60000) == 0 && go == k);
		result = request_step(k, &e, qp, ah, &peer, src, mr);
		CHK(io_all(wr, &result, 4, true, TMO) == 0);
	}
	CHK(u4v_destroy_ah(ah) == 0);
	for (t = 0; t < 3; t++)
		CHK(u4v_destroy_qp(qp[t]) == 0);
	CHK(u4v_dereg_mr(mr) == 0);
	end_close(&e);
	_exit(0);
}

/* The target's side of step k before it runs: its area and receive. */
static void target_prepare(int k, struct u4v_qp *q, uint8_t *dst,
			   struct u4v_mr *mr)
{
	const struct step *s = &steps[k];
	uint32_t grh = s->type == IBV_QPT_UD ? 40 : 0;

	if (s->op == IBV_WR_RDMA_READ)
		u4vt_fill(dst, s->len, 5000 + k);
	else
		memset(dst, 0xee, s->len + grh + 64);
	if (is_atomic(s->op))
		memcpy(dst + CELL_OFF, &(uint64_t){CELL_INIT}, 8);
	if (s->op == IBV_WR_SEND || s->op == IBV_WR_SEND_WITH_IMM)
		assert_int_equal(u4vt_post_recv1(q, k, (uintptr_t)dst,
						 s->len + grh, u4v_mr_lkey(mr)),
				 0);
	else if (s->op == IBV_WR_RDMA_WRITE_WITH_IMM)
		assert_int_equal(u4vt_post_recv1(q, k, 0, 0, 0), 0);
}

/* The target's receive completion of step k. */
static void target_recv_done(int k, struct u4v_cq *cq)
{
	const struct step *s = &steps[k];
	bool send = s->op == IBV_WR_SEND || s->op == IBV_WR_SEND_WITH_IMM;
	bool imm = s->op == IBV_WR_SEND_WITH_IMM ||
		   s->op == IBV_WR_RDMA_WRITE_WITH_IMM;
	uint32_t grh = s->type == IBV_QPT_UD ? 40 : 0;
	struct ibv_wc wc;

	if (!send && !imm)
		return;
	assert_int_equal(poll_n(cq, &wc, 1, TMO), 1);
	if (wc.status || wc.wr_id != (uint64_t)k)
		fail_msg("step %d: recv wr %llu status %d", k,
			 (unsigned long long)wc.wr_id, wc.status);
	assert_int_equal(wc.byte_len, s->len + grh);
	assert_int_equal(!!(wc.wc_flags & IBV_WC_WITH_IMM), imm);
	if (imm)
		assert_int_equal(wc.imm_data, 0xabc00000u + k);
	assert_int_equal(wc.opcode,
			 send ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM);
}

/* What step k left in the target's area (want: scratch). */
static void target_check(int k, const uint8_t *dst, uint8_t *want)
{
	const struct step *s = &steps[k];
	uint32_t grh = s->type == IBV_QPT_UD ? 40 : 0;
	uint64_t end = u4vt_now_ms() + TMO;

	if (s->op == IBV_WR_RDMA_READ)
		return;
	if (is_atomic(s->op)) {
		uint64_t v;

		memcpy(&v, dst + CELL_OFF, 8);
		assert_true(
		    v ==
		    (s->op == IBV_WR_ATOMIC_CMP_AND_SWP ? 77 : CELL_INIT + 5));
		return;
	}
	u4vt_fill(want, s->len, 1000 + k);
	/* UC WRITE: nothing says it arrived but the bytes */
	while (u4vt_sum(dst + grh, s->len) != u4vt_sum(want, s->len) &&
	       u4vt_now_ms() < end)
		usleep(1000);
	if (u4vt_sum(dst + grh, s->len) != u4vt_sum(want, s->len))
		fail_msg("step %d (qpt %d op %d len %u): payload differs", k,
			 s->type, s->op, s->len);
	assert_int_equal(dst[grh + s->len], 0xee);
}

static void test_every_opcode_two_processes(void **state)
{
	const char *shm = u4vt_shm_name("2p");
	int p2c[2], c2p[2], k, t;
	struct end e;
	struct u4v_qp *qp[3];
	struct hello me = { 0 }, peer;
	uint8_t *dst, *want;
	struct u4v_mr *mr;
	int32_t result;

	(void)state;
	build_steps();
	u4vt_cable_create(shm, NULL);
	assert_int_equal(pipe(p2c), 0);
	assert_int_equal(pipe(c2p), 0);
	children[0] = fork();
	assert_true(children[0] >= 0);
	if (children[0] == 0) {
		child_init();
		close(p2c[1]);
		close(c2p[0]);
		requester(shm, p2c[0], c2p[1]);
	}
	close(p2c[0]);
	close(c2p[1]);
	dst = u4vt_map(AREA);
	want = u4vt_map(AREA);
	assert_int_equal(end_open(&e, shm, 1), 0);
	assert_int_equal(u4v_reg_mr(e.pd, dst, AREA, U4VT_ACCESS_ALL, &mr), 0);
	assert_int_equal(qps_make(&e, qp, &me), 0);
	me.rkey = u4v_mr_rkey(mr);
	me.addr = (uintptr_t)dst;
	assert_int_equal(io_all(c2p[0], &peer, sizeof(peer), false, TMO), 0);
	assert_int_equal(qps_connect(qp, &peer), 0);
	assert_int_equal(io_all(p2c[1], &me, sizeof(me), true, TMO), 0);
	for (k = 0; k < nsteps; k++) {
		const struct step *s = &steps[k];

		target_prepare(k, qp[tindex(s->type)], dst, mr);
		assert_int_equal(io_all(p2c[1], &k, 4, true, TMO), 0);
		assert_int_equal(io_all(c2p[0], &result, 4, false, 60000), 0);
		if (result)
			fail_msg("step %d (qpt %d op %d len %u): requester "
				 "result %d",
				 k, s->type, s->op, s->len, result);
		target_recv_done(k, e.cq);
		target_check(k, dst, want);
	}
	assert_int_equal(wait_child(0), 0);
	for (t = 0; t < 3; t++)
		assert_int_equal(u4v_destroy_qp(qp[t]), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	end_close(&e);
	close(p2c[1]);
	close(c2p[0]);
	u4vt_unmap(dst, AREA);
	u4vt_unmap(want, AREA);
	u4l_sim_destroy(shm);
}

/* ---- fetch-and-add from two processes ------------------------------------ */

#define NFAA 1500
#define FAA_WINDOW 16

static void adder(const char *shm, int rd, int wr, int id)
{
	struct end e;
	struct u4v_qp *qp;
	struct hello me = { 0 }, peer;
	static uint64_t res[NFAA];
	struct u4v_mr *mr;
	int posted = 0, done = 0;
	uint64_t end;

	CHK(end_open(&e, shm, 0) == 0);
	CHK(u4v_reg_mr(e.pd, res, sizeof(res), IBV_ACCESS_LOCAL_WRITE, &mr) ==
	    0);
	CHK(qp_make(&e, IBV_QPT_RC, &qp) == 0);
	me.qpn[0] = u4v_qp_num(qp);
	CHK(io_all(wr, &me, sizeof(me), true, TMO) == 0);
	CHK(io_all(rd, &peer, sizeof(peer), false, TMO) == 0);
	CHK(qp_conn(qp, IBV_QPT_RC, peer.qpn[id]) == 0);
	{
		int go;

		CHK(io_all(rd, &go, 4, false, TMO) == 0);
	}
	end = u4vt_now_ms() + 60000;
	while (done < NFAA) {
		struct ibv_wc wc[16];
		int n, i;

		CHK(u4vt_now_ms() < end);
		while (posted < NFAA && posted - done < FAA_WINDOW) {
			CHK(u4vt_post_atomic(qp, IBV_WR_ATOMIC_FETCH_AND_ADD,
					     posted, (uintptr_t)&res[posted],
					     u4v_mr_lkey(mr), peer.addr,
					     peer.rkey, 1, 0) == 0);
			posted++;
		}
		n = u4v_poll_cq(e.cq, 16, wc);
		CHK(n >= 0);
		for (i = 0; i < n; i++) {
			CHK(wc[i].status == IBV_WC_SUCCESS);
			CHK(wc[i].wr_id == (uint64_t)done);
			done++;
		}
	}
	CHK(io_all(wr, res, sizeof(res), true, TMO) == 0);
	CHK(u4v_destroy_qp(qp) == 0);
	CHK(u4v_dereg_mr(mr) == 0);
	end_close(&e);
	_exit(0);
}

static void test_faa_race_two_processes(void **state)
{
	const char *shm = u4vt_shm_name("faa2p");
	int p2c[2][2], c2p[2][2], i, j;
	struct end e;
	struct u4v_qp *qp[2];
	struct hello me = { 0 }, peer[2];
	uint64_t *cell, *res;
	uint8_t *seen;
	struct u4v_mr *mr;

	(void)state;
	u4vt_cable_create(shm, NULL);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pipe(p2c[i]), 0);
		assert_int_equal(pipe(c2p[i]), 0);
		children[i] = fork();
		assert_true(children[i] >= 0);
		if (children[i] == 0) {
			child_init();
			close(p2c[i][1]);
			close(c2p[i][0]);
			adder(shm, p2c[i][0], c2p[i][1], i);
		}
		close(p2c[i][0]);
		close(c2p[i][1]);
	}
	cell = u4vt_map(4096);
	*cell = 0;
	assert_int_equal(end_open(&e, shm, 1), 0);
	assert_int_equal(u4v_reg_mr(e.pd, cell, 4096, U4VT_ACCESS_ALL, &mr), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(qp_make(&e, IBV_QPT_RC, &qp[i]), 0);
		me.qpn[i] = u4v_qp_num(qp[i]);
	}
	me.rkey = u4v_mr_rkey(mr);
	me.addr = (uintptr_t)cell;
	for (i = 0; i < 2; i++) {
		assert_int_equal(io_all(c2p[i][0], &peer[i], sizeof(peer[i]),
					false, TMO),
				 0);
		assert_int_equal(qp_conn(qp[i], IBV_QPT_RC, peer[i].qpn[0]), 0);
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(io_all(p2c[i][1], &me, sizeof(me), true, TMO),
				 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(io_all(p2c[i][1], &i, 4, true, TMO), 0);
	res = calloc(2 * NFAA, 8);
	seen = calloc(2 * NFAA, 1);
	for (i = 0; i < 2; i++)
		assert_int_equal(io_all(c2p[i][0], res + i * NFAA, NFAA * 8,
					false, 60000),
				 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(wait_child(i), 0);
	assert_true(*cell == 2 * NFAA);
	/* every value 0 .. 2N-1 was returned exactly once */
	for (j = 0; j < 2 * NFAA; j++) {
		assert_true(res[j] < 2 * NFAA);
		assert_int_equal(seen[res[j]]++, 0);
	}
	/* and each process saw its own values increase */
	for (i = 0; i < 2; i++)
		for (j = 1; j < NFAA; j++)
			assert_true(res[i * NFAA + j] > res[i * NFAA + j - 1]);
	free(res);
	free(seen);
	for (i = 0; i < 2; i++) {
		assert_int_equal(u4v_destroy_qp(qp[i]), 0);
		close(p2c[i][1]);
		close(c2p[i][0]);
	}
	assert_int_equal(u4v_dereg_mr(mr), 0);
	end_close(&e);
	u4vt_unmap(cell, 4096);
	u4l_sim_destroy(shm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_every_opcode_two_processes,
					  teardown),
		cmocka_unit_test_teardown(test_faa_race_two_processes,
					  teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
