// SPDX-License-Identifier: MIT
/* The parts of u4vt.h that call the engine. */
#include <usb4verbs/engine.h>
#include <usb4verbs/sim.h>

#include "u4vt.h"

int u4vt_eng_connect(struct u4v_qp *qp, enum ibv_qp_type t,
		     const struct u4vt_conn *c)
{
	struct ibv_qp_attr a;
	int i, ret;

	for (i = 0; i < 3; i++) {
		ret = u4v_modify_qp(
		    qp, &a, u4vt_conn_attr(t, u4vt_conn_path[i], c, &a));
		if (ret)
			return ret;
	}
	return 0;
}

void u4vt_cable_config(struct u4l_sim_config *cfg)
{
	u4l_sim_config_default(cfg);
	cfg->rate_bps = 0;
	cfg->latency_ns = 0;
}
