// SPDX-License-Identifier: GPL-2.0-only
/* Around the kernel shim's files in its fuzz targets (fuzz_kernel.h). */
#include <sanitizer/asan_interface.h>

#include "fuzz_kernel.h"

/* ---- pages ---- */

/*
 * Rings and frame pools: page-aligned and zeroed (as __GFP_ZERO), in
 * malloc()ed memory. A freed buffer is poisoned (AddressSanitizer reports
 * any access to it) and becomes reusable, by a buffer of its size, only
 * after FK_PAGES_QUARANTINE more frees. Fresh 64 KiB pools came cold out
 * of malloc(): faulting them in and zeroing them took most of fuzz_kring's
 * time; a reused one is warm.
 */
#define FK_PAGES_QUARANTINE 64
#define FK_PAGES_READY 64

struct fk_pages {
	void *p;
	size_t len;
};
static struct fk_pages fk_quarantine[FK_PAGES_QUARANTINE];
static struct fk_pages fk_ready[FK_PAGES_READY];
static unsigned int fk_quarantine_next, fk_nready;

void *kernel_user_pages(size_t size)
{
	size_t len = PAGE_ALIGN(size);
	void *p = NULL;
	unsigned int i;

	for (i = 0; i < fk_nready && !p; i++) {
		if (fk_ready[i].len != len)
			continue;
		p = fk_ready[i].p;
		fk_ready[i] = fk_ready[--fk_nready];
		ASAN_UNPOISON_MEMORY_REGION(p, len);
	}
	if (!p)
		p = aligned_alloc(PAGE_SIZE, len);
	if (p)
		memset(p, 0, len);
	return p;
}

void kernel_user_pages_free(void *p, size_t size)
{
	struct fk_pages *q;

	if (!p)
		return;
	ASAN_POISON_MEMORY_REGION(p, PAGE_ALIGN(size));
	q = &fk_quarantine[fk_quarantine_next++ % FK_PAGES_QUARANTINE];
	if (q->p && fk_nready < FK_PAGES_READY) {
		fk_ready[fk_nready++] = *q;
	} else if (q->p) {
		ASAN_UNPOISON_MEMORY_REGION(q->p, q->len);
		free(q->p);
	}
	q->p = p;
	q->len = PAGE_ALIGN(size);
}

/* ---- stand-ins for the files not built here ---- */

/* usb4verbs_ib.c's mmap_free: no mapping holds a buffer here */
void kernel_user_mmap_free(struct rdma_user_mmap_entry *e)
{
	u4k_buf_free(container_of(e, struct u4k_buf, rdma));
}

void u4k_ctx_signal_cqs(struct u4k_ucontext *uctx)
{
	(void)uctx; /* no CQs: completions are the process's */
}

static struct u4k_dev *dev_alloc(struct u4k_cable *cable)
{
	struct u4k_dev *dev = kzalloc(sizeof(*dev), GFP_KERNEL);

	if (dev)
		dev->cable = cable;
	return dev;
}

struct u4k_dev *u4k_dev_add(struct u4k_cable *cable, struct device *dma_dev,
			    u64 guid)
{
	(void)dma_dev;
	(void)guid;
	return dev_alloc(cable) ?: ERR_PTR(-ENOMEM);
}

void u4k_dev_remove(struct u4k_dev *dev)
{
	kfree(dev);
}

int u4k_tb_init(void)
{
	return 0;
}

void u4k_tb_exit(void)
{
}

/* usb4verbs_netdev.c: no net device gives the ports GIDs here */
int u4k_netdev_init(void)
{
	return 0;
}

void u4k_netdev_exit(void)
{
}

/* usb4verbs_gsi.c: no ib_mad here, so no MAD ever crosses */
void u4k_gsi_stop(struct u4k_dev *dev)
{
	(void)dev;
}

void u4k_gsi_recv(struct u4k_dev *dev, const struct u4k_mad *mad)
{
	(void)dev;
	(void)mad;
}

/* ---- devices and contexts ---- */

struct u4k_dev *fk_dev_add(struct u4k_cable *cable)
{
	struct u4k_dev *dev = cable ? dev_alloc(cable) : NULL;

	if (!dev)
		abort();
	cable->dev = dev;
	return dev;
}

void fk_dev_remove(struct u4k_cable *cable, struct u4k_dev *dev)
{
	u4k_dev_remove(dev);
	u4k_cable_put(cable);
}

/* u4k_ctx_put_res */
static void fk_ctx_put_res(struct u4k_ucontext *uctx)
{
	u4k_buf_remove(uctx->db[0]);
	u4k_buf_remove(uctx->db[1]);
	u4k_buf_remove(uctx->status_buf);
}

struct u4k_ucontext *fk_ctx_new(struct u4k_dev *dev, bool direct, int *err)
{
	struct u4k_ucontext *uctx = kzalloc(sizeof(*uctx), GFP_KERNEL);
	int i;

