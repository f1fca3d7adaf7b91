/* SPDX-License-Identifier: MIT */
/*
 * The examples' --sim-* options: librudp's built-in network simulator
 * (rudp_config.sim) set from the command line, so a tool can be run over a
 * lossy, slow or distant network without root or netem.
 */
#ifndef RUDP_EXAMPLES_SIM_OPTIONS_H
#define RUDP_EXAMPLES_SIM_OPTIONS_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rudp.h"

#define SIM_OPTIONS_USAGE                                                                                    \
	"  --sim-loss P --sim-latency MS --sim-jitter MS --sim-dup P --sim-reorder P --sim-rate KBIT/S\n"    \
	"  --sim-queue BYTES --sim-seed N\n"                                                                 \
	"               simulate a bad network in this process, each value per direction\n"                  \
	"               (P in percent, 0..100; see rudp_sim_config in rudp.h)\n"

/* If argv[*i] is a --sim-* option followed by its value, stores the value in
 * sim, moves *i to the value and returns 1. Returns 0 when argv[*i] is not
 * one, and -1 (after a message on stderr) when its value is bad. */
static int sim_option(int argc, char **argv, int *i, rudp_sim_config *sim)
{
	static const struct {
		const char *name;
		int percent; /* a float in percent, else an integer up to max */
		uint64_t max;
	} options[] = {
		{"--sim-loss", 1, 100},        {"--sim-latency", 0, 10000},   {"--sim-jitter", 0, 10000},
		{"--sim-dup", 1, 100},         {"--sim-reorder", 1, 100},     {"--sim-rate", 0, 100000000},
		{"--sim-queue", 0, 64u << 20}, {"--sim-seed", 0, UINT64_MAX},
	};
	const char *arg = argv[*i];
	size_t k = 0;
	while (k < sizeof(options) / sizeof(options[0]) && strcmp(arg, options[k].name) != 0)
		k++;
	if (k == sizeof(options) / sizeof(options[0]))
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "%s needs a value\n", arg);
		return -1;
	}
	const char *s = argv[++*i];
	char *end;
	errno = 0;
	if (options[k].percent) {
		float v = strtof(s, &end);
		if (errno || *s == '\0' || *end != '\0' || !(v >= 0.0f && v <= 100.0f)) {
			fprintf(stderr, "bad %s '%s' (0..100 percent)\n", arg, s);
			return -1;
		}
		if (k == 0)
			sim->loss_percent = v;
		else if (k == 3)
			sim->duplicate_percent = v;
		else
			sim->reorder_percent = v;
		return 1;
	}
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *s == '\0' || *s == '-' || *end != '\0' || v > options[k].max) {
		fprintf(stderr, "bad %s '%s' (0..%" PRIu64 ")\n", arg, s, options[k].max);
		return -1;
	}
	switch (k) {
	case 1: sim->latency_ms = (uint32_t)v; break;
	case 2: sim->jitter_ms = (uint32_t)v; break;
	case 5: sim->rate_kbps = (uint32_t)v; break;
	case 6: sim->rate_queue_bytes = (uint32_t)v; break;
	default: sim->seed = (uint64_t)v; break;
	}
	return 1;
}

/* One line of what the simulator did, when it did anything. */
static void print_sim_stats(const char *who, const rudp_host_stats *s)
{
	if (!(s->sim_dropped | s->sim_overflowed | s->sim_duplicated | s->sim_reordered | s->sim_delayed))
		return;
	printf("%s simulator: dropped %" PRIu64 ", overflowed %" PRIu64 ", duplicated %" PRIu64
	       ", reordered %" PRIu64 ", delayed %" PRIu64 "\n",
	       who, s->sim_dropped, s->sim_overflowed, s->sim_duplicated, s->sim_reordered, s->sim_delayed);
}

#endif
