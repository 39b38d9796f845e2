// SPDX-License-Identifier: MIT
/* Contexts: device queries, channels to peers, async events. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ctx/progress.h"
#include "engine_int.h"

/* Short critical sections: spin a little before sleeping in the kernel. */
void u4v_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

uint64_t u4v_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The link's clock: one for the whole engine (the fuzz targets replace it). */
uint64_t u4v_now(void)
{
	return u4l_now_ns();
}

int u4v_ctx_open(const struct u4v_ctx_attr *attr, struct u4v_ctx **out)
{
	struct u4v_ctx *ctx;
	const char *env;
	uint32_t i;

	if (!attr || !attr->link || !out)
		return EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return ENOMEM;
	ctx->link = attr->link;
	ctx->ops = attr->link->ops;
	ctx->ctx_id = ctx->ops->ctx_id(ctx->link);
	ctx->node_guid = attr->node_guid;
	ctx->gid_tbl_len = attr->gid_tbl_len ? attr->gid_tbl_len : 4;
	ctx->async_fd = attr->async_event_fd;
	ctx->cnt = ctx->ops->counters(ctx->link);
	ctx->thread_disabled = attr->no_progress_thread;
	/* USB4V_SPIN_US: how long the progress thread polls after a burst */
	ctx->spin_ns = 50000;
	if (getenv("USB4V_SPIN_US"))
		ctx->spin_ns = strtoull(getenv("USB4V_SPIN_US"), NULL, 10) * 1000;
	/*
	 * USB4V_LANES: lanes per peer whatever the rates (lanes.c); "auto":
	 * measured, whatever the rates (lane_meter.c)
	 */
	env = getenv("USB4V_LANES");
	if (env && !strcmp(env, "auto"))
		ctx->lanes_auto = true;
	else if (env)
		ctx->lanes_forced = (uint32_t)strtoul(env, NULL, 10);
	u4v_mutex_init(&ctx->progress_lock);
	pthread_mutex_init(&ctx->obj_lock, NULL);
	u4v_mutex_init(&ctx->mw_lock);
	for (i = 0; i < U4L_MAX_CTX; i++) {
		u4v_mutex_init(&ctx->peers[i].tx_lock);
		ctx->peers[i].ops = ctx->ops;
		ctx->peers[i].cnt = ctx->cnt;
	}
	if (getrandom(&ctx->key_seed, sizeof(ctx->key_seed), 0) !=
	    sizeof(ctx->key_seed))
		ctx->key_seed = u4v_now() ^ ((uint64_t)getpid() << 32);
	*out = ctx;
	return 0;
}

void u4v_ctx_close(struct u4v_ctx *ctx)
{
	uint32_t i;

	if (!ctx)
		return;
	u4v_progress_stop(ctx);
	free(ctx->qps);
	free(ctx->mrs);
	free(ctx->mws);
	for (i = 0; i < U4L_MAX_CTX; i++)
		pthread_mutex_destroy(&ctx->peers[i].tx_lock);
	ctx->ops->close(ctx->link);
	pthread_mutex_destroy(&ctx->progress_lock);
	pthread_mutex_destroy(&ctx->obj_lock);
	pthread_mutex_destroy(&ctx->mw_lock);
	free(ctx);
}

struct u4l_counters *u4v_ctx_counters(struct u4v_ctx *ctx)
{
	return ctx->cnt;
}

