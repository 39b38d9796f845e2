/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * usb4verbs: internal definitions of the kernel shim.
 *
 * Objects:
 *  cable   this host's end of one host-to-host link (a Thunderbolt peer,
 *          or one of the two ends of the soft cable); owns the end's half
 *          of the context id space and its channel budget, and talks to
 *          the other end's shim with the channel protocol (proto.c).
 *  dev     the ib_device of a cable end.
 *  uctx    one verbs context (ib_ucontext).
 *  chan    a channel between two contexts; two halves, one per context.
 *  half    one context's TX ring + RX ring + frame pools + shadow ring.
 *  buf     one mmap-able allocation (rdma_user_mmap_entry inside).
 */
#ifndef USB4VERBS_H
#define USB4VERBS_H

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/list.h>
#include <linux/kref.h>
#include <linux/eventfd.h>
#include <linux/uuid.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>

#include "include/uapi/rdma/usb4verbs-abi.h"
#include "include/usb4verbs-limits.h"
#include "usb4verbs_compat.h"

#define U4K_DRV_NAME "usb4verbs"

/* Private Thunderbolt definitions (not exported by 6.1 headers). */
#define U4K_NHI_REG_TX_RING_BASE 0x00000
#define U4K_NHI_REG_RX_RING_BASE 0x08000

/* Module parameters (usb4verbs_main.c). */
extern unsigned int u4k_ring_depth;
extern unsigned int u4k_soft_channels;
extern bool u4k_allow_direct;
extern unsigned int u4k_tb_channels, u4k_tb_timeout_ms;
extern char *u4k_soft_netdevs[2];
extern int u4k_nr_soft_netdevs;

struct u4k_cable;
struct u4k_ucontext;
struct u4k_qp;

enum u4k_buf_kind {
	U4K_BUF_PAGES, /* alloc_pages_exact: no DMA device */
	U4K_BUF_DMA,   /* dma_alloc_pages: linear pages, mapped for DMA */
	U4K_BUF_IO,    /* an MMIO page (NHI ring registers), dma = phys */
};

struct u4k_buf {
	struct rdma_user_mmap_entry rdma;
	enum u4k_buf_kind kind;
	bool writable;
	void *kva;
	dma_addr_t dma;
	size_t size;
	struct device *dma_dev;
};

struct u4k_half {
	struct u4k_chan *chan;
	struct u4k_ucontext *uctx; /* owner; NULL once dead */
	struct u4k_half *peer;	   /* the other half (itself: self-channel) */
	u32 remote_ctx;
	u32 lane; /* < U4V_MAX_LANES: one of the channels to remote_ctx */
	u32 depth;
	bool dead;
	bool gone;    /* the remote context left (cross-end channels) */
	bool counted; /* holds one unit of its cable's budget */
	bool direct;  /* the owner writes descriptors and doorbells */
	u32 tx_hop, rx_hop; /* register slots (direct mode) */
	u32 *tx_db, *rx_db; /* soft cable: the slots in the owner's pages */
	struct list_head pending; /* uctx->pending_chans until told */

	struct u4k_buf *buf[U4V_MAP_TX_DB]; /* the half's own mappings */
	struct u4v_desc *tx_desc;
	struct u4v_desc *rx_desc;
	struct u4v_shadow_desc *shadow;
	u8 *tx_pool;
	u8 *rx_pool;

	/* free-running indices, under chan->lock */
	u32 tx_prod; /* positions validated and posted */
	u32 tx_done; /* positions completed */
	u32 rx_rel;  /* positions userspace gave back */
	u32 rx_done; /* positions completed (frame delivered) */

	void *hw; /* Thunderbolt rings, HopIDs and paths (tb.c) */
};

struct u4k_chan {
	struct mutex lock;
	struct u4k_half side[2];
	bool loopback; /* same end: no budget, no hardware */
	int nr_alive;  /* halves whose owner is still alive */
};

/*
 * The channel protocol between the shims of the two ends (proto.c). The
 * same messages travel as XDomain requests on a Thunderbolt cable and as
 * function calls between the two ends of the soft cable. End 0 decides
 * every cross-end channel, so concurrent connects from both ends meet.
 */
enum u4k_msg_type {
	U4K_MSG_MASK = 1, /* the sender's live contexts */
	U4K_MSG_REQ,	  /* end 1 -> end 0: please open (a, b, lane) */
	U4K_MSG_OPEN,	  /* end 0 -> end 1: channel (a, b, lane), join it */
	U4K_MSG_CLOSE,	  /* forget channel (a, b, lane) */
};

