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

/*
 * How a command names its id: not at all, any id of the file
 * (ucma_get_ctx), or an id that has a device (ucma_get_ctx_dev). The
 * dispatcher looks the id up, so a handler starts from a valid one.
 */
enum cmd_id { ID_NONE, ID_ANY, ID_DEV };

/* Every command structure, so the dispatcher's copy fits any of them. */
union cmd_buf {
	struct rdma_ucm_create_id create_id;
	struct rdma_ucm_destroy_id destroy_id;
	struct rdma_ucm_bind_ip bind_ip;
	struct rdma_ucm_bind bind;
	struct rdma_ucm_resolve_ip resolve_ip;
	struct rdma_ucm_resolve_addr resolve_addr;
	struct rdma_ucm_resolve_route resolve_route;
	struct rdma_ucm_query query;
	struct rdma_ucm_connect connect;
	struct rdma_ucm_listen listen;
	struct rdma_ucm_accept accept;
	struct rdma_ucm_reject reject;
	struct rdma_ucm_disconnect disconnect;
	struct rdma_ucm_init_qp_attr init_qp_attr;
	struct rdma_ucm_get_event get_event;
	struct rdma_ucm_set_option set_option;
	struct rdma_ucm_notify notify;
	struct rdma_ucm_join_ip_mcast join_ip_mcast;
	struct rdma_ucm_join_mcast join_mcast;
	struct rdma_ucm_migrate_id migrate_id;
};

/*
 * A handler gets the command as the user gave it (zero beyond in_len), the
 * id it names (NULL for ID_NONE), and the size of the user's response;
 * each uses what its command needs of these.
 */
#define CMD(name)                                                      \
	static int name(struct cm_file *f __attribute__((unused)),      \
			struct cm_id *id __attribute__((unused)),       \
			union cmd_buf *u __attribute__((unused)),       \
			size_t in_len __attribute__((unused)),          \
			size_t out_len __attribute__((unused)))

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

CMD(cmd_create_id)
{
	struct rdma_ucm_create_id *c = &u->create_id;
	struct rdma_ucm_create_id_resp r = {0};
	uint8_t qp_type;
	int ret;

	if (out_len < sizeof(r))
		return -ENOSPC;
	switch (c->ps) {
	case RDMA_PS_TCP:
		qp_type = IBV_QPT_RC;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		qp_type = IBV_QPT_UD;
		break;
	case RDMA_PS_IB:
		qp_type = c->qp_type;
		break;
	default:
		return -EINVAL;
	}
	if (!c->response)
		return -EFAULT;
	id = cm_id_new(f);
	if (!id)
		return -ENOMEM;
	ret = cmi_init(id, c->ps, qp_type);
	if (!ret)
		ret = cm_handle_assign(id);
	if (ret) {
		cm_destroy_id(id);
		return ret;
	}
	id->uid = c->uid;
	r.id = id->handle;
	return put(c->response, &r, sizeof(r));
}

CMD(cmd_destroy_id)
{
	struct rdma_ucm_destroy_id_resp r = {0};

	if (out_len < sizeof(r))
		return -ENOSPC;
	r.events_reported = cm_destroy_id(id);
	return put(u->destroy_id.response, &r, sizeof(r));
}

