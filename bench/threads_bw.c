// SPDX-License-Identifier: MIT
/*
 * Multi-threaded bandwidth over libibverbs: T threads of one process each
 * drive their own RC QP (and CQ) on ONE device context at the same time, so
 * that they meet on whatever the context shares (for usb4verbs: the
 * channel's TX ring). perftest posts from a single thread; this is the
 * check that concurrency does not turn into anti-scaling.
 *
 * Plain libibverbs, meant to run under `usb4v-sim exec` (works on any RC
 * device pair). The process forks: the child opens the target device and
 * serves passively (RDMA WRITE) or posts receives and polls (SEND); the
 * parent opens the initiator device and runs the threads.
 *
 *   threads_bw -d INITIATOR_DEV -D TARGET_DEV [-t THREADS] [-s SIZE]
 *              [--op write|send] [-w WINDOW] [--seconds S]
 *
 * Prints one key=value line: aggregate goodput over the common interval
 * (first thread start .. last thread stop), the slowest and fastest
 * thread, and the CPU time (user+sys, all threads incl. the provider's)
 * of both processes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>

#include "die.h"
#include "u4vt.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXT 16

static struct {
	const char *idev, *tdev;
	int threads, window, op_send;
	size_t size;
	double seconds;
} opt = { NULL, NULL, 1, 64, 0, 65536, 2.0 };

struct exch {
	uint32_t qpn[MAXT];
	union ibv_gid gid;
	uint64_t addr;
	uint32_t rkey;
	int ok;
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq[MAXT];
	struct ibv_qp *qp[MAXT];
	char *buf;
	size_t buflen;
	union ibv_gid gid;
};

static void open_side(struct side *s, const char *name)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		u4vt_die_err("ibv_get_device_list", errno);
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (i == n) {
		fprintf(stderr, "threads_bw: no device %s\n", name);
		exit(1);
	}
	s->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!s->ctx)
		u4vt_die_err("ibv_open_device", errno);
	if (ibv_query_gid(s->ctx, 1, 0, &s->gid))
		memset(&s->gid, 0, sizeof(s->gid));
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd)
		u4vt_die_err("ibv_alloc_pd", errno);
	s->buflen = opt.size * (size_t)opt.threads;
	s->buf = mmap(NULL, s->buflen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (s->buf == MAP_FAILED)
		u4vt_die_err("mmap", errno);
	memset(s->buf, 0x5a, s->buflen);
	s->mr = ibv_reg_mr(s->pd, s->buf, s->buflen,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	if (!s->mr)
		u4vt_die_err("ibv_reg_mr", errno);
	for (i = 0; i < opt.threads; i++) {
		struct ibv_qp_init_attr ia = { 0 };

		s->cq[i] = ibv_create_cq(s->ctx, 2 * opt.window + 64, NULL,
					 NULL, 0);
		if (!s->cq[i])
			u4vt_die_err("ibv_create_cq", errno);
		ia.send_cq = ia.recv_cq = s->cq[i];
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = (uint32_t)opt.window;
		ia.cap.max_recv_wr = (uint32_t)opt.window * 2;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		s->qp[i] = ibv_create_qp(s->pd, &ia);
		if (!s->qp[i])
			u4vt_die_err("ibv_create_qp", errno);
	}
}

static void connect_qp(struct ibv_qp *qp, uint32_t rqpn,
		       const union ibv_gid *rgid)
{
	struct u4vt_conn c;

	u4vt_conn_default(&c, rqpn);
	c.psn = 0;
	c.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		   IBV_ACCESS_LOCAL_WRITE;
	c.rd_atomic = 1;
	c.min_rnr_timer = 12;
	c.is_global = 1;
	c.dgid = *rgid;
	errno = u4vt_ibv_connect(qp, &c);
	if (errno)
		u4vt_die_err("ibv_modify_qp", errno);
}

static void post_recv(struct side *s, int q)
{
	struct ibv_sge sge = { (uintptr_t)(s->buf + (size_t)q * opt.size),
			       (uint32_t)opt.size, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)q, .sg_list = &sge,
				  .num_sge = 1 },
			   *bad;

	if (ibv_post_recv(s->qp[q], &wr, &bad))
		u4vt_die_err("ibv_post_recv", errno);
}

static volatile sig_atomic_t target_stop;
static void on_term(int sig)
{
	(void)sig;
	target_stop = 1;
}

/* Child: passive for WRITE; for SEND it keeps receives posted. */
static int target(int rfd, int wfd)
{
	struct side s;
	struct exch mine = { 0 }, theirs;
	int i;
	char c;

	signal(SIGTERM, on_term);
	open_side(&s, opt.tdev);
	for (i = 0; i < opt.threads; i++)
		mine.qpn[i] = s.qp[i]->qp_num;
	mine.gid = s.gid;
	mine.addr = (uintptr_t)s.buf;
	mine.rkey = s.mr->rkey;
	mine.ok = 1;
	if (write(wfd, &mine, sizeof(mine)) != sizeof(mine) ||
	    read(rfd, &theirs, sizeof(theirs)) != sizeof(theirs) || !theirs.ok)
		return 1;
	for (i = 0; i < opt.threads; i++) {
		connect_qp(s.qp[i], theirs.qpn[i], &theirs.gid);
		if (opt.op_send) {
			int k;

			for (k = 0; k < 2 * opt.window; k++)
				post_recv(&s, i);
		}
	}
	if (write(wfd, "r", 1) != 1)
		return 1;
	if (opt.op_send) {
		struct ibv_wc wc[32];
		unsigned long spins = 0;

		/* poll until the parent says stop (pipe readable) */
		while (!target_stop) {
			for (i = 0; i < opt.threads; i++) {
				int n = ibv_poll_cq(s.cq[i], 32, wc), k;

				for (k = 0; k < n; k++) {
					if (wc[k].status) {
						fprintf(stderr,
							"threads_bw: target "
							"status %d\n",
							wc[k].status);
						return 1;
					}
					post_recv(&s, (int)wc[k].wr_id);
				}
			}
			if (++spins % 1024 == 0) {
				fd_set fds;
				struct timeval tv = { 0, 0 };

				FD_ZERO(&fds);
				FD_SET(rfd, &fds);
				if (select(rfd + 1, &fds, NULL, NULL, &tv) > 0)
					break;
			}
		}
	} else if (read(rfd, &c, 1) < 0) {
		return 1;
	}
	{
		double cpu = (double)u4vt_cpu_ns() / 1e9;

		if (write(wfd, &cpu, sizeof(cpu)) != sizeof(cpu))
			return 1;
	}
	return 0;
}

