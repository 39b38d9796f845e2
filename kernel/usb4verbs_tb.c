// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: the Thunderbolt service driver.
 *
 * We publish a property directory ("usb4v", own protocol UUID). For every
 * peer host that publishes it too, the service probes; the two shims log
 * in to each other over XDomain requests (protocol version, ring depth),
 * and an ib_device usb4v<N> is registered for the peer. Channels come
 * later, one DMA tunnel each: the channel protocol (proto.c) travels as
 * XDomain requests, and every channel gets its own ring pair in polling
 * mode, its own HopIDs and paths.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uuid.h>
#include <linux/workqueue.h>
#include <linux/pci.h>
#include <linux/io.h>
#include <linux/thunderbolt.h>

#include "usb4verbs.h"

#define U4K_TB_KEY "usb4v"
#define U4K_TB_SVC_ID 1
#define U4K_TB_PROTO_VER 1
/* request timeout; retry period of the login and of a lost MASK */
#define U4K_TB_RETRY_MS 1000
/* frame PDFs the engine uses: 1 data, 2 control (ACK/NAK) */
#define U4K_TB_PDF_MASK (BIT(1) | BIT(2))
/*
 * 4 KiB frames; end-to-end flow control: a frame waits for a buffer the
 * peer posted. Without it the NHI drops every frame that finds none, and a
 * receiver late by 1 MiB (0.4 ms at 20 Gb/s) loses frames.
 */
#define U4K_TB_RING_FLAGS (RING_FLAG_FRAME | RING_FLAG_E2E)

/* 2d0c6a94-3f4e-4b8e-9a57-7c1e55b4a001: the usb4verbs protocol */
static const uuid_t u4k_tb_proto_uuid =
	UUID_INIT(0x2d0c6a94, 0x3f4e, 0x4b8e,
		  0x9a, 0x57, 0x7c, 0x1e, 0x55, 0xb4, 0xa0, 0x01);

/* Own copy of the XDomain header layout (private in 6.1). */
struct u4k_tb_hdr {
	u32 route_hi;
	u32 route_lo;
	u32 length_sn;
	uuid_t proto;
	uuid_t initiator;
	uuid_t target;
	u32 type;
	u32 command;
};

#define U4K_TB_LEN_MASK GENMASK(5, 0)

/*
 * Every packet of ours is a header and one struct u4k_msg, whose type is
 * also the header's: the channel protocol's, or LOGIN (version, depth) and
 * LOGOUT between the shims. A response has the request's type with
 * U4K_TB_RESP set, and its command.
 */
enum {
	U4K_TB_LOGIN = 0x10,
	U4K_TB_LOGOUT,
	U4K_TB_RESP = 0x100,
};

struct u4k_tb_pkt {
	struct u4k_tb_hdr hdr;
	struct u4k_msg msg;
};

struct u4k_tb_peer {
	struct tb_service *svc;
	struct tb_xdomain *xd;
	struct tb_protocol_handler handler;
	struct delayed_work login_work;
	struct delayed_work mask_work; /* (re)send our live set */
	struct work_struct down_work; /* the peer logged out */
	struct mutex lock;
	struct mutex req_lock; /* one request of ours in flight at a time */
	struct workqueue_struct *wq; /* requests from the peer, in order */
	bool logged_in; /* our login was accepted */
	u32 command;
	struct u4k_cable *cable; /* while logged in */
};

/* Descriptor memory: a ring's own, while it uses the half's instead. */
struct u4k_tb_desc {
	void *kva;
	dma_addr_t dma;
};

/* A channel's hardware: one ring pair, its HopIDs, the tunnel's paths. */
struct u4k_tb_hw {
	struct u4k_tb_peer *p;
	struct u4k_half *h;
	struct tb_ring *tx, *rx;
	int in_hop, out_hop;
	bool swapped, started, paths_up;
	struct u4k_tb_desc desc[2]; /* TX, RX */
	struct work_struct rx_work;
};

/* A request from the peer, answered from our workqueue. */
struct u4k_tb_rx {
	struct work_struct work;
	struct u4k_tb_peer *p;
	struct u4k_tb_pkt req;
};

static struct tb_property_dir *u4k_tb_dir;

