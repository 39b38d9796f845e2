/* SPDX-License-Identifier: MIT */
/*
 * Engine internals shared by the layers (qp, rel, frag, mr, cq). Nothing
 * here is visible to the provider.
 *
 * Locking, in acquisition order:
 *   ctx->progress_lock  one thread at a time runs RX / timers / pending TX
 *                       (try-locked; destroy paths take it fully)
 *   qp->lock            the QP's send/receive state
 *   srq->lock, peer->tx_lock, cq->lock, mw_lock
 *                       leaves: never take another lock (dereg_mr takes
 *                       mw_lock inside obj_lock)
 * post_send takes qp->lock then peer->tx_lock; it never needs progress_lock.
 */
#ifndef U4V_ENGINE_INT_H
#define U4V_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <usb4verbs/engine.h>
#include <usb4verbs/link.h>

#include "frag/frag.h"
#include "rel/holes.h"
#include "wire/opcode.h"
#include "wire/wire.h"

#define container_of(ptr, type, member)                                       \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define U4V_QPN_IDX_BITS 16
#define U4V_QPN_IDX_MASK ((1u << U4V_QPN_IDX_BITS) - 1)
#define U4V_WINDOW 512u	     /* RC frames in flight per QP */
#define U4V_RX_BUDGET 64u    /* frames taken from one channel per pass */
#define U4V_UD_PARTIALS 8u   /* UD messages in reassembly per QP */
#define U4V_DUP_ACK_THRESH 3 /* duplicate ACKs that trigger a resend */
#define U4V_ACK_EVERY 32u    /* frames between coalesced ACKs */
#define U4V_BUSY_WAITS 16u   /* ACK timeouts not counted in a row (req.c) */
/* A channel's TX queue: this much of the wire, at least this many frames */
#define U4V_TX_QUEUE_NS 100000ull
#define U4V_TX_QUEUE_MIN 16u
/*
 * Response jobs a responder keeps: max_dest_rd_atomic new READs and
 * atomics, plus replays of responses a requester asks for again: one per
 * hole it tracks, one per READ whose request or tail it sends again
 * (rel/holes.h).
 */
#define U4V_RESP_REPLAYS (U4V_HOLES + U4V_MAX_QP_RD_ATOM)
#define U4V_RESP_JOBS (U4V_MAX_QP_RD_ATOM + U4V_RESP_REPLAYS)

struct u4v_qp;

/* A frame taken off one lane's RX ring, not yet dispatched (lanes.c). */
/*
 * Where a ring's rate is unknown (a kernel device), a peer measures what its
 * lanes move while QPs wait for TX space, and takes another lane while that
 * helps (lanes.c). Under progress_lock.
 */
struct u4v_lane_meter {
	uint64_t since;	  /* this window began */
	uint64_t bytes;	  /* tx_bytes then */
	uint32_t samples; /* passes in the window ... */
	uint32_t backlogged; /* ... that found QPs waiting for TX space */
	uint64_t last;	  /* the last pass */
	uint64_t dry;	  /* time the rings may have run dry in it (ns) */
	uint64_t rate_before; /* bytes/s before the last lane (0: none yet) */
	uint64_t rate_best;   /* the best window voting for a lane since */
	int votes; /* windows in a row for (> 0) or against (< 0) a lane */
	bool settled;	  /* no more lanes: they stopped helping, or none left */
	bool grow;	  /* a lane is wanted: u4v_lanes_grow() takes it */
};

struct u4v_lane_head {
	struct u4l_chan *chan; /* the lane it was peeked on */
	struct u4l_rx_frame f;
	uint16_t seq; /* its lane sequence */
	bool held;
};

