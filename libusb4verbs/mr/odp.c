// SPDX-License-Identifier: MIT
/*
 * On-demand paging. Registration pins nothing anywhere in this engine (it
 * copies); what IBV_ACCESS_ON_DEMAND adds is that an MR's memory need not be
 * there, or may go: every access the engine makes to such an MR is a copy
 * that cannot fault, process_vm_readv / process_vm_writev on the own
 * process, which report an unmapped or read-only page as an error, so the
 * work request completes with an access error instead of a signal. An
 * atomic first has its page populated writable (MADV_POPULATE_WRITE, which
 * fails for such pages); a page unmapped by another thread between that and
 * the atomic itself is the application's race, as with any memory it hands
 * over. ibv_advise_mr populates pages ahead.
 */
#define _GNU_SOURCE /* process_vm_readv, process_vm_writev */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "engine_int.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool copies_ok, populate_ok, atomics_ok;

/*
 * Can this process copy its own memory with process_vm_*v (a seccomp
 * policy may forbid them), and populate pages writable (Linux >= 5.14)?
 */
static void probe(void)
{
	static uint64_t word = 0x5a5a;
	uint64_t got = 0;
	struct iovec l = { &got, sizeof(got) };
	struct iovec r = { &word, sizeof(word) };
	long psz = sysconf(_SC_PAGESIZE);

	copies_ok = process_vm_readv(getpid(), &l, 1, &r, 1, 0) ==
			    (ssize_t)sizeof(got) &&
		    got == word;
	populate_ok = !madvise((void *)((uintptr_t)&word &
					~(uintptr_t)(psz - 1)),
			       (size_t)psz, MADV_POPULATE_WRITE);
	atomics_ok = copies_ok && populate_ok;
}

bool u4v_odp_available(void)
{
	pthread_once(&probe_once, probe);
	return copies_ok;
}

bool u4v_odp_atomics(void)
{
	pthread_once(&probe_once, probe);
	return atomics_ok;
}

/* Does this kernel know MADV_POPULATE_(READ|WRITE) (Linux >= 5.14)? */
static bool populate_known(void)
{
	pthread_once(&probe_once, probe);
	return populate_ok;
}

/* Copy len bytes from our own address src to dst; 0 or EFAULT. */
int u4v_odp_read(void *dst, uint64_t src, size_t len)
{
	struct iovec l = { dst, len };
	struct iovec r = { (void *)(uintptr_t)src, len };

	if (!len)
		return 0;
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ?
		       0 :
		       EFAULT;
}

/* Copy len bytes from src to our own address dst; 0 or EFAULT. */
int u4v_odp_write(uint64_t dst, const void *src, size_t len)
{
	struct iovec l = { (void *)(uintptr_t)src, len };
	struct iovec r = { (void *)(uintptr_t)dst, len };

	if (!len)
		return 0;
	return process_vm_writev(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ?
		       0 :
		       EFAULT;
}

/* Make the pages of [addr, addr + len) present (writable); 0 or errno. */
static int populate(uint64_t addr, uint64_t len, int advice)
{
	uint64_t psz = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start = addr & ~(psz - 1);
	uint64_t end = (addr + len + psz - 1) & ~(psz - 1);

	if (!len)
		return 0;
	return madvise((void *)(uintptr_t)start, end - start, advice) ? errno :
									  0;
}

int u4v_odp_prepare_atomic(uint64_t addr)
{
	return u4v_odp_atomics() && !populate(addr, 8, MADV_POPULATE_WRITE) ?
		       0 :
		       EFAULT;
}

int u4v_advise_mr(struct u4v_pd *pd, enum ibv_advise_mr_advice advice,
		  uint32_t flags, const struct ibv_sge *sg, uint32_t n)
{
	int madv = advice == IBV_ADVISE_MR_ADVICE_PREFETCH ?
			   MADV_POPULATE_READ :
		   advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE ?
			   MADV_POPULATE_WRITE :
			   MADV_WILLNEED; /* NO_FAULT: start reading, no fault */
	uint32_t i;

	if (advice > IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT ||
	    (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || !n || !sg)
		return EINVAL;
	/* every range must lie in an ODP MR of pd that allows the access */
	for (i = 0; i < n; i++) {
		struct u4v_mr *mr = u4v_mr_lookup(pd->ctx, sg[i].lkey);

		if (!mr || mr->lkey != sg[i].lkey || mr->pd != pd ||
		    !(mr->access & IBV_ACCESS_ON_DEMAND) ||
		    !u4v_in_range(mr->addr, mr->length, sg[i].addr,
				  sg[i].length) ||
		    (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
		     !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
			return EINVAL;
	}
	for (i = 0; i < n; i++) {
		int err = populate(sg[i].addr, sg[i].length, madv);

		/* advice: only a flushing (synchronous) prefetch reports, and
		 * a kernel without the populate advice (EINVAL) has nothing
		 * to say; with it, EINVAL is pages the access advised may not
		 * reach (PROT_NONE, or read-only for a write): EFAULT, as for
		 * missing ones (ibv_advise_mr(3); Linux's ODP alike) */
		bool unknown = err == EINVAL && madv != MADV_WILLNEED &&
			       !populate_known();

		if (err && !unknown && (flags & IBV_ADVISE_MR_FLAG_FLUSH))
			return EFAULT;
	}
	return 0;
}
