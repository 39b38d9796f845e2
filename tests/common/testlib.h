/* SPDX-License-Identifier: MIT */
/* Helpers shared by the engine's unit and integration tests. */
#ifndef U4V_TESTLIB_H
#define U4V_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <usb4verbs/engine.h>
#include <usb4verbs/sim.h>

#include "pattern.h"
#include "u4vt.h"

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
/* How o says to connect to remote_qpn (o->psn 0: the default PSN). */
void u4vt_conn_from_opts(struct u4vt_conn *c, uint32_t remote_qpn,
			 const struct u4vt_qp_opts *o);
/* RESET → INIT → RTR → RTS, connected to remote_qpn (ignored for UD). */
void u4vt_qp_connect(struct u4v_qp *qp, enum ibv_qp_type type,
		     uint32_t remote_qpn, const struct u4vt_qp_opts *o);
/* A QP of type on a and one on b, made with o and connected to each other. */
void u4vt_qp_pair(struct u4vt_end *a, struct u4vt_end *b, enum ibv_qp_type type,
		  const struct u4vt_qp_opts *o, struct u4v_qp **qa,
		  struct u4v_qp **qb);

/*
 * n RC QP pairs between a and b (all made, then all connected), each QP of
 * a on a CQ of cqe entries of its own in cqa[], each of b likewise in
 * cqb[] (cqb NULL: on b's CQ). u4vt_qp_pairs_down destroys them all.
 */
void u4vt_qp_pairs(struct u4vt_end *a, struct u4vt_end *b, int n, int cqe,
		   const struct u4vt_qp_opts *o, struct u4v_qp **qa,
		   struct u4v_qp **qb, struct u4v_cq **cqa,
		   struct u4v_cq **cqb);
void u4vt_qp_pairs_down(int n, struct u4v_qp **qa, struct u4v_qp **qb,
			struct u4v_cq **cqa, struct u4v_cq **cqb);

/*
 * Two ends of a fresh cable (cfg NULL: u4vt_cable_config) and one connected
 * QP pair a -> b (o NULL: u4vt_qp_opts_default); b_no_thread 1: end b has
 * no progress thread (the test drives it).
 */
struct u4vt_pair {
	const char *shm;
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb;
	enum ibv_qp_type type;
	int evfd[2]; /* the async events of u4vt_pair_ends' async_end: [0] */
};
void u4vt_pair_up(struct u4vt_pair *p, const char *tag, enum ibv_qp_type type,
		  const struct u4l_sim_config *cfg,
		  const struct u4vt_qp_opts *o, int b_no_thread);
/*
 * The two ends only: no QPs (the test makes its own; u4vt_pair_down destroys
 * qa and qb if it sets them), o set to u4vt_qp_opts_default. async_end 0 or
 * 1: that end writes its async events into a pipe read at evfd[0]; -1: none.
 */
void u4vt_pair_ends(struct u4vt_pair *p, const char *tag,
		    const struct u4l_sim_config *cfg, int async_end);
/*
 * A pair (u4vt_pair_up) with an area of len bytes mapped and registered
 * with every access on each end, src on a and dst on b; an AH on a's PD
 * for UD.
 */
struct u4vt_area_pair {
	struct u4vt_pair q;
	uint8_t *src, *dst;
	size_t len;
	struct u4v_mr *ms, *md;
	struct u4v_ah *ah;
};
void u4vt_area_pair_up(struct u4vt_area_pair *p, const char *tag,
		       enum ibv_qp_type type, const struct u4vt_qp_opts *o,
		       size_t len);
void u4vt_area_pair_down(struct u4vt_area_pair *p);
/* Both QPs back to RESET and connected again, with new PSNs. */
void u4vt_pair_reconnect(struct u4vt_pair *p);
/* Destroys what u4vt_pair_up made (a QP set to NULL is skipped). */
void u4vt_pair_down(struct u4vt_pair *p);
/*
 * cmocka setup and teardown of a struct u4vt_pair of its own in *state:
 * u4vt_pair_ends(tag, no config, async_end) on a fresh allocation, and
 * u4vt_pair_down then free.
 */
struct u4vt_pair *u4vt_pair_new(void **state, const char *tag, int async_end);
int u4vt_pair_teardown(void **state);

/* Poll until n completions arrive or timeout_ms passes; returns count. */
int u4vt_poll(struct u4v_cq *cq, struct ibv_wc *wc, int n, int timeout_ms);

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
/* u4vt_map_anon(), asserting that it succeeds. */
void *u4vt_map(size_t len);
/* Register an MR on e's PD (asserts success). */
struct u4v_mr *u4vt_reg(struct u4vt_end *e, void *addr, size_t len,
			int access);
/*
 * A global AH's attributes and source GID as a software cable's port has
 * them (GID 3, RoCE v2 ::ffff:127.0.0.1, also the destination).
 */
void u4vt_ah_attr(struct ibv_ah_attr *attr, struct ibv_gid_entry *sgid);
/* A global AH on pd (asserts success). */
struct u4v_ah *u4vt_ah(struct u4v_pd *pd);
#define U4VT_ACCESS_ALL                                                      \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
/* A send WR over sge[0, nsge), every other field zero. */
void u4vt_send_wr(struct ibv_send_wr *wr, enum ibv_wr_opcode op, uint64_t wr_id,
		  int flags, struct ibv_sge *sge, int nsge);
/* UD addressing for wr: through ah to remote_qpn with U4VT_QKEY. */
void u4vt_send_wr_ud(struct ibv_send_wr *wr, struct u4v_ah *ah,
		     uint32_t remote_qpn);
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
/*
 * One atomic through qp on *cell (rkey), its result written at res (lkey):
 * asserts it completes on cq (within 20 s) with success, its wr_id, QP
 * and opcode. Returns the value it found at *cell.
 */
uint64_t u4vt_atomic(struct u4v_qp *qp, struct u4v_cq *cq,
		     enum ibv_wr_opcode op, uint64_t wr_id, void *res,
		     uint32_t lkey, uint64_t *cell, uint32_t rkey,
		     uint64_t add_or_cmp, uint64_t swap);
/* Post one receive WR with one SGE (none when len is 0 and addr is 0). */
int u4vt_post_recv1(struct u4v_qp *qp, uint64_t wr_id, uint64_t addr,
		    uint32_t len, uint32_t lkey);
int u4vt_post_srq_recv1(struct u4v_srq *srq, uint64_t wr_id, uint64_t addr,
			uint32_t len, uint32_t lkey);

#endif
