/* SPDX-License-Identifier: MIT */
/*
 * The ACK tracker: what we received, as ACK and NACK ranges to send.
 *
 * Every frame-set datagram we accept is queued for an ACK as a range of
 * datagram sequence numbers; gaps in the sequence are queued once for a NACK.
 * Ranges coalesce as they come (consecutive datagrams extend the last range)
 * and are sorted and merged again before they are sent, so reordering on the
 * path does not blow up the record count.
 */
#include <stdlib.h>
#include <string.h>

#include "conn/acktr.h"
#include "conn/conn.h"

/* A jump in datagram seqs NACKs at most this many of the missing ones: a
 * hostile seq cannot make us queue millions of NACK records. */
#define CONN_MAX_NACK_GAP 512u
#define CONN_ACK_RANGES 512u
#define CONN_NACK_RANGES 256u

/* Ranges an ACK queue starts with. */
#define ACKQ_INITIAL 16u

int ackq_init(struct ackq *q, uint32_t max)
{
	uint32_t cap = max < ACKQ_INITIAL ? max : ACKQ_INITIAL;

	q->ranges = malloc(cap * sizeof(*q->ranges));
	q->count = 0;
	q->cap = q->ranges ? cap : 0;
	q->max = max;
	return q->ranges ? 0 : RUDP_CONN_E_NOMEM;
}

/* Room for one more range: doubles the array up to max. False when the
 * queue is at max (or memory ran out; the caller treats it as full). */
static bool ackq_room(struct ackq *q)
{
	if (q->count < q->cap)
		return true;
	if (q->cap >= q->max)
		return false;
	uint32_t cap = q->cap * 2 < q->max ? q->cap * 2 : q->max;
	struct rudp_wire_range *r = realloc(q->ranges, cap * sizeof(*r));
	if (!r)
		return false;
	q->ranges = r;
	q->cap = cap;
	return true;
}

void ackq_free(struct ackq *q)
{
	free(q->ranges);
	memset(q, 0, sizeof(*q));
}

static bool range_contains(const struct rudp_wire_range *r, uint32_t seq)
{
	return rudp_u24_diff(seq, r->start) >= 0 && rudp_u24_diff(r->end, seq) >= 0;
}

static uint32_t range_span(const struct rudp_wire_range *r)
{
	return (r->end - r->start) & RUDP_WIRE_U24_MASK;
}

bool ackq_push_range(struct ackq *q, uint32_t start, uint32_t end)
{
	uint32_t added;

	start &= RUDP_WIRE_U24_MASK;
	end &= RUDP_WIRE_U24_MASK;
	added = (end - start) & RUDP_WIRE_U24_MASK;
	if (q->count > 0) {
		struct rudp_wire_range *last = &q->ranges[q->count - 1];

		if (range_contains(last, start) && range_contains(last, end))
			return true;
		if (start == rudp_u24_add(last->end, 1) && range_span(last) + added + 1 < ACKQ_MAX_SPAN) {
			last->end = end;
			return true;
		}
		if (rudp_u24_add(end, 1) == last->start && range_span(last) + added + 1 < ACKQ_MAX_SPAN) {
			last->start = start;
			return true;
		}
	}
	if (!ackq_room(q))
		return false;
	q->ranges[q->count].start = start;
	q->ranges[q->count].end = end;
	q->count++;
	return true;
}

bool ackq_push_seq(struct ackq *q, uint32_t seq)
{
	return ackq_push_range(q, seq, seq);
}

void ackq_remove_seq(struct ackq *q, uint32_t seq)
{
	for (uint32_t i = 0; i < q->count; i++) {
		struct rudp_wire_range *r = &q->ranges[i];

		if (!range_contains(r, seq))
			continue;
		if (r->start == r->end) {
			memmove(r, r + 1, (q->count - i - 1) * sizeof(*r));
			q->count--;
		} else if (seq == r->start) {
			r->start = rudp_u24_add(seq, 1);
		} else if (seq == r->end) {
			r->end = (seq - 1) & RUDP_WIRE_U24_MASK;
		} else if (ackq_room(q)) {
			r = &q->ranges[i]; /* the array may have moved */
			memmove(r + 2, r + 1, (q->count - i - 1) * sizeof(*r));
			r[1].start = rudp_u24_add(seq, 1);
			r[1].end = r->end;
			r->end = (seq - 1) & RUDP_WIRE_U24_MASK;
			q->count++;
		}
		/* else: no room to split; one spurious NACK only costs a resend */
		return;
	}
}

