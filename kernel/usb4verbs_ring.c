// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: channels, their mappings and both doorbells.
 *
 * Userspace never writes a descriptor that DMA hardware reads in safe
 * mode: it fills the shadow ring, and the doorbell reads each shadow entry
 * once, validates it and writes the real descriptor with an address owned
 * by the kernel. Direct mode's doorbell is a page the poster writes.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/dma-mapping.h>

#include "usb4verbs.h"

/* Make buf mmap-able through uctx; on failure buf is freed. */
int u4k_buf_insert(struct u4k_ucontext *uctx, struct u4k_buf *buf)
{
	int ret = rdma_user_mmap_entry_insert(&uctx->ibuc, &buf->rdma,
					      buf->size);

	if (ret)
		u4k_buf_free(buf);
	return ret;
}

/*
 * Zeroed, physically contiguous memory mapped through uctx and, with a DMA
 * device, for its DMA. Not dma_alloc_coherent(): behind an IOMMU that is
 * vmap()ed from scattered pages, which cannot be mapped by pfn. PCIe DMA
 * is cache-coherent on x86, so these pages need no syncs.
 */
struct u4k_buf *u4k_buf_alloc(struct u4k_ucontext *uctx, size_t size,
			      bool writable)
{
	struct device *dma_dev = uctx->dev->dma_dev;
	struct u4k_buf *buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	struct page *page;

	if (!buf)
		return NULL;
	buf->size = PAGE_ALIGN(size);
	buf->writable = writable;
	buf->dma_dev = dma_dev;
	if (dma_dev) {
		buf->kind = U4K_BUF_DMA;
		page = dma_alloc_pages(dma_dev, buf->size, &buf->dma,
				       DMA_BIDIRECTIONAL, GFP_KERNEL);
		buf->kva = page ? page_address(page) : NULL;
	} else {
		buf->kva = alloc_pages_exact(buf->size,
					     GFP_KERNEL | __GFP_ZERO);
	}
	if (!buf->kva) {
		kfree(buf);
		return NULL;
	}
	return u4k_buf_insert(uctx, buf) ? NULL : buf;
}

/* Drop the driver's reference; memory goes once no VMA maps it. */
void u4k_buf_remove(struct u4k_buf *buf)
{
	if (buf)
		rdma_user_mmap_entry_remove(&buf->rdma);
}

/* From mmap_free: the last user is gone. */
void u4k_buf_free(struct u4k_buf *buf)
{
	if (buf->kind == U4K_BUF_PAGES)
		free_pages_exact(buf->kva, buf->size);
	else if (buf->kind == U4K_BUF_DMA)
		dma_free_pages(buf->dma_dev, buf->size, virt_to_page(buf->kva),
			       buf->dma, DMA_BIDIRECTIONAL);
	kfree(buf);
}

static void u4k_half_fill_info(struct u4k_half *h, struct u4v_chan_info *info)
{
	struct u4k_buf *b;
	int i;

	memset(info, 0, sizeof(*info));
	info->remote_ctx = h->remote_ctx;
	info->depth = h->depth;
	info->flags = (h->chan->loopback ? U4V_CHAN_LOOPBACK : 0) |
		      (h->direct ? U4V_CHAN_DIRECT : 0);
	info->tx_hop = h->tx_hop;
	info->rx_hop = h->rx_hop;
	info->lane = h->lane;
	for (i = 0; i < U4V_MAP_NR; i++) {
		/* the doorbell pages belong to the context (direct only) */
		b = i < U4V_MAP_TX_DB ? h->buf[i] :
					h->uctx->db[i - U4V_MAP_TX_DB];
		info->off[i] = b ? rdma_user_mmap_get_offset(&b->rdma) : 0;
		info->len[i] = b ? b->size : 0;
	}
}

static void u4k_half_remove_bufs(struct u4k_half *h)
{
	int i;

	for (i = 0; i < U4V_MAP_TX_DB; i++) {
		u4k_buf_remove(h->buf[i]);
		h->buf[i] = NULL;
	}
}

