// SPDX-License-Identifier: MIT
/*
 * Engine-level benchmark over a software cable, two processes: an initiator
 * on end 0 and a passive target on end 1 (it never polls, like perftest's
 * ib_write_bw server: its progress thread serves the traffic).
 *
 *   engine_bw [--op write|read|send] [-q QPS] [-t THREADS] [-s SIZE]
 *             [-n ITERS] [-w WINDOW] [-r GBITS] [--drop P] [--stranded P]
 *             [--lat] [--idle] [--inproc] [--seconds S]
 *
 * -q QPs share one context; -t threads each drive their own QPs (-q is
 * then per thread). --lat measures the round trip of an 8-byte RC send
 * with polling instead. --idle connects the QPs and then leaves both
 * contexts idle for S seconds: what an idle context costs (its progress
 * thread). --inproc: both ends in one process and one thread, without
 * progress threads, moved by hand in turn (one QP, WRITE): nothing waits
 * on a clock, a wake-up or another process, so the instructions taken per
 * message (callgrind) are the engine's work, the same from run to run.
 * Prints one result line (key=value).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <usb4verbs/engine.h>
#include <usb4verbs/sim.h>

#include "die.h"
#include "u4vt.h"

#define MAXQ 64
#define GRANULE 4032.0 /* payload per frame, see wire.h */
#define HDR 16.0

static struct {
	enum { OP_WRITE, OP_READ, OP_SEND } op;
	int qps, threads, window, lat, idle, inproc;
	size_t size;
	long iters;
	double rate_gbps, drop, stranded, seconds;
	char shm[64];
} opt = { .op = OP_WRITE, .qps = 1, .threads = 1, .window = 32,
	    .size = 65536, .rate_gbps = 20, .seconds = 3 };

struct exch {
	uint32_t qpn[MAXQ];
	uint64_t addr;
	uint32_t rkey;
};

struct end {
	struct u4v_ctx *ctx;
	struct u4v_pd *pd;
	struct u4v_cq *cq[MAXQ];
	struct u4v_qp *qp[MAXQ];
	struct u4v_mr *mr;
	void *buf;
	size_t buflen;
};

static void open_end(struct end *e, uint32_t which, int nqp)
{
	struct u4v_ctx_attr a = { 0 };
	struct u4l_dev *link;
	int i, ret;

	ret = -u4l_sim_open(opt.shm, which, &link);
	if (ret)
		u4vt_die_err("sim_open", ret);
	a.link = link;
	a.async_event_fd = -1;
	a.no_progress_thread = opt.inproc;
	if ((ret = u4v_ctx_open(&a, &e->ctx)) ||
	    (ret = u4v_alloc_pd(e->ctx, &e->pd)))
		u4vt_die_err("open", ret);
	e->buflen = opt.size * (size_t)nqp;
	e->buf = mmap(NULL, e->buflen ? e->buflen : 8, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ret = u4v_reg_mr(e->pd, e->buf, e->buflen,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ,
			 &e->mr);
	if (ret)
		u4vt_die_err("reg_mr", ret);
	for (i = 0; i < nqp; i++) {
		struct u4v_qp_init init = { 0 };

		if ((ret = u4v_create_cq(e->ctx, 4096, &e->cq[i])))
			u4vt_die_err("create_cq", ret);
		init.qp_type = IBV_QPT_RC;
		init.send_cq = init.recv_cq = e->cq[i];
		init.cap.max_send_wr = 1024;
		init.cap.max_recv_wr = 1024;
		init.cap.max_send_sge = 1;
		init.cap.max_recv_sge = 1;
		init.cap.max_inline_data = 64;
		if ((ret = u4v_create_qp(e->pd, &init, &e->qp[i])))
			u4vt_die_err("create_qp", ret);
	}
}

static void connect_qp(struct u4v_qp *qp, uint32_t remote)
{
	struct u4vt_conn c;
	int ret;

	u4vt_conn_default(&c, remote);
	c.psn = 0;
	c.min_rnr_timer = 12;
	ret = u4vt_eng_connect(qp, IBV_QPT_RC, &c);
	if (ret)
		u4vt_die_err("modify_qp", ret);
}

/* Receives for SEND; re-posted as they complete. */
static void post_recvs(struct end *e, int q, int n)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + (size_t)q * opt.size,
			       (uint32_t)opt.size, u4v_mr_lkey(e->mr) };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	int i;

	for (i = 0; i < n; i++)
		if (u4v_post_recv(e->qp[q], &wr, &bad))
			break;
}

