// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu: HopIDs and DMA paths across the cable.
 *
 * HopIDs are allocated as the core does (xdomain.c): the first free one at
 * or above the one asked for, 8..max. A tunnel joins a TX ring to an out
 * HopID and an in HopID to an RX ring on one host; a frame crosses the
 * cable only when the sender's TX ring has a path out and the receiver has
 * a path from that HopID (its out HopID is the receiver's in HopID) to a
 * running RX ring. Stricter than the software connection manager, which
 * trusts its caller, enabling paths checks that the rings exist and the
 * HopIDs were allocated; like it, a HopID or ring already in a tunnel
 * fails, and disabling paths after an unplug is a no-op.
 */
#include "tbemu.h"

static int tbe_alloc_hopid(struct ida *ida, int hopid, unsigned int max)
{
	if (tbe_fault(&tbe_refuse_hopid))
		return -ENOSPC;
	/* the one asked for is taken: the next free one is handed out */
	if (hopid >= TBE_MIN_HOPID && hopid < max && tbe_fault(&tbe_hopid_busy))
		hopid++;
	if (hopid < 0)
		hopid = TBE_MIN_HOPID;
	if (hopid < TBE_MIN_HOPID || hopid > max)
		return -EINVAL;
	return ida_alloc_range(ida, hopid, max, GFP_KERNEL);
}

int tb_xdomain_alloc_in_hopid(struct tb_xdomain *xd, int hopid)
{
	return tbe_alloc_hopid(&xd->in_hopids, hopid, xd->local_max_hopid);
}
EXPORT_SYMBOL_GPL(tb_xdomain_alloc_in_hopid);

int tb_xdomain_alloc_out_hopid(struct tb_xdomain *xd, int hopid)
{
	return tbe_alloc_hopid(&xd->out_hopids, hopid, xd->remote_max_hopid);
}
EXPORT_SYMBOL_GPL(tb_xdomain_alloc_out_hopid);

void tb_xdomain_release_in_hopid(struct tb_xdomain *xd, int hopid)
{
	ida_free(&xd->in_hopids, hopid);
}
EXPORT_SYMBOL_GPL(tb_xdomain_release_in_hopid);

void tb_xdomain_release_out_hopid(struct tb_xdomain *xd, int hopid)
{
	ida_free(&xd->out_hopids, hopid);
}
EXPORT_SYMBOL_GPL(tb_xdomain_release_out_hopid);

/* Under tbe_engine_lock. */
struct tbe_tunnel *tbe_tunnel_tx(struct tbe_host *h, int tx_ring)
{
	int i;

	for (i = 0; i < TBE_MAX_TUNNELS; i++)
		if (h->tunnels[i].used && h->tunnels[i].tx_ring == tx_ring &&
		    h->tunnels[i].tx_path >= 0)
			return &h->tunnels[i];
	return NULL;
}

struct tbe_tunnel *tbe_tunnel_rx(struct tbe_host *h, int rx_path)
{
	int i;

	for (i = 0; i < TBE_MAX_TUNNELS; i++)
		if (h->tunnels[i].used && h->tunnels[i].rx_path == rx_path &&
		    h->tunnels[i].rx_ring >= 0)
			return &h->tunnels[i];
	return NULL;
}

/* Whether hopid is allocated (6.1 has no ida_exists()). */
static bool tbe_hopid_taken(struct ida *ida, int hopid)
{
	int ret = ida_alloc_range(ida, hopid, hopid, GFP_KERNEL);

	if (ret < 0)
		return ret == -ENOSPC;
	ida_free(ida, ret);
	return false;
}

/* Both given, or both -1; the ring allocated, the HopID too. */
static bool tbe_path_valid(struct tbe_host *h, struct ida *ida, int path,
			   int ring, bool tx)
{
	struct tb_ring **rings = tx ? h->nhi.tx_rings : h->nhi.rx_rings;

	if (path < 0 && ring < 0)
		return true;
	if (path < 0 || ring <= 0 || ring >= h->nhi.hop_count || !rings[ring])
		return false;
	return tbe_hopid_taken(ida, path);
}

/* Under tbe_engine_lock: a tunnel using any of these HopIDs or rings. */
static bool tbe_tunnel_clash(struct tbe_host *h, const struct tbe_tunnel *t)
{
	const struct tbe_tunnel *o;
	int i;

	for (i = 0; i < TBE_MAX_TUNNELS; i++) {
		o = &h->tunnels[i];
		if (!o->used)
			continue;
		if ((t->tx_ring >= 0 && (o->tx_ring == t->tx_ring ||
					 o->tx_path == t->tx_path)) ||
		    (t->rx_ring >= 0 && (o->rx_ring == t->rx_ring ||
					 o->rx_path == t->rx_path)))
			return true;
	}
	return false;
}

int tb_xdomain_enable_paths(struct tb_xdomain *xd, int transmit_path,
			    int transmit_ring, int receive_path,
			    int receive_ring)
{
	struct tbe_host *h = tbe_host_of_tb(xd->tb);
	struct tbe_tunnel t = { true, transmit_path, transmit_ring,
				receive_path, receive_ring };
	int i, n = 0, ret = -ENOMEM;

	if (!tbe_path_valid(h, &xd->out_hopids, transmit_path, transmit_ring,
			    true) ||
	    !tbe_path_valid(h, &xd->in_hopids, receive_path, receive_ring,
			    false)) {
		dev_warn(&xd->dev, "paths %d/%d %d/%d: HopID or ring not allocated\n",
			 transmit_path, transmit_ring, receive_path,
			 receive_ring);
		return -EINVAL;
	}
	if (tbe_fault(&tbe_refuse_paths) || xd->is_unplugged)
		return -EIO; /* "DMA tunnel activation failed" */
	mutex_lock(&tbe_engine_lock);
	for (i = 0; i < TBE_MAX_TUNNELS; i++)
		n += h->tunnels[i].used;
	if (n < tbe_max_tunnels && !tbe_tunnel_clash(h, &t)) {
		for (i = 0; h->tunnels[i].used; i++)
			;
		h->tunnels[i] = t;
		h->stats.paths++;
		ret = 0;
	}
	mutex_unlock(&tbe_engine_lock);
	tbe_dma_kick();
	return ret;
}
EXPORT_SYMBOL_GPL(tb_xdomain_enable_paths);

/* As tb_tunnel_match_dma(): -1 (or 0) matches anything. */
static bool tbe_tunnel_match(const struct tbe_tunnel *t, int tx_path,
			     int tx_ring, int rx_path, int rx_ring)
{
	return t->used && (tx_path <= 0 || t->tx_path == tx_path) &&
	       (tx_ring <= 0 || t->tx_ring == tx_ring) &&
	       (rx_path <= 0 || t->rx_path == rx_path) &&
	       (rx_ring <= 0 || t->rx_ring == rx_ring);
}

int tb_xdomain_disable_paths(struct tb_xdomain *xd, int transmit_path,
			     int transmit_ring, int receive_path,
			     int receive_ring)
{
	struct tbe_host *h = tbe_host_of_tb(xd->tb);
	int i;

	if (xd->is_unplugged)
		return 0; /* the connection manager tore them down already */
	mutex_lock(&tbe_engine_lock);
	for (i = 0; i < TBE_MAX_TUNNELS; i++)
		if (tbe_tunnel_match(&h->tunnels[i], transmit_path,
				     transmit_ring, receive_path,
				     receive_ring))
			h->tunnels[i].used = false;
	mutex_unlock(&tbe_engine_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(tb_xdomain_disable_paths);

/* Unplug: the connection manager removes every tunnel of the host. */
void tbe_tunnels_drop(struct tbe_host *h)
{
	mutex_lock(&tbe_engine_lock);
	memset(h->tunnels, 0, sizeof(h->tunnels));
	mutex_unlock(&tbe_engine_lock);
}
