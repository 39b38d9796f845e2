// SPDX-License-Identifier: MIT
/*
 * mpi_pingpong: two ranks bounce messages of 8 B to 8 MiB and run an
 * allreduce with a known result; every payload that is checked carries a
 * checksum. Prints latency (half the round trip) and bandwidth per size.
 *
 *   mpirun -np 2 ... mpi_pingpong [-t SECONDS] [-m MAX_BYTES]
 *
 * Per size: two checked round trips (a fresh pattern each way, the
 * receiving buffer cleared first, compared in full), then a timed loop of
 * round trips whose last messages are checked too. A mismatch, an MPI error
 * or the time limit (SIGALRM) fails the run.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "die.h"
#include "pattern.h"

#define MIN_SIZE 8u
#define MAX_SIZE (8u << 20)
#define CHECKED_ROUNDS 2
#define REDUCE_LEN (1u << 20)

static int rank;

__attribute__((format(printf, 1, 2), noreturn)) static void
fail(const char *fmt, ...)
{
	char prefix[32];
	va_list ap;

	snprintf(prefix, sizeof(prefix), "rank %d: ", rank);
	va_start(ap, fmt);
	u4vt_vfail_msg(prefix, fmt, ap);
	va_end(ap);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

/* Is buf the pattern of seed? */
static void check(const uint8_t *buf, uint8_t *scratch, size_t size,
		  uint64_t seed)
{
	u4vt_fill(scratch, size, seed);
	if (u4vt_sum(buf, size) != u4vt_sum(scratch, size) ||
	    memcmp(buf, scratch, size))
		fail("a %zu-byte message arrived corrupted", size);
}

/* Timed round trips: rank 0 sends, rank 1 returns what it got. */
static double round_trips(uint8_t *out, uint8_t *in, size_t size, int n)
{
	double t0 = MPI_Wtime();

	for (int i = 0; i < n; i++) {
		if (rank == 0) {
			MPI_Send(out, (int)size, MPI_BYTE, 1, 1,
				 MPI_COMM_WORLD);
			MPI_Recv(in, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(in, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(in, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	return MPI_Wtime() - t0;
}

/* One round trip with fresh patterns each way, both checked. */
static void checked_round(uint8_t *out, uint8_t *in, uint8_t *scratch,
			  size_t size, uint64_t seed)
{
	int peer = 1 - rank;

	memset(in, 0, size);
	u4vt_fill(out, size, seed + (uint64_t)rank);
	if (rank == 0) {
		MPI_Send(out, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		MPI_Recv(in, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(in, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		MPI_Send(out, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
	}
	check(in, scratch, size, seed + (uint64_t)peer);
}

static void pingpong(size_t max, uint64_t *moved)
{
	uint8_t *out = malloc(max), *in = malloc(max), *scratch = malloc(max);

	if (!out || !in || !scratch)
		fail("out of memory for %zu-byte buffers", max);
	for (size_t size = MIN_SIZE; size <= max; size *= 2) {
		/* about 2 MiB per direction, at least 4 and at most 200 */
		int n = (int)((2u << 20) / size);
		double t;

		n = n < 4 ? 4 : n > 200 ? 200 : n;
		for (int r = 0; r < CHECKED_ROUNDS; r++)
			checked_round(out, in, scratch, size,
				      size * 16 + (uint64_t)r * 4);
		u4vt_fill(out, size, size * 16 + 9);
		memset(in, 0, size);
		MPI_Barrier(MPI_COMM_WORLD);
		t = round_trips(out, in, size, n);
		/* the timed loop's last message, too, arrived intact */
		check(in, scratch, size, size * 16 + 9);
		*moved += 2 * (uint64_t)size * (uint64_t)(n + CHECKED_ROUNDS);
		if (rank == 0)
			printf("mpi_pingpong: %8zu B  latency %10.2f us  "
			       "bandwidth %9.2f MB/s  (%d round trips, "
			       "checked)\n",
			       size, t / n / 2 * 1e6,
			       (double)size * n * 2 / t / 1e6, n);
	}
	free(out);
	free(in);
	free(scratch);
}

/* Every rank contributes i + 7 * rank at index i: the sum is known. */
static void allreduce(int nranks)
{
	int64_t *mine = malloc(REDUCE_LEN * sizeof(*mine));
	int64_t *sum = malloc(REDUCE_LEN * sizeof(*sum));
	int64_t off = 7 * (int64_t)nranks * (nranks - 1) / 2;

	if (!mine || !sum)
		fail("out of memory for %u-element vectors", REDUCE_LEN);
	for (size_t i = 0; i < REDUCE_LEN; i++) {
		mine[i] = (int64_t)i + 7 * (int64_t)rank;
		sum[i] = -1;
	}
	MPI_Allreduce(mine, sum, REDUCE_LEN, MPI_INT64_T, MPI_SUM,
		      MPI_COMM_WORLD);
	for (size_t i = 0; i < REDUCE_LEN; i++)
		if (sum[i] != (int64_t)i * nranks + off)
			fail("allreduce: element %zu is %lld, want %lld", i,
			     (long long)sum[i],
			     (long long)((int64_t)i * nranks + off));
	if (rank == 0)
		printf("mpi_pingpong: allreduce of %u int64 over %d ranks "
		       "ok\n",
		       REDUCE_LEN, nranks);
	free(mine);
	free(sum);
}

int main(int argc, char **argv)
{
	unsigned tmo = 120;
	size_t max = MAX_SIZE;
	uint64_t moved = 0;
	int nranks, c;

	while ((c = getopt(argc, argv, "t:m:")) != -1) {
		if (c == 't')
			tmo = (unsigned)strtoul(optarg, NULL, 10);
		else if (c == 'm')
			max = strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	alarm(tmo);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2)
		fail("needs exactly 2 ranks, not %d", nranks);
	if (max < MIN_SIZE || max > MAX_SIZE)
		fail("-m: %zu is not in %u..%u bytes", max, MIN_SIZE, MAX_SIZE);
	pingpong(max, &moved);
	allreduce(nranks);
	if (rank == 0)
		printf("mpi_pingpong: PASS, %llu ping-pong payload bytes\n",
		       (unsigned long long)moved);
	MPI_Finalize();
	return 0;
}
