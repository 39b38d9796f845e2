// SPDX-License-Identifier: MIT
/*
 * Protection domains, memory regions, address handles.
 *
 * Registration pins nothing (the copy path never hands memory to hardware),
 * so RLIMIT_MEMLOCK does not limit it; it only checks that the range is
 * mapped, so that a bad registration fails here instead of crashing the
 * responder later.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctx/progress.h"
#include "engine_int.h"

#define KEY_INDEX_MASK 0xffffu

int u4v_alloc_pd(struct u4v_ctx *ctx, struct u4v_pd **out)
{
	struct u4v_pd *pd;

	if (!u4v_quota_take(ctx, &ctx->npd, U4V_MAX_PD))
		return ENOMEM;
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		u4v_quota_give(ctx, &ctx->npd);
		return ENOMEM;
	}
	pd->ctx = ctx;
	*out = pd;
	return 0;
}

int u4v_dealloc_pd(struct u4v_pd *pd)
{
	struct u4v_ctx *ctx = pd->ctx;

	if (atomic_load(&pd->refs))
		return EBUSY;
	u4v_quota_give(ctx, &ctx->npd);
	free(pd);
	return 0;
}

/* Is every page of [addr, addr + len) mapped? */
static bool range_mapped(uint64_t addr, uint64_t len)
{
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t start = addr & ~(uint64_t)(psz - 1);
	uint64_t end = addr + len;
	unsigned char vec[4096];

	while (start < end) {
		uint64_t chunk = (uint64_t)sizeof(vec) * (uint64_t)psz;

		if (chunk > end - start)
			chunk = end - start;
		if (mincore((void *)(uintptr_t)start, chunk, vec))
			return false;
		start += chunk;
	}
	return true;
}

static uint32_t next_tag(struct u4v_ctx *ctx)
{
	/* splitmix64: keys that are not the index or a counter */
	uint64_t z = (ctx->key_seed += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint32_t)z & ~KEY_INDEX_MASK;
}

int u4v_reg_mr(struct u4v_pd *pd, void *addr, size_t length, int access,
	       struct u4v_mr **out)
{
	const int known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			  IBV_ACCESS_RELAXED_ORDERING;
	struct u4v_ctx *ctx = pd->ctx;
	struct u4v_mr *mr;
	uint32_t idx;

	if (access & ~known)
		return EINVAL;
	/* remote write/atomic without local write is invalid (verbs rule) */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (length > U4V_MAX_MR_SIZE ||
	    (uintptr_t)addr + length < (uintptr_t)addr)
		return EINVAL;
	if (length && (!addr || !range_mapped((uintptr_t)addr, length)))
		return EFAULT;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return ENOMEM;
	pthread_mutex_lock(&ctx->obj_lock);
	if (!ctx->mrs) {
		ctx->mrs = calloc(U4V_MAX_MR + 1, sizeof(*ctx->mrs));
		if (!ctx->mrs) {
			pthread_mutex_unlock(&ctx->obj_lock);
			free(mr);
			return ENOMEM;
		}
		ctx->nmr_slots = U4V_MAX_MR;
	}
	for (idx = 1; idx <= ctx->nmr_slots && ctx->mrs[idx]; idx++)
		;
	if (idx > ctx->nmr_slots || idx > KEY_INDEX_MASK) {
		pthread_mutex_unlock(&ctx->obj_lock);
		free(mr);
		return ENOMEM;
	}
	mr->pd = pd;
	mr->addr = (uintptr_t)addr;
	mr->length = length;
	mr->access = access;
	mr->index = idx;
	mr->lkey = next_tag(ctx) | idx;
	mr->rkey = next_tag(ctx) | idx;
	__atomic_store_n(&ctx->mrs[idx], mr, __ATOMIC_RELEASE);
	ctx->nmr++;
	pthread_mutex_unlock(&ctx->obj_lock);
	atomic_fetch_add(&pd->refs, 1);
	*out = mr;
	return 0;
}

int u4v_dereg_mr(struct u4v_mr *mr)
{
	struct u4v_ctx *ctx = mr->pd->ctx;
	uint32_t i;

	/*
	 * Once it is gone from the table no new access can find it; the
	 * responder checks the key for every frame under the QP's lock, so
	 * passing through every QP's lock (and the progress lock) waits out
	 * the accesses already under way. Then the memory is the
	 * application's again.
	 */
	pthread_mutex_lock(&ctx->progress_lock);
	pthread_mutex_lock(&ctx->obj_lock);
	__atomic_store_n(&ctx->mrs[mr->index], NULL, __ATOMIC_RELEASE);
	ctx->nmr--;
	pthread_mutex_unlock(&ctx->obj_lock);
	for (i = 0; ctx->qps && i < ctx->nqps_slots; i++) {
		struct u4v_qp *qp = ctx->qps[i];

		if (qp) {
			pthread_mutex_lock(&qp->lock);
			pthread_mutex_unlock(&qp->lock);
		}
	}
	pthread_mutex_unlock(&ctx->progress_lock);
	atomic_fetch_sub(&mr->pd->refs, 1);
	free(mr);
	return 0;
}

