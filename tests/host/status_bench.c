/* SPDX-License-Identifier: MIT */
/*
 * Not a test: what rudp_peer_status_get() costs a call, for one peer read
 * over and over (its data hot in cache) and for a server's 1,000 peers read
 * in turn, as a tick loop does. One server host and one client host on
 * loopback (the client with a socket per connection); the connections are
 * idle while timed, which costs the call the same as a busy one (O(1)).
 * Build it release (meson setup -Dbuildtype=release) before quoting it.
 *
 *   status_bench [peers [calls]]    default 1000 peers, 2,000,000 calls
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rudp.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int die(const char *what, int rc)
{
	fprintf(stderr, "status_bench: %s: %s\n", what, rudp_strerror(rc));
	return 1;
}

/* Median of five runs of `calls` reads, ns a call; spread in *lo, *hi. */
static double time_reads(rudp_peer **peers, uint32_t n, uint64_t calls, double *lo, double *hi)
{
	double runs[5];
	volatile uint64_t sink = 0;
	for (int r = 0; r < 5; r++) {
		rudp_peer_status st;
		uint64_t t0 = now_ns();
		for (uint64_t i = 0, k = 0; i < calls; i++) {
			rudp_peer_status_get(peers[k], &st);
			sink += st.rtt_us;
			if (++k == n)
				k = 0;
		}
		runs[r] = (double)(now_ns() - t0) / (double)calls;
	}
	(void)sink;
	for (int i = 0; i < 5; i++)
		for (int j = i + 1; j < 5; j++)
			if (runs[j] < runs[i]) {
				double t = runs[i];
				runs[i] = runs[j];
				runs[j] = t;
			}
	*lo = runs[0];
	*hi = runs[4];
	return runs[2];
}

int main(int argc, char **argv)
{
	uint32_t want = argc > 1 ? (uint32_t)atoi(argv[1]) : 1000;
	uint64_t calls = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000000;
	rudp_config sc, cc;
	rudp_host *server, *client;
	char addr[64];
	int rc;

	if (want == 0 || want > 4000)
		want = 1000;
	rudp_config_init(&sc);
	rudp_config_init(&cc);
	sc.bind_address = "127.0.0.1:0";
	sc.max_peers = want + 16;
	sc.max_pending_handshakes = want + 16;
	sc.max_pending_per_address = want + 16;
	sc.offline_rate_per_address = 0;
	cc.max_peers = want + 16;
	cc.socket_per_connect = 1;
	if ((rc = rudp_host_create(&sc, &server)) != 0)
		return die("server", rc);
	if ((rc = rudp_host_create(&cc, &client)) != 0)
		return die("client", rc);
	rudp_host_local_address(server, addr, sizeof(addr));

	rudp_peer **peers = calloc(want, sizeof(*peers));
	uint32_t connected = 0, started = 0;
	rudp_event ev[256];
	uint64_t deadline = now_ns() + 30000000000ull;
	while (connected < want && now_ns() < deadline) {
		for (; started < want && started < connected + 64; started++) {
			rudp_peer *p;
			if ((rc = rudp_connect(client, addr, &p)) != 0)
				return die("connect", rc);
		}
		rudp_service(client, ev, 256, 0);
		int n = rudp_service(server, ev, 256, 1);
		for (int i = 0; i < n; i++)
			if (ev[i].type == RUDP_EVENT_CONNECT)
				peers[connected++] = ev[i].peer;
	}
	if (connected < want) {
		fprintf(stderr, "status_bench: %u of %u connected\n", connected, want);
		return 1;
	}
	/* Settle: let the handshakes' last datagrams land. */
	for (int i = 0; i < 50; i++) {
		rudp_service(client, ev, 256, 1);
		rudp_service(server, ev, 256, 0);
	}

	double lo, hi, med = time_reads(peers, 1, calls, &lo, &hi);
	printf("1 peer:      %.1f ns/call (median of 5 x %llu calls; %.1f..%.1f)\n", med,
	       (unsigned long long)calls, lo, hi);
	med = time_reads(peers, want, calls, &lo, &hi);
	printf("%u peers: %.1f ns/call (median of 5 x %llu calls, peers in turn; %.1f..%.1f)\n", want, med,
	       (unsigned long long)calls, lo, hi);
	free(peers);
	rudp_host_destroy(client);
	rudp_host_destroy(server);
	return 0;
}
