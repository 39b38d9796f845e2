/* SPDX-License-Identifier: MIT */
/*
 * Segmentation of messages into frames and reassembly of frames that arrive
 * ahead of their turn. Every data frame carries U4W_GRANULE payload bytes
 * except a message's last, so frame i of a message starts at i * granule.
 */
#ifndef U4V_FRAG_H
#define U4V_FRAG_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/wire.h"

/* Frames a message of len bytes needs (a 0-byte message still needs one). */
static inline uint32_t u4f_nframes(uint64_t len)
{
	return len ? (uint32_t)((len + U4W_GRANULE - 1) / U4W_GRANULE) : 1;
}

/* Payload bytes of frame `index` of a len-byte message. */
static inline uint32_t u4f_frame_len(uint64_t len, uint32_t index)
{
	uint64_t off = (uint64_t)index * U4W_GRANULE;

	if (off >= len)
		return 0;
	return len - off > U4W_GRANULE ? U4W_GRANULE : (uint32_t)(len - off);
}

/*
 * Frames that arrived ahead of the expected PSN, held (copied) until the
 * hole before them is filled. A tail before its head is normal, not an error.
 */
struct u4f_reorder {
	uint32_t window; /* frames held at most, a power of two */
	uint32_t count;
	struct u4f_held {
		void *frame; /* NULL: slot empty */
		uint32_t len;
		uint32_t psn;
		bool placed; /* payload already placed: only the header kept */
	} *slots;
};

int u4f_reorder_init(struct u4f_reorder *r, uint32_t window);
void u4f_reorder_destroy(struct u4f_reorder *r);
/*
 * Hold a copy of a frame with psn ahead of expected: its headers (hlen
 * bytes) and its payload (paylen bytes), which may lie apart. 0: held;
 * -EEXIST: it is already held (duplicate); -ENOSPC: beyond the window (or
 * out of memory): the sender will retransmit it.
 */
int u4f_reorder_hold(struct u4f_reorder *r, uint32_t expected, uint32_t psn,
		     const void *hdr, uint32_t hlen, const void *payload,
		     uint32_t paylen);
/*
 * Hold only the header of a frame whose payload the caller already placed
 * (an RDMA WRITE frame ahead of a hole in the same message): len is the
 * header length; the frame is taken back with placed = true.
 */
int u4f_reorder_hold_placed(struct u4f_reorder *r, uint32_t expected,
			    uint32_t psn, const void *hdr, uint32_t len);
/* Take the frame held for psn == expected, if any; free it with free(). */
bool u4f_reorder_take(struct u4f_reorder *r, uint32_t expected, void **frame,
		      uint32_t *len);
/* The same, telling whether only the header was kept (placed). */
bool u4f_reorder_take_placed(struct u4f_reorder *r, uint32_t expected,
			     void **frame, uint32_t *len, bool *placed);
/* Drop everything held (QP reset / error). */
void u4f_reorder_clear(struct u4f_reorder *r);

#endif
