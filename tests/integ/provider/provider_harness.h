/* SPDX-License-Identifier: MIT */
/*
 * The harness of test_provider_load: a fake sysfs tree, a software cable,
 * the device-node and netlink interposers, and small verbs helpers.
 */
#ifndef U4V_PROVIDER_HARNESS_H
#define U4V_PROVIDER_HARNESS_H

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"   /* u4vt_now_ms */
#include "pattern.h" /* u4vt_fill, u4vt_sum: payloads and their checks */

#define IBDEV_NAME "usb4vtest0"
#define NODE_GUID_HOST 0x0002c90300abcdefull
#define BUF_SZ (64 * 1024)

extern const char *gid_str[4];
extern char tmpdir[256];
extern struct ibv_device *dev;
extern struct ibv_context *ctx;

int count_fds(void);
int group_setup(void **state);
int group_teardown(void **state);
int open_ctx(void **state);
int close_ctx(void **state);
void poll_one(struct ibv_cq *cq, struct ibv_wc *wc);
void to_init(struct ibv_qp *qp, int access);
void to_rts(struct ibv_qp *qp, uint32_t dest_qpn);
/* Run again with the usb4v-sim shim preloaded, when it was built. */
void maybe_reexec_with_shim(char **argv);

#endif
