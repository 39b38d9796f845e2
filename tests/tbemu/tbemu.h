/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tbemu: two Thunderbolt hosts in one kernel, joined by one emulated cable,
 * behind the part of the thunderbolt core's service API (linux/thunderbolt.h)
 * that usb4verbs.ko uses. A test vehicle for the VM tests only (never
 * packaged): loaded in place of thunderbolt.ko, it lets the shim bind once
 * per host and run its real Thunderbolt code paths.
 *
 * Each host is one PCI function of the VM (QEMU's bochs-display: its BAR 0
 * is memory, so the ring registers the shim writes there read back) with
 * the NHI's register layout, a domain, and, while the cable is plugged, an
 * XDomain for the other host with one service per registered property
 * directory. XDomain packets travel between the hosts' control channels;
 * frames move between their rings only when a producer register says so
 * (dma.c), by the NHI's descriptor rules.
 */
#ifndef TBEMU_H
#define TBEMU_H

#include <linux/thunderbolt.h>
#include <linux/version.h>

#define TBE_HOSTS 2
#define TBE_MAX_HOPS 32		/* hop_count at most (register layout) */
#define TBE_ROUTE 1		/* both hosts: the cable is on port 1 */
#define TBE_MIN_HOPID 8		/* TB_PATH_MIN_HOPID */
#define TBE_CTL_MAX 252		/* control frame: 256 bytes less the CRC */
#define TBE_MAX_TUNNELS 16

/* The NHI's register layout (drivers/thunderbolt/nhi_regs.h in 6.1). */
#define TBE_REG_TX_RING 0x00000	/* 16 bytes per hop: base, prod/cons, size */
#define TBE_REG_RX_RING 0x08000
#define TBE_REG_TX_OPTIONS 0x19800	/* 32 bytes per hop: flags, PDF masks */
#define TBE_REG_RX_OPTIONS 0x29800
#define TBE_REG_RING_INT 0x38200	/* enable bits: TX hops, then RX hops */
#define TBE_REG_HOP_COUNT 0x39640
#define TBE_REG_SIZE 0x40000
#define TBE_RING_ENABLE BIT(31)
#define TBE_RING_RAW BIT(30)
#define TBE_RING_E2E BIT(28)

/* Descriptor: u64 phys; u32 length:12 eof:4 sof:4 flags:12; u32 time. */
struct tbe_desc {
	u64 phys;
	u32 len_flags;
	u32 time;
};

#define TBE_DESC_LEN(lf) ((lf) & 0xfff)
#define TBE_DESC_EOF(lf) (((lf) >> 12) & 0xf)
#define TBE_DESC_SOF(lf) (((lf) >> 16) & 0xf)
#define TBE_DESC_FLAGS(lf) ((lf) >> 20)
#define TBE_FLAGS_SHIFT 20
#define TBE_DESC_CRC_ERROR 0x1
#define TBE_DESC_COMPLETED 0x2
#define TBE_DESC_POSTED 0x4
#define TBE_DESC_OVERRUN 0x4 /* RX, written back */
#define TBE_DESC_INTERRUPT 0x8
#define TBE_FRAME 4096u

/* A ring as tb_ring_alloc_*() hands it out, and its DMA engine state. */
struct tbe_ring {
	struct tb_ring ring;
	struct tbe_desc *own_desc; /* what tb_ring_alloc_*() allocated */
	dma_addr_t own_dma;
	u32 hw;		  /* engine: next TX position to send / RX to fill */
	u32 seen;	  /* prod/cons register as last seen while stopped */
	bool irq_pending; /* a completion while the interrupt was masked */
};

struct tbe_tunnel {
	bool used;
	int tx_path, tx_ring; /* out HopID, TX ring (-1: none) */
	int rx_path, rx_ring; /* in HopID, RX ring (-1: none) */
};

