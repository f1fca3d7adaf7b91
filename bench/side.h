/* SPDX-License-Identifier: MIT */
/*
 * Flows a path row runs beside the measured transport, through the same
 * link emulator: the queueing-delay probe (probe.c) and a competing kernel
 * TCP bulk flow (competitor.c). Each is one process holding a socket in
 * the client namespace and one in the server namespace; what it measured
 * is kept in memory it shares with its parent, to be read once it exited.
 */
#ifndef RUDP_BENCH_SIDE_H
#define RUDP_BENCH_SIDE_H

#include <stdint.h>
#include <sys/types.h>

#define PROBE_MAX 16384 /* probes per run: 164 s at one per 10 ms */

struct probe_shared {
	uint32_t sent; /* probes sent; probe i went at sent_ns[i] */
	uint64_t sent_ns[PROBE_MAX];
	uint32_t rtt_ns[PROBE_MAX]; /* 0: no echo */
	char err[128];
};

/* Starts the probe: every interval_us a UDP datagram of size bytes from
 * ns_client to its own echo socket at server_ip:port in ns_server. Returns
 * its pid (SIGTERM stops it) and *out, or -1. */
pid_t probe_start(const char *ns_client, const char *ns_server, const char *server_ip, uint16_t port,
		  uint32_t interval_us, uint32_t size, struct probe_shared **out);
void probe_free(struct probe_shared *p);

struct probe_figures {
	uint32_t sent, echoed; /* probes sent in the window, and echoed */
	double p50_ms, p99_ms; /* echo RTT of those echoed; -1: none */
};
/* Figures of the probes sent in [from_ns, to_ns) (CLOCK_MONOTONIC). */
void probe_window(const struct probe_shared *p, uint64_t from_ns, uint64_t to_ns, struct probe_figures *out);

#define COMPETITOR_SLOT_NS 10000000ull /* 10 ms */
#define COMPETITOR_SLOTS 16384

struct competitor_shared {
	/* Set by the parent: the flow sends only from then on, so that it
	 * and the measured transport start together (connected before). */
	volatile int go;
	uint64_t t0_ns; /* when the connection was up */
	uint32_t n; /* slots filled */
	uint64_t bytes[COMPETITOR_SLOTS]; /* echoed bytes verified by t0 + i slots */
	int64_t retrans_bytes; /* tcpi_bytes_retrans of both ends at exit; -1: unknown */
	char err[128];
};

/* Starts the competitor: one TCP connection (congestion control cc, NULL:
 * the namespace's default) from ns_client to server_ip:port in ns_server,
 * where the same process echoes what it reads; once (*out)->go is set the
 * client writes without pause and checks every echoed byte against the
 * pattern it sent. Returns its pid (SIGTERM stops it) and *out, or -1. */
pid_t competitor_start(const char *ns_client, const char *ns_server, const char *server_ip, uint16_t port,
		       const char *cc, struct competitor_shared **out);
void competitor_free(struct competitor_shared *c);

/* Verified echo bytes per second in [from_ns, to_ns), -1 when the record
 * does not cover it. */
double competitor_rate(const struct competitor_shared *c, uint64_t from_ns, uint64_t to_ns);

#endif
