// SPDX-License-Identifier: MIT
/*
 * RC READ and atomics when one exact frame is lost or duplicated. The
 * software cable's test hook (usb4verbs/sim.h) picks the frame by opcode
 * and PSN, and watches what the responder sends:
 * - a lost READ request is sent again (alone: by the loss probe; followed
 *   by another request: after the responder's NAK);
 * - lost READ responses (the last one, some in the middle, also across
 *   the PSN wrap) are asked for again one by one: the responses after them
 *   are kept, the rest of the READ is not sent again;
 * - a duplicated response is discarded;
 * - a duplicated READ request is served again, from the MR as it is then;
 * - a duplicated atomic request is executed once; the copy and a request
 *   sent again for a lost atomic response get the saved original value.
 * Every READ's data is compared with its source.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel/psn.h"
#include "u4vt_rel.h"
#include "wire/wire.h"

/* The QPs' first PSN (u4vt_qp_connect); PSN(k) is k after it. */
static uint32_t psn0 = 0x123;
#define PSN(k) psn_add(psn0, (k))
#define NPSN 1024u  /* PSNs the hook keeps counts for */
#define ANY_PSN UINT32_MAX
#define MAX_RULES 8

struct rule {
	uint32_t end; /* frames sent by this end */
	uint8_t op;   /* enum u4w_op */
	uint32_t psn; /* or ANY_PSN */
	enum u4l_sim_verdict verdict;
	uint32_t times; /* frames it still applies to */
};

static struct {
	pthread_mutex_t lock;
	struct rule rules[MAX_RULES];
	uint32_t nrules;
	/* by PSN, counted from psn0: */
	uint32_t resp_sent[NPSN]; /* READ responses sent */
	uint32_t reqs_sent[NPSN]; /* READ / atomic requests sent */
	uint32_t req_len[NPSN];	  /* the last READ request's length */
	uint32_t acks_sent[NPSN]; /* atomic ACKs sent */
	uint64_t ack_orig[NPSN];  /* the first one's value */
	uint32_t ack_other[NPSN]; /* ACKs with another value */
	/* READ responses whose payload equals `mr` at the time they leave */
	const uint8_t *mr;
	uint32_t mr_nframes, mr_matches; /* from psn0 */
} hk = { .lock = PTHREAD_MUTEX_INITIALIZER };

static enum u4l_sim_verdict hook(void *arg, uint32_t end, const void *frame,
				 uint32_t len)
{
	enum u4l_sim_verdict v = U4L_SIM_PASS;
	const uint8_t *payload;
	struct u4w_hdr h;
	uint32_t i, op, k;

	(void)arg;
	if (u4w_decode(frame, len, &h))
		return v;
	op = U4W_OP(h.opcode);
	payload = u4w_payload(frame, &h);
	k = (uint32_t)psn_diff(h.psn, psn0);
	pthread_mutex_lock(&hk.lock);
	for (i = 0; i < hk.nrules && v == U4L_SIM_PASS; i++) {
		struct rule *r = &hk.rules[i];

		if (r->times && r->end == end && r->op == op &&
		    (r->psn == ANY_PSN || r->psn == h.psn)) {
			r->times--;
			v = r->verdict;
		}
	}
	if (op >= U4W_READ_RESP_FIRST && op <= U4W_READ_RESP_ONLY &&
	    k < NPSN) {
		hk.resp_sent[k]++;
		if (hk.mr && k < hk.mr_nframes &&
		    !memcmp(payload, hk.mr + (size_t)k * U4W_GRANULE,
			    h.paylen))
			hk.mr_matches++;
	}
	if ((op == U4W_READ_REQ || op == U4W_FETCH_ADD ||
	     op == U4W_CMP_SWAP) && k < NPSN) {
		hk.reqs_sent[k]++;
		hk.req_len[k] = h.dma_len;
	}
	if (op == U4W_ATOMIC_ACK && k < NPSN) {
		if (!hk.acks_sent[k]++)
			hk.ack_orig[k] = h.orig;
		else if (h.orig != hk.ack_orig[k])
			hk.ack_other[k]++;
	}
	pthread_mutex_unlock(&hk.lock);
	return v;
}

