/* SPDX-License-Identifier: MIT */
/*
 * Inside the software cable's rdma_cm (ucma.c: the kernel ABI of
 * /dev/infiniband/rdma_cm; cm_conn.c: ids, addresses and connections).
 *
 * A "file" is one open of /dev/infiniband/rdma_cm. Its descriptor, the one
 * the application holds, is an epoll instance watching an eventfd (readable
 * while events are queued) and every socket and timer of its ids, so poll,
 * epoll and blocking GET_EVENT on it all work without a thread: whoever
 * asks for an event first processes what arrived ("pumps" the file).
 *
 * All state is guarded by cm_lock, taken by every command.
 */
#ifndef USB4V_SIM_CM_INT_H
#define USB4V_SIM_CM_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/ib.h> /* AF_IB, struct sockaddr_ib */
#include <infiniband/verbs.h>
#include <rdma/rdma_user_cm.h>

#include "cm_cable.h"
#include "cm_wire.h"

/* The event numbers of the ABI (enum rdma_cm_event_type of <rdma/rdma_cma.h>,
 * which cannot be included with the kernel's <rdma/rdma_user_cm.h>). */
enum cm_event_type {
	CME_ADDR_RESOLVED = 0,
	CME_ADDR_ERROR = 1,
	CME_ROUTE_RESOLVED = 2,
	CME_CONNECT_REQUEST = 4,
	CME_CONNECT_RESPONSE = 5,
	CME_UNREACHABLE = 7,
	CME_REJECTED = 8,
	CME_ESTABLISHED = 9,
	CME_DISCONNECTED = 10,
};
#define CM_UDP_QKEY 0x01234567u /* RDMA_UDP_QKEY */

/* rdma_cm's id states (enum rdma_cm_state of the kernel's cma_priv.h). */
enum cm_state {
	CM_IDLE,
	CM_ADDR_BOUND,
	CM_ADDR_RESOLVED,
	CM_ROUTE_RESOLVED,
	CM_LISTEN,
	CM_CONNECT,
	CM_DISCONNECT,
};

/* Where the CM exchange of a CONNECT id stands (the IB CM's states). */
enum cm_phase {
	CP_NONE,
	CP_ACCEPTING, /* passive: connection accepted, REQ not yet read */
	CP_REQ_SENT,  /* active: REQ sent or being retried, no answer */
	CP_REQ_RCVD,  /* passive: CONNECT_REQUEST queued, not answered */
	CP_REP_SENT,  /* passive: accepted, waiting for RTU */
	CP_REP_RCVD,  /* active: CONNECT_RESPONSE queued, waiting for RTU */
	CP_ESTABLISHED,
	CP_DONE, /* rejected, disconnected, timed out or UD answered */
};

enum cm_src_kind { SRC_EVENTFD, SRC_SOCK, SRC_TIMER };

struct cm_id;
struct cm_file;

/* What an epoll event of a file points at. */
struct cm_src {
	enum cm_src_kind kind;
	struct cm_id *id;     /* SRC_SOCK, SRC_TIMER */
	struct cm_file *file; /* SRC_EVENTFD */
};

struct cm_event {
	struct cm_event *next;
	struct cm_id *id;    /* counts the report (the listener for a
			      * CONNECT_REQUEST) */
	struct cm_id *child; /* CONNECT_REQUEST: the new id */
	struct rdma_ucm_event_resp resp;
};

struct cm_file {
	struct cm_file *next;
	int fd;	  /* the application's descriptor: an epoll instance */
	int evfd; /* eventfd: non-zero while events are queued */
	struct cm_src evsrc;
	struct cm_event *head, *tail;
	bool ev_signalled;
};

struct cm_id {
	struct cm_id *all_prev, *all_next; /* every id of the process */
	uint32_t handle; /* the ABI's id; UINT32_MAX until it is reported */
	uint64_t uid;	 /* the library's context; 0 for an unaccepted child */
	struct cm_file *file;
	uint16_t ps;
	uint8_t qp_type; /* IBV_QPT_RC / IBV_QPT_UD (the kernel's values) */
	enum cm_state state;
	enum cm_phase phase;
	bool active;
	int end; /* the cable end (device) of the id, -1 before one is known */
	int peer_end; /* the end of its destination, once resolved */
	struct sockaddr_storage src, dst;

	int sock;	   /* reservation, listener or connection; -1 */
	bool sock_watched; /* in the file's epoll */
	int timer;	   /* timerfd, -1 until needed */
	struct cm_src sock_src, timer_src;
	uint64_t deadline_ns; /* REQ_SENT / REP_SENT: give up at */
	uint64_t grace_ns;    /* REQ_SENT: wait for a listener until */
	bool connect_pending; /* REQ_SENT: the listener's backlog was full */
	bool disconnect_due;  /* the peer left: DISCONNECTED when the timer
			       * fires */
	struct cmw_msg *req;  /* REQ_SENT, connect pending: the REQ to send */

	/* listener */
	int backlog;
	int pending;		/* accepted connections not yet reported */
	struct cm_id *listener; /* child not yet reported: its listener */

