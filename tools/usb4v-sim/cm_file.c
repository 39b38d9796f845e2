/* SPDX-License-Identifier: MIT */
/*
 * The software cable's rdma_cm files (opens of /dev/infiniband/rdma_cm):
 * the id table, the event queues and the pump that turns what arrived on
 * the ids' sockets and timers into events (see cm_int.h). ucma.c decodes
 * the commands.
 */
#define _GNU_SOURCE
#include "ucma.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cm_int.h"

pthread_mutex_t cm_lock = PTHREAD_MUTEX_INITIALIZER;
struct cm_id *cm_all;
static struct cm_file *files;
static struct cm_id **ids; /* by handle */
static uint32_t ids_cap;
static bool in_pump; /* ids destroyed now are freed after the pump */

/* ---- descriptors, handles ---- */

struct cm_file *cm_file_of(int fd)
{
	for (struct cm_file *f = files; f; f = f->next)
		if (f->fd == fd)
			return f;
	return NULL;
}

struct cm_id *cm_id_new(struct cm_file *f)
{
	struct cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->handle = UINT32_MAX;
	id->file = f;
	id->end = -1;
	id->sock = -1;
	id->timer = -1;
	id->all_next = cm_all;
	if (cm_all)
		cm_all->all_prev = id;
	cm_all = id;
	return id;
}

int cm_handle_assign(struct cm_id *id)
{
	uint32_t h;

	for (h = 0; h < ids_cap && ids[h]; h++)
		;
	if (h == ids_cap) {
		uint32_t cap = ids_cap ? 2 * ids_cap : 64;
		struct cm_id **n = realloc(ids, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		memset(n + ids_cap, 0, (cap - ids_cap) * sizeof(*n));
		ids = n;
		ids_cap = cap;
	}
	ids[h] = id;
	id->handle = h;
	return 0;
}

/* The id `handle` of file f: the kernel says ENOENT for no such id and
 * EINVAL for an id of another file. */
struct cm_id *cm_lookup(struct cm_file *f, uint32_t handle, int *err)
{
	struct cm_id *id = handle < ids_cap ? ids[handle] : NULL;

	if (!id) {
		*err = -ENOENT;
		return NULL;
	}
	if (id->file != f) {
		*err = -EINVAL;
		return NULL;
	}
	return id;
}

/* ucma_get_ctx_dev: the id must have a device. */
struct cm_id *cm_lookup_dev(struct cm_file *f, uint32_t handle, int *err)
{
	struct cm_id *id = cm_lookup(f, handle, err);

	if (id && id->end < 0) {
		*err = -EINVAL;
		return NULL;
	}
	return id;
}

void cm_src_add(struct cm_id *id, struct cm_src *src, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = src};

	src->id = id;
	epoll_ctl(id->file->fd, EPOLL_CTL_ADD, fd, &ev);
}

/* ---- events ---- */

void cm_file_signal(struct cm_file *f, bool queued)
{
	uint64_t v = 1;

	if (queued && !f->ev_signalled) {
		if (write(f->evfd, &v, sizeof(v)) == sizeof(v))
			f->ev_signalled = true;
	} else if (!queued && f->ev_signalled) {
		if (read(f->evfd, &v, sizeof(v)) == sizeof(v))
			f->ev_signalled = false;
	}
}

struct cm_event *cm_event_new(struct cm_id *id, uint32_t event, int32_t status)
{
	struct cm_event *ev;

	/* ucma_event_handler: nothing is reported for a connection the
	 * application has not accepted yet */
	if (!id->uid && event != CME_CONNECT_REQUEST)
		return NULL;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return NULL;
	ev->id = id;
	ev->resp.uid = id->uid;
	ev->resp.id = id->handle;
	ev->resp.event = event;
	ev->resp.status = (uint32_t)status;
	return ev;
}

void cm_event_queue(struct cm_event *ev, struct cm_file *f)
{
	if (f->tail)
		f->tail->next = ev;
	else
		f->head = ev;
	f->tail = ev;
	cm_file_signal(f, true);
}

void cm_unlink_event(struct cm_file *f, struct cm_event *prev,
		     struct cm_event *ev)
{
	if (prev)
		prev->next = ev->next;
	else
		f->head = ev->next;
	if (f->tail == ev)
		f->tail = prev;
	ev->next = NULL;
}

static void free_id(struct cm_id *id)
{
	if (id->handle < ids_cap && ids[id->handle] == id)
		ids[id->handle] = NULL;
	if (id->all_prev)
		id->all_prev->all_next = id->all_next;
	else
		cm_all = id->all_next;
	if (id->all_next)
		id->all_next->all_prev = id->all_prev;
	free(id->req);
	free(id);
}

