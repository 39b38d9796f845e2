// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for the kernel shim's peer protocol, built from the
 * module's own files (kernel/usb4verbs_{main,peer,proto,ring,soft}.c, with
 * tests/fuzz/kernel_user.h for the kernel APIs). One end of a Thunderbolt
 * cable, whose other host is the input: its requests (any bytes, or
 * well-formed LOGIN, LOGOUT, MASK, REQ, OPEN, CLOSE with any fields (any
 * lane), the
 * two parts of a MAD in any order and number), its
 * answers to every request of ours (timeouts, late or foreign answers,
 * any status or HopID), in any order with what our side does meanwhile:
 * contexts come and go, connect (any lane), take channels, ring doorbells
 * (any lane), the cable
 * is unplugged and its device removed, and logins start over. What
 * usb4verbs_tb.c does with Thunderbolt around those files is done here the
 * same way, without hardware. After every event the cable's bookkeeping
 * must hold (fuzz_kernel.h); no crash, leak or sanitizer report.
 *
 * Input: the first byte picks our end (bit 0); then events, each a byte
 * (op = byte % EV_NR) and what it needs. Every request of ours takes its
 * answer from the input right where it is sent (answer()).
 *
 * Build and run: docs/TESTING.md ("Fuzzing").
 */
#include "fuzz_kernel.h"

#define NCTX 6
#define HOPS 4 /* HopIDs (ring pairs) this end has: its real budget */
#define HOP_BASE 8

enum ev {
	EV_PEER_REQUEST, /* a packet from the peer */
	EV_LOGIN,	 /* our login is answered */
	EV_ATTACH,	 /* a process opens a context */
	EV_DETACH,	 /* a context goes */
	EV_CONNECT,	 /* a context's channel to a remote id */
	EV_NEXT,	 /* a context takes the next channel made to it */
	EV_DOORBELL,	 /* a doorbell on a context's channel */
	EV_MASK,	 /* our live set is sent (again) */
	EV_UNPLUG,	 /* the cable goes down */
	EV_REMOVE,	 /* its device goes: contexts detached, logged out */
	EV_NR
};

static const uuid_t uuid_lo = UUID_INIT(0x11111111, 0x2222, 0x3333, 0x44, 0x55,
					0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb);
static const uuid_t uuid_hi = UUID_INIT(0x99999999, 0x2222, 0x3333, 0x44, 0x55,
					0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb);
#define ROUTE 0x301ull

static struct {
	u32 end;
	const uuid_t *local, *remote;
	bool logged_in;
	struct u4k_cable *cable; /* while up */
	struct u4k_dev *dev;
	struct u4k_ucontext *ctx[NCTX];
	u32 command;
	u32 hops_used; /* bit per in-HopID */
	u32 hw_live;   /* channels holding hardware */
	struct u4k_mad_rx mad_rx;
} fk;

/* A message with fields from the input, of type, well formed if asked. */
static void msg_in(struct u4k_msg *m, u32 type)
{
	u8 how = fk_byte();

	fk_bytes(m, sizeof(*m));
	if (how & 1)
		return; /* as it came */
	m->type = type;
	if (how & 2)
		m->a = m->a % U4V_MAX_CTX;
	if (how & 4)
		m->b = m->b % U4V_MAX_CTX;
	if (how & 8)
		m->depth = u4k_ring_depth;
	if (how & 16)
		m->version = U4K_TB_PROTO_VER;
	if (how & 32)
		m->hop = HOP_BASE + m->hop % 64;
	if (how & 64)
		m->status = 0;
	if (how & 128)
		m->lane %= U4V_MAX_LANES;
}

static void hdr_fill(struct u4k_tb_hdr *h, u32 type, u32 command,
		     const uuid_t *from, const uuid_t *to)
{
	memset(h, 0, sizeof(*h));
	h->route_hi = upper_32_bits(ROUTE);
	h->route_lo = lower_32_bits(ROUTE);
	h->length_sn =
	    ((sizeof(struct u4k_tb_pkt) - 3 * sizeof(u32)) / sizeof(u32)) &
	    U4K_TB_LEN_MASK;
	h->initiator = *from;
	h->target = *to;
	h->type = type;
	h->command = command;
}

/*
 * The peer's answer to our request m (u4k_tb_request): none (timeout), a
 * packet as the input has it, or the answer to this request with the
 * input's message.
 */
static int answer(struct u4k_msg *m)
{
	struct u4k_tb_pkt req, resp;
	u8 how = fk_byte();

	hdr_fill(&req.hdr, m->type, fk.command++, fk.local, fk.remote);
	req.msg = *m;
	switch (how % 3) {
	case 0:
		return -ETIMEDOUT;
	case 1:
		fk_bytes(&resp, sizeof(resp));
		break;
	default:
		hdr_fill(&resp.hdr, m->type | U4K_TB_RESP, req.hdr.command,
			 fk.remote, fk.local);
		msg_in(&resp.msg, m->type);
		break;
	}
	return u4k_peer_answer(&req.hdr, &resp, m);
}

