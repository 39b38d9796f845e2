/* SPDX-License-Identifier: MIT */
/*
 * cm_check's harness: the addresses, devices and port of the run, bounded
 * waits for rdma_cm events, and the passive side as a child process
 * (cm_check_lib.c). The cases are in cm_check.c.
 */
#ifndef CM_CHECK_H
#define CM_CHECK_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define WAIT_MS 10000
#define REQ_MSG "hello-request"
#define REJ_MSG "go-away"

#include <rdma/rdma_cma.h>

#define WAIT_MS 10000
#define REQ_MSG "hello-request"
#define REJ_MSG "go-away"

extern const char *addr0, *addr1, *dev0, *dev1;
extern int port;
extern const char *role; /* "active" or "passive": who failed */

__attribute__((format(printf, 1, 2), noreturn)) void fail(const char *fmt, ...);
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			fail(__VA_ARGS__);                                     \
	} while (0)

struct peer {
	pid_t pid;
	int to_child[2], to_parent[2];
};

void ok(const char *what);
double now_s(void);
struct sockaddr_in sin_of(const char *a, int p);
struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms);
struct rdma_cm_event *expect(struct rdma_event_channel *ch, int type,
			     int status);
void expect_ack(struct rdma_event_channel *ch, int type, int status);
struct rdma_cm_id *new_id(struct rdma_event_channel *ch, int ps);
void create_qp(struct rdma_cm_id *id, enum ibv_qp_type type);
struct rdma_cm_id *resolved(struct rdma_event_channel *ch, int ps);
void connect_with(struct rdma_cm_id *id, const char *priv);
void put_u32(int fd, uint32_t v);
uint32_t get_u32(int fd);
struct peer fork_passive(void (*fn)(int rd, int wr));
void wait_peer(struct peer *p);
struct rdma_cm_id *listen_on(struct rdma_event_channel *ch, int ps, int wr);
struct rdma_cm_id *request(struct rdma_event_channel *ch, const char *priv,
			   int area);
void accept_rc(struct rdma_cm_id *id);

#endif
