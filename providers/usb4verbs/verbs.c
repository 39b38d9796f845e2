// SPDX-License-Identifier: MIT
/*
 * The verbs: each unwraps the ibv_* objects, calls the engine, and fills
 * the ibv_* fields libibverbs leaves to the provider.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "u4vp.h"
#include <usb4verbs/nhi.h>

/* ---- protection domains ---- */

struct ibv_pd *u4vp_alloc_pd(struct ibv_context *context)
{
	struct u4vp_pd *pd = calloc(1, sizeof(*pd));
	int err;

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	err = u4v_alloc_pd(to_uctx(context)->eng, &pd->eng);
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	pd->ibv.context = context;
	pd->ibv.handle = u4vp_new_handle(context);
	return &pd->ibv;
}

int u4vp_dealloc_pd(struct ibv_pd *ibpd)
{
	struct u4vp_pd *pd = to_upd(ibpd);
	int err = u4v_dealloc_pd(pd->eng);

	if (!err)
		free(pd);
	return err;
}

/* ---- memory regions ---- */

struct ibv_mr *u4vp_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			   uint64_t hca_va, int access)
{
	struct u4vp_mr *mr;
	int err;

	/* Remote addresses are the registering process's virtual addresses. */
	if (hca_va != (uintptr_t)addr) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	err = u4v_reg_mr(to_upd(ibpd)->eng, addr, length, access, &mr->eng);
	if (err) {
		free(mr);
		errno = err;
		return NULL;
	}
	mr->vmr.mr_type = U4VP_MR_TYPE_MR;
	mr->vmr.access = access;
	mr->vmr.ibv_mr.context = ibpd->context;
	mr->vmr.ibv_mr.pd = ibpd;
	mr->vmr.ibv_mr.addr = addr;
	mr->vmr.ibv_mr.length = length;
	mr->vmr.ibv_mr.handle = u4vp_new_handle(ibpd->context);
	mr->vmr.ibv_mr.lkey = u4v_mr_lkey(mr->eng);
	mr->vmr.ibv_mr.rkey = u4v_mr_rkey(mr->eng);
	return &mr->vmr.ibv_mr;
}

int u4vp_dereg_mr(struct u4vp_verbs_mr *vmr)
{
	struct u4vp_mr *mr = u4vp_container_of(vmr, struct u4vp_mr, vmr);
	int err = u4v_dereg_mr(mr->eng);

	if (!err)
		free(mr);
	return err;
}

/*
 * ibv_rereg_mr(3): the keys stay; libibverbs updates pd, addr and length
 * itself. On failure it reports IBV_REREG_MR_ERR_CMD and errno says why.
 */
int u4vp_rereg_mr(struct u4vp_verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access)
{
	struct u4vp_mr *mr = u4vp_container_of(vmr, struct u4vp_mr, vmr);
	int err = u4v_rereg_mr(&mr->eng, flags,
			       (flags & IBV_REREG_MR_CHANGE_PD) && pd ?
				       to_upd(pd)->eng :
				       NULL,
			       addr, length, access);

	if (err) {
		errno = err;
		return err;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	return 0;
}

int u4vp_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice,
		   uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges)
{
	return u4v_advise_mr(to_upd(ibpd)->eng, advice, flags, sg_list,
			     num_sges);
}

/* ---- memory windows ---- */

struct ibv_mw *u4vp_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct u4v_mw *mw;
	struct ibv_mw *ibmw;
	int err = u4v_alloc_mw(to_upd(ibpd)->eng, type, &mw);

	if (err) {
		errno = err;
		return NULL;
	}
	ibmw = u4v_mw_ibv(mw);
	ibmw->context = ibpd->context;
	ibmw->pd = ibpd;
	ibmw->handle = u4vp_new_handle(ibpd->context);
	return ibmw;
}

int u4vp_dealloc_mw(struct ibv_mw *ibmw)
{
	return u4v_dealloc_mw(u4v_mw_from_ibv(ibmw));
}

