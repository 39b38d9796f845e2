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
#include <linux/netdevice.h>
#include <linux/thunderbolt.h>

#include "usb4verbs.h"

#define U4K_TB_KEY "usb4v"
#define U4K_TB_SVC_ID 1
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
	s64 waiting; /* the command whose answer we wait for, or -1 */
	u32 mad_seq; /* our MADs (gsi.c's work sends them one by one) */
	struct u4k_mad_rx mad_rx; /* the peer's, put together on wq */
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

/* A request or a MAD part from the peer, taken on our workqueue. */
struct u4k_tb_rx {
	struct work_struct work;
	struct u4k_tb_peer *p;
	union {
		struct u4k_tb_pkt req;
		struct u4k_tb_mad_pkt mad;
	} pkt;
};

static struct tb_property_dir *u4k_tb_dir;

static void u4k_tb_fill_hdr(struct u4k_tb_peer *p, struct u4k_tb_hdr *h,
			    size_t size, u32 type, u32 command)
{
	h->route_hi = upper_32_bits(p->xd->route);
	h->route_lo = lower_32_bits(p->xd->route);
	h->length_sn = ((size - 3 * sizeof(u32)) / sizeof(u32)) &
		       U4K_TB_LEN_MASK;
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
	/*
	 * End 0 answers a REQ after its OPEN and maybe a CLOSE, each up to
	 * the timeout: waiting longer, end 1 learns how it ended, and has
	 * seen that CLOSE before it connects again.
	 */
	unsigned int ms = u4k_tb_timeout_ms * (m->type == U4K_MSG_REQ ? 3 : 1);
	int ret;

	mutex_lock(&p->req_lock);
	u4k_tb_fill_hdr(p, &req.hdr, sizeof(req), m->type, p->command++);
	WRITE_ONCE(p->waiting, req.hdr.command);
	ret = tb_xdomain_request(p->xd, &req, sizeof(req),
				 TB_CFG_PKG_XDOMAIN_RESP, &resp, sizeof(resp),
				 TB_CFG_PKG_XDOMAIN_RESP, ms);
	WRITE_ONCE(p->waiting, -1);
	mutex_unlock(&p->req_lock);
	return ret ?: u4k_peer_answer(&req.hdr, &resp, m);
}

static void u4k_tb_respond(struct u4k_tb_peer *p, const struct u4k_tb_hdr *req,
			   const struct u4k_msg *m)
{
	struct u4k_tb_pkt resp = { .msg = *m };

	u4k_tb_fill_hdr(p, &resp.hdr, sizeof(resp), req->type | U4K_TB_RESP,
			req->command);
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
				      msecs_to_jiffies(u4k_tb_timeout_ms));
	return ret;
}

