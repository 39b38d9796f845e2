// SPDX-License-Identifier: MIT
/*
 * The host's own floor under a spinning latency test: two processes
 * ping-pong through one word of shared memory, each spinning on it, as
 * ib_write_lat's two sides spin on the buffer the other one writes. No
 * verbs, no cable: what is left of the tail is the host (scheduler ticks,
 * the hypervisor, the other processes), measured the same way perftest
 * measures ib_write_lat, so bench/run.sh can set the two side by side.
 *
 *   shm_pingpong [-n ITERS] [-w US]
 *
 *   -n ITERS  ping-pongs (default 1000, perftest's default)
 *   -w US     pace: each side spins US microseconds after it sees the
 *             other's write before it answers, so one way takes about US
 *             (default 0). The host stalls a spinning thread a number of
 *             times a second, not per iteration: to see the stalls
 *             ib_write_lat sees, the ping-pong must last as long, so
 *             bench/run.sh passes ib_write_lat's typical.
 *
 * Before the ITERS measured, both sides ping-pong for WARMUP_NS: two
 * processes just forked start on one core, and until the scheduler has
 * spread them every answer waits for a time slice; perftest's two sides
 * have run for a while (connection set-up) before their first iteration.
 *
 * Figures as perftest's print_report_lat: the initiator takes a timestamp
 * before each ping; the ITERS - 1 gaps between consecutive timestamps are
 * round trips; after sorting, the two largest are left out; of the rest
 * (m values) typical is the median, min the first, max the last, p99 the
 * value at index ceil(m * 0.99) and p99.9 at ceil(m * 0.999), avg the
 * mean; every figure is one-way (a round trip / 2). Prints one line:
 *
 *   shm_pingpong: iters=N pace_us=.. typical_us=.. min_us=.. max_us=.. avg_us=..
 *   p99_us=.. p999_us=..
 */
#include <getopt.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "die.h"
#include "u4vt.h"

/* perftest leaves out the largest round trips (LAT_MEASURE_TAIL) */
#define TAIL_LEFT_OUT 2
/* a side whose peer died stops spinning after this long (SIGALRM) */
#define ALARM_S 120
/* unmeasured ping-pongs first, for this long (see the top) */
#define WARMUP_NS 200000000ull
/* the initiator's last word: the target stops */
#define STOP UINT64_MAX

static _Atomic uint64_t *word; /* shared: 2i+1 = ping i, 2i+2 = pong i */
static unsigned long iters = 1000;
static uint64_t pace_ns;

/* Wait for *word == want, then for the pace, as a side that spins until
 * the other's write lands and then does its share of the work. */
static bool await(uint64_t want)
{
	uint64_t t0, v;

	while ((v = atomic_load_explicit(word, memory_order_acquire)) != want)
		if (v == STOP)
			return false;
	if (!pace_ns)
		return true;
	t0 = u4vt_now_ns();
	while (u4vt_now_ns() - t0 < pace_ns)
		;
	return true;
}

/* One ping-pong, number i, from the initiator's side. */
static void ping(uint64_t i)
{
	atomic_store_explicit(word, 2 * i + 1, memory_order_release);
	await(2 * i + 2);
}

/* The passive side: answer each ping, as ib_write_lat's server writes
 * back once it sees the client's write land. */
static int target(int rfd, int wfd)
{
	uint64_t i;
	char c = 'r';

	(void)rfd;
	alarm(ALARM_S);
	if (write(wfd, &c, 1) != 1) /* spinning from here on */
		return 1;
	for (i = 0; await(2 * i + 1); i++)
		atomic_store_explicit(word, 2 * i + 2, memory_order_release);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* perftest's median of the m smallest sorted round trips */
static uint64_t median(const uint64_t *d, unsigned long m)
{
	if ((m - 1) % 2)
		return (d[m / 2] + d[m / 2 - 1]) / 2;
	return d[m / 2];
}

static void report(uint64_t *t)
{
	unsigned long i, n = iters - 1, m = n - TAIL_LEFT_OUT;
	uint64_t *d = t; /* gaps overwrite the timestamps in place */
	double sum = 0;

	for (i = 0; i < n; i++)
		d[i] = t[i + 1] - t[i];
	qsort(d, n, sizeof(*d), cmp_u64);
	for (i = 0; i < m; i++)
		sum += d[i];
	/* ns of a round trip -> us one-way */
#define US(x) ((double)(x) / 2000.0)
	printf("shm_pingpong: iters=%lu pace_us=%.3f typical_us=%.3f min_us=%.3f "
	       "max_us=%.3f avg_us=%.3f p99_us=%.3f p999_us=%.3f\n",
	       iters, pace_ns / 1000.0, US(median(d, m)), US(d[0]), US(d[m]), US(sum / m),
	       US(d[(unsigned long)ceil(m * 0.99)]),
	       US(d[(unsigned long)ceil(m * 0.999)]));
#undef US
}

/* The active side: a timestamp before each ping, as perftest's
 * tposted[] before each post. */
static int initiator(int rfd, int wfd)
{
	uint64_t *t = calloc(iters, sizeof(*t)), t0, n = 0;
	unsigned long i;
	char c;

	(void)wfd;
	if (!t)
		u4vt_die("out of memory");
	alarm(ALARM_S);
	if (read(rfd, &c, 1) != 1)
		u4vt_die("the other process did not start");
	for (t0 = u4vt_now_ns(); u4vt_now_ns() - t0 < WARMUP_NS; n++)
		ping(n);
	for (i = 0; i < iters; i++, n++) {
		t[i] = u4vt_now_ns();
		ping(n);
	}
	atomic_store_explicit(word, STOP, memory_order_release);
	alarm(0);
	report(t);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	char *end;
	double us;
	int opt, ret;

	while ((opt = getopt(argc, argv, "n:w:h")) != -1) {
		switch (opt) {
		case 'n':
			iters = strtoul(optarg, &end, 10);
			if (*end || iters < 3 + TAIL_LEFT_OUT ||
			    iters > 100000000UL) {
				fprintf(stderr, "shm_pingpong: bad -n\n");
				return 2;
			}
			break;
		case 'w':
			us = strtod(optarg, &end);
			if (*end || !(us >= 0 && us <= 1e6)) {
				fprintf(stderr, "shm_pingpong: bad -w\n");
				return 2;
			}
			pace_ns = (uint64_t)(us * 1000.0);
			break;
		case 'h':
			printf("usage: shm_pingpong [-n ITERS] [-w US]\n");
			return 0;
		default:
			fprintf(stderr,
				"usage: shm_pingpong [-n ITERS] [-w US]\n");
			return 2;
		}
	}
	word = mmap(NULL, sizeof(*word), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (word == MAP_FAILED)
		u4vt_die("mmap of the shared word failed");
	atomic_init(word, 0);
	ret = u4vt_fork_pair(target, initiator);
	if (ret)
		u4vt_die("the ping-pong failed (%d)", ret);
	return 0;
}
