/* SPDX-License-Identifier: MIT */
/*
 * Software cable: private layout of the shared segment and the process-local
 * handles. Everything in `struct sim_seg` and in the channel slots is shared
 * with processes that may be buggy, hostile or killed at any instruction,
 * and may change at any moment. So every value is read from it once
 * (SIM_ONCE, or a memcpy into private memory) and checked in private
 * memory; the geometry is validated once at map time and only the private
 * copy (struct sim_geom) is used after that; frames are copied out of the
 * RX ring before the engine sees them; no pointer is ever stored there.
 *
 * Segment layout (offsets, never pointers, in shared memory):
 *
 *   [0, chan_off)            struct sim_seg: header, config, mutex, counters,
 *                            wire state, context table
 *   chan_off + i*chan_stride channel slot i, i < nslots
 *                            = max_channels cross-cable + SIM_LOOP_CHANNELS
 *     page 0                 struct sim_chan: per-direction control
 *                            (identity: sim_seg.chans[i])
 *     dir d (d = 0, 1)       at SIM_PAGE + d*dir_size: frames from chan.ctx[d]
 *       tx_desc[depth]       sender's TX ring (16-byte NHI descriptors)
 *       rx_desc[depth]       receiver's RX ring
 *       rx_meta[depth]       sim-private: arrival time, NOWAKE
 *       tx_done[depth]       sim-private: TX completion (departure) time
 *       held[4096]           reorder-fault holding buffer (page aligned)
 *       tx_pool[depth*4096]  sender's frame buffers
 *       rx_pool[depth*4096]  receiver's frame buffers
 *
 * The file is sparse: ring pages are touched when a channel is used and
 * punched out again when it is freed.
 */
#ifndef U4V_SIM_INT_H
#define U4V_SIM_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <usb4verbs/link.h>
#include <usb4verbs/sim.h>

#define SIM_MAGIC 0x31304d49534c3455ull /* "U4LSIM01" little endian */
/* 2: the control-plane lock is a tid, not a mutex; 3: ring rate, lanes;
 * 4: the cover lapses by itself; 5: counter lane_late */
#define SIM_VERSION 5u
#define SIM_PAGE 4096u
#define SIM_CL 64
#define SIM_LOOP_CHANNELS 64u  /* loopback channel slots per cable */
#define SIM_MAX_CHANNELS 1024u /* upper bound for config.max_channels */
#define SIM_MIN_DEPTH 16u
#define SIM_MAX_DEPTH 4096u
/* How long a control-plane operation waits for the segment lock. */
#define SIM_LOCK_WAIT_NS 2000000000ull

/* One read of a shared value (the compiler may not read it again). */
#define SIM_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* NHI descriptor (Linux drivers/thunderbolt/nhi.h, struct ring_desc). */
struct sim_desc {
	uint64_t addr; /* segment offset of the frame buffer */
	uint32_t w;    /* length:12 (0 = 4096) | eof:4 | sof:4 | flags:12 */
	uint32_t time; /* low 32 bits of the arrival time (informational) */
};

#define SIM_D_EOF_SHIFT 12
#define SIM_D_SOF_SHIFT 16
#define SIM_D_FLAGS_SHIFT 20
/* NHI flag values, same numbers the kernel backend reads. */
#define SIM_DF_RX_CRC 0x001u
#define SIM_DF_COMPLETED 0x002u
#define SIM_DF_POSTED 0x004u
#define SIM_DF_INTERRUPT 0x008u

static inline uint32_t sim_d_flags(uint32_t w)
{
	return w >> SIM_D_FLAGS_SHIFT;
}
static inline uint32_t sim_d_len(uint32_t w)
{
	uint32_t l = w & 0xfffu;
	return l ? l : U4L_FRAME_MAX;
}
static inline uint32_t sim_d_pdf(uint32_t w)
{
	return (w >> SIM_D_EOF_SHIFT) & 0xfu;
}
static inline uint32_t sim_d_make(uint32_t len, uint32_t pdf, uint32_t flags)
{
	return (len & 0xfffu) | (pdf & 0xfu) << SIM_D_EOF_SHIFT |
	       (pdf & 0xfu) << SIM_D_SOF_SHIFT |
	       (flags & 0xfffu) << SIM_D_FLAGS_SHIFT;
}

