/* SPDX-License-Identifier: MIT */
/*
 * The software cable's /dev/infiniband/rdma_cm: what shim.c calls. See
 * cm_int.h for how it works and usb4verbs(7) for what it offers.
 */
#ifndef USB4V_SIM_UCMA_H
#define USB4V_SIM_UCMA_H

#include <stdbool.h>
#include <sys/types.h>

/* Is `path` the rdma_cm device of a software cable of this process? */
bool ucma_is_path(const char *path);
/* Open an rdma_cm file (open(2) flags): a descriptor below max_fd, or -1
 * with errno. */
int ucma_open(int flags, int max_fd);
/* A command written to rdma_cm file fd (a write(2) result). */
ssize_t ucma_write(int fd, const void *buf, size_t n);
/* fd, an rdma_cm file, is being closed or replaced: destroy its ids. */
void ucma_release(int fd);

#endif
