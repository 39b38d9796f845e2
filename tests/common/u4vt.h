/* SPDX-License-Identifier: MIT */
/*
 * What the tests and the benchmarks share (tests/common/u4vt.c): clocks
 * (clock.h),
 * mappings, the software cable the tests use, and the one sequence that
 * connects a QP. Nothing here asserts: testlib.h wraps it for the cmocka
 * tests; the benchmarks and the soak command report errors their own way.
 */
#ifndef U4VT_H
#define U4VT_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <usb4verbs/sim.h>

#include "clock.h"


/* Anonymous private mapping, not touched (len 0 maps one page); NULL if
 * the kernel refuses it. */
void *u4vt_map_anon(size_t len);
void u4vt_unmap(void *p, size_t len);

/*
 * Run target(rfd, wfd) in a child and initiator(rfd, wfd) here, joined by
 * two pipes (each reads what the other writes). Returns the initiator's
 * result, 1 if the child failed, or -1 if no child could be made.
 */
int u4vt_fork_pair(int (*target)(int rfd, int wfd),
		   int (*initiator)(int rfd, int wfd));

/* A cable as the tests want it unless they say otherwise: the defaults of
 * u4l_sim_config_default() without a rate limit or added latency
 * (u4vt_eng.c). */
void u4vt_cable_config(struct u4l_sim_config *cfg);

/* How a QP is connected; u4vt_conn_default() gives what most tests use. */
struct u4vt_conn {
	uint32_t remote_qpn; /* ignored for UD */
	uint32_t psn;	     /* sq_psn = rq_psn */
	uint32_t qkey;	     /* UD */
	int access;	     /* RC/UC: qp_access_flags */
	enum ibv_mtu mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t rd_atomic; /* max_rd_atomic = max_dest_rd_atomic */
	uint8_t port_num;
	uint8_t sgid_index; /* with is_global: the GRH of the path */
	int is_global;
	union ibv_gid dgid;
};
#define U4VT_QKEY 0x11111111u
void u4vt_conn_default(struct u4vt_conn *c, uint32_t remote_qpn);

/*
 * The attributes and the mask that take a QP of type t to state `to`
 * (IBV_QPS_INIT, IBV_QPS_RTR or IBV_QPS_RTS, in that order) as c says: the
 * one place the connect sequence is written, for the engine's QPs and for
 * libibverbs' alike.
 */
int u4vt_conn_attr(enum ibv_qp_type t, enum ibv_qp_state to,
		   const struct u4vt_conn *c, struct ibv_qp_attr *a);
extern const enum ibv_qp_state u4vt_conn_path[3]; /* INIT, RTR, RTS */

/* RESET -> INIT -> RTR -> RTS through libibverbs: 0 or an errno value. */
int u4vt_ibv_connect(struct ibv_qp *qp, const struct u4vt_conn *c);

/* The same for an engine QP of type t (u4vt_eng.c, which only programs
 * that link the engine pull in). */
struct u4v_qp;
int u4vt_eng_connect(struct u4v_qp *qp, enum ibv_qp_type t,
		     const struct u4vt_conn *c);

#endif
