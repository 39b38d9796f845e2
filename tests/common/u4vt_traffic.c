// SPDX-License-Identifier: MIT
/* Verified traffic between two engine contexts; see u4vt_traffic.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "u4vt.h"
#include "u4vt_traffic.h"

void tr_cfg_default(struct tr_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->nqp = 2;
	c->messages = 2000;
	c->min_len = TR_HDR;
	c->max_len = 16384;
	c->ops = TR_ALL;
	c->window = 16;
	c->seed = 1;
	c->timeout_ms = 40000;
	c->timeout = 11; /* 8.4 ms */
	c->retry_cnt = 7;
	c->rnr_retry = 7;
}

static uint64_t tr_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void tr_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	u4vt_fill_state(p, len, tr_mix(seed) | 1);
}

static uint32_t tr_magic(int q)
{
	return 0x55345600u | (uint32_t)q;
}

void tr_make(uint8_t *p, uint32_t len, int q, uint32_t seq, uint32_t rcv_idx,
	     uint64_t seed)
{
	struct tr_hdr h = {tr_magic(q), seq, len, rcv_idx, 0};

	tr_pattern(p + TR_HDR, len - TR_HDR, seed ^ ((uint64_t)q << 40) ^ seq);
	h.sum = u4vt_sum_salted(p + TR_HDR, len - TR_HDR, seq);
	memcpy(p, &h, sizeof(h));
}

int tr_check(const uint8_t *p, uint32_t len, int q, struct tr_hdr *h)
{
	if (len < TR_HDR)
		return -1;
	memcpy(h, p, sizeof(*h));
	if (h->magic != tr_magic(q) || h->len != len)
		return -1;
	if (u4vt_sum_salted(p + TR_HDR, len - TR_HDR, h->seq) != h->sum)
		return -1;
	return 0;
}

/* One outstanding WR of a QP. */
struct tr_wr {
	int op;
	uint32_t len;
	uint64_t off; /* READ: offset in the target's read buffer */
	uint64_t fadd_idx;
};

struct tr_qp {
	int q;
	struct u4v_qp *qa, *qb;
	struct u4v_cq *ca, *cb;
	struct u4v_mr *m_src, *m_local, *m_rbuf, *m_tgt;
	uint8_t *src;	/* window slots of max_len: outgoing payload */
	uint8_t *local; /* window slots of max_len: READ destination */
	uint8_t *rbuf;	/* rq slots of max_len: receive buffers */
	uint8_t *tgt;	/* target: [imm slots][write slots][read src][ctr] */
	size_t src_len, local_len, rbuf_len, tgt_len;
	uint32_t rq; /* receive WQEs kept posted */
	struct tr_wr *wrs;
	uint64_t seq, done;
	uint32_t rcv_next;   /* rcv_idx the next receive-consuming WR gets */
	uint32_t rcv_expect; /* rcv_idx the target expects next */
	uint64_t fadd_next, fadd_expect;
	uint64_t rng;
};

#define TR_SLOT(t, base, i) ((base) + (size_t)(i) * (t)->max_len)

struct tr_run {
	struct tr_cfg c;
	struct u4v_ctx *ctx_a, *ctx_b;
	struct u4v_pd *pd_a, *pd_b;
	struct tr_qp qp[TR_MAX_QP];
	struct tr_result *r;
	uint32_t max_len;
};

static void tr_fail(struct tr_run *t, uint64_t *counter, const char *fmt, ...)
{
	va_list ap;

	(*counter)++;
	if (t->r->msg[0])
		return;
	va_start(ap, fmt);
	vsnprintf(t->r->msg, sizeof(t->r->msg), fmt, ap);
	va_end(ap);
}

static size_t tr_imm_off(const struct tr_run *t, uint32_t slot)
{
	return (size_t)slot * t->max_len;
}

static size_t tr_wr_off(const struct tr_run *t, uint32_t slot)
{
	return (size_t)(t->c.window + slot) * t->max_len;
}

