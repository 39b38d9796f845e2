// SPDX-License-Identifier: MIT
/*
 * cm_check: rdma_cm semantics over a software cable, through the
 * distribution's unmodified librdmacm. Run inside `usb4v-sim exec`:
 *
 *   cm_check CASE ADDR0 ADDR1 DEV0 DEV1 PORT
 *
 * ADDRn is end n's address, DEVn its device. Cases with a
 * passive side fork: the child listens on ADDR0:PORT (end 0), the parent
 * connects from an unbound id (which the cable puts on end 1). Every wait
 * is bounded; the first failed check prints "FAIL: ..." and exits 1.
 *
 *   addr         address resolution and binding rules, multicast
 *   events       poll/epoll/O_NONBLOCK on the event channel, a blocking
 *                read in another thread, migrate_id
 *   reject       consumer rejects with private data, reasons 28 and 35
 *   nolistener   REJECTED, status 8, without a listener
 *   dies_early   the listener's process dies before it answers: REJECTED 28
 *   dies_late    the peer dies after ESTABLISHED: DISCONNECTED
 *   disconnect   rdma_disconnect on one side: DISCONNECTED on both
 *   close_blocked  a blocked read outlives the close of its channel
 *   qp_attr      the QP attributes rdma_cm sets: PSNs, QPNs, MTU, timeout
 *   ud           UD (SIDR): private data, QPN and qkey; a reject
 */
#define _GNU_SOURCE
#include "cm_check.h"

/* ---- cases ---- */

/* Ports: a specific address twice, the wildcard over it, another space. */
static void check_ports(struct rdma_event_channel *ch)
{
	struct sockaddr_in a0 = sin_of(addr0, port);
	struct sockaddr_in any = sin_of("0.0.0.0", port);
	struct rdma_cm_id *id, *id2;

	id = new_id(ch, RDMA_PS_TCP);
	id2 = new_id(ch, RDMA_PS_TCP);
	CHECK(!rdma_bind_addr(id, (struct sockaddr *)&a0), "bind: %s",
	      strerror(errno));
	CHECK(rdma_bind_addr(id2, (struct sockaddr *)&a0) &&
		  errno == EADDRINUSE,
	      "a second bind of %s:%d: %s", addr0, port, strerror(errno));
	rdma_destroy_id(id2);
	id2 = new_id(ch, RDMA_PS_TCP);
	CHECK(rdma_bind_addr(id2, (struct sockaddr *)&any) &&
		  errno == EADDRNOTAVAIL,
	      "the wildcard over a bound port: %s", strerror(errno));
	rdma_destroy_id(id2);
	id2 = new_id(ch, RDMA_PS_UDP);
	CHECK(!rdma_bind_addr(id2, (struct sockaddr *)&a0),
	      "the same port in another port space: %s", strerror(errno));
	rdma_destroy_id(id2);
	rdma_destroy_id(id);
	ok("port reservations");
}

