// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for what a process reads from the software cable's
 * shared segment. The victim (fuzz_victim.h: a context with RC, UC and UD
 * QPs) sits on end 0 of a fresh cable; the input plays its peer on end 1,
 * which can write anything into the segment between the victim's steps,
 * and sends frames of its choosing through the real rings. The sim code of
 * both ends runs against what the input wrote. No crash, no hang, no
 * sanitizer report may result.
 *
 * Input: a sequence of records; the first byte, sel:
 *   bit 5 set     a victim command (fuzz_victim.h)
 *   bit 5 clear   sel >> 6 says what:
 *     0 the peer sends a frame: u16 length and the bytes follow, the
 *       headers patched per fuzz_victim.h (bit 3: a control frame)
 *     1 the peer writes the segment: u64 pick and u64 value follow; pick
 *       chooses the spot (tests/common/u4vt_scribble.h, never the lock
 *       word), the value's first 1..8 bytes go there
 *     2 the peer does something, sel & 7 says what: drain its RX ring,
 *       accept channels, leave and come back, reap its TX ring, or the
 *       victim waits, checks the peer is alive, gets the channel again
 *     3 the victim makes progress
 *
 * Build and run: docs/TESTING.md ("Fuzzing").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <usb4verbs/engine.h>
#include <usb4verbs/link.h>
#include <usb4verbs/sim.h>

#include "fuzz_options.h"
#include "fuzz_victim.h"
#include "u4vt_scribble.h"

#define DEPTH 16u
#define CQ_DEPTH 256u /* made per input: small, and overflow is fuzzed too */
#define PEER_END 1u

enum rec { REC_FRAME, REC_WRITE, REC_PEER, REC_PROGRESS };
enum peer_op {
	PEER_DRAIN,
	PEER_ACCEPT,
	PEER_REJOIN,
	PEER_REAP,
	VICTIM_WAIT,
	VICTIM_ALIVE,
	VICTIM_CHAN_GET,
	PEER_NOP
};

struct cable {
	char name[64];
	struct sim_seg *seg; /* the peer's own mapping, for its writes */
	size_t len;
	struct sim_geom g;
	struct u4l_dev *peer;
	struct u4l_dev *victim_link; /* owned by c.v.ctx */
	struct u4l_chan *peer_chan;
	uint32_t peer_id;
	struct fuzz_victim v;
};

static const uint8_t *in_data;
static size_t in_len, in_pos;

static bool take(void *out, size_t n)
{
	if (in_len - in_pos < n) {
		in_pos = in_len;
		return false;
	}
	memcpy(out, in_data + in_pos, n);
	in_pos += n;
	return true;
}

static void peer_accept(struct cable *c)
{
	struct u4l_chan *ch;

	while ((ch = c->peer->ops->chan_accept(c->peer)))
		c->peer_chan = ch;
}

static int peer_open(struct cable *c)
{
	int ret = u4l_sim_open(c->name, PEER_END, &c->peer);

	if (ret)
		return ret;
	c->peer_id = c->peer->ops->ctx_id(c->peer);
	c->peer_chan = NULL;
	return 0;
}

static void cable_up(struct cable *c)
{
	struct u4l_sim_config cfg;
	struct u4l_dev *link;
	struct stat st;
	int fd;

	snprintf(c->name, sizeof(c->name), "/u4v-fuzz-sim-%d", (int)getpid());
	u4l_sim_destroy(c->name);
	u4l_sim_config_default(&cfg);
	cfg.rate_bps = 0;
	cfg.latency_ns = 0;
	cfg.ring_depth = DEPTH;
	cfg.max_channels = 1;
	if (u4l_sim_create(c->name, &cfg))
		abort();
	fd = shm_open(c->name, O_RDWR, 0);
	if (fd < 0 || fstat(fd, &st))
		abort();
	c->len = (size_t)st.st_size;
	c->seg = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (c->seg == MAP_FAILED)
		abort();
	sim_geom_init(&c->g, DEPTH, 1);
	/* the victim first: context 0, its peer 1 */
	if (u4l_sim_open(c->name, 0, &link) || peer_open(c))
		abort();
	c->victim_link = link;
	if (fuzz_victim_open(&c->v, link, c->peer_id, CQ_DEPTH))
		abort(); /* nothing was written yet: a bug */
	peer_accept(c);
}