/*
 * ibv_bind_mw(3), type 1: a BIND_MW request with the next key; the new
 * rkey is in mw->rkey when the post succeeds (the application restores it
 * if the completion says the bind failed).
 */
int u4vp_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *ibmw,
		 struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = { .mw = ibmw, .rkey = ibv_inc_rkey(ibmw->rkey),
			     .bind_info = mw_bind->bind_info },
	};
	struct ibv_send_wr *bad;
	int err = u4v_post_send(to_uqp(ibqp)->eng, &wr, &bad);

	if (!err)
		ibmw->rkey = wr.bind_mw.rkey;
	return err;
}

/* ---- address handles ---- */

struct ibv_ah *u4vp_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct ibv_gid_entry sgid, *gid = NULL;
	struct u4v_ah *ah;
	int err;

	/* the source GID must exist in the port's table (as the kernel's
	 * rdma_get_gid_attr does); the engine refuses an AH without one */
	if (attr->is_global) {
		if (ibv_query_gid_ex(ibpd->context, attr->port_num,
				     attr->grh.sgid_index, &sgid, 0)) {
			errno = EINVAL;
			return NULL;
		}
		gid = &sgid;
	}
	err = u4v_create_ah(to_upd(ibpd)->eng, attr, gid, &ah);

	if (err) {
		errno = err;
		return NULL;
	}
	ah->ibv.context = ibpd->context;
	ah->ibv.pd = ibpd;
	ah->ibv.handle = u4vp_new_handle(ibpd->context);
	return &ah->ibv;
}

int u4vp_destroy_ah(struct ibv_ah *ibah)
{
	return u4v_destroy_ah(u4vp_container_of(ibah, struct u4v_ah, ibv));
}

/* ---- completion queues ---- */

typedef int (*u4vp_wfd_fn)(int channel_fd);

/*
 * ibv_create_comp_channel needs a kernel. Under `usb4v-sim exec` an
 * LD_PRELOAD shim answers it with a pipe and tells us the write end.
 */
static int channel_wfd(struct ibv_comp_channel *channel)
{
	u4vp_wfd_fn fn;
	void *sym = dlsym(RTLD_DEFAULT, "usb4v_shim_comp_channel_wfd");
	int wfd = -1;

	if (sym) {
		memcpy(&fn, &sym, sizeof(fn));
		wfd = fn(channel->fd);
	}
	if (wfd < 0)
		fprintf(stderr, "usb4verbs: completion channels on the "
				"software cable need usb4v-sim exec\n");
	return wfd;
}

/* Engine callback: one completion event = one 8-byte cq handle. */
static void cq_event_cb(struct u4v_cq *ecq, void *arg)
{
	struct u4vp_cq *cq = arg;
	uint64_t handle = (uintptr_t)&cq->cq;
	ssize_t n = write(cq->chan_wfd, &handle, sizeof(handle));

	(void)n; /* nothing to do: the channel's reader went away */
}

static void nhi_cq_event_cb(struct u4v_cq *ecq, void *arg)
{
	struct u4vp_cq *cq = arg;

	u4l_nhi_cq_signal(to_uctx(cq->cq.context)->link, cq->khandle);
}

/*
 * Where the CQ's completion events go: on a kernel device a kernel CQ on
 * the channel's fd (ibv_get_cq_event() then works unchanged); on a software
 * cable the channel's pipe, which usb4v-sim exec's shim gives us.
 */
static int cq_events_open(struct u4vp_cq *cq, struct ibv_context *context,
			  struct ibv_comp_channel *channel, int cqe)
{
	struct u4l_dev *link = to_uctx(context)->link;
	int err;

	cq->chan_wfd = -1;
	if (!channel)
		return 0;
	if (u4l_is_nhi(link)) {
		err = -u4l_nhi_cq_create(link, channel->fd, (uintptr_t)&cq->cq,
					 (uint32_t)cqe, &cq->khandle);
		cq->kcq = !err;
		return err;
	}
	cq->chan_wfd = channel_wfd(channel);
	return cq->chan_wfd < 0 ? EOPNOTSUPP : 0;
}

