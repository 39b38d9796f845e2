/* SPDX-License-Identifier: MIT */
/*
 * u4v_ktest: exercises usb4verbs.ko (soft cable, or tbemu's Thunderbolt)
 * through the nhi link backend, not libibverbs' devices: contexts, channels
 * on the cable and on loopback, frame integrity, the doorbell's validation
 * (bogus doorbells must be refused and harm nothing), mapping protections,
 * lanes, raw link speed. This file: the default run and the commands; the
 * checks of each concern are in ktest_safe.c, ktest_direct.c,
 * ktest_cable.c and ktest_lanes.c.
 *
 * Prints "KTEST <name> PASS|FAIL ..." per check; exit status 0 when all
 * passed. Usage: u4v_ktest [seconds-of-throughput]
 *   u4v_ktest hold      keep a channel open until the module goes away
 *   u4v_ktest direct S [nhi]  direct mode (root, allow_direct=1): no
 *                       syscalls; nhi: on an NHI (no bad-phys check)
 *   u4v_ktest refused   direct mode must fail with EPERM, safe mode works
 *   u4v_ktest nocap     the same after dropping CAP_SYS_RAWIO
 *   u4v_ktest nobody    the same as uid/gid 65534
 *   u4v_ktest budget    the channel budget (soft_channels=1): ENOSPC, and
 *                       the budget comes back when a context leaves
 *   u4v_ktest lanebudget  lanes in the budget (soft_channels=3)
 *   u4v_ktest lanerc    RC through the engine over four lanes
 *   u4v_ktest idle S    a channel used, idle S seconds, used again; a
 *                       new connect after it
 *   u4v_ktest retry E PARAM SET CLEAR
 *                       end E's connect, spoilt by writing SET to PARAM (a
 *                       fault of tbemu's), fails; with CLEAR the next works
 * U4V_KTEST_DEV0 / U4V_KTEST_DEV1 name the devices of cable end 0 and 1
 * (default usb4v0 / usb4v1, the soft cable's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktest.h"

/* Both ends' contexts see each other; a context id nobody has is dead. */
static void test_contexts(struct u4l_dev *a, struct u4l_dev *b,
			  struct u4l_dev *c, struct u4l_dev *d)
{
	printf("KTEST info ctx a=%u/%u b=%u/%u c=%u/%u d=%u/%u\n",
	       a->ops->ctx_id(a), a->end, b->ops->ctx_id(b), b->end,
	       c->ops->ctx_id(c), c->end, d->ops->ctx_id(d), d->end);
	report("ends", a->end == 0 && b->end == 1, NULL);
	report("alive", a->ops->ctx_alive(a, b->ops->ctx_id(b)) &&
				b->ops->ctx_alive(b, a->ops->ctx_id(a)) &&
				!a->ops->ctx_alive(a, 63),
	       NULL);
}

/* a connects to b across the cable; frames both ways. False: stop here. */
static bool test_cable_channel(struct u4l_dev *a, struct u4l_dev *b,
			       struct u4l_chan **ab, struct u4l_chan **ba)
{
	uint32_t n;
	int r;

	r = a->ops->chan_get(a, b->ops->ctx_id(b), ab);
	report("chan_get_cable", r == 0, "ret=%d", r);
	if (r)
		return false;
	*ba = b->ops->chan_accept(b);
	report("chan_accept",
	       *ba && b->ops->chan_remote(*ba) == a->ops->ctx_id(a), NULL);
	if (!*ba)
		return false;
	report("chan_accept_once", b->ops->chan_accept(b) == NULL, NULL);

	n = transfer(a, *ab, b, *ba, 2000);
	report("frames_a_to_b", n == 2000, "frames=%u", n);
	n = transfer(b, *ba, a, *ab, 2000);
	report("frames_b_to_a", n == 2000, "frames=%u", n);
	return true;
}

/* Channels within one end: to another context (loopback), to itself. */
static void test_local_channels(struct u4l_dev *a, struct u4l_dev *c,
				struct u4l_chan **ac)
{
	struct u4l_chan *ca, *self;
	uint32_t n;
	int r;

	r = a->ops->chan_get(a, c->ops->ctx_id(c), ac);
	ca = c->ops->chan_accept(c);
	report("chan_loopback",
	       r == 0 && ca &&
		   (((struct nhi_chan *)*ac)->flags & U4V_CHAN_LOOPBACK),
	       "ret=%d", r);
	if (!r && ca) {
		n = transfer(a, *ac, c, ca, 1000);
		report("frames_loopback", n == 1000, "frames=%u", n);
	}
	r = a->ops->chan_get(a, a->ops->ctx_id(a), &self);
	if (!r) {
		n = transfer(a, self, a, self, 500);
		report("frames_self", n == 500, "frames=%u", n);
	} else {
		report("frames_self", 0, "ret=%d", r);
	}
}

