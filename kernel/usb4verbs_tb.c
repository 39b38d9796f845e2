// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: the Thunderbolt service driver.
 *
 * We publish a property directory ("usb4v", own protocol UUID). For every
 * peer host that publishes it too, the service probes; the two shims log
 * in to each other over XDomain requests (protocol version, capabilities,
 * the HopID each side receives on), then the DMA tunnel's paths are
 * enabled, one ring pair is started in polling mode and an ib_device
 * usb4v<N> is registered for the peer.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uuid.h>
#include <linux/workqueue.h>
#include <linux/pci.h>
#include <linux/io.h>
#include <linux/thunderbolt.h>

#include "usb4verbs.h"

#define U4V_TB_KEY "usb4v"
#define U4V_TB_SVC_ID 1
#define U4V_TB_PROTO_VER 1
#define U4V_TB_LOGIN_RETRIES 60
#define U4V_TB_LOGIN_DELAY_MS 1000
#define U4V_TB_LOGIN_TIMEOUT_MS 1000
/* frame PDFs the engine uses: 1 data, 2 control (ACK/NAK) */
#define U4V_TB_PDF_MASK (BIT(1) | BIT(2))

/* 2d0c6a94-3f4e-4b8e-9a57-7c1e55b4a001: the usb4verbs protocol */
static const uuid_t u4v_tb_proto_uuid =
	UUID_INIT(0x2d0c6a94, 0x3f4e, 0x4b8e,
		  0x9a, 0x57, 0x7c, 0x1e, 0x55, 0xb4, 0xa0, 0x01);

/* Own copy of the XDomain header layout (private in 6.1). */
struct u4v_tb_hdr {
	u32 route_hi;
	u32 route_lo;
	u32 length_sn;
	uuid_t proto;
	uuid_t initiator;
	uuid_t target;
	u32 type;
	u32 command;
};

#define U4V_TB_LEN_MASK GENMASK(5, 0)
#define U4V_TB_SN_SHIFT 27

enum u4v_tb_type {
	U4V_TB_LOGIN = 1,
	U4V_TB_LOGIN_RESP,
	U4V_TB_LOGOUT,
	U4V_TB_STATUS_NOT_SUPPORTED,
};

struct u4v_tb_login {
	struct u4v_tb_hdr hdr;
	u32 proto_ver;
	u32 caps;	/* none defined yet */
	u32 rx_hopid;	/* the HopID the sender receives on */
	u32 ring_depth;
};

struct u4v_tb_login_resp {
	struct u4v_tb_hdr hdr;
	u32 status; /* 0 = accepted */
	u32 proto_ver;
};

struct u4v_tb_peer {
	struct tb_service *svc;
	struct tb_xdomain *xd;
	struct tb_protocol_handler handler;
	struct delayed_work login_work;
	struct work_struct up_work;
	struct mutex lock;
	struct tb_ring *tx_ring;
	struct tb_ring *rx_ring;
	int local_rx_hopid;  /* peer transmits to us on this */
	int remote_rx_hopid; /* we transmit to the peer on this */
	int out_hopid;
	bool logged_in;	     /* our login was accepted */
	bool peer_logged_in; /* the peer's login arrived */
	bool paths_up;
	int retries;
	u32 command;
	struct u4v_cable *cable;
	struct u4v_dev *dev;
};

static struct tb_property_dir *u4v_tb_dir;

static void u4v_tb_fill_hdr(struct u4v_tb_peer *p, struct u4v_tb_hdr *h,
			    size_t size, u32 type)
{
	u64 route = p->xd->route;

	h->route_hi = upper_32_bits(route);
	h->route_lo = lower_32_bits(route);
	h->length_sn = ((size - 3 * sizeof(u32)) / sizeof(u32)) &
		       U4V_TB_LEN_MASK;
	uuid_copy(&h->proto, &u4v_tb_proto_uuid);
	uuid_copy(&h->initiator, p->xd->local_uuid);
	uuid_copy(&h->target, p->xd->remote_uuid);
	h->type = type;
	h->command = p->command++;
}

/*
 * Cross-host channels are not negotiated yet (kernel/README): connects
 * over a real cable fail until they are.
 */
static int u4v_tb_chan_open(struct u4v_chan *chan)
{
	return -EOPNOTSUPP;
}

/* Safe-mode doorbells: the NHI's producer / consumer registers. */
static void __iomem *u4v_tb_ring_reg(struct u4v_half *h, bool rx)
{
	struct tb_ring *ring = rx ? h->hw_rx : h->hw_tx;

	return ring->nhi->iobase + U4V_NHI_RING_PROD_CONS +
	       (rx ? U4V_NHI_REG_RX_RING_BASE : U4V_NHI_REG_TX_RING_BASE) +
	       ring->hop * U4V_NHI_RING_SLOT_SIZE;
}

