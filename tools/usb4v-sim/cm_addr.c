/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm ids on a software cable: addresses, routes, the QP attributes
 * rdma_cm hands out, options. Semantics of Linux 6.1's rdma_cm (cma.c) and
 * IB CM (cm.c) on a RoCE v2 port.
 *
 * Addresses. The ends' addresses stand for the addresses two hosts would
 * have on the cable's network interface: an id bound to one uses that end's
 * device; resolving one from an id bound to no end picks the *other* end,
 * the one the cable reaches it from, and from an id bound to an end, that
 * end (its own address is then a loopback). A process that sees one end
 * (`exec --end`) is the host at that end: the other end's address is not
 * its own (bind: EADDRNOTAVAIL), and resolving its own goes to itself.
 * Every other loopback address (127.0.0.0/8, ::1) and the zero address
 * are what they are to the kernel's rdma_cm (cma_any_addr): binding to one
 * is a wildcard bind, resolving one a loopback connection on the id's end
 * (the first end it sees when it has none); a multicast address resolves
 * to the id's end too (joining it fails). Other local addresses: bind fails with ENODEV (their netdev has
 * no RDMA device), foreign ones with EADDRNOTAVAIL; as destinations both
 * give ADDR_ERROR, -ENODEV.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/ib_user_sa.h>

#include "cm_int.h"

#define PACKET_LIFE_TIME 18 /* CMA_IBOE_PACKET_LIFETIME */
#define HOP_LIMIT 64
#define SA_EQ 2 /* IB_SA_EQ: a selector meaning "exactly" */

static const struct cmc_cable *cable(void)
{
	return cmc_get(); /* loaded when the file was opened */
}

bool cmi_sa_v4(const struct sockaddr *sa, uint32_t *addr, uint16_t *port)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};
	const struct sockaddr_in6 *s6 = (const void *)sa;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;

		*addr = s4->sin_addr.s_addr;
		*port = ntohs(s4->sin_port);
		return true;
	}
	if (sa->sa_family != AF_INET6)
		return false;
	*port = ntohs(s6->sin6_port);
	if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr)) {
		*addr = 0;
		return true;
	}
	if (memcmp(s6->sin6_addr.s6_addr, mapped, 12))
		return false;
	memcpy(addr, s6->sin6_addr.s6_addr + 12, 4);
	return true;
}

/* cma_any_addr: the zero address or a loopback address. */
static bool any_or_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *s6 = (const void *)sa;

	if (sa->sa_family == AF_INET) {
		uint32_t a =
		    ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);

		return !a || a >> 24 == 127;
	}
	return sa->sa_family == AF_INET6 &&
	       (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr) ||
		IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr));
}

/* A multicast group address: resolved on the id's own end, as the kernel
 * routes it out of the bound device, so that joining it can fail cleanly
 * (ucma.c: multicast is not offered). */