/*
 * This side's end (1: the target) with nq QPs, each connected to the
 * peer's QP of the same index. QP numbers, buffer address and rkey cross
 * the pipes, the target's first; *theirs: the peer's.
 */
static void open_connected(struct end *e, uint32_t which, int nq, int rfd,
			   int wfd, struct exch *theirs)
{
	struct exch mine = { 0 };
	bool ok;
	int i;

	open_end(e, which, nq);
	for (i = 0; i < nq; i++)
		mine.qpn[i] = u4v_qp_num(e->qp[i]);
	mine.addr = (uintptr_t)e->buf;
	mine.rkey = u4v_mr_rkey(e->mr);
	if (which == 1)
		ok = write(wfd, &mine, sizeof(mine)) == sizeof(mine) &&
		     read(rfd, theirs, sizeof(*theirs)) == sizeof(*theirs);
	else
		ok = read(rfd, theirs, sizeof(*theirs)) == sizeof(*theirs) &&
		     write(wfd, &mine, sizeof(mine)) == sizeof(mine);
	if (!ok)
		u4vt_die_err("exchange", EPIPE);
	for (i = 0; i < nq; i++)
		connect_qp(e->qp[i], theirs->qpn[i]);
}

struct worker {
	struct end *e;
	struct exch *remote;
	int first, count;
	uint64_t bytes;
	long ops;
};

static void *drive(void *arg)
{
	struct worker *w = arg;
	struct end *e = w->e;
	long posted[MAXQ] = { 0 }, done[MAXQ] = { 0 };
	bool finished[MAXQ] = { 0 };
	uint64_t end = u4vt_now_ns() + (uint64_t)(opt.seconds * 1e9);
	struct ibv_wc wc[32];
	int q, live = w->count;

	while (live) {
		for (q = w->first; q < w->first + w->count; q++) {
			struct ibv_sge sge = {
				(uintptr_t)e->buf + (size_t)q * opt.size,
				(uint32_t)opt.size, u4v_mr_lkey(e->mr)
			};
			struct ibv_send_wr wr = { 0 }, *bad;
			int n, i;
			bool stop;

			if (finished[q])
				continue;
			stop = (opt.iters && posted[q] >= opt.iters) ||
				    (!opt.iters && u4vt_now_ns() > end);

			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.opcode = opt.op == OP_READ ? IBV_WR_RDMA_READ :
				    opt.op == OP_SEND ? IBV_WR_SEND :
							IBV_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = w->remote->addr +
						 (uint64_t)q * opt.size;
			wr.wr.rdma.rkey = w->remote->rkey;
			while (!stop && posted[q] - done[q] < opt.window) {
				if (u4v_post_send(e->qp[q], &wr, &bad))
					break;
				posted[q]++;
			}
			n = u4v_poll_cq(e->cq[q], 32, wc);
			for (i = 0; i < n; i++) {
				if (wc[i].status) {
					fprintf(stderr, "engine_bw: status %d\n",
						wc[i].status);
					exit(1);
				}
				done[q]++;
				w->bytes += opt.size;
				w->ops++;
			}
			if (stop && done[q] == posted[q]) {
				finished[q] = true;
				live--;
			}
		}
	}
	return NULL;
}