static void case_addr(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a1 = sin_of(addr1, 0);
	struct sockaddr_in far = sin_of("10.255.255.1", 0);
	struct sockaddr_in lo = sin_of("127.0.0.1", 0);
	struct sockaddr_in mc = sin_of("239.1.2.3", 0);
	struct sockaddr_in *local;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;

	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));
	/* an end's address from an unbound id: the other end, its address */
	id = resolved(ch, RDMA_PS_TCP);
	local = (struct sockaddr_in *)rdma_get_local_addr(id);
	CHECK(local->sin_addr.s_addr == a1.sin_addr.s_addr,
	      "source address %s, want %s", inet_ntoa(local->sin_addr), addr1);
	CHECK(id->route.num_paths == 1, "%d paths", id->route.num_paths);
	rdma_destroy_id(id);
	ok("an end's address is reached from the other end");

	/* bound to end 1, its own address: a loopback on end 1 */
	id = new_id(ch, RDMA_PS_TCP);
	CHECK(!rdma_bind_addr(id, (struct sockaddr *)&a1), "bind %s: %s", addr1,
	      strerror(errno));
	CHECK(id->verbs &&
		  !strcmp(ibv_get_device_name(id->verbs->device), dev1),
	      "bound to %s, not on %s", addr1, dev1);
	CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&a1, 2000),
	      "rdma_resolve_addr: %s", strerror(errno));
	expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_destroy_id(id);
	ok("an id bound to an end stays on it");

	/* not an end: no RDMA device reaches it */
	id = new_id(ch, RDMA_PS_TCP);
	CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&far, 2000),
	      "rdma_resolve_addr: %s", strerror(errno));
	expect_ack(ch, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV);
	rdma_destroy_id(id);
	id = new_id(ch, RDMA_PS_TCP);
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&far) &&
		  errno == EADDRNOTAVAIL,
	      "bind to a foreign address: %s", strerror(errno));
	rdma_destroy_id(id);
	ok("foreign addresses: ADDR_ERROR -ENODEV, bind EADDRNOTAVAIL");

	/* 127.0.0.1 is a loopback address: a wildcard bind, no device */
	id = new_id(ch, RDMA_PS_TCP);
	CHECK(!rdma_bind_addr(id, (struct sockaddr *)&lo), "bind 127.0.0.1: %s",
	      strerror(errno));
	CHECK(!id->verbs, "127.0.0.1 bound a device");
	rdma_destroy_id(id);
	ok("127.0.0.1 binds like the wildcard");

	check_ports(ch);

	/* multicast: resolved on the id's end, joining it is not offered */
	id = new_id(ch, RDMA_PS_UDP);
	CHECK(!rdma_bind_addr(id, (struct sockaddr *)&a1), "bind: %s",
	      strerror(errno));
	CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&mc, 2000),
	      "rdma_resolve_addr: %s", strerror(errno));
	ev = expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_ack_cm_event(ev);
	CHECK(rdma_join_multicast(id, (struct sockaddr *)&mc, NULL) &&
		  errno == EOPNOTSUPP,
	      "rdma_join_multicast: %s, want EOPNOTSUPP", strerror(errno));
	rdma_destroy_id(id);
	ok("rdma_join_multicast: EOPNOTSUPP");
	rdma_destroy_event_channel(ch);
}

static void *blocking_get(void *arg)
{
	struct rdma_event_channel *ch = arg;
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

static void case_events(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_event_channel *ch2 = rdma_create_event_channel();
	struct sockaddr_in dst = sin_of(addr0, port);
	struct pollfd p = {.events = POLLIN};
	struct epoll_event eev = {.events = EPOLLIN};
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	pthread_t t;
	void *res;
	int ep;

	CHECK(ch && ch2, "rdma_create_event_channel: %s", strerror(errno));
	p.fd = ch->fd;
	CHECK(!fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK),
	      "O_NONBLOCK");
	id = new_id(ch, RDMA_PS_TCP);
	CHECK(rdma_get_cm_event(ch, &ev) && errno == EAGAIN,
	      "a non-blocking read with no event: %s", strerror(errno));
	CHECK(poll(&p, 1, 0) == 0, "poll says an event is there");
	ep = epoll_create1(0);
	eev.data.fd = ch->fd;
	CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &eev), "epoll_ctl");
	CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000),
	      "rdma_resolve_addr: %s", strerror(errno));
	CHECK(poll(&p, 1, WAIT_MS) == 1 && (p.revents & POLLIN),
	      "poll does not see the event");
	CHECK(epoll_wait(ep, &eev, 1, WAIT_MS) == 1, "epoll does not see it");
	CHECK(!rdma_get_cm_event(ch, &ev) &&
		  ev->event == RDMA_CM_EVENT_ADDR_RESOLVED,
	      "no ADDR_RESOLVED");
	rdma_ack_cm_event(ev);
	CHECK(poll(&p, 1, 0) == 0, "poll still readable after the read");
	ok("O_NONBLOCK (EAGAIN), poll and epoll on the event channel");

	/* the id moves to a blocking channel; a thread waits there */
	CHECK(!rdma_migrate_id(id, ch2), "rdma_migrate_id: %s",
	      strerror(errno));
	CHECK(!pthread_create(&t, NULL, blocking_get, ch2), "thread");
	usleep(100000);
	CHECK(!rdma_resolve_route(id, 2000), "rdma_resolve_route: %s",
	      strerror(errno));
	for (int i = 0; i < WAIT_MS / 10 && pthread_tryjoin_np(t, &res); i++)
		usleep(10000);
	CHECK(res && ((struct rdma_cm_event *)res)->event ==
			 RDMA_CM_EVENT_ROUTE_RESOLVED,
	      "the blocked reader got no ROUTE_RESOLVED");
	rdma_ack_cm_event(res);
	CHECK(poll(&p, 1, 0) == 0, "the old channel got the migrated event");
	ok("migrate_id, and a blocking read woken by the event");
	rdma_destroy_id(id);
	close(ep);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch2);
}

