/* SPDX-License-Identifier: MIT */
/* Time values carried by QP attributes, in nanoseconds. */
#ifndef U4V_TIMER_H
#define U4V_TIMER_H

#include <stdint.h>

#define U4V_TIME_INFINITE UINT64_MAX

/* Local ACK timeout: 4.096 us * 2^timeout; 0 means wait forever. */
uint64_t u4v_ack_timeout_ns(uint8_t timeout);
/* RNR NAK timer code (min_rnr_timer, 0..31) to a delay. */
uint64_t u4v_rnr_delay_ns(uint8_t code);

#endif
