// SPDX-License-Identifier: MIT
/*
 * Contexts: attach to the cable named by the device's sysfs directory, open
 * the engine, provide async_fd; device and port queries.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include <usb4verbs/sim.h>
#include <usb4verbs/nhi.h>

#include "u4vp.h"

static void u4vp_free_context(struct ibv_context *ibctx);
static int u4vp_query_device_ex(struct ibv_context *ibctx,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size);
static int u4vp_query_port(struct ibv_context *ibctx, uint8_t port,
			   struct ibv_port_attr *attr);
static int u4vp_query_rt_values(struct ibv_context *ibctx,
				struct ibv_values_ex *values);

static const struct u4vp_context_ops u4vp_ctx_ops = {
    .advise_mr = u4vp_advise_mr,
    .alloc_mw = u4vp_alloc_mw,
    .alloc_pd = u4vp_alloc_pd,
    .bind_mw = u4vp_bind_mw,
    .create_ah = u4vp_create_ah,
    .create_cq = u4vp_create_cq,
    .create_cq_ex = u4vp_create_cq_ex,
    .create_qp = u4vp_create_qp,
    .create_qp_ex = u4vp_create_qp_ex,
    .create_srq = u4vp_create_srq,
    .dealloc_mw = u4vp_dealloc_mw,
    .dealloc_pd = u4vp_dealloc_pd,
    .dereg_mr = u4vp_dereg_mr,
    .destroy_ah = u4vp_destroy_ah,
    .destroy_cq = u4vp_destroy_cq,
    .destroy_qp = u4vp_destroy_qp,
    .destroy_srq = u4vp_destroy_srq,
    .free_context = u4vp_free_context,
    .modify_qp = u4vp_modify_qp,
    .modify_srq = u4vp_modify_srq,
    .poll_cq = u4vp_poll_cq,
    .post_recv = u4vp_post_recv,
    .post_send = u4vp_post_send,
    .post_srq_recv = u4vp_post_srq_recv,
    .query_device_ex = u4vp_query_device_ex,
    .query_port = u4vp_query_port,
    .query_qp = u4vp_query_qp,
    .query_rt_values = u4vp_query_rt_values,
    .query_srq = u4vp_query_srq,
    .reg_mr = u4vp_reg_mr,
    .req_notify_cq = u4vp_req_notify_cq,
    .rereg_mr = u4vp_rereg_mr,
    .resize_cq = u4vp_resize_cq,
};

/* Read the first line of <dir>/<name>; 0, ENOENT or another errno. */
static int read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[IBV_SYSFS_PATH_MAX + 32];
	ssize_t n;
	int fd, err;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = read(fd, buf, len - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return err;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* node_guid is "xxxx:xxxx:xxxx:xxxx"; returned in network byte order. */
static uint64_t read_node_guid(const char *dir)
{
	unsigned int w[4];
	char buf[64];

	if (read_line(dir, "node_guid", buf, sizeof(buf)) ||
	    sscanf(buf, "%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3]) != 4)
		return 0;
	return htobe64((uint64_t)(w[0] & 0xffff) << 48 |
		       (uint64_t)(w[1] & 0xffff) << 32 |
		       (uint64_t)(w[2] & 0xffff) << 16 | (w[3] & 0xffff));
}

/*
 * Entries of the port's GID table: one file each in <dir>/ports/1/gids
 * (the kernel's table follows the cable's net device; the software
 * cable's tree has its own).
 */
static uint32_t count_gids(const char *dir)
{
	char path[IBV_SYSFS_PATH_MAX + 32];
	struct dirent *e;
	uint32_t n = 0;
	DIR *d;

	if ((size_t)snprintf(path, sizeof(path), "%s/ports/1/gids", dir) >=
	    sizeof(path))
		return 0;
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * Attach to the software cable named in <ibdev_path>/usb4v_sim, or to the
 * kernel's channels; *kernel_async_fd: the kernel's async event fd, or -1.
 */
static int open_link(const struct u4vp_device *dev, int cmd_fd,
		     struct u4l_dev **link, int *kernel_async_fd)
{
	char line[512], shm[256];
	unsigned int end;
	int err;

	err = read_line(dev->ibdev_path, "usb4v_sim", line, sizeof(line));
	if (err == ENOENT) {
		/* a kernel (usb4verbs.ko) device: channels from the shim */
		err = -u4l_nhi_open(cmd_fd, 0, kernel_async_fd, link);
		if (err)
			fprintf(stderr, "usb4verbs: %s: kernel context: %s\n",
				dev->ibdev_name, strerror(err));
		return err;
	}
	if (err) {
		fprintf(stderr, "usb4verbs: %s: cannot read %s/usb4v_sim: %s\n",
			dev->ibdev_name, dev->ibdev_path, strerror(err));
		return err;
	}
	if (sscanf(line, "shm=%255s end=%u", shm, &end) != 2 || end > 1) {
		fprintf(stderr,
			"usb4verbs: %s: malformed usb4v_sim line \"%s\" "
			"(want \"shm=<name> end=<0|1>\")\n",
			dev->ibdev_name, line);
		return EINVAL;
	}
	err = -u4l_sim_open(shm, end, link);
	if (err)
		fprintf(stderr,
			"usb4verbs: %s: cannot attach to software cable %s "
			"end %u: %s\n",
			dev->ibdev_name, shm, end, strerror(err));
	return err;
}

/*
 * The kernel says IBV_EVENT_DEVICE_FATAL on its async event fd when the
 * device goes away (unplug, driver unbound or unloaded): this thread
 * passes the kernel's events on into the pipe the application reads. It
 * ends with the context, or when the kernel's fd fails (device gone).
 */
static void *kernel_events(void *arg)
{
	struct u4vp_context *ctx = arg;
	struct pollfd pfd[2] = {{.fd = ctx->kernel_async_fd, .events = POLLIN},
				{.fd = ctx->kernel_stop_fd, .events = POLLIN}};
	struct ib_uverbs_async_event_desc ev;

	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		if (read(ctx->kernel_async_fd, &ev, sizeof(ev)) != sizeof(ev))
			break;
		if (write(ctx->async_wfd, &ev, sizeof(ev)) != sizeof(ev)) {
			/* a full pipe: the application reads no events */
		}
	}
	return NULL;
}

static int kernel_events_start(struct u4vp_context *ctx)
{
	int err;

	if (ctx->kernel_async_fd < 0)
		return 0;
	ctx->kernel_stop_fd = eventfd(0, EFD_CLOEXEC);
	if (ctx->kernel_stop_fd < 0)
		return errno;
	err = pthread_create(&ctx->kernel_events, NULL, kernel_events, ctx);
	if (err) {
		close(ctx->kernel_stop_fd);
		ctx->kernel_stop_fd = -1;
	}
	return err;
}

static void kernel_events_stop(struct u4vp_context *ctx)
{
	if (ctx->kernel_stop_fd >= 0) {
		if (eventfd_write(ctx->kernel_stop_fd, 1) == 0)
			pthread_join(ctx->kernel_events, NULL);
		close(ctx->kernel_stop_fd);
	}
	if (ctx->kernel_async_fd >= 0)
		close(ctx->kernel_async_fd);
}

/*
 * async_fd: libibverbs reads 16-byte uverbs event descriptors from it.
 * The write end is non-blocking so that an application that never reads
 * async events cannot stall the engine's progress. Returns an errno value.
 */
static int async_pipe(int pfd[2])
{
	int err;

	if (pipe2(pfd, O_CLOEXEC))
		return errno;
	if (fcntl(pfd[1], F_SETFL, O_NONBLOCK)) {
		err = errno;
		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	return 0;
}

/*
 * The engine's context over attr->link, its async events written into
 * async_wfd. The engine takes the link only when it succeeds: it is
 * closed here otherwise.
 */
static int open_engine(struct u4vp_device *dev, struct u4vp_context *ctx,
		       struct u4v_ctx_attr *attr, int async_wfd)
{
	int err;

	ctx->node_guid_be = read_node_guid(dev->ibdev_path);
	attr->node_guid = ctx->node_guid_be;
	attr->gid_tbl_len = count_gids(dev->ibdev_path);
	attr->async_event_fd = async_wfd;
	err = u4v_ctx_open(attr, &ctx->eng);
	if (err) {
		attr->link->ops->close(attr->link);
		fprintf(stderr, "usb4verbs: %s: engine context: %s\n",
			dev->ibdev_name, strerror(err));
	}
	return err;
}

struct verbs_context *u4vp_alloc_context(struct ibv_device *ibdev, int cmd_fd,
					 void *private_data)
{
	struct u4vp_device *dev =
	    u4vp_container_of(ibdev, struct u4vp_device, vdev.device);
	struct u4v_ctx_attr attr = {.async_event_fd = -1};
	struct u4vp_context *ctx;
	int pfd[2] = {-1, -1};
	int err;

	/* Takes cmd_fd: closed by verbs_uninit_context or on failure. */
	ctx = _verbs_init_and_alloc_context(
	    ibdev, cmd_fd, sizeof(*ctx), &((struct u4vp_context *)NULL)->vctx,
	    0 /* driver id unknown */);
	if (!ctx)
		return NULL;
	ctx->async_wfd = -1;
	ctx->kernel_async_fd = -1;
	ctx->kernel_stop_fd = -1;

	err = open_link(dev, ctx->vctx.context.cmd_fd, &attr.link,
			&ctx->kernel_async_fd);
	ctx->link = attr.link;
	if (err)
		goto err_uninit;

	err = async_pipe(pfd);
	if (err) {
		attr.link->ops->close(attr.link);
		goto err_uninit;
	}
	err = open_engine(dev, ctx, &attr, pfd[1]);
	if (err)
		goto err_pipe;

	ctx->async_wfd = pfd[1];
	err = kernel_events_start(ctx);
	if (err) {
		u4v_ctx_close(ctx->eng);
		goto err_pipe;
	}
	ctx->vctx.context.async_fd = pfd[0];
	ctx->vctx.context.num_comp_vectors = 1;
	verbs_set_ops(&ctx->vctx, &u4vp_ctx_ops);
	return &ctx->vctx;

err_pipe:
	close(pfd[0]);
	close(pfd[1]);
err_uninit:
	if (ctx->kernel_async_fd >= 0)
		close(ctx->kernel_async_fd);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = err;
	return NULL;
}

static void u4vp_free_context(struct ibv_context *ibctx)
{
	struct u4vp_context *ctx = to_uctx(ibctx);

	/* Stops the engine's progress first: nothing writes events after. */
	u4v_ctx_close(ctx->eng);
	kernel_events_stop(ctx);
	close(ctx->async_wfd);
	/* Ours; closed here so that verbs_uninit_context does not. */
	close(ibctx->async_fd);
	ibctx->async_fd = -1;
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static int u4vp_query_device_ex(struct ibv_context *ibctx,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size)
{
	struct u4vp_context *ctx = to_uctx(ibctx);
	int err;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	err = u4v_query_device(ctx->eng, attr, attr_size);
	if (err)
		return err;
	/* The sysfs node GUID is the device's identity; keep them equal. */
	if (!attr->orig_attr.node_guid)
		attr->orig_attr.node_guid = ctx->node_guid_be;
	return 0;
}

static int u4vp_query_rt_values(struct ibv_context *ibctx,
				struct ibv_values_ex *values)
{
	return u4v_query_rt_values(to_uctx(ibctx)->eng, values);
}

static int u4vp_query_port(struct ibv_context *ibctx, uint8_t port,
			   struct ibv_port_attr *attr)
{
	return u4v_query_port(to_uctx(ibctx)->eng, port, attr);
}
