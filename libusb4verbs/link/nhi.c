/* SPDX-License-Identifier: MIT */
/*
 * The nhi link backend: the ring contract over channels mapped from the
 * kernel shim. Safe mode: TX frames are written into the channel's frame
 * pool and described in the shadow ring; one doorbell system call per
 * batch hands them over; completion is read from the real (read-only)
 * descriptor rings. RX buffers are given back in batches.
 *
 * Direct mode (USB4V_NHI_DIRECT, privileged): the descriptor rings are
 * writable and the doorbells are stores into the mapped ring register
 * pages; no system call per post or per RX batch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/ib_user_verbs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "nhi_int.h"

static const struct u4l_ops nhi_ops;

_Static_assert(U4L_MAX_LANES == U4V_MAX_LANES,
	       "the engine's lanes are the kernel's");

static uint32_t load_acq(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void nhi_chan_unmap(struct nhi_chan *c)
{
	for (int i = 0; i < U4V_MAP_NR; i++)
		if (c->map[i])
			munmap(c->map[i], c->len[i]);
	free(c);
}

/* mmap every region the kernel offers for c (direct: descriptors too). */
static int nhi_chan_mmap(struct nhi_dev *d, struct nhi_chan *c,
			 const struct u4v_chan_info *info, bool direct)
{
	static const int prot[U4V_MAP_NR] = {
		[U4V_MAP_TX_DESC] = PROT_READ,
		[U4V_MAP_RX_DESC] = PROT_READ,
		[U4V_MAP_SHADOW] = PROT_READ | PROT_WRITE,
		[U4V_MAP_TX_POOL] = PROT_READ | PROT_WRITE,
		[U4V_MAP_RX_POOL] = PROT_READ,
		[U4V_MAP_TX_DB] = PROT_READ | PROT_WRITE,
		[U4V_MAP_RX_DB] = PROT_READ | PROT_WRITE,
	};

	for (int i = 0; i < U4V_MAP_NR; i++) {
		void *p;

		if (!info->len[i])
			continue;
		p = mmap(NULL, info->len[i],
			 prot[i] |
			     (direct && i <= U4V_MAP_RX_DESC ? PROT_WRITE : 0),
			 MAP_SHARED, d->cmd_fd, (off_t)info->off[i]);
		if (p == MAP_FAILED)
			return -errno;
		c->map[i] = p;
		c->len[i] = info->len[i];
	}
	return 0;
}

/* Every region the mode needs is there, doorbell slots inside theirs. */
static bool nhi_chan_maps_complete(const struct nhi_chan *c,
				   const struct u4v_chan_info *info,
				   bool direct)
{
	if (!c->map[U4V_MAP_TX_DESC] || !c->map[U4V_MAP_RX_DESC] ||
	    !c->map[U4V_MAP_TX_POOL] || !c->map[U4V_MAP_RX_POOL])
		return false;
	if (!direct)
		return c->map[U4V_MAP_SHADOW] != NULL;
	return c->map[U4V_MAP_TX_DB] && c->map[U4V_MAP_RX_DB] &&
	       (info->tx_hop + 1) * U4V_DB_SLOT_SIZE <= c->len[U4V_MAP_TX_DB] &&
	       (info->rx_hop + 1) * U4V_DB_SLOT_SIZE <= c->len[U4V_MAP_RX_DB];
}

/* Map a channel the kernel described. */
static int nhi_chan_map(struct nhi_dev *d, const struct u4v_chan_info *info,
			struct nhi_chan **out)
{
	bool direct = info->flags & U4V_CHAN_DIRECT;
	struct nhi_chan *c;
	int err;

