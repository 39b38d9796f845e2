/* SPDX-License-Identifier: MIT */
/*
 * usb4v-sim gc: remove software cables nobody can use any more, and with
 * --idle the ones nobody uses, without disturbing a cable a process maps.
 *
 * A cable is a segment /dev/shm/usb4v-sim-<uid>-<name> plus a directory
 * <state>/<name>. Stale: a directory whose segment is gone (exec refuses
 * it), or a segment with no directory in any of the user's state
 * directories (left by a crash; up refuses the name). A segment is in use
 * while any process maps it or holds it open: that is checked by device
 * and inode in every /proc/<pid>/maps and /proc/<pid>/fd, so a same-named
 * segment in another mount namespace is not mistaken for ours.
 *
 * --all-users (root, for the package's removal) does the same for every
 * user who has a segment or a default state directory, each in a child
 * running with that user's ids: root never walks a user's directories.
 * The in-use scan runs once, as root, before the children start.
 */
#define _GNU_SOURCE
#include "gc.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <usb4verbs/sim.h>

#include "cable_dir.h"

#define SHM_DIR "/dev/shm"
#define SEG_PREFIX "usb4v-sim-"
#define MAX_DIRS 4

struct seg_user {
	dev_t dev;
	ino_t ino;
	pid_t pid;
};

struct gc {
	const char *prog;
	bool idle;
	struct seg_user *users; /* every mapping/open of an usb4v-sim segment */
	size_t nusers, cap;
	bool scan_failed; /* then every segment counts as in use */
	struct state_dir dirs[MAX_DIRS]; /* the user's existing state dirs */
	int ndirs;
	int status;
};

static void note(struct gc *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct gc *g, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s gc: user %u: ", g->prog, (unsigned)getuid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void add_user(struct gc *g, dev_t dev, ino_t ino, pid_t pid)
{
	if (g->nusers == g->cap) {
		size_t ncap = g->cap ? 2 * g->cap : 16;
		struct seg_user *n = realloc(g->users, ncap * sizeof(*n));

		if (!n) {
			g->scan_failed = true;
			return;
		}
		g->users = n;
		g->cap = ncap;
	}
	g->users[g->nusers++] = (struct seg_user){dev, ino, pid};
}

/* Mappings of /dev/shm/usb4v-sim-* in one process: "... MAJ:MIN INODE PATH". */
static void scan_maps(struct gc *g, pid_t pid)
{
	char path[64], line[512], name[256];
	unsigned maj, min;
	unsigned long ino;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return; /* gone, or another user's (only when not root) */
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, SHM_DIR "/" SEG_PREFIX))
			continue;
		if (sscanf(line, "%*s %*s %*s %x:%x %lu %255s", &maj, &min,
			   &ino, name) == 4)
			add_user(g, makedev(maj, min), (ino_t)ino, pid);
	}
	fclose(f);
}

/* Open descriptors of /dev/shm/usb4v-sim-* in one process. */
static void scan_fds(struct gc *g, pid_t pid)
{
	char dir[64], link[PATH_MAX], target[PATH_MAX];
	struct dirent *de;
	struct stat sb;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		if (strncmp(target, SHM_DIR "/" SEG_PREFIX,
			    strlen(SHM_DIR "/" SEG_PREFIX)))
			continue;
		if (!stat(link, &sb))
			add_user(g, sb.st_dev, sb.st_ino, pid);
	}
	closedir(d);
}

static void scan_processes(struct gc *g)
{
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d) {
		note(g, "cannot read /proc: %s; keeping every segment",
		     strerror(errno));
		g->scan_failed = true;
		return;
	}
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		scan_maps(g, (pid_t)pid);
		scan_fds(g, (pid_t)pid);
	}
	closedir(d);
}

/* 0 when no process uses the segment, else a pid that does (-1: the scan
 * could not be completed, so it may be in use). */
static pid_t segment_user(const struct gc *g, const struct stat *sb)
{
	if (g->scan_failed)
		return -1;
	for (size_t i = 0; i < g->nusers; i++)
		if (g->users[i].dev == sb->st_dev &&
		    g->users[i].ino == sb->st_ino)
			return g->users[i].pid;
	return 0;
}

