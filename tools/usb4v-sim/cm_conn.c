/* SPDX-License-Identifier: MIT */
/*
 * The connection exchange of rdma_cm ids on a software cable, with the
 * semantics of Linux 6.1's rdma_cm (cma.c) over the IB CM (cm.c): REQ, REP,
 * RTU, REJ, DREQ and, for UD, SIDR_REQ and SIDR_REP travel as messages on a
 * connection to the listener's socket (cm_wire.h). What the application
 * sees:
 *   nobody listens           RC: REJECTED, status 8 (invalid service ID);
 *                            UD: UNREACHABLE, status 1 (SIDR unsupported);
 *                            after NO_LISTENER_GRACE_MS (see there)
 *   the listener rejects     REJECTED with its reason (28 consumer defined
 *                            or 35) and private data; UD: UNREACHABLE, 2
 *   the peer goes away       RC before ESTABLISHED: REJECTED, status 28;
 *   (destroys its id, dies)  after: DISCONNECTED; UD: UNREACHABLE, -ETIMEDOUT
 *   no answer                UNREACHABLE, -ETIMEDOUT, after the IB CM's
 *                            times (SETUP_TIMEOUT_MS, SIDR_TIMEOUT_MS)
 *   rdma_disconnect()        DISCONNECTED at once on this side (the IB CM
 *                            reports it when the DREP or its timeout comes),
 *                            at the peer 20 ms after it reads the DREQ
 *                            (peer_disconnected())
 * Events of a passive id before the application accepted it are not
 * reported (ucma.c), as the kernel's ucma does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "cm_int.h"

/* The IB CM's waits, in the kernel's approximation of 4.096 us * 2^n as
 * 2^(n-8) ms: a REQ (REP) the peer acknowledged with an MRA of service
 * timeout 24, plus one response timeout of 20; a SIDR_REQ sent 15 times
 * every response timeout. */
#define SETUP_TIMEOUT_MS ((1u << 16) + (1u << 12))
#define SIDR_TIMEOUT_MS (15u << 12)
/* A listener whose backlog is full is asked again this often. */
#define CONNECT_RETRY_MS 100u
/*
 * How long a request waits for a listener to appear before it is rejected.
 * On a network, address and route resolution take a neighbour lookup and
 * the REQ a round trip; here they take nothing, and tools that start to
 * listen right after telling the peer to connect (perftest 4.5 with -R,
 * whose retry after a REJECTED crashes) would lose the race every time.
 */
#define NO_LISTENER_GRACE_MS 1000u
/* See peer_disconnected(). */
#define PEER_DISCONNECT_MS 20u
#define NO_LISTENER_RETRY_MS 10u
#define REJ_TIMEOUT 1
#define REJ_INVALID_SERVICE_ID 8
#define REJ_CONSUMER_DEFINED 28
#define SIDR_UNSUPPORTED 1
#define SIDR_REJECT 2

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool is_ud(const struct cm_id *id)
{
	return id->qp_type == IBV_QPT_UD;
}

/* ---- descriptors ---- */

void cmi_watch_sock(struct cm_id *id, bool on)
{
	struct epoll_event ev = {.events = on ? EPOLLIN : 0,
				 .data.ptr = &id->sock_src};

	if (id->sock < 0)
		return;
	if (id->sock_watched) {
		epoll_ctl(id->file->fd, EPOLL_CTL_MOD, id->sock, &ev);
	} else if (on) {
		id->sock_src.kind = SRC_SOCK;
		cm_src_add(id, &id->sock_src, id->sock);
		id->sock_watched = true;
	}
}

static void unwatch_sock(struct cm_id *id)
{
	if (id->sock_watched)
		epoll_ctl(id->file->fd, EPOLL_CTL_DEL, id->sock, NULL);
	id->sock_watched = false;
}

static void close_sock(struct cm_id *id)
{
	if (id->sock < 0)
		return;
	unwatch_sock(id);
	syscall(SYS_close, id->sock);
	id->sock = -1;
}

/* The id's timerfd, in its file's epoll: 0 or -errno. Made before an
 * exchange that needs a deadline starts, so that none goes without one. */
static int ensure_timer(struct cm_id *id)
{
	if (id->timer >= 0)
		return 0;
	id->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (id->timer < 0)
		return -errno;
	id->timer_src.kind = SRC_TIMER;
	cm_src_add(id, &id->timer_src, id->timer);
	return 0;
}

