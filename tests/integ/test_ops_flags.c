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

static void pair_up(struct u4vt_area_pair *p, const char *tag,
		    enum ibv_qp_type type, int sig_all)
{
	struct u4vt_qp_opts o;

	u4vt_qp_opts_default(&o);
	o.max_sge = U4V_MAX_SGE;
	o.max_inline = U4V_MAX_INLINE;
	o.sq_sig_all = sig_all;
	u4vt_area_pair_up(p, tag, type, &o, AREA);
}

static void wr_init(struct u4vt_area_pair *p, struct ibv_send_wr *wr,
		    enum ibv_wr_opcode op, uint64_t id, int flags,
		    struct ibv_sge *sge, int nsge)
{
	u4vt_send_wr(wr, op, id, flags, sge, nsge);
	if (p->q.type == IBV_QPT_UD)
		u4vt_send_wr_ud(wr, p->ah, u4v_qp_num(p->q.qb));
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

/*
 * A SEND gathered from s[0, ns), received into r[0, nr): both succeed;
 * the bytes received.
 */
static uint32_t send_sges(struct u4vt_area_pair *p, struct ibv_sge *s, int ns,
			  struct ibv_sge *r, int nr)
{
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = r, .num_sge = nr};
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	assert_int_equal(u4v_post_recv(p->q.qb, &rwr, &rbad), 0);
	wr_init(p, &wr, IBV_WR_SEND, 2, 0, s, ns);
	assert_int_equal(u4v_post_send(p->q.qa, &wr, &bad), 0);
	expect_wc(p->q.a.cq, 2, IBV_WC_SUCCESS);
	assert_int_equal(u4vt_poll(p->q.b.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	return wc.byte_len;
}

/* An RDMA WRITE or READ of s[0, n) at dst + off; its completion. */
static void rdma_sges(struct u4vt_area_pair *p, enum ibv_wr_opcode op,
		      uint64_t id, struct ibv_sge *s, int n, size_t off)
{
	struct ibv_send_wr wr, *bad;

	wr_init(p, &wr, op, id, 0, s, n);
	wr.wr.rdma.remote_addr = (uintptr_t)p->dst + off;
	wr.wr.rdma.rkey = u4v_mr_rkey(p->md);
	assert_int_equal(u4v_post_send(p->q.qa, &wr, &bad), 0);
	expect_wc(p->q.a.cq, id, IBV_WC_SUCCESS);
}

/* The byte before an SGE (a gap carve() filled) is untouched. */
static void gap_intact(const struct ibv_sge *sge)
{
	assert_int_equal(*(uint8_t *)(uintptr_t)(sge->addr - 1), 0xee);
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
	const size_t half = AREA / 2;
	int t;

	(void)state;
	for (t = 0; t < 2; t++) {
		struct u4vt_area_pair p;
		struct ibv_sge s[16], r[16], ls[16];
		uint8_t *want = malloc(1 << 20), *got = malloc(1 << 20);
		uint64_t total, rtotal, end;

		pair_up(&p, t ? "sgeuc" : "sgerc", types[t], 1);
		u4vt_fill(p.src, AREA, 3 + t);
		total = carve(s, 16, slen, p.src, u4v_mr_lkey(p.ms));
		memset(p.dst, 0xee, AREA);
		rtotal = carve(r, 16, rlen, p.dst, u4v_mr_lkey(p.md));
		assert_true(rtotal >= total);
		gather(s, 16, want);

		/* SEND gathered from 16, received scattered into 16 */
		assert_int_equal(send_sges(&p, s, 16, r, 16), total);
		gather(r, 16, got);
		assert_true(u4vt_sum(got, total) == u4vt_sum(want, total));
		/* the gaps between receive SGEs were not written */
		assert_int_equal(p.dst[0], 0xee);
		gap_intact(&r[1]);
		gap_intact(&r[15]);

		/* WRITE gathered from 16 into one remote range (UC: no
		 * acknowledgement, the data lands after the completion) */
		memset(p.dst + half, 0, total + 1);
		rdma_sges(&p, IBV_WR_RDMA_WRITE, 3, s, 16, half);
		end = u4vt_now_ms() + TMO;
		while (types[t] == IBV_QPT_UC &&
		       u4vt_sum(p.dst + half, total) != u4vt_sum(want, total) &&
		       u4vt_now_ms() < end)
			usleep(1000);
		assert_true(u4vt_sum(p.dst + half, total) ==
			    u4vt_sum(want, total));
		assert_int_equal(p.dst[half + total], 0);

		if (types[t] == IBV_QPT_RC) {
			/* READ exactly rtotal bytes of one remote range,
			 * scattered into 16 */
			memset(p.src, 0xee, half);
			carve(ls, 16, rlen, p.src, u4v_mr_lkey(p.ms));
			u4vt_fill(p.dst + half, rtotal, 99);
			rdma_sges(&p, IBV_WR_RDMA_READ, 4, ls, 16, half);
			gather(ls, 16, got);
			assert_true(u4vt_sum(got, rtotal) ==
				    u4vt_sum(p.dst + half, rtotal));
			gap_intact(&ls[1]);
		}
		free(want);
		free(got);
		u4vt_area_pair_down(&p);
	}
}

/* UD: the 40-byte GRH lands across the first receive SGEs. */
static void test_sge_ud_grh_split(void **state)
{
	static const uint32_t slen[5] = { 1000, 1, 2000, 95, 1000 };
	static const uint32_t rlen[6] = { 30, 5, 10, 2000, 96, 2000 };
	struct u4vt_area_pair p;
	struct ibv_sge s[5], r[6];
	uint8_t want[8192], got[8192];
	uint64_t total, rtotal;

	(void)state;
	pair_up(&p, "sgeud", IBV_QPT_UD, 1);
	u4vt_fill(p.src, AREA, 5);
	total = carve(s, 5, slen, p.src, u4v_mr_lkey(p.ms));
	memset(p.dst, 0xee, 65536);
	rtotal = carve(r, 6, rlen, p.dst, u4v_mr_lkey(p.md));
	assert_true(total == 4096 && rtotal >= total + 40);
	gather(s, 5, want);
	assert_int_equal(send_sges(&p, s, 5, r, 6), total + 40);
	gather(r, 6, got);
	assert_true(u4vt_sum(got + 40, total) == u4vt_sum(want, total));
	/* RoCE v2 between IPv4-mapped GIDs: the IPv4 header at 20-39 */
	assert_int_equal(got[0], 0);
	assert_int_equal(got[20], 0x45);
	u4vt_area_pair_down(&p);
}

static void test_inline_reuse(void **state)
{
	static const uint32_t sizes[] = { 1, 64, 255, U4V_MAX_INLINE };
	enum ibv_qp_type types[3] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	int t;

	(void)state;
	for (t = 0; t < 3; t++) {
		struct u4vt_area_pair p;
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
				memset(p.dst, 0, 4096);
				if (!write)
					assert_int_equal(
					    u4vt_post_recv1(p.q.qb, 10 + i,
							    (uintptr_t)p.dst,
							    n + grh,
							    u4v_mr_lkey(p.md)),
					    0);
				wr_init(&p, &wr,
					write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
					20 + i, IBV_SEND_INLINE, s, 3);
				wr.wr.rdma.remote_addr = (uintptr_t)p.dst;
				wr.wr.rdma.rkey = u4v_mr_rkey(p.md);
				if (types[t] == IBV_QPT_UD)
					wr_init(&p, &wr, IBV_WR_SEND, 20 + i,
						IBV_SEND_INLINE, s, 3);
				assert_int_equal(u4v_post_send(p.q.qa, &wr, &bad),
						 0);
				/* the buffer is ours again at once */
				memset(srcbuf, 0xdd, n);
				expect_wc(p.q.a.cq, 20 + i, IBV_WC_SUCCESS);
				if (!write) {
					assert_int_equal(
						u4vt_poll(p.q.b.cq, &wc, 1, TMO),
						1);
					assert_int_equal(wc.status, 0);
					assert_int_equal(wc.byte_len, n + grh);
				} else if (types[t] == IBV_QPT_UC) {
					uint64_t end = u4vt_now_ms() + TMO;

					while (memcmp(p.dst, copy, n) &&
					       u4vt_now_ms() < end)
						usleep(1000);
				}
				assert_memory_equal(p.dst + (write ? 0 : grh),
						    copy, n);
			}
		}
		u4vt_area_pair_down(&p);
	}
}

