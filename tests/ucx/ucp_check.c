// SPDX-License-Identifier: MIT
/*
 * ucp_check: one checksummed transfer per UCP operation between two
 * processes (ucx_perftest moves data but checks none). In order: tagged
 * messages (eager and rendezvous, both directions), RMA put and get,
 * 64-bit atomics (add, fetch-add, swap, compare-swap: fetched values checked
 * at the initiator, the result in the target's memory), stream, and active
 * messages (eager and rendezvous). A mismatch, an error or a timeout exits 1.
 *
 *   ucp_check [-p PORT] [-t SECONDS]           target (listens on PORT)
 *   ucp_check [-p PORT] [-t SECONDS] HOST      initiator
 *
 * UCX picks transports and devices from its own variables (UCX_TLS,
 * UCX_NET_DEVICES). The TCP connection carries only the worker addresses,
 * the RMA window's address and key, and one-byte handshakes; every payload
 * moves through UCP. Prints one line per check and the bytes it moved.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
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

#include <ucp/api/ucp.h>

#include "clock.h"
#include "die.h"
#include "pattern.h"

#define BIG (1u << 20)	  /* rendezvous-sized messages */
#define WINDOW (4u * BIG) /* the target's RMA window */
#define AM_ID 11
#define OP_TIMEOUT_MS 20000

struct am_hdr {
	uint64_t seq, len;
};

struct peer {
	int fd; /* control connection */
	bool target;
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_ep_h ep;
	ucp_mem_h memh;	      /* the target's window, or the local buffer */
	uint8_t *buf;	      /* WINDOW bytes */
	uint64_t remote_addr; /* initiator: the target's window */
	ucp_rkey_h rkey;
	unsigned checks;
	uint64_t bytes;
	struct { /* the target's last active message */
		struct am_hdr hdr;
		size_t len;
		void *desc; /* rendezvous: still to be fetched */
		bool arrived;
	} am;
};

static void passed(struct peer *p, const char *what, size_t len)
{
	printf("ucp_check: %s %zu B ok\n", what, len);
	fflush(stdout);
	p->checks++;
	p->bytes += len;
}

/* ---- control connection ---- */

/*
 * Waiting for the peer keeps UCP going: without device atomics (rc_verbs has
 * no plain 64-bit swap, so UCP does all atomics in software) the target
 * executes the initiator's atomics in ucp_worker_progress.
 */
