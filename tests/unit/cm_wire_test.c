// SPDX-License-Identifier: MIT
/*
 * The software cable's rdma_cm rendezvous (tools/usb4v-sim/cm_wire.c): port
 * reservations per address and per wildcard over the ends a process sees,
 * their conflicts, ephemeral ports, connecting to a listener or a wildcard
 * that covers the end, a full backlog, and the messages' validation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../tools/usb4v-sim/cm_wire.h"

#define PS_TCP 0x0106
#define PS_UDP 0x0111

static char token[40];
static const uint32_t addrs[2] = {0x0004007f, 0x0104007f}; /* 127.0.4.0/.1 */

static int setup(void **state)
{
	(void)state;
	snprintf(token, sizeof(token), "unit%d-%ld", getpid(), random());
	return 0;
}

static void test_specific_twice(void **state)
{
	uint16_t p = 7001, q = 7001;
	int a, b, c;

	(void)state;
	a = cmw_reserve(token, PS_TCP, addrs, 0, 3, &p);
	assert_true(a >= 0);
	assert_int_equal(cmw_reserve(token, PS_TCP, addrs, 0, 3, &q),
			 -EADDRINUSE);
	/* the other end's address, another port space: free */
	b = cmw_reserve(token, PS_TCP, addrs, 1, 3, &q);
	assert_true(b >= 0);
	c = cmw_reserve(token, PS_UDP, addrs, 0, 3, &q);
	assert_true(c >= 0);
	close(a);
	close(b);
	close(c);
	/* released with its socket */
	a = cmw_reserve(token, PS_TCP, addrs, 0, 3, &p);
	assert_true(a >= 0);
	close(a);
}

static void test_wildcards(void **state)
{
	uint16_t p = 7002;
	int s0, w2, w1;

	(void)state;
	/* end 0's address taken: wildcards covering end 0 conflict */
	s0 = cmw_reserve(token, PS_TCP, addrs, 0, 3, &p);
	assert_true(s0 >= 0);
	assert_int_equal(cmw_reserve(token, PS_TCP, addrs, -1, 3, &p),
			 -EADDRNOTAVAIL);
	assert_int_equal(cmw_reserve(token, PS_TCP, addrs, -1, 1, &p),
			 -EADDRNOTAVAIL);
	/* the host at end 1 has its own port space */
	w2 = cmw_reserve(token, PS_TCP, addrs, -1, 2, &p);
	assert_true(w2 >= 0);
	assert_int_equal(cmw_reserve(token, PS_TCP, addrs, 1, 3, &p),
			 -EADDRNOTAVAIL);
	close(s0);
	/* a wildcard over both ends overlaps end 1's */
	assert_int_equal(cmw_reserve(token, PS_TCP, addrs, -1, 3, &p),
			 -EADDRNOTAVAIL);
	w1 = cmw_reserve(token, PS_TCP, addrs, -1, 1, &p);
	assert_true(w1 >= 0);
	assert_int_equal(cmw_reserve(token, PS_TCP, addrs, -1, 1, &p),
			 -EADDRNOTAVAIL);
	close(w1);
	close(w2);
}

static void test_ephemeral(void **state)
{
	uint16_t p = 0, q = 0;
	int a, b;

	(void)state;
	a = cmw_reserve(token, PS_TCP, addrs, 0, 3, &p);
	b = cmw_reserve(token, PS_TCP, addrs, -1, 2, &q);
	assert_true(a >= 0 && b >= 0);
	/* not assert_in_range: cmocka 2.0 (Debian unstable) deprecates it */
	assert_true(p >= 32768 && p <= 60999);
	assert_true(q >= 32768 && q <= 60999);
	assert_int_not_equal(p, q);
	close(a);
	close(b);
}

static void test_connect(void **state)
{
	uint16_t p = 7003, c0 = 0;
	int l, c, s;

	(void)state;
	c = cmw_reserve(token, PS_TCP, addrs, 0, 3, &c0);
	assert_true(c >= 0);
	assert_int_equal(cmw_connect(c, token, PS_TCP, addrs, 1, p),
			 -ECONNREFUSED);
	/* bound, not listening: still refused */
	l = cmw_reserve(token, PS_TCP, addrs, -1, 2, &p);
	assert_true(l >= 0);
	assert_int_equal(cmw_connect(c, token, PS_TCP, addrs, 1, p),
			 -ECONNREFUSED);
	assert_int_equal(listen(l, 4), 0);
	/* the wildcard of end 1 does not take end 0's requests */
	assert_int_equal(cmw_connect(c, token, PS_TCP, addrs, 0, p),
			 -ECONNREFUSED);
	assert_int_equal(cmw_connect(c, token, PS_TCP, addrs, 1, p), 0);
	s = cmw_accept(l);
	assert_true(s >= 0);
	assert_int_equal(cmw_accept(l), -EAGAIN);
	close(s);
	close(c);
	close(l);
}

static void test_backlog(void **state)
{
	uint16_t p = 7004;
	int l, c[8], n, ret = 0;

	(void)state;
	l = cmw_reserve(token, PS_TCP, addrs, 0, 3, &p);
	assert_true(l >= 0);
	assert_int_equal(listen(l, 1), 0);
	for (n = 0; n < 8; n++) {
		uint16_t e = 0;

		c[n] = cmw_reserve(token, PS_TCP, addrs, 1, 3, &e);
		assert_true(c[n] >= 0);
		ret = cmw_connect(c[n], token, PS_TCP, addrs, 0, p);
		if (ret)
			break;
	}
	assert_int_equal(ret, -EAGAIN);
	assert_true(n >= 1);
	for (int i = 0; i <= n && i < 8; i++)
		close(c[i]);
	close(l);
}

static void test_messages(void **state)
{
	struct cmw_msg m, r;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	memset(&m, 0, sizeof(m));
	m.type = CMW_REQ;
	m.qpn = 0x30001;
	m.private_len = 56;
	memset(m.private_data, 'x', 56);
	assert_int_equal(cmw_send(sv[0], &m), 0);
	assert_int_equal(cmw_recv(sv[1], &r), 1);
	assert_int_equal(r.qpn, 0x30001);
	assert_int_equal(cmw_recv(sv[1], &r), -EAGAIN);
	/* more private data than a REQ carries */
	m.private_len = 57;
	assert_int_equal(cmw_send(sv[0], &m), 0);
	assert_int_equal(cmw_recv(sv[1], &r), -EBADMSG);
	/* not a whole message */
	assert_int_equal(send(sv[0], &m, 10, 0), 10);
	assert_int_equal(cmw_recv(sv[1], &r), -EBADMSG);
	/* an unknown type */
	m.private_len = 0;
	m.type = CMW_TYPE_END;
	assert_int_equal(cmw_send(sv[0], &m), 0);
	assert_int_equal(cmw_recv(sv[1], &r), -EBADMSG);
	close(sv[0]);
	assert_int_equal(cmw_recv(sv[1], &r), 0);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_specific_twice),
		cmocka_unit_test(test_wildcards),
		cmocka_unit_test(test_ephemeral),
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_backlog),
		cmocka_unit_test(test_messages),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