/* rdma_addr_size(): the length of a supported sockaddr, else 0. */
static size_t addr_size(const void *addr)
{
	switch (((const struct sockaddr *)addr)->sa_family) {
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
	struct rdma_ucm_bind_ip *c = &u->bind_ip;

	if (!addr_size(&c->addr) || c->addr.sin6_family == AF_IB)
		return -EINVAL;
	return cmi_bind(id, (struct sockaddr *)&c->addr);
}

CMD(cmd_bind)
{
	struct rdma_ucm_bind *c = &u->bind;

	if (c->reserved || !c->addr_size || c->addr_size != addr_size(&c->addr))
		return -EINVAL;
	return cmi_bind(id, (struct sockaddr *)&c->addr);
}

CMD(cmd_resolve_ip)
{
	struct rdma_ucm_resolve_ip *c = &u->resolve_ip;
	struct sockaddr *src = (struct sockaddr *)&c->src_addr;

	if ((src->sa_family && !addr_size(src)) || !addr_size(&c->dst_addr))
		return -EINVAL;
	return cmi_resolve_addr(id, src->sa_family ? src : NULL,
				(struct sockaddr *)&c->dst_addr);
}

CMD(cmd_resolve_addr)
{
	struct rdma_ucm_resolve_addr *c = &u->resolve_addr;
	struct sockaddr *src = (struct sockaddr *)&c->src_addr;

	if (c->reserved || (c->src_size && c->src_size != addr_size(src)) ||
	    !c->dst_size || c->dst_size != addr_size(&c->dst_addr))
		return -EINVAL;
	return cmi_resolve_addr(id, c->src_size ? src : NULL,
				(struct sockaddr *)&c->dst_addr);
}

CMD(cmd_resolve_route)
{
	if (!u->resolve_route.timeout_ms)
		return -EINVAL;
	return cmi_resolve_route(id);
}

CMD(cmd_query_route)
{
	struct rdma_ucm_query_route_resp r;

	if (out_len < offsetof(struct rdma_ucm_query_route_resp, ibdev_index))
		return -ENOSPC;
	memset(&r, 0, sizeof(r));
	cmi_query_route(id, &r);
	return put(u->query.response, &r, min_sz(out_len, sizeof(r)));
}

CMD(cmd_connect)
{
	struct rdma_ucm_connect *c = &u->connect;
	struct rdma_ucm_ece ece = {0};

	if (in_len < offsetof(struct rdma_ucm_connect, ece))
		return -EINVAL;
	if (!c->conn_param.valid)
		return -EINVAL;
	if (in_len >= sizeof(*c))
		ece = c->ece;
	return cmi_connect(id, &c->conn_param, &ece);
}

CMD(cmd_listen)
{
	struct rdma_ucm_listen *c = &u->listen;

	if ((int)c->backlog <= 0 || c->backlog > MAX_BACKLOG)
		c->backlog = MAX_BACKLOG;
	return cmi_listen(id, (int)c->backlog);
}

CMD(cmd_accept)
{
	struct rdma_ucm_accept *c = &u->accept;
	struct rdma_ucm_ece ece = {0};

	if (in_len < offsetof(struct rdma_ucm_accept, ece))
		return -EINVAL;
	if (in_len >= sizeof(*c))
		ece = c->ece;
	cm_file_pump(f);
	return cmi_accept(id, c->conn_param.valid ? &c->conn_param : NULL,
			  c->uid, &ece);
}

CMD(cmd_reject)
{
	struct rdma_ucm_reject *c = &u->reject;

	if (!c->reason)
		c->reason = 28; /* IB_CM_REJ_CONSUMER_DEFINED */
	if (c->reason != 28 &&
	    c->reason != 35) /* or VENDOR_OPTION_NOT_SUPPORTED */
		return -EINVAL;
	cm_file_pump(f);
	return cmi_reject(id, c->private_data, c->private_data_len, c->reason);
}

CMD(cmd_disconnect)
{
	cm_file_pump(f);
	return cmi_disconnect(id);
}

CMD(cmd_init_qp_attr)
{
	struct rdma_ucm_init_qp_attr *c = &u->init_qp_attr;
	struct ib_uverbs_qp_attr r;
	int ret;

	if (out_len < sizeof(r))
		return -ENOSPC;
	if (c->qp_state > IBV_QPS_ERR)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	ret = cmi_init_qp_attr(id, c->qp_state, &r);
	return ret ? ret : put(c->response, &r, sizeof(r));
}

CMD(cmd_get_event)
{
	struct rdma_ucm_get_event *c = &u->get_event;
	struct cm_event *ev;
	struct pollfd pfd;
	int fd = f->fd;

	if (out_len <
	    sizeof(ev->resp) - sizeof(ev->resp.reserved) - sizeof(ev->resp.ece))
		return -ENOSPC;
	if (!c->response)
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
		if (cm_file_of(fd) != f) {
			/*
			 * Closed under us. In the kernel this call holds the
			 * file, which no event can reach any more, so it never
			 * returns; rping leaves its CM thread so at exit.
			 */
			pthread_mutex_unlock(&cm_lock);
			for (;;)
				pause();
		}
	}
	ev = f->head;
	cm_unlink_event(f, NULL, ev);
	cm_file_signal(f, f->head != NULL);
	memcpy((void *)(uintptr_t)c->response, &ev->resp,
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
	struct rdma_ucm_set_option *c = &u->set_option;

	if (c->optlen > 4096)
		return -EINVAL;
	if (c->optlen && !c->optval)
		return -EFAULT;
	return cmi_set_option(id, c->level, c->optname,
			      (const void *)(uintptr_t)c->optval, c->optlen);
}

/* rdma_notify only tells the IB CM a QP saw its first packet: the lookup
 * of an id with a device is all there is to it. */
CMD(cmd_notify)
{
	return 0;
}

/* No multicast: the device reports max_mcast_grp 0. */
CMD(cmd_join_mcast)
{
	return -EOPNOTSUPP;
}

CMD(cmd_leave_mcast)
{
	return -ENOENT; /* no multicast group was ever joined */
}

/* Move id's events from file `from` to f, keeping their order. */
static void move_events(struct cm_file *from, struct cm_file *f,
			struct cm_id *id)
{
	struct cm_event *ev, *prev = NULL, *next;

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
}

/* The id lives in the file c->fd names, not in f: ID_NONE. */
CMD(cmd_migrate_id)
{
	struct rdma_ucm_migrate_id *c = &u->migrate_id;
	struct rdma_ucm_migrate_resp r = {0};
	struct cm_file *from = cm_file_of((int)c->fd);
	int err = 0;

	if (!from) {
		/* not an rdma_cm file: ENOENT if no file at all */
		return fcntl((int)c->fd, F_GETFD) < 0 ? -ENOENT : -EINVAL;
	}
	id = cm_lookup(from, c->id, &err);
	if (!id)
		return err;
	if (from != f) {
		move_events(from, f, id);
		cmi_move(id, f);
		for (struct cm_id *i = cm_all; i; i = i->all_next)
			if (i->listener == id && i->phase == CP_ACCEPTING)
				cmi_move(i, f);
	}
	r.events_reported = id->events_reported;
	return put(c->response, &r, sizeof(r));
}

CMD(cmd_enosys)
{
	return -ENOSYS;
}

struct cmd_desc {
	int (*fn)(struct cm_file *f, struct cm_id *id, union cmd_buf *u,
		  size_t in_len, size_t out_len);
	enum cmd_id lookup;
	size_t id_off; /* where the command names its id */
};

#define WITH_ID(nr, func, type, how)                                           \
	[RDMA_USER_CM_CMD_##                                                   \
	    nr] = {.fn = func, .lookup = how, .id_off = offsetof(type, id)}
#define NO_ID(nr, func) [RDMA_USER_CM_CMD_##nr] = {.fn = func}

static const struct cmd_desc commands[] = {
    NO_ID(CREATE_ID, cmd_create_id),
    WITH_ID(DESTROY_ID, cmd_destroy_id, struct rdma_ucm_destroy_id, ID_ANY),
    WITH_ID(BIND_IP, cmd_bind_ip, struct rdma_ucm_bind_ip, ID_ANY),
    WITH_ID(RESOLVE_IP, cmd_resolve_ip, struct rdma_ucm_resolve_ip, ID_ANY),
    WITH_ID(RESOLVE_ROUTE, cmd_resolve_route, struct rdma_ucm_resolve_route,
	    ID_DEV),
    WITH_ID(QUERY_ROUTE, cmd_query_route, struct rdma_ucm_query, ID_ANY),
    WITH_ID(CONNECT, cmd_connect, struct rdma_ucm_connect, ID_DEV),
    WITH_ID(LISTEN, cmd_listen, struct rdma_ucm_listen, ID_ANY),
    WITH_ID(ACCEPT, cmd_accept, struct rdma_ucm_accept, ID_DEV),
    WITH_ID(REJECT, cmd_reject, struct rdma_ucm_reject, ID_DEV),
    WITH_ID(DISCONNECT, cmd_disconnect, struct rdma_ucm_disconnect, ID_DEV),
    WITH_ID(INIT_QP_ATTR, cmd_init_qp_attr, struct rdma_ucm_init_qp_attr,
	    ID_DEV),
    NO_ID(GET_EVENT, cmd_get_event),
    NO_ID(GET_OPTION, cmd_enosys),
    WITH_ID(SET_OPTION, cmd_set_option, struct rdma_ucm_set_option, ID_ANY),
    WITH_ID(NOTIFY, cmd_notify, struct rdma_ucm_notify, ID_DEV),
    WITH_ID(JOIN_IP_MCAST, cmd_join_mcast, struct rdma_ucm_join_ip_mcast,
	    ID_ANY),
    NO_ID(LEAVE_MCAST, cmd_leave_mcast),
    NO_ID(MIGRATE_ID, cmd_migrate_id),
    NO_ID(QUERY, cmd_enosys),
    WITH_ID(BIND, cmd_bind, struct rdma_ucm_bind, ID_ANY),
    WITH_ID(RESOLVE_ADDR, cmd_resolve_addr, struct rdma_ucm_resolve_addr,
	    ID_ANY),
    WITH_ID(JOIN_MCAST, cmd_join_mcast, struct rdma_ucm_join_mcast, ID_ANY),
};

/* Copy the command in, look up the id it names, run its handler. */
static int run_cmd(struct cm_file *f, const struct cmd_desc *d, const void *in,
		   size_t in_len, size_t out_len)
{
	union cmd_buf u;
	struct cm_id *id = NULL;
	uint32_t handle;
	int err = 0;

	memset(&u, 0, sizeof(u));
	memcpy(&u, in, min_sz(in_len, sizeof(u)));
	if (d->lookup != ID_NONE) {
		memcpy(&handle, (const char *)&u + d->id_off, sizeof(handle));
		id = d->lookup == ID_DEV ? cm_lookup_dev(f, handle, &err)
					 : cm_lookup(f, handle, &err);
		if (!id)
			return err;
	}
	return d->fn(f, id, &u, in_len, out_len);
}

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
	    !commands[hdr.cmd].fn || hdr.in + sizeof(hdr) > n) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm_lock);
	f = cm_file_of(fd);
	ret = f ? run_cmd(f, &commands[hdr.cmd],
			  (const char *)buf + sizeof(hdr), hdr.in, hdr.out)
		: -EBADF;
	pthread_mutex_unlock(&cm_lock);
	if (ret) {
		errno = -ret;
		return -1;
	}
	return (ssize_t)n;
}