/* The channel to one remote context, as this context uses it. */
struct u4v_peer {
	struct u4l_chan *chan; /* lane 0 */
	/*
	 * Every lane (channel) to the remote context, lanes[0] == chan; the
	 * others NULL until taken (u4v_lanes_open) or accepted. `striped`
	 * once any lane past the first is there (atomic loads).
	 */
	struct u4l_chan *lanes[U4L_MAX_LANES];
	bool striped;
	const struct u4l_ops *ops;
	struct u4l_counters *cnt;
	pthread_mutex_t tx_lock;
	uint32_t tx_posted;	   /* frames posted since the last doorbell */
	struct u4l_chan *tx_chan; /* ... on this lane */
	uint32_t tx_next;   /* the lane the next frame tries first */
	uint16_t tx_seq;    /* lane sequence of the next frame (tx_lock) */
	bool tx_msg_open;   /* a UC / UD message is part sent: same lane */
	/* QPs waiting for TX space on this channel */
	struct u4v_qp *pending_head, *pending_tail;
	uint64_t rx_seen;  /* frames taken from the channel (progress_lock) */
	uint64_t tx_total; /* frames handed to the TX ring (tx_lock) */
	uint32_t tx_depth; /* the most TX slots ever found free: the ring */
	/* striped RX, in lane sequence order (progress_lock; lanes.c) */
	struct u4v_lane_head rx_head[U4L_MAX_LANES];
	uint16_t rx_seq;	/* the next lane sequence expected */
	bool rx_seq_known;
	uint64_t rx_wait_since; /* waiting for rx_seq on another lane */
	uint64_t rx_wait_ns;	/* the lane wait in force (0: the least) */
	uint16_t rx_gave_up;	/* the last sequence a wait gave up on ... */
	bool rx_gave_up_open;	/* ... and it has not come since */
	bool rx_msg_open;	/* a UC / UD message is part taken */
	uint64_t tx_bytes; /* frame bytes handed to the TX rings (tx_lock) */
	uint32_t lanes_want; /* lanes it takes (0: not yet decided) */
	struct u4v_lane_meter meter; /* lanes.c: does another lane help? */
};

struct u4v_ctx {
	struct u4l_dev *link;
	const struct u4l_ops *ops;
	uint32_t ctx_id;
	uint64_t node_guid;
	uint32_t gid_tbl_len;
	int async_fd;
	struct u4l_counters *cnt;

	pthread_mutex_t progress_lock;
	pthread_mutex_t obj_lock; /* object tables and counts */

	struct u4v_peer peers[U4L_MAX_CTX];

	struct u4v_qp **qps; /* by QPN index */
	uint32_t nqps_slots;
	uint32_t nqps;
	uint32_t ncq, npd, nsrq, nmr, nah, nmw;

	/* memory keys (U4V_KEY_*): MRs and MWs by index */
	struct u4v_mr **mrs;
	uint32_t nmr_slots, mr_hint;
	uint64_t key_seed;
	struct u4v_mw **mws;
	uint32_t mw_hint;
	/* memory windows' bound state and MRs' window counts; a leaf, or
	 * taken inside obj_lock (deregistration) */
	pthread_mutex_t mw_lock;

	/* progress thread */
	pthread_t thread;
	bool thread_running;
	bool thread_disabled;
	uint64_t last_timer_scan;
	atomic_bool stop;
	_Atomic uint64_t app_poll_ns; /* last time an application polled */
	atomic_uint held_qps;	      /* QPs holding frames for a receive */
	atomic_bool app_called;	      /* a verbs call since the thread looked */
	atomic_bool rx_covered;	      /* link's rx_cover(): all, as last set */
	_Atomic uint64_t cover_until; /* link's rx_cover(): until, as last set */
	atomic_uint nap_seq;	      /* futex: ends the thread's nap */
	_Atomic uint64_t thread_sleeps_until; /* its sleep's end (0: awake) */
	atomic_int napping;
	uint64_t next_timer_ns;	      /* earliest QP timer deadline */
	uint64_t ack_hold_due;	      /* earliest held ACK's (0: none) */
	atomic_uint acks_held;	      /* QPs whose ack_due is set */
	uint64_t lane_wait_due;	      /* a lane wait's end (0: none) */
	uint64_t spin_ns;	      /* thread polls this long after a frame */
	/* last time an application armed a CQ (0: never); rarely written */
	_Atomic uint64_t app_armed_ns;
	uint32_t lanes_forced;	      /* USB4V_LANES: lanes per peer (0: rates) */
	bool lanes_auto;	      /* USB4V_LANES=auto: measure, whatever the rates */
	bool lanes_grow;	      /* some peer's meter.grow is set */
};

struct u4v_pd {
	struct u4v_ctx *ctx;
	atomic_int refs; /* MRs, QPs, SRQs, AHs using it */
};

