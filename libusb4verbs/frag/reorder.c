// SPDX-License-Identifier: MIT
/* Out-of-order frame holding for reassembly. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frag/frag.h"
#include "rel/psn.h"

int u4f_reorder_init(struct u4f_reorder *r, uint32_t window)
{
	memset(r, 0, sizeof(*r));
	if (!window || (window & (window - 1)))
		return -EINVAL;
	r->window = window;
	return 0;
}

static int ensure_slots(struct u4f_reorder *r)
{
	if (r->slots)
		return 0;
	r->slots = calloc(r->window, sizeof(*r->slots));
	return r->slots ? 0 : -ENOMEM;
}

void u4f_reorder_clear(struct u4f_reorder *r)
{
	uint32_t i;

	/* count is exact: every QP reset or flush passes here, mostly empty */
	if (!r->slots || !r->count)
		return;
	for (i = 0; i < r->window; i++) {
		free(r->slots[i].frame);
		r->slots[i].frame = NULL;
	}
	r->count = 0;
}

void u4f_reorder_destroy(struct u4f_reorder *r)
{
	u4f_reorder_clear(r);
	free(r->slots);
	r->slots = NULL;
}

static int hold(struct u4f_reorder *r, uint32_t expected, uint32_t psn,
		const void *hdr, uint32_t hlen, const void *payload,
		uint32_t paylen, bool placed)
{
	int32_t ahead = psn_diff(psn, expected);
	struct u4f_held *slot;

	if (ahead <= 0 || (uint32_t)ahead >= r->window)
		return -ENOSPC;
	if (ensure_slots(r))
		return -ENOSPC;
	slot = &r->slots[psn & (r->window - 1)];
	if (slot->frame) {
		if (slot->psn == psn)
			return -EEXIST;
		/* a stale frame from an older window position: replace it */
		free(slot->frame);
		slot->frame = NULL;
		r->count--;
	}
	slot->frame = malloc(hlen + paylen);
	if (!slot->frame)
		return -ENOSPC;
	memcpy(slot->frame, hdr, hlen);
	if (paylen)
		memcpy((uint8_t *)slot->frame + hlen, payload, paylen);
	slot->len = hlen + paylen;
	slot->psn = psn;
	slot->placed = placed;
	r->count++;
	return 0;
}

int u4f_reorder_hold(struct u4f_reorder *r, uint32_t expected, uint32_t psn,
		     const void *hdr, uint32_t hlen, const void *payload,
		     uint32_t paylen)
{
	return hold(r, expected, psn, hdr, hlen, payload, paylen, false);
}

int u4f_reorder_hold_placed(struct u4f_reorder *r, uint32_t expected,
			    uint32_t psn, const void *hdr, uint32_t len)
{
	return hold(r, expected, psn, hdr, len, NULL, 0, true);
}

bool u4f_reorder_take(struct u4f_reorder *r, uint32_t expected, void **frame,
		      uint32_t *len)
{
	bool placed;

	return u4f_reorder_take_placed(r, expected, frame, len, &placed);
}

bool u4f_reorder_take_placed(struct u4f_reorder *r, uint32_t expected,
			     void **frame, uint32_t *len, bool *placed)
{
	struct u4f_held *slot;

	if (!r->count || !r->slots)
		return false;
	slot = &r->slots[expected & (r->window - 1)];
	if (!slot->frame)
		return false;
	if (slot->psn != expected) {
		/* older than expected: already delivered by retransmission */
		if (psn_lt(slot->psn, expected)) {
			free(slot->frame);
			slot->frame = NULL;
			r->count--;
		}
		return false;
	}
	*frame = slot->frame;
	*len = slot->len;
	*placed = slot->placed;
	slot->frame = NULL;
	r->count--;
	return true;
}
