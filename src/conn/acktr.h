/* SPDX-License-Identifier: MIT */
/*
 * The ACK tracker: what we received, as the ACK and NACK ranges to send.
 * It keeps the highest datagram seq seen (and the rule for one far ahead),
 * which recent seqs were seen and acknowledged, and the pending ranges; the
 * conn encodes and sends them (conn_flush.c), when they are due: ACKs
 * are thinned (acktr_note_queued). A part of the conn (conn_internal.h):
 * it owns struct ack_tracker and calls no other part.
 */
#ifndef RUDP_CONN_ACKTR_H
#define RUDP_CONN_ACKTR_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/wire.h"

#define CONN_DGRAM_HISTORY 1024u
/* Each ACK datagram repeats the acknowledged seqs among the last this many
 * (acktr_repeat_recent_acks), in at most this many ranges. */
#define CONN_ACK_REPEAT_SPAN 128u
#define CONN_ACK_REPEAT_RANGES 8u

/* Pending ranges. The array starts small (a clean path needs one or two
 * ranges) and doubles on demand up to max, so an idle or loss-free peer
 * costs a few hundred bytes, not max's worth. */
struct ackq {
	struct rudp_wire_range *ranges;
	uint32_t count;
	uint32_t cap; /* allocated */
	uint32_t max; /* most ranges ever held */
};

int ackq_init(struct ackq *q, uint32_t max);
void ackq_free(struct ackq *q);
/* Records one datagram seq; false when the queue is full (caller emits early). */
bool ackq_push_seq(struct ackq *q, uint32_t seq);
/* Records start..end (span < 2^23); false when full. */
bool ackq_push_range(struct ackq *q, uint32_t start, uint32_t end);
/* Forgets seq if it is queued and not yet sent (a late datagram filled a NACKed gap). */
void ackq_remove_seq(struct ackq *q, uint32_t seq);
/* Sorts the ranges by distance from ref and merges touching ones. */
void ackq_normalize(struct ackq *q, uint32_t ref);
/* Forgets the first n ranges (sent). */
void ackq_drop_front(struct ackq *q, uint32_t n);

struct ack_tracker {
	struct ackq acks;
	struct ackq nacks;
	bool have_highest_dgram;
	uint32_t highest_dgram_seq;
	uint32_t max_dgram_seq_jump; /* cfg.max_dgram_seq_jump */
	/* The last datagram dropped as too far ahead, and how many such came
	 * in a row, each a little further on (acktr_on_dgram_seq) */
	uint32_t far_ahead_seq;
	uint32_t far_ahead_count;
	/* datagram seqs seen among the last CONN_DGRAM_HISTORY below the highest:
	 * a datagram the network duplicated must not deliver its unreliable
	 * frames twice (reliable ones have their own dedup) */
	uint64_t dgram_seen[CONN_DGRAM_HISTORY / 64];
	/* the same window: the seqs we acknowledged (ACKs repeat recent ones) */
	uint64_t dgram_acked[CONN_DGRAM_HISTORY / 64];
	/* Receive loss (conn_status.c): datagram seqs expected so far (the
	 * highest seen, counting each jump up to CONN_MAX_NACK_GAP + 1), and
	 * those of them still missing (a late one is taken back) */
	uint64_t dgrams_expected;
	uint64_t dgrams_missing;
	/* ACK thinning (acktr_note_queued): the config's ack_every and
	 * ack_delay_us; data datagrams queued for an ACK since the last ACK
	 * datagram went; and when the queued ACKs are due (UINT64_MAX: none
	 * queued). */
	uint32_t ack_every;
	uint64_t ack_delay_us;
	uint32_t ack_waiting;
	uint64_t ack_due_us;
	uint64_t last_queued_us; /* when the last datagram's ACK was queued */
	bool queued_any;
};

/* 0 or RUDP_CONN_E_NOMEM (then acktr_free it). ack_every (at least 1) and
 * ack_delay_us: acktr_note_queued. */
int acktr_init(struct ack_tracker *t, uint32_t max_dgram_seq_jump, uint32_t ack_every, uint64_t ack_delay_us);
void acktr_free(struct ack_tracker *t);

enum dgram_seq_verdict {
	DGRAM_NEW,
	DGRAM_SEEN, /* a duplicate, or older than the history: its unreliable frames are dropped */
	DGRAM_FAR_AHEAD, /* beyond max_dgram_seq_jump: dropped whole, not adopted */
};
/* Sets or clears bit seq of a CONN_DGRAM_HISTORY bitmap (seqs are 24-bit,
 * a multiple of it, so the ring wraps with them). */
static inline void acktr_seq_set_bit(uint64_t *bits, uint32_t seq, bool on)
{
	uint32_t i = seq % CONN_DGRAM_HISTORY;
	uint64_t bit = (uint64_t)1 << (i % 64);

	if (on)
		bits[i / 64] |= bit;
	else
		bits[i / 64] &= ~bit;
}