/*
 * Memory of one half, mapped into its owner. Every RX descriptor but one
 * starts posted; TX descriptors are written by the doorbell.
 */
static int u4k_half_init(struct u4k_half *h, struct u4k_chan *chan,
			 struct u4k_ucontext *owner, u32 remote, u32 lane)
{
	u32 i, depth = u4k_ring_depth;
	size_t ring = depth * sizeof(struct u4v_desc);
	size_t pool = (size_t)depth * U4V_FRAME_SIZE;
	/*
	 * The NHI's register pages (no kva) have no slot for a channel within
	 * this end (loopback, self): it takes the safe doorbell instead.
	 */
	bool direct = owner->direct &&
		      (owner->db[0]->kva ||
		       u4k_ctx_end(remote) != u4k_cable_of(owner)->end);
	/* by enum u4v_chan_map; direct mode has no shadow ring */
	const size_t size[] = { ring, ring, direct ? 0 :
				depth * sizeof(struct u4v_shadow_desc),
				pool, pool };
	const bool rw[] = { direct, direct, true, true, false };

	h->chan = chan;
	h->uctx = owner;
	h->remote_ctx = remote;
	h->lane = lane;
	h->depth = depth;
	h->direct = direct;
	INIT_LIST_HEAD(&h->pending);
	for (i = 0; i < U4V_MAP_TX_DB; i++) {
		h->buf[i] = size[i] ? u4k_buf_alloc(owner, size[i], rw[i]) :
				      NULL;
		if (size[i] && !h->buf[i]) {
			u4k_half_remove_bufs(h);
			return -ENOMEM;
		}
	}
	h->tx_desc = h->buf[U4V_MAP_TX_DESC]->kva;
	h->rx_desc = h->buf[U4V_MAP_RX_DESC]->kva;
	h->shadow = direct ? NULL : h->buf[U4V_MAP_SHADOW]->kva;
	h->tx_pool = h->buf[U4V_MAP_TX_POOL]->kva;
	h->rx_pool = h->buf[U4V_MAP_RX_POOL]->kva;
	if (direct && owner->db[0]->kva) {
		/* soft cable: a slot per remote context and lane; TB: hops */
		h->tx_hop = remote * U4V_MAX_LANES + lane;
		h->rx_hop = h->tx_hop;
		h->tx_db = owner->db[0]->kva + h->tx_hop * U4V_DB_SLOT_SIZE +
			   U4V_DB_PROD_CONS;
		h->rx_db = owner->db[1]->kva + h->rx_hop * U4V_DB_SLOT_SIZE +
			   U4V_DB_PROD_CONS;
		WRITE_ONCE(*h->tx_db, 0);
		WRITE_ONCE(*h->rx_db, depth - 1); /* all but one posted */
	}
	for (i = 0; i < depth; i++) {
		h->tx_desc[i].phys = h->buf[U4V_MAP_TX_POOL]->dma +
				     (u64)i * U4V_FRAME_SIZE;
		h->rx_desc[i].phys = h->buf[U4V_MAP_RX_POOL]->dma +
				     (u64)i * U4V_FRAME_SIZE;
		if (i < depth - 1)
			h->rx_desc[i].len_flags =
				u4k_desc_pack(0, 0, 0, U4V_DESC_POSTED |
						       U4V_DESC_INTERRUPT);
	}
	return 0;
}

/* A cross-end channel is useless once either context left: budget back. */
static void u4k_half_uncount(struct u4k_half *h, struct u4k_cable *cable)
{
	if (!h->counted)
		return;
	h->counted = false;
	cable->nr_channels--;
	if (cable->ops->chan_close)
		cable->ops->chan_close(h);
}

/* Tell h's owner that h is stale (its status page). Owner alive. */
static void u4k_half_mark_stale(struct u4k_half *h)
{
	set_bit(h->remote_ctx, (unsigned long *)&h->uctx->status->stale_mask);
}