/*
 * A memory key: the consumer-owned key in the low 8 bits (what
 * ibv_inc_rkey steps), the object's index above it, a bit that says memory
 * window, and a random tag fixed per object.
 */
#define U4V_KEY_BITS 8
#define U4V_KEY_MASK 0xffu
#define U4V_KEY_INDEX_MASK 0x1ffffu /* after >> U4V_KEY_BITS: 1..65536 */
#define U4V_KEY_MW (1u << 25)
#define U4V_KEY_TAG_MASK 0xfc000000u
static inline uint32_t u4v_key_index(uint32_t key)
{
	return (key >> U4V_KEY_BITS) & U4V_KEY_INDEX_MASK;
}

/* Is [addr, addr + len) inside [start, start + length)? (no overflow) */
static inline bool u4v_in_range(uint64_t start, uint64_t length,
				uint64_t addr, uint64_t len)
{
	return addr >= start && len <= length && addr - start <= length - len;
}

struct u4v_mr {
	struct u4v_pd *pd;
	uint64_t addr;
	uint64_t length;
	int access;
	uint32_t lkey, rkey;
	uint32_t index;
	uint32_t nmw; /* windows bound to it (under ctx->mw_lock) */
};

/* A memory window; the provider hands &mw->ibv to the application. */
struct u4v_mw {
	struct ibv_mw ibv; /* must stay first: found again from ibv_mw */
	struct u4v_pd *pd;
	enum ibv_mw_type type;
	uint32_t index;
	uint32_t key_base; /* its keys without the key bits: fixed */
	/* under ctx->mw_lock */
	uint32_t rkey;
	bool bound;
	struct u4v_mr *mr; /* counted in mr->nmw while bound */
	uint64_t addr, length;
	int access;
	uint32_t qpn; /* type 2: the QP it was bound through */
};

struct u4v_cq {
	struct u4v_ctx *ctx;
	pthread_mutex_t lock;
	struct ibv_wc *ring;
	struct u4v_cq_ts *ts; /* beside ring, when timestamps were asked */
	unsigned int ts_clocks;
	uint32_t size; /* entries the ring holds */
	uint32_t head, count;
	bool overflowed;
	int armed; /* 0, IBV_... 1 = next, 2 = solicited only */
	u4v_cq_event_fn event_fn;
	void *event_arg;
	uint64_t handle;
	atomic_int refs; /* QPs using it */
};

/* A posted receive. */
struct u4v_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint64_t length; /* sum of the SGEs */
	struct ibv_sge *sge;
};

struct u4v_rq {
	struct u4v_rwqe *ring;
	struct ibv_sge *sges;
	uint32_t size, max_sge;
	uint32_t head, count;
};

struct u4v_srq {
	struct u4v_pd *pd;
	pthread_mutex_t lock;
	struct u4v_rq rq;
	uint32_t limit; /* armed when nonzero */
	uint64_t handle;
	atomic_int refs;
};

enum u4v_wqe_state {
	U4V_WQE_POSTED = 0, /* frames not all sent yet */
	U4V_WQE_SENT,	    /* all frames sent, waiting for ACK / response */
	U4V_WQE_DONE,	    /* completed, waiting to be retired in order */
};

/* A posted send. */
struct u4v_swqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	int send_flags;
	uint32_t imm;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare, swap_add; /* as the ATOMETH carries them */
	uint32_t remote_qpn, remote_qkey, remote_ctx;
	const struct u4v_ah *ah; /* UD: lives until the completion */
	uint64_t length;
	uint32_t num_sge;
	struct ibv_sge *sge;	/* points into the QP's SGE array */
	uint8_t *inline_data;	/* non-NULL: payload copied at post time */
	/* BIND_MW: the window's key (any key bits) and the bind; rkey above
	 * is the new key (LOCAL_INV, SEND_WITH_INV: the key to invalidate) */
	uint32_t bind_mw_key, bind_lkey;
	uint64_t bind_addr, bind_len;
	int bind_access;
	/* requester state */
	enum u4v_wqe_state state;
	enum ibv_wc_status status;
	uint32_t nframes;	/* frames the requester sends */
	uint32_t npsn;		/* PSNs it spans (READ: responses) */
	bool psn_assigned;
	uint32_t first_psn;
	uint32_t next_frame;	/* next frame to send */
	uint32_t resp_placed;	/* READ / atomic responses placed */
};