static size_t tr_rd_off(const struct tr_run *t)
{
	return (size_t)(2 * t->c.window) * t->max_len;
}

static size_t tr_ctr_off(const struct tr_run *t)
{
	return (size_t)(2 * t->c.window + 1) * t->max_len;
}

static int tr_post_recv(struct tr_run *t, struct tr_qp *p, uint32_t i)
{
	struct ibv_sge s = {(uintptr_t)(p->rbuf + (size_t)i * t->max_len),
			    t->max_len, u4v_mr_lkey(p->m_rbuf)};
	struct ibv_recv_wr w = {.wr_id = i, .sg_list = &s, .num_sge = 1};
	struct ibv_recv_wr *bad;

	return u4v_post_recv(p->qb, &w, &bad);
}

static int tr_setup_qp(struct tr_run *t, struct tr_qp *p, int q)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct u4v_qp_init init;
	struct u4vt_conn conn;
	uint32_t i;
	int ret;

	memset(p, 0, sizeof(*p));
	p->q = q;
	p->rng = tr_mix(t->c.seed * 1000003u + (uint64_t)q);
	p->rq = 2 * t->c.window;
	p->src_len = (size_t)t->c.window * t->max_len;
	p->local_len = p->src_len;
	p->rbuf_len = (size_t)p->rq * t->max_len;
	p->tgt_len = tr_ctr_off(t) + 64;
	p->src = u4vt_map_anon(p->src_len);
	p->local = u4vt_map_anon(p->local_len);
	p->rbuf = u4vt_map_anon(p->rbuf_len);
	p->tgt = u4vt_map_anon(p->tgt_len);
	p->wrs = calloc(t->c.window, sizeof(*p->wrs));
	if (!p->src || !p->local || !p->rbuf || !p->tgt || !p->wrs)
		return ENOMEM;
	tr_pattern(p->tgt + tr_rd_off(t), t->max_len, t->c.seed + 99 + q);
	if ((ret = u4v_create_cq(t->ctx_a, (int)t->c.window * 2 + 8, &p->ca)) ||
	    (ret = u4v_create_cq(t->ctx_b, (int)p->rq * 2 + 8, &p->cb)))
		return ret;
	if ((ret = u4v_reg_mr(t->pd_a, p->src, p->src_len,
			      IBV_ACCESS_LOCAL_WRITE, &p->m_src)) ||
	    (ret = u4v_reg_mr(t->pd_a, p->local, p->local_len,
			      IBV_ACCESS_LOCAL_WRITE, &p->m_local)) ||
	    (ret = u4v_reg_mr(t->pd_b, p->rbuf, p->rbuf_len,
			      IBV_ACCESS_LOCAL_WRITE, &p->m_rbuf)) ||
	    (ret = u4v_reg_mr(t->pd_b, p->tgt, p->tgt_len, acc, &p->m_tgt)))
		return ret;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.send_cq = init.recv_cq = p->ca;
	init.cap.max_send_wr = t->c.window;
	init.cap.max_recv_wr = 4;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	if ((ret = u4v_create_qp(t->pd_a, &init, &p->qa)))
		return ret;
	init.send_cq = init.recv_cq = p->cb;
	init.cap.max_send_wr = 4;
	init.cap.max_recv_wr = p->rq;
	if ((ret = u4v_create_qp(t->pd_b, &init, &p->qb)))
		return ret;
	u4vt_conn_default(&conn, u4v_qp_num(p->qb));
	conn.psn = 0x777;
	conn.access = acc;
	conn.timeout = t->c.timeout;
	conn.retry_cnt = t->c.retry_cnt;
	conn.rnr_retry = t->c.rnr_retry;
	if ((ret = u4vt_eng_connect(p->qa, IBV_QPT_RC, &conn)))
		return ret;
	conn.remote_qpn = u4v_qp_num(p->qa);
	if ((ret = u4vt_eng_connect(p->qb, IBV_QPT_RC, &conn)))
		return ret;
	for (i = 0; i < p->rq; i++)
		if ((ret = tr_post_recv(t, p, i)))
			return ret;
	return 0;
}

