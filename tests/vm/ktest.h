/* SPDX-License-Identifier: MIT */
/*
 * What the parts of u4v_ktest share (u4v_ktest.c says what it checks and
 * how it is called): reporting, contexts on either cable end, and frames
 * moved and checked between two channels (ktest_lib.c).
 */
#ifndef U4V_KTEST_H
#define U4V_KTEST_H

#include <stdbool.h>
#include <stdint.h>

#include "link/nhi_int.h"

/* "KTEST <name> PASS|FAIL [fmt...]"; a FAIL counts. */
void report(const char *name, int ok, const char *fmt, ...);
/* 1 if any check failed, else 0 (the exit status). */
int ktest_exit(void);
/* Prints "KTEST result PASS|FAIL failures=N"; ktest_exit(). */
int ktest_result(void);

/*
 * The devices of cable end 0 and end 1: usb4v0 and usb4v1 on the soft
 * cable; U4V_KTEST_DEV0 / _DEV1 name them otherwise (Thunderbolt).
 */
const char *end_dev(int end);
#define END0 end_dev(0)
#define END1 end_dev(1)
/* A context of ibdev through the nhi backend (NULL: see open_err). */
struct u4l_dev *open_ctx_flags(const char *ibdev, uint32_t flags);
struct u4l_dev *open_ctx(const char *ibdev);
extern int open_err; /* the last open's error, 0 or -errno */
uint64_t nsys(struct u4l_dev *d); /* system calls the context made */

/*
 * Move n frames from tx (channel tc) to rx (channel rc), checking each.
 * Returns the number of frames received intact.
 */
uint32_t transfer(struct u4l_dev *tx, struct u4l_chan *tc,
		  struct u4l_dev *rx, struct u4l_chan *rc, uint32_t n);
/* Frames both ways over a pair of channels; all intact. */
int both_ways(struct u4l_dev *x, struct u4l_chan *xc, struct u4l_dev *y,
	      struct u4l_chan *yc, uint32_t n);
/* Full frames from a to b for secs; reports raw_link_speed. */
void test_speed(struct u4l_dev *a, struct u4l_chan *ac, struct u4l_dev *b,
		struct u4l_chan *bc, double secs);
/* Within 5 s, a and b (other ends) know each other is alive. */
int see_each_other(struct u4l_dev *a, struct u4l_dev *b);

/* ktest_safe.c: the safe doorbell's checks, the mappings' protections */
void test_bogus(struct u4l_dev *a, struct u4l_chan *ac, struct u4l_dev *b,
		struct u4l_chan *bc, struct u4l_dev *d);
void test_protections(struct u4l_chan *ac);

/* ktest_direct.c: direct mode, and its refusal */
int direct(double secs, bool nhi);
int refused(const char *how);
int drop_rawio(void);

/* ktest_lanes.c: lanes, in the default run, in the budget, under RC */
void test_lanes(struct u4l_dev *a, struct u4l_chan *ab, struct u4l_dev *b,
		struct u4l_chan *ba, struct u4l_dev *c, struct u4l_dev *d);
int lanerc(void);
int lanebudget(void);

/* ktest_cable.c: connects at once, the budget, idle, spoilt connects, unload */
void test_concurrent(int rounds);
int budget(void);
int idle(double secs);
int retry(int from, const char *param, const char *set, const char *clear);
int hold(void);

#endif
