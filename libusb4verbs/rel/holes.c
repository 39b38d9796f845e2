// SPDX-License-Identifier: MIT
/* Missing READ / atomic response ranges of a requester (rel/holes.h). */
#include <errno.h>
#include <stddef.h>

#include "rel/holes.h"
#include "rel/psn.h"

void u4v_holes_reset(struct u4v_holes *t)
{
	t->count = 0;
	t->unasked = 0;
}

int u4v_holes_add(struct u4v_holes *t, uint32_t psn, uint32_t n)
{
	struct u4v_hole *h;

	if (!n)
		return 0;
	if (t->count == U4V_HOLES)
		return -ENOSPC;
	h = &t->h[t->count++];
	h->psn = psn & U4V_PSN_MASK;
	h->n = n;
	h->seq = 0;
	t->unasked++;
	return 0;
}

void u4v_holes_remove(struct u4v_holes *t, struct u4v_hole *hole)
{
	if (!hole->seq)
		t->unasked--;
	*hole = t->h[--t->count];
}

struct u4v_hole *u4v_holes_find(struct u4v_holes *t, uint32_t psn)
{
	uint32_t i;

	for (i = 0; i < t->count; i++) {
		int32_t d = psn_diff(psn, t->h[i].psn);

		if (d >= 0 && (uint32_t)d < t->h[i].n)
			return &t->h[i];
	}
	return NULL;
}

int u4v_holes_fill(struct u4v_holes *t, uint32_t psn, uint32_t *seq)
{
	struct u4v_hole *h = u4v_holes_find(t, psn);
	uint32_t d;

	if (!h)
		return 0;
	d = (uint32_t)psn_diff(psn, h->psn);
	*seq = h->seq;
	if (h->n == 1) {
		u4v_holes_remove(t, h);
	} else if (d == 0) {
		h->psn = psn_add(h->psn, 1);
		h->n--;
	} else if (d == h->n - 1) {
		h->n--;
	} else {
		struct u4v_hole *right;

		if (t->count == U4V_HOLES)
			return -ENOSPC;
		right = &t->h[t->count++];
		right->psn = psn_add(psn, 1);
		right->n = h->n - d - 1;
		right->seq = h->seq;
		if (!h->seq)
			t->unasked++;
		h->n = d;
	}
	return 1;
}

bool u4v_holes_first(const struct u4v_holes *t, uint32_t psn, uint32_t n,
		     uint32_t *first)
{
	uint32_t i, best = n;

	for (i = 0; i < t->count; i++) {
		int32_t d = psn_diff(t->h[i].psn, psn);

		if (d < 0 && (uint32_t)-d < t->h[i].n)
			d = 0; /* begins before the range, reaches into it */
		if (d >= 0 && (uint32_t)d < best)
			best = (uint32_t)d;
	}
	if (best == n)
		return false;
	*first = psn_add(psn, best);
	return true;
}

void u4v_holes_asked(struct u4v_holes *t, struct u4v_hole *hole)
{
	if (!hole->seq)
		t->unasked--;
	if (!++t->next_seq)
		t->next_seq = 1;
	hole->seq = t->next_seq;
}

void u4v_holes_reask(struct u4v_holes *t, uint32_t seq)
{
	uint32_t i;

	for (i = 0; i < t->count; i++) {
		struct u4v_hole *h = &t->h[i];

		if (h->seq && (!seq || (int32_t)(h->seq - seq) < 0)) {
			h->seq = 0;
			t->unasked++;
		}
	}
}
