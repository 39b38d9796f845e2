// SPDX-License-Identifier: MIT
/*
 * Work-request features over the software cable: scatter/gather up to
 * max_sge (gathered sends and writes, scattered receives and reads, the UD
 * GRH split across SGEs), IBV_SEND_INLINE up to max_inline with the source
 * reused at once, unsignaled WRs (only signaled ones complete, in order),
 * IBV_SEND_SOLICITED against a solicited-only arm, and FENCE after a READ.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

#define TMO 20000
#define AREA (4u << 20)

struct pair {
	const char *shm;
	enum ibv_qp_type type;
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb;
	uint8_t *la, *rb;
	struct u4v_mr *ma, *mb;
	struct u4v_ah *ah;
};

static void pair_up(struct pair *p, const char *tag, enum ibv_qp_type type,
		    int sig_all)
{
	memset(p, 0, sizeof(*p));
	p->type = type;
	p->shm = u4vt_shm_name(tag);
	u4vt_cable_create(p->shm, NULL);
	u4vt_end_open(&p->a, p->shm, 0);
	u4vt_end_open(&p->b, p->shm, 1);
	u4vt_qp_opts_default(&p->o);
	p->o.max_sge = U4V_MAX_SGE;
	p->o.max_inline = U4V_MAX_INLINE;
	p->o.sq_sig_all = sig_all;
	p->qa = u4vt_qp_create(&p->a, type, &p->o);
	p->qb = u4vt_qp_create(&p->b, type, &p->o);
	u4vt_qp_connect(p->qa, type, u4v_qp_num(p->qb), &p->o);
	u4vt_qp_connect(p->qb, type, u4v_qp_num(p->qa), &p->o);
	p->la = u4vt_map(AREA);
	p->rb = u4vt_map(AREA);
	p->ma = u4vt_reg(&p->a, p->la, AREA, U4VT_ACCESS_ALL);
	p->mb = u4vt_reg(&p->b, p->rb, AREA, U4VT_ACCESS_ALL);
	if (type == IBV_QPT_UD) {
		struct ibv_ah_attr ah = { .port_num = 1 };

		assert_int_equal(u4v_create_ah(p->a.pd, &ah, &p->ah), 0);
	}
}

static void pair_down(struct pair *p)
{
	if (p->ah)
		u4v_destroy_ah(p->ah);
	assert_int_equal(u4v_destroy_qp(p->qa), 0);
	assert_int_equal(u4v_destroy_qp(p->qb), 0);
	assert_int_equal(u4v_dereg_mr(p->ma), 0);
	assert_int_equal(u4v_dereg_mr(p->mb), 0);
	u4vt_unmap(p->la, AREA);
	u4vt_unmap(p->rb, AREA);
	u4vt_end_close(&p->a);
	u4vt_end_close(&p->b);
	u4l_sim_destroy(p->shm);
}

static void wr_init(struct pair *p, struct ibv_send_wr *wr,
		    enum ibv_wr_opcode op, uint64_t id, int flags,
		    struct ibv_sge *sge, int nsge)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->opcode = op;
	wr->send_flags = flags;
	wr->sg_list = sge;
	wr->num_sge = nsge;
	if (p->type == IBV_QPT_UD) {
		wr->wr.ud.ah = &p->ah->ibv;
		wr->wr.ud.remote_qpn = u4v_qp_num(p->qb);
		wr->wr.ud.remote_qkey = 0x11111111;
	}
}

static void expect_wc(struct u4v_cq *cq, uint64_t id, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	assert_int_equal(u4vt_poll(cq, &wc, 1, TMO), 1);
	if (wc.wr_id != id || wc.status != st)
		fail_msg("wr %llu status %d, want wr %llu status %d",
			 (unsigned long long)wc.wr_id, wc.status,
			 (unsigned long long)id, st);
}

/*
 * n SGEs of the given lengths carved from base with gaps between them;
 * returns the total. The gaps are filled with 0xee to catch strays.
 */
static uint64_t carve(struct ibv_sge *sge, int n, const uint32_t *lens,
		      uint8_t *base, uint32_t lkey)
{
	uint64_t off = 0, total = 0;
	int i;

	for (i = 0; i < n; i++) {
		off += 13 + (uint64_t)i * 7; /* a gap */
		sge[i].addr = (uintptr_t)base + off;
		sge[i].length = lens[i];
		sge[i].lkey = lkey;
		off += lens[i];
		total += lens[i];
	}
	return total;
}

/* Concatenate the SGEs' bytes into out. */
static void gather(const struct ibv_sge *sge, int n, uint8_t *out)
{
	for (int i = 0; i < n; i++) {
		memcpy(out, (void *)(uintptr_t)sge[i].addr, sge[i].length);
		out += sge[i].length;
	}
}

