// SPDX-License-Identifier: MIT
/*
 * A hostile process on the software cable: while RC traffic runs between
 * this process (end 0) and a peer process (end 1), a third process writes
 * random bytes into the shared segment (the header and its lock, the
 * context and channel tables, control blocks, ring indices, descriptors,
 * lengths, arrival times, frame headers; tests/common/u4vt_scribble.h).
 * Both processes of the cable must come through: every work request ends
 * with a completion (success or a clear error status) within a bound, the
 * memory around the buffers stays untouched (guard pages: a stray write
 * faults), teardown finishes, and the peer exits normally. The sanitizer
 * build watches everything else. U4V_SCRIBBLE_SEED picks another storm.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "u4vt_rel.h"
#include "u4vt_scribble.h"

#define DEPTH 64u
#define MAX_CHANNELS 4u
#define NQP 2
#define OUTSTANDING 8u
#define MSG 16384u
#define BUF (OUTSTANDING * MSG)
#define STORM_MS 1500
#define WARMUP_OK 64u /* completions before the storm: traffic runs */

/*
 * RESET, then connected again (fresh PSNs). Under the storm this may
 * fail (the peer's context looks gone, the lock is garbled): that is
 * an error the caller sees, not a test failure.
 */
static int reconnect(struct u4v_qp *qp, uint32_t remote,
		     const struct u4vt_qp_opts *o)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	struct u4vt_conn c;

	u4vt_conn_from_opts(&c, remote, o);
	return u4v_modify_qp(qp, &a, IBV_QP_STATE)
		   ?: u4vt_eng_connect(qp, IBV_QPT_RC, &c);
}

