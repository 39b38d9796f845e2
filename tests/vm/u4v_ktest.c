/* SPDX-License-Identifier: MIT */
/*
 * u4v_ktest: exercises usb4verbs.ko (soft cable, or tbemu's Thunderbolt)
 * through the nhi link backend, without libibverbs: contexts, channels on
 * the cable and on loopback, frame integrity, the doorbell's validation
 * (bogus doorbells must be refused and harm nothing), mapping protections,
 * raw link speed.
 *
 * Prints "KTEST <name> PASS|FAIL ..." per check; exit status 0 when all
 * passed. Usage: u4v_ktest [seconds-of-throughput]
 *   u4v_ktest hold      keep a channel open until the module goes away
 *   u4v_ktest direct S  direct mode (root, allow_direct=1): no syscalls
 *   u4v_ktest refused   direct mode must fail with EPERM, safe mode works
 *   u4v_ktest nocap     the same after dropping CAP_SYS_RAWIO
 *   u4v_ktest nobody    the same as uid/gid 65534
 *   u4v_ktest budget    the channel budget (soft_channels=1): ENOSPC, and
 *                       the budget comes back when a context leaves
 * U4V_KTEST_DEV0 / U4V_KTEST_DEV1 name the devices of cable end 0 and 1
 * (default usb4v0 / usb4v1, the soft cable's).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "link/nhi_int.h"

static int failures;

static void report(const char *name, int ok, const char *fmt, ...)
{
	va_list ap;

	printf("KTEST %s %s", name, ok ? "PASS" : "FAIL");
	if (fmt) {
		putchar(' ');
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
	fflush(stdout);
	if (!ok)
		failures++;
}

/* /dev/infiniband/uverbsN of the ib device called ibdev. */
static int open_ibdev(const char *ibdev)
{
	char path[512], name[64];
	struct dirent *de;
	DIR *d = opendir("/sys/class/infiniband_verbs");
	int fd = -1;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		FILE *f;

		if (strncmp(de->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband_verbs/%s/ibdev",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = 0;
			if (!strcmp(name, ibdev)) {
				snprintf(path, sizeof(path), "/dev/infiniband/%s",
					 de->d_name);
				fd = open(path, O_RDWR | O_CLOEXEC);
			}
		}
		fclose(f);
		if (fd >= 0)
			break;
	}
	closedir(d);
	return fd;
}

static int open_err;

/*
 * The devices of cable end 0 and end 1: usb4v0 and usb4v1 on the soft
 * cable; U4V_KTEST_DEV0 / _DEV1 name them otherwise (Thunderbolt).
 */
static const char *end_dev(int end)
{
	const char *e = getenv(end ? "U4V_KTEST_DEV1" : "U4V_KTEST_DEV0");

	return e ? e : end ? "usb4v1" : "usb4v0";
}
#define END0 end_dev(0)
#define END1 end_dev(1)

static struct u4l_dev *open_ctx_flags(const char *ibdev, uint32_t flags)
{
	struct u4l_dev *dev;
	int fd = open_ibdev(ibdev);
	int ret;

	if (fd < 0) {
		fprintf(stderr, "cannot open %s: %m\n", ibdev);
		open_err = -errno;
		return NULL;
	}
	ret = u4l_nhi_open(fd, U4L_NHI_OWN_FD | flags, NULL, &dev);
	open_err = ret;
	if (ret) {
		fprintf(stderr, "u4l_nhi_open(%s): %s\n", ibdev, strerror(-ret));
		close(fd);
		return NULL;
	}
	return dev;
}

static struct u4l_dev *open_ctx(const char *ibdev)
{
	return open_ctx_flags(ibdev, 0);
}

static uint64_t nsys(struct u4l_dev *d)
{
	return ((struct nhi_dev *)d)->syscalls;
}

static void fill(uint8_t *p, uint32_t len, uint32_t seq)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seq * 7 + i);
	if (len >= 4)
		memcpy(p, &seq, 4);
}

static int check(const uint8_t *p, uint32_t len, uint32_t seq)
{
	uint32_t got;

	if (len >= 4) {
		memcpy(&got, p, 4);
		if (got != seq)
			return 0;
	}
	for (uint32_t i = 4; i < len; i++)
		if (p[i] != (uint8_t)(seq * 7 + i))
			return 0;
	return 1;
}

static uint32_t frame_len(uint32_t seq)
{
	static const uint32_t lens[] = { 4096, 1, 4, 64, 4095, 1500, 4096, 2048 };

	return lens[seq % 8];
}

/*
 * Move n frames from tx (channel tc) to rx (channel rc), checking each.
 * Returns the number of frames received intact.
 */
