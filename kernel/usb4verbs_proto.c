// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: the context id space of a cable end and the channel protocol
 * between the shims of the two ends.
 *
 * Each end numbers its own contexts (end 0 the low half of the ids, end 1
 * the high half) and tells the other end its live set (MASK) on every
 * change; an id is not reused until the other end has heard that it left.
 * A cross-end channel is made the first time a context connects to a
 * context of the other end. End 0 decides every one of them: it checks
 * its budget, prepares its half and sends OPEN; end 1 checks its own
 * budget, joins and tells its context. A connect from end 1 asks end 0
 * with REQ. Since only end 0 sends OPEN, two contexts connecting to each
 * other at once get one channel.
 *
 * Two contexts may hold several channels, their lanes (U4V_MAX_LANES):
 * every message names one, and each is made, budgeted and closed on its
 * own like lane 0; a context that leaves takes all of its lanes along.
 *
 * Locks: end 0 holds its cable->lock while OPEN runs at end 1, which takes
 * end 1's. No other path holds a cable lock while sending, so the order is
 * always end 0 before end 1.
 */
#include "usb4verbs.h"

static bool u4k_local_ctx(struct u4k_cable *cable, u32 id)
{
	return id < U4V_MAX_CTX && u4k_ctx_end(id) == cable->end;
}

/* Tell the other end which contexts live here (not under cable->lock). */
void u4k_proto_send_mask(struct u4k_cable *cable)
{
	struct u4k_msg m = { .type = U4K_MSG_MASK };
	u64 quarantined;

	mutex_lock(&cable->lock);
	m.mask = cable->local_mask;
	m.seq = ++cable->mask_seq;
	quarantined = cable->quarantine;
	mutex_unlock(&cable->lock);
	if (!READ_ONCE(cable->up))
		return;

	if (cable->ops->send(cable, &m) || m.status)
		return; /* the ids stay quarantined until a MASK gets through */
	mutex_lock(&cable->lock);
	cable->quarantine &= ~quarantined;
	mutex_unlock(&cable->lock);
}

/* Give a new context an id of this end (round robin: late reuse). */
int u4k_ctx_attach(struct u4k_ucontext *uctx)
{
	struct u4k_cable *cable = u4k_cable_of(uctx);
	u32 base = cable->end * U4K_CTX_PER_END;
	u32 i, id;
	int ret = -EBUSY;

	mutex_lock(&cable->lock);
	if (!cable->up) {
		ret = -ENODEV;
		goto out;
	}
	for (i = 0; i < U4K_CTX_PER_END; i++) {
		id = base + (cable->next_ctx - base + i) % U4K_CTX_PER_END;
		if (cable->ctx[id] || (cable->quarantine & BIT_ULL(id)))
			continue;
		cable->ctx[id] = uctx;
		cable->next_ctx = id + 1;
		cable->local_mask |= BIT_ULL(id);
		uctx->ctx_id = id;
		uctx->status->ctx_id = id;
		if (uctx->direct && !cable->nr_direct++)
			u4k_soft_engine_wake();
		u4k_cable_publish(cable);
		ret = 0;
		break;
	}
out:
	mutex_unlock(&cable->lock);
	if (!ret)
		u4k_proto_send_mask(cable);
	return ret;
}

void u4k_ctx_detach(struct u4k_ucontext *uctx)
{
	struct u4k_cable *cable = u4k_cable_of(uctx);
	u64 bit = BIT_ULL(uctx->ctx_id);

	mutex_lock(&cable->lock);
	if (cable->ctx[uctx->ctx_id] == uctx) {
		cable->ctx[uctx->ctx_id] = NULL;
		cable->local_mask &= ~bit;
		cable->quarantine |= bit;
		cable->nr_direct -= uctx->direct;
	}
	u4k_ctx_release_chans(uctx);
	u4k_cable_publish(cable);
	mutex_unlock(&cable->lock);
	u4k_proto_send_mask(cable);
}

/* Under cable->lock: h holds one unit of the budget until it goes. */
static void u4k_proto_count(struct u4k_cable *cable, struct u4k_half *h)
{
	h->counted = true;
	cable->nr_channels++;
}

/* Under cable->lock (end 0): make channel (a, b, lane) unless it exists. */
static int u4k_proto_open(struct u4k_cable *cable, u32 a, u32 b, u32 lane)
{
	struct u4k_msg m = { .type = U4K_MSG_OPEN, .a = a, .b = b,
			     .depth = u4k_ring_depth, .lane = lane };
	const struct u4k_cable_ops *ops = cable->ops;
	struct u4k_ucontext *x = cable->ctx[a];
	bool joined = false; /* end 1 has, or may have, joined */
	struct u4k_half *h;
	int ret;

	if (!cable->up)
		return -ENOLINK;
	if (!x || !(cable->remote_mask & BIT_ULL(b)))
		return -EHOSTUNREACH;
	h = x->halves[b][lane];
	if (h && !u4k_half_stale(h))
		return 0;
	if (cable->nr_channels >= cable->max_channels)
		return -ENOSPC;
	ret = u4k_chan_new(x, b, lane, &h);
	if (ret)
		return ret;
	u4k_proto_count(cable, h); /* u4k_half_kill gives it back */
	ret = ops->chan_open ? ops->chan_open(h, &m) : 0;
	if (!ret) {
		cable->opening = h;
		ret = ops->send(cable, &m);
		/* no answer (lost, late, scrambled): it may have joined */
		joined = ret;
		ret = ret ?: m.status;
		cable->opening = NULL;
	}
	if (!ret && ops->chan_connect) {
		ret = ops->chan_connect(h, &m);
		joined = ret;
	}
	if (ret) {
		/* end 1 forgets what it may hold of the channel */
		if (joined) {
			m.type = U4K_MSG_CLOSE;
			ops->send(cable, &m);
		}
		u4k_half_kill(h);
		return ret;
	}
	/* the caller takes it itself; a REQ's target learns of it */
	u4k_half_install(x, h, true);
	return 0;
}