static bool multicast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(
		    ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_MULTICAST(
		   &((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* The end whose address sa is, or -1. */
static int end_of(const struct sockaddr *sa)
{
	uint32_t a;
	uint16_t port;

	if (!cmi_sa_v4(sa, &a, &port) || !a)
		return -1;
	return cmc_end_of(cable(), a);
}

static uint16_t sa_port(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET
			 ? ((const struct sockaddr_in *)sa)->sin_port
			 : ((const struct sockaddr_in6 *)sa)->sin6_port);
}

static size_t sa_len(int family)
{
	return family == AF_INET ? sizeof(struct sockaddr_in)
				 : sizeof(struct sockaddr_in6);
}

/* Write addr (network order) into ss, keeping its family and port. */
static void sa_set_addr(struct sockaddr_storage *ss, uint32_t addr)
{
	if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (void *)ss;

		memset(&s6->sin6_addr, 0, sizeof(s6->sin6_addr));
		if (addr) {
			s6->sin6_addr.s6_addr[10] = 0xff;
			s6->sin6_addr.s6_addr[11] = 0xff;
			memcpy(s6->sin6_addr.s6_addr + 12, &addr, 4);
		}
	} else {
		((struct sockaddr_in *)ss)->sin_addr.s_addr = addr;
	}
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

/* Is sa an address of this host (one some netdev has)? */
static bool is_local(const struct sockaddr *sa)
{
	struct sockaddr_storage probe;
	int s, ok;

	memcpy(&probe, sa, sa_len(sa->sa_family));
	sa_set_port(&probe, 0);
	s = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	ok = !bind(s, (struct sockaddr *)&probe,
		   (socklen_t)sa_len(sa->sa_family));
	syscall(SYS_close, s);
	return ok;
}

/* rdma_ip2gid: an IPv4 address mapped, an IPv6 address as it is. */
static void ip2gid(const struct sockaddr_storage *ss, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (ss->ss_family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &((const struct sockaddr_in *)ss)->sin_addr,
		       4);
	} else if (ss->ss_family == AF_INET6) {
		memcpy(gid, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
}

int cmi_init(struct cm_id *id, uint16_t ps, uint8_t qp_type)
{
	id->ps = ps;
	id->qp_type = qp_type;
	id->state = CM_IDLE;
	/* cma.c: the starting PSN is random, and this side's rq_psn */
	if (getrandom(&id->seq, sizeof(id->seq), GRND_NONBLOCK) !=
	    sizeof(id->seq))
		id->seq = (uint32_t)(uintptr_t)id ^ (uint32_t)getpid();
	id->seq &= 0xffffff;
	/* cma_set_default_qkey; RDMA_PS_IPOIB would need a multicast group */
	if (ps == RDMA_PS_UDP || ps == RDMA_PS_IB)
		id->qkey = CM_UDP_QKEY;
	return 0;
}

int cmi_bind(struct cm_id *id, const struct sockaddr *addr)
{
	const struct cmc_cable *c = cable();
	const uint32_t addrs[2] = {c->end[0].addr, c->end[1].addr};
	uint16_t port = sa_port(addr);
	int end, s;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -EAFNOSUPPORT; /* AF_IB included */
	if (id->state != CM_IDLE)
		return -EINVAL;
	end = end_of(addr);
	if (end >= 0 && !c->end[end].present)
		return -EADDRNOTAVAIL; /* the host at the other end's */
	if (end < 0 && !any_or_loopback(addr))
		return is_local(addr) ? -ENODEV : -EADDRNOTAVAIL;
	s = cmw_reserve(c->token, id->ps, addrs, end, c->view, &port);
	if (s < 0)
		return s;
	id->sock = s;
	memset(&id->src, 0, sizeof(id->src));
	memcpy(&id->src, addr, sa_len(addr->sa_family));
	sa_set_port(&id->src, port);
	id->end = end;
	id->state = CM_ADDR_BOUND;
	return 0;
}

int cmi_resolve_addr(struct cm_id *id, const struct sockaddr *src,
		     const struct sockaddr *dst)
{
	const struct cmc_cable *c = cable();
	int dend, ret;

	if (dst->sa_family == AF_IB || (src && src->sa_family == AF_IB))
		return -EAFNOSUPPORT;
	if (id->state == CM_IDLE) {
		/* cma_bind_addr: the source, or the wildcard of dst's family */
		struct sockaddr_storage any = {.ss_family = dst->sa_family};

		ret = cmi_bind(id, src && src->sa_family
				       ? src
				       : (const struct sockaddr *)&any);
		if (ret)
			return ret;
	}
	if (id->src.ss_family != dst->sa_family)
		return -EINVAL;
	if (id->state != CM_ADDR_BOUND)
		return -EINVAL;
	memset(&id->dst, 0, sizeof(id->dst));
	memcpy(&id->dst, dst, sa_len(dst->sa_family));
	dend = end_of(dst);
	if (dend >= 0) {
		if (id->end < 0) {
			/* an end's address is reached across the cable, or is
			 * the only end this process sees */
			id->end = c->end[1 - dend].present ? 1 - dend : dend;
			sa_set_addr(&id->src, c->end[id->end].addr);
		}
	} else if (any_or_loopback(dst) || multicast(dst)) {
		/* cma_resolve_loopback: a connection to the id's own end */
		if (id->end < 0)
			id->end = cmc_first_present(c);
		dend = id->end;
	} else {
		/* rdma_resolve_ip finds no RDMA device that reaches it:
		 * cma_acquire_dev_by_src_ip's -ENODEV */
		cmi_event(id, CME_ADDR_ERROR, -ENODEV);
		return 0;
	}
	id->peer_end = dend;
	id->state = CM_ADDR_RESOLVED;
	cmi_event(id, CME_ADDR_RESOLVED, 0);
	return 0;
}

int cmi_resolve_route(struct cm_id *id)
{
	if (id->state != CM_ADDR_RESOLVED)
		return -EINVAL;
	id->state = CM_ROUTE_RESOLVED;
	id->have_route = true;
	cmi_event(id, CME_ROUTE_RESOLVED, 0);
	return 0;
}

int cmi_listen(struct cm_id *id, int backlog)
{
	if (id->state == CM_IDLE) {
		struct sockaddr_in any = {.sin_family = AF_INET};
		int ret = cmi_bind(id, (struct sockaddr *)&any);

		if (ret)
			return ret;
	}
	if (id->state != CM_ADDR_BOUND)
		return -EINVAL;
	if (listen(id->sock, backlog))
		return -errno;
	id->backlog = backlog;
	id->state = CM_LISTEN;
	cmi_watch_sock(id, true);
	return 0;
}

/* RDMA_OPTION_IB_PATH: a path record from the application (librdmacm sets
 * one it got from ibacm); the route is ours either way. */
static int set_ib_path(struct cm_id *id, const void *val, uint32_t len)
{
	const struct ib_path_rec_data *p = val;
	const uint32_t want =
	    IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL;
	bool found = false;

	if (!len || len % sizeof(*p))
		return -EINVAL;
	for (uint32_t i = 0; i < len / sizeof(*p); i++)
		found |= p[i].flags == want;
	if (!found || id->end < 0)
		return -EINVAL;
	return cmi_resolve_route(id);
}

int cmi_set_option(struct cm_id *id, uint32_t level, uint32_t name,
		   const void *val, uint32_t len)
{
	int v;

	if (level == RDMA_OPTION_IB)
		return name == RDMA_OPTION_IB_PATH ? set_ib_path(id, val, len)
						   : -ENOSYS;
	if (level != RDMA_OPTION_ID)
		return -ENOSYS;
	switch (name) {
	case RDMA_OPTION_ID_TOS:
		if (len != 1)
			return -EINVAL;
		id->tos = *(const uint8_t *)val;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		if (len != sizeof(int))
			return -EINVAL;
		memcpy(&v, val, sizeof(v));
		if (name == RDMA_OPTION_ID_AFONLY) {
			if (id->state != CM_IDLE && id->state != CM_ADDR_BOUND)
				return -EINVAL;
			id->afonly = v != 0;
			return 0;
		}
		if (!((v && id->state != CM_LISTEN) || id->state == CM_IDLE))
			return -EINVAL;
		id->reuseaddr = v != 0;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (len != 1)
			return -EINVAL;
		if (id->qp_type != IBV_QPT_RC)
			return -EINVAL;
		id->timeout = *(const uint8_t *)val;
		id->timeout_set = true;
		return 0;
	default:
		return -ENOSYS;
	}
}

void cmi_path_ah(const struct cm_id *id, struct ib_uverbs_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->grh.dgid, cable()->end[id->peer_end].gid, 16);
	ah->grh.sgid_index = cable()->end[id->end].gid_index;
	ah->grh.hop_limit = HOP_LIMIT;
	ah->grh.traffic_class = id->tos;
	ah->is_global = 1;
	ah->port_num = 1;
}

uint8_t cmi_ack_timeout(const struct cm_id *id)
{
	/* the IB CM: the path's packet life time + 1; the passive side
	 * takes the requester's (cm_ack_timeout of the REQ) */
	if (id->timeout_set)
		return id->timeout;
	if (!id->active && id->peer_ack_timeout)
		return id->peer_ack_timeout;
	return PACKET_LIFE_TIME + 1;
}

/* Does the IB CM state allow rdma_init_qp_attr for `state`? */
static bool cm_allows(const struct cm_id *id, uint32_t state)
{
	switch (id->phase) {
	case CP_REQ_SENT:
		return state == IBV_QPS_INIT;
	case CP_REQ_RCVD:
	case CP_REP_SENT:
	case CP_REP_RCVD:
	case CP_ESTABLISHED:
		return state <= IBV_QPS_RTS && state >= IBV_QPS_INIT;
	default:
		return false;
	}
}

int cmi_init_qp_attr(struct cm_id *id, uint32_t state,
		     struct ib_uverbs_qp_attr *a)
{
	bool cm = id->phase != CP_NONE && id->qp_type != IBV_QPT_UD;

	a->qp_state = state;
	a->port_num = 1;
	a->pkey_index = 0;
	if (!cm) {
		/* cma_ib_init_qp_attr: before a CM exchange, and UD */
		a->qp_attr_mask =
		    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->qp_type == IBV_QPT_UD) {
			if (!id->qkey)
				return -EINVAL; /* RDMA_PS_IPOIB */
			a->qkey = id->qkey;
			a->qp_attr_mask |= IBV_QP_QKEY;
		} else {
			a->qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
		}
		if (state == IBV_QPS_RTR)
			a->rq_psn = id->seq;
		return 0;
	}
	if (!cm_allows(id, state))
		return -EINVAL;
	switch (state) {
	case IBV_QPS_INIT:
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
				  IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (id->responder_resources)
			a->qp_access_flags |=
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		break;
	case IBV_QPS_RTR:
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER;
		cmi_path_ah(id, &a->ah_attr);
		a->path_mtu = IBV_MTU_4096;
		a->dest_qp_num = id->remote_qpn;
		a->rq_psn = id->seq;
		a->max_dest_rd_atomic = id->responder_resources;
		a->min_rnr_timer = 0;
		break;
	default: /* RTS */
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN |
				  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_TIMEOUT;
		a->sq_psn = id->sq_psn;
		a->retry_cnt = id->retry_count;
		a->rnr_retry = id->rnr_retry_count;
		a->max_rd_atomic = id->initiator_depth;
		a->timeout = cmi_ack_timeout(id);
		break;
	}
	return 0;
}

/* The path record of a resolved route: between the two ends' RoCE v2 GIDs
 * (the kernel writes the addresses' GIDs, the same but for loopback
 * addresses, which have no GID of their own here). */
static void fill_path(const struct cm_id *id, struct ib_user_path_rec *p)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->dgid, cable()->end[id->peer_end].gid, 16);
	memcpy(p->sgid, cable()->end[id->end].gid, 16);
	p->reversible = 1;
	p->mtu = IBV_MTU_4096;
	p->pkey = htobe16(0xffff);
	p->hop_limit = HOP_LIMIT;
	p->traffic_class = id->tos;
	p->numb_path = 1;
	p->mtu_selector = SA_EQ;
	p->rate_selector = SA_EQ;
	p->packet_life_time_selector = SA_EQ;
	p->packet_life_time =
	    id->timeout_set && id->timeout ? id->timeout - 1 : PACKET_LIFE_TIME;
}

void cmi_query_route(struct cm_id *id, struct rdma_ucm_query_route_resp *r)
{
	if (id->src.ss_family)
		memcpy(&r->src_addr, &id->src, sa_len(id->src.ss_family));
	if (id->dst.ss_family)
		memcpy(&r->dst_addr, &id->dst, sa_len(id->dst.ss_family));
	r->ibdev_index = UINT32_MAX; /* unknown: librdmacm matches the GUID */
	if (id->end < 0)
		return;
	r->node_guid = cable()->end[id->end].node_guid;
	r->port_num = 1;
	if (id->have_route) {
		r->num_paths = 1;
		fill_path(id, &r->ib_route[0]);
		return;
	}
	/* ucma_copy_iboe_route without a path: the GIDs of the addresses */
	ip2gid(&id->dst, r->ib_route[0].dgid);
	ip2gid(&id->src, r->ib_route[0].sgid);
	r->ib_route[0].pkey = htobe16(0xffff);
}
