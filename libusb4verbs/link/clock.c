/* SPDX-License-Identifier: MIT */
/* The link layer's clock: CLOCK_MONOTONIC is shared by all processes of a host.
 */
#include <time.h>

#include <usb4verbs/link.h>

uint64_t u4l_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
