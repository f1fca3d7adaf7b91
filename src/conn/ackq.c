/* SPDX-License-Identifier: MIT */
/*
 * ACKs and NACKs, both directions.
 *
 * Out: every frame-set datagram we accept is queued for an ACK as a range of
 * datagram sequence numbers; gaps in the sequence are queued once for a NACK.
 * Ranges coalesce as they come (consecutive datagrams extend the last range)
 * and are sorted and merged again before they are sent, so reordering on the
 * path does not blow up the record count.
 *
 * In: ACK records name datagrams, not frames. Walking a record's seqs could be
 * 2^23 steps for one hostile record, so instead each in-flight frame (at most
 * a window's worth) looks its last datagram seq up in the sorted records.
 */
#include <stdlib.h>
#include <string.h>

#include "conn/conn_internal.h"

/* Datagrams acknowledged after a frame's latest copy that make it lost. */
#define INFER_DGRAM_THRESHOLD 3
/* Records the ACK decode scratch starts with. */
#define ACK_SCRATCH_INITIAL 16u

/* ---- incoming ---- */

static int compare_key_range(const void *a, const void *b)
{
	const struct ack_key_range *x = a, *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Turns records into disjoint, sorted ranges of distances from next_dgram_seq
 * (sent seqs are at -1, -2, ...). Records that run backwards or span half the
 * seq space or more are meaningless and skipped; parts naming seqs not sent
 * yet are cut off. */
static uint32_t normalize_records(struct rudp_conn *c, const struct rudp_wire_range *recs, size_t count)
{
	struct ack_key_range *keys = c->ack_keys;
	uint32_t n = 0, out = 0;

	for (size_t i = 0; i < count; i++) {
		uint32_t span = (recs[i].end - recs[i].start) & RUDP_WIRE_U24_MASK;
		int64_t lo = rudp_u24_diff(recs[i].start, c->next_dgram_seq);
		int64_t hi = lo + span;

		if (span >= 0x800000u || lo >= 0)
			continue;
		if (hi > -1)
			hi = -1;
		keys[n].lo = (int32_t)lo;
		keys[n].hi = (int32_t)hi;
		n++;
	}
	if (n > 1)
		qsort(keys, n, sizeof(*keys), compare_key_range);
	for (uint32_t i = 0; i < n; i++) {
		if (out > 0 && keys[i].lo <= keys[out - 1].hi + 1) {
			if (keys[i].hi > keys[out - 1].hi)
				keys[out - 1].hi = keys[i].hi;
			continue;
		}
		keys[out++] = keys[i];
	}
	return out;
}

static bool key_in_ranges(const struct ack_key_range *keys, uint32_t n, int32_t key)
{
	uint32_t lo = 0, hi = n;

	/* Most frames in flight were sent after the newest datagram named. */
	if (key > keys[n - 1].hi || key < keys[0].lo)
		return false;
	/* last range with lo <= key */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (keys[mid].lo <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && key <= keys[lo - 1].hi;
}

struct ack_sample {
	bool have;
	uint64_t rtt_us; /* when have: the newest named datagram's round trip */
	uint64_t newest_acked_send_us; /* of the copies named, for loss inference */
	int32_t newest_key; /* the newest datagram the ACK names (see normalize_records) */
	uint32_t acked_bytes; /* wire bytes of the frames it acknowledged */
};

/* NACKed or inferred lost: out of the flight, and a congestion signal when
 * a queue shows in the RTT, or when the copy lost was itself a resend (see
 * cc.c: what a shallow queue's overflow looks like). */
static void declare_lost(struct rudp_conn *c, struct sendq_frame *f, enum conn_resend_why why)
{
	f->state = FRAME_NACKED;
	f->resend_why = (uint8_t)why;
	c->resend_pending = true;
	c->nack_resends_since_ack++;
	cc_on_left(&c->cc, sendq_frame_wire_bytes(f));
	cc_on_loss(&c->cc, f->last_dgram_seq, c->next_dgram_seq,
		   f->transmissions > 1 || cc_queue_is_building(c->rtt.srtt_us, c->rtt.min_us));
}

/* copy_send_us: when the acknowledged copy of f was sent, which is not
 * f->last_send_us when an older copy's datagram is the one named. */
static void ack_frame(struct rudp_conn *c, struct sendq_frame *f, struct ack_sample *sample,
		      uint64_t copy_send_us)
{
	/* A frame declared lost left the flight already. */
	if (f->state == FRAME_IN_FLIGHT)
		cc_on_left(&c->cc, sendq_frame_wire_bytes(f));
	sample->acked_bytes += sendq_frame_wire_bytes(f);
	f->state = FRAME_ACKED;
	c->rel_unacked--;
	c->probes_without_ack = 0;
	c->nack_resends_since_ack = 0;
	c->ack_progress_us = c->now_us;
	if (copy_send_us > sample->newest_acked_send_us)
		sample->newest_acked_send_us = copy_send_us;
	/* The newest datagram named, when the history no longer holds its
	 * send time: this frame's latest copy went in it, so its time is the
	 * datagram's (see ack_from_history). */
	if (!sample->have && rudp_u24_diff(f->last_dgram_seq, c->next_dgram_seq) == sample->newest_key) {
		sample->rtt_us = c->now_us > f->last_send_us ? c->now_us - f->last_send_us : 0;
		sample->have = true;
	}
}

/* Acks every frame any acked datagram carried, through the sent history.
 * Only seqs inside the history are visited, so this is bounded by its size
 * however wide the records are. */
static void ack_from_history(struct rudp_conn *c, uint32_t nkeys, struct ack_sample *sample)
{
	struct sent_history *h = &c->sent;
	int32_t floor = -(int32_t)c->sent.size;
	int32_t oldest_valid_key = rudp_u24_diff(h->oldest_valid, c->next_dgram_seq);
	/* Visited even with nothing in flight: the slots of acknowledged
	 * datagrams are cleared, or the history would take them for
	 * datagrams still waiting and grow (builder_commit). */
	uint32_t oldest = c->rel_sent > 0 ? sendq_at(&c->rel, 0)->reliable_index : 0;

	/* Newest first, and no further once no slot is valid: an ACK names
	 * again every datagram acknowledged among the last 128, and on a
	 * path without loss all but the newest few were cleared by earlier
	 * ACKs (walking them all was a seventh of a small echo's
	 * instructions). A lost datagram whose frames went again in others
	 * keeps its slot valid until it is reused: then the walk goes on.
	 * Nor below the oldest seq that may still be valid. */
	if (oldest_valid_key > floor)
		floor = oldest_valid_key;
	for (uint32_t r = nkeys; r-- > 0 && h->valid > 0 && c->ack_keys[r].hi >= floor;) {
		int32_t lo = c->ack_keys[r].lo < floor ? floor : c->ack_keys[r].lo;

		for (int32_t k = c->ack_keys[r].hi; k >= lo && h->valid > 0; k--) {
			uint32_t seq = (c->next_dgram_seq + (uint32_t)k) & RUDP_WIRE_U24_MASK;
			uint32_t slot = seq & (h->size - 1);

			if (h->tag[slot] != (seq | SENT_HISTORY_VALID))
				continue;
			h->tag[slot] = 0;
			h->valid--;
			/* The send time of this datagram, not of the frames' latest
			 * copies: after a timeout resend, the first copy's ACK
			 * coming late (the RTO was spurious: queues, not loss)
			 * would otherwise date it at the resend, and loss inference
			 * would take every frame sent before the resend for lost. */
			uint64_t dgram_send_us =
				c->now_us - (uint32_t)((uint32_t)c->now_us - h->sent_us[slot]);
			/* Only the newest datagram named is timed, and only the
			 * first time it is named: the others may be named again
			 * because their first ACK was lost (the peer repeats
			 * recent ranges) and would measure how long that took.
			 * Any copy of a frame may be in it: each copy has a
			 * datagram of its own, so unlike TCP there is no
			 * ambiguity to skip (Karn's rule). Skipping resent
			 * frames starved the estimate exactly when it mattered:
			 * when a burst's queues pushed the round trip past an
			 * RTO learnt before it, every frame timed out, every
			 * ACK then named a resent frame, no sample came, and the
			 * RTO stayed too small (about a million spurious resends
			 * for 1.4 million messages at 1,024 connections). */
			if (k == sample->newest_key) {
				sample->rtt_us = (uint32_t)c->now_us - h->sent_us[slot];
				sample->have = true;
			}
			for (uint32_t j = 0; j < h->count[slot] && c->rel_sent > 0; j++) {
				uint32_t pos = h->first[slot] + j;
				int32_t i;
				struct sendq_frame *f;

				/* Overwritten since: left to the last_dgram_seq match. */
				if (h->ring_head - pos > h->size)
					continue;
				i = rudp_u24_diff(h->ring[pos & (h->size - 1)], oldest);
				if (i < 0 || (uint32_t)i >= c->rel_sent)
					continue;
				f = sendq_at(&c->rel, (uint32_t)i);
				if (f->state != FRAME_IN_FLIGHT && f->state != FRAME_NACKED)
					continue;
				/* An older copy arrived after the frame went again:
				 * that resend was not needed. */
				if (f->transmissions > 1 && f->last_dgram_seq != seq)
					c->stats.resent_spurious++;
				ack_frame(c, f, sample, dgram_send_us);
			}
		}
	}
	/* Past the slots cleared now; each seq is passed once. */
	if (h->valid == 0) {
		h->oldest_valid = c->next_dgram_seq;
	} else {
		while (h->oldest_valid != c->next_dgram_seq &&
		       h->tag[h->oldest_valid & (h->size - 1)] != (h->oldest_valid | SENT_HISTORY_VALID))
			h->oldest_valid = rudp_u24_add(h->oldest_valid, 1);
	}
}

/*
 * Loss inference: a frame still unacked although the peer acknowledged a
 * datagram sent clearly after it was lost, or its ACK was (and the peer's
 * ACKs repeat recent ranges, so rarely that). Either way waiting for the
 * RTO, or for a tail probe, only stalls the window: the peer NACKs a lost
 * datagram once, and that NACK may be lost too. Resending early costs a
 * duplicate the receiver drops by reliable index.
 *
 * "Clearly after" is either of two tests. By count, as TCP's duplicate
 * ACK threshold: at least INFER_DGRAM_THRESHOLD datagrams newer than the
 * frame's latest copy were acknowledged. This is what recovers within one
 * RTT of the loss on a fast path, where a whole window leaves in less than
 * any sane time threshold. By time, as TCP's RACK: a frame sent more than a
 * quarter of the RTT (at least 1 ms) after it was acknowledged; this covers
 * frames with too few datagrams after them to count. Both leave room for
 * some reordering on the path.
 *
 * Like NACKs, inferences without ACK progress share the budget of two
 * windows: an ACK that only names datagrams already acknowledged must not
 * pull resends again and again.
 */
/*
 * The same walk also sets rto_due_us (as flush_note_rto_due would after it:
 * the ACK progress restarted the timers), over the frames it leaves in
 * flight; it goes on past the budget for that.
 */
static void infer_losses_note_rto_due(struct rudp_conn *c, uint64_t newest_acked_send_us,
				      int32_t newest_acked_key)
{
	uint64_t reorder_window = c->rtt.srtt_us / 4;
	uint64_t sent_before = 0;
	uint64_t due = UINT64_MAX;

	if (reorder_window < 1000)
		reorder_window = 1000;
	if (newest_acked_send_us > reorder_window)
		sent_before = newest_acked_send_us - reorder_window;
	for (uint32_t i = 0; i < c->rel_sent; i++) {
		struct sendq_frame *f = sendq_at(&c->rel, i);
		int32_t key;

		if (f->state != FRAME_IN_FLIGHT)
			continue;
		key = rudp_u24_diff(f->last_dgram_seq, c->next_dgram_seq);
		if ((f->last_send_us < sent_before || newest_acked_key - key >= INFER_DGRAM_THRESHOLD) &&
		    c->nack_resends_since_ack < 2 * c->cfg.window_frames) {
			declare_lost(c, f, RESEND_INFERRED);
			continue;
		}
		if (frame_rto_deadline(c, f) < due)
			due = frame_rto_deadline(c, f);
	}
	c->rto_due_us = due;
}

int ack_scratch_grow(struct rudp_conn *c, size_t want)
{
	uint32_t cap = c->ack_cap ? c->ack_cap : ACK_SCRATCH_INITIAL;

	while (cap < want && cap < c->cfg.max_ack_ranges)
		cap *= 2;
	if (cap > c->cfg.max_ack_ranges)
		cap = c->cfg.max_ack_ranges;
	if (cap <= c->ack_cap)
		return 0;
	struct rudp_wire_range *s = realloc(c->ack_scratch, cap * sizeof(*s));
	if (!s)
		return RUDP_CONN_E_NOMEM;
	c->ack_scratch = s;
	struct ack_key_range *k = realloc(c->ack_keys, cap * sizeof(*k));
	if (!k)
		return RUDP_CONN_E_NOMEM;
	c->ack_keys = k;
	c->ack_cap = cap;
	return 0;
}

int ackq_on_ack_datagram(struct rudp_conn *c, const uint8_t *p, size_t n, uint64_t now_us)
{
	size_t count = 0, dropped = 0;
	bool nack = false;
	uint32_t nkeys;
	struct ack_sample sample = {0};
	int rc;

	rc = rudp_wire_decode_ack(p, n, c->ack_scratch, c->ack_cap, &count, &dropped, &nack);
	if (rc < 0) {
		c->stats.datagrams_dropped++;
		return rc;
	}
	/* More records than the scratch holds: grow it (up to max_ack_ranges,
	 * at most log2(max / initial) times per connection) and decode again. */
	if (dropped > 0 && c->ack_cap < c->cfg.max_ack_ranges && ack_scratch_grow(c, count + dropped) == 0)
		rudp_wire_decode_ack(p, n, c->ack_scratch, c->ack_cap, &count, &dropped, &nack);
	c->last_recv_us = now_us;
	if (nack)
		c->stats.nacks_received += count;
	else
		c->stats.acks_received += count;

	nkeys = normalize_records(c, c->ack_scratch, count);
	if (nkeys == 0)
		return 0;
	sample.newest_key = c->ack_keys[nkeys - 1].hi;
	if (!nack)
		ack_from_history(c, nkeys, &sample);
	/* Frames whose latest copy is older than the history, and NACKs. */
	for (uint32_t i = 0; i < c->rel_sent; i++) {
		struct sendq_frame *f = sendq_at(&c->rel, i);

		if (f->state != FRAME_IN_FLIGHT && f->state != FRAME_NACKED)
			continue;
		if (!key_in_ranges(c->ack_keys, nkeys, rudp_u24_diff(f->last_dgram_seq, c->next_dgram_seq)))
			continue;
		if (nack) {
			/* Only the copy in that datagram was lost; a NACK for an older copy
			 * does not match because last_dgram_seq moved on when it was resent.
			 * A genuine NACK cannot come back sooner than about half the
			 * path's minimum RTT after the send. Not half the smoothed RTT:
			 * that includes the queues our own bursts build, which drain
			 * while a loss stalls the window, so genuine NACKs came back
			 * faster than srtt / 2 and were ignored. NACKs alone (with no
			 * ACK progress) may pull at most two windows of resends; after
			 * that the RTO and its backoff decide. A peer NACKing every seq
			 * it can name must not get the window once per NACK datagram.
			 * A frame already marked (by loss inference) is not counted
			 * twice. */
			if (f->state == FRAME_IN_FLIGHT && now_us - f->last_send_us >= c->rtt.min_us / 2 &&
			    c->nack_resends_since_ack < 2 * c->cfg.window_frames)
				declare_lost(c, f, RESEND_NACK);
			continue;
		}
		/* Matched by last_dgram_seq: the latest copy is the one named. */
		ack_frame(c, f, &sample, f->last_send_us);
	}
	if (nack) {
		flush_note_rto_due(c);
		return 0;
	}
	/* Growth first: a loss inferred from this same ACK then reduces the
	 * window it reached. */
	cc_on_acked(&c->cc, sample.acked_bytes);
	/* Frames left the flight and the ACK progress restarted the timers. */
	infer_losses_note_rto_due(c, sample.newest_acked_send_us, sample.newest_key);
	while (c->rel.frames_count > 0 && c->rel_sent > 0 && sendq_at(&c->rel, 0)->state == FRAME_ACKED) {
		sendq_pop_front(&c->rel);
		c->rel_sent--;
	}
	/* One sample per ACK datagram, from the freshest frame it covers: many
	 * samples from one ACK would shrink rttvar without new information. */
	if (sample.have) {
		rtt_on_sample(&c->rtt, sample.rtt_us);
		rtt_note_min(&c->rtt, sample.rtt_us, now_us);
	}
	conn_check_disconnect_done(c);
	return 0;
}