static void test_unsignaled(void **state)
{
	struct u4vt_area_pair p;
	struct ibv_wc wc[32];
	int i, n;

	(void)state;
	pair_up(&p, "unsig", IBV_QPT_RC, 0);
	for (i = 0; i < 40; i++) {
		struct ibv_sge s = {(uintptr_t)p.src + i * 100, 100,
				    u4v_mr_lkey(p.ms)};
		struct ibv_send_wr wr, *bad;

		wr_init(&p, &wr, i % 2 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, i,
			i % 4 == 3 ? IBV_SEND_SIGNALED : 0, &s, 1);
		wr.wr.rdma.remote_addr = (uintptr_t)p.dst + 8192 + i * 100;
		wr.wr.rdma.rkey = u4v_mr_rkey(p.md);
		if (i % 2 == 0)
			assert_int_equal(u4vt_post_recv1(p.q.qb, 1000 + i,
							 (uintptr_t)p.dst, 100,
							 u4v_mr_lkey(p.md)),
					 0);
		assert_int_equal(u4v_post_send(p.q.qa, &wr, &bad), 0);
	}
	n = u4vt_poll(p.q.a.cq, wc, 10, TMO);
	assert_int_equal(n, 10);
	for (i = 0; i < 10; i++) {
		assert_int_equal(wc[i].wr_id, 4 * i + 3);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	}
	assert_int_equal(u4vt_poll(p.q.a.cq, wc, 1, 100), 0);
	/* every SEND reached the receiver, in order */
	assert_int_equal(u4vt_poll(p.q.b.cq, wc, 20, TMO), 20);
	for (i = 0; i < 20; i++)
		assert_int_equal(wc[i].wr_id, 1000 + 2 * i);
	/* many unsignaled WRs through a small SQ: it drains by itself */
	for (i = 0; i < 2000; i++) {
		struct ibv_sge s = {(uintptr_t)p.src, 64, u4v_mr_lkey(p.ms)};
		struct ibv_send_wr wr, *bad;
		uint64_t end = u4vt_now_ms() + TMO;
		int ret;

		wr_init(&p, &wr, IBV_WR_RDMA_WRITE, 5000 + i,
			i == 1999 ? IBV_SEND_SIGNALED : 0, &s, 1);
		wr.wr.rdma.remote_addr = (uintptr_t)p.dst;
		wr.wr.rdma.rkey = u4v_mr_rkey(p.md);
		while ((ret = u4v_post_send(p.q.qa, &wr, &bad)) == ENOMEM &&
		       u4vt_now_ms() < end)
			u4v_ctx_progress(p.q.a.ctx);
		assert_int_equal(ret, 0);
	}
	expect_wc(p.q.a.cq, 6999, IBV_WC_SUCCESS);
	assert_int_equal(u4vt_poll(p.q.a.cq, wc, 1, 50), 0);
	u4vt_area_pair_down(&p);
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

static void send_one(struct u4vt_area_pair *p, uint64_t id,
		     enum ibv_wr_opcode op, int flags)
{
	struct ibv_sge s = {(uintptr_t)p->src, 16, u4v_mr_lkey(p->ms)};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	assert_int_equal(u4vt_post_recv1(p->q.qb, id, (uintptr_t)p->dst, 4096,
					 u4v_mr_lkey(p->md)),
			 0);
	wr_init(p, &wr, op, id, flags | IBV_SEND_SIGNALED, &s, 1);
	if (p->q.type != IBV_QPT_UD) {
		wr.wr.rdma.remote_addr = (uintptr_t)p->dst + 8192;
		wr.wr.rdma.rkey = u4v_mr_rkey(p->md);
	}
	assert_int_equal(u4v_post_send(p->q.qa, &wr, &bad), 0);
	expect_wc(p->q.a.cq, id, IBV_WC_SUCCESS);
	assert_int_equal(u4vt_poll(p->q.b.cq, &wc, 1, TMO), 1);
	assert_int_equal(wc.wr_id, id);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

static void test_solicited(void **state)
{
	enum ibv_qp_type types[3] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	int t;

	(void)state;
	for (t = 0; t < 3; t++) {
		struct u4vt_area_pair p;
		bool ud = types[t] == IBV_QPT_UD;

		pair_up(&p, "sol", types[t], 0);
		atomic_store(&events, 0);
		u4v_cq_set_event_fn(p.q.b.cq, on_event, &events);
		assert_int_equal(u4v_req_notify_cq(p.q.b.cq, 1), 0);
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
		assert_int_equal(u4v_req_notify_cq(p.q.b.cq, 1), 0);
		send_one(&p, 6,
			 ud ? IBV_WR_SEND_WITH_IMM :
			      IBV_WR_RDMA_WRITE_WITH_IMM,
			 IBV_SEND_SOLICITED);
		assert_int_equal(wait_events(2), 2);
		/* an "any completion" arm fires on an unsolicited one */
		assert_int_equal(u4v_req_notify_cq(p.q.b.cq, 0), 0);
		send_one(&p, 7, IBV_WR_SEND, 0);
		assert_int_equal(wait_events(3), 3);
		/* the sender's CQ was never armed */
		u4v_cq_set_event_fn(p.q.b.cq, NULL, NULL);
		u4vt_area_pair_down(&p);
	}
}

/* A WRITE fenced behind a READ of the same range does not overtake it. */
static void test_fence_after_read(void **state)
{
	const size_t len = 256u << 10;
	struct u4vt_area_pair p;
	int round;

	(void)state;
	pair_up(&p, "fence", IBV_QPT_RC, 0);
	for (round = 0; round < 3; round++) {
		uint8_t *rd = p.src, *wsrc = p.src + len, *target = p.dst;
		struct ibv_sge s1 = {(uintptr_t)rd, (uint32_t)len,
				     u4v_mr_lkey(p.ms)};
		struct ibv_sge s2 = {(uintptr_t)wsrc, (uint32_t)len,
				     u4v_mr_lkey(p.ms)};
		struct ibv_send_wr w1, w2, *bad;
		uint64_t old_sum;

		u4vt_fill(target, len, 100 + round);
		old_sum = u4vt_sum(target, len);
		u4vt_fill(wsrc, len, 200 + round);
		memset(rd, 0, len);
		wr_init(&p, &w1, IBV_WR_RDMA_READ, 1, IBV_SEND_SIGNALED, &s1,
			1);
		w1.wr.rdma.remote_addr = (uintptr_t)target;
		w1.wr.rdma.rkey = u4v_mr_rkey(p.md);
		wr_init(&p, &w2, IBV_WR_RDMA_WRITE, 2,
			IBV_SEND_SIGNALED | IBV_SEND_FENCE, &s2, 1);
		w2.wr.rdma.remote_addr = (uintptr_t)target;
		w2.wr.rdma.rkey = u4v_mr_rkey(p.md);
		w1.next = &w2;
		assert_int_equal(u4v_post_send(p.q.qa, &w1, &bad), 0);
		expect_wc(p.q.a.cq, 1, IBV_WC_SUCCESS);
		expect_wc(p.q.a.cq, 2, IBV_WC_SUCCESS);
		if (u4vt_sum(rd, len) != old_sum)
			fail_msg("round %d: the READ saw the fenced WRITE",
				 round);
		assert_true(u4vt_sum(target, len) == u4vt_sum(wsrc, len));
	}
	u4vt_area_pair_down(&p);
}

/* FENCE is meaningless but accepted on UC and UD. */
static void test_fence_other_types(void **state)
{
	enum ibv_qp_type types[2] = { IBV_QPT_UC, IBV_QPT_UD };
	int t;

	(void)state;
	for (t = 0; t < 2; t++) {
		struct u4vt_area_pair p;

		pair_up(&p, "fence2", types[t], 0);
		send_one(&p, 1, IBV_WR_SEND, IBV_SEND_FENCE);
		u4vt_area_pair_down(&p);
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
