// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu: XDomain packets between the two hosts' control channels.
 *
 * As in the thunderbolt core (ctl.c, xdomain.c): a packet is at most 252
 * bytes, whole dwords; each host takes its packets in arrival order; every
 * XDomain request or response is first offered to the protocol handlers
 * (all hosts share one list), and a response none of them takes answers
 * the first pending request of that host whose route and protocol UUID it
 * matches, with min(sizes) bytes copied. A request not answered in time
 * fails with -ETIMEDOUT and a late answer finds no request. The receiving
 * side sees bit 63 of the route set, as the core's matching expects.
 * Faults (module parameters) drop, delay or scramble packets in between.
 */
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/workqueue.h>

#include "tbemu.h"

/* The XDomain header: route_hi, route_lo, length_sn, then the protocol. */
#define TBE_XD_HDR 12
#define TBE_XD_MIN (TBE_XD_HDR + UUID_SIZE)
/*
 * usb4verbs' packets (like ThunderboltIP's) go on with the initiator's and
 * the target's UUIDs, then a type word; a response has bit 8 set in it.
 */
#define TBE_XD_TYPE (TBE_XD_MIN + 2 * UUID_SIZE)
#define TBE_XD_TYPE_RESP 0x100

struct tbe_pkt {
	struct work_struct work;
	struct tbe_host *to;
	enum tb_cfg_pkg_type type;
	size_t size;
	unsigned int delay_ms;
	u32 buf[TBE_CTL_MAX / 4];
};

struct tbe_req {
	struct list_head list;
	const u32 *request;
	void *response;
	size_t response_size;
	struct completion done;
};

static LIST_HEAD(tbe_handlers);
static DEFINE_MUTEX(tbe_handler_lock);
static u32 tbe_garble_seed = 0x9e3779b9;