static void tr_teardown_qp(struct tr_run *t, struct tr_qp *p)
{
	(void)t;
	if (p->qa)
		u4v_destroy_qp(p->qa);
	if (p->qb)
		u4v_destroy_qp(p->qb);
	if (p->ca)
		u4v_destroy_cq(p->ca);
	if (p->cb)
		u4v_destroy_cq(p->cb);
	if (p->m_src)
		u4v_dereg_mr(p->m_src);
	if (p->m_local)
		u4v_dereg_mr(p->m_local);
	if (p->m_rbuf)
		u4v_dereg_mr(p->m_rbuf);
	if (p->m_tgt)
		u4v_dereg_mr(p->m_tgt);
	u4vt_unmap(p->src, p->src_len);
	u4vt_unmap(p->local, p->local_len);
	u4vt_unmap(p->rbuf, p->rbuf_len);
	u4vt_unmap(p->tgt, p->tgt_len);
	free(p->wrs);
}

static uint32_t tr_pick_len(struct tr_run *t, struct tr_qp *p)
{
	uint32_t lo = t->c.min_len, hi = t->c.max_len, a, b;
	int lg_lo = 31 - __builtin_clz(lo), lg_hi = 31 - __builtin_clz(hi);
	int k;

	p->rng = tr_mix(p->rng);
	if (hi <= lo)
		return lo;
	/* log-uniform: an octave first, then a size inside it */
	k = lg_lo + (int)((p->rng >> 40) % (uint64_t)(lg_hi - lg_lo + 1));
	a = 1u << k;
	b = k >= 31 ? UINT32_MAX : (1u << (k + 1)) - 1;
	if (a < lo)
		a = lo;
	if (b > hi)
		b = hi;
	return a + (uint32_t)((p->rng & 0xffffffffu) % (uint64_t)(b - a + 1));
}

static int tr_pick_op(struct tr_run *t, struct tr_qp *p)
{
	int ops[6], n = 0, i;

	for (i = 0; i < 6; i++)
		if (t->c.ops & (1u << i))
			ops[n++] = 1 << i;
	p->rng = tr_mix(p->rng);
	return ops[(p->rng >> 33) % (uint64_t)n];
}

static bool tr_consumes_rcv(int op)
{
	return op == TR_SEND || op == TR_SEND_IMM || op == TR_WRITE_IMM;
}

