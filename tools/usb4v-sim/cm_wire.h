/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous of the software cable's rdma_cm: how CM messages travel
 * between the processes that use a cable.
 *
 * Every bound rdma_cm id holds an AF_UNIX SOCK_SEQPACKET socket bound to an
 * abstract name that says what it reserves:
 *     "\0usb4v-cm/<token>/<port space>/<IPv4 address>/<port>"
 *     "\0usb4v-cm/<token>/<port space>/w<ends>/<port>"   (a wildcard bind)
 * A wildcard binds the addresses of the ends its process sees (<ends>: 1
 * end 0, 2 end 1, 3 both; `exec --end` shows one, as to a host at one end
 * of a real cable, whose port space is its own). The token is the cable's random
 * rendezvous token: only processes that can read the cable's directory know
 * the names, and both sides of every connection also check that the peer
 * runs as the same user (SO_PEERCRED). Abstract names go away with the
 * socket, so a process that dies leaves nothing behind, and its peers see
 * the connection close.
 *
 * A listening id listen()s on its socket; connecting is connect() to the
 * listener's name (the exact address first, then the wildcard), then one
 * message per CM step (struct cmw_msg): REQ, REP, RTU, REJ, DREQ and, for
 * UD, SIDR_REQ and SIDR_REP.
 */
#ifndef USB4V_SIM_CM_WIRE_H
#define USB4V_SIM_CM_WIRE_H

#include <stdint.h>

#define CMW_PRIVATE_MAX 224 /* the largest IB CM private data area (RTU) */

enum cmw_type {
	CMW_REQ = 1,
	CMW_REP,
	CMW_RTU,
	CMW_REJ,
	CMW_DREQ,
	CMW_SIDR_REQ,
	CMW_SIDR_REP,
	CMW_TYPE_END
};

/* One CM message; integers in host order (both ends are one machine). */
struct cmw_msg {
	uint32_t magic;
	uint16_t version;
	uint8_t type;
	uint8_t status;	   /* REJ: reason; SIDR_REP: status */
	uint32_t qpn;	   /* REQ, REP: the sender's QP; SIDR_REP: the QP */
	uint32_t psn;	   /* REQ, REP: the sender's starting PSN */
	uint32_t qkey;	   /* SIDR_REP */
	uint32_t src_addr; /* REQ, SIDR_REQ: requester, network order */
	uint32_t dst_addr; /* REQ, SIDR_REQ: target, network order */
	uint8_t src_end;   /* REQ, SIDR_REQ: the requester's cable end */
	uint8_t dst_end;   /* REQ, SIDR_REQ: the end it connects to */
	uint8_t pad0[2];
	uint16_t src_port; /* network order */
	uint16_t dst_port; /* network order */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t tos;	     /* REQ: traffic class of the path */
	uint8_t ack_timeout; /* REQ: the requester's local ACK timeout */
	uint32_t ece_vendor;
	uint32_t ece_attr;
	uint8_t private_len; /* bytes of private_data the sender gave */
	uint8_t pad[3];
	uint8_t private_data[CMW_PRIVATE_MAX];
};

/* Largest private data the sender may give per message type (the IB CM's
 * areas less rdma_cm's 36-byte header for REQ and SIDR_REQ). */
unsigned cmw_private_max(enum cmw_type type);

/*
 * Reserve (ps, end's address, port), or with end -1 the wildcard of the
 * ends in `view` (bit e: end e), for an id: a new socket bound to its
 * name. port in host order, 0 for any free ephemeral port (written back).
 * A wildcard and a specific address it covers never share a port. Returns
 * the socket or -EADDRINUSE, -EADDRNOTAVAIL (a wildcard conflict) or
 * -errno.
 */
int cmw_reserve(const char *token, uint16_t ps, const uint32_t addrs[2],
		int end, unsigned view, uint16_t *port);
/*
 * Connect sock to the listener on end's address and port, or to a
 * wildcard that covers end. 0, -ECONNREFUSED (nobody listens), -EAGAIN
 * (its backlog is full) or -errno.
 */
int cmw_connect(int sock, const char *token, uint16_t ps,
		const uint32_t addrs[2], int end, uint16_t port);
/* Accept one connection of a listening socket: fd, -EAGAIN or -errno.
 * Connections from other users are closed and skipped. */
int cmw_accept(int lsock);
/* Send m (filled in: magic and version are set here). 0 or -errno. */
int cmw_send(int sock, struct cmw_msg *m);
/* Receive one message: 1 (m valid), 0 (peer closed), -EAGAIN, -EBADMSG (a
 * malformed message: treat the peer as gone) or -errno. */
int cmw_recv(int sock, struct cmw_msg *m);

#endif
