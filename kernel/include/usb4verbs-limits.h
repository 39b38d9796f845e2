/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * usb4verbs device identity and limits: what the device reports in
 * query_device, whether the kernel shim answers (ib_device attributes for
 * kernel consumers and `rdma` tools) or the userspace engine does (the
 * provider's query_device). Not ABI: the two sides never exchange these,
 * they must only agree, so both include this one header. Plain integer
 * constants, usable from kernel and userspace C alike.
 */
#ifndef USB4VERBS_LIMITS_H
#define USB4VERBS_LIMITS_H

#define U4V_VENDOR_ID 0x8086u	   /* Intel: the NHI's PCI vendor */
#define U4V_VENDOR_PART_ID 0x4b34u /* outside perftest's mlx/efa table */

#define U4V_MAX_MSG_SZ (1u << 30)
#define U4V_MAX_QP 4096u
#define U4V_MAX_QP_WR 8192u
#define U4V_MAX_SGE 16u
#define U4V_MAX_INLINE 512u
#define U4V_MAX_CQ 4096u
#define U4V_MAX_CQE (1u << 20)
#define U4V_MAX_MR 65536u
#define U4V_MAX_MW 65536u /* memory windows, type 1 and 2B */
#define U4V_MAX_MR_SIZE (1ull << 40)
#define U4V_MAX_PD 4096u
#define U4V_MAX_QP_RD_ATOM 16u
#define U4V_MAX_SRQ 1024u
#define U4V_MAX_SRQ_WR 8192u
#define U4V_MAX_AH 65536u
#define U4V_MAX_QKEY 0x7fffffffu
#define U4V_MAX_PKEYS 1u /* the default P_Key only: max_pkeys, pkey_tbl_len */
#define U4V_LOCAL_CA_ACK_DELAY 15u /* 4.096 us << 15, about 134 ms */

#endif
