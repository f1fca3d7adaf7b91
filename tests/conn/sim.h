/* SPDX-License-Identifier: MIT */
/*
 * A deterministic network for conn tests: two conns (client, server) joined
 * by a simulated link with seeded loss, duplication, reordering and delay,
 * and a virtual clock that jumps to the next event (a datagram arriving, or
 * either conn's next deadline). Every application message carries its own
 * identity and a content pattern, so the receiver checks each one: exactly
 * once for reliable, in order for ordered, never backwards for sequenced,
 * intact bytes for all.
 */
#ifndef RUDP_TEST_CONN_SIM_H
#define RUDP_TEST_CONN_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "conn/conn_internal.h"

#define SIM_MAX_DGRAM 1500
#define SIM_MAX_MSGS 65536 /* per (reliability, channel) stream */
#define SIM_RELS 5
#define SIM_MSG_HEADER 11
#define SIM_MARK 0xa5

struct sim_packet {
	uint64_t deliver_at;
	uint64_t serial; /* FIFO among equal times, for determinism */
	int to;
	uint16_t len;
	uint8_t data[SIM_MAX_DGRAM];
};

struct sim_link {
	uint32_t loss_pm; /* per mille */
	uint32_t ack_loss_pm; /* per mille, extra loss for ACK datagrams only */
	uint32_t dup_pm;
	uint32_t reorder_pm; /* extra random delay up to reorder_us */
	uint64_t delay_us;
	uint64_t jitter_us;
	uint64_t reorder_us;
	/* Up to this much extra delay per datagram that never lets it
	 * overtake one sent before it the same way: a host or emulator late
	 * in its scheduling, which delays what queues behind too (jitter_us
	 * reorders instead). late_pm: the share of datagrams that are late
	 * (0: all). */
	uint64_t late_us;
	uint32_t late_pm;
	/* A busy host's queue, per receiving side: every host_queue_step_us it
	 * takes a new length from host_queue_min_us to host_queue_us, and every
	 * datagram to that side waits that long (in order). Many connections
	 * sharing a CPU-bound host see this: an RTT many times the minimum an
	 * idle moment measured, standing for whole rounds and jumping by more
	 * than the RTO's margin, with nothing dropped. */
	uint64_t host_queue_us;
	uint64_t host_queue_min_us;
	uint64_t host_queue_step_us;
	/* Per direction, the link is busy this long per datagram (0: no limit):
	 * a bottleneck like a host's per-datagram cost, so goodput is finite. */
	uint64_t tx_us;
	/* With tx_us: datagrams the bottleneck queues, per direction, before
	 * it drops new ones (drop-tail, as a router's buffer). 0: unbounded. */
	uint32_t queue_max;
	/* Per direction, a bottleneck of this many bytes a second (0: none),
	 * counting each datagram with the config's ip_udp_overhead: a router
	 * link, where a datagram's time on it grows with its size. After
	 * tx_us's bottleneck, if both are set. */
	uint64_t rate_bps;
	/* With rate_bps: bytes it queues, per direction, before it drops new
	 * datagrams (drop-tail). 0: unbounded. */
	uint64_t queue_bytes;
};

struct sim_workload {
	uint32_t count; /* messages this endpoint sends */
	uint32_t min_size; /* >= SIM_MSG_HEADER */
	uint32_t max_size;
	uint32_t big_every; /* every n-th message is big_size bytes (0: never) */
	uint32_t big_size;
	uint8_t rel_mask; /* bit r: reliability r may be used */
	uint32_t channels; /* channels used for ordered / sequenced */
	/* Echo workloads: the client sends while fewer than this many of its
	 * messages are awaiting their echo (0: no limit)... */
	uint32_t max_outstanding;
	/* ...and the server sends every message it receives straight back. */
	bool echo;
};

struct sim_stream_rx {
	uint32_t next_ordered;
	int64_t last_sequenced;
	uint32_t delivered;
	uint8_t *got; /* SIM_MAX_MSGS flags, for exactly-once checks */
};

struct sim;

struct sim_endpoint {
	struct sim *sim;
	int idx;
	struct rudp_conn *c;
	int connected_calls;
	int closed_calls;
	enum rudp_conn_close_reason reason;
	uint64_t closed_at;

	struct sim_workload work;
	uint32_t sent; /* messages accepted by rudp_conn_send */
	uint32_t tx_next[SIM_RELS][CONN_CHANNELS]; /* next seq per stream */
	uint64_t tx_bytes;