static void u4k_tb_fill_hdr(struct u4k_tb_peer *p, struct u4k_tb_hdr *h,
			    u32 type, u32 command)
{
	h->route_hi = upper_32_bits(p->xd->route);
	h->route_lo = lower_32_bits(p->xd->route);
	h->length_sn = ((sizeof(struct u4k_tb_pkt) - 3 * sizeof(u32)) /
			sizeof(u32)) & U4K_TB_LEN_MASK;
	uuid_copy(&h->proto, &u4k_tb_proto_uuid);
	uuid_copy(&h->initiator, p->xd->local_uuid);
	uuid_copy(&h->target, p->xd->remote_uuid);
	h->type = type;
	h->command = command;
}

/* One request to the peer's shim; its answer replaces *m. */
static int u4k_tb_request(struct u4k_tb_peer *p, struct u4k_msg *m)
{
	struct u4k_tb_pkt req = { .msg = *m }, resp = {};
	int ret;

	mutex_lock(&p->req_lock);
	u4k_tb_fill_hdr(p, &req.hdr, m->type, p->command++);
	ret = tb_xdomain_request(p->xd, &req, sizeof(req),
				 TB_CFG_PKG_XDOMAIN_RESP, &resp, sizeof(resp),
				 TB_CFG_PKG_XDOMAIN_RESP, U4K_TB_RETRY_MS);
	mutex_unlock(&p->req_lock);
	if (ret)
		return ret;
	/* a late answer to an earlier, timed-out request is not ours */
	if (resp.hdr.type != (m->type | U4K_TB_RESP) ||
	    resp.hdr.command != req.hdr.command)
		return -EPROTO;
	*m = resp.msg;
	return 0;
}

static void u4k_tb_respond(struct u4k_tb_peer *p, const struct u4k_tb_hdr *req,
			   const struct u4k_msg *m)
{
	struct u4k_tb_pkt resp = { .msg = *m };

	u4k_tb_fill_hdr(p, &resp.hdr, req->type | U4K_TB_RESP, req->command);
	tb_xdomain_response(p->xd, &resp, sizeof(resp),
			    TB_CFG_PKG_XDOMAIN_RESP);
}

/* The channel protocol over XDomain. */
static int u4k_tb_send(struct u4k_cable *cable, struct u4k_msg *m)
{
	struct u4k_tb_peer *p = cable->priv;
	bool mask = m->type == U4K_MSG_MASK;
	int ret = u4k_tb_request(p, m);

	/* a lost live set is sent again (its ids stay quarantined till then) */
	if (mask && (ret || m->status))
		schedule_delayed_work(&p->mask_work,
				      msecs_to_jiffies(U4K_TB_RETRY_MS));
	return ret;
}

/* The peer's cable, referenced (NULL when it is not up). */
static struct u4k_cable *u4k_tb_cable_get(struct u4k_tb_peer *p)
{
	struct u4k_cable *cable;

	mutex_lock(&p->lock);
	cable = p->cable;
	if (cable)
		kref_get(&cable->ref);
	mutex_unlock(&p->lock);
	return cable;
}

/* A request from the peer's shim, in process context. */
static void u4k_tb_rx_work(struct work_struct *work)
{
	struct u4k_tb_rx *rx = container_of(work, struct u4k_tb_rx, work);
	struct u4k_tb_peer *p = rx->p;
	struct u4k_msg *m = &rx->req.msg;
	struct u4k_cable *cable = u4k_tb_cable_get(p);

	switch (m->type) {
	case U4K_TB_LOGIN:
		m->status = m->version != U4K_TB_PROTO_VER ||
			    m->depth != u4k_ring_depth ? -EPROTO : 0;
		m->version = U4K_TB_PROTO_VER;
		/* the peer's shim is (back) here: our login need not wait */
		if (!m->status && !READ_ONCE(p->logged_in))
			mod_delayed_work(system_wq, &p->login_work, 0);
		break;
	case U4K_TB_LOGOUT:
		schedule_work(&p->down_work);
		break;
	default:
		/* not up yet: a MASK is sent again until it gets through */
		if (cable)
			u4k_proto_recv(cable, m);
		else
			m->status = -ENOLINK;
	}
	u4k_tb_respond(p, &rx->req.hdr, m);
	if (cable)
		u4k_cable_put(cable);
	kfree(rx);
}

/* Ring register of a half's ring (safe-mode doorbells). */
static void __iomem *u4k_tb_ring_reg(struct tb_ring *ring)
{
	return ring->nhi->iobase + U4V_DB_PROD_CONS +
	       (ring->is_tx ? U4K_NHI_REG_TX_RING_BASE :
			      U4K_NHI_REG_RX_RING_BASE) +
	       ring->hop * U4V_DB_SLOT_SIZE;
}