/* Wake the id at at_ns (its timer exists: ensure_timer()). */
static void arm_timer(struct cm_id *id, uint64_t at_ns)
{
	struct itimerspec its = {
	    .it_value = {.tv_sec = (time_t)(at_ns / 1000000000ull),
			 .tv_nsec = (long)(at_ns % 1000000000ull)}};

	timerfd_settime(id->timer, TFD_TIMER_ABSTIME, &its, NULL);
}

static void disarm_timer(struct cm_id *id)
{
	struct itimerspec its = {0};

	if (id->timer >= 0)
		timerfd_settime(id->timer, 0, &its, NULL);
}

/*
 * The CM exchange is over: stop listening to the peer. A child's socket is
 * its connection only; an active id's is also its port reservation, kept
 * (shut down) until the id is destroyed.
 */
static void end_exchange(struct cm_id *id)
{
	id->phase = CP_DONE;
	id->connect_pending = false;
	free(id->req);
	id->req = NULL;
	disarm_timer(id);
	if (id->sock < 0)
		return;
	if (!id->active) {
		close_sock(id);
		return;
	}
	unwatch_sock(id);
	shutdown(id->sock, SHUT_RDWR);
}

/* Send m on the id's connection; a peer that is gone shows as a hang-up
 * at the next pump. */
static void send_msg(struct cm_id *id, struct cmw_msg *m)
{
	if (id->sock >= 0)
		cmw_send(id->sock, m);
}

static void send_type(struct cm_id *id, enum cmw_type type, uint8_t status)
{
	struct cmw_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.status = status;
	send_msg(id, &m);
}

/* ---- events ---- */

void cmi_event(struct cm_id *id, uint32_t type, int32_t status)
{
	struct cm_event *ev = cm_event_new(id, type, status);

	if (ev)
		cm_event_queue(ev, id->file);
}

/* The private data of m in an event: the IB CM always hands over the whole
 * area of its message type, zero beyond what the sender gave. */
static void event_private(uint8_t *dst, uint8_t *len, const struct cmw_msg *m)
{
	memcpy(dst, m->private_data, m->private_len);
	*len = (uint8_t)cmw_private_max((enum cmw_type)m->type);
}

/*
 * A new event of id carrying message m: its private data and, for REQ and
 * REP, its connection parameters (param.ud for UD ids, as ucma does). NULL
 * when the event is not to be reported. Queue it with cm_event_queue().
 */
static struct cm_event *msg_event(struct cm_id *id, uint32_t type,
				  int32_t status, const struct cmw_msg *m)
{
	struct cm_event *ev = cm_event_new(id, type, status);
	struct rdma_ucm_conn_param *p;

	if (!ev)
		return NULL;
	if (is_ud(id)) {
		event_private(ev->resp.param.ud.private_data,
			      &ev->resp.param.ud.private_data_len, m);
		return ev;
	}
	p = &ev->resp.param.conn;
	event_private(p->private_data, &p->private_data_len, m);
	if (m->type == CMW_REQ || m->type == CMW_REP) {
		/* seen from the receiver: the sender's initiator depth is
		 * what it asks of our responder resources */
		p->responder_resources = m->initiator_depth;
		p->initiator_depth = m->responder_resources;
		p->flow_control = m->flow_control;
		p->retry_count = m->retry_count;
		p->rnr_retry_count = m->rnr_retry_count;
		p->srq = m->srq;
		p->qp_num = m->qpn;
		ev->resp.ece.vendor_id = m->ece_vendor;
		ev->resp.ece.attr_mod = m->ece_attr;
	}
	return ev;
}

static void msg_event_queue(struct cm_id *id, uint32_t type, int32_t status,
			    const struct cmw_msg *m)
{
	struct cm_event *ev = msg_event(id, type, status, m);

	if (ev)
		cm_event_queue(ev, id->file);
}

/* ---- the active side ---- */

static void no_listener(struct cm_id *id)
{
	end_exchange(id);
	if (is_ud(id))
		cmi_event(id, CME_UNREACHABLE, SIDR_UNSUPPORTED);
	else
		cmi_event(id, CME_REJECTED, REJ_INVALID_SERVICE_ID);
}

