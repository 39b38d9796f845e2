/* SPDX-License-Identifier: MIT */
/*
 * getifaddrs() inside `usb4v-sim exec`: the cable ends' addresses as
 * interfaces. Middleware finds RDMA endpoints by walking the host's
 * addresses and binding an rdma_cm id to each (libfabric's verbs provider:
 * vrb_getifaddrs); an address on no interface is invisible to it. The ends'
 * addresses are 127/8 addresses that Linux delivers to lo, so each is
 * listed as an IPv4 alias of lo labelled after its device, "lo:usb4vsimN",
 * up and running, /32 (the ends this process sees: one under `exec --end`)
 * - but without IFF_LOOPBACK, which would make such
 * middleware skip it: on a real cable they are the addresses of
 * thunderbolt-net's interface. if_nametoindex() of the label is lo's index,
 * as for any alias. Only programs under `usb4v-sim exec` see them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_cable.h"
#include "interpose.h"

/* The entries put in front of libc's list. */
struct end_ifaddrs {
	struct end_ifaddrs *next_block; /* blocks handed out, not yet freed */
	struct ifaddrs ifa[2];
	struct sockaddr_in addr[2], mask[2];
	char name[2][IF_NAMESIZE];
	struct ifaddrs *libc_list;
};

typedef int (*getifaddrs_fn)(struct ifaddrs **);
typedef void (*freeifaddrs_fn)(struct ifaddrs *);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct end_ifaddrs *blocks;

EXPORT int getifaddrs(struct ifaddrs **ifap)
{
	getifaddrs_fn next = (getifaddrs_fn)dlsym(RTLD_NEXT, "getifaddrs");
	const struct cmc_cable *c;
	struct end_ifaddrs *b;
	int ret, e;

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	ret = next(ifap);
	e = errno;
	if (ret || !cmc_present() || !(c = cmc_get())) {
		errno = e;
		return ret;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return 0; /* the host's list alone */
	for (int i = 0, n = 0; i < 2; i++) {
		struct ifaddrs *ifa = &b->ifa[n];

		if (!c->end[i].present)
			continue; /* the other host's */

		snprintf(b->name[n], IF_NAMESIZE, "lo:%.*s", IF_NAMESIZE - 4,
			 c->end[i].name);
		b->addr[n].sin_family = AF_INET;
		b->addr[n].sin_addr.s_addr = c->end[i].addr;
		b->mask[n].sin_family = AF_INET;
		b->mask[n].sin_addr.s_addr = 0xffffffffu;
		ifa->ifa_name = b->name[n];
		ifa->ifa_flags = IFF_UP | IFF_RUNNING;
		ifa->ifa_addr = (struct sockaddr *)&b->addr[n];
		ifa->ifa_netmask = (struct sockaddr *)&b->mask[n];
		ifa->ifa_next = *ifap;
		if (n)
			b->ifa[0].ifa_next = ifa;
		n++;
	}
	b->libc_list = *ifap;
	pthread_mutex_lock(&lock);
	b->next_block = blocks;
	blocks = b;
	pthread_mutex_unlock(&lock);
	*ifap = &b->ifa[0];
	return 0;
}

EXPORT void freeifaddrs(struct ifaddrs *ifa)
{
	freeifaddrs_fn next = (freeifaddrs_fn)dlsym(RTLD_NEXT, "freeifaddrs");
	struct end_ifaddrs **pp, *b;

	pthread_mutex_lock(&lock);
	for (pp = &blocks; (b = *pp) && &b->ifa[0] != ifa; pp = &b->next_block)
		;
	if (b)
		*pp = b->next_block;
	pthread_mutex_unlock(&lock);
	if (b) {
		ifa = b->libc_list;
		free(b);
	}
	if (ifa && next)
		next(ifa);
}
