/* SPDX-License-Identifier: MIT */
/*
 * The ends' addresses in rtnetlink address dumps inside `usb4v-sim exec`
 * (nl_route.c). shim.c tells it which descriptors are NETLINK_ROUTE
 * sockets.
 */
#ifndef USB4V_SIM_NL_ROUTE_H
#define USB4V_SIM_NL_ROUTE_H

#include <stdbool.h>

#define NLR_FD_MAX 65536 /* descriptors followed: those below */

/* fd is a new NETLINK_ROUTE socket: follow it when the cable has ends with
 * addresses. True when followed. */
bool nlr_track(int fd);
/* fd goes away. */
void nlr_forget(int fd);

#endif