static void timed_out(struct cm_id *id)
{
	end_exchange(id);
	cmi_event(id, CME_UNREACHABLE, -ETIMEDOUT);
}

/* Reach the listener and hand it the REQ, or try again later. */
static void try_connect(struct cm_id *id)
{
	const struct cmc_cable *c = cmc_get();
	const uint32_t addrs[2] = {c->end[0].addr, c->end[1].addr};
	uint32_t addr = 0;
	uint16_t port = 0;
	int ret;

	/* the listener on the destination end's address, or a wildcard */
	cmi_sa_v4((const struct sockaddr *)&id->dst, &addr, &port);
	ret = cmw_connect(id->sock, c->token, id->ps, addrs, id->peer_end,
			  port);
	if (ret == -EAGAIN) {
		uint64_t retry = now_ns() + CONNECT_RETRY_MS * 1000000ull;

		/* the IB CM resends a REQ the listener could not take */
		id->connect_pending = true;
		arm_timer(id,
			  retry < id->deadline_ns ? retry : id->deadline_ns);
		return;
	}
	if (ret && now_ns() < id->grace_ns) {
		id->connect_pending = true;
		arm_timer(id, now_ns() + NO_LISTENER_RETRY_MS * 1000000ull);
		return;
	}
	if (ret) {
		no_listener(id);
		return;
	}
	id->connect_pending = false;
	send_msg(id, id->req);
	free(id->req);
	id->req = NULL;
	cmi_watch_sock(id, true);
	arm_timer(id, id->deadline_ns);
}

int cmi_connect(struct cm_id *id, const struct rdma_ucm_conn_param *p,
		const struct rdma_ucm_ece *ece)
{
	enum cmw_type type = is_ud(id) ? CMW_SIDR_REQ : CMW_REQ;
	struct cmw_msg *m;
	uint16_t port;
	int ret;

	if (id->state != CM_ROUTE_RESOLVED)
		return -EINVAL;
	if (p->private_data_len > cmw_private_max(type))
		return -EINVAL;
	ret = ensure_timer(id);
	if (ret)
		return ret;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->type = type;
	m->qpn = p->qp_num & 0xffffff;
	m->psn = id->seq;
	cmi_sa_v4((const struct sockaddr *)&id->src, &m->src_addr, &port);
	m->src_port = htons(port);
	cmi_sa_v4((const struct sockaddr *)&id->dst, &m->dst_addr, &port);
	m->dst_port = htons(port);
	m->src_end = (uint8_t)id->end;
	m->dst_end = (uint8_t)id->peer_end;
	m->responder_resources = p->responder_resources;
	m->initiator_depth = p->initiator_depth;
	m->flow_control = p->flow_control;
	m->retry_count = p->retry_count < 7 ? p->retry_count : 7;
	m->rnr_retry_count = p->rnr_retry_count < 7 ? p->rnr_retry_count : 7;
	m->srq = p->srq;
	m->tos = id->tos;
	m->ack_timeout = cmi_ack_timeout(id);
	m->ece_vendor = ece->vendor_id;
	m->ece_attr = ece->attr_mod;
	m->private_len = p->private_data_len;
	memcpy(m->private_data, p->private_data, p->private_data_len);

	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;
	id->retry_count = m->retry_count;
	id->state = CM_CONNECT;
	id->active = true;
	id->phase = CP_REQ_SENT;
	id->req = m;
	id->deadline_ns =
	    now_ns() +
	    (is_ud(id) ? SIDR_TIMEOUT_MS : SETUP_TIMEOUT_MS) * 1000000ull;
	id->grace_ns = now_ns() + NO_LISTENER_GRACE_MS * 1000000ull;
	try_connect(id);
	return 0;
}

static void on_rep(struct cm_id *id, const struct cmw_msg *m)
{
	id->remote_qpn = m->qpn;
	id->sq_psn = m->psn;
	id->responder_resources = m->initiator_depth;
	id->initiator_depth = m->responder_resources;
	id->rnr_retry_count = m->rnr_retry_count;
	id->phase = CP_REP_RCVD;
	disarm_timer(id); /* the IB CM sends an MRA: the peer waits for us */
	msg_event_queue(id, CME_CONNECT_RESPONSE, 0, m);
}

