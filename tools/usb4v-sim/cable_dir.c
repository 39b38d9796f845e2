/* SPDX-License-Identifier: MIT */
/*
 * State directory, cable directories and the fake sysfs tree.
 *
 * What libibverbs 44 reads in sysfs mode (netlink RDMA unavailable), all
 * relative to $SYSFS_PATH, and therefore what cable_build() writes:
 *   class/infiniband_verbs/abi_version          "6" (library accepts 3..6)
 *   class/infiniband_verbs/<uverbs>/ibdev       the ib device name
 *   class/infiniband_verbs/<uverbs>/dev         major:minor of /dev/null,
 *                                               which the shim opens for the
 *                                               device node: the library's
 *                                               st_rdev check holds, and
 *                                               ibv_import_device finds the
 *                                               device and asks the provider
 *                                               (which cannot import:
 *                                               EOPNOTSUPP, not ENODEV)
 *   class/infiniband_verbs/<uverbs>/abi_version per-device ABI matched
 *                                               against the provider's range
 *   class/infiniband/<ibdev>/                   must exist (its mtime is the
 *                                               device's creation time)
 *   class/infiniband/<ibdev>/node_type          "1: CA" (strtoul -> IB CA)
 *   class/infiniband/<ibdev>/node_guid          "%04x:%04x:%04x:%04x"
 *   class/infiniband/<ibdev>/device/modalias    absent on purpose (no other
 *                                               provider must match us)
 *   class/infiniband/<ibdev>/ports/1/gids/<i>   eight 4-digit hex groups:
 *                                               parsed at fixed offsets, so
 *                                               never the "::" short form;
 *                                               build_gids() says which
 *   .../ports/1/gid_attrs/types/<i>             "IB/RoCE v1" or "RoCE v2"
 *   .../ports/1/gid_attrs/ndevs/<i>             absent (ifindex 0)
 *   .../ports/1/pkeys/<i>                       "0xffff"
 *   class/infiniband/<ibdev>/board_id           read by ibv_devinfo only
 *   class/misc/rdma_cm/abi_version              "4", read by librdmacm
 *   class/misc/rdma_cm/usb4v_cm                 the shim's rendezvous token and
 *                                               the ends' addresses
 * The other files (sys_image_guid, fw_ver, node_desc, hca_type, port
 * state/lid/link_layer...) are what the kernel would also show; tools that
 * read sysfs on their own find them consistent. usb4v_sim is the
 * provider's own: "shm=<segment> end=<0|1>".
 *
 * Three trees: sysfs/ holds both ends; sysfs-end0/ and sysfs-end1/ hold one
 * end each, as the host at that end of a real cable sees it: its own device
 * only, and under the same name on both ends (end 0's), as each host of a
 * real cable calls its own end usb4v0. Programs that hand one device name
 * to both sides of a test (ucx_perftest's UCT tests send theirs to the
 * server) then run each side on its own end of the cable.
 */
#define _GNU_SOURCE
#include "cable_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef USB4V_VERSION
#define USB4V_VERSION "0.0.0"
#endif

#define CABLE_FILE "cable"
#define GID_COUNT 4

int state_dir_resolve(struct state_dir *st)
{
	const char *env = getenv("USB4V_SIM_DIR");
	int n;

	st->lock_fd = -1;
	st->user_given = false;
	if (env && *env) {
		if (env[0] != '/')
			return -EINVAL;
		st->user_given = true;
		n = snprintf(st->path, sizeof(st->path), "%s", env);
	} else if ((env = getenv("XDG_RUNTIME_DIR")) && env[0] == '/') {
		n = snprintf(st->path, sizeof(st->path), "%s/usb4v-sim", env);
	} else {
		n = snprintf(st->path, sizeof(st->path), "/tmp/usb4v-sim-%u",
			     (unsigned)getuid());
	}
	if (n < 0 || (size_t)n >= sizeof(st->path))
		return -ENAMETOOLONG;
	/* strip trailing slashes (but keep "/") */
	while (n > 1 && st->path[n - 1] == '/')
		st->path[--n] = 0;
	return 0;
}

