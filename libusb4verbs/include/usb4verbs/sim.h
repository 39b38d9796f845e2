/* SPDX-License-Identifier: MIT */
/*
 * The software cable: the link contract in a shared-memory segment that both
 * ends map. No daemon, no thread: the doorbell "DMAs" frames into the peer's
 * posted RX descriptors and stamps each with an arrival time from the wire
 * model; a receiver sees a frame once that time has passed.
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
	uint32_t latency_ns;	/* one-way latency added to every frame */
	uint32_t ring_depth;	/* descriptors per ring, power of two, 16..4096 */
	uint32_t max_channels;	/* cross-cable channel budget (loopback is free) */
	uint32_t e2e;		/* 1: E2E flow control (no RX overflow) */
	uint64_t seed;		/* fault PRNG seed */
	struct u4l_sim_faults faults[2]; /* [d]: frames travelling from end d */
};

/* Defaults: 20 Gb/s, 1 us, 256 descriptors, 16 channels, E2E on, no faults. */
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

#endif
