// SPDX-License-Identifier: MIT
/*
 * The QP state table: for each legal transition, which attributes are
 * required and which are allowed, per transport (RC, UC, UD). Transitions
 * not in the table are refused with EINVAL.
 */
#include <errno.h>

#include "qp/modify.h"
#include "rel/psn.h"

enum { T_RC, T_UC, T_UD, T_NUM };

struct transition {
	enum ibv_qp_state from, to;
	int req[T_NUM];
	int opt[T_NUM];
};

#define ANY_STATE (-1)
#define RTS_OPT_RC                                                            \
	(IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |           \
	 IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER)
#define RTS_OPT_UC                                                            \
	(IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |           \
	 IBV_QP_PATH_MIG_STATE)
#define RTS_OPT_UD (IBV_QP_CUR_STATE | IBV_QP_QKEY)

static const struct transition table[] = {
	{ IBV_QPS_RESET, IBV_QPS_INIT,
	  { IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY },
	  { 0, 0, 0 } },
	{ IBV_QPS_INIT, IBV_QPS_INIT,
	  { 0, 0, 0 },
	  { IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY } },
	{ IBV_QPS_INIT, IBV_QPS_RTR,
	  { IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	    IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
	    0 },
	  { IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
	    IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
	    IBV_QP_PKEY_INDEX | IBV_QP_QKEY } },
	{ IBV_QPS_RTR, IBV_QPS_RTS,
	  { IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
	    IBV_QP_SQ_PSN, IBV_QP_SQ_PSN },
	  { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD } },
	{ IBV_QPS_RTS, IBV_QPS_RTS,
	  { 0, 0, 0 },
	  { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD } },
	{ IBV_QPS_RTS, IBV_QPS_SQD,
	  { 0, 0, 0 },
	  { IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY,
	    IBV_QP_EN_SQD_ASYNC_NOTIFY } },
	{ IBV_QPS_SQD, IBV_QPS_RTS,
	  { 0, 0, 0 },
	  { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD } },
	{ IBV_QPS_SQD, IBV_QPS_SQD,
	  { 0, 0, 0 },
	  { RTS_OPT_RC | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
		    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PKEY_INDEX |
		    IBV_QP_PORT,
	    RTS_OPT_UC | IBV_QP_AV | IBV_QP_PKEY_INDEX | IBV_QP_PORT,
	    IBV_QP_PKEY_INDEX | IBV_QP_QKEY } },
	{ IBV_QPS_SQE, IBV_QPS_RTS,
	  { 0, 0, 0 },
	  { 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
	    IBV_QP_CUR_STATE | IBV_QP_QKEY } },
};

static int transport_index(enum ibv_qp_type type)
{
	return type == IBV_QPT_UD ? T_UD : type == IBV_QPT_UC ? T_UC : T_RC;
}

static int check_values(const struct u4v_qp *qp,
			const struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > U4V_MAX_QP_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > U4V_MAX_QP_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	/* only the remote rights mean anything for a QP; the other access
	 * flags of an MR are accepted (applications pass their MR's) */
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags &
	     ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
	       IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
	       IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB)))
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) &&
	    (a->dest_qp_num > U4V_PSN_MASK ||
	     u4v_qpn_ctx(a->dest_qp_num) >= U4L_MAX_CTX))
		return EINVAL;
	if ((mask & IBV_QP_AV) && a->ah_attr.port_num != 1 &&
	    a->ah_attr.port_num != 0)
		return EINVAL;
	(void)qp;
	return 0;
}

int u4v_modify_check(const struct u4v_qp *qp, const struct ibv_qp_attr *attr,
		     int mask, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	int t = transport_index(qp->type);
	size_t i;

	if (!(mask & IBV_QP_STATE))
		next = cur;
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return EINVAL;
	if (next > IBV_QPS_ERR)
		return EINVAL;
	/* to RESET or ERR from anywhere, nothing else may be given */
	if ((mask & IBV_QP_STATE) &&
	    (next == IBV_QPS_RESET || next == IBV_QPS_ERR))
		return (mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE)) ? EINVAL :
								     0;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct transition *tr = &table[i];
		int rest = mask & ~IBV_QP_STATE;

		if (tr->from != cur || tr->to != next)
			continue;
		if ((rest & tr->req[t]) != tr->req[t])
			return EINVAL;
		if (rest & ~(tr->req[t] | tr->opt[t]))
			return EINVAL;
		return check_values(qp, attr, mask);
	}
	return EINVAL;
}

void u4v_modify_apply(struct u4v_qp *qp, const struct ibv_qp_attr *a,
		      int mask)
{
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->access = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->port = a->port_num;
	if (mask & IBV_QP_QKEY)
		qp->qkey = a->qkey;
	if (mask & IBV_QP_AV)
		qp->ah_attr = a->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		qp->path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		qp->dest_qpn = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		qp->epsn = a->rq_psn & U4V_PSN_MASK;
	if (mask & IBV_QP_SQ_PSN)
		qp->sq_psn = a->sq_psn & U4V_PSN_MASK;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		qp->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->rnr_retry = a->rnr_retry;
}