static void hook_reset(void)
{
	pthread_mutex_lock(&hk.lock);
	hk.nrules = 0;
	memset(hk.resp_sent, 0, sizeof(hk.resp_sent));
	memset(hk.reqs_sent, 0, sizeof(hk.reqs_sent));
	memset(hk.acks_sent, 0, sizeof(hk.acks_sent));
	memset(hk.ack_other, 0, sizeof(hk.ack_other));
	hk.mr = NULL;
	hk.mr_matches = 0;
	pthread_mutex_unlock(&hk.lock);
	u4l_sim_set_test_hook(hook, NULL);
}

static void hook_rule(uint32_t end, uint8_t op, uint32_t psn,
		      enum u4l_sim_verdict v, uint32_t times)
{
	pthread_mutex_lock(&hk.lock);
	assert_true(hk.nrules < MAX_RULES);
	hk.rules[hk.nrules++] = (struct rule){ end, op, psn, v, times };
	pthread_mutex_unlock(&hk.lock);
}

static uint32_t hook_left(void)
{
	uint32_t i, n = 0;

	pthread_mutex_lock(&hk.lock);
	for (i = 0; i < hk.nrules; i++)
		n += hk.rules[i].times;
	pthread_mutex_unlock(&hk.lock);
	return n;
}

/* One of the hook's counts, by PSN. */
static uint32_t hook_count(const uint32_t *counts, uint32_t psn)
{
	uint32_t n;

	pthread_mutex_lock(&hk.lock);
	n = counts[psn_diff(psn, psn0)];
	pthread_mutex_unlock(&hk.lock);
	return n;
}

static uint32_t resp_sent(uint32_t psn)
{
	return hook_count(hk.resp_sent, psn);
}

static void env_up(struct rel_env *e, const char *tag, size_t len)
{
	hook_reset();
	rel_env_up(e, tag, len, psn0, 0x5eed, true);
}

/* Post a READ of len bytes at off (both buffers). */
static void post_read(struct rel_env *e, uint64_t wr_id, size_t off,
		      uint32_t len)
{
	memset(e->dst + off, 0xee, len);
	assert_int_equal(rel_post(e->p.qa, IBV_WR_RDMA_READ, wr_id,
				  e->dst + off, len, u4v_mr_lkey(e->md),
				  (uintptr_t)(e->src + off),
				  u4v_mr_rkey(e->ms)),
			 0);
}

/* Its completion: in order, successful, the data equal to the source. */
static void wait_read(struct rel_env *e, uint64_t wr_id, size_t off,
		      uint32_t len)
{
	struct ibv_wc wc = rel_wait1(e->p.a.cq, 10000);

	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_memory_equal(e->dst + off, e->src + off, len);
}

static void test_read_request_lost_alone(void **state)
{
	struct rel_env e;

	(void)state;
	env_up(&e, "rqlost", 65536);
	hook_rule(0, U4W_READ_REQ, ANY_PSN, U4L_SIM_DROP, 1);
	post_read(&e, 1, 0, 65536);
	wait_read(&e, 1, 0, 65536);
	assert_int_equal(hook_left(), 0);
	assert_true(resp_sent(PSN(0)) >= 1);
	assert_true(resp_sent(PSN(16)) >= 1);
	rel_env_down(&e);
}

static void test_read_request_lost_nak(void **state)
{
	struct u4l_counters c;
	struct rel_env e;

	(void)state;
	env_up(&e, "rqnak", 65536);
	hook_rule(0, U4W_READ_REQ, PSN(0), U4L_SIM_DROP, 1);
	post_read(&e, 1, 0, 32768);
	post_read(&e, 2, 32768, 32768);
	wait_read(&e, 1, 0, 32768);
	wait_read(&e, 2, 32768, 32768);
	assert_int_equal(hook_left(), 0);
	rel_counters(e.p.shm, &c);
	/* the second request came first: held, and the first NAKed for */
	assert_true(c.seq_naks_sent >= 1 && c.seq_naks_rcvd >= 1);
	assert_true(c.ooo_frames >= 1);
	rel_env_down(&e);
}

