// SPDX-License-Identifier: MIT
/*
 * Lanes: the channels (ring pairs) between this context and one remote
 * context. Where one ring pair moves less than the wire (u4l_ops.ring_rate;
 * an NHI ring moves about half of a bonded link), a peer takes as many
 * lanes as the wire needs, within the link's channel budget, and deals its
 * frames round them one at a time, so that every ring moves at its own pace
 * at once. Every frame carries the peer's lane sequence (wire.h); the
 * receiver takes the frames of all lanes in that order, waits a little
 * (U4V_LANE_WAIT_NS) for one that is late on another ring, and none for
 * one that cannot come: when every lane has a later frame at its head, the
 * missing one was lost, and the transport's own recovery deals with it.
 */
#include <errno.h>

#include "engine_int.h"

/*
 * How many lanes the link's rates call for, or USB4V_LANES asks for. Where
 * the ring's rate is unknown (a kernel device), one to begin with: the lane
 * meter takes more while they help (lane_meter.c).
 */
static uint32_t lanes_wanted(struct u4v_ctx *ctx)
{
	uint64_t ring, wire, n;

	if (!ctx->ops->chan_get_lane)
		return 1;
	if (ctx->lanes_forced)
		return ctx->lanes_forced < U4L_MAX_LANES ? ctx->lanes_forced :
							   U4L_MAX_LANES;
	ring = u4v_ring_rate(ctx);
	wire = ctx->ops->wire_rate(ctx->link);
	if (!ring || ctx->lanes_auto)
		return 1;
	if (!wire)
		return U4L_MAX_LANES;
	n = (wire + ring - 1) / ring;
	return n < U4L_MAX_LANES ? (uint32_t)(n ? n : 1) : U4L_MAX_LANES;
}

/* The link's ring_rate op, if any: U4L_RATE_UNKNOWN or 0 (the wire's). */
static uint64_t ring_rate_op(const struct u4v_ctx *ctx)
{
	return ctx->ops->ring_rate ? ctx->ops->ring_rate(ctx->link) : 0;
}

uint64_t u4v_ring_rate(const struct u4v_ctx *ctx)
{
	uint64_t ring = ring_rate_op(ctx);

	return ring == U4L_RATE_UNKNOWN ? 0 : ring;
}

bool u4v_ring_rate_unknown(const struct u4v_ctx *ctx)
{
	return ring_rate_op(ctx) == U4L_RATE_UNKNOWN;
}

/*
 * Put chan in lane l (NULL: none); a lane past the first that this context
 * did not hold yet is counted (lanes_opened: each context counts its own).
 * The TX side reads lanes under tx_lock.
 */
static void lane_set(struct u4v_ctx *ctx, struct u4v_peer *peer, uint32_t l,
		     struct u4l_chan *chan)
{
	bool new_lane = chan && l && chan != peer->lanes[l];

	pthread_mutex_lock(&peer->tx_lock);
	__atomic_store_n(&peer->lanes[l], chan, __ATOMIC_RELEASE);
	if (chan && l)
		__atomic_store_n(&peer->striped, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&peer->tx_lock);
	if (new_lane)
		u4l_count(&ctx->cnt->lanes_opened, 1);
}

/*
 * Take the lanes past peer->chan (lane 0) that the peer wants: what the
 * rates call for, decided once, or what the lane meter has added since. A
 * lane the budget cannot give is counted (lanes_short) and the peer goes
 * on with what it has. Lanes beyond those that the remote context made
 * stay while they live. Caller holds obj_lock.
 */
void u4v_lanes_open(struct u4v_ctx *ctx, struct u4v_peer *peer,
		    uint32_t remote_ctx)
{
	uint32_t want, l;
	bool short_of = false;

	if (!peer->lanes_want)
		peer->lanes_want = lanes_wanted(ctx);
	want = peer->lanes_want;

	for (l = 1; l < U4L_MAX_LANES; l++) {
		struct u4l_chan *old = peer->lanes[l], *chan = NULL;
		int ret;

		if (l >= want || short_of) {
			/* a lane of an earlier incarnation carries nothing */
			if (old && ctx->ops->chan_dead(old))
				lane_set(ctx, peer, l, NULL);
			continue;
		}
		ret = ctx->ops->chan_get_lane(ctx->link, remote_ctx, l, &chan);
		if (ret) {
			if (ret == -ENOSPC)
				u4l_count(&ctx->cnt->lanes_short, want - l);
			short_of = true;
			l--; /* this lane too: dead ones go */
			continue;
		}
		if (chan == old)
			continue;
		u4v_tx_bound(ctx, chan);
		lane_set(ctx, peer, l, chan);
	}
}

/* A channel the remote context made: its lane joins the peer. */
void u4v_lanes_accept(struct u4v_ctx *ctx, struct u4v_peer *peer,
		      struct u4l_chan *chan)
{
	uint32_t l = ctx->ops->chan_lane ? ctx->ops->chan_lane(chan) : 0;

