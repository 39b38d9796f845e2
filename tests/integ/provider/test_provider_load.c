// SPDX-License-Identifier: MIT
/*
 * Loads the built usb4verbs provider through the distro's unmodified
 * libibverbs and drives every op it sets through the public ibv_* API.
 *
 * The device comes from a fake sysfs tree (SYSFS_PATH) naming a software
 * cable this test creates; the provider is found via RDMAV_DRIVERS.
 * libibverbs also wants a character device under /dev/infiniband and asks
 * netlink first: this executable interposes open/stat (the fake uverbs node
 * becomes /dev/null) and socket (NETLINK_RDMA fails, as on hosts without
 * ib_core), so the test needs neither root nor the usb4v-sim shim.
 *
 * If the shim is built (libusb4v-sim-shim.so), the test re-executes itself
 * with it preloaded so that completion channels can be exercised; without
 * it, the provider's refusal of channels is checked instead.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <usb4verbs/engine.h>
#include <usb4verbs/sim.h>

#include "provider_harness.h"

static void test_device(void **state)
{
	assert_int_equal(be64toh(ibv_get_device_guid(dev)), NODE_GUID_HOST);
	assert_int_equal(ctx->device, dev);
	/* The provider's own async fd: open, close-on-exec. */
	int fl = fcntl(ctx->async_fd, F_GETFD);
	assert_true(fl >= 0);
	assert_true(fl & FD_CLOEXEC);
	assert_true(ctx->cmd_fd >= 0);
	assert_int_equal(ctx->num_comp_vectors, 1);
}

static void test_query_device(void **state)
{
	struct {
		struct ibv_device_attr a;
		uint8_t guard[sizeof(struct ibv_device_attr_ex) -
			      sizeof(struct ibv_device_attr) + 64];
	} small;
	struct ibv_device_attr_ex ex;
	size_t i;

	memset(&small, 0xa5, sizeof(small));
	assert_int_equal(ibv_query_device(ctx, &small.a), 0);
	for (i = 0; i < sizeof(small.guard); i++)
		assert_int_equal(small.guard[i], 0xa5);

	struct ibv_device_attr *a = &small.a;
	assert_int_equal(be64toh(a->node_guid), NODE_GUID_HOST);
	assert_int_equal(a->vendor_id, U4V_VENDOR_ID);
	assert_int_equal(a->vendor_part_id, U4V_VENDOR_PART_ID);
	assert_int_equal(a->max_qp, U4V_MAX_QP);
	assert_int_equal(a->max_qp_wr, U4V_MAX_QP_WR);
	assert_int_equal(a->max_sge, U4V_MAX_SGE);
	assert_int_equal(a->max_cq, U4V_MAX_CQ);
	assert_int_equal(a->max_cqe, U4V_MAX_CQE);
	assert_int_equal(a->max_mr, U4V_MAX_MR);
	assert_int_equal(a->max_mr_size, U4V_MAX_MR_SIZE);
	assert_int_equal(a->max_pd, U4V_MAX_PD);
	assert_int_equal(a->max_qp_rd_atom, U4V_MAX_QP_RD_ATOM);
	assert_int_equal(a->max_srq, U4V_MAX_SRQ);
	assert_int_equal(a->max_srq_wr, U4V_MAX_SRQ_WR);
	assert_int_equal(a->max_ah, U4V_MAX_AH);
	assert_int_equal(a->phys_port_cnt, 1);

	memset(&ex, 0x5a, sizeof(ex));
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &ex), 0);
	assert_int_equal(ex.orig_attr.max_qp_wr, U4V_MAX_QP_WR);
	assert_int_equal(ex.orig_attr.node_guid, small.a.node_guid);
	struct ibv_query_device_ex_input in = {.comp_mask = 1};
	assert_int_equal(ibv_query_device_ex(ctx, &in, &ex), EINVAL);
}

static void test_query_port_gid(void **state)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	union ibv_gid gid;
	char buf[64];
	uint16_t pkey;
	int i;

	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.active_mtu, IBV_MTU_4096);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.gid_tbl_len, 4);
	assert_int_equal(pa.pkey_tbl_len, 1);

	for (i = 0; i < 4; i++) {
		assert_int_equal(ibv_query_gid(ctx, 1, i, &gid), 0);
		snprintf(
		    buf, sizeof(buf), "%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x",
		    gid.raw[0] << 8 | gid.raw[1], gid.raw[2] << 8 | gid.raw[3],
		    gid.raw[4] << 8 | gid.raw[5], gid.raw[6] << 8 | gid.raw[7],
		    gid.raw[8] << 8 | gid.raw[9],
		    gid.raw[10] << 8 | gid.raw[11],
		    gid.raw[12] << 8 | gid.raw[13],
		    gid.raw[14] << 8 | gid.raw[15]);
		assert_string_equal(buf, gid_str[i]);
		assert_int_equal(ibv_query_gid_ex(ctx, 1, i, &ge, 0), 0);
		assert_int_equal(ge.gid_type, (i & 1) ? IBV_GID_TYPE_ROCE_V2
						      : IBV_GID_TYPE_ROCE_V1);
	}
	assert_int_equal(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	assert_int_equal(be16toh(pkey), 0xffff);
}

static void test_pd_mr_ah(void **state)
{
	static uint8_t buf[8192];
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};

	assert_non_null(pd);
	assert_ptr_equal(pd->context, ctx);
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_ptr_equal(mr->context, ctx);
	assert_ptr_equal(mr->pd, pd);
	assert_ptr_equal(mr->addr, buf);
	assert_int_equal(mr->length, sizeof(buf));
	/* reregistration keeps the keys; its rules are registration's */
	{
		uint32_t lkey = mr->lkey, rkey = mr->rkey;

		assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS,
					      NULL, NULL, 0,
					      IBV_ACCESS_LOCAL_WRITE),
				 0);
		assert_int_equal(mr->lkey, lkey);
		assert_int_equal(mr->rkey, rkey);
		errno = 0;
		assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS,
					      NULL, NULL, 0,
					      IBV_ACCESS_REMOTE_WRITE),
				 IBV_REREG_MR_ERR_CMD);
		assert_int_equal(errno, EINVAL);
	}

	assert_int_equal(ibv_query_gid(ctx, 1, 1, &aa.grh.dgid), 0);
	/* a RoCE port: no AH without a GRH, nor with a GID it does not have */
	aa.is_global = 0;
	errno = 0;
	assert_null(ibv_create_ah(pd, &aa));
	assert_int_equal(errno, EINVAL);
	aa.is_global = 1;
	aa.grh.sgid_index = 200;
	errno = 0;
	assert_null(ibv_create_ah(pd, &aa));
	assert_int_equal(errno, EINVAL);
	aa.grh.sgid_index = 1;
	ah = ibv_create_ah(pd, &aa);
	assert_non_null(ah);
	assert_ptr_equal(ah->context, ctx);
	assert_ptr_equal(ah->pd, pd);

	/* Objects in use keep their PD. */
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

static void test_cq_srq(void **state)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 100, (void *)0x1234, NULL, 0);
	struct ibv_cq_init_attr_ex cx = {
	    .cqe = 64,
	    .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
			IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
			IBV_WC_EX_WITH_DLID_PATH_BITS,
	};
	struct ibv_cq_ex *cqx;
	struct ibv_poll_cq_attr pa = {};
	struct ibv_pd *pd;
	struct ibv_srq_init_attr si = {.srq_context = (void *)0x99,
				       .attr = {.max_wr = 64, .max_sge = 2}};
	struct ibv_srq_attr sa;
	struct ibv_srq *srq;
	struct ibv_wc wc;

	assert_non_null(cq);
	assert_ptr_equal(cq->context, ctx);
	assert_ptr_equal(cq->cq_context, (void *)0x1234);
	assert_true(cq->cqe >= 100);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	assert_int_equal(ibv_resize_cq(cq, 500), 0);
	assert_true(cq->cqe >= 500);
	assert_int_equal(ibv_destroy_cq(cq), 0);

	cqx = ibv_create_cq_ex(ctx, &cx);
	assert_non_null(cqx);
	assert_ptr_equal(cqx->context, ctx);
	assert_int_equal(ibv_start_poll(cqx, &pa), ENOENT);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	/* timestamps are there; a VLAN or a flow tag are not */
	cx.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
		       IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	cqx = ibv_create_cq_ex(ctx, &cx);
	assert_non_null(cqx);
	assert_non_null(cqx->read_completion_ts);
	assert_non_null(cqx->read_completion_wallclock_ns);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	cx.wc_flags |= IBV_WC_EX_WITH_CVLAN;
	errno = 0;
	assert_null(ibv_create_cq_ex(ctx, &cx));
	assert_int_equal(errno, EOPNOTSUPP);

	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	srq = ibv_create_srq(pd, &si);
	assert_non_null(srq);
	assert_ptr_equal(srq->context, ctx);
	assert_ptr_equal(srq->pd, pd);
	assert_ptr_equal(srq->srq_context, (void *)0x99);
	assert_int_equal(ibv_query_srq(srq, &sa), 0);
	assert_true(sa.max_wr >= 64);
	sa.srq_limit = 8;
	assert_int_equal(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

static void test_qp_types(void **state)
{
	static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC,
						 IBV_QPT_UD};
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *scq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	size_t i;

	assert_non_null(pd);
	assert_non_null(scq);
	assert_non_null(rcq);
	for (i = 0; i < 3; i++) {
		struct ibv_qp_init_attr ia = {
		    .qp_context = (void *)(i + 1),
		    .send_cq = scq,
		    .recv_cq = rcq,
		    .qp_type = types[i],
		    .cap = {.max_send_wr = 16,
			    .max_recv_wr = 16,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		};
		struct ibv_qp_init_attr qi;
		struct ibv_qp_attr qa;
		struct ibv_qp *qp = ibv_create_qp(pd, &ia);

		assert_non_null(qp);
		assert_ptr_equal(qp->context, ctx);
		assert_ptr_equal(qp->qp_context, (void *)(i + 1));
		assert_ptr_equal(qp->pd, pd);
		assert_ptr_equal(qp->send_cq, scq);
		assert_ptr_equal(qp->recv_cq, rcq);
		assert_null(qp->srq);
		assert_int_equal(qp->qp_type, types[i]);
		assert_int_equal(qp->state, IBV_QPS_RESET);
		assert_true(qp->qp_num != 0);
		assert_true(ia.cap.max_send_wr >= 16);
		assert_null(ibv_qp_to_qp_ex(qp));
		to_init(qp, IBV_ACCESS_REMOTE_WRITE);
		assert_int_equal(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0);
		assert_int_equal(qa.qp_state, IBV_QPS_INIT);
		assert_ptr_equal(qi.send_cq, scq);
		assert_ptr_equal(qi.qp_context, (void *)(i + 1));
		assert_int_equal(qi.qp_type, types[i]);
		assert_int_equal(ibv_destroy_qp(qp), 0);
	}
	assert_int_equal(ibv_destroy_cq(scq), 0);
	assert_int_equal(ibv_destroy_cq(rcq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

/*
 * Two RC QPs of one context connected to each other (software loopback):
 * a (extended, ibv_wr_* API) completes on cq_a, b on the extended cq_b.
 */
struct loopback {
	uint8_t *sbuf, *rbuf;
	struct ibv_pd *pd;
	struct ibv_cq *cq_a;
	struct ibv_cq_ex *cq_b;
	struct ibv_mr *smr, *rmr;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *ax;
};

static void loopback_up(struct loopback *l)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_WRITE;
	struct ibv_cq_init_attr_ex cx = {
	    .cqe = 64,
	    .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
			IBV_WC_EX_WITH_IMM,
	};
	struct ibv_qp_init_attr_ex ia = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 32,
		    .max_recv_wr = 32,
		    .max_send_sge = 2,
		    .max_recv_sge = 2,
		    .max_inline_data = 64},
	    .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	    .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			      IBV_QP_EX_WITH_RDMA_READ,
	};

	l->sbuf = malloc(BUF_SZ);
	l->rbuf = malloc(BUF_SZ);
	l->pd = ibv_alloc_pd(ctx);
	l->cq_a = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	l->cq_b = ibv_create_cq_ex(ctx, &cx);
	assert_non_null(l->pd);
	assert_non_null(l->cq_a);
	assert_non_null(l->cq_b);
	l->smr = ibv_reg_mr(l->pd, l->sbuf, BUF_SZ, acc);
	l->rmr = ibv_reg_mr(l->pd, l->rbuf, BUF_SZ, acc);
	assert_non_null(l->smr);
	assert_non_null(l->rmr);
	ia.pd = l->pd;
	ia.send_cq = ia.recv_cq = l->cq_a;
	l->a = ibv_create_qp_ex(ctx, &ia);
	assert_non_null(l->a);
	l->ax = ibv_qp_to_qp_ex(l->a);
	assert_non_null(l->ax);
	ia.send_cq = ia.recv_cq = ibv_cq_ex_to_cq(l->cq_b);
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	l->b = ibv_create_qp_ex(ctx, &ia);
	assert_non_null(l->b);
	to_init(l->a, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	to_init(l->b, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	to_rts(l->a, l->b->qp_num);
	to_rts(l->b, l->a->qp_num);
}

static void loopback_down(struct loopback *l)
{
	assert_int_equal(ibv_destroy_qp(l->a), 0);
	assert_int_equal(ibv_destroy_qp(l->b), 0);
	assert_int_equal(ibv_dereg_mr(l->smr), 0);
	assert_int_equal(ibv_dereg_mr(l->rmr), 0);
	assert_int_equal(ibv_destroy_cq(l->cq_a), 0);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(l->cq_b)), 0);
	assert_int_equal(ibv_dealloc_pd(l->pd), 0);
	free(l->sbuf);
	free(l->rbuf);
}

/* A receive WR of wr_id into [addr, addr + len) of rmr, posted on b. */
static void loopback_recv(struct loopback *l, uint64_t wr_id, uint8_t *addr,
			  uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)addr, len, l->rmr->lkey};
	struct ibv_recv_wr rwr = {
	    .wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;

	assert_int_equal(ibv_post_recv(l->b, &rwr, &bad), 0);
}

/* A signalled WR of a's from all of sbuf (to rbuf for RDMA); its success. */
static struct ibv_wc loopback_send(struct loopback *l, enum ibv_wr_opcode op,
				   uint64_t wr_id)
{
	struct ibv_sge sge = {(uintptr_t)l->sbuf, BUF_SZ, l->smr->lkey};
	struct ibv_send_wr swr = {
	    .wr_id = wr_id,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = op,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {(uintptr_t)l->rbuf, l->rmr->rkey}};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	assert_int_equal(ibv_post_send(l->a, &swr, &bad), 0);
	poll_one(l->cq_a, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, wr_id);
	return wc;
}

/* SEND a -> b, checked by checksum; the receive completion via cq_ex. */
static void loopback_send_recv(struct loopback *l)
{
	struct ibv_poll_cq_attr pa = {};
	uint64_t end;
	int rc;

	u4vt_fill(l->sbuf, BUF_SZ, 7);
	memset(l->rbuf, 0, BUF_SZ);
	loopback_recv(l, 21, l->rbuf, BUF_SZ);
	loopback_send(l, IBV_WR_SEND, 11);
	end = u4vt_now_ms() + 5000;
	while ((rc = ibv_start_poll(l->cq_b, &pa)) == ENOENT &&
	       u4vt_now_ms() < end)
		;
	assert_int_equal(rc, 0);
	assert_int_equal(l->cq_b->status, IBV_WC_SUCCESS);
	assert_int_equal(l->cq_b->wr_id, 21);
	assert_int_equal(ibv_wc_read_opcode(l->cq_b), IBV_WC_RECV);
	assert_int_equal(ibv_wc_read_byte_len(l->cq_b), BUF_SZ);
	assert_int_equal(ibv_wc_read_qp_num(l->cq_b), l->b->qp_num);
	assert_int_equal(ibv_next_poll(l->cq_b), ENOENT);
	ibv_end_poll(l->cq_b);
	assert_int_equal(u4vt_sum(l->rbuf, BUF_SZ), u4vt_sum(l->sbuf, BUF_SZ));
}

/* RDMA WRITE a -> b's buffer, then a READ of it (changed) back. */
static void loopback_write_read(struct loopback *l)
{
	struct ibv_wc wc;

	u4vt_fill(l->sbuf, BUF_SZ, 99);
	wc = loopback_send(l, IBV_WR_RDMA_WRITE, 12);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(u4vt_sum(l->rbuf, BUF_SZ), u4vt_sum(l->sbuf, BUF_SZ));
	u4vt_fill(l->rbuf, BUF_SZ, 3);
	memset(l->sbuf, 0, BUF_SZ);
	wc = loopback_send(l, IBV_WR_RDMA_READ, 13);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc.byte_len, BUF_SZ);
	assert_int_equal(u4vt_sum(l->rbuf, BUF_SZ), u4vt_sum(l->sbuf, BUF_SZ));
}

/*
 * ibv_wr_* API: one inline SEND and one SGE SEND in a batch; a setter
 * before any opcode fails the batch; abort discards.
 */
static void loopback_wr_api(struct loopback *l)
{
	static const char msg[] = "usb4verbs inline";
	struct ibv_qp_ex *ax = l->ax;
	char tmp[sizeof(msg)];
	struct ibv_wc wc;

	memset(l->rbuf, 0, BUF_SZ);
	loopback_recv(l, 22, l->rbuf, 4096);
	loopback_recv(l, 23, l->rbuf + 4096, 4096);
	u4vt_fill(l->sbuf, 4096, 42);
	ibv_wr_start(ax);
	ax->wr_id = 14;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(ax);
	memcpy(tmp, msg, sizeof(msg));
	ibv_wr_set_inline_data(ax, tmp, sizeof(tmp));
	memset(tmp, 0, sizeof(tmp)); /* inline data was copied already */
	ax->wr_id = 15;
	ibv_wr_send(ax);
	ibv_wr_set_sge(ax, l->smr->lkey, (uintptr_t)l->sbuf, 4096);
	assert_int_equal(ibv_wr_complete(ax), 0);
	poll_one(l->cq_a, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 14);
	poll_one(l->cq_a, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 15);
	poll_one(ibv_cq_ex_to_cq(l->cq_b), &wc);
	assert_int_equal(wc.wr_id, 22);
	assert_int_equal(wc.byte_len, sizeof(msg));
	assert_string_equal((char *)l->rbuf, msg);
	poll_one(ibv_cq_ex_to_cq(l->cq_b), &wc);
	assert_int_equal(wc.wr_id, 23);
	assert_int_equal(u4vt_sum(l->rbuf + 4096, 4096),
			 u4vt_sum(l->sbuf, 4096));

	ibv_wr_start(ax);
	ibv_wr_set_sge(ax, l->smr->lkey, (uintptr_t)l->sbuf, 16);
	assert_int_equal(ibv_wr_complete(ax), EINVAL);
	ibv_wr_start(ax);
	ibv_wr_send(ax);
	ibv_wr_abort(ax);
}

static void test_rc_loopback(void **state)
{
	struct loopback l;

	loopback_up(&l);
	loopback_send_recv(&l);
	loopback_write_read(&l);
	loopback_wr_api(&l);
	loopback_down(&l);
}

/* A UD QP on pd completing on cq (srq: its receive queue), in RTS. */
static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			    struct ibv_srq *srq, uint32_t depth)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .srq = srq,
	    .qp_type = IBV_QPT_UD,
	    .cap = {.max_send_wr = depth,
		    .max_recv_wr = depth,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	assert_non_null(qp);
	assert_ptr_equal(qp->srq, srq);
	to_init(qp, 0);
	to_rts(qp, 0);
	return qp;
}