int state_dir_lock(struct state_dir *st, const char **why)
{
	struct stat fst, lst;
	int fd;

	for (int attempt = 0; attempt < 100; attempt++) {
		if (mkdir(st->path, 0700) && errno != EEXIST) {
			*why = "cannot create state directory";
			return -errno;
		}
		fd = open(st->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue; /* removed under us: retry */
			*why = errno == ELOOP || errno == ENOTDIR
				       ? "state directory is not a directory"
				       : "cannot open state directory";
			return -errno;
		}
		if (flock(fd, LOCK_EX)) {
			*why = "cannot lock state directory";
			int e = errno;
			close(fd);
			return -e;
		}
		if (fstat(fd, &fst) || lstat(st->path, &lst)) {
			close(fd);
			continue;
		}
		/* A `down` removed the (empty) dir while we waited: start over. */
		if (fst.st_nlink == 0 || fst.st_ino != lst.st_ino ||
		    fst.st_dev != lst.st_dev) {
			close(fd);
			continue;
		}
		if (fst.st_uid != geteuid()) {
			close(fd);
			*why = "state directory belongs to another user";
			return -EPERM;
		}
		if (fst.st_mode & 077) {
			if (!st->user_given) {
				close(fd);
				*why = "state directory is accessible to others";
				return -EPERM;
			}
		}
		st->lock_fd = fd;
		return 0;
	}
	*why = "state directory keeps disappearing";
	return -EAGAIN;
}

void state_dir_unlock(struct state_dir *st, bool rmdir_if_empty)
{
	if (st->lock_fd < 0)
		return;
	if (rmdir_if_empty && !st->user_given)
		(void)rmdir(st->path); /* fails with ENOTEMPTY while cables exist */
	close(st->lock_fd); /* drops the flock */
	st->lock_fd = -1;
}

bool cable_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > CABLE_NAME_MAX)
		return false;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

void cable_shm_name(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "/usb4v-sim-%u-%s", (unsigned)getuid(), name);
}