struct u4v_qp {
	struct u4v_ctx *ctx;
	struct u4v_pd *pd;
	pthread_mutex_t lock;
	enum ibv_qp_type type;
	enum ibv_qp_state state;
	uint32_t qpn;
	uint64_t handle;
	struct u4v_cq *scq, *rcq;
	struct u4v_srq *srq;
	struct ibv_qp_cap cap;
	int sq_sig_all;

	/* attributes */
	int access;
	uint16_t pkey_index;
	uint8_t port;
	uint32_t qkey;
	enum ibv_mtu path_mtu;
	uint32_t dest_qpn;
	uint32_t remote_ctx;
	struct ibv_ah_attr ah_attr;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t sq_draining;
	struct u4v_peer *peer; /* RC/UC after RTR */

	/* send queue */
	struct u4v_swqe *sq;
	struct ibv_sge *sq_sges;
	uint8_t *sq_inline;
	uint32_t sq_size; /* a power of two */
	/* free-running indices (slot = index & (sq_size - 1)) */
	uint32_t sq_head; /* oldest not retired */
	uint32_t sq_send; /* next WQE with frames to send */
	uint32_t sq_tail; /* next free */
	uint32_t sq_count;

	/* requester (RC: reliability; UC/UD: PSNs only) */
	uint32_t sq_psn;      /* next PSN to assign */
	/*
	 * Last PSN acknowledged (sq_psn - 1 at start), by an ACK or by a
	 * response: every READ / atomic response up to it has been sent, so
	 * the ones that did not arrive are holes.
	 */
	uint32_t acked_psn;
	/*
	 * READ / atomic WQEs sent and not yet retired. Retired, not merely
	 * done: the responder remembers the last max_dest_rd_atomic of them,
	 * and an older one that is still missing a response must be among
	 * those for its holes to be served again.
	 */
	uint32_t rd_pending;
	uint32_t retries_left, rnr_left;
	uint64_t retry_deadline; /* retransmit when passed */
	uint64_t probe_deadline; /* resend the oldest frame when passed */
	uint64_t tmo_rx_mark;	 /* peer->rx_seen when the timer started */
	uint32_t busy_waits;	 /* timeouts not counted: the peer was busy */
	uint64_t tx_last;	 /* peer->tx_total after its last request */
	uint64_t rnr_deadline;	 /* hold sending until passed */
	int dup_acks;
	uint32_t resend_psn;  /* fast-recovery frame, or resend_none */
	bool resend_one;
	struct u4v_holes rd_holes; /* READ / atomic responses lost */

	/* receive queue and responder */
	struct u4v_rq rq;
	uint32_t epsn;	      /* next expected request PSN */
	uint32_t msn;
	bool ack_pending;
	uint64_t ack_due;     /* a held ACK goes out by then (0: none held) */
	uint32_t unacked;     /* frames executed since the last ACK */
	/* behind a hole (qp/ahead.c) */
	bool nak_sent;	      /* NAK-seq sent for epsn */
	uint8_t naks;	      /* NAK-seqs sent for it */
	uint64_t nak_due;     /* send it again then, while the hole stays */
	/* the last RDMA WRITE whose FIRST frame came ahead of the hole */
	struct u4v_wr_ahead {
		uint32_t psn, rkey;
		uint64_t va, len;
		bool valid;
	} wr_ahead;
	uint8_t pending_nak;  /* syndrome to send, 0 = none */
	uint32_t pending_nak_psn;
	/* message being received */
	bool in_msg;
	bool uc_drop;	      /* UC: discard until the next FIRST */
	struct u4v_rwqe cur_rwqe;
	struct ibv_sge cur_sges[U4V_MAX_SGE];
	bool have_rwqe;
	uint64_t msg_off;
	struct u4v_mr *wr_mr; /* RDMA WRITE in progress (never dereferenced) */
	uint32_t wr_rkey;     /* checked again for every frame */
	uint64_t wr_va, wr_len;
	struct u4f_reorder req_reorder;
	/*
	 * READ and atomic responses to send, in order: replays first (in the
	 * order they were asked for), then new requests in PSN order. An
	 * atomic response waits its turn like a READ's: a response tells the
	 * requester that every response before it was sent.
	 */
	struct u4v_resp_job {
		uint32_t psn;	  /* first response PSN */
		uint32_t nframes;
		uint32_t next;	  /* next frame to send */
		uint32_t rkey;	  /* checked again for every frame */
		uint64_t va, len;
		bool atomic;	  /* one ATOMIC_ACK carrying orig */
		uint64_t orig;
	} *jobs;
	uint32_t njobs, nreplays;
	/* the last READs executed, to serve them again (rd_hist_next % N) */
	struct u4v_read_rec {
		uint32_t psn, nframes;
		uint32_t rkey;
		bool valid;
		uint64_t va, len;
	} *rd_hist;
	uint32_t rd_hist_next;
	/* atomics already executed, for replay on duplicates */
	struct u4v_atomic_done {
		uint32_t psn;
		bool valid;
		uint64_t orig;
	} *atomics;
	uint32_t atomic_next;