	if (l >= U4L_MAX_LANES)
		return;
	u4v_tx_bound(ctx, chan);
	if (!l) {
		/* a new channel also replaces one whose peer has left */
		pthread_mutex_lock(&peer->tx_lock);
		__atomic_store_n(&peer->chan, chan, __ATOMIC_RELEASE);
		__atomic_store_n(&peer->lanes[0], chan, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&peer->tx_lock);
		return;
	}
	lane_set(ctx, peer, l, chan);
}

/*
 * The lane whose turn it is, from lane `from` on: lanes take frames in
 * strict turn, so that their queues stay as long as each other's and a
 * frame never departs long after the next one did on a lane less busy.
 */
static struct u4l_chan *lane_in_turn(struct u4v_peer *peer, uint32_t *lane)
{
	uint32_t k;

	for (k = 0; k < U4L_MAX_LANES; k++) {
		uint32_t l = (peer->tx_next + k) % U4L_MAX_LANES;
		struct u4l_chan *chan =
		    __atomic_load_n(&peer->lanes[l], __ATOMIC_ACQUIRE);

		if (chan) {
			*lane = l;
			return chan;
		}
	}
	return NULL;
}

/*
 * The lane the next frame goes on, and its free slot in *buf (NULL when
 * that lane's ring is full: the frame waits for its turn). Caller holds
 * tx_lock, and sets tx_next past *lane once the frame is posted.
 */
struct u4l_chan *u4v_lanes_tx_slot(struct u4v_peer *peer, uint8_t **buf,
				   uint32_t *lane)
{
	struct u4l_chan *chan = lane_in_turn(peer, lane);

	*buf = chan ? peer->ops->tx_slot(chan) : NULL;
	return chan;
}

/* Does a UC / UD message go on after a frame with this opcode? */
static bool msg_goes_on(uint8_t opcode)
{
	const struct u4w_opinfo *info;

	if (U4W_TRANSPORT(opcode) == U4W_RC)
		return false;
	info = u4w_opinfo(opcode);
	return info && !(info->flags & U4W_OPF_LAST);
}

/*
 * Does the lanes' turn move on after a frame with this opcode? RC recovers
 * its order whatever happens, so every frame takes the next lane. UC and
 * UD have no recovery: a frame that came after its successor (a lane wait
 * that timed out, under load) would cost the whole message, so their
 * messages stay on one lane, and so does whatever is sent meanwhile (the
 * receiver waits longest for the rest of one). Caller holds tx_lock.
 */
bool u4v_lanes_turn_ends(struct u4v_peer *peer, uint8_t opcode)
{
	if (U4W_TRANSPORT(opcode) == U4W_RC)
		return !peer->tx_msg_open;
	peer->tx_msg_open = msg_goes_on(opcode);
	return !peer->tx_msg_open;
}

/* Can the next frame go now? Caller holds tx_lock. */
bool u4v_tx_room(struct u4v_peer *peer)
{
	struct u4l_chan *chan;
	uint32_t lane;

	if (!__atomic_load_n(&peer->striped, __ATOMIC_ACQUIRE))
		return peer->chan && peer->ops->tx_space(peer->chan);
	chan = lane_in_turn(peer, &lane);
	return chan && peer->ops->tx_space(chan);
}

/* Free TX slots over all lanes (how much is queued). Caller holds tx_lock. */
uint32_t u4v_tx_space(struct u4v_peer *peer)
{
	uint32_t l, n = 0;

	if (!__atomic_load_n(&peer->striped, __ATOMIC_ACQUIRE))
		return peer->chan ? peer->ops->tx_space(peer->chan) : 0;
	for (l = 0; l < U4L_MAX_LANES; l++) {
		struct u4l_chan *chan =
		    __atomic_load_n(&peer->lanes[l], __ATOMIC_ACQUIRE);

		if (chan)
			n += peer->ops->tx_space(chan);
	}
	return n;
}

/* Is lane sequence a before b (within half the sequence space)? */
static bool seq_before(uint16_t a, uint16_t b)
{
	return (int16_t)(uint16_t)(a - b) < 0;
}

/*
 * The head frame of lane l, peeked once and kept until it is dispatched.
 * False when the lane is empty.
 */
static bool lane_head(struct u4v_ctx *ctx, struct u4v_peer *peer, uint32_t l,
		      struct u4l_chan *chan)
{
	struct u4v_lane_head *hd = &peer->rx_head[l];

	if (hd->chan != chan) {
		/* the lane was replaced: what it held is gone with it */
		hd->chan = chan;
		hd->held = false;
	}
	if (hd->held)
		return true;
	if (ctx->ops->rx_peek(chan, &hd->f) != 1)
		return false;
	hd->held = true;
	/* too short for a header: the decoder rejects it, in any order */
	hd->seq = hd->f.len >= U4W_BASE_LEN ? u4w_lane_seq(hd->f.head) :
					      peer->rx_seq;
	return true;
}

