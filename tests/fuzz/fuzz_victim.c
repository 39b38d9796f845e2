// SPDX-License-Identifier: MIT
/* The victim context of the engine's fuzz targets (fuzz_victim.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_victim.h"
#include "u4vt.h"
#include "wire/wire.h"

#define QKEY U4VT_QKEY
#define SEL_QP_MASK 3u
#define SEL_ALL_QPS 3u
#define SEL_CMD_SHIFT 6
#define SEL_ARG_MASK 0x1fu
#define ACCESS_ALL                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

enum cmd { CMD_RECV, CMD_CLOCK, CMD_REQUEST, CMD_QP_STATE };

static const enum ibv_qp_type types[FUZZ_NQP] = {IBV_QPT_RC, IBV_QPT_UC,
						 IBV_QPT_UD};

uint64_t fuzz_clock_ns;

uint64_t u4l_now_ns(void)
{
	return fuzz_clock_ns;
}

uint32_t fuzz_remote_qpn(const struct fuzz_victim *v, int i)
{
	return ((v->remote_ctx + 1) << 16) | (uint32_t)i;
}

static int qp_connect(struct fuzz_victim *v, int i)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	struct u4vt_conn c;

	u4vt_conn_default(&c, fuzz_remote_qpn(v, i));
	c.psn = 0;
	c.timeout = 1;
	return u4v_modify_qp(v->qp[i], &a, IBV_QP_STATE)
		   ?: u4vt_eng_connect(v->qp[i], types[i], &c);
}

static void post_recv(struct fuzz_victim *v, int i)
{
	static uint64_t wr_id;
	struct ibv_sge s[2] = {
	    {(uintptr_t)v->mem, 2048, u4v_mr_lkey(v->mr)},
	    {(uintptr_t)v->mem + 8192, 9000, u4v_mr_lkey(v->mr)}};
	struct ibv_recv_wr rw = {.wr_id = wr_id++, .sg_list = s, .num_sge = 2};
	struct ibv_recv_wr *bad;

	(void)u4v_post_recv(v->qp[i], &rw, &bad); /* a full RQ is fine */
}

/* Keep the RC requester busy, so that responses and ACKs matter. */
static void post_request(struct fuzz_victim *v, uint32_t which)
{
	static const enum ibv_wr_opcode ops[] = {
	    IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND,
	    IBV_WR_RDMA_WRITE, IBV_WR_ATOMIC_CMP_AND_SWP};
	enum ibv_wr_opcode op = ops[which % (sizeof(ops) / sizeof(ops[0]))];
	bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		      op == IBV_WR_ATOMIC_CMP_AND_SWP;
	struct ibv_sge s = {(uintptr_t)v->mem, atomic ? 8 : 6000,
			    u4v_mr_lkey(v->mr)};
	struct ibv_send_wr sw, *bad;

	memset(&sw, 0, sizeof(sw));
	sw.wr_id = which;
	sw.sg_list = &s;
	sw.num_sge = 1;
	sw.send_flags = IBV_SEND_SIGNALED;
	sw.opcode = op;
	if (atomic) {
		sw.wr.atomic.remote_addr = 0x1000;
		sw.wr.atomic.rkey = 1;
	} else {
		sw.wr.rdma.remote_addr = 0x1000;
		sw.wr.rdma.rkey = 1;
	}
	(void)u4v_post_send(v->qp[0], &sw, &bad); /* full, or not in RTS */
}

void fuzz_victim_drain_cq(struct fuzz_victim *v)
{
	struct ibv_wc wc[64];

	while (u4v_poll_cq(v->cq, 64, wc) > 0)
		;
}

int fuzz_victim_reset(struct fuzz_victim *v)
{
	int i, k, ret = 0;

	fuzz_clock_ns += 1000000000ull; /* every deadline of the last input */
	for (i = 0; i < FUZZ_NQP; i++)
		ret = qp_connect(v, i) ?: ret;
	fuzz_victim_drain_cq(v);
	memset(v->mem, 0, FUZZ_MRLEN);
	for (i = 0; i < FUZZ_NQP; i++)
		for (k = 0; k < 4; k++)
			post_recv(v, i);
	for (k = 0; k < 3; k++)
		post_request(v, (uint32_t)k);
	return ret;
}

