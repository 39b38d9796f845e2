// SPDX-License-Identifier: MIT
/* Helpers shared by the engine's unit and integration tests. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"

const char *u4vt_shm_name(const char *tag)
{
	static char names[8][128];
	static int next;
	const char *prefix = getenv("U4V_TEST_SHM_PREFIX");
	char *n = names[next++ % 8];

	snprintf(n, 128, "%s-%d-%s", prefix ? prefix : "/u4vt", (int)getpid(),
		 tag);
	return n;
}

void u4vt_cable_create(const char *shm, const struct u4l_sim_config *cfg)
{
	struct u4l_sim_config def;

	if (!cfg) {
		u4vt_cable_config(&def);
		cfg = &def;
	}
	u4l_sim_destroy(shm);
	assert_int_equal(u4l_sim_create(shm, cfg), 0);
}

void u4vt_end_open(struct u4vt_end *e, const char *shm, uint32_t end)
{
	u4vt_end_open_async(e, shm, end, -1);
}

void u4vt_end_open_async(struct u4vt_end *e, const char *shm, uint32_t end,
			 int async_fd)
{
	u4vt_end_open_ex(e, shm, end, async_fd, 0);
}

void u4vt_end_open_ex(struct u4vt_end *e, const char *shm, uint32_t end,
		      int async_fd, int no_progress_thread)
{
	struct u4v_ctx_attr attr = { 0 };
	struct u4l_dev *link;

	memset(e, 0, sizeof(*e));
	assert_int_equal(u4l_sim_open(shm, end, &link), 0);
	attr.link = link;
	attr.node_guid = 0x1000 + end;
	attr.async_event_fd = async_fd;
	attr.no_progress_thread = no_progress_thread;
	assert_int_equal(u4v_ctx_open(&attr, &e->ctx), 0);
	assert_int_equal(u4v_alloc_pd(e->ctx, &e->pd), 0);
	assert_int_equal(u4v_create_cq(e->ctx, 4096, &e->cq), 0);
}

void u4vt_end_close(struct u4vt_end *e)
{
	if (e->cq)
		assert_int_equal(u4v_destroy_cq(e->cq), 0);
	if (e->pd)
		assert_int_equal(u4v_dealloc_pd(e->pd), 0);
	if (e->ctx)
		u4v_ctx_close(e->ctx);
	memset(e, 0, sizeof(*e));
}

void u4vt_qp_opts_default(struct u4vt_qp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_send_wr = 256;
	o->max_recv_wr = 256;
	o->max_sge = 4;
	o->max_inline = 256;
	o->timeout = 14; /* 67 ms, as perftest uses */
	o->retry_cnt = 7;
	o->rnr_retry = 7;
	o->min_rnr_timer = 1; /* 10 us */
	o->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
}

struct u4v_qp *u4vt_qp_create(struct u4vt_end *e, enum ibv_qp_type type,
			      const struct u4vt_qp_opts *o)
{
	struct u4v_qp_init init = { 0 };
	struct u4v_qp *qp;

	init.qp_type = type;
	init.send_cq = e->cq;
	init.recv_cq = e->cq;
	init.srq = o->srq;
	init.cap.max_send_wr = o->max_send_wr;
	init.cap.max_recv_wr = o->srq ? 0 : o->max_recv_wr;
	init.cap.max_send_sge = o->max_sge;
	init.cap.max_recv_sge = o->srq ? 0 : o->max_sge;
	init.cap.max_inline_data = o->max_inline;
	init.sq_sig_all = o->sq_sig_all;
	assert_int_equal(u4v_create_qp(e->pd, &init, &qp), 0);
	return qp;
}

void u4vt_conn_from_opts(struct u4vt_conn *c, uint32_t remote_qpn,
			 const struct u4vt_qp_opts *o)
{
	u4vt_conn_default(c, remote_qpn);
	if (o->psn)
		c->psn = o->psn;
	c->access = o->access;
	c->timeout = o->timeout;
	c->retry_cnt = o->retry_cnt;
	c->rnr_retry = o->rnr_retry;
	c->min_rnr_timer = o->min_rnr_timer;
}

void u4vt_qp_connect(struct u4v_qp *qp, enum ibv_qp_type type,
		     uint32_t remote_qpn, const struct u4vt_qp_opts *o)
{
	struct u4vt_conn c;

	u4vt_conn_from_opts(&c, remote_qpn, o);
	assert_int_equal(u4vt_eng_connect(qp, type, &c), 0);
}

