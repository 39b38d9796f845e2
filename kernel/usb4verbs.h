/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * usb4verbs: internal definitions of the kernel shim.
 *
 * Objects:
 *  cable   one host-to-host link (a Thunderbolt peer, or the soft cable
 *          joining usb4v0 and usb4v1); owns the context id space and the
 *          channel budget.
 *  dev     one ib_device (one end of a cable on this host).
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
#include <rdma/ib_verbs.h>

#include "include/uapi/usb4verbs-abi.h"

#define U4V_DRV_NAME "usb4verbs"
/* sysfs abi_version libibverbs matches providers on (not U4V_ABI_VERSION) */
#define U4V_UVERBS_ABI 1

/* Private Thunderbolt definitions (not exported by 6.1 headers). */
#define U4V_NHI_REG_TX_RING_BASE 0x00000
#define U4V_NHI_REG_RX_RING_BASE 0x08000
#define U4V_NHI_RING_SLOT_SIZE 16
#define U4V_NHI_REG_HOP_COUNT 0x39640
#define U4V_NHI_RING_PROD_CONS 8 /* TX: prod << 16; RX: cons */

/* Module parameters (usb4verbs_main.c). */
extern unsigned int u4v_ring_depth;
extern unsigned int u4v_soft_channels;
extern bool u4v_allow_direct;

struct u4v_dev;
struct u4v_ucontext;
struct u4v_half;
struct tb_ring;

enum u4v_buf_kind {
	U4V_BUF_PAGES,	/* alloc_pages_exact: soft cable, shadow, status */
	U4V_BUF_COHERENT, /* dma_alloc_coherent on the NHI */
	U4V_BUF_EXTERN,	/* memory owned elsewhere (tb_ring descriptors) */
	U4V_BUF_IO,	/* an MMIO page (NHI ring registers), dma = phys */
};

struct u4v_buf {
	struct rdma_user_mmap_entry rdma;
	enum u4v_buf_kind kind;
	void *kva;
	dma_addr_t dma;
	struct device *dma_dev;
	size_t size;
	bool writable;
	/* called from mmap_free for U4V_BUF_EXTERN */
	void (*release)(struct u4v_buf *buf);
	void *release_arg;
};

/* Per-position metadata the kernel keeps for TX (never re-read from user). */
struct u4v_tx_meta {
	u32 off; /* byte offset in the TX pool */
	u16 len;
	u8 sof;
	u8 eof;
};

struct u4v_half {
	struct u4v_chan *chan;
	struct u4v_ucontext *uctx; /* owner; NULL once dead */
	struct u4v_half *peer;	   /* the other half (itself: self-channel) */
	u32 remote_ctx;
	u32 depth;
	bool dead;
	bool direct;   /* the owner writes descriptors and doorbells */
	bool accepted; /* the owner has seen it (chan_get/accept) */
	u32 tx_hop, rx_hop; /* register slots (direct mode) */
	u32 *tx_db, *rx_db; /* soft cable: the slots in the owner's pages */
	struct list_head pending; /* uctx->pending_chans until accepted */

	struct u4v_buf *buf[U4V_MAP_NR];
	struct u4v_desc *tx_desc;
	struct u4v_desc *rx_desc;
	struct u4v_shadow_desc *shadow;
	u8 *tx_pool;
	u8 *rx_pool;
	struct u4v_tx_meta *tx_meta;

	/* free-running indices, under chan->lock */
	u32 tx_prod; /* positions validated and posted */
	u32 tx_done; /* positions completed */
	u32 rx_rel;  /* positions userspace gave back */
	u32 rx_done; /* positions completed (frame delivered) */

	/* hardware (Thunderbolt) rings, NULL on the soft cable */
	struct tb_ring *hw_tx, *hw_rx;
};

struct u4v_chan {
	struct mutex lock;
	struct u4v_cable *cable;
	struct u4v_half side[2];
	bool loopback;	/* same end: no budget, no hardware */
	bool self;	/* one context to itself: side[0] only */
	bool counted;	/* holds one unit of the cable budget */
	int nr_alive;	/* halves whose owner is still alive */
};

struct u4v_cable_ops {
	/* set up hardware for a cross-cable channel (NULL: soft engine) */
	int (*chan_open)(struct u4v_chan *chan);
	void (*chan_close)(struct u4v_chan *chan);
	/* new TX positions posted on half h */
	void (*tx_kick)(struct u4v_half *h);
	/* RX positions given back on half h */
	void (*rx_kick)(struct u4v_half *h);
	/* direct mode: doorbell page rx (0 TX, 1 RX) of uctx (NULL: soft) */
	struct u4v_buf *(*db_alloc)(struct u4v_ucontext *uctx, int rx);
};