/* End 1, under cable->lock: join channel (a, b, lane) for our context b. */
static int u4k_proto_join(struct u4k_cable *cable, struct u4k_msg *m)
{
	struct u4k_ucontext *y = cable->ctx[m->b];
	struct u4k_half *h;

	if (!y)
		return -EHOSTUNREACH;
	if (m->depth != u4k_ring_depth)
		return -EINVAL;
	/*
	 * End 0 opens only a channel it has no live half of: ours is left
	 * from an OPEN whose answer it never got (nor our CLOSE). It goes.
	 */
	h = y->halves[m->a][m->lane];
	if (h && !u4k_half_stale(h))
		u4k_half_gone(h);
	if (cable->nr_channels >= cable->max_channels)
		return -ENOSPC;
	h = cable->ops->chan_join(cable, y, m);
	if (IS_ERR(h))
		return PTR_ERR(h);
	u4k_proto_count(cable, h);
	u4k_half_install(y, h, true);
	return 0;
}

/* Under cable->lock: our half of (local, remote, lane) is dead weight now. */
static void u4k_proto_forget(struct u4k_cable *cable, u32 local, u32 remote,
			     u32 lane)
{
	struct u4k_ucontext *c = cable->ctx[local];

	if (c && c->halves[remote][lane])
		u4k_half_gone(c->halves[remote][lane]);
}

/* The other end's live set changed: channels to those who left go. */
static void u4k_proto_mask(struct u4k_cable *cable, struct u4k_msg *m)
{
	/* the other end's ids: it has no say about ours */
	u64 theirs = cable->end ? GENMASK_ULL(U4K_CTX_PER_END - 1, 0) :
				  GENMASK_ULL(U4V_MAX_CTX - 1, U4K_CTX_PER_END);
	u64 left;
	u32 i, j, l;

	if (m->seq <= cable->remote_seq)
		return; /* an older MASK overtaken by a newer one */
	cable->remote_seq = m->seq;
	left = cable->remote_mask & ~m->mask;
	cable->remote_mask = m->mask & theirs;
	for (j = 0; j < U4V_MAX_CTX; j++)
		if (left & BIT_ULL(j))
			for (i = 0; i < U4V_MAX_CTX; i++)
				for (l = 0; l < U4V_MAX_LANES; l++)
					u4k_proto_forget(cable, i, j, l);
	u4k_cable_publish(cable);
}

/* A message from the other end; the reply goes back in m. */
void u4k_proto_recv(struct u4k_cable *cable, struct u4k_msg *m)
{
	bool end0 = cable->end == 0;
	u32 local = end0 ? m->a : m->b, remote = end0 ? m->b : m->a;

	if (m->type != U4K_MSG_MASK &&
	    (!u4k_local_ctx(cable, local) || remote >= U4V_MAX_CTX ||
	     u4k_local_ctx(cable, remote) || m->lane >= U4V_MAX_LANES)) {
		m->status = -EINVAL;
		return;
	}
	mutex_lock_nested(&cable->lock, cable->end);
	m->status = cable->up ? 0 : -ENOLINK;
	if (!m->status) {
		switch (m->type) {
		case U4K_MSG_MASK:
			u4k_proto_mask(cable, m);
			break;
		case U4K_MSG_REQ:
			m->status = end0 ? u4k_proto_open(cable, m->a, m->b,
							   m->lane) :
					   -EINVAL;
			break;
		case U4K_MSG_OPEN:
			m->status = end0 ? -EINVAL : u4k_proto_join(cable, m);
			break;
		case U4K_MSG_CLOSE:
			u4k_proto_forget(cable, local, remote, m->lane);
			break;
		default:
			m->status = -EOPNOTSUPP;
		}
	}
	mutex_unlock(&cable->lock);
}

/* Make sure uctx has lane `lane` to remote, a context of the other end. */
int u4k_proto_connect(struct u4k_ucontext *uctx, u32 remote, u32 lane)
{
	struct u4k_cable *cable = u4k_cable_of(uctx);
	struct u4k_msg m = { .type = U4K_MSG_REQ, .a = remote,
			     .b = uctx->ctx_id, .lane = lane };
	struct u4k_half *h;
	int ret = 0;

	mutex_lock(&cable->lock);
	h = uctx->halves[remote][lane];
	if (h && !u4k_half_stale(h))
		goto out;
	if (!(cable->remote_mask & BIT_ULL(remote))) {
		ret = cable->up ? -EHOSTUNREACH : -ENOLINK;
		goto out;
	}
	if (cable->end == 0) {
		ret = u4k_proto_open(cable, uctx->ctx_id, remote, lane);
		goto out;
	}
	mutex_unlock(&cable->lock);
	/* end 1 asks end 0, holding no lock: end 0's OPEN takes ours */
	ret = cable->ops->send(cable, &m);
	return ret ?: m.status;
out:
	mutex_unlock(&cable->lock);
	return ret;
}