void u4vt_qp_pair(struct u4vt_end *a, struct u4vt_end *b, enum ibv_qp_type type,
		  const struct u4vt_qp_opts *o, struct u4v_qp **qa,
		  struct u4v_qp **qb)
{
	*qa = u4vt_qp_create(a, type, o);
	*qb = u4vt_qp_create(b, type, o);
	u4vt_qp_connect(*qa, type, u4v_qp_num(*qb), o);
	u4vt_qp_connect(*qb, type, u4v_qp_num(*qa), o);
}

/* A copy of e whose CQ is a new one of cqe entries, also left in *cq. */
static struct u4vt_end end_on_own_cq(const struct u4vt_end *e, int cqe,
				     struct u4v_cq **cq)
{
	struct u4vt_end own = *e;

	assert_int_equal(u4v_create_cq(e->ctx, cqe, cq), 0);
	own.cq = *cq;
	return own;
}

void u4vt_qp_pairs(struct u4vt_end *a, struct u4vt_end *b, int n, int cqe,
		   const struct u4vt_qp_opts *o, struct u4v_qp **qa,
		   struct u4v_qp **qb, struct u4v_cq **cqa, struct u4v_cq **cqb)
{
	int q;

	for (q = 0; q < n; q++) {
		struct u4vt_end ea = end_on_own_cq(a, cqe, &cqa[q]);
		struct u4vt_end eb = cqb ? end_on_own_cq(b, cqe, &cqb[q]) : *b;

		qa[q] = u4vt_qp_create(&ea, IBV_QPT_RC, o);
		qb[q] = u4vt_qp_create(&eb, IBV_QPT_RC, o);
	}
	for (q = 0; q < n; q++) {
		u4vt_qp_connect(qa[q], IBV_QPT_RC, u4v_qp_num(qb[q]), o);
		u4vt_qp_connect(qb[q], IBV_QPT_RC, u4v_qp_num(qa[q]), o);
	}
}

void u4vt_qp_pairs_down(int n, struct u4v_qp **qa, struct u4v_qp **qb,
			struct u4v_cq **cqa, struct u4v_cq **cqb)
{
	int q;

	for (q = 0; q < n; q++) {
		assert_int_equal(u4v_destroy_qp(qa[q]), 0);
		assert_int_equal(u4v_destroy_qp(qb[q]), 0);
		assert_int_equal(u4v_destroy_cq(cqa[q]), 0);
		if (cqb)
			assert_int_equal(u4v_destroy_cq(cqb[q]), 0);
	}
}

static void pair_open(struct u4vt_pair *p, const char *tag,
		      const struct u4l_sim_config *cfg, int async_end,
		      int b_no_thread)
{
	memset(p, 0, sizeof(*p));
	p->evfd[0] = p->evfd[1] = -1;
	p->shm = u4vt_shm_name(tag);
	if (async_end >= 0)
		assert_int_equal(pipe2(p->evfd, O_NONBLOCK | O_CLOEXEC), 0);
	u4vt_cable_create(p->shm, cfg);
	u4vt_end_open_ex(&p->a, p->shm, 0, async_end == 0 ? p->evfd[1] : -1,
			 0);
	u4vt_end_open_ex(&p->b, p->shm, 1, async_end == 1 ? p->evfd[1] : -1,
			 b_no_thread);
	u4vt_qp_opts_default(&p->o);
}

void u4vt_pair_ends(struct u4vt_pair *p, const char *tag,
		    const struct u4l_sim_config *cfg, int async_end)
{
	pair_open(p, tag, cfg, async_end, 0);
}

void u4vt_pair_up(struct u4vt_pair *p, const char *tag, enum ibv_qp_type type,
		  const struct u4l_sim_config *cfg,
		  const struct u4vt_qp_opts *o, int b_no_thread)
{
	pair_open(p, tag, cfg, -1, b_no_thread);
	p->type = type;
	if (o)
		p->o = *o;
	u4vt_qp_pair(&p->a, &p->b, type, &p->o, &p->qa, &p->qb);
}