/* Post the next WR of QP p if window and target slots allow. */
static int tr_post_one(struct tr_run *t, struct tr_qp *p)
{
	uint32_t slot = (uint32_t)(p->seq % t->c.window);
	struct tr_wr *w = &p->wrs[slot];
	uint8_t *buf = p->src + (size_t)slot * t->max_len;
	struct ibv_sge s = {(uintptr_t)buf, 0, u4v_mr_lkey(p->m_src)};
	struct ibv_send_wr wr, *bad;
	uint64_t tbase = (uintptr_t)p->tgt;

	memset(&wr, 0, sizeof(wr));
	w->op = tr_pick_op(t, p);
	w->len = tr_pick_len(t, p);
	wr.wr_id = p->seq;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.rkey = u4v_mr_rkey(p->m_tgt);
	if (tr_consumes_rcv(w->op)) {
		/* the target verifies in order; keep within its slots */
		if (p->rcv_next - p->rcv_expect >= t->c.window)
			return 0;
		tr_make(buf, w->len, p->q, (uint32_t)p->seq, p->rcv_next,
			t->c.seed);
		wr.imm_data = p->rcv_next++;
	}
	s.length = w->len;
	switch (w->op) {
	case TR_SEND:
		wr.opcode = IBV_WR_SEND;
		break;
	case TR_SEND_IMM:
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		break;
	case TR_WRITE_IMM:
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.wr.rdma.remote_addr =
		    tbase + tr_imm_off(t, wr.imm_data % t->c.window);
		break;
	case TR_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		tr_make(buf, w->len, p->q, (uint32_t)p->seq, 0, t->c.seed);
		wr.wr.rdma.remote_addr = tbase + tr_wr_off(t, slot);
		break;
	case TR_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		w->off =
		    (t->max_len - w->len) ? p->rng % (t->max_len - w->len) : 0;
		s.addr = (uintptr_t)(p->local + (size_t)slot * t->max_len);
		s.lkey = u4v_mr_lkey(p->m_local);
		memset((void *)(uintptr_t)s.addr, 0xee, w->len);
		wr.wr.rdma.remote_addr = tbase + tr_rd_off(t) + w->off;
		break;
	case TR_FADD:
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		s.addr = (uintptr_t)(p->local + (size_t)slot * t->max_len);
		s.lkey = u4v_mr_lkey(p->m_local);
		s.length = 8;
		w->len = 8;
		w->fadd_idx = p->fadd_next++;
		wr.wr.atomic.remote_addr = tbase + tr_ctr_off(t);
		wr.wr.atomic.rkey = u4v_mr_rkey(p->m_tgt);
		wr.wr.atomic.compare_add = 1;
		break;
	}
	if (u4v_post_send(p->qa, &wr, &bad)) {
		tr_fail(t, &t->r->bad_status, "qp %d: post_send refused", p->q);
		return -1;
	}
	p->seq++;
	t->r->posted++;
	return 1;
}

/* A requester completion. */
static void tr_req_done(struct tr_run *t, struct tr_qp *p,
			const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)(wc->wr_id % t->c.window);
	struct tr_wr *w = &p->wrs[slot];
	uint8_t *loc = p->local + (size_t)slot * t->max_len;
	struct tr_hdr h;

	if (wc->status) {
		if (!t->r->first_status)
			t->r->first_status = wc->status;
		tr_fail(t, &t->r->bad_status, "qp %d wr %llu: status %d", p->q,
			(unsigned long long)wc->wr_id, wc->status);
		return;
	}
	if (wc->wr_id != p->done) {
		tr_fail(t, wc->wr_id < p->done ? &t->r->dup : &t->r->misordered,
			"qp %d: completion for wr %llu, expected %llu", p->q,
			(unsigned long long)wc->wr_id,
			(unsigned long long)p->done);
		if (wc->wr_id < p->done)
			return;
		p->done = wc->wr_id;
	}
	p->done++;
	t->r->completed++;
	t->r->bytes += w->len;
	if (w->op == TR_WRITE) {
		if (tr_check(p->tgt + tr_wr_off(t, slot), w->len, p->q, &h) ||
		    h.seq != (uint32_t)wc->wr_id)
			tr_fail(
			    t, &t->r->corrupt,
			    "qp %d wr %llu: RDMA WRITE data wrong at target",
			    p->q, (unsigned long long)wc->wr_id);
		else
			t->r->verified++;
	} else if (w->op == TR_READ) {
		if (memcmp(loc, p->tgt + tr_rd_off(t) + w->off, w->len))
			tr_fail(t, &t->r->corrupt,
				"qp %d wr %llu: RDMA READ data wrong", p->q,
				(unsigned long long)wc->wr_id);
		else
			t->r->verified++;
	} else if (w->op == TR_FADD) {
		uint64_t orig;

		memcpy(&orig, loc, 8);
		if (orig != w->fadd_idx)
			tr_fail(
			    t, orig < w->fadd_idx ? &t->r->corrupt : &t->r->dup,
			    "qp %d: fetch-add returned %llu, expected %llu",
			    p->q, (unsigned long long)orig,
			    (unsigned long long)w->fadd_idx);
		else
			t->r->verified++;
	}
}