static void cable_down(struct cable *c)
{
	fuzz_victim_close(&c->v);
	if (c->peer)
		c->peer->ops->close(c->peer);
	c->peer = NULL;
	munmap(c->seg, c->len);
	u4l_sim_destroy(c->name);
}

static void peer_frame(struct cable *c, uint8_t sel)
{
	uint8_t hdr[2], *buf;
	uint32_t len;

	if (!take(hdr, 2))
		return;
	len = ((uint32_t)hdr[0] | (uint32_t)hdr[1] << 8) % (U4L_FRAME_MAX + 1);
	if (len > in_len - in_pos)
		len = (uint32_t)(in_len - in_pos);
	buf = c->peer_chan ? c->peer->ops->tx_slot(c->peer_chan) : NULL;
	if (buf && len) {
		memcpy(buf, in_data + in_pos, len);
		fuzz_patch_frame(&c->v, buf, len, sel);
		c->peer->ops->tx_post(c->peer_chan, len,
				      sel & 8 ? U4L_PDF_CTRL : U4L_PDF_DATA);
		c->peer->ops->tx_doorbell(c->peer_chan);
	}
	in_pos += len;
}

static void peer_write(struct cable *c)
{
	uint64_t pick, val;
	uint32_t len;
	uint64_t off;

	if (!take(&pick, 8) || !take(&val, 8))
		return;
	off = u4vt_scribble_spot(c->seg, &c->g, pick, true, &len);
	if (off + len <= c->len)
		memcpy((uint8_t *)c->seg + off, &val, len);
}

static void peer_op(struct cable *c, enum peer_op op)
{
	const struct u4l_ops *ops = c->peer ? c->peer->ops : NULL;
	struct u4l_dev *vl = c->victim_link;
	struct u4l_rx_frame f;
	struct u4l_chan *ch;
	uint32_t n;

	/* while the peer is away its channel is NULL too */
	if (!ops && op == PEER_ACCEPT)
		return;
	switch (op) {
	case PEER_DRAIN:
		for (n = 0; c->peer_chan && n < 2 * DEPTH &&
			    ops->rx_peek(c->peer_chan, &f) == 1;
		     n++)
			ops->rx_release(c->peer_chan);
		break;
	case PEER_ACCEPT:
		peer_accept(c);
		break;
	case PEER_REJOIN:
		if (c->peer)
			ops->close(c->peer);
		c->peer = NULL;
		c->peer_chan = NULL;
		/*
		 * The peer may have garbled the header its open checks: then
		 * it stays away (its later steps are no-ops) until it tries
		 * again.
		 */
		if (!peer_open(c))
			peer_accept(c);
		break;
	case PEER_REAP:
		if (c->peer_chan)
			(void)ops->tx_space(c->peer_chan);
		break;
	default:
		/* the victim's link directly */
		if (op == VICTIM_WAIT)
			vl->ops->wait(vl, u4l_now_ns() + 1, 0);
		else if (op == VICTIM_ALIVE)
			(void)vl->ops->ctx_alive(vl, c->peer_id);
		else if (op == VICTIM_CHAN_GET)
			(void)vl->ops->chan_get(vl, c->peer_id, &ch);
		break;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_default_max_len(argc, argv, FUZZ_MAX_LEN);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cable c;
	int guard = 0;

	memset(&c, 0, sizeof(c));
	in_data = data;
	in_len = size;
	in_pos = 0;
	cable_up(&c);
	while (in_pos < in_len && guard++ < FUZZ_MAX_RECORDS) {
		uint8_t sel = in_data[in_pos++];

		if (sel & FUZZ_SEL_CMD) {
			fuzz_victim_command(&c.v, sel);
			continue;
		}
		switch ((enum rec)(sel >> 6)) {
		case REC_FRAME:
			peer_frame(&c, sel);
			break;
		case REC_WRITE:
			peer_write(&c);
			break;
		case REC_PEER:
			peer_op(&c, (enum peer_op)(sel & 7));
			break;
		case REC_PROGRESS:
			u4v_ctx_progress(c.v.ctx);
			break;
		}
	}
	u4v_ctx_progress(c.v.ctx);
	fuzz_victim_drain_cq(&c.v);
	cable_down(&c);
	in_data = NULL;
	in_len = in_pos = 0;
	return 0;
}
