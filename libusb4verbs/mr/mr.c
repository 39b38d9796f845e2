// SPDX-License-Identifier: MIT
/*
 * Protection domains, memory regions, address handles.
 *
 * Registration pins nothing (the copy path never hands memory to hardware),
 * so RLIMIT_MEMLOCK does not limit it; it only checks that a kernel device
 * could pin the range for the access asked (pin.c), so that a bad
 * registration fails here instead of crashing the responder later. An ODP MR (odp.c) need not be mapped, and may be over
 * the whole address space (implicit): its memory is only ever copied in
 * ways that cannot fault.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/progress.h"
#include "engine_int.h"

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

/* Random bits for keys (caller holds obj_lock). */
uint32_t u4v_key_random(struct u4v_ctx *ctx)
{
	/* splitmix64: keys that are not the index or a counter */
	uint64_t z = (ctx->key_seed += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint32_t)z;
}

/* An MR key: random tag and key bits around the index. */
static uint32_t mr_key(struct u4v_ctx *ctx, uint32_t idx)
{
	return (u4v_key_random(ctx) & (U4V_KEY_TAG_MASK | U4V_KEY_MASK)) |
	       idx << U4V_KEY_BITS;
}

/* The rules of ibv_reg_mr(3) for a region and its access flags. */
static int check_region(uint64_t addr, uint64_t length, int access)
{
	const int known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			  IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND |
			  IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING;
	bool odp = access & IBV_ACCESS_ON_DEMAND;
	/* implicit ODP: addr 0, length SIZE_MAX, the whole address space */
	bool implicit = odp && !addr && length == UINT64_MAX;

	if (access & ~known)
		return EINVAL;
	/* remote write/atomic without local write is invalid (verbs rule) */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	/* huge pages are a promise about an explicit ODP MR's memory */
	if ((access & IBV_ACCESS_HUGETLB) && (!odp || implicit))
		return EINVAL;
	if (odp && !u4v_odp_available())
		return EOPNOTSUPP;
	if (implicit)
		return 0;
	if (length > U4V_MAX_MR_SIZE || addr + length < addr)
		return EINVAL;
	if (length &&
	    (!addr || (!odp && !u4v_range_pinnable(addr, length, access))))
		return EFAULT;
	return 0;
}

int u4v_reg_mr(struct u4v_pd *pd, void *addr, size_t length, int access,
	       struct u4v_mr **out)
{
	struct u4v_ctx *ctx = pd->ctx;
	struct u4v_mr *mr;
	uint32_t idx;
	int err;

	err = check_region((uintptr_t)addr, length, access);
	if (err)
		return err;
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
	idx = u4v_key_slot(ctx->mrs, ctx->nmr_slots, &ctx->mr_hint);
	if (!idx) {
		pthread_mutex_unlock(&ctx->obj_lock);
		free(mr);
		return ENOMEM;
	}
	mr->pd = pd;
	mr->addr = (uintptr_t)addr;
	mr->length = length;
	mr->access = access;
	mr->index = idx;
	mr->lkey = mr_key(ctx, idx);
	mr->rkey = mr_key(ctx, idx);
	__atomic_store_n(&ctx->mrs[idx], mr, __ATOMIC_RELEASE);
	ctx->nmr++;
	pthread_mutex_unlock(&ctx->obj_lock);
	atomic_fetch_add(&pd->refs, 1);
	*out = mr;
	return 0;
}

/*
 * Put next (NULL: nothing) in mr's table slot, unless windows are bound to
 * mr (ibv_dereg_mr(3) and a reregistration fail then: a bind holds mw_lock
 * from finding the MR to counting itself). Once the old MR is out of the
 * table no new access finds it; the responder checks keys for every frame
 * under the QP's lock, so passing through every QP's lock (and the
 * progress lock) waits out the accesses already under way. Then the old
 * MR and its memory are the caller's again.
 */
static int replace(struct u4v_mr *mr, struct u4v_mr *next)
{
	struct u4v_ctx *ctx = mr->pd->ctx;
	bool busy;
	uint32_t i;

	pthread_mutex_lock(&ctx->progress_lock);
	pthread_mutex_lock(&ctx->obj_lock);
	pthread_mutex_lock(&ctx->mw_lock);
	busy = mr->nmw;
	if (!busy)
		__atomic_store_n(&ctx->mrs[mr->index], next, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->mw_lock);
	if (busy) {
		pthread_mutex_unlock(&ctx->obj_lock);
		pthread_mutex_unlock(&ctx->progress_lock);
		return EBUSY;
	}
	if (!next)
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
	return 0;
}