struct worker {
	struct side *s;
	struct exch *remote;
	int q;
	pthread_barrier_t *bar;
	uint64_t bytes, t0, t1;
	int err;
};

static void *drive(void *arg)
{
	struct worker *w = arg;
	struct side *s = w->s;
	struct ibv_sge sge = { (uintptr_t)(s->buf + (size_t)w->q * opt.size),
			       (uint32_t)opt.size, s->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc[32];
	long posted = 0, done = 0;
	uint64_t end;

	wr.wr_id = (uint64_t)w->q;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.opcode = opt.op_send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = w->remote->addr + (uint64_t)w->q * opt.size;
	wr.wr.rdma.rkey = w->remote->rkey;

	pthread_barrier_wait(w->bar);
	w->t0 = u4vt_now_ns();
	end = w->t0 + (uint64_t)(opt.seconds * 1e9);
	for (;;) {
		bool stop = u4vt_now_ns() >= end;
		int n, i;

		while (!stop && posted - done < opt.window) {
			if (ibv_post_send(s->qp[w->q], &wr, &bad))
				break;
			posted++;
		}
		n = ibv_poll_cq(s->cq[w->q], 32, wc);
		if (n < 0) {
			w->err = 1;
			break;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].status) {
				fprintf(stderr, "threads_bw: status %d (%s)\n",
					wc[i].status,
					ibv_wc_status_str(wc[i].status));
				w->err = 1;
				return NULL;
			}
			done++;
			w->bytes += opt.size;
		}
		if (stop && done == posted)
			break;
	}
	w->t1 = u4vt_now_ns();
	return NULL;
}

