// SPDX-License-Identifier: MIT
/*
 * Prints the layouts the usb4verbs provider shares with libibverbs, as
 * compiled from one rdma-core source tree (tools/pabi/scan.sh builds it
 * against each release). One "name value" line per fact; two releases
 * whose outputs are equal are interchangeable for the provider.
 */
#include <stddef.h>
#include <stdio.h>
#include <infiniband/driver.h>

#define SIZE(t) printf("sizeof.%s %zu\n", #t, sizeof(struct t))
#define OFF(t, m) printf("offsetof.%s.%s %zu\n", #t, #m, offsetof(struct t, m))
#define VAL(v) printf("value.%s %lld\n", #v, (long long)(v))
/* verbs_context_ops slot of an op, in pointers */
#define SLOT(m)                                                                \
	printf("slot.%s %zu\n", #m,                                            \
	       offsetof(struct verbs_context_ops, m) / sizeof(void *))

/* private: driver.h, the provider interface */
static void driver_h(void)
{
	SIZE(verbs_match_ent);
	OFF(verbs_match_ent, u.modalias);
	OFF(verbs_match_ent, vendor);
	OFF(verbs_match_ent, device);
	OFF(verbs_match_ent, kind);
	VAL(VERBS_MATCH_SENTINEL);
	VAL(VERBS_MATCH_PCI);
	VAL(VERBS_MATCH_MODALIAS);
	VAL(VERBS_MATCH_DRIVER_ID);
	SIZE(verbs_sysfs_dev);
	OFF(verbs_sysfs_dev, entry);
	OFF(verbs_sysfs_dev, provider_data);
	OFF(verbs_sysfs_dev, match);
	OFF(verbs_sysfs_dev, flags);
	OFF(verbs_sysfs_dev, sysfs_name);
	OFF(verbs_sysfs_dev, sysfs_cdev);
	OFF(verbs_sysfs_dev, ibdev_name);
	OFF(verbs_sysfs_dev, ibdev_path);
	OFF(verbs_sysfs_dev, modalias);
	OFF(verbs_sysfs_dev, node_guid);
	OFF(verbs_sysfs_dev, driver_id);
	OFF(verbs_sysfs_dev, node_type);
	OFF(verbs_sysfs_dev, ibdev_idx);
	OFF(verbs_sysfs_dev, num_ports);
	OFF(verbs_sysfs_dev, abi_ver);
	OFF(verbs_sysfs_dev, time_created);
	SIZE(verbs_device_ops);
	OFF(verbs_device_ops, name);
	OFF(verbs_device_ops, match_min_abi_version);
	OFF(verbs_device_ops, match_max_abi_version);
	OFF(verbs_device_ops, match_table);
	OFF(verbs_device_ops, static_providers);
	OFF(verbs_device_ops, match_device);
	OFF(verbs_device_ops, alloc_context);
	OFF(verbs_device_ops, import_context);
	OFF(verbs_device_ops, alloc_device);
	OFF(verbs_device_ops, uninit_device);
	SIZE(verbs_device);
	OFF(verbs_device, device);
	OFF(verbs_device, ops);
	OFF(verbs_device, refcount);
	OFF(verbs_device, entry);
	OFF(verbs_device, sysfs);
	OFF(verbs_device, core_support);
	SIZE(verbs_mr);
	OFF(verbs_mr, ibv_mr);
	OFF(verbs_mr, mr_type);
	OFF(verbs_mr, access);
	VAL(IBV_MR_TYPE_MR);
	SIZE(verbs_qp);
	OFF(verbs_qp, qp);
	OFF(verbs_qp, qp_ex);
	OFF(verbs_qp, comp_mask);
	OFF(verbs_qp, xrcd);
	VAL(VERBS_QP_EX);
	SIZE(verbs_context_ops);
#include "slots.inc"
}

/* public: verbs.h, the objects both sides read and write */
static void verbs_h(void)
{
	SIZE(ibv_device);
	SIZE(ibv_context);
	SIZE(verbs_context);
	OFF(verbs_context, context);
	SIZE(ibv_pd);
	SIZE(ibv_mr);
	SIZE(ibv_mw);
	SIZE(ibv_cq);
	SIZE(ibv_cq_ex);
	SIZE(ibv_srq);
	SIZE(ibv_qp);
	SIZE(ibv_qp_ex);
	SIZE(ibv_ah);
	SIZE(ibv_comp_channel);
	SIZE(ibv_wc);
	SIZE(ibv_port_attr);
	SIZE(ibv_device_attr);
	SIZE(ibv_device_attr_ex);
	SIZE(ibv_query_device_ex_input);
	SIZE(ibv_qp_attr);
	SIZE(ibv_qp_init_attr);
	SIZE(ibv_qp_init_attr_ex);
	SIZE(ibv_srq_attr);
	SIZE(ibv_srq_init_attr);
	SIZE(ibv_cq_init_attr_ex);
	SIZE(ibv_poll_cq_attr);
	SIZE(ibv_ah_attr);
	SIZE(ibv_send_wr);
	SIZE(ibv_recv_wr);
	SIZE(ibv_sge);
	SIZE(ibv_async_event);
}

int main(void)
{
	driver_h();
	verbs_h();
	return 0;
}
