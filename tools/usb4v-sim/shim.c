/* SPDX-License-Identifier: MIT */
/*
 * libusb4v-sim-shim.so: LD_PRELOADed by `usb4v-sim exec` so that the
 * distribution's unmodified libibverbs 44, and middleware over it (UCX, Open
 * MPI), can open software-cable devices.
 *
 * Interception points (each is a libc entry point libibverbs 44, libnl or
 * UCX 1.13 actually imports; see usb4verbs(7)):
 *
 *  socket()   AF_NETLINK/NETLINK_RDMA fails with EPROTONOSUPPORT. libibverbs
 *             enumerates devices over netlink first and only reads
 *             $SYSFS_PATH when that socket cannot be made; on a host with
 *             ib_core the software cable would otherwise be invisible (and
 *             the real devices visible). NETLINK_ROUTE sockets are followed
 *             by nl_route.c, which adds the ends' addresses to address
 *             dumps; getifaddrs() lists them too (ifaddrs.c).
 *  stat(), access() and their variants (lstat, fstatat, statx, the
 *             glibc < 2.33 __xstat forms; faccessat, euidaccess, eaccess)
 *             ibv_get_device_list stat()s /dev/infiniband/<uverbs> and drops
 *             devices whose node is missing; UCX stat()s it again, wants a
 *             character device and access(R_OK|W_OK)s it. For software-cable
 *             devices the answer is that of /dev/null.
 *  /sys/class/infiniband/<dev>/...
 *             Middleware reads its device's sysfs files itself from /sys,
 *             not through SYSFS_PATH (UCX: ports/N/gid_attrs/types/<i>,
 *             which tells RoCE v2 GIDs from v1, gid_attrs/ndevs/<i>,
 *             device/local_cpus and numa_node). For a software-cable device
 *             open(), stat() and access() of such a path go to the same path
 *             in $SYSFS_PATH/class/infiniband/<dev>/ instead, so the answers
 *             (or ENOENT) are the cable's.
 *  open() and friends
 *             ibv_open_device opens /dev/infiniband/<uverbs> O_RDWR and
 *             insists on a character device. For software-cable devices
 *             /dev/null is opened instead and the fd remembered as a
 *             "command fd". Its ioctl()s fail with ENOTTY, which makes
 *             libibverbs use the write() path and the sysfs fallbacks for
 *             GIDs and pkeys.
 *  write()    On a command fd, IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL (the one
 *             kernel command libibverbs issues on its own, from
 *             ibv_create_comp_channel) is answered with the read end of a
 *             pipe; usb4v_shim_comp_channel_wfd() gives the provider the
 *             write end, where it writes completion events (8-byte CQ
 *             handles, as the kernel would). Any other command fails with
 *             EOPNOTSUPP. Every other fd goes straight to libc.
 *  /dev/infiniband/rdma_cm
 *             When the cable's sysfs tree has class/misc/rdma_cm, open()
 *             gives an rdma_cm file of the software cable (ucma.c: the
 *             kernel's rdma_cm ABI, connections between the processes of
 *             the cable through cm_wire.c), whose write()s are its commands
 *             and which fstat() shows as a character device, as librdmacm
 *             checks.
 *  close(), dup2(), dup3(), close_range()
 *             Forget command fds, channels and rdma_cm files whose fd number
 *             goes away; closing a channel's read end also closes its write
 *             end, closing an rdma_cm file destroys its ids.
 *
 * Edge cases, by design:
 *  - dup()/fcntl(F_DUPFD) of a command fd or channel yields an ordinary fd:
 *    writes to a duplicated command fd reach /dev/null, and the channel's
 *    write end lives until the original read-end fd number is closed.
 *  - Raw syscalls (syscall(SYS_close, ...)) bypass the shim; the tables
 *    then hold a stale entry until the number is reused by open/dup2/close.
 *  - Everything the shim creates is O_CLOEXEC; after fork() both processes
 *    keep consistent copies of the tables.
 *
 * Hot path: write(), close() and fstat() on ordinary fds test one bit of a
 * static bitmap (relaxed atomic load) and tail-call libc. The tables behind
 * the bitmaps are protected by one mutex.
 */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>

#include "interpose.h"
#include "nl_route.h"
#include "ucma.h"

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

