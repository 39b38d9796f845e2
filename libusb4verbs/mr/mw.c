// SPDX-License-Identifier: MIT
/*
 * Memory windows, type 1 and type 2 (2B: a type 2 window is accessed and
 * remotely invalidated only through the QP it was bound through), after
 * IBTA 10.6.7 and ibv_alloc_mw(3), ibv_bind_mw(3), ibv_post_send(3).
 *
 * Binds and invalidations run in send-queue order: the requester executes
 * a BIND_MW or LOCAL_INV WQE when it reaches it (u4v_mw_local_op), a SEND
 * with invalidate when the responder executes it. Every window's state is
 * under ctx->mw_lock; a remote access through a window checks it under the
 * lock for every frame, as accesses through MRs check their key.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine_int.h"
#include "wire/opcode.h"

/* Access a window may grant (zero-based windows are not offered). */
#define MW_ACCESS                                                              \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

int u4v_alloc_mw(struct u4v_pd *pd, enum ibv_mw_type type,
		 struct u4v_mw **out)
{
	struct u4v_ctx *ctx = pd->ctx;
	struct u4v_mw *mw;
	uint32_t idx;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return EINVAL;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return ENOMEM;
	pthread_mutex_lock(&ctx->obj_lock);
	if (!ctx->mws) {
		ctx->mws = calloc(U4V_MAX_MW + 1, sizeof(*ctx->mws));
		if (!ctx->mws)
			goto err;
	}
	idx = u4v_key_slot(ctx->mws, U4V_MAX_MW, &ctx->mw_hint);
	if (!idx)
		goto err;
	mw->pd = pd;
	mw->type = type;
	mw->index = idx;
	mw->rkey = (u4v_key_random(ctx) & (U4V_KEY_TAG_MASK | U4V_KEY_MASK)) |
		   U4V_KEY_MW | idx << U4V_KEY_BITS;
	mw->key_base = mw->rkey & ~U4V_KEY_MASK;
	mw->ibv.rkey = mw->rkey;
	mw->ibv.type = type;
	pthread_mutex_lock(&ctx->mw_lock);
	ctx->mws[idx] = mw;
	ctx->nmw++;
	pthread_mutex_unlock(&ctx->mw_lock);
	pthread_mutex_unlock(&ctx->obj_lock);
	atomic_fetch_add(&pd->refs, 1);
	*out = mw;
	return 0;
err:
	pthread_mutex_unlock(&ctx->obj_lock);
	free(mw);
	return ENOMEM;
}

/* Unbind (caller holds mw_lock). */
static void unbind(struct u4v_mw *mw)
{
	if (mw->bound && mw->mr)
		mw->mr->nmw--;
	mw->bound = false;
	mw->mr = NULL;
	mw->addr = mw->length = 0;
	mw->access = 0;
}

/* ibv_dealloc_mw(3): unbinds it if bound. */
int u4v_dealloc_mw(struct u4v_mw *mw)
{
	struct u4v_ctx *ctx = mw->pd->ctx;

	pthread_mutex_lock(&ctx->obj_lock);
	pthread_mutex_lock(&ctx->mw_lock);
	unbind(mw);
	ctx->mws[mw->index] = NULL;
	ctx->nmw--;
	pthread_mutex_unlock(&ctx->mw_lock);
	pthread_mutex_unlock(&ctx->obj_lock);
	atomic_fetch_sub(&mw->pd->refs, 1);
	free(mw);
	return 0;
}

struct ibv_mw *u4v_mw_ibv(struct u4v_mw *mw)
{
	return &mw->ibv;
}

struct u4v_mw *u4v_mw_from_ibv(struct ibv_mw *ibmw)
{
	return container_of(ibmw, struct u4v_mw, ibv);
}

/* The window a key names, whatever its key bits (caller holds mw_lock). */
static struct u4v_mw *find(struct u4v_ctx *ctx, uint32_t key)
{
	uint32_t idx = u4v_key_index(key);
	struct u4v_mw *mw;

	if (!(key & U4V_KEY_MW) || !ctx->mws || !idx || idx > U4V_MAX_MW)
		return NULL;
	mw = ctx->mws[idx];
	if (!mw || mw->key_base != (key & ~U4V_KEY_MASK))
		return NULL;
	return mw;
}