	if (info->depth < U4V_RING_DEPTH_MIN ||
	    info->depth > U4V_RING_DEPTH_MAX ||
	    (info->depth & (info->depth - 1)) ||
	    info->remote_ctx >= U4L_MAX_CTX || info->lane >= U4L_MAX_LANES)
		return -EPROTO;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->dev = d;
	c->remote = info->remote_ctx;
	c->lane = info->lane;
	c->depth = info->depth;
	c->mask = info->depth - 1;
	c->tx_bound = info->depth - 1;
	c->flags = info->flags;
	err = nhi_chan_mmap(d, c, info, direct);
	if (!err && !nhi_chan_maps_complete(c, info, direct))
		err = -EPROTO;
	if (err) {
		nhi_chan_unmap(c);
		return err;
	}
	c->direct = direct;
	if (direct) {
		c->tx_db = (volatile uint32_t *)((uint8_t *)c->map[U4V_MAP_TX_DB] +
						 info->tx_hop * U4V_DB_SLOT_SIZE +
						 U4V_DB_PROD_CONS);
		c->rx_db = (volatile uint32_t *)((uint8_t *)c->map[U4V_MAP_RX_DB] +
						 info->rx_hop * U4V_DB_SLOT_SIZE +
						 U4V_DB_PROD_CONS);
	}
	c->txd = c->map[U4V_MAP_TX_DESC];
	c->rxd = c->map[U4V_MAP_RX_DESC];
	c->shadow = c->map[U4V_MAP_SHADOW];
	c->tx_pool = c->map[U4V_MAP_TX_POOL];
	c->rx_pool = c->map[U4V_MAP_RX_POOL];
	*out = c;
	return 0;
}

/* Under d->lock: install c, retiring a channel it replaces. */
static void nhi_chan_install(struct nhi_dev *d, struct nhi_chan *c)
{
	struct nhi_chan *old = d->chans[c->remote][c->lane];

	if (old) {
		old->dead = true;
		old->next_old = d->old;
		d->old = old;
	}
	d->chans[c->remote][c->lane] = c;
}

/* Under d->lock: fetch channels peers created for us. */
static void nhi_collect(struct nhi_dev *d)
{
	uint32_t gen = __atomic_load_n(&d->status->chan_gen, __ATOMIC_ACQUIRE);
	struct u4v_chan_info info;
	struct nhi_chan *c;

	if (gen == d->chan_gen_seen)
		return;
	d->chan_gen_seen = gen;
	while (nhi_cmd_chan_get(d, U4V_CHAN_NEXT, 0, &info) == 0) {
		if (nhi_chan_map(d, &info, &c))
			continue;
		nhi_chan_install(d, c);
		if (d->new_tail)
			d->new_tail->next_new = c;
		else
			d->new_head = c;
		d->new_tail = c;
	}
}