static int target(int rfd, int wfd)
{
	struct end e;
	struct exch theirs;
	int nq = opt.qps * opt.threads, i;
	char c = 0;

	open_connected(&e, 1, nq, rfd, wfd, &theirs);
	if (opt.op == OP_SEND || opt.lat) {
		/* SEND needs receives and a poller; latency echoes */
		struct ibv_wc wc[32];
		uint64_t stop = u4vt_now_ns() + (uint64_t)(opt.seconds * 4e9) +
				2000000000ull;
		unsigned long spins = 0;

		for (i = 0; i < nq; i++)
			post_recvs(&e, i, 1000);
		if (write(wfd, "r", 1) != 1)
			u4vt_die_err("ready", EPIPE);
		while (u4vt_now_ns() < stop) {
			for (i = 0; i < nq; i++) {
				int n = u4v_poll_cq(e.cq[i], 32, wc), k;

				for (k = 0; k < n; k++) {
					if (wc[k].opcode != IBV_WC_RECV)
						continue;
					post_recvs(&e, i, 1);
					if (opt.lat) {
						struct ibv_sge sge = {
							(uintptr_t)e.buf, 8,
							u4v_mr_lkey(e.mr)
						};
						struct ibv_send_wr wr = { 0 },
								   *bad;

						wr.sg_list = &sge;
						wr.num_sge = 1;
						wr.opcode = IBV_WR_SEND;
						wr.send_flags = IBV_SEND_INLINE;
						u4v_post_send(e.qp[i], &wr,
							      &bad);
					}
				}
			}
			if (++spins % 4096 == 0) {
				struct timespec ts = { 0, 0 };
				fd_set fds;

				FD_ZERO(&fds);
				FD_SET(rfd, &fds);
				if (pselect(rfd + 1, &fds, NULL, NULL, &ts,
					    NULL) > 0)
					break;
			}
		}
	} else {
		uint64_t cpu0 = u4vt_cpu_ns(), cpu;

		if (write(wfd, "r", 1) != 1)
			u4vt_die_err("ready", EPIPE);
		/* passive: the progress thread serves WRITE and READ */
		if (read(rfd, &c, 1) < 0)
			u4vt_die_err("wait", errno);
		cpu = u4vt_cpu_ns() - cpu0;
		if (opt.idle && write(wfd, &cpu, sizeof(cpu)) != sizeof(cpu))
			u4vt_die_err("report", EPIPE);
	}
	return 0;
}

/* Both contexts idle for opt.seconds: the CPU their threads take. */
static void idle(int rfd, int wfd)
{
	uint64_t t0 = u4vt_now_ns(), cpu0 = u4vt_cpu_ns(), mine, theirs = 0,
		 secs;
	struct timespec ts = { (time_t)opt.seconds,
			       (long)((opt.seconds - (double)(time_t)opt.seconds) *
				      1e9) };

	while (nanosleep(&ts, &ts))
		;
	mine = u4vt_cpu_ns() - cpu0;
	secs = u4vt_now_ns() - t0;
	if (write(wfd, "x", 1) != 1 ||
	    read(rfd, &theirs, sizeof(theirs)) != sizeof(theirs))
		u4vt_die_err("idle report", EPIPE);
	printf("engine_idle: seconds=%.3f initiator_cpu_s=%.4f "
	       "target_cpu_s=%.4f cpu_pct_per_context=%.3f\n",
	       (double)secs / 1e9, (double)mine / 1e9, (double)theirs / 1e9,
	       100.0 * (double)(mine + theirs) / 2.0 / (double)secs);
}