static void on_sidr_rep(struct cm_id *id, const struct cmw_msg *m)
{
	struct cm_event *ev;

	end_exchange(id);
	if (!m->status)
		id->qkey = m->qkey;
	ev = msg_event(id, m->status ? CME_UNREACHABLE : CME_ESTABLISHED,
		       m->status, m);
	if (!ev)
		return;
	if (!m->status) {
		cmi_path_ah(id, &ev->resp.param.ud.ah_attr);
		ev->resp.param.ud.qp_num = m->qpn;
		ev->resp.param.ud.qkey = m->qkey;
	}
	cm_event_queue(ev, id->file);
}

/* ---- the passive side ---- */

static void on_req(struct cm_id *child, const struct cmw_msg *m)
{
	struct cm_id *l = child->listener;
	int end = m->dst_end;
	struct cm_event *ev;
	struct sockaddr_in *s;

	if ((m->type == CMW_SIDR_REQ) != is_ud(child) || end > 1 ||
	    m->src_end > 1 || !cmc_get()->end[end].present ||
	    (l->end >= 0 && l->end != end) || cm_handle_assign(child)) {
		/* not for this listener: the requester sees it go away */
		cm_child_drop(child);
		return;
	}
	child->end = end;
	child->peer_end = m->src_end;
	s = (struct sockaddr_in *)&child->src;
	s->sin_family = AF_INET;
	s->sin_addr.s_addr = m->dst_addr;
	s->sin_port = m->dst_port;
	s = (struct sockaddr_in *)&child->dst;
	s->sin_family = AF_INET;
	s->sin_addr.s_addr = m->src_addr;
	s->sin_port = m->src_port;
	child->remote_qpn = m->qpn;
	child->sq_psn = m->psn;
	child->responder_resources = m->initiator_depth;
	child->initiator_depth = m->responder_resources;
	child->retry_count = m->retry_count;
	child->rnr_retry_count = m->rnr_retry_count;
	child->tos = m->tos;
	child->peer_ack_timeout = m->ack_timeout;
	child->have_route = true;
	child->phase = CP_REQ_RCVD;

	ev = msg_event(l, CME_CONNECT_REQUEST, 0, m);
	if (!ev) {
		cm_child_drop(child);
		return;
	}
	ev->child = child;
	ev->resp.id = child->handle;
	cm_event_queue(ev, l->file);
}

/* Take the connections waiting on a listener, as far as its backlog (the
 * connect requests not yet reported) allows; the others wait in the
 * socket's queue, and their requesters try again. */
static void on_listener(struct cm_id *l)
{
	while (l->pending < l->backlog) {
		struct cm_id *child;
		int s = cmw_accept(l->sock);

		if (s < 0)
			break;
		child = cm_id_new(l->file);
		if (!child) {
			syscall(SYS_close, s);
			break;
		}
		cmi_init(child, l->ps, l->qp_type);
		child->state = CM_CONNECT;
		child->phase = CP_ACCEPTING;
		child->listener = l;
		child->sock = s;
		l->pending++;
		cmi_watch_sock(child, true);
	}
	cmi_watch_sock(l, l->pending < l->backlog);
}

void cmi_listener_slot(struct cm_id *l)
{
	if (l->state == CM_LISTEN && !l->dead && l->pending < l->backlog)
		cmi_watch_sock(l, true);
}

int cmi_accept(struct cm_id *id, const struct rdma_ucm_conn_param *p,
	       uint64_t uid, const struct rdma_ucm_ece *ece)
{
	struct cmw_msg m;

	if (id->state != CM_CONNECT)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	if (!p) {
		if (id->active && id->phase == CP_REP_RCVD) {
			/* cma_rep_recv: the RTU */
			m.type = CMW_RTU;
			send_msg(id, &m);
			id->phase = CP_ESTABLISHED;
			return 0;
		}
		if (id->active || !is_ud(id) || id->phase != CP_REQ_RCVD)
			return -EINVAL;
		/* a SIDR_REP with no QP */
		m.type = CMW_SIDR_REP;
		m.qkey = id->qkey;
		send_msg(id, &m);
		end_exchange(id);
		return 0;
	}
	if (id->active || id->phase != CP_REQ_RCVD)
		return -EINVAL;
	m.type = is_ud(id) ? CMW_SIDR_REP : CMW_REP;
	if (p->private_data_len > cmw_private_max((enum cmw_type)m.type))
		return -EINVAL;
	if (!is_ud(id) && ensure_timer(id))
		return -ENOMEM; /* the RTU needs a deadline */
	m.qpn = p->qp_num & 0xffffff;
	m.private_len = p->private_data_len;
	memcpy(m.private_data, p->private_data, p->private_data_len);
	id->uid = uid;
	if (is_ud(id)) {
		m.qkey = id->qkey;
		send_msg(id, &m);
		end_exchange(id);
		return 0;
	}
	m.psn = id->seq;
	m.responder_resources = p->responder_resources;
	m.initiator_depth = p->initiator_depth;
	m.flow_control = p->flow_control;
	m.rnr_retry_count = p->rnr_retry_count < 7 ? p->rnr_retry_count : 7;
	m.srq = p->srq;
	m.ece_vendor = ece->vendor_id;
	m.ece_attr = ece->attr_mod;
	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;
	send_msg(id, &m);
	id->phase = CP_REP_SENT;
	id->deadline_ns = now_ns() + SETUP_TIMEOUT_MS * 1000000ull;
	arm_timer(id, id->deadline_ns);
	return 0;
}