struct u4vp_cq *u4vp_cq_new(struct ibv_context *context, int cqe,
			    struct ibv_comp_channel *channel)
{
	struct u4vp_cq *cq = calloc(1, sizeof(*cq));
	uint32_t reported;
	int err;

	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	err = cq_events_open(cq, context, channel, cqe);
	if (!err)
		err = u4v_create_cq(to_uctx(context)->eng, cqe, &cq->eng);
	if (err) {
		if (cq->kcq)
			u4l_nhi_cq_destroy(to_uctx(context)->link, cq->khandle,
					   &reported);
		free(cq);
		errno = err;
		return NULL;
	}
	/* libibverbs sets context/channel/cq_context/mutex/cond after us
	 * (verbs_init_cq); set what it does not. */
	cq->cq.context = context;
	cq->cq.channel = channel;
	cq->cq.handle = u4vp_new_handle(context);
	cq->cq.cqe = u4v_cq_depth(cq->eng);
	u4v_cq_set_handle(cq->eng, (uintptr_t)&cq->cq);
	if (channel)
		u4v_cq_set_event_fn(
		    cq->eng, cq->kcq ? nhi_cq_event_cb : cq_event_cb, cq);
	return cq;
}

struct ibv_cq *u4vp_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel, int comp_vector)
{
	struct u4vp_cq *cq;

	if (comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = u4vp_cq_new(context, cqe, channel);
	return cq ? &cq->cq : NULL;
}

int u4vp_destroy_cq(struct ibv_cq *ibcq)
{
	struct u4vp_cq *cq = to_ucq(ibcq);
	int err = u4v_destroy_cq(cq->eng);
	uint32_t reported = 0;

	if (err)
		return err;
	if (cq->kcq &&
	    !u4l_nhi_cq_destroy(to_uctx(ibcq->context)->link, cq->khandle,
				&reported)) {
		pthread_mutex_lock(&ibcq->mutex);
		while (ibcq->comp_events_completed != reported)
			pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
		pthread_mutex_unlock(&ibcq->mutex);
	}
	free(cq);
	return 0;
}

int u4vp_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct u4vp_cq *cq = to_ucq(ibcq);
	int err = u4v_resize_cq(cq->eng, cqe);

	if (!err)
		ibcq->cqe = u4v_cq_depth(cq->eng);
	return err;
}

int u4vp_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	return u4v_poll_cq(to_ucq(ibcq)->eng, n, wc);
}

int u4vp_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return u4v_req_notify_cq(to_ucq(ibcq)->eng, solicited_only);
}

/* ---- shared receive queues ---- */

struct ibv_srq *u4vp_create_srq(struct ibv_pd *ibpd,
				struct ibv_srq_init_attr *attr)
{
	struct u4vp_srq *srq = calloc(1, sizeof(*srq));
	int err;

	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	err = u4v_create_srq(to_upd(ibpd)->eng, &attr->attr, &srq->eng);
	if (err) {
		free(srq);
		errno = err;
		return NULL;
	}
	srq->ibv.context = ibpd->context;
	srq->ibv.srq_context = attr->srq_context;
	srq->ibv.pd = ibpd;
	srq->ibv.handle = u4vp_new_handle(ibpd->context);
	srq->ibv.events_completed = 0;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	u4v_srq_set_handle(srq->eng, (uintptr_t)&srq->ibv);
	return &srq->ibv;
}

int u4vp_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	return u4v_modify_srq(to_usrq(ibsrq)->eng, attr, mask);
}

int u4vp_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	return u4v_query_srq(to_usrq(ibsrq)->eng, attr);
}