/* Safe mode: TX producer << 16; RX one past the last posted descriptor. */
static void u4k_tb_kick(struct u4k_half *h, bool tx, bool rx)
{
	struct u4k_tb_hw *hw = h->hw;
	u32 mask = h->depth - 1;

	if (!hw || !hw->paths_up)
		return;
	if (rx)
		writel((h->rx_rel + mask) & mask, u4k_tb_ring_reg(hw->rx));
	if (tx)
		writel((h->tx_prod & mask) << U4V_DB_PROD_SHIFT,
		       u4k_tb_ring_reg(hw->tx));
}

/* RX interrupt (polling mode): the owner polls, then we re-arm. */
static void u4k_tb_start_poll(void *data)
{
	struct u4k_tb_hw *hw = data;

	schedule_work(&hw->rx_work);
}

static void u4k_tb_hw_rx_work(struct work_struct *work)
{
	struct u4k_tb_hw *hw = container_of(work, struct u4k_tb_hw, rx_work);

	mutex_lock(&hw->h->chan->lock);
	u4k_half_wake(hw->h, true);
	mutex_unlock(&hw->h->chan->lock);
	tb_ring_poll_complete(hw->rx);
}

/*
 * Exchange a ring's descriptor memory with *d (again: back). The NHI reads
 * the ring at ring->descriptors_dma (tb_ring_start), and the half's ring is
 * the one mapped into the process: the ring's own is dma_alloc_coherent()
 * memory, which cannot be mapped by pfn behind an IOMMU. The thunderbolt
 * core never reads it: no frame is posted through it.
 */
static void u4k_tb_desc_swap(struct tb_ring *ring, struct u4k_tb_desc *d)
{
	struct u4k_tb_desc theirs = { ring->descriptors, ring->descriptors_dma };

	ring->descriptors = d->kva;
	ring->descriptors_dma = d->dma;
	*d = theirs;
}

static void u4k_tb_desc_swap_pair(struct u4k_tb_hw *hw)
{
	u4k_tb_desc_swap(hw->tx, &hw->desc[0]);
	u4k_tb_desc_swap(hw->rx, &hw->desc[1]);
	hw->swapped = !hw->swapped;
}

/* Paths down, rings stopped and freed, HopIDs back. */
static void u4k_tb_chan_close(struct u4k_half *h)
{
	struct u4k_tb_hw *hw = h->hw;
	struct tb_xdomain *xd;

	if (!hw)
		return;
	xd = hw->p->xd;
	mutex_lock(&h->chan->lock);
	h->hw = NULL;
	mutex_unlock(&h->chan->lock);
	if (hw->paths_up)
		tb_xdomain_disable_paths(xd, hw->out_hop, hw->tx->hop,
					 hw->in_hop, hw->rx->hop);
	/*
	 * Nothing comes in now: let polling end (tb_ring_poll_complete() may
	 * raise one more interrupt it held back). The core warns when a ring
	 * stops with its interrupt masked, and when a stopped ring's is
	 * unmasked (the next ring on its hop finds it enabled).
	 */
	while (flush_work(&hw->rx_work))
		;
	if (hw->started) {
		tb_ring_stop(hw->rx);
		tb_ring_stop(hw->tx);
	}
	if (hw->out_hop > 0)
		tb_xdomain_release_out_hopid(xd, hw->out_hop);
	if (hw->in_hop > 0)
		tb_xdomain_release_in_hopid(xd, hw->in_hop);
	if (hw->swapped)
		u4k_tb_desc_swap_pair(hw);
	if (hw->tx)
		tb_ring_free(hw->tx);
	if (hw->rx)
		tb_ring_free(hw->rx);
	kfree(hw);
}

