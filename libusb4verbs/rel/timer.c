// SPDX-License-Identifier: MIT
/* QP timer attributes: the InfiniBand encodings. */
#include "rel/timer.h"

uint64_t u4v_ack_timeout_ns(uint8_t timeout)
{
	if (timeout == 0)
		return U4V_TIME_INFINITE;
	if (timeout > 31)
		timeout = 31;
	return 4096ull << timeout;
}

/* Microseconds for each min_rnr_timer code (code 0 is the longest). */
static const uint32_t rnr_us[32] = {
	655360, 10,    20,    30,    40,    60,     80,     120,
	160,	240,   320,   480,   640,   960,    1280,   1920,
	2560,	3840,  5120,  7680,  10240, 15360,  20480,  30720,
	40960,	61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint64_t u4v_rnr_delay_ns(uint8_t code)
{
	return (uint64_t)rnr_us[code & 31] * 1000;
}
