/* SPDX-License-Identifier: MIT */
/*
 * u4v_ktest, safe mode: the doorbell system call refuses bogus batches and
 * they harm nothing; what a process maps of its rings it cannot write.
 */
#include <errno.h>
#include <sys/mman.h>

#include "ktest.h"

void test_bogus(struct u4l_dev *a, struct u4l_chan *ac,
		       struct u4l_dev *b, struct u4l_chan *bc,
		       struct u4l_dev *d)
{
	struct nhi_chan *c = (struct nhi_chan *)ac;
	struct u4l_rx_frame f;
	uint32_t pos = c->tx_prod & c->mask;
	struct u4v_shadow_desc good = { .slot = (uint16_t)pos, .len = 64,
					.sof = 1, .eof = 1 };
	int r, all = 1;

	/* slot out of range */
	c->shadow[pos] = good;
	c->shadow[pos].slot = (uint16_t)c->depth;
	r = u4l_nhi_raw_doorbell(a, c->remote, 0, true, c->tx_prod + 1, false,
				 0);
	report("bogus_slot_out_of_range", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* length > 4096, and 0 */
	c->shadow[pos] = good;
	c->shadow[pos].len = 4097;
	r = u4l_nhi_raw_doorbell(a, c->remote, 0, true, c->tx_prod + 1, false,
				 0);
	report("bogus_len_4097", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;
	c->shadow[pos].len = 0;
	r = u4l_nhi_raw_doorbell(a, c->remote, 0, true, c->tx_prod + 1, false,
				 0);
	report("bogus_len_0", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* one bad entry in a batch of good ones posts nothing */
	for (uint32_t i = 0; i < 8; i++) {
		c->shadow[(c->tx_prod + i) & c->mask] = good;
		c->shadow[(c->tx_prod + i) & c->mask].slot =
			(uint16_t)((c->tx_prod + i) & c->mask);
	}
	c->shadow[(c->tx_prod + 5) & c->mask].len = 60000;
	r = u4l_nhi_raw_doorbell(a, c->remote, 0, true, c->tx_prod + 8, false,
				 0);
	report("bogus_batch_all_or_nothing", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* more positions than the ring holds */
	r = u4l_nhi_raw_doorbell(a, c->remote, 0, true, c->tx_prod + c->depth,
				 false, 0);
	report("bogus_overfill", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* releasing RX positions nothing was delivered to */
	r = u4l_nhi_raw_doorbell(b, ((struct nhi_chan *)bc)->remote, 0, false, 0,
				 true, ((struct nhi_chan *)bc)->rx_cons + 5);
	report("bogus_rx_release", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* a channel of another context: d has none to a */
	r = u4l_nhi_raw_doorbell(d, a->ops->ctx_id(a), 0, true, 1, false, 0);
	report("bogus_other_context", r == -ENOENT, "ret=%d", r);
	all &= r == -ENOENT;
	r = u4l_nhi_raw_doorbell(a, 1000, 0, true, 1, false, 0);
	report("bogus_remote_range", r == -EINVAL, "ret=%d", r);
	all &= r == -EINVAL;

	/* nothing arrived, and the channel still works */
	r = b->ops->rx_peek(bc, &f);
	report("bogus_nothing_delivered", r == 0, "peek=%d", r);
	all &= r == 0;
	r = (int)transfer(a, ac, b, bc, 600);
	report("bogus_channel_still_works", r == 600, "frames=%d", r);
	all &= r == 600;
	report("bogus_doorbell", all, NULL);
}

void test_protections(struct u4l_chan *ac)
{
	struct nhi_chan *c = (struct nhi_chan *)ac;
	int r1 = mprotect(c->txd, c->len[U4V_MAP_TX_DESC], PROT_READ | PROT_WRITE);
	int r2 = mprotect((void *)c->rx_pool, c->len[U4V_MAP_RX_POOL],
			  PROT_READ | PROT_WRITE);
	void *p = mmap(NULL, c->len[U4V_MAP_RX_DESC], PROT_READ | PROT_WRITE,
		       MAP_SHARED, c->dev->cmd_fd, (off_t)1 << 40);

	report("ro_desc_ring", r1 != 0, "mprotect=%d", r1);
	report("ro_rx_pool", r2 != 0, "mprotect=%d", r2);
	report("no_bogus_offset", p == MAP_FAILED, NULL);
	if (p != MAP_FAILED)
		munmap(p, c->len[U4V_MAP_RX_DESC]);
}
