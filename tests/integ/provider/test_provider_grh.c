// SPDX-License-Identifier: MIT
/*
 * The GRH area of UD receives through the distribution's libibverbs: what
 * RoCE v2 hardware and Soft-RoCE put there (the IPv4 header with a valid
 * checksum in bytes 20-39 between IPv4-mapped RoCE v2 GIDs; else the IPv6
 * header, next header UDP for RoCE v2 and 0x1B for RoCE v1, in bytes
 * 0-39), so that ibv_init_ah_from_wc(3) and ibv_create_ah_from_wc(3) find
 * the sender with their defaults: the reply AH they make reaches it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "provider_harness.h"

#define GRH 40
#define MSG 200
#define HOP 33
#define TCLASS 0x28
#define FLOW 0x12345

struct ud {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *a, *b;
	uint8_t buf[4 * 4096];
};

static struct ibv_qp *ud_qp(struct ud *u)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = u->cq,
	    .recv_cq = u->cq,
	    .qp_type = IBV_QPT_UD,
	    .cap = {.max_send_wr = 8,
		    .max_recv_wr = 8,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	};
	struct ibv_qp *qp = ibv_create_qp(u->pd, &ia);

	assert_non_null(qp);
	to_init(qp, 0);
	to_rts(qp, 0);
	return qp;
}

static void ud_up(struct ud *u)
{
	memset(u, 0, sizeof(*u));
	u->pd = ibv_alloc_pd(ctx);
	u->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	assert_non_null(u->pd);
	assert_non_null(u->cq);
	u->mr = ibv_reg_mr(u->pd, u->buf, sizeof(u->buf),
			   IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(u->mr);
	u->a = ud_qp(u);
	u->b = ud_qp(u);
}

static void ud_down(struct ud *u)
{
	assert_int_equal(ibv_destroy_qp(u->a), 0);
	assert_int_equal(ibv_destroy_qp(u->b), 0);
	assert_int_equal(ibv_dereg_mr(u->mr), 0);
	assert_int_equal(ibv_destroy_cq(u->cq), 0);
	assert_int_equal(ibv_dealloc_pd(u->pd), 0);
}

/*
 * Send MSG bytes from src to dst's QP through ah; returns dst's receive
 * completion, its GRH area at rx.
 */