static void ctl_io(struct peer *p, void *buf, size_t len, bool out)
{
	uint8_t *b = buf;

	while (len) {
		struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
		ssize_t n;

		if (!out && poll(&pfd, 1, 0) == 0) {
			ucp_worker_progress(p->worker);
			continue;
		}
		n = out ? send(p->fd, b, len, MSG_NOSIGNAL)
			: recv(p->fd, b, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			u4vt_die("control connection: %s",
				 n ? strerror(errno) : "closed by the peer");
		b += n;
		len -= (size_t)n;
	}
}

/* Length-prefixed blob: send ours, return the peer's (malloc'ed). */
static void *ctl_swap(struct peer *p, const void *mine, uint64_t len,
		      uint64_t *peer_len)
{
	void *theirs;

	ctl_io(p, &len, sizeof(len), true);
	ctl_io(p, (void *)mine, len, true);
	ctl_io(p, peer_len, sizeof(*peer_len), false);
	if (*peer_len > (1u << 20))
		u4vt_die("control connection: %llu-byte blob",
			 (unsigned long long)*peer_len);
	theirs = malloc(*peer_len ? *peer_len : 1);
	if (!theirs)
		u4vt_die("out of memory");
	ctl_io(p, theirs, *peer_len, false);
	return theirs;
}

/* Both sides reach this point (one byte each way). */
static void ctl_sync(struct peer *p)
{
	uint8_t b = 1;

	ctl_io(p, &b, 1, true);
	ctl_io(p, &b, 1, false);
}

static int ctl_connect(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *a;
	int fd = -1, one = 1, ret;

	hints.ai_flags = host ? 0 : AI_PASSIVE;
	hints.ai_family = AF_INET;
	ret = getaddrinfo(host, port, &hints, &res);
	if (ret)
		u4vt_die("getaddrinfo(%s, %s): %s", host ? host : "*", port,
			 gai_strerror(ret));
	for (a = res; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
		if (fd < 0)
			continue;
		if (host) {
			if (!connect(fd, a->ai_addr, a->ai_addrlen))
				break;
		} else {
			int lfd = fd;

			setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one,
				   sizeof(one));
			if (!bind(lfd, a->ai_addr, a->ai_addrlen) &&
			    !listen(lfd, 1)) {
				fd = accept(lfd, NULL, NULL);
				close(lfd);
				if (fd >= 0)
					break;
				continue;
			}
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		u4vt_die("%s port %s: %s", host ? "connect to" : "listen on",
			 port, strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---- UCP ---- */

/* Progress until req completes; NULL means it already did. */
static void wait_req(struct peer *p, ucs_status_ptr_t req, const char *what)
{
	uint64_t end = u4vt_now_ms() + OP_TIMEOUT_MS;
	ucs_status_t st;

	if (!req)
		return;
	if (UCS_PTR_IS_ERR(req))
		u4vt_die("%s: %s", what,
			 ucs_status_string(UCS_PTR_STATUS(req)));
	while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
		ucp_worker_progress(p->worker);
		if (u4vt_now_ms() > end)
			u4vt_die("%s: no completion within %d ms", what,
				 OP_TIMEOUT_MS);
	}
	ucp_request_free(req);
	if (st != UCS_OK)
		u4vt_die("%s: %s", what, ucs_status_string(st));
}

static void flush_ep(struct peer *p)
{
	ucp_request_param_t prm = {0};

	wait_req(p, ucp_ep_flush_nbx(p->ep, &prm), "ucp_ep_flush_nbx");
}

static void ucp_setup(struct peer *p)
{
	ucp_params_t params = {
	    .field_mask = UCP_PARAM_FIELD_FEATURES,
	    .features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO64 |
			UCP_FEATURE_STREAM | UCP_FEATURE_AM,
	};
	ucp_worker_params_t wparams = {
	    .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
	    .thread_mode = UCS_THREAD_MODE_SINGLE,
	};
	ucp_mem_map_params_t mparams = {
	    .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
			  UCP_MEM_MAP_PARAM_FIELD_LENGTH,
	    .length = WINDOW,
	};
	ucs_status_t st;

	st = ucp_init(&params, NULL, &p->ctx);
	if (st != UCS_OK)
		u4vt_die("ucp_init: %s", ucs_status_string(st));
	st = ucp_worker_create(p->ctx, &wparams, &p->worker);
	if (st != UCS_OK)
		u4vt_die("ucp_worker_create: %s", ucs_status_string(st));
	p->buf = aligned_alloc(4096, WINDOW);
	if (!p->buf)
		u4vt_die("out of memory");
	memset(p->buf, 0, WINDOW);
	mparams.address = p->buf;
	st = ucp_mem_map(p->ctx, &mparams, &p->memh);
	if (st != UCS_OK)
		u4vt_die("ucp_mem_map: %s", ucs_status_string(st));
}

/* Exchange worker addresses, connect, and give the initiator the window. */
static void ucp_connect(struct peer *p)
{
	ucp_ep_params_t ep_params = {
	    .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
	};
	ucp_address_t *addr;
	size_t addr_len;
	void *peer_addr, *rkey_buf = NULL, *peer_rkey;
	uint64_t peer_len, win = (uintptr_t)p->buf;
	size_t rkey_len = 0;
	ucs_status_t st;

	st = ucp_worker_get_address(p->worker, &addr, &addr_len);
	if (st != UCS_OK)
		u4vt_die("ucp_worker_get_address: %s", ucs_status_string(st));
	peer_addr = ctl_swap(p, addr, addr_len, &peer_len);
	ucp_worker_release_address(p->worker, addr);
	ep_params.address = peer_addr;
	st = ucp_ep_create(p->worker, &ep_params, &p->ep);
	if (st != UCS_OK)
		u4vt_die("ucp_ep_create: %s", ucs_status_string(st));
	free(peer_addr);

	if (p->target) {
		st = ucp_rkey_pack(p->ctx, p->memh, &rkey_buf, &rkey_len);
		if (st != UCS_OK)
			u4vt_die("ucp_rkey_pack: %s", ucs_status_string(st));
	}
	peer_rkey = ctl_swap(p, rkey_buf, rkey_len, &peer_len);
	if (p->target) {
		ucp_rkey_buffer_release(rkey_buf);
		ctl_io(p, &win, sizeof(win), true);
	} else {
		ctl_io(p, &p->remote_addr, sizeof(p->remote_addr), false);
		st = ucp_ep_rkey_unpack(p->ep, peer_rkey, &p->rkey);
		if (st != UCS_OK)
			u4vt_die("ucp_ep_rkey_unpack: %s",
				 ucs_status_string(st));
	}
	free(peer_rkey);
}

static void ucp_teardown(struct peer *p)
{
	ucp_request_param_t prm = {0}; /* close mode: flush */

	/*
	 * Both sides are done with every operation before anyone closes, and
	 * both closes are through before anyone leaves (ctl_sync progresses).
	 */
	ctl_sync(p);
	if (p->rkey)
		ucp_rkey_destroy(p->rkey);
	wait_req(p, ucp_ep_close_nbx(p->ep, &prm), "ucp_ep_close_nbx");
	ctl_sync(p);
	ucp_mem_unmap(p->ctx, p->memh);
	ucp_worker_destroy(p->worker);
	ucp_cleanup(p->ctx);
	free(p->buf);
}

/* Is buf[0..len) the pattern of seed, and the guard after it untouched? */
static void check_pattern(struct peer *p, const uint8_t *buf, size_t len,
			  uint64_t seed, const char *what)
{
	uint8_t *want = malloc(len ? len : 1);

	if (!want)
		u4vt_die("out of memory");
	u4vt_fill(want, len, seed);
	if (u4vt_sum(buf, len) != u4vt_sum(want, len) || memcmp(buf, want, len))
		u4vt_die("%s: %zu bytes differ from what was sent", what, len);
	if (buf[len] != 0)
		u4vt_die("%s: byte %zu past the message was written", what,
			 len);
	free(want);
	passed(p, what, len);
}

/* ---- the checks ---- */

static const size_t sizes[] = {8, 4000, BIG + 3};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void tag_send(struct peer *p, size_t len, uint64_t seed, ucp_tag_t tag)
{
	ucp_request_param_t prm = {0};

	u4vt_fill(p->buf, len, seed);
	wait_req(p, ucp_tag_send_nbx(p->ep, p->buf, len, tag, &prm),
		 "ucp_tag_send_nbx");
}

static void tag_recv(struct peer *p, size_t len, uint64_t seed, ucp_tag_t tag)
{
	ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO};
	uint64_t end = u4vt_now_ms() + OP_TIMEOUT_MS;
	ucp_tag_recv_info_t info = {0};
	ucs_status_ptr_t req;
	ucs_status_t st = UCS_OK;

	memset(p->buf, 0, len + 1);
	prm.recv_info.tag_info = &info;
	/* room for more than was sent: a longer message would show */
	req = ucp_tag_recv_nbx(p->worker, p->buf, len + 1, tag, ~0ull, &prm);
	if (UCS_PTR_IS_ERR(req))
		u4vt_die("ucp_tag_recv_nbx: %s",
			 ucs_status_string(UCS_PTR_STATUS(req)));
	if (req) {
		while ((st = ucp_tag_recv_request_test(req, &info)) ==
		       UCS_INPROGRESS) {
			ucp_worker_progress(p->worker);
			if (u4vt_now_ms() > end)
				u4vt_die("tag receive of %zu B: no completion",
					 len);
		}
		ucp_request_free(req);
	}
	if (st != UCS_OK)
		u4vt_die("tag receive: %s", ucs_status_string(st));
	if (info.length != len || info.sender_tag != tag)
		u4vt_die(
		    "tag receive: %zu B with tag %#llx, want %zu B, tag %#llx",
		    info.length, (unsigned long long)info.sender_tag, len,
		    (unsigned long long)tag);
	check_pattern(p, p->buf, len, seed,
		      p->target ? "tag recv" : "tag recv (reply)");
}

/* Each size to the target and back, as eager or rendezvous UCP chooses. */
static void check_tag(struct peer *p)
{
	for (size_t i = 0; i < NSIZES; i++) {
		if (p->target) {
			tag_recv(p, sizes[i], 100 + i, 0x100 + i);
			tag_send(p, sizes[i], 200 + i, 0x200 + i);
		} else {
			tag_send(p, sizes[i], 100 + i, 0x100 + i);
			tag_recv(p, sizes[i], 200 + i, 0x200 + i);
		}
	}
}

/* The initiator writes the target's window at offset 8. */
static void check_put(struct peer *p)
{
	const size_t len = BIG + 5;

	if (p->target) {
		memset(p->buf, 0, WINDOW);
		ctl_sync(p); /* window clear */
		ctl_sync(p); /* put flushed */
		for (int i = 0; i < 8; i++)
			if (p->buf[i])
				u4vt_die(
				    "put: byte %d before the target written",
				    i);
		check_pattern(p, p->buf + 8, len, 300, "put");
		return;
	}
	ucp_request_param_t prm = {0};

	u4vt_fill(p->buf, len, 300);
	ctl_sync(p);
	wait_req(
	    p,
	    ucp_put_nbx(p->ep, p->buf, len, p->remote_addr + 8, p->rkey, &prm),
	    "ucp_put_nbx");
	flush_ep(p);
	ctl_sync(p);
}

/* The initiator reads the target's window from offset 16. */
static void check_get(struct peer *p)
{
	const size_t len = BIG + 7;

	if (p->target) {
		u4vt_fill(p->buf + 16, len, 400);
		ctl_sync(p); /* window filled */
		ctl_sync(p); /* read done */
		return;
	}
	ucp_request_param_t prm = {0};

	ctl_sync(p);
	memset(p->buf, 0, len + 1);
	wait_req(
	    p,
	    ucp_get_nbx(p->ep, p->buf, len, p->remote_addr + 16, p->rkey, &prm),
	    "ucp_get_nbx");
	check_pattern(p, p->buf, len, 400, "get");
	ctl_sync(p);
}

/* One 64-bit atomic on the target's first word; returns the fetched value. */
static uint64_t amo(struct peer *p, ucp_atomic_op_t op, uint64_t x, uint64_t z,
		    bool fetch)
{
	ucp_request_param_t prm = {
	    .op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
	    .datatype = ucp_dt_make_contig(8),
	};
	uint64_t result = z;

	if (fetch) {
		prm.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
		prm.reply_buffer = &result;
	}
	wait_req(
	    p,
	    ucp_atomic_op_nbx(p->ep, op, &x, 1, p->remote_addr, p->rkey, &prm),
	    "ucp_atomic_op_nbx");
	return result;
}

static void expect_u64(struct peer *p, const char *what, uint64_t got,
		       uint64_t want)
{
	if (got != want)
		u4vt_die("%s: %llu, want %llu", what, (unsigned long long)got,
			 (unsigned long long)want);
	passed(p, what, 8);
}

static void check_atomics(struct peer *p)
{
	uint64_t cell;

	if (p->target) {
		cell = 1000;
		memcpy(p->buf, &cell, 8);
		ctl_sync(p); /* cell set */
		ctl_sync(p); /* atomics flushed */
		memcpy(&cell, p->buf, 8);
		/* 1000 +5 +7, swapped for 42, compare-swapped for 99 */
		expect_u64(p, "atomic result in memory", cell, 99);
		return;
	}
	ctl_sync(p);
	amo(p, UCP_ATOMIC_OP_ADD, 5, 0, false);
	expect_u64(p, "atomic fetch-add", amo(p, UCP_ATOMIC_OP_ADD, 7, 0, true),
		   1005);
	expect_u64(p, "atomic swap", amo(p, UCP_ATOMIC_OP_SWAP, 42, 0, true),
		   1012);
	expect_u64(p, "atomic compare-swap (equal)",
		   amo(p, UCP_ATOMIC_OP_CSWAP, 42, 99, true), 42);
	expect_u64(p, "atomic compare-swap (unequal)",
		   amo(p, UCP_ATOMIC_OP_CSWAP, 1, 7, true), 99);
	flush_ep(p);
	ctl_sync(p);
}

static void check_stream(struct peer *p)
{
	const size_t len = BIG + 11;
	ucp_request_param_t prm = {0};

	if (!p->target) {
		u4vt_fill(p->buf, len, 500);
		wait_req(p, ucp_stream_send_nbx(p->ep, p->buf, len, &prm),
			 "ucp_stream_send_nbx");
		ctl_sync(p);
		return;
	}
	uint64_t end = u4vt_now_ms() + OP_TIMEOUT_MS;
	size_t got = 0;
	ucs_status_ptr_t req;
	ucs_status_t st = UCS_OK;

	memset(p->buf, 0, len + 1);
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
	prm.flags = UCP_STREAM_RECV_FLAG_WAITALL;
	req = ucp_stream_recv_nbx(p->ep, p->buf, len, &got, &prm);
	if (UCS_PTR_IS_ERR(req))
		u4vt_die("ucp_stream_recv_nbx: %s",
			 ucs_status_string(UCS_PTR_STATUS(req)));
	if (req) {
		while ((st = ucp_stream_recv_request_test(req, &got)) ==
		       UCS_INPROGRESS) {
			ucp_worker_progress(p->worker);
			if (u4vt_now_ms() > end)
				u4vt_die("stream receive: no completion");
		}
		ucp_request_free(req);
	}
	if (st != UCS_OK || got != len)
		u4vt_die("stream receive: %s, %zu of %zu B",
			 ucs_status_string(st), got, len);
	check_pattern(p, p->buf, len, 500, "stream");
	ctl_sync(p);
}

static ucs_status_t am_cb(void *arg, const void *header, size_t header_length,
			  void *data, size_t length,
			  const ucp_am_recv_param_t *param)
{
	struct peer *p = arg;

	if (header_length != sizeof(p->am.hdr) || p->am.arrived)
		u4vt_die("active message: %zu-byte header, %s", header_length,
			 p->am.arrived ? "one already waiting" : "unexpected");
	memcpy(&p->am.hdr, header, sizeof(p->am.hdr));
	p->am.len = length;
	p->am.arrived = true;
	if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
		p->am.desc = data; /* fetched with ucp_am_recv_data_nbx */
		return UCS_INPROGRESS;
	}
	p->am.desc = NULL;
	if (length > WINDOW - 1)
		u4vt_die("active message of %zu B", length);
	memset(p->buf, 0, length + 1);
	memcpy(p->buf, data, length);
	return UCS_OK;
}

static void am_receive(struct peer *p, size_t i)
{
	uint64_t end = u4vt_now_ms() + OP_TIMEOUT_MS;

	while (!p->am.arrived) {
		ucp_worker_progress(p->worker);
		if (u4vt_now_ms() > end)
			u4vt_die("active message %zu did not arrive", i);
	}
	p->am.arrived = false;
	if (p->am.hdr.seq != i || p->am.hdr.len != sizes[i] ||
	    p->am.len != sizes[i])
		u4vt_die(
		    "active message %llu of %zu B (header says %llu B), want "
		    "%zu of %zu B",
		    (unsigned long long)p->am.hdr.seq, p->am.len,
		    (unsigned long long)p->am.hdr.len, i, sizes[i]);
	if (p->am.desc) {
		ucp_request_param_t prm = {0};

		memset(p->buf, 0, sizes[i] + 1);
		wait_req(p,
			 ucp_am_recv_data_nbx(p->worker, p->am.desc, p->buf,
					      sizes[i], &prm),
			 "ucp_am_recv_data_nbx");
	}
	check_pattern(p, p->buf, sizes[i], 600 + i,
		      p->am.desc ? "am (rendezvous)" : "am");
}

static void check_am(struct peer *p)
{
	for (size_t i = 0; i < NSIZES; i++) {
		if (p->target) {
			am_receive(p, i);
			ctl_sync(p);
			continue;
		}
		struct am_hdr hdr = {i, sizes[i]};
		ucp_request_param_t prm = {0};

		u4vt_fill(p->buf, sizes[i], 600 + i);
		wait_req(p,
			 ucp_am_send_nbx(p->ep, AM_ID, &hdr, sizeof(hdr),
					 p->buf, sizes[i], &prm),
			 "ucp_am_send_nbx");
		ctl_sync(p); /* received: the buffer may be reused */
	}
}

static void run_checks(struct peer *p)
{
	ucp_am_handler_param_t am = {
	    .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
			  UCP_AM_HANDLER_PARAM_FIELD_CB |
			  UCP_AM_HANDLER_PARAM_FIELD_ARG,
	    .id = AM_ID,
	    .cb = am_cb,
	    .arg = p,
	};
	ucs_status_t st;

	/* long before the first active message: the tags come first */
	if (p->target) {
		st = ucp_worker_set_am_recv_handler(p->worker, &am);
		if (st != UCS_OK)
			u4vt_die("ucp_worker_set_am_recv_handler: %s",
				 ucs_status_string(st));
	}
	check_tag(p);
	check_put(p);
	check_get(p);
	check_atomics(p);
	check_stream(p);
	check_am(p);
}

int main(int argc, char **argv)
{
	struct peer p = {.fd = -1};
	const char *port = "13338";
	unsigned tmo = 60;
	int c;

	while ((c = getopt(argc, argv, "p:t:")) != -1) {
		switch (c) {
		case 'p':
			port = optarg;
			break;
		case 't':
			tmo = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-p PORT] [-t SECONDS] "
				"[HOST]\n",
				argv[0]);
			return 2;
		}
	}
	/* the whole run is bounded: SIGALRM ends it with a failure */
	alarm(tmo);
	p.target = optind >= argc;
	ucp_setup(&p);
	p.fd = ctl_connect(p.target ? NULL : argv[optind], port);
	ucp_connect(&p);
	run_checks(&p);
	ucp_teardown(&p);
	close(p.fd);
	printf("ucp_check: %u checks passed, %llu payload bytes\n", p.checks,
	       (unsigned long long)p.bytes);
	return 0;
}