struct u4k_msg {
	u32 type;
	s32 status;  /* reply: 0 or -errno */
	u32 a;	     /* context id at end 0 */
	u32 b;	     /* context id at end 1 */
	u32 depth;   /* OPEN, LOGIN: ring depth, both ends must agree */
	u32 hop;     /* OPEN: sender's RX HopID; reply: the responder's */
	u32 version; /* Thunderbolt LOGIN: protocol version */
	u32 lane;    /* REQ, OPEN, CLOSE: < U4V_MAX_LANES (version 2 on) */
	u64 mask;    /* MASK: bit per live context of the sender */
	u64 seq;     /* MASK: newer wins */
};

/*
 * On a Thunderbolt cable every packet between the shims is an XDomain
 * header and one struct u4k_msg, whose type is also the header's: the
 * channel protocol's, or LOGIN (version, depth) and LOGOUT between the
 * shims. A response has the request's type with U4K_TB_RESP set, and its
 * command. usb4verbs_peer.c checks what the peer sends, usb4verbs_tb.c
 * moves the packets.
 */
/*
 * 2: REQ, OPEN and CLOSE name a lane (version 1's reserved word, always
 * 0 there). A shim of version 1 would take every lane for lane 0, so the
 * login wants the same version at both ends.
 */
#define U4K_TB_PROTO_VER 2
#define U4K_TB_MIN_HOPID 8 /* the first HopID of a path (TB_PATH_MIN_HOPID) */

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

enum {
	U4K_TB_LOGIN = 0x10,
	U4K_TB_LOGOUT,
	U4K_TB_MAD = 0x20, /* struct u4k_tb_mad_pkt */
	U4K_TB_RESP = 0x100,
};

struct u4k_tb_pkt {
	struct u4k_tb_hdr hdr;
	struct u4k_msg msg;
};

/* A MAD between the GSI QPs of the two ends (gsi.c). */
struct u4k_mad {
	struct list_head node;
	union ib_gid sgid, dgid; /* the sender's and the receiver's */
	u32 src_qpn, dst_qpn;
	u32 len;
	u8 data[IB_MGMT_MAD_SIZE];
};

/*
 * On a Thunderbolt cable a MAD crosses in two packets (a packet carries at
 * most 252 bytes), parts 0 and 1 of the sender's MAD number (command),
 * each with the addressing. They go unanswered, as responses do: QP1 is a
 * datagram service, and ib_mad sends again what gets no answer.
 */
#define U4K_TB_MAD_PART (IB_MGMT_MAD_SIZE / 2)

struct u4k_tb_mad_pkt {
	struct u4k_tb_hdr hdr; /* type U4K_TB_MAD */
	u32 part;
	u32 len;
	u32 src_qpn, dst_qpn;
	union ib_gid sgid, dgid;
	u8 data[U4K_TB_MAD_PART];
};

/* A MAD of the peer put together from its parts (peer.c). */
struct u4k_mad_rx {
	u32 seq;
	bool have_first;
	struct u4k_mad mad;
};

enum u4k_pkt_kind {
	U4K_PKT_OTHER,	 /* not ours to take: other hosts' */
	U4K_PKT_ANSWER,	 /* an answer of the peer's shim (hdr.command) */
	U4K_PKT_BAD,	 /* ours, malformed: dropped */
	U4K_PKT_REQUEST, /* a request of the peer's shim */
	U4K_PKT_MAD,	 /* a part of a MAD from the peer's QP1 */
};

/* What a request of the peer asks of us besides its answer. */
enum u4k_peer_action {
	U4K_PEER_ANSWER, /* nothing else */
	U4K_PEER_LOGIN,	 /* log in to the peer now */
	U4K_PEER_DOWN,	 /* take the cable down: the peer logged out */
};

