/* SPDX-License-Identifier: MIT */
/*
 * u4v_ktest, lanes: the extra channels (ring pairs) between one pair of
 * contexts. Made from either end, reported with their lane (chan_info),
 * each with its own doorbell; within the channel budget, which a lane
 * spends like lane 0 and gets back when a context leaves; and RC traffic
 * through the engine striped over them, verified end to end.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <usb4verbs/engine.h>

#include "ktest.h"
#include "u4vt_traffic.h"

/* x takes lane l to y; y is told of it, as that lane, from x. */
static bool lane_made(struct u4l_dev *x, struct u4l_dev *y, uint32_t l,
		      struct u4l_chan **xy, struct u4l_chan **yx)
{
	uint32_t xid = x->ops->ctx_id(x);
	int r = x->ops->chan_get_lane(x, y->ops->ctx_id(y), l, xy);

	*yx = r ? NULL : y->ops->chan_accept(y);
	if (r || !*yx) {
		printf("KTEST info lane %u: ret=%d accepted=%d\n", l, r, !!*yx);
		return false;
	}
	return x->ops->chan_lane(*xy) == l && y->ops->chan_lane(*yx) == l &&
	       y->ops->chan_remote(*yx) == xid;
}

/*
 * a and b share lane 0; lanes 1 and 2 come from end 0 (a), lane 3 from
 * end 1 (b): each is its own ring pair, frames checked both ways on every
 * lane in turn and on lane 0 after them (six channels at once with d's
 * and a concurrent connect's: the Thunderbolt plan's budget). What is
 * refused: lanes within one end, lanes out of range, doorbells of lanes
 * not made.
 */
void test_lanes(struct u4l_dev *a, struct u4l_chan *ab, struct u4l_dev *b,
		struct u4l_chan *ba, struct u4l_dev *c, struct u4l_dev *d)
{
	struct u4l_chan *al[U4L_MAX_LANES] = { ab };
	struct u4l_chan *bl[U4L_MAX_LANES] = { ba };
	struct u4l_chan *x;
	struct u4v_chan_info info;
	uint32_t l, bid = b->ops->ctx_id(b);
	bool ok;
	int r;

	ok = lane_made(a, b, 1, &al[1], &bl[1]) &&
	     lane_made(a, b, 2, &al[2], &bl[2]);
	report("lanes_from_end0", ok, NULL);
	ok = ok && lane_made(b, a, 3, &bl[3], &al[3]);
	report("lane_from_end1", ok, NULL);
	if (!ok)
		return;
	report("lanes_distinct", al[1] != ab && al[2] != al[1] &&
					 al[3] != al[2] && bl[1] != ba,
	       NULL);
	r = a->ops->chan_get_lane(a, bid, 2, &x);
	report("lane_get_again", !r && x == al[2] &&
					 b->ops->chan_accept(b) == NULL,
	       "ret=%d", r);
	/* every lane's own doorbell: payloads never cross lanes */
	for (l = U4L_MAX_LANES; l-- > 0;)
		ok = ok && both_ways(a, al[l], b, bl[l], 300);
	report("lanes_frames_each", ok, NULL);
	report("lane0_after_lanes", both_ways(a, ab, b, ba, 300), NULL);
	r = a->ops->chan_get_lane(a, c->ops->ctx_id(c), 1, &x);
	report("lane_loopback_refused", r == -EOPNOTSUPP, "ret=%d", r);
	r = u4l_nhi_raw_chan_get(a, bid, U4V_MAX_LANES, &info);
	report("lane_range_refused", r == -EINVAL, "ret=%d", r);
	r = u4l_nhi_raw_doorbell(a, bid, U4V_MAX_LANES, true, 0, false, 0);
	report("lane_doorbell_range_refused", r == -EINVAL, "ret=%d", r);
	r = u4l_nhi_raw_doorbell(d, a->ops->ctx_id(a), 3, true, 0, false, 0);
	report("lane_doorbell_none", r == -ENOENT, "ret=%d", r);
}

/*
 * An engine context over a new context of ibdev, whose link is *link
 * (NULL: failed).
 */
static struct u4v_ctx *engine_ctx(const char *ibdev, struct u4l_dev **link,
				  struct u4v_pd **pd)
{
	struct u4v_ctx_attr attr = { .async_event_fd = -1 };
	struct u4v_ctx *ctx;

	attr.link = *link = open_ctx(ibdev);
	if (!attr.link)
		return NULL;
	attr.node_guid = 0x1000 + attr.link->ops->ctx_id(attr.link);
	if (u4v_ctx_open(&attr, &ctx)) {
		attr.link->ops->close(attr.link);
		return NULL;
	}
	if (u4v_alloc_pd(ctx, pd)) {
		u4v_ctx_close(ctx);
		return NULL;
	}
	return ctx;
}

/* Lanes 0 .. n - 1 of x to y each sent and received frames. */
static bool lanes_carried(struct u4l_dev *x, struct u4l_dev *y, uint32_t n)
{
	struct nhi_dev *d = to_nhi(x);
	uint32_t l, rid = y->ops->ctx_id(y);
	bool ok = true;

	pthread_mutex_lock(&d->lock);
	for (l = 0; l < U4L_MAX_LANES; l++) {
		struct nhi_chan *c = d->chans[rid][l];
		uint32_t tx = c ? c->tx_prod : 0, rx = c ? c->rx_cons : 0;

		printf("KTEST info lane %u: tx %u rx %u frames\n", l, tx, rx);
		ok = ok && (l < n ? tx && rx : !c);
	}
	pthread_mutex_unlock(&d->lock);
	return ok;
}

