/* SPDX-License-Identifier: MIT */
/*
 * The transport engine's API. It speaks the public verbs types so that the
 * rdma-core provider stays a thin translation, and tests drive it directly.
 *
 * Every call returns 0 or a positive errno value (never relies on errno),
 * except where a count or pointer is returned as documented.
 */
#ifndef USB4VERBS_ENGINE_H
#define USB4VERBS_ENGINE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <usb4verbs/link.h>

/* Device identity and limits, shared with the kernel shim. */
#include <usb4verbs-limits.h>
/* Reported by query_port; the kernel shim says the same (IB_MTU_4096). */
#define U4V_MTU IBV_MTU_4096

struct u4v_ctx;
struct u4v_pd;
struct u4v_mr;
struct u4v_mw;
struct u4v_cq;
struct u4v_srq;
struct u4v_qp;

/*
 * Address handle. The engine allocates it; the provider hands &ah->ibv to
 * the application, and the engine finds the AH again from wr.ud.ah.
 */
struct u4v_ah {
	struct ibv_ah ibv; /* must stay first */
	struct ibv_ah_attr attr;
	struct ibv_gid_entry sgid; /* the port's GID at attr.grh.sgid_index */
	struct u4v_pd *pd;
};

/* Context: one per opened device; owns the link device and progress. */
struct u4v_ctx_attr {
	struct u4l_dev *link; /* ownership passes to the context */
	uint64_t node_guid;
	/* GIDs in the port's table (what sysfs lists); 0 = 4 */
	uint32_t gid_tbl_len;
	/* async events are written to this fd in uverbs format; -1 = none */
	int async_event_fd;
	/* 0: start the progress thread (default); 1: caller drives progress */
	int no_progress_thread;
};
int u4v_ctx_open(const struct u4v_ctx_attr *attr, struct u4v_ctx **ctx);
void u4v_ctx_close(struct u4v_ctx *ctx);
/* attr_size as passed by ibv_query_device_ex: fill no more than that. */
int u4v_query_device(struct u4v_ctx *ctx, struct ibv_device_attr_ex *attr,
		     size_t attr_size);
int u4v_query_port(struct u4v_ctx *ctx, uint8_t port,
		   struct ibv_port_attr *attr);
/* ibv_query_rt_values_ex(3): the device clock now (raw_clock). */
int u4v_query_rt_values(struct u4v_ctx *ctx, struct ibv_values_ex *values);
/* Drive progress once (RX, ACKs, retransmit timers, pending sends). */
void u4v_ctx_progress(struct u4v_ctx *ctx);
struct u4l_counters *u4v_ctx_counters(struct u4v_ctx *ctx);

/* Protection domains and memory regions. */
int u4v_alloc_pd(struct u4v_ctx *ctx, struct u4v_pd **pd);
int u4v_dealloc_pd(struct u4v_pd *pd); /* EBUSY while objects use it */
int u4v_reg_mr(struct u4v_pd *pd, void *addr, size_t length, int access,
	       struct u4v_mr **mr);
int u4v_dereg_mr(struct u4v_mr *mr); /* EBUSY while windows are bound */
/*
 * ibv_rereg_mr(3): flags IBV_REREG_MR_CHANGE_{TRANSLATION,PD,ACCESS}, under
 * the rules of registration. The keys stay the same; *mr is replaced (the
 * old pointer is gone). EBUSY while windows are bound.
 */
int u4v_rereg_mr(struct u4v_mr **mr, int flags, struct u4v_pd *pd,
		 void *addr, size_t length, int access);
uint32_t u4v_mr_lkey(const struct u4v_mr *mr);
uint32_t u4v_mr_rkey(const struct u4v_mr *mr);

/*
 * ibv_advise_mr(3): prefetch ranges of ODP MRs of pd (IBV_ADVISE_MR_FLAG_FLUSH:
 * before returning, and report a range that cannot be populated).
 */
int u4v_advise_mr(struct u4v_pd *pd, enum ibv_advise_mr_advice advice,
		  uint32_t flags, const struct ibv_sge *sg, uint32_t n);

/*
 * Memory windows, type 1 and 2. The engine owns the struct ibv_mw the
 * application sees (type and rkey set; the caller fills the rest) and
 * finds the window again from it in a BIND_MW work request. Binding and
 * invalidating are work requests (ibv_post_send(3)); ibv_bind_mw(3) is a
 * BIND_MW request whose rkey is ibv_inc_rkey of the window's.
 */
