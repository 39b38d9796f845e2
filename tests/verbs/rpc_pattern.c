// SPDX-License-Identifier: MIT
/*
 * rpc_pattern: the way llama.cpp's RPC-RDMA transport uses verbs, between
 * two processes, with checked payloads:
 *  - a TCP connection first, each side's socket bound to the address of its
 *    own end of the cable (-b);
 *  - the device and GID each side uses are the ones whose RoCE v2 GID is
 *    its TCP socket's local IPv4 address, mapped into IPv6 (no device name
 *    is given);
 *  - one RC QP per side, exchanged over the TCP connection, SEND/RECV only,
 *    messages up to 256 bytes sent inline (max_inline_data 256), larger ones
 *    from registered memory;
 *  - completions are polled for a while, and a side that stays idle longer
 *    arms its CQ and sleeps on a completion channel.
 * The client sends requests of several sizes; the server answers each with a
 * reply derived from it, after an idle pause now and then so that the
 * client sleeps on the channel. Every payload is checked. Exit 0 only if all
 * requests were answered correctly and the client slept on the channel.
 *
 *   rpc_pattern -b ADDR [-p PORT]              server
 *   rpc_pattern -b ADDR [-p PORT] SERVER_ADDR  client
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "die.h"
#include "pattern.h"

#define INLINE_MAX 256
#define MSG_MAX (1u << 20)
#define NRECV 4
#define SPIN_US 2000	 /* poll this long before sleeping on the channel */
#define IDLE_PAUSE_MS 20 /* the server's pause before some replies */
#define WAIT_MS 10000	 /* no completion this long: failure */

static const uint32_t sizes[] = {1, 64, 255, 256, 257, 4096, 65536, MSG_MAX};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct side {
	int fd;
	bool server;
	struct in_addr local;
	struct ibv_context *ctx;
	int gid_index;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf; /* NRECV receive slots, then one send slot */
	struct ibv_mr *mr;
	uint8_t *scratch;
	unsigned sends_posted, sends_done;
	unsigned nrecvd; /* receive completions not taken yet */
	struct ibv_wc recvd[NRECV];
	unsigned channel_waits;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint8_t *slot(struct side *s, unsigned i)
{
	return s->buf + (size_t)i * MSG_MAX;
}

/* ---- TCP ---- */

static void tcp_io(struct side *s, void *buf, size_t len, bool out)
{
	uint8_t *b = buf;

	while (len) {
		ssize_t n = out ? send(s->fd, b, len, MSG_NOSIGNAL)
				: recv(s->fd, b, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			u4vt_die("TCP: %s",
				 n ? strerror(errno) : "peer closed");
		b += n;
		len -= (size_t)n;
	}
}

/* Both sides bind to their own end's address; the client connects. */
static void tcp_connect(struct side *s, const char *bind_addr,
			const char *server, unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET}, peer = a;
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0 || inet_pton(AF_INET, bind_addr, &a.sin_addr) != 1)
		u4vt_die("bind address '%s'", bind_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_port = htons(s->server ? port : 0);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		u4vt_die("bind %s: %s", bind_addr, strerror(errno));
	if (s->server) {
		if (listen(fd, 1))
			u4vt_die("listen: %s", strerror(errno));
		s->fd = accept(fd, NULL, NULL);
		close(fd);
	} else {
		peer.sin_port = htons(port);
		if (inet_pton(AF_INET, server, &peer.sin_addr) != 1)
			u4vt_die("server address '%s'", server);
		if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)))
			u4vt_die("connect %s:%u: %s", server, port,
				 strerror(errno));
		s->fd = fd;
	}
	if (s->fd < 0)
		u4vt_die("accept: %s", strerror(errno));
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (getsockname(s->fd, (struct sockaddr *)&a, &alen))
		u4vt_die("getsockname: %s", strerror(errno));
	s->local = a.sin_addr;
}

/* ---- the device whose RoCE v2 GID is the socket's address ---- */

static bool gid_is_local(struct ibv_context *ctx, int index,
			 const union ibv_gid *want)
{
	struct ibv_gid_entry e;

	return !ibv_query_gid_ex(ctx, 1, (uint32_t)index, &e, 0) &&
	       e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
	       !memcmp(&e.gid, want, sizeof(*want));
}