static void test_read_last_response_lost(void **state)
{
	const uint32_t n = 17; /* frames of 64 KiB */
	struct rel_env e;
	uint32_t k;

	(void)state;
	env_up(&e, "lastlost", 65536);
	hook_rule(1, U4W_READ_RESP_LAST, ANY_PSN, U4L_SIM_DROP, 1);
	post_read(&e, 1, 0, 65536);
	wait_read(&e, 1, 0, 65536);
	assert_int_equal(hook_left(), 0);
	/* the lost one went out again, as a READ of one frame */
	assert_true(resp_sent(PSN(n - 1)) >= 2);
	for (k = 0; k + 1 < n; k++)
		assert_true(resp_sent(PSN(k)) >= 1);
	rel_env_down(&e);
}

/*
 * Three responses lost early in a 1 MiB READ: each is asked for on its
 * own, with a READ request for that one frame. Going back to the first
 * lost one would send about 250 frames again.
 */
static void middle_responses_lost(const char *tag)
{
	static const uint32_t lost[] = { 3, 9, 40 };
	const uint32_t n = 261; /* 1 MiB in 4032-byte frames */
	struct rel_env e;
	uint32_t k, j, total = 0, asks = 0;

	env_up(&e, tag, 1 << 20);
	for (k = 0; k < 3; k++)
		hook_rule(1, U4W_READ_RESP_MIDDLE, PSN(lost[k]),
			  U4L_SIM_DROP, 1);
	post_read(&e, 1, 0, 1 << 20);
	wait_read(&e, 1, 0, 1 << 20);
	assert_int_equal(hook_left(), 0);
	for (k = 0; k < n; k++)
		total += resp_sent(PSN(k));
	for (k = 0; k < 3; k++)
		asks += hook_count(hk.reqs_sent, PSN(lost[k]));
	fprintf(stderr, "  %u responses sent for %u frames, %u asked again\n",
		total, n, asks);
	for (k = 0; k < 3; k++) {
		assert_true(resp_sent(PSN(lost[k])) >= 2);
		assert_true(hook_count(hk.reqs_sent, PSN(lost[k])) >= 1);
		assert_int_equal(hook_count(hk.req_len, PSN(lost[k])), 4032);
	}
	/*
	 * No other request but the READ itself (sent again only by a probe,
	 * if this busy machine stalled a side for 10 ms) and, possibly, a
	 * probe's ask for the last frame.
	 */
	for (k = 1; k + 1 < n; k++) {
		for (j = 0; j < 3 && lost[j] != k; j++)
			;
		if (j == 3)
			assert_int_equal(hook_count(hk.reqs_sent, PSN(k)), 0);
	}
	assert_int_equal(resp_sent(PSN(n)), 0);
	/*
	 * One response per frame, one per ask for a lost frame (a probe on a
	 * busy machine may ask for one again before its answer came) and up
	 * to two answers to probes for the last frame.
	 */
	if (hook_count(hk.reqs_sent, PSN(0)) == 1)
		assert_true(total <= n + asks + 2);
	rel_env_down(&e);
}

static void test_read_middle_responses_lost(void **state)
{
	(void)state;
	middle_responses_lost("midlost");
}

/* The same across the 24-bit PSN wrap: the third loss is past it. */
static void test_read_middle_responses_lost_wrap(void **state)
{
	(void)state;
	psn0 = 0xffffe0;
	middle_responses_lost("midwrap");
	psn0 = 0x123;
}

