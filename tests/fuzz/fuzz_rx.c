// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the receive path: arbitrary bytes become frames that
 * a fake link backend hands to a context's RX path (rx_peek), addressed to
 * real RC, UC and UD QPs in RTS, plus u4w_decode on every frame directly.
 * No crash and no sanitizer report may result.
 *
 * Input: a sequence of records
 *   u8  sel   bits 0-1: 0 RC QP, 1 UC QP, 2 UD QP, 3 as is (no patching)
 *             bit 2: point va/rkey (RETH, ATOMETH) into the real MR
 *             bit 3: CRC-flagged; bit 4: stranded (NOWAKE)
 *   u16 len   little endian, taken modulo 4097
 *   len bytes the frame (headers patched per sel: version, dst/src QPN, qkey)
 *
 * Build: cmake -DU4V_FUZZ=ON -DCMAKE_C_COMPILER=clang; run
 *   ./tests/fuzz/fuzz_rx -max_len=16384 -runs=10000000 corpus/
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <usb4verbs/engine.h>
#include <usb4verbs/link.h>

#include "u4vt_traffic.h"
#include "wire/wire.h"

#define REMOTE_CTX 1u
#define REMOTE_QPN(i) (((REMOTE_CTX + 1) << 16) | (i))
#define MRLEN 65536u
#define QKEY 0x11111111u

struct fake_chan {
	int unused;
};

struct fake_dev {
	struct u4l_dev dev;
	struct u4l_counters cnt;
	struct fake_chan chan;
};

/* The input being played. */
static const uint8_t *in_data;
static size_t in_len, in_pos;
static uint8_t frame[U4L_FRAME_MAX] __attribute__((aligned(64)));
static uint8_t txbuf[U4L_FRAME_MAX];

static uint32_t qpn_of[3];
static uint64_t mr_base;
static uint32_t mr_rkey;

static uint32_t f_ctx_id(struct u4l_dev *d)
{
	(void)d;
	return 0;
}

static bool f_ctx_alive(struct u4l_dev *d, uint32_t r)
{
	(void)d;
	return r == REMOTE_CTX;
}

static int f_chan_get(struct u4l_dev *d, uint32_t r, struct u4l_chan **c)
{
	struct fake_dev *f = (struct fake_dev *)d;

	if (r != REMOTE_CTX)
		return -EHOSTUNREACH;
	*c = (struct u4l_chan *)&f->chan;
	return 0;
}

static struct u4l_chan *f_chan_accept(struct u4l_dev *d)
{
	(void)d;
	return NULL;
}

static uint32_t f_chan_remote(struct u4l_chan *c)
{
	(void)c;
	return REMOTE_CTX;
}

static void *f_tx_slot(struct u4l_chan *c)
{
	(void)c;
	return txbuf;
}

static void f_tx_post(struct u4l_chan *c, uint32_t len, enum u4l_pdf pdf)
{
	(void)c;
	(void)len;
	(void)pdf;
}

static void f_tx_doorbell(struct u4l_chan *c)
{
	(void)c;
}

static uint32_t f_tx_space(struct u4l_chan *c)
{
	(void)c;
	return 64;
}

static void patch32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* little-endian host, as the wire */
}

/* Next record of the input as a frame; 0 when the input is spent. */
static int f_rx_peek(struct u4l_chan *c, struct u4l_rx_frame *out)
{
	uint8_t sel;
	uint32_t len;

	(void)c;
	if (in_len - in_pos < 3)
		return 0;
	sel = in_data[in_pos];
	len = ((uint32_t)in_data[in_pos + 1] |
	       (uint32_t)in_data[in_pos + 2] << 8) % (U4L_FRAME_MAX + 1);
	in_pos += 3;
	if (len > in_len - in_pos)
		len = (uint32_t)(in_len - in_pos);
	memcpy(frame, in_data + in_pos, len);
	in_pos += len;
	if (!len) { /* the contract: 1..4096 */
		frame[0] = 0;
		len = 1;
	}
	if ((sel & 3) != 3 && len >= U4W_BASE_LEN) {
		uint32_t t = sel & 3;
		uint8_t transport = t == 0 ? U4W_RC : t == 1 ? U4W_UC : U4W_UD;

		frame[0] = (uint8_t)((frame[0] & 0x1f) | transport);
		frame[1] &= 0x7;
		patch32(frame + 4, qpn_of[t] | (uint32_t)U4W_VERSION << 24);
		patch32(frame + 8, REMOTE_QPN(t));
		frame[15] = 0; /* PSN: 24 bits */
		if (t == 2 && len >= U4W_BASE_LEN + 8) {
			patch32(frame + 16, QKEY);
			patch32(frame + 20, 0);
		}
		if ((sel & 4) && t != 2 && len >= U4W_BASE_LEN + 16) {
			uint64_t va;

			memcpy(&va, frame + 16, 8);
			va = mr_base + va % MRLEN;
			memcpy(frame + 16, &va, 8);
			patch32(frame + 24, mr_rkey);
		}
	}
	out->buf = frame;
	out->len = len;
	out->flags = (sel & 8 ? U4L_RX_CRC_ERR : 0) |
		     (sel & 16 ? U4L_RX_NOWAKE : 0);
	{
		struct u4w_hdr h;

		(void)u4w_decode(frame, len, &h);
	}
	return 1;
}

static void f_rx_release(struct u4l_chan *c)
{
	(void)c;
}

static void f_wait(struct u4l_dev *d, uint64_t deadline)
{
	(void)d;
	(void)deadline;
}