/* Channels to contexts nobody has, remote ids out of range, none made. */
static void test_chan_get_refused(struct u4l_dev *a)
{
	struct u4v_chan_info info;
	struct u4l_chan *none;
	int r;

	r = a->ops->chan_get(a, 62, &none);
	report("chan_get_dead_ctx", r == -EHOSTUNREACH, "ret=%d", r);
	r = a->ops->chan_get(a, 3, &none);
	report("chan_get_dead_local_ctx", r == -EHOSTUNREACH, "ret=%d", r);
	r = u4l_nhi_raw_chan_get(a, U4V_MAX_CTX, 0, &info);
	report("chan_get_remote_range", r == -EINVAL, "ret=%d", r);
	r = u4l_nhi_raw_chan_get(a, U4V_CHAN_NEXT - 1, 0, &info);
	report("chan_get_remote_range_high", r == -EINVAL, "ret=%d", r);
	/* nothing new for a: the next channel a peer made is none */
	r = u4l_nhi_raw_chan_get(a, U4V_CHAN_NEXT, 0, &info);
	report("chan_get_next_none", r == -ENOENT, "ret=%d", r);
}

/* End 1 connects: it asks end 0, which opens and tells a. */
static void test_end1_connects(struct u4l_dev *a, struct u4l_dev *d)
{
	struct u4l_chan *da, *ad;
	int r;

	r = d->ops->chan_get(d, a->ops->ctx_id(a), &da);
	ad = a->ops->chan_accept(a);
	report("chan_from_end1", !r && ad && a->ops->chan_remote(ad) ==
						     d->ops->ctx_id(d),
	       "ret=%d", r);
	if (!r && ad)
		report("frames_end1_channel", both_ways(d, da, a, ad, 500),
		       NULL);
}

/* Contexts leaving (c on a's end, then b) are seen by their peer a. */
static void test_peers_leave(struct u4l_dev *a, struct u4l_chan *ab,
			     struct u4l_chan *ac, struct u4l_dev *b,
			     struct u4l_dev *c)
{
	uint32_t cid = c->ops->ctx_id(c), bid = b->ops->ctx_id(b);
	int r;

	report("chan_live_not_stale", !a->ops->chan_dead(ac) &&
					      !a->ops->chan_dead(ab), NULL);
	c->ops->close(c);
	report("ctx_leave_seen", !a->ops->ctx_alive(a, cid), NULL);
	/* the status page says so before any doorbell */
	report("chan_stale_loopback", a->ops->chan_dead(ac), NULL);
	/* a channel whose peer left says so (a new connect finds a successor) */
	r = u4l_nhi_raw_doorbell(a, cid, 0, true,
				 ((struct nhi_chan *)ac)->tx_prod, false, 0);
	report("doorbell_peer_left_loopback", r == -ENOLINK, "ret=%d", r);
	b->ops->close(b);
	r = u4l_nhi_raw_doorbell(a, bid, 0, true,
				 ((struct nhi_chan *)ab)->tx_prod, false, 0);
	report("doorbell_peer_left_cable", r == -ENOLINK, "ret=%d", r);
	report("chan_stale_cable", a->ops->chan_dead(ab), NULL);
}

/* The default run: two contexts on each end (a, c on end 0; b, d on 1). */
static int ktest_default(double secs)
{
	struct u4l_dev *a = open_ctx(END0), *b = open_ctx(END1);
	struct u4l_dev *c = open_ctx(END0), *d = open_ctx(END1);
	struct u4l_chan *ab, *ba, *ac;

	report("open_contexts", a && b && c && d, NULL);
	if (!a || !b || !c || !d)
		return 1;
	test_contexts(a, b, c, d);
	if (!test_cable_channel(a, b, &ab, &ba))
		return 1;
	test_local_channels(a, c, &ac);
	test_chan_get_refused(a);
	test_bogus(a, ab, b, ba, d);
	test_end1_connects(a, d);
	test_lanes(a, ab, b, ba, c, d);
	test_concurrent(20);
	test_protections(ab);
	test_speed(a, ab, b, ba, secs);
	test_peers_leave(a, ab, ac, b, c);
	d->ops->close(d);
	a->ops->close(a);
	return ktest_result();
}

int main(int argc, char **argv)
{
	int r;

	if (argc > 1 && !strcmp(argv[1], "hold"))
		return hold();
	if (argc > 1 && !strcmp(argv[1], "budget"))
		return budget();
	if (argc > 1 && !strcmp(argv[1], "lanebudget"))
		return lanebudget();
	if (argc > 1 && !strcmp(argv[1], "lanerc"))
		return lanerc();
	if (argc > 2 && !strcmp(argv[1], "idle"))
		return idle(atof(argv[2]));
	if (argc > 5 && !strcmp(argv[1], "retry"))
		return retry(atoi(argv[2]) != 0, argv[3], argv[4], argv[5]);
	if (argc > 1 && !strcmp(argv[1], "direct"))
		return direct(argc > 2 ? atof(argv[2]) : 1.0,
			      argc > 3 && !strcmp(argv[3], "nhi"));
	if (argc > 1 && !strcmp(argv[1], "refused"))
		return refused("as-is");
	if (argc > 1 && !strcmp(argv[1], "nocap")) {
		r = drop_rawio();
		report("drop_cap_sys_rawio", r == 0, "ret=%d", r);
		return refused("without-CAP_SYS_RAWIO");
	}
	if (argc > 1 && !strcmp(argv[1], "nobody")) {
		r = setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534);
		report("become_nobody", r == 0 && geteuid() == 65534, NULL);
		return refused("uid-65534");
	}
	return ktest_default(argc > 1 ? atof(argv[1]) : 2.0);
}
