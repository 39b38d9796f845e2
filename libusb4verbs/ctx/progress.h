/* SPDX-License-Identifier: MIT */
/*
 * The progress model. Whoever calls in (poll_cq, post_send, the progress
 * thread) moves the context forward; one at a time (try-lock).
 */
#ifndef U4V_PROGRESS_H
#define U4V_PROGRESS_H

#include "engine_int.h"

/* One progress pass unless another thread is running one (then false). */
bool u4v_progress_try(struct u4v_ctx *ctx);
/* Start the per-context progress thread (idempotent; first QP does it). */
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
