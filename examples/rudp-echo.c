/* SPDX-License-Identifier: MIT */
/*
 * rudp-echo: an echo server and a verifying client over librudp.
 *
 *   rudp-echo server [--bind ADDR:PORT] [--max-clients N] [--once] [--stats]
 *   rudp-echo client --connect ADDR:PORT [--count N] [--size BYTES] [--window W]
 *                    [--protocol V] [--channel C] [--timeout MS] [--stats]
 *
 * Every client message is 0xfe (the id Bedrock games use, so any RakNet echo
 * server passes it on), a 4-byte little-endian message id, then bytes derived
 * from the id. The client checks each echo's id (in order) and the XXH3 of
 * the whole message against what it sent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "rudp.h"

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rudp-echo server [--bind ADDR:PORT] [--max-clients N] [--once] [--stats]\n"
		"       rudp-echo client --connect ADDR:PORT [--count N] [--size BYTES] [--window W]\n"
		"                        [--protocol V] [--channel C] [--timeout MS] [--stats]\n");
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static void print_peer_stats(const char *who, rudp_peer *peer)
{
	rudp_peer_stats s;
	if (rudp_peer_stats_get(peer, &s) != 0)
		return;
	printf("%s stats: rtt %.3f ms (var %.3f) rto %.1f ms, mtu %u, sent %" PRIu64 " msgs / %" PRIu64
	       " datagrams / %" PRIu64 " B, received %" PRIu64 " msgs / %" PRIu64 " datagrams / %" PRIu64
	       " B, retransmitted %" PRIu64 " frames, nacks %" PRIu64 ", dropped %" PRIu64
	       ", duplicates %" PRIu64 ", window %u/%u\n",
	       who, s.rtt_us / 1000.0, s.rtt_var_us / 1000.0, s.rto_us / 1000.0, s.mtu, s.messages_sent,
	       s.datagrams_sent, s.bytes_sent, s.messages_received, s.datagrams_received, s.bytes_received,
	       s.frames_retransmitted, s.nacks_received, s.datagrams_dropped, s.duplicates_dropped,
	       s.window_in_use, s.window_frames);
}

static void log_to_stderr(void *ud, int level, const char *msg)
{
	(void)ud;
	static const char *names[] = {"error", "warning", "info", "debug"};
	fprintf(stderr, "rudp %s: %s\n", names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

/* ---- server ---- */

static int run_server(int argc, char **argv)
{
	const char *bind = "0.0.0.0:19132";
	uint32_t max_clients = 1024;
	int once = 0, stats = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--bind") && i + 1 < argc) {
			bind = argv[++i];
		} else if (!strcmp(argv[i], "--max-clients") && i + 1 < argc) {
			if (parse_u32(argv[++i], 1, 1u << 20, &max_clients) != 0)
				return usage(), 2;
		} else if (!strcmp(argv[i], "--once")) {
			once = 1;
		} else if (!strcmp(argv[i], "--stats")) {
			stats = 1;
		} else {
			usage();
			return 2;
		}
	}
	rudp_config cfg;
	rudp_config_init(&cfg);
	cfg.bind_address = bind;
	cfg.max_peers = max_clients;
	cfg.log = log_to_stderr;
	cfg.log_level_max = 2;
	rudp_host *host;
	int r = rudp_host_create(&cfg, &host);
	if (r != 0) {
		fprintf(stderr, "rudp-echo: cannot create server on %s: %s%s%s\n", bind, rudp_strerror(r),
			r == RUDP_E_SYSTEM ? ": " : "", r == RUDP_E_SYSTEM ? strerror(errno) : "");
		return 1;
	}
	char local[64];
	rudp_host_local_address(host, local, sizeof(local));
	printf("listening on %s\n", local);
	fflush(stdout);

	rudp_event ev[256];
	uint64_t echoed = 0, failed = 0;
	int clients_seen = 0;
	while (!stop_requested) {
		int n = rudp_service(host, ev, 256, 100);
		if (n < 0) {
			fprintf(stderr, "rudp-echo: service failed: %s\n", rudp_strerror(n));
			break;
		}
		for (int i = 0; i < n; i++) {
			switch (ev[i].type) {
			case RUDP_EVENT_CONNECT: clients_seen++; break;
			case RUDP_EVENT_RECEIVE:
				r = rudp_send(ev[i].peer, ev[i].data, ev[i].len, ev[i].reliability,
					      ev[i].channel);
				if (r == 0) {
					echoed++;
				} else {
					failed++;
					fprintf(stderr, "rudp-echo: echo failed: %s\n", rudp_strerror(r));
				}
				break;
			case RUDP_EVENT_DISCONNECT:
				if (stats)
					print_peer_stats("server", ev[i].peer);
				if (once)
					stop_requested = 1;
				break;
			}
		}
	}
	printf("server echoed %" PRIu64 " messages (%" PRIu64 " failed) for %d clients\n", echoed, failed,
	       clients_seen);
	rudp_host_destroy(host);
	return failed ? 1 : 0;
}