/* A ring pair and an input HopID for half h; m->hop tells the peer. */
static int u4k_tb_chan_open(struct u4k_half *h, struct u4k_msg *m)
{
	struct u4k_tb_peer *p = h->uctx->dev->cable->priv;
	struct tb_nhi *nhi = p->xd->tb->nhi;
	struct u4k_tb_hw *hw = kzalloc(sizeof(*hw), GFP_KERNEL);
	struct u4k_buf *b;
	int i;

	if (!hw)
		return -ENOMEM;
	hw->p = p;
	hw->h = h;
	INIT_WORK(&hw->rx_work, u4k_tb_hw_rx_work);
	h->hw = hw;
	hw->tx = tb_ring_alloc_tx(nhi, -1, h->depth, U4K_TB_RING_FLAGS);
	if (!hw->tx)
		goto err;
	/* E2E credits for our RX ring go back over our TX ring's path */
	hw->rx = tb_ring_alloc_rx(nhi, -1, h->depth, U4K_TB_RING_FLAGS,
				  hw->tx->hop, U4K_TB_PDF_MASK,
				  U4K_TB_PDF_MASK, u4k_tb_start_poll, hw);
	if (!hw->rx)
		goto err;
	hw->in_hop = tb_xdomain_alloc_in_hopid(p->xd, -1);
	if (hw->in_hop < 0)
		goto err;
	/* the NHI's (private) 16-byte descriptor is our struct u4v_desc */
	for (i = 0; i < 2; i++) {
		b = h->buf[U4V_MAP_TX_DESC + i];
		hw->desc[i] = (struct u4k_tb_desc){ b->kva, b->dma };
	}
	u4k_tb_desc_swap_pair(hw);
	h->tx_hop = hw->tx->hop;
	h->rx_hop = hw->rx->hop;
	m->hop = hw->in_hop;
	return 0;
err:
	u4k_tb_chan_close(h);
	return -ENOSPC; /* no ring or HopID left: the budget is spent */
}

/* The peer's input HopID is m->hop: start the rings, enable the paths. */
static int u4k_tb_chan_connect(struct u4k_half *h, struct u4k_msg *m)
{
	struct u4k_tb_hw *hw = h->hw;
	struct tb_xdomain *xd = hw->p->xd;
	int ret;

	ret = tb_xdomain_alloc_out_hopid(xd, m->hop);
	if (ret < 0)
		return ret;
	hw->out_hop = ret;
	tb_ring_start(hw->tx);
	tb_ring_start(hw->rx);
	hw->started = true;
	ret = tb_xdomain_enable_paths(xd, hw->out_hop, hw->tx->hop,
				      hw->in_hop, hw->rx->hop);
	if (ret)
		return ret;
	mutex_lock(&h->chan->lock);
	hw->paths_up = true;
	u4k_tb_kick(h, false, true); /* depth - 1 RX buffers posted */
	mutex_unlock(&h->chan->lock);
	return 0;
}

/* End 1: our half of the channel end 0 opened, on our own ring pair. */
static struct u4k_half *u4k_tb_chan_join(struct u4k_cable *cable,
					 struct u4k_ucontext *owner,
					 struct u4k_msg *m)
{
	struct u4k_msg mine = *m;
	struct u4k_half *h;
	int ret;

	ret = u4k_chan_new(owner, m->a, &h);
	if (ret)
		return ERR_PTR(ret);
	ret = u4k_tb_chan_open(h, &mine) ?: u4k_tb_chan_connect(h, m);
	if (ret) {
		u4k_tb_chan_close(h);
		u4k_half_kill(h);
		return ERR_PTR(ret);
	}
	m->hop = mine.hop;
	return h;
}

/* Direct mode: the NHI's TX or RX ring register page (every ring's). */
static struct u4k_buf *u4k_tb_db_alloc(struct u4k_ucontext *uctx, int rx)
{
	struct u4k_tb_peer *p = uctx->dev->cable->priv;
	struct u4k_buf *buf = kzalloc(sizeof(*buf), GFP_KERNEL);

	if (!buf)
		return NULL;
	buf->kind = U4K_BUF_IO;
	buf->size = PAGE_SIZE;
	buf->writable = true;
	buf->dma = pci_resource_start(p->xd->tb->nhi->pdev, 0) +
		   (rx ? U4K_NHI_REG_RX_RING_BASE : U4K_NHI_REG_TX_RING_BASE);
	return u4k_buf_insert(uctx, buf) ? NULL : buf;
}

static const struct u4k_cable_ops u4k_tb_cable_ops = {
	.send = u4k_tb_send,
	.chan_open = u4k_tb_chan_open,
	.chan_connect = u4k_tb_chan_connect,
	.chan_join = u4k_tb_chan_join,
	.chan_close = u4k_tb_chan_close,
	.kick = u4k_tb_kick,
	.db_alloc = u4k_tb_db_alloc,
};