int cable_dir_path(const struct state_dir *st, const char *name, char *buf,
		   size_t len)
{
	int n = snprintf(buf, len, "%s/%s", st->path, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Tree directory of the view of `end` (CABLE_BOTH_ENDS, 0 or 1). */
static const char *tree_dir(int end)
{
	return end == 0 ? "sysfs-end0" : end == 1 ? "sysfs-end1" : "sysfs";
}

int cable_sysfs_path(const struct state_dir *st, const char *name, int end,
		     char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s/%s", st->path, name, tree_dir(end));
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void cable_dev_name(unsigned index, unsigned end, char *buf, size_t len)
{
	snprintf(buf, len, "usb4vsim%u", 2 * index + end);
}

uint64_t cable_node_guid(unsigned index, unsigned end)
{
	/* 02:55:34:56 "U4V" locally administered prefix, device number low */
	return 0x0255345600000000ull | (uint64_t)(2 * index + end);
}

uint32_t cable_end_addr(unsigned uid, unsigned index, unsigned end)
{
	uint32_t user = uid % 16382u + 1; /* 1..16382: 14 bits, never 0 */

	return 0x7f000000u | user << 10 | ((2 * index + end) & 0x3ffu);
}

void cable_addr_string(uint32_t addr, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255,
		 (addr >> 8) & 255, addr & 255);
}

int cable_assign(struct cable_info *info)
{
	uint8_t rnd[CABLE_CM_TOKEN_LEN / 2];
	size_t got = 0;

	for (unsigned end = 0; end < 2; end++)
		info->addr[end] =
			cable_end_addr((unsigned)getuid(), info->index, end);
	while (got < sizeof(rnd)) {
		ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(info->cm_token + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

/* "a.b.c.d" to a host-order address; false if malformed. */
static bool parse_addr(const char *s, uint32_t *addr)
{
	unsigned a, b, c, d;
	char tail;

	if (sscanf(s, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 ||
	    a > 255 || b > 255 || c > 255 || d > 255)
		return false;
	*addr = a << 24 | b << 16 | c << 8 | d;
	return true;
}

static int parse_cable_file(const char *path, struct cable_info *info)
{
	char line[256];
	bool have_index = false, have_shm = false;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "addr0=", 6) || !strncmp(line, "addr1=", 6)) {
			if (!parse_addr(line + 6, &info->addr[line[4] - '0']))
				break;
		} else if (!strncmp(line, "cm=", 3)) {
			if (strlen(line + 3) != CABLE_CM_TOKEN_LEN)
				break;
			strcpy(info->cm_token, line + 3);
		} else if (!strncmp(line, "index=", 6)) {
			char *end;
			unsigned long v = strtoul(line + 6, &end, 10);
			if (*end || v > CABLE_INDEX_MAX)
				break;
			info->index = (unsigned)v;
			have_index = true;
		} else if (!strncmp(line, "shm=", 4)) {
			if (strlen(line + 4) >= sizeof(info->shm))
				break;
			strcpy(info->shm, line + 4);
			have_shm = true;
		}
	}
	fclose(f);
	return have_index && have_shm ? 0 : -EBADMSG;
}

int cable_lookup(const struct state_dir *st, const char *name,
		 struct cable_info *info)
{
	char path[CABLE_PATH_MAX];
	int n;

	if (!cable_name_valid(name))
		return -EINVAL;
	n = snprintf(path, sizeof(path), "%s/%s/" CABLE_FILE, st->path, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", name);
	return parse_cable_file(path, info);
}

static int cmp_info(const void *a, const void *b)
{
	return strcmp(((const struct cable_info *)a)->name,
		      ((const struct cable_info *)b)->name);
}

/* Every cable of the state dir, malloc'ed and sorted. */
static int collect(const struct state_dir *st, struct cable_info **out)
{
	struct cable_info *v = NULL, info;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(st->path);

	*out = NULL;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !cable_name_valid(de->d_name))
			continue;
		if (cable_lookup(st, de->d_name, &info))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct cable_info *nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = info;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_info);
	*out = v;
	return (int)n;
}

int cable_next_index(const struct state_dir *st, unsigned *index)
{
	struct cable_info *v;
	int n = collect(st, &v);

	if (n < 0)
		return n;
	for (unsigned k = 0; k <= CABLE_INDEX_MAX; k++) {
		bool used = false;
		for (int i = 0; i < n && !used; i++)
			used = v[i].index == k;
		if (!used) {
			free(v);
			*index = k;
			return 0;
		}
	}
	free(v);
	return -ENOSPC;
}

int cable_list(const struct state_dir *st, cable_list_fn fn, void *arg)
{
	struct cable_info *v;
	int n = collect(st, &v);

	for (int i = 0; i < n; i++)
		fn(&v[i], arg);
	free(v);
	return n;
}

/* ---- building the tree ---- */

struct builder {
	char path[CABLE_PATH_MAX];
	int err;
};

/* mkdir -p of base/rel (base exists). */
static void b_mkdir(struct builder *b, const char *fmt, ...)
{
	char rel[CABLE_PATH_MAX], full[CABLE_PATH_MAX];
	va_list ap;
	int n;

	if (b->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(rel)) {
		b->err = -ENAMETOOLONG;
		return;
	}
	for (char *p = rel;; p++) {
		if (*p == '/' || *p == 0) {
			char save = *p;
			*p = 0;
			n = snprintf(full, sizeof(full), "%s/%s", b->path, rel);
			if (n < 0 || (size_t)n >= sizeof(full)) {
				b->err = -ENAMETOOLONG;
				return;
			}
			if (mkdir(full, 0700) && errno != EEXIST) {
				b->err = -errno;
				return;
			}
			*p = save;
			if (!save)
				break;
		}
	}
}

/* Write base/rel with content, followed by a newline like sysfs. */
static void b_file(struct builder *b, const char *rel, const char *fmt, ...)
{
	char full[CABLE_PATH_MAX], content[512];
	va_list ap;
	int n, fd;

	if (b->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(content, sizeof(content) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(content) - 1) {
		b->err = -EOVERFLOW;
		return;
	}
	content[n++] = '\n';
	if (snprintf(full, sizeof(full), "%s/%s", b->path, rel) >=
	    (int)sizeof(full)) {
		b->err = -ENAMETOOLONG;
		return;
	}
	fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		b->err = -errno;
		return;
	}
	if (write(fd, content, (size_t)n) != n)
		b->err = errno ? -errno : -EIO;
	if (close(fd) && !b->err)
		b->err = -errno;
}

static void gid_string(char *buf, size_t len, const uint16_t g[8])
{
	/* the fixed-width form the kernel prints and libibverbs parses */
	snprintf(buf, len, "%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x", g[0], g[1],
		 g[2], g[3], g[4], g[5], g[6], g[7]);
}

/* [0] fe80::<node GUID> RoCE v1, [1] the same as RoCE v2, [2] the end's
 * IPv4-mapped address ::ffff:a.b.c.d RoCE v1, [3] the same as RoCE v2 (the
 * GID perftest selects by itself and rdma_cm uses). */
static void build_gids(struct builder *b, const char *root, const char *dev,
		       uint64_t guid, uint32_t addr)
{
	const uint16_t link_local[8] = {0xfe80, 0, 0, 0,
					(uint16_t)(guid >> 48),
					(uint16_t)(guid >> 32),
					(uint16_t)(guid >> 16), (uint16_t)guid};
	const uint16_t v4_mapped[8] = {0, 0, 0, 0, 0, 0xffff,
				       (uint16_t)(addr >> 16), (uint16_t)addr};
	char rel[256], gid[64];

	for (unsigned i = 0; i < GID_COUNT; i++) {
		gid_string(gid, sizeof(gid), i < 2 ? link_local : v4_mapped);
		snprintf(rel, sizeof(rel),
			 "%s/class/infiniband/%s/ports/1/gids/%u", root, dev, i);
		b_file(b, rel, "%s", gid);
		snprintf(rel, sizeof(rel),
			 "%s/class/infiniband/%s/ports/1/gid_attrs/types/%u",
			 root, dev, i);
		b_file(b, rel, "%s", i % 2 ? "RoCE v2" : "IB/RoCE v1");
	}
}

/*
 * End `end`'s device in tree `root`, named as end `name_end`'s device
 * (usb4vsim<num>, uverbs<num>).
 */
static void build_device(struct builder *b, const char *root,
			 const struct cable_info *info, unsigned end,
			 unsigned name_end, dev_t null_dev)
{
	char dev[32], rel[256];
	unsigned num = 2 * info->index + name_end;
	uint64_t guid = cable_node_guid(info->index, end);
	uint16_t g[4] = {(uint16_t)(guid >> 48), (uint16_t)(guid >> 32),
			 (uint16_t)(guid >> 16), (uint16_t)guid};
	char guid_s[32];

	cable_dev_name(info->index, name_end, dev, sizeof(dev));
	snprintf(guid_s, sizeof(guid_s), "%04x:%04x:%04x:%04x", g[0], g[1], g[2],
		 g[3]);

	/* the uverbs "char device" class entry */
	b_mkdir(b, "%s/class/infiniband_verbs/uverbs%u", root, num);
#define UV(file) (snprintf(rel, sizeof(rel), "%s/class/infiniband_verbs/uverbs%u/%s", root, num, file), rel)
	b_file(b, UV("ibdev"), "%s", dev);
	b_file(b, UV("dev"), "%u:%u", major(null_dev), minor(null_dev));
	b_file(b, UV("abi_version"), "1");
#undef UV

	/* the ib device */
	b_mkdir(b, "%s/class/infiniband/%s/ports/1/gids", root, dev);
	b_mkdir(b, "%s/class/infiniband/%s/ports/1/gid_attrs/types", root, dev);
	b_mkdir(b, "%s/class/infiniband/%s/ports/1/pkeys", root, dev);
#define IB(file) (snprintf(rel, sizeof(rel), "%s/class/infiniband/%s/%s", root, dev, file), rel)
	b_file(b, IB("node_type"), "1: CA");
	b_file(b, IB("node_guid"), "%s", guid_s);
	b_file(b, IB("sys_image_guid"), "%s", guid_s);
	b_file(b, IB("fw_ver"), "%s", USB4V_VERSION);
	b_file(b, IB("hca_type"), "USB4V-SIM");
	b_file(b, IB("board_id"), "USB4V-SIM");
	b_file(b, IB("node_desc"), "usb4verbs software cable %s end %u",
	       info->name, end);
	b_file(b, IB("usb4v_sim"), "shm=%s end=%u", info->shm, end);
	b_file(b, IB("ports/1/state"), "4: ACTIVE");
	b_file(b, IB("ports/1/phys_state"), "5: LinkUp");
	b_file(b, IB("ports/1/link_layer"), "Ethernet");
	b_file(b, IB("ports/1/lid"), "0x0");
	b_file(b, IB("ports/1/sm_lid"), "0x0");
	b_file(b, IB("ports/1/lid_mask_count"), "0");
	b_file(b, IB("ports/1/sm_sl"), "0");
	b_file(b, IB("ports/1/cap_mask"), "0x00000000");
	b_file(b, IB("ports/1/pkeys/0"), "0xffff");

	build_gids(b, root, dev, guid, info->addr[end]);
#undef IB
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		return rmdir(path) ? -1 : 0;
	return unlink(path) ? -1 : 0;
}

static int rm_tree(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb))
		return -errno;
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT))
		return errno ? -errno : -EIO;
	return 0;
}

