// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "die.h"

void u4vt_vfail_msg(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %sFAIL: ", program_invocation_short_name, prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void u4vt_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	u4vt_vfail_msg("", fmt, ap);
	va_end(ap);
	exit(1);
}

void u4vt_die_err(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
		strerror(err));
	exit(1);
}
