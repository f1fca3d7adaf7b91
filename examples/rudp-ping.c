/* SPDX-License-Identifier: MIT */
/*
 * rudp-ping: asks a RakNet server (a Minecraft Bedrock server, a librudp
 * server, any RakNet implementation) for its unconnected pong.
 *
 *   rudp-ping HOST:PORT [--count N] [--timeout MS] [--sim-* ...]
 *
 * For each of N pings (default 1) it prints the server's guid, the round-trip
 * time and the pong data: as text when it is printable (the uint16-BE length
 * that Bedrock servers put before their MOTD string is recognised and shown
 * as such), as hex otherwise. Exits 0 when every ping was answered, 1 when
 * one was not, 2 on bad usage. The --sim-* options run the pings through
 * librudp's network simulator (sim_options.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rudp.h"
#include "sim_options.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: rudp-ping HOST:PORT [--count N] [--timeout MS] [--sim-* ...]\n" SIM_OPTIONS_USAGE);
}

static int parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
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

int main(int argc, char **argv)
{
	const char *target = NULL;
	long count = 1, timeout_ms = 2000;
	rudp_sim_config sim = {0};
	for (int i = 1; i < argc; i++) {
		int is_sim = sim_option(argc, argv, &i, &sim);
		if (is_sim < 0)
			return 2;
		if (is_sim)
			continue;
		if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 1000000, &count) != 0) {
				fprintf(stderr, "rudp-ping: bad --count '%s' (1..1000000)\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 600000, &timeout_ms) != 0) {
				fprintf(stderr, "rudp-ping: bad --timeout '%s' (1..600000 ms)\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if (argv[i][0] != '-' && !target) {
			target = argv[i];
		} else {
			fprintf(stderr, "rudp-ping: bad argument '%s'\n", argv[i]);
			usage();
			return 2;
		}
	}
	if (!target) {
		usage();
		return 2;
	}

	rudp_config cfg;
	rudp_config_init(&cfg);
	cfg.sim = sim;
	rudp_host *host;
	int r = rudp_host_create(&cfg, &host);
	if (r != 0) {
		fprintf(stderr, "rudp-ping: cannot create a socket: %s\n", rudp_strerror(r));
		return 1;
	}
	int answered = 0;
	for (long i = 0; i < count; i++) {
		rudp_pong pong;
		r = rudp_ping(host, target, (int)timeout_ms, &pong);
		if (r == RUDP_E_ADDRESS || r == RUDP_E_INVALID) {
			fprintf(stderr, "rudp-ping: bad address '%s': %s\n", target, rudp_strerror(r));
			rudp_host_destroy(host);
			return 2;
		}
		if (r != 0) {
			printf("no pong from %s within %ld ms\n", target, timeout_ms);
		} else {
			answered++;
			printf("pong from %s: guid %" PRIu64 " (0x%016" PRIx64 "), time %.3f ms\n", target,
			       pong.server_guid, pong.server_guid, pong.rtt_us / 1000.0);
			print_data(pong.data, pong.data_len);
		}
		fflush(stdout);
		if (i + 1 < count)
			usleep(200000); /* a polite gap between pings */
	}
	if (count > 1)
		printf("%d/%ld pings answered\n", answered, count);
	rudp_host_stats st;
	if (rudp_host_stats_get(host, &st) == 0)
		print_sim_stats("rudp-ping", &st);
	rudp_host_destroy(host);
	return answered == count ? 0 : 1;
}
