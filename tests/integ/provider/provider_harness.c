// SPDX-License-Identifier: MIT
/* The harness of test_provider_load (see provider_harness.h). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <usb4verbs/engine.h>
#include <usb4verbs/sim.h>

#include "provider_harness.h"

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

#define UVERBS_NAME "u4vtest-uverbs0"
#define CDEV_PATH "/dev/infiniband/" UVERBS_NAME
#define NODE_GUID_STR "0002:c903:00ab:cdef"

const char *gid_str[4] = {
    "fe80:0000:0000:0000:0002:c9ff:feab:cdef",
    "fe80:0000:0000:0000:0002:c9ff:feab:cdef",
    "0000:0000:0000:0000:0000:ffff:c0a8:0101",
    "0000:0000:0000:0000:0000:ffff:c0a8:0101",
};
static const char *gid_type_str[4] = {"IB/RoCE v1", "RoCE v2", "IB/RoCE v1",
				      "RoCE v2"};

/* ---- interposers for libibverbs (the executable's symbols win) ---- */

static int redirect(const char *path)
{
	return path && strcmp(path, CDEV_PATH) == 0;
}

int open(const char *path, int flags, ...)
{
	static int (*next)(const char *, int, ...);
	mode_t mode = 0;
	int fd;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!next)
		next =
		    (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	fd = next(path, flags, mode);
	if (fd < 0 && redirect(path))
		fd = next("/dev/null", flags, mode);
	return fd;
}

int stat(const char *restrict path, struct stat *restrict st)
{
	static int (*next)(const char *restrict, struct stat *restrict);

	if (!next)
		next = (int (*)(const char *restrict,
				struct stat *restrict))dlsym(RTLD_NEXT, "stat");
	if (next(path, st) == 0)
		return 0;
	return redirect(path) ? next("/dev/null", st) : -1;
}

int socket(int domain, int type, int protocol)
{
	static int (*next)(int, int, int);

	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	if (!next)
		next = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	return next(domain, type, protocol);
}

/* ---- fixture: fake sysfs + cable ---- */

char tmpdir[256];
static char shm_name[128];
static struct ibv_device **dev_list;
struct ibv_device *dev;
struct ibv_context *ctx;

static void put_file(const char *rel, const char *content)
{
	char path[512], dir[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (p = dir + strlen(tmpdir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(dir, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static int rm_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char sub[1024];

	if (lstat(path, &st))
		return 0;
	if (S_ISDIR(st.st_mode)) {
		d = opendir(path);
		while (d && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			rm_tree(sub);
		}
		if (d)
			closedir(d);
		return rmdir(path);
	}
	return unlink(path);
}

int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

int group_setup(void **state)
{
	const char *pfx = getenv("U4V_TEST_SHM_PREFIX");
	struct u4l_sim_config cfg;
	char rel[256], line[256];
	int i, n;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/u4v-provider-sysfs.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(shm_name, sizeof(shm_name), "%s-%d",
		 pfx ? pfx : "/u4vt-provider", (int)getpid());
	u4l_sim_config_default(&cfg);
	if (u4l_sim_create(shm_name, &cfg))
		return -1;

	put_file("class/infiniband_verbs/abi_version", "6\n");
	put_file("class/infiniband_verbs/" UVERBS_NAME "/ibdev",
		 IBDEV_NAME "\n");
	put_file("class/infiniband_verbs/" UVERBS_NAME "/dev", "0:0\n");
	put_file("class/infiniband_verbs/" UVERBS_NAME "/abi_version", "1\n");
	put_file("class/infiniband/" IBDEV_NAME "/node_type", "1: CA\n");
	put_file("class/infiniband/" IBDEV_NAME "/node_guid",
		 NODE_GUID_STR "\n");
	for (i = 0; i < 4; i++) {
		snprintf(rel, sizeof(rel),
			 "class/infiniband/" IBDEV_NAME "/ports/1/gids/%d", i);
		snprintf(line, sizeof(line), "%s\n", gid_str[i]);
		put_file(rel, line);
		snprintf(rel, sizeof(rel),
			 "class/infiniband/" IBDEV_NAME
			 "/ports/1/gid_attrs/types/%d",
			 i);
		snprintf(line, sizeof(line), "%s\n", gid_type_str[i]);
		put_file(rel, line);
	}
	put_file("class/infiniband/" IBDEV_NAME "/ports/1/pkeys/0", "0xffff\n");
	snprintf(line, sizeof(line), "shm=%s end=0\n", shm_name);
	put_file("class/infiniband/" IBDEV_NAME "/usb4v_sim", line);

	setenv("SYSFS_PATH", tmpdir, 1);
	setenv("RDMAV_DRIVERS", U4V_PROVIDER_PREFIX, 1);
	setenv("IBV_SHOW_WARNINGS", "1", 1);

	dev_list = ibv_get_device_list(&n);
	if (!dev_list)
		return -1;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(dev_list[i]), IBDEV_NAME))
			dev = dev_list[i];
	if (!dev) {
		fprintf(stderr,
			"provider did not claim %s (RDMAV_DRIVERS=%s)\n",
			IBDEV_NAME, U4V_PROVIDER_PREFIX);
		return -1;
	}
	return 0;
}

int group_teardown(void **state)
{
	if (dev_list)
		ibv_free_device_list(dev_list);
	u4l_sim_destroy(shm_name);
	rm_tree(tmpdir);
	return 0;
}

int open_ctx(void **state)
{
	ctx = ibv_open_device(dev);
	return ctx ? 0 : -1;
}

int close_ctx(void **state)
{
	int rc = ctx ? ibv_close_device(ctx) : 0;

	ctx = NULL;
	return rc;
}

/* ---- helpers ---- */

/* Poll until one completion arrives (5 s bound). */
void poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = u4vt_now_ms() + 5000;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		assert_true(n >= 0);
		if (n == 1)
			return;
	} while (u4vt_now_ms() < end);
	fail_msg("no completion within 5 s");
}

void to_init(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
				.port_num = 1,
				.pkey_index = 0,
				.qp_access_flags = access};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	assert_int_equal(ibv_modify_qp(qp, &a, mask), 0);
	assert_int_equal(qp->state, IBV_QPS_INIT);
}

void to_rts(struct ibv_qp *qp, uint32_t dest_qpn)
{
	union ibv_gid gid;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};
	int mask = IBV_QP_STATE;

	assert_int_equal(ibv_query_gid(ctx, 1, 0, &gid), 0);
	if (qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_4096;
		a.dest_qp_num = dest_qpn;
		a.rq_psn = 0;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = 12;
			mask |=
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	assert_int_equal(ibv_modify_qp(qp, &a, mask), 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	assert_int_equal(ibv_modify_qp(qp, &a, mask), 0);
	assert_int_equal(qp->state, IBV_QPS_RTS);
}

/* ---- tests ---- */

void maybe_reexec_with_shim(char **argv)
{
	const char *pre = getenv("LD_PRELOAD");
	char buf[1024];

	if (getenv("U4V_PLT_CHILD") || access(U4V_SHIM_PATH, R_OK))
		return;
	snprintf(buf, sizeof(buf), "%s%s%s", U4V_SHIM_PATH, pre ? ":" : "",
		 pre ? pre : "");
	setenv("LD_PRELOAD", buf, 1);
	setenv("U4V_PLT_CHILD", "1", 1);
	/* An ASan build would object to the shim preceding its runtime. */
	setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 0);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "re-exec with the shim failed (%s): testing without\n",
		strerror(errno));
}