static struct ibv_wc send_one(struct ud *u, struct ibv_qp *src,
			      struct ibv_qp *dst, struct ibv_ah *ah,
			      uint8_t *rx, unsigned seed)
{
	uint8_t *tx = u->buf + 3 * 4096;
	struct ibv_sge ssge = {(uintptr_t)tx, MSG, u->mr->lkey};
	struct ibv_sge rsge = {(uintptr_t)rx, GRH + MSG, u->mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rsge, .num_sge = 1};
	struct ibv_send_wr swr = {.wr_id = 2,
				  .sg_list = &ssge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.ud = {ah, dst->qp_num, 0x11111111}};
	struct ibv_recv_wr *bad_r;
	struct ibv_send_wr *bad_s;
	struct ibv_wc wc, rwc = {0};
	int i;

	memset(rx, 0x5a, GRH + MSG);
	u4vt_fill(tx, MSG, seed);
	assert_int_equal(ibv_post_recv(dst, &rwr, &bad_r), 0);
	assert_int_equal(ibv_post_send(src, &swr, &bad_s), 0);
	for (i = 0; i < 2; i++) {
		poll_one(u->cq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (wc.wr_id == 1)
			rwc = wc;
	}
	assert_int_equal(rwc.wr_id, 1);
	assert_int_equal(rwc.byte_len, GRH + MSG);
	assert_int_equal(rwc.src_qp, src->qp_num);
	assert_true(rwc.wc_flags & IBV_WC_GRH);
	assert_int_equal(u4vt_sum(rx + GRH, MSG), u4vt_sum(tx, MSG));
	return rwc;
}

static uint16_t be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The IPv4 header of a RoCE v2 datagram between two IPv4-mapped GIDs. */
static void check_ipv4(const uint8_t *grh, const union ibv_gid *gid)
{
	static const uint8_t zero[20];
	const uint8_t *ip = grh + 20;
	uint32_t sum = 0;
	int i;

	assert_memory_equal(grh, zero, 20);
	assert_int_equal(ip[0], 0x45); /* version 4, 20 bytes */
	assert_int_equal(ip[1], TCLASS);
	/* IP + UDP + BTH + DETH + payload + ICRC of the RoCE packet */
	assert_int_equal(be16_at(ip + 2), 20 + 8 + 12 + 8 + MSG + 4);
	assert_int_equal(ip[8], HOP);
	assert_int_equal(ip[9], 17); /* UDP */
	assert_memory_equal(ip + 12, gid->raw + 12, 4); /* saddr */
	assert_memory_equal(ip + 16, gid->raw + 12, 4); /* daddr */
	for (i = 0; i < 20; i += 2)
		sum += be16_at(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	assert_int_equal(sum, 0xffff); /* the checksum holds */
}

/* The IPv6 header / IB GRH: version 6, class, flow, lengths, GIDs. */
static void check_ipv6(const uint8_t *grh, const union ibv_gid *gid,
		       bool roce_v2)
{
	uint32_t vtf = (uint32_t)grh[0] << 24 | grh[1] << 16 | grh[2] << 8 |
		       grh[3];

	assert_int_equal(vtf >> 28, 6);
	assert_int_equal((vtf >> 20) & 0xff, TCLASS);
	assert_int_equal(vtf & 0xfffff, FLOW);
	assert_int_equal(be16_at(grh + 4),
			 (roce_v2 ? 8 : 0) + 12 + 8 + MSG + 4);
	assert_int_equal(grh[6], roce_v2 ? 17 : 0x1b);
	assert_int_equal(grh[7], HOP);
	assert_memory_equal(grh + 8, gid->raw, 16);
	assert_memory_equal(grh + 24, gid->raw, 16);
}

/*
 * For each GID type of the port: the GRH area holds the right header, and
 * the AH ibv_create_ah_from_wc makes from it reaches the sender.
 */
static void test_grh_round_trip(void **state)
{
	static const int gids[] = {3, 1, 0, 2};
	struct ud u;
	size_t g;

	(void)state;
	ud_up(&u);
	for (g = 0; g < sizeof(gids) / sizeof(gids[0]); g++) {
		int gi = gids[g];
		struct ibv_gid_entry entry;
		struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
		struct ibv_ah_attr back;
		uint8_t *rx = u.buf, *rx2 = u.buf + 4096;
		struct ibv_ah *ah, *reply;
		union ibv_gid gid;
		struct ibv_wc wc;
		bool v2, v4;

		assert_int_equal(ibv_query_gid_ex(ctx, 1, gi, &entry, 0), 0);
		gid = entry.gid;
		v2 = entry.gid_type == IBV_GID_TYPE_ROCE_V2;
		aa.grh.dgid = gid;
		aa.grh.sgid_index = (uint8_t)gi;
		aa.grh.hop_limit = HOP;
		aa.grh.traffic_class = TCLASS;
		aa.grh.flow_label = FLOW;
		ah = ibv_create_ah(u.pd, &aa);
		assert_non_null(ah);
		wc = send_one(&u, u.a, u.b, ah, rx, (unsigned)gi);
		v4 = v2 && gid.raw[10] == 0xff;
		if (v4)
			check_ipv4(rx, &gid);
		else
			check_ipv6(rx, &gid, v2);
		/*
		 * sl names that header as RoCE hardware (mlx5) does: UCX's
		 * ud_verbs takes the destination address from it accordingly
		 * (bits 2:0 GRH 0, IPv6 1, IPv4 2; bit 3 UDP)
		 */
		assert_int_equal(wc.sl, v4 ? 0xa : v2 ? 0x9 : 0x0);
		/* what the library makes of it: the sender's address */
		assert_int_equal(ibv_init_ah_from_wc(ctx, 1, &wc,
						     (struct ibv_grh *)rx,
						     &back),
				 0);
		assert_true(back.is_global);
		assert_memory_equal(back.grh.dgid.raw, gid.raw, 16);
		/* the same GID exists as v1 and v2: the header picks its type */
		assert_int_equal(back.grh.sgid_index, gi);
		assert_int_equal(back.grh.hop_limit, HOP);
		assert_int_equal(back.grh.traffic_class, TCLASS);
		assert_int_equal(back.grh.flow_label, v4 ? 0 : FLOW);
		reply = ibv_create_ah_from_wc(u.pd, &wc, (struct ibv_grh *)rx,
					      1);
		assert_non_null(reply);
		/* the reply, to the QP the completion names, arrives */
		assert_int_equal(wc.src_qp, u.a->qp_num);
		send_one(&u, u.b, u.a, reply, rx2, (unsigned)gi + 7);
		assert_int_equal(ibv_destroy_ah(reply), 0);
		assert_int_equal(ibv_destroy_ah(ah), 0);
	}
	ud_down(&u);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_grh_round_trip, open_ctx,
					    close_ctx),
	};

	(void)argc;
	maybe_reexec_with_shim(argv);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