int u4v_query_device(struct u4v_ctx *ctx, struct ibv_device_attr_ex *out,
		     size_t attr_size)
{
	struct ibv_device_attr_ex a;
	struct ibv_device_attr *d = &a.orig_attr;

	if (!ctx || !out || attr_size < sizeof(struct ibv_device_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	snprintf(d->fw_ver, sizeof(d->fw_ver), "%d.%d.%d", 0, 1, 0);
	d->node_guid = ctx->node_guid;
	d->sys_image_guid = ctx->node_guid;
	d->max_mr_size = U4V_MAX_MR_SIZE;
	d->page_size_cap = 0xfffff000;
	d->vendor_id = U4V_VENDOR_ID;
	d->vendor_part_id = U4V_VENDOR_PART_ID;
	d->hw_ver = 1;
	d->max_qp = U4V_MAX_QP;
	d->max_qp_wr = U4V_MAX_QP_WR;
	d->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_N_NOTIFY_CQ | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	d->max_sge = U4V_MAX_SGE;
	d->max_sge_rd = U4V_MAX_SGE;
	d->max_cq = U4V_MAX_CQ;
	d->max_cqe = U4V_MAX_CQE;
	d->max_mr = U4V_MAX_MR;
	d->max_mw = U4V_MAX_MW;
	d->max_pd = U4V_MAX_PD;
	d->max_qp_rd_atom = U4V_MAX_QP_RD_ATOM;
	d->max_ee_rd_atom = 0;
	d->max_res_rd_atom = U4V_MAX_QP_RD_ATOM * U4V_MAX_QP;
	d->max_qp_init_rd_atom = U4V_MAX_QP_RD_ATOM;
	d->atomic_cap = IBV_ATOMIC_HCA;
	d->max_srq = U4V_MAX_SRQ;
	d->max_srq_wr = U4V_MAX_SRQ_WR;
	d->max_srq_sge = U4V_MAX_SGE;
	d->max_ah = U4V_MAX_AH;
	d->max_pkeys = U4V_MAX_PKEYS;
	d->local_ca_ack_delay = U4V_LOCAL_CA_ACK_DELAY;
	d->phys_port_cnt = 1;
	a.phys_port_cnt_ex = 1;
	/* completion timestamps: the device clock counts nanoseconds */
	a.hca_core_clock = 1000000; /* kHz */
	a.completion_timestamp_mask = UINT64_MAX;
	if (u4v_odp_available()) {
		/* every operation an engine QP type has, on any ODP MR */
		uint32_t atomic = u4v_odp_atomics() ? IBV_ODP_SUPPORT_ATOMIC : 0;

		a.odp_caps.general_caps = IBV_ODP_SUPPORT |
					  IBV_ODP_SUPPORT_IMPLICIT;
		a.odp_caps.per_transport_caps.rc_odp_caps =
			IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
			IBV_ODP_SUPPORT_SRQ_RECV | atomic;
		a.odp_caps.per_transport_caps.uc_odp_caps =
			IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			IBV_ODP_SUPPORT_WRITE;
		a.odp_caps.per_transport_caps.ud_odp_caps =
			IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			IBV_ODP_SUPPORT_SRQ_RECV;
	}
	memcpy(out, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

int u4v_query_rt_values(struct u4v_ctx *ctx, struct ibv_values_ex *values)
{
	uint64_t ns;

	if (!ctx || !values || (values->comp_mask & ~IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		ns = u4v_clock_ns(CLOCK_MONOTONIC_RAW);
		values->raw_clock.tv_sec = (time_t)(ns / 1000000000ull);
		values->raw_clock.tv_nsec = (long)(ns % 1000000000ull);
	}
	return 0;
}

int u4v_query_port(struct u4v_ctx *ctx, uint8_t port, struct ibv_port_attr *p)
{
	uint64_t rate;

	if (!ctx || !p || port != 1)
		return EINVAL;
	memset(p, 0, sizeof(*p));
	p->state = IBV_PORT_ACTIVE;
	p->max_mtu = U4V_MTU;
	p->active_mtu = U4V_MTU;
	p->gid_tbl_len = ctx->gid_tbl_len;
	p->port_cap_flags = 0;
	p->max_msg_sz = U4V_MAX_MSG_SZ;
	p->pkey_tbl_len = U4V_MAX_PKEYS;
	p->lid = 0;
	p->sm_lid = 0;
	p->lmc = 0;
	p->max_vl_num = 1;
	p->sm_sl = 0;
	p->subnet_timeout = 0;
	p->init_type_reply = 0;
	/* 20 Gb/s is one USB4 lane: width 1x, speed 20 (HDR per lane is 50) */
	rate = ctx->ops->wire_rate(ctx->link) * 8;
	p->active_width = 1; /* 1x */
	p->active_speed = rate > 0 && rate <= 10000000000ull ? 8 /* FDR10 */ :
						 32 /* EDR: 25 Gb/s */;
	p->phys_state = 5; /* LinkUp */
	p->link_layer = IBV_LINK_LAYER_ETHERNET;
	p->flags = 0;
	return 0;
}

/*
 * The channel to remote_ctx. With refresh (QP connect), ask the link again:
 * the remote context may be a new process that reused the id of one that
 * left, and the old channel then carries nothing any more.
 */
struct u4v_peer *u4v_peer_get(struct u4v_ctx *ctx, uint32_t remote_ctx,
			      bool refresh, int *err)
{
	struct u4v_peer *peer;
	struct u4l_chan *chan;
	int ret;

	if (remote_ctx >= U4L_MAX_CTX) {
		*err = EINVAL;
		return NULL;
	}
	peer = &ctx->peers[remote_ctx];
	if (!refresh && __atomic_load_n(&peer->chan, __ATOMIC_ACQUIRE))
		return peer;
	pthread_mutex_lock(&ctx->obj_lock);
	ret = ctx->ops->chan_get(ctx->link, remote_ctx, &chan);
	if (ret) {
		pthread_mutex_unlock(&ctx->obj_lock);
		*err = -ret;
		return NULL;
	}
	if (chan != peer->chan) {
		u4v_tx_bound(ctx, chan);
		pthread_mutex_lock(&peer->tx_lock);
		__atomic_store_n(&peer->chan, chan, __ATOMIC_RELEASE);
		__atomic_store_n(&peer->lanes[0], chan, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&peer->tx_lock);
		u4v_lanes_open(ctx, peer, remote_ctx);
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	return peer;
}

/*
 * UD: a datagram goes to whoever holds the context id now, so a channel
 * whose remote context left is looked up again (RC/UC keep theirs: their
 * peer is the QP they connected to, and only a new connect changes it).
 */
struct u4v_peer *u4v_peer_get_ud(struct u4v_ctx *ctx, uint32_t remote_ctx,
				 int *err)
{
	struct u4l_chan *chan = NULL;

	if (remote_ctx < U4L_MAX_CTX)
		chan = __atomic_load_n(&ctx->peers[remote_ctx].chan,
				       __ATOMIC_ACQUIRE);
	return u4v_peer_get(ctx, remote_ctx,
			    chan && ctx->ops->chan_dead(chan), err);
}

bool u4v_quota_take(struct u4v_ctx *ctx, uint32_t *count, uint32_t max)
{
	bool ok;

	pthread_mutex_lock(&ctx->obj_lock);
	ok = *count < max;
	if (ok)
		(*count)++;
	pthread_mutex_unlock(&ctx->obj_lock);
	return ok;
}

void u4v_quota_give(struct u4v_ctx *ctx, uint32_t *count)
{
	pthread_mutex_lock(&ctx->obj_lock);
	(*count)--;
	pthread_mutex_unlock(&ctx->obj_lock);
}

/* Queue a QP to be pushed again when its channel has TX space. */
void u4v_peer_schedule(struct u4v_peer *peer, struct u4v_qp *qp)
{
	pthread_mutex_lock(&peer->tx_lock);
	if (!qp->on_pending) {
		qp->on_pending = true;
		qp->pending_next = NULL;
		if (peer->pending_tail)
			peer->pending_tail->pending_next = qp;
		else
			peer->pending_head = qp;
		peer->pending_tail = qp;
	}
	pthread_mutex_unlock(&peer->tx_lock);
}

void u4v_async_event(struct u4v_ctx *ctx, uint64_t element,
		     enum ibv_event_type type)
{
	/* uverbs' event record: what ibv_get_async_event() reads */
	struct {
		uint64_t element;
		uint32_t event_type;
		uint32_t reserved;
	} ev = { element, (uint32_t)type, 0 };

	if (ctx->async_fd < 0)
		return;
	if (write(ctx->async_fd, &ev, sizeof(ev)) != sizeof(ev)) {
		/* a full event pipe: the application is not reading events */
	}
}
