/* SPDX-License-Identifier: MIT */
/*
 * The progress model. Whoever calls in (poll_cq, post_send, the progress
 * thread) moves the context forward; one at a time (try-lock).
 */
#ifndef U4V_PROGRESS_H
#define U4V_PROGRESS_H

#include "engine_int.h"

/*
 * An application that polled a CQ in the last 0.5 ms, and waits for much,
 * moves the context itself: the thread naps until that poll is 0.5 ms old
 * (ended early when a CQ is armed). Shorter naps cost a third of
 * unthrottled bandwidth on a 2-core machine. One that waits for a single
 * send or nothing may spin on memory next, so the thread sleeps on the link
 * instead, woken by the peer's data frames only (the application takes its
 * ACKs itself) until that poll is 0.5 ms old: the link's cover says so
 * (rx_cover, see u4v_progress_cover), or, on a link without one, the
 * wait's flag; the thread looks again then (or later, LAPSE_MAX_NS).
 */
#define APP_POLL_RECENT_NS 500000ull
/*
 * The thread looks for frames that came under the cover when it lapses;
 * while the application polls on, each look that finds it did doubles the
 * next one's distance from its last poll, up to this (thread.c,
 * lapse_next).
 */
#define LAPSE_MAX_NS 8000000ull

/* One pass; returns the frames taken. Caller holds progress_lock. */
unsigned int u4v_progress_locked(struct u4v_ctx *ctx);
/* What the application waits for on its CQs. Under progress_lock. */
uint32_t u4v_app_cq_work(struct u4v_ctx *ctx);
/* One progress pass unless another thread is running one (then false). */
bool u4v_progress_try(struct u4v_ctx *ctx);
/* Start the per-context progress thread (thread.c; idempotent; first QP). */
int u4v_progress_start(struct u4v_ctx *ctx);
void u4v_progress_stop(struct u4v_ctx *ctx);
/* A verbs call (post, poll): the context is not idle. */
void u4v_progress_app_call(struct u4v_ctx *ctx);
/*
 * The application polls on and found nothing (on), or its poll returned
 * work or it blocks (off): the link need not wake the thread while on.
 */
void u4v_progress_cover(struct u4v_ctx *ctx, bool on);
/* The application is polling: the thread may stay asleep. */
void u4v_progress_app_poll(struct u4v_ctx *ctx);
/* The application armed a CQ and may block on its event. */
void u4v_progress_app_blocks(struct u4v_ctx *ctx);
/* Receives were posted: frames held for a receive WQE may go on. */
void u4v_progress_recv_posted(struct u4v_ctx *ctx);

#endif