	/* UD reassembly of two-frame messages, per source */
	struct u4v_ud_partial {
		bool used;
		uint32_t src_qpn, next_psn;
		uint32_t len;
		uint64_t stamp;
		uint8_t *buf;
	} ud_part[U4V_UD_PARTIALS];

	/* TX scheduling */
	bool on_pending;
	bool tx_turn; /* push_pending() runs it: it may pass those waiting */
	struct u4v_qp *pending_next;
	bool in_table;
	bool in_batch; /* queued for a coalesced ACK */
	/* UC/UD frames waiting for a receive WQE (qp/hold.c) */
	struct u4v_held_frame {
		void *frame;
		uint32_t len;
	} *held;
	uint32_t held_head, held_count;
	uint64_t held_since;
};

/* READ and atomics: the responder answers with data (RC only). */
/* Does op wait for a response (READ, atomics: max_rd_atomic applies)? */
static inline bool u4v_rd_atomic(enum ibv_wr_opcode op)
{
	return u4w_wr_flags(op) & U4W_WRF_RESPONSE;
}

static inline struct u4v_swqe *u4v_sq_at(struct u4v_qp *qp, uint32_t idx)
{
	return &qp->sq[idx & (qp->sq_size - 1)];
}

/* The PD a QP's receive buffers belong to: its SRQ's, or its own. */
static inline struct u4v_pd *u4v_rq_pd(const struct u4v_qp *qp)
{
	return qp->srq ? qp->srq->pd : qp->pd;
}

/* ctx.c */
uint64_t u4v_now(void);
/* Nanoseconds of a clock (CLOCK_MONOTONIC_RAW: the device clock). */
uint64_t u4v_clock_ns(clockid_t clock);
void u4v_mutex_init(pthread_mutex_t *m);
/* Count one more of a limited object (PDs, CQs, ...); false at the limit. */
bool u4v_quota_take(struct u4v_ctx *ctx, uint32_t *count, uint32_t max);
void u4v_quota_give(struct u4v_ctx *ctx, uint32_t *count);
struct u4v_peer *u4v_peer_get(struct u4v_ctx *ctx, uint32_t remote_ctx,
			      bool refresh, int *err);
struct u4v_peer *u4v_peer_get_ud(struct u4v_ctx *ctx, uint32_t remote_ctx,
				 int *err);
void u4v_peer_schedule(struct u4v_peer *peer, struct u4v_qp *qp);
void u4v_async_event(struct u4v_ctx *ctx, uint64_t element,
		     enum ibv_event_type type);
static inline uint32_t u4v_qpn_ctx(uint32_t qpn)
{
	return (qpn >> U4V_QPN_IDX_BITS) - 1;
}

/* mr.c */
struct u4v_mr *u4v_mr_lookup(struct u4v_ctx *ctx, uint32_t key);
/* The GRH an AH puts on a UD frame (flag and GRH fields). */
void u4v_ah_grh(const struct u4v_ah *ah, struct u4w_hdr *h);
uint32_t u4v_key_random(struct u4v_ctx *ctx);
/*
 * A free slot of a key table of max entries (index 0 unused), searched from
 * after the last one taken; 0 when it is full. Caller holds obj_lock.
 */