static void test_read_response_dup(void **state)
{
	struct u4l_counters c[2];
	struct rel_env e;

	(void)state;
	env_up(&e, "respdup", 65536);
	hook_rule(1, U4W_READ_RESP_MIDDLE, PSN(5), U4L_SIM_DUP, 1);
	hook_rule(1, U4W_READ_RESP_LAST, ANY_PSN, U4L_SIM_DUP_LATE, 1);
	post_read(&e, 1, 0, 65536);
	wait_read(&e, 1, 0, 65536);
	/* the next READ passes the late copy; all is discarded */
	post_read(&e, 2, 0, 4096);
	wait_read(&e, 2, 0, 4096);
	assert_int_equal(hook_left(), 0);
	assert_int_equal(u4l_sim_stat(e.p.shm, c), 0);
	assert_int_equal(c[0].fault_dup, 2); /* counted where received */
	assert_true(c[0].dup_frames_rcvd >= 2);
	rel_env_down(&e);
}

/*
 * A READ request duplicated on the way arrives again after the next
 * request: the responder serves it again, from the MR as it is by then
 * (the source changed after the first READ completed); the requester,
 * done with that READ, discards the responses. If a loss probe (a side of
 * this busy machine stalled for 10 ms) carried the copy along before the
 * first READ was served, the copy only repeats what was sent: run again.
 */
static bool read_request_dup_once(void)
{
	const uint32_t n = 3, len = 3 * 4032;
	struct u4l_counters c[2];
	struct rel_env e;
	bool clean;

	env_up(&e, "rqdup", 65536);
	hook_rule(0, U4W_READ_REQ, PSN(0), U4L_SIM_DUP_LATE, 1);
	post_read(&e, 1, 0, len);
	wait_read(&e, 1, 0, len);
	u4vt_fill(e.src, len, 0xc0ffee);
	pthread_mutex_lock(&hk.lock);
	hk.mr = e.src;
	hk.mr_nframes = n;
	pthread_mutex_unlock(&hk.lock);
	post_read(&e, 2, 32768, 4096);
	wait_read(&e, 2, 32768, 4096);
	assert_int_equal(hook_left(), 0);
	clean = hook_count(hk.reqs_sent, PSN(0)) == 1 &&
		hook_count(hk.reqs_sent, PSN(n)) == 1;
	if (!clean) {
		fprintf(stderr, "  a probe went out: again\n");
		rel_env_down(&e);
		return false;
	}
	/* the replay may still be on its way */
	for (int i = 0; i < 500 && resp_sent(PSN(n - 1)) < 2; i++)
		usleep(1000);
	assert_int_equal(resp_sent(PSN(0)), 2);
	assert_int_equal(resp_sent(PSN(n - 1)), 2);
	pthread_mutex_lock(&hk.lock);
	assert_int_equal(hk.mr_matches, n); /* the new contents */
	pthread_mutex_unlock(&hk.lock);
	/* the first READ's data stayed what it read */
	assert_memory_not_equal(e.dst, e.src, len);
	for (int i = 0; i < 500; i++) {
		assert_int_equal(u4l_sim_stat(e.p.shm, c), 0);
		if (c[0].dup_frames_rcvd >= n)
			break;
		usleep(1000);
	}
	assert_true(c[1].dup_frames_rcvd >= 1); /* the request, responder */
	assert_true(c[0].dup_frames_rcvd >= n); /* its responses, requester */
	rel_env_down(&e);
	return true;
}

static void test_read_request_dup_served_again(void **state)
{
	int tries = 0;

	(void)state;
	while (!read_request_dup_once())
		assert_true(++tries < 5);
}

/* Fetch-add on b's first word; returns what the completion delivered. */
static uint64_t fadd(struct rel_env *e, uint64_t wr_id, uint64_t add)
{
	uint64_t *res = (uint64_t *)(e->dst + 65536 - 8 * (1 + wr_id % 8));
	struct ibv_wc wc;

	*res = 0xdeadbeef;
	assert_int_equal(u4vt_post_atomic(e->p.qa,
					  IBV_WR_ATOMIC_FETCH_AND_ADD, wr_id,
					  (uintptr_t)res, u4v_mr_lkey(e->md),
					  (uintptr_t)e->src,
					  u4v_mr_rkey(e->ms), add, 0),
			 0);
	wc = rel_wait1(e->p.a.cq, 10000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, wr_id);
	return *res;
}