static void u4v_tb_tx_kick(struct u4v_half *h)
{
	if (h->hw_tx)
		writel((h->tx_prod & (h->depth - 1)) << 16,
		       u4v_tb_ring_reg(h, false));
}

static void u4v_tb_rx_kick(struct u4v_half *h)
{
	if (h->hw_rx)
		writel(h->rx_rel & (h->depth - 1), u4v_tb_ring_reg(h, true));
}

/* Direct mode: the NHI's TX or RX ring register page (every ring's). */
static struct u4v_buf *u4v_tb_db_alloc(struct u4v_ucontext *uctx, int rx)
{
	struct u4v_tb_peer *p = uctx->dev->cable->priv;
	struct u4v_buf *buf = kzalloc(sizeof(*buf), GFP_KERNEL);

	if (!buf)
		return NULL;
	buf->kind = U4V_BUF_IO;
	buf->size = PAGE_SIZE;
	buf->writable = true;
	buf->dma = pci_resource_start(p->xd->tb->nhi->pdev, 0) +
		   (rx ? U4V_NHI_REG_RX_RING_BASE : U4V_NHI_REG_TX_RING_BASE);
	if (rdma_user_mmap_entry_insert(&uctx->ibuc, &buf->rdma, PAGE_SIZE)) {
		kfree(buf);
		return NULL;
	}
	return buf;
}

static const struct u4v_cable_ops u4v_tb_cable_ops = {
	.chan_open = u4v_tb_chan_open,
	.tx_kick = u4v_tb_tx_kick,
	.rx_kick = u4v_tb_rx_kick,
	.db_alloc = u4v_tb_db_alloc,
};

/* RX interrupt (polling mode): wake the contexts of this cable. */
static void u4v_tb_start_poll(void *data)
{
	struct u4v_tb_peer *p = data;

	schedule_work(&p->up_work);
}

static void u4v_tb_paths_down(struct u4v_tb_peer *p)
{
	if (!p->paths_up)
		return;
	tb_xdomain_disable_paths(p->xd, p->out_hopid, p->tx_ring->hop,
				 p->local_rx_hopid, p->rx_ring->hop);
	tb_ring_stop(p->rx_ring);
	tb_ring_stop(p->tx_ring);
	tb_xdomain_release_out_hopid(p->xd, p->out_hopid);
	p->paths_up = false;
}

/* Which end of the cable we are: both hosts agree by comparing UUIDs. */
static u32 u4v_tb_end(const uuid_t *local, const uuid_t *remote)
{
	return memcmp(local, remote, sizeof(*local)) < 0 ? 0 : 1;
}

/* Both logins done: tunnel, rings, and the ib_device. */
static void u4v_tb_up(struct u4v_tb_peer *p)
{
	u64 guid;
	int ret;

	if (p->paths_up || !p->logged_in || !p->peer_logged_in)
		return;
	ret = tb_xdomain_alloc_out_hopid(p->xd, p->remote_rx_hopid);
	if (ret < 0) {
		dev_warn(&p->svc->dev, "no out HopID %d: %d\n",
			 p->remote_rx_hopid, ret);
		return;
	}
	p->out_hopid = ret;
	tb_ring_start(p->tx_ring);
	tb_ring_start(p->rx_ring);
	ret = tb_xdomain_enable_paths(p->xd, p->out_hopid, p->tx_ring->hop,
				      p->local_rx_hopid, p->rx_ring->hop);
	if (ret) {
		dev_warn(&p->svc->dev, "enabling DMA paths failed: %d\n", ret);
		tb_ring_stop(p->rx_ring);
		tb_ring_stop(p->tx_ring);
		tb_xdomain_release_out_hopid(p->xd, p->out_hopid);
		return;
	}
	p->paths_up = true;

	/* One lane, 20 Gb/s, 4084 of 4096 bytes payload per frame. */
	p->cable = u4v_cable_alloc(&u4v_tb_cable_ops, 1,
				   20000000000ull / 8 * 4084 / 4096);
	if (!p->cable)
		goto err_paths;
	p->cable->priv = p;
	memcpy(&guid, p->xd->local_uuid, sizeof(guid));
	p->dev = u4v_dev_create(p->cable,
				u4v_tb_end(p->xd->local_uuid, p->xd->remote_uuid),
				&p->xd->tb->nhi->pdev->dev, guid | 1);
	if (!p->dev)
		goto err_cable;
	p->cable->end[p->dev->end] = p->dev;
	ret = u4v_dev_register(p->dev, "usb4v%d");
	if (ret) {
		ib_dealloc_device(&p->dev->ibdev);
		p->dev = NULL;
		goto err_cable;
	}
	dev_info(&p->svc->dev, "%s up (end %u)\n", dev_name(&p->dev->ibdev.dev),
		 p->dev->end);
	return;

err_cable:
	u4v_cable_put(p->cable);
	p->cable = NULL;
err_paths:
	u4v_tb_paths_down(p);
}