/* A target completion: check the message, give the buffer back. */
static void tr_rcv_done(struct tr_run *t, struct tr_qp *p,
			const struct ibv_wc *wc)
{
	const uint8_t *m;
	struct tr_hdr h;
	uint32_t idx;

	if (wc->status) {
		if (!t->r->first_status)
			t->r->first_status = wc->status;
		tr_fail(t, &t->r->bad_status, "qp %d target: status %d", p->q,
			wc->status);
		return;
	}
	t->r->received++;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		idx = wc->imm_data;
		m = p->tgt + tr_imm_off(t, idx % t->c.window);
	} else {
		m = p->rbuf + (size_t)wc->wr_id * t->max_len;
		idx = 0;
	}
	if (tr_check(m, wc->byte_len, p->q, &h)) {
		tr_fail(t, &t->r->corrupt,
			"qp %d target: corrupt message (byte_len %u, op %d)",
			p->q, wc->byte_len, wc->opcode);
		h.rcv_idx = p->rcv_expect;
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		   h.rcv_idx != idx) {
		tr_fail(t, &t->r->corrupt, "qp %d target: imm %u, data says %u",
			p->q, idx, h.rcv_idx);
	} else if ((wc->wc_flags & IBV_WC_WITH_IMM) &&
		   wc->imm_data != h.rcv_idx) {
		tr_fail(t, &t->r->corrupt, "qp %d target: imm mismatch", p->q);
	} else {
		t->r->verified++;
	}
	if (h.rcv_idx != p->rcv_expect) {
		if ((int32_t)(h.rcv_idx - p->rcv_expect) < 0)
			tr_fail(t, &t->r->dup,
				"qp %d target: message %u again (expected %u)",
				p->q, h.rcv_idx, p->rcv_expect);
		else
			tr_fail(t, &t->r->lost,
				"qp %d target: got message %u, expected %u",
				p->q, h.rcv_idx, p->rcv_expect);
	}
	if ((int32_t)(h.rcv_idx - p->rcv_expect) >= 0)
		p->rcv_expect = h.rcv_idx + 1;
	/* every receive completion, WRITE_WITH_IMM included, used one WQE */
	if (tr_post_recv(t, p, (uint32_t)wc->wr_id))
		tr_fail(t, &t->r->bad_status, "qp %d: repost failed", p->q);
}

/* Poll n target completions of p's receive CQ into tr_rcv_done. */
static void tr_poll_rcv(struct tr_run *t, struct tr_qp *p)
{
	struct ibv_wc wc[32];
	int i, n = u4v_poll_cq(p->cb, 32, wc);

	for (i = 0; i < n; i++)
		tr_rcv_done(t, p, &wc[i]);
}

/*
 * One round over the QPs: post what the window allows, take the
 * requester's completions and (unless slow_rx holds them back) the
 * target's. Whether every QP has all its per_qp messages done.
 */
static bool tr_round(struct tr_run *t, uint64_t per_qp, uint64_t *last_rx)
{
	struct ibv_wc wc[32];
	bool all_done = true;
	int q, i, n;

	for (q = 0; q < t->c.nqp; q++) {
		struct tr_qp *p = &t->qp[q];

		while (p->seq < per_qp && p->seq - p->done < t->c.window &&
		       tr_post_one(t, p) > 0)
			;
		n = u4v_poll_cq(p->ca, 32, wc);
		for (i = 0; i < n; i++)
			tr_req_done(t, p, &wc[i]);
		if (!t->c.slow_rx_ms ||
		    u4vt_now_ms() - *last_rx >= t->c.slow_rx_ms) {
			tr_poll_rcv(t, p);
			if (q == t->c.nqp - 1)
				*last_rx = u4vt_now_ms();
		}
		if (p->done < per_qp)
			all_done = false;
	}
	return all_done;
}