/* Under the owner's cable->lock: the remote context of h left. */
void u4k_half_gone(struct u4k_half *h)
{
	mutex_lock(&h->chan->lock);
	h->gone = true;
	u4k_half_mark_stale(h);
	mutex_unlock(&h->chan->lock);
	u4k_half_uncount(h, u4k_cable_of(h->uctx));
}

/* Under cable->lock: a half of its owner's is no longer wanted. */
static void u4k_half_reap(struct u4k_half *h);
static void u4k_rx_count(struct u4k_half *h, u32 n);

void u4k_half_kill(struct u4k_half *h)
{
	struct u4k_chan *chan = h->chan;
	struct u4k_cable *cable = u4k_cable_of(h->uctx);
	bool free_it;

	mutex_lock(&chan->lock);
	/* frames delivered but never given back crossed the cable too */
	if (!h->direct && !h->dead) {
		u4k_half_reap(h);
		u4k_rx_count(h, h->rx_done - h->rx_rel);
	}
	h->dead = true;
	h->uctx = NULL;
	/* a live peer half (loopback, soft cable) is stale from now on */
	if (h->peer && h->peer != h && !h->peer->dead)
		u4k_half_mark_stale(h->peer);
	free_it = --chan->nr_alive == 0;
	mutex_unlock(&chan->lock);
	list_del_init(&h->pending);
	/* hardware stops before its rings can go with the mappings */
	u4k_half_uncount(h, cable);
	u4k_half_remove_bufs(h);
	if (free_it)
		kfree(chan);
}

/*
 * Under cable->lock: h is replaced. It goes when its owner does, since a
 * doorbell looks halves up without the cable lock.
 */
static void u4k_half_retire(struct u4k_ucontext *uctx, struct u4k_half *h)
{
	list_move_tail(&h->pending, &uctx->graveyard);
	u4k_half_uncount(h, u4k_cable_of(uctx));
}

/* Under cable->lock, at context teardown: every lane's budget back. */
void u4k_ctx_release_chans(struct u4k_ucontext *uctx)
{
	struct u4k_half *h, *tmp;
	u32 i, l;

	for (i = 0; i < U4V_MAX_CTX; i++) {
		for (l = 0; l < U4V_MAX_LANES; l++) {
			h = uctx->halves[i][l];
			if (!h)
				continue;
			WRITE_ONCE(uctx->halves[i][l], NULL);
			u4k_half_kill(h);
		}
	}
	list_for_each_entry_safe(h, tmp, &uctx->graveyard, pending)
		u4k_half_kill(h);
}

/*
 * Under cable->lock: h becomes uctx's half to h->remote_ctx in its lane,
 * retiring a stale one; with notify, uctx learns of it (chan_gen, eventfd,
 * and the next U4V_CHAN_NEXT).
 */
void u4k_half_install(struct u4k_ucontext *uctx, struct u4k_half *h,
		      bool notify)
{
	struct u4k_half *old = uctx->halves[h->remote_ctx][h->lane];

	if (old)
		u4k_half_retire(uctx, old);
	clear_bit(h->remote_ctx, (unsigned long *)&uctx->status->stale_mask);
	WRITE_ONCE(uctx->halves[h->remote_ctx][h->lane], h);
	if (!notify)
		return;
	list_add_tail(&h->pending, &uctx->pending_chans);
	WRITE_ONCE(uctx->status->chan_gen, uctx->status->chan_gen + 1);
	if (uctx->evfd)
		u4k_eventfd_signal(uctx->evfd);
}

/* A channel with one half, owner's, to (remote, lane) (not installed). */
int u4k_chan_new(struct u4k_ucontext *owner, u32 remote, u32 lane,
		 struct u4k_half **out)
{
	struct u4k_chan *chan = kzalloc(sizeof(*chan), GFP_KERNEL);
	int ret;

	if (!chan)
		return -ENOMEM;
	mutex_init(&chan->lock);
	chan->nr_alive = 1;
	ret = u4k_half_init(&chan->side[0], chan, owner, remote, lane);
	if (ret) {
		kfree(chan);
		return ret;
	}
	*out = &chan->side[0];
	return 0;
}

