/* SPDX-License-Identifier: MIT */
/*
 * u4v_ktest, direct mode (root, allow_direct=1): descriptors and doorbells
 * written by the process, no system call per frame; and its refusal to
 * whoever may not have it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ktest.h"

/* Direct mode must be refused (EPERM); safe mode keeps working. */
int refused(const char *how)
{
	struct u4l_dev *a = open_ctx_flags(END0, U4L_NHI_DIRECT);
	int err = open_err;

	report("direct_refused", !a && err == -EPERM, "%s ret=%d", how, err);
	if (a)
		a->ops->close(a);
	a = open_ctx(END0);
	report("safe_still_works", a && ((struct nhi_dev *)a)->mode ==
						U4V_MODE_SAFE, "%s", how);
	if (a)
		a->ops->close(a);
	return ktest_exit();
}

int drop_rawio(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct c[2];

	if (syscall(SYS_capget, &h, c))
		return -1;
	c[0].effective &= ~(1u << CAP_SYS_RAWIO);
	c[0].permitted &= ~(1u << CAP_SYS_RAWIO);
	c[0].inheritable &= ~(1u << CAP_SYS_RAWIO);
	return (int)syscall(SYS_capset, &h, c);
}

/*
 * Frames over direct channels: zero system calls once a channel exists.
 * nhi: the doorbell pages are a (tbemu's) NHI's register BAR.
 */
/*
 * A lane of a direct channel has doorbell slots of its own (the soft
 * cable's: remote * 4 + lane): frames both ways without a system call,
 * and lane 0 untouched.
 */
static void direct_lane(struct u4l_dev *a, struct u4l_chan *ab,
			struct u4l_dev *b, struct u4l_chan *ba)
{
	struct u4l_chan *al = NULL, *bl = NULL;
	uint64_t sa, sb;
	uint32_t n = 0;
	int r;

	r = a->ops->chan_get_lane(a, b->ops->ctx_id(b), 3, &al);
	bl = r ? NULL : b->ops->chan_accept(b);
	sa = nsys(a);
	sb = nsys(b);
	if (bl && b->ops->chan_lane(bl) == 3)
		n = transfer(a, al, b, bl, 1000) + transfer(b, bl, a, al, 1000);
	n += transfer(a, ab, b, ba, 500);
	report("direct_lane", n == 2500 && nsys(a) == sa && nsys(b) == sb,
	       "ret=%d frames=%u", r, n);
}

int direct(double secs, bool nhi)
{
	struct u4l_dev *a = open_ctx_flags(END0, U4L_NHI_DIRECT);
	struct u4l_dev *b = open_ctx_flags(END1, U4L_NHI_DIRECT);
	struct u4l_dev *c = open_ctx(END0), *d = open_ctx(END1);
	struct u4l_chan *ab, *ba, *ad, *da, *ac, *ca, *self;
	struct nhi_chan *nc;
	uint64_t sa, sb;
	uint32_t n;
	int r;

	report("direct_open", a && b && c && d &&
				      ((struct nhi_dev *)a)->mode == U4V_MODE_DIRECT,
	       "ret=%d", open_err);
	if (!a || !b || !c || !d)
		return 1;
	r = a->ops->chan_get(a, b->ops->ctx_id(b), &ab);
	ba = b->ops->chan_accept(b);
	nc = (struct nhi_chan *)ab;
	report("direct_chan", !r && ba && (nc->flags & U4V_CHAN_DIRECT) &&
				      !nc->map[U4V_MAP_SHADOW],
	       "ret=%d", r);
	if (r || !ba)
		return 1;
	report("direct_desc_writable",
	       !mprotect(nc->txd, nc->len[U4V_MAP_TX_DESC],
			 PROT_READ | PROT_WRITE), NULL);
	sa = nsys(a);
	sb = nsys(b);
	n = transfer(a, ab, b, ba, 2000);
	report("direct_frames_a_to_b", n == 2000, "frames=%u", n);
	n = transfer(b, ba, a, ab, 2000);
	report("direct_frames_b_to_a", n == 2000, "frames=%u", n);
	report("direct_zero_syscalls", nsys(a) == sa && nsys(b) == sb,
	       "a=%llu b=%llu", (unsigned long long)(nsys(a) - sa),
	       (unsigned long long)(nsys(b) - sb));

	/* not on the NHI plan, whose budget of two channels the rest takes */
	if (!nhi)
		direct_lane(a, ab, b, ba);
	/* direct <-> safe across the cable, on loopback, and to itself */
	r = a->ops->chan_get(a, d->ops->ctx_id(d), &ad);
	da = d->ops->chan_accept(d);
	n = !r && da ? transfer(a, ad, d, da, 1000) : 0;
	n += !r && da ? transfer(d, da, a, ad, 1000) : 0;
	report("direct_with_safe_peer", n == 2000, "frames=%u", n);
	r = c->ops->chan_get(c, a->ops->ctx_id(a), &ca);
	ac = a->ops->chan_accept(a);
	n = !r && ac ? transfer(a, ac, c, ca, 500) + transfer(c, ca, a, ac, 500)
		     : 0;
	report("direct_loopback", n == 1000, "frames=%u", n);
	r = a->ops->chan_get(a, a->ops->ctx_id(a), &self);
	n = r ? 0 : transfer(a, self, a, self, 500);
	report("direct_self", n == 500, "frames=%u", n);

	/*
	 * A descriptor aimed outside the pool only reads the pool (the soft
	 * engine's rule). On an NHI it is a DMA fault, or worse: why direct
	 * mode is privileged. Not tried there.
	 */
	if (!nhi) {
		nc->txd[nc->tx_prod & nc->mask].phys = 1ull << 40;
		n = transfer(a, ab, b, ba, 300);
		report("direct_bad_phys_contained", n == 300, "frames=%u", n);
	}
	r = u4l_nhi_raw_doorbell(a, b->ops->ctx_id(b), 0, true, nc->tx_prod,
				 false, 0);
	report("direct_no_safe_doorbell", r == -EINVAL, "ret=%d", r);
	test_speed(a, ab, b, ba, secs);
	/* no system call on direct channels: the status page tells */
	d->ops->close(d);
	report("direct_chan_stale", a->ops->chan_dead(ad) &&
					    !a->ops->chan_dead(ab), NULL);
	c->ops->close(c);
	b->ops->close(b);
	a->ops->close(a);
	return ktest_result();
}
