/* SPDX-License-Identifier: MIT */
/*
 * The `nhi` link backend: channels mapped from the kernel shim
 * (usb4verbs.ko) through the uverbs command fd of a usb4v<N> device.
 * Works the same over a real Thunderbolt cable and over the shim's
 * soft_cable=1 mode.
 */
#ifndef USB4VERBS_NHI_H
#define USB4VERBS_NHI_H

#include <stdint.h>
#include <usb4verbs/link.h>

/* Open flags. */
#define U4L_NHI_DIRECT 0x1u	/* ask for direct mode (needs CAP_SYS_RAWIO) */
#define U4L_NHI_OWN_FD 0x2u	/* close cmd_fd in ops->close() */

/*
 * Environment: USB4V_NHI_DIRECT=1 adds U4L_NHI_DIRECT to every open (the
 * open then fails with -EPERM where direct mode is not allowed);
 * USB4V_NHI_DIRECT=try asks for direct mode and falls back to safe mode.
 */

/*
 * Create the kernel context on cmd_fd (an open /dev/infiniband/uverbsN of a
 * usb4v device that has no context yet) and attach a link device to it.
 * *async_fd receives the uverbs async event fd (may be NULL: then it is
 * closed). Returns 0 or -errno (-EPROTO: kernel ABI mismatch).
 */
int u4l_nhi_open(int cmd_fd, uint32_t flags, int *async_fd,
		 struct u4l_dev **dev);

/* Is this a link device of the nhi backend? */
int u4l_is_nhi(const struct u4l_dev *dev);

/*
 * Completion events through the kernel's own path. The provider creates a
 * kernel CQ for every CQ created with a completion channel (user_handle =
 * (uintptr_t)the struct ibv_cq * handed to the application, comp_fd =
 * channel->fd) and raises an event with u4l_nhi_cq_signal() from the
 * engine's event callback; ibv_get_cq_event() then works unchanged.
 * All return 0 or -errno.
 */
int u4l_nhi_cq_create(struct u4l_dev *dev, int comp_fd, uint64_t user_handle,
		      uint32_t cqe, uint32_t *handle);
int u4l_nhi_cq_signal(struct u4l_dev *dev, uint32_t handle);
/* *events_reported: comp events the kernel delivered (wait for acks). */
int u4l_nhi_cq_destroy(struct u4l_dev *dev, uint32_t handle,
		       uint32_t *events_reported);

#endif