static uint32_t transfer(struct u4l_dev *tx, struct u4l_chan *tc,
			 struct u4l_dev *rx, struct u4l_chan *rc, uint32_t n)
{
	const struct u4l_ops *to = tx->ops, *ro = rx->ops;
	uint32_t sent = 0, got = 0;
	uint64_t last = u4l_now_ns();

	/* direct mode: the soft engine may take a millisecond to look */
	while (got < n && u4l_now_ns() - last < 3000000000ull) {
		uint32_t batch = 0;
		struct u4l_rx_frame f;
		void *slot;

		while (sent < n && batch < 32 && (slot = to->tx_slot(tc))) {
			uint32_t len = frame_len(sent);

			fill(slot, len, sent);
			to->tx_post(tc, len, U4L_PDF_DATA);
			sent++;
			batch++;
		}
		if (batch)
			to->tx_doorbell(tc);
		to->tx_space(tc);
		batch = 0;
		while (ro->rx_peek(rc, &f) == 1) {
			if (f.len != frame_len(got) || !check(f.buf, f.len, got))
				return got;
			ro->rx_release(rc);
			got++;
			batch++;
		}
		if (batch)
			last = u4l_now_ns();
	}
	return got;
}

static void test_bogus(struct u4l_dev *a, struct u4l_chan *ac,
		       struct u4l_dev *b, struct u4l_chan *bc,
		       struct u4l_dev *d)
{
	struct nhi_chan *c = (struct nhi_chan *)ac;
	struct u4l_rx_frame f;
	uint32_t pos = c->tx_prod & c->mask;
	struct u4v_shadow_desc good = { .slot = (uint16_t)pos, .len = 64,
					.sof = 1, .eof = 1 };
	int r, all = 1;

