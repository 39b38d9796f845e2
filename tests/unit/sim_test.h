/* SPDX-License-Identifier: MIT */
/* Helpers of the software cable's unit tests (test_sim*.c). */
#ifndef U4V_SIM_TEST_H
#define U4V_SIM_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <usb4verbs/link.h>
#include <usb4verbs/sim.h>

#include "u4vt.h"

/* ---- helpers ---- */

static char g_names[16][128];
static int g_nnames;

static inline const char *cable_name(const char *tag)
{
	const char *pfx = getenv("U4V_TEST_SHM_PREFIX");
	char *n = g_names[g_nnames++ % 16];
	snprintf(n, 128, "%s-%d-%s", pfx && *pfx ? pfx : "/u4vt-test_sim",
		 (int)getpid(), tag);
	shm_unlink(n);
	return n;
}

static inline int cleanup(void **state)
{
	(void)state;
	for (int i = 0; i < g_nnames && i < 16; i++)
		shm_unlink(g_names[i]);
	g_nnames = 0;
	return 0;
}

/* A cable with unthrottled wire and no latency unless the test says. */
static inline const char *make_cable(const char *tag, struct u4l_sim_config *cfg_out,
			      void (*tweak)(struct u4l_sim_config *))
{
	struct u4l_sim_config cfg;
	const char *n = cable_name(tag);

	u4vt_cable_config(&cfg);
	if (tweak)
		tweak(&cfg);
	assert_int_equal(u4l_sim_create(n, &cfg), 0);
	if (cfg_out)
		*cfg_out = cfg;
	return n;
}

/* Rings of 16: full after a few frames. A make_cable tweak. */
static inline void depth16(struct u4l_sim_config *c)
{
	c->ring_depth = 16;
}

static inline struct u4l_dev *open_end(const char *n, uint32_t end)
{
	struct u4l_dev *d = NULL;
	assert_int_equal(u4l_sim_open(n, end, &d), 0);
	assert_non_null(d);
	assert_int_equal(d->end, end);
	return d;
}

static inline uint32_t frame_len(uint32_t seq)
{
	return 8 + (seq * 97u) % (U4L_FRAME_MAX - 7);
}

static inline void fill_frame(uint8_t *b, uint32_t len, uint32_t seq)
{
	memcpy(b, &seq, 4);
	for (uint32_t i = 4; i < len; i++)
		b[i] = (uint8_t)(seq * 31u + i * 7u);
}

/* Returns the sequence number or -1 if length or payload are wrong. */
static inline int64_t check_frame(const struct u4l_rx_frame *f)
{
	uint32_t seq;
	if (f->len < 8 || f->len > U4L_FRAME_MAX)
		return -1;
	memcpy(&seq, f->buf, 4);
	if (f->len != frame_len(seq))
		return -1;
	const uint8_t *b = f->buf;
	for (uint32_t i = 4; i < f->len; i++)
		if (b[i] != (uint8_t)(seq * 31u + i * 7u))
			return -1;
	return seq;
}

static inline bool send1(struct u4l_dev *d, struct u4l_chan *ch, uint32_t seq,
		  enum u4l_pdf pdf, bool ring)
{
	void *buf = d->ops->tx_slot(ch);
	if (!buf)
		return false;
	fill_frame(buf, frame_len(seq), seq);
	d->ops->tx_post(ch, frame_len(seq), pdf);
	if (ring)
		d->ops->tx_doorbell(ch);
	return true;
}

/* Pair (a on end 0, b on end 1) with a channel; returns both handles. */
static inline void pair(const char *n, struct u4l_dev **a, struct u4l_dev **b,
		 struct u4l_chan **ca, struct u4l_chan **cb)
{
	*a = open_end(n, 0);
	*b = open_end(n, 1);
	assert_int_equal((*a)->ops->chan_get(*a, (*b)->ops->ctx_id(*b), ca), 0);
	*cb = (*b)->ops->chan_accept(*b);
	assert_non_null(*cb);
	assert_int_equal((*b)->ops->chan_remote(*cb), (*a)->ops->ctx_id(*a));
}

static inline void stat_of(const char *n, struct u4l_counters c[2])
{
	assert_int_equal(u4l_sim_stat(n, c), 0);
}

/* A frame of c taken and given back 50 ms after the thread starts. */
struct releaser {
	struct u4l_dev *d;
	struct u4l_chan *c;
};

static inline void *release_fn(void *p)
{
	struct releaser *r = p;
	struct u4l_rx_frame f;

	usleep(50000);
	if (r->d->ops->rx_peek(r->c, &f) == 1)
		r->d->ops->rx_release(r->c);
	return NULL;
}

#endif
