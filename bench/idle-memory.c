/* SPDX-License-Identifier: MIT */
/*
 * rudp-idle-memory: what a process of many connections keeps resident after
 * a burst, and after an idle spell. One process holds a server host and a
 * client host (socket_per_connect) with N connections over loopback; the
 * server sends each peer a burst of B reliable-ordered 1,000-byte messages,
 * and the process's VmRSS is read when the peers are connected, just after
 * every message arrived, and after S seconds of both hosts idling.
 *
 *   rudp-idle-memory [--peers N] [--burst B] [--idle S] [--policy] [--port P]
 *
 * Defaults: 1,000 peers, 60 messages, 3.5 s (past the 1 s after which idle
 * send and stage rings shrink, and a keepalive), port 47011 on 127.0.0.1.
 * --policy gives the server's peers a default send policy, so a burst
 * beyond half the window waits in its stage rings. docs/tuning.md quotes
 * its figures. Exits 0, 1 on a failure (printed), 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rudp.h"
#include "tool_args.h"

#define EVENTS 256
#define MESSAGE_LEN 1000

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			v = strtol(line + 6, NULL, 10);
	fclose(f);
	return v;
}

static void usage(void)
{
	fprintf(stderr, "usage: rudp-idle-memory [--peers N] [--burst B] [--idle S] [--policy] [--port P]\n");
}

/* Services both hosts; counts connects on each side and received messages. */
static int service_both(rudp_host *srv, rudp_host *cli, int wait_ms, rudp_peer **speers, long *nspeers,
			long *connected, long *received)
{
	rudp_event ev[EVENTS];
	int k = rudp_service(srv, ev, EVENTS, 0);

	if (k < 0)
		return k;
	for (int i = 0; i < k; i++) {
		if (ev[i].type == RUDP_EVENT_CONNECT && speers)
			speers[(*nspeers)++] = ev[i].peer;
		if (ev[i].type == RUDP_EVENT_DISCONNECT)
			return RUDP_E_INVALID;
	}
	k = rudp_service(cli, ev, EVENTS, wait_ms);
	if (k < 0)
		return k;
	for (int i = 0; i < k; i++) {
		if (ev[i].type == RUDP_EVENT_CONNECT)
			(*connected)++;
		else if (ev[i].type == RUDP_EVENT_RECEIVE)
			(*received)++;
		else if (ev[i].type == RUDP_EVENT_DISCONNECT)
			return RUDP_E_INVALID;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long peers = 1000, burst = 60, port = 47011, idle_ms = 3500;
	bool policy = false;

	for (int i = 1; i < argc; i++) {
		long v;

		if (!strcmp(argv[i], "--peers") && i + 1 < argc &&
		    tool_parse_long(argv[i + 1], 1, 20000, &v) == 0)
			peers = v;
		else if (!strcmp(argv[i], "--burst") && i + 1 < argc &&
			 tool_parse_long(argv[i + 1], 1, 10000, &v) == 0)
			burst = v;
		else if (!strcmp(argv[i], "--idle") && i + 1 < argc &&
			 tool_parse_long(argv[i + 1], 0, 600, &v) == 0)
			idle_ms = v * 1000;
		else if (!strcmp(argv[i], "--port") && i + 1 < argc &&
			 tool_parse_long(argv[i + 1], 1, 65535, &v) == 0)
			port = v;
		else if (!strcmp(argv[i], "--policy")) {
			policy = true;
			continue;
		} else {
			fprintf(stderr, "rudp-idle-memory: bad argument '%s'\n", argv[i]);
			usage();
			return 2;
		}
		i++;
	}

	char bind[64];
	rudp_config sc, cc;
	rudp_host *srv, *cli;
	rudp_peer **speers = calloc((size_t)peers, sizeof(*speers));
	long nspeers = 0, connected = 0, received = 0;
	uint8_t msg[MESSAGE_LEN];
	int r;

	if (!speers)
		return 1;
	snprintf(bind, sizeof(bind), "127.0.0.1:%ld", port);
	rudp_config_init(&sc);
	sc.bind_address = bind;
	sc.max_peers = (uint32_t)peers + 16;
	sc.max_pending_handshakes = (uint32_t)peers + 16;
	sc.max_pending_per_address = (uint32_t)peers + 16;
	sc.offline_rate_per_address = 0;
	r = rudp_host_create(&sc, &srv);
	if (r != 0) {
		fprintf(stderr, "rudp-idle-memory: server on %s: %s\n", bind, rudp_strerror(r));
		return 1;
	}
	if (policy) {
		rudp_send_options o;

		rudp_send_options_init(&o);
		r = rudp_host_set_send_options(srv, &o);
		if (r != 0) {
			fprintf(stderr, "rudp-idle-memory: send policy: %s\n", rudp_strerror(r));
			return 1;
		}
	}
	rudp_config_init(&cc);
	cc.socket_per_connect = 1;
	cc.max_peers = (uint32_t)peers + 16;
	r = rudp_host_create(&cc, &cli);
	if (r != 0) {
		fprintf(stderr, "rudp-idle-memory: client host: %s\n", rudp_strerror(r));
		return 1;
	}
	for (long i = 0; i < peers; i++) {
		rudp_peer *p;

		r = rudp_connect(cli, bind, &p);
		if (r != 0) {
			fprintf(stderr, "rudp-idle-memory: connect %ld: %s\n", i, rudp_strerror(r));
			return 1;
		}
	}
	double deadline = tool_now_s() + 30;
	while (connected < peers || nspeers < peers) {
		r = service_both(srv, cli, 1, speers, &nspeers, &connected, &received);
		if (r != 0 || tool_now_s() > deadline) {
			fprintf(stderr, "rudp-idle-memory: %ld of %ld connected (%s)\n", connected, peers,
				r ? rudp_strerror(r) : "timed out");
			return 1;
		}
	}
	long rss_connected = rss_kib();

	memset(msg, 0xab, sizeof(msg));
	msg[0] = 0x86; /* an application id, above RakNet's own */
	for (long i = 0; i < peers; i++) {
		for (long j = 0; j < burst; j++) {
			r = rudp_send(speers[i], msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0);
			if (r != 0) {
				fprintf(stderr, "rudp-idle-memory: send %ld to peer %ld: %s\n", j, i,
					rudp_strerror(r));
				return 1;
			}
		}
	}
	double start = tool_now_s();
	deadline = start + 120;
	while (received < peers * burst) {
		r = service_both(srv, cli, 1, NULL, NULL, &connected, &received);
		if (r != 0 || tool_now_s() > deadline) {
			fprintf(stderr, "rudp-idle-memory: %ld of %ld messages arrived (%s)\n", received,
				peers * burst, r ? rudp_strerror(r) : "timed out");
			return 1;
		}
	}
	double took = tool_now_s() - start;
	/* The last ACKs on their way back. */
	for (double t = tool_now_s(); tool_now_s() - t < 0.2;)
		service_both(srv, cli, 1, NULL, NULL, &connected, &received);
	long rss_burst = rss_kib();
	for (double t = tool_now_s(); tool_now_s() - t < (double)idle_ms / 1000;) {
		r = service_both(srv, cli, 5, NULL, NULL, &connected, &received);
		if (r != 0) {
			fprintf(stderr, "rudp-idle-memory: while idle: %s\n", rudp_strerror(r));
			return 1;
		}
	}
	long rss_idle = rss_kib();

	printf("%ld peers, burst of %ld x %d B each%s (delivered in %.2f s): VmRSS %ld KiB connected, %ld "
	       "KiB "
	       "after the burst, %ld KiB after %.1f s idle\n",
	       peers, burst, MESSAGE_LEN, policy ? ", send policy" : "", took, rss_connected, rss_burst,
	       rss_idle, (double)idle_ms / 1000);
	rudp_host_destroy(cli);
	rudp_host_destroy(srv);
	free(speers);
	return 0;
}