void ackq_normalize(struct ackq *q, uint32_t ref)
{
	uint32_t out = 0;

	/* Insertion sort: the ranges are nearly sorted already and few. */
	for (uint32_t i = 1; i < q->count; i++) {
		struct rudp_wire_range r = q->ranges[i];
		int32_t key = rudp_u24_diff(r.start, ref);
		uint32_t j = i;

		while (j > 0 && rudp_u24_diff(q->ranges[j - 1].start, ref) > key) {
			q->ranges[j] = q->ranges[j - 1];
			j--;
		}
		q->ranges[j] = r;
	}
	for (uint32_t i = 0; i < q->count; i++) {
		struct rudp_wire_range r = q->ranges[i];

		if (out > 0) {
			struct rudp_wire_range *prev = &q->ranges[out - 1];
			int64_t prev_end = rudp_u24_diff(prev->end, ref);
			int64_t r_start = rudp_u24_diff(r.start, ref);
			int64_t r_end = rudp_u24_diff(r.end, ref);

			if (r_start <= prev_end + 1 &&
			    r_end - rudp_u24_diff(prev->start, ref) < ACKQ_MAX_SPAN) {
				if (r_end > prev_end)
					prev->end = r.end;
				continue;
			}
		}
		q->ranges[out++] = r;
	}
	q->count = out;
}

void ackq_drop_front(struct ackq *q, uint32_t n)
{
	memmove(q->ranges, q->ranges + n, (q->count - n) * sizeof(*q->ranges));
	q->count -= n;
}

int acktr_init(struct ack_tracker *t, uint32_t max_dgram_seq_jump, uint32_t ack_every, uint64_t ack_delay_us)
{
	memset(t, 0, sizeof(*t));
	t->max_dgram_seq_jump = max_dgram_seq_jump;
	t->ack_every = ack_every ? ack_every : 1;
	t->ack_delay_us = ack_delay_us;
	t->ack_due_us = UINT64_MAX;
	if (ackq_init(&t->acks, CONN_ACK_RANGES) < 0 || ackq_init(&t->nacks, CONN_NACK_RANGES) < 0)
		return RUDP_CONN_E_NOMEM;
	return 0;
}

void acktr_free(struct ack_tracker *t)
{
	ackq_free(&t->acks);
	ackq_free(&t->nacks);
}

/* ---- datagram seqs in ---- */

static bool seq_bit(const uint64_t *bits, uint32_t seq)
{
	uint32_t i = seq % CONN_DGRAM_HISTORY;

	return (bits[i / 64] >> (i % 64)) & 1u;
}

/* How many bits from seq's downwards (seq, seq - 1, ...) equal `set`, at
 * most max, read a word at a time: every ACK datagram looks back over
 * CONN_ACK_REPEAT_SPAN seqs (acktr_repeat_recent_acks), and bit by bit that
 * was a sixth of the instructions a small echo cost each side. */
static uint32_t seq_run_down(const uint64_t *bits, uint32_t seq, uint32_t max, bool set)
{
	uint32_t n = 0;

	while (n < max) {
		uint32_t i = (seq - n) % CONN_DGRAM_HISTORY;
		uint32_t b = i % 64;
		uint64_t w = set ? bits[i / 64] : ~bits[i / 64];
		/* Bits b, b - 1, ..., 0 moved to the top, in that order. */
		uint64_t top = w << (63 - b);
		uint32_t run = ~top ? (uint32_t)__builtin_clzll(~top) : 64;

		n += run;
		if (run <= b)
			break; /* stopped at a bit that differs */
	}
	return n < max ? n : max;
}

/*
 * A datagram far ahead of the highest seq seen is not taken on its word:
 * adopting it would make every genuine datagram after it look old (their
 * unreliable frames dropped, ACK repeats stopped) until the peer's real
 * seqs caught up. One forged or corrupted datagram must not do that. A
 * peer that really did skip that far (a long outage while it streamed)
 * keeps sending from there: after FAR_AHEAD_CONFIRMATIONS datagrams each a
 * little further on, with nothing nearer in between, the jump is adopted.
 */
#define FAR_AHEAD_CONFIRMATIONS 3u

static bool far_ahead_confirmed(struct ack_tracker *t, uint32_t seq)
{
	int32_t step = rudp_u24_diff(seq, t->far_ahead_seq);

	if (t->far_ahead_count > 0 && step > 0 && (uint32_t)step <= t->max_dgram_seq_jump)
		t->far_ahead_count++;
	else
		t->far_ahead_count = 1;
	t->far_ahead_seq = seq;
	return t->far_ahead_count >= FAR_AHEAD_CONFIRMATIONS;
}

enum dgram_seq_verdict acktr_on_dgram_seq_any(struct ack_tracker *t, uint32_t seq)
{
	int32_t ahead;

