/* SPDX-License-Identifier: MIT */
/*
 * What the unthrottled software cable sustains: one sender process and one
 * receiver process on opposite ends, 4 KiB frames. The sender copies each
 * payload into its TX slot (as the engine does), the receiver copies it out
 * of the RX slot (into "the MR"), unless --nocopy.
 *
 *   sim_throughput [-n frames] [-d ring_depth] [-b batch] [-r rate_bps]
 *                  [--nocopy] [--threads]
 *
 * -r sets a wire rate (default 0: unthrottled) to check the wire model.
 *
 * Prints one line:
 *   sim_throughput: frames=N size=4096 secs=S frames_per_s=F GB_per_s=G ...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <usb4verbs/link.h>
#include <usb4verbs/sim.h>

#include "u4vt.h"

#define SPIN 256 /* failed polls before wait() */

static const char *g_name;
static uint64_t g_frames = 2000000;
static uint32_t g_batch = 32;
static bool g_copy = true;

struct shared_result {
	uint64_t t_first, t_last, received, bad;
	uint32_t recv_ctx;
	volatile int ready;
};

static struct shared_result *g_res;

static int receiver(void)
{
	struct u4l_dev *d;
	struct u4l_chan *c = NULL;
	struct u4l_rx_frame f;
	static uint8_t mr[1 << 20] __attribute__((aligned(64)));
	uint64_t got = 0, bad = 0, off = 0;

	if (u4l_sim_open(g_name, 1, &d))
		return 1;
	g_res->recv_ctx = d->ops->ctx_id(d);
	__atomic_store_n(&g_res->ready, 1, __ATOMIC_RELEASE);
	while (!(c = d->ops->chan_accept(d)))
		d->ops->wait(d, u4l_now_ns() + 10000000ull, 0);
	uint32_t misses = 0;
	while (got < g_frames) {
		if (d->ops->rx_peek(c, &f) != 1) {
			/* poll like the engine: spin a little, then sleep */
			if (++misses > SPIN) {
				d->ops->wait(d, u4l_now_ns() + 1000000ull, 0);
				misses = 0;
			}
			continue;
		}
		misses = 0;
		if (!got)
			g_res->t_first = u4l_now_ns();
		if (f.len != U4L_FRAME_MAX ||
		    ((const uint64_t *)f.buf)[0] != got)
			bad++;
		if (g_copy) {
			memcpy(mr + off, f.buf, f.len);
			off = (off + U4L_FRAME_MAX) & (sizeof(mr) - 1);
		}
		d->ops->rx_release(c);
		got++;
	}
	g_res->t_last = u4l_now_ns();
	g_res->received = got;
	g_res->bad = bad;
	d->ops->close(d);
	return 0;
}

static int sender(void)
{
	struct u4l_dev *d;
	struct u4l_chan *c;
	static uint8_t src[1 << 20] __attribute__((aligned(64)));
	uint64_t sent = 0, off = 0;
	uint32_t misses = 0;

	memset(src, 0x5a, sizeof(src));
	if (u4l_sim_open(g_name, 0, &d))
		return 1;
	while (!__atomic_load_n(&g_res->ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (d->ops->chan_get(d, g_res->recv_ctx, &c))
		return 2;
	while (sent < g_frames) {
		uint32_t n = 0;
		void *buf;
		while (n < g_batch && sent < g_frames &&
		       (buf = d->ops->tx_slot(c))) {
			if (g_copy) {
				memcpy(buf, src + off, U4L_FRAME_MAX);
				off = (off + U4L_FRAME_MAX) & (sizeof(src) - 1);
			}
			memcpy(buf, &sent, sizeof(sent));
			d->ops->tx_post(c, U4L_FRAME_MAX, U4L_PDF_DATA);
			sent++;
			n++;
		}
		if (n) {
			d->ops->tx_doorbell(c);
			misses = 0;
		} else if (!d->ops->tx_space(c) && ++misses > SPIN) {
			d->ops->wait(d, u4l_now_ns() + 1000000ull, 0);
			misses = 0;
		}
	}
	/* keep the context alive until the receiver is done */
	while (!__atomic_load_n(&g_res->received, __ATOMIC_ACQUIRE))
		usleep(1000);
	d->ops->close(d);
	return 0;
}

static void *thr_recv(void *p)
{
	(void)p;
	receiver();
	return NULL;
}

int main(int argc, char **argv)
{
	struct u4l_sim_config cfg;
	char name[64];
	bool threads = false;

	u4vt_cable_config(&cfg);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			g_frames = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-d") && i + 1 < argc)
			cfg.ring_depth = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			cfg.rate_bps = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-b") && i + 1 < argc)
			g_batch = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--nocopy"))
			g_copy = false;
		else if (!strcmp(argv[i], "--threads"))
			threads = true;
		else {
			fprintf(stderr,
				"usage: %s [-n frames] [-d depth] [-b batch] "
				"[-r rate_bps] "
				"[--nocopy] [--threads]\n",
				argv[0]);
			return 2;
		}
	}
	if (!g_frames || !g_batch)
		return 2;
	snprintf(name, sizeof(name), "/u4v-bench-%d", (int)getpid());
	g_name = name;
	int rc = u4l_sim_create(name, &cfg);
	if (rc) {
		fprintf(stderr, "u4l_sim_create: %s\n", strerror(-rc));
		return 1;
	}
	g_res = mmap(NULL, sizeof(*g_res), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g_res == MAP_FAILED)
		return 1;
	memset(g_res, 0, sizeof(*g_res));

	int status = 0;
	if (threads) {
		pthread_t th;
		pthread_create(&th, NULL, thr_recv, NULL);
		status = sender();
		pthread_join(th, NULL);
	} else {
		pid_t pid = fork();
		if (pid == 0)
			_exit(receiver());
		status = sender();
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			status = 3;
	}
	u4l_sim_destroy(name);
	if (status || g_res->received != g_frames) {
		fprintf(stderr,
			"sim_throughput: failed (status %d, received %llu)\n",
			status, (unsigned long long)g_res->received);
		return 1;
	}
	double secs = (double)(g_res->t_last - g_res->t_first) / 1e9;
	double fps = (double)(g_frames - 1) / secs;
	printf("sim_throughput: frames=%llu size=%u depth=%u batch=%u "
	       "rate_bps=%llu copy=%s "
	       "mode=%s secs=%.3f frames_per_s=%.0f GB_per_s=%.2f bad=%llu\n",
	       (unsigned long long)g_frames, U4L_FRAME_MAX, cfg.ring_depth,
	       g_batch, (unsigned long long)cfg.rate_bps,
	       g_copy ? "in+out" : "none", threads ? "threads" : "processes",
	       secs, fps, fps * U4L_FRAME_MAX / 1e9,
	       (unsigned long long)g_res->bad);
	return g_res->bad ? 1 : 0;
}