/* Guarded buffer: PROT_NONE pages on both sides. */
static uint8_t *guarded(size_t len)
{
	size_t pg = 4096, total = len + 2 * pg;
	uint8_t *p = mmap(NULL, total, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	assert_int_equal(mprotect(p, pg, PROT_NONE), 0);
	assert_int_equal(mprotect(p + pg + len, pg, PROT_NONE), 0);
	return p + pg;
}

/* What the peer tells us: its QPNs and its buffer for WRITE and READ. */
struct peer_info {
	uint32_t qpn[NQP];
	uint64_t addr;
	uint32_t rkey;
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void qp_opts(struct u4vt_qp_opts *o)
{
	u4vt_qp_opts_default(o);
	o->max_send_wr = OUTSTANDING;
	o->max_recv_wr = OUTSTANDING;
	o->timeout = 12; /* 16.8 ms */
	o->retry_cnt = 3;
	o->rnr_retry = 6;      /* finite: a peer that stops posting fails it */
	o->min_rnr_timer = 14; /* 1.28 ms: the peer re-posts every 0.1 ms */
	o->access = REL_ACC_ALL;
}

static void post_recvs(struct u4v_qp *qp, int q, uint8_t *buf,
		       struct u4v_mr *mr)
{
	uint32_t i;

	for (i = 0; i < OUTSTANDING; i++)
		rel_post_recv(qp, (uint64_t)q << 32 | i,
			      buf + q * BUF + i * MSG, MSG, u4v_mr_lkey(mr));
}

/*
 * The peer (end 1): a responder that keeps receives posted. Commands on
 * rfd: 'r' + q resets QP q and connects it again (answered 'k' on wfd),
 * 's' stops.
 */
static void peer_main(const char *shm, int wfd, int rfd)
{
	struct u4vt_end b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qp[NQP];
	struct peer_info pi;
	uint32_t remote[NQP];
	uint8_t *buf = guarded(NQP * BUF);
	struct u4v_mr *mr;
	char cmd[2];
	int i, q;

	alarm(120);
	u4vt_end_open_ex(&b, shm, 1, -1, 0);
	qp_opts(&o);
	mr = rel_reg(b.pd, buf, NQP * BUF, REL_ACC_ALL);
	for (q = 0; q < NQP; q++) {
		qp[q] = u4vt_qp_create(&b, IBV_QPT_RC, &o);
		pi.qpn[q] = u4v_qp_num(qp[q]);
	}
	pi.addr = (uintptr_t)buf;
	pi.rkey = u4v_mr_rkey(mr);
	if (write(wfd, &pi, sizeof(pi)) != sizeof(pi) ||
	    read(rfd, remote, sizeof(remote)) != sizeof(remote))
		_exit(2);
	for (q = 0; q < NQP; q++) {
		u4vt_qp_connect(qp[q], IBV_QPT_RC, remote[q], &o);
		post_recvs(qp[q], q, buf, mr);
	}
	if (write(wfd, "k", 1) != 1) /* receives are posted */
		_exit(2);
	fcntl(rfd, F_SETFL, O_NONBLOCK);
	for (;;) {
		struct ibv_wc wc[16];
		int n;

		if (read(rfd, cmd, 2) == 2) {
			if (cmd[0] == 's')
				break;
			q = cmd[1] % NQP;
			if (!reconnect(qp[q], remote[q], &o))
				post_recvs(qp[q], q, buf, mr);
			if (write(wfd, "k", 1) != 1)
				_exit(3);
		}
		n = u4v_poll_cq(b.cq, 16, wc);
		for (i = 0; i < n; i++) {
			q = (int)(wc[i].wr_id >> 32) % NQP;
			/* a QP in error takes no receives: that is fine */
			rel_post_recv(qp[q], wc[i].wr_id,
				      buf + q * BUF +
					  (wc[i].wr_id & 0xffff) % OUTSTANDING *
					      MSG,
				      MSG, u4v_mr_lkey(mr));
		}
		if (!n)
			usleep(100);
	}
	for (q = 0; q < NQP; q++)
		u4v_destroy_qp(qp[q]);
	u4v_dereg_mr(mr);
	u4vt_end_close(&b);
	_exit(0);
}

/* The scribbler: random bytes into the segment for STORM_MS. */
static void scribbler_main(const char *shm, uint64_t seed, int rfd)
{
	struct sim_geom g;
	struct stat st;
	uint64_t end, writes = 0;
	uint8_t *seg;
	char go;
	int fd;

	alarm(60);
	if (read(rfd, &go, 1) != 1)
		_exit(2);
	fd = shm_open(shm, O_RDWR, 0);
	if (fd < 0 || fstat(fd, &st) < 0)
		_exit(3);
	seg = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (seg == MAP_FAILED)
		_exit(4);
	sim_geom_init(&g, DEPTH, MAX_CHANNELS);
	end = u4vt_now_ms() + STORM_MS;
	while (u4vt_now_ms() < end) {
		uint64_t pick = splitmix(&seed), val = splitmix(&seed);
		uint32_t len;
		uint64_t off;

		/* first half: the data path only, so traffic meets it */
		if (u4vt_now_ms() < end - STORM_MS / 2)
			pick = pick - pick % U4VT_SPOT_NR + U4VT_SPOT_CTL +
			       pick % (U4VT_SPOT_NR - U4VT_SPOT_CTL);
		off = u4vt_scribble_spot((struct sim_seg *)seg, &g, pick, false,
					 &len);

		if (off + len > (uint64_t)st.st_size)
			continue;
		/* small numbers and all-ones are as likely as noise */
		if ((val & 3) == 0)
			val = (val >> 2) & 0xff;
		else if ((val & 3) == 1)
			val = ~0ull;
		memcpy(seg + off, &val, len);
		writes++;
		if (!(writes % 4))
			usleep(splitmix(&seed) % 200);
	}
	fprintf(stderr, "[scribble] %llu writes in %d ms\n",
		(unsigned long long)writes, STORM_MS);
	_exit(0);
}

static pid_t spawn(void (*fn)(void))
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		fn();
	return pid;
}

/* Wait for pid at most ms; kill it if it is still there. */
static int reap(pid_t pid, int ms)
{
	int status = -1;

	for (; ms > 0; ms -= 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static const char *g_shm;
static uint64_t g_seed;
static int g_p2c[2], g_c2p[2], g_go[2];

static void run_peer(void)
{
	close(g_p2c[1]);
	close(g_c2p[0]);
	peer_main(g_shm, g_c2p[1], g_p2c[0]);
}

static void run_scribbler(void)
{
	close(g_go[1]);
	scribbler_main(g_shm, g_seed, g_go[0]);
}

struct victim {
	struct u4vt_end a;
	struct u4v_qp *qp[NQP];
	struct u4v_mr *mr;
	uint8_t *buf;
	struct peer_info pi;
	struct u4vt_qp_opts o;
	uint32_t outstanding[NQP];
	uint64_t posted, ok, bad, reconnects, failed_connects;
	uint64_t status_count[IBV_WC_GENERAL_ERR + 1];
};

/*
 * A QP that failed and has nothing out is connected again, with the
 * peer's (both reset: fresh PSNs): traffic goes on through the storm,
 * and the control plane runs under it too.
 */
static void reconnect_failed(struct victim *v, int to_peer, int from_peer)
{
	char cmd[2] = {'r', 0}, ack;
	int q;

	for (q = 0; q < NQP; q++) {
		if (u4v_qp_state(v->qp[q]) == IBV_QPS_RTS || v->outstanding[q])
			continue;
		cmd[1] = (char)q;
		assert_int_equal(write(to_peer, cmd, 2), 2);
		assert_int_equal(read(from_peer, &ack, 1), 1);
		if (reconnect(v->qp[q], v->pi.qpn[q], &v->o))
			v->failed_connects++;
		v->reconnects++;
	}
}

static void post_some(struct victim *v, uint64_t *rng)
{
	static const enum ibv_wr_opcode ops[] = {IBV_WR_SEND, IBV_WR_RDMA_WRITE,
						 IBV_WR_RDMA_READ};
	int q;

	for (q = 0; q < NQP; q++) {
		while (v->outstanding[q] < OUTSTANDING &&
		       u4v_qp_state(v->qp[q]) == IBV_QPS_RTS) {
			uint32_t slot = (uint32_t)(v->posted % OUTSTANDING);
			enum ibv_wr_opcode op = ops[splitmix(rng) % 3];
			uint8_t *p = v->buf + q * BUF + slot * MSG;

			if (rel_post(v->qp[q], op, (uint64_t)q << 32 | slot, p,
				     MSG, u4v_mr_lkey(v->mr),
				     v->pi.addr + q * BUF + slot * MSG,
				     v->pi.rkey))
				break;
			v->outstanding[q]++;
			v->posted++;
		}
	}
}

static void reap_completions(struct victim *v)
{
	struct ibv_wc wc[16];
	int i, n = u4v_poll_cq(v->a.cq, 16, wc);

	for (i = 0; i < n; i++) {
		int q = (int)(wc[i].wr_id >> 32);

		assert_true(q >= 0 && q < NQP && v->outstanding[q]);
		v->outstanding[q]--;
		if (wc[i].status == IBV_WC_SUCCESS) {
			v->ok++;
			continue;
		}
		/* a status of the verbs API, never garbage */
		assert_true(wc[i].status <= IBV_WC_GENERAL_ERR);
		v->status_count[wc[i].status]++;
		v->bad++;
	}
}

static uint32_t outstanding(const struct victim *v)
{
	uint32_t n = 0;
	int q;

	for (q = 0; q < NQP; q++)
		n += v->outstanding[q];
	return n;
}

/* The counts of each failure status so far, one line each. */
static void print_statuses(const struct victim *v, const char *what)
{
	int st;

	for (st = 0; st <= IBV_WC_GENERAL_ERR; st++)
		if (v->status_count[st])
			fprintf(stderr, "  %sstatus %d: %llu\n", what, st,
				(unsigned long long)v->status_count[st]);
}

/* The victim's context, memory and QPs, connected to the peer's. */
static void victim_up(struct victim *v)
{
	uint32_t remote[NQP];
	char ready;
	int q;

	u4vt_end_open_ex(&v->a, g_shm, 0, -1, 0);
	qp_opts(&v->o);
	v->buf = guarded(NQP * BUF);
	v->mr = rel_reg(v->a.pd, v->buf, NQP * BUF, REL_ACC_ALL);
	for (q = 0; q < NQP; q++) {
		v->qp[q] = u4vt_qp_create(&v->a, IBV_QPT_RC, &v->o);
		remote[q] = u4v_qp_num(v->qp[q]);
	}
	assert_int_equal(read(g_c2p[0], &v->pi, sizeof(v->pi)), sizeof(v->pi));
	assert_int_equal(write(g_p2c[1], remote, sizeof(remote)),
			 sizeof(remote));
	for (q = 0; q < NQP; q++)
		u4vt_qp_connect(v->qp[q], IBV_QPT_RC, v->pi.qpn[q], &v->o);
	assert_int_equal(read(g_c2p[0], &ready, 1), 1);
}

/*
 * After the storm, every request still out ends within the RC bound:
 * (retry_cnt + 1) timeouts, the RNR retries, and slack for a loaded host.
 * The bound in ms.
 */
static uint64_t drain_within_bound(struct victim *v)
{
	uint64_t bound_ms = (uint64_t)(v->o.retry_cnt + 1) *
				(4096ull << v->o.timeout) / 1000000 +
			    5000;
	uint64_t deadline = u4vt_now_ms() + bound_ms;

	while (outstanding(v) && u4vt_now_ms() < deadline)
		reap_completions(v);
	return bound_ms;
}

static void test_scribbled_segment(void **state)
{
	struct u4l_sim_config cfg;
	struct victim v;
	uint64_t rng, t_storm, deadline, bound_ms;
	pid_t peer, scrib;
	int q, st_peer, st_scrib;
	const char *env = getenv("U4V_SCRIBBLE_SEED");

	(void)state;
	memset(&v, 0, sizeof(v));
	g_seed = env ? strtoull(env, NULL, 0) : 0x5c21bb1e;
	rng = g_seed ^ 1;
	fprintf(stderr, "[scribble] seed %#llx\n", (unsigned long long)g_seed);
	g_shm = u4vt_shm_name("scribble");
	u4vt_cable_config(&cfg);
	cfg.ring_depth = DEPTH;
	cfg.max_channels = MAX_CHANNELS;
	u4vt_cable_create(g_shm, &cfg);
	assert_int_equal(pipe(g_p2c), 0);
	assert_int_equal(pipe(g_c2p), 0);
	assert_int_equal(pipe(g_go), 0);
	/* fork before any context exists: no progress threads yet */
	peer = spawn(run_peer);
	scrib = spawn(run_scribbler);
	close(g_p2c[0]);
	close(g_c2p[1]);
	close(g_go[0]);
	alarm(120);
	victim_up(&v);

	/* traffic runs before the storm */
	deadline = u4vt_now_ms() + 20000;
	while (v.ok < WARMUP_OK && u4vt_now_ms() < deadline) {
		post_some(&v, &rng);
		reap_completions(&v);
	}
	print_statuses(&v, "warm-up ");
	assert_true(v.ok >= WARMUP_OK);
	assert_int_equal(v.bad, 0);

	/* the storm, with traffic */
	assert_int_equal(write(g_go[1], "g", 1), 1);
	t_storm = u4vt_now_ms();
	while (u4vt_now_ms() < t_storm + STORM_MS) {
		post_some(&v, &rng);
		reap_completions(&v);
		reconnect_failed(&v, g_p2c[1], g_c2p[0]);
	}
	bound_ms = drain_within_bound(&v);
	fprintf(stderr,
		"[scribble] %llu posted, %llu ok, %llu failed, %llu "
		"reconnects (%llu failed), %u outstanding after %llu ms\n",
		(unsigned long long)v.posted, (unsigned long long)v.ok,
		(unsigned long long)v.bad, (unsigned long long)v.reconnects,
		(unsigned long long)v.failed_connects, outstanding(&v),
		(unsigned long long)bound_ms);
	print_statuses(&v, "");
	assert_int_equal(outstanding(&v), 0);
	/* the storm reached the data path: requests failed, visibly */
	assert_true(v.bad > 0);

	/* teardown finishes (alarm() bounds it) */
	for (q = 0; q < NQP; q++)
		assert_int_equal(u4v_destroy_qp(v.qp[q]), 0);
	assert_int_equal(u4v_dereg_mr(v.mr), 0);
	u4vt_end_close(&v.a);
	assert_int_equal(write(g_p2c[1], "s", 2), 2);
	st_scrib = reap(scrib, 10000);
	st_peer = reap(peer, 30000);
	alarm(0);
	u4l_sim_destroy(g_shm);
	assert_true(st_scrib >= 0 && WIFEXITED(st_scrib) &&
		    !WEXITSTATUS(st_scrib));
	if (!(st_peer >= 0 && WIFEXITED(st_peer) && !WEXITSTATUS(st_peer)))
		fail_msg("the peer did not come through: status %#x", st_peer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scribbled_segment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