/*
 * Under cable->lock: side[1] of h0's channel, owned by owner; both halves
 * in this kernel's memory (loopback, soft cable).
 */
struct u4k_half *u4k_chan_pair(struct u4k_half *h0, struct u4k_ucontext *owner)
{
	struct u4k_chan *chan = h0->chan;
	struct u4k_half *h1 = &chan->side[1];
	int ret = u4k_half_init(h1, chan, owner, h0->uctx->ctx_id, h0->lane);

	if (ret)
		return ERR_PTR(ret);
	mutex_lock(&chan->lock);
	h0->peer = h1;
	h1->peer = h0;
	chan->nr_alive++;
	mutex_unlock(&chan->lock);
	return h1;
}

/* Under cable->lock: a loopback channel, x the caller, y on the same end. */
static int u4k_chan_loopback(struct u4k_ucontext *x, struct u4k_ucontext *y,
			     struct u4k_half **out)
{
	struct u4k_half *h0, *h1;
	int ret = u4k_chan_new(x, y->ctx_id, 0, &h0);

	if (ret)
		return ret;
	h0->chan->loopback = true;
	h0->peer = h0; /* x == y: one half talking to itself */
	if (x != y) {
		h1 = u4k_chan_pair(h0, y);
		if (IS_ERR(h1)) {
			u4k_half_kill(h0);
			return PTR_ERR(h1);
		}
		u4k_half_install(y, h1, true);
	}
	u4k_half_install(x, h0, false);
	*out = h0;
	return 0;
}

/*
 * Lane `lane` of the channels to remote (made on the way), or the next one
 * we were given (any lane).
 */
int u4k_chan_get(struct u4k_ucontext *uctx, u32 remote, u32 lane,
		 struct u4v_chan_info *info)
{
	struct u4k_cable *cable = u4k_cable_of(uctx);
	bool next = remote == U4V_CHAN_NEXT;
	bool cross = !next && u4k_ctx_end(remote) != cable->end;
	struct u4k_half *h;
	int ret;

	if (!next && (remote >= U4V_MAX_CTX || lane >= U4V_MAX_LANES))
		return -EINVAL;
	/* within one end no ring is involved: another lane is no faster */
	if (!next && !cross && lane)
		return -EOPNOTSUPP;
	/* across the cable the protocol makes (or finds) the channel */
	ret = cross ? u4k_proto_connect(uctx, remote, lane) : 0;
	if (ret)
		return ret;
	mutex_lock(&cable->lock);
	if (next) {
		h = list_first_entry_or_null(&uctx->pending_chans,
					     struct u4k_half, pending);
		ret = h ? 0 : -ENOENT;
	} else if (!cable->up) {
		ret = -ENOLINK;
	} else {
		h = uctx->halves[remote][lane];
		if (cross) /* the peer may have left since the protocol ran */
			ret = h && !u4k_half_stale(h) ? 0 : -EHOSTUNREACH;
		else if (!cable->ctx[remote])
			ret = -EHOSTUNREACH;
		else if (!h || u4k_half_stale(h))
			ret = u4k_chan_loopback(uctx, cable->ctx[remote], &h);
	}
	if (!ret) {
		list_del_init(&h->pending);
		u4k_half_fill_info(h, info);
	}
	mutex_unlock(&cable->lock);
	return ret;
}

/*
 * Wake the owner of h (eventfd, status page) and, for an RX completion,
 * its armed CQs. Under chan->lock, which keeps h->uctx alive.
 */
void u4k_half_wake(struct u4k_half *h, bool rx)
{
	struct u4k_ucontext *uctx = h->uctx;

	if (!uctx)
		return;
	if (rx)
		WRITE_ONCE(uctx->status->rx_events,
			   uctx->status->rx_events + 1);
	if (uctx->evfd)
		u4k_eventfd_signal(uctx->evfd);
	if (rx)
		u4k_ctx_signal_cqs(uctx);
}