int tb_register_protocol_handler(struct tb_protocol_handler *handler)
{
	if (!handler->uuid || !handler->callback)
		return -EINVAL;
	mutex_lock(&tbe_handler_lock);
	list_add_tail(&handler->list, &tbe_handlers);
	mutex_unlock(&tbe_handler_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(tb_register_protocol_handler);

void tb_unregister_protocol_handler(struct tb_protocol_handler *handler)
{
	/* a callback running now finishes first (it runs under the lock) */
	mutex_lock(&tbe_handler_lock);
	list_del_init(&handler->list);
	mutex_unlock(&tbe_handler_lock);
}
EXPORT_SYMBOL_GPL(tb_unregister_protocol_handler);

static bool tbe_handled(struct tbe_pkt *pkt)
{
	const uuid_t *proto = (const uuid_t *)&pkt->buf[TBE_XD_HDR / 4];
	struct tb_protocol_handler *hd;
	bool taken = false;

	mutex_lock(&tbe_handler_lock);
	list_for_each_entry(hd, &tbe_handlers, list) {
		if (!uuid_equal(proto, hd->uuid))
			continue;
		if (hd->callback(pkt->buf, pkt->size, hd->data)) {
			taken = true;
			break;
		}
	}
	mutex_unlock(&tbe_handler_lock);
	return taken;
}

/* A response: the first pending request it matches gets it. */
static void tbe_answer(struct tbe_host *h, struct tbe_pkt *pkt)
{
	struct tbe_req *req;
	const u32 *q, *r = pkt->buf;

	mutex_lock(&h->ctl_lock);
	list_for_each_entry(req, &h->requests, list) {
		q = req->request;
		if (pkt->size < req->response_size / 4 ||
		    (r[0] & ~BIT(31)) != q[0] || r[1] != q[1] ||
		    memcmp(&r[TBE_XD_HDR / 4], &q[TBE_XD_HDR / 4], UUID_SIZE))
			continue;
		memcpy(req->response, r, min(pkt->size, req->response_size));
		list_del_init(&req->list);
		complete(&req->done);
		mutex_unlock(&h->ctl_lock);
		return;
	}
	h->stats.xd_unmatched++;
	mutex_unlock(&h->ctl_lock);
}

static void tbe_ctl_rx(struct work_struct *work)
{
	struct tbe_pkt *pkt = container_of(work, struct tbe_pkt, work);
	struct tbe_host *h = pkt->to;

	if (pkt->delay_ms)
		msleep(pkt->delay_ms);
	/* the cable went out while the packet was on its way */
	if (READ_ONCE(h->plugged)) {
		h->stats.xd_rx++;
		if (!tbe_handled(pkt) && pkt->type == TB_CFG_PKG_XDOMAIN_RESP)
			tbe_answer(h, pkt);
	}
	kfree(pkt);
}

static void tbe_garble(u8 *p, size_t from, size_t size)
{
	u32 x = tbe_garble_seed;

	for (; from < size; from++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[from] = x;
	}
	tbe_garble_seed = x;
}

/*
 * Whether the counted faults may hit this packet. Other traffic (a live
 * set sent again, a response still on its way) must not use up a fault
 * that a test arms for one exchange.
 */
static bool tbe_xd_targeted(const u32 *buf, size_t size)
{
	u32 type = READ_ONCE(tbe_xd_fault_type);

	if (!type)
		return true;
	return size >= TBE_XD_TYPE + sizeof(u32) &&
	       (buf[TBE_XD_TYPE / 4] & ~TBE_XD_TYPE_RESP) == type;
}

/*
 * Put a packet of host h on the cable: the other host takes it in order.
 * req: sent by tb_xdomain_request(), not tb_xdomain_response() (both use
 * the RESP type for their protocols, like thunderbolt-net).
 */
static int tbe_ctl_tx(struct tbe_host *h, const void *buf, size_t size,
		      enum tb_cfg_pkg_type type, bool req)
{
	struct tbe_host *to;
	struct tbe_pkt *pkt;
	bool target;

	/* what the core's tb_ctl_tx() refuses (with a warning) */
	if (size % 4 || size > TBE_CTL_MAX) {
		dev_WARN(&h->pdev->dev, "TX: invalid size: %zu\n", size);
		return -EINVAL;
	}
	if (size < TBE_XD_MIN)
		return -EINVAL;
	pkt = kzalloc(sizeof(*pkt), GFP_KERNEL);
	if (!pkt)
		return -ENOMEM;
	INIT_WORK(&pkt->work, tbe_ctl_rx);
	pkt->type = type;
	pkt->size = size;
	memcpy(pkt->buf, buf, size);
	pkt->buf[0] |= BIT(31);
	target = tbe_xd_targeted(pkt->buf, size);
	if (target && tbe_fault(req ? &tbe_xd_garble_req : &tbe_xd_garble_resp))
		tbe_garble((u8 *)pkt->buf, max(READ_ONCE(tbe_xd_garble_from),
					       TBE_XD_MIN), size);
	if (target && tbe_fault(&tbe_xd_delay_count))
		pkt->delay_ms = clamp(READ_ONCE(tbe_xd_delay_ms), 0, 10000);
	h->stats.xd_tx++;
	spin_lock(&tbe_cable_lock);
	to = tbe_peer(h);
	if (to && READ_ONCE(tbe_xd_mute) != h->index &&
	    !(target && tbe_fault(req ? &tbe_xd_drop_req : &tbe_xd_drop_resp))) {
		pkt->to = to;
		queue_work(to->rx_wq, &pkt->work);
		pkt = NULL;
	}
	spin_unlock(&tbe_cable_lock);
	if (pkt) {
		h->stats.xd_dropped++;
		kfree(pkt); /* lost on the way: only a timeout tells */
	}
	return 0;
}

int tb_xdomain_response(struct tb_xdomain *xd, const void *response,
			size_t size, enum tb_cfg_pkg_type type)
{
	return tbe_ctl_tx(tbe_host_of_tb(xd->tb), response, size, type,
			  false);
}
EXPORT_SYMBOL_GPL(tb_xdomain_response);

int tb_xdomain_request(struct tb_xdomain *xd, const void *request,
		       size_t request_size, enum tb_cfg_pkg_type request_type,
		       void *response, size_t response_size,
		       enum tb_cfg_pkg_type response_type,
		       unsigned int timeout_msec)
{
	struct tbe_host *h = tbe_host_of_tb(xd->tb);
	struct tbe_req req = {
		.request = request,
		.response = response,
		.response_size = response_size,
	};
	int ret;

	if (request_size < TBE_XD_MIN)
		return -EINVAL;
	init_completion(&req.done);
	mutex_lock(&h->ctl_lock);
	list_add_tail(&req.list, &h->requests);
	mutex_unlock(&h->ctl_lock);
	ret = tbe_ctl_tx(h, request, request_size, request_type, true);
	if (!ret && !wait_for_completion_timeout(&req.done,
						 msecs_to_jiffies(timeout_msec)))
		ret = -ETIMEDOUT;
	mutex_lock(&h->ctl_lock);
	if (!list_empty(&req.list)) {
		list_del(&req.list);
		if (ret == -ETIMEDOUT)
			h->stats.xd_timeouts++;
	} else {
		ret = 0; /* answered just as the wait ended */
	}
	mutex_unlock(&h->ctl_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(tb_xdomain_request);

int tbe_ctl_init(struct tbe_host *h)
{
	mutex_init(&h->ctl_lock);
	INIT_LIST_HEAD(&h->requests);
	h->rx_wq = alloc_ordered_workqueue("tbemu-ctl%d", 0, h->index);
	return h->rx_wq ? 0 : -ENOMEM;
}

/* Packets still on their way to h are taken (and dropped: unplugged). */
void tbe_ctl_exit(struct tbe_host *h)
{
	destroy_workqueue(h->rx_wq);
}