/* ---- the cable's operations, as usb4verbs_tb.c's ---- */

struct fk_hw {
	u32 in_hop, out_hop;
};

static int fk_send(struct u4k_cable *cable, struct u4k_msg *m)
{
	(void)cable;
	return answer(m);
}

/* a ring pair and an input HopID, from a budget of HOPS */
static int fk_chan_open(struct u4k_half *h, struct u4k_msg *m)
{
	struct fk_hw *hw;
	u32 i;

	for (i = 0; i < HOPS && (fk.hops_used & BIT(i)); i++)
		;
	if (i == HOPS)
		return -ENOSPC;
	hw = kzalloc(sizeof(*hw), GFP_KERNEL);
	if (!hw)
		return -ENOMEM;
	fk.hops_used |= BIT(i);
	hw->in_hop = HOP_BASE + i;
	h->hw = hw;
	m->hop = hw->in_hop;
	fk.hw_live++;
	return 0;
}

/* the peer's HopID reaches tb_xdomain_alloc_out_hopid() here */
static int fk_chan_connect(struct u4k_half *h, struct u4k_msg *m)
{
	struct fk_hw *hw = h->hw;

	if (m->hop < U4K_TB_MIN_HOPID || m->hop > INT_MAX) {
		fprintf(stderr, "fuzz_kproto: HopID %u reached the paths\n",
			m->hop);
		abort();
	}
	hw->out_hop = m->hop;
	return 0;
}

static void fk_chan_close(struct u4k_half *h)
{
	struct fk_hw *hw = h->hw;

	if (!hw)
		return;
	h->hw = NULL;
	fk.hops_used &= ~BIT(hw->in_hop - HOP_BASE);
	fk.hw_live--;
	kfree(hw);
}

static struct u4k_half *fk_chan_join(struct u4k_cable *cable,
				     struct u4k_ucontext *owner,
				     struct u4k_msg *m)
{
	struct u4k_msg mine = *m;
	struct u4k_half *h;
	int ret;

	(void)cable;
	ret = u4k_chan_new(owner, m->a, m->lane, &h);
	if (ret)
		return ERR_PTR(ret);
	ret = fk_chan_open(h, &mine) ?: fk_chan_connect(h, m);
	if (ret) {
		fk_chan_close(h);
		u4k_half_kill(h);
		return ERR_PTR(ret);
	}
	m->hop = mine.hop;
	return h;
}

static void fk_kick(struct u4k_half *h, bool tx, bool rx)
{
	(void)h;
	(void)tx;
	(void)rx;
}

static const struct u4k_cable_ops fk_ops = {
    .send = fk_send,
    .chan_open = fk_chan_open,
    .chan_connect = fk_chan_connect,
    .chan_join = fk_chan_join,
    .chan_close = fk_chan_close,
    .kick = fk_kick,
};

/* ---- usb4verbs_tb.c's login, up and down ---- */

/* a budget of 1 .. HOPS + 1 channels: either runs out first */
static void up(void)
{
	fk.cable =
	    u4k_cable_alloc(&fk_ops, fk.end, 1 + fk_byte() % (HOPS + 1), 1);
	fk.dev = fk_dev_add(fk.cable);
}

/* u4k_tb_down: the cable down, its device and contexts gone */
static void down(void)
{
	int i;

	if (!fk.cable)
		return;
	u4k_cable_down(fk.cable);
	for (i = 0; i < NCTX; i++)
		fk_ctx_close(&fk.ctx[i]);
	fk_check_cable(fk.cable);
	if (fk.cable->nr_channels || fk.hw_live)
		abort(); /* a channel outlived its contexts */
	fk_dev_remove(fk.cable, fk.dev);
	fk.cable = NULL;
	fk.dev = NULL;
}

static void login(void)
{
	struct u4k_msg m = {.type = U4K_TB_LOGIN,
			    .depth = u4k_ring_depth,
			    .version = U4K_TB_PROTO_VER};

	if (answer(&m) || u4k_peer_login_answer(&m))
		return;
	fk.logged_in = true;
	if (!fk.cable)
		up();
}

/* A part of a MAD, its fields from the input: u4k_tb_send_mad's */
static void mad_in(struct u4k_tb_mad_pkt *pkt)
{
	u8 how = fk_byte();

	hdr_fill(&pkt->hdr, U4K_TB_MAD, fk_byte() % 4, fk.remote, fk.local);
	pkt->part = how & 1 ? fk_u32() : how >> 1 & 1;
	pkt->len = how & 4 ? fk_u32() : IB_MGMT_MAD_SIZE - fk_byte() % 8;
	pkt->src_qpn = fk_u32();
	pkt->dst_qpn = fk_u32();
	fk_bytes(pkt->data, sizeof(pkt->data));
}

