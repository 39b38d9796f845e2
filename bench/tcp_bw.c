// SPDX-License-Identifier: MIT
/*
 * TCP over loopback, the baseline a usb4verbs figure is compared with: one
 * process writes SIZE-byte messages into a TCP socket, another reads them,
 * until BYTES have moved (or for S seconds).
 *
 *   tcp_bw [-s SIZE] [-b BYTES | --seconds S] [--port P]
 *
 * The receiver listens on 127.0.0.1:P (0, the default, = an ephemeral port,
 * so parallel runs never collide) and is a forked child. Prints one
 * key=value line: goodput, and the CPU time (user+sys) of each process.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "die.h"
#include "u4vt.h"

struct tcp_opts {
	size_t size;	 /* bytes per write */
	uint64_t want;	 /* bytes to move, unless seconds */
	double seconds;	 /* > 0: run this long instead */
	int port;	 /* 0: an ephemeral one */
};

/* 0, or 2 for a command line it does not take. */
static int parse_args(int argc, char **argv, struct tcp_opts *o)
{
	static const struct option lo[] = { { "seconds", 1, 0, 'T' },
					    { "port", 1, 0, 'p' },
					    { 0, 0, 0, 0 } };
	int c;

	o->size = 65536;
	o->want = 1ull << 30;
	o->seconds = 0;
	o->port = 0;
	while ((c = getopt_long(argc, argv, "s:b:", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->size = strtoull(optarg, NULL, 0); break;
		case 'b': o->want = strtoull(optarg, NULL, 0); break;
		case 'T': o->seconds = atof(optarg); break;
		case 'p': o->port = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: see the comment in tcp_bw.c\n");
			return 2;
		}
	}
	return o->size ? 0 : 2;
}

/* A socket listening on 127.0.0.1:port; *sa: the address it got. */
static int listen_loopback(int port, struct sockaddr_in *sa)
{
	socklen_t sl = sizeof(*sa);
	int lfd, one = 1;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		u4vt_die_err("socket", errno);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa->sin_port = htons((uint16_t)port);
	if (bind(lfd, (struct sockaddr *)sa, sizeof(*sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)sa, &sl))
		u4vt_die_err("bind/listen", errno);
	return lfd;
}

/* The child: read until the sender shuts down; report bytes and CPU. */
static __attribute__((noreturn)) void receiver(int lfd, char *buf,
						 size_t size, int wfd)
{
	uint64_t got = 0;
	double rcpu;
	ssize_t n;
	int fd;

	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		u4vt_die_err("accept", errno);
	while ((n = read(fd, buf, size)) > 0)
		got += (uint64_t)n;
	if (n < 0)
		u4vt_die_err("read", errno);
	rcpu = (double)u4vt_cpu_ns() / 1e9;
	if (write(wfd, &got, sizeof(got)) != sizeof(got) ||
	    write(wfd, &rcpu, sizeof(rcpu)) != sizeof(rcpu))
		_exit(1);
	_exit(0);
}

/* Write size-byte messages to fd until o says stop; the bytes moved. */
static uint64_t send_all(int fd, const char *buf, const struct tcp_opts *o,
			 uint64_t t0)
{
	uint64_t moved = 0;

	for (;;) {
		size_t off = 0;

		if (o->seconds > 0 ?
			    u4vt_now_ns() - t0 >= (uint64_t)(o->seconds * 1e9) :
			    moved >= o->want)
			break;
		while (off < o->size) {
			ssize_t n = write(fd, buf + off, o->size - off);

			if (n < 0) {
				if (errno == EINTR)
					continue;
				u4vt_die_err("write", errno);
			}
			off += (size_t)n;
		}
		moved += o->size;
	}
	return moved;
}

int main(int argc, char **argv)
{
	struct tcp_opts o;
	uint64_t moved, got = 0, t0, t1;
	double rcpu = -1, scpu;
	int lfd, fd, one = 1, p2c[2], status;
	struct sockaddr_in sa;
	char *buf;
	pid_t pid;

	if (parse_args(argc, argv, &o))
		return 2;
	buf = malloc(o.size);
	if (!buf)
		u4vt_die_err("malloc", errno);
	memset(buf, 0x5a, o.size);
	lfd = listen_loopback(o.port, &sa);
	if (pipe(p2c))
		u4vt_die_err("pipe", errno);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		u4vt_die_err("fork", errno);
	if (pid == 0) {
		close(p2c[0]);
		receiver(lfd, buf, o.size, p2c[1]);
	}
	close(p2c[1]);
	close(lfd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		u4vt_die_err("socket", errno);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		u4vt_die_err("connect", errno);
	scpu = (double)u4vt_cpu_ns() / 1e9;
	t0 = u4vt_now_ns();
	moved = send_all(fd, buf, &o, t0);
	shutdown(fd, SHUT_WR);
	if (read(p2c[0], &got, sizeof(got)) != sizeof(got) ||
	    read(p2c[0], &rcpu, sizeof(rcpu)) != sizeof(rcpu))
		rcpu = -1;
	t1 = u4vt_now_ns(); /* after the receiver has read everything */
	if (got != moved) {
		fprintf(stderr, "tcp_bw: sent %llu, received %llu\n",
			(unsigned long long)moved, (unsigned long long)got);
		return 1;
	}
	scpu = (double)u4vt_cpu_ns() / 1e9 - scpu;
	close(fd);
	waitpid(pid, &status, 0);
	printf("tcp_bw: size=%zu bytes=%llu secs=%.3f goodput_gbps=%.3f "
	       "sender_cpu_s=%.3f receiver_cpu_s=%.3f\n",
	       o.size, (unsigned long long)moved, (double)(t1 - t0) / 1e9,
	       (double)moved * 8 / ((double)(t1 - t0)), scpu, rcpu);
	return 0;
}
