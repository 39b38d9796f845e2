/* SPDX-License-Identifier: MIT */
/*
 * The requester's record of READ and atomic responses that the responder
 * sent but that never arrived: ranges of missing response PSNs ("holes"),
 * each with the order in which it was last asked for again. Responses of
 * later PSNs are placed meanwhile, so a lost frame costs one resend.
 *
 * A hole is asked for with a READ request for exactly its range (or the
 * atomic request again); the responder serves such re-requests in the order
 * they arrive, ahead of new responses. So when the answer to one ask
 * arrives, every hole asked before it that is still missing was lost again:
 * it is asked once more at once, without waiting for a timer.
 */
#ifndef U4V_HOLES_H
#define U4V_HOLES_H

#include <stdbool.h>
#include <stdint.h>

/* Holes a QP tracks at once; more losses wait until some are filled. */
#define U4V_HOLES 64u

struct u4v_hole {
	uint32_t psn; /* first missing PSN */
	uint32_t n;   /* missing PSNs from there */
	uint32_t seq; /* order of the last ask; 0: not asked yet */
};

struct u4v_holes {
	struct u4v_hole h[U4V_HOLES];
	uint32_t count;
	uint32_t unasked;  /* holes with seq 0 */
	uint32_t next_seq; /* last seq handed out */
};

void u4v_holes_reset(struct u4v_holes *t);
/* Note [psn, psn + n) as missing, not asked yet. 0 or -ENOSPC. */
int u4v_holes_add(struct u4v_holes *t, uint32_t psn, uint32_t n);
/*
 * psn arrived: take it out of its hole. 1 if it was missing (*seq: the
 * hole's ask order), 0 if it was not (a duplicate), -ENOSPC if the hole
 * would split and the table is full (the frame is treated as lost).
 */
int u4v_holes_fill(struct u4v_holes *t, uint32_t psn, uint32_t *seq);
/* The hole holding psn, or NULL. */
struct u4v_hole *u4v_holes_find(struct u4v_holes *t, uint32_t psn);
/* The lowest missing PSN in [psn, psn + n), if any. */
bool u4v_holes_first(const struct u4v_holes *t, uint32_t psn, uint32_t n,
		     uint32_t *first);
/* Record that hole was asked for now (it gets the next order). */
void u4v_holes_asked(struct u4v_holes *t, struct u4v_hole *hole);
/* Ask again for every hole asked before order seq (0: for all). */
void u4v_holes_reask(struct u4v_holes *t, uint32_t seq);
/* Forget a hole (its WQE is gone). */
void u4v_holes_remove(struct u4v_holes *t, struct u4v_hole *hole);

#endif