static void f_kick(struct u4l_dev *d)
{
	(void)d;
}

static struct u4l_counters *f_counters(struct u4l_dev *d)
{
	return &((struct fake_dev *)d)->cnt;
}

static uint64_t f_wire_rate(struct u4l_dev *d)
{
	(void)d;
	return 0;
}

static void f_close(struct u4l_dev *d)
{
	free(d);
}

static bool f_chan_dead(struct u4l_chan *c)
{
	(void)c;
	return false;
}

static const struct u4l_ops fake_ops = {
	.name = "fuzz",
	.close = f_close,
	.ctx_id = f_ctx_id,
	.ctx_alive = f_ctx_alive,
	.chan_get = f_chan_get,
	.chan_accept = f_chan_accept,
	.chan_remote = f_chan_remote,
	.chan_dead = f_chan_dead,
	.tx_slot = f_tx_slot,
	.tx_post = f_tx_post,
	.tx_doorbell = f_tx_doorbell,
	.tx_space = f_tx_space,
	.rx_peek = f_rx_peek,
	.rx_release = f_rx_release,
	.wait = f_wait,
	.kick = f_kick,
	.counters = f_counters,
	.wire_rate = f_wire_rate,
};

static struct u4v_ctx *ctx;
static struct u4v_pd *pd;
static struct u4v_cq *cq;
static struct u4v_mr *mr;
static struct u4v_qp *qps[3];
static uint8_t *mem;
static const enum ibv_qp_type types[3] = { IBV_QPT_RC, IBV_QPT_UC,
					   IBV_QPT_UD };

static void die(void)
{
	abort();
}

static void connect(struct u4v_qp *qp, enum ibv_qp_type type, uint32_t rq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (u4v_modify_qp(qp, &a, IBV_QP_STATE) ||
	    tr_connect(qp, type, rq, 0, 1, 7, 7,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_ATOMIC))
		die();
}

static void setup(void)
{
	struct fake_dev *f = calloc(1, sizeof(*f));
	struct u4v_ctx_attr attr = { 0 };
	int i;

	f->dev.ops = &fake_ops;
	attr.link = &f->dev;
	attr.async_event_fd = -1;
	attr.no_progress_thread = 1;
	mem = aligned_alloc(4096, MRLEN);
	if (!mem || u4v_ctx_open(&attr, &ctx) || u4v_alloc_pd(ctx, &pd) ||
	    u4v_create_cq(ctx, 1 << 16, &cq) ||
	    u4v_reg_mr(pd, mem, MRLEN,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_ATOMIC,
		       &mr))
		die();
	mr_base = (uintptr_t)mem;
	mr_rkey = u4v_mr_rkey(mr);
	for (i = 0; i < 3; i++) {
		struct u4v_qp_init init = { 0 };

		init.qp_type = types[i];
		init.send_cq = init.recv_cq = cq;
		init.cap.max_send_wr = 16;
		init.cap.max_recv_wr = 16;
		init.cap.max_send_sge = 2;
		init.cap.max_recv_sge = 2;
		if (u4v_create_qp(pd, &init, &qps[i]))
			die();
		qpn_of[i] = u4v_qp_num(qps[i]);
		connect(qps[i], types[i], REMOTE_QPN(i));
	}
}

/* Keep receives posted and the RC requester busy, so responses matter. */
static void prime(void)
{
	static uint64_t n;
	struct ibv_sge s[2] = { { (uintptr_t)mem, 2048, u4v_mr_lkey(mr) },
				{ (uintptr_t)mem + 8192, 9000,
				  u4v_mr_lkey(mr) } };
	struct ibv_recv_wr rw = { .sg_list = s, .num_sge = 2 }, *rbad;
	struct ibv_send_wr sw, *sbad;
	int i, k;

	for (i = 0; i < 3; i++) {
		if (u4v_qp_state(qps[i]) != IBV_QPS_RTS)
			connect(qps[i], types[i], REMOTE_QPN(i));
		for (k = 0; k < 4; k++) {
			rw.wr_id = n++;
			if (u4v_post_recv(qps[i], &rw, &rbad))
				break;
		}
	}
	for (k = 0; k < 3; k++) {
		memset(&sw, 0, sizeof(sw));
		sw.wr_id = n++;
		sw.sg_list = s;
		sw.num_sge = 1;
		sw.send_flags = IBV_SEND_SIGNALED;
		sw.opcode = k == 0 ? IBV_WR_RDMA_READ :
			    k == 1 ? IBV_WR_ATOMIC_FETCH_AND_ADD :
				     IBV_WR_SEND;
		s[0].length = k == 1 ? 8 : 2048 + 4032;
		s[0].length = k == 0 ? 6000 : s[0].length;
		sw.wr.rdma.remote_addr = 0x1000;
		sw.wr.rdma.rkey = 1;
		sw.wr.atomic.remote_addr = 0x1000;
		sw.wr.atomic.rkey = 1;
		if (s[0].length > 8 && k != 1)
			s[0].length = 6000;
		(void)u4v_post_send(qps[0], &sw, &sbad);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibv_wc wc[64];
	int guard = 0;

	if (!ctx)
		setup();
	prime();
	in_data = data;
	in_len = size;
	in_pos = 0;
	while (in_len - in_pos >= 3 && guard++ < 4096)
		u4v_ctx_progress(ctx);
	u4v_ctx_progress(ctx);
	while (u4v_poll_cq(cq, 64, wc) > 0)
		;
	in_len = 0;
	return 0;
}
