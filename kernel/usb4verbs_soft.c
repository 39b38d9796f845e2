// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: the software DMA engine.
 *
 * It stands in for the NHI on the soft cable and on loopback channels:
 * frames posted on one half's TX ring are copied into the other half's
 * posted RX buffers, in ring order, and both descriptors are completed the
 * way the hardware completes them. With no RX descriptor posted the TX
 * ring stalls (end-to-end flow control) until the receiver gives buffers
 * back; a dead receiver completes TX frames without delivering them.
 *
 * Safe-mode channels move on the doorbell system call. Direct-mode
 * channels have no system call to hook: like the NHI, which notices a
 * producer register write by itself, one kernel thread polls
 * the doorbell pages of direct contexts (every 10-20 us while frames flow,
 * every 0.5-1 ms after 0.2 s without work, not at all without a direct
 * context).
 */
#include <linux/string.h>
#include <linux/kthread.h>
#include <linux/delay.h>
#include <linux/sched.h>

#include "usb4verbs.h"

/* Under chan->lock. */
void u4v_soft_pump(struct u4v_half *tx, u32 *delivered, u32 *completed)
{
	struct u4v_half *rx = tx->peer;
	u32 tmask = tx->depth - 1;
	u32 rmask = rx->depth - 1;

	*delivered = 0;
	*completed = 0;
	while (tx->tx_done != tx->tx_prod) {
		u32 tpos = tx->tx_done & tmask;
		struct u4v_tx_meta *m = &tx->tx_meta[tpos];
		u32 done_flags = U4V_DESC_POSTED | U4V_DESC_COMPLETED;

		if (!rx->dead) {
			u32 rpos = rx->rx_done & rmask;

			/* posted RX descriptors are [rx_rel, rx_rel + depth - 1) */
			if (rx->rx_done - rx->rx_rel >= rx->depth - 1)
				break;
			memcpy(rx->rx_pool + (size_t)rpos * U4V_FRAME_SIZE,
			       tx->tx_pool + m->off,
			       m->len);
			/* payload before the COMPLETED bit, as DMA would */
			smp_store_release(&rx->rx_desc[rpos].len_flags,
					  u4v_desc_pack(m->len, m->sof, m->eof,
							done_flags));
			rx->rx_done++;
			(*delivered)++;
		}
		smp_store_release(&tx->tx_desc[tpos].len_flags,
				  u4v_desc_pack(m->len, m->sof, m->eof,
						done_flags));
		tx->tx_done++;
		(*completed)++;
	}
}

/* The soft cable's engine: one thread for both ends. */
static struct task_struct *u4v_engine;
static struct u4v_cable *u4v_engine_ends[2];
static DECLARE_WAIT_QUEUE_HEAD(u4v_engine_wq);

/* One pass over every direct context's channels of one end. */
static bool u4v_soft_scan(struct u4v_cable *cable)
{
	bool busy = false;
	u32 i, j;

	mutex_lock(&cable->lock);
	for (i = 0; i < U4V_MAX_CTX; i++) {
		struct u4v_ucontext *c = cable->ctx[i];

		if (!c || !c->direct)
			continue;
		for (j = 0; j < U4V_MAX_CTX; j++)
			if (c->halves[j] && u4v_direct_poll(c->halves[j]))
				busy = true;
	}
	mutex_unlock(&cable->lock);
	return busy;
}

static bool u4v_soft_direct_users(void)
{
	return READ_ONCE(u4v_engine_ends[0]->nr_direct) ||
	       READ_ONCE(u4v_engine_ends[1]->nr_direct);
}

static int u4v_soft_engine(void *data)
{
	unsigned int idle = 0;
	bool busy;

	while (!kthread_should_stop()) {
		if (!u4v_soft_direct_users()) {
			wait_event_interruptible(u4v_engine_wq,
						 u4v_soft_direct_users() ||
						 kthread_should_stop());
			continue;
		}
		busy = u4v_soft_scan(u4v_engine_ends[0]);
		busy |= u4v_soft_scan(u4v_engine_ends[1]);
		idle = busy ? 0 : idle + 1;
		if (idle < 10000)
			usleep_range(10, 20);
		else
			usleep_range(500, 1000);
	}
	return 0;
}

int u4v_soft_engine_start(struct u4v_cable **ends)
{
	struct task_struct *t;

	u4v_engine_ends[0] = ends[0];
	u4v_engine_ends[1] = ends[1];
	t = kthread_run(u4v_soft_engine, NULL, "u4v-dma");
	if (IS_ERR(t))
		return PTR_ERR(t);
	u4v_engine = t;
	return 0;
}

void u4v_soft_engine_wake(void)
{
	wake_up(&u4v_engine_wq);
}

void u4v_soft_engine_stop(void)
{
	if (u4v_engine)
		kthread_stop(u4v_engine);
	u4v_engine = NULL;
}