	*err = -ENOMEM;
	if (!uctx)
		return NULL;
	uctx->dev = dev;
	uctx->direct = direct;
	INIT_LIST_HEAD(&uctx->pending_chans);
	INIT_LIST_HEAD(&uctx->graveyard);
	INIT_LIST_HEAD(&uctx->cqs);
	spin_lock_init(&uctx->cq_lock);
	uctx->status_buf = u4k_buf_alloc(uctx, PAGE_SIZE, false);
	if (!uctx->status_buf)
		goto err;
	uctx->status = uctx->status_buf->kva;
	uctx->status->abi_version = U4V_ABI_VERSION;
	for (i = 0; direct && i < 2; i++) {
		uctx->db[i] = u4k_buf_alloc(uctx, PAGE_SIZE, true);
		if (!uctx->db[i])
			goto err;
	}
	*err = u4k_ctx_attach(uctx);
	fk_check_ret(*err);
	if (!*err)
		return uctx;
err:
	fk_ctx_put_res(uctx);
	kfree(uctx);
	return NULL;
}

void fk_ctx_free(struct u4k_ucontext *uctx)
{
	u4k_ctx_detach(uctx);
	fk_ctx_put_res(uctx);
	kfree(uctx);
}

void fk_ctx_close(struct u4k_ucontext **slot)
{
	if (*slot)
		fk_ctx_free(*slot);
	*slot = NULL;
}

/* ---- invariants ---- */

static void fk_fail(const char *what)
{
	fprintf(stderr, "fuzz_kernel: invariant broken: %s\n", what);
	abort();
}

void fk_check_ret(long ret)
{
	if (ret > 0 || ret < -MAX_ERRNO)
		fk_fail("an entry point returned no errno");
}

FUZZ_CHECKER void fk_check_half(const struct u4k_half *h)
{
	if (h->dead)
		return;
	if (h->tx_prod - h->tx_done > h->depth - 1)
		fk_fail("TX positions in flight beyond depth - 1");
	if (h->rx_done - h->rx_rel > h->depth - 1)
		fk_fail("RX positions delivered beyond depth - 1");
}

FUZZ_CHECKER static u32 fk_check_owner(struct u4k_ucontext *c)
{
	struct u4k_half *h;
	u32 r, counted = 0;

	for (r = 0; r < U4V_MAX_CTX * U4V_MAX_LANES; r++) {
		h = c->halves[r / U4V_MAX_LANES][r % U4V_MAX_LANES];
		if (!h)
			continue;
		if (h->remote_ctx != r / U4V_MAX_LANES ||
		    h->lane != r % U4V_MAX_LANES || h->uctx != c)
			fk_fail("a half under another id, lane or owner");
		if (h->lane && h->chan->loopback)
			fk_fail("a lane past 0 within one end");
		if (h->chan->loopback && h->gone)
			fk_fail(
			    "a channel of our own end made stale by the peer");
		fk_check_half(h);
		counted += h->counted;
	}
	list_for_each_entry (h, &c->graveyard, pending)
		counted += h->counted;
	return counted;
}

FUZZ_CHECKER void fk_check_cable(struct u4k_cable *cable)
{
	u64 live = 0;
	u32 i, counted = 0;

	for (i = 0; i < U4V_MAX_CTX; i++) {
		struct u4k_ucontext *c = cable->ctx[i];

		if (!c)
			continue;
		if (u4k_ctx_end(i) != cable->end || c->ctx_id != i)
			fk_fail("a context under an id not of our end");
		live |= BIT_ULL(i);
		counted += fk_check_owner(c);
	}
	if (live != cable->local_mask)
		fk_fail("the live set is not the contexts");
	if (cable->quarantine & cable->local_mask)
		fk_fail("a quarantined id in use");
	if (counted != cable->nr_channels)
		fk_fail("the budget does not count the halves that hold it");
	if (cable->nr_channels > cable->max_channels)
		fk_fail("more channels than the budget");
}

/* ---- the input ---- */

static struct {
	const u8 *data;
	size_t len, pos;
} fk_in;

void fk_input_set(const u8 *data, size_t len)
{
	fk_in.data = data;
	fk_in.len = len;
	fk_in.pos = 0;
}

bool fk_input_left(void)
{
	return fk_in.pos < fk_in.len;
}

u8 fk_byte(void)
{
	return fk_in.pos < fk_in.len ? fk_in.data[fk_in.pos++] : 0;
}

u32 fk_u32(void)
{
	u32 v = 0;
	int i;

	for (i = 0; i < 4; i++)
		v |= (u32)fk_byte() << (8 * i);
	return v;
}

void fk_bytes(void *p, size_t n)
{
	size_t k = fk_in.len - fk_in.pos < n ? fk_in.len - fk_in.pos : n;

	memcpy(p, fk_in.data + fk_in.pos, k);
	memset((u8 *)p + k, 0, n - k);
	fk_in.pos += k;
}