#define CDEV_PREFIX "/dev/infiniband/"
#define SYSFS_IB_PREFIX "/sys/class/infiniband/"
#define SHIM_MAX_FD 65536 /* fds tracked; higher ones are moved down */
#define WORD_BITS 64

static uint64_t cmd_bits[SHIM_MAX_FD / WORD_BITS];  /* command fds */
static uint64_t chan_bits[SHIM_MAX_FD / WORD_BITS]; /* channel read ends */
static uint64_t ucma_bits[SHIM_MAX_FD / WORD_BITS]; /* rdma_cm files */
/* Any of the above: the one bit the hot paths test. */
static uint64_t special_bits[SHIM_MAX_FD / WORD_BITS];
static int chan_wfd[SHIM_MAX_FD];		    /* read end -> write end */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static inline bool bit_test(const uint64_t *bits, int fd)
{
	if ((unsigned)fd >= SHIM_MAX_FD)
		return false;
	return (__atomic_load_n(&bits[fd / WORD_BITS], __ATOMIC_RELAXED) >>
		(fd % WORD_BITS)) & 1;
}

static inline void bit_set(uint64_t *bits, int fd)
{
	__atomic_fetch_or(&bits[fd / WORD_BITS], 1ull << (fd % WORD_BITS),
			  __ATOMIC_RELEASE);
}

static inline void bit_clear(uint64_t *bits, int fd)
{
	__atomic_fetch_and(&bits[fd / WORD_BITS], ~(1ull << (fd % WORD_BITS)),
			   __ATOMIC_RELEASE);
}

/* ---- the next definitions of the intercepted functions ---- */

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*close_fn)(int);
typedef int (*socket_fn)(int, int, int);
typedef int (*stat_fn)(const char *, struct stat *);
typedef int (*xstat_fn)(int, const char *, struct stat *);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);
typedef int (*close_range_fn)(unsigned, unsigned, int);

static write_fn next_write;
static close_fn next_close;

__attribute__((constructor)) static void shim_init(void)
{
	next_write = (write_fn)dlsym(RTLD_NEXT, "write");
	next_close = (close_fn)dlsym(RTLD_NEXT, "close");
}

static ssize_t real_write(int fd, const void *buf, size_t n)
{
	write_fn f = next_write;
	if (__builtin_expect(!f, 0))
		return syscall(SYS_write, fd, buf, n);
	return f(fd, buf, n);
}

static int real_close(int fd)
{
	close_fn f = next_close;
	if (__builtin_expect(!f, 0))
		return (int)syscall(SYS_close, fd);
	return f(fd);
}

/* ---- which paths are ours ---- */

/*
 * The cable's sysfs tree, or NULL. libibverbs follows SYSFS_PATH only when
 * not setuid: so do we.
 */
static const char *sim_sysfs_root(void)
{
	const char *sysfs;

	if (getuid() != geteuid())
		return NULL;
	sysfs = getenv("SYSFS_PATH");
	return sysfs && *sysfs ? sysfs : NULL;
}

/*
 * True when `path` is /dev/infiniband/<name> and
 * $SYSFS_PATH/class/infiniband_verbs/<name>/ibdev names a software-cable
 * device. Uses raw syscalls only: it runs inside open() and stat().
 */
