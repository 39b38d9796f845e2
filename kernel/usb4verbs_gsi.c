// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: the GSI QP1 of ib_mad, so that the kernel's CM (and rdma_cm
 * over it) works on the port; kernel consumers only, and no other kernel
 * QP: applications' QPs stay in the engine.
 *
 * A MAD posted on QP1 is copied, queued, and carried by the cable's
 * send_mad (the soft cable: a function call into the other end) to the
 * other end's QP1, which takes its first posted receive buffer: the
 * network header (a GRH, or an IPv4 header for IPv4-mapped GIDs, as RoCE
 * v2 adapters give it) and the MAD. No receive posted, no QP1, or a
 * destination GID the receiver does not have: the MAD is dropped, as on a
 * fabric; ib_mad's timeouts and retries do the rest. The send completes
 * once the MAD is queued.
 *
 * ib_core maps buffers for a device without a DMA device to their kernel
 * addresses (ib_dma_map_single), so an SGE's address is where to copy.
 */
#include <linux/ip.h>
#include <net/ip.h>
#include <rdma/ib_cache.h>

#include "usb4verbs_gsi.h"

/* UDP, BTH, DETH before a UD payload, ICRC after it */
#define U4K_ROCE_UD_HDRS (8 + 12 + 8 + 4)

struct u4k_gsi_rwr {
	u64 wr_id;
	u64 addr;
	u32 len;
};

struct u4k_ah {
	struct ib_ah ibah;
	union ib_gid sgid, dgid;
};

/* Kernel CQs: a ring of completions, polled and armed by ib_core. */

int u4k_kcq_create(struct u4k_cq *cq, const struct ib_cq_init_attr *attr)
{
	cq->wc = kvcalloc(attr->cqe, sizeof(*cq->wc), GFP_KERNEL);
	if (!cq->wc)
		return -ENOMEM;
	spin_lock_init(&cq->lock);
	cq->ibcq.cqe = attr->cqe;
	return 0;
}

void u4k_kcq_destroy(struct u4k_cq *cq)
{
	kvfree(cq->wc);
}