/* Which end of the cable we are: both hosts agree by comparing UUIDs. */
static u32 u4k_tb_end(const uuid_t *local, const uuid_t *remote)
{
	return memcmp(local, remote, sizeof(*local)) < 0 ? 0 : 1;
}

/* Our login was accepted: the ib_device; channels come with connects. */
static void u4k_tb_up(struct u4k_tb_peer *p)
{
	u32 end = u4k_tb_end(p->xd->local_uuid, p->xd->remote_uuid);
	struct u4k_dev *dev;
	u64 guid;

	/* One lane, 20 Gb/s, 4084 of 4096 bytes payload per frame. */
	p->cable = u4k_cable_alloc(&u4k_tb_cable_ops, end, u4k_tb_channels,
				   20000000000ull / 8 * 4084 / 4096);
	if (!p->cable)
		return;
	p->cable->priv = p;
	memcpy(&guid, p->xd->local_uuid, sizeof(guid));
	dev = u4k_dev_add(p->cable, &p->xd->tb->nhi->pdev->dev, guid | 1);
	if (IS_ERR(dev)) {
		u4k_cable_put(p->cable);
		p->cable = NULL;
		return;
	}
	p->cable->dev = dev;
	dev_info(&p->svc->dev, "%s up (end %u)\n", dev_name(&dev->ibdev.dev),
		 end);
	/* tell the peer our live set, so it tells us its own */
	schedule_delayed_work(&p->mask_work, 0);
}

static void u4k_tb_down(struct u4k_tb_peer *p)
{
	if (!p->cable)
		return;
	u4k_cable_down(p->cable);
	/* disassociates applications still holding the device */
	u4k_dev_remove(p->cable->dev);
	u4k_cable_put(p->cable);
	p->cable = NULL;
}

static void u4k_tb_mask_work(struct work_struct *work)
{
	struct u4k_tb_peer *p =
		container_of(work, struct u4k_tb_peer, mask_work.work);
	struct u4k_cable *cable = u4k_tb_cable_get(p);

	if (cable) {
		u4k_proto_send_mask(cable);
		u4k_cable_put(cable);
	}
}

/* The peer's shim logged out: device down, log in again when it is back. */
static void u4k_tb_down_work(struct work_struct *work)
{
	struct u4k_tb_peer *p =
		container_of(work, struct u4k_tb_peer, down_work);

	mutex_lock(&p->lock);
	u4k_tb_down(p);
	WRITE_ONCE(p->logged_in, false);
	schedule_delayed_work(&p->login_work, msecs_to_jiffies(U4K_TB_RETRY_MS));
	mutex_unlock(&p->lock);
}

static void u4k_tb_login_work(struct work_struct *work)
{
	struct u4k_tb_peer *p =
		container_of(work, struct u4k_tb_peer, login_work.work);
	struct u4k_msg m = { .type = U4K_TB_LOGIN, .depth = u4k_ring_depth,
			     .version = U4K_TB_PROTO_VER };
	int ret = u4k_tb_request(p, &m);

	if (ret) {
		/* it publishes our service, so its shim will answer */
		schedule_delayed_work(&p->login_work,
				      msecs_to_jiffies(U4K_TB_RETRY_MS));
		return;
	}
	if (m.status || m.version != U4K_TB_PROTO_VER) {
		dev_warn(&p->svc->dev, "peer shim refused the login: %d\n",
			 m.status);
		return;
	}
	mutex_lock(&p->lock);
	WRITE_ONCE(p->logged_in, true);
	if (!p->cable)
		u4k_tb_up(p);
	mutex_unlock(&p->lock);
}

/*
 * Packets of our protocol, before the control channel matches them to a
 * pending request of ours: 0 lets it (responses, other peers' packets),
 * 1 takes a request of the peer's shim, answered from our queue.
 */