/* Free an id now, or after the pump in progress (its sources may still be
 * in the pump's list): cm_file_pump() frees the dead ids of cm_all. */
static void bury(struct cm_id *id)
{
	id->dead = true;
	if (id->handle < ids_cap && ids[id->handle] == id)
		ids[id->handle] = NULL; /* the handle is free from now */
	if (!in_pump)
		free_id(id);
}

/* Drop the unreported events of id (ucma_cleanup_ctx_events); the new ids
 * of its unreported connect requests go with them. */
static void drop_events(struct cm_id *id)
{
	struct cm_file *f = id->file;
	struct cm_event *prev = NULL, *ev = f->head, *next;

	for (; ev; ev = next) {
		next = ev->next;
		if (ev->id != id) {
			prev = ev;
			continue;
		}
		cm_unlink_event(f, prev, ev);
		if (ev->child) {
			cmi_destroy(ev->child);
			bury(ev->child);
		}
		free(ev);
	}
	cm_file_signal(f, f->head != NULL);
}

/* Destroy id and return how many of its events were reported. */
uint32_t cm_destroy_id(struct cm_id *id)
{
	uint32_t reported = id->events_reported;

	drop_events(id);
	cmi_destroy(id);
	bury(id);
	return reported;
}

/* Forget a child that never got reported (cm_conn.c, on its hang-up). */
void cm_child_drop(struct cm_id *id)
{
	cmi_destroy(id);
	bury(id);
}

void cm_file_pump(struct cm_file *f)
{
	struct epoll_event ev[16];

	in_pump = true;
	for (int round = 0; round < 16; round++) {
		int n = epoll_wait(f->fd, ev, 16, 0), handled = 0;

		for (int i = 0; i < n; i++) {
			struct cm_src *s = ev[i].data.ptr;

			if (s->kind == SRC_EVENTFD || s->id->dead)
				continue;
			handled++;
			if (s->kind == SRC_SOCK)
				cmi_on_sock(s->id);
			else
				cmi_on_timer(s->id);
		}
		if (!handled)
			break;
	}
	in_pump = false;
	for (struct cm_id *id = cm_all, *next; id; id = next) {
		next = id->all_next;
		if (id->dead)
			free_id(id);
	}
}

/* ---- files ---- */

bool ucma_is_path(const char *path)
{
	return path && !strcmp(path, "/dev/infiniband/rdma_cm") &&
	       cmc_present();
}

static int lower(int fd, int max_fd)
{
	int low;

	if (fd < max_fd)
		return fd;
	low = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	syscall(SYS_close, fd);
	if (low >= max_fd) {
		syscall(SYS_close, low);
		errno = EMFILE;
		return -1;
	}
	return low;
}

int ucma_open(int flags, int max_fd)
{
	struct cm_file *f;
	struct epoll_event ev = {.events = EPOLLIN};
	int e;

	if (!cmc_get())
		return -1;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	f->fd = epoll_create1(flags & O_CLOEXEC ? EPOLL_CLOEXEC : 0);
	if (f->fd >= 0)
		f->fd = lower(f->fd, max_fd);
	if (f->evfd < 0 || f->fd < 0)
		goto fail;
	if ((flags & O_NONBLOCK) && fcntl(f->fd, F_SETFL, O_NONBLOCK))
		goto fail;
	f->evsrc.kind = SRC_EVENTFD;
	f->evsrc.file = f;
	ev.data.ptr = &f->evsrc;
	if (epoll_ctl(f->fd, EPOLL_CTL_ADD, f->evfd, &ev))
		goto fail;
	pthread_mutex_lock(&cm_lock);
	f->next = files;
	files = f;
	pthread_mutex_unlock(&cm_lock);
	return f->fd;
fail:
	e = errno;
	if (f->fd >= 0)
		syscall(SYS_close, f->fd);
	if (f->evfd >= 0)
		syscall(SYS_close, f->evfd);
	free(f);
	errno = e;
	return -1;
}

void ucma_release(int fd)
{
	struct cm_file *f, **pp;

	pthread_mutex_lock(&cm_lock);
	for (pp = &files; (f = *pp) && f->fd != fd; pp = &f->next)
		;
	if (f) {
		*pp = f->next;
		/* ucma_close: every id of the file goes */
		for (uint32_t h = 0; h < ids_cap; h++)
			if (ids[h] && ids[h]->file == f)
				cm_destroy_id(ids[h]);
		while (f->head) {
			struct cm_event *ev = f->head;

			f->head = ev->next;
			if (ev->child) {
				cmi_destroy(ev->child);
				free_id(ev->child);
			}
			free(ev);
		}
		syscall(SYS_close, f->evfd);
		free(f);
	}
	pthread_mutex_unlock(&cm_lock);
}