/*
 * Frames that crossed the cable, counted where the kernel sees them: on the
 * safe-mode doorbell (direct mode bypasses the kernel). Under chan->lock.
 */
static void u4k_half_count(struct u4k_half *h, enum u4k_stat frames, u32 n,
			   u64 bytes)
{
	atomic64_t *stats;

	if (h->chan->loopback || h->direct)
		return;
	stats = u4k_cable_of(h->uctx)->stats;
	atomic64_add(n, &stats[frames]);
	atomic64_add(bytes, &stats[frames + 1]); /* the bytes follow */
}

/*
 * Validate shadow entries [h->tx_prod, tx_prod) and write their real
 * descriptors. Positions past h->tx_prod are not the DMA engine's until
 * the producer moves, so each entry is read once and its descriptor
 * written at once; none is posted unless all are good. Under chan->lock.
 */
static int u4k_tx_commit(struct u4k_half *h, u32 tx_prod)
{
	u32 i, pos, n = tx_prod - h->tx_prod;
	struct u4v_shadow_desc s;
	u64 bytes = 0;

	/* at most depth - 1 positions in flight (full ring rule) */
	if (n > h->depth - 1 || tx_prod - h->tx_done > h->depth - 1)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		pos = (h->tx_prod + i) & (h->depth - 1);
		s = READ_ONCE(h->shadow[pos]);
		if (s.slot >= h->depth || !s.len || s.len > U4V_FRAME_SIZE ||
		    s.sof > U4V_DESC_PDF_MASK || s.eof > U4V_DESC_PDF_MASK)
			return -EINVAL;
		h->tx_desc[pos].phys = h->buf[U4V_MAP_TX_POOL]->dma +
				       (u64)s.slot * U4V_FRAME_SIZE;
		h->tx_desc[pos].time = 0;
		WRITE_ONCE(h->tx_desc[pos].len_flags,
			   u4k_desc_pack(s.len, s.sof, s.eof,
					 U4V_DESC_POSTED | U4V_DESC_INTERRUPT));
		bytes += s.len;
	}
	h->tx_prod = tx_prod;
	u4k_half_count(h, U4K_STAT_TX_FRAMES, n, bytes);
	return 0;
}

/* Count the n delivered RX frames from h->rx_rel on, as received. */
static void u4k_rx_count(struct u4k_half *h, u32 n)
{
	u64 bytes = 0;
	u32 i, pos;

	for (i = 0; i < n; i++) {
		/* a delivered frame, as the DMA engine completed it */
		pos = (h->rx_rel + i) & (h->depth - 1);
		bytes += (READ_ONCE(h->rx_desc[pos].len_flags) &
			  U4V_DESC_LEN_MASK) ?: U4V_FRAME_SIZE;
	}
	u4k_half_count(h, U4K_STAT_RX_FRAMES, n, bytes);
}

/* Give RX positions [h->rx_rel, rx_cons) back. Under chan->lock. */
static int u4k_rx_commit(struct u4k_half *h, u32 rx_cons)
{
	u32 i, pos, n = rx_cons - h->rx_rel;

	if (n > h->rx_done - h->rx_rel)
		return -EINVAL; /* releasing frames not yet delivered */
	u4k_rx_count(h, n);
	for (i = 0; i < n; i++) {
		/* the position depth - 1 ahead becomes postable */
		pos = (h->rx_rel + i + h->depth - 1) & (h->depth - 1);
		WRITE_ONCE(h->rx_desc[pos].len_flags,
			   u4k_desc_pack(0, 0, 0, U4V_DESC_POSTED |
						  U4V_DESC_INTERRUPT));
	}
	h->rx_rel = rx_cons;
	return 0;
}