static void nhi_close(struct u4l_dev *dev)
{
	struct nhi_dev *d = to_nhi(dev);
	struct nhi_chan *c, *n;

	for (unsigned int i = 0; i < U4L_MAX_CTX; i++)
		for (unsigned int l = 0; l < U4L_MAX_LANES; l++)
			if (d->chans[i][l])
				nhi_chan_unmap(d->chans[i][l]);
	for (c = d->old; c; c = n) {
		n = c->next_old;
		nhi_chan_unmap(c);
	}
	if (d->status)
		munmap((void *)d->status, d->status_len);
	if (d->evfd >= 0)
		close(d->evfd);
	if (d->own_fd)
		close(d->cmd_fd);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static uint32_t nhi_ctx_id(struct u4l_dev *dev)
{
	return to_nhi(dev)->ctx_id;
}

static bool nhi_ctx_alive(struct u4l_dev *dev, uint32_t remote)
{
	struct nhi_dev *d = to_nhi(dev);

	if (remote >= U4L_MAX_CTX || !d->status->cable_up)
		return false;
	return (d->status->alive_mask >> remote) & 1;
}

/* Lane `lane` of the channels to remote: ours, or made now. */
static int nhi_chan_lookup(struct u4l_dev *dev, uint32_t remote, uint32_t lane,
			   struct u4l_chan **chan)
{
	struct nhi_dev *d = to_nhi(dev);
	struct u4v_chan_info info;
	struct nhi_chan *c;
	int ret = 0;

	if (remote >= U4L_MAX_CTX)
		return -EHOSTUNREACH;
	pthread_mutex_lock(&d->lock);
	c = d->chans[remote][lane];
	if (!c || c->dead) {
		ret = u4l_nhi_raw_chan_get(dev, remote, lane, &info);
		if (ret) {
			/* ENOLINK: the cable is down */
			if (ret == -ENOLINK || ret == -ENODEV)
				ret = -EHOSTUNREACH;
			goto out;
		}
		if (info.lane != lane || info.remote_ctx != remote) {
			ret = -EPROTO;
			goto out;
		}
		c = d->chans[remote][lane];
		/* a channel the peer made and we have not collected yet */
		if (!c || c->dead) {
			ret = nhi_chan_map(d, &info, &c);
			if (ret)
				goto out;
			nhi_chan_install(d, c);
		}
	}
	c->handed_out = true;
	*chan = (struct u4l_chan *)c;
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}

static int nhi_chan_get(struct u4l_dev *dev, uint32_t remote,
			struct u4l_chan **chan)
{
	return nhi_chan_lookup(dev, remote, 0, chan);
}

/* The kernel budgets each lane as a channel: ENOSPC when it is spent. */
static int nhi_chan_get_lane(struct u4l_dev *dev, uint32_t remote,
			     uint32_t lane, struct u4l_chan **chan)
{
	if (!lane || lane >= U4L_MAX_LANES)
		return -EINVAL;
	return nhi_chan_lookup(dev, remote, lane, chan);
}

static struct u4l_chan *nhi_chan_accept(struct u4l_dev *dev)
{
	struct nhi_dev *d = to_nhi(dev);
	struct nhi_chan *c;

	if (__atomic_load_n(&d->status->chan_gen, __ATOMIC_ACQUIRE) ==
		    __atomic_load_n(&d->chan_gen_seen, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&d->new_head, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&d->lock);
	nhi_collect(d);
	while ((c = d->new_head)) {
		d->new_head = c->next_new;
		if (!d->new_head)
			d->new_tail = NULL;
		c->next_new = NULL;
		if (!c->handed_out && !c->dead) {
			c->handed_out = true;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return (struct u4l_chan *)c;
}

static uint32_t nhi_chan_remote(struct u4l_chan *chan)
{
	return ((struct nhi_chan *)chan)->remote;
}

static uint32_t nhi_chan_lane(struct u4l_chan *chan)
{
	return ((struct nhi_chan *)chan)->lane;
}

/* TX */

/* The status page says c's remote context left. */
static bool nhi_stale(const struct nhi_chan *c)
{
	return (__atomic_load_n(&c->dev->status->stale_mask, __ATOMIC_ACQUIRE) >>
		c->remote) & 1;
}

/*
 * Direct mode: the kernel marks a channel stale before it stops its rings,
 * and the doorbell page holds every ring's registers: a doorbell rung after
 * that would land in a stopped ring the next channel on its HopID inherits.
 * Sticky: the bit clears when a new channel to that context comes.
 */
static bool nhi_direct_stale(struct nhi_chan *c)
{
	if (nhi_stale(c))
		c->dead = true;
	return c->dead;
}

static void nhi_tx_reap(struct nhi_chan *c)
{
	while (c->tx_reaped != c->tx_rung) {
		uint32_t lf = load_acq(&c->txd[c->tx_reaped & c->mask].len_flags);

		if (!((lf >> U4V_DESC_FLAGS_SHIFT) & U4V_DESC_COMPLETED))
			break;
		c->tx_reaped++;
	}
}

static uint32_t nhi_tx_free(struct nhi_chan *c)
{
	uint32_t queued = c->tx_prod - c->tx_reaped;

	return queued >= c->tx_bound ? 0 : c->tx_bound - queued;
}

static void nhi_tx_bound(struct u4l_chan *chan, uint32_t frames)
{
	struct nhi_chan *c = (struct nhi_chan *)chan;

	/* one slot always stays empty: a full ring would look empty */
	c->tx_bound = frames >= 1 && frames < c->depth ? frames : c->depth - 1;
}

static void *nhi_tx_slot(struct u4l_chan *chan)
{
	struct nhi_chan *c = (struct nhi_chan *)chan;

	if (!nhi_tx_free(c))
		nhi_tx_reap(c);
	if (!nhi_tx_free(c) || c->dead)
		return NULL;
	return c->tx_pool + (size_t)(c->tx_prod & c->mask) * U4L_FRAME_MAX;
}

static uint32_t nhi_pack(uint32_t len, uint32_t pdf, uint32_t flags)
{
	return (len & U4V_DESC_LEN_MASK) | pdf << U4V_DESC_EOF_SHIFT |
	       pdf << U4V_DESC_SOF_SHIFT | flags << U4V_DESC_FLAGS_SHIFT;
}

static void nhi_tx_post(struct u4l_chan *chan, uint32_t len, enum u4l_pdf pdf)
{
	struct nhi_chan *c = (struct nhi_chan *)chan;
	struct u4v_shadow_desc *s;

	u4l_count(&c->dev->counters.tx_frames, 1);
	u4l_count(&c->dev->counters.tx_bytes, len);
	if (c->direct) {
		/* phys was set by the kernel: pool slot = ring position */
		struct u4v_desc *dsc = &c->txd[c->tx_prod & c->mask];

		dsc->time = 0;
		dsc->len_flags = nhi_pack(len, pdf, U4V_DESC_POSTED |
						       U4V_DESC_INTERRUPT);
		c->tx_prod++;
		return;
	}
	s = &c->shadow[c->tx_prod & c->mask];
	s->slot = (uint16_t)(c->tx_prod & c->mask);
	s->len = (uint16_t)len;
	s->sof = (uint8_t)pdf;
	s->eof = (uint8_t)pdf;
	s->reserved = 0;
	c->tx_prod++;
}

static void nhi_tx_doorbell(struct u4l_chan *chan)
{
	struct nhi_chan *c = (struct nhi_chan *)chan;
	int ret;

	if (c->tx_prod == c->tx_rung || c->dead)
		return;
	if (c->direct) {
		if (nhi_direct_stale(c))
			return;
		/* descriptors before the producer register, as for the NHI */
		__atomic_store_n(c->tx_db, (c->tx_prod & c->mask)
				 << U4V_DB_PROD_SHIFT, __ATOMIC_RELEASE);
		c->tx_rung = c->tx_prod;
		return;
	}
	ret = u4l_nhi_raw_doorbell(&c->dev->base, c->remote, c->lane, true,
				   c->tx_prod, false, 0);
	if (ret == 0)
		c->tx_rung = c->tx_prod;
	else if (ret == -ENOLINK || ret == -ENOENT || ret == -EIO ||
		 ret == -ENODEV)
		c->dead = true; /* peer gone: the engine's timers end it */
}

/* Dead on a failed doorbell, or stale by the kernel's status page. */
static bool nhi_chan_dead(struct u4l_chan *chan)
{
	struct nhi_chan *c = (struct nhi_chan *)chan;

	return __atomic_load_n(&c->dead, __ATOMIC_RELAXED) || nhi_stale(c);
}

static uint32_t nhi_tx_space(struct u4l_chan *chan)
{
	struct nhi_chan *c = (struct nhi_chan *)chan;

	nhi_tx_reap(c);
	return c->dead ? 0 : nhi_tx_free(c);
}

/* RX */

static void nhi_rx_flush(struct nhi_chan *c)
{
	if (c->rx_cons == c->rx_rel_rung || c->dead)
		return;
	if (c->direct) {
		if (nhi_direct_stale(c))
			return;
		/* re-post the descriptors depth - 1 ahead, then the consumer */
		for (uint32_t p = c->rx_rel_rung; p != c->rx_cons; p++)
			c->rxd[(p + c->depth - 1) & c->mask].len_flags =
				nhi_pack(0, 0, U4V_DESC_POSTED |
						       U4V_DESC_INTERRUPT);
		/* the NHI's RX register: one past the last posted */
		__atomic_store_n(c->rx_db,
				 (c->rx_cons + c->depth - 1) & c->mask,
				 __ATOMIC_RELEASE);
		c->rx_rel_rung = c->rx_cons;
		return;
	}
	if (u4l_nhi_raw_doorbell(&c->dev->base, c->remote, c->lane, false, 0,
				 true, c->rx_cons) == 0)
		c->rx_rel_rung = c->rx_cons;
}

static int nhi_rx_peek(struct u4l_chan *chan, struct u4l_rx_frame *frame)
{
	struct nhi_chan *c = (struct nhi_chan *)chan;
	uint32_t lf, pos, len, flags;

	/* no descriptor is posted at rx_rel_rung + depth - 1 */
	if (c->rx_cons - c->rx_rel_rung >= c->depth - 1)
		nhi_rx_flush(c);
	if (c->rx_cons - c->rx_rel_rung >= c->depth - 1)
		return 0;
	pos = c->rx_cons & c->mask;
	lf = load_acq(&c->rxd[pos].len_flags);
	if (!((lf >> U4V_DESC_FLAGS_SHIFT) & U4V_DESC_COMPLETED)) {
		/* idle: give buffers back so the sender is not stalled */
		if (c->rx_cons != c->rx_rel_rung) {
			nhi_rx_flush(c);
			lf = load_acq(&c->rxd[pos].len_flags);
			if (!((lf >> U4V_DESC_FLAGS_SHIFT) & U4V_DESC_COMPLETED))
				return 0;
		} else {
			return 0;
		}
	}
	len = lf & U4V_DESC_LEN_MASK;
	if (!len)
		len = U4L_FRAME_MAX;
	flags = (lf >> U4V_DESC_FLAGS_SHIFT) & U4V_DESC_CRC_ERROR ?
			U4L_RX_CRC_ERR :
			0;
	frame->buf = c->rx_pool + (size_t)pos * U4L_FRAME_MAX;
	frame->head = frame->buf;
	frame->len = len;
	frame->flags = flags;
	return 1;
}

static void nhi_rx_release(struct u4l_chan *chan)
{
	struct nhi_chan *c = (struct nhi_chan *)chan;
	uint32_t lf = load_acq(&c->rxd[c->rx_cons & c->mask].len_flags);
	uint32_t len = lf & U4V_DESC_LEN_MASK;

	u4l_count(&c->dev->counters.rx_frames, 1);
	u4l_count(&c->dev->counters.rx_bytes, len ? len : U4L_FRAME_MAX);
	c->rx_cons++;
	if (c->rx_cons - c->rx_rel_rung >= c->depth / 4)
		nhi_rx_flush(c);
}

/* Waiting */

/* The kernel signals the eventfd for every frame: flags cannot help. */
static void nhi_wait(struct u4l_dev *dev, uint64_t deadline_ns,
		     uint32_t flags)
{
	struct nhi_dev *d = to_nhi(dev);
	uint64_t now = u4l_now_ns();
	struct pollfd pfd = { .fd = d->evfd, .events = POLLIN };
	struct timespec ts;
	uint64_t v;

	(void)flags;
	if (deadline_ns <= now)
		return;
	ts.tv_sec = (time_t)((deadline_ns - now) / 1000000000u);
	ts.tv_nsec = (long)((deadline_ns - now) % 1000000000u);
	if (ppoll(&pfd, 1, &ts, NULL) > 0 && (pfd.revents & POLLIN)) {
		if (read(d->evfd, &v, sizeof(v)) < 0)
			return; /* EAGAIN: someone else drained it */
	}
}

static void nhi_kick(struct u4l_dev *dev)
{
	uint64_t one = 1;

	if (write(to_nhi(dev)->evfd, &one, sizeof(one)) < 0)
		return; /* counter saturated: a wakeup is pending anyway */
}

static struct u4l_counters *nhi_counters(struct u4l_dev *dev)
{
	return &to_nhi(dev)->counters;
}

static uint64_t nhi_wire_rate(struct u4l_dev *dev)
{
	return to_nhi(dev)->wire_rate;
}

/* Where the kernel does not know it (0), the engine measures it. */
static uint64_t nhi_ring_rate(struct u4l_dev *dev)
{
	uint64_t rate = to_nhi(dev)->ring_rate;

	return rate ? rate : U4L_RATE_UNKNOWN;
}

static const struct u4l_ops nhi_ops = {
	.name = "nhi",
	.close = nhi_close,
	.ctx_id = nhi_ctx_id,
	.ctx_alive = nhi_ctx_alive,
	.chan_get = nhi_chan_get,
	.chan_accept = nhi_chan_accept,
	.chan_remote = nhi_chan_remote,
	.chan_get_lane = nhi_chan_get_lane,
	.chan_lane = nhi_chan_lane,
	.chan_dead = nhi_chan_dead,
	.tx_slot = nhi_tx_slot,
	.tx_post = nhi_tx_post,
	.tx_doorbell = nhi_tx_doorbell,
	.tx_space = nhi_tx_space,
	.tx_bound = nhi_tx_bound,
	.rx_peek = nhi_rx_peek,
	.rx_release = nhi_rx_release,
	.wait = nhi_wait,
	.kick = nhi_kick,
	.counters = nhi_counters,
	.wire_rate = nhi_wire_rate,
	.ring_rate = nhi_ring_rate,
};

int u4l_is_nhi(const struct u4l_dev *dev)
{
	return dev && dev->ops == &nhi_ops;
}

int u4l_nhi_open(int cmd_fd, uint32_t flags, int *async_fd,
		 struct u4l_dev **dev)
{
	struct u4v_alloc_ucontext_req req = { .abi_version = U4V_ABI_VERSION };
	struct ib_uverbs_get_context_resp core = { 0 };
	struct u4v_alloc_ucontext_resp resp = { 0 };
	struct nhi_dev *d;
	const char *env;
	void *st;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->cmd_fd = cmd_fd;
	d->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->evfd < 0) {
		ret = -errno;
		goto err;
	}
	req.event_fd = d->evfd;
	env = getenv("USB4V_NHI_DIRECT");
	if (env && (!strcmp(env, "1") || !strcmp(env, "try")))
		flags |= U4L_NHI_DIRECT;
	req.flags = (flags & U4L_NHI_DIRECT) ? U4V_UCTX_REQ_DIRECT : 0;
	ret = nhi_cmd_get_context(cmd_fd, &req, &core, &resp);
	if (ret == -EPERM && env && !strcmp(env, "try")) {
		req.flags = 0;
		ret = nhi_cmd_get_context(cmd_fd, &req, &core, &resp);
	}
	if (ret)
		goto err;
	if (async_fd)
		*async_fd = (int)core.async_fd;
	else
		close((int)core.async_fd);
	if (resp.abi_version != U4V_ABI_VERSION) {
		ret = -EPROTO;
		goto err;
	}
	st = mmap(NULL, resp.status_len, PROT_READ, MAP_SHARED, cmd_fd,
		  (off_t)resp.status_off);
	if (st == MAP_FAILED) {
		ret = -errno;
		goto err;
	}
	d->status = st;
	d->status_len = resp.status_len;
	d->ctx_id = resp.ctx_id;
	d->depth = resp.ring_depth;
	d->mode = resp.mode;
	d->max_channels = resp.max_channels;
	d->wire_rate = resp.wire_rate;
	d->ring_rate = resp.ring_rate;
	d->own_fd = flags & U4L_NHI_OWN_FD;
	d->base.ops = &nhi_ops;
	d->base.end = resp.end;
	*dev = &d->base;
	return 0;
err:
	if (d->evfd >= 0)
		close(d->evfd);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return ret;
}