/* A MAD of our QP1 to the peer's, in its two parts. */
static void u4k_tb_send_mad(struct u4k_cable *cable, struct u4k_mad *mad)
{
	struct u4k_tb_peer *p = cable->priv;
	struct u4k_tb_mad_pkt pkt = {
		.len = mad->len, .src_qpn = mad->src_qpn,
		.dst_qpn = mad->dst_qpn, .sgid = mad->sgid, .dgid = mad->dgid,
	};
	u32 seq = p->mad_seq++;

	static_assert(sizeof(pkt) <= 252); /* the control channel's limit */
	for (pkt.part = 0; pkt.part < 2; pkt.part++) {
		u4k_tb_fill_hdr(p, &pkt.hdr, sizeof(pkt), U4K_TB_MAD, seq);
		memcpy(pkt.data, mad->data + pkt.part * U4K_TB_MAD_PART,
		       U4K_TB_MAD_PART);
		tb_xdomain_response(p->xd, &pkt, sizeof(pkt),
				    TB_CFG_PKG_XDOMAIN_RESP);
	}
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

/* A part of the peer's MAD; under p->lock, the device stays up meanwhile. */
static void u4k_tb_recv_mad(struct u4k_tb_peer *p,
			    const struct u4k_tb_mad_pkt *pkt)
{
	mutex_lock(&p->lock);
	if (u4k_peer_mad_part(&p->mad_rx, pkt) && p->cable)
		u4k_gsi_recv(p->cable->dev, &p->mad_rx.mad);
	mutex_unlock(&p->lock);
}

/* A request from the peer's shim, in process context. */
static void u4k_tb_rx_work(struct work_struct *work)
{
	struct u4k_tb_rx *rx = container_of(work, struct u4k_tb_rx, work);
	struct u4k_tb_peer *p = rx->p;
	struct u4k_msg *m = &rx->pkt.req.msg;
	struct u4k_cable *cable;

	if (rx->pkt.req.hdr.type == U4K_TB_MAD) {
		u4k_tb_recv_mad(p, &rx->pkt.mad);
		kfree(rx);
		return;
	}
	cable = u4k_tb_cable_get(p);
	switch (u4k_peer_request(cable, READ_ONCE(p->logged_in), m)) {
	case U4K_PEER_LOGIN:
		mod_delayed_work(system_wq, &p->login_work, 0);
		break;
	case U4K_PEER_DOWN:
		schedule_work(&p->down_work);
		break;
	case U4K_PEER_ANSWER:
		break;
	}
	u4k_tb_respond(p, &rx->pkt.req.hdr, m);
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
	/* the peer receives on m->hop only: frames sent on another get lost */
	if (ret != m->hop)
		return -EBUSY;
	/*
	 * Our rings start at position 0, whatever a direct-mode process that
	 * used these HopIDs before wrote into their index registers late.
	 */
	writel(0, u4k_tb_ring_reg(hw->tx));
	writel(0, u4k_tb_ring_reg(hw->rx));
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

	ret = u4k_chan_new(owner, m->a, m->lane, &h);
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

/*
 * The NHI's device: the parent of its Thunderbolt domain. (struct tb_nhi
 * holds it as pdev, a PCI device, up to 6.x and as dev, any device, in 7.x;
 * the domain's parent is the same device in both.)
 */
static struct device *u4k_tb_nhi_dev(const struct u4k_tb_peer *p)
{
	return p->xd->tb->dev.parent;
}

/* Direct mode: the NHI's TX or RX ring register page (every ring's). */
static struct u4k_buf *u4k_tb_db_alloc(struct u4k_ucontext *uctx, int rx)
{
	struct u4k_tb_peer *p = uctx->dev->cable->priv;
	struct device *nhi = u4k_tb_nhi_dev(p);
	struct u4k_buf *buf;

	if (!dev_is_pci(nhi)) /* its registers are not BAR 0 of a function */
		return NULL;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return NULL;
	buf->kind = U4K_BUF_IO;
	buf->size = PAGE_SIZE;
	buf->writable = true;
	buf->dma = pci_resource_start(to_pci_dev(nhi), 0) +
		   (rx ? U4K_NHI_REG_RX_RING_BASE : U4K_NHI_REG_TX_RING_BASE);
	return u4k_buf_insert(uctx, buf) ? NULL : buf;
}

/* thunderbolt-net's device for this peer: its parent is the peer's service */
static bool u4k_tb_netdev_match(struct u4k_cable *cable,
				struct net_device *ndev)
{
	struct u4k_tb_peer *p = cable->priv;
	struct tb_service *svc;

	svc = ndev->dev.parent ? tb_to_service(ndev->dev.parent) : NULL;
	return svc && !strcmp(svc->key, "network") &&
	       tb_service_parent(svc) == p->xd;
}

static const struct u4k_cable_ops u4k_tb_cable_ops = {
	.send = u4k_tb_send,
	.chan_open = u4k_tb_chan_open,
	.chan_connect = u4k_tb_chan_connect,
	.chan_join = u4k_tb_chan_join,
	.chan_close = u4k_tb_chan_close,
	.kick = u4k_tb_kick,
	.db_alloc = u4k_tb_db_alloc,
	.netdev_match = u4k_tb_netdev_match,
	.send_mad = u4k_tb_send_mad,
};

/* Which end of the cable we are: both hosts agree by comparing UUIDs. */
static u32 u4k_tb_end(const uuid_t *local, const uuid_t *remote)
{
	return memcmp(local, remote, sizeof(*local)) < 0 ? 0 : 1;
}

/*
 * Payload bytes per second of the link, one way: its lanes' speed times
 * two when they are bonded (an asymmetric link's narrow way is one lane),
 * 4084 of 4096 bytes per frame. A link that does not say is one 20 Gb/s
 * lane. What one ring pair moves is not known here: the provider measures.
 */
static u64 u4k_tb_wire_rate(const struct tb_xdomain *xd)
{
	u64 gbps = xd->link_speed ? xd->link_speed : 20;
	u64 lanes = xd->link_width == 2 ? 2 : 1;

	return gbps * lanes * 1000000000ull / 8 * 4084 / 4096;
}

/* Our login was accepted: the ib_device; channels come with connects. */
static void u4k_tb_up(struct u4k_tb_peer *p)
{
	u32 end = u4k_tb_end(p->xd->local_uuid, p->xd->remote_uuid);
	struct u4k_dev *dev;
	u64 guid;

	p->cable = u4k_cable_alloc(&u4k_tb_cable_ops, end, u4k_tb_channels,
				   u4k_tb_wire_rate(p->xd));
	if (!p->cable)
		return;
	p->cable->priv = p;
	memcpy(&guid, p->xd->local_uuid, sizeof(guid));
	dev = u4k_dev_add(p->cable, u4k_tb_nhi_dev(p), guid | 1);
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
	schedule_delayed_work(&p->login_work,
			      msecs_to_jiffies(u4k_tb_timeout_ms));
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
				      msecs_to_jiffies(u4k_tb_timeout_ms));
		return;
	}
	ret = u4k_peer_login_answer(&m);
	if (ret) {
		dev_warn(&p->svc->dev, "peer shim refused the login: %d\n",
			 ret);
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
	struct u4k_tb_peer *p = data;
	struct u4k_tb_rx *rx;

	switch (u4k_peer_classify(buf, size, p->xd->local_uuid,
				  p->xd->remote_uuid, p->xd->route)) {
	case U4K_PKT_OTHER:
		return 0;
	case U4K_PKT_ANSWER:
		/*
		 * The core gives an answer to the first request it matches by
		 * route and protocol: a late one (its request timed out) must
		 * not answer the request we now wait for. Dropped.
		 */
		return ((const struct u4k_tb_hdr *)buf)->command !=
		       READ_ONCE(p->waiting);
	case U4K_PKT_BAD:
		return 1; /* dropped, never taken for an answer */
	case U4K_PKT_REQUEST:
		size = sizeof(rx->pkt.req);
		break;
	case U4K_PKT_MAD:
		size = sizeof(rx->pkt.mad);
		break;
	}
	rx = kmalloc(sizeof(*rx), GFP_ATOMIC);
	if (!rx)
		return 0;
	rx->p = p;
	memcpy(&rx->pkt, buf, size);
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
	p->waiting = -1;
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

	if (!u4k_tb_timeout_ms || u4k_tb_timeout_ms > 60000) {
		pr_err(U4K_DRV_NAME ": tb_timeout_ms must be in 1..60000\n");
		return -EINVAL;
	}
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