int u4v_dereg_mr(struct u4v_mr *mr)
{
	int err = replace(mr, NULL);

	if (err)
		return err;
	atomic_fetch_sub(&mr->pd->refs, 1);
	free(mr);
	return 0;
}

int u4v_rereg_mr(struct u4v_mr **mrp, int flags, struct u4v_pd *pd,
		 void *addr, size_t length, int access)
{
	const int known = IBV_REREG_MR_CHANGE_TRANSLATION |
			  IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
	struct u4v_mr *old = *mrp, *mr;
	int err;

	if (!flags || (flags & ~known) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) &&
	     (!pd || pd->ctx != old->pd->ctx)))
		return EINVAL;
	mr = malloc(sizeof(*mr));
	if (!mr)
		return ENOMEM;
	*mr = *old;
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr->pd = pd;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = (uintptr_t)addr;
		mr->length = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = access;
	err = check_region(mr->addr, mr->length, mr->access);
	if (!err)
		err = replace(old, mr);
	if (err) {
		free(mr);
		return err;
	}
	if (mr->pd != old->pd) {
		atomic_fetch_add(&mr->pd->refs, 1);
		atomic_fetch_sub(&old->pd->refs, 1);
	}
	free(old);
	*mrp = mr;
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
	uint32_t idx = u4v_key_index(key);

	if ((key & U4V_KEY_MW) || !ctx->mrs || !idx || idx > ctx->nmr_slots)
		return NULL;
	return __atomic_load_n(&ctx->mrs[idx], __ATOMIC_ACQUIRE);
}

