/* SPDX-License-Identifier: MIT */
/*
 * Reordering on the path, as the ACKs show it. A datagram an ACK names for
 * the first time although the peer had already acknowledged a newer one
 * arrived out of order. On such a path a gap the peer NACKs, or three
 * newer datagrams acknowledged, do not mean loss: the missing one may be a
 * few milliseconds behind. Until REORDER_PERSIST_US pass without another
 * sign, the loss engine (loss.c) then declares loss by time alone, as
 * RACK does: a frame sent more than the reorder window before a datagram
 * the peer acknowledged. The window starts at a quarter of the smoothed
 * RTT and grows by a quarter (up to a whole RTT) each time a datagram
 * declared lost is acknowledged after all. Without this, every late
 * datagram was resent, and the rate controller took the "loss" for
 * congestion.
 *
 * A leaf of the loss engine, inline only: it owns struct reorder_tracker
 * and calls nothing else.
 */
#ifndef RUDP_CONN_REORDER_H
#define RUDP_CONN_REORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/wire.h"

/* How long one sign of reordering keeps the loss rules patient. */
#define REORDER_PERSIST_US 2000000u
/* The smallest reorder window, whatever the RTT. */
#define REORDER_MIN_WINDOW_US 1000u

struct reorder_tracker {
	uint32_t newest_named_seq; /* the newest datagram any ACK named */
	bool newest_named_valid;
	uint64_t seen_us; /* when a datagram was last first named after a newer one */
	uint8_t quarters; /* the window, in quarters of the smoothed RTT (1..4) */
};

static inline void reorder_init(struct reorder_tracker *r)
{
	*r = (struct reorder_tracker){.quarters = 1};
}

/* Whether the path showed reordering recently. */
static inline bool reorder_seen(const struct reorder_tracker *r, uint64_t now_us)
{
	return r->seen_us != 0 && now_us - r->seen_us < REORDER_PERSIST_US;
}

/* How much earlier than an acknowledged datagram a frame must have been
 * sent to count as lost. */
static inline uint64_t reorder_window(const struct reorder_tracker *r, uint64_t srtt_us, uint64_t now_us)
{
	uint64_t w = srtt_us / 4 * (reorder_seen(r, now_us) ? r->quarters : 1);

	return w < REORDER_MIN_WINDOW_US ? REORDER_MIN_WINDOW_US : w;
}

/* An ACK names datagram seq for the first time (compared with the newest
 * named before that ACK); late: it had been counted lost. */
static inline void reorder_on_first_named(struct reorder_tracker *r, uint32_t seq, bool late, uint64_t now_us)
{
	if (!r->newest_named_valid || rudp_u24_diff(seq, r->newest_named_seq) >= 0)
		return;
	if (!reorder_seen(r, now_us))
		r->quarters = 1;
	r->seen_us = now_us;
	if (late && r->quarters < 4)
		r->quarters++;
}

/* After an ACK: the newest datagram it named. */
static inline void reorder_on_ack(struct reorder_tracker *r, uint32_t newest_seq)
{
	if (!r->newest_named_valid || rudp_u24_diff(newest_seq, r->newest_named_seq) > 0) {
		r->newest_named_seq = newest_seq;
		r->newest_named_valid = true;
	}
}

#endif
