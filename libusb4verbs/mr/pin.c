// SPDX-License-Identifier: MIT
/*
 * What a kernel device's registration would refuse. ib_umem_get pins the
 * pages of an MR, with FOLL_WRITE when the access lets anyone write them
 * (local or remote write, atomics, memory-window binds: ib_access_writable),
 * and the pin fails with EFAULT on a page that is not mapped, not
 * readable, or not writable when FOLL_WRITE is asked for. The copy path
 * pins nothing, but a region the responder would fault on must fail at
 * registration here too, as it does on a kernel device.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine_int.h"

/* Is every page of [addr, addr + len) mapped? (No /proc: perms unknown.) */
static bool range_mapped(uint64_t start, uint64_t end)
{
	long psz = sysconf(_SC_PAGESIZE);
	unsigned char vec[4096];

	while (start < end) {
		uint64_t chunk = (uint64_t)sizeof(vec) * (uint64_t)psz;

		if (chunk > end - start)
			chunk = end - start;
		if (mincore((void *)(uintptr_t)start, chunk, vec))
			return false;
		start += chunk;
	}
	return true;
}

/*
 * Walk the process's mappings (sorted by address) over the range; every
 * page must be in one that is readable, and writable if asked.
 */
static bool range_allows(FILE *maps, uint64_t cur, uint64_t end, bool write)
{
	char *line = NULL;
	size_t cap = 0;

	while (cur < end && getline(&line, &cap, maps) > 0) {
		uint64_t lo, hi;
		char perms[5];

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s", &lo, &hi,
			   perms) != 3)
			break;
		if (hi <= cur)
			continue;
		if (lo > cur || perms[0] != 'r' || (write && perms[1] != 'w'))
			break;
		cur = hi;
	}
	free(line);
	return cur >= end;
}

bool u4v_range_pinnable(uint64_t addr, uint64_t len, int access)
{
	const int writable = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t start = addr & ~(uint64_t)(psz - 1);
	FILE *maps = fopen("/proc/self/maps", "re");
	bool ok;

	if (!maps)
		return range_mapped(start, addr + len);
	ok = range_allows(maps, start, addr + len, access & writable);
	fclose(maps);
	return ok;
}
