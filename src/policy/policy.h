/* SPDX-License-Identifier: MIT */
/*
 * policy: optional send scheduling for one conn (meson option send_policy).
 *
 * Without a policy a conn queues every message at once into its FIFO and
 * sends it as the reliable window allows, so a sender faster than its peer
 * grows the queue up to max_queue_bytes and a bulk transfer delays whatever
 * is queued behind it. A policy sits in front of the conn's queues:
 *
 *   - rudp_conn_send_ex stages the message in one of eight FIFOs (reliable
 *     or unreliable, times four priorities) after admission: the reliable
 *     queue over its soft budget refuses (RUDP_CONN_E_WOULD_BLOCK, nothing
 *     queued); unreliable messages beyond the reserve evict the oldest
 *     staged unreliable ones (counted). Except: a reliable message that
 *     nothing waits ahead of goes straight into the conn's queue when the
 *     window and the other limits below are at most half used with it
 *     (policy.c, goes_straight_in): priority matters when room is short,
 *     and half of it stays free for what comes next;
 *   - at each flush, policy_feed moves staged messages into the conn's
 *     queues, highest priority first with the anti-starvation rule below,
 *     only as far as the window, the encoded in-flight cap and the per-flush
 *     budget can take them now, so priority decides what enters the window;
 *   - after the flush, a refused sender is told (callback writable) once the
 *     reliable queue is below the soft budget again.
 *
 * Order and sequenced indexes are taken when the application sends, so an
 * ordered channel still delivers in send order whatever the priorities:
 * priority reorders across channels and reliabilities, never within one
 * ordered channel (a later high-priority message there waits at the
 * receiver for the earlier low-priority one).
 *
 * Anti-starvation: each class counts how many picks went to another class
 * while it was waiting. A class passed over starvation_limit times goes
 * next (among several, the one passed over most, then the higher priority).
 * So the head of any non-empty class waits at most starvation_limit +
 * RUDP_CONN_PRIORITIES - 1 picks of its kind (reliable or unreliable).
 *
 * The policy object is owned by the caller, not by the conn: attach it with
 * rudp_conn_set_policy, and destroy it after the conn (or after detaching).
 */
#ifndef RUDP_POLICY_H
#define RUDP_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "conn/conn.h"

struct rudp_policy_config {
	uint32_t max_in_flight_bytes; /* encoded bytes in the window (sent, not released by ACKs), default 64
					 MiB */
	uint32_t reliable_soft_budget; /* reliable bytes waiting to be sent, default 256 KiB */
	uint32_t unreliable_reserve; /* unreliable bytes staged, default 64 KiB */
	uint32_t flush_budget; /* datagram bytes per flush, default 256 KiB */
	uint32_t starvation_limit; /* picks a waiting class may be passed over, default 16 */
};

#define RUDP_POLICY_MIN_RESERVE 8192u /* larger than any unreliable frame body */
#define RUDP_POLICY_MAX_STARVATION 65535u

enum rudp_policy_drop_reason {
	RUDP_POLICY_DROP_RESERVE = 0, /* unreliable, evicted oldest-first by a newer one beyond the reserve */
	RUDP_POLICY_DROP_CLOSED = 1, /* staged when the connection closed; never sent */
	RUDP_POLICY_DROP_REASONS = 2,
};

struct rudp_policy_stats {
	uint64_t reliable_staged_bytes[RUDP_CONN_PRIORITIES];
	uint64_t unreliable_staged_bytes[RUDP_CONN_PRIORITIES];
	uint64_t reliable_queue_bytes; /* what the soft budget counts: staged + queued unsent (encoded) */
	uint64_t unreliable_queue_bytes; /* what the reserve counts: staged unreliable bytes */
	uint64_t in_flight_bytes; /* encoded bytes sent and not yet released by ACKs */
	uint64_t dropped[RUDP_POLICY_DROP_REASONS]; /* messages */
	uint64_t sends_refused; /* RUDP_CONN_E_WOULD_BLOCK returned */
	uint64_t writable_signals;
	uint64_t flushes_budget_limited; /* flushes stopped by the per-flush budget */
	uint64_t straight_in; /* reliable messages queued at once, not staged (policy.c) */
	uint64_t peak_reliable_queue_bytes;
	uint64_t peak_unreliable_queue_bytes;
	uint64_t peak_in_flight_bytes;
	/* Capacity of the byte rings that hold staged bodies, all classes:
	 * what staging costs in memory now (body_ring.h), not what is staged. */
	uint64_t stage_ring_bytes;
};

struct send_policy;

/* Defaults as documented on the fields. */
void rudp_policy_config_init(struct rudp_policy_config *cfg);
/* 0, or RUDP_CONN_E_ARG when a field is 0, the reserve is below
 * RUDP_POLICY_MIN_RESERVE or the starvation limit above
 * RUDP_POLICY_MAX_STARVATION. */
int rudp_policy_config_check(const struct rudp_policy_config *cfg);

/* NULL on a bad config or no memory. */
struct send_policy *rudp_policy_create(const struct rudp_policy_config *cfg);
/* Frees a policy that is not attached to a live conn. NULL is a no-op. */
void rudp_policy_destroy(struct send_policy *p);
/* Changes the limits of a policy (attached or not); RUDP_CONN_E_ARG on a bad config. */
int rudp_policy_reconfigure(struct send_policy *p, const struct rudp_policy_config *cfg);

/* Attaches p to c (p NULL: detaches the current one). A policy serves one
 * conn at a time. Detaching moves every staged message into the conn's
 * queues, in priority order, so nothing is lost. Returns 0, or
 * RUDP_CONN_E_ARG when p is attached to another conn, or
 * RUDP_CONN_E_NOMEM when a staged message could not be moved (the policy
 * then stays attached). */
int rudp_conn_set_policy(struct rudp_conn *c, struct send_policy *p);
struct send_policy *rudp_conn_get_policy(const struct rudp_conn *c);

/* Fills *out. Valid with or without a conn attached; after the conn closed
 * (or was detached by policy_conn_closing) it reports the last values. */
void rudp_policy_get_stats(const struct send_policy *p, struct rudp_policy_stats *out);
/* The owner is about to destroy c: take the final figures (staged messages
 * that will never go out count as RUDP_POLICY_DROP_CLOSED) and detach
 * without moving anything. */
void rudp_policy_conn_closing(struct rudp_conn *c);

/* ---- hooks called by the conn (sendq.c, flush.c) ---- */

/* Admission and staging of one validated message (rel already plain,
 * channel 0 for unordered). */
int policy_stage(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t rel, uint8_t channel,
		 uint8_t priority);
/* Moves what may go out now into the conn's queues (start of flush). */
void policy_feed(struct rudp_conn *c);
/* Moves everything staged into the conn's queues, ignoring the limits. */
void policy_drain_all(struct rudp_conn *c);
/* End of flush: bookkeeping and the writable signal. */
void policy_after_flush(struct rudp_conn *c, bool budget_spent);

#endif