	struct sim_stream_rx rx[SIM_RELS][CONN_CHANNELS];
	uint64_t rx_messages;
	uint64_t rx_bytes;
	uint64_t errors; /* any verification failure */
	char first_error[160];
	size_t max_dgram_seen;
	uint64_t last_rx_at; /* when the last application message was delivered to it */
	uint64_t ack_dgrams_sent; /* ACK datagrams (not NACKs) it sent */
	uint64_t nack_dgrams_sent;
	uint64_t last_ack_at, last_nack_at; /* when it sent the last of each */
};

struct sim {
	uint64_t rng;
	uint64_t work_rng;
	uint64_t now;
	struct sim_link link;
	bool silent; /* drop everything */
	/* Timers fire only on multiples of this after the last wake-up, as a
	 * host waiting in whole milliseconds does; datagrams still wake it at
	 * once. 0: exact timers. */
	uint64_t timer_granularity_us;
	uint64_t link_free[2]; /* per receiving side: when the link is free again */
	uint64_t rate_free[2]; /* the same for the byte-rate bottleneck */
	uint64_t late_last[2]; /* with link.late_us or host_queue_us: the latest delivery time to each side */
	uint64_t host_queue_now[2], host_queue_until[2]; /* with link.host_queue_us */
	/* Each endpoint is one thread that spends this long per datagram it
	 * reads or sends (0: no cost, and both flush at every step). Datagrams
	 * arriving while it is busy wait and are then read as one batch, one
	 * flush after it, as a host does with a batched read. */
	uint64_t cpu_us;
	uint64_t busy_until[2];
	uint64_t send_clock; /* cpu_us mode: when the datagram being sent leaves */
	void **heap; /* struct sim_packet *, in test_heap.h order */
	size_t heap_n, heap_cap;
	uint64_t serial;
	struct sim_endpoint ep[2]; /* 0 client, 1 server */
	struct rudp_conn_config cfg;
	uint64_t dgrams_sent, dgrams_lost, dgrams_duplicated;
	uint64_t dgrams_queue_dropped; /* of dgrams_lost: the bottleneck's queue was full */
	/* Through the byte-rate bottleneck, per receiving side: datagrams
	 * that went through it, and the time they waited in its queue, in
	 * total and the most. */
	uint64_t rate_dgrams[2], rate_wait_us[2], rate_wait_max_us[2];
	/* ACK/NACK datagrams holding a range split at the 2^24 wrap: a record
	 * ending at 0xffffff followed by one starting at 0. */
	uint64_t ack_wrap_splits;
	uint64_t steps;
	bool stuck;
	/* Per sending endpoint: how many of its next data datagrams (frame
	 * sets, not ACKs or NACKs) the link drops, whatever the loss rate,
	 * after letting drop_data_skip of them through, so a test loses
	 * exactly the datagram it means to. */
	uint32_t drop_data_next[2];
	uint32_t drop_data_skip[2];
	uint64_t data_dropped_at[2]; /* when the last of those was sent */
	/* Per sending endpoint: the ACK or NACK datagrams (those with a flag
	 * in drop_ctl_flags) it sends before drop_ctl_until are dropped, so a
	 * test loses exactly the acknowledgements it means to. */
	uint8_t drop_ctl_flags[2];
	uint64_t drop_ctl_until[2];
	/* A wake-up of the test's own (0: none): time advances to it as to a
	 * conn's deadline, so a test can send at a chosen moment. */
	uint64_t wake_at;
};

void sim_init(struct sim *s, uint64_t seed, const struct rudp_conn_config *cfg, const struct sim_link *link);
/* Creates both conns at the current time; set_counters applies the wrap hook. */
void sim_start(struct sim *s);
void sim_free(struct sim *s);
/* sim_free, then free(s): for a sim the test made with malloc. */
void sim_delete(struct sim *s);
void sim_step(struct sim *s);
/* Runs until done(s) or until max_us of virtual time passed; true if done. */
bool sim_run(struct sim *s, bool (*done)(struct sim *s), uint64_t max_us);
/* Steps until virtual time reaches t (wake_at makes sure it stops there). */
void sim_run_until(struct sim *s, uint64_t t);

bool sim_both_connected(struct sim *s);
bool sim_both_closed(struct sim *s);
/* Both sent their whole workload and every reliable stream arrived complete. */
bool sim_all_delivered(struct sim *s);

void sim_make_message(uint8_t *buf, uint32_t len, uint8_t rel, uint8_t ch, uint32_t seq);
/* Queues the next message of e's (rel, ch) stream, len bytes, at the sim's
 * time, beside e's workload: counted as sent and as one more message the
 * workload's checks expect. Returns rudp_conn_send's result; on an error
 * nothing is counted. */
int sim_send_next(struct sim_endpoint *e, uint32_t len, uint8_t rel, uint8_t ch);
/* Checks one endpoint's reception against what its peer sent. */
void sim_assert_complete(struct sim *s, int receiver);

#endif
