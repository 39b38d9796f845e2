// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for what a process hands the kernel shim through its
 * rings, built from the module's own files (kernel/usb4verbs_*.c with
 * tests/fuzz/kernel_user.h): the shadow-ring batches of safe mode and
 * their doorbell (any producer and consumer values), and in direct mode
 * the descriptors and doorbell slots the process writes itself, which the
 * soft DMA engine reads. Two contexts of one cable end share a channel
 * (or one context talks to itself), and frames move between their halves
 * through the soft pump; contexts go and come back while frames are in
 * flight. Every pool is its own allocation, so AddressSanitizer sees any
 * access outside one; after every event the ring indices and the cable's
 * bookkeeping must hold (fuzz_kernel.h), and a TX descriptor the kernel
 * posted for a safe-mode process must point into that half's TX pool.
 *
 * Input: the first byte picks the setup (bit 0: the first context is
 * direct, bit 1: the second, bit 2: one context talking to itself, bits
 * 3-7: how many idle contexts hold ids), then
 * events, each a byte (op = byte % EV_NR, side = its bit 7) and what it
 * needs.
 *
 * Build and run: docs/TESTING.md ("Fuzzing").
 */
#include "fuzz_kernel.h"

enum ev {
	EV_SHADOW,   /* safe: the process writes a shadow entry */
	EV_DOORBELL, /* safe: the doorbell system call */
	EV_DESC,     /* direct: the process writes a descriptor */
	EV_DB_PAGE,  /* direct: the process writes its doorbell slots */
	EV_REOPEN,   /* a context goes and comes back, connected again */
	EV_NR
};

/*
 * A context coming back allocates and zeroes a channel's rings and pools,
 * most of an input's cost: past this many per input, later ones are
 * ignored (coverage comes from what happens around a few, not from many).
 */
#define FK_MAX_REOPENS 16

static struct {
	struct u4k_cable *cable;
	struct u4k_dev *dev;
	struct u4k_ucontext *ctx[2];
	bool direct[2], self;
	unsigned int reopens;
	struct u4k_ucontext *idle[U4K_CTX_PER_END - 2];
	int nr_idle;
} fk;

/* the other end takes our live set (ids leave quarantine) */
static int fk_send(struct u4k_cable *cable, struct u4k_msg *m)
{
	(void)cable;
	m->status = m->type == U4K_MSG_MASK ? 0 : -EOPNOTSUPP;
	return 0;
}

/* the soft cable's: no hardware, the soft engine moves every frame */
static const struct u4k_cable_ops fk_ops = {
    .send = fk_send,
};

/* The half of side s on the channel, or NULL. */
static struct u4k_half *half(int s)
{
	struct u4k_ucontext *c = fk.ctx[s], *other = fk.ctx[fk.self ? s : !s];

	return c && other ? c->halves[other->ctx_id][0] : NULL;
}

/* Side s (re)connects to the other side, which takes its half. */
static void connect(int s)
{
	struct u4k_ucontext *c = fk.ctx[s], *o = fk.ctx[fk.self ? s : !s];
	struct u4v_chan_info info;

	if (!c || !o)
		return;
	fk_check_ret(u4k_chan_get(c, o->ctx_id, 0, &info));
	if (o != c)
		fk_check_ret(u4k_chan_get(o, U4V_CHAN_NEXT, 0, &info));
}

static void open_side(int s)
{
	int err;

	fk.ctx[s] = fk_ctx_new(fk.dev, fk.direct[s], &err);
	if (!fk.ctx[s])
		abort(); /* the cable is up, ids are free: a bug */
}

/* a value relative to a ring index, or any */
static u32 index_in(u32 base)
{
	u8 how = fk_byte();

	return how & 1 ? fk_u32() : base + (u32)(s8)fk_byte();
}