#define u4v_key_slot(table, max, hint)                                         \
	({                                                                     \
		uint32_t n_, idx_ = *(hint), found_ = 0;                       \
		for (n_ = 0; n_ < (max) && !found_; n_++) {                    \
			idx_ = idx_ % (max) + 1;                               \
			if (!(table)[idx_])                                    \
				found_ = *(hint) = idx_;                       \
		}                                                              \
		found_;                                                        \
	})
/* Check [addr, addr+len) against an MR for access; 0 or an ibv_wc_status. */
enum ibv_wc_status u4v_mr_check_local(struct u4v_pd *pd, uint32_t lkey,
				      uint64_t addr, uint64_t len,
				      int access);
/*
 * Check a remote access through rkey (an MR's or a memory window's) by qp
 * to [va, va+len); out (may be NULL) gets the MR behind the key.
 */
enum ibv_wc_status u4v_mr_check_remote(struct u4v_qp *qp, uint32_t rkey,
				       uint64_t va, uint64_t len, int access,
				       struct u4v_mr **out);
/*
 * Write len bytes at addr of an MR (already checked for the access) or
 * make an atomic there; an ODP MR's memory is copied without faulting.
 * IBV_WC_SUCCESS or IBV_WC_REM_ACCESS_ERR (the memory is not there).
 */
enum ibv_wc_status u4v_mr_write(const struct u4v_mr *mr, uint64_t addr,
				const void *src, uint32_t len);
enum ibv_wc_status u4v_mr_atomic(const struct u4v_mr *mr, uint64_t addr,
				 bool cmp_swap, uint64_t compare,
				 uint64_t swap_add, uint64_t *orig);
/* odp.c */
bool u4v_odp_available(void); /* copies that cannot fault work here */
/* mr/pin.c: could a kernel device pin the range for this access? */
bool u4v_range_pinnable(uint64_t addr, uint64_t len, int access);
bool u4v_odp_atomics(void);   /* and pages can be populated writable */
int u4v_odp_read(void *dst, uint64_t src, size_t len);	      /* 0/EFAULT */
int u4v_odp_write(uint64_t dst, const void *src, size_t len); /* 0/EFAULT */
int u4v_odp_prepare_atomic(uint64_t addr);		      /* 0/EFAULT */
/* mw.c */
enum ibv_wc_status u4v_mw_check_remote(struct u4v_qp *qp, uint32_t rkey,
				       uint64_t va, uint64_t len, int access,
				       struct u4v_mr **out);
struct u4v_swqe;
/* Execute a BIND_MW or LOCAL_INV WQE; its completion status. */
enum ibv_wc_status u4v_mw_local_op(struct u4v_qp *qp,
				   const struct u4v_swqe *w);
/* SEND_WITH_INV at the responder: invalidate rkey for qp; 0 or EINVAL. */
int u4v_mw_remote_invalidate(struct u4v_qp *qp, uint32_t rkey);
/* A QP goes away: its type 2 windows are invalidated. */
void u4v_mw_qp_gone(struct u4v_qp *qp);
/*
 * Copy between an SGE list of pd's MRs (from byte off) and a flat buffer,
 * checking each SGE as it is reached. IBV_WC_SUCCESS or
 * IBV_WC_LOC_PROT_ERR. Caller holds the QP's lock.
 */
enum ibv_wc_status u4v_sge_copy_out(struct u4v_pd *pd,
				    const struct ibv_sge *sge, uint32_t nsge,
				    uint64_t off, void *dst, uint32_t len);
enum ibv_wc_status u4v_sge_copy_in(struct u4v_pd *pd,
				   const struct ibv_sge *sge, uint32_t nsge,
				   uint64_t off, const void *src, uint32_t len);

/* cq.c */
/* Add a completion; false if the CQ overflowed (reported by the CQ). */
bool u4v_cq_push(struct u4v_cq *cq, const struct ibv_wc *wc, bool solicited);
/* Drop the completions of QP qpn not polled yet (it went to RESET). */
void u4v_cq_clean(struct u4v_cq *cq, uint32_t qpn);