/*
 * The lane wait in force. It starts at U4V_LANE_WAIT_NS and doubles, up to
 * U4V_LANE_WAIT_MAX_NS, each time a frame it gave up on comes after all (the
 * rings were late, nothing was lost: the NAK it caused resent a frame for
 * nothing), and halves back each time one it gave up on never came (a loss,
 * which the longer wait only delays). On the software cable a ring is moved
 * by processes the host can deschedule; an NHI's DMA is not.
 */
static uint64_t lane_wait_ns(const struct u4v_peer *peer)
{
	return peer->rx_wait_ns ? peer->rx_wait_ns : U4V_LANE_WAIT_NS;
}

static void lane_gave_up(struct u4v_peer *peer)
{
	if (peer->rx_gave_up_open && peer->rx_wait_ns > U4V_LANE_WAIT_NS)
		peer->rx_wait_ns /= 2;
	peer->rx_gave_up = peer->rx_seq;
	peer->rx_gave_up_open = true;
}

/* A frame after its successors: one a lane wait gave up on. */
static void lane_late(struct u4v_ctx *ctx, struct u4v_peer *peer,
		      uint16_t seq)
{
	u4l_count(&ctx->cnt->lane_late, 1);
	if (!peer->rx_gave_up_open || seq != peer->rx_gave_up)
		return;
	peer->rx_gave_up_open = false;
	peer->rx_wait_ns = lane_wait_ns(peer) * 2;
	if (peer->rx_wait_ns > U4V_LANE_WAIT_MAX_NS)
		peer->rx_wait_ns = U4V_LANE_WAIT_MAX_NS;
}

/*
 * Should the frame with sequence seq wait for rx_seq, which may still come
 * on a lane that is empty now? Bounded by lane_wait_ns() from when the
 * wait began; the progress thread wakes for its end (lane_wait_due).
 */
static bool lane_wait(struct u4v_ctx *ctx, struct u4v_peer *peer,
		      uint16_t seq, bool some_empty)
{
	uint64_t now, due;

	if (!peer->rx_seq_known || seq == peer->rx_seq || !some_empty ||
	    seq_before(seq, peer->rx_seq))
		return false;
	now = u4v_now();
	if (!peer->rx_wait_since) {
		peer->rx_wait_since = now;
		u4l_count(&ctx->cnt->lane_waits, 1);
	}
	/*
	 * The rest of a UC / UD message is on the lane its start came on, and
	 * a frame of another taken before it would cost the whole message:
	 * it is worth the longest wait.
	 */
	due = peer->rx_wait_since + (peer->rx_msg_open ? U4V_LANE_WAIT_MAX_NS :
							 lane_wait_ns(peer));
	if (now >= due) {
		lane_gave_up(peer);
		return false;
	}
	if (!ctx->lane_wait_due || due < ctx->lane_wait_due)
		ctx->lane_wait_due = due;
	return true;
}

/*
 * The next frame of the peer in lane sequence order, and the lane to
 * rx_release() it on once dispatched; NULL when none may go now. A peer
 * with one lane takes its ring as it comes. Caller holds progress_lock.
 */
struct u4l_chan *u4v_lanes_rx_next(struct u4v_ctx *ctx, struct u4v_peer *peer,
				   struct u4l_rx_frame *f)
{
	struct u4v_lane_head *hd;
	bool some_empty = false;
	int best = -1;
	uint32_t l;

	if (!__atomic_load_n(&peer->striped, __ATOMIC_ACQUIRE)) {
		struct u4l_chan *chan =
		    __atomic_load_n(&peer->chan, __ATOMIC_ACQUIRE);

		return ctx->ops->rx_peek(chan, f) == 1 ? chan : NULL;
	}
	for (l = 0; l < U4L_MAX_LANES; l++) {
		struct u4l_chan *chan =
		    __atomic_load_n(&peer->lanes[l], __ATOMIC_ACQUIRE);

		if (!chan)
			continue;
		if (!lane_head(ctx, peer, l, chan)) {
			some_empty = true;
			continue;
		}
		if (best < 0 ||
		    seq_before(peer->rx_head[l].seq, peer->rx_head[best].seq))
			best = (int)l;
	}
	if (best < 0)
		return NULL;
	hd = &peer->rx_head[best];
	if (lane_wait(ctx, peer, hd->seq, some_empty))
		return NULL;
	peer->rx_wait_since = 0;
	if (peer->rx_seq_known && seq_before(hd->seq, peer->rx_seq)) {
		/* the order restored goes on from the later ones */
		lane_late(ctx, peer, hd->seq);
	} else {
		peer->rx_seq = (uint16_t)(hd->seq + 1);
		peer->rx_seq_known = true;
		peer->rx_msg_open =
		    hd->f.len >= U4W_BASE_LEN &&
		    msg_goes_on(u4w_peek_opcode(hd->f.head));
	}
	hd->held = false;
	*f = hd->f;
	return hd->chan;
}
