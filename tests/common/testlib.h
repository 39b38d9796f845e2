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
	int sq_sig_all; /* 0 (default): only IBV_SEND_SIGNALED WRs complete */
	uint32_t psn;	/* sq_psn = rq_psn at connect; 0: 0x123 */
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

/* Like u4vt_end_open, with async events written to async_fd (-1: none). */
void u4vt_end_open_async(struct u4vt_end *e, const char *shm, uint32_t end,
			 int async_fd);
/* Both options; no_progress_thread 1: the test drives u4v_ctx_progress. */
void u4vt_end_open_ex(struct u4vt_end *e, const char *shm, uint32_t end,
		      int async_fd, int no_progress_thread);
/*
 * Read one async event record ({u64 element; u32 type; u32 reserved}) from
 * fd within timeout_ms. Returns 1 and fills the outputs, or 0 on timeout.
 */
int u4vt_async_read(int fd, uint64_t *element, uint32_t *type,
		    int timeout_ms);
/* MemAvailable of /proc/meminfo in MiB (0 if unknown). */
uint64_t u4vt_avail_mb(void);
/* Anonymous private mapping, not touched (len 0 maps one page). */
void *u4vt_map(size_t len);
void u4vt_unmap(void *p, size_t len);
/* Register an MR on e's PD (asserts success). */
struct u4v_mr *u4vt_reg(struct u4vt_end *e, void *addr, size_t len,
			int access);
#define U4VT_ACCESS_ALL                                                      \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
/*
 * Post one send WR with one SGE {addr, len, lkey} (no SGE when len is 0 and
 * addr is 0). remote_addr / rkey go to wr.rdma or wr.atomic as the opcode
 * needs (atomics: compare_add = add_or_cmp, swap = swap). Returns the value
 * of u4v_post_send.
 */
int u4vt_post_send1(struct u4v_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		    int flags, uint64_t addr, uint32_t len, uint32_t lkey,
		    uint64_t remote_addr, uint32_t rkey, uint32_t imm);
int u4vt_post_atomic(struct u4v_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		     uint64_t addr, uint32_t lkey, uint64_t remote_addr,
		     uint32_t rkey, uint64_t add_or_cmp, uint64_t swap);
/* Post one receive WR with one SGE (none when len is 0 and addr is 0). */
int u4vt_post_recv1(struct u4v_qp *qp, uint64_t wr_id, uint64_t addr,
		    uint32_t len, uint32_t lkey);
int u4vt_post_srq_recv1(struct u4v_srq *srq, uint64_t wr_id, uint64_t addr,
			uint32_t len, uint32_t lkey);

#endif