/* Sim-private per-RX-slot metadata, parallel to rx_desc. */
struct sim_meta {
	uint64_t arrival_ns;
	uint32_t flags; /* U4L_RX_NOWAKE */
	uint32_t pad;
};

enum { SIM_CTX_FREE = 0, SIM_CTX_ALIVE = 1 };

struct sim_ctx_slot {
	uint32_t state;	     /* SIM_CTX_* */
	uint32_t end;	     /* 0 or 1 */
	int32_t pid;	     /* owner, for dead-slot reclamation */
	uint32_t gen;	     /* bumped on every attach and detach */
	uint32_t wake;	     /* futex word: bumped on delivery/accept/kick */
	uint32_t sleepers;   /* threads of this context inside wait() */
	uint32_t accept_gen; /* bumped when a peer creates a channel to us */
	uint32_t ctrl_sleepers; /* those of them woken by ACK / NAK frames */
	uint64_t cover_all_until;  /* rx_cover(): no frame wakes before */
	uint64_t cover_ctrl_until; /* rx_cover(): no ACK / NAK wakes before */
	uint32_t pad[4];
} __attribute__((aligned(SIM_CL)));

/* Per cable direction (indexed by the sending end). */
struct sim_wire {
	uint64_t free_at; /* ns when the wire is free again (CAS) */
	uint64_t prng;	  /* splitmix64 state (atomic fetch-add) */
} __attribute__((aligned(SIM_CL)));

enum { SIM_CHAN_ACTIVE = 1u };

/*
 * Channel identity, in the header so that scanning never touches ring pages.
 * Direction d carries frames from ctx[d] to ctx[d ^ 1]; ctx[0] created it.
 */
struct sim_chan_ent {
	uint32_t gs;		 /* gen << 1 | SIM_CHAN_ACTIVE */
	uint32_t accept_pending; /* ctx[1] has not seen it yet */
	uint8_t ctx[2];
	uint8_t end[2];
	uint8_t
	    loop; /* both on one end: no wire model, no faults, no counters */
	/*
	 * One side has left; the other may still drain the frames already in
	 * its RX ring (as from real DMA'd memory). Sends go nowhere. Freed
	 * when the survivor leaves too.
	 */
	uint8_t orphan;
	uint8_t lane; /* which ring pair between ctx[0] and ctx[1] */
	uint8_t pad;
};

#define SIM_NSLOTS_MAX (SIM_MAX_CHANNELS + SIM_LOOP_CHANNELS)

struct sim_seg {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size; /* sizeof(struct sim_seg) of the creator */
	uint64_t seg_size;
	uint64_t chan_off;
	uint64_t chan_stride;
	uint64_t dir_size;
	uint32_t ring_depth;
	uint32_t max_channels;
	uint32_t nslots;
	uint32_t cross_used; /* under lock */
	uint32_t loop_used;  /* under lock */
	uint32_t chan_cursor;
	uint32_t cfg_seq; /* seqlock over cfg: odd while being written */
	uint32_t pad0;
	struct u4l_sim_config cfg;
	/* control plane: tid of the holder, 0 when free (sim_lock()) */
	uint32_t lock __attribute__((aligned(SIM_CL)));
	struct u4l_counters counters[2] __attribute__((aligned(SIM_CL)));
	struct sim_wire wire[2];
	struct sim_ctx_slot ctx[U4L_MAX_CTX];
	struct sim_chan_ent chans[SIM_NSLOTS_MAX];
};

