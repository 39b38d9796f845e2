// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: the ib_device and its operations.
 *
 * The transport runs in the calling process; the kernel keeps only
 * bookkeeping for PD/CQ/QP/MR (no payload, nothing pinned), the mappings of
 * channels, the doorbell and completion events.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/capability.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>
#define UVERBS_MODULE_NAME usb4verbs
#include <rdma/uverbs_named_ioctl.h>
#include <rdma/uverbs_std_types.h>

#include "usb4verbs_gsi.h"

/* ib_core's GIDs of the cable's net device (netdev.c): one per address */
#define U4K_GID_TBL_LEN 16

struct u4k_pd {
	struct ib_pd ibpd;
};

/* Count one more object against a limit the kernel enforces. */
static int u4k_take(atomic_t *nr, int max)
{
	if (atomic_inc_return(nr) <= max)
		return 0;
	atomic_dec(nr);
	return -ENOMEM;
}

static int u4k_query_device(struct ib_device *ibdev,
			    struct ib_device_attr *attr,
			    struct ib_udata *udata)
{
	struct u4k_dev *dev = to_u4k_dev(ibdev);

	if (udata->inlen || udata->outlen)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->sys_image_guid = cpu_to_be64(dev->guid);
	attr->max_mr_size = U4V_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = U4V_VENDOR_ID;
	attr->vendor_part_id = U4V_VENDOR_PART_ID;
	attr->hw_ver = U4V_ABI_VERSION;
	attr->max_qp = U4V_MAX_QP;
	attr->max_qp_wr = U4V_MAX_QP_WR;
	attr->max_send_sge = U4V_MAX_SGE;
	attr->max_recv_sge = U4V_MAX_SGE;
	attr->max_sge_rd = U4V_MAX_SGE;
	attr->max_cq = U4V_MAX_CQ;
	attr->max_cqe = U4V_MAX_CQE;
	attr->max_mr = U4V_MAX_MR;
	attr->max_mw = U4V_MAX_MW;
	attr->max_pd = U4V_MAX_PD;
	attr->max_qp_rd_atom = U4V_MAX_QP_RD_ATOM;
	attr->max_qp_init_rd_atom = U4V_MAX_QP_RD_ATOM;
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->max_srq = U4V_MAX_SRQ;
	attr->max_srq_wr = U4V_MAX_SRQ_WR;
	attr->max_srq_sge = U4V_MAX_SGE;
	attr->max_ah = U4V_MAX_AH;
	attr->max_pkeys = U4V_MAX_PKEYS;
	attr->local_ca_ack_delay = U4V_LOCAL_CA_ACK_DELAY;
	/* ib_mad's PD: its lkey is ignored (kernel addresses, gsi.c) */
	attr->kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	return 0;
}

static int u4k_query_port(struct ib_device *ibdev, u32 port,
			  struct ib_port_attr *attr)
{
	struct u4k_dev *dev = to_u4k_dev(ibdev);
	bool up = READ_ONCE(dev->cable->up);

	/* attr is zeroed by the core */
	attr->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = IB_MTU_4096;
	attr->gid_tbl_len = U4K_GID_TBL_LEN;
	attr->pkey_tbl_len = U4V_MAX_PKEYS;
	attr->max_msg_sz = U4V_MAX_MSG_SZ;
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = IB_SPEED_FDR10;
	return 0;
}

static int u4k_get_port_immutable(struct ib_device *ibdev, u32 port,
				  struct ib_port_immutable *imm)
{
	imm->pkey_tbl_len = U4V_MAX_PKEYS;
	imm->gid_tbl_len = U4K_GID_TBL_LEN;
	/* RoCE v2: ib_core keeps the GIDs (netdev.c); MADs where carried */
	if (!to_u4k_dev(ibdev)->cable->ops->send_mad) {
		imm->core_cap_flags = RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP;
		return 0;
	}
	imm->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	imm->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer u4k_get_link_layer(struct ib_device *ibdev,
					       u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int u4k_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			  u16 *pkey)
{
	if (index != 0)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

static void u4k_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "usb4verbs-abi-%d",
		 U4V_ABI_VERSION);
}

/* Contexts */

/* What a context holds besides its id (also the error path). */
static void u4k_ctx_put_res(struct u4k_ucontext *uctx)
{
	u4k_buf_remove(uctx->db[0]);
	u4k_buf_remove(uctx->db[1]);
	u4k_buf_remove(uctx->status_buf);
	if (uctx->evfd)
		eventfd_ctx_put(uctx->evfd);
}