enum dgram_seq_verdict acktr_on_dgram_seq_any(struct ack_tracker *t, uint32_t seq);
/* Notes a frame-set datagram's seq: NACKs for the gap it reveals, and
 * whether it was seen already (or is too old to tell). Every datagram
 * comes here, so the common one, the next after the highest (no gap, not
 * far ahead: the jump limit is at least 64), is handled inline; any
 * other goes to acktr_on_dgram_seq_any. */
static inline enum dgram_seq_verdict acktr_on_dgram_seq(struct ack_tracker *t, uint32_t seq)
{
	if (t->have_highest_dgram && seq == rudp_u24_add(t->highest_dgram_seq, 1)) {
		t->far_ahead_count = 0;
		acktr_seq_set_bit(t->dgram_seen, seq, true);
		acktr_seq_set_bit(t->dgram_acked, seq, false);
		t->highest_dgram_seq = seq;
		t->dgrams_expected++;
		return DGRAM_NEW;
	}
	return acktr_on_dgram_seq_any(t, seq);
}

bool acktr_queue_ack_any(struct ack_tracker *t, uint32_t seq);
/* Longest span a queued range may grow to: half the seq space minus a
 * margin keeps every range unambiguous for the encoder and the peer. */
#define ACKQ_MAX_SPAN 0x3fffffu
/* Queues an ACK for seq; false when the ACK queue is full (the conn sends
 * what it holds, then acktr_force_ack). The common case, the highest seq
 * starting the queue or extending its last range, is inline; the rest is
 * acktr_queue_ack_any. */
static inline bool acktr_queue_ack(struct ack_tracker *t, uint32_t seq)
{
	struct ackq *q = &t->acks;
	struct rudp_wire_range *last = q->count > 0 ? &q->ranges[q->count - 1] : NULL;

	if (seq != t->highest_dgram_seq)
		return acktr_queue_ack_any(t, seq);
	if (!last && q->cap > 0) {
		q->ranges[0].start = q->ranges[0].end = seq;
		q->count = 1;
	} else if (last && seq == rudp_u24_add(last->end, 1) &&
		   ((last->end - last->start) & RUDP_WIRE_U24_MASK) + 1 < ACKQ_MAX_SPAN) {
		last->end = seq;
	} else {
		return acktr_queue_ack_any(t, seq);
	}
	acktr_seq_set_bit(t->dgram_acked, seq, true);
	return true;
}

/* Queues an ACK for seq after the queue was sent; when it is still full
 * (the owner refused the ACK datagram), the oldest range is forgotten: the
 * peer resends those frames and we ACK the copies. */
void acktr_force_ack(struct ack_tracker *t, uint32_t seq);
/* Adds the recently acknowledged seqs to the ACK queue again. */
void acktr_repeat_recent_acks(struct ack_tracker *t);
/* The queue to send (NACKs or ACKs), ready to encode: for ACKs with the
 * recent ones repeated, sorted and merged. */
struct ackq *acktr_prepare(struct ack_tracker *t, bool nack);
/* Whether any ACK or NACK waits to be sent. */
static inline bool acktr_pending(const struct ack_tracker *t)
{
	return t->acks.count > 0 || t->nacks.count > 0;
}

/*
 * ACK thinning. A data datagram's ACK waits until ack_every of them wait,
 * or ack_delay_us after the first of them came, whichever is first, as
 * TCP's delayed ACK and QUIC's max_ack_delay do: on a bottleneck carrying
 * data both ways an ACK datagram per data datagram takes a tenth of the
 * link, and RakNet's own peers acknowledge on their update tick, so fewer
 * ACKs are wire-legal. at_once (a gap, a late or repeated datagram, the
 * handshake) makes them due now: loss recovery is never slowed, and NACKs
 * are always sent at once. So does a datagram that came more than
 * ack_delay_us after the one before: a lone one (a game's tick) gains
 * nothing from waiting, and its ACK is what times the peer's RTT and tail
 * probe, so only a stream's datagrams wait. Called after the datagram's
 * ACK was queued.
 */
static inline void acktr_note_queued(struct ack_tracker *t, uint64_t now_us, bool at_once)
{
	bool lone = !t->queued_any || now_us - t->last_queued_us > t->ack_delay_us;

	t->queued_any = true;
	t->last_queued_us = now_us;
	if (t->ack_waiting++ == 0)
		t->ack_due_us = now_us + t->ack_delay_us;
	if ((at_once || lone || t->ack_waiting >= t->ack_every) && now_us < t->ack_due_us)
		t->ack_due_us = now_us;
}

/* When the queued ACKs or NACKs are due: UINT64_MAX when none wait. */
static inline uint64_t acktr_due_us(const struct ack_tracker *t)
{
	if (t->nacks.count > 0)
		return 0;
	return t->acks.count > 0 ? t->ack_due_us : UINT64_MAX;
}

/* Whether the ACKs queued are due at now_us. */
static inline bool acktr_acks_due(const struct ack_tracker *t, uint64_t now_us)
{
	return t->acks.count > 0 && t->ack_due_us <= now_us;
}

/* Every queued ACK went out: the next one waits again. */
static inline void acktr_acks_sent(struct ack_tracker *t)
{
	t->ack_waiting = 0;
	t->ack_due_us = UINT64_MAX;
}

#endif