/* The MR lkey names, if [addr, addr + len) lies in it for access. */
static const struct u4v_mr *local_mr(struct u4v_pd *pd, uint32_t lkey,
				     uint64_t addr, uint64_t len, int access)
{
	struct u4v_mr *mr = u4v_mr_lookup(pd->ctx, lkey);

	if (!mr || mr->lkey != lkey || mr->pd != pd ||
	    !u4v_in_range(mr->addr, mr->length, addr, len) ||
	    ((access & IBV_ACCESS_LOCAL_WRITE) &&
	     !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
		return NULL;
	return mr;
}

enum ibv_wc_status u4v_mr_check_local(struct u4v_pd *pd, uint32_t lkey,
				      uint64_t addr, uint64_t len, int access)
{
	return local_mr(pd, lkey, addr, len, access) ? IBV_WC_SUCCESS :
						       IBV_WC_LOC_PROT_ERR;
}

enum ibv_wc_status u4v_mr_check_remote(struct u4v_qp *qp, uint32_t rkey,
				       uint64_t va, uint64_t len, int access,
				       struct u4v_mr **out)
{
	struct u4v_mr *mr;

	if (rkey & U4V_KEY_MW)
		return u4v_mw_check_remote(qp, rkey, va, len, access, out);
	mr = u4v_mr_lookup(qp->ctx, rkey);
	if (!mr || mr->rkey != rkey || mr->pd != qp->pd)
		return IBV_WC_REM_ACCESS_ERR;
	if (!u4v_in_range(mr->addr, mr->length, va, len) ||
	    (mr->access & access) != access)
		return IBV_WC_REM_ACCESS_ERR;
	if (out)
		*out = mr;
	return IBV_WC_SUCCESS;
}

/*
 * Copy len bytes between a flat buffer and an SGE list, from offset off.
 * Every SGE is checked when it is touched (its MR may have gone or moved
 * since the work request was posted: its key, PD, range and, to write into
 * it, local write), so the copy runs under the QP's lock, which
 * deregistration waits for.
 */
static enum ibv_wc_status sge_copy(struct u4v_pd *pd,
				   const struct ibv_sge *sge, uint32_t nsge,
				   uint64_t off, uint8_t *buf, uint32_t len,
				   bool into_sges)
{
	const struct u4v_mr *mr;
	uint32_t i;

	for (i = 0; i < nsge && len; i++) {
		uint64_t at = sge[i].addr + off;
		uint64_t n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off;
		if (n > len)
			n = len;
		mr = local_mr(pd, sge[i].lkey, at, n,
			      into_sges ? IBV_ACCESS_LOCAL_WRITE : 0);
		if (!mr)
			return IBV_WC_LOC_PROT_ERR;
		if (mr->access & IBV_ACCESS_ON_DEMAND) {
			if (into_sges ? u4v_odp_write(at, buf, n) :
					u4v_odp_read(buf, at, n))
				return IBV_WC_LOC_PROT_ERR;
		} else if (into_sges) {
			memcpy((void *)(uintptr_t)at, buf, n);
		} else {
			memcpy(buf, (const void *)(uintptr_t)at, n);
		}
		buf += n;
		len -= (uint32_t)n;
		off = 0;
	}
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status u4v_mr_write(const struct u4v_mr *mr, uint64_t addr,
				const void *src, uint32_t len)
{
	if (!(mr->access & IBV_ACCESS_ON_DEMAND))
		memcpy((void *)(uintptr_t)addr, src, len);
	else if (u4v_odp_write(addr, src, len))
		return IBV_WC_REM_ACCESS_ERR;
	return IBV_WC_SUCCESS;
}

/* Atomic against every other atomic on this target, in any process. */
enum ibv_wc_status u4v_mr_atomic(const struct u4v_mr *mr, uint64_t addr,
				 bool cmp_swap, uint64_t compare,
				 uint64_t swap_add, uint64_t *orig)
{
	uint64_t *target = (uint64_t *)(uintptr_t)addr;

	if ((mr->access & IBV_ACCESS_ON_DEMAND) && u4v_odp_prepare_atomic(addr))
		return IBV_WC_REM_ACCESS_ERR;
	if (cmp_swap) {
		*orig = compare;
		__atomic_compare_exchange_n(target, orig, swap_add, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		*orig = __atomic_fetch_add(target, swap_add, __ATOMIC_SEQ_CST);
	}
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status u4v_sge_copy_out(struct u4v_pd *pd,
				    const struct ibv_sge *sge, uint32_t nsge,
				    uint64_t off, void *dst, uint32_t len)
{
	return sge_copy(pd, sge, nsge, off, dst, len, false);
}

enum ibv_wc_status u4v_sge_copy_in(struct u4v_pd *pd,
				   const struct ibv_sge *sge, uint32_t nsge,
				   uint64_t off, const void *src, uint32_t len)
{
	return sge_copy(pd, sge, nsge, off, (uint8_t *)(uintptr_t)src, len,
			true);
}

int u4v_create_ah(struct u4v_pd *pd, const struct ibv_ah_attr *attr,
		  const struct ibv_gid_entry *sgid, struct u4v_ah **out)
{
	struct u4v_ctx *ctx = pd->ctx;
	struct u4v_ah *ah;

	if (!attr || attr->port_num != 1)
		return EINVAL;
	/* RoCE: a GID is the only address there is (as ib_core's check) */
	if (!attr->is_global || !sgid ||
	    sgid->gid_index != attr->grh.sgid_index)
		return EINVAL;
	if (!u4v_quota_take(ctx, &ctx->nah, U4V_MAX_AH))
		return ENOMEM;
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		u4v_quota_give(ctx, &ctx->nah);
		return ENOMEM;
	}
	ah->attr = *attr;
	ah->sgid = *sgid;
	ah->pd = pd;
	atomic_fetch_add(&pd->refs, 1);
	*out = ah;
	return 0;
}

void u4v_ah_grh(const struct u4v_ah *ah, struct u4w_hdr *h)
{
	const struct ibv_global_route *grh = &ah->attr.grh;

	/* every AH is global (u4v_create_ah) */
	h->flags |= U4W_F_GRH;
	memcpy(h->sgid, ah->sgid.gid.raw, sizeof(h->sgid));
	memcpy(h->dgid, grh->dgid.raw, sizeof(h->dgid));
	h->flow_label = grh->flow_label;
	h->tclass = grh->traffic_class;
	h->hop_limit = grh->hop_limit;
	h->roce_v2 = ah->sgid.gid_type == IBV_GID_TYPE_ROCE_V2;
}

int u4v_destroy_ah(struct u4v_ah *ah)
{
	struct u4v_ctx *ctx = ah->pd->ctx;

	u4v_quota_give(ctx, &ctx->nah);
	atomic_fetch_sub(&ah->pd->refs, 1);
	free(ah);
	return 0;
}