void u4vt_area_pair_up(struct u4vt_area_pair *p, const char *tag,
		       enum ibv_qp_type type, const struct u4vt_qp_opts *o,
		       size_t len)
{
	memset(p, 0, sizeof(*p));
	u4vt_pair_up(&p->q, tag, type, NULL, o, 0);
	p->len = len;
	p->src = u4vt_map(len);
	p->dst = u4vt_map(len);
	p->ms = u4vt_reg(&p->q.a, p->src, len, U4VT_ACCESS_ALL);
	p->md = u4vt_reg(&p->q.b, p->dst, len, U4VT_ACCESS_ALL);
	if (type == IBV_QPT_UD)
		p->ah = u4vt_ah(p->q.a.pd);
}

void u4vt_area_pair_down(struct u4vt_area_pair *p)
{
	if (p->ah)
		assert_int_equal(u4v_destroy_ah(p->ah), 0);
	assert_int_equal(u4v_dereg_mr(p->ms), 0);
	assert_int_equal(u4v_dereg_mr(p->md), 0);
	u4vt_unmap(p->src, p->len);
	u4vt_unmap(p->dst, p->len);
	u4vt_pair_down(&p->q);
}

void u4vt_pair_reconnect(struct u4vt_pair *p)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };

	/* new PSNs: a frame of the last connection still on its way is
	 * not taken for one of this */
	p->o.psn = (p->o.psn + 0x10000) & 0xffffff;
	assert_int_equal(u4v_modify_qp(p->qa, &reset, IBV_QP_STATE), 0);
	assert_int_equal(u4v_modify_qp(p->qb, &reset, IBV_QP_STATE), 0);
	u4vt_qp_connect(p->qa, p->type, u4v_qp_num(p->qb), &p->o);
	u4vt_qp_connect(p->qb, p->type, u4v_qp_num(p->qa), &p->o);
}

void u4vt_pair_down(struct u4vt_pair *p)
{
	if (p->qa)
		assert_int_equal(u4v_destroy_qp(p->qa), 0);
	if (p->qb)
		assert_int_equal(u4v_destroy_qp(p->qb), 0);
	u4vt_end_close(&p->a);
	u4vt_end_close(&p->b);
	u4l_sim_destroy(p->shm);
	for (int i = 0; i < 2; i++)
		if (p->evfd[i] >= 0)
			close(p->evfd[i]);
}

struct u4vt_pair *u4vt_pair_new(void **state, const char *tag, int async_end)
{
	struct u4vt_pair *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	u4vt_pair_ends(p, tag, NULL, async_end);
	*state = p;
	return p;
}

int u4vt_pair_teardown(void **state)
{
	u4vt_pair_down(*state);
	free(*state);
	return 0;
}

int u4vt_poll(struct u4v_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
	uint64_t end = u4vt_now_ms() + (uint64_t)timeout_ms;
	int got = 0;

	while (got < n) {
		int r = u4v_poll_cq(cq, n - got, wc + got);

		assert_true(r >= 0);
		got += r;
		if (!r && u4vt_now_ms() > end)
			break;
	}
	return got;
}

int u4vt_async_read(int fd, uint64_t *element, uint32_t *type,
		    int timeout_ms)
{
	struct {
		uint64_t element;
		uint32_t type;
		uint32_t reserved;
	} ev;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&pfd, 1, timeout_ms) != 1)
		return 0;
	n = read(fd, &ev, sizeof(ev));
	assert_int_equal(n, 16);
	assert_int_equal(ev.reserved, 0);
	*element = ev.element;
	*type = ev.type;
	return 1;
}

uint64_t u4vt_avail_mb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb / 1024;
}

void *u4vt_map(size_t len)
{
	void *p = u4vt_map_anon(len);

	assert_non_null(p);
	return p;
}

struct u4v_mr *u4vt_reg(struct u4vt_end *e, void *addr, size_t len,
			int access)
{
	struct u4v_mr *mr = NULL;

	assert_int_equal(u4v_reg_mr(e->pd, addr, len, access, &mr), 0);
	return mr;
}

