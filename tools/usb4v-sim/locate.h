/* SPDX-License-Identifier: MIT */
/*
 * Where the provider and the LD_PRELOAD shim are: the build tree next to
 * this binary, the installed layout, or USB4V_PROVIDER_PATH /
 * USB4V_SHIM_PATH.
 */
#ifndef USB4V_SIM_LOCATE_H
#define USB4V_SIM_LOCATE_H

#include <stdbool.h>
#include <stddef.h>

/* Set by CMake; defaults for a build without it. */
#ifndef U4V_PROVIDER_SUFFIX
#define U4V_PROVIDER_SUFFIX "-rdmav34.so"
#endif
#ifndef U4V_BUILD_PROVIDER_REL /* from the tool's dir in the build tree */
#define U4V_BUILD_PROVIDER_REL "../../providers/usb4verbs"
#endif
#ifndef U4V_INSTALL_LIBDIR_REL /* from the tool's dir when installed */
#define U4V_INSTALL_LIBDIR_REL "../lib"
#endif
#ifndef U4V_INSTALL_LIBDIR /* absolute, as configured */
#define U4V_INSTALL_LIBDIR "/usr/local/lib"
#endif

#define PROVIDER_BASE "libusb4verbs"
#define SHIM_FILE "libusb4v-sim-shim.so"

/* Absolute path prefix for RDMAV_DRIVERS (libibverbs appends the suffix). */
bool u4vs_find_provider(char *prefix, size_t len);
/* Absolute path of libusb4v-sim-shim.so. */
bool u4vs_find_shim(char *out, size_t len);

/* Print "usb4v-sim: ..." and exit with code (usb4v-sim.c). */
__attribute__((format(printf, 2, 3), noreturn)) void fail(int code,
							  const char *fmt, ...);

#endif