static void open_device(struct side *s)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	union ibv_gid want = {.raw = {[10] = 0xff, [11] = 0xff}};
	char txt[INET_ADDRSTRLEN];

	memcpy(&want.raw[12], &s->local, 4);
	for (int d = 0; list && list[d] && !s->ctx; d++) {
		struct ibv_context *ctx = ibv_open_device(list[d]);
		struct ibv_port_attr pa;

		if (!ctx)
			continue;
		for (int i = 0; !ibv_query_port(ctx, 1, &pa) &&
				i < pa.gid_tbl_len && !s->ctx;
		     i++) {
			if (gid_is_local(ctx, i, &want)) {
				s->ctx = ctx;
				s->gid_index = i;
				s->gid = want;
			}
		}
		if (!s->ctx)
			ibv_close_device(ctx);
	}
	inet_ntop(AF_INET, &s->local, txt, sizeof(txt));
	if (!s->ctx)
		u4vt_die("no device has the RoCE v2 GID ::ffff:%s", txt);
	printf("rpc_pattern: %s: %s GID index %d (::ffff:%s)\n",
	       s->server ? "server" : "client",
	       ibv_get_device_name(s->ctx->device), s->gid_index, txt);
	ibv_free_device_list(list);
}

/* ---- verbs ---- */

static void post_recv(struct side *s, unsigned i)
{
	struct ibv_sge sge = {(uintptr_t)slot(s, i), MSG_MAX, s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1},
			   *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		u4vt_die("ibv_post_recv");
}

static void setup(struct side *s)
{
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 16,
		    .max_recv_wr = NRECV,
		    .max_send_sge = 1,
		    .max_recv_sge = 1,
		    .max_inline_data = INLINE_MAX},
	};

	s->pd = ibv_alloc_pd(s->ctx);
	s->chan = ibv_create_comp_channel(s->ctx);
	if (!s->pd || !s->chan)
		u4vt_die("ibv_alloc_pd / ibv_create_comp_channel: %s",
			 strerror(errno));
	s->cq = ibv_create_cq(s->ctx, 32, NULL, s->chan, 0);
	if (!s->cq)
		u4vt_die("ibv_create_cq: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &qa);
	if (!s->qp)
		u4vt_die("ibv_create_qp: %s", strerror(errno));
	if (qa.cap.max_inline_data < INLINE_MAX)
		u4vt_die("max_inline_data %u < %u", qa.cap.max_inline_data,
			 INLINE_MAX);
	s->buf = aligned_alloc(4096, (size_t)(NRECV + 1) * MSG_MAX);
	if (!s->buf)
		u4vt_die("out of memory");
	s->mr = ibv_reg_mr(s->pd, s->buf, (size_t)(NRECV + 1) * MSG_MAX,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		u4vt_die("ibv_reg_mr: %s", strerror(errno));
}

struct qp_info {
	uint32_t qpn, psn;
	union ibv_gid gid;
};

static void connect_qp(struct side *s)
{
	struct qp_info mine = {s->qp->qp_num, (uint32_t)getpid() & 0xffffff,
			       s->gid},
		       theirs;
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT,
	    .port_num = 1,
	    .qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};

	tcp_io(s, &mine, sizeof(mine), true);
	tcp_io(s, &theirs, sizeof(theirs), false);
	if (ibv_modify_qp(s->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_ACCESS_FLAGS))
		u4vt_die("INIT");
	for (unsigned i = 0; i < NRECV; i++)
		post_recv(s, i);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = theirs.qpn;
	a.rq_psn = theirs.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = theirs.gid;
	a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(s->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		u4vt_die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = mine.psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(s->qp, &a,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_MAX_QP_RD_ATOMIC))
		u4vt_die("RTS");
	/* both QPs ready before the first SEND */
	tcp_io(s, &mine.qpn, 1, true);
	tcp_io(s, &theirs.qpn, 1, false);
}

/*
 * Take one completion: polled for SPIN_US, then the CQ is armed and the side
 * sleeps on the completion channel, as an idle transport does. A SEND
 * completion is counted, a receive kept for the caller.
 */
static void collect(struct side *s)
{
	uint64_t spin_end = now_us() + SPIN_US;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0 && now_us() < spin_end)
		;
	while (n == 0) {
		struct pollfd pfd = {.fd = s->chan->fd, .events = POLLIN};
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		if (ibv_req_notify_cq(s->cq, 0))
			u4vt_die("ibv_req_notify_cq");
		/* a completion that came before the CQ was armed */
		n = ibv_poll_cq(s->cq, 1, &wc);
		if (n)
			break;
		if (poll(&pfd, 1, WAIT_MS) != 1)
			u4vt_die("no completion event within %d ms", WAIT_MS);
		if (ibv_get_cq_event(s->chan, &ev_cq, &ev_ctx) ||
		    ev_cq != s->cq)
			u4vt_die("ibv_get_cq_event");
		ibv_ack_cq_events(s->cq, 1);
		s->channel_waits++;
		n = ibv_poll_cq(s->cq, 1, &wc);
	}
	if (n < 0 || wc.status != IBV_WC_SUCCESS)
		u4vt_die("completion: %s",
			 n < 0 ? "poll failed" : ibv_wc_status_str(wc.status));
	if (wc.opcode == IBV_WC_SEND)
		s->sends_done++;
	else if (wc.opcode == IBV_WC_RECV && s->nrecvd < NRECV)
		s->recvd[s->nrecvd++] = wc;
	else
		u4vt_die("unexpected completion (opcode %d)", wc.opcode);
}

