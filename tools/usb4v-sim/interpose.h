/* SPDX-License-Identifier: MIT */
/*
 * The shim's interposers (shim.c, nl_route.c, ifaddrs.c): what the
 * preloaded library exports, and how an interposer reaches the definition
 * it stands in front of. Include after <dlfcn.h> with _GNU_SOURCE.
 */
#ifndef USB4V_SIM_INTERPOSE_H
#define USB4V_SIM_INTERPOSE_H

/* Exported from the shim; everything else stays hidden. */
#define EXPORT __attribute__((visibility("default")))

/* The next definition of name (libc's, usually), looked up once. */
#define NEXT(type, name)                                                       \
	({                                                                     \
		static type fn_;                                               \
		type f_ = __atomic_load_n(&fn_, __ATOMIC_RELAXED);             \
		if (!f_) {                                                     \
			f_ = (type)dlsym(RTLD_NEXT, name);                     \
			__atomic_store_n(&fn_, f_, __ATOMIC_RELAXED);          \
		}                                                              \
		f_;                                                            \
	})

#endif