static void reject_passive(int rd, int wr)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	(void)rd;
	listen_on(ch, RDMA_PS_TCP, wr);
	id = request(ch, REQ_MSG, 56);
	CHECK(!rdma_reject(id, REJ_MSG, sizeof(REJ_MSG)), "rdma_reject: %s",
	      strerror(errno));
	rdma_destroy_id(id);
	id = request(ch, REQ_MSG, 56);
	CHECK(!rdma_reject_ece(id, NULL, 0), "rdma_reject_ece: %s",
	      strerror(errno));
	rdma_destroy_id(id);
}

static void case_reject(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct peer p = fork_passive(reject_passive);
	struct rdma_cm_id *id = resolved(ch, RDMA_PS_TCP);
	struct rdma_cm_event *ev;

	create_qp(id, IBV_QPT_RC);
	connect_with(id, REQ_MSG);
	ev = expect(ch, RDMA_CM_EVENT_REJECTED, 28);
	CHECK(ev->param.conn.private_data_len == 148,
	      "REJ private_data_len %d, want 148",
	      ev->param.conn.private_data_len);
	CHECK(!strcmp(ev->param.conn.private_data, REJ_MSG),
	      "REJ private data '%s'",
	      (const char *)ev->param.conn.private_data);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	ok("REJECTED 28 with the consumer's private data");
	id = resolved(ch, RDMA_PS_TCP);
	create_qp(id, IBV_QPT_RC);
	connect_with(id, REQ_MSG);
	expect_ack(ch, RDMA_CM_EVENT_REJECTED, 35);
	ok("rdma_reject_ece: REJECTED 35");
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	wait_peer(&p);
	rdma_destroy_event_channel(ch);
}

static void case_nolistener(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = resolved(ch, RDMA_PS_TCP);
	double t0 = now_s();

	create_qp(id, IBV_QPT_RC);
	connect_with(id, REQ_MSG);
	expect_ack(ch, RDMA_CM_EVENT_REJECTED, 8);
	CHECK(now_s() - t0 < 5, "REJECTED after %.1f s", now_s() - t0);
	printf("RESULT: REJECTED after %.2f s\n", now_s() - t0);
	ok("nobody listens: REJECTED 8");
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static void dies_early_passive(int rd, int wr)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	(void)rd;
	listen_on(ch, RDMA_PS_TCP, wr);
	request(ch, REQ_MSG, 56);
	kill(getpid(), SIGKILL);
}

static void case_dies_early(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct peer p = fork_passive(dies_early_passive);
	struct rdma_cm_id *id = resolved(ch, RDMA_PS_TCP);
	int st;

	create_qp(id, IBV_QPT_RC);
	connect_with(id, REQ_MSG);
	expect_ack(ch, RDMA_CM_EVENT_REJECTED, 28);
	ok("the listener died before answering: REJECTED 28");
	waitpid(p.pid, &st, 0);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* Accept one RC connection and wait for ESTABLISHED; its id. */
static struct rdma_cm_id *accept_one(struct rdma_event_channel *ch, int wr)
{
	struct rdma_cm_id *id;

	listen_on(ch, RDMA_PS_TCP, wr);
	id = request(ch, REQ_MSG, 56);
	accept_rc(id);
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	return id;
}

/* Connect an RC id to the passive side and wait for ESTABLISHED. */
static struct rdma_cm_id *connect_one(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *id = resolved(ch, RDMA_PS_TCP);

	create_qp(id, IBV_QPT_RC);
	connect_with(id, REQ_MSG);
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	return id;
}

static void dies_late_passive(int rd, int wr)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	(void)rd;
	accept_one(ch, wr);
	put_u32(wr, 'E');
	kill(getpid(), SIGKILL);
}