/*
 * Every message sent: drain the targets' last receive completions (2 s at
 * most), then every message must have arrived once and each target's
 * counter must hold every fetch-add.
 */
static void tr_finish(struct tr_run *t)
{
	uint64_t until = u4vt_now_ms() + 2000;
	bool pending = true;
	int q;

	while (pending && u4vt_now_ms() < until) {
		pending = false;
		for (q = 0; q < t->c.nqp; q++) {
			tr_poll_rcv(t, &t->qp[q]);
			if (t->qp[q].rcv_expect != t->qp[q].rcv_next)
				pending = true;
		}
	}
	for (q = 0; q < t->c.nqp; q++) {
		struct tr_qp *p = &t->qp[q];
		uint64_t ctr;

		if (p->rcv_expect != p->rcv_next)
			tr_fail(t, &t->r->lost,
				"qp %d: target saw %u of %u messages", q,
				p->rcv_expect, p->rcv_next);
		memcpy(&ctr, p->tgt + tr_ctr_off(t), 8);
		if (ctr != p->fadd_next)
			tr_fail(t, &t->r->dup,
				"qp %d: counter %llu after %llu fetch-adds", q,
				(unsigned long long)ctr,
				(unsigned long long)p->fadd_next);
	}
}

static bool tr_failed(const struct tr_result *r)
{
	return r->bad_status || r->corrupt || r->lost || r->dup ||
	       r->misordered || r->timed_out;
}

int tr_run(const struct tr_cfg *cfg, struct u4v_ctx *ctx_a, struct u4v_pd *pd_a,
	   struct u4v_ctx *ctx_b, struct u4v_pd *pd_b, struct tr_result *r)
{
	struct tr_run *t = calloc(1, sizeof(*t));
	uint64_t start = u4vt_now_ms(), last_rx = 0, next_report;
	uint64_t per_qp;
	bool done;
	int q;

	memset(r, 0, sizeof(*r));
	if (!t)
		return -1;
	t->c = *cfg;
	t->r = r;
	t->ctx_a = ctx_a;
	t->ctx_b = ctx_b;
	t->pd_a = pd_a;
	t->pd_b = pd_b;
	t->max_len = (cfg->max_len + 63) & ~63u;
	if (t->c.nqp > TR_MAX_QP || t->c.min_len < TR_HDR || !t->c.window)
		r->setup_err = EINVAL;
	for (q = 0; !r->setup_err && q < t->c.nqp; q++)
		r->setup_err = tr_setup_qp(t, &t->qp[q], q);
	if (r->setup_err) {
		snprintf(r->msg, sizeof(r->msg), "setup failed: %d",
			 r->setup_err);
		goto out;
	}
	per_qp = (t->c.messages + (uint64_t)t->c.nqp - 1) / (uint64_t)t->c.nqp;
	next_report = t->c.progress_report;
	while (!tr_failed(r)) {
		if (u4vt_now_ms() - start > t->c.timeout_ms) {
			r->timed_out = true;
			snprintf(r->msg, sizeof(r->msg),
				 "timed out: %llu of %llu completed",
				 (unsigned long long)r->completed,
				 (unsigned long long)(per_qp * t->c.nqp));
			break;
		}
		done = tr_round(t, per_qp, &last_rx);
		if (t->c.progress_report && r->completed >= next_report) {
			fprintf(stderr, "  %llu messages, %.1f s\n",
				(unsigned long long)r->completed,
				(u4vt_now_ms() - start) / 1000.0);
			next_report += t->c.progress_report;
		}
		if (done) {
			tr_finish(t);
			break;
		}
	}
out:
	r->secs = (u4vt_now_ms() - start) / 1000.0;
	for (q = 0; q < t->c.nqp; q++)
		tr_teardown_qp(t, &t->qp[q]);
	free(t);
	return r->setup_err || tr_failed(r) ? -1 : 0;
}