/*
 * RC traffic between an engine context on each end with USB4V_LANES=4:
 * every message checked (tr_run: checksums, order, READ and atomics too);
 * each context says in its counters how many lanes it took past lane 0
 * (want) and how many the budget refused (short_min at least), and each
 * of those lanes carried frames both ways.
 */
static void lanes_rc(const char *tag, uint32_t want, uint64_t short_min)
{
	struct u4v_ctx *x, *y;
	struct u4l_dev *lx, *ly;
	struct u4v_pd *px, *py;
	struct u4l_counters *cx, *cy;
	struct tr_result res;
	struct tr_cfg cfg;
	int r;

	setenv("USB4V_LANES", "4", 1);
	x = engine_ctx(END0, &lx, &px);
	y = engine_ctx(END1, &ly, &py);
	unsetenv("USB4V_LANES");
	report("lanes_rc_contexts", x && y, "%s", tag);
	if (!x || !y)
		return;
	tr_cfg_default(&cfg);
	cfg.messages = 1000;
	cfg.timeout_ms = 60000;
	cfg.timeout = 17; /* 0.5 s: an emulated guest stalls */
	r = tr_run(&cfg, x, px, y, py, &res);
	report("lanes_rc_verified", r == 0 && res.verified == cfg.messages,
	       "%s verified=%llu %s", tag, (unsigned long long)res.verified,
	       res.msg);
	cx = u4v_ctx_counters(x);
	cy = u4v_ctx_counters(y);
	printf("KTEST info %s lanes opened %llu/%llu short %llu/%llu "
	       "waits %llu/%llu\n", tag, (unsigned long long)cx->lanes_opened,
	       (unsigned long long)cy->lanes_opened,
	       (unsigned long long)cx->lanes_short,
	       (unsigned long long)cy->lanes_short,
	       (unsigned long long)cx->lane_waits,
	       (unsigned long long)cy->lane_waits);
	report("lanes_rc_lanes_used",
	       cx->lanes_opened == want && cy->lanes_opened == want &&
		   cx->lanes_short + cy->lanes_short >= short_min,
	       "%s", tag);
	report("lanes_rc_each_lane_carried", lanes_carried(lx, ly, want + 1),
	       "%s", tag);
	u4v_dealloc_pd(px);
	u4v_dealloc_pd(py);
	u4v_ctx_close(x);
	u4v_ctx_close(y);
}

/* The default budget (soft_channels=16): four lanes each way, none short. */
int lanerc(void)
{
	lanes_rc("lanes4", U4L_MAX_LANES - 1, 0);
	return ktest_result();
}

/*
 * soft_channels=3: lanes spend the budget like lane 0. The fourth lane is
 * refused from either end, what was made keeps working; a context that
 * leaves gives every lane back; the engine takes what the budget has and
 * counts what it did not get.
 */
int lanebudget(void)
{
	struct u4l_dev *a = open_ctx(END0), *b = open_ctx(END1);
	struct u4l_dev *c = open_ctx(END0), *d = open_ctx(END1);
	struct u4l_chan *al[U4L_MAX_LANES], *bl[U4L_MAX_LANES], *x;
	uint32_t l, bid;
	bool ok;
	int r;

	if (!a || !b || !c || !d)
		return 1;
	bid = b->ops->ctx_id(b);
	r = a->ops->chan_get(a, bid, &al[0]);
	bl[0] = r ? NULL : b->ops->chan_accept(b);
	ok = bl[0] && lane_made(a, b, 1, &al[1], &bl[1]) &&
	     lane_made(b, a, 2, &bl[2], &al[2]);
	report("lanebudget_three", ok, "ret=%d", r);
	if (!ok)
		return ktest_result();
	r = a->ops->chan_get_lane(a, bid, 3, &x);
	report("lanebudget_spent_end0", r == -ENOSPC, "ret=%d", r);
	r = b->ops->chan_get_lane(b, a->ops->ctx_id(a), 3, &x);
	report("lanebudget_spent_end1", r == -ENOSPC, "ret=%d", r);
	r = c->ops->chan_get(c, d->ops->ctx_id(d), &x);
	report("lanebudget_spent_lane0", r == -ENOSPC, "ret=%d", r);
	for (l = 0; l < 3; l++)
		ok = ok && both_ways(a, al[l], b, bl[l], 200);
	report("lanebudget_lanes_work", ok, NULL);
	/* b leaves: its three channels' rings come back at both ends */
	b->ops->close(b);
	report("lanebudget_peer_left_seen", !a->ops->ctx_alive(a, bid), NULL);
	ok = c->ops->chan_get(c, d->ops->ctx_id(d), &al[0]) == 0 &&
	     (bl[0] = d->ops->chan_accept(d)) != NULL &&
	     lane_made(d, c, 1, &bl[1], &al[1]) &&
	     lane_made(c, d, 2, &al[2], &bl[2]);
	for (l = 0; ok && l < 3; l++)
		ok = both_ways(c, al[l], d, bl[l], 200);
	report("lanebudget_returned", ok, NULL);
	d->ops->close(d);
	c->ops->close(c);
	a->ops->close(a);
	/* three rings: lanes 0-2, lane 3 short (counted by whoever asked) */
	lanes_rc("lanes3", 2, 1);
	return ktest_result();
}
