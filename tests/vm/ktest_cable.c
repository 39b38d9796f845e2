/* SPDX-License-Identifier: MIT */
/*
 * u4v_ktest, channels over time: both ends connecting at once, the channel
 * budget, a link left idle, a connect a fault spoils, a module unloaded
 * under a live channel.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "ktest.h"

struct connect_arg {
	struct u4l_dev *dev;
	uint32_t remote;
	struct u4l_chan *chan;
	pthread_barrier_t *go;
	int ret;
};

static void *connect_thread(void *p)
{
	struct connect_arg *c = p;

	pthread_barrier_wait(c->go);
	c->ret = c->dev->ops->chan_get(c->dev, c->remote, &c->chan);
	return NULL;
}

/*
 * Contexts at both ends connect to each other at the same moment: the
 * protocol (end 0 decides) must give both one working channel.
 */
void test_concurrent(int rounds)
{
	int ok = 0;

	for (int i = 0; i < rounds; i++) {
		struct u4l_dev *e = open_ctx(END0), *f = open_ctx(END1);
		struct connect_arg ce = { .dev = e }, cf = { .dev = f };
		pthread_barrier_t go;
		pthread_t te, tf;

		if (!e || !f)
			break;
		pthread_barrier_init(&go, NULL, 2);
		ce.remote = f->ops->ctx_id(f);
		cf.remote = e->ops->ctx_id(e);
		ce.go = cf.go = &go;
		pthread_create(&te, NULL, connect_thread, &ce);
		pthread_create(&tf, NULL, connect_thread, &cf);
		pthread_join(te, NULL);
		pthread_join(tf, NULL);
		pthread_barrier_destroy(&go);
		if (!ce.ret && !cf.ret && both_ways(e, ce.chan, f, cf.chan, 200))
			ok++;
		else
			printf("KTEST info concurrent round %d: %d %d\n", i,
			       ce.ret, cf.ret);
		f->ops->close(f);
		e->ops->close(e);
	}
	report("concurrent_connect", ok == rounds, "rounds=%d/%d", ok, rounds);
}

/* soft_channels=1: one cross-end channel per end, loopback is free. */
int budget(void)
{
	struct u4l_dev *a = open_ctx(END0), *b = open_ctx(END1);
	struct u4l_dev *c = open_ctx(END0), *d = open_ctx(END1);
	struct u4l_chan *ab, *ba, *cd, *dc, *ac, *ca;
	uint32_t bid;
	int r;

	if (!a || !b || !c || !d)
		return 1;
	bid = b->ops->ctx_id(b);
	r = a->ops->chan_get(a, bid, &ab);
	ba = b->ops->chan_accept(b);
	report("budget_first", !r && ba && both_ways(a, ab, b, ba, 100),
	       "ret=%d", r);
	r = c->ops->chan_get(c, d->ops->ctx_id(d), &cd);
	report("budget_spent_end0", r == -ENOSPC, "ret=%d", r);
	r = d->ops->chan_get(d, c->ops->ctx_id(c), &dc);
	report("budget_spent_end1", r == -ENOSPC, "ret=%d", r);
	report("budget_spent_no_channel", c->ops->chan_accept(c) == NULL &&
						  d->ops->chan_accept(d) == NULL,
	       NULL);
	r = a->ops->chan_get(a, c->ops->ctx_id(c), &ac);
	ca = c->ops->chan_accept(c);
	report("budget_loopback_free", !r && ca && both_ways(a, ac, c, ca, 100),
	       "ret=%d", r);
	/* b leaves: both ends get their unit back */
	b->ops->close(b);
	report("budget_peer_left_seen", !a->ops->ctx_alive(a, bid), NULL);
	r = d->ops->chan_get(d, c->ops->ctx_id(c), &dc);
	cd = c->ops->chan_accept(c);
	report("budget_returned", !r && cd && both_ways(d, dc, c, cd, 300),
	       "ret=%d", r);
	d->ops->close(d);
	c->ops->close(c);
	a->ops->close(a);
	return ktest_result();
}

