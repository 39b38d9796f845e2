/* SPDX-License-Identifier: MIT */
/* u4v_ktest: reporting, contexts, frames moved and checked (ktest.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktest.h"

static int failures;

void report(const char *name, int ok, const char *fmt, ...)
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

int ktest_exit(void)
{
	return failures ? 1 : 0;
}

int ktest_result(void)
{
	printf("KTEST result %s failures=%d\n", failures ? "FAIL" : "PASS",
	       failures);
	return ktest_exit();
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

int open_err;

const char *end_dev(int end)
{
	const char *e = getenv(end ? "U4V_KTEST_DEV1" : "U4V_KTEST_DEV0");

	return e ? e : end ? "usb4v1" : "usb4v0";
}

struct u4l_dev *open_ctx_flags(const char *ibdev, uint32_t flags)
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

struct u4l_dev *open_ctx(const char *ibdev)
{
	return open_ctx_flags(ibdev, 0);
}

uint64_t nsys(struct u4l_dev *d)
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

uint32_t transfer(struct u4l_dev *tx, struct u4l_chan *tc,
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

int both_ways(struct u4l_dev *x, struct u4l_chan *xc, struct u4l_dev *y,
		     struct u4l_chan *yc, uint32_t n)
{
	return transfer(x, xc, y, yc, n) == n && transfer(y, yc, x, xc, n) == n;
}

void test_speed(struct u4l_dev *a, struct u4l_chan *ac,
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

int see_each_other(struct u4l_dev *a, struct u4l_dev *b)
{
	int i;

	for (i = 0; i < 250 && !(a->ops->ctx_alive(a, b->ops->ctx_id(b)) &&
				 b->ops->ctx_alive(b, a->ops->ctx_id(a)));
	     i++)
		usleep(20000);
	return i < 250;
}