int cmi_reject(struct cm_id *id, const uint8_t *priv, uint8_t len,
	       uint8_t reason)
{
	struct cmw_msg m;

	if (id->state != CM_CONNECT)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	if (is_ud(id)) {
		if (id->active || id->phase != CP_REQ_RCVD)
			return -EINVAL;
		m.type = CMW_SIDR_REP;
		m.status = SIDR_REJECT;
	} else {
		switch (id->phase) {
		case CP_REQ_SENT:
		case CP_REQ_RCVD:
		case CP_REP_SENT:
		case CP_REP_RCVD:
			break;
		default:
			return -EINVAL;
		}
		m.type = CMW_REJ;
		m.status = reason;
	}
	if (len > cmw_private_max((enum cmw_type)m.type))
		return -EINVAL;
	m.private_len = len;
	memcpy(m.private_data, priv, len);
	if (!id->connect_pending)
		send_msg(id, &m);
	end_exchange(id);
	return 0;
}

int cmi_disconnect(struct cm_id *id)
{
	/* rdma_disconnect: only an id with a CM exchange; a DREQ only from
	 * an established connection, otherwise nothing happens */
	if (id->phase == CP_NONE)
		return -EINVAL;
	if (id->phase != CP_ESTABLISHED)
		return 0;
	send_type(id, CMW_DREQ, 0);
	end_exchange(id);
	id->state = CM_DISCONNECT;
	cmi_event(id, CME_DISCONNECTED, 0);
	return 0;
}

/*
 * The peer disconnected (DREQ) or went away: DISCONNECTED, after
 * PEER_DISCONNECT_MS. On a cable the DREQ travels behind the data the
 * peer sent before it, and the adapter takes that data (and the ACKs of
 * ours) before the DREQ reaches rdma_cm; here the DREQ takes another path,
 * so the engine gets that long to take those frames before the
 * application learns of the disconnect and tears its QP down.
 */
static void peer_disconnected(struct cm_id *id)
{
	id->state = CM_DISCONNECT;
	if (ensure_timer(id)) {
		cmi_event(id, CME_DISCONNECTED, 0); /* no timer: at once */
		return;
	}
	id->disconnect_due = true;
	arm_timer(id, now_ns() + PEER_DISCONNECT_MS * 1000000ull);
}

/* The peer went away (closed its id or died) or broke the protocol. */
static void on_hangup(struct cm_id *id)
{
	enum cm_phase was = id->phase;

	if (was == CP_ACCEPTING) {
		cm_child_drop(id);
		return;
	}
	end_exchange(id);
	switch (was) {
	case CP_REQ_SENT:
		if (is_ud(id)) {
			cmi_event(id, CME_UNREACHABLE, -ETIMEDOUT);
			break;
		}
		/* fallthrough */
	case CP_REQ_RCVD:
	case CP_REP_SENT:
	case CP_REP_RCVD:
		if (!is_ud(id))
			cmi_event(id, CME_REJECTED, REJ_CONSUMER_DEFINED);
		break;
	case CP_ESTABLISHED:
		peer_disconnected(id);
		break;
	default:
		break;
	}
}

