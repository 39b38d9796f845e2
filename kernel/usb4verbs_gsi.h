/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * usb4verbs: CQs, QPs and MADs as the kernel's ib_mad uses them on the
 * port (usb4verbs_gsi.c); shared with usb4verbs_ib.c, which dispatches
 * kernel objects here.
 */
#ifndef USB4VERBS_GSI_H
#define USB4VERBS_GSI_H

#include "usb4verbs.h"

/* A user CQ (events only), or a kernel CQ of the GSI QP (gsi.c). */
struct u4k_cq {
	struct ib_cq ibcq;
	struct list_head node; /* uctx->cqs */
	struct u4k_ucontext *uctx; /* NULL: a kernel CQ */
	bool armed;
	spinlock_t lock; /* kernel CQ: a ring of ibcq.cqe completions */
	struct ib_wc *wc;
	u32 head, count;
};

struct u4k_gsi_rwr; /* gsi.c */

/* A user QP (number and state), or the GSI QP1 of ib_mad (gsi.c). */
struct u4k_qp {
	struct ib_qp ibqp;
	enum ib_qp_state state;
	struct u4k_gsi_rwr *rq; /* GSI: posted receives, a ring of rq_size */
	u32 rq_size, rq_head, rq_count;
};

static inline struct u4k_dev *to_u4k_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct u4k_dev, ibdev);
}

extern const struct ib_device_ops u4k_gsi_ops;
int u4k_kcq_create(struct u4k_cq *cq, const struct ib_cq_init_attr *attr);
void u4k_kcq_destroy(struct u4k_cq *cq);
int u4k_kcq_arm(struct u4k_cq *cq, enum ib_cq_notify_flags flags);
int u4k_kcq_poll(struct u4k_cq *cq, int n, struct ib_wc *wc);
int u4k_gsi_create_qp(struct u4k_qp *qp, struct ib_qp_init_attr *init);
void u4k_gsi_destroy_qp(struct u4k_qp *qp);

#endif