int cable_build(const struct state_dir *st, const struct cable_info *info)
{
	struct builder b = {.err = 0};
	char a0[16], a1[16];
	struct stat null_st;
	int ret;

	ret = cable_dir_path(st, info->name, b.path, sizeof(b.path));
	if (ret)
		return ret;
	if (stat("/dev/null", &null_st))
		return -errno;
	if (mkdir(b.path, 0700))
		return -errno;

	cable_addr_string(info->addr[0], a0, sizeof(a0));
	cable_addr_string(info->addr[1], a1, sizeof(a1));
	b_file(&b, CABLE_FILE, "index=%u\nshm=%s\naddr0=%s\naddr1=%s\ncm=%s",
	       info->index, info->shm, a0, a1, info->cm_token);
	for (int view = CABLE_BOTH_ENDS; view <= 1; view++) {
		const char *root = tree_dir(view);
		char rel[64];

		b_mkdir(&b, "%s/class/infiniband_verbs", root);
		snprintf(rel, sizeof(rel), "%s/class/infiniband_verbs/abi_version",
			 root);
		b_file(&b, rel, "6");
		if (view == CABLE_BOTH_ENDS) {
			build_device(&b, root, info, 0, 0, null_st.st_rdev);
			build_device(&b, root, info, 1, 1, null_st.st_rdev);
		} else {
			build_device(&b, root, info, (unsigned)view, 0,
				     null_st.st_rdev);
		}
	}
	/* librdmacm reads the rdma_cm ABI here when netlink RDMA fails; the
	 * shim offers rdma_cm when it finds this directory (not in the views
	 * of one end) */
	b_mkdir(&b, "sysfs/class/misc/rdma_cm");
	b_file(&b, "sysfs/class/misc/rdma_cm/abi_version", "4");
	b_file(&b, "sysfs/class/misc/rdma_cm/usb4v_cm",
	       "token=%s\nend0=%s\nend1=%s", info->cm_token, a0, a1);
	if (b.err) {
		(void)rm_tree(b.path);
		return b.err;
	}
	return 0;
}

int cable_remove(const struct state_dir *st, const char *name)
{
	char path[CABLE_PATH_MAX];
	int ret;

	if (!cable_name_valid(name))
		return -EINVAL;
	ret = cable_dir_path(st, name, path, sizeof(path));
	if (ret)
		return ret;
	return rm_tree(path);
}
