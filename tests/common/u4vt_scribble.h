/* SPDX-License-Identifier: MIT */
/*
 * A hostile (or buggy) peer of the software cable: where in the shared
 * segment it writes. Used by the scribbler of test_sim_scribble (random
 * picks) and by the fuzz target fuzz_sim (picks from the input), so both
 * aim at the same things: the header (geometry, config, lock, counters),
 * the context and channel tables, an active channel's control block, its
 * descriptors and their metadata, and the headers of frames in its pools.
 */
#ifndef U4VT_SCRIBBLE_H
#define U4VT_SCRIBBLE_H

#include <stddef.h>
#include <stdint.h>

#include "link/sim_int.h"

enum u4vt_spot {
	U4VT_SPOT_HEADER,   /* anywhere in struct sim_seg */
	U4VT_SPOT_CTX,	    /* a context slot */
	U4VT_SPOT_CHAN_ENT, /* a channel table entry */
	U4VT_SPOT_CTL,	    /* a channel's per-direction control block */
	U4VT_SPOT_DESC,	    /* a TX or RX descriptor */
	U4VT_SPOT_META,	    /* RX arrival time / flags, TX completion time */
	U4VT_SPOT_FRAME,    /* the first bytes of a frame buffer */
	U4VT_SPOT_NR
};

/* The channel slot the pick aims at: an active one if there is any. */
static inline uint32_t u4vt_spot_slot(const struct sim_seg *s,
				      const struct sim_geom *g, uint32_t pick)
{
	uint32_t i, n = 0, active[SIM_NSLOTS_MAX];

	for (i = 0; i < g->nslots; i++)
		if (__atomic_load_n(&s->chans[i].gs, __ATOMIC_RELAXED) &
		    SIM_CHAN_ACTIVE)
			active[n++] = i;
	return n ? active[pick % n] : pick % g->nslots;
}

/*
 * One spot picked by the 64 bits of `pick`: returns its segment offset and
 * in *len how many bytes (1..8) to write there. With spare_lock the
 * control-plane lock word is never picked (each garbled lock costs its
 * waiters SIM_LOCK_WAIT_NS, too slow for a fuzzer; the scribble test
 * garbles it).
 */
static inline uint64_t u4vt_scribble_spot(const struct sim_seg *s,
					  const struct sim_geom *g,
					  uint64_t pick, bool spare_lock,
					  uint32_t *len)
{
	uint32_t kind = pick % U4VT_SPOT_NR, a = (uint32_t)(pick >> 8);
	uint32_t slot = u4vt_spot_slot(s, g, (uint32_t)(pick >> 40));
	uint32_t d = (pick >> 3) & 1, idx = a % g->depth;
	uint64_t dir = sim_slot_off(g, slot) + SIM_PAGE + d * g->dir_size;
	uint64_t off;

	*len = 1 + ((pick >> 4) & 7);
	switch (kind) {
	case U4VT_SPOT_CTX:
		off = offsetof(struct sim_seg, ctx) +
		      a % sizeof(((struct sim_seg *)0)->ctx);
		break;
	case U4VT_SPOT_CHAN_ENT:
		off = offsetof(struct sim_seg, chans) +
		      a % (g->nslots * sizeof(struct sim_chan_ent));
		break;
	case U4VT_SPOT_CTL:
		off = sim_slot_off(g, slot) + a % sizeof(struct sim_chan);
		*len = 4;
		off &= ~3ull;
		break;
	case U4VT_SPOT_DESC:
		/* tx_desc[depth] then rx_desc[depth]: addr (8), w (4) */
		off = dir +
		      (uint64_t)((a >> 16) & 1) * g->depth *
			  sizeof(struct sim_desc) +
		      (uint64_t)idx * sizeof(struct sim_desc) +
		      (pick & 4 ? offsetof(struct sim_desc, w) : 0);
		*len = pick & 4 ? 4 : 8;
		break;
	case U4VT_SPOT_META:
		off = dir + 2ull * g->depth * sizeof(struct sim_desc);
		if (pick & 4) /* tx_done[idx] */
			off += (uint64_t)g->depth * sizeof(struct sim_meta) +
			       (uint64_t)idx * 8;
		else /* rx_meta[idx]: arrival, flags */
			off += (uint64_t)idx * sizeof(struct sim_meta) +
			       ((a >> 16) & 1) * 8;
		*len = pick & 4 || !((a >> 16) & 1) ? 8 : 4;
		break;
	case U4VT_SPOT_FRAME:
		/* held, tx_pool, rx_pool: their first 64 bytes */
		off = dir + g->dir_size -
		      (2ull * g->depth + 1) * U4L_FRAME_MAX +
		      (uint64_t)(a % (2 * g->depth + 1)) * U4L_FRAME_MAX +
		      ((a >> 24) & 63);
		break;
	default:
		off = a % sizeof(struct sim_seg);
		break;
	}
	if (spare_lock && off < offsetof(struct sim_seg, lock) + 4 &&
	    off + *len > offsetof(struct sim_seg, lock))
		off = offsetof(struct sim_seg, lock) + 4;
	return off;
}

#endif
