/* SPDX-License-Identifier: MIT */
/*
 * The software cable: the link contract in a shared-memory segment that both
 * ends map. No daemon, no thread: the doorbell "DMAs" frames into the peer's
 * posted RX descriptors and stamps each with an arrival time from the wire
 * model; a receiver sees a frame once that time has passed.
 *
 * Semantics the engine can rely on (implementation: libusb4verbs/link/sim*.c):
 * - Wire model, per cable direction, shared by all channels of it: a frame
 *   departs at max(now, wire free) + len*8/rate and arrives `latency_ns`
 *   later; its TX slot is reusable only after departure (that throttles the
 *   sender). rate_bps 0: departure = doorbell time. With ring_rate_bps, a
 *   frame also departs no earlier than max(now, ring free) +
 *   len*8/ring_rate, per channel direction: one ring pair carries at most
 *   ring_rate, and frames of other rings use the wire meanwhile (the wire
 *   stays reserved for each frame in doorbell order, at its own rate).
 * - E2E on: a frame with no posted RX slot stays in the TX ring (not
 *   completed) and moves when the receiver releases RX slots or the sender
 *   rings / asks tx_space again. E2E off: it is dropped (rx_overflow).
 * - Loopback channels (both contexts on one end, or a context to itself):
 *   no wire model, no latency, no faults, always E2E, not counted in the
 *   link-level counters (they never cross the cable). Budget: 64 per cable,
 *   separate from max_channels.
 * - Counters: tx_frames/tx_bytes count on the sending end (every frame that
 *   went onto the wire, including dropped ones); rx_frames/rx_bytes (every
 *   delivered copy, duplicates included), fault_* and rx_overflow count on
 *   the receiving end. drop_ctrl losses count as fault_drop. A reordered
 *   frame also counts in fault_crc / fault_stranded if it drew those.
 * - Faults are drawn per frame from a splitmix64 stream per direction
 *   seeded from `seed`: deterministic for one seed and one frame order.
 *   drop/drop_ctrl exclude the others. dup needs two free RX slots, else the
 *   frame is delivered once (so under sustained E2E backpressure, when RX
 *   slots free one at a time, fewer frames are duplicated). reorder holds
 *   one frame per direction and delivers it right after the next frame of
 *   that channel direction, or at the next tx_doorbell() if none came.
 *   crc delivers with U4L_RX_CRC_ERR (NHI flag 0x1) and 3 bytes garbled.
 *   stranded delivers with U4L_RX_NOWAKE: no wakeup, and a NOWAKE frame at
 *   the head of a ring does not end u4l_wait().
 * - Contexts: ids are slots 0..63 of a table shared by both ends. Opening
 *   fails with -EMFILE when all slots are taken by live processes (slots of
 *   dead pids are reclaimed first, with their channels). chan_get reclaims
 *   dead-pid contexts before failing with -ENOSPC.
 * - A channel whose peer closed (or was reclaimed) is dead: rx_peek returns
 *   0, tx_slot returns a scratch buffer, posts go nowhere, tx_space reports
 *   an empty ring; ctx_alive(peer) is false (it checks the pid, kill(0)).
 *   A later chan_get to the same id makes a new channel if the id is alive.
 * - chan_accept reports a peer-created channel once, unless this context
 *   already found it with chan_get (same handle either way).
 */
#ifndef USB4VERBS_SIM_H
#define USB4VERBS_SIM_H

#include <stdint.h>
#include <usb4verbs/link.h>

/* Fault probabilities, per frame, for one direction (0.0 .. 1.0). */
struct u4l_sim_faults {
	double drop;	  /* frame vanishes (TX still completes) */
	double dup;	  /* frame delivered twice */
	double reorder;	  /* frame delivered after the next one */
	double crc;	  /* frame delivered with U4L_RX_CRC_ERR, payload garbled */
	double stranded;  /* frame completes without waking the receiver */
	double drop_ctrl; /* only U4L_PDF_CTRL frames (ACK loss) */
};

struct u4l_sim_config {
	uint64_t rate_bps;	/* bits per second per direction; 0 = unthrottled */
	/*
	 * What one ring pair (one channel) moves per direction, in bits per
	 * second; 0 = as much as the wire. Real NHIs move less through one
	 * ring than a bonded link carries.
	 */
	uint64_t ring_rate_bps;
	uint32_t latency_ns;	/* one-way latency added to every frame */
	uint32_t ring_depth;	/* descriptors per ring, power of two, 16..4096 */
	uint32_t max_channels;	/* cross-cable channel budget (loopback is free) */
	uint32_t e2e;		/* 1: E2E flow control (no RX overflow) */
	uint64_t seed;		/* fault PRNG seed */
	struct u4l_sim_faults faults[2]; /* [d]: frames travelling from end d */
};

/*
 * Defaults: 20 Gb/s, rings as fast as the wire, 1 us, 256 descriptors, 16
 * channels, E2E on, no faults.
 */
void u4l_sim_config_default(struct u4l_sim_config *cfg);

/*
 * Create a cable segment as POSIX shared memory object `shm_name` (leading
 * '/', as for shm_open). Fails with -EEXIST if it exists. Returns 0 or -errno.
 */
int u4l_sim_create(const char *shm_name, const struct u4l_sim_config *cfg);
/* Remove the segment (contexts that still map it keep working). */
int u4l_sim_destroy(const char *shm_name);
/* Change faults / rate of a live cable (tests use this mid-run). */
int u4l_sim_reconfigure(const char *shm_name, const struct u4l_sim_config *cfg);
int u4l_sim_read_config(const char *shm_name, struct u4l_sim_config *cfg);

/* Attach a new context to end 0 or 1. Returns 0 or -errno. */
int u4l_sim_open(const char *shm_name, uint32_t end, struct u4l_dev **dev);

/* Snapshot of both ends' counters (for `usb4v-sim stat`). */
int u4l_sim_stat(const char *shm_name, struct u4l_counters out[2]);

/*
 * Test hook, for tests that need one exact fault (drop the last response
 * frame, duplicate one request) rather than a probability. Process-local:
 * it sees the frames this process sends across any cable (not loopback),
 * before the random faults are drawn, and decides what happens to each.
 * DUP_LATE delivers the frame and a copy of it after the next frame of the
 * same channel direction (or at a later doorbell), as the reorder fault
 * does. Counted as fault_drop / fault_dup. NULL removes it.
 */
enum u4l_sim_verdict {
	U4L_SIM_PASS = 0,
	U4L_SIM_DROP,
	U4L_SIM_DUP,
	U4L_SIM_DUP_LATE,
};
typedef enum u4l_sim_verdict (*u4l_sim_test_hook)(void *arg, uint32_t end,
						  const void *frame,
						  uint32_t len);
void u4l_sim_set_test_hook(u4l_sim_test_hook fn, void *arg);

#endif
