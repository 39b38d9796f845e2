// SPDX-License-Identifier: MIT
/*
 * The software cable between two processes: every frame verified across
 * the fork, with ample and with tiny rings.
 */
#define _GNU_SOURCE
#include "sim_test.h"

/*
 * The child's part: open end 1, tell the parent its context id through
 * wfd, accept the parent's channel, verify N frames in order, answer with
 * one frame. Returns the exit status: 0, or the step that failed (10-15).
 */
static int receive_n(const char *n, uint32_t A, int wfd, uint32_t N,
		     uint64_t wait_ns)
{
	struct u4l_dev *b;
	struct u4l_chan *cb = NULL;
	struct u4l_rx_frame f;
	uint32_t next = 0, id;
	if (u4l_sim_open(n, 1, &b))
		return 10;
	id = b->ops->ctx_id(b);
	if (write(wfd, &id, 4) != 4)
		return 11;
	uint64_t deadline = u4l_now_ns() + 20000000000ull;
	while (!cb && u4l_now_ns() < deadline) {
		cb = b->ops->chan_accept(b);
		if (!cb)
			b->ops->wait(b, u4l_now_ns() + 100000000ull, 0);
	}
	if (!cb || b->ops->chan_remote(cb) != A)
		return 12;
	while (next < N && u4l_now_ns() < deadline) {
		int r = b->ops->rx_peek(cb, &f);
		if (r == 1) {
			if (check_frame(&f) != next)
				return 13;
			next++;
			b->ops->rx_release(cb);
		} else {
			b->ops->wait(b, u4l_now_ns() + wait_ns, 0);
		}
	}
	if (next != N)
		return 14;
	/* answer with one frame */
	void *buf = b->ops->tx_slot(cb);
	if (!buf)
		return 15;
	fill_frame(buf, frame_len(N), N);
	b->ops->tx_post(cb, frame_len(N), U4L_PDF_CTRL);
	b->ops->tx_doorbell(cb);
	usleep(200000);
	b->ops->close(b);
	return 0;
}

/* N frames from a (here) to a child process on end 1, which answers. */
static void two_process(const char *tag, void (*tweak)(struct u4l_sim_config *),
			uint32_t N, uint64_t wait_ns)
{
	const char *n = make_cable(tag, NULL, tweak);
	struct u4l_dev *a = open_end(n, 0);
	uint32_t A = a->ops->ctx_id(a);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(receive_n(n, A, pfd[1], N, wait_ns));
	uint32_t B;
	assert_int_equal(read(pfd[0], &B, 4), 4);
	close(pfd[0]);
	close(pfd[1]);
	struct u4l_chan *ca;
	assert_int_equal(a->ops->chan_get(a, B, &ca), 0);
	uint64_t deadline = u4l_now_ns() + 20000000000ull;
	for (uint32_t s = 0; s < N; s++)
		while (!send1(a, ca, s, U4L_PDF_DATA, true)) {
			assert_true(u4l_now_ns() < deadline);
			a->ops->wait(a, u4l_now_ns() + wait_ns, 0);
		}
	struct u4l_rx_frame f;
	int r;
	while ((r = a->ops->rx_peek(ca, &f)) == 0) {
		assert_true(u4l_now_ns() < deadline);
		a->ops->wait(a, u4l_now_ns() + 50000000ull, 0);
	}
	assert_int_equal(check_frame(&f), N);
	a->ops->rx_release(ca);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_false(a->ops->ctx_alive(a, B));
	a->ops->close(a);
}

static void test_two_process(void **state)
{
	two_process("2proc", NULL, 20000, 10000000ull);
}

/*
 * Tiny rings, many frames, long waits: a lost wakeup or a lost E2E pump
 * (receiver's release racing the sender's doorbell) shows up as a stall
 * past the 20 s deadline.
 */
static void test_two_process_backpressure(void **state)
{
	uint64_t t0 = u4l_now_ns();
	two_process("2proc16", depth16, 100000, 3000000000ull);
	assert_true(u4l_now_ns() - t0 < 15000000000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_two_process, cleanup),
	    cmocka_unit_test_teardown(test_two_process_backpressure, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
