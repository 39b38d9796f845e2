// SPDX-License-Identifier: MIT
/* What the tests and the benchmarks share; see u4vt.h. */
#include <string.h>
#include <sys/mman.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "u4vt.h"

void *u4vt_map_anon(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void u4vt_unmap(void *p, size_t len)
{
	if (p)
		munmap(p, len ? len : 1);
}

int u4vt_fork_pair(int (*target)(int rfd, int wfd),
		   int (*initiator)(int rfd, int wfd))
{
	int a2b[2], b2a[2], status, ret;
	pid_t pid;

	if (pipe(a2b))
		return -1;
	if (pipe(b2a)) {
		close(a2b[0]);
		close(a2b[1]);
		return -1;
	}
	fflush(NULL); /* the child must not print the parent's buffer again */
	pid = fork();
	if (pid == 0) {
		close(a2b[1]);
		close(b2a[0]);
		_exit(target(a2b[0], b2a[1]));
	}
	close(a2b[0]);
	close(b2a[1]);
	ret = pid < 0 ? -1 : initiator(b2a[0], a2b[1]);
	close(a2b[1]);
	close(b2a[0]);
	if (pid > 0 &&
	    (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	     WEXITSTATUS(status)) &&
	    !ret)
		ret = 1;
	return ret;
}

void u4vt_conn_default(struct u4vt_conn *c, uint32_t remote_qpn)
{
	memset(c, 0, sizeof(*c));
	c->remote_qpn = remote_qpn;
	c->psn = 0x123;
	c->qkey = U4VT_QKEY;
	c->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	c->mtu = IBV_MTU_4096;
	c->timeout = 14;
	c->retry_cnt = 7;
	c->rnr_retry = 7;
	c->min_rnr_timer = 1;
	c->rd_atomic = 16;
	c->port_num = 1;
}

static int init_attr(enum ibv_qp_type t, const struct u4vt_conn *c,
		     struct ibv_qp_attr *a)
{
	a->port_num = c->port_num;
	if (t == IBV_QPT_UD) {
		a->qkey = c->qkey;
		return IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	}
	a->qp_access_flags = (unsigned int)c->access;
	return IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

static int rtr_attr(enum ibv_qp_type t, const struct u4vt_conn *c,
		    struct ibv_qp_attr *a)
{
	int mask;

	if (t == IBV_QPT_UD)
		return 0;
	a->path_mtu = c->mtu;
	a->dest_qp_num = c->remote_qpn;
	a->rq_psn = c->psn;
	a->ah_attr.port_num = c->port_num;
	if (c->is_global) {
		a->ah_attr.is_global = 1;
		a->ah_attr.grh.dgid = c->dgid;
		a->ah_attr.grh.sgid_index = c->sgid_index;
		a->ah_attr.grh.hop_limit = 64;
	}
	mask = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (t == IBV_QPT_RC) {
		a->max_dest_rd_atomic = c->rd_atomic;
		a->min_rnr_timer = c->min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return mask;
}

static int rts_attr(enum ibv_qp_type t, const struct u4vt_conn *c,
		    struct ibv_qp_attr *a)
{
	a->sq_psn = c->psn;
	if (t != IBV_QPT_RC)
		return IBV_QP_SQ_PSN;
	a->timeout = c->timeout;
	a->retry_cnt = c->retry_cnt;
	a->rnr_retry = c->rnr_retry;
	a->max_rd_atomic = c->rd_atomic;
	return IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
}

int u4vt_conn_attr(enum ibv_qp_type t, enum ibv_qp_state to,
		   const struct u4vt_conn *c, struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = to;
	switch (to) {
	case IBV_QPS_INIT:
		return IBV_QP_STATE | init_attr(t, c, a);
	case IBV_QPS_RTR:
		return IBV_QP_STATE | rtr_attr(t, c, a);
	case IBV_QPS_RTS:
		return IBV_QP_STATE | rts_attr(t, c, a);
	default:
		return IBV_QP_STATE;
	}
}

const enum ibv_qp_state u4vt_conn_path[3] = {IBV_QPS_INIT, IBV_QPS_RTR,
					     IBV_QPS_RTS};

int u4vt_ibv_connect(struct ibv_qp *qp, const struct u4vt_conn *c)
{
	struct ibv_qp_attr a;
	int i, ret;

	for (i = 0; i < 3; i++) {
		ret = ibv_modify_qp(
		    qp, &a,
		    u4vt_conn_attr(qp->qp_type, u4vt_conn_path[i], c, &a));
		if (ret)
			return ret;
	}
	return 0;
}