static void case_dies_late(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct peer p = fork_passive(dies_late_passive);
	struct rdma_cm_id *id = connect_one(ch);
	int st;

	CHECK(get_u32(p.to_parent[0]) == 'E',
	      "no ESTABLISHED on the passive side");
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	ok("the peer died after ESTABLISHED: DISCONNECTED");
	waitpid(p.pid, &st, 0);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static void disconnect_passive(int rd, int wr)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = accept_one(ch, wr);

	(void)rd;
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CHECK(!rdma_disconnect(id), "rdma_disconnect after DISCONNECTED: %s",
	      strerror(errno));
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static void case_disconnect(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct peer p = fork_passive(disconnect_passive);
	struct rdma_cm_id *id = connect_one(ch);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS};
	int mask;

	CHECK(!rdma_disconnect(id), "rdma_disconnect: %s", strerror(errno));
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CHECK(rdma_init_qp_attr(id, &a, &mask) && errno == EINVAL,
	      "rdma_init_qp_attr after DISCONNECTED: %s", strerror(errno));
	wait_peer(&p);
	ok("rdma_disconnect: DISCONNECTED on both sides");
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static void close_blocked_passive(int rd, int wr)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	(void)rd;
	accept_one(ch, wr);
	put_u32(wr, 'E');
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
}

/*
 * The channel of a connected id is closed while a thread is blocked reading
 * it; the peer's answer to the disconnect arrives afterwards. As in the
 * kernel, where that read holds the file, the thread stays blocked: rping's
 * CM thread is left so at exit and must not fail with EBADF.
 */
static void case_close_blocked(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct peer p = fork_passive(close_blocked_passive);
	struct rdma_cm_id *id = connect_one(ch);
	pthread_t t;
	void *res;

	CHECK(get_u32(p.to_parent[0]) == 'E',
	      "no ESTABLISHED on the passive side");
	CHECK(!pthread_create(&t, NULL, blocking_get, ch), "thread");
	usleep(100000);
	rdma_destroy_qp(id);
	rdma_destroy_event_channel(ch); /* the file takes the id with it */
	wait_peer(&p);
	usleep(300000);
	CHECK(pthread_tryjoin_np(t, &res) == EBUSY,
	      "a read blocked on a channel that was closed returned");
	pthread_detach(t);
	ok("a blocked read outlives the close of its channel");
}

/* Send my QP's numbers, check the peer's against mine. */
static void cross_check_qp(struct rdma_cm_id *id, int rd, int wr)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	uint32_t peer_qpn, peer_sq, peer_rq;

	CHECK(!ibv_query_qp(id->qp, &a,
			    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN |
				IBV_QP_DEST_QPN | IBV_QP_PATH_MTU |
				IBV_QP_TIMEOUT | IBV_QP_AV,
			    &ia),
	      "ibv_query_qp: %s", strerror(errno));
	put_u32(wr, id->qp->qp_num);
	put_u32(wr, a.sq_psn);
	put_u32(wr, a.rq_psn);
	peer_qpn = get_u32(rd);
	peer_sq = get_u32(rd);
	peer_rq = get_u32(rd);
	CHECK(a.qp_state == IBV_QPS_RTS, "QP state %d, not RTS", a.qp_state);
	CHECK(a.dest_qp_num == peer_qpn, "dest QPN %#x, peer's QP is %#x",
	      a.dest_qp_num, peer_qpn);
	CHECK(a.sq_psn == peer_rq && a.rq_psn == peer_sq,
	      "PSNs sq %#x rq %#x, peer's sq %#x rq %#x", a.sq_psn, a.rq_psn,
	      peer_sq, peer_rq);
	CHECK(a.path_mtu == IBV_MTU_4096, "path MTU %d", a.path_mtu);
	CHECK(a.timeout == 19, "ACK timeout %d, want 19 (packet life 18 + 1)",
	      a.timeout);
	CHECK(a.ah_attr.is_global && a.ah_attr.grh.sgid_index == 3,
	      "AV: is_global %d sgid_index %d", a.ah_attr.is_global,
	      a.ah_attr.grh.sgid_index);
}

