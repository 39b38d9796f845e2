/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * usb4verbs: the kernel interfaces that changed between the kernels the
 * shim builds against (Debian 12's 6.1, Debian 13's 6.12, unstable's 7.x),
 * each in one helper named after what it does, with the release that
 * changed it. Nothing else in the shim tests the kernel version.
 */
#ifndef USB4VERBS_COMPAT_H
#define USB4VERBS_COMPAT_H

#include <linux/version.h>
#include <linux/eventfd.h>
#include <linux/mm.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/* 6.8: eventfd_signal() lost its count argument (it always adds 1). */
static inline void u4k_eventfd_signal(struct eventfd_ctx *ctx)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
	eventfd_signal(ctx);
#else
	eventfd_signal(ctx, 1);
#endif
}

/* 6.3: vma->vm_flags is read-only; changes go through helpers. */
static inline void u4k_vm_flags_clear(struct vm_area_struct *vma,
				      vm_flags_t flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/*
 * 6.11: ib_device_ops.create_cq takes the uverbs attribute bundle, which
 * holds the driver udata, instead of the udata. u4k_create_cq_arg is what
 * it takes; u4k_create_cq_udata() the udata in it (NULL: a kernel CQ).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
typedef struct uverbs_attr_bundle u4k_create_cq_arg;
static inline struct ib_udata *u4k_create_cq_udata(u4k_create_cq_arg *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
typedef struct ib_udata u4k_create_cq_arg;
static inline struct ib_udata *u4k_create_cq_udata(u4k_create_cq_arg *udata)
{
	return udata;
}
#endif

/* 6.17: ib_device_ops.reg_user_mr takes a DMA handle before the udata. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define U4K_REG_USER_MR_DMAH struct ib_dmah *dmah,
#else
#define U4K_REG_USER_MR_DMAH
#endif

#endif