static void u4v_tb_down(struct u4v_tb_peer *p)
{
	if (p->cable)
		u4v_cable_down(p->cable);
	if (p->dev) {
		/* disassociates applications still holding the device */
		u4v_dev_destroy(p->dev);
		p->dev = NULL;
	}
	if (p->cable) {
		u4v_cable_put(p->cable);
		p->cable = NULL;
	}
	u4v_tb_paths_down(p);
}

static void u4v_tb_up_work(struct work_struct *work)
{
	struct u4v_tb_peer *p = container_of(work, struct u4v_tb_peer, up_work);
	struct u4v_cable *cable;
	u32 i;

	mutex_lock(&p->lock);
	u4v_tb_up(p);
	cable = p->cable;
	if (cable) {
		/* an RX interrupt: every context polls its channels */
		mutex_lock(&cable->lock);
		for (i = 0; i < U4V_MAX_CTX; i++) {
			struct u4v_ucontext *c = cable->ctx[i];

			if (c && c->evfd)
				eventfd_signal(c->evfd, 1);
			if (c)
				u4v_ctx_signal_cqs(c);
		}
		mutex_unlock(&cable->lock);
	}
	mutex_unlock(&p->lock);
	if (p->paths_up)
		tb_ring_poll_complete(p->rx_ring);
}

static void u4v_tb_login_work(struct work_struct *work)
{
	struct u4v_tb_peer *p =
		container_of(work, struct u4v_tb_peer, login_work.work);
	struct u4v_tb_login_resp resp = {};
	struct u4v_tb_login req = {};
	int ret;

	mutex_lock(&p->lock);
	u4v_tb_fill_hdr(p, &req.hdr, sizeof(req), U4V_TB_LOGIN);
	req.proto_ver = U4V_TB_PROTO_VER;
	req.rx_hopid = p->local_rx_hopid;
	req.ring_depth = u4v_ring_depth;
	mutex_unlock(&p->lock);

	ret = tb_xdomain_request(p->xd, &req, sizeof(req),
				 TB_CFG_PKG_XDOMAIN_RESP, &resp, sizeof(resp),
				 TB_CFG_PKG_XDOMAIN_RESP,
				 U4V_TB_LOGIN_TIMEOUT_MS);
	mutex_lock(&p->lock);
	if (!ret && resp.hdr.type == U4V_TB_LOGIN_RESP && !resp.status &&
	    resp.proto_ver == U4V_TB_PROTO_VER) {
		p->logged_in = true;
		u4v_tb_up(p);
	} else if (p->retries++ < U4V_TB_LOGIN_RETRIES) {
		schedule_delayed_work(&p->login_work,
				      msecs_to_jiffies(U4V_TB_LOGIN_DELAY_MS));
	} else {
		dev_warn(&p->svc->dev, "peer shim did not answer the login\n");
	}
	mutex_unlock(&p->lock);
}

/* XDomain requests from the peer's shim. */
static int u4v_tb_handle(const void *buf, size_t size, void *data)
{
	struct u4v_tb_peer *p = data;
	const struct u4v_tb_hdr *h = buf;
	struct u4v_tb_login_resp resp = {};
	const struct u4v_tb_login *login = buf;
	u64 route;

	if (size < sizeof(*h) || !uuid_equal(&h->initiator, p->xd->remote_uuid) ||
	    !uuid_equal(&h->target, p->xd->local_uuid))
		return 0;
	route = ((u64)h->route_hi << 32 | h->route_lo) & ~BIT_ULL(63);
	if (route != p->xd->route)
		return 0;

	switch (h->type) {
	case U4V_TB_LOGIN:
		if (size < sizeof(*login))
			return 0;
		mutex_lock(&p->lock);
		u4v_tb_fill_hdr(p, &resp.hdr, sizeof(resp), U4V_TB_LOGIN_RESP);
		resp.hdr.command = h->command;
		resp.proto_ver = U4V_TB_PROTO_VER;
		if (login->proto_ver != U4V_TB_PROTO_VER ||
		    login->ring_depth != u4v_ring_depth) {
			resp.status = 1;
		} else {
			p->remote_rx_hopid = login->rx_hopid;
			p->peer_logged_in = true;
		}
		mutex_unlock(&p->lock);
		tb_xdomain_response(p->xd, &resp, sizeof(resp),
				    TB_CFG_PKG_XDOMAIN_RESP);
		schedule_work(&p->up_work);
		return 1;
	case U4V_TB_LOGOUT:
		mutex_lock(&p->lock);
		p->peer_logged_in = false;
		mutex_unlock(&p->lock);
		return 1;
	default:
		return 0;
	}
}

