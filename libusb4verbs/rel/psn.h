/* SPDX-License-Identifier: MIT */
/* 24-bit packet sequence numbers: wrap-safe arithmetic. */
#ifndef U4V_PSN_H
#define U4V_PSN_H

#include <stdbool.h>
#include <stdint.h>

#define U4V_PSN_MASK 0xffffffu

static inline uint32_t psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & U4V_PSN_MASK;
}

/* Signed distance a - b, valid while |a - b| < 2^23. */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline bool psn_lt(uint32_t a, uint32_t b)
{
	return psn_diff(a, b) < 0;
}

static inline bool psn_le(uint32_t a, uint32_t b)
{
	return psn_diff(a, b) <= 0;
}

#endif