int u4vp_destroy_srq(struct ibv_srq *ibsrq)
{
	struct u4vp_srq *srq = to_usrq(ibsrq);
	int err = u4v_destroy_srq(srq->eng);

	if (err)
		return err;
	pthread_cond_destroy(&srq->ibv.cond);
	pthread_mutex_destroy(&srq->ibv.mutex);
	free(srq);
	return 0;
}

int u4vp_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	return u4v_post_srq_recv(to_usrq(ibsrq)->eng, wr, bad_wr);
}

/* ---- queue pairs ---- */

static struct ibv_qp *qp_create(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	uint64_t send_ops = 0;
	struct u4v_qp_init init;
	struct u4vp_qp *qp;
	int err;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    !attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		send_ops = attr->send_ops_flags;

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = u4vp_qp_ex_init(qp, send_ops);
	if (err)
		goto err_free;

	init = (struct u4v_qp_init){
	    .qp_type = attr->qp_type,
	    .send_cq = to_ucq(attr->send_cq)->eng,
	    .recv_cq = to_ucq(attr->recv_cq)->eng,
	    .srq = attr->srq ? to_usrq(attr->srq)->eng : NULL,
	    .cap = attr->cap,
	    .sq_sig_all = attr->sq_sig_all,
	};
	err = u4v_create_qp(to_upd(attr->pd)->eng, &init, &qp->eng);
	if (err)
		goto err_free;
	attr->cap = init.cap;

	/* ibv_create_qp fills nothing itself: every field is ours. */
	struct ibv_qp *ibqp = &qp->vqp.qp;
	ibqp->context = context;
	ibqp->qp_context = attr->qp_context;
	ibqp->pd = attr->pd;
	ibqp->send_cq = attr->send_cq;
	ibqp->recv_cq = attr->recv_cq;
	ibqp->srq = attr->srq;
	ibqp->qp_num = u4v_qp_num(qp->eng);
	ibqp->handle = ibqp->qp_num;
	ibqp->state = u4v_qp_state(qp->eng);
	ibqp->qp_type = attr->qp_type;
	ibqp->events_completed = 0;
	pthread_mutex_init(&ibqp->mutex, NULL);
	pthread_cond_init(&ibqp->cond, NULL);
	u4v_qp_set_handle(qp->eng, (uintptr_t)ibqp);
	return ibqp;

err_free:
	u4vp_qp_ex_fini(qp);
	free(qp);
	errno = err;
	return NULL;
}

struct ibv_qp *u4vp_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
	    .qp_context = attr->qp_context,
	    .send_cq = attr->send_cq,
	    .recv_cq = attr->recv_cq,
	    .srq = attr->srq,
	    .cap = attr->cap,
	    .qp_type = attr->qp_type,
	    .sq_sig_all = attr->sq_sig_all,
	    .comp_mask = IBV_QP_INIT_ATTR_PD,
	    .pd = pd,
	};
	struct ibv_qp *qp = qp_create(pd->context, &ex);

	if (qp)
		attr->cap = ex.cap;
	return qp;
}

struct ibv_qp *u4vp_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr)
{
	return qp_create(context, attr);
}

int u4vp_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	return u4v_modify_qp(to_uqp(ibqp)->eng, attr, mask);
}

int u4vp_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init)
{
	int err = u4v_query_qp(to_uqp(ibqp)->eng, attr, mask, init);

	if (err)
		return err;
	/* The engine does not know the ibv_* objects: name them here. */
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->qp_type = ibqp->qp_type;
	return 0;
}

int u4vp_destroy_qp(struct ibv_qp *ibqp)
{
	struct u4vp_qp *qp = to_uqp(ibqp);
	int err = u4v_destroy_qp(qp->eng);

	if (err)
		return err;
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	u4vp_qp_ex_fini(qp);
	free(qp);
	return 0;
}

int u4vp_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	return u4v_post_send(to_uqp(ibqp)->eng, wr, bad_wr);
}

int u4vp_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	return u4v_post_recv(to_uqp(ibqp)->eng, wr, bad_wr);
}
