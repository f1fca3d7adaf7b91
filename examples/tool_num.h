/* SPDX-License-Identifier: MIT */
/*
 * A strict whole-number command-line argument, shared by the examples and
 * the small benchmark tools (bench/tool_args.h): a value with trailing
 * junk or out of range is refused rather than read as far as it goes.
 */
#ifndef RUDP_EXAMPLES_TOOL_NUM_H
#define RUDP_EXAMPLES_TOOL_NUM_H

#include <errno.h>
#include <stdlib.h>

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
