/* SPDX-License-Identifier: MIT */
/* usb4v-sim gc [--idle] [--all-users]: see gc.c and usb4v-sim(1). */
#ifndef USB4V_SIM_GC_H
#define USB4V_SIM_GC_H

/* argv[1] is "gc". Returns the exit status: 0, 1 (something could not be
 * removed) or 2 (misuse). */
int usb4v_sim_gc(const char *prog, int argc, char **argv);

#endif