/* What u4k_ctx_put_res gives back: the event fd, status page, doorbells. */
static int u4k_ctx_get_res(struct u4k_ucontext *uctx, int event_fd)
{
	const struct u4k_cable_ops *ops = uctx->dev->cable->ops;
	int i;

	if (event_fd >= 0) {
		uctx->evfd = eventfd_ctx_fdget(event_fd);
		if (IS_ERR(uctx->evfd)) {
			int ret = PTR_ERR(uctx->evfd);

			uctx->evfd = NULL;
			return ret;
		}
	}
	uctx->status_buf = u4k_buf_alloc(uctx, PAGE_SIZE, false);
	if (!uctx->status_buf)
		return -ENOMEM;
	uctx->status = uctx->status_buf->kva;
	uctx->status->abi_version = U4V_ABI_VERSION;
	/* direct: the NHI's ring register pages, or pages the soft engine scans */
	for (i = 0; uctx->direct && i < 2; i++) {
		uctx->db[i] = ops->db_alloc ? ops->db_alloc(uctx, i) :
			      u4k_buf_alloc(uctx, PAGE_SIZE, true);
		if (!uctx->db[i])
			return -ENOMEM;
	}
	return 0;
}

/* The provider's answer: where the context stands and what it maps. */
static int u4k_ctx_reply(struct u4k_ucontext *uctx, struct ib_udata *udata)
{
	struct u4k_dev *dev = uctx->dev;
	struct u4v_alloc_ucontext_resp resp = {};

	resp.abi_version = U4V_ABI_VERSION;
	resp.ctx_id = uctx->ctx_id;
	resp.end = dev->cable->end;
	resp.ring_depth = u4k_ring_depth;
	resp.max_channels = dev->cable->max_channels;
	resp.mode = uctx->direct ? U4V_MODE_DIRECT : U4V_MODE_SAFE;
	resp.status_off = rdma_user_mmap_get_offset(&uctx->status_buf->rdma);
	resp.status_len = PAGE_SIZE;
	resp.node_guid = dev->guid;
	resp.wire_rate = dev->cable->wire_rate;
	/*
	 * Unknown (0): the soft engine does not pace its rings, and an NHI's
	 * rate per ring is not measured here. The provider measures it where
	 * the wire's rate is known (a Thunderbolt link), else takes one lane.
	 */
	resp.ring_rate = 0;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

static int u4k_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct u4k_ucontext *uctx = to_u4k_uctx(ibuc);
	struct u4v_alloc_ucontext_req req;
	int ret;

	if (udata->inlen < sizeof(req))
		return -EINVAL;
	ret = ib_copy_from_udata(&req, udata, sizeof(req));
	if (ret)
		return ret;
	/* before the response's size: another ABI's may differ */
	if (req.abi_version != U4V_ABI_VERSION) {
		ibdev_dbg(ibuc->device, "provider ABI %u, kernel %u\n",
			  req.abi_version, U4V_ABI_VERSION);
		return -EPROTO;
	}
	if (udata->outlen < sizeof(struct u4v_alloc_ucontext_resp))
		return -EINVAL;
	uctx->direct = req.flags & U4V_UCTX_REQ_DIRECT;
	/* writable rings hand out the controller's DMA */
	if (uctx->direct && (!u4k_allow_direct || !capable(CAP_SYS_RAWIO)))
		return -EPERM;
	uctx->dev = to_u4k_dev(ibuc->device);
	INIT_LIST_HEAD(&uctx->pending_chans);
	INIT_LIST_HEAD(&uctx->graveyard);
	INIT_LIST_HEAD(&uctx->cqs);
	spin_lock_init(&uctx->cq_lock);
	ret = u4k_ctx_get_res(uctx, req.event_fd);
	if (ret)
		goto err;
	ret = u4k_ctx_attach(uctx);
	if (ret)
		goto err;
	ret = u4k_ctx_reply(uctx, udata);
	if (!ret)
		return 0;
	u4k_ctx_detach(uctx);
err:
	u4k_ctx_put_res(uctx);
	return ret;
}

static void u4k_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	u4k_ctx_detach(to_u4k_uctx(ibuc));
	u4k_ctx_put_res(to_u4k_uctx(ibuc));
}

