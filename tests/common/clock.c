// SPDX-License-Identifier: MIT
/* Clocks of the tests and the benchmarks; see clock.h. */
#include <sys/resource.h>
#include <time.h>

#include "clock.h"

uint64_t u4vt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t u4vt_now_ms(void)
{
	return u4vt_now_ns() / 1000000u;
}

uint64_t u4vt_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
		       1000000000ull +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}