/* SEND len bytes of the pattern of seed, inline when it fits in 256. */
static void send_msg(struct side *s, uint32_t len, uint64_t seed)
{
	uint8_t *src = slot(s, NRECV);
	struct ibv_sge sge = {(uintptr_t)src, len, s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 100,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	/* the send slot is the device's until the last SEND completed */
	while (s->sends_done != s->sends_posted)
		collect(s);
	u4vt_fill(src, len, seed);
	if (len <= INLINE_MAX)
		wr.send_flags |= IBV_SEND_INLINE;
	if (ibv_post_send(s->qp, &wr, &bad))
		u4vt_die("ibv_post_send of %u bytes", len);
	s->sends_posted++;
}

/* The next message: len bytes of the pattern of seed, else failure. */
static void recv_msg(struct side *s, uint32_t len, uint64_t seed)
{
	struct ibv_wc wc;
	const uint8_t *got;

	while (!s->nrecvd)
		collect(s);
	wc = s->recvd[0];
	memmove(&s->recvd[0], &s->recvd[1], --s->nrecvd * sizeof(wc));
	got = slot(s, (unsigned)wc.wr_id);
	u4vt_fill(s->scratch, len, seed);
	if (wc.byte_len != len)
		u4vt_die("a %u-byte message arrived as %u bytes", len,
			 wc.byte_len);
	if (u4vt_sum(got, len) != u4vt_sum(s->scratch, len) ||
	    memcmp(got, s->scratch, len))
		u4vt_die("a %u-byte message arrived corrupted", len);
	post_recv(s, (unsigned)wc.wr_id);
}

static void run(struct side *s, unsigned rounds)
{
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < NSIZES; i++) {
			uint64_t seed = r * 100 + i;

			if (!s->server) {
				send_msg(s, sizes[i], seed);
				recv_msg(s, sizes[i], seed + 50);
				continue;
			}
			recv_msg(s, sizes[i], seed);
			/* an idle spell: the client sleeps on its channel */
			if (i % 3 == 2)
				usleep(IDLE_PAUSE_MS * 1000);
			send_msg(s, sizes[i], seed + 50);
		}
	}
	while (s->sends_done != s->sends_posted)
		collect(s);
}

int main(int argc, char **argv)
{
	struct side s = {.fd = -1};
	const char *bind_addr = NULL;
	unsigned port = 18700, rounds = 3, tmo = 60;
	int c;

	while ((c = getopt(argc, argv, "b:p:r:t:")) != -1) {
		if (c == 'b')
			bind_addr = optarg;
		else if (c == 'p')
			port = (unsigned)strtoul(optarg, NULL, 10);
		else if (c == 'r')
			rounds = (unsigned)strtoul(optarg, NULL, 10);
		else if (c == 't')
			tmo = (unsigned)strtoul(optarg, NULL, 10);
		else
			return 2;
	}
	if (!bind_addr) {
		fprintf(stderr,
			"usage: %s -b ADDR [-p PORT] [-r ROUNDS] "
			"[-t SECONDS] [SERVER_ADDR]\n",
			argv[0]);
		return 2;
	}
	alarm(tmo); /* the whole run is bounded */
	s.server = optind >= argc;
	tcp_connect(&s, bind_addr, s.server ? NULL : argv[optind], port);
	open_device(&s);
	setup(&s);
	s.scratch = malloc(MSG_MAX);
	if (!s.scratch)
		u4vt_die("out of memory");
	connect_qp(&s);
	run(&s, rounds);
	if (!s.server && !s.channel_waits)
		u4vt_die("the client never slept on its completion channel");
	printf("rpc_pattern: %s: %u messages each way checked, %u waits on "
	       "the completion channel\n",
	       s.server ? "server" : "client", rounds * (unsigned)NSIZES,
	       s.channel_waits);
	/* the peer's last completions may still need our ACKs */
	tcp_io(&s, &c, 1, true);
	tcp_io(&s, &c, 1, false);
	ibv_destroy_qp(s.qp);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_destroy_comp_channel(s.chan);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	free(s.buf);
	free(s.scratch);
	close(s.fd);
	return 0;
}
