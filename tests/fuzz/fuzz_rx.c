// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the receive path: arbitrary bytes become frames that
 * a fake link backend hands to a context's RX path (rx_peek), addressed to
 * real RC, UC and UD QPs in RTS, plus u4w_decode on every frame directly.
 * No crash and no sanitizer report may result.
 *
 * Input: a sequence of the records of fuzz_victim.h, frames and commands.
 * A command also ends the frames rx_peek hands out; the progress that a
 * receive post runs (frames held for a receive) reads the records after it.
 *
 * Every input starts from the same state (fuzz_victim_reset), so a finding
 * replays from its input alone; nothing of an input is read once it has
 * returned.
 *
 * Build and run: docs/TESTING.md ("Fuzzing").
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <usb4verbs/engine.h>
#include <usb4verbs/link.h>

#include "fuzz_options.h"
#include "fuzz_victim.h"

#define REMOTE_CTX 1u

struct fake_chan {
	int unused;
};

struct fake_dev {
	struct u4l_dev dev;
	struct u4l_counters cnt;
	struct fake_chan chan;
};

/* The input being played. */
static const uint8_t *in_data;
static size_t in_len, in_pos;
static uint8_t frame[U4L_FRAME_MAX] __attribute__((aligned(64)));
static uint8_t txbuf[U4L_FRAME_MAX];
static struct fuzz_victim victim;

static uint32_t f_ctx_id(struct u4l_dev *d)
{
	(void)d;
	return 0;
}

static bool f_ctx_alive(struct u4l_dev *d, uint32_t r)
{
	(void)d;
	return r == REMOTE_CTX;
}

static int f_chan_get(struct u4l_dev *d, uint32_t r, struct u4l_chan **c)
{
	struct fake_dev *f = (struct fake_dev *)d;

	if (r != REMOTE_CTX)
		return -EHOSTUNREACH;
	*c = (struct u4l_chan *)&f->chan;
	return 0;
}

static struct u4l_chan *f_chan_accept(struct u4l_dev *d)
{
	(void)d;
	return NULL;
}

static uint32_t f_chan_remote(struct u4l_chan *c)
{
	(void)c;
	return REMOTE_CTX;
}

static void *f_tx_slot(struct u4l_chan *c)
{
	(void)c;
	return txbuf;
}

static void f_tx_post(struct u4l_chan *c, uint32_t len, enum u4l_pdf pdf)
{
	(void)c;
	(void)len;
	(void)pdf;
}

static void f_tx_doorbell(struct u4l_chan *c)
{
	(void)c;
}

static uint32_t f_tx_space(struct u4l_chan *c)
{
	(void)c;
	return 64;
}

static bool input_spent(void)
{
	return in_pos >= in_len;
}

/* The next record is a command (not a frame): the RX path stops there. */
static bool next_is_command(void)
{
	return !input_spent() && (in_data[in_pos] & FUZZ_SEL_CMD);
}

/* Next record of the input as a frame; 0 at a command or the end. */
static int f_rx_peek(struct u4l_chan *c, struct u4l_rx_frame *out)
{
	uint8_t sel;
	uint32_t len;

	(void)c;
	if (next_is_command())
		return 0;
	if (in_len - in_pos < FUZZ_REC_HDR) {
		in_pos = in_len; /* a truncated record ends the input */
		return 0;
	}
	sel = in_data[in_pos];
	len = ((uint32_t)in_data[in_pos + 1] | (uint32_t)in_data[in_pos + 2]
						   << 8) %
	      (U4L_FRAME_MAX + 1);
	in_pos += FUZZ_REC_HDR;
	if (len > in_len - in_pos)
		len = (uint32_t)(in_len - in_pos);
	memcpy(frame, in_data + in_pos, len);
	in_pos += len;
	if (!len) { /* the contract: 1..4096 */
		frame[0] = 0;
		len = 1;
	}
	fuzz_patch_frame(&victim, frame, len, sel);
	out->buf = frame;
	out->head = frame;
	out->len = len;
	out->flags = fuzz_frame_flags(sel);
	return 1;
}

static void f_rx_release(struct u4l_chan *c)
{
	(void)c;
}

static void f_wait(struct u4l_dev *d, uint64_t deadline, uint32_t flags)
{
	(void)d;
	(void)deadline;
	(void)flags;
}

static void f_kick(struct u4l_dev *d)
{
	(void)d;
}

static struct u4l_counters *f_counters(struct u4l_dev *d)
{
	return &((struct fake_dev *)d)->cnt;
}

static uint64_t f_wire_rate(struct u4l_dev *d)
{
	(void)d;
	return 0;
}

static void f_close(struct u4l_dev *d)
{
	free(d);
}

static bool f_chan_dead(struct u4l_chan *c)
{
	(void)c;
	return false;
}

static const struct u4l_ops fake_ops = {
    .name = "fuzz",
    .close = f_close,
    .ctx_id = f_ctx_id,
    .ctx_alive = f_ctx_alive,
    .chan_get = f_chan_get,
    .chan_accept = f_chan_accept,
    .chan_remote = f_chan_remote,
    .chan_dead = f_chan_dead,
    .tx_slot = f_tx_slot,
    .tx_post = f_tx_post,
    .tx_doorbell = f_tx_doorbell,
    .tx_space = f_tx_space,
    .rx_peek = f_rx_peek,
    .rx_release = f_rx_release,
    .wait = f_wait,
    .kick = f_kick,
    .counters = f_counters,
    .wire_rate = f_wire_rate,
};

static void setup(void)
{
	struct fake_dev *f = calloc(1, sizeof(*f));

	if (!f)
		abort();
	f->dev.ops = &fake_ops;
	if (fuzz_victim_open(&victim, &f->dev, REMOTE_CTX, 1 << 16))
		abort(); /* the fake link cannot refuse: a harness bug */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_default_max_len(argc, argv, FUZZ_MAX_LEN);
	setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int guard = 0;

	/* the input is in place before anything can make progress */
	in_data = data;
	in_len = size;
	in_pos = 0;
	if (fuzz_victim_reset(&victim))
		abort();
	while (!input_spent() && guard++ < FUZZ_MAX_RECORDS) {
		if (next_is_command())
			fuzz_victim_command(&victim, in_data[in_pos++]);
		else
			u4v_ctx_progress(victim.ctx);
	}
	u4v_ctx_progress(victim.ctx);
	fuzz_victim_drain_cq(&victim);
	/* libFuzzer frees data: nothing may reach it from here on */
	in_data = NULL;
	in_len = in_pos = 0;
	return 0;
}