struct u4k_cable_ops {
	/* one request to the other end's shim; the reply is written to m */
	int (*send)(struct u4k_cable *cable, struct u4k_msg *m);
	/* end 0: resources of half h before OPEN (fills m->hop) */
	int (*chan_open)(struct u4k_half *h, struct u4k_msg *m);
	/* end 0: OPEN was accepted; start h's hardware */
	int (*chan_connect)(struct u4k_half *h, struct u4k_msg *m);
	/* end 1: our half of the channel OPEN describes */
	struct u4k_half *(*chan_join)(struct u4k_cable *cable,
				      struct u4k_ucontext *owner,
				      struct u4k_msg *m);
	void (*chan_close)(struct u4k_half *h);
	/* new TX positions posted and/or RX positions given back on half h */
	void (*kick)(struct u4k_half *h, bool tx, bool rx);
	/* direct mode: the TX (rx = 0) or RX doorbell page of uctx */
	struct u4k_buf *(*db_alloc)(struct u4k_ucontext *uctx, int rx);
	/* a MAD of QP1 to the other end's QP1 (process context; gsi.c) */
	void (*send_mad)(struct u4k_cable *cable, struct u4k_mad *mad);
	/* ndev shares the cable: its addresses are the port's GIDs (netdev.c) */
	bool (*netdev_match)(struct u4k_cable *cable, struct net_device *ndev);
};

/* Cross-cable counters of an end (hw_counters); bytes follow frames. */
enum u4k_stat {
	U4K_STAT_TX_FRAMES,
	U4K_STAT_TX_BYTES,
	U4K_STAT_RX_FRAMES,
	U4K_STAT_RX_BYTES,
	U4K_NR_STATS
};

struct u4k_cable {
	struct mutex lock;
	struct kref ref;
	const struct u4k_cable_ops *ops;
	struct u4k_dev *dev; /* our end's ib_device */
	u32 end;
	struct u4k_ucontext *ctx[U4V_MAX_CTX]; /* only our end's ids */
	u64 local_mask;	 /* live contexts of this end */
	u64 remote_mask; /* live contexts of the other end, as last told */
	u64 quarantine;	 /* ids not reused until the other end knows */
	u64 mask_seq, remote_seq;
	u32 next_ctx;
	u32 max_channels;
	u32 nr_channels;
	u64 wire_rate;
	bool up;
	void *priv; /* Thunderbolt peer, or the other soft end */
	struct u4k_half *opening; /* soft cable: the half OPEN is about */
	u32 nr_direct; /* direct contexts: the soft engine polls */
	atomic64_t stats[U4K_NR_STATS];
};

struct u4k_dev {
	struct ib_device ibdev;
	struct u4k_cable *cable;
	u64 guid;
	struct device *dma_dev; /* NHI PCI device, or NULL */
	atomic_t nr_pd, nr_cq, nr_qp, nr_mr;
	struct ida qpn_ida;
	atomic_t mr_key;
	struct net_device *ndev; /* whose addresses are our GIDs (netdev.c) */
	struct list_head netdev_node;
	struct work_struct gid_work;
	spinlock_t gsi_lock;	/* gsi, mad_tx */
	struct u4k_qp *gsi;	/* ib_mad's QP1 (gsi.c) */
	struct list_head mad_tx; /* MADs to carry to the other end */
	struct work_struct mad_work;
};

struct u4k_ucontext {
	struct ib_ucontext ibuc;
	struct u4k_dev *dev;
	u32 ctx_id;
	bool direct;
	struct u4k_buf *db[2]; /* direct: TX and RX doorbell pages */
	struct eventfd_ctx *evfd;
	struct u4k_buf *status_buf;
	struct u4v_status_page *status;
	/* by remote context id and lane */
	struct u4k_half *halves[U4V_MAX_CTX][U4V_MAX_LANES];
	struct list_head pending_chans;	      /* under cable->lock */
	struct list_head graveyard;	      /* replaced halves */
	spinlock_t cq_lock;
	struct list_head cqs;
};

static inline struct u4k_ucontext *to_u4k_uctx(struct ib_ucontext *uc)
{
	return container_of(uc, struct u4k_ucontext, ibuc);
}

static inline struct u4k_cable *u4k_cable_of(struct u4k_ucontext *uctx)
{
	return uctx->dev->cable;
}

/* Context ids: end 0 has the low half of the id space, end 1 the high. */
#define U4K_CTX_PER_END (U4V_MAX_CTX / 2)

static inline u32 u4k_ctx_end(u32 ctx_id)
{
	return ctx_id / U4K_CTX_PER_END;
}

/* A descriptor's len_flags word, as the NHI packs it. */
static inline u32 u4k_desc_pack(u32 len, u32 sof, u32 eof, u32 flags)
{
	return (len & U4V_DESC_LEN_MASK) | (eof << U4V_DESC_EOF_SHIFT) |
	       (sof << U4V_DESC_SOF_SHIFT) | (flags << U4V_DESC_FLAGS_SHIFT);
}