	if (!t->have_highest_dgram) {
		t->have_highest_dgram = true;
		t->highest_dgram_seq = seq;
		t->dgrams_expected = 1;
		acktr_seq_set_bit(t->dgram_seen, seq, true);
		return DGRAM_NEW;
	}
	ahead = rudp_u24_diff(seq, t->highest_dgram_seq);
	if (ahead > 0 && (uint32_t)ahead > t->max_dgram_seq_jump && !far_ahead_confirmed(t, seq))
		return DGRAM_FAR_AHEAD;
	t->far_ahead_count = 0;
	if (ahead > 1) {
		uint32_t missing = (uint32_t)ahead - 1;
		uint32_t first = missing > CONN_MAX_NACK_GAP ? (seq - CONN_MAX_NACK_GAP) & RUDP_WIRE_U24_MASK
							     : rudp_u24_add(t->highest_dgram_seq, 1);

		/* When the NACK queue is full the gap goes unreported: RTO covers it. */
		ackq_push_range(&t->nacks, first, (seq - 1) & RUDP_WIRE_U24_MASK);
		/* Counted within the same bound, so a hostile jump adds at most
		 * CONN_MAX_NACK_GAP to the receive loss. */
		missing = missing > CONN_MAX_NACK_GAP ? CONN_MAX_NACK_GAP : missing;
		t->dgrams_missing += missing;
		t->dgrams_expected += missing;
	}
	if (ahead > 0) {
		t->dgrams_expected++;
		uint32_t clear = (uint32_t)ahead < CONN_DGRAM_HISTORY ? (uint32_t)ahead : CONN_DGRAM_HISTORY;

		for (uint32_t k = 1; k <= clear; k++) {
			acktr_seq_set_bit(t->dgram_seen, rudp_u24_add(t->highest_dgram_seq, k), false);
			acktr_seq_set_bit(t->dgram_acked, rudp_u24_add(t->highest_dgram_seq, k), false);
		}
		t->highest_dgram_seq = seq;
		acktr_seq_set_bit(t->dgram_seen, seq, true);
		return DGRAM_NEW;
	}
	if ((uint32_t)-ahead >= CONN_DGRAM_HISTORY)
		return DGRAM_SEEN;
	if (seq_bit(t->dgram_seen, seq))
		return DGRAM_SEEN;
	ackq_remove_seq(&t->nacks, seq);
	acktr_seq_set_bit(t->dgram_seen, seq, true);
	/* Late, not lost: it counted as missing when the gap opened. */
	t->dgrams_missing -= t->dgrams_missing > 0;
	return DGRAM_NEW;
}

/*
 * Every ACK datagram also names again the datagrams acknowledged among the
 * last CONN_ACK_REPEAT_SPAN seqs (at most CONN_ACK_REPEAT_RANGES runs, the
 * newest first). ACKs are sent once and not acknowledged themselves: without
 * this a lost ACK leaves the peer guessing, and when it covered the end of
 * a burst nothing later tells the peer either, so it waits for a tail probe
 * and then resends everything that ACK covered. Repeated, the next ACK
 * datagram repairs the loss at the cost of a few bytes; RakNet peers ignore
 * ACKs for datagrams they no longer track.
 */
void acktr_repeat_recent_acks(struct ack_tracker *t)
{
	uint32_t runs = 0, k = 0;

	if (!t->have_highest_dgram)
		return;
	while (k < CONN_ACK_REPEAT_SPAN && runs < CONN_ACK_REPEAT_RANGES) {
		uint32_t end = (t->highest_dgram_seq - k) & RUDP_WIRE_U24_MASK;
		uint32_t len = seq_run_down(t->dgram_acked, end, CONN_ACK_REPEAT_SPAN - k, true);

		if (len == 0) {
			k += seq_run_down(t->dgram_acked, end, CONN_ACK_REPEAT_SPAN - k, false);
			continue;
		}
		if (!ackq_push_range(&t->acks, (end - (len - 1)) & RUDP_WIRE_U24_MASK, end))
			return;
		runs++;
		k += len;
	}
}

bool acktr_queue_ack_any(struct ack_tracker *t, uint32_t seq)
{
	int32_t behind = rudp_u24_diff(t->highest_dgram_seq, seq);

	if (behind >= 0 && (uint32_t)behind < CONN_DGRAM_HISTORY)
		acktr_seq_set_bit(t->dgram_acked, seq, true);
	return ackq_push_seq(&t->acks, seq);
}

void acktr_force_ack(struct ack_tracker *t, uint32_t seq)
{
	if (!ackq_push_seq(&t->acks, seq)) {
		ackq_drop_front(&t->acks, 1);
		ackq_push_seq(&t->acks, seq);
	}
}

struct ackq *acktr_prepare(struct ack_tracker *t, bool nack)
{
	struct ackq *q = nack ? &t->nacks : &t->acks;

	if (!nack)
		acktr_repeat_recent_acks(t);
	ackq_normalize(q, t->have_highest_dgram ? t->highest_dgram_seq : 0);
	return q;
}