/* The state directories `up` may have used for this user, if they exist. */
static void find_dirs(struct gc *g)
{
	const char *env[2] = {getenv("USB4V_SIM_DIR"),
			      getenv("XDG_RUNTIME_DIR")};
	char cand[MAX_DIRS][CABLE_PATH_MAX];
	int n = 0;

	if (env[0] && env[0][0] == '/')
		snprintf(cand[n++], CABLE_PATH_MAX, "%s", env[0]);
	if (env[1] && env[1][0] == '/')
		snprintf(cand[n++], CABLE_PATH_MAX, "%s/usb4v-sim", env[1]);
	snprintf(cand[n++], CABLE_PATH_MAX, "/run/user/%u/usb4v-sim",
		 (unsigned)getuid());
	snprintf(cand[n++], CABLE_PATH_MAX, "/tmp/usb4v-sim-%u",
		 (unsigned)getuid());

	for (int i = 0; i < n; i++) {
		struct state_dir *st = &g->dirs[g->ndirs];
		const char *why = "";
		struct stat sb;
		bool dup = false;
		int ret;

		for (int j = 0; j < g->ndirs; j++)
			dup |= !strcmp(g->dirs[j].path, cand[i]);
		if (dup || lstat(cand[i], &sb) || !S_ISDIR(sb.st_mode))
			continue;
		_Static_assert(sizeof(st->path) == sizeof(cand[i]), "path size");
		memcpy(st->path, cand[i], sizeof(st->path));
		st->user_given = i == 0 && env[0] && env[0][0] == '/';
		st->lock_fd = -1;
		ret = state_dir_lock(st, &why);
		if (ret) {
			note(g, "%s %s: %s; skipped", why, st->path,
			     strerror(-ret));
			continue;
		}
		g->ndirs++;
	}
}

struct cables {
	struct cable_info *v;
	size_t n, cap;
	bool oom;
};

static void collect_one(const struct cable_info *info, void *arg)
{
	struct cables *c = arg;

	if (c->n == c->cap) {
		size_t ncap = c->cap ? 2 * c->cap : 8;
		struct cable_info *n = realloc(c->v, ncap * sizeof(*n));

		if (!n) {
			c->oom = true;
			return;
		}
		c->v = n;
		c->cap = ncap;
	}
	c->v[c->n++] = *info;
}

/* One state directory: stale cables go; with --idle, unused ones too. */
static void gc_dir(struct gc *g, const struct state_dir *st)
{
	struct cables c = {0};
	char seg[CABLE_PATH_MAX];
	struct stat sb;
	pid_t user;

	if (cable_list(st, collect_one, &c) < 0 || c.oom) {
		note(g, "cannot read %s", st->path);
		g->status = 1;
		free(c.v);
		return;
	}
	for (size_t i = 0; i < c.n; i++) {
		const struct cable_info *info = &c.v[i];

		snprintf(seg, sizeof(seg), SHM_DIR "%s", info->shm);
		if (lstat(seg, &sb) && errno == ENOENT) {
			if (cable_remove(st, info->name)) {
				g->status = 1;
				continue;
			}
			note(g,
			     "removed stale cable '%s' (%s/%s; its segment "
			     "%s was gone)",
			     info->name, st->path, info->name, info->shm);
			continue;
		}
		if (!g->idle)
			continue;
		user = segment_user(g, &sb);
		if (user) {
			note(g, "kept cable '%s': in use (pid %d)", info->name,
			     (int)user); /* -1: cannot tell */
			continue;
		}
		if (sb.st_uid != getuid())
			continue; /* another user's segment (shared
				     USB4V_SIM_DIR) */
		if (u4l_sim_destroy(info->shm) ||
		    cable_remove(st, info->name)) {
			note(g, "could not take down idle cable '%s'",
			     info->name);
			g->status = 1;
			continue;
		}
		note(g, "took down idle cable '%s' (segment %s)", info->name,
		     info->shm);
	}
	free(c.v);
}

/* Is /dev/shm/<seg> the segment of a cable in one of the state dirs? */
static bool has_dir(const struct gc *g, const char *name)
{
	char want[CABLE_SHM_MAX];
	struct cable_info info;

	cable_shm_name(name, want, sizeof(want));
	for (int i = 0; i < g->ndirs; i++)
		if (!cable_lookup(&g->dirs[i], name, &info) &&
		    !strcmp(info.shm, want))
			return true;
	return false;
}

