/* SPDX-License-Identifier: MIT */
/*
 * The on-disk side of a software cable: the per-user state directory, one
 * directory per cable, and the fake sysfs tree that libibverbs enumerates
 * when SYSFS_PATH points at it.
 *
 * Layout (all mode 0700 / 0600, owned by the caller):
 *   <state>/                      $USB4V_SIM_DIR, $XDG_RUNTIME_DIR/usb4v-sim
 *                                 or /tmp/usb4v-sim-<uid>
 *   <state>/<name>/cable          "index=<k>\nshm=<segment>\naddr0=<a>\n
 *                                 addr1=<a>\ncm=<token>\n"
 *   <state>/<name>/sysfs/...      see cable_build() in cable_dir.c
 *   <state>/<name>/sysfs-end<e>/  one end only, named as end 0 (exec --end)
 *
 * Cable k exposes devices usb4vsim<2k> (end 0) and usb4vsim<2k+1> (end 1)
 * whose uverbs entries are uverbs<2k> and uverbs<2k+1>.
 */
#ifndef USB4V_SIM_CABLE_DIR_H
#define USB4V_SIM_CABLE_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CABLE_NAME_MAX 32
#define CABLE_PATH_MAX 4096
#define CABLE_SHM_MAX 128
/* Highest cable index handed out (devices usb4vsim0 .. usb4vsim1023). */
#define CABLE_INDEX_MAX 511u

struct state_dir {
	char path[CABLE_PATH_MAX];
	bool user_given; /* from $USB4V_SIM_DIR: never removed by us */
	int lock_fd;	 /* flock()ed directory fd while locked, else -1 */
};

/* Hex digits of the random token naming a cable's rdma_cm rendezvous. */
#define CABLE_CM_TOKEN_LEN 32

struct cable_info {
	char name[CABLE_NAME_MAX + 1];
	unsigned index; /* k: devices usb4vsim<2k>, usb4vsim<2k+1> */
	char shm[CABLE_SHM_MAX];
	/* Each end's IPv4 loopback address, host byte order (0: a cable made
	 * before ends had addresses). */
	uint32_t addr[2];
	char cm_token[CABLE_CM_TOKEN_LEN + 1];
};

/* Fill st->path from the environment (no filesystem access). 0 or -errno. */
int state_dir_resolve(struct state_dir *st);
/*
 * Create (if needed) and exclusively lock the state directory. Refuses a
 * directory that is a symlink, not ours, or group/other accessible.
 * Returns 0 or -errno; *why names the failing step.
 */
int state_dir_lock(struct state_dir *st, const char **why);
/* Unlock; with rmdir_if_empty, remove an empty state dir we own the
 * location of (not $USB4V_SIM_DIR). */
void state_dir_unlock(struct state_dir *st, bool rmdir_if_empty);

/* [A-Za-z0-9_.-]{1,32}, not "." or "..". */
bool cable_name_valid(const char *name);
/* "/usb4v-sim-<uid>-<name>" */
void cable_shm_name(const char *name, char *buf, size_t len);
/* Absolute path of <state>/<name>. */
int cable_dir_path(const struct state_dir *st, const char *name, char *buf,
		   size_t len);
/* Its sysfs tree: both ends (CABLE_BOTH_ENDS) or end 0 or 1 alone. */
#define CABLE_BOTH_ENDS (-1)
int cable_sysfs_path(const struct state_dir *st, const char *name, int end,
		     char *buf, size_t len);
/* Device name of end `end` of cable index k. */
void cable_dev_name(unsigned index, unsigned end, char *buf, size_t len);
uint64_t cable_node_guid(unsigned index, unsigned end);
/*
 * The loopback IPv4 address (host byte order) of end `end` of cable index k
 * made by user uid: 127.0.0.0/8 with the user in the upper 14 bits and the
 * device number 2k+end in the lower 10, so the cables of one user never
 * share an address and those of users whose uids differ by less than 16382
 * neither. Never 127.0.0.0/22 (so never 127.0.0.1) nor 127.255.255.255.
 */
uint32_t cable_end_addr(unsigned uid, unsigned index, unsigned end);
/* Dotted quad of a host-order IPv4 address. */
void cable_addr_string(uint32_t addr, char *buf, size_t len);
/* Fill info->addr and info->cm_token for a new cable of the caller. */
int cable_assign(struct cable_info *info);

/* Read <state>/<name>/cable. 0, -ENOENT (no such cable) or -errno. */
int cable_lookup(const struct state_dir *st, const char *name,
		 struct cable_info *info);
/* Lowest cable index not used by any cable in the state dir (locked). */
int cable_next_index(const struct state_dir *st, unsigned *index);
/* Create <state>/<name>/ with the cable file and the sysfs tree. On error
 * nothing is left behind. 0 or -errno. */
int cable_build(const struct state_dir *st, const struct cable_info *info);
/* Remove <state>/<name> recursively. 0, -ENOENT or -errno. */
int cable_remove(const struct state_dir *st, const char *name);

/* Call fn for every cable of the state dir, sorted by name. Returns the
 * number of cables or -errno. A missing state dir means no cables. */
typedef void (*cable_list_fn)(const struct cable_info *info, void *arg);
int cable_list(const struct state_dir *st, cable_list_fn fn, void *arg);

#endif