/* srq.c / rq */
int u4v_rq_init(struct u4v_rq *rq, uint32_t size, uint32_t max_sge);
void u4v_rq_destroy(struct u4v_rq *rq);
int u4v_rq_post(struct u4v_rq *rq, struct ibv_recv_wr *wr);
bool u4v_rq_take(struct u4v_rq *rq, struct u4v_rwqe *out,
		 struct ibv_sge *sges);
bool u4v_srq_take(struct u4v_srq *srq, struct u4v_rwqe *out,
		  struct ibv_sge *sges);

/* qp.c */
/* The QP is in ERR (its completion with error may follow); no flush yet. */
void u4v_qp_enter_error(struct u4v_qp *qp);
/* u4v_qp_enter_error, then every outstanding WR completes flushed. */
void u4v_qp_to_error(struct u4v_qp *qp);
void u4v_qp_flush(struct u4v_qp *qp);

/* qp/req.c: requester */
void u4v_req_push(struct u4v_qp *qp); /* send what the window allows */
void u4v_req_timer(struct u4v_qp *qp, uint64_t now);
/* (Re)start the retransmit timer and the loss probe. */
void u4v_req_arm_timer(struct u4v_qp *qp, uint64_t now);
struct u4v_swqe *u4v_req_find(struct u4v_qp *qp, uint32_t psn);
bool u4v_req_resend(struct u4v_qp *qp, uint32_t psn); /* holds tx_lock */
void u4v_req_rewind(struct u4v_qp *qp, uint32_t psn);
/* The first PSN whose ACK or response is missing (probe, retransmit). */
uint32_t u4v_req_oldest_missing(struct u4v_qp *qp);
/* qp/comp.c: completer (responses arriving at the requester) */
void u4v_comp_frame(struct u4v_qp *qp, const struct u4w_hdr *h,
		    const uint8_t *payload);
/* Complete the finished WQEs at the head of the send queue, in order. */
void u4v_comp_retire(struct u4v_qp *qp);
/* Flush the send queue (ERR): the completer's part of u4v_qp_flush. */
void u4v_comp_flush(struct u4v_qp *qp);
/* qp/resp.c: responder */
/*
 * UC and UD have no RNR NAK: a message for a QP whose receive queue is
 * empty would be lost. With may_hold, the handler returns false instead and
 * the frame stays in the RX ring until a receive is posted (E2E flow control
 * then slows the sender), for at most U4V_RQ_GRACE_NS; after that it is
 * dropped as the verbs specification says.
 */
#define U4V_RQ_GRACE_NS 100000000ull
#define U4V_HOLD_MAX 256u
/*
 * frame: the frame's headers as decoded into h (a copy of them is what a
 * frame held for later keeps), len: the whole frame's length; payload:
 * its h->paylen bytes, which need not follow the headers.
 */
bool u4v_resp_frame(struct u4v_qp *qp, struct u4v_peer *peer,
		    const struct u4w_hdr *h, const uint8_t *payload,
		    const void *frame, uint32_t len, bool may_hold);
/* May the peer do what access (IBV_ACCESS_REMOTE_*) names on this QP? */
static inline bool u4v_qp_allows(const struct u4v_qp *qp, int access)
{
	return (qp->access & access) == access;
}
/* qp/resp_tx.c: the responder's answers, sent in PSN order */
void u4v_resp_flush_ack(struct u4v_qp *qp);
void u4v_resp_tx(struct u4v_qp *qp);
void u4v_send_ack(struct u4v_qp *qp, uint8_t syndrome, uint32_t psn);
/* Queue READ responses or an atomic's answer for psn; false when full. */
bool u4v_resp_queue_read(struct u4v_qp *qp, uint32_t psn, uint64_t va,
			 uint64_t len, uint32_t rkey, bool replay);
bool u4v_resp_queue_atomic(struct u4v_qp *qp, uint32_t psn, uint64_t orig,
			   bool replay);
/* A request with a PSN already executed: answer again, or drop it. */
void u4v_resp_duplicate(struct u4v_qp *qp, const struct u4w_hdr *h);
/* qp/ahead.c: the RC responder behind a hole */
/* A request frame ahead of epsn: placed or held; the hole asked for. */
void u4v_resp_ahead(struct u4v_qp *qp, const struct u4w_hdr *h,
		    const uint8_t *payload, const void *frame, uint32_t len);
