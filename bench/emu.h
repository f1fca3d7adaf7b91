/* SPDX-License-Identifier: MIT */
/* The userspace TUN link emulator between a client and a server namespace (emu.c). */
#ifndef RUDP_BENCH_EMU_H
#define RUDP_BENCH_EMU_H

#include <stdint.h>
#include <sys/types.h>

#define EMU_CLIENT_IP "10.77.0.1"
#define EMU_SERVER_IP "10.77.0.2"
#define EMU_MTU 1500

/* Flows the emulator counts apart, told by their server-side port. */
enum emu_flow { EMU_FLOW_MAIN, EMU_FLOW_PROBE, EMU_FLOW_COMPETITOR, EMU_FLOW_OTHER, EMU_FLOWS };
/* Directions: client to server, server to client. */
enum emu_dir { EMU_UP, EMU_DOWN, EMU_DIRS };

/* One link, the same in both directions. Per direction a packet meets, in
 * this order: random loss, a drop-tail queue in front of a bottleneck of
 * rate_mbit (a packet leaves it when the one before has finished
 * serialising; its size is its IP length), then the propagation delay. */
struct emu_link {
	double delay_ms_oneway;
	double loss_pct;
	double rate_mbit; /* 0: no bottleneck (and no queue) */
	double queue_ms; /* the queue's limit: bytes the rate serialises in this time */
	uint16_t flow_port[EMU_FLOW_OTHER]; /* server port of each flow; 0: none */
};

struct emu_counters {
	uint64_t packets, bytes; /* arrived from the sender */
	uint64_t random_drops, queue_drops, overflow_drops; /* packets */
	uint64_t dropped_bytes; /* of all three */
};

/* What the forwarder did, kept in memory it shares with its parent; read
 * it after the forwarder has exited. */
struct emu_stats {
	struct emu_counters flow[EMU_DIRS][EMU_FLOWS];
	uint64_t queue_limit_bytes; /* 0: no bottleneck */
	uint64_t queue_peak_bytes[EMU_DIRS]; /* most bytes waiting to be serialised */
	/* How late packets left after their due time: the emulator's own
	 * timing error (scheduling). */
	uint64_t late_max_ns[EMU_DIRS];
	uint64_t late_over_1ms[EMU_DIRS]; /* packets */
	uint64_t delivered[EMU_DIRS]; /* packets written to the far side */
	int realtime; /* 1: it ran at SCHED_FIFO priority */
};

/* Starts the forwarder joining ns_client (EMU_CLIENT_IP on rbtun0) and
 * ns_server (EMU_SERVER_IP on rbtun1), both at MTU EMU_MTU; *stats gets
 * its shared counters (free them with emu_stats_free once it has exited).
 * Returns its pid, or -1. SIGTERM stops it. */
pid_t emu_start(const char *ns_client, const char *ns_server, const struct emu_link *link,
		struct emu_stats **stats);
void emu_stats_free(struct emu_stats *stats);

/* The bottleneck's queue limit in bytes for rate and queue_ms. */
uint64_t emu_queue_bytes(double rate_mbit, double queue_ms);

/* The counters of one flow (flow < 0: every flow) in one direction (dir
 * < 0: both), summed. */
struct emu_counters emu_total(const struct emu_stats *s, int flow, int dir);

/* `rudp-bench link-check ...` (linkcheck.c): measures the emulator against
 * the link asked for; 0 all within tolerance, 1 not, 2 bad use. */
int link_check_main(int argc, char **argv);

#endif