	/* connection parameters (the kernel's cm_id_private) */
	uint32_t seq; /* this side's starting PSN: its rq_psn */
	uint32_t remote_qpn;
	uint32_t sq_psn; /* the peer's starting PSN */
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;
	uint8_t peer_ack_timeout; /* passive: the requester's ACK timeout */
	uint32_t qkey;

	/* options */
	uint8_t tos;
	bool reuseaddr, afonly, timeout_set;
	uint8_t timeout;

	bool have_route; /* a path record exists (route resolved, or child) */

	uint32_t events_reported;
	bool dead; /* destroyed during a pump: freed after it */
};

extern pthread_mutex_t cm_lock;
extern struct cm_id *cm_all; /* every id, reported or not */

/* ---- cm_file.c ---- */
/* The rdma_cm file whose descriptor is fd, or NULL. */
struct cm_file *cm_file_of(int fd);
/* The id `handle` of file f: NULL and *err -ENOENT for no such id, -EINVAL
 * for an id of another file (the kernel's answers). */
struct cm_id *cm_lookup(struct cm_file *f, uint32_t handle, int *err);
/* The same, for commands that need the id to have a device (-EINVAL). */
struct cm_id *cm_lookup_dev(struct cm_file *f, uint32_t handle, int *err);
/* Destroy an id, its unreported events and children; how many of its
 * events were reported. */
uint32_t cm_destroy_id(struct cm_id *id);
/* Keep the file's eventfd readable exactly while events are queued. */
void cm_file_signal(struct cm_file *f, bool queued);
/* Take ev (after prev, or the head) out of f's queue. */
void cm_unlink_event(struct cm_file *f, struct cm_event *prev,
		     struct cm_event *ev);
/* Process what arrived on the sockets and timers of f's ids. */
void cm_file_pump(struct cm_file *f);
/* A new id of file f, in cm_all, without handle. */
struct cm_id *cm_id_new(struct cm_file *f);
/* Give id its ABI handle (the lowest free). 0 or -ENOMEM. */
int cm_handle_assign(struct cm_id *id);
/* Watch fd (a socket or timer of id) in id's file. */
void cm_src_add(struct cm_id *id, struct cm_src *src, int fd);
/* A new event of id, parameters zero (fill resp.param), or NULL when the
 * event is not to be reported (an unaccepted connection). */
struct cm_event *cm_event_new(struct cm_id *id, uint32_t event, int32_t status);
void cm_event_queue(struct cm_event *ev, struct cm_file *f);
/* Destroy and free a child that was never reported, during a pump. */
void cm_child_drop(struct cm_id *id);

/* ---- cm_addr.c: addresses, routes, QP attributes, options ---- */
/* Set up a new id (create_id); 0 or -errno. */
int cmi_init(struct cm_id *id, uint16_t ps, uint8_t qp_type);
int cmi_bind(struct cm_id *id, const struct sockaddr *addr);
int cmi_resolve_addr(struct cm_id *id, const struct sockaddr *src,
		     const struct sockaddr *dst);
int cmi_resolve_route(struct cm_id *id);
int cmi_listen(struct cm_id *id, int backlog);
int cmi_set_option(struct cm_id *id, uint32_t level, uint32_t name,
		   const void *val, uint32_t len);
int cmi_init_qp_attr(struct cm_id *id, uint32_t state,
		     struct ib_uverbs_qp_attr *a);
void cmi_query_route(struct cm_id *id, struct rdma_ucm_query_route_resp *r);
/* The address handle of an id's path (RTR, and ESTABLISHED of UD). */
void cmi_path_ah(const struct cm_id *id, struct ib_uverbs_ah_attr *ah);
/* The ACK timeout the id's QP gets at RTS. */
uint8_t cmi_ack_timeout(const struct cm_id *id);
/* IPv4 address (network order) and port of sa; the IPv6 wildcard and
 * IPv4-mapped addresses count. False for any other address. */
bool cmi_sa_v4(const struct sockaddr *sa, uint32_t *addr, uint16_t *port);

/* ---- cm_conn.c: the connection exchange ---- */
int cmi_connect(struct cm_id *id, const struct rdma_ucm_conn_param *p,
		const struct rdma_ucm_ece *ece);
int cmi_accept(struct cm_id *id, const struct rdma_ucm_conn_param *p,
	       uint64_t uid, const struct rdma_ucm_ece *ece);
int cmi_reject(struct cm_id *id, const uint8_t *priv, uint8_t len,
	       uint8_t reason);
int cmi_disconnect(struct cm_id *id);
/* Tell the peer, close the id's descriptors and its unreported children
 * (not its queued events: ucma.c drops those). */
void cmi_destroy(struct cm_id *id);
/* The id moves to file `to` (migrate_id). */
void cmi_move(struct cm_id *id, struct cm_file *to);
/* Start (true) or stop watching the id's socket in its file's epoll. */
void cmi_watch_sock(struct cm_id *id, bool on);
/* One of listener l's connect requests was reported or dropped. */
void cmi_listener_slot(struct cm_id *l);
void cmi_on_sock(struct cm_id *id);
void cmi_on_timer(struct cm_id *id);
/* Queue an event without parameters. */
void cmi_event(struct cm_id *id, uint32_t type, int32_t status);

#endif