/* The bind rules of IBTA 10.6.7 (caller holds mw_lock). */
static bool bind_allowed(struct u4v_qp *qp, const struct u4v_swqe *w,
			 const struct u4v_mw *mw, const struct u4v_mr *mr)
{
	if (mw->pd != qp->pd) /* C10-72 */
		return false;
	if (w->bind_access & ~MW_ACCESS)
		return false;
	/* a type 2 window is bound from the free state, never to nothing */
	if (mw->type == IBV_MW_TYPE_2 &&
	    (mw->bound || !w->bind_len)) /* o10-37.2.30, .40 */
		return false;
	if (!w->bind_len)
		return true; /* type 1: unbind */
	return mr && mr->lkey == w->bind_lkey && mr->pd == mw->pd &&
	       (mr->access & IBV_ACCESS_MW_BIND) && /* C10-73 */
	       (!(w->bind_access &
		  (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) ||
		(mr->access & IBV_ACCESS_LOCAL_WRITE)) && /* C10-74 */
	       u4v_in_range(mr->addr, mr->length, w->bind_addr,
			    w->bind_len); /* C10-75 */
}

static enum ibv_wc_status bind(struct u4v_qp *qp, const struct u4v_swqe *w)
{
	struct u4v_ctx *ctx = qp->ctx;
	struct u4v_mr *mr = NULL;
	struct u4v_mw *mw;
	bool ok;

	pthread_mutex_lock(&ctx->mw_lock);
	mw = find(ctx, w->bind_mw_key);
	if (w->bind_len)
		mr = u4v_mr_lookup(ctx, w->bind_lkey);
	ok = mw && bind_allowed(qp, w, mw, mr);
	if (ok) {
		unbind(mw);
		mw->rkey = (mw->rkey & ~U4V_KEY_MASK) | (w->rkey & U4V_KEY_MASK);
		if (w->bind_len) {
			mw->bound = true;
			mw->mr = mr;
			mr->nmw++;
			mw->addr = w->bind_addr;
			mw->length = w->bind_len;
			mw->access = w->bind_access;
			mw->qpn = qp->qpn;
		}
	}
	pthread_mutex_unlock(&ctx->mw_lock);
	return ok ? IBV_WC_SUCCESS : IBV_WC_MW_BIND_ERR;
}

/*
 * Invalidate the type 2 window rkey names, bound and in qp's PD; by a SEND
 * with invalidate only through the QP it is bound to. Our MRs are not
 * fast-register MRs: their keys cannot be invalidated.
 */
static bool invalidate(struct u4v_qp *qp, uint32_t rkey, bool remote)
{
	struct u4v_ctx *ctx = qp->ctx;
	struct u4v_mw *mw;
	bool ok;

	pthread_mutex_lock(&ctx->mw_lock);
	mw = find(ctx, rkey);
	ok = mw && mw->rkey == rkey && mw->type == IBV_MW_TYPE_2 &&
	     mw->bound && mw->pd == qp->pd && (!remote || mw->qpn == qp->qpn);
	if (ok)
		unbind(mw);
	pthread_mutex_unlock(&ctx->mw_lock);
	return ok;
}

enum ibv_wc_status u4v_mw_local_op(struct u4v_qp *qp, const struct u4v_swqe *w)
{
	if (w->opcode == IBV_WR_BIND_MW)
		return bind(qp, w);
	return invalidate(qp, w->rkey, false) ? IBV_WC_SUCCESS :
						IBV_WC_LOC_QP_OP_ERR;
}

int u4v_mw_remote_invalidate(struct u4v_qp *qp, uint32_t rkey)
{
	return invalidate(qp, rkey, true) ? 0 : EINVAL;
}

enum ibv_wc_status u4v_mw_check_remote(struct u4v_qp *qp, uint32_t rkey,
				       uint64_t va, uint64_t len, int access,
				       struct u4v_mr **out)
{
	struct u4v_ctx *ctx = qp->ctx;
	struct u4v_mw *mw;
	bool ok;

	pthread_mutex_lock(&ctx->mw_lock);
	mw = find(ctx, rkey);
	ok = mw && mw->rkey == rkey && mw->bound && mw->pd == qp->pd &&
	     (mw->type == IBV_MW_TYPE_1 || mw->qpn == qp->qpn) &&
	     (mw->access & access) == access &&
	     u4v_in_range(mw->addr, mw->length, va, len);
	if (ok && out)
		*out = mw->mr;
	pthread_mutex_unlock(&ctx->mw_lock);
	return ok ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR;
}

void u4v_mw_qp_gone(struct u4v_qp *qp)
{
	struct u4v_ctx *ctx = qp->ctx;
	uint32_t i;

	pthread_mutex_lock(&ctx->mw_lock);
	for (i = 1; ctx->nmw && ctx->mws && i <= U4V_MAX_MW; i++) {
		struct u4v_mw *mw = ctx->mws[i];

		if (mw && mw->type == IBV_MW_TYPE_2 && mw->bound &&
		    mw->qpn == qp->qpn)
			unbind(mw);
	}
	pthread_mutex_unlock(&ctx->mw_lock);
}