/* Applications still hold the device: uverbs zaps our mappings itself. */
static void u4k_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static int u4k_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *e;
	struct u4k_buf *buf;
	int ret;

	e = rdma_user_mmap_entry_get(ibuc, vma);
	if (!e)
		return -EINVAL;
	buf = container_of(e, struct u4k_buf, rdma);
	if (!buf->writable) {
		if (vma->vm_flags & VM_WRITE) {
			ret = -EPERM;
			goto out;
		}
		u4k_vm_flags_clear(vma, VM_MAYWRITE);
	}
	/* linear-map memory or MMIO; it stays until mmap_free */
	if (buf->kind == U4K_BUF_IO)
		ret = rdma_user_mmap_io(ibuc, vma, PHYS_PFN(buf->dma),
					buf->size,
					pgprot_noncached(vma->vm_page_prot), e);
	else
		ret = rdma_user_mmap_io(ibuc, vma,
					page_to_pfn(virt_to_page(buf->kva)),
					buf->size, vma->vm_page_prot, e);
out:
	rdma_user_mmap_entry_put(e);
	return ret;
}

static void u4k_mmap_free(struct rdma_user_mmap_entry *e)
{
	u4k_buf_free(container_of(e, struct u4k_buf, rdma));
}

/* PD */

static int u4k_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return u4k_take(&to_u4k_dev(ibpd->device)->nr_pd, U4V_MAX_PD);
}

static int u4k_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_u4k_dev(ibpd->device)->nr_pd);
	return 0;
}

/* CQ: only the event side lives here; completions are in userspace. */

static int u4k_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			 u4k_create_cq_arg *arg)
{
	struct ib_udata *udata = u4k_create_cq_udata(arg);
	struct u4k_cq *cq = container_of(ibcq, struct u4k_cq, ibcq);
	struct u4k_dev *dev = to_u4k_dev(ibcq->device);
	struct u4k_ucontext *uctx;
	unsigned long flags;

	int ret;

	if (attr->flags || attr->cqe < 1 || attr->cqe > U4V_MAX_CQE)
		return -EINVAL;
	if (u4k_take(&dev->nr_cq, U4V_MAX_CQ))
		return -ENOMEM;
	if (!udata) {
		ret = u4k_kcq_create(cq, attr);
		if (ret)
			atomic_dec(&dev->nr_cq);
		return ret;
	}
	uctx = rdma_udata_to_drv_context(udata, struct u4k_ucontext, ibuc);
	ibcq->cqe = attr->cqe;
	cq->uctx = uctx;
	spin_lock_irqsave(&uctx->cq_lock, flags);
	list_add_tail(&cq->node, &uctx->cqs);
	spin_unlock_irqrestore(&uctx->cq_lock, flags);
	return 0;
}

static int u4k_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct u4k_cq *cq = container_of(ibcq, struct u4k_cq, ibcq);
	unsigned long flags;

	if (cq->uctx) {
		spin_lock_irqsave(&cq->uctx->cq_lock, flags);
		list_del(&cq->node);
		spin_unlock_irqrestore(&cq->uctx->cq_lock, flags);
	} else {
		u4k_kcq_destroy(cq);
	}
	atomic_dec(&to_u4k_dev(ibcq->device)->nr_cq);
	return 0;
}

static int u4k_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags f)
{
	struct u4k_cq *cq = container_of(ibcq, struct u4k_cq, ibcq);

	if (!cq->uctx)
		return u4k_kcq_arm(cq, f);
	WRITE_ONCE(cq->armed, true);
	return 0;
}

static int u4k_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	return u4k_kcq_poll(container_of(ibcq, struct u4k_cq, ibcq), n, wc);
}