void u4vt_ah_attr(struct ibv_ah_attr *attr, struct ibv_gid_entry *sgid)
{
	/* GID 3 of a software cable's port: RoCE v2 ::ffff:127.0.0.1 */
	static const uint8_t v4_loop[16] = { [10] = 0xff, [11] = 0xff,
					     [12] = 127,  [15] = 1 };

	memset(attr, 0, sizeof(*attr));
	memset(sgid, 0, sizeof(*sgid));
	memcpy(sgid->gid.raw, v4_loop, sizeof(v4_loop));
	sgid->gid_index = 3;
	sgid->port_num = 1;
	sgid->gid_type = IBV_GID_TYPE_ROCE_V2;
	attr->port_num = 1;
	attr->is_global = 1;
	attr->grh.sgid_index = 3;
	attr->grh.dgid = sgid->gid;
	attr->grh.hop_limit = 64;
}

struct u4v_ah *u4vt_ah(struct u4v_pd *pd)
{
	struct ibv_gid_entry sgid;
	struct ibv_ah_attr attr;
	struct u4v_ah *ah = NULL;

	u4vt_ah_attr(&attr, &sgid);
	assert_int_equal(u4v_create_ah(pd, &attr, &sgid, &ah), 0);
	return ah;
}

void u4vt_send_wr(struct ibv_send_wr *wr, enum ibv_wr_opcode op, uint64_t wr_id,
		  int flags, struct ibv_sge *sge, int nsge)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->opcode = op;
	wr->send_flags = flags;
	wr->sg_list = nsge ? sge : NULL;
	wr->num_sge = nsge;
}

void u4vt_send_wr_ud(struct ibv_send_wr *wr, struct u4v_ah *ah,
		     uint32_t remote_qpn)
{
	wr->wr.ud.ah = &ah->ibv;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = U4VT_QKEY;
}

int u4vt_post_send1(struct u4v_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		    int flags, uint64_t addr, uint32_t len, uint32_t lkey,
		    uint64_t remote_addr, uint32_t rkey, uint32_t imm)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	u4vt_send_wr(&wr, op, wr_id, flags, &sge, len || addr);
	wr.imm_data = imm;
	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = rkey;
	return u4v_post_send(qp, &wr, &bad);
}

int u4vt_post_atomic(struct u4v_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		     uint64_t addr, uint32_t lkey, uint64_t remote_addr,
		     uint32_t rkey, uint64_t add_or_cmp, uint64_t swap)
{
	struct ibv_sge sge = { addr, 8, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	u4vt_send_wr(&wr, op, wr_id, IBV_SEND_SIGNALED, &sge, 1);
	wr.wr.atomic.remote_addr = remote_addr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = add_or_cmp;
	wr.wr.atomic.swap = swap;
	return u4v_post_send(qp, &wr, &bad);
}

uint64_t u4vt_atomic(struct u4v_qp *qp, struct u4v_cq *cq,
		     enum ibv_wr_opcode op, uint64_t wr_id, void *res,
		     uint32_t lkey, uint64_t *cell, uint32_t rkey,
		     uint64_t add_or_cmp, uint64_t swap)
{
	struct ibv_wc wc;
	uint64_t found;

	assert_int_equal(u4vt_post_atomic(qp, op, wr_id, (uintptr_t)res, lkey,
					  (uintptr_t)cell, rkey, add_or_cmp,
					  swap),
			 0);
	assert_int_equal(u4vt_poll(cq, &wc, 1, 20000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.qp_num, u4v_qp_num(qp));
	assert_int_equal(wc.opcode, op == IBV_WR_ATOMIC_FETCH_AND_ADD
					? IBV_WC_FETCH_ADD
					: IBV_WC_COMP_SWAP);
	memcpy(&found, res, sizeof(found));
	return found;
}

/* A receive WR of one SGE (none when len and addr are 0) at *sge. */
static void recv_wr1(struct ibv_recv_wr *wr, struct ibv_sge *sge,
		     uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	*sge = (struct ibv_sge){ addr, len, lkey };
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	if (len || addr) {
		wr->sg_list = sge;
		wr->num_sge = 1;
	}
}

int u4vt_post_recv1(struct u4v_qp *qp, uint64_t wr_id, uint64_t addr,
		    uint32_t len, uint32_t lkey)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;

	recv_wr1(&wr, &sge, wr_id, addr, len, lkey);
	return u4v_post_recv(qp, &wr, &bad);
}

int u4vt_post_srq_recv1(struct u4v_srq *srq, uint64_t wr_id, uint64_t addr,
			uint32_t len, uint32_t lkey)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;

	recv_wr1(&wr, &sge, wr_id, addr, len, lkey);
	return u4v_post_srq_recv(srq, &wr, &bad);
}
