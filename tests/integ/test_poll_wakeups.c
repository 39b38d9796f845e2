// SPDX-License-Identifier: MIT
/*
 * The progress thread and an application that polls (ctx/thread.c): while
 * the application polls on, the thread's looks for frames under its cover
 * back off (lapse_next), so a polling application is not robbed of its
 * core every 0.5 ms; once it stops, a frame that came under its cover is
 * still placed without any verbs call. Wake-ups are counted as the
 * threads' voluntary context switches (/proc), so the test sees what the
 * host sees.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctx/progress.h"
#include "u4vt_rel.h"

#define LEN 64u
#define POLL_MS 400u

/* Voluntary context switches of this process's threads but the main one. */
static unsigned long helper_switches(void)
{
	unsigned long sum = 0, n;
	struct dirent *e;
	char path[sizeof("/proc/self/task//status") + 256], line[128];
	DIR *d = opendir("/proc/self/task");
	FILE *f;

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* gone meanwhile */
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %lu", &n) == 1)
				sum += n;
		fclose(f);
	}
	closedir(d);
	return sum;
}

/* Both ends' applications poll their empty CQs for ms milliseconds. */
static void poll_both(struct u4vt_pair *p, unsigned int ms)
{
	uint64_t end = u4vt_now_ms() + ms;
	struct ibv_wc wc;

	while (u4vt_now_ms() < end) {
		assert_int_equal(u4v_poll_cq(p->a.cq, 1, &wc), 0);
		assert_int_equal(u4v_poll_cq(p->b.cq, 1, &wc), 0);
	}
}

/*
 * Looking every APP_POLL_RECENT_NS, the two threads would wake some 1600
 * times in POLL_MS; backing off to LAPSE_MAX_NS, each wakes POLL_MS /
 * LAPSE_MAX_NS times and a few on the way there. Twice that is allowed
 * for a host that stalls the polling loop (a look that finds no poll
 * since starts over).
 */
static void test_polling_app_spares_thread(void **state)
{
	unsigned long looks = POLL_MS * 1000000ull / LAPSE_MAX_NS + 8;
	unsigned long before, woke;
	struct u4vt_pair p;

	(void)state;
	u4vt_pair_up(&p, "pollwake", IBV_QPT_RC, NULL, NULL, 0);
	poll_both(&p, 20); /* the threads see polling applications */
	before = helper_switches();
	poll_both(&p, POLL_MS);
	woke = helper_switches() - before;
	fprintf(stderr, "[pollwake] %lu thread wake-ups in %u ms (bound %lu)\n",
		woke, POLL_MS, 2 * 2 * looks);
	assert_true(woke <= 2 * 2 * looks);
	u4vt_pair_down(&p);
}

/*
 * b's application polls, then stops and spins on memory: a's RDMA WRITE
 * comes under the cover b's last poll left, and b's thread still places
 * it and sends the ACK, without b calling in, no later than its look
 * (LAPSE_MAX_NS at most; the bound allows for a loaded host). Returns the
 * milliseconds it took.
 */
static uint64_t write_under_cover(const char *tag, unsigned int idle_ms,
				  unsigned int poll_ms)
{
	uint8_t *s = malloc(LEN), *d = calloc(1, LEN);
	struct u4v_mr *ma, *mb;
	struct u4vt_pair p;
	struct ibv_wc wc;
	uint64_t start, took;

	u4vt_fill(s, LEN, 11);
	u4vt_pair_up(&p, tag, IBV_QPT_RC, NULL, NULL, 0);
	ma = rel_reg(p.a.pd, s, LEN, REL_ACC_ALL);
	mb = rel_reg(p.b.pd, d, LEN, REL_ACC_ALL);
	usleep(idle_ms * 1000);
	poll_both(&p, poll_ms);
	assert_int_equal(u4v_poll_cq(p.b.cq, 1, &wc), 0);
	assert_int_equal(rel_post(p.qa, IBV_WR_RDMA_WRITE, 1, s, LEN,
				  u4v_mr_lkey(ma), (uintptr_t)d,
				  u4v_mr_rkey(mb)),
			 0);
	start = u4vt_now_ms();
	while (memcmp(d, s, LEN) && u4vt_now_ms() < start + 10000)
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	took = u4vt_now_ms() - start;
	fprintf(stderr, "[%s] placed after %llu ms\n", tag,
		(unsigned long long)took);
	assert_memory_equal(d, s, LEN);
	wc = rel_wait1(p.a.cq, 10000);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(u4v_poll_cq(p.b.cq, 1, &wc), 0);
	assert_int_equal(u4v_dereg_mr(ma), 0);
	assert_int_equal(u4v_dereg_mr(mb), 0);
	u4vt_pair_down(&p);
	free(s);
	free(d);
	return took;
}

/* It polled long enough for the looks to back off to the most. */
static void test_cover_after_polling_on(void **state)
{
	(void)state;
	assert_true(write_under_cover("pollcover", 0,
				      4 * LAPSE_MAX_NS / 1000000) <=
		    3 * LAPSE_MAX_NS / 1000000);
}

/*
 * After an idle spell (its thread sleeps 50 ms at a time), one poll: the
 * cover it leaves ends the thread's long sleep.
 */
static void test_cover_after_idle(void **state)
{
	(void)state;
	assert_true(write_under_cover("idlecover", 150, 0) <=
		    3 * LAPSE_MAX_NS / 1000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_polling_app_spares_thread),
	    cmocka_unit_test(test_cover_after_polling_on),
	    cmocka_unit_test(test_cover_after_idle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