/* Per-direction control block, one cache line per writer. */
struct sim_dir_ctl {
	/* written by the sender */
	uint32_t tx_prod; /* descriptors handed over by tx_doorbell() */
	uint8_t pad0[SIM_CL - 4];
	/* the "DMA engine": written only with `lock` held */
	uint32_t lock;
	uint32_t tx_moved; /* next TX descriptor to move */
	uint32_t rx_fill;  /* next RX slot to fill */
	uint32_t run_seq;  /* engine runs */
	uint32_t held;	   /* 1: reorder-held frame in held[] */
	uint32_t held_run; /* run_seq when it was held */
	uint32_t held_w;   /* descriptor word (length, pdf, flags) */
	uint32_t held_mflags;
	uint64_t held_arrival;
	uint64_t ring_free_at; /* the ring is free again (ring rate) */
	uint8_t pad1[SIM_CL - 48];
	uint32_t need; /* someone wants the engine to run again */
	uint8_t pad2[SIM_CL - 4];
	uint32_t backlog; /* frames wait for RX slots: receiver should pump */
	uint8_t pad3[SIM_CL - 4];
};

/* Page 0 of a channel slot. */
struct sim_chan {
	struct sim_dir_ctl dir[2];
};

/*
 * The segment's geometry, computed from the validated ring depth and
 * channel budget and checked against the header once, at map time. Only
 * this private copy is used afterwards.
 */
struct sim_geom {
	uint64_t chan_off, chan_stride, dir_size, seg_size;
	uint32_t depth, max_channels, nslots;
};

void sim_geom_init(struct sim_geom *g, uint32_t depth, uint32_t max_channels);

/* A mapped segment, as this process knows it. */
struct sim_map {
	struct sim_seg *seg;
	size_t len; /* mapped bytes: the header only, or seg_size */
	int fd;
	struct sim_geom g;
};

static inline uint64_t sim_slot_off(const struct sim_geom *g, uint32_t idx)
{
	return g->chan_off + (uint64_t)idx * g->chan_stride;
}

/* A snapshot of the live-changeable config, refreshed through the seqlock. */
struct sim_snap {
	uint32_t seq;
	uint32_t latency_ns;
	uint32_t e2e;
	uint32_t any_fault[2];
	uint64_t rate_bps;
	uint64_t ring_rate_bps;
	struct u4l_sim_faults faults[2];
};
void sim_snap_refresh(struct sim_seg *s, struct sim_snap *snap);

struct sim_dev;

/* One direction of a channel as seen from one process. */
struct sim_ring {
	struct sim_dir_ctl *ctl;
	struct sim_desc *tx_desc, *rx_desc;
	struct sim_meta *rx_meta;
	uint64_t *tx_done;
	uint8_t *held, *tx_pool, *rx_pool;
	uint64_t tx_pool_off, rx_pool_off; /* segment offsets for desc addr */
};

/* Process-local channel handle. */
struct sim_chan_h {
	struct sim_dev *dev;
	struct sim_chan *c;
	struct sim_chan_ent *ent;
	uint32_t idx, gs, remote, lane, txd, rxd;
	uint32_t rcv_ctx[2], snd_end[2], rcv_end[2]; /* by direction */
	uint32_t depth, mask;
	bool loop, self;
	uint32_t dead; /* set once the shared slot was freed or reused */
	struct sim_ring ring[2];
	/* TX side (engine TX lock) */
	uint32_t tx_prod, tx_reap; /* tx_reap read by wait(): atomic */
	uint32_t tx_full; /* tx_slot() found no slot: wait() watches TX */
	uint32_t tx_bound; /* slots used at most (tx_bound()); read by wait() */
	uint64_t tx_now;
	struct sim_snap tx_snap;
	/* RX side (engine RX lock) */
	uint32_t rx_cons; /* read by wait(): atomic */
	uint64_t rx_now;
	struct sim_snap rx_snap;
	uint8_t *scratch; /* TX buffer of a dead channel: frames go nowhere */
	uint8_t *rx_copy; /* the headers rx_peek() gave, safe from the peer */
	struct sim_chan_h *next_dead;
};

/* Where the handle of lane `lane` to context `remote` is kept. */
static inline uint32_t sim_handle_ix(uint32_t remote, uint32_t lane)
{
	return lane * U4L_MAX_CTX + remote;
}
#define SIM_HANDLES (U4L_MAX_LANES * U4L_MAX_CTX)