/* The value of the atomic ACKs sent for psn: all of them the same. */
static uint64_t ack_orig(uint32_t psn, uint32_t *sent)
{
	uint64_t v;

	pthread_mutex_lock(&hk.lock);
	v = hk.ack_orig[psn_diff(psn, psn0)];
	*sent = hk.acks_sent[psn_diff(psn, psn0)];
	assert_int_equal(hk.ack_other[psn_diff(psn, psn0)], 0);
	pthread_mutex_unlock(&hk.lock);
	return v;
}

static void test_atomic_request_dup(void **state)
{
	uint64_t *target, v;
	struct rel_env e;
	uint32_t sent;

	(void)state;
	env_up(&e, "atdup", 65536);
	target = (uint64_t *)e.src;
	*target = 1000;
	/*
	 * One copy right behind it (answered with the first answer if that
	 * has not gone out yet), one after the next request (answered again).
	 */
	hook_rule(0, U4W_FETCH_ADD, PSN(0), U4L_SIM_DUP, 1);
	hook_rule(0, U4W_FETCH_ADD, PSN(1), U4L_SIM_DUP_LATE, 1);
	assert_true(fadd(&e, 1, 7) == 1000);
	assert_true(fadd(&e, 2, 7) == 1007);
	assert_true(fadd(&e, 3, 7) == 1014);
	assert_int_equal(hook_left(), 0);
	/* each executed once */
	assert_true(*target == 1021);
	/* every answer carried the saved result */
	v = ack_orig(PSN(0), &sent);
	assert_true(sent >= 1);
	assert_true(v == 1000);
	for (int i = 0; i < 500 && (ack_orig(PSN(1), &sent), sent < 2); i++)
		usleep(1000);
	v = ack_orig(PSN(1), &sent);
	assert_true(sent >= 2);
	assert_true(v == 1007);
	assert_true(*target == 1021);
	rel_env_down(&e);
}

/*
 * The atomic response is lost: the requester sends the request again and
 * gets the saved value. Executing it again would swap nothing (the value
 * is no longer the one compared) and return the new value instead.
 */
static void test_atomic_response_lost(void **state)
{
	uint64_t *target, *res;
	struct rel_env e;
	struct ibv_wc wc;
	uint32_t sent;

	(void)state;
	env_up(&e, "atlost", 65536);
	target = (uint64_t *)e.src;
	res = (uint64_t *)e.dst;
	*target = 42;
	*res = 0;
	hook_rule(1, U4W_ATOMIC_ACK, PSN(0), U4L_SIM_DROP, 1);
	assert_int_equal(u4vt_post_atomic(e.p.qa, IBV_WR_ATOMIC_CMP_AND_SWP, 1,
					  (uintptr_t)res, u4v_mr_lkey(e.md),
					  (uintptr_t)target,
					  u4v_mr_rkey(e.ms), 42, 4242),
			 0);
	wc = rel_wait1(e.p.a.cq, 10000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(hook_left(), 0);
	assert_true(*res == 42);
	assert_true(*target == 4242);
	assert_true(ack_orig(PSN(0), &sent) == 42); /* every answer */
	assert_true(sent >= 2);
	/* the QP goes on */
	assert_true(fadd(&e, 2, 1) == 4242);
	assert_true(*target == 4243);
	rel_env_down(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_request_lost_alone),
		cmocka_unit_test(test_read_request_lost_nak),
		cmocka_unit_test(test_read_last_response_lost),
		cmocka_unit_test(test_read_middle_responses_lost),
		cmocka_unit_test(test_read_middle_responses_lost_wrap),
		cmocka_unit_test(test_read_response_dup),
		cmocka_unit_test(test_read_request_dup_served_again),
		cmocka_unit_test(test_atomic_request_dup),
		cmocka_unit_test(test_atomic_response_lost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
