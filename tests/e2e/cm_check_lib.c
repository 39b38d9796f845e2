// SPDX-License-Identifier: MIT
/* cm_check's harness (cm_check.h). */
#define _GNU_SOURCE
#include "cm_check.h"

const char *addr0, *addr1, *dev0, *dev1;
int port;
const char *role = "active";

void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL (%s): ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	_exit(1);
}

void ok(const char *what)
{
	printf("ok (%s): %s\n", role, what);
	fflush(stdout);
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct sockaddr_in sin_of(const char *a, int p)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(p)};

	CHECK(inet_pton(AF_INET, a, &s.sin_addr) == 1, "bad address %s", a);
	return s;
}

/* The next event within ms (poll on the channel first: never blocks). */
struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	CHECK(poll(&p, 1, ms) == 1, "no rdma_cm event within %d ms", ms);
	CHECK(!rdma_get_cm_event(ch, &ev), "rdma_get_cm_event: %s",
	      strerror(errno));
	return ev;
}

struct rdma_cm_event *expect(struct rdma_event_channel *ch, int type,
			     int status)
{
	struct rdma_cm_event *ev = next_event(ch, WAIT_MS);

	CHECK((int)ev->event == type && ev->status == status,
	      "got %s status %d, want %s status %d", rdma_event_str(ev->event),
	      ev->status, rdma_event_str(type), status);
	return ev;
}

void expect_ack(struct rdma_event_channel *ch, int type, int status)
{
	rdma_ack_cm_event(expect(ch, type, status));
}

struct rdma_cm_id *new_id(struct rdma_event_channel *ch, int ps)
{
	struct rdma_cm_id *id;

	CHECK(!rdma_create_id(ch, &id, NULL, ps), "rdma_create_id: %s",
	      strerror(errno));
	return id;
}

void create_qp(struct rdma_cm_id *id, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr a = {.qp_type = type,
				     .cap = {.max_send_wr = 4,
					     .max_recv_wr = 4,
					     .max_send_sge = 1,
					     .max_recv_sge = 1}};

	CHECK(!rdma_create_qp(id, NULL, &a), "rdma_create_qp: %s",
	      strerror(errno));
}

/* Resolve ADDR0:port and its route from an unbound id: on end 1. */
struct rdma_cm_id *resolved(struct rdma_event_channel *ch, int ps)
{
	struct rdma_cm_id *id = new_id(ch, ps);
	struct sockaddr_in dst = sin_of(addr0, port);

	CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000),
	      "rdma_resolve_addr: %s", strerror(errno));
	expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	CHECK(id->verbs &&
		  !strcmp(ibv_get_device_name(id->verbs->device), dev1),
	      "%s resolved to %s, not %s (the other end)", addr0,
	      id->verbs ? ibv_get_device_name(id->verbs->device) : "no device",
	      dev1);
	CHECK(!rdma_resolve_route(id, 2000), "rdma_resolve_route: %s",
	      strerror(errno));
	expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return id;
}

void connect_with(struct rdma_cm_id *id, const char *priv)
{
	struct rdma_conn_param p = {.private_data = priv,
				    .private_data_len =
					(uint8_t)strlen(priv) + 1,
				    .responder_resources = 1,
				    .initiator_depth = 1,
				    .retry_count = 7,
				    .rnr_retry_count = 7};

	CHECK(!rdma_connect(id, &p), "rdma_connect: %s", strerror(errno));
}

/* ---- the passive side: a child process ---- */

void put_u32(int fd, uint32_t v)
{
	CHECK(write(fd, &v, sizeof(v)) == sizeof(v), "pipe write");
}

uint32_t get_u32(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint32_t v;

	CHECK(poll(&p, 1, WAIT_MS) == 1, "the other process said nothing");
	CHECK(read(fd, &v, sizeof(v)) == sizeof(v),
	      "the other process is gone");
	return v;
}

/* Fork the passive side: fn(rd, wr) runs in the child, after which it
 * exits 0; the parent returns once the child listens. */
struct peer fork_passive(void (*fn)(int rd, int wr))
{
	struct peer p;

	CHECK(!pipe(p.to_child) && !pipe(p.to_parent), "pipe");
	fflush(stdout);
	p.pid = fork();
	CHECK(p.pid >= 0, "fork");
	if (!p.pid) {
		role = "passive";
		alarm(60);
		fn(p.to_child[0], p.to_parent[1]);
		_exit(0);
	}
	CHECK(get_u32(p.to_parent[0]) == 'L',
	      "the passive side did not listen");
	return p;
}

void wait_peer(struct peer *p)
{
	int st;

	for (int i = 0; i < WAIT_MS / 10; i++) {
		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			CHECK(WIFEXITED(st) && !WEXITSTATUS(st),
			      "the passive side failed");
			return;
		}
		usleep(10000);
	}
	kill(p->pid, SIGKILL);
	fail("the passive side did not finish");
}

struct rdma_cm_id *listen_on(struct rdma_event_channel *ch, int ps, int wr)
{
	struct rdma_cm_id *l = new_id(ch, ps);
	struct sockaddr_in a = sin_of(addr0, port);

	CHECK(!rdma_bind_addr(l, (struct sockaddr *)&a), "rdma_bind_addr: %s",
	      strerror(errno));
	CHECK(!rdma_listen(l, 4), "rdma_listen: %s", strerror(errno));
	put_u32(wr, 'L');
	return l;
}

/* A connection request: its new id (the event acknowledged). */
struct rdma_cm_id *request(struct rdma_event_channel *ch, const char *priv,
			   int area)
{
	struct rdma_cm_event *ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	const struct rdma_conn_param *c = &ev->param.conn;
	const struct rdma_ud_param *u = &ev->param.ud;
	struct rdma_cm_id *id = ev->id;
	int ud = id->qp_type == IBV_QPT_UD;
	const char *data = ud ? u->private_data : c->private_data;
	int len = ud ? u->private_data_len : c->private_data_len;

	CHECK(len == area, "private_data_len %d, want the area, %d", len, area);
	CHECK(data && !strcmp(data, priv), "private data '%s', want '%s'",
	      data ? data : "(null)", priv);
	CHECK(ud || c->qp_num, "no QPN in the request");
	CHECK(id->verbs &&
		  !strcmp(ibv_get_device_name(id->verbs->device), dev0),
	      "the request came to %s, not %s",
	      id->verbs ? ibv_get_device_name(id->verbs->device) : "no device",
	      dev0);
	rdma_ack_cm_event(ev);
	return id;
}

void accept_rc(struct rdma_cm_id *id)
{
	struct rdma_conn_param p = {.responder_resources = 1,
				    .initiator_depth = 1,
				    .rnr_retry_count = 7};

	create_qp(id, IBV_QPT_RC);
	CHECK(!rdma_accept(id, &p), "rdma_accept: %s", strerror(errno));
}
