// SPDX-License-Identifier: MIT
/* Helpers shared by the engine's unit and integration tests. */
#include <errno.h>
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
		u4l_sim_config_default(&def);
		def.rate_bps = 0;
		def.latency_ns = 0;
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

void u4vt_qp_connect(struct u4v_qp *qp, enum ibv_qp_type type,
		     uint32_t remote_qpn, const struct u4vt_qp_opts *o)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = o->access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	assert_int_equal(u4v_modify_qp(qp, &a, mask), 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (type != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_4096;
		a.dest_qp_num = remote_qpn;
		a.rq_psn = o->psn ? o->psn : 0x123;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 16;
			a.min_rnr_timer = o->min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
	}
	assert_int_equal(u4v_modify_qp(qp, &a, mask), 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = o->psn ? o->psn : 0x123;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (type == IBV_QPT_RC) {
		a.timeout = o->timeout;
		a.retry_cnt = o->retry_cnt;
		a.rnr_retry = o->rnr_retry;
		a.max_rd_atomic = 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	assert_int_equal(u4v_modify_qp(qp, &a, mask), 0);
}

uint64_t u4vt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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

void u4vt_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(x >> (8 * (i & 7)));
}

uint64_t u4vt_sum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	/* FNV-1a over 8-byte words, then the tail */
	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h ^ len;
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
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

void u4vt_unmap(void *p, size_t len)
{
	if (p)
		munmap(p, len ? len : 1);
}

struct u4v_mr *u4vt_reg(struct u4vt_end *e, void *addr, size_t len,
			int access)
{
	struct u4v_mr *mr = NULL;

	assert_int_equal(u4v_reg_mr(e->pd, addr, len, access, &mr), 0);
	return mr;
}

int u4vt_post_send1(struct u4v_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		    int flags, uint64_t addr, uint32_t len, uint32_t lkey,
		    uint64_t remote_addr, uint32_t rkey, uint32_t imm)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.imm_data = imm;
	if (len || addr) {
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
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

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = remote_addr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = add_or_cmp;
	wr.wr.atomic.swap = swap;
	return u4v_post_send(qp, &wr, &bad);
}

int u4vt_post_recv1(struct u4v_qp *qp, uint64_t wr_id, uint64_t addr,
		    uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	if (len || addr) {
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	return u4v_post_recv(qp, &wr, &bad);
}

int u4vt_post_srq_recv1(struct u4v_srq *srq, uint64_t wr_id, uint64_t addr,
			uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	if (len || addr) {
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	return u4v_post_srq_recv(srq, &wr, &bad);
}