/* ---- client ---- */

/* Fills a message for id: 0xfe, id (LE), then a byte pattern of the id. */
static void fill_message(uint8_t *buf, size_t size, uint32_t id)
{
	buf[0] = 0xfe;
	for (size_t i = 1; i < 5 && i < size; i++)
		buf[i] = (uint8_t)(id >> (8 * (i - 1)));
	uint64_t x = 0x9e3779b97f4a7c15ull * (id + 1);
	for (size_t i = 5; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

static int run_client(int argc, char **argv)
{
	const char *target = NULL;
	uint32_t count = 1000, size = 64, window = 16, protocol = 11, channel = 0, timeout_ms = 60000;
	int stats = 0;
	for (int i = 0; i < argc; i++) {
		int bad = 0;
		if (!strcmp(argv[i], "--connect") && i + 1 < argc)
			target = argv[++i];
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			bad = parse_u32(argv[++i], 1, UINT32_MAX, &count);
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			bad = parse_u32(argv[++i], 5, 4u << 20, &size);
		else if (!strcmp(argv[i], "--window") && i + 1 < argc)
			bad = parse_u32(argv[++i], 1, 1u << 20, &window);
		else if (!strcmp(argv[i], "--protocol") && i + 1 < argc)
			bad = parse_u32(argv[++i], 6, 11, &protocol);
		else if (!strcmp(argv[i], "--channel") && i + 1 < argc)
			bad = parse_u32(argv[++i], 0, RUDP_CHANNELS - 1, &channel);
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			bad = parse_u32(argv[++i], 1, UINT32_MAX, &timeout_ms);
		else if (!strcmp(argv[i], "--stats"))
			stats = 1;
		else
			bad = 1;
		if (bad) {
			fprintf(stderr, "rudp-echo: bad argument '%s'\n", argv[i]);
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
	cfg.protocol_version = (uint8_t)protocol;
	cfg.log = log_to_stderr;
	cfg.log_level_max = 1;
	rudp_host *host;
	int r = rudp_host_create(&cfg, &host);
	if (r != 0) {
		fprintf(stderr, "rudp-echo: cannot create client: %s\n", rudp_strerror(r));
		return 1;
	}
	rudp_peer *peer;
	r = rudp_connect(host, target, &peer);
	if (r != 0) {
		fprintf(stderr, "rudp-echo: cannot connect to %s: %s\n", target, rudp_strerror(r));
		rudp_host_destroy(host);
		return 1;
	}

	uint8_t *msg = malloc(size), *expect = malloc(size);
	if (!msg || !expect) {
		fprintf(stderr, "rudp-echo: out of memory\n");
		return 1;
	}
	uint32_t sent = 0, verified = 0;
	int connected = 0, done = 0, rc = 1;
	const char *failure = NULL;
	char why[160];
	uint64_t start = now_ms(), t_connected = 0;
	rudp_event ev[256];
	while (!done && !stop_requested) {
		if (now_ms() - start > timeout_ms) {
			snprintf(why, sizeof(why), "timed out after %u ms (%u sent, %u verified)", timeout_ms,
				 sent, verified);
			failure = why;
			break;
		}
		while (connected && sent < count && sent - verified < window) {
			fill_message(msg, size, sent);
			r = rudp_send(peer, msg, size, RUDP_RELIABLE_ORDERED, (int)channel);
			if (r == RUDP_E_QUEUE_FULL)
				break;
			if (r != 0) {
				snprintf(why, sizeof(why), "send failed: %s", rudp_strerror(r));
				failure = why;
				done = 1;
				break;
			}
			sent++;
		}
		if (done)
			break;
		int n = rudp_service(host, ev, 256, 50);
		if (n < 0) {
			snprintf(why, sizeof(why), "service failed: %s", rudp_strerror(n));
			failure = why;
			break;
		}
		for (int i = 0; i < n && !done; i++) {
			switch (ev[i].type) {
			case RUDP_EVENT_CONNECT:
				connected = 1;
				t_connected = now_ms();
				break;
			case RUDP_EVENT_RECEIVE: {
				uint32_t id = verified;
				if (ev[i].len != size || ev[i].len < 5) {
					snprintf(why, sizeof(why), "echo %u has %zu bytes, expected %u", id,
						 ev[i].len, size);
					failure = why;
					done = 1;
					break;
				}
				uint32_t got = (uint32_t)ev[i].data[1] | (uint32_t)ev[i].data[2] << 8 |
					       (uint32_t)ev[i].data[3] << 16 | (uint32_t)ev[i].data[4] << 24;
				if (got != id) {
					snprintf(why, sizeof(why),
						 "echo out of order: got id %u, expected %u", got, id);
					failure = why;
					done = 1;
					break;
				}
				fill_message(expect, size, id);
				if (XXH3_64bits(ev[i].data, ev[i].len) != XXH3_64bits(expect, size)) {
					snprintf(why, sizeof(why), "echo %u payload differs (XXH3 mismatch)",
						 id);
					failure = why;
					done = 1;
					break;
				}
				verified++;
				if (verified == count)
					done = 1;
				break;
			}
			case RUDP_EVENT_DISCONNECT:
				snprintf(why, sizeof(why), "disconnected: %s (%u sent, %u verified)",
					 rudp_reason_string(ev[i].reason), sent, verified);
				failure = why;
				peer = NULL;
				done = 1;
				break;
			}
		}
	}
	uint64_t elapsed = now_ms() - (t_connected ? t_connected : start);
	if (!failure && verified == count) {
		rc = 0;
		double secs = elapsed ? (double)elapsed / 1000.0 : 0.001;
		printf("verified %u/%u messages (%u B each) in %.3f s, %.2f MiB/s each way\n", verified,
		       count, size, secs, (double)verified * size / 1048576.0 / secs);
	} else {
		fprintf(stderr, "rudp-echo: %s\n", failure ? failure : "interrupted");
		printf("verified %u/%u messages\n", verified, count);
	}
	if (peer && stats)
		print_peer_stats("client", peer);
	if (peer) {
		/* Say goodbye properly, but do not hang on a dead server. */
		rudp_disconnect(peer);
		uint64_t until = now_ms() + 3000;
		int gone = 0;
		while (!gone && now_ms() < until) {
			int n = rudp_service(host, ev, 256, 50);
			for (int i = 0; i < n; i++)
				if (ev[i].type == RUDP_EVENT_DISCONNECT)
					gone = 1;
			if (n < 0)
				break;
		}
	}
	free(msg);
	free(expect);
	rudp_host_destroy(host);
	return rc;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		usage();
		return 2;
	}
	if (!strcmp(argv[1], "server"))
		return run_server(argc - 2, argv + 2);
	if (!strcmp(argv[1], "client"))
		return run_client(argc - 2, argv + 2);
	if (!strcmp(argv[1], "--version")) {
		printf("rudp-echo %s\n", RUDP_VERSION_STRING);
		return 0;
	}
	usage();
	return 2;
}