/* Segments of this user without a cable directory, that nobody uses. */
static void gc_segments(struct gc *g)
{
	char prefix[64], seg[NAME_MAX + 2];
	struct dirent *de;
	struct stat sb;
	DIR *d = opendir(SHM_DIR);
	pid_t user;

	if (!d)
		return;
	snprintf(prefix, sizeof(prefix), SEG_PREFIX "%u-", (unsigned)getuid());
	while ((de = readdir(d))) {
		const char *name = de->d_name + strlen(prefix);

		if (strncmp(de->d_name, prefix, strlen(prefix)) ||
		    !cable_name_valid(name) || has_dir(g, name))
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode) || sb.st_uid != getuid())
			continue;
		user = segment_user(g, &sb);
		if (user) {
			note(g,
			     "kept segment /%s: no cable directory, but in "
			     "use (pid %d)",
			     de->d_name, (int)user);
			continue;
		}
		snprintf(seg, sizeof(seg), "/%s", de->d_name);
		if (u4l_sim_destroy(seg)) {
			g->status = 1;
			continue;
		}
		note(g, "removed segment %s (no cable directory, unused)", seg);
	}
	closedir(d);
}

/* Everything for the calling user. */
static int gc_user(struct gc *g)
{
	find_dirs(g);
	for (int i = 0; i < g->ndirs; i++)
		gc_dir(g, &g->dirs[i]);
	gc_segments(g);
	for (int i = 0; i < g->ndirs; i++)
		state_dir_unlock(&g->dirs[i], true);
	return g->status;
}

/*
 * Users with a segment (/dev/shm/usb4v-sim-<uid>-<name>) or a default state
 * directory (/tmp/usb4v-sim-<uid>, /run/user/<uid>/usb4v-sim) they own.
 */
static size_t find_uids(uid_t *uids, size_t max)
{
	static const struct {
		const char *dir, *prefix, *tail; /* entry: prefix<uid>tail... */
	} where[] = {
	    {SHM_DIR, SEG_PREFIX, "-"},
	    {"/tmp", SEG_PREFIX, ""},
	    {"/run/user", "", "/usb4v-sim"},
	};
	size_t n = 0;

	for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
		size_t plen = strlen(where[w].prefix);
		struct dirent *de;
		DIR *d = opendir(where[w].dir);

		while (d && (de = readdir(d)) && n < max) {
			char *end, rel[NAME_MAX + 16];
			unsigned long uid;
			struct stat sb;
			bool dup = false;

			if (strncmp(de->d_name, where[w].prefix, plen))
				continue;
			uid = strtoul(de->d_name + plen, &end, 10);
			if (end == de->d_name + plen ||
			    (*where[w].tail == '-' ? *end != '-' : *end != 0))
				continue;
			snprintf(rel, sizeof(rel), "%s%s", de->d_name,
				 *where[w].tail == '/' ? where[w].tail : "");
			if (fstatat(dirfd(d), rel, &sb, AT_SYMLINK_NOFOLLOW) ||
			    sb.st_uid != uid)
				continue;
			for (size_t i = 0; i < n; i++)
				dup |= uids[i] == uid;
			if (!dup)
				uids[n++] = (uid_t)uid;
		}
		if (d)
			closedir(d);
	}
	return n;
}

/* Run gc_user() as `uid` in a child; its exit status. */
static int gc_as(struct gc *g, uid_t uid)
{
	struct passwd *pw = getpwuid(uid);
	gid_t gid = pw ? pw->pw_gid : 65534;
	char xdg[64];
	int wstatus;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
		    setresuid(uid, uid, uid))
			_exit(1);
		unsetenv("USB4V_SIM_DIR");
		snprintf(xdg, sizeof(xdg), "/run/user/%u", (unsigned)uid);
		setenv("XDG_RUNTIME_DIR", xdg, 1);
		_exit(gc_user(g));
	}
	if (waitpid(pid, &wstatus, 0) < 0)
		return 1;
	return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
}

int usb4v_sim_gc(const char *prog, int argc, char **argv)
{
	struct gc g = {.prog = prog};
	bool all = false;
	uid_t uids[1024];
	size_t n;
	int status = 0;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--idle")) {
			g.idle = true;
		} else if (!strcmp(argv[i], "--all-users")) {
			all = true;
		} else {
			fprintf(stderr, "%s: gc: unknown option '%s'\n", prog,
				argv[i]);
			return 2;
		}
	}
	if (all && geteuid()) {
		fprintf(stderr, "%s: gc --all-users needs root\n", prog);
		return 2;
	}
	scan_processes(&g);
	if (!all) {
		status = gc_user(&g);
	} else {
		n = find_uids(uids, sizeof(uids) / sizeof(uids[0]));
		for (size_t i = 0; i < n; i++)
			if (uids[i] != getuid())
				status |= gc_as(&g, uids[i]);
		status |= gc_user(&g);
	}
	free(g.users);
	return status ? 1 : 0;
}
