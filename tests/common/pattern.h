/* SPDX-License-Identifier: MIT */
/* Deterministic payloads and their checksums (tests/common/pattern.c). */
#ifndef U4VT_PATTERN_H
#define U4VT_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* Fill buf with the pattern of seed (xorshift64). */
void u4vt_fill(void *buf, size_t len, uint64_t seed);
/* The same from the generator's state x (not 0): the caller mixes a seed. */
void u4vt_fill_state(void *buf, size_t len, uint64_t x);
/* FNV-1a checksum of buf, length included. */
uint64_t u4vt_sum(const void *buf, size_t len);
/* The same from a basis xor salt: the sum also names what salt says. */
uint64_t u4vt_sum_salted(const void *buf, size_t len, uint64_t salt);

#endif
