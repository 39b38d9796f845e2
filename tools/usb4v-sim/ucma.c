/* SPDX-License-Identifier: MIT */
/*
 * The kernel ABI of /dev/infiniband/rdma_cm (<rdma/rdma_user_cm.h>, ABI 4)
 * for a software cable: the decoding of every command librdmacm writes,
 * with the checks of Linux 6.1's drivers/infiniband/core/ucma.c. cm_file.c
 * keeps the files, ids and events; cm_addr.c and cm_conn.c do what the
 * kernel's rdma_cm (cma.c) and IB CM (cm.c) would.
 *
 * Not offered, with the error the command returns: AF_IB addresses
 * (EAFNOSUPPORT: librdmacm then uses its IP commands, as with an older
 * kernel), multicast (JOIN_*: EOPNOTSUPP, the device reports
 * max_mcast_grp 0), QUERY and GET_OPTION (ENOSYS; librdmacm uses them only
 * with AF_IB).
 */
#define _GNU_SOURCE
#include "ucma.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_int.h"

#define MAX_BACKLOG 1024 /* the kernel's net.rdma_ucm.max_backlog */

/* ---- commands ---- */

/* The user's response buffer: the kernel would fault on a bad one; we can
 * only refuse a null one. */
static int put(uint64_t response, const void *data, size_t len)
{
	if (!response)
		return -EFAULT;
	memcpy((void *)(uintptr_t)response, data, len);
	return 0;
}

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

#define CMD(name)                                                              \
	static int name(struct cm_file *f, const void *in, size_t in_len,      \
			size_t out_len)
/* The command structure, from what the user gave (zero beyond it). */
#define GET_CMD(type, var)                                                     \
	type var;                                                              \
	memset(&var, 0, sizeof(var));                                          \
	memcpy(&var, in, min_sz(in_len, sizeof(var)))

CMD(cmd_create_id)
{
	GET_CMD(struct rdma_ucm_create_id, c);
	struct rdma_ucm_create_id_resp r = {0};
	struct cm_id *id;
	uint8_t qp_type;
	int ret;

	if (out_len < sizeof(r))
		return -ENOSPC;
	switch (c.ps) {
	case RDMA_PS_TCP:
		qp_type = IBV_QPT_RC;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		qp_type = IBV_QPT_UD;
		break;
	case RDMA_PS_IB:
		qp_type = c.qp_type;
		break;
	default:
		return -EINVAL;
	}
	if (!c.response)
		return -EFAULT;
	id = cm_id_new(f);
	if (!id)
		return -ENOMEM;
	ret = cmi_init(id, c.ps, qp_type);
	if (!ret)
		ret = cm_handle_assign(id);
	if (ret) {
		cm_destroy_id(id);
		return ret;
	}
	id->uid = c.uid;
	r.id = id->handle;
	return put(c.response, &r, sizeof(r));
}

CMD(cmd_destroy_id)
{
	GET_CMD(struct rdma_ucm_destroy_id, c);
	struct rdma_ucm_destroy_id_resp r = {0};
	struct cm_id *id;
	int err = 0;

	if (out_len < sizeof(r))
		return -ENOSPC;
	id = cm_lookup(f, c.id, &err);
	if (!id)
		return err;
	r.events_reported = cm_destroy_id(id);
	return put(c.response, &r, sizeof(r));
}

/* rdma_addr_size(): the length of a supported sockaddr, else 0. */
static size_t addr_size(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return 0;
	}
}

