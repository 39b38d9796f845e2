/* SPDX-License-Identifier: MIT */
/*
 * The cable's ends for the rdma_cm emulation, read from the sysfs tree that
 * `usb4v-sim up` wrote (cable_dir.c):
 *   class/misc/rdma_cm/abi_version           "4": the cable offers rdma_cm
 *   class/misc/rdma_cm/usb4v_cm              "token=<hex>", "end0=<a.b.c.d>",
 *                                            "end1=<a.b.c.d>", one a line
 *   class/infiniband/<dev>/usb4v_sim         "shm=... end=<0|1>"
 *   class/infiniband/<dev>/node_guid         "xxxx:xxxx:xxxx:xxxx"
 *   class/infiniband/<dev>/ports/1/gids/<i>, gid_attrs/types/<i>
 * A device's address must be among its GIDs, IPv4-mapped and RoCE v2, as
 * ib_core derives RoCE GIDs from a netdev's addresses.
 */
#define _GNU_SOURCE
#include "cm_cable.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GID_MAX 16

static const char *sysfs_root(void)
{
	const char *s;

	/* libibverbs follows SYSFS_PATH only when not setuid: so do we */
	if (getuid() != geteuid())
		return NULL;
	s = getenv("SYSFS_PATH");
	return s && *s ? s : NULL;
}

/* Read root/rel (one line, newline stripped). 0 or -errno. */
static int read_line(const char *root, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, e;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", root, rel) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = syscall(SYS_read, fd, buf, len - 1);
	e = errno;
	syscall(SYS_close, fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

bool cmc_present(void)
{
	const char *root = sysfs_root();
	char buf[16];

	return root && !read_line(root, "class/misc/rdma_cm/abi_version", buf,
				  sizeof(buf));
}

static bool parse_gid(const char *s, uint8_t gid[16])
{
	unsigned w[8];

	if (sscanf(s, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x", &w[0], &w[1], &w[2],
		   &w[3], &w[4], &w[5], &w[6], &w[7]) != 8)
		return false;
	for (int i = 0; i < 8; i++) {
		gid[2 * i] = (uint8_t)(w[i] >> 8);
		gid[2 * i + 1] = (uint8_t)w[i];
	}
	return true;
}

/* The index of dev's RoCE v2 GID e->gid. */
static bool find_gid(const char *root, const char *dev, struct cmc_end *e)
{
	char rel[512], buf[128];
	uint8_t gid[16];

	for (unsigned i = 0; i < GID_MAX; i++) {
		snprintf(rel, sizeof(rel),
			 "class/infiniband/%s/ports/1/gids/%u", dev, i);
		if (read_line(root, rel, buf, sizeof(buf)) ||
		    !parse_gid(buf, gid))
			break;
		snprintf(rel, sizeof(rel),
			 "class/infiniband/%s/ports/1/gid_attrs/types/%u", dev,
			 i);
		if (read_line(root, rel, buf, sizeof(buf)) ||
		    strcmp(buf, "RoCE v2") || memcmp(gid, e->gid, 16))
			continue;
		e->gid_index = (uint8_t)i;
		return true;
	}
	return false;
}

/* class/misc/rdma_cm/usb4v_cm: the token and both ends' addresses. */
static bool load_rendezvous(const char *root, struct cmc_cable *c)
{
	char path[PATH_MAX], line[128];
	unsigned have = 0, e;
	FILE *f;

	snprintf(path, sizeof(path), "%s/class/misc/rdma_cm/usb4v_cm", root);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "token=", 6) &&
		    strlen(line + 6) <= CMC_TOKEN_MAX && line[6]) {
			strcpy(c->token, line + 6);
			have |= 4;
		} else if (sscanf(line, "end%u=", &e) == 1 && e < 2 &&
			   inet_pton(AF_INET, strchr(line, '=') + 1,
				     &c->end[e].addr) == 1) {
			struct cmc_end *end = &c->end[e];

			memset(end->gid, 0, sizeof(end->gid));
			end->gid[10] = end->gid[11] = 0xff;
			memcpy(end->gid + 12, &end->addr, 4);
			have |= 1u << e;
		}
	}
	fclose(f);
	return have == 7;
}

/* A device of the tree: if it is an end of the cable, that end is present. */
static bool load_end(const char *root, const char *dev, struct cmc_cable *c)
{
	char rel[512], buf[512];
	unsigned w[4], end;
	const char *p;
	struct cmc_end *e;

	if (strlen(dev) >= sizeof(e->name))
		return true; /* not one of our names */
	snprintf(rel, sizeof(rel), "class/infiniband/%s/usb4v_sim", dev);
	if (read_line(root, rel, buf, sizeof(buf)))
		return true; /* not a software-cable device: not ours */
	p = strstr(buf, " end=");
	if (!p || sscanf(p, " end=%u", &end) != 1 || end > 1 ||
	    c->end[end].present)
		return false;
	e = &c->end[end];
	strcpy(e->name, dev);
	snprintf(rel, sizeof(rel), "class/infiniband/%s/node_guid", dev);
	if (read_line(root, rel, buf, sizeof(buf)) ||
	    sscanf(buf, "%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3]) != 4)
		return false;
	e->node_guid = htobe64((uint64_t)(w[0] & 0xffff) << 48 |
			       (uint64_t)(w[1] & 0xffff) << 32 |
			       (uint64_t)(w[2] & 0xffff) << 16 | (w[3] & 0xffff));
	if (!find_gid(root, dev, e))
		return false;
	e->present = true;
	c->view |= 1u << end;
	return true;
}

static struct cmc_cable *load(void)
{
	const char *root = sysfs_root();
	char path[PATH_MAX];
	struct cmc_cable *c;
	struct dirent *de;
	bool ok = true;
	DIR *d;

	errno = ENODEV;
	if (!root)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(path, sizeof(path), "%s/class/infiniband", root);
	if (!load_rendezvous(root, c) || !(d = opendir(path))) {
		free(c);
		errno = ENODEV;
		return NULL;
	}
	while (ok && (de = readdir(d)))
		if (de->d_name[0] != '.')
			ok = load_end(root, de->d_name, c);
	closedir(d);
	if (!ok || !c->view) {
		free(c);
		errno = ENODEV;
		return NULL;
	}
	return c;
}

const struct cmc_cable *cmc_get(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct cmc_cable *cable;
	int e = 0;

	pthread_mutex_lock(&lock);
	if (!cable) {
		cable = load();
		e = errno;
	}
	pthread_mutex_unlock(&lock);
	if (!cable)
		errno = e;
	return cable;
}

int cmc_end_of(const struct cmc_cable *c, uint32_t addr)
{
	for (int i = 0; i < 2; i++)
		if (c->end[i].addr == addr)
			return i;
	return -1;
}

int cmc_first_present(const struct cmc_cable *c)
{
	return c->end[0].present ? 0 : 1;
}
