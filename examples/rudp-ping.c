/* SPDX-License-Identifier: MIT */
/*
 * rudp-ping: asks RakNet servers (Minecraft Bedrock servers, librudp
 * servers, any RakNet implementation) for their unconnected pong.
 *
 *   rudp-ping HOST:PORT [HOST:PORT ...] [--count N] [--timeout MS] [--sim-* ...]
 *
 * Every server given is pinged at once, as a server browser does
 * (rudp_ping_start: the answers come back as events), N rounds (default
 * 1). For each answer it prints the server's guid, the round-trip time and
 * the pong data: as text when it is printable (the uint16-BE length that
 * Bedrock servers put before their MOTD string is recognised and shown as
 * such), as hex otherwise. Exits 0 when every ping was answered, 1 when
 * one was not, 2 on bad usage. The --sim-* options run the pings through
 * librudp's network simulator (sim_options.h).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rudp.h"
#include "sim_options.h"
#include "tool_num.h"

static void usage(void)
{
	fprintf(stderr, "usage: rudp-ping HOST:PORT [HOST:PORT ...] [--count N] [--timeout MS] [--sim-* "
			"...]\n" SIM_OPTIONS_USAGE);
}

static bool printable(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return true;
}

static void print_data(const uint8_t *p, size_t n)
{
	if (n == 0) {
		printf("  data: (none)\n");
		return;
	}
	/* Bedrock (and jsp-raknet, rust-raknet) write the pong data as a
	 * RakNet string: a uint16-BE length, then the bytes. */
	if (n >= 2 && (size_t)(p[0] << 8 | p[1]) == n - 2 && printable(p + 2, n - 2)) {
		printf("  data: \"%.*s\" (%zu-byte string)\n", (int)(n - 2), (const char *)p + 2, n - 2);
		return;
	}
	if (printable(p, n)) {
		printf("  data: \"%.*s\" (%zu bytes)\n", (int)n, (const char *)p, n);
		return;
	}
	printf("  data: %zu bytes:", n);
	for (size_t i = 0; i < n; i++)
		printf("%s%02x", i % 32 == 0 ? "\n    " : " ", p[i]);
	printf("\n");
}

/* Pings every target at once and prints each answer as it comes. Returns
 * the number answered, or -1 (after a message) when a target is not a
 * usable address. */
static int ping_round(rudp_host *host, char **targets, int n, long timeout_ms)
{
	uint32_t ids[n];
	bool done[n];
	int answered = 0, pending = 0;
	for (int i = 0; i < n; i++) {
		int r = rudp_ping_start(host, targets[i], (int)timeout_ms, &ids[i]);
		if (r == RUDP_E_ADDRESS || r == RUDP_E_INVALID) {
			fprintf(stderr, "rudp-ping: bad address '%s': %s\n", targets[i], rudp_strerror(r));
			return -1;
		}
		done[i] = r != 0;
		if (r != 0)
			printf("cannot ping %s: %s\n", targets[i], rudp_strerror(r));
		else
			pending++;
	}
	/* Exactly one PONG or PING_TIMEOUT comes for every ping started. */
	while (pending > 0) {
		rudp_event ev[64];
		int k = rudp_service(host, ev, 64, 100);
		if (k < 0) {
			fprintf(stderr, "rudp-ping: %s\n", rudp_strerror(k));
			return answered;
		}
		for (int e = 0; e < k; e++) {
			if (ev[e].type != RUDP_EVENT_PONG && ev[e].type != RUDP_EVENT_PING_TIMEOUT)
				continue;
			int i = 0;
			while (i < n && (done[i] || ids[i] != ev[e].ping_id))
				i++;
			if (i == n)
				continue;
			done[i] = true;
			pending--;
			if (ev[e].type == RUDP_EVENT_PING_TIMEOUT) {
				printf("no pong from %s within %ld ms\n", targets[i], timeout_ms);
			} else {
				answered++;
				printf("pong from %s: guid %" PRIu64 " (0x%016" PRIx64 "), time %.3f ms\n",
				       targets[i], ev[e].guid, ev[e].guid, ev[e].rtt_us / 1000.0);
				print_data(ev[e].data, ev[e].len);
			}
			fflush(stdout);
		}
	}
	return answered;
}

int main(int argc, char **argv)
{
	char **targets = calloc((size_t)argc, sizeof(*targets));
	int ntargets = 0;
	long count = 1, timeout_ms = 2000;
	rudp_sim_config sim = {0};
	if (!targets)
		return 1;
	for (int i = 1; i < argc; i++) {
		int is_sim = sim_option(argc, argv, &i, &sim);
		if (is_sim < 0)
			return 2;
		if (is_sim)
			continue;
		if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			if (tool_parse_long(argv[++i], 1, 1000000, &count) != 0) {
				fprintf(stderr, "rudp-ping: bad --count '%s' (1..1000000)\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			if (tool_parse_long(argv[++i], 1, 600000, &timeout_ms) != 0) {
				fprintf(stderr, "rudp-ping: bad --timeout '%s' (1..600000 ms)\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if (argv[i][0] != '-') {
			targets[ntargets++] = argv[i];
		} else {
			fprintf(stderr, "rudp-ping: bad argument '%s'\n", argv[i]);
			usage();
			return 2;
		}
	}
	if (ntargets == 0) {
		usage();
		return 2;
	}

	rudp_config cfg;
	rudp_config_init(&cfg);
	cfg.sim = sim;
	if ((uint32_t)ntargets > cfg.max_pings)
		cfg.max_pings = (uint32_t)ntargets;
	rudp_host *host;
	int r = rudp_host_create(&cfg, &host);
	if (r != 0) {
		fprintf(stderr, "rudp-ping: cannot create a socket: %s\n", rudp_strerror(r));
		return 1;
	}
	long answered = 0, total = count * ntargets;
	for (long i = 0; i < count; i++) {
		int a = ping_round(host, targets, ntargets, timeout_ms);
		if (a < 0) {
			rudp_host_destroy(host);
			free(targets);
			return 2;
		}
		answered += a;
		if (i + 1 < count)
			usleep(200000); /* a polite gap between pings */
	}
	if (total > 1)
		printf("%ld/%ld pings answered\n", answered, total);
	rudp_host_stats st;
	if (rudp_host_stats_get(host, &st) == 0)
		print_sim_stats("rudp-ping", &st);
	rudp_host_destroy(host);
	free(targets);
	return answered == total ? 0 : 1;
}
