/* SPDX-License-Identifier: MIT */
/*
 * Verified traffic between two engine contexts, for the reliability suite
 * and the soak command (u4vt_traffic.c, in the u4vt library; no cmocka, so
 * bench/ can use it).
 *
 * Every message carries a header { magic, seq, len, rcv_idx, sum } followed
 * by a pattern; the target checks each receive-consuming message (SEND,
 * SEND_WITH_IMM, RDMA_WRITE_WITH_IMM) for its index in the per-QP stream
 * (loss, duplication, reordering), its length and its checksum. RDMA WRITE
 * is checked in the target's memory when the requester's completion comes,
 * RDMA READ against the target's buffer, FETCH_AND_ADD by the values
 * returned (0, 1, 2, ... exactly once each). Requester completions must be
 * successful, in order, exactly once.
 */
#ifndef U4VT_TRAFFIC_H
#define U4VT_TRAFFIC_H

#include <stdbool.h>
#include <stdint.h>
#include <usb4verbs/engine.h>

enum {
	TR_SEND = 1u << 0,
	TR_SEND_IMM = 1u << 1,
	TR_WRITE_IMM = 1u << 2,
	TR_WRITE = 1u << 3,
	TR_READ = 1u << 4,
	TR_FADD = 1u << 5,
	TR_ALL = 0x3f,
};

#define TR_HDR 24u
#define TR_MAX_QP 16

struct tr_cfg {
	int nqp;
	uint64_t messages;	   /* total, spread over the QPs */
	uint32_t min_len, max_len; /* log-uniform; min_len >= TR_HDR */
	unsigned int ops;	   /* TR_* mask */
	uint32_t window;	   /* outstanding WRs per QP */
	uint64_t seed;
	uint64_t timeout_ms; /* the whole run */
	uint8_t timeout, retry_cnt, rnr_retry;
	uint32_t slow_rx_ms; /* poll the target only every this many ms */
	int progress_report; /* print a line every N messages (0: never) */
};

struct tr_result {
	uint64_t posted, completed, received, verified;
	uint64_t lost, dup, corrupt, misordered, bad_status;
	uint64_t bytes;
	int first_status;
	double secs;
	bool timed_out;
	int setup_err;
	char msg[256];
};

/* The header of every message (TR_HDR bytes). */
struct tr_hdr {
	uint32_t magic, seq, len, rcv_idx;
	uint64_t sum;
};

/* Write a message of len bytes (>= TR_HDR) for (q, seq, rcv_idx). */
void tr_make(uint8_t *p, uint32_t len, int q, uint32_t seq, uint32_t rcv_idx,
	     uint64_t seed);
/* 0 if p holds an intact message for q; the header is returned. */
int tr_check(const uint8_t *p, uint32_t len, int q, struct tr_hdr *h);

/* The defaults: 2 QPs, 2000 messages of 24 B..16 KiB, every op. */
void tr_cfg_default(struct tr_cfg *c);

/*
 * Run cfg over nqp fresh RC QP pairs between (ctx_a, pd_a) -> (ctx_b, pd_b).
 * Returns 0 when every message was verified, else -1 (details in *r).
 */
int tr_run(const struct tr_cfg *cfg, struct u4v_ctx *ctx_a, struct u4v_pd *pd_a,
	   struct u4v_ctx *ctx_b, struct u4v_pd *pd_b, struct tr_result *r);

#endif
