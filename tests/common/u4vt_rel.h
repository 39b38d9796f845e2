/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the reliability suite (fault matrix, regressions, bad input),
 * header-only on top of testlib.h. Include after <cmocka.h>.
 */
#ifndef U4VT_REL_H
#define U4VT_REL_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <usb4verbs/engine.h>
#include <usb4verbs/sim.h>

#include "testlib.h"
#include "u4vt_traffic.h"

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

/*
 * An RC pair and two buffers, each with an MR: the source filled from seed,
 * the destination 0xee. The source is side a's for WRITE and SEND, side b's
 * for READ (src_on_b: the memory the responder reads); the remote side's MR
 * allows everything, the local one local writes.
 */
struct rel_env {
	struct u4vt_pair p;
	uint8_t *src, *dst;
	size_t len;
	struct u4v_mr *ms, *md;
};

static inline void rel_env_up(struct rel_env *e, const char *tag, size_t len,
			      uint32_t psn, uint32_t seed, bool src_on_b)
{
	struct u4v_pd *local, *remote;
	struct u4vt_qp_opts o;

	memset(e, 0, sizeof(*e));
	u4vt_qp_opts_default(&o);
	o.psn = psn;
	u4vt_pair_up(&e->p, tag, IBV_QPT_RC, NULL, &o, 0);
	e->len = len;
	e->src = u4vt_map(len);
	e->dst = u4vt_map(len);
	u4vt_fill(e->src, len, seed);
	memset(e->dst, 0xee, len);
	local = e->p.a.pd;
	remote = e->p.b.pd;
	e->ms = rel_reg(src_on_b ? remote : local, e->src, len,
			src_on_b ? REL_ACC_ALL : IBV_ACCESS_LOCAL_WRITE);
	e->md = rel_reg(src_on_b ? local : remote, e->dst, len,
			src_on_b ? IBV_ACCESS_LOCAL_WRITE : REL_ACC_ALL);
}

/* Print the counters, check the QP still works, and take it all down. */
static inline void rel_env_down(struct rel_env *e)
{
	struct u4l_counters c;

	u4l_sim_set_test_hook(NULL, NULL);
	rel_counters(e->p.shm, &c);
	rel_print_counters(e->p.shm, &c);
	assert_int_equal(u4v_qp_state(e->p.qa), IBV_QPS_RTS);
	assert_int_equal(u4v_dereg_mr(e->ms), 0);
	assert_int_equal(u4v_dereg_mr(e->md), 0);
	u4vt_pair_down(&e->p);
	u4vt_unmap(e->src, e->len);
	u4vt_unmap(e->dst, e->len);
}

/* A signaled WR of opcode op over the one SGE s. */
static inline void rel_wr(struct ibv_send_wr *wr, struct ibv_sge *s,
			  uint64_t wr_id, enum ibv_wr_opcode op)
{
	u4vt_send_wr(wr, op, wr_id, IBV_SEND_SIGNALED, s, 1);
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
	u4vt_send_wr_ud(&wr, ah, remote_qpn);
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

/*
 * A message's two completions, both successes within timeout_ms each: the
 * sender's on send_cq, then the receiver's on recv_cq (returned).
 */
static inline struct ibv_wc
rel_wait_both(struct u4v_cq *send_cq, struct u4v_cq *recv_cq, int timeout_ms)
{
	struct ibv_wc wc = rel_wait1(send_cq, timeout_ms);

	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	wc = rel_wait1(recv_cq, timeout_ms);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	return wc;
}

#endif
