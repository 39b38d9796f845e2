/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * usb4verbs: the ABI between usb4verbs.ko and the userspace `nhi` link
 * backend (libusb4verbs/link/nhi.c), which the rdma-core provider uses.
 *
 * A context talks to the shim through its uverbs command fd:
 *  - GET_CONTEXT (uverbs write command) with struct u4v_alloc_ucontext_req /
 *    _resp as driver data: context id, ring geometry, status page;
 *  - driver methods on UVERBS_OBJECT_DEVICE (uverbs ioctl): channel get
 *    (a connect, or the next one a peer made), the doorbell, CQ signalling;
 *  - mmap of the offsets the kernel hands out (status page, rings, pools).
 */
#ifndef USB4VERBS_ABI_USER_H
#define USB4VERBS_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/* Provider / kernel ABI version: bump on any incompatible change. */
#define U4V_ABI_VERSION 6

#define U4V_FRAME_SIZE 4096u /* one frame buffer, no scatter-gather */
#define U4V_RING_DEPTH_MIN 16u
#define U4V_RING_DEPTH_MAX 4096u
#define U4V_MAX_CTX 64u /* contexts per cable: ids 0-31 end 0, 32-63 end 1 */
/*
 * Channels (lanes) between one pair of contexts: lane 0 and up to three
 * more, each a ring pair of its own in the cable's channel budget, for
 * when one ring pair moves less than the wire.
 */
#define U4V_MAX_LANES 4u

/*
 * The NHI ring descriptor (16 bytes, little-endian), as the hardware and
 * the soft cable use it. Safe mode: userspace only reads these. Direct
 * mode: userspace writes len_flags (POSTED | INTERRUPT, length, PDFs) of
 * the positions it posts; the kernel pre-fills phys with the DMA address
 * of the frame pool slot of the same index.
 */
struct u4v_desc {
	__u64 phys;
	__u32 len_flags; /* length:12 (0 = 4096) eof:4 sof:4 flags:12 */
	__u32 time;
};

#define U4V_DESC_LEN_MASK 0xfffu
#define U4V_DESC_EOF_SHIFT 12
#define U4V_DESC_SOF_SHIFT 16
#define U4V_DESC_PDF_MASK 0xfu
#define U4V_DESC_FLAGS_SHIFT 20
#define U4V_DESC_CRC_ERROR 0x1u	/* RX: frame CRC failed */
#define U4V_DESC_COMPLETED 0x2u	/* set by the DMA engine */
#define U4V_DESC_POSTED 0x4u	/* set by software */
#define U4V_DESC_INTERRUPT 0x8u /* interrupt on completion */

/*
 * The shadow TX ring (safe mode): userspace writes one entry per TX ring
 * position, then rings the doorbell with the new producer index. The
 * kernel copies and validates each entry once and writes the real
 * descriptor with a DMA address it owns.
 */
struct u4v_shadow_desc {
	__u16 slot; /* frame pool slot, < ring depth */
	__u16 len;  /* 1 .. U4V_FRAME_SIZE */
	__u8 sof;   /* PDF, 0 .. 15 */
	__u8 eof;   /* PDF, 0 .. 15 */
	__u16 reserved;
};

/* GET_CONTEXT driver data. */
/*
 * Direct mode: the real descriptor rings and the doorbell pages are
 * mapped writable, no system call per post. Refused with EPERM unless the
 * module was loaded with allow_direct=1 and the caller has CAP_SYS_RAWIO.
 */
#define U4V_UCTX_REQ_DIRECT 0x1u

struct u4v_alloc_ucontext_req {
	__u32 abi_version; /* U4V_ABI_VERSION */
	__s32 event_fd;	   /* eventfd signalled on RX / new channel; -1 none */
	__u32 flags;	   /* U4V_UCTX_REQ_* */
	__u32 reserved;
};

enum u4v_mode {
	U4V_MODE_SAFE = 0,
	U4V_MODE_DIRECT = 1,
};

struct u4v_alloc_ucontext_resp {
	__u32 abi_version;
	__u32 ctx_id;	  /* < U4V_MAX_CTX, unique on the cable */
	__u32 end;	  /* 0 or 1: which end of the cable */
	__u32 ring_depth; /* descriptors per ring, power of two */
	__u32 max_channels;
	__u32 mode; /* enum u4v_mode */
	__aligned_u64 status_off; /* mmap offset of struct u4v_status_page */
	__aligned_u64 status_len;
	__aligned_u64 node_guid;
	__aligned_u64 wire_rate; /* payload bytes/s per direction, 0 = n/a */
	__aligned_u64 ring_rate; /* bytes/s one ring pair moves, 0 = unknown */
};