/* Write val to the file path (a module parameter). */
static int set_param(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ok = f && fputs(val, f) >= 0;

	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/*
 * The link after idle: a channel used, left alone for secs, used again;
 * then, b gone, a new context of end 1 connects (a REQ) and its channel
 * works.
 */
int idle(double secs)
{
	struct u4l_dev *a = open_ctx(END0), *b = open_ctx(END1), *c;
	struct u4l_chan *ab, *ba = NULL, *ca, *ac = NULL;
	int r;

	if (!a || !b)
		return 1;
	r = see_each_other(a, b) ? a->ops->chan_get(a, b->ops->ctx_id(b), &ab)
				 : -EHOSTUNREACH;
	if (!r)
		ba = b->ops->chan_accept(b);
	report("idle_before", ba && both_ways(a, ab, b, ba, 500), "ret=%d", r);
	usleep((useconds_t)(secs * 1e6));
	report("idle_same_channel_after", ba && both_ways(a, ab, b, ba, 500),
	       "idle %.1f s", secs);
	/* b leaves: with a budget of one channel per peer, its comes back */
	b->ops->close(b);
	c = open_ctx(END1);
	r = c && see_each_other(a, c) ?
		    c->ops->chan_get(c, a->ops->ctx_id(a), &ca) : -EHOSTUNREACH;
	if (!r)
		ac = a->ops->chan_accept(a);
	report("idle_new_channel_after", ac && both_ways(c, ca, a, ac, 500),
	       "ret=%d", r);
	if (c)
		c->ops->close(c);
	a->ops->close(a);
	return ktest_exit();
}

/*
 * A connect that a fault on the cable spoils fails cleanly and in bounded
 * time; the next one works, both ways, with nothing of the spoilt one left
 * at either end (with a budget of one channel a leftover would make it
 * ENOSPC). The fault is armed right before the connect, once both ends
 * know each other's context: param (tbemu's) gets set, then clear.
 */
int retry(int from, const char *param, const char *set,
		 const char *clear)
{
	struct u4l_dev *a = open_ctx(END0), *b = open_ctx(END1);
	struct u4l_dev *x, *y;
	struct u4l_chan *xy, *yx;
	uint64_t t0;
	int r;

	if (!a || !b)
		return 1;
	x = from ? b : a;
	y = from ? a : b;
	report("retry_ends_see_each_other", see_each_other(a, b), NULL);
	r = set_param(param, set);
	report("retry_fault_armed", r == 0, "%s=%s", param, set);
	t0 = u4l_now_ns();
	r = x->ops->chan_get(x, y->ops->ctx_id(y), &xy);
	report("retry_spoilt_connect_fails", r != 0, "ret=%d ms=%llu", r,
	       (unsigned long long)((u4l_now_ns() - t0) / 1000000));
	set_param(param, clear);
	r = x->ops->chan_get(x, y->ops->ctx_id(y), &xy);
	yx = y->ops->chan_accept(y);
	report("retry_next_connect_works",
	       !r && yx && both_ways(x, xy, y, yx, 300), "ret=%d", r);
	b->ops->close(b);
	a->ops->close(a);
	return ktest_exit();
}

/*
 * Hold the device open with a live channel until the module goes away
 * (rmmod with users: disassociate). Exit 0 once the removal is seen.
 */
int hold(void)
{
	struct u4l_dev *a = open_ctx(END0), *b = open_ctx(END1);
	struct u4l_chan *ab;
	uint32_t bid;

	if (!a || !b || a->ops->chan_get(a, bid = b->ops->ctx_id(b), &ab)) {
		printf("KTEST hold setup FAIL\n");
		return 1;
	}
	printf("KTEST holding ctx %u and %u\n", a->ops->ctx_id(a), bid);
	fflush(stdout);
	for (int i = 0; i < 1000; i++) {
		struct nhi_chan *c = (struct nhi_chan *)ab;
		int r = u4l_nhi_raw_doorbell(a, bid, 0, false, 0, true,
					     c->rx_cons);

		if (r || !a->ops->ctx_alive(a, bid)) {
			printf("KTEST hold_saw_removal PASS doorbell=%d\n", r);
			a->ops->close(a);
			b->ops->close(b);
			return 0;
		}
		usleep(50000);
	}
	printf("KTEST hold_saw_removal FAIL\n");
	return 1;
}