/* Counters of one host, shown by the "stats" parameter. */
struct tbe_stats {
	u64 frames, bytes;	/* delivered into this host's RX rings */
	u64 tx_done;		/* TX descriptors completed */
	u64 no_path;		/* sent on a TX ring without a path */
	u64 no_rx_path;		/* arrived on an in HopID without a path */
	u64 rx_stopped;		/* the path's RX ring is not running */
	u64 rx_overflow;	/* no RX descriptor posted (no E2E) */
	u64 unplugged;		/* sent while the cable was out */
	u64 not_posted;		/* descriptor owned by the ring, POSTED clear */
	u64 bad_doorbell;	/* producer / consumer outside the ring */
	u64 stopped_doorbell;	/* register written while the ring stopped */
	u64 dma_fault;		/* a descriptor or buffer outside RAM */
	u64 pdf;		/* frame PDFs outside the RX ring's masks */
	u64 overrun;		/* frame longer than the RX buffer */
	u64 irqs;		/* RX interrupts raised */
	u64 xd_tx, xd_rx, xd_dropped, xd_unmatched, xd_timeouts;
	u64 paths, rings;	/* enable_paths / ring allocations that worked */
};

struct tbe_host {
	int index;
	struct pci_dev *pdev;
	void __iomem *regs; /* BAR 0: the NHI's registers */
	struct tb_nhi nhi;
	struct tb *tb;
	uuid_t uuid;
	struct tb_xdomain *xd; /* the other host, while plugged */
	bool plugged;
	int vectors; /* MSI-X vectors the rings hold */
	/* the control channel: packets in arrival order */
	struct workqueue_struct *rx_wq;
	struct mutex ctl_lock;
	struct list_head requests; /* ours, waiting for a response */
	struct tbe_tunnel tunnels[TBE_MAX_TUNNELS]; /* under tbe_engine_lock */
	struct tbe_stats stats;
};

/* main.c */
extern struct tbe_host *tbe_hosts[TBE_HOSTS];
extern struct mutex tbe_engine_lock;
extern spinlock_t tbe_cable_lock;
extern unsigned int tbe_hop_count, tbe_msix_vectors, tbe_max_hopid;
extern unsigned int tbe_max_tunnels;
extern int tbe_xd_drop_req, tbe_xd_drop_resp, tbe_xd_garble_req;
extern int tbe_xd_garble_resp;
extern int tbe_xd_garble_from, tbe_xd_mute, tbe_xd_delay_ms;
extern int tbe_xd_delay_count, tbe_xd_fault_type, tbe_refuse_hopid;
extern int tbe_hopid_busy;
extern int tbe_refuse_paths, tbe_crc_errors;
bool tbe_fault(int *count);
struct tbe_host *tbe_peer(struct tbe_host *h);

static inline struct tbe_host *tbe_host_of_tb(struct tb *tb)
{
	return (struct tbe_host *)tb->privdata[0];
}

static inline struct tbe_host *tbe_host_of_nhi(struct tb_nhi *nhi)
{
	return container_of(nhi, struct tbe_host, nhi);
}

/* bus.c */
extern struct mutex tbe_svc_lock;
int tbe_bus_init(void);
void tbe_bus_exit(void);
int tbe_domain_add(struct tbe_host *h);
void tbe_domain_remove(struct tbe_host *h);
int tbe_xdomain_add(struct tbe_host *h, struct tbe_host *peer);
void tbe_xdomain_remove(struct tbe_host *h);
void tbe_services_update(void);

/* ctl.c */
int tbe_ctl_init(struct tbe_host *h);
void tbe_ctl_exit(struct tbe_host *h);

/* path.c */
void tbe_tunnels_drop(struct tbe_host *h);
struct tbe_tunnel *tbe_tunnel_tx(struct tbe_host *h, int tx_ring);
struct tbe_tunnel *tbe_tunnel_rx(struct tbe_host *h, int rx_path);

/* ring.c */
void __iomem *tbe_ring_slot(struct tbe_host *h, bool tx, int hop);
void __iomem *tbe_ring_options(struct tbe_host *h, bool tx, int hop);
void tbe_ring_irq(struct tbe_host *h, struct tbe_ring *r);
int tbe_rings_show(struct tbe_host *h, char *buf, int size);

static inline struct tbe_ring *tbe_ring(struct tb_ring *ring)
{
	return container_of(ring, struct tbe_ring, ring);
}

/* check.c */
int tbe_dma_check(char *buf);

/* dma.c */
int tbe_dma_start(void);
void tbe_dma_stop(void);

/* net.c */
extern bool tbe_net;
int tbe_net_init(void);
void tbe_net_exit(void);
void tbe_dma_kick(void);

#endif