static int u4v_tb_probe(struct tb_service *svc, const struct tb_service_id *id)
{
	struct tb_xdomain *xd = tb_service_parent(svc);
	struct tb_nhi *nhi = xd->tb->nhi;
	struct u4v_tb_peer *p;
	int ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->svc = svc;
	p->xd = xd;
	mutex_init(&p->lock);
	INIT_DELAYED_WORK(&p->login_work, u4v_tb_login_work);
	INIT_WORK(&p->up_work, u4v_tb_up_work);

	p->tx_ring = tb_ring_alloc_tx(nhi, -1, u4v_ring_depth, RING_FLAG_FRAME);
	if (!p->tx_ring) {
		ret = -ENOMEM;
		goto err_free;
	}
	p->rx_ring = tb_ring_alloc_rx(nhi, -1, u4v_ring_depth, RING_FLAG_FRAME,
				      0, U4V_TB_PDF_MASK, U4V_TB_PDF_MASK,
				      u4v_tb_start_poll, p);
	if (!p->rx_ring) {
		ret = -ENOMEM;
		goto err_tx;
	}
	ret = tb_xdomain_alloc_in_hopid(xd, -1);
	if (ret < 0)
		goto err_rx;
	p->local_rx_hopid = ret;

	p->handler.uuid = &u4v_tb_proto_uuid;
	p->handler.callback = u4v_tb_handle;
	p->handler.data = p;
	ret = tb_register_protocol_handler(&p->handler);
	if (ret)
		goto err_hop;
	tb_service_set_drvdata(svc, p);
	schedule_delayed_work(&p->login_work, 0);
	return 0;

err_hop:
	tb_xdomain_release_in_hopid(xd, p->local_rx_hopid);
err_rx:
	tb_ring_free(p->rx_ring);
err_tx:
	tb_ring_free(p->tx_ring);
err_free:
	kfree(p);
	return ret;
}

/* Unplug, peer service gone, or module unload. */
static void u4v_tb_remove(struct tb_service *svc)
{
	struct u4v_tb_peer *p = tb_service_get_drvdata(svc);

	tb_unregister_protocol_handler(&p->handler);
	cancel_delayed_work_sync(&p->login_work);
	cancel_work_sync(&p->up_work);
	mutex_lock(&p->lock);
	u4v_tb_down(p);
	mutex_unlock(&p->lock);
	tb_xdomain_release_in_hopid(p->xd, p->local_rx_hopid);
	tb_ring_free(p->rx_ring);
	tb_ring_free(p->tx_ring);
	kfree(p);
}

static const struct tb_service_id u4v_tb_ids[] = {
	{ TB_SERVICE(U4V_TB_KEY, U4V_TB_SVC_ID) },
	{ },
};
MODULE_DEVICE_TABLE(tbsvc, u4v_tb_ids);

static struct tb_service_driver u4v_tb_driver = {
	.driver = {
		.owner = THIS_MODULE,
		.name = U4V_DRV_NAME,
	},
	.probe = u4v_tb_probe,
	.remove = u4v_tb_remove,
	.id_table = u4v_tb_ids,
};

int u4v_tb_init(void)
{
	int ret;

	u4v_tb_dir = tb_property_create_dir(&u4v_tb_proto_uuid);
	if (!u4v_tb_dir)
		return -ENOMEM;
	tb_property_add_immediate(u4v_tb_dir, "prtcid", U4V_TB_SVC_ID);
	tb_property_add_immediate(u4v_tb_dir, "prtcvers", U4V_TB_PROTO_VER);
	tb_property_add_immediate(u4v_tb_dir, "prtcrevs", 0);
	tb_property_add_immediate(u4v_tb_dir, "prtcstns", 0);
	ret = tb_register_property_dir(U4V_TB_KEY, u4v_tb_dir);
	if (ret)
		goto err_dir;
	ret = tb_register_service_driver(&u4v_tb_driver);
	if (ret)
		goto err_unreg;
	return 0;

err_unreg:
	tb_unregister_property_dir(U4V_TB_KEY, u4v_tb_dir);
err_dir:
	tb_property_free_dir(u4v_tb_dir);
	u4v_tb_dir = NULL;
	return ret;
}

void u4v_tb_exit(void)
{
	tb_unregister_service_driver(&u4v_tb_driver);
	tb_unregister_property_dir(U4V_TB_KEY, u4v_tb_dir);
	tb_property_free_dir(u4v_tb_dir);
	u4v_tb_dir = NULL;
}
