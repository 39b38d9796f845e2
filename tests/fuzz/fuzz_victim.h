/* SPDX-License-Identifier: MIT */
/*
 * The victim of the engine's fuzz targets (fuzz_rx: frames straight into
 * rx_peek; fuzz_sim: a hostile peer on a software cable): one context with
 * an RC, a UC and a UD QP connected to a remote context, receives and RC
 * requests posted, driven by the input's records. And the engine's clock,
 * which only moves when the input says so (link/clock.c is not linked).
 *
 * Records (the first byte, `sel`; fuzz_rx.c and fuzz_sim.c say what
 * follows their other records):
 *   bit 5 clear  a frame: bits 0-1 QP (0 RC, 1 UC, 2 UD, 3 as is: no
 *                patching), bit 2 va/rkey into the MR, bit 3 CRC-flagged,
 *                bit 4 stranded (NOWAKE); u16 length and the bytes follow
 *   bit 5 set    a command, sel >> 6 says which, arg = sel & 0x1f:
 *                0 post a receive to QP arg & 3 (3: all three)
 *                1 the clock moves on by 2^arg ns (timers, hold grace)
 *                2 the RC QP posts one more request (arg picks which)
 *                3 QP arg & 3 goes to ERR, or with arg bit 2 is reset
 *                  and connected again
 */
#ifndef U4V_FUZZ_VICTIM_H
#define U4V_FUZZ_VICTIM_H

#include <stdbool.h>
#include <stdint.h>

#include <usb4verbs/engine.h>
#include <usb4verbs/link.h>

#define FUZZ_NQP 3
#define FUZZ_MRLEN 65536u
#define FUZZ_SEL_CMD 0x20u
#define FUZZ_REC_HDR 3u /* a frame record: sel, u16 length */
/*
 * Records played per input, and the inputs' -max_len (fuzz_options.h):
 * queues of 16, rings of 16 and a CQ fill within a few dozen records, so
 * 256 reach every state the victim has; two full-size frames (a message
 * reassembled from 4 KiB fragments) and a tail of short records fit.
 */
#define FUZZ_MAX_RECORDS 256
#define FUZZ_MAX_LEN (2 * (FUZZ_REC_HDR + U4L_FRAME_MAX) + 256)

struct fuzz_victim {
	struct u4v_ctx *ctx;
	struct u4v_pd *pd;
	struct u4v_cq *cq;
	struct u4v_mr *mr;
	struct u4v_qp *qp[FUZZ_NQP];
	uint8_t *mem;
	uint32_t remote_ctx; /* whose QPs ours connect to */
};

/* The engine's clock. */
extern uint64_t fuzz_clock_ns;

/*
 * Open the victim on link (the context owns it from here on, also when
 * this fails) with a CQ of cq_depth entries, and bring it to the starting
 * state (fuzz_victim_reset).
 * Returns 0 or an errno value.
 */
int fuzz_victim_open(struct fuzz_victim *v, struct u4l_dev *link,
		     uint32_t remote_ctx, uint32_t cq_depth);
void fuzz_victim_close(struct fuzz_victim *v);
/*
 * The state every input starts from: QPs reset and connected again,
 * completions drained, the MR zeroed, four receives per QP and three RC
 * requests posted, the clock a second on. Returns 0 or the errno value of
 * a connect (a hostile peer can make one fail).
 */
int fuzz_victim_reset(struct fuzz_victim *v);
/* Run command record sel (bit 5 set). */
void fuzz_victim_command(struct fuzz_victim *v, uint8_t sel);
void fuzz_victim_drain_cq(struct fuzz_victim *v);
/* The QPN of the remote end of our QP i. */
uint32_t fuzz_remote_qpn(const struct fuzz_victim *v, int i);
/*
 * Address a frame of len bytes to our QP sel & 3 from its remote peer QP,
 * as frame record sel says (version, QPNs, PSN width, UD qkey, RETH/ATOMETH
 * into the MR). Also decodes it directly.
 */
void fuzz_patch_frame(const struct fuzz_victim *v, uint8_t *frame, uint32_t len,
		      uint8_t sel);
/* The link flags of frame record sel. */
uint32_t fuzz_frame_flags(uint8_t sel);

#endif
