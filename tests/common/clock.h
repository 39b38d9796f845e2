/* SPDX-License-Identifier: MIT */
/*
 * Clocks of the tests and the benchmarks (tests/common/clock.c), for
 * programs with or without the engine and libibverbs.
 */
#ifndef U4VT_CLOCK_H
#define U4VT_CLOCK_H

#include <stdint.h>

uint64_t u4vt_now_ns(void); /* CLOCK_MONOTONIC */
uint64_t u4vt_now_ms(void);
/* CPU time (user + system) of this process, all its threads, in ns. */
uint64_t u4vt_cpu_ns(void);

#endif
