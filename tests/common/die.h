/* SPDX-License-Identifier: MIT */
/* The failure exit of the stand-alone test programs (tests/common/die.c). */
#ifndef U4VT_DIE_H
#define U4VT_DIE_H

#include <stdarg.h>

/* "<program>: <prefix>FAIL: <message>" on stderr. */
void u4vt_vfail_msg(const char *prefix, const char *fmt, va_list ap);
/* "<program>: FAIL: <message>" on stderr, then exit(1). */
__attribute__((format(printf, 1, 2), noreturn)) void u4vt_die(const char *fmt,
							      ...);
/* "<program>: <what>: <strerror(err)>" on stderr, then exit(1). */
__attribute__((noreturn)) void u4vt_die_err(const char *what, int err);

#endif
