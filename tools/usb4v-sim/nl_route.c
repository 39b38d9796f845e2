/* SPDX-License-Identifier: MIT */
/*
 * The ends' addresses in rtnetlink address dumps (`ip addr`), inside
 * `usb4v-sim exec`. They are 127/8 addresses that Linux delivers to lo;
 * on a real cable they would be the addresses of thunderbolt-net's
 * interface, which rdma-core's test suite finds through the device's
 * device/net/ entry and `ip -j addr show <netdev>`. So a RTM_GETADDR dump
 * of IPv4 (or all) addresses on lo begins with one RTM_NEWADDR per end: on
 * lo's index, /32, labelled "lo:usb4vsimN" (the device/net/ entry of the
 * cable's sysfs tree, and what getifaddrs() lists, ifaddrs.c). if_nametoindex
 * of that label is lo's index, as for any alias.
 *
 * Only what programs send and receive through libc's send, sendto and
 * sendmsg / recv, recvfrom and recvmsg on NETLINK_ROUTE sockets is looked
 * at (iproute2 does so); libc's own getifaddrs() talks to the kernel
 * directly. The messages are handed over in a datagram of their own, ahead
 * of the kernel's answer, with the request's sequence number. Only the ends
 * the process sees are listed (one under `exec --end`).
 */
#define _GNU_SOURCE
#include "nl_route.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "cm_cable.h"
#include "interpose.h"

#define NLR_MAX 16     /* route sockets followed at once */
#define NLR_DGRAM 512u /* room for the injected messages */

struct nlr {
	int fd;
	bool used;
	bool pending; /* a dump's answer is to start with our messages */
	uint32_t seq;
};

static uint64_t nlr_bits[NLR_FD_MAX / 64];
static struct nlr socks[NLR_MAX];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static bool tracked(int fd)
{
	return (unsigned)fd < NLR_FD_MAX &&
	       (__atomic_load_n(&nlr_bits[fd / 64], __ATOMIC_RELAXED) >>
		(fd % 64)) & 1;
}

static struct nlr *find_locked(int fd)
{
	for (int i = 0; i < NLR_MAX; i++)
		if (socks[i].used && socks[i].fd == fd)
			return &socks[i];
	return NULL;
}

bool nlr_track(int fd)
{
	bool ok = false;

	if ((unsigned)fd >= NLR_FD_MAX || !cmc_present())
		return false;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < NLR_MAX && !ok; i++) {
		if (socks[i].used)
			continue;
		socks[i] = (struct nlr){.fd = fd, .used = true};
		__atomic_fetch_or(&nlr_bits[fd / 64], 1ull << (fd % 64),
				  __ATOMIC_RELEASE);
		ok = true;
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

void nlr_forget(int fd)
{
	struct nlr *s;

	if (!tracked(fd))
		return;
	pthread_mutex_lock(&lock);
	s = find_locked(fd);
	if (s)
		s->used = false;
	__atomic_fetch_and(&nlr_bits[fd / 64], ~(1ull << (fd % 64)),
			   __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
}

/*
 * The next whole message of a request of len bytes, or NULL. Written out
 * rather than NLMSG_OK/NLMSG_NEXT: glibc's macros compare the u32 length
 * with an int.
 */
static const struct nlmsghdr *nl_msg(const void *buf, size_t len, size_t *off)
{
	const struct nlmsghdr *h = (const void *)((const char *)buf + *off);

	if (len - *off < sizeof(*h) || h->nlmsg_len < sizeof(*h) ||
	    h->nlmsg_len > len - *off)
		return NULL;
	*off += NLMSG_ALIGN(h->nlmsg_len) < len - *off ?
		NLMSG_ALIGN(h->nlmsg_len) : len - *off;
	return h;
}

/* Note the RTM_GETADDR dumps of IPv4 addresses on lo in a request. */
static void on_send(int fd, const void *buf, size_t len)
{
	const struct nlmsghdr *h;
	size_t off = 0;
	struct nlr *s;

	while ((h = nl_msg(buf, len, &off))) {
		const struct ifaddrmsg *ifa = NLMSG_DATA(h);

		if (h->nlmsg_type != RTM_GETADDR ||
		    !(h->nlmsg_flags & NLM_F_DUMP) ||
		    h->nlmsg_len < NLMSG_LENGTH(1))
			continue;
		/* rtgenmsg or ifaddrmsg: the family comes first */
		if (ifa->ifa_family != AF_UNSPEC && ifa->ifa_family != AF_INET)
			continue;
		if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(*ifa)) &&
		    ifa->ifa_index && ifa->ifa_index != if_nametoindex("lo"))
			continue;
		pthread_mutex_lock(&lock);
		s = find_locked(fd);
		if (s) {
			s->pending = true;
			s->seq = h->nlmsg_seq;
		}
		pthread_mutex_unlock(&lock);
	}
}

static void put_attr(char **p, unsigned short type, const void *data,
		     size_t len)
{
	struct rtattr *a = (struct rtattr *)*p;

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	*p += RTA_SPACE(len);
}

/* One RTM_NEWADDR per end into buf; the datagram's length. */
static size_t build(int fd, uint32_t seq, char *buf)
{
	const struct cmc_cable *c = cmc_get();
	struct sockaddr_nl me = {0};
	socklen_t alen = sizeof(me);
	unsigned lo = if_nametoindex("lo");
	char *p = buf;

	getsockname(fd, (struct sockaddr *)&me, &alen);
	memset(buf, 0, NLR_DGRAM);
	for (int i = 0; c && i < 2; i++) {
		struct nlmsghdr *h = (struct nlmsghdr *)p;
		struct ifa_cacheinfo ci = {.ifa_prefered = 0xffffffffu,
					   .ifa_valid = 0xffffffffu};
		struct ifaddrmsg *ifa = NLMSG_DATA(h);
		char label[IF_NAMESIZE];
		uint32_t flags = IFA_F_PERMANENT;

		if (!c->end[i].present)
			continue; /* the other host's */
		snprintf(label, sizeof(label), "lo:%.*s", IF_NAMESIZE - 4,
			 c->end[i].name);
		h->nlmsg_type = RTM_NEWADDR;
		h->nlmsg_flags = NLM_F_MULTI;
		h->nlmsg_seq = seq;
		h->nlmsg_pid = me.nl_pid;
		ifa->ifa_family = AF_INET;
		ifa->ifa_prefixlen = 32;
		ifa->ifa_flags = IFA_F_PERMANENT;
		ifa->ifa_scope = RT_SCOPE_UNIVERSE;
		ifa->ifa_index = lo;
		p = (char *)NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(*ifa));
		put_attr(&p, IFA_ADDRESS, &c->end[i].addr, 4);
		put_attr(&p, IFA_LOCAL, &c->end[i].addr, 4);
		put_attr(&p, IFA_LABEL, label, strlen(label) + 1);
		put_attr(&p, IFA_FLAGS, &flags, sizeof(flags));
		put_attr(&p, IFA_CACHEINFO, &ci, sizeof(ci));
		h->nlmsg_len = (uint32_t)(p - (char *)h);
	}
	return (size_t)(p - buf);
}

/*
 * If a dump's answer is due on fd, copy our datagram into msg as recvmsg
 * would (MSG_PEEK leaves it pending, MSG_TRUNC returns its full length):
 * its length, or -1 when the kernel's datagram comes next.
 */
static ssize_t inject(int fd, struct msghdr *msg, int flags)
{
	char buf[NLR_DGRAM];
	size_t len, done = 0;
	struct nlr *s;
	uint32_t seq;

	pthread_mutex_lock(&lock);
	s = find_locked(fd);
	if (!s || !s->pending) {
		pthread_mutex_unlock(&lock);
		return -1;
	}
	seq = s->seq;
	if (!(flags & MSG_PEEK))
		s->pending = false;
	pthread_mutex_unlock(&lock);

	len = build(fd, seq, buf);
	for (size_t i = 0; i < (size_t)msg->msg_iovlen && done < len; i++) {
		size_t n = msg->msg_iov[i].iov_len;

		if (n > len - done)
			n = len - done;
		memcpy(msg->msg_iov[i].iov_base, buf + done, n);
		done += n;
	}
	msg->msg_flags = done < len ? MSG_TRUNC : 0;
	if (msg->msg_name && msg->msg_namelen >= sizeof(struct sockaddr_nl)) {
		struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};

		memcpy(msg->msg_name, &kernel, sizeof(kernel));
		msg->msg_namelen = sizeof(kernel);
	}
	msg->msg_controllen = 0;
	return (ssize_t)(flags & MSG_TRUNC ? len : done);
}

/* ---- the interposers ---- */

typedef ssize_t (*sendto_fn)(int, const void *, size_t, int,
			     const struct sockaddr *, socklen_t);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, struct sockaddr *,
			       socklen_t *);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	if (__builtin_expect(tracked(fd), 0))
		on_send(fd, buf, len);
	return NEXT(sendto_fn, "sendto")(fd, buf, len, flags, NULL, 0);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
		      const struct sockaddr *to, socklen_t tolen)
{
	if (__builtin_expect(tracked(fd), 0))
		on_send(fd, buf, len);
	return NEXT(sendto_fn, "sendto")(fd, buf, len, flags, to, tolen);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (__builtin_expect(tracked(fd), 0) && msg->msg_iovlen)
		on_send(fd, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len);
	return NEXT(sendmsg_fn, "sendmsg")(fd, msg, flags);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	if (__builtin_expect(tracked(fd), 0)) {
		ssize_t n = inject(fd, msg, flags);

		if (n >= 0)
			return n;
	}
	return NEXT(recvmsg_fn, "recvmsg")(fd, msg, flags);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
			struct sockaddr *from, socklen_t *fromlen)
{
	if (__builtin_expect(tracked(fd), 0)) {
		struct iovec iov = {.iov_base = buf, .iov_len = len};
		struct msghdr msg = {.msg_name = from,
				     .msg_namelen = fromlen ? *fromlen : 0,
				     .msg_iov = &iov,
				     .msg_iovlen = 1};
		ssize_t n = inject(fd, &msg, flags);

		if (n >= 0) {
			if (fromlen)
				*fromlen = msg.msg_namelen;
			return n;
		}
	}
	return NEXT(recvfrom_fn, "recvfrom")(fd, buf, len, flags, from,
					     fromlen);
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return recvfrom(fd, buf, len, flags, NULL, NULL);
}