/* Move frames after a doorbell on half h. Under chan->lock. */
static void u4k_half_move(struct u4k_half *h, bool tx, bool rx)
{
	const struct u4k_cable_ops *ops = u4k_cable_of(h->uctx)->ops;
	struct u4k_half *peer = h->peer;
	u32 delivered, completed;

	if (!h->chan->loopback && ops->kick) {
		ops->kick(h, tx, rx);
		return;
	}
	/* our TX into the peer's posted RX: an RX interrupt there */
	if (tx) {
		u4k_soft_pump(h, &delivered, &completed);
		if (delivered)
			u4k_half_wake(peer, true);
	}
	/* RX space freed: the peer's stalled TX moves now */
	if (rx && !peer->dead) {
		u4k_soft_pump(peer, &delivered, &completed);
		if (delivered)
			u4k_half_wake(h, true);
		if (completed && peer != h)
			u4k_half_wake(peer, false);
	}
}

static bool u4k_desc_completed(struct u4v_desc *d)
{
	return (smp_load_acquire(&d->len_flags) >> U4V_DESC_FLAGS_SHIFT) &
	       U4V_DESC_COMPLETED;
}

/*
 * Count the positions the DMA engine completed since the last doorbell:
 * the NHI tells only by COMPLETED bits (the soft engine counts as it goes,
 * so nothing is left for it here). Safe mode's real descriptors are written
 * by nobody but this kernel and the engine. Under chan->lock.
 */
static void u4k_half_reap(struct u4k_half *h)
{
	u32 mask = h->depth - 1;

	while (h->tx_done != h->tx_prod &&
	       u4k_desc_completed(&h->tx_desc[h->tx_done & mask]))
		h->tx_done++;
	while (h->rx_done - h->rx_rel < h->depth - 1 &&
	       u4k_desc_completed(&h->rx_desc[h->rx_done & mask]))
		h->rx_done++;
}

int u4k_doorbell(struct u4k_ucontext *uctx, u32 remote, u32 lane,
		 bool has_tx, u32 tx_prod, bool has_rx, u32 rx_cons)
{
	struct u4k_half *h;
	int ret = 0;

	if (remote >= U4V_MAX_CTX || lane >= U4V_MAX_LANES)
		return -EINVAL;
	/* only this context's own channels are reachable from here */
	h = READ_ONCE(uctx->halves[remote][lane]);
	if (!h)
		return -ENOENT;
	if (h->direct)
		return -EINVAL; /* no shadow ring: use the doorbell page */
	mutex_lock(&h->chan->lock);
	/* stale: the remote context left; a new connect finds its successor */
	if (h->dead || u4k_half_stale(h))
		ret = -ENOLINK;
	else
		u4k_half_reap(h);
	if (!ret && has_rx)
		ret = u4k_rx_commit(h, rx_cons);
	if (!ret && has_tx)
		ret = u4k_tx_commit(h, tx_prod);
	if (!ret)
		u4k_half_move(h, has_tx, has_rx);
	mutex_unlock(&h->chan->lock);
	return ret;
}

/*
 * The direct-mode doorbell, seen by the soft DMA engine: new positions in
 * the doorbell slots of a direct half (the pump reads the descriptors the
 * poster wrote, and only ever inside the half's own TX pool). Returns
 * whether anything moved. Under cable->lock (h stays alive).
 */
bool u4k_direct_poll(struct u4k_half *h)
{
	u32 mask = h->depth - 1, n;
	bool rx = false, tx = false;

	mutex_lock(&h->chan->lock);
	if (h->dead)
		goto out;
	/* the NHI's RX register: one past the last posted descriptor */
	n = (READ_ONCE(*h->rx_db) - (h->depth - 1) - h->rx_rel) & mask;
	rx = n && !u4k_rx_commit(h, h->rx_rel + n);
	/* pairs with the poster's release of the producer */
	n = ((smp_load_acquire(h->tx_db) >> U4V_DB_PROD_SHIFT) - h->tx_prod) &
	    mask;
	tx = n && h->tx_prod + n - h->tx_done <= h->depth - 1;
	if (tx)
		h->tx_prod += n;
	if (tx || rx || h->tx_done != h->tx_prod)
		u4k_half_move(h, true, rx);
out:
	mutex_unlock(&h->chan->lock);
	return tx || rx;
}
