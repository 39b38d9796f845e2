/* SPDX-License-Identifier: MIT */
/*
 * The nhi link backend's commands to the kernel shim: its driver methods
 * through the uverbs ioctl (channel get, doorbell, CQ signal) and the
 * uverbs write commands it makes itself (the context, the kernel CQs that
 * carry completion events). The rings themselves are in nhi.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "nhi_int.h"

#define NHI_RDMA_DRIVER_UNKNOWN 0

/* uverbs ioctl on UVERBS_OBJECT_DEVICE with driver attributes. */
static int nhi_ioctl(int fd, uint16_t method, const struct ib_uverbs_attr *a,
		     unsigned int n)
{
	/* the header ends in a flexible array: lay it out in raw words */
	uint64_t b[(sizeof(struct ib_uverbs_ioctl_hdr) +
		    4 * sizeof(struct ib_uverbs_attr)) / 8];
	struct ib_uverbs_ioctl_hdr *hdr = (struct ib_uverbs_ioctl_hdr *)b;

	if (n > 4)
		return -EINVAL;
	memset(b, 0, sizeof(b));
	hdr->length = (uint16_t)(sizeof(*hdr) + n * sizeof(*a));
	hdr->object_id = UVERBS_OBJECT_DEVICE;
	hdr->method_id = method;
	hdr->num_attrs = (uint16_t)n;
	hdr->driver_id = NHI_RDMA_DRIVER_UNKNOWN;
	memcpy(hdr + 1, a, n * sizeof(*a));
	if (ioctl(fd, RDMA_VERBS_IOCTL, hdr))
		return -errno;
	return 0;
}

static struct ib_uverbs_attr attr_u32(uint16_t id, uint32_t v)
{
	struct ib_uverbs_attr a;

	memset(&a, 0, sizeof(a));
	a.attr_id = id;
	a.len = sizeof(uint32_t);
	a.flags = UVERBS_ATTR_F_MANDATORY;
	a.data = v; /* <= 8 bytes travel inline */
	return a;
}

static struct ib_uverbs_attr attr_out(uint16_t id, void *p, size_t len)
{
	struct ib_uverbs_attr a;

	memset(&a, 0, sizeof(a));
	a.attr_id = id;
	a.len = (uint16_t)len;
	a.flags = UVERBS_ATTR_F_MANDATORY;
	a.data = (uintptr_t)p;
	return a;
}

/* Lane 0 goes without its attribute: the kernel's default. */
int u4l_nhi_raw_doorbell(struct u4l_dev *dev, uint32_t remote, uint32_t lane,
			 bool has_tx, uint32_t tx_prod, bool has_rx,
			 uint32_t rx_cons)
{
	struct ib_uverbs_attr a[4];
	unsigned int n = 0;

	a[n++] = attr_u32(U4V_ATTR_DOORBELL_REMOTE, remote);
	if (lane)
		a[n++] = attr_u32(U4V_ATTR_DOORBELL_LANE, lane);
	if (has_tx)
		a[n++] = attr_u32(U4V_ATTR_DOORBELL_TX_PROD, tx_prod);
	if (has_rx)
		a[n++] = attr_u32(U4V_ATTR_DOORBELL_RX_CONS, rx_cons);
	u4l_count(&to_nhi(dev)->syscalls, 1);
	return nhi_ioctl(to_nhi(dev)->cmd_fd, U4V_METHOD_DOORBELL, a, n);
}

/*
 * remote = U4V_CHAN_NEXT: a channel (of any lane) a peer made that we were
 * not told of.
 */
int nhi_cmd_chan_get(struct nhi_dev *d, uint32_t remote, uint32_t lane,
		     struct u4v_chan_info *info)
{
	struct ib_uverbs_attr a[3];
	unsigned int n = 0;

	a[n++] = attr_u32(U4V_ATTR_CHAN_GET_REMOTE, remote);
	a[n++] = attr_out(U4V_ATTR_CHAN_GET_INFO, info, sizeof(*info));
	if (lane)
		a[n++] = attr_u32(U4V_ATTR_CHAN_GET_LANE, lane);
	return nhi_ioctl(d->cmd_fd, U4V_METHOD_CHAN_GET, a, n);
}

int u4l_nhi_raw_chan_get(struct u4l_dev *dev, uint32_t remote, uint32_t lane,
			 struct u4v_chan_info *info)
{
	u4l_count(&to_nhi(dev)->syscalls, 1);
	return nhi_cmd_chan_get(to_nhi(dev), remote, lane, info);
}

