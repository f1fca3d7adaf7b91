/* SPDX-License-Identifier: MIT */
/*
 * The wall clock the socket tests wait by: monotonic milliseconds, for
 * deadlines on loops that pump real hosts (never for assertions on time).
 */
#ifndef RUDP_TEST_CLOCK_H
#define RUDP_TEST_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif
