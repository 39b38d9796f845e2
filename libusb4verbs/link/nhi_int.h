/* SPDX-License-Identifier: MIT */
/* Internals of the nhi link backend, shared with its tests. */
#ifndef USB4VERBS_NHI_INT_H
#define USB4VERBS_NHI_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <usb4verbs/link.h>
#include <usb4verbs/nhi.h>

#include <rdma/usb4verbs-abi.h>

struct nhi_dev;

struct nhi_chan {
	struct nhi_dev *dev;
	struct nhi_chan *next_new; /* accepted, not yet handed out */
	struct nhi_chan *next_old; /* replaced, kept until close */
	uint32_t remote;
	uint32_t lane; /* < U4L_MAX_LANES */
	uint32_t depth, mask;
	uint32_t flags; /* U4V_CHAN_* */
	bool handed_out;
	bool dead;
	void *map[U4V_MAP_NR];
	size_t len[U4V_MAP_NR];
	struct u4v_desc *txd; /* read-only */
	struct u4v_desc *rxd; /* read-only */
	struct u4v_shadow_desc *shadow; /* safe mode */
	bool direct;			/* U4V_CHAN_DIRECT */
	volatile uint32_t *tx_db, *rx_db; /* direct: our register slots */
	uint8_t *tx_pool;
	const uint8_t *rx_pool;
	/* TX side (engine TX lock) */
	uint32_t tx_prod;   /* written to the shadow ring */
	uint32_t tx_rung;   /* handed to the kernel */
	uint32_t tx_reaped; /* seen completed */
	uint32_t tx_bound;  /* slots used at most (tx_bound()) */
	/* RX side (engine RX lock) */
	uint32_t rx_cons;     /* released by the engine */
	uint32_t rx_rel_rung; /* releases handed to the kernel */
};

struct nhi_dev {
	struct u4l_dev base;
	int cmd_fd;
	bool own_fd;
	int evfd;
	uint32_t ctx_id, depth, mode, max_channels;
	uint64_t wire_rate, ring_rate;
	volatile struct u4v_status_page *status;
	size_t status_len;
	pthread_mutex_t lock; /* channel table */
	uint32_t chan_gen_seen;
	struct nhi_chan *chans[U4L_MAX_CTX][U4L_MAX_LANES];
	struct nhi_chan *new_head, *new_tail;
	struct nhi_chan *old;
	struct u4l_counters counters;
	uint64_t syscalls; /* doorbell / channel ioctls made (tests) */
};

/* Raw kernel calls, for tests (bogus doorbells). Return 0 or -errno. */
static inline struct nhi_dev *to_nhi(struct u4l_dev *dev)
{
	return (struct nhi_dev *)dev;
}

/* nhi_cmd.c: the kernel shim's commands */
struct ib_uverbs_get_context_resp;
int nhi_cmd_get_context(int fd, const struct u4v_alloc_ucontext_req *req,
			struct ib_uverbs_get_context_resp *core,
			struct u4v_alloc_ucontext_resp *drv);
int nhi_cmd_chan_get(struct nhi_dev *d, uint32_t remote, uint32_t lane,
		     struct u4v_chan_info *info);
int u4l_nhi_raw_doorbell(struct u4l_dev *dev, uint32_t remote, uint32_t lane,
			 bool has_tx, uint32_t tx_prod, bool has_rx,
			 uint32_t rx_cons);
int u4l_nhi_raw_chan_get(struct u4l_dev *dev, uint32_t remote, uint32_t lane,
			 struct u4v_chan_info *info);

#endif