/* GET_CONTEXT through the uverbs write interface, with our driver data. */
int nhi_cmd_get_context(int fd, const struct u4v_alloc_ucontext_req *req,
			struct ib_uverbs_get_context_resp *core,
			struct u4v_alloc_ucontext_resp *drv)
{
	_Static_assert((sizeof(struct ib_uverbs_cmd_hdr) +
			sizeof(struct ib_uverbs_get_context) +
			sizeof(struct u4v_alloc_ucontext_req)) % 8 == 0 &&
			       (sizeof(struct ib_uverbs_get_context_resp) +
				sizeof(struct u4v_alloc_ucontext_resp)) % 8 == 0,
		       "GET_CONTEXT buffers are whole words");
	/* command and response end in flexible arrays: raw words */
	struct ib_uverbs_cmd_hdr hdr = { .command = IB_USER_VERBS_CMD_GET_CONTEXT };
	struct ib_uverbs_get_context cmd;
	uint64_t in[(sizeof(hdr) + sizeof(cmd) + sizeof(*req)) / 8];
	uint64_t out[(sizeof(*core) + sizeof(*drv)) / 8];

	memset(out, 0, sizeof(out));
	memset(&cmd, 0, sizeof(cmd));
	hdr.in_words = sizeof(in) / 4;
	hdr.out_words = sizeof(out) / 4;
	cmd.response = (uintptr_t)out;
	memcpy(in, &hdr, sizeof(hdr));
	memcpy((uint8_t *)in + sizeof(hdr), &cmd, sizeof(cmd));
	memcpy((uint8_t *)in + sizeof(hdr) + sizeof(cmd), req, sizeof(*req));
	if (write(fd, in, sizeof(in)) != (ssize_t)sizeof(in))
		return -errno;
	memcpy(core, out, sizeof(*core));
	memcpy(drv, (uint8_t *)out + sizeof(*core), sizeof(*drv));
	return 0;
}

/* Completion events through the kernel. */

static int nhi_write_cmd(int fd, uint32_t command, void *in, size_t in_len,
			 size_t out_len)
{
	struct ib_uverbs_cmd_hdr *hdr = in;

	hdr->command = command;
	hdr->in_words = (uint16_t)(in_len / 4);
	hdr->out_words = (uint16_t)(out_len / 4);
	if (write(fd, in, in_len) != (ssize_t)in_len)
		return -errno;
	return 0;
}

int u4l_nhi_cq_create(struct u4l_dev *dev, int comp_fd, uint64_t user_handle,
		      uint32_t cqe, uint32_t *handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_cq cmd;
	} in;
	struct ib_uverbs_create_cq_resp out;
	int ret;

	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	in.cmd.response = (uintptr_t)&out;
	in.cmd.user_handle = user_handle;
	in.cmd.cqe = cqe;
	in.cmd.comp_channel = comp_fd;
	ret = nhi_write_cmd(to_nhi(dev)->cmd_fd, IB_USER_VERBS_CMD_CREATE_CQ,
			    &in, sizeof(in), sizeof(out));
	if (!ret)
		*handle = out.cq_handle;
	return ret;
}

int u4l_nhi_cq_signal(struct u4l_dev *dev, uint32_t handle)
{
	struct ib_uverbs_attr a;

	memset(&a, 0, sizeof(a));
	a.attr_id = U4V_ATTR_CQ_SIGNAL_HANDLE;
	a.flags = UVERBS_ATTR_F_MANDATORY;
	a.data = handle;
	return nhi_ioctl(to_nhi(dev)->cmd_fd, U4V_METHOD_CQ_SIGNAL, &a, 1);
}

int u4l_nhi_cq_destroy(struct u4l_dev *dev, uint32_t handle,
		       uint32_t *events_reported)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_cq cmd;
	} in;
	struct ib_uverbs_destroy_cq_resp out;
	int ret;

	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	in.cmd.response = (uintptr_t)&out;
	in.cmd.cq_handle = handle;
	ret = nhi_write_cmd(to_nhi(dev)->cmd_fd, IB_USER_VERBS_CMD_DESTROY_CQ,
			    &in, sizeof(in), sizeof(out));
	if (!ret && events_reported)
		*events_reported = out.comp_events_reported;
	return ret;
}
