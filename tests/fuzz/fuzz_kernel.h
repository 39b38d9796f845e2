/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the kernel shim's fuzz targets (fuzz_kproto, fuzz_kring) put
 * around the module's own files: devices and contexts as the ib_device
 * glue (usb4verbs_ib.c) makes them, stand-ins for the functions of the
 * files not built here (ib.c, tb.c), and the invariants the cable's state
 * must keep whatever the input did.
 */
#ifndef U4K_FUZZ_KERNEL_H
#define U4K_FUZZ_KERNEL_H

#include "usb4verbs.h"
#include "fuzz_options.h"

/*
 * Events played per input: rings of 16, six contexts and a budget of a
 * few channels go through every state within a few dozen events, so 256
 * leave room for any order of them.
 */
#define FK_MAX_EVENTS 256

/*
 * A device on cable, as u4k_dev_add would make it (not registered),
 * installed as cable->dev. Aborts when cable is NULL or memory runs out.
 */
struct u4k_dev *fk_dev_add(struct u4k_cable *cable);
/* The end of u4k_tb_down: the device freed, the cable's reference dropped. */
void fk_dev_remove(struct u4k_cable *cable, struct u4k_dev *dev);
/*
 * A context of dev as u4k_alloc_ucontext makes it (status page, direct
 * doorbell pages, attached to the cable): NULL and *err when that fails.
 */
struct u4k_ucontext *fk_ctx_new(struct u4k_dev *dev, bool direct, int *err);
/* u4k_dealloc_ucontext: detached, its resources released, freed. */
void fk_ctx_free(struct u4k_ucontext *uctx);
/* The context in *slot, if any, freed so; the slot emptied. */
void fk_ctx_close(struct u4k_ucontext **slot);

/* An entry point's result: 0 or a negative errno, nothing else. */
void fk_check_ret(long ret);
/*
 * The cable's bookkeeping holds: contexts only of our end, the live set
 * as they are, the budget as many units as halves hold one and never more
 * than the cable has, halves installed under their remote id and lane
 * with their owner (lanes past 0 only across the cable), and no channel between two of our contexts made stale by
 * anything the other end said (it knows nothing of them). Aborts if not.
 */
void fk_check_cable(struct u4k_cable *cable);
/* The indices of a live half stay in their ring. Aborts if not. */
void fk_check_half(const struct u4k_half *h);

/* The input of the run under way, read from the front (fk_input_set). */
void fk_input_set(const u8 *data, size_t len);
bool fk_input_left(void);
/* The next byte, u32 (little-endian), n bytes: past the end, zeros. */
u8 fk_byte(void);
u32 fk_u32(void);
void fk_bytes(void *p, size_t n);

#endif