/* An RX interrupt on a channel of uctx: fire every armed CQ once. */
void u4k_ctx_signal_cqs(struct u4k_ucontext *uctx)
{
	struct u4k_cq *cq;
	unsigned long flags;

	spin_lock_irqsave(&uctx->cq_lock, flags);
	list_for_each_entry(cq, &uctx->cqs, node)
		if (xchg(&cq->armed, false) && cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	spin_unlock_irqrestore(&uctx->cq_lock, flags);
}

/* QP bookkeeping: a number and a state; the engine does the transport. */

static int u4k_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			 struct ib_udata *udata)
{
	struct u4k_dev *dev = to_u4k_dev(ibqp->device);
	struct u4k_qp *qp = container_of(ibqp, struct u4k_qp, ibqp);
	int qpn;

	if (!udata)
		return u4k_gsi_create_qp(qp, init);
	if (init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UC &&
	    init->qp_type != IB_QPT_UD)
		return -EOPNOTSUPP;
	if (init->cap.max_send_wr > U4V_MAX_QP_WR ||
	    init->cap.max_recv_wr > U4V_MAX_QP_WR ||
	    init->cap.max_send_sge > U4V_MAX_SGE ||
	    init->cap.max_recv_sge > U4V_MAX_SGE)
		return -EINVAL;
	if (u4k_take(&dev->nr_qp, U4V_MAX_QP))
		return -ENOMEM;
	qpn = ida_alloc_range(&dev->qpn_ida, 2, 0xffffff, GFP_KERNEL);
	if (qpn < 0) {
		atomic_dec(&dev->nr_qp);
		return qpn;
	}
	ibqp->qp_num = qpn;
	qp->state = IB_QPS_RESET;
	return 0;
}

