// SPDX-License-Identifier: MIT
/*
 * The lane meter: how many lanes a peer needs where nobody knows what one
 * ring pair moves. A kernel device reports the wire's rate but not its
 * rings' (an NHI ring moves about half of a bonded link on some hosts, all
 * of it on others), so a peer there starts with one lane and measures.
 *
 * A window of U4V_LANE_METER_NS counts when QPs waited for TX space at
 * nearly every progress pass in it, and the passes came often enough to
 * keep the rings fed: then the rings or the wire held the peer back, and
 * what its lanes moved is what they can move. Below 3/5 of the wire (a
 * ring of half the wire moves 1/2; a host that held the sender back for a
 * while, 2/3 or more), the rings are the bottleneck, and the peer takes
 * another lane.
 * While each added lane raised the rate by 15 % and the wire is not yet
 * full (19/20), it takes another; then it stops for good (settled). Each
 * step takes U4V_LANE_METER_VOTES such windows in a row that agree. A lane
 * that did not help (the receiver or a CPU was the bottleneck) stays: it
 * costs one channel of the budget, and taking lanes back while frames may
 * be in flight on them would cost more. A lane the budget cannot give
 * stops it too (counted in lanes_short by lanes.c).
 */
#include "engine_int.h"

/* Does this context measure its lanes rather than take the rates' word? */
static bool lanes_measured(struct u4v_ctx *ctx)
{
	if (!ctx->ops->chan_get_lane || ctx->lanes_forced ||
	    !ctx->ops->wire_rate(ctx->link))
		return false;
	return ctx->lanes_auto || u4v_ring_rate_unknown(ctx);
}

static void meter_restart(struct u4v_peer *peer, uint64_t now)
{
	struct u4v_lane_meter *m = &peer->meter;

	m->since = m->last = now;
	m->dry = 0;
	m->bytes = __atomic_load_n(&peer->tx_bytes, __ATOMIC_RELAXED);
	m->samples = 0;
	m->backlogged = 0;
}

/* Another lane, after a window that moved rate bytes/s on a wire of wire? */
static bool lane_helps(const struct u4v_lane_meter *m, double rate,
		       double wire)
{
	if (!m->rate_before)
		return rate < wire * 3 / 5;
	return rate >= (double)m->rate_before * 1.15 && rate < wire * 19 / 20;
}

/*
 * A window in which QPs waited for TX space: its vote. U4V_LANE_METER_VOTES
 * windows in a row decide, so that one slow window (the host took the
 * CPU) does not cost a lane, nor one fast window stop the meter.
 */
static void meter_vote(struct u4v_ctx *ctx, struct u4v_peer *peer,
		       double rate)
{
	struct u4v_lane_meter *m = &peer->meter;
	bool helps = lane_helps(m, rate, (double)ctx->ops->wire_rate(ctx->link));

	if (helps != (m->votes > 0)) {
		m->votes = 0;
		m->rate_best = 0;
	}
	if (!helps) {
		if (m->votes > -(int)U4V_LANE_METER_VOTES)
			m->votes--;
	} else {
		m->votes++;
		if ((uint64_t)rate > m->rate_best)
			m->rate_best = (uint64_t)rate;
	}
	if (m->votes >= (int)U4V_LANE_METER_VOTES) {
		/* the next lane must beat the best window of these */
		m->rate_before = m->rate_best;
		m->rate_best = 0;
		m->votes = 0;
		m->since = 0; /* the next window begins with the lane */
		__atomic_store_n(&m->grow, true, __ATOMIC_RELEASE);
		__atomic_store_n(&ctx->lanes_grow, true, __ATOMIC_RELEASE);
	} else if (m->votes <= -(int)U4V_LANE_METER_VOTES && m->rate_before) {
		__atomic_store_n(&m->settled, true, __ATOMIC_RELEASE);
	}
}

/*
 * One sample per progress pass and peer, before the pass pushes the QPs
 * that wait for TX space. Caller holds progress_lock.
 */
void u4v_lanes_meter(struct u4v_ctx *ctx, struct u4v_peer *peer, uint64_t now)
{
	struct u4v_lane_meter *m = &peer->meter;

	if (__atomic_load_n(&m->settled, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&m->grow, __ATOMIC_ACQUIRE))
		return;
	if (!m->since || now - m->since > 4 * U4V_LANE_METER_NS) {
		/* the first pass, or passes too far apart to judge */
		if (lanes_measured(ctx))
			meter_restart(peer, now);
		else /* the rates decide, once (lanes.c) */
			__atomic_store_n(&m->settled, true, __ATOMIC_RELEASE);
		return;
	}
	/*
	 * Passes further apart than the TX queue lasts let the rings run dry
	 * (on the software cable, stop them: the sender's CPU moves them): a
	 * window dry for 1/5 of its time measures the host, not the rings
	 * (less costs it less than the 2/5 below the wire a first vote needs).
	 */
	if (now - m->last > U4V_TX_QUEUE_NS)
		m->dry += now - m->last - U4V_TX_QUEUE_NS;
	m->last = now;
	m->samples++;
	if (peer->pending_head)
		m->backlogged++;
	if (now - m->since < U4V_LANE_METER_NS)
		return;
	if (m->dry * 5 < now - m->since && m->samples >= U4V_LANE_METER_SAMPLES &&
	    m->backlogged * 10ull >= m->samples * 9ull)
		meter_vote(ctx, peer,
			   (double)(__atomic_load_n(&peer->tx_bytes,
						    __ATOMIC_RELAXED) -
				    m->bytes) *
			       1e9 / (double)(now - m->since));
	if (m->since)
		meter_restart(peer, now);
}

/*
 * Take the lanes the meter asked for. Outside progress_lock (channels are
 * made under obj_lock); a busy obj_lock leaves it to the next call.
 */
void u4v_lanes_grow(struct u4v_ctx *ctx)
{
	uint32_t i;

	if (!__atomic_exchange_n(&ctx->lanes_grow, false, __ATOMIC_ACQ_REL))
		return;
	if (pthread_mutex_trylock(&ctx->obj_lock)) {
		__atomic_store_n(&ctx->lanes_grow, true, __ATOMIC_RELEASE);
		return;
	}
	for (i = 0; i < U4L_MAX_CTX; i++) {
		struct u4v_peer *peer = &ctx->peers[i];
		/* a peer whose lane 0 the remote context made: one lane */
		uint32_t want = (peer->lanes_want ? peer->lanes_want : 1) + 1;

		if (!__atomic_exchange_n(&peer->meter.grow, false,
					 __ATOMIC_ACQ_REL) ||
		    !peer->chan)
			continue;
		if (want <= U4L_MAX_LANES) {
			peer->lanes_want = want;
			u4v_lanes_open(ctx, peer, i);
		}
		if (want >= U4L_MAX_LANES ||
		    !__atomic_load_n(&peer->lanes[want - 1], __ATOMIC_ACQUIRE))
			__atomic_store_n(&peer->meter.settled, true,
					 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ctx->obj_lock);
}
