/* SPDX-License-Identifier: MIT */
/*
 * What the small benchmark tools (rudp-idle-memory, rudp-api-cost) share:
 * a strict number argument and a monotonic clock in seconds.
 */
#ifndef RUDP_BENCH_TOOL_ARGS_H
#define RUDP_BENCH_TOOL_ARGS_H

#include <errno.h>
#include <stdlib.h>
#include <time.h>

static inline double tool_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 0 and *out when s is a whole decimal number in [min, max]; else -1. */
static inline int tool_parse_long(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

#endif