static bool is_sim_cdev(const char *path)
{
	char file[PATH_MAX], buf[16];
	const char *name, *sysfs;
	int fd, n;

	if (!path || strncmp(path, CDEV_PREFIX, sizeof(CDEV_PREFIX) - 1))
		return false;
	name = path + sizeof(CDEV_PREFIX) - 1;
	if (!*name || strchr(name, '/') || name[0] == '.')
		return false;
	if (!strcmp(name, "rdma_cm"))
		return ucma_is_path(path);
	if (!(sysfs = sim_sysfs_root()))
		return false;
	n = snprintf(file, sizeof(file), "%s/class/infiniband_verbs/%s/ibdev",
		     sysfs, name);
	if (n < 0 || (size_t)n >= sizeof(file))
		return false;
	fd = (int)syscall(SYS_openat, AT_FDCWD, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = (int)syscall(SYS_read, fd, buf, sizeof(buf));
	syscall(SYS_close, fd);
	return n >= 5 && !memcmp(buf, "usb4v", 5);
}

/*
 * /sys/class/infiniband/<dev>[/...] of a software-cable device (its entry in
 * $SYSFS_PATH has the provider's `usb4v_sim` file) becomes the same path
 * under $SYSFS_PATH, written to buf (PATH_MAX). Anything else is returned
 * unchanged. Middleware reads these files itself from /sys (UCX: the GID
 * types that tell RoCE v2 from v1, the GID's netdev, local_cpus).
 */
static const char *sim_sysfs(const char *path, char *buf)
{
	const char *dev, *sysfs;
	size_t dev_len;
	int n;

	if (!path ||
	    strncmp(path, SYSFS_IB_PREFIX, sizeof(SYSFS_IB_PREFIX) - 1))
		return path;
	dev = path + sizeof(SYSFS_IB_PREFIX) - 1;
	dev_len = strcspn(dev, "/");
	if (!dev_len || dev[0] == '.' || dev_len > NAME_MAX ||
	    !(sysfs = sim_sysfs_root()))
		return path;
	n = snprintf(buf, PATH_MAX, "%s/class/infiniband/%.*s/usb4v_sim", sysfs,
		     (int)dev_len, dev);
	if (n < 0 || n >= PATH_MAX ||
	    syscall(SYS_faccessat, AT_FDCWD, buf, F_OK) != 0)
		return path;
	n = snprintf(buf, PATH_MAX, "%s/class/%s", sysfs,
		     path + sizeof("/sys/class/") - 1);
	return n < 0 || n >= PATH_MAX ? path : buf;
}

/*
 * The path stat() and access() look at: /dev/null for a software-cable
 * device node (a character device anyone may read and write), the cable's
 * own sysfs file for its /sys/class/infiniband entry, else `path` itself.
 */
static const char *sim_path(const char *path, char *buf)
{
	if (__builtin_expect(is_sim_cdev(path), 0))
		return "/dev/null";
	return sim_sysfs(path, buf);
}

/* Keep fd below SHIM_MAX_FD so the bitmaps can describe it. */
static int lower_fd(int fd)
{
	int low;

	if (fd < SHIM_MAX_FD)
		return fd;
	low = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	real_close(fd);
	if (low < 0)
		return -1;
	if (low >= SHIM_MAX_FD) {
		real_close(low);
		errno = EMFILE;
		return -1;
	}
	return low;
}

/* Forget whatever fd used to be (it is being closed or replaced). */
static void forget_fd_locked(int fd)
{
	if (!bit_test(special_bits, fd))
		return;
	bit_clear(special_bits, fd);
	if (bit_test(ucma_bits, fd)) {
		bit_clear(ucma_bits, fd);
		ucma_release(fd);
	}
	nlr_forget(fd);
	if (bit_test(cmd_bits, fd))
		bit_clear(cmd_bits, fd);
	if (bit_test(chan_bits, fd)) {
		int wfd = chan_wfd[fd];
		bit_clear(chan_bits, fd);
		chan_wfd[fd] = -1;
		if (wfd >= 0)
			real_close(wfd);
	}
}

/*
 * fd is now one of the shim's files, of the kind kind_bits marks; a stale
 * entry of the number (from a raw close) is forgotten first. Under lock.
 */
static void track_fd_locked(int fd, uint64_t *kind_bits)
{
	forget_fd_locked(fd);
	bit_set(kind_bits, fd);
	bit_set(special_bits, fd);
}

/* track_fd_locked, taking the lock; returns fd. */
static int track_fd(int fd, uint64_t *kind_bits)
{
	pthread_mutex_lock(&lock);
	track_fd_locked(fd, kind_bits);
	pthread_mutex_unlock(&lock);
	return fd;
}

static inline bool is_special(int fd)
{
	return bit_test(special_bits, fd);
}

/* The software cable's rdma_cm device: a file of ucma.c. */
static int open_sim_rdma_cm(int flags)
{
	int fd = ucma_open(flags, SHIM_MAX_FD);

	if (fd < 0)
		return -1;
	return track_fd(fd, ucma_bits);
}

/* path passed is_sim_cdev(). */
static int open_sim_cdev(const char *path, int flags)
{
	int fd;

	if (!strcmp(path, CDEV_PREFIX "rdma_cm"))
		return open_sim_rdma_cm(flags);
	fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null",
			  (flags & ~(O_CREAT | O_TMPFILE | O_EXCL | O_TRUNC |
				     O_DIRECTORY | O_NOFOLLOW)) | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if ((flags & O_CLOEXEC) == 0) {
		/* respect the caller: CLOEXEC only if asked for */
		int fl = fcntl(fd, F_GETFD);
		if (fl >= 0)
			fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
	}
	fd = lower_fd(fd);
	if (fd < 0)
		return -1;
	return track_fd(fd, cmd_bits);
}

#define NEEDS_MODE(flags) (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE)
/* The optional mode argument of an open-like call whose last named
 * parameter is flags (GNU statement expression). */
#define MODE_ARG(flags)                                                       \
	({                                                                    \
		mode_t m_ = 0;                                                \
		if (NEEDS_MODE(flags)) {                                      \
			va_list ap_;                                          \
			va_start(ap_, flags);                                 \
			m_ = va_arg(ap_, mode_t);                             \
			va_end(ap_);                                          \
		}                                                             \
		m_;                                                           \
	})

EXPORT int open(const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = MODE_ARG(flags);
	if (__builtin_expect(is_sim_cdev(path), 0))
		return open_sim_cdev(path, flags);
	return NEXT(open_fn, "open")(sim_sysfs(path, buf), flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = MODE_ARG(flags);
	if (__builtin_expect(is_sim_cdev(path), 0))
		return open_sim_cdev(path, flags);
	return NEXT(open_fn, "open64")(sim_sysfs(path, buf), flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = MODE_ARG(flags);
	if (__builtin_expect(is_sim_cdev(path), 0))
		return open_sim_cdev(path, flags);
	return NEXT(openat_fn, "openat")(dirfd, sim_sysfs(path, buf), flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = MODE_ARG(flags);
	if (__builtin_expect(is_sim_cdev(path), 0))
		return open_sim_cdev(path, flags);
	return NEXT(openat_fn, "openat64")(dirfd, sim_sysfs(path, buf), flags, mode);
}

/* _FORTIFY_SOURCE entry points */
EXPORT int __open_2(const char *path, int flags)
{
	char buf[PATH_MAX];
	if (__builtin_expect(is_sim_cdev(path), 0))
		return open_sim_cdev(path, flags);
	return NEXT(open2_fn, "__open_2")(sim_sysfs(path, buf), flags);
}

EXPORT int __open64_2(const char *path, int flags)
{
	char buf[PATH_MAX];
	if (__builtin_expect(is_sim_cdev(path), 0))
		return open_sim_cdev(path, flags);
	return NEXT(open2_fn, "__open64_2")(sim_sysfs(path, buf), flags);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	char buf[PATH_MAX];
	if (__builtin_expect(is_sim_cdev(path), 0))
		return open_sim_cdev(path, flags);
	return NEXT(openat2_fn, "__openat_2")(dirfd, sim_sysfs(path, buf), flags);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	char buf[PATH_MAX];
	if (__builtin_expect(is_sim_cdev(path), 0))
		return open_sim_cdev(path, flags);
	return NEXT(openat2_fn, "__openat64_2")(dirfd, sim_sysfs(path, buf), flags);
}

/*
 * ---- stat and access ----
 * libibverbs 44 imports stat@GLIBC_2.33; UCX stat()s and access()es the
 * device node and reads /sys/class/infiniband itself. The other variants
 * answer the same way so that no way of asking tells a different story.
 */

#define STAT_LIKE(ret, name, params, type, ...)                                \
	EXPORT ret name params                                                 \
	{                                                                      \
		char buf[PATH_MAX];                                            \
		path = sim_path(path, buf);                                    \
		return NEXT(type, #name)(__VA_ARGS__);                         \
	}

typedef int (*lstat_fn)(const char *, struct stat *);
typedef int (*fstatat_fn)(int, const char *, struct stat *, int);
typedef int (*fxstatat_fn)(int, int, const char *, struct stat *, int);
typedef int (*statx_fn)(int, const char *, int, unsigned, struct statx *);
typedef int (*access_fn)(const char *, int);
typedef int (*faccessat_fn)(int, const char *, int, int);

STAT_LIKE(int, stat, (const char *restrict path, struct stat *restrict st),
	  stat_fn, path, st)
STAT_LIKE(int, stat64, (const char *restrict path, struct stat64 *restrict st),
	  stat_fn, path, (struct stat *)st)
STAT_LIKE(int, lstat, (const char *restrict path, struct stat *restrict st),
	  lstat_fn, path, st)
STAT_LIKE(int, lstat64, (const char *restrict path, struct stat64 *restrict st),
	  lstat_fn, path, (struct stat *)st)
STAT_LIKE(int, fstatat,
	  (int dirfd, const char *restrict path, struct stat *restrict st,
	   int flags),
	  fstatat_fn, dirfd, path, st, flags)
STAT_LIKE(int, fstatat64,
	  (int dirfd, const char *restrict path, struct stat64 *restrict st,
	   int flags),
	  fstatat_fn, dirfd, path, (struct stat *)st, flags)
STAT_LIKE(int, statx,
	  (int dirfd, const char *restrict path, int flags, unsigned mask,
	   struct statx *restrict stx),
	  statx_fn, dirfd, path, flags, mask, stx)
/* binaries linked against glibc < 2.33 */
STAT_LIKE(int, __xstat, (int ver, const char *path, struct stat *st), xstat_fn,
	  ver, path, st)
STAT_LIKE(int, __xstat64, (int ver, const char *path, struct stat64 *st),
	  xstat_fn, ver, path, (struct stat *)st)
STAT_LIKE(int, __lxstat, (int ver, const char *path, struct stat *st), xstat_fn,
	  ver, path, st)
STAT_LIKE(int, __lxstat64, (int ver, const char *path, struct stat64 *st),
	  xstat_fn, ver, path, (struct stat *)st)
STAT_LIKE(int, __fxstatat,
	  (int ver, int dirfd, const char *path, struct stat *st, int flags),
	  fxstatat_fn, ver, dirfd, path, st, flags)
STAT_LIKE(int, __fxstatat64,
	  (int ver, int dirfd, const char *path, struct stat64 *st, int flags),
	  fxstatat_fn, ver, dirfd, path, (struct stat *)st, flags)

STAT_LIKE(int, access, (const char *path, int mode), access_fn, path, mode)
STAT_LIKE(int, euidaccess, (const char *path, int mode), access_fn, path, mode)
STAT_LIKE(int, eaccess, (const char *path, int mode), access_fn, path, mode)
STAT_LIKE(int, faccessat, (int dirfd, const char *path, int mode, int flags),
	  faccessat_fn, dirfd, path, mode, flags)

/* ---- fstat: librdmacm insists that its rdma_cm fd is a character device ---- */

typedef int (*fstat_fn)(int, struct stat *);
typedef int (*fxstat_fn)(int, int, struct stat *);

EXPORT int fstat(int fd, struct stat *st)
{
	if (__builtin_expect(bit_test(ucma_bits, fd), 0))
		return NEXT(stat_fn, "stat")("/dev/null", st);
	return NEXT(fstat_fn, "fstat")(fd, st);
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	if (__builtin_expect(bit_test(ucma_bits, fd), 0))
		return NEXT(stat_fn, "stat64")("/dev/null", (struct stat *)st);
	return NEXT(fstat_fn, "fstat64")(fd, (struct stat *)st);
}

EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	if (__builtin_expect(bit_test(ucma_bits, fd), 0))
		return NEXT(xstat_fn, "__xstat")(ver, "/dev/null", st);
	return NEXT(fxstat_fn, "__fxstat")(ver, fd, st);
}

EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	if (__builtin_expect(bit_test(ucma_bits, fd), 0))
		return NEXT(xstat_fn, "__xstat64")(ver, "/dev/null",
						   (struct stat *)st);
	return NEXT(fxstat_fn, "__fxstat64")(ver, fd, (struct stat *)st);
}

/* ---- socket ---- */

EXPORT int socket(int domain, int type, int protocol)
{
	int fd;

	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	fd = NEXT(socket_fn, "socket")(domain, type, protocol);
	if (__builtin_expect(domain == AF_NETLINK && protocol == NETLINK_ROUTE,
			     0) &&
	    fd >= 0 && fd < SHIM_MAX_FD) {
		/* address dumps list the cable ends' addresses (nl_route.c) */
		pthread_mutex_lock(&lock);
		forget_fd_locked(fd);
		if (nlr_track(fd))
			bit_set(special_bits, fd);
		pthread_mutex_unlock(&lock);
	}
	return fd;
}

/* ---- command fds ---- */

static ssize_t create_comp_channel(const void *buf, size_t n)
{
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_comp_channel req;
	struct ib_uverbs_create_comp_channel_resp resp = {0};
	int p[2], rfd, wfd;

	memcpy(&hdr, buf, sizeof(hdr));
	if (n < sizeof(hdr) + sizeof(req) || (size_t)hdr.in_words * 4 != n ||
	    (size_t)hdr.out_words * 4 < sizeof(resp)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&req, (const char *)buf + sizeof(hdr), sizeof(req));
	if (!req.response) {
		errno = EFAULT;
		return -1;
	}
	if (pipe2(p, O_CLOEXEC))
		return -1;
	rfd = lower_fd(p[0]);
	if (rfd < 0) {
		int e = errno;
		real_close(p[1]);
		errno = e;
		return -1;
	}
	wfd = p[1];
	/* the provider's progress thread must never block on a full pipe */
	fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK);

	pthread_mutex_lock(&lock);
	track_fd_locked(rfd, chan_bits);
	chan_wfd[rfd] = wfd;
	pthread_mutex_unlock(&lock);

	resp.fd = (uint32_t)rfd;
	memcpy((void *)(uintptr_t)req.response, &resp, sizeof(resp));
	return (ssize_t)n;
}

static ssize_t command_write(const void *buf, size_t n)
{
	struct ib_uverbs_cmd_hdr hdr;

	if (n < sizeof(hdr)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.command == IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL)
		return create_comp_channel(buf, n);
	/* everything else belongs to a kernel that is not there */
	errno = EOPNOTSUPP;
	return -1;
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	if (__builtin_expect(bit_test(special_bits, fd), 0)) {
		if (bit_test(cmd_bits, fd))
			return command_write(buf, n);
		if (bit_test(ucma_bits, fd))
			return ucma_write(fd, buf, n);
	}
	return real_write(fd, buf, n);
}

EXPORT int usb4v_shim_comp_channel_wfd(int channel_fd)
{
	int wfd = -1;

	if (!bit_test(chan_bits, channel_fd))
		return -1;
	pthread_mutex_lock(&lock);
	if (bit_test(chan_bits, channel_fd))
		wfd = chan_wfd[channel_fd];
	pthread_mutex_unlock(&lock);
	return wfd;
}

/* ---- fd number lifetime ---- */

EXPORT int close(int fd)
{
	if (__builtin_expect(is_special(fd), 0)) {
		pthread_mutex_lock(&lock);
		forget_fd_locked(fd);
		pthread_mutex_unlock(&lock);
	}
	return real_close(fd);
}

EXPORT int dup2(int oldfd, int newfd)
{
	if (__builtin_expect(oldfd != newfd && is_special(newfd), 0)) {
		pthread_mutex_lock(&lock);
		forget_fd_locked(newfd);
		pthread_mutex_unlock(&lock);
	}
	return NEXT(dup2_fn, "dup2")(oldfd, newfd);
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	if (__builtin_expect(oldfd != newfd && is_special(newfd), 0)) {
		pthread_mutex_lock(&lock);
		forget_fd_locked(newfd);
		pthread_mutex_unlock(&lock);
	}
	return NEXT(dup3_fn, "dup3")(oldfd, newfd, flags);
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	close_range_fn f = NEXT(close_range_fn, "close_range");

	/* CLOSE_RANGE_CLOEXEC (4) only marks fds: nothing goes away */
	if (!(flags & 4) && first < SHIM_MAX_FD) {
		unsigned hi = last < SHIM_MAX_FD - 1 ? last : SHIM_MAX_FD - 1;
		pthread_mutex_lock(&lock);
		for (unsigned fd = first; fd <= hi; fd++)
			if (is_special((int)fd))
				forget_fd_locked((int)fd);
		pthread_mutex_unlock(&lock);
	}
	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	return f(first, last, flags);
}