static void qp_attr_passive(int rd, int wr)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = accept_one(ch, wr);

	cross_check_qp(id, rd, wr);
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static void case_qp_attr(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct peer p = fork_passive(qp_attr_passive);
	struct rdma_cm_id *id = connect_one(ch);

	cross_check_qp(id, p.to_parent[0], p.to_child[1]);
	ok("QPNs, PSNs, MTU, ACK timeout and AV match across the cable");
	CHECK(!rdma_disconnect(id), "rdma_disconnect: %s", strerror(errno));
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	wait_peer(&p);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static void ud_passive(int rd, int wr)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param p = {0};
	struct rdma_cm_id *id;

	(void)rd;
	listen_on(ch, RDMA_PS_UDP, wr);
	id = request(ch, REQ_MSG, 180);
	create_qp(id, IBV_QPT_UD);
	p.qp_num = id->qp->qp_num;
	p.private_data = "welcome";
	p.private_data_len = sizeof("welcome");
	put_u32(wr, id->qp->qp_num);
	CHECK(!rdma_accept(id, &p), "rdma_accept: %s", strerror(errno));
	id = request(ch, REQ_MSG, 180);
	CHECK(!rdma_reject(id, NULL, 0), "rdma_reject: %s", strerror(errno));
	rdma_destroy_id(id);
}

static void case_ud(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct peer p = fork_passive(ud_passive);
	struct rdma_cm_id *id = resolved(ch, RDMA_PS_UDP);
	struct rdma_cm_event *ev;
	struct in_addr want;
	uint32_t qpn;

	create_qp(id, IBV_QPT_UD);
	connect_with(id, REQ_MSG);
	ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	qpn = get_u32(p.to_parent[0]);
	CHECK(ev->param.ud.qp_num == qpn, "UD QPN %#x, the peer's is %#x",
	      ev->param.ud.qp_num, qpn);
	CHECK(ev->param.ud.qkey == RDMA_UDP_QKEY, "qkey %#x",
	      ev->param.ud.qkey);
	CHECK(!strcmp(ev->param.ud.private_data, "welcome") &&
		  ev->param.ud.private_data_len == 136,
	      "SIDR_REP private data");
	inet_pton(AF_INET, addr0, &want);
	CHECK(ev->param.ud.ah_attr.is_global &&
		  !memcmp(ev->param.ud.ah_attr.grh.dgid.raw + 12, &want, 4) &&
		  ev->param.ud.ah_attr.grh.dgid.raw[11] == 0xff,
	      "the AH does not lead to ::ffff:%s", addr0);
	rdma_ack_cm_event(ev);
	ok("UD: ESTABLISHED with the peer's QPN, qkey, private data and GID");
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	id = resolved(ch, RDMA_PS_UDP);
	create_qp(id, IBV_QPT_UD);
	connect_with(id, REQ_MSG);
	expect_ack(ch, RDMA_CM_EVENT_UNREACHABLE, 2);
	ok("UD reject: UNREACHABLE 2");
	wait_peer(&p);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
    {"addr", case_addr},
    {"events", case_events},
    {"reject", case_reject},
    {"nolistener", case_nolistener},
    {"dies_early", case_dies_early},
    {"dies_late", case_dies_late},
    {"disconnect", case_disconnect},
    {"close_blocked", case_close_blocked},
    {"qp_attr", case_qp_attr},
    {"ud", case_ud},
};

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: %s CASE ADDR0 ADDR1 DEV0 DEV1 PORT\n",
			argv[0]);
		return 2;
	}
	addr0 = argv[2];
	addr1 = argv[3];
	dev0 = argv[4];
	dev1 = argv[5];
	port = atoi(argv[6]);
	alarm(60);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(argv[1], cases[i].name))
			continue;
		cases[i].fn();
		printf("PASS: %s\n", cases[i].name);
		return 0;
	}
	fprintf(stderr, "%s: no case '%s'\n", argv[0], argv[1]);
	return 2;
}