int u4k_kcq_arm(struct u4k_cq *cq, enum ib_cq_notify_flags flags)
{
	unsigned long irqf;
	int missed;

	spin_lock_irqsave(&cq->lock, irqf);
	cq->armed = true;
	missed = (flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->count;
	spin_unlock_irqrestore(&cq->lock, irqf);
	return missed;
}

int u4k_kcq_poll(struct u4k_cq *cq, int n, struct ib_wc *wc)
{
	unsigned long irqf;
	int i;

	if (!cq->wc)
		return 0; /* a user CQ: completions live in the process */
	spin_lock_irqsave(&cq->lock, irqf);
	for (i = 0; i < n && cq->count; i++, cq->count--) {
		wc[i] = cq->wc[cq->head];
		cq->head = (cq->head + 1) % cq->ibcq.cqe;
	}
	spin_unlock_irqrestore(&cq->lock, irqf);
	return i;
}

/* One completion; the CQ's handler if it was armed. Any context. */
static void u4k_kcq_push(struct ib_cq *ibcq, const struct ib_wc *wc)
{
	struct u4k_cq *cq = container_of(ibcq, struct u4k_cq, ibcq);
	unsigned long irqf;
	bool fire;

	spin_lock_irqsave(&cq->lock, irqf);
	if (cq->count == ibcq->cqe) {
		spin_unlock_irqrestore(&cq->lock, irqf);
		ibdev_warn_ratelimited(ibcq->device, "GSI CQ overrun\n");
		return;
	}
	cq->wc[(cq->head + cq->count++) % ibcq->cqe] = *wc;
	fire = cq->armed;
	cq->armed = false;
	spin_unlock_irqrestore(&cq->lock, irqf);
	if (fire && ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

/* The GSI QP: one per device, created by ib_mad. */

int u4k_gsi_create_qp(struct u4k_qp *qp, struct ib_qp_init_attr *init)
{
	struct u4k_dev *dev = to_u4k_dev(qp->ibqp.device);
	unsigned long irqf;

	if (init->qp_type != IB_QPT_GSI || init->srq ||
	    init->create_flags || init->cap.max_recv_sge > 1 ||
	    init->cap.max_send_sge > U4V_MAX_SGE || !init->cap.max_recv_wr ||
	    init->cap.max_recv_wr > U4V_MAX_QP_WR)
		return -EOPNOTSUPP;
	qp->rq = kvcalloc(init->cap.max_recv_wr, sizeof(*qp->rq), GFP_KERNEL);
	if (!qp->rq)
		return -ENOMEM;
	qp->rq_size = init->cap.max_recv_wr;
	qp->ibqp.qp_num = 1;
	qp->state = IB_QPS_RESET;
	spin_lock_irqsave(&dev->gsi_lock, irqf);
	if (!dev->gsi)
		dev->gsi = qp;
	spin_unlock_irqrestore(&dev->gsi_lock, irqf);
	if (dev->gsi == qp)
		return 0;
	kvfree(qp->rq);
	return -EBUSY;
}

void u4k_gsi_destroy_qp(struct u4k_qp *qp)
{
	struct u4k_dev *dev = to_u4k_dev(qp->ibqp.device);
	unsigned long irqf;

	spin_lock_irqsave(&dev->gsi_lock, irqf);
	dev->gsi = NULL; /* no delivery finds it after this */
	spin_unlock_irqrestore(&dev->gsi_lock, irqf);
	kvfree(qp->rq);
}

static int u4k_gsi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			     const struct ib_recv_wr **bad)
{
	struct u4k_qp *qp = container_of(ibqp, struct u4k_qp, ibqp);
	struct u4k_dev *dev = to_u4k_dev(ibqp->device);
	struct u4k_gsi_rwr *r;
	unsigned long irqf;
	int ret = 0;

	spin_lock_irqsave(&dev->gsi_lock, irqf);
	for (; wr; wr = wr->next) {
		if (wr->num_sge != 1 || qp->rq_count == qp->rq_size) {
			ret = wr->num_sge != 1 ? -EINVAL : -ENOMEM;
			*bad = wr;
			break;
		}
		r = &qp->rq[(qp->rq_head + qp->rq_count++) % qp->rq_size];
		r->wr_id = wr->wr_id;
		r->addr = wr->sg_list[0].addr;
		r->len = wr->sg_list[0].length;
	}
	spin_unlock_irqrestore(&dev->gsi_lock, irqf);
	return ret;
}

/* Copy one MAD send into a message for the other end. */
static struct u4k_mad *u4k_gsi_pack(const struct ib_send_wr *wr)
{
	const struct u4k_ah *ah;
	struct u4k_mad *mad;
	u32 i, len = 0;

	if (wr->opcode != IB_WR_SEND || !ud_wr(wr)->ah)
		return ERR_PTR(-EINVAL);
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > IB_MGMT_MAD_SIZE || wr->num_sge > U4V_MAX_SGE)
		return ERR_PTR(-EINVAL);
	mad = kzalloc(sizeof(*mad), GFP_ATOMIC);
	if (!mad)
		return ERR_PTR(-ENOMEM);
	ah = container_of(ud_wr(wr)->ah, struct u4k_ah, ibah);
	mad->sgid = ah->sgid;
	mad->dgid = ah->dgid;
	mad->src_qpn = 1;
	mad->dst_qpn = ud_wr(wr)->remote_qpn;
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(mad->data + mad->len,
		       (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		mad->len += wr->sg_list[i].length;
	}
	return mad;
}

/* ib_mad posts with IRQs off: queue, complete, carry from a work. */
static int u4k_gsi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			     const struct ib_send_wr **bad)
{
	struct u4k_qp *qp = container_of(ibqp, struct u4k_qp, ibqp);
	struct u4k_dev *dev = to_u4k_dev(ibqp->device);
	struct ib_wc wc = { .opcode = IB_WC_SEND, .qp = ibqp };
	struct u4k_mad *mad;
	unsigned long irqf;

	for (; wr; wr = wr->next) {
		mad = READ_ONCE(qp->state) == IB_QPS_RTS ? u4k_gsi_pack(wr) :
							   ERR_PTR(-EINVAL);
		if (IS_ERR(mad)) {
			*bad = wr;
			return PTR_ERR(mad);
		}
		spin_lock_irqsave(&dev->gsi_lock, irqf);
		list_add_tail(&mad->node, &dev->mad_tx);
		spin_unlock_irqrestore(&dev->gsi_lock, irqf);
		schedule_work(&dev->mad_work);
		wc.wr_id = wr->wr_id;
		u4k_kcq_push(ibqp->send_cq, &wc);
	}
	return 0;
}

static void u4k_gsi_tx_work(struct work_struct *work)
{
	struct u4k_dev *dev = container_of(work, struct u4k_dev, mad_work);
	struct u4k_cable *cable = dev->cable;
	struct u4k_mad *mad;
	unsigned long irqf;

	for (;;) {
		spin_lock_irqsave(&dev->gsi_lock, irqf);
		mad = list_first_entry_or_null(&dev->mad_tx, struct u4k_mad,
					       node);
		if (mad)
			list_del(&mad->node);
		spin_unlock_irqrestore(&dev->gsi_lock, irqf);
		if (!mad)
			return;
		if (READ_ONCE(cable->up) && cable->ops->send_mad)
			cable->ops->send_mad(cable, mad);
		kfree(mad);
	}
}

/* The network header a RoCE v2 adapter puts before a UD payload. */
static void u4k_gsi_net_hdr(u8 *buf, const struct u4k_mad *mad,
			    struct ib_wc *wc)
{
	struct ib_grh *grh = (struct ib_grh *)buf;
	struct iphdr *ip4 = (struct iphdr *)(buf + 20);

	memset(buf, 0, sizeof(*grh));
	wc->wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
	if (ipv6_addr_v4mapped((struct in6_addr *)mad->sgid.raw)) {
		wc->network_hdr_type = RDMA_NETWORK_IPV4;
		ip4->version = 4;
		ip4->ihl = 5;
		ip4->ttl = 64;
		ip4->protocol = IPPROTO_UDP;
		ip4->tot_len = htons(sizeof(*ip4) + U4K_ROCE_UD_HDRS + mad->len);
		memcpy(&ip4->saddr, mad->sgid.raw + 12, 4);
		memcpy(&ip4->daddr, mad->dgid.raw + 12, 4);
		ip_send_check(ip4);
		return;
	}
	wc->network_hdr_type = RDMA_NETWORK_IPV6;
	grh->version_tclass_flow = cpu_to_be32(6 << 28);
	grh->paylen = cpu_to_be16(U4K_ROCE_UD_HDRS + mad->len);
	grh->next_hdr = IPPROTO_UDP;
	grh->hop_limit = 64;
	grh->sgid = mad->sgid;
	grh->dgid = mad->dgid;
}

/* A MAD from the other end (process context): into a posted receive. */
void u4k_gsi_recv(struct u4k_dev *dev, const struct u4k_mad *mad)
{
	const struct ib_gid_attr *attr;
	struct ib_wc wc = { .opcode = IB_WC_RECV, .src_qp = mad->src_qpn };
	struct u4k_gsi_rwr r;
	struct u4k_qp *qp;
	unsigned long irqf;

	if (mad->dst_qpn != 1 || mad->len > IB_MGMT_MAD_SIZE)
		return;
	attr = rdma_find_gid(&dev->ibdev, &mad->dgid,
			     IB_GID_TYPE_ROCE_UDP_ENCAP, NULL);
	if (IS_ERR(attr))
		return; /* not one of our addresses */
	rdma_put_gid_attr(attr);
	spin_lock_irqsave(&dev->gsi_lock, irqf);
	qp = dev->gsi;
	if (!qp || qp->state < IB_QPS_RTR || qp->state > IB_QPS_SQD ||
	    !qp->rq_count) {
		spin_unlock_irqrestore(&dev->gsi_lock, irqf);
		return;
	}
	r = qp->rq[qp->rq_head];
	qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
	qp->rq_count--;
	wc.wr_id = r.wr_id;
	wc.qp = &qp->ibqp;
	wc.byte_len = sizeof(struct ib_grh) + mad->len;
	if (r.len < wc.byte_len) {
		wc.status = IB_WC_LOC_LEN_ERR;
	} else {
		u4k_gsi_net_hdr((u8 *)(uintptr_t)r.addr, mad, &wc);
		memcpy((u8 *)(uintptr_t)r.addr + sizeof(struct ib_grh),
		       mad->data, mad->len);
	}
	u4k_kcq_push(qp->ibqp.recv_cq, &wc);
	spin_unlock_irqrestore(&dev->gsi_lock, irqf);
}

/* Address handles of kernel consumers: where a MAD goes. */

static int u4k_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			 struct ib_udata *udata)
{
	struct u4k_ah *ah = container_of(ibah, struct u4k_ah, ibah);
	const struct ib_global_route *grh = rdma_ah_read_grh(init->ah_attr);

	if (udata || !(rdma_ah_get_ah_flags(init->ah_attr) & IB_AH_GRH) ||
	    !grh->sgid_attr)
		return -EOPNOTSUPP;
	ah->sgid = grh->sgid_attr->gid;
	ah->dgid = grh->dgid;
	return 0;
}

static int u4k_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

const struct ib_device_ops u4k_gsi_ops = {
	.create_ah = u4k_create_ah,
	.destroy_ah = u4k_destroy_ah,
	.post_recv = u4k_gsi_post_recv,
	.post_send = u4k_gsi_post_send,

	INIT_RDMA_OBJ_SIZE(ib_ah, u4k_ah, ibah),
};

void u4k_gsi_init(struct u4k_dev *dev)
{
	spin_lock_init(&dev->gsi_lock);
	INIT_LIST_HEAD(&dev->mad_tx);
	INIT_WORK(&dev->mad_work, u4k_gsi_tx_work);
}

/* The cable is down: nothing more is carried from dev; drop the rest. */
void u4k_gsi_stop(struct u4k_dev *dev)
{
	struct u4k_mad *mad, *next;
	unsigned long irqf;
	LIST_HEAD(left);

	cancel_work_sync(&dev->mad_work);
	spin_lock_irqsave(&dev->gsi_lock, irqf);
	list_splice_init(&dev->mad_tx, &left);
	spin_unlock_irqrestore(&dev->gsi_lock, irqf);
	list_for_each_entry_safe(mad, next, &left, node)
		kfree(mad);
}
