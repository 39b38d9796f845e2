// SPDX-License-Identifier: MIT
/*
 * Deterministic payloads and their checksums, for every test that moves
 * data: the engine's tests and the middleware programs (tests/ucx,
 * tests/mpi), which link nothing else of the project.
 */
#include <string.h>

#include "pattern.h"

void u4vt_fill_state(void *buf, size_t len, uint64_t x)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(x >> (8 * (i & 7)));
}

void u4vt_fill(void *buf, size_t len, uint64_t seed)
{
	u4vt_fill_state(buf, len, seed * 0x9e3779b97f4a7c15ull + 1);
}

uint64_t u4vt_sum_salted(const void *buf, size_t len, uint64_t salt)
{
	const uint8_t *p = buf;
	uint64_t h = 0xcbf29ce484222325ull ^ salt;
	size_t i;

	/* FNV-1a over 8-byte words, then the tail */
	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h ^ len;
}

uint64_t u4vt_sum(const void *buf, size_t len)
{
	return u4vt_sum_salted(buf, len, 0);
}