int fuzz_victim_open(struct fuzz_victim *v, struct u4l_dev *link,
		     uint32_t remote_ctx, uint32_t cq_depth)
{
	struct u4v_ctx_attr attr = {0};
	int i, ret;

	memset(v, 0, sizeof(*v));
	v->remote_ctx = remote_ctx;
	attr.link = link;
	attr.async_event_fd = -1;
	attr.no_progress_thread = 1;
	ret = u4v_ctx_open(&attr, &v->ctx);
	if (ret) {
		link->ops->close(link);
		return ret;
	}
	v->mem = aligned_alloc(4096, FUZZ_MRLEN);
	if (!v->mem)
		return ENOMEM;
	ret = u4v_alloc_pd(v->ctx, &v->pd) ?:
	      u4v_create_cq(v->ctx, cq_depth, &v->cq) ?:
	      u4v_reg_mr(v->pd, v->mem, FUZZ_MRLEN, ACCESS_ALL, &v->mr);
	for (i = 0; !ret && i < FUZZ_NQP; i++) {
		struct u4v_qp_init init = {0};

		init.qp_type = types[i];
		init.send_cq = init.recv_cq = v->cq;
		init.cap.max_send_wr = 16;
		init.cap.max_recv_wr = 16;
		init.cap.max_send_sge = 2;
		init.cap.max_recv_sge = 2;
		ret = u4v_create_qp(v->pd, &init, &v->qp[i]);
	}
	return ret ?: fuzz_victim_reset(v);
}

void fuzz_victim_close(struct fuzz_victim *v)
{
	int i;

	for (i = 0; i < FUZZ_NQP; i++)
		if (v->qp[i])
			u4v_destroy_qp(v->qp[i]);
	if (v->mr)
		u4v_dereg_mr(v->mr);
	if (v->cq)
		u4v_destroy_cq(v->cq);
	if (v->pd)
		u4v_dealloc_pd(v->pd);
	if (v->ctx)
		u4v_ctx_close(v->ctx);
	free(v->mem);
	memset(v, 0, sizeof(*v));
}

static void to_err(struct fuzz_victim *v, int i)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	(void)u4v_modify_qp(v->qp[i], &a, IBV_QP_STATE);
}

void fuzz_victim_command(struct fuzz_victim *v, uint8_t sel)
{
	uint32_t arg = sel & SEL_ARG_MASK, t = arg & SEL_QP_MASK;
	int i;

	switch ((enum cmd)(sel >> SEL_CMD_SHIFT)) {
	case CMD_RECV:
		for (i = 0; i < FUZZ_NQP; i++)
			if (t == SEL_ALL_QPS || t == (uint32_t)i)
				post_recv(v, i);
		break;
	case CMD_CLOCK:
		fuzz_clock_ns += 1ull << arg;
		break;
	case CMD_REQUEST:
		post_request(v, arg);
		break;
	case CMD_QP_STATE:
		if (t == SEL_ALL_QPS)
			break;
		if (arg & 4)
			(void)qp_connect(v, (int)t);
		else
			to_err(v, (int)t);
		break;
	}
}

static void patch32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* little-endian host, as the wire */
}

void fuzz_patch_frame(const struct fuzz_victim *v, uint8_t *frame, uint32_t len,
		      uint8_t sel)
{
	static const uint8_t transport[FUZZ_NQP] = {U4W_RC, U4W_UC, U4W_UD};
	uint32_t t = sel & SEL_QP_MASK;
	struct u4w_hdr h;

	if (t != SEL_ALL_QPS && len >= U4W_BASE_LEN) {
		frame[0] = (uint8_t)((frame[0] & 0x1f) | transport[t]);
		frame[1] &= 0x7;
		patch32(frame + 4,
			u4v_qp_num(v->qp[t]) | (uint32_t)U4W_VERSION << 24);
		patch32(frame + 8, fuzz_remote_qpn(v, (int)t));
		frame[15] = 0; /* PSN: 24 bits */
		if (types[t] == IBV_QPT_UD && len >= U4W_BASE_LEN + 8) {
			patch32(frame + 16, QKEY);
			patch32(frame + 20, 0);
		}
		if ((sel & 4) && types[t] != IBV_QPT_UD &&
		    len >= U4W_BASE_LEN + 16) {
			uint64_t va;

			memcpy(&va, frame + 16, 8);
			va = (uintptr_t)v->mem + va % FUZZ_MRLEN;
			memcpy(frame + 16, &va, 8);
			patch32(frame + 24, u4v_mr_rkey(v->mr));
		}
	}
	(void)u4w_decode(frame, len, &h);
}

uint32_t fuzz_frame_flags(uint8_t sel)
{
	return (sel & 8 ? U4L_RX_CRC_ERR : 0) | (sel & 16 ? U4L_RX_NOWAKE : 0);
}