/* epsn advanced: the hole (if any) is filled. */
void u4v_resp_filled(struct u4v_qp *qp);
/* Done executing what was held: frames past a new hole ask for it now. */
void u4v_resp_hole_check(struct u4v_qp *qp);
/* Ask for a hole again when due; the next deadline (0: none). */
uint64_t u4v_resp_timer(struct u4v_qp *qp, uint64_t now);
/* qp.c: send an ACK held for the application's answer now */
void u4v_qp_flush_held_ack(struct u4v_qp *qp);
/* qp's ACK is held no more (it goes out, or the QP is reset). qp->lock. */
static inline void u4v_ack_hold_end(struct u4v_qp *qp)
{
	if (!qp->ack_due)
		return;
	qp->ack_due = 0;
	atomic_fetch_sub_explicit(&qp->ctx->acks_held, 1,
				  memory_order_relaxed);
}
/* Is a receive WQE available (own RQ or SRQ)? (also UD's, ud.c) */
bool u4v_rwqe_ready(struct u4v_qp *qp);
/* qp/tx.c: framing onto the channel */
void u4v_qp_tx(struct u4v_qp *qp); /* requests, read responses, ACKs */
#define U4V_TX_FULL (-1) /* u4v_tx_frame: the TX ring is full */
int u4v_tx_frame(struct u4v_peer *peer, const struct u4w_hdr *h,
		 const void *payload, uint32_t paylen, struct u4v_pd *pd,
		 const struct ibv_sge *sge, uint32_t nsge, uint64_t sge_off);
void u4v_tx_doorbell(struct u4v_peer *peer);
/* A channel new to this context: bound its TX queue (before first use). */
void u4v_tx_bound(struct u4v_ctx *ctx, struct u4l_chan *chan);

/* ctx/lanes.c: striping over a peer's lanes, and their order restored */
/*
 * How long RX waits for a frame late on another lane (then: lost), at
 * least; while frames it gave up on turn up after all, up to the most.
 */
#define U4V_LANE_WAIT_NS 50000ull
#define U4V_LANE_WAIT_MAX_NS 200000ull
/* What one ring pair moves, bytes/s; 0: the wire's, or nobody knows. */
uint64_t u4v_ring_rate(const struct u4v_ctx *ctx);
/* Nobody knows it (a kernel device): the lane meter measures. */
bool u4v_ring_rate_unknown(const struct u4v_ctx *ctx);
void u4v_lanes_open(struct u4v_ctx *ctx, struct u4v_peer *peer,
		    uint32_t remote_ctx);
void u4v_lanes_accept(struct u4v_ctx *ctx, struct u4v_peer *peer,
		      struct u4l_chan *chan);
/* A window of the lane meter: how long, and what it must see to decide. */
#define U4V_LANE_METER_NS 50000000ull
#define U4V_LANE_METER_SAMPLES 16u
#define U4V_LANE_METER_VOTES 3u
void u4v_lanes_meter(struct u4v_ctx *ctx, struct u4v_peer *peer, uint64_t now);
void u4v_lanes_grow(struct u4v_ctx *ctx);
struct u4l_chan *u4v_lanes_tx_slot(struct u4v_peer *peer, uint8_t **buf,
				   uint32_t *lane);
uint32_t u4v_tx_space(struct u4v_peer *peer);
bool u4v_tx_room(struct u4v_peer *peer);
bool u4v_lanes_turn_ends(struct u4v_peer *peer, uint8_t opcode);
struct u4l_chan *u4v_lanes_rx_next(struct u4v_ctx *ctx, struct u4v_peer *peer,
				   struct u4l_rx_frame *f);
bool u4v_tx_queue_behind(const struct u4v_peer *peer, const struct u4v_qp *qp);
/* qp/ud.c: UD receive */
bool u4v_ud_frame(struct u4v_qp *qp, const struct u4w_hdr *h,
		  const uint8_t *payload, bool may_hold);
/* qp/hold.c: UC/UD frames waiting for a receive WQE */
bool u4v_hold_push(struct u4v_qp *qp, const void *hdr, uint32_t hlen,
		   const void *payload, uint32_t paylen);
void u4v_hold_drain(struct u4v_qp *qp);
void u4v_hold_clear(struct u4v_qp *qp);

#endif
