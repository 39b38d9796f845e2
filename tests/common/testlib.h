/* SPDX-License-Identifier: MIT */
/* Helpers shared by the engine's unit and integration tests. */
#ifndef U4V_TESTLIB_H
#define U4V_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <usb4verbs/engine.h>
#include <usb4verbs/sim.h>

/* A cable segment name unique to this test program and tag. */
const char *u4vt_shm_name(const char *tag);
/* Create a cable (cfg NULL: defaults with rate 0, unthrottled). */
void u4vt_cable_create(const char *shm, const struct u4l_sim_config *cfg);

/* One verbs context on one end of a cable, with a PD and a CQ. */
struct u4vt_end {
	struct u4v_ctx *ctx;
	struct u4v_pd *pd;
	struct u4v_cq *cq;
};
void u4vt_end_open(struct u4vt_end *e, const char *shm, uint32_t end);
void u4vt_end_close(struct u4vt_end *e);

struct u4vt_qp_opts {
	uint32_t max_send_wr, max_recv_wr, max_sge, max_inline;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	struct u4v_srq *srq;
	int access;
};
void u4vt_qp_opts_default(struct u4vt_qp_opts *o);
struct u4v_qp *u4vt_qp_create(struct u4vt_end *e, enum ibv_qp_type type,
			      const struct u4vt_qp_opts *o);
/* RESET → INIT → RTR → RTS, connected to remote_qpn (ignored for UD). */
void u4vt_qp_connect(struct u4v_qp *qp, enum ibv_qp_type type,
		     uint32_t remote_qpn, const struct u4vt_qp_opts *o);

/* Poll until n completions arrive or timeout_ms passes; returns count. */
int u4vt_poll(struct u4v_cq *cq, struct ibv_wc *wc, int n, int timeout_ms);

/* Deterministic payloads and their checksums. */
void u4vt_fill(void *buf, size_t len, uint64_t seed);
uint64_t u4vt_sum(const void *buf, size_t len);
uint64_t u4vt_now_ms(void);

#endif
