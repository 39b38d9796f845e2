/* SPDX-License-Identifier: MIT */
/*
 * What every fuzz target sets about its own runs, in LLVMFuzzerInitialize
 * (libFuzzer reads its flags after that call).
 *
 * A target's -max_len: as long as the longest input that still means
 * something to it, and no longer. libFuzzer lets its corpus grow to
 * max_len; longer inputs cost time (mutations, copies, more records played)
 * and reach nothing new, so that 10^7 executions stay a matter of hours.
 * A -max_len on the command line wins.
 */
#ifndef U4V_FUZZ_OPTIONS_H
#define U4V_FUZZ_OPTIONS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The harness's own invariant checks run after every event: their loops
 * are no coverage for the fuzzer to chase, and instrumented they cost a
 * good part of each execution.
 */
#define FUZZ_CHECKER __attribute__((no_sanitize("coverage")))

int LLVMFuzzerInitialize(int *argc, char ***argv);

static inline void fuzz_default_max_len(int *argc, char ***argv,
					unsigned int max_len)
{
	static char flag[32];
	char **args;
	int i;

	for (i = 1; i < *argc; i++)
		if (!strncmp((*argv)[i], "-max_len=", 9))
			return;
	args = calloc((size_t)*argc + 2, sizeof(*args));
	if (!args)
		abort();
	snprintf(flag, sizeof(flag), "-max_len=%u", max_len);
	memcpy(args, *argv, (size_t)*argc * sizeof(*args));
	args[(*argc)++] = flag;
	*argv = args; /* libFuzzer keeps it: never freed */
}

#endif
