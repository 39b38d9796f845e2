// SPDX-License-Identifier: MIT
/*
 * The software cable against a hostile peer, one write at a time: what a
 * process of the cable finds garbled in the shared segment (geometry,
 * lock, config, ring indices, the frame under the engine's eyes) must
 * neither crash it nor be trusted. test_sim_scribble does the same at
 * random while traffic runs; fuzz_sim lets libFuzzer choose.
 */
#include "sim_test.h"

#include <math.h>
#include <signal.h>

#include "link/sim_int.h"

/* The whole segment, as a hostile peer maps it. */
static struct sim_seg *map_seg(const char *n, size_t *len)
{
	struct stat st;
	void *p;
	int fd = shm_open(n, O_RDWR, 0);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	close(fd);
	assert_true(p != MAP_FAILED);
	*len = (size_t)st.st_size;
	return p;
}

/* Direction d of channel c, in the hostile peer's mapping s. */
static struct sim_ring ring_at(struct sim_seg *s, struct u4l_chan *c,
			       uint32_t d)
{
	struct sim_map m = {.seg = s};
	struct sim_ring r;

	sim_geom_init(&m.g, s->ring_depth, s->max_channels);
	sim_ring_layout(&m, ((struct sim_chan_h *)c)->idx, d, &r);
	return r;
}

/* Send count frames a -> b and receive them intact; returns how many. */
static uint32_t exchange(struct u4l_dev *a, struct u4l_chan *ca,
			 struct u4l_dev *b, struct u4l_chan *cb, uint32_t seq,
			 uint32_t count)
{
	struct u4l_rx_frame f;
	uint32_t got = 0, i;

	for (i = 0; i < count; i++) {
		if (!send1(a, ca, seq + i, U4L_PDF_DATA, true))
			break;
		while (b->ops->rx_peek(cb, &f) == 1) {
			assert_true(check_frame(&f) >= 0);
			got++;
			b->ops->rx_release(cb);
		}
	}
	return got;
}

/*
 * A cable (tag) whose two ends have a channel, and its segment as a
 * hostile peer maps it.
 */
struct hostile {
	const char *n;
	struct u4l_dev *a, *b;
	struct u4l_chan *ca, *cb;
	struct sim_seg *s;
	size_t len;
};

static void hostile_up(struct hostile *h, const char *tag)
{
	h->n = make_cable(tag, NULL, NULL);
	pair(h->n, &h->a, &h->b, &h->ca, &h->cb);
	h->s = map_seg(h->n, &h->len);
}

static void hostile_down(struct hostile *h)
{
	h->a->ops->close(h->a);
	h->b->ops->close(h->b);
	munmap(h->s, h->len);
	assert_int_equal(u4l_sim_destroy(h->n), 0);
}

/*
 * Geometry garbled after both ends mapped it: they keep their private
 * copy (rings, channel scans, freeing at close), a new opener refuses it.
 */
static void test_geometry_is_private(void **state)
{
	struct hostile h;
	struct u4l_dev *c = NULL;

	(void)state;
	hostile_up(&h, "geom");
	assert_int_equal(exchange(h.a, h.ca, h.b, h.cb, 0, 8), 8);
	h.s->ring_depth = 1u << 20;
	h.s->max_channels = ~0u;
	h.s->nslots = ~0u;
	h.s->chan_off = 1ull << 50;
	h.s->chan_stride = 1ull << 40;
	h.s->dir_size = 3;
	h.s->seg_size = 1;
	/* a scan of the channel table (a new channel was announced) */
	__atomic_add_fetch(&h.s->ctx[h.b->ops->ctx_id(h.b)].accept_gen, 1,
			   __ATOMIC_RELEASE);
	assert_null(h.b->ops->chan_accept(h.b));
	assert_int_equal(exchange(h.a, h.ca, h.b, h.cb, 8, 300), 300);
	assert_int_equal(exchange(h.b, h.cb, h.a, h.ca, 0, 300), 300);
	assert_int_equal(u4l_sim_open(h.n, 0, &c), -EINVAL);
	hostile_down(&h);
}

/*
 * The headers rx_peek returns are the engine's: later writes do not reach
 * them. The payload is read in the ring, where the peer may change it.
 */
