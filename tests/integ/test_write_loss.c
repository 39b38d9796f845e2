// SPDX-License-Identifier: MIT
/*
 * RC RDMA WRITE when one exact frame (or the NAK that asks for it) is lost.
 * The software cable's test hook (usb4verbs/sim.h) picks the frames:
 * - the payload of WRITE frames past a hole, also of later messages, is
 *   placed in the MR before the hole fills; a message's last frame is not
 *   (its last byte is still written last); every message completes intact;
 * - a hole whose NAK is lost is asked for again by the responder, and so
 *   is one whose resend is lost: the requester's probe and timer alone
 *   would resend a frame that this hook drops until a second NAK came.
 * Every message's data is compared with its source, and checksummed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "frag/frag.h"
#include "pattern.h"
#include "rel/psn.h"
#include "u4vt_rel.h"
#include "wire/wire.h"

/* The QPs' first PSN (u4vt_qp_connect); PSN(k) is k after it. */
static const uint32_t psn0 = 0x321;
#define PSN(k) psn_add(psn0, (k))
#define MSG 65536u /* bytes of one WRITE: 17 frames */

static struct {
	pthread_mutex_t lock;
	uint32_t lose;	       /* PSN of the WRITE frame lost */
	bool hold;	       /* lose every copy of it while set */
	uint32_t until_naks;   /* and every copy sent before this many NAKs */
	uint32_t naks_to_lose; /* NAK-seqs for it still to lose */
	uint32_t naks;	       /* NAK-seqs for it the responder sent */
	uint32_t copies;       /* copies of it the requester sent */
} hk = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Frames of end 0 (the requester's) and end 1 (the responder's). */
static enum u4l_sim_verdict hook(void *arg, uint32_t end, const void *frame,
				 uint32_t len)
{
	enum u4l_sim_verdict v = U4L_SIM_PASS;
	struct u4w_hdr h;
	uint32_t op;

	(void)arg;
	if (u4w_decode(frame, len, &h))
		return v;
	op = U4W_OP(h.opcode);
	pthread_mutex_lock(&hk.lock);
	if (h.psn != hk.lose) {
		/* not the frame this test is about */
	} else if (end == 1 && op == U4W_ACK && h.syndrome == U4W_AETH_NAK_SEQ) {
		hk.naks++;
		if (hk.naks_to_lose) {
			hk.naks_to_lose--;
			v = U4L_SIM_DROP;
		}
	} else if (end == 0 && op >= U4W_WRITE_FIRST &&
		   op <= U4W_WRITE_ONLY_IMM) {
		hk.copies++;
		if (hk.hold || hk.naks < hk.until_naks)
			v = U4L_SIM_DROP;
	}
	pthread_mutex_unlock(&hk.lock);
	return v;
}

/* Lose copies of the WRITE frame with psn as the fields say. */
static void hook_set(uint32_t psn, bool hold, uint32_t until_naks,
		     uint32_t naks_to_lose)
{
	pthread_mutex_lock(&hk.lock);
	hk.lose = psn;
	hk.hold = hold;
	hk.until_naks = until_naks;
	hk.naks_to_lose = naks_to_lose;
	hk.naks = hk.copies = 0;
	pthread_mutex_unlock(&hk.lock);
}

static uint32_t hook_get(const uint32_t *field)
{
	uint32_t v;

	pthread_mutex_lock(&hk.lock);
	v = *field;
	pthread_mutex_unlock(&hk.lock);
	return v;
}

static void env_up(struct rel_env *e, const char *tag, size_t len)
{
	rel_env_up(e, tag, len, psn0, 0x10ad, false);
	u4l_sim_set_test_hook(hook, NULL);
}

static void post_write(struct rel_env *e, uint64_t wr_id, size_t off,
		       uint32_t len)
{
	assert_int_equal(rel_post(e->p.qa, IBV_WR_RDMA_WRITE, wr_id,
				  e->src + off, len, u4v_mr_lkey(e->ms),
				  (uintptr_t)(e->dst + off),
				  u4v_mr_rkey(e->md)),
			 0);
}

/* n WRITEs of len bytes from 0 complete in order, their data intact. */
static void wait_writes(struct rel_env *e, uint32_t n, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct ibv_wc wc = rel_wait1(e->p.a.cq, 10000);

		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i);
		assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	}
	assert_true(u4vt_sum(e->dst, (size_t)n * len) ==
		    u4vt_sum(e->src, (size_t)n * len));
	assert_memory_equal(e->dst, e->src, (size_t)n * len);
}

/* Are bytes [off, off + len) of the destination those of the source? */
static bool arrived(const struct rel_env *e, size_t off, size_t len)
{
	return !memcmp(e->dst + off, e->src + off, len);
}

static void test_write_placed_past_hole(void **state)
{
	const uint32_t nmsg = 4, nf = u4f_nframes(MSG);
	const size_t last_off = (size_t)(nf - 1) * U4W_GRANULE;
	struct rel_env e;
	struct ibv_wc wc;
	uint32_t m;
	int i;

	(void)state;
	env_up(&e, "wrplace", (size_t)nmsg * MSG);
	hook_set(PSN(2), true, 0, 0);
	for (m = 0; m < nmsg; m++)
		post_write(&e, m, (size_t)m * MSG, MSG);
	/* the later messages' frames before their last are placed */
	for (i = 0; i < 5000; i++) {
		for (m = 1; m < nmsg; m++)
			if (!arrived(&e, (size_t)m * MSG, last_off))
				break;
		if (m == nmsg)
			break;
		usleep(1000);
	}
	assert_int_equal(m, nmsg);
	/* while the hole stays: nothing completed, no last frame written */
	assert_int_equal(u4vt_poll(e.p.a.cq, &wc, 1, 0), 0);
	for (m = 0; m < nmsg; m++)
		assert_false(arrived(&e, (size_t)m * MSG + last_off,
				     MSG - last_off));
	assert_false(arrived(&e, 2 * U4W_GRANULE, U4W_GRANULE));
	assert_true(hook_get(&hk.copies) >= 1);
	pthread_mutex_lock(&hk.lock);
	hk.hold = false;
	pthread_mutex_unlock(&hk.lock);
	wait_writes(&e, nmsg, MSG);
	rel_env_down(&e);
}

/*
 * Frame 1 of a WRITE of 8 frames is lost, and with it the responder's
 * NAK (naks_to_lose 1) or the resend that answers it (none): every copy
 * of the frame is lost until the responder has asked twice.
 */
static void hole_asked_again(const char *tag, uint32_t naks_to_lose)
{
	const uint32_t len = 8 * U4W_GRANULE;
	struct rel_env e;

	env_up(&e, tag, len);
	hook_set(PSN(1), false, 2, naks_to_lose);
	post_write(&e, 0, 0, len);
	wait_writes(&e, 1, len);
	assert_true(hook_get(&hk.naks) >= 2);
	assert_int_equal(hook_get(&hk.naks_to_lose), 0);
	assert_true(hook_get(&hk.copies) >= 2);
	rel_env_down(&e);
}

static void test_write_nak_lost(void **state)
{
	(void)state;
	hole_asked_again("naklost", 1);
}

static void test_write_resend_lost(void **state)
{
	(void)state;
	hole_asked_again("rslost", 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_placed_past_hole),
		cmocka_unit_test(test_write_nak_lost),
		cmocka_unit_test(test_write_resend_lost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