static int u4k_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			 int mask, struct ib_udata *udata)
{
	struct u4k_qp *qp = container_of(ibqp, struct u4k_qp, ibqp);

	if (mask & IB_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

static int u4k_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			int mask, struct ib_qp_init_attr *init)
{
	struct u4k_qp *qp = container_of(ibqp, struct u4k_qp, ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = IB_MTU_4096;
	init->qp_type = ibqp->qp_type;
	return 0;
}

static int u4k_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct u4k_dev *dev = to_u4k_dev(ibqp->device);

	if (ibqp->qp_type == IB_QPT_GSI) {
		u4k_gsi_destroy_qp(container_of(ibqp, struct u4k_qp, ibqp));
		return 0;
	}
	ida_free(&dev->qpn_ida, ibqp->qp_num);
	atomic_dec(&dev->nr_qp);
	return 0;
}

/* Cross-cable counters: rdma statistic, sysfs ports/1/hw_counters. */

static const struct rdma_stat_desc u4k_stat_descs[U4K_NR_STATS] = {
	[U4K_STAT_TX_FRAMES] = { .name = "cable_tx_frames" },
	[U4K_STAT_TX_BYTES] = { .name = "cable_tx_bytes" },
	[U4K_STAT_RX_FRAMES] = { .name = "cable_rx_frames" },
	[U4K_STAT_RX_BYTES] = { .name = "cable_rx_bytes" },
};

static struct rdma_hw_stats *u4k_alloc_hw_port_stats(struct ib_device *ibdev,
						     u32 port)
{
	return rdma_alloc_hw_stats_struct(u4k_stat_descs, U4K_NR_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int u4k_get_hw_stats(struct ib_device *ibdev,
			    struct rdma_hw_stats *stats, u32 port, int index)
{
	struct u4k_cable *cable = to_u4k_dev(ibdev)->cable;
	int i;

	for (i = 0; i < U4K_NR_STATS; i++)
		stats->value[i] = atomic64_read(&cable->stats[i]);
	return U4K_NR_STATS;
}

/* MR bookkeeping: keys and bounds only, nothing pinned. */

/*
 * Also the DMA MR of kernel consumers, whose buffers the GSI QP reaches by
 * address (gsi.c); ib_core asks for get_dma_mr before it lets them in.
 */
static struct ib_mr *u4k_get_dma_mr(struct ib_pd *pd, int access)
{
	struct u4k_dev *dev = to_u4k_dev(pd->device);
	struct ib_mr *mr;

	if (u4k_take(&dev->nr_mr, U4V_MAX_MR))
		return ERR_PTR(-ENOMEM);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		atomic_dec(&dev->nr_mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->lkey = (u32)atomic_inc_return(&dev->mr_key) << 8;
	mr->rkey = mr->lkey;
	return mr;
}

static struct ib_mr *u4k_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				     u64 virt, int access,
				     U4K_REG_USER_MR_DMAH struct ib_udata *udata)
{
	struct ib_mr *mr;

	if (!length || start + length < start)
		return ERR_PTR(-EINVAL);
	mr = u4k_get_dma_mr(pd, access);
	if (IS_ERR(mr))
		return mr;
	mr->iova = virt;
	mr->length = length;
	return mr;
}

static int u4k_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	atomic_dec(&to_u4k_dev(ibmr->device)->nr_mr);
	kfree(ibmr);
	return 0;
}

/* Driver methods: channels, doorbell, CQ signalling. */

static int UVERBS_HANDLER(U4V_METHOD_CHAN_GET)(struct uverbs_attr_bundle *attrs)
{
	struct ib_ucontext *ibuc = ib_uverbs_get_ucontext(attrs);
	struct u4v_chan_info info;
	u32 remote, lane = 0;
	int ret;

	if (IS_ERR(ibuc))
		return PTR_ERR(ibuc);
	ret = uverbs_copy_from(&remote, attrs, U4V_ATTR_CHAN_GET_REMOTE);
	if (!ret && uverbs_attr_is_valid(attrs, U4V_ATTR_CHAN_GET_LANE))
		ret = uverbs_copy_from(&lane, attrs, U4V_ATTR_CHAN_GET_LANE);
	if (!ret)
		ret = u4k_chan_get(to_u4k_uctx(ibuc), remote, lane, &info);
	return ret ?: uverbs_copy_to(attrs, U4V_ATTR_CHAN_GET_INFO, &info,
				     sizeof(info));
}

static int UVERBS_HANDLER(U4V_METHOD_DOORBELL)(struct uverbs_attr_bundle *attrs)
{
	struct ib_ucontext *ibuc = ib_uverbs_get_ucontext(attrs);
	bool tx = uverbs_attr_is_valid(attrs, U4V_ATTR_DOORBELL_TX_PROD);
	bool rx = uverbs_attr_is_valid(attrs, U4V_ATTR_DOORBELL_RX_CONS);
	u32 remote, lane = 0, tx_prod = 0, rx_cons = 0;
	int ret;

	if (IS_ERR(ibuc))
		return PTR_ERR(ibuc);
	ret = uverbs_copy_from(&remote, attrs, U4V_ATTR_DOORBELL_REMOTE);
	if (!ret && uverbs_attr_is_valid(attrs, U4V_ATTR_DOORBELL_LANE))
		ret = uverbs_copy_from(&lane, attrs, U4V_ATTR_DOORBELL_LANE);
	if (!ret && tx)
		ret = uverbs_copy_from(&tx_prod, attrs,
				       U4V_ATTR_DOORBELL_TX_PROD);
	if (!ret && rx)
		ret = uverbs_copy_from(&rx_cons, attrs,
				       U4V_ATTR_DOORBELL_RX_CONS);
	return ret ?: u4k_doorbell(to_u4k_uctx(ibuc), remote, lane, tx, tx_prod,
				   rx, rx_cons);
}

static int
UVERBS_HANDLER(U4V_METHOD_CQ_SIGNAL)(struct uverbs_attr_bundle *attrs)
{
	struct ib_cq *cq = uverbs_attr_get_obj(attrs, U4V_ATTR_CQ_SIGNAL_HANDLE);

	if (IS_ERR(cq))
		return PTR_ERR(cq);
	if (cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
	return 0;
}

DECLARE_UVERBS_NAMED_METHOD(U4V_METHOD_CHAN_GET,
			    UVERBS_ATTR_PTR_IN(U4V_ATTR_CHAN_GET_REMOTE,
					       UVERBS_ATTR_TYPE(u32),
					       UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(U4V_ATTR_CHAN_GET_INFO,
						UVERBS_ATTR_TYPE(struct u4v_chan_info),
						UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(U4V_ATTR_CHAN_GET_LANE,
					       UVERBS_ATTR_TYPE(u32),
					       UA_OPTIONAL));

DECLARE_UVERBS_NAMED_METHOD(U4V_METHOD_DOORBELL,
			    UVERBS_ATTR_PTR_IN(U4V_ATTR_DOORBELL_REMOTE,
					       UVERBS_ATTR_TYPE(u32),
					       UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(U4V_ATTR_DOORBELL_TX_PROD,
					       UVERBS_ATTR_TYPE(u32),
					       UA_OPTIONAL),
			    UVERBS_ATTR_PTR_IN(U4V_ATTR_DOORBELL_RX_CONS,
					       UVERBS_ATTR_TYPE(u32),
					       UA_OPTIONAL),
			    UVERBS_ATTR_PTR_IN(U4V_ATTR_DOORBELL_LANE,
					       UVERBS_ATTR_TYPE(u32),
					       UA_OPTIONAL));

DECLARE_UVERBS_NAMED_METHOD(U4V_METHOD_CQ_SIGNAL,
			    UVERBS_ATTR_IDR(U4V_ATTR_CQ_SIGNAL_HANDLE,
					    UVERBS_OBJECT_CQ,
					    UVERBS_ACCESS_READ, UA_MANDATORY));

ADD_UVERBS_METHODS(u4k_device_methods, UVERBS_OBJECT_DEVICE,
		   &UVERBS_METHOD(U4V_METHOD_CHAN_GET),
		   &UVERBS_METHOD(U4V_METHOD_DOORBELL),
		   &UVERBS_METHOD(U4V_METHOD_CQ_SIGNAL));

static const struct uapi_definition u4k_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE, &u4k_device_methods),
	{},
};

static const struct ib_device_ops u4k_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = 1, /* sysfs abi_version, not U4V_ABI_VERSION */

	.alloc_hw_port_stats = u4k_alloc_hw_port_stats,
	.alloc_pd = u4k_alloc_pd,
	.alloc_ucontext = u4k_alloc_ucontext,
	.create_cq = u4k_create_cq,
	.create_qp = u4k_create_qp,
	.dealloc_pd = u4k_dealloc_pd,
	.dealloc_ucontext = u4k_dealloc_ucontext,
	.dereg_mr = u4k_dereg_mr,
	.destroy_cq = u4k_destroy_cq,
	.destroy_qp = u4k_destroy_qp,
	.disassociate_ucontext = u4k_disassociate_ucontext,
	.get_dev_fw_str = u4k_get_dev_fw_str,
	.get_dma_mr = u4k_get_dma_mr,
	.get_hw_stats = u4k_get_hw_stats,
	.get_link_layer = u4k_get_link_layer,
	.get_port_immutable = u4k_get_port_immutable,
	.mmap = u4k_mmap,
	.mmap_free = u4k_mmap_free,
	.modify_qp = u4k_modify_qp,
	.poll_cq = u4k_poll_cq,
	.query_device = u4k_query_device,
	.query_pkey = u4k_query_pkey,
	.query_port = u4k_query_port,
	.query_qp = u4k_query_qp,
	.reg_user_mr = u4k_reg_user_mr,
	.req_notify_cq = u4k_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, u4k_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, u4k_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, u4k_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, u4k_ucontext, ibuc),
};

/* A cable end's ib_device, registered. */
struct u4k_dev *u4k_dev_add(struct u4k_cable *cable, struct device *dma_dev,
			    u64 guid)
{
	struct u4k_dev *dev = ib_alloc_device(u4k_dev, ibdev);
	int ret;

	if (!dev)
		return ERR_PTR(-ENOMEM);
	dev->cable = cable;
	dev->guid = guid;
	dev->dma_dev = dma_dev;
	ida_init(&dev->qpn_ida);
	dev->ibdev.node_type = RDMA_NODE_IB_CA;
	dev->ibdev.node_guid = cpu_to_be64(guid);
	dev->ibdev.phys_port_cnt = 1;
	dev->ibdev.num_comp_vectors = 1;
	dev->ibdev.uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	strscpy(dev->ibdev.node_desc, "usb4verbs", sizeof(dev->ibdev.node_desc));
	dev->ibdev.driver_def = u4k_uapi_defs;
	/* sysfs device/: the NHI (soft cable: its platform device) */
	dev->ibdev.dev.parent = dma_dev;
	ib_set_device_ops(&dev->ibdev, &u4k_dev_ops);
	ib_set_device_ops(&dev->ibdev, &u4k_gsi_ops);
	u4k_gsi_init(dev);
	/* no DMA device for ib_core: kernel consumers' buffers by address */
	ret = ib_register_device(&dev->ibdev, "usb4v%d", NULL);
	if (ret) {
		ib_dealloc_device(&dev->ibdev);
		return ERR_PTR(ret);
	}
	u4k_netdev_add(dev);
	return dev;
}

/* Unplug / unload: applications holding the device are disassociated. */
void u4k_dev_remove(struct u4k_dev *dev)
{
	u4k_netdev_del(dev);
	ib_unregister_device(&dev->ibdev);
	u4k_gsi_stop(dev);
	ida_destroy(&dev->qpn_ida);
	ib_dealloc_device(&dev->ibdev);
}