static int initiator(int rfd, int wfd)
{
	struct side s;
	struct exch mine = { 0 }, theirs;
	struct worker w[MAXT];
	pthread_t th[MAXT];
	pthread_barrier_t bar;
	uint64_t t0 = UINT64_MAX, t1 = 0, bytes = 0;
	double mn = 1e30, mx = 0, secs, cpu0, icpu, tcpu = -1;
	int i, err = 0;
	char c;

	open_side(&s, opt.idev);
	for (i = 0; i < opt.threads; i++)
		mine.qpn[i] = s.qp[i]->qp_num;
	mine.gid = s.gid;
	mine.ok = 1;
	if (read(rfd, &theirs, sizeof(theirs)) != sizeof(theirs) ||
	    write(wfd, &mine, sizeof(mine)) != sizeof(mine))
		u4vt_die_err("exchange", errno);
	for (i = 0; i < opt.threads; i++)
		connect_qp(s.qp[i], theirs.qpn[i], &theirs.gid);
	if (read(rfd, &c, 1) != 1)
		u4vt_die_err("target not ready", errno);

	cpu0 = (double)u4vt_cpu_ns() / 1e9;
	pthread_barrier_init(&bar, NULL, (unsigned)opt.threads);
	for (i = 0; i < opt.threads; i++) {
		w[i] = (struct worker){ .s = &s, .remote = &theirs, .q = i,
					.bar = &bar };
		pthread_create(&th[i], NULL, drive, &w[i]);
	}
	for (i = 0; i < opt.threads; i++) {
		double g;

		pthread_join(th[i], NULL);
		err |= w[i].err;
		bytes += w[i].bytes;
		if (w[i].t0 < t0)
			t0 = w[i].t0;
		if (w[i].t1 > t1)
			t1 = w[i].t1;
		g = (double)w[i].bytes * 8 / ((double)(w[i].t1 - w[i].t0));
		if (g < mn)
			mn = g;
		if (g > mx)
			mx = g;
	}
	icpu = (double)u4vt_cpu_ns() / 1e9 - cpu0;
	if (write(wfd, "s", 1) != 1 ||
	    read(rfd, &tcpu, sizeof(tcpu)) != sizeof(tcpu))
		tcpu = -1;
	secs = (double)(t1 - t0) / 1e9;
	printf("threads_bw: op=%s threads=%d qps=%d size=%zu window=%d "
	       "bytes=%llu secs=%.3f goodput_gbps=%.3f "
	       "thread_min_gbps=%.3f thread_max_gbps=%.3f "
	       "init_cpu_s=%.3f target_cpu_s=%.3f ok=%d\n",
	       opt.op_send ? "send" : "write", opt.threads, opt.threads,
	       opt.size, opt.window, (unsigned long long)bytes, secs,
	       (double)bytes * 8 / secs / 1e9, mn, mx, icpu, tcpu, !err);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "op", 1, 0, 'o' },
					    { "seconds", 1, 0, 'T' },
					    { 0, 0, 0, 0 } };
	int c, ret;

	while ((c = getopt_long(argc, argv, "d:D:t:s:w:", lo, NULL)) != -1) {
		switch (c) {
		case 'd': opt.idev = optarg; break;
		case 'D': opt.tdev = optarg; break;
		case 't': opt.threads = atoi(optarg); break;
		case 's': opt.size = strtoull(optarg, NULL, 0); break;
		case 'w': opt.window = atoi(optarg); break;
		case 'T': opt.seconds = atof(optarg); break;
		case 'o': opt.op_send = !strcmp(optarg, "send"); break;
		default:
			fprintf(stderr, "usage: see the comment in threads_bw.c\n");
			return 2;
		}
	}
	if (!opt.idev || !opt.tdev || opt.threads < 1 || opt.threads > MAXT ||
	    opt.size < 1 || opt.window < 1 || opt.seconds <= 0) {
		fprintf(stderr, "threads_bw: need -d DEV -D DEV, 1..%d threads\n",
			MAXT);
		return 2;
	}
	ret = u4vt_fork_pair(target, initiator);
	if (ret < 0)
		u4vt_die_err("fork", errno);
	return ret;
}
