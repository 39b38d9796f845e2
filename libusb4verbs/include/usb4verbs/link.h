/* SPDX-License-Identifier: MIT */
/*
 * The ring contract: what the transport engine sees of a cable.
 *
 * A link device is one verbs context's attachment to one end of a cable.
 * A channel joins two contexts: one TX ring and one RX ring on each side,
 * rings of NHI-style 16-byte descriptors over 4 KiB frames. Channels are made
 * lazily (u4l_chan_get) and shared by every QP of a context that talks to the
 * same remote context. Where one ring pair moves less than the wire, two
 * contexts may join with several channels, their lanes (chan_get_lane);
 * the engine stripes over them and restores the order. The backend (sim:
 * shared memory; nhi: rings mapped from the kernel shim) is invisible above
 * this header.
 *
 * Threading: TX of one channel must be serialised by the caller (engine TX
 * lock), RX of one channel likewise (engine RX lock). TX and RX of the same
 * channel may run concurrently. u4l_wait() may run concurrently with both.
 */
#ifndef USB4VERBS_LINK_H
#define USB4VERBS_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/usb4verbs-abi.h>

/* The kernel shim's ABI fixes both; every backend keeps to them. */
#define U4L_FRAME_MAX U4V_FRAME_SIZE /* one NHI frame buffer; no s/g */
#define U4L_MAX_CTX U4V_MAX_CTX	     /* contexts per cable, both ends */
#define U4L_MAX_LANES 4u /* channels (ring pairs) between two contexts */
#define U4L_RATE_UNKNOWN UINT64_MAX /* u4l_ops.ring_rate: nobody knows */

/* Frame kinds carried in the descriptor's PDF field (like thunderbolt-net). */
enum u4l_pdf {
	U4L_PDF_DATA = 1, /* requests and read/atomic responses */
	U4L_PDF_CTRL = 2, /* ACK / NAK: the sim can drop these alone */
};

/* RX descriptor flags reported to the engine. */
enum u4l_rx_flags {
	U4L_RX_CRC_ERR = 1u << 0, /* NHI RX flag 0x1: payload must be ignored */
	U4L_RX_NOWAKE = 1u << 1,  /* completed without a wakeup (stranded) */
};

/* wait() flags. */
enum u4l_wait_flags {
	/*
	 * Frames that carry no data (ACK / NAK: U4L_PDF_CTRL) need not end
	 * the sleep: someone else (an application polling its CQ) takes them.
	 * A hint: a backend may end the sleep for them anyway.
	 */
	U4L_WAIT_DATA = 1u << 0,
	/*
	 * The application polls on under its cover (rx_cover(all)): frames
	 * it covers, there already or on their way, are its polls' and do
	 * not end the sleep either. A hint, as above.
	 */
	U4L_WAIT_COVERED = 1u << 1,
};

struct u4l_dev;
struct u4l_chan;

/* Bytes at the start of a frame that hold every header (wire.h checks). */
#define U4L_RX_HEAD 64u

struct u4l_rx_frame {
	/*
	 * The frame, valid until u4l_rx_release(). On a software cable it is
	 * in the RX ring, which the peer process can write at any moment:
	 * read the payload from here (each byte once: a peer may send any
	 * payload anyway), never the headers.
	 */
	const void *buf;
	/*
	 * Its first min(len, U4L_RX_HEAD) bytes where nobody else writes
	 * them (may be buf when no one can): what is decoded and validated
	 * is what is used.
	 */
	const void *head;
	uint32_t len;	/* 1..U4L_FRAME_MAX */
	uint32_t flags; /* enum u4l_rx_flags */
};

/*
 * Counters per cable end, kept where both the engine and `usb4v-sim stat`
 * can read them (the sim keeps them in the shared segment). All are
 * incremented with relaxed atomics.
 */
struct u4l_counters {
	/* link level, maintained by the backend */
	uint64_t tx_frames, tx_bytes;
	uint64_t rx_frames, rx_bytes;
	uint64_t fault_drop, fault_dup, fault_reorder, fault_crc;
	uint64_t fault_stranded;
	uint64_t rx_overflow; /* E2E off and no RX descriptor posted */
	/* transport level, maintained by the engine */
	uint64_t retransmits;	   /* frames sent (or asked for) again */
	uint64_t dup_acks;	   /* ACKs that did not advance */
	uint64_t stranded_rescues; /* NOWAKE frames found by polling */
	uint64_t rnr_naks_sent, rnr_naks_rcvd;
	uint64_t seq_naks_sent, seq_naks_rcvd;
	uint64_t dup_frames_rcvd; /* duplicate requests / responses seen */
	uint64_t crc_discards;	  /* CRC-flagged frames discarded */
	uint64_t bad_frames;	  /* frames failing header validation */
	uint64_t ooo_frames;	  /* frames held for reordering */
	uint64_t lanes_opened;	  /* lanes past the first, per context */
	uint64_t lanes_short;	  /* a lane the ring rate wanted, not had */
	uint64_t lane_waits;	  /* RX waited for a frame of another lane */
	uint64_t lane_late;	  /* ... that came after the wait gave up */
};

/* Add n to a counter that other threads and processes read (the link's and
 * the engine's counters, usb4v-sim stat): the one way they are counted. */