/* Read-only page per context, updated by the kernel. */
struct u4v_status_page {
	__u32 abi_version;
	__u32 ctx_id;
	__u32 chan_gen;	  /* bumped when a peer creates a channel to us */
	__u32 rx_events;  /* bumped on every RX completion batch */
	__aligned_u64 alive_mask; /* bit per live context on the cable */
	__u32 cable_up;	  /* 0 once the cable went away (unplug, logout) */
	__u32 reserved;
	/*
	 * Bit per remote context whose channels with us are stale (that
	 * context left): nothing sent on them arrives. Cleared when a new
	 * channel (of any lane) to that id is made (a connect, or the peer's).
	 */
	__aligned_u64 stale_mask;
};

/* The mappings of one channel (one context's side of it). */
enum u4v_chan_map {
	U4V_MAP_TX_DESC, /* real TX descriptors: read-only (safe) */
	U4V_MAP_RX_DESC, /* real RX descriptors: read-only (safe) */
	U4V_MAP_SHADOW,	 /* shadow TX ring: read-write (safe only) */
	U4V_MAP_TX_POOL, /* TX frame pool: read-write */
	U4V_MAP_RX_POOL, /* RX frame pool: read-only */
	U4V_MAP_TX_DB,	 /* TX ring register page: direct mode only */
	U4V_MAP_RX_DB,	 /* RX ring register page: direct mode only */
	U4V_MAP_NR,
};

/*
 * Direct mode doorbells, laid out like the NHI's ring registers: one
 * 16-byte slot per ring (HopID) in each page; the dword at offset 8 of the
 * slot is written, never read back.
 *   TX: (producer index & (depth - 1)) << 16, after the descriptors;
 *   RX: (consumer index + depth - 1) & (depth - 1): one past the last
 *       posted descriptor, as the NHI reads it (re-post the descriptor
 *       depth - 1 ahead of each position handed back first).
 * On the soft cable the pages are per-context kernel memory scanned by the
 * soft DMA engine; on a Thunderbolt cable they are the NHI's MMIO pages.
 */
#define U4V_DB_SLOT_SIZE 16u
#define U4V_DB_PROD_CONS 8u
#define U4V_DB_PROD_SHIFT 16

#define U4V_CHAN_LOOPBACK 0x1u /* both contexts on the same end */
#define U4V_CHAN_DIRECT 0x2u   /* direct mode: write descriptors yourself */

struct u4v_chan_info {
	__u32 remote_ctx;
	__u32 depth;
	__u32 flags;	  /* U4V_CHAN_* */
	__u32 tx_hop;	  /* direct mode: slot in the TX_DB page */
	__u32 rx_hop;	  /* direct mode: slot in the RX_DB page */
	__u32 lane;	  /* < U4V_MAX_LANES */
	__aligned_u64 off[U4V_MAP_NR]; /* mmap offsets; 0 = not mapped */
	__aligned_u64 len[U4V_MAP_NR];
};

/* Driver methods on UVERBS_OBJECT_DEVICE. */
enum u4v_methods {
	U4V_METHOD_CHAN_GET = (1U << UVERBS_ID_NS_SHIFT),
	U4V_METHOD_DOORBELL,
	U4V_METHOD_CQ_SIGNAL,
};

/*
 * Channel get: lane LANE (default 0) of the channels to context REMOTE,
 * made (or found) on the way; ENOSPC when the channel budget is spent,
 * EOPNOTSUPP for a lane past 0 within one end (loopback: no ring to add).
 * With REMOTE = U4V_CHAN_NEXT, the next channel of any lane a peer made
 * to us that we have not been told of yet (ENOENT: none); LANE is ignored.
 */
#define U4V_CHAN_NEXT 0xffffffffu

enum u4v_chan_get_attrs {
	U4V_ATTR_CHAN_GET_REMOTE = (1U << UVERBS_ID_NS_SHIFT), /* u32 in */
	U4V_ATTR_CHAN_GET_INFO,	/* struct u4v_chan_info out */
	U4V_ATTR_CHAN_GET_LANE,	/* u32 in, optional */
};

/*
 * Doorbell: for the channel to REMOTE in lane LANE (default 0), post TX
 * ring positions up to TX_PROD (from the shadow ring) and/or give RX
 * positions up to RX_CONS back to the ring. Either may be omitted. All-or-nothing: a bad entry fails the
 * call with EINVAL and posts nothing.
 */
enum u4v_doorbell_attrs {
	U4V_ATTR_DOORBELL_REMOTE = (1U << UVERBS_ID_NS_SHIFT), /* u32 in */
	U4V_ATTR_DOORBELL_TX_PROD, /* u32 in, free-running index */
	U4V_ATTR_DOORBELL_RX_CONS, /* u32 in, free-running index */
	U4V_ATTR_DOORBELL_LANE,	   /* u32 in, optional */
};

/* Raise a completion event on a CQ now (the engine saw a completion). */
enum u4v_cq_signal_attrs {
	U4V_ATTR_CQ_SIGNAL_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
};

#endif
