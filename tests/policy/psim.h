/* SPDX-License-Identifier: MIT */
/*
 * A deterministic two-conn network for send-policy tests, modelled on
 * tests/conn/sim.c but with what the policy is about: a bottleneck per
 * direction (a rate in bytes per second and an unbounded FIFO in front of
 * it, so queueing delay grows with what the sender keeps in flight), a
 * one-way delay, seeded loss, and a log of every delivered message with
 * its send and arrival times. The bottleneck's queue may instead be bounded
 * (queue_bytes): a datagram that finds it full is dropped (drop-tail, as a
 * router's buffer) and counted in queue_drops.
 *
 * Test messages: byte 0 is 0xfe (not a RakNet control id), byte 1 a tag the
 * test chooses, then the send time (u64) and a sequence number (u32).
 */
#ifndef RUDP_TEST_POLICY_PSIM_H
#define RUDP_TEST_POLICY_PSIM_H

#include <stdbool.h>
#include <stdint.h>

#include "conn/conn_internal.h"
#include "policy/policy.h"

#define PSIM_MSG_HEADER 14
#define PSIM_MAX_DGRAM 1500

struct psim_link {
	uint64_t delay_us; /* one way, after the bottleneck */
	uint64_t rate_bytes_per_s; /* 0: no bottleneck */
	uint32_t loss_pm; /* per mille, applied before the bottleneck */
	/* With a rate: bytes waiting for the bottleneck beyond which a new
	 * datagram is dropped. 0: unbounded. */
	uint64_t queue_bytes;
};

struct psim_delivery {
	uint8_t tag;
	uint8_t reliability;
	uint8_t channel;
	uint32_t seq;
	uint32_t len;
	uint64_t sent_us;
	uint64_t recv_us;
};

struct psim;

struct psim_endpoint {
	struct psim *sim;
	int idx;
	struct rudp_conn *c;
	struct send_policy *policy; /* owned by the test; destroyed after the conn */
	int connected;
	int closed;
	enum rudp_conn_close_reason reason;
	uint32_t writable; /* writable signals from rudp_policy_flush */
	struct psim_delivery *log;
	size_t nlog, caplog;
	uint64_t dgrams_out, bytes_out; /* everything this side put on the link */
};

struct psim_packet {
	uint64_t at;
	uint64_t serial;
	int to;
	uint16_t len;
	uint8_t data[PSIM_MAX_DGRAM];
};

struct psim {
	uint64_t now;
	uint64_t rng;
	struct rudp_conn_config cfg;
	struct psim_link link[2]; /* link[i]: from endpoint i to 1 - i */
	uint64_t busy_until[2]; /* bottleneck of each direction */
	uint64_t max_backlog_bytes[2]; /* deepest bottleneck queue seen */
	uint64_t queue_drops[2]; /* datagrams the bounded queue dropped */
	/* Through the bottleneck: datagrams, and their total wait in its queue */
	uint64_t queued_dgrams[2], queue_wait_us[2];
	void **heap; /* struct psim_packet *, in test_heap.h order */
	size_t heap_n, heap_cap;
	uint64_t serial;
	struct psim_endpoint ep[2]; /* 0 client, 1 server */
	/* The client's GUID (the server's is one more), set before
	 * psim_connect; 0: 77. The rate controller's probing cycle starts
	 * where the GUID says. */
	uint64_t guid;
	/* called before the flushes of every step; may send */
	void (*app)(struct psim *s, void *ud);
	void *app_ud;
	uint64_t app_wakeup; /* the step loop visits this time too (UINT64_MAX: none) */
	uint64_t last_now, same_time_steps; /* a conn claiming work it never does fails the test */
};

void psim_init(struct psim *s, const struct rudp_conn_config *cfg, const struct psim_link *c2s,
	       const struct psim_link *s2c, uint64_t seed);
/* Creates both conns and runs the handshake to completion. */
void psim_connect(struct psim *s);
/* Creates a policy (owned by the endpoint) and attaches it. */
void psim_attach_policy(struct psim *s, int ep, const struct rudp_policy_config *cfg);
/* rudp_conn_flush / _disconnect of endpoint ep, through its policy while
 * one is attached (as the host does). */
void psim_flush(struct psim *s, int ep);
void psim_disconnect(struct psim *s, int ep);
void psim_free(struct psim *s);
void psim_step(struct psim *s);
/* Steps until done(s) or max_us of virtual time passed; true if done. */
bool psim_run(struct psim *s, bool (*done)(struct psim *s), uint64_t max_us);
/* Steps until nothing is in flight on the links and neither conn wants to
 * flush (or max_us passed). */
void psim_settle(struct psim *s, uint64_t max_us);

void psim_make_message(uint8_t *buf, uint32_t len, uint8_t tag, uint32_t seq, uint64_t now);
/* rudp_conn_send_ex of a test message from endpoint ep, or
 * rudp_policy_send while a policy is attached. */
int psim_send(struct psim *s, int ep, uint32_t len, uint8_t tag, uint32_t seq, uint8_t rel, uint8_t ch,
	      uint8_t prio);

#endif