static void test_sge_rc_uc(void **state)
{
	static const uint32_t slen[16] = { 1,	 4031, 4033, 17,   8064, 0,
					   100,	 4032, 1,    9000, 3,	 4096,
					   5000, 2,    777,  12345 };
	static const uint32_t rlen[16] = { 4032, 1,    5000, 10000, 3,    0,
					   8000, 4033, 1,    2,	    12000,
					   64,	 333,  6000, 1,	    20000 };
	enum ibv_qp_type types[2] = { IBV_QPT_RC, IBV_QPT_UC };
	int t;

	(void)state;
	for (t = 0; t < 2; t++) {
		struct pair p;
		struct ibv_sge s[16], r[16];
		struct ibv_send_wr wr, *bad;
		struct ibv_recv_wr rwr = { 0 }, *rbad;
		uint8_t *want = malloc(1 << 20), *got = malloc(1 << 20);
		uint64_t total, rtotal;
		struct ibv_wc wc;

		pair_up(&p, t ? "sgeuc" : "sgerc", types[t], 1);
		u4vt_fill(p.la, AREA, 3 + t);
		total = carve(s, 16, slen, p.la, u4v_mr_lkey(p.ma));
		memset(p.rb, 0xee, AREA);
		rtotal = carve(r, 16, rlen, p.rb, u4v_mr_lkey(p.mb));
		assert_true(rtotal >= total);
		gather(s, 16, want);

		/* SEND gathered from 16, received scattered into 16 */
		rwr.wr_id = 1;
		rwr.sg_list = r;
		rwr.num_sge = 16;
		assert_int_equal(u4v_post_recv(p.qb, &rwr, &rbad), 0);
		wr_init(&p, &wr, IBV_WR_SEND, 2, 0, s, 16);
		assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
		expect_wc(p.a.cq, 2, IBV_WC_SUCCESS);
		assert_int_equal(u4vt_poll(p.b.cq, &wc, 1, TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, total);
		gather(r, 16, got);
		assert_true(u4vt_sum(got, total) == u4vt_sum(want, total));
		/* the gaps between receive SGEs were not written */
		assert_int_equal(p.rb[0], 0xee);
		assert_int_equal(*(uint8_t *)(uintptr_t)(r[1].addr - 1), 0xee);
		assert_int_equal(*(uint8_t *)(uintptr_t)(r[15].addr - 1),
				 0xee);

		/* WRITE gathered from 16 into one remote range */
		memset(p.rb + AREA / 2, 0, total + 1);
		wr_init(&p, &wr, IBV_WR_RDMA_WRITE, 3, 0, s, 16);
		wr.wr.rdma.remote_addr = (uintptr_t)p.rb + AREA / 2;
		wr.wr.rdma.rkey = u4v_mr_rkey(p.mb);
		assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
		expect_wc(p.a.cq, 3, IBV_WC_SUCCESS);
		if (types[t] == IBV_QPT_UC) {
			uint64_t end = u4vt_now_ms() + TMO;

			while (u4vt_sum(p.rb + AREA / 2, total) !=
				       u4vt_sum(want, total) &&
			       u4vt_now_ms() < end)
				usleep(1000);
		}
		assert_true(u4vt_sum(p.rb + AREA / 2, total) ==
			    u4vt_sum(want, total));
		assert_int_equal(p.rb[AREA / 2 + total], 0);

		if (types[t] == IBV_QPT_RC) {
			/* READ one remote range, scattered into 16 */
			struct ibv_sge ls[16];

			memset(p.la, 0xee, AREA / 2);
			carve(ls, 16, rlen, p.la, u4v_mr_lkey(p.ma));
			u4vt_fill(p.rb + AREA / 2, total, 99);
			wr_init(&p, &wr, IBV_WR_RDMA_READ, 4, 0, ls, 16);
			/* read exactly rtotal bytes */
			wr.wr.rdma.remote_addr = (uintptr_t)p.rb + AREA / 2;
			wr.wr.rdma.rkey = u4v_mr_rkey(p.mb);
			u4vt_fill(p.rb + AREA / 2, rtotal, 99);
			assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
			expect_wc(p.a.cq, 4, IBV_WC_SUCCESS);
			gather(ls, 16, got);
			assert_true(u4vt_sum(got, rtotal) ==
				    u4vt_sum(p.rb + AREA / 2, rtotal));
			assert_int_equal(*(uint8_t *)(uintptr_t)(ls[1].addr -
								 1),
					 0xee);
		}
		free(want);
		free(got);
		pair_down(&p);
	}
}

/* UD: the 40-byte GRH lands across the first receive SGEs. */
static void test_sge_ud_grh_split(void **state)
{
	static const uint32_t slen[5] = { 1000, 1, 2000, 95, 1000 };
	static const uint32_t rlen[6] = { 30, 5, 10, 2000, 96, 2000 };
	struct pair p;
	struct ibv_sge s[5], r[6];
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	uint8_t want[8192], got[8192];
	uint64_t total, rtotal;
	struct ibv_wc wc;

	(void)state;
	pair_up(&p, "sgeud", IBV_QPT_UD, 1);
	u4vt_fill(p.la, AREA, 5);
	total = carve(s, 5, slen, p.la, u4v_mr_lkey(p.ma));
	memset(p.rb, 0xee, 65536);
	rtotal = carve(r, 6, rlen, p.rb, u4v_mr_lkey(p.mb));
	assert_true(total == 4096 && rtotal >= total + 40);
	gather(s, 5, want);
	rwr.wr_id = 1;
	rwr.sg_list = r;
	rwr.num_sge = 6;
	assert_int_equal(u4v_post_recv(p.qb, &rwr, &rbad), 0);
	wr_init(&p, &wr, IBV_WR_SEND, 2, 0, s, 5);
	assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
	expect_wc(p.a.cq, 2, IBV_WC_SUCCESS);
	assert_int_equal(u4vt_poll(p.b.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, total + 40);
	gather(r, 6, got);
	assert_true(u4vt_sum(got + 40, total) == u4vt_sum(want, total));
	assert_int_equal(got[0] >> 4, 6);
	pair_down(&p);
}

static void test_inline_reuse(void **state)
{
	static const uint32_t sizes[] = { 1, 64, 255, U4V_MAX_INLINE };
	enum ibv_qp_type types[3] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	int t;

	(void)state;
	for (t = 0; t < 3; t++) {
		struct pair p;
		uint32_t grh = types[t] == IBV_QPT_UD ? 40 : 0;
		size_t i;

		pair_up(&p, "inl", types[t], 1);
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			/* unregistered stack memory, three SGEs, lkey 0 */
			uint8_t srcbuf[U4V_MAX_INLINE], copy[U4V_MAX_INLINE];
			uint32_t n = sizes[i], a = n / 3, b = n / 2;
			struct ibv_sge s[3] = {
				{ (uintptr_t)srcbuf, a, 0 },
				{ (uintptr_t)srcbuf + a, b - a, 0 },
				{ (uintptr_t)srcbuf + b, n - b, 0 },
			};
			struct ibv_send_wr wr, *bad;
			struct ibv_wc wc;
			int k;

			for (k = 0; k < 2; k++) {
				bool write = k == 1;

				if (write && types[t] == IBV_QPT_UD)
					break;
				u4vt_fill(srcbuf, n, i * 10 + k + 1);
				memcpy(copy, srcbuf, n);
				memset(p.rb, 0, 4096);
				if (!write)
					assert_int_equal(
						u4vt_post_recv1(
							p.qb, 10 + i,
							(uintptr_t)p.rb,
							n + grh,
							u4v_mr_lkey(p.mb)),
						0);
				wr_init(&p, &wr,
					write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
					20 + i, IBV_SEND_INLINE, s, 3);
				wr.wr.rdma.remote_addr = (uintptr_t)p.rb;
				wr.wr.rdma.rkey = u4v_mr_rkey(p.mb);
				if (types[t] == IBV_QPT_UD)
					wr_init(&p, &wr, IBV_WR_SEND, 20 + i,
						IBV_SEND_INLINE, s, 3);
				assert_int_equal(u4v_post_send(p.qa, &wr, &bad),
						 0);
				/* the buffer is ours again at once */
				memset(srcbuf, 0xdd, n);
				expect_wc(p.a.cq, 20 + i, IBV_WC_SUCCESS);
				if (!write) {
					assert_int_equal(
						u4vt_poll(p.b.cq, &wc, 1, TMO),
						1);
					assert_int_equal(wc.status, 0);
					assert_int_equal(wc.byte_len, n + grh);
				} else if (types[t] == IBV_QPT_UC) {
					uint64_t end = u4vt_now_ms() + TMO;

					while (memcmp(p.rb, copy, n) &&
					       u4vt_now_ms() < end)
						usleep(1000);
				}
				assert_memory_equal(p.rb + (write ? 0 : grh),
						    copy, n);
			}
		}
		pair_down(&p);
	}
}

static void test_unsignaled(void **state)
{
	struct pair p;
	struct ibv_wc wc[32];
	int i, n;

	(void)state;
	pair_up(&p, "unsig", IBV_QPT_RC, 0);
	for (i = 0; i < 40; i++) {
		struct ibv_sge s = { (uintptr_t)p.la + i * 100, 100,
				     u4v_mr_lkey(p.ma) };
		struct ibv_send_wr wr, *bad;

		wr_init(&p, &wr, i % 2 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, i,
			i % 4 == 3 ? IBV_SEND_SIGNALED : 0, &s, 1);
		wr.wr.rdma.remote_addr = (uintptr_t)p.rb + 8192 + i * 100;
		wr.wr.rdma.rkey = u4v_mr_rkey(p.mb);
		if (i % 2 == 0)
			assert_int_equal(u4vt_post_recv1(p.qb, 1000 + i,
							 (uintptr_t)p.rb, 100,
							 u4v_mr_lkey(p.mb)),
					 0);
		assert_int_equal(u4v_post_send(p.qa, &wr, &bad), 0);
	}
	n = u4vt_poll(p.a.cq, wc, 10, TMO);
	assert_int_equal(n, 10);
	for (i = 0; i < 10; i++) {
		assert_int_equal(wc[i].wr_id, 4 * i + 3);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	}
	assert_int_equal(u4vt_poll(p.a.cq, wc, 1, 100), 0);
	/* every SEND reached the receiver, in order */
	assert_int_equal(u4vt_poll(p.b.cq, wc, 20, TMO), 20);
	for (i = 0; i < 20; i++)
		assert_int_equal(wc[i].wr_id, 1000 + 2 * i);
	/* many unsignaled WRs through a small SQ: it drains by itself */
	for (i = 0; i < 2000; i++) {
		struct ibv_sge s = { (uintptr_t)p.la, 64, u4v_mr_lkey(p.ma) };
		struct ibv_send_wr wr, *bad;
		uint64_t end = u4vt_now_ms() + TMO;
		int ret;

		wr_init(&p, &wr, IBV_WR_RDMA_WRITE, 5000 + i,
			i == 1999 ? IBV_SEND_SIGNALED : 0, &s, 1);
		wr.wr.rdma.remote_addr = (uintptr_t)p.rb;
		wr.wr.rdma.rkey = u4v_mr_rkey(p.mb);
		while ((ret = u4v_post_send(p.qa, &wr, &bad)) == ENOMEM &&
		       u4vt_now_ms() < end)
			u4v_ctx_progress(p.a.ctx);
		assert_int_equal(ret, 0);
	}
	expect_wc(p.a.cq, 6999, IBV_WC_SUCCESS);
	assert_int_equal(u4vt_poll(p.a.cq, wc, 1, 50), 0);
	pair_down(&p);
}

static atomic_int events;

static void on_event(struct u4v_cq *cq, void *arg)
{
	(void)cq;
	assert_ptr_equal(arg, &events);
	atomic_fetch_add(&events, 1);
}

/* The callback may run just after the completion became pollable. */
static int wait_events(int n)
{
	uint64_t end = u4vt_now_ms() + 2000;

	while (atomic_load(&events) < n && u4vt_now_ms() < end)
		usleep(200);
	return atomic_load(&events);
}

static void send_one(struct pair *p, uint64_t id, enum ibv_wr_opcode op,
		     int flags)
{
	struct ibv_sge s = { (uintptr_t)p->la, 16, u4v_mr_lkey(p->ma) };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	assert_int_equal(u4vt_post_recv1(p->qb, id, (uintptr_t)p->rb, 4096,
					 u4v_mr_lkey(p->mb)),
			 0);
	wr_init(p, &wr, op, id, flags | IBV_SEND_SIGNALED, &s, 1);
	if (p->type != IBV_QPT_UD) {
		wr.wr.rdma.remote_addr = (uintptr_t)p->rb + 8192;
		wr.wr.rdma.rkey = u4v_mr_rkey(p->mb);
	}
	assert_int_equal(u4v_post_send(p->qa, &wr, &bad), 0);
	expect_wc(p->a.cq, id, IBV_WC_SUCCESS);
	assert_int_equal(u4vt_poll(p->b.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.wr_id, id);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

static void test_solicited(void **state)
{
	enum ibv_qp_type types[3] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	int t;

	(void)state;
	for (t = 0; t < 3; t++) {
		struct pair p;
		bool ud = types[t] == IBV_QPT_UD;

		pair_up(&p, "sol", types[t], 0);
		atomic_store(&events, 0);
		u4v_cq_set_event_fn(p.b.cq, on_event, &events);
		assert_int_equal(u4v_req_notify_cq(p.b.cq, 1), 0);
		/* unsolicited completions do not end a solicited-only wait */
		send_one(&p, 1, IBV_WR_SEND, 0);
		send_one(&p, 2, IBV_WR_SEND_WITH_IMM, 0);
		if (!ud)
			send_one(&p, 3, IBV_WR_RDMA_WRITE_WITH_IMM, 0);
		usleep(20000);
		assert_int_equal(atomic_load(&events), 0);
		/* a solicited one does, once */
		send_one(&p, 4, IBV_WR_SEND, IBV_SEND_SOLICITED);
		assert_int_equal(wait_events(1), 1);
		send_one(&p, 5, IBV_WR_SEND, IBV_SEND_SOLICITED);
		usleep(20000);
		assert_int_equal(wait_events(1), 1); /* not re-armed */
		/* solicited WRITE_WITH_IMM too */
		assert_int_equal(u4v_req_notify_cq(p.b.cq, 1), 0);
		send_one(&p, 6,
			 ud ? IBV_WR_SEND_WITH_IMM :
			      IBV_WR_RDMA_WRITE_WITH_IMM,
			 IBV_SEND_SOLICITED);
		assert_int_equal(wait_events(2), 2);
		/* an "any completion" arm fires on an unsolicited one */
		assert_int_equal(u4v_req_notify_cq(p.b.cq, 0), 0);
		send_one(&p, 7, IBV_WR_SEND, 0);
		assert_int_equal(wait_events(3), 3);
		/* the sender's CQ was never armed */
		u4v_cq_set_event_fn(p.b.cq, NULL, NULL);
		pair_down(&p);
	}
}

/* A WRITE fenced behind a READ of the same range does not overtake it. */
static void test_fence_after_read(void **state)
{
	const size_t len = 256u << 10;
	struct pair p;
	int round;

	(void)state;
	pair_up(&p, "fence", IBV_QPT_RC, 0);
	for (round = 0; round < 3; round++) {
		uint8_t *rd = p.la, *wsrc = p.la + len, *target = p.rb;
		struct ibv_sge s1 = { (uintptr_t)rd, (uint32_t)len,
				      u4v_mr_lkey(p.ma) };
		struct ibv_sge s2 = { (uintptr_t)wsrc, (uint32_t)len,
				      u4v_mr_lkey(p.ma) };
		struct ibv_send_wr w1, w2, *bad;
		uint64_t old_sum;

		u4vt_fill(target, len, 100 + round);
		old_sum = u4vt_sum(target, len);
		u4vt_fill(wsrc, len, 200 + round);
		memset(rd, 0, len);
		wr_init(&p, &w1, IBV_WR_RDMA_READ, 1, IBV_SEND_SIGNALED, &s1,
			1);
		w1.wr.rdma.remote_addr = (uintptr_t)target;
		w1.wr.rdma.rkey = u4v_mr_rkey(p.mb);
		wr_init(&p, &w2, IBV_WR_RDMA_WRITE, 2,
			IBV_SEND_SIGNALED | IBV_SEND_FENCE, &s2, 1);
		w2.wr.rdma.remote_addr = (uintptr_t)target;
		w2.wr.rdma.rkey = u4v_mr_rkey(p.mb);
		w1.next = &w2;
		assert_int_equal(u4v_post_send(p.qa, &w1, &bad), 0);
		expect_wc(p.a.cq, 1, IBV_WC_SUCCESS);
		expect_wc(p.a.cq, 2, IBV_WC_SUCCESS);
		if (u4vt_sum(rd, len) != old_sum)
			fail_msg("round %d: the READ saw the fenced WRITE",
				 round);
		assert_true(u4vt_sum(target, len) == u4vt_sum(wsrc, len));
	}
	pair_down(&p);
}

/* FENCE is meaningless but accepted on UC and UD. */
static void test_fence_other_types(void **state)
{
	enum ibv_qp_type types[2] = { IBV_QPT_UC, IBV_QPT_UD };
	int t;

	(void)state;
	for (t = 0; t < 2; t++) {
		struct pair p;

		pair_up(&p, "fence2", types[t], 0);
		send_one(&p, 1, IBV_WR_SEND, IBV_SEND_FENCE);
		pair_down(&p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sge_rc_uc),
		cmocka_unit_test(test_sge_ud_grh_split),
		cmocka_unit_test(test_inline_reuse),
		cmocka_unit_test(test_unsignaled),
		cmocka_unit_test(test_solicited),
		cmocka_unit_test(test_fence_after_read),
		cmocka_unit_test(test_fence_other_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