struct sim_dev {
	struct u4l_dev base;
	struct sim_map m;
	struct sim_seg *seg; /* m.seg */
	uint32_t id;
	uint32_t gen;	      /* sim_ctx_slot.gen of our attachment */
	pthread_mutex_t lock; /* chan_get / chan_accept / handle table */
	/* by remote ctx and lane (sim_handle()); atomic loads */
	struct sim_chan_h *handles[U4L_MAX_LANES * U4L_MAX_CTX];
	struct sim_chan_h *graveyard; /* dead handles, freed at close */
	uint32_t accept_seen;
	uint32_t kicked;
};

/* sim_seg.c */
int sim_map(const char *shm_name, bool whole, struct sim_map *m);
void sim_unmap(struct sim_map *m);
bool sim_pid_alive(uint32_t pid);
/* 0, or -ETIMEDOUT after SIM_LOCK_WAIT_NS held by a live other */
int sim_lock(struct sim_seg *s);
void sim_unlock(struct sim_seg *s);
void sim_punch(struct sim_map *m, uint64_t off, uint64_t len);
void sim_chan_free_locked(struct sim_map *m, uint32_t idx);
void sim_ctx_chans_free_locked(struct sim_map *m, uint32_t ctx);
void sim_ctx_free_locked(struct sim_map *m, uint32_t ctx);

/* A time further ahead than this was written by a corrupted peer. */
#define SIM_FUTURE_MAX_NS 60000000000ull

/*
 * An application's cover of its context's frames (rx_cover) in force at
 * now: its end, or 0. One further ahead than any poll sets is corrupt.
 */
#define SIM_COVER_MAX_NS 1000000000ull
static inline uint64_t sim_cover_until(const uint64_t *field, uint64_t now)
{
	uint64_t until = __atomic_load_n(field, __ATOMIC_SEQ_CST);

	return until > now && until - now <= SIM_COVER_MAX_NS ? until : 0;
}

/* sim_dma.c: move direction d's frames (doorbell: a sender's). */
void sim_engine_run(struct sim_chan_h *h, uint32_t d, struct sim_snap *snap,
		    bool doorbell);

/* sim_ring.c */
void *sim_tx_slot(struct u4l_chan *chan);
void sim_tx_post(struct u4l_chan *chan, uint32_t len, enum u4l_pdf pdf);
void sim_tx_doorbell(struct u4l_chan *chan);
uint32_t sim_tx_space(struct u4l_chan *chan);
void sim_tx_bound(struct u4l_chan *chan, uint32_t frames);
bool sim_chan_gone(struct u4l_chan *chan);
int sim_rx_peek(struct u4l_chan *chan, struct u4l_rx_frame *frame);
void sim_rx_release(struct u4l_chan *chan);
void sim_wire_due(struct u4l_chan *chan, uint64_t *rx, uint64_t *tx);
void sim_ring_layout(const struct sim_map *m, uint32_t idx, uint32_t d,
		     struct sim_ring *r);
void sim_chan_init_rings(const struct sim_map *m, uint32_t idx);
bool sim_chan_dead(struct sim_chan_h *h);
/* Dead, or the peer has left: nothing can be sent on it. */
bool sim_chan_tx_dead(struct sim_chan_h *h);
/*
 * For wait(): ready now (true), else *next = earliest future event (ns).
 * rx: the frames it receives count (else only its TX side's events).
 */
bool sim_chan_ready(struct sim_chan_h *h, uint64_t now, uint64_t *next,
		    bool rx);
void sim_wake_ctx(struct sim_seg *s, uint32_t ctx);

/* sim_seg.c: deterministic per-direction PRNG (splitmix64) */
uint64_t sim_rand(struct sim_seg *s, uint32_t end);
static inline bool sim_chance(struct sim_seg *s, uint32_t end, double p)
{
	if (!(p > 0.0))
		return false;
	if (p >= 1.0)
		return true;
	return (double)(sim_rand(s, end) >> 11) * 0x1.0p-53 < p;
}

#endif
