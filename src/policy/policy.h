/* SPDX-License-Identifier: MIT */
/*
 * policy: optional send scheduling for one conn (meson option send_policy).
 *
 * Without a policy a conn queues every message at once into its FIFO and
 * sends it as the reliable window allows, so a sender faster than its peer
 * grows the queue up to max_queue_bytes and a bulk transfer delays whatever
 * is queued behind it. A policy sits above the conn, in front of its queues,
 * and its owner (the host) sends, flushes and disconnects through it:
 *
 *   - rudp_policy_send stages the message in one of eight FIFOs (reliable
 *     or unreliable, times four priorities) after admission: the reliable
 *     queue over its soft budget refuses (RUDP_POLICY_E_WOULD_BLOCK, nothing
 *     queued); unreliable messages beyond the reserve evict the oldest
 *     staged unreliable ones (counted). Except: a reliable message that
 *     nothing waits ahead of goes straight into the conn's queue when the
 *     window and the other limits below are at most half used with it
 *     (policy.c, goes_straight_in): priority matters when room is short,
 *     and half of it stays free for what comes next;
 *   - at each flush (rudp_policy_flush), between the conn's control and
 *     data steps, the policy moves staged messages into the conn's
 *     queues, highest priority first with the anti-starvation rule below,
 *     only as far as the window, the encoded in-flight cap and the per-flush
 *     budget can take them now, so priority decides what enters the window;
 *   - after the flush, a refused sender is told (rudp_policy_flush's
 *     *writable) once the reliable queue is below the soft budget again.
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
 * The conn knows nothing of the policy (conn.h's scheduler section is all
 * the policy uses). The policy object is owned by the caller: attach it to
 * a conn with rudp_policy_attach, and before destroying that conn call
 * rudp_policy_conn_closing (or detach it).
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

/* rudp_policy_send: the reliable queue is over its soft budget; nothing
 * was queued. Beside the RUDP_CONN_E_* codes, which the policy passes on. */
#define RUDP_POLICY_E_WOULD_BLOCK (-106)

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
	uint64_t sends_refused; /* RUDP_POLICY_E_WOULD_BLOCK returned */
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

/* Makes p serve c. A policy serves one conn at a time, and a conn has one
 * policy at most (the caller's part). Returns 0 (also when p serves c
 * already), or RUDP_CONN_E_ARG when c is NULL or p serves another conn. */
int rudp_policy_attach(struct send_policy *p, struct rudp_conn *c);
/* Detaches p from its conn, moving every staged message into the conn's
 * queues, in priority order, so nothing is lost. Returns 0 (also when not
 * attached), or RUDP_CONN_E_NOMEM when a staged message could not be moved
 * (the policy then stays attached). */
int rudp_policy_detach(struct send_policy *p);
/* The conn p serves, NULL when detached. */
struct rudp_conn *rudp_policy_conn(const struct send_policy *p);

/* Sends one message on the attached conn: the conn's checks (as
 * rudp_conn_send_ex: RUDP_CONN_E_STATE, _ARG, _TOO_LARGE), then admission
 * (RUDP_POLICY_E_WOULD_BLOCK, RUDP_CONN_E_QUEUE_FULL against
 * max_queue_bytes counting what is staged, RUDP_CONN_E_NOMEM); 0 when
 * staged or queued. RUDP_CONN_E_STATE when detached. On 0, *grew is what
 * rudp_policy_staged_bytes plus rudp_conn_memory_bytes grew by (modulo
 * 2^64: evicted unreliable messages may make it shrink), so the owner's
 * memory account needs not read them again. */
int rudp_policy_send(struct send_policy *p, const uint8_t *data, size_t len, uint8_t reliability,
		     uint8_t channel, uint8_t priority, uint64_t now_us, uint64_t *grew);
/* rudp_conn_flush of the attached conn with the policy in it: the conn's
 * control step, then staged messages into the conn's queues as far as the
 * limits allow, then the data step within the per-flush budget with
 * unreliable frames first. Returns the datagrams emitted; *writable is set
 * when a refused sender may send again (once per refusal). 0 when detached. */
int rudp_policy_flush(struct send_policy *p, uint64_t now_us, bool *writable);
/* rudp_conn_disconnect of the attached conn, with everything staged moved
 * into the conn's queues first, so the 0x15 goes behind it all. */
void rudp_policy_disconnect(struct send_policy *p, uint64_t now_us);

/* Fills *out. Valid with or without a conn attached; after the conn closed
 * (rudp_policy_conn_closing) it reports the last values. */
void rudp_policy_get_stats(const struct send_policy *p, struct rudp_policy_stats *out);
/* What the policy holds and has not handed to the conn: message bytes of
 * staged reliable and unreliable messages, and when the oldest of them was
 * staged (the policy's time; 0 with none). O(1): eight class heads. */
struct rudp_policy_pending {
	uint64_t reliable_bytes;
	uint64_t unreliable_bytes;
	uint64_t oldest_queued_us;
};
void rudp_policy_get_pending(const struct send_policy *p, struct rudp_policy_pending *out);
/* reliable_bytes + unreliable_bytes of the above, alone (a host's memory
 * budget reads it after every flush). */
uint64_t rudp_policy_staged_bytes(const struct send_policy *p);

/* The owner is about to destroy p's conn: take the final figures (staged
 * messages that will never go out count as RUDP_POLICY_DROP_CLOSED) and
 * detach without moving anything. A no-op when detached. */
void rudp_policy_conn_closing(struct send_policy *p);

#endif