static int u4k_tb_handle(const void *buf, size_t size, void *data)
{
	const struct u4k_tb_pkt *req = buf;
	struct u4k_tb_peer *p = data;
	struct u4k_tb_rx *rx;
	u64 route;

	if (size < sizeof(*req) || (req->hdr.type & U4K_TB_RESP) ||
	    !uuid_equal(&req->hdr.initiator, p->xd->remote_uuid) ||
	    !uuid_equal(&req->hdr.target, p->xd->local_uuid))
		return 0;
	route = ((u64)req->hdr.route_hi << 32 | req->hdr.route_lo) &
		~BIT_ULL(63);
	if (route != p->xd->route)
		return 0;
	if (req->hdr.type != req->msg.type)
		return 1; /* malformed: dropped, never taken for an answer */
	rx = kmalloc(sizeof(*rx), GFP_ATOMIC);
	if (!rx)
		return 0;
	rx->p = p;
	rx->req = *req;
	INIT_WORK(&rx->work, u4k_tb_rx_work);
	queue_work(p->wq, &rx->work);
	return 1;
}

static int u4k_tb_probe(struct tb_service *svc, const struct tb_service_id *id)
{
	struct u4k_tb_peer *p;
	int ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->svc = svc;
	p->xd = tb_service_parent(svc);
	mutex_init(&p->lock);
	mutex_init(&p->req_lock);
	INIT_DELAYED_WORK(&p->login_work, u4k_tb_login_work);
	INIT_DELAYED_WORK(&p->mask_work, u4k_tb_mask_work);
	INIT_WORK(&p->down_work, u4k_tb_down_work);
	/* ordered: MASKs are applied in the order they arrive */
	p->wq = alloc_ordered_workqueue("u4v-tb", 0);
	if (!p->wq) {
		kfree(p);
		return -ENOMEM;
	}
	p->handler.uuid = &u4k_tb_proto_uuid;
	p->handler.callback = u4k_tb_handle;
	p->handler.data = p;
	ret = tb_register_protocol_handler(&p->handler);
	if (ret) {
		destroy_workqueue(p->wq);
		kfree(p);
		return ret;
	}
	tb_service_set_drvdata(svc, p);
	schedule_delayed_work(&p->login_work, 0);
	return 0;
}

/* Unplug, peer service gone, or module unload. */
static void u4k_tb_remove(struct tb_service *svc)
{
	struct u4k_tb_peer *p = tb_service_get_drvdata(svc);
	struct u4k_msg bye = { .type = U4K_TB_LOGOUT };

	if (p->logged_in) /* tell the peer's shim we go: best effort */
		u4k_tb_request(p, &bye);
	tb_unregister_protocol_handler(&p->handler);
	/* each may queue the next: requests, down, login, (no cable) mask */
	destroy_workqueue(p->wq);
	cancel_work_sync(&p->down_work);
	cancel_delayed_work_sync(&p->login_work);
	mutex_lock(&p->lock);
	u4k_tb_down(p);
	mutex_unlock(&p->lock);
	cancel_delayed_work_sync(&p->mask_work);
	kfree(p);
}

static const struct tb_service_id u4k_tb_ids[] = {
	{ TB_SERVICE(U4K_TB_KEY, U4K_TB_SVC_ID) },
	{ },
};
MODULE_DEVICE_TABLE(tbsvc, u4k_tb_ids);

static struct tb_service_driver u4k_tb_driver = {
	.driver = {
		.owner = THIS_MODULE,
		.name = U4K_DRV_NAME,
	},
	.probe = u4k_tb_probe,
	.remove = u4k_tb_remove,
	.id_table = u4k_tb_ids,
};

int u4k_tb_init(void)
{
	int ret;

	u4k_tb_dir = tb_property_create_dir(&u4k_tb_proto_uuid);
	if (!u4k_tb_dir)
		return -ENOMEM;
	tb_property_add_immediate(u4k_tb_dir, "prtcid", U4K_TB_SVC_ID);
	tb_property_add_immediate(u4k_tb_dir, "prtcvers", U4K_TB_PROTO_VER);
	tb_property_add_immediate(u4k_tb_dir, "prtcrevs", 0);
	tb_property_add_immediate(u4k_tb_dir, "prtcstns", 0);
	ret = tb_register_property_dir(U4K_TB_KEY, u4k_tb_dir);
	if (!ret) {
		ret = tb_register_service_driver(&u4k_tb_driver);
		if (!ret)
			return 0;
		tb_unregister_property_dir(U4K_TB_KEY, u4k_tb_dir);
	}
	tb_property_free_dir(u4k_tb_dir);
	return ret;
}

void u4k_tb_exit(void)
{
	tb_unregister_service_driver(&u4k_tb_driver);
	tb_unregister_property_dir(U4K_TB_KEY, u4k_tb_dir);
	tb_property_free_dir(u4k_tb_dir);
}
