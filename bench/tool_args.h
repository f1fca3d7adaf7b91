/* SPDX-License-Identifier: MIT */
/*
 * What the small benchmark tools (rudp-idle-memory, rudp-api-cost) share:
 * a strict number argument (examples/tool_num.h, which the examples use
 * too) and a monotonic clock in seconds.
 */
#ifndef RUDP_BENCH_TOOL_ARGS_H
#define RUDP_BENCH_TOOL_ARGS_H

#include <time.h>

#include "examples/tool_num.h"

static inline double tool_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
