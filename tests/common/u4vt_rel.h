/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the reliability suite (fault matrix, regressions, bad input),
 * header-only on top of testlib.h. Include after <cmocka.h>.
 */
#ifndef U4VT_REL_H
#define U4VT_REL_H

#include <stdio.h>
#include <string.h>
#include <usb4verbs/engine.h>
#include <usb4verbs/sim.h>

#include "testlib.h"
#include "u4vt_traffic.h"

/* An unthrottled, zero-latency, fault-free cable configuration. */
static inline void rel_cfg(struct u4l_sim_config *c)
{
	u4l_sim_config_default(c);
	c->rate_bps = 0;
	c->latency_ns = 0;
}

/* u4vt_end_open with a choice of progress thread (no_thread 1: none). */
static inline void rel_end_open(struct u4vt_end *e, const char *shm,
				uint32_t end, int no_thread)
{
	struct u4v_ctx_attr attr = { 0 };
	struct u4l_dev *link;

	memset(e, 0, sizeof(*e));
	assert_int_equal(u4l_sim_open(shm, end, &link), 0);
	attr.link = link;
	attr.node_guid = 0x2000 + end;
	attr.async_event_fd = -1;
	attr.no_progress_thread = no_thread;
	assert_int_equal(u4v_ctx_open(&attr, &e->ctx), 0);
	assert_int_equal(u4v_alloc_pd(e->ctx, &e->pd), 0);
	assert_int_equal(u4v_create_cq(e->ctx, 4096, &e->cq), 0);
}

/* Two ends of a fresh cable and one connected QP pair a -> b. */
struct rel_pair {
	const char *shm;
	struct u4vt_end a, b;
	struct u4vt_qp_opts o;
	struct u4v_qp *qa, *qb;
	enum ibv_qp_type type;
};

static inline void rel_pair_up(struct rel_pair *p, const char *tag,
			       enum ibv_qp_type type,
			       const struct u4l_sim_config *cfg,
			       const struct u4vt_qp_opts *o, int b_no_thread)
{
	struct u4l_sim_config def;

	if (!cfg) {
		rel_cfg(&def);
		cfg = &def;
	}
	memset(p, 0, sizeof(*p));
	p->type = type;
	p->shm = u4vt_shm_name(tag);
	u4vt_cable_create(p->shm, cfg);
	rel_end_open(&p->a, p->shm, 0, 0);
	rel_end_open(&p->b, p->shm, 1, b_no_thread);
	if (o)
		p->o = *o;
	else
		u4vt_qp_opts_default(&p->o);
	p->qa = u4vt_qp_create(&p->a, type, &p->o);
	p->qb = u4vt_qp_create(&p->b, type, &p->o);
	u4vt_qp_connect(p->qa, type, u4v_qp_num(p->qb), &p->o);
	u4vt_qp_connect(p->qb, type, u4v_qp_num(p->qa), &p->o);
}

static inline void rel_pair_down(struct rel_pair *p)
{
	if (p->qa)
		assert_int_equal(u4v_destroy_qp(p->qa), 0);
	if (p->qb)
		assert_int_equal(u4v_destroy_qp(p->qb), 0);
	u4vt_end_close(&p->a);
	u4vt_end_close(&p->b);
	u4l_sim_destroy(p->shm);
}

/* Counters of both cable ends added up. */
static inline void rel_counters(const char *shm, struct u4l_counters *sum)
{
	struct u4l_counters c[2];
	uint64_t *s = (uint64_t *)sum, *x = (uint64_t *)&c[0],
		 *y = (uint64_t *)&c[1];
	size_t i;

	assert_int_equal(u4l_sim_stat(shm, c), 0);
	for (i = 0; i < sizeof(*sum) / sizeof(uint64_t); i++)
		s[i] = x[i] + y[i];
}

static inline void rel_print_counters(const char *what,
				      const struct u4l_counters *c)
{
	fprintf(stderr,
		"  [%s] tx %llu rx %llu drop %llu dup %llu reord %llu crc %llu "
		"strand %llu ovf %llu | rexmit %llu dupack %llu rescue %llu "
		"rnr %llu/%llu seqnak %llu/%llu dupfr %llu crcdisc %llu "
		"bad %llu ooo %llu\n",
		what, (unsigned long long)c->tx_frames,
		(unsigned long long)c->rx_frames,
		(unsigned long long)c->fault_drop,
		(unsigned long long)c->fault_dup,
		(unsigned long long)c->fault_reorder,
		(unsigned long long)c->fault_crc,
		(unsigned long long)c->fault_stranded,
		(unsigned long long)c->rx_overflow,
		(unsigned long long)c->retransmits,
		(unsigned long long)c->dup_acks,
		(unsigned long long)c->stranded_rescues,
		(unsigned long long)c->rnr_naks_sent,
		(unsigned long long)c->rnr_naks_rcvd,
		(unsigned long long)c->seq_naks_sent,
		(unsigned long long)c->seq_naks_rcvd,
		(unsigned long long)c->dup_frames_rcvd,
		(unsigned long long)c->crc_discards,
		(unsigned long long)c->bad_frames,
		(unsigned long long)c->ooo_frames);
}

/* Register len bytes at buf on pd with access; returns the MR. */
static inline struct u4v_mr *rel_reg(struct u4v_pd *pd, void *buf,
				     size_t len, int access)
{
	struct u4v_mr *mr = NULL;

	assert_int_equal(u4v_reg_mr(pd, buf, len, access, &mr), 0);
	return mr;
}

#define REL_ACC_ALL                                                           \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                   \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* A signaled WR of opcode op over the one SGE s. */
static inline void rel_wr(struct ibv_send_wr *wr, struct ibv_sge *s,
			  uint64_t wr_id, enum ibv_wr_opcode op)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = s;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
}

/* Post one signaled WR of opcode op; returns the post's errno value. */
static inline int rel_post(struct u4v_qp *qp, enum ibv_wr_opcode op,
			   uint64_t wr_id, void *buf, uint32_t len,
			   uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	rel_wr(&wr, &s, wr_id, op);
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return u4v_post_send(qp, &wr, &bad);
}

/* Post one signaled UD SEND to remote_qpn through ah (qkey 0x11111111). */
static inline int rel_post_ud(struct u4v_qp *qp, uint64_t wr_id, void *buf,
			      uint32_t len, uint32_t lkey, struct u4v_ah *ah,
			      uint32_t remote_qpn)
{
	struct ibv_sge s = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	rel_wr(&wr, &s, wr_id, IBV_WR_SEND);
	wr.wr.ud.ah = &ah->ibv;
	wr.wr.ud.remote_qpn = remote_qpn;
	wr.wr.ud.remote_qkey = 0x11111111;
	return u4v_post_send(qp, &wr, &bad);
}

static inline int rel_post_recv(struct u4v_qp *qp, uint64_t wr_id, void *buf,
				uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)buf, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	return u4v_post_recv(qp, &wr, &bad);
}

/* Wait for one completion; asserts it arrives within timeout_ms. */
static inline struct ibv_wc rel_wait1(struct u4v_cq *cq, int timeout_ms)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	assert_int_equal(u4vt_poll(cq, &wc, 1, timeout_ms), 1);
	return wc;
}

#endif