static void test_rx_frame_is_a_copy(void **state)
{
	struct hostile h;
	struct u4l_rx_frame f;
	uint8_t want[U4L_RX_HEAD];
	uint32_t n;

	(void)state;
	hostile_up(&h, "copy");
	assert_true(send1(h.a, h.ca, 7, U4L_PDF_DATA, true));
	assert_int_equal(h.b->ops->rx_peek(h.cb, &f), 1);
	assert_int_equal(check_frame(&f), 7);
	assert_false((const char *)f.head >= (char *)h.s &&
		     (const char *)f.head < (char *)h.s + h.len);
	n = f.len < U4L_RX_HEAD ? f.len : U4L_RX_HEAD;
	memcpy(want, f.buf, n);
	assert_memory_equal(f.head, want, n);
	/* the peer rewrites every RX buffer of the channel */
	for (uint32_t d = 0; d < 2; d++)
		memset(ring_at(h.s, h.cb, d).rx_pool, 0xee,
		       (size_t)h.s->ring_depth * U4L_FRAME_MAX);
	assert_memory_equal(f.head, want, n);
	h.b->ops->rx_release(h.cb);
	hostile_down(&h);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The control-plane lock word is the holder's tid: a live other holds it
 * until the bounded wait fails the operation (no hang); a holder that
 * does not exist, or garbage, is replaced.
 */
static void test_lock_word(void **state)
{
	const char *n = make_cable("lock", NULL, NULL);
	struct u4l_dev *a = NULL;
	struct sim_seg *s;
	uint64_t t0, dt;
	size_t len;
	pid_t child;
	int st;

	(void)state;
	s = map_seg(n, &len);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		pause();
		_exit(0);
	}
	s->lock = (uint32_t)child;
	t0 = mono_ms();
	assert_int_equal(u4l_sim_open(n, 0, &a), -ETIMEDOUT);
	dt = mono_ms() - t0;
	assert_true(dt >= SIM_LOCK_WAIT_NS / 1000000 && dt < 20000);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &st, 0), child);
	/* the holder is gone: its lock is taken over */
	assert_int_equal(u4l_sim_open(n, 0, &a), 0);
	a->ops->close(a);
	s->lock = ~0u; /* no process has that id */
	assert_int_equal(u4l_sim_open(n, 1, &a), 0);
	assert_int_equal(s->lock, 0);
	a->ops->close(a);
	munmap(s, len);
	assert_int_equal(u4l_sim_destroy(n), 0);
}

/* Fault probabilities out of [0, 1] (or NaN) in the segment mean none. */
static void test_config_checked(void **state)
{
	struct hostile h;

	(void)state;
	hostile_up(&h, "cfg");
	for (int e = 0; e < 2; e++) {
		h.s->cfg.faults[e].drop = 5.0;
		h.s->cfg.faults[e].dup = -1.0;
		h.s->cfg.faults[e].crc = NAN;
		h.s->cfg.faults[e].reorder = INFINITY;
	}
	__atomic_add_fetch(&h.s->cfg_seq, 2, __ATOMIC_RELEASE);
	assert_int_equal(exchange(h.a, h.ca, h.b, h.cb, 0, 200), 200);
	hostile_down(&h);
}

/* Ring indices and the held-frame state garbled: no stray access, and
 * the direction carries intact frames again. */
static void test_ring_indices(void **state)
{
	struct hostile h;
	struct sim_dir_ctl *ctl;

	(void)state;
	hostile_up(&h, "idx");
	assert_int_equal(exchange(h.a, h.ca, h.b, h.cb, 0, 10), 10);
	ctl = ring_at(h.s, h.ca, ((struct sim_chan_h *)h.ca)->txd).ctl;
	ctl->tx_prod = 0x7fffffff;
	ctl->tx_moved = 12345;
	ctl->rx_fill = ~0u;
	ctl->held = 9;
	ctl->held_w = ~0u;
	ctl->backlog = 1;
	assert_true(exchange(h.a, h.ca, h.b, h.cb, 10, 600) > 0);
	hostile_down(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_geometry_is_private, cleanup),
	    cmocka_unit_test_teardown(test_rx_frame_is_a_copy, cleanup),
	    cmocka_unit_test_teardown(test_lock_word, cleanup),
	    cmocka_unit_test_teardown(test_config_checked, cleanup),
	    cmocka_unit_test_teardown(test_ring_indices, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
