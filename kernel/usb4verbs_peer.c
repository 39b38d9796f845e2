// SPDX-License-Identifier: GPL-2.0-only
/*
 * usb4verbs: what the shim of the peer host sends us, checked.
 *
 * On a Thunderbolt cable the other host is not ours to trust, and its
 * XDomain packets are parsed in kernel context. A request must come from
 * our peer (route, UUIDs) and say the same type twice; it is answered by
 * the login (LOGIN, LOGOUT) or by the channel protocol (proto.c). An answer
 * must be the answer to our very request, with a status of 0 or a negative
 * errno; a HopID it names must be one a path can use. usb4verbs_tb.c moves
 * the packets and does what they ask; nothing here calls Thunderbolt, so
 * the fuzz targets (tests/fuzz) build this file in userspace too.
 */
#include <linux/err.h>
#include <linux/limits.h>
#include <linux/string.h>
#include <linux/uuid.h>

#include "usb4verbs.h"

/* A HopID from the peer: one the paths can use (never "any", -1). */
static bool u4k_peer_hop_ok(u32 hop)
{
	return hop >= U4K_TB_MIN_HOPID && hop <= INT_MAX;
}

static bool u4k_peer_mad_ok(const struct u4k_tb_mad_pkt *pkt, size_t size)
{
	return size >= sizeof(*pkt) && pkt->part <= 1 &&
	       pkt->len <= IB_MGMT_MAD_SIZE;
}

/*
 * What a packet of our protocol is, before the control channel matches
 * it to a request of ours: one of the peer's requests or MAD parts, an
 * answer of the peer, a malformed one (dropped, never taken for an
 * answer), or not ours to take (other hosts' packets).
 */
enum u4k_pkt_kind u4k_peer_classify(const void *buf, size_t size,
				    const uuid_t *local, const uuid_t *remote,
				    u64 route)
{
	const struct u4k_tb_pkt *req = buf;
	u64 from;

	if (size < sizeof(*req) || !uuid_equal(&req->hdr.initiator, remote) ||
	    !uuid_equal(&req->hdr.target, local))
		return U4K_PKT_OTHER;
	from = ((u64)req->hdr.route_hi << 32 | req->hdr.route_lo) &
	       ~BIT_ULL(63);
	if (from != route)
		return U4K_PKT_OTHER;
	if (req->hdr.type & U4K_TB_RESP)
		return U4K_PKT_ANSWER;
	if (req->hdr.type == U4K_TB_MAD)
		return u4k_peer_mad_ok(buf, size) ? U4K_PKT_MAD : U4K_PKT_BAD;
	if (req->hdr.type != req->msg.type)
		return U4K_PKT_BAD;
	return U4K_PKT_REQUEST;
}

/*
 * A request of the peer's shim, answered in m. The caller does what the
 * result asks besides: log in now, or take the cable down. cable is NULL
 * while ours is not up.
 */
enum u4k_peer_action u4k_peer_request(struct u4k_cable *cable, bool logged_in,
				      struct u4k_msg *m)
{
	switch (m->type) {
	case U4K_TB_LOGIN:
		m->status = m->version != U4K_TB_PROTO_VER ||
			    m->depth != u4k_ring_depth ? -EPROTO : 0;
		m->version = U4K_TB_PROTO_VER;
		/* the peer's shim is (back) here: our login need not wait */
		return !m->status && !logged_in ? U4K_PEER_LOGIN :
						  U4K_PEER_ANSWER;
	case U4K_TB_LOGOUT:
		m->status = 0;
		return U4K_PEER_DOWN;
	case U4K_MSG_OPEN:
		if (!u4k_peer_hop_ok(m->hop)) {
			m->status = -EPROTO;
			return U4K_PEER_ANSWER;
		}
		fallthrough;
	default:
		/* not up yet: a MASK is sent again until it gets through */
		if (cable)
			u4k_proto_recv(cable, m);
		else
			m->status = -ENOLINK;
		return U4K_PEER_ANSWER;
	}
}

/*
 * The peer's answer resp to our request req: 0 and its message in *m, or
 * -EPROTO when it answers another request (a late answer to one that timed
 * out). A status that is no errno, or an OPEN answer without a usable
 * HopID, reads as -EPROTO.
 */
int u4k_peer_answer(const struct u4k_tb_hdr *req,
		    const struct u4k_tb_pkt *resp, struct u4k_msg *m)
{
	struct u4k_msg a = resp->msg;

	if (resp->hdr.type != (req->type | U4K_TB_RESP) ||
	    resp->hdr.command != req->command)
		return -EPROTO;
	if (a.status > 0 || a.status < -MAX_ERRNO)
		a.status = -EPROTO;
	if (req->type == U4K_MSG_OPEN && !a.status && !u4k_peer_hop_ok(a.hop))
		a.status = -EPROTO;
	*m = a;
	return 0;
}

/* Our login, answered in m: 0 when the peer's shim took it. */
int u4k_peer_login_answer(const struct u4k_msg *m)
{
	if (m->status)
		return m->status;
	return m->version == U4K_TB_PROTO_VER ? 0 : -EPROTO;
}

/*
 * A part of a MAD from the peer (U4K_PKT_MAD) into rx: true when rx->mad
 * is whole. The control channel keeps the order: a second part that is
 * not the second of the MAD before it (one got lost) is dropped, and a
 * first part starts over.
 */
bool u4k_peer_mad_part(struct u4k_mad_rx *rx,
		       const struct u4k_tb_mad_pkt *pkt)
{
	struct u4k_mad *mad = &rx->mad;

	if (!pkt->part) {
		rx->seq = pkt->hdr.command;
		rx->have_first = true;
		mad->sgid = pkt->sgid;
		mad->dgid = pkt->dgid;
		mad->src_qpn = pkt->src_qpn;
		mad->dst_qpn = pkt->dst_qpn;
		mad->len = pkt->len;
		memcpy(mad->data, pkt->data, U4K_TB_MAD_PART);
		return false;
	}
	if (!rx->have_first || rx->seq != pkt->hdr.command ||
	    mad->len != pkt->len)
		return false;
	rx->have_first = false;
	memcpy(mad->data + U4K_TB_MAD_PART, pkt->data, U4K_TB_MAD_PART);
	return true;
}
