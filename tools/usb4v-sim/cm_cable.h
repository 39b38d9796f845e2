/* SPDX-License-Identifier: MIT */
/*
 * The software cable as rdma_cm sees it from inside `usb4v-sim exec`: the
 * token that names its rendezvous and its two ends' addresses
 * (class/misc/rdma_cm/usb4v_cm), and for each end this process sees (both,
 * or one with `exec --end`, like a host at one end of a real cable) its
 * device: name, node GUID, the GID table index of its address as a RoCE v2
 * GID. Read once from the cable's sysfs tree ($SYSFS_PATH), where
 * libibverbs reads the devices.
 */
#ifndef USB4V_SIM_CM_CABLE_H
#define USB4V_SIM_CM_CABLE_H

#include <stdbool.h>
#include <stdint.h>

#define CMC_TOKEN_MAX 64

struct cmc_end {
	uint32_t addr;	 /* IPv4, network byte order */
	uint8_t gid[16]; /* ::ffff:addr */
	bool present;	 /* this process sees the end's device: */
	char name[64];	 /* its name (usb4vsimN) */
	uint64_t node_guid; /* as the kernel reports it: network byte order */
	uint8_t gid_index;  /* its address's index in the GID table (RoCE v2) */
};

struct cmc_cable {
	struct cmc_end end[2]; /* by end number */
	unsigned view;	       /* bit e: end e is present */
	char token[CMC_TOKEN_MAX + 1];
};

/*
 * The cable of this process, loaded on first use; NULL (errno set) when
 * $SYSFS_PATH holds no software cable with rdma_cm. Never freed.
 */
const struct cmc_cable *cmc_get(void);
/* True when $SYSFS_PATH says this cable offers rdma_cm (cheap, no cache). */
bool cmc_present(void);
/* The end whose address is addr (network order), or -1. */
int cmc_end_of(const struct cmc_cable *c, uint32_t addr);
/* The first end this process sees. */
int cmc_first_present(const struct cmc_cable *c);

#endif