	/* slot out of range */
	c->shadow[pos] = good;
	c->shadow[pos].slot = (uint16_t)c->depth;
	r = u4l_nhi_raw_doorbell(a, c->remote, true, c->tx_prod + 1, false, 0);
	report("bogus_slot_out_of_range", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* length > 4096, and 0 */
	c->shadow[pos] = good;
	c->shadow[pos].len = 4097;
	r = u4l_nhi_raw_doorbell(a, c->remote, true, c->tx_prod + 1, false, 0);
	report("bogus_len_4097", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;
	c->shadow[pos].len = 0;
	r = u4l_nhi_raw_doorbell(a, c->remote, true, c->tx_prod + 1, false, 0);
	report("bogus_len_0", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* one bad entry in a batch of good ones posts nothing */
	for (uint32_t i = 0; i < 8; i++) {
		c->shadow[(c->tx_prod + i) & c->mask] = good;
		c->shadow[(c->tx_prod + i) & c->mask].slot =
			(uint16_t)((c->tx_prod + i) & c->mask);
	}
	c->shadow[(c->tx_prod + 5) & c->mask].len = 60000;
	r = u4l_nhi_raw_doorbell(a, c->remote, true, c->tx_prod + 8, false, 0);
	report("bogus_batch_all_or_nothing", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* more positions than the ring holds */
	r = u4l_nhi_raw_doorbell(a, c->remote, true, c->tx_prod + c->depth,
				 false, 0);
	report("bogus_overfill", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* releasing RX positions nothing was delivered to */
	r = u4l_nhi_raw_doorbell(b, ((struct nhi_chan *)bc)->remote, false, 0,
				 true, ((struct nhi_chan *)bc)->rx_cons + 5);
	report("bogus_rx_release", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* a channel of another context: d has none to a */
	r = u4l_nhi_raw_doorbell(d, a->ops->ctx_id(a), true, 1, false, 0);
	report("bogus_other_context", r == -ENOENT, "ret=%d", r);
	all &= r == -ENOENT;
	r = u4l_nhi_raw_doorbell(a, 1000, true, 1, false, 0);
	report("bogus_remote_range", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* nothing arrived, and the channel still works */
	r = b->ops->rx_peek(bc, &f);
	report("bogus_nothing_delivered", r == 0, "peek=%d", r);
	all &= r == 0;
	r = (int)transfer(a, ac, b, bc, 600);
	report("bogus_channel_still_works", r == 600, "frames=%d", r);
	all &= r == 600;
	report("bogus_doorbell", all, NULL);
}

static void test_protections(struct u4l_chan *ac)
{
	struct nhi_chan *c = (struct nhi_chan *)ac;
	int r1 = mprotect(c->txd, c->len[U4V_MAP_TX_DESC], PROT_READ | PROT_WRITE);
	int r2 = mprotect((void *)c->rx_pool, c->len[U4V_MAP_RX_POOL],
			  PROT_READ | PROT_WRITE);
	void *p = mmap(NULL, c->len[U4V_MAP_RX_DESC], PROT_READ | PROT_WRITE,
		       MAP_SHARED, c->dev->cmd_fd, (off_t)1 << 40);

	report("ro_desc_ring", r1 != 0, "mprotect=%d", r1);
	report("ro_rx_pool", r2 != 0, "mprotect=%d", r2);
	report("no_bogus_offset", p == MAP_FAILED, NULL);
	if (p != MAP_FAILED)
		munmap(p, c->len[U4V_MAP_RX_DESC]);
}

static void test_speed(struct u4l_dev *a, struct u4l_chan *ac,
		       struct u4l_dev *b, struct u4l_chan *bc, double secs)
{
	uint64_t t0 = u4l_now_ns(), end = t0 + (uint64_t)(secs * 1e9), bytes = 0;
	uint64_t frames = 0;
	struct u4l_rx_frame f;

	while (u4l_now_ns() < end) {
		uint32_t n = 0;
		void *slot;

		while (n < 64 && (slot = a->ops->tx_slot(ac))) {
			a->ops->tx_post(ac, 4096, U4L_PDF_DATA);
			n++;
		}
		if (n)
			a->ops->tx_doorbell(ac);
		while (b->ops->rx_peek(bc, &f) == 1) {
			bytes += f.len;
			frames++;
			b->ops->rx_release(bc);
		}
	}
	double el = (double)(u4l_now_ns() - t0) / 1e9;
	report("raw_link_speed", frames > 0, "MB/s=%.1f frames/s=%.0f",
	       (double)bytes / el / 1e6, (double)frames / el);
}

/*
 * Hold the device open with a live channel until the module goes away
 * (rmmod with users: disassociate). Exit 0 once the removal is seen.
 */
static int hold(void)
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
		int r = u4l_nhi_raw_doorbell(a, bid, false, 0, true, c->rx_cons);

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

/* Direct mode must be refused (EPERM); safe mode keeps working. */
static int refused(const char *how)
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
	return failures ? 1 : 0;
}

static int drop_rawio(void)
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

/* Frames over direct channels: zero system calls once a channel exists. */
static int direct(double secs)
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

	/* a descriptor aimed outside the pool only reads the pool */
	nc->txd[nc->tx_prod & nc->mask].phys = 1ull << 40;
	n = transfer(a, ab, b, ba, 300);
	report("direct_bad_phys_contained", n == 300, "frames=%u", n);
	r = u4l_nhi_raw_doorbell(a, b->ops->ctx_id(b), true, nc->tx_prod, false,
				 0);
	report("direct_no_safe_doorbell", r == -EINVAL, "ret=%d", r);
	test_speed(a, ab, b, ba, secs);
	/* no system call on direct channels: the status page tells */
	d->ops->close(d);
	report("direct_chan_stale", a->ops->chan_dead(ad) &&
					    !a->ops->chan_dead(ab), NULL);
	c->ops->close(c);
	b->ops->close(b);
	a->ops->close(a);
	printf("KTEST result %s failures=%d\n", failures ? "FAIL" : "PASS",
	       failures);
	return failures ? 1 : 0;
}

/* Frames both ways over a pair of channels; all intact. */
static int both_ways(struct u4l_dev *x, struct u4l_chan *xc, struct u4l_dev *y,
		     struct u4l_chan *yc, uint32_t n)
{
	return transfer(x, xc, y, yc, n) == n && transfer(y, yc, x, xc, n) == n;
}

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
static void test_concurrent(int rounds)
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
static int budget(void)
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
	printf("KTEST result %s failures=%d\n", failures ? "FAIL" : "PASS",
	       failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0;
	struct u4l_dev *a, *b, *c, *d;
	struct u4l_chan *ab, *ba, *ac, *ca, *self, *da, *ad;
	uint32_t n;
	int r;

	if (argc > 1 && !strcmp(argv[1], "hold"))
		return hold();
	if (argc > 1 && !strcmp(argv[1], "budget"))
		return budget();
	if (argc > 1 && !strcmp(argv[1], "direct"))
		return direct(argc > 2 ? atof(argv[2]) : 1.0);
	if (argc > 1 && !strcmp(argv[1], "refused"))
		return refused("as-is");
	if (argc > 1 && !strcmp(argv[1], "nocap")) {
		r = drop_rawio();
		report("drop_cap_sys_rawio", r == 0, "ret=%d", r);
		return refused("without-CAP_SYS_RAWIO");
	}
	if (argc > 1 && !strcmp(argv[1], "nobody")) {
		r = setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534);
		report("become_nobody", r == 0 && geteuid() == 65534, NULL);
		return refused("uid-65534");
	}
	a = open_ctx(END0);
	b = open_ctx(END1);
	c = open_ctx(END0);
	d = open_ctx(END1);
	report("open_contexts", a && b && c && d, NULL);
	if (!a || !b || !c || !d)
		return 1;
	printf("KTEST info ctx a=%u/%u b=%u/%u c=%u/%u d=%u/%u\n",
	       a->ops->ctx_id(a), a->end, b->ops->ctx_id(b), b->end,
	       c->ops->ctx_id(c), c->end, d->ops->ctx_id(d), d->end);
	report("ends", a->end == 0 && b->end == 1, NULL);
	report("alive", a->ops->ctx_alive(a, b->ops->ctx_id(b)) &&
				b->ops->ctx_alive(b, a->ops->ctx_id(a)) &&
				!a->ops->ctx_alive(a, 63),
	       NULL);

	r = a->ops->chan_get(a, b->ops->ctx_id(b), &ab);
	report("chan_get_cable", r == 0, "ret=%d", r);
	if (r)
		return 1;
	ba = b->ops->chan_accept(b);
	report("chan_accept", ba && b->ops->chan_remote(ba) == a->ops->ctx_id(a),
	       NULL);
	if (!ba)
		return 1;
	report("chan_accept_once", b->ops->chan_accept(b) == NULL, NULL);

	n = transfer(a, ab, b, ba, 2000);
	report("frames_a_to_b", n == 2000, "frames=%u", n);
	n = transfer(b, ba, a, ab, 2000);
	report("frames_b_to_a", n == 2000, "frames=%u", n);

	r = a->ops->chan_get(a, c->ops->ctx_id(c), &ac);
	ca = c->ops->chan_accept(c);
	report("chan_loopback", r == 0 && ca &&
				       (((struct nhi_chan *)ac)->flags &
					U4V_CHAN_LOOPBACK),
	       "ret=%d", r);
	if (!r && ca) {
		n = transfer(a, ac, c, ca, 1000);
		report("frames_loopback", n == 1000, "frames=%u", n);
	}
	r = a->ops->chan_get(a, a->ops->ctx_id(a), &self);
	if (!r) {
		n = transfer(a, self, a, self, 500);
		report("frames_self", n == 500, "frames=%u", n);
	} else {
		report("frames_self", 0, "ret=%d", r);
	}
	r = a->ops->chan_get(a, 62, &self);
	report("chan_get_dead_ctx", r == -EHOSTUNREACH, "ret=%d", r);
	r = a->ops->chan_get(a, 3, &self);
	report("chan_get_dead_local_ctx", r == -EHOSTUNREACH, "ret=%d", r);
	struct u4v_chan_info info;
	r = u4l_nhi_raw_chan_get(a, U4V_MAX_CTX, &info);
	report("chan_get_remote_range", r == -EINVAL, "ret=%d", r);
	r = u4l_nhi_raw_chan_get(a, U4V_CHAN_NEXT - 1, &info);
	report("chan_get_remote_range_high", r == -EINVAL, "ret=%d", r);
	/* nothing new for a: the next channel a peer made is none */
	r = u4l_nhi_raw_chan_get(a, U4V_CHAN_NEXT, &info);
	report("chan_get_next_none", r == -ENOENT, "ret=%d", r);


	test_bogus(a, ab, b, ba, d);
	/* end 1 connects: it asks end 0, which opens and tells a */
	r = d->ops->chan_get(d, a->ops->ctx_id(a), &da);
	ad = a->ops->chan_accept(a);
	report("chan_from_end1", !r && ad && a->ops->chan_remote(ad) ==
						     d->ops->ctx_id(d),
	       "ret=%d", r);
	if (!r && ad)
		report("frames_end1_channel", both_ways(d, da, a, ad, 500),
		       NULL);
	test_concurrent(20);
	test_protections(ab);
	test_speed(a, ab, b, ba, secs);

	/* a context leaving is seen by its peer */
	uint32_t cid = c->ops->ctx_id(c);
	report("chan_live_not_stale", !a->ops->chan_dead(ac) &&
					      !a->ops->chan_dead(ab), NULL);
	c->ops->close(c);
	report("ctx_leave_seen", !a->ops->ctx_alive(a, cid), NULL);
	/* the status page says so before any doorbell */
	report("chan_stale_loopback", a->ops->chan_dead(ac), NULL);
	/* a channel whose peer left says so (a new connect finds a successor) */
	r = u4l_nhi_raw_doorbell(a, cid, true, ((struct nhi_chan *)ac)->tx_prod,
				 false, 0);
	report("doorbell_peer_left_loopback", r == -ENOLINK, "ret=%d", r);
	uint32_t bid = b->ops->ctx_id(b);
	b->ops->close(b);
	r = u4l_nhi_raw_doorbell(a, bid, true, ((struct nhi_chan *)ab)->tx_prod,
				 false, 0);
	report("doorbell_peer_left_cable", r == -ENOLINK, "ret=%d", r);
	report("chan_stale_cable", a->ops->chan_dead(ab), NULL);

	d->ops->close(d);
	a->ops->close(a);
	printf("KTEST result %s failures=%d\n", failures ? "FAIL" : "PASS",
	       failures);
	return failures ? 1 : 0;
}