/* One message from the peer; false when the id stopped listening. */
static bool on_msg(struct cm_id *id, const struct cmw_msg *m)
{
	switch (id->phase) {
	case CP_ACCEPTING:
		if (m->type != CMW_REQ && m->type != CMW_SIDR_REQ) {
			on_hangup(id);
			return false;
		}
		on_req(id, m);
		return !id->dead;
	case CP_REQ_SENT:
		if (m->type == CMW_REP && !is_ud(id))
			on_rep(id, m);
		else if (m->type == CMW_SIDR_REP && is_ud(id))
			on_sidr_rep(id, m);
		else if (m->type == CMW_REJ)
			break;
		return id->phase != CP_DONE;
	case CP_REP_SENT:
		if (m->type == CMW_RTU) {
			id->phase = CP_ESTABLISHED;
			disarm_timer(id);
			cmi_event(id, CME_ESTABLISHED, 0);
			return true;
		}
		if (m->type == CMW_REJ)
			break;
		return true;
	case CP_REQ_RCVD:
	case CP_REP_RCVD:
		if (m->type == CMW_REJ)
			break;
		return true;
	case CP_ESTABLISHED:
		if (m->type == CMW_DREQ) {
			end_exchange(id);
			peer_disconnected(id);
			return false;
		}
		return true;
	default:
		return true;
	}
	/* a REJ */
	end_exchange(id);
	msg_event_queue(id, CME_REJECTED, m->status, m);
	return false;
}

void cmi_on_sock(struct cm_id *id)
{
	struct cmw_msg m;
	int r;

	if (id->state == CM_LISTEN) {
		on_listener(id);
		return;
	}
	for (;;) {
		if (id->sock < 0 || !id->sock_watched)
			return;
		r = cmw_recv(id->sock, &m);
		if (r == -EAGAIN)
			return;
		if (r <= 0) {
			on_hangup(id);
			return;
		}
		if (!on_msg(id, &m))
			return;
	}
}

void cmi_on_timer(struct cm_id *id)
{
	uint64_t expirations;

	if (read(id->timer, &expirations, sizeof(expirations)) < 0)
		return; /* not yet (re-armed meanwhile) */
	if (id->disconnect_due) {
		id->disconnect_due = false;
		cmi_event(id, CME_DISCONNECTED, 0);
		return;
	}
	if (id->phase != CP_REQ_SENT && id->phase != CP_REP_SENT)
		return;
	if (now_ns() >= id->deadline_ns) {
		timed_out(id);
		return;
	}
	if (id->connect_pending)
		try_connect(id);
}

void cmi_destroy(struct cm_id *id)
{
	/* the IB CM tells the peer: a REJ for a request nobody answered, a
	 * DREQ for a connection; anything else sees the socket close */
	if (id->phase == CP_REQ_RCVD && !is_ud(id))
		send_type(id, CMW_REJ, REJ_CONSUMER_DEFINED);
	else if (id->phase == CP_REQ_SENT && !id->connect_pending && !is_ud(id))
		send_type(id, CMW_REJ, REJ_TIMEOUT);
	else if (id->phase == CP_ESTABLISHED)
		send_type(id, CMW_DREQ, 0);
	if (id->state == CM_LISTEN) {
		for (struct cm_id *c = cm_all; c; c = c->all_next)
			if (c->listener == id && !c->dead &&
			    c->phase == CP_ACCEPTING)
				cm_child_drop(c);
	}
	if (id->listener) {
		id->listener->pending--;
		cmi_listener_slot(id->listener);
		id->listener = NULL;
	}
	close_sock(id);
	if (id->timer >= 0) {
		epoll_ctl(id->file->fd, EPOLL_CTL_DEL, id->timer, NULL);
		syscall(SYS_close, id->timer);
		id->timer = -1;
	}
	free(id->req);
	id->req = NULL;
}

void cmi_move(struct cm_id *id, struct cm_file *to)
{
	bool watched = id->sock_watched;
	struct epoll_event ev = {.events = EPOLLIN};

	unwatch_sock(id);
	if (id->timer >= 0)
		epoll_ctl(id->file->fd, EPOLL_CTL_DEL, id->timer, NULL);
	id->file = to;
	if (watched)
		cmi_watch_sock(id, true);
	if (id->timer >= 0) {
		ev.data.ptr = &id->timer_src;
		epoll_ctl(to->fd, EPOLL_CTL_ADD, id->timer, &ev);
	}
}