CMD(cmd_bind_ip)
{
	GET_CMD(struct rdma_ucm_bind_ip, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	if (!addr_size((struct sockaddr *)&c.addr) ||
	    c.addr.sin6_family == AF_IB)
		return -EINVAL;
	id = cm_lookup(f, c.id, &err);
	return id ? cmi_bind(id, (struct sockaddr *)&c.addr) : err;
}

CMD(cmd_bind)
{
	GET_CMD(struct rdma_ucm_bind, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	if (c.reserved || !c.addr_size ||
	    c.addr_size != addr_size((struct sockaddr *)&c.addr))
		return -EINVAL;
	id = cm_lookup(f, c.id, &err);
	return id ? cmi_bind(id, (struct sockaddr *)&c.addr) : err;
}

CMD(cmd_resolve_ip)
{
	GET_CMD(struct rdma_ucm_resolve_ip, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	if ((c.src_addr.sin6_family &&
	     !addr_size((struct sockaddr *)&c.src_addr)) ||
	    !addr_size((struct sockaddr *)&c.dst_addr))
		return -EINVAL;
	id = cm_lookup(f, c.id, &err);
	if (!id)
		return err;
	return cmi_resolve_addr(
	    id, c.src_addr.sin6_family ? (struct sockaddr *)&c.src_addr : NULL,
	    (struct sockaddr *)&c.dst_addr);
}

CMD(cmd_resolve_addr)
{
	GET_CMD(struct rdma_ucm_resolve_addr, c);
	struct sockaddr *src = (struct sockaddr *)&c.src_addr;
	struct sockaddr *dst = (struct sockaddr *)&c.dst_addr;
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	if (c.reserved || (c.src_size && c.src_size != addr_size(src)) ||
	    !c.dst_size || c.dst_size != addr_size(dst))
		return -EINVAL;
	id = cm_lookup(f, c.id, &err);
	if (!id)
		return err;
	return cmi_resolve_addr(id, c.src_size ? src : NULL, dst);
}

CMD(cmd_resolve_route)
{
	GET_CMD(struct rdma_ucm_resolve_route, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	id = cm_lookup_dev(f, c.id, &err);
	if (!id)
		return err;
	if (!c.timeout_ms)
		return -EINVAL;
	return cmi_resolve_route(id);
}

CMD(cmd_query_route)
{
	GET_CMD(struct rdma_ucm_query, c);
	struct rdma_ucm_query_route_resp r;
	struct cm_id *id;
	int err = 0;

	if (out_len < offsetof(struct rdma_ucm_query_route_resp, ibdev_index))
		return -ENOSPC;
	id = cm_lookup(f, c.id, &err);
	if (!id)
		return err;
	memset(&r, 0, sizeof(r));
	cmi_query_route(id, &r);
	return put(c.response, &r, min_sz(out_len, sizeof(r)));
}

CMD(cmd_connect)
{
	GET_CMD(struct rdma_ucm_connect, c);
	struct rdma_ucm_ece ece = {0};
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	if (in_len < offsetof(struct rdma_ucm_connect, ece))
		return -EINVAL;
	if (!c.conn_param.valid)
		return -EINVAL;
	id = cm_lookup_dev(f, c.id, &err);
	if (!id)
		return err;
	if (in_len >= sizeof(c))
		ece = c.ece;
	return cmi_connect(id, &c.conn_param, &ece);
}

CMD(cmd_listen)
{
	GET_CMD(struct rdma_ucm_listen, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	id = cm_lookup(f, c.id, &err);
	if (!id)
		return err;
	if ((int)c.backlog <= 0 || c.backlog > MAX_BACKLOG)
		c.backlog = MAX_BACKLOG;
	return cmi_listen(id, (int)c.backlog);
}

CMD(cmd_accept)
{
	GET_CMD(struct rdma_ucm_accept, c);
	struct rdma_ucm_ece ece = {0};
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	if (in_len < offsetof(struct rdma_ucm_accept, ece))
		return -EINVAL;
	id = cm_lookup_dev(f, c.id, &err);
	if (!id)
		return err;
	if (in_len >= sizeof(c))
		ece = c.ece;
	cm_file_pump(f);
	return cmi_accept(id, c.conn_param.valid ? &c.conn_param : NULL, c.uid,
			  &ece);
}

CMD(cmd_reject)
{
	GET_CMD(struct rdma_ucm_reject, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	if (!c.reason)
		c.reason = 28; /* IB_CM_REJ_CONSUMER_DEFINED */
	if (c.reason != 28 &&
	    c.reason != 35) /* or VENDOR_OPTION_NOT_SUPPORTED */
		return -EINVAL;
	id = cm_lookup_dev(f, c.id, &err);
	if (!id)
		return err;
	cm_file_pump(f);
	return cmi_reject(id, c.private_data, c.private_data_len, c.reason);
}

CMD(cmd_disconnect)
{
	GET_CMD(struct rdma_ucm_disconnect, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	id = cm_lookup_dev(f, c.id, &err);
	if (!id)
		return err;
	cm_file_pump(f);
	return cmi_disconnect(id);
}

CMD(cmd_init_qp_attr)
{
	GET_CMD(struct rdma_ucm_init_qp_attr, c);
	struct ib_uverbs_qp_attr r;
	struct cm_id *id;
	int err = 0, ret;

	if (out_len < sizeof(r))
		return -ENOSPC;
	if (c.qp_state > IBV_QPS_ERR)
		return -EINVAL;
	id = cm_lookup_dev(f, c.id, &err);
	if (!id)
		return err;
	memset(&r, 0, sizeof(r));
	ret = cmi_init_qp_attr(id, c.qp_state, &r);
	return ret ? ret : put(c.response, &r, sizeof(r));
}

CMD(cmd_get_event)
{
	GET_CMD(struct rdma_ucm_get_event, c);
	struct cm_event *ev;
	struct pollfd pfd;
	int fd = f->fd;

	if (out_len <
	    sizeof(ev->resp) - sizeof(ev->resp.reserved) - sizeof(ev->resp.ece))
		return -ENOSPC;
	if (!c.response)
		return -EFAULT;
	for (;;) {
		cm_file_pump(f);
		if (f->head)
			break;
		if (fcntl(fd, F_GETFL) & O_NONBLOCK)
			return -EAGAIN;
		/* wait for the peer without the lock; restart after a
		 * signal, as the kernel's -ERESTARTSYS does under SA_RESTART */
		pthread_mutex_unlock(&cm_lock);
		pfd.fd = fd;
		pfd.events = POLLIN;
		poll(&pfd, 1, -1);
		pthread_mutex_lock(&cm_lock);
		if (cm_file_of(fd) != f)
			return -EBADF; /* closed under us */
	}
	ev = f->head;
	cm_unlink_event(f, NULL, ev);
	cm_file_signal(f, f->head != NULL);
	memcpy((void *)(uintptr_t)c.response, &ev->resp,
	       min_sz(out_len, sizeof(ev->resp)));
	ev->id->events_reported++;
	if (ev->child) {
		/* the listener's backlog slot is free again */
		ev->id->pending--;
		ev->child->listener = NULL;
		cmi_listener_slot(ev->id);
	}
	free(ev);
	return 0;
}

CMD(cmd_set_option)
{
	GET_CMD(struct rdma_ucm_set_option, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	id = cm_lookup(f, c.id, &err);
	if (!id)
		return err;
	if (c.optlen > 4096)
		return -EINVAL;
	if (c.optlen && !c.optval)
		return -EFAULT;
	return cmi_set_option(id, c.level, c.optname,
			      (const void *)(uintptr_t)c.optval, c.optlen);
}

CMD(cmd_notify)
{
	GET_CMD(struct rdma_ucm_notify, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	/* rdma_notify only tells the IB CM a QP saw its first packet */
	id = cm_lookup_dev(f, c.id, &err);
	return id ? 0 : err;
}

/* No multicast: the device reports max_mcast_grp 0. */
CMD(cmd_join_mcast)
{
	GET_CMD(struct rdma_ucm_join_mcast, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	id = cm_lookup(f, c.id, &err);
	return id ? -EOPNOTSUPP : err;
}

CMD(cmd_join_ip_mcast)
{
	GET_CMD(struct rdma_ucm_join_ip_mcast, c);
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	id = cm_lookup(f, c.id, &err);
	return id ? -EOPNOTSUPP : err;
}

CMD(cmd_leave_mcast)
{
	(void)f;
	(void)in;
	(void)in_len;
	(void)out_len;
	return -ENOENT; /* no multicast group was ever joined */
}

CMD(cmd_migrate_id)
{
	GET_CMD(struct rdma_ucm_migrate_id, c);
	struct rdma_ucm_migrate_resp r = {0};
	struct cm_file *from = cm_file_of((int)c.fd);
	struct cm_event *ev, *prev = NULL, *next;
	struct cm_id *id;
	int err = 0;

	(void)out_len;
	if (!from) {
		/* not an rdma_cm file: ENOENT if no file at all */
		return fcntl((int)c.fd, F_GETFD) < 0 ? -ENOENT : -EINVAL;
	}
	id = cm_lookup(from, c.id, &err);
	if (!id)
		return err;
	if (from != f) {
		/* move its events, keeping their order */
		for (ev = from->head; ev; ev = next) {
			next = ev->next;
			if (ev->id != id) {
				prev = ev;
				continue;
			}
			cm_unlink_event(from, prev, ev);
			if (ev->child)
				cmi_move(ev->child, f);
			cm_event_queue(ev, f);
		}
		cm_file_signal(from, from->head != NULL);
		cmi_move(id, f);
		for (struct cm_id *i = cm_all; i; i = i->all_next)
			if (i->listener == id && i->phase == CP_ACCEPTING)
				cmi_move(i, f);
	}
	r.events_reported = id->events_reported;
	return put(c.response, &r, sizeof(r));
}

CMD(cmd_enosys)
{
	(void)f;
	(void)in;
	(void)in_len;
	(void)out_len;
	return -ENOSYS;
}

typedef int (*cmd_fn)(struct cm_file *, const void *, size_t, size_t);

static const cmd_fn commands[] = {
    [RDMA_USER_CM_CMD_CREATE_ID] = cmd_create_id,
    [RDMA_USER_CM_CMD_DESTROY_ID] = cmd_destroy_id,
    [RDMA_USER_CM_CMD_BIND_IP] = cmd_bind_ip,
    [RDMA_USER_CM_CMD_RESOLVE_IP] = cmd_resolve_ip,
    [RDMA_USER_CM_CMD_RESOLVE_ROUTE] = cmd_resolve_route,
    [RDMA_USER_CM_CMD_QUERY_ROUTE] = cmd_query_route,
    [RDMA_USER_CM_CMD_CONNECT] = cmd_connect,
    [RDMA_USER_CM_CMD_LISTEN] = cmd_listen,
    [RDMA_USER_CM_CMD_ACCEPT] = cmd_accept,
    [RDMA_USER_CM_CMD_REJECT] = cmd_reject,
    [RDMA_USER_CM_CMD_DISCONNECT] = cmd_disconnect,
    [RDMA_USER_CM_CMD_INIT_QP_ATTR] = cmd_init_qp_attr,
    [RDMA_USER_CM_CMD_GET_EVENT] = cmd_get_event,
    [RDMA_USER_CM_CMD_GET_OPTION] = cmd_enosys,
    [RDMA_USER_CM_CMD_SET_OPTION] = cmd_set_option,
    [RDMA_USER_CM_CMD_NOTIFY] = cmd_notify,
    [RDMA_USER_CM_CMD_JOIN_IP_MCAST] = cmd_join_ip_mcast,
    [RDMA_USER_CM_CMD_LEAVE_MCAST] = cmd_leave_mcast,
    [RDMA_USER_CM_CMD_MIGRATE_ID] = cmd_migrate_id,
    [RDMA_USER_CM_CMD_QUERY] = cmd_enosys,
    [RDMA_USER_CM_CMD_BIND] = cmd_bind,
    [RDMA_USER_CM_CMD_RESOLVE_ADDR] = cmd_resolve_addr,
    [RDMA_USER_CM_CMD_JOIN_MCAST] = cmd_join_mcast,
};

ssize_t ucma_write(int fd, const void *buf, size_t n)
{
	struct rdma_ucm_cmd_hdr hdr;
	struct cm_file *f;
	int ret;

	if (n < sizeof(hdr)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.cmd >= sizeof(commands) / sizeof(commands[0]) ||
	    hdr.in + sizeof(hdr) > n) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm_lock);
	f = cm_file_of(fd);
	ret = f ? commands[hdr.cmd](f, (const char *)buf + sizeof(hdr), hdr.in,
				    hdr.out)
		: -EBADF;
	pthread_mutex_unlock(&cm_lock);
	if (ret) {
		errno = -ret;
		return -1;
	}
	return (ssize_t)n;
}
