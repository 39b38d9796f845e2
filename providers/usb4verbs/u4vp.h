/* SPDX-License-Identifier: MIT */
/*
 * usb4verbs provider internals: wrapper objects that pair each ibv_* object
 * handed to the application with the engine object behind it.
 */
#ifndef USB4VERBS_PROVIDER_U4VP_H
#define USB4VERBS_PROVIDER_U4VP_H

#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <usb4verbs/engine.h>

#include "abi.h"

#define u4vp_container_of(ptr, type, member)                                   \
	((type *)((char *)(ptr)-offsetof(type, member)))

/* Device: one per sysfs ibdev matched to this provider. */
struct u4vp_device {
	struct u4vp_verbs_device vdev; /* first: freed through the core */
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
};

/* Context: one per ibv_open_device. */
struct u4vp_context {
	struct verbs_context vctx;
	struct u4v_ctx *eng;
	struct u4l_dev *link;
	int async_wfd;		  /* write end of the async-event pipe */
	int kernel_async_fd;	  /* usb4verbs.ko's async event fd, or -1 */
	int kernel_stop_fd;	  /* eventfd: the forwarder thread ends */
	pthread_t kernel_events;  /* forwards the kernel's events */
	uint64_t node_guid_be;	  /* as ibv_device_attr.node_guid */
	_Atomic uint32_t handles; /* kernel-style object handles */
};

struct u4vp_pd {
	struct ibv_pd ibv;
	struct u4v_pd *eng;
};

struct u4vp_mr {
	struct u4vp_verbs_mr vmr;
	struct u4v_mr *eng;
};

/* CQ; the ibv_cq_ex view exists for every CQ, read_* need create_cq_ex. */
struct u4vp_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
	struct u4v_cq *eng;
	int chan_wfd;	   /* completion-channel pipe write end or -1 */
	int kcq;	   /* nhi: a kernel CQ carries the events */
	uint32_t khandle;
	uint64_t wc_flags; /* create_cq_ex flags */
	struct ibv_wc cur; /* the entry start/next_poll produced */
	struct u4v_cq_ts cur_ts; /* and its timestamps */
};

struct u4vp_srq {
	struct ibv_srq ibv;
	struct u4v_srq *eng;
};

/* One work request being built with the ibv_wr_* API. */
struct u4vp_wr {
	struct ibv_send_wr wr;
	struct ibv_sge sge[U4V_MAX_SGE];
	uint32_t inl_len;
	uint8_t inl[U4V_MAX_INLINE];
};

struct u4vp_qp {
	struct u4vp_verbs_qp vqp; /* first: ibv_qp_to_qp_ex casts */
	struct u4v_qp *eng;
	uint64_t send_ops_flags;
	/* ibv_wr_* batch between wr_start and wr_complete/wr_abort */
	struct u4vp_wr *wrs;
	uint32_t nwr, wr_cap;
	int wr_err;
};

static inline struct u4vp_context *to_uctx(struct ibv_context *c)
{
	return u4vp_container_of(c, struct u4vp_context, vctx.context);
}
static inline struct u4vp_pd *to_upd(struct ibv_pd *pd)
{
	return u4vp_container_of(pd, struct u4vp_pd, ibv);
}
static inline struct u4vp_cq *to_ucq(struct ibv_cq *cq)
{
	return u4vp_container_of(cq, struct u4vp_cq, cq);
}
static inline struct u4vp_cq *to_ucq_ex(struct ibv_cq_ex *cq)
{
	return u4vp_container_of(cq, struct u4vp_cq, cq_ex);
}
static inline struct u4vp_srq *to_usrq(struct ibv_srq *srq)
{
	return u4vp_container_of(srq, struct u4vp_srq, ibv);
}
static inline struct u4vp_qp *to_uqp(struct ibv_qp *qp)
{
	return u4vp_container_of(qp, struct u4vp_qp, vqp.qp);
}
static inline struct u4vp_qp *to_uqp_ex(struct ibv_qp_ex *qp)
{
	return u4vp_container_of(qp, struct u4vp_qp, vqp.qp_ex);
}
static inline uint32_t u4vp_new_handle(struct ibv_context *c)
{
	return ++to_uctx(c)->handles;
}

/* context.c */
struct verbs_context *u4vp_alloc_context(struct ibv_device *ibdev, int cmd_fd,
					 void *private_data);

/* verbs.c */
struct ibv_pd *u4vp_alloc_pd(struct ibv_context *context);
int u4vp_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *u4vp_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access);
int u4vp_dereg_mr(struct u4vp_verbs_mr *vmr);
int u4vp_rereg_mr(struct u4vp_verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access);
int u4vp_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		   uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges);
struct ibv_mw *u4vp_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int u4vp_dealloc_mw(struct ibv_mw *mw);
int u4vp_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);
struct ibv_ah *u4vp_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int u4vp_destroy_ah(struct ibv_ah *ah);
struct ibv_cq *u4vp_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
int u4vp_destroy_cq(struct ibv_cq *cq);
int u4vp_resize_cq(struct ibv_cq *cq, int cqe);
int u4vp_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int u4vp_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_srq *u4vp_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
int u4vp_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int u4vp_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int u4vp_destroy_srq(struct ibv_srq *srq);
int u4vp_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
struct ibv_qp *u4vp_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *u4vp_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr);
int u4vp_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int u4vp_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init);
int u4vp_destroy_qp(struct ibv_qp *qp);
int u4vp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int u4vp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);

/* cq.c helpers shared by create_cq and create_cq_ex */
struct u4vp_cq *u4vp_cq_new(struct ibv_context *context, int cqe,
			    struct ibv_comp_channel *channel);

/* cq_ex.c */
struct ibv_cq_ex *u4vp_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr);

/* qp_ex.c */
int u4vp_qp_ex_init(struct u4vp_qp *qp, uint64_t send_ops_flags);
void u4vp_qp_ex_fini(struct u4vp_qp *qp);

#endif
