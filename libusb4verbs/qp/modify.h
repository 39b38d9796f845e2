/* SPDX-License-Identifier: MIT */
/* The attribute-mask rules of ibv_modify_qp(3), per QP type. */
#ifndef U4V_MODIFY_H
#define U4V_MODIFY_H

#include "engine_int.h"

/* Is this transition with this mask and these values legal? 0 or EINVAL. */
int u4v_modify_check(const struct u4v_qp *qp, const struct ibv_qp_attr *attr,
		     int mask, enum ibv_qp_state cur, enum ibv_qp_state next);
/* Store the attributes named by mask (after u4v_modify_check). */
void u4v_modify_apply(struct u4v_qp *qp, const struct ibv_qp_attr *attr,
		      int mask);

#endif
