/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous of the software cable's rdma_cm (see cm_wire.h): abstract
 * AF_UNIX names that reserve (port space, address, port), connections
 * between the processes, and the messages on them.
 */
#define _GNU_SOURCE
#include "cm_wire.h"

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define CMW_MAGIC 0x55344d43u /* "CM4U" */
#define CMW_VERSION 1
/* Linux's default ip_local_port_range, which rdma_cm also draws from. */
#define EPHEMERAL_LOW 32768u
#define EPHEMERAL_HIGH 60999u

/* IB CM private data areas and rdma_cm's header inside REQ and SIDR_REQ. */
#define CMA_HDR_LEN 36u

unsigned cmw_private_max(enum cmw_type type)
{
	switch (type) {
	case CMW_REQ:
		return 92 - CMA_HDR_LEN;
	case CMW_REP:
		return 196;
	case CMW_RTU:
		return 224;
	case CMW_REJ:
		return 148;
	case CMW_DREQ:
		return 220;
	case CMW_SIDR_REQ:
		return 216 - CMA_HDR_LEN;
	case CMW_SIDR_REP:
		return 136;
	default:
		return 0;
	}
}

/* What a name reserves: an end's address, or a wildcard over `view`. */
struct target {
	uint32_t addr; /* network order; 0: the wildcard */
	unsigned view;
};

static socklen_t make_name(struct sockaddr_un *sun, const char *token,
			   uint16_t ps, struct target t, uint16_t port)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (t.addr)
		n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
			     "usb4v-cm/%s/%04x/%08x/%u", token, ps,
			     (unsigned)be32toh(t.addr), port);
	else
		n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
			     "usb4v-cm/%s/%04x/w%u/%u", token, ps, t.view, port);
	if (n < 0 || (size_t)n >= sizeof(sun->sun_path) - 1)
		return 0;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

static int new_socket(void)
{
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0);

	return s < 0 ? -errno : s;
}

/* Bind a new socket to the name of t: the socket or -errno. */
static int bind_name(const char *token, uint16_t ps, struct target t,
		     uint16_t port)
{
	struct sockaddr_un sun;
	socklen_t len = make_name(&sun, token, ps, t, port);
	int s, e;

	if (!len)
		return -ENAMETOOLONG;
	s = new_socket();
	if (s < 0)
		return s;
	if (bind(s, (struct sockaddr *)&sun, len)) {
		e = errno;
		syscall(SYS_close, s);
		return -e;
	}
	return s;
}

/* Is the name of t held by anyone? */
static bool name_taken(const char *token, uint16_t ps, struct target t,
		       uint16_t port)
{
	int s = bind_name(token, ps, t, port);

	if (s == -EADDRINUSE)
		return true;
	if (s >= 0)
		syscall(SYS_close, s);
	return false;
}

/* Does a bind that conflicts with t hold the port? A specific address
 * meets the wildcards that cover its end; a wildcard meets the addresses
 * of its ends and every wildcard sharing an end with it. */
static bool conflict(const char *token, uint16_t ps, const uint32_t addrs[2],
		     struct target t, uint16_t port)
{
	for (unsigned v = 1; v <= 3; v++) {
		struct target w = {.view = v};

		if (t.addr ? (v & t.view) == 0 : (v & t.view) == 0 || v == t.view)
			continue;
		if (name_taken(token, ps, w, port))
			return true;
	}
	for (int e = 0; !t.addr && e < 2; e++) {
		struct target a = {.addr = addrs[e]};

		if ((t.view >> e & 1) && name_taken(token, ps, a, port))
			return true;
	}
	return false;
}

/*
 * Bind t and check that no conflicting bind exists. Two racing conflicting
 * binds may both fail; they never both succeed.
 */
static int reserve_one(const char *token, uint16_t ps, const uint32_t addrs[2],
		       struct target t, uint16_t port)
{
	int s = bind_name(token, ps, t, port);

	if (s < 0)
		return s == -EADDRINUSE && !t.addr ? -EADDRNOTAVAIL : s;
	if (conflict(token, ps, addrs, t, port)) {
		syscall(SYS_close, s);
		return -EADDRNOTAVAIL;
	}
	return s;
}

int cmw_reserve(const char *token, uint16_t ps, const uint32_t addrs[2],
		int end, unsigned view, uint16_t *port)
{
	const unsigned range = EPHEMERAL_HIGH - EPHEMERAL_LOW + 1;
	struct target t = {.addr = end < 0 ? 0 : addrs[end],
			   .view = end < 0 ? view : 1u << end};
	unsigned start;
	int s;

	if (*port)
		return reserve_one(token, ps, addrs, t, *port);
	if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
		start = (unsigned)getpid() * 2654435761u;
	for (unsigned i = 0; i < range; i++) {
		uint16_t p = (uint16_t)(EPHEMERAL_LOW + (start + i) % range);

		s = reserve_one(token, ps, addrs, t, p);
		if (s >= 0) {
			*port = p;
			return s;
		}
		if (s != -EADDRINUSE && s != -EADDRNOTAVAIL)
			return s;
	}
	return -EADDRNOTAVAIL;
}

/* The peer of a connected socket runs as this user. */
static bool same_user(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return !getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) &&
	       cred.uid == geteuid();
}

int cmw_connect(int sock, const char *token, uint16_t ps,
		const uint32_t addrs[2], int end, uint16_t port)
{
	/* the end's address, then the wildcards covering it */
	const struct target targets[3] = {{.addr = addrs[end]},
					  {.view = 1u << end},
					  {.view = 3}};
	struct sockaddr_un sun;
	int e = ECONNREFUSED;

	for (int i = 0; i < 3; i++) {
		socklen_t len = make_name(&sun, token, ps, targets[i], port);

		if (!len)
			return -ENAMETOOLONG;
		if (!connect(sock, (struct sockaddr *)&sun, len))
			return same_user(sock) ? 0 : -ECONNREFUSED;
		e = errno;
		if (e != ECONNREFUSED && e != ENOENT)
			break;
	}
	if (e == ENOENT)
		e = ECONNREFUSED;
	return e == EWOULDBLOCK ? -EAGAIN : -e;
}

int cmw_accept(int lsock)
{
	for (;;) {
		int s =
		    accept4(lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (s < 0)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		if (same_user(s))
			return s;
		syscall(SYS_close, s);
	}
}

int cmw_send(int sock, struct cmw_msg *m)
{
	m->magic = CMW_MAGIC;
	m->version = CMW_VERSION;
	if (send(sock, m, sizeof(*m), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    (ssize_t)sizeof(*m))
		return errno ? -errno : -EIO;
	return 0;
}

int cmw_recv(int sock, struct cmw_msg *m)
{
	ssize_t n;

	do
		n = recv(sock, m, sizeof(*m), MSG_DONTWAIT | MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (n == 0)
		return 0;
	if ((size_t)n != sizeof(*m) || m->magic != CMW_MAGIC ||
	    m->version != CMW_VERSION || m->type < CMW_REQ ||
	    m->type >= CMW_TYPE_END ||
	    m->private_len > cmw_private_max((enum cmw_type)m->type))
		return -EBADMSG;
	return 1;
}