/* usb4verbs_tb.c's u4k_tb_recv_mad: a whole MAD fits its buffer */
static void peer_mad(const struct u4k_tb_mad_pkt *pkt)
{
	if (u4k_peer_mad_part(&fk.mad_rx, pkt) &&
	    fk.mad_rx.mad.len > sizeof(fk.mad_rx.mad.data)) {
		fprintf(stderr, "fuzz_kproto: a MAD longer than its buffer\n");
		abort();
	}
}

/* u4k_tb_handle and u4k_tb_rx_work */
static void peer_request(void)
{
	enum u4k_peer_action action;
	struct u4k_cable *cable;
	union {
		struct u4k_tb_pkt req;
		struct u4k_tb_mad_pkt mad;
	} u;
	struct u4k_tb_pkt *pkt = &u.req;
	u8 how = fk_byte();
	size_t size = sizeof(*pkt);

	if (how & 1) {
		fk_bytes(&u, sizeof(u));
		size = fk_byte() % (sizeof(u) + 8);
	} else if ((how >> 1) % 7 == 6) {
		mad_in(&u.mad);
		size = sizeof(u.mad);
	} else {
		static const u32 types[] = {U4K_TB_LOGIN, U4K_TB_LOGOUT,
					    U4K_MSG_MASK, U4K_MSG_REQ,
					    U4K_MSG_OPEN, U4K_MSG_CLOSE};
		u32 type = types[(how >> 1) % 7];

		hdr_fill(&pkt->hdr, type, fk_u32(), fk.remote, fk.local);
		msg_in(&pkt->msg, type);
	}
	switch (u4k_peer_classify(&u, size, fk.local, fk.remote, ROUTE)) {
	case U4K_PKT_REQUEST:
		break;
	case U4K_PKT_MAD:
		peer_mad(&u.mad);
		return;
	default:
		return;
	}
	/* the request runs on a reference of its own, answered before the
	 * work it queues runs */
	cable = fk.cable;
	if (cable)
		kref_get(&cable->ref);
	action = u4k_peer_request(cable, fk.logged_in, &pkt->msg);
	fk_check_ret(pkt->msg.status);
	if (cable)
		u4k_cable_put(cable);
	if (action == U4K_PEER_LOGIN) {
		login();
	} else if (action == U4K_PEER_DOWN) {
		down();
		fk.logged_in = false;
	}
}

/* ---- our side ---- */

static struct u4k_ucontext *ctx_in(void)
{
	return fk.ctx[fk_byte() % NCTX];
}

static void ev(enum ev e)
{
	struct u4k_ucontext *c;
	struct u4v_chan_info info;
	u32 remote, lane;
	int i, err;
	u8 b;

	switch (e) {
	case EV_PEER_REQUEST:
		peer_request();
		break;
	case EV_LOGIN:
		login();
		break;
	case EV_ATTACH:
		for (i = 0; i < NCTX && fk.ctx[i]; i++)
			;
		if (i < NCTX && fk.dev)
			fk.ctx[i] = fk_ctx_new(fk.dev, false, &err);
		break;
	case EV_DETACH:
		fk_ctx_close(&fk.ctx[fk_byte() % NCTX]);
		break;
	case EV_CONNECT:
		c = ctx_in();
		/* one byte: the lane in its high bits (0 .. 3) */
		b = fk_byte();
		remote = b % (U4V_MAX_CTX + 2);
		lane = b / (U4V_MAX_CTX + 2);
		if (c)
			fk_check_ret(u4k_chan_get(c, remote, lane, &info));
		break;
	case EV_NEXT:
		c = ctx_in();
		if (c)
			fk_check_ret(u4k_chan_get(c, U4V_CHAN_NEXT, 0, &info));
		break;
	case EV_DOORBELL:
		c = ctx_in();
		b = fk_byte();
		remote = b % U4V_MAX_CTX;
		lane = b / U4V_MAX_CTX;
		if (c)
			fk_check_ret(u4k_doorbell(c, remote, lane, true,
						  fk_u32(), true, fk_u32()));
		break;
	case EV_MASK:
		if (fk.cable)
			u4k_proto_send_mask(fk.cable);
		break;
	case EV_UNPLUG:
		if (fk.cable)
			u4k_cable_down(fk.cable);
		break;
	case EV_REMOVE:
		down();
		fk.logged_in = false;
		break;
	case EV_NR:
		break;
	}
	if (fk.cable)
		fk_check_cable(fk.cable);
}

/* 256 events of a few bytes, a whole packet now and then */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_default_max_len(argc, argv, 2048);
	return 0;
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	int guard = 0;

	memset(&fk, 0, sizeof(fk));
	fk_input_set(data, size);
	u4k_ring_depth = U4V_RING_DEPTH_MIN;
	fk.end = fk_byte() & 1;
	/* end 0 has the lower UUID */
	fk.local = fk.end ? &uuid_hi : &uuid_lo;
	fk.remote = fk.end ? &uuid_lo : &uuid_hi;
	while (fk_input_left() && guard++ < FK_MAX_EVENTS)
		ev((enum ev)(fk_byte() % EV_NR));
	/* unplug: everything goes, nothing may be left over */
	down();
	if (fk.hops_used)
		abort();
	return 0;
}