static void ev(u8 op)
{
	int s = fk.self ? 0 : op >> 7;
	struct u4k_half *h = half(s);
	u32 mask, v;
	u8 how;

	switch ((enum ev)(op % EV_NR)) {
	case EV_SHADOW:
		if (h && h->shadow) {
			mask = h->depth - 1;
			v = fk_byte();
			h->shadow[v & mask].slot = (u16)fk_u32();
			h->shadow[v & mask].len = (u16)fk_u32();
			h->shadow[v & mask].sof = fk_byte();
			h->shadow[v & mask].eof = fk_byte();
		}
		break;
	case EV_DOORBELL:
		how = fk_byte();
		if (h)
			fk_check_ret(u4k_doorbell(fk.ctx[s], h->remote_ctx,
						  h->lane, how & 1,
						  index_in(h->tx_prod), how & 2,
						  index_in(h->rx_rel)));
		break;
	case EV_DESC:
		if (h && h->direct) {
			struct u4v_desc *d =
			    fk_byte() & 1 ? h->rx_desc : h->tx_desc;
			u64 pool = h->buf[U4V_MAP_TX_POOL]->dma;

			v = fk_byte() & (h->depth - 1);
			d[v].len_flags = fk_u32();
			if (fk_byte() & 1)
				d[v].phys = (u64)fk_u32() << 32 | fk_u32();
			else
				d[v].phys = pool + fk_u32() % (h->depth *
							       U4V_FRAME_SIZE);
		}
		break;
	case EV_DB_PAGE:
		if (h && h->direct) {
			how = fk_byte();
			if (how & 1)
				WRITE_ONCE(*h->tx_db, fk_u32());
			if (how & 2)
				WRITE_ONCE(*h->rx_db, fk_u32());
			/* the soft engine's scan, under the cable lock */
			mutex_lock(&fk.cable->lock);
			u4k_direct_poll(h);
			mutex_unlock(&fk.cable->lock);
		}
		break;
	case EV_REOPEN:
		if (fk.reopens++ >= FK_MAX_REOPENS)
			break;
		fk_ctx_close(&fk.ctx[s]);
		if (fk_byte() & 1) {
			open_side(s);
			connect(s);
		}
		break;
	case EV_NR:
		break;
	}
}

/* A safe-mode half's posted TX descriptors point into its own TX pool. */
FUZZ_CHECKER static void check_posted(const struct u4k_half *h)
{
	u64 pool = h->buf[U4V_MAP_TX_POOL]->dma;
	u32 pos, len;

	if (h->dead || h->direct)
		return;
	for (pos = h->tx_done; pos != h->tx_prod; pos++) {
		const struct u4v_desc *d = &h->tx_desc[pos & (h->depth - 1)];

		len = d->len_flags & U4V_DESC_LEN_MASK ?: U4V_FRAME_SIZE;
		if (d->phys < pool ||
		    d->phys + len > pool + (u64)h->depth * U4V_FRAME_SIZE ||
		    (d->phys - pool) % U4V_FRAME_SIZE) {
			fprintf(stderr, "fuzz_kring: TX descriptor outside "
					"the pool\n");
			abort();
		}
	}
}

FUZZ_CHECKER static void check(void)
{
	int s;

	for (s = 0; s < 2; s++) {
		struct u4k_half *h = half(s);

		if (h) {
			fk_check_half(h);
			check_posted(h);
		}
	}
	fk_check_cable(fk.cable);
}

/* 256 events of at most 14 bytes, most of 2 to 6 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_default_max_len(argc, argv, 1024);
	return 0;
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	int guard = 0, s, err;
	u8 setup;

	memset(&fk, 0, sizeof(fk));
	fk_input_set(data, size);
	u4k_ring_depth = U4V_RING_DEPTH_MIN;
	setup = fk_byte();
	fk.direct[0] = setup & 1;
	fk.direct[1] = setup & 2;
	fk.self = setup & 4;
	fk.cable = u4k_cable_alloc(&fk_ops, 0, 1, 0);
	fk.dev = fk_dev_add(fk.cable);
	/*
	 * ids are handed out round robin: idle contexts holding most of them
	 * let a context that comes back get its old id (a stale half to
	 * retire) within a few reopens
	 */
	fk.nr_idle = (setup >> 3) % (U4K_CTX_PER_END - 1);
	for (s = 0; s < fk.nr_idle; s++)
		fk.idle[s] = fk_ctx_new(fk.dev, false, &err);
	open_side(0);
	if (!fk.self)
		open_side(1);
	connect(0);
	while (fk_input_left() && guard++ < FK_MAX_EVENTS) {
		ev(fk_byte());
		check();
	}
	for (s = 0; s < 2; s++)
		fk_ctx_close(&fk.ctx[s]);
	for (s = 0; s < fk.nr_idle; s++)
		fk_ctx_close(&fk.idle[s]);
	u4k_cable_down(fk.cable);
	fk_dev_remove(fk.cable, fk.dev);
	return 0;
}