struct u4v_cable {
	struct mutex lock;
	struct kref ref;
	const struct u4v_cable_ops *ops;
	struct u4v_dev *end[2];
	struct u4v_ucontext *ctx[U4V_MAX_CTX];
	u64 alive_mask;
	u32 next_ctx;
	u32 max_channels;
	u32 nr_channels;
	u64 wire_rate;
	bool up;
	void *priv; /* Thunderbolt peer */
	u32 nr_direct; /* direct contexts: the soft engine polls */
	struct task_struct *engine;
	wait_queue_head_t engine_wq;
};

struct u4v_dev {
	struct ib_device ibdev;
	struct u4v_cable *cable;
	u32 end;
	u64 guid;
	struct device *dma_dev; /* NHI PCI device, or NULL */
	atomic_t nr_pd, nr_cq, nr_qp, nr_mr;
	struct ida qpn_ida;
	atomic_t mr_key;
};

struct u4v_ucontext {
	struct ib_ucontext ibuc;
	struct u4v_dev *dev;
	u32 ctx_id;
	bool direct;
	struct u4v_buf *db[2]; /* direct: TX and RX doorbell pages */
	struct eventfd_ctx *evfd;
	struct u4v_buf *status_buf;
	struct u4v_status_page *status;
	struct u4v_half *halves[U4V_MAX_CTX]; /* by remote context id */
	struct list_head pending_chans;	      /* under cable->lock */
	struct list_head graveyard;	      /* replaced halves */
	spinlock_t cq_lock;
	struct list_head cqs;
};

struct u4v_pd {
	struct ib_pd ibpd;
};

struct u4v_cq {
	struct ib_cq ibcq;
	struct list_head node; /* uctx->cqs */
	struct u4v_ucontext *uctx;
	bool armed;
};

struct u4v_qp {
	struct ib_qp ibqp;
	enum ib_qp_state state;
	u32 dest_qpn;
};

struct u4v_mr {
	struct ib_mr ibmr;
	u64 start, length;
	int access;
};

static inline struct u4v_dev *to_u4v_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct u4v_dev, ibdev);
}

static inline struct u4v_ucontext *to_u4v_uctx(struct ib_ucontext *uc)
{
	return container_of(uc, struct u4v_ucontext, ibuc);
}

static inline struct u4v_buf *to_u4v_buf(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct u4v_buf, rdma);
}

/* usb4verbs_main.c */
struct u4v_cable *u4v_cable_alloc(const struct u4v_cable_ops *ops,
				  u32 max_channels, u64 wire_rate);
void u4v_cable_put(struct u4v_cable *cable);
int u4v_ctx_attach(struct u4v_ucontext *uctx);
void u4v_ctx_detach(struct u4v_ucontext *uctx);
void u4v_cable_down(struct u4v_cable *cable);

/* usb4verbs_ib.c */
struct u4v_dev *u4v_dev_create(struct u4v_cable *cable, u32 end,
			       struct device *dma_dev, u64 guid);
int u4v_dev_register(struct u4v_dev *dev, const char *name);
void u4v_dev_destroy(struct u4v_dev *dev);
void u4v_ctx_signal_cqs(struct u4v_ucontext *uctx);

/* usb4verbs_ring.c */
struct u4v_buf *u4v_buf_alloc(struct u4v_ucontext *uctx, size_t size,
			      bool writable);
void u4v_buf_remove(struct u4v_buf *buf);
void u4v_buf_free(struct u4v_buf *buf);
int u4v_chan_get(struct u4v_ucontext *uctx, u32 remote,
		 struct u4v_chan_info *info);
int u4v_chan_accept(struct u4v_ucontext *uctx, struct u4v_chan_info *info);
int u4v_doorbell(struct u4v_ucontext *uctx, u32 remote, bool has_tx,
		 u32 tx_prod, bool has_rx, u32 rx_cons);
void u4v_ctx_release_chans(struct u4v_ucontext *uctx);
void u4v_half_wake(struct u4v_half *h, bool rx);
bool u4v_direct_poll(struct u4v_half *h);

/* usb4verbs_soft.c */
void u4v_soft_pump(struct u4v_half *from, u32 *delivered, u32 *completed);
int u4v_soft_engine_start(struct u4v_cable *cable);
void u4v_soft_engine_stop(struct u4v_cable *cable);

/* usb4verbs_tb.c */
int u4v_tb_init(void);
void u4v_tb_exit(void);

#endif