/* A half whose peer left: the next connect makes a new channel. */
static inline bool u4k_half_stale(struct u4k_half *h)
{
	return h->gone || (h->peer && h->peer->dead);
}

/* usb4verbs_main.c */
struct u4k_cable *u4k_cable_alloc(const struct u4k_cable_ops *ops, u32 end,
				  u32 max_channels, u64 wire_rate);
void u4k_cable_put(struct u4k_cable *cable);
void u4k_cable_publish(struct u4k_cable *cable);
void u4k_cable_down(struct u4k_cable *cable);

/* usb4verbs_proto.c */
int u4k_ctx_attach(struct u4k_ucontext *uctx);
void u4k_ctx_detach(struct u4k_ucontext *uctx);
int u4k_proto_connect(struct u4k_ucontext *uctx, u32 remote, u32 lane);
void u4k_proto_recv(struct u4k_cable *cable, struct u4k_msg *m);
void u4k_proto_send_mask(struct u4k_cable *cable);

/* usb4verbs_peer.c */
enum u4k_pkt_kind u4k_peer_classify(const void *buf, size_t size,
				    const uuid_t *local, const uuid_t *remote,
				    u64 route);
enum u4k_peer_action u4k_peer_request(struct u4k_cable *cable, bool logged_in,
				      struct u4k_msg *m);
int u4k_peer_answer(const struct u4k_tb_hdr *req,
		    const struct u4k_tb_pkt *resp, struct u4k_msg *m);
int u4k_peer_login_answer(const struct u4k_msg *m);
bool u4k_peer_mad_part(struct u4k_mad_rx *rx,
		       const struct u4k_tb_mad_pkt *pkt);

/* usb4verbs_ib.c */
struct u4k_dev *u4k_dev_add(struct u4k_cable *cable, struct device *dma_dev,
			    u64 guid);
void u4k_dev_remove(struct u4k_dev *dev);
void u4k_ctx_signal_cqs(struct u4k_ucontext *uctx);

/* usb4verbs_ring.c */
struct u4k_buf *u4k_buf_alloc(struct u4k_ucontext *uctx, size_t size,
			      bool writable);
int u4k_buf_insert(struct u4k_ucontext *uctx, struct u4k_buf *buf);
void u4k_buf_remove(struct u4k_buf *buf);
void u4k_buf_free(struct u4k_buf *buf);
int u4k_chan_new(struct u4k_ucontext *owner, u32 remote, u32 lane,
		 struct u4k_half **out);
struct u4k_half *u4k_chan_pair(struct u4k_half *h0,
			       struct u4k_ucontext *owner);
void u4k_half_kill(struct u4k_half *h);
void u4k_half_gone(struct u4k_half *h);
void u4k_half_install(struct u4k_ucontext *uctx, struct u4k_half *h,
		      bool notify);
int u4k_chan_get(struct u4k_ucontext *uctx, u32 remote, u32 lane,
		 struct u4v_chan_info *info);
int u4k_doorbell(struct u4k_ucontext *uctx, u32 remote, u32 lane,
		 bool has_tx, u32 tx_prod, bool has_rx, u32 rx_cons);
void u4k_ctx_release_chans(struct u4k_ucontext *uctx);
void u4k_half_wake(struct u4k_half *h, bool rx);
bool u4k_direct_poll(struct u4k_half *h);

/* usb4verbs_soft.c */
void u4k_soft_pump(struct u4k_half *tx, u32 *delivered, u32 *completed);
int u4k_soft_cable_create(void);
void u4k_soft_cable_destroy(void);
void u4k_soft_engine_wake(void);

/* usb4verbs_gsi.c (the rest in usb4verbs_gsi.h) */
void u4k_gsi_init(struct u4k_dev *dev);
void u4k_gsi_stop(struct u4k_dev *dev);
void u4k_gsi_recv(struct u4k_dev *dev, const struct u4k_mad *mad);

/* usb4verbs_netdev.c */
void u4k_netdev_add(struct u4k_dev *dev);
void u4k_netdev_del(struct u4k_dev *dev);
int u4k_netdev_init(void);
void u4k_netdev_exit(void);

/* usb4verbs_tb.c */
int u4k_tb_init(void);
void u4k_tb_exit(void);

#endif