static void latency(struct end *e)
{
	struct ibv_sge sge = { (uintptr_t)e->buf, 8, u4v_mr_lkey(e->mr) };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc[4];
	long i, n = opt.iters ? opt.iters : 20000;
	uint64_t t0 = u4vt_now_ns(), t1;

	post_recvs(e, 0, 1000);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	for (i = -1000; i < n; i++) {
		int got = 0;

		if (i == 0)
			t0 = u4vt_now_ns();
		if (u4v_post_send(e->qp[0], &wr, &bad))
			u4vt_die_err("post", EIO);
		while (!got) {
			int k, m = u4v_poll_cq(e->cq[0], 4, wc);

			for (k = 0; k < m; k++)
				if (wc[k].opcode == IBV_WC_RECV) {
					got = 1;
					post_recvs(e, 0, 1);
				}
		}
	}
	t1 = u4vt_now_ns();
	printf("engine_lat: op=send size=8 iters=%ld rate_gbps=%g "
	       "rtt_us=%.2f\n",
	       n, opt.rate_gbps, (double)(t1 - t0) / (double)n / 1000.0);
}

static void print_bw(uint64_t bytes, uint64_t t0, uint64_t retx)
{
	double secs = (double)(u4vt_now_ns() - t0) / 1e9;
	double gbps = (double)bytes * 8 / secs / 1e9;
	double cap = opt.rate_gbps * GRANULE / (GRANULE + HDR);

	printf("engine_bw: op=%s qps=%d threads=%d size=%zu rate_gbps=%g "
	       "drop=%g stranded=%g bytes=%llu secs=%.3f goodput_gbps=%.3f "
	       "payload_capacity_gbps=%.3f efficiency=%.4f retransmits=%llu\n",
	       opt.op == OP_READ ? "read" : opt.op == OP_SEND ? "send" : "write",
	       opt.qps * opt.threads, opt.threads, opt.size, opt.rate_gbps,
	       opt.drop, opt.stranded, (unsigned long long)bytes, secs, gbps,
	       cap, opt.rate_gbps > 0 ? gbps / cap : 0.0,
	       (unsigned long long)retx);
}

/* --inproc: end 0 writes to end 1, both moved by this thread. */
static int inproc(void)
{
	struct end a, b;
	struct ibv_wc wc[32];
	long posted = 0, done = 0;
	uint64_t t0;

	open_end(&b, 1, 1);
	open_end(&a, 0, 1);
	connect_qp(b.qp[0], u4v_qp_num(a.qp[0]));
	connect_qp(a.qp[0], u4v_qp_num(b.qp[0]));
	t0 = u4vt_now_ns();
	while (done < opt.iters) {
		struct ibv_sge sge = { (uintptr_t)a.buf, (uint32_t)opt.size,
				       u4v_mr_lkey(a.mr) };
		struct ibv_send_wr wr = { 0 }, *bad;
		int n, i;

		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
		wr.wr.rdma.rkey = u4v_mr_rkey(b.mr);
		while (posted < opt.iters && posted - done < opt.window &&
		       !u4v_post_send(a.qp[0], &wr, &bad))
			posted++;
		u4v_ctx_progress(b.ctx);
		n = u4v_poll_cq(a.cq[0], 32, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].status) {
				fprintf(stderr, "engine_bw: status %d\n",
					wc[i].status);
				exit(1);
			}
			done++;
		}
	}
	print_bw((uint64_t)done * opt.size, t0,
		 u4v_ctx_counters(a.ctx)->retransmits);
	return 0;
}