static inline void u4l_count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* Backend operations; one table per backend. */
struct u4l_ops {
	const char *name;
	void (*close)(struct u4l_dev *dev);
	/* Globally unique (per cable) id of this context, < U4L_MAX_CTX. */
	uint32_t (*ctx_id)(struct u4l_dev *dev);
	/* Is remote context id known to be alive (either end)? */
	bool (*ctx_alive)(struct u4l_dev *dev, uint32_t remote_ctx);
	/*
	 * Find or create the channel to remote_ctx. Two contexts on the same end
	 * get a software loopback channel. Errors (negative errno): EHOSTUNREACH
	 * no such live context; ENOSPC channel budget spent; ENOMEM.
	 */
	int (*chan_get)(struct u4l_dev *dev, uint32_t remote_ctx,
			struct u4l_chan **chan);
	/*
	 * The channel's remote context left (or the cable went down): nothing
	 * sent on it arrives any more. chan_get then finds whoever holds the
	 * id now. A backend may only learn this on a doorbell.
	 */
	bool (*chan_dead)(struct u4l_chan *chan);
	/* Channels created by peers that this context has not seen yet. */
	struct u4l_chan *(*chan_accept)(struct u4l_dev *dev);
	uint32_t (*chan_remote)(struct u4l_chan *chan);
	/*
	 * Optional (without it a context pair has one lane). Find or create
	 * lane `lane` (1 .. U4L_MAX_LANES - 1) of the channels to remote_ctx:
	 * a ring pair of its own, in the channel budget. Errors as chan_get;
	 * EOPNOTSUPP where another ring pair would not be faster (a loopback
	 * channel). chan_accept reports lanes the peer made, as channels.
	 */
	int (*chan_get_lane)(struct u4l_dev *dev, uint32_t remote_ctx,
			     uint32_t lane, struct u4l_chan **chan);
	/* Optional: which lane a channel is (0 without chan_get_lane). */
	uint32_t (*chan_lane)(struct u4l_chan *chan);

	/* TX: buffer of the next free slot, or NULL when the ring is full. */
	void *(*tx_slot)(struct u4l_chan *chan);
	/* Post the slot returned by tx_slot() with len bytes and a PDF. */
	void (*tx_post)(struct u4l_chan *chan, uint32_t len, enum u4l_pdf pdf);
	/* Hand every posted descriptor to the hardware (one call per batch). */
	void (*tx_doorbell)(struct u4l_chan *chan);
	/* Free TX slots (reaps completed descriptors first). */
	uint32_t (*tx_space)(struct u4l_chan *chan);
	/*
	 * Optional. Queue at most `frames` (>= 1) on the TX ring from now on:
	 * tx_slot() gives none and tx_space() counts none past that bound, and
	 * a sender waiting for space is woken as for a full ring. Frames
	 * already queued stay. The engine sizes it to what the wire needs, so
	 * that a retransmission does not wait behind a whole ring.
	 */
	void (*tx_bound)(struct u4l_chan *chan, uint32_t frames);

	/* RX: 1 and the next completed frame in ring order, 0 if none, <0 err. */
	int (*rx_peek)(struct u4l_chan *chan, struct u4l_rx_frame *frame);
	/* Give the frame returned by rx_peek() back to the ring. */
	void (*rx_release)(struct u4l_chan *chan);
	/*
	 * Optional, for a throttled link that knows its schedule. When what
	 * is on the wire for this channel will be through (CLOCK_MONOTONIC
	 * ns, 0: nothing, or not known): *rx the arrival of the last frame
	 * already on its way to us, *tx the departure of the last frame on
	 * our TX ring. Hints for sleeping; nothing is taken or released.
	 */
	void (*wire_due)(struct u4l_chan *chan, uint64_t *rx, uint64_t *tx);

	/*
	 * Sleep until a frame may be ready on any channel of this context, a
	 * channel was created for it, u4l_kick() was called, or deadline_ns
	 * (CLOCK_MONOTONIC) passes. Frames completed with U4L_RX_NOWAKE do not
	 * end the sleep: callers must poll on a timer as well. flags: enum
	 * u4l_wait_flags.
	 */
	void (*wait)(struct u4l_dev *dev, uint64_t deadline_ns,
		     uint32_t flags);
	/* End a wait() of this context (from another thread). */
	void (*kick)(struct u4l_dev *dev);
	/*
	 * Optional. Until until_ns (u4l_now_ns() time) an application polls
	 * this context's channels and takes what comes: frames that carry no
	 * data (U4L_PDF_CTRL) need not end a wait(), nor, with all, any frame
	 * (the peer's sender saves a system call, the sleeper a wake-up).
	 * Each call replaces the last. Frames there when a wait() begins end
	 * it at once, as always. The cover lapses by itself at until_ns, and
	 * later frames end a wait() as usual; one that came under it while a
	 * wait() was under way ends that wait() only at its deadline (so a
	 * caller bounds its sleeps by the cover's end). Ended early (until_ns
	 * 0, or all dropped), it ends a wait() at once for what came under it.
	 */
	void (*rx_cover)(struct u4l_dev *dev, uint64_t until_ns, bool all);
	/* The counters of this context's cable end. */
	struct u4l_counters *(*counters)(struct u4l_dev *dev);
	/* Payload bytes per second of the wire per direction; 0 = unthrottled. */
	uint64_t (*wire_rate)(struct u4l_dev *dev);
	/*
	 * Optional: bytes per second one ring pair moves per direction; 0 (or
	 * no op) = what the wire carries; U4L_RATE_UNKNOWN where the backend
	 * cannot know (a kernel device): the engine measures (lane_meter.c).
	 */
	uint64_t (*ring_rate)(struct u4l_dev *dev);
};

/* Every backend's device starts with this. */
struct u4l_dev {
	const struct u4l_ops *ops;
	uint32_t end; /* 0 or 1: which end of the cable */
};

/* Monotonic clock in nanoseconds, shared by all processes on the host. */
uint64_t u4l_now_ns(void);

#endif