int u4v_alloc_mw(struct u4v_pd *pd, enum ibv_mw_type type, struct u4v_mw **mw);
int u4v_dealloc_mw(struct u4v_mw *mw);
struct ibv_mw *u4v_mw_ibv(struct u4v_mw *mw);
struct u4v_mw *u4v_mw_from_ibv(struct ibv_mw *ibmw);

/*
 * Address handles. The port is RoCE (link layer Ethernet): every AH names
 * its source GID (attr->is_global), and sgid is that GID as the caller
 * found it in the port's table (ibv_query_gid_ex); EINVAL otherwise.
 */
int u4v_create_ah(struct u4v_pd *pd, const struct ibv_ah_attr *attr,
		  const struct ibv_gid_entry *sgid, struct u4v_ah **ah);
int u4v_destroy_ah(struct u4v_ah *ah);

/* Completion queues. */
typedef void (*u4v_cq_event_fn)(struct u4v_cq *cq, void *arg);
int u4v_create_cq(struct u4v_ctx *ctx, int cqe, struct u4v_cq **cq);
int u4v_destroy_cq(struct u4v_cq *cq); /* EBUSY while a QP uses it */
/*
 * Completion timestamps, taken when the engine makes the completion: the
 * device clock (CLOCK_MONOTONIC_RAW in ns; hca_core_clock 1 GHz) and/or the
 * wall clock (CLOCK_REALTIME in ns). Set before the CQ is used.
 */
enum u4v_cq_clock { U4V_CQ_TS_RAW = 1, U4V_CQ_TS_WALL = 2 };
struct u4v_cq_ts {
	uint64_t raw, wall;
};
int u4v_cq_set_timestamps(struct u4v_cq *cq, unsigned int clocks);
/* Poll one completion and its timestamps; 1, 0 or a negative errno. */
int u4v_poll_cq_ts(struct u4v_cq *cq, struct ibv_wc *wc,
		   struct u4v_cq_ts *ts);
int u4v_resize_cq(struct u4v_cq *cq, int cqe);
int u4v_cq_depth(struct u4v_cq *cq);
/* Returns the number of completions (>= 0) or a negative errno. */
int u4v_poll_cq(struct u4v_cq *cq, int n, struct ibv_wc *wc);
/* Arm: fn(cq, arg) runs once for the next (solicited) completion. */
int u4v_req_notify_cq(struct u4v_cq *cq, int solicited_only);
void u4v_cq_set_event_fn(struct u4v_cq *cq, u4v_cq_event_fn fn, void *arg);
/* Set by the provider: the handle reported in async events (CQ overrun). */
void u4v_cq_set_handle(struct u4v_cq *cq, uint64_t handle);

/* Shared receive queues (RC and UD QPs only). */
int u4v_create_srq(struct u4v_pd *pd, struct ibv_srq_attr *attr,
		   struct u4v_srq **srq);
int u4v_modify_srq(struct u4v_srq *srq, struct ibv_srq_attr *attr, int mask);
int u4v_query_srq(struct u4v_srq *srq, struct ibv_srq_attr *attr);
int u4v_destroy_srq(struct u4v_srq *srq); /* EBUSY while a QP uses it */
int u4v_post_srq_recv(struct u4v_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
void u4v_srq_set_handle(struct u4v_srq *srq, uint64_t handle);

/* Queue pairs. */
struct u4v_qp_init {
	enum ibv_qp_type qp_type; /* RC, UC or UD */
	struct u4v_cq *send_cq, *recv_cq;
	struct u4v_srq *srq; /* NULL: own RQ */
	struct ibv_qp_cap cap; /* in: requested; out: granted */
	int sq_sig_all;
};
int u4v_create_qp(struct u4v_pd *pd, struct u4v_qp_init *init,
		  struct u4v_qp **qp);
int u4v_destroy_qp(struct u4v_qp *qp);
uint32_t u4v_qp_num(const struct u4v_qp *qp);
enum ibv_qp_state u4v_qp_state(const struct u4v_qp *qp);
void u4v_qp_set_handle(struct u4v_qp *qp, uint64_t handle);
int u4v_modify_qp(struct u4v_qp *qp, struct ibv_qp_attr *attr, int mask);
int u4v_query_qp(struct u4v_qp *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init);
int u4v_post_send(struct u4v_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);
int u4v_post_recv(struct u4v_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);

#endif
