// SPDX-License-Identifier: MIT
/*
 * A READ request that arrives again after its first service (the probe or
 * retransmission of a requester that lost the responses, or was only slow
 * to see them) is served again from the MR. By then the target application
 * may have freed the memory under a registration that is still alive (UCX's
 * registration cache deregisters later; hardware would read the pinned
 * pages): the responder answers with a remote access error, never a
 * signal. A NAK that answers such a stale duplicate names no outstanding
 * WQE: the requester drops it instead of failing the next WQE. Open MPI over
 * UCX met the first in MPI_Finalize on a busy machine (SIGSEGV in the READ
 * response copy).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine_int.h"
#include "u4vt_rel.h"

#define LEN 16000u /* four frames */
#define TMO 10000

static struct u4l_counters end_counters(const char *shm, unsigned end)
{
	struct u4l_counters c[2];

	assert_int_equal(u4l_sim_stat(shm, c), 0);
	return c[end];
}

/* Wait until counter `field` of cable end e reaches want. */
#define WAIT_COUNTER(shm, e, field, want)                                      \
	do {                                                                   \
		uint64_t until_ = u4vt_now_ms() + TMO;                         \
		while (end_counters(shm, e).field < (want)) {                  \
			if (u4vt_now_ms() > until_)                            \
				fail_msg(#field " of end %u stays below %llu", \
					 e, (unsigned long long)(want));       \
			usleep(1000);                                          \
		}                                                              \
	} while (0)

static void test_read_again_after_unmap(void **state)
{
	struct u4l_sim_config cfg;
	struct u4vt_qp_opts o;
	struct u4vt_pair p;
	struct u4v_mr *mt, *md;
	uint8_t *tgt, *dst = calloc(1, LEN);
	uint64_t dups;
	struct ibv_wc wc;

	(void)state;
	/* everything the target sends is lost until said otherwise */
	u4vt_cable_config(&cfg);
	cfg.faults[1].drop = 1.0;
	u4vt_qp_opts_default(&o);
	o.timeout = 18; /* 1.07 s: probes every 10 ms, retries for seconds */
	u4vt_pair_up(&p, "rdagain", IBV_QPT_RC, &cfg, &o, 0);
	tgt = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(tgt != MAP_FAILED);
	u4vt_fill(tgt, LEN, 7);
	mt = rel_reg(p.b.pd, tgt, LEN, REL_ACC_ALL);
	md = rel_reg(p.a.pd, dst, LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(rel_post(p.qa, IBV_WR_RDMA_READ, 1, dst, LEN,
				  u4v_mr_lkey(md), (uintptr_t)tgt,
				  u4v_mr_rkey(mt)),
			 0);
	/* served once (all four responses lost), then the memory goes */
	WAIT_COUNTER(p.shm, 1, tx_frames, 4);
	assert_int_equal(mprotect(tgt, LEN, PROT_NONE), 0);
	/* a probe asks again: served again from memory that is not there */
	dups = end_counters(p.shm, 1).dup_frames_rcvd;
	WAIT_COUNTER(p.shm, 1, dup_frames_rcvd, dups + 1);
	/* the target lives; once its frames pass, the requester learns why */
	cfg.faults[1].drop = 0;
	assert_int_equal(u4l_sim_reconfigure(p.shm, &cfg), 0);
	wc = rel_wait1(p.a.cq, TMO);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(u4v_qp_state(p.qb), IBV_QPS_RTS);
	assert_int_equal(mprotect(tgt, LEN, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(u4v_dereg_mr(mt), 0);
	assert_int_equal(u4v_dereg_mr(md), 0);
	munmap(tgt, LEN);
	free(dst);
	u4vt_pair_down(&p);
}

static void test_stale_nak_dropped(void **state)
{
	struct u4vt_qp_opts o;
	struct u4vt_pair p;
	struct u4v_mr *ms, *mr;
	static uint8_t src[256], rcv[256];
	struct u4w_hdr nak;
	struct ibv_wc wc;

	(void)state;
	u4vt_qp_opts_default(&o);
	o.rnr_retry = 7;
	u4vt_pair_up(&p, "stalenak", IBV_QPT_RC, NULL, &o, 0);
	ms = rel_reg(p.a.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	mr = rel_reg(p.b.pd, rcv, sizeof(rcv), IBV_ACCESS_LOCAL_WRITE);
	/* SEND 1 (PSN o.psn) completes; SEND 2 waits for a receive (RNR) */
	assert_int_equal(
	    rel_post_recv(p.qb, 10, rcv, sizeof(rcv), u4v_mr_lkey(mr)), 0);
	assert_int_equal(rel_post(p.qa, IBV_WR_SEND, 1, src, sizeof(src),
				  u4v_mr_lkey(ms), 0, 0),
			 0);
	rel_wait_both(p.a.cq, p.b.cq, TMO);
	assert_int_equal(rel_post(p.qa, IBV_WR_SEND, 2, src, sizeof(src),
				  u4v_mr_lkey(ms), 0, 0),
			 0);
	/* a remote access NAK for SEND 1's PSN, as for a stale duplicate */
	memset(&nak, 0, sizeof(nak));
	nak.opcode = U4W_RC | U4W_ACK;
	nak.syndrome = U4W_AETH_NAK_REM_ACCESS;
	nak.psn = o.psn ? o.psn : 0x123;
	nak.src_qpn = u4v_qp_num(p.qb);
	nak.dst_qpn = u4v_qp_num(p.qa);
	pthread_mutex_lock(&p.qa->lock);
	u4v_comp_frame(p.qa, &nak, NULL);
	pthread_mutex_unlock(&p.qa->lock);
	/* SEND 2 is not charged with it: it completes once a receive comes */
	assert_int_equal(u4vt_poll(p.a.cq, &wc, 1, 50), 0);
	assert_int_equal(
	    rel_post_recv(p.qb, 20, rcv, sizeof(rcv), u4v_mr_lkey(mr)), 0);
	wc = rel_wait1(p.a.cq, TMO);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	wc = rel_wait1(p.b.cq, TMO);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(u4v_dereg_mr(ms), 0);
	assert_int_equal(u4v_dereg_mr(mr), 0);
	u4vt_pair_down(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_again_after_unmap),
	    cmocka_unit_test(test_stale_nak_dropped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