static int initiator(int rfd, int wfd)
{
	struct end e;
	struct exch theirs;
	struct worker w[16];
	pthread_t th[16];
	int nq = opt.qps * opt.threads, i;
	uint64_t t0, bytes = 0;
	char c;

	open_connected(&e, 0, nq, rfd, wfd, &theirs);
	if (read(rfd, &c, 1) != 1)
		u4vt_die_err("ready", EPIPE);
	if (opt.lat) {
		latency(&e);
		return 0;
	}
	if (opt.idle) {
		idle(rfd, wfd);
		return 0;
	}
	t0 = u4vt_now_ns();
	for (i = 0; i < opt.threads; i++) {
		w[i] = (struct worker){ &e, &theirs, i * opt.qps, opt.qps, 0, 0 };
		pthread_create(&th[i], NULL, drive, &w[i]);
	}
	for (i = 0; i < opt.threads; i++) {
		pthread_join(th[i], NULL);
		bytes += w[i].bytes;
	}
	print_bw(bytes, t0, u4v_ctx_counters(e.ctx)->retransmits);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "op", 1, 0, 'o' },	   { "drop", 1, 0, 'D' },
		{ "stranded", 1, 0, 'S' }, { "lat", 0, 0, 'L' },
		{ "seconds", 1, 0, 'T' },  { "idle", 0, 0, 'I' },
		{ "inproc", 0, 0, 'P' },
		{ 0, 0, 0, 0 }
	};
	struct u4l_sim_config cfg;
	int c, ret;

	while ((c = getopt_long(argc, argv, "q:t:s:n:w:r:", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			opt.op = !strcmp(optarg, "read") ? OP_READ :
				 !strcmp(optarg, "send") ? OP_SEND :
							   OP_WRITE;
			break;
		case 'q': opt.qps = atoi(optarg); break;
		case 't': opt.threads = atoi(optarg); break;
		case 's': opt.size = strtoull(optarg, NULL, 0); break;
		case 'n': opt.iters = atol(optarg); break;
		case 'w': opt.window = atoi(optarg); break;
		case 'r': opt.rate_gbps = atof(optarg); break;
		case 'D': opt.drop = atof(optarg); break;
		case 'S': opt.stranded = atof(optarg); break;
		case 'L': opt.lat = 1; break;
		case 'I': opt.idle = 1; break;
		case 'P': opt.inproc = 1; break;
		case 'T': opt.seconds = atof(optarg); break;
		default:
			fprintf(stderr, "usage: see the comment in engine_bw.c\n");
			return 2;
		}
	}
	if (opt.qps < 1 || opt.threads < 1 || opt.threads > 16 ||
	    opt.qps * opt.threads > MAXQ ||
	    (opt.inproc && (opt.qps * opt.threads > 1 || opt.op != OP_WRITE ||
			    opt.lat || opt.idle || opt.iters < 1))) {
		fprintf(stderr, "engine_bw: 1..%d QPs, 1..16 threads, "
				"--inproc: one QP, WRITE, -n\n",
			MAXQ);
		return 2;
	}
	snprintf(opt.shm, sizeof(opt.shm), "/u4v-engine-bw-%d", (int)getpid());
	u4l_sim_config_default(&cfg);
	cfg.rate_bps = (uint64_t)(opt.rate_gbps * 1e9);
	cfg.faults[0].drop = cfg.faults[1].drop = opt.drop;
	cfg.faults[0].stranded = cfg.faults[1].stranded = opt.stranded;
	if ((ret = -u4l_sim_create(opt.shm, &cfg)))
		u4vt_die_err("sim_create", ret);
	ret = opt.inproc ? inproc() : u4vt_fork_pair(target, initiator);
	if (ret < 0)
		u4vt_die_err("fork", errno);
	if (getenv("ENGINE_BW_COUNTERS")) {
		struct u4l_counters c[2];

		if (!u4l_sim_stat(opt.shm, c))
			for (int e = 0; e < 2; e++)
				printf("end%d: drops %llu retx %llu dupack %llu "
				       "seqnak %llu/%llu ooo %llu dupfr %llu\n",
				       e, (unsigned long long)c[e].fault_drop,
				       (unsigned long long)c[e].retransmits,
				       (unsigned long long)c[e].dup_acks,
				       (unsigned long long)c[e].seq_naks_sent,
				       (unsigned long long)c[e].seq_naks_rcvd,
				       (unsigned long long)c[e].ooo_frames,
				       (unsigned long long)c[e].dup_frames_rcvd);
	}
	u4l_sim_destroy(opt.shm);
	return ret;
}