uint32_t u4v_mr_lkey(const struct u4v_mr *mr)
{
	return mr->lkey;
}

uint32_t u4v_mr_rkey(const struct u4v_mr *mr)
{
	return mr->rkey;
}

struct u4v_mr *u4v_mr_lookup(struct u4v_ctx *ctx, uint32_t key)
{
	uint32_t idx = key & KEY_INDEX_MASK;

	if (!ctx->mrs || !idx || idx > ctx->nmr_slots)
		return NULL;
	return __atomic_load_n(&ctx->mrs[idx], __ATOMIC_ACQUIRE);
}

static bool in_bounds(const struct u4v_mr *mr, uint64_t addr, uint64_t len)
{
	return addr >= mr->addr && len <= mr->length &&
	       addr - mr->addr <= mr->length - len;
}

enum ibv_wc_status u4v_mr_check_local(struct u4v_pd *pd, uint32_t lkey,
				      uint64_t addr, uint64_t len, int access)
{
	struct u4v_mr *mr = u4v_mr_lookup(pd->ctx, lkey);

	if (!mr || mr->lkey != lkey || mr->pd != pd)
		return IBV_WC_LOC_PROT_ERR;
	if (!in_bounds(mr, addr, len))
		return IBV_WC_LOC_PROT_ERR;
	if ((access & IBV_ACCESS_LOCAL_WRITE) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return IBV_WC_LOC_PROT_ERR;
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status u4v_mr_check_remote(struct u4v_pd *pd, uint32_t rkey,
				       uint64_t va, uint64_t len, int access,
				       struct u4v_mr **out)
{
	struct u4v_mr *mr = u4v_mr_lookup(pd->ctx, rkey);

	if (!mr || mr->rkey != rkey || mr->pd != pd)
		return IBV_WC_REM_ACCESS_ERR;
	if (!in_bounds(mr, va, len) || (mr->access & access) != access)
		return IBV_WC_REM_ACCESS_ERR;
	if (out)
		*out = mr;
	return IBV_WC_SUCCESS;
}

/* Copy len bytes between a flat buffer and an SGE list, from offset off. */
static void sge_copy(const struct ibv_sge *sge, uint32_t nsge, uint64_t off,
		     uint8_t *buf, uint32_t len, bool into_sges)
{
	uint32_t i;

	for (i = 0; i < nsge && len; i++) {
		void *at = (void *)(uintptr_t)(sge[i].addr + off);
		uint64_t n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off;
		if (n > len)
			n = len;
		if (into_sges)
			memcpy(at, buf, n);
		else
			memcpy(buf, at, n);
		buf += n;
		len -= (uint32_t)n;
		off = 0;
	}
}

void u4v_sge_copy_out(const struct ibv_sge *sge, uint32_t nsge, uint64_t off,
		      void *dst, uint32_t len)
{
	sge_copy(sge, nsge, off, dst, len, false);
}

void u4v_sge_copy_in(const struct ibv_sge *sge, uint32_t nsge, uint64_t off,
		     const void *src, uint32_t len)
{
	sge_copy(sge, nsge, off, (uint8_t *)(uintptr_t)src, len, true);
}

int u4v_create_ah(struct u4v_pd *pd, const struct ibv_ah_attr *attr,
		  struct u4v_ah **out)
{
	struct u4v_ctx *ctx = pd->ctx;
	struct u4v_ah *ah;

	if (!attr || attr->port_num != 1)
		return EINVAL;
	if (!u4v_quota_take(ctx, &ctx->nah, U4V_MAX_AH))
		return ENOMEM;
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		u4v_quota_give(ctx, &ctx->nah);
		return ENOMEM;
	}
	ah->attr = *attr;
	ah->pd = pd;
	atomic_fetch_add(&pd->refs, 1);
	*out = ah;
	return 0;
}

int u4v_destroy_ah(struct u4v_ah *ah)
{
	struct u4v_ctx *ctx = ah->pd->ctx;

	u4v_quota_give(ctx, &ctx->nah);
	atomic_fetch_sub(&ah->pd->refs, 1);
	free(ah);
	return 0;
}