/* An AH on pd to the port's GID 1: this device's own address. */
static struct ibv_ah *ah_to_self(struct ibv_pd *pd)
{
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	struct ibv_ah *ah;

	assert_int_equal(ibv_query_gid(ctx, 1, 1, &aa.grh.dgid), 0);
	aa.grh.sgid_index = 1;
	ah = ibv_create_ah(pd, &aa);
	assert_non_null(ah);
	return ah;
}

/* A signalled UD SEND of [addr, addr + len) through ah to qpn. */
static void ud_send(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len,
		    struct ibv_mr *mr, struct ibv_ah *ah, uint32_t qpn)
{
	struct ibv_sge sge = {(uintptr_t)addr, len, mr->lkey};
	struct ibv_send_wr swr = {.wr_id = wr_id,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.ud = {ah, qpn, 0x11111111}};
	struct ibv_send_wr *bad;

	assert_int_equal(ibv_post_send(qp, &swr, &bad), 0);
}

/* A receive WR of wr_id into [addr, addr + len) on srq. */
static void srq_recv(struct ibv_srq *srq, uint64_t wr_id, void *addr,
		     uint32_t len, struct ibv_mr *mr)
{
	struct ibv_sge sge = {(uintptr_t)addr, len, mr->lkey};
	struct ibv_recv_wr rwr = {
	    .wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;

	assert_int_equal(ibv_post_srq_recv(srq, &rwr, &bad), 0);
}

/*
 * Async events: arm the SRQ limit above what is left, consume one WQE;
 * the engine's event arrives on the provider's async_fd and libibverbs
 * turns its element into our ibv_srq.
 */
static void srq_limit_event(struct ibv_srq *srq, struct ibv_qp *a,
			    struct ibv_qp *b, struct ibv_cq *cq,
			    struct ibv_ah *ah, uint8_t *buf, struct ibv_mr *mr)
{
	struct ibv_srq_attr sa = {.srq_limit = 2};
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 2; i++)
		srq_recv(srq, 40 + i, buf + 4096, 4096, mr);
	assert_int_equal(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	ud_send(a, 33, buf, 16, mr, ah, b->qp_num);
	for (i = 0; i < 2; i++) {
		poll_one(cq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(ibv_get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.element.srq, srq);
	ibv_ack_async_event(&ev);
	assert_int_equal(srq->events_completed, 1);
}

/* UD loopback through an SRQ: AH, GRH space, src_qp; SRQ limit event. */
static void test_ud_srq(void **state)
{
	static uint8_t buf[2 * 4096];
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq_init_attr si = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	struct ibv_qp *a, *b;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int i;

	assert_non_null(pd);
	assert_non_null(cq);
	srq = ibv_create_srq(pd, &si);
	assert_non_null(srq);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	a = ud_qp(pd, cq, NULL, 8);
	b = ud_qp(pd, cq, srq, 8);
	srq_recv(srq, 31, buf + 4096, 4096, mr);
	ah = ah_to_self(pd);
	for (i = 0; i < 256; i++)
		buf[i] = (uint8_t)i;
	ud_send(a, 32, buf, 256, mr, ah, b->qp_num);
	for (i = 0; i < 2; i++) {
		poll_one(cq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (wc.wr_id == 31) {
			assert_int_equal(wc.byte_len, 256 + 40);
			assert_int_equal(wc.src_qp, a->qp_num);
			assert_int_equal(u4vt_sum(buf + 4096 + 40, 256),
					 u4vt_sum(buf, 256));
		} else {
			assert_int_equal(wc.wr_id, 32);
		}
	}
	srq_limit_event(srq, a, b, cq, ah, buf, mr);
	assert_int_equal(ibv_destroy_qp(a), 0);
	assert_int_equal(ibv_destroy_qp(b), 0);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

/* Completion channels: full path under the shim, refusal without it. */
static void test_comp_channel(void **state)
{
	int (*wfd_of)(int) =
	    (int (*)(int))dlsym(RTLD_DEFAULT, "usb4v_shim_comp_channel_wfd");
	static uint8_t buf[4096 + 64];
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	void *ev_ctx;

	if (!wfd_of) {
		/* A channel struct as libibverbs would make it, minus kernel.
		 */
		struct ibv_comp_channel fake = {.context = ctx, .fd = -1};

		errno = 0;
		assert_null(ibv_create_cq(ctx, 16, NULL, &fake, 0));
		assert_int_equal(errno, EOPNOTSUPP);
		assert_int_equal(fake.refcnt, 0);
		return;
	}
	ch = ibv_create_comp_channel(ctx);
	assert_non_null(ch);
	if (wfd_of(ch->fd) < 0) {
		free(ch); /* the shim did not answer: fd is not ours to close */
		skip();
	}
	cq = ibv_create_cq(ctx, 16, (void *)0x77, ch, 0);
	assert_non_null(cq);
	assert_int_equal(ch->refcnt, 1);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);

	/* A loopback UD send to ourselves produces the completion. */
	pd = ibv_alloc_pd(ctx);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	qp = ud_qp(pd, cq, NULL, 4);
	ah = ah_to_self(pd);
	struct ibv_sge rsge = {(uintptr_t)buf + 64, 4096, mr->lkey};
	struct ibv_recv_wr rwr = {.sg_list = &rsge, .num_sge = 1}, *bad_r;
	assert_int_equal(ibv_post_recv(qp, &rwr, &bad_r), 0);
	ud_send(qp, 0, buf, 64, mr, ah, qp->qp_num);
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, cq);
	assert_ptr_equal(ev_ctx, (void *)0x77);
	ibv_ack_cq_events(cq, 1);
	poll_one(cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(cq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ch->refcnt, 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
}

/* Open and close a context with objects: no fd stays behind. */
static void test_no_fd_leak(void **state)
{
	int before = count_fds();
	struct ibv_context *c = ibv_open_device(dev);
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	assert_non_null(c);
	pd = ibv_alloc_pd(c);
	cq = ibv_create_cq(c, 8, NULL, NULL, 0);
	assert_non_null(pd);
	assert_non_null(cq);
	assert_true(count_fds() > before);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(c), 0);
	assert_int_equal(count_fds(), before);
}

/* Without a usb4v_sim file the device is a kernel one: refused, ENODEV. */
/*
 * A device without a usb4v_sim file is a kernel (usb4verbs.ko) device.
 * Here its node is /dev/null, not the shim's uverbs device: opening it must
 * fail cleanly with an error, and leak nothing.
 */
static void test_kernel_device_refused(void **state)
{
	char path[512];
	struct ibv_context *c;

	snprintf(path, sizeof(path),
		 "%s/class/infiniband/" IBDEV_NAME "/usb4v_sim", tmpdir);
	char moved[520];
	snprintf(moved, sizeof(moved), "%s.off", path);
	assert_int_equal(rename(path, moved), 0);
	int before = count_fds();
	errno = 0;
	c = ibv_open_device(dev);
	int err = errno;
	assert_int_equal(rename(moved, path), 0);
	assert_null(c);
	assert_true(err != 0);
	assert_int_equal(count_fds(), before);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_device, open_ctx, close_ctx),
	    cmocka_unit_test_setup_teardown(test_query_device, open_ctx,
					    close_ctx),
	    cmocka_unit_test_setup_teardown(test_query_port_gid, open_ctx,
					    close_ctx),
	    cmocka_unit_test_setup_teardown(test_pd_mr_ah, open_ctx, close_ctx),
	    cmocka_unit_test_setup_teardown(test_cq_srq, open_ctx, close_ctx),
	    cmocka_unit_test_setup_teardown(test_qp_types, open_ctx, close_ctx),
	    cmocka_unit_test_setup_teardown(test_rc_loopback, open_ctx,
					    close_ctx),
	    cmocka_unit_test_setup_teardown(test_ud_srq, open_ctx, close_ctx),
	    cmocka_unit_test_setup_teardown(test_comp_channel, open_ctx,
					    close_ctx),
	    cmocka_unit_test(test_no_fd_leak),
	    cmocka_unit_test(test_kernel_device_refused),
	};

	maybe_reexec_with_shim(argv);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
