/* SPDX-License-Identifier: MIT */
/*
 * Building datagrams at flush time.
 *
 * Order of what goes out: ACKs and NACKs first (they unblock the peer), then
 * reliable frames due again (NACKed, or past their retransmit deadline), then
 * new reliable frames while the window allows, then unreliable frames, which
 * never wait behind the reliable window. Frames are packed into the current
 * datagram while they fit and fewer than max_frames_per_datagram are in it;
 * a datagram that is not full is still sent: waiting to fill one would add
 * latency, which is what a game cannot afford.
 *
 * A datagram's frames are only marked sent once the owner has taken the
 * datagram, so a refusal from send_datagram loses nothing: the same frames
 * are picked again at the next flush.
 *
 * The owner may limit a flush (struct rudp_conn_flush_limits, for a send
 * scheduler above the conn): a byte budget, at which everything stops, and
 * unreliable frames before new reliable ones. Without limits each of these
 * costs a compare against UINT64_MAX or a test of a flag.
 */
#include <stdlib.h>
#include <string.h>

#include "conn/conn_internal.h"

enum flush_kind {
	FLUSH_NEW,
	FLUSH_RETX_NACK,
	FLUSH_RETX_RTO,
	FLUSH_UNREL,
};

/* RakNet marks data datagrams "needs B and AS" (0x84); peers expect it. */
#define FLUSH_DGRAM_FLAGS (RUDP_DGRAM_VALID | RUDP_DGRAM_NEEDS_B_AND_AS)
#define FLUSH_MAX_BACKOFF 30

struct dgram_builder {
	uint8_t *buf; /* where the datagram is built: taken with its first frame */
	size_t len; /* bytes used in buf, header included */
	uint32_t nframes;
	uint32_t new_frames; /* FLUSH_NEW refs: rel[rel_sent .. rel_sent + new_frames) */
	uint32_t unrel_frames; /* FLUSH_UNREL refs: unrel[0 .. unrel_frames) */
	uint64_t new_wire; /* encoded bytes of the FLUSH_NEW frames in this datagram */
	uint32_t cc_bytes; /* encoded bytes of its reliable frames, new or resent */
	uint64_t budget; /* datagram bytes this flush may still emit (UINT64_MAX: no limit) */
	int emitted;
	bool blocked;
	bool budget_spent;
};

static void builder_reset(struct dgram_builder *b)
{
	b->buf = NULL;
	b->len = RUDP_WIRE_DGRAM_HEADER_LEN;
	b->nframes = 0;
	b->new_frames = 0;
	b->unrel_frames = 0;
	b->new_wire = 0;
	b->cc_bytes = 0;
}

static void frame_to_wire(const struct sendq *q, const struct sendq_frame *f, struct rudp_wire_frame *wf)
{
	memset(wf, 0, sizeof(*wf));
	wf->reliability = f->reliability;
	wf->split = f->split;
	wf->reliable_index = f->reliable_index;
	wf->sequenced_index = f->sequenced_index;
	wf->order_index = f->order_index;
	wf->order_channel = f->channel;
	wf->split_count = f->split_count;
	wf->split_id = f->split_id;
	wf->split_index = f->split_index;
	wf->body = sendq_body(q, f);
	wf->body_len = f->body_len;
}

static void commit_reliable(struct rudp_conn *c, struct sendq_frame *f, uint64_t now_us)
{
	f->state = FRAME_IN_FLIGHT;
	f->last_dgram_seq = c->next_dgram_seq;
	f->last_send_us = now_us;
	f->deadline_us = now_us + rtt_backed_off_rto(&c->rtt, f->backoff);
	if (f->deadline_us < c->rto_due_us)
		c->rto_due_us = f->deadline_us;
	if (!c->newest_sent_valid || now_us > c->newest_sent_us ||
	    rudp_u24_diff(f->reliable_index, c->newest_sent_index) > 0) {
		c->newest_sent_valid = true;
		c->newest_sent_index = f->reliable_index;
		c->newest_sent_us = now_us;
	}
}

int sent_history_resize(struct sent_history *h, uint32_t size)
{
	uint32_t *tag = calloc(size, sizeof(*tag));
	uint32_t *first = malloc(size * sizeof(*first));
	uint8_t *count = malloc(size * sizeof(*count));
	uint32_t *sent_us = malloc(size * sizeof(*sent_us));
	uint32_t *ring = calloc(size, sizeof(*ring));

	if (!tag || !first || !count || !sent_us || !ring) {
		free(tag);
		free(first);
		free(count);
		free(sent_us);
		free(ring);
		return RUDP_CONN_E_NOMEM;
	}
	/* Slots move to their seq's place in the larger table, unless part of
	 * their run was overwritten already (not copied below: it would read
	 * as valid in the larger ring). */
	uint32_t valid = 0;
	for (uint32_t i = 0; i < h->size; i++) {
		uint32_t seq = h->tag[i] & ~SENT_HISTORY_VALID;
		uint32_t j = seq & (size - 1);

		if (!(h->tag[i] & SENT_HISTORY_VALID) || h->ring_head - h->first[i] > h->size)
			continue;
		valid++;
		tag[j] = h->tag[i];
		first[j] = h->first[i];
		count[j] = h->count[i];
		sent_us[j] = h->sent_us[i];
	}
	/* All of the old ring (zeros where never written), positions taken
	 * modulo 2^32 like ring_head: after ring_head wraps, the newest
	 * entries sit at the top of the position space. */
	for (uint32_t k = 0; k < h->size; k++) {
		uint32_t pos = h->ring_head - 1 - k;

		ring[pos & (size - 1)] = h->ring[pos & (h->size - 1)];
	}
	free(h->tag);
	free(h->first);
	free(h->count);
	free(h->sent_us);
	free(h->ring);
	h->tag = tag;
	h->first = first;
	h->count = count;
	h->sent_us = sent_us;
	h->ring = ring;
	h->size = size;
	h->valid = valid;
	return 0;
}

/* Whether a slot still says something an ACK could use: it waits for its
 * datagram's ACK and one of the reliable frames it carried is still
 * unacknowledged. A lost datagram whose frames were since acknowledged
 * through other copies is never acked itself, so its slot stays valid for
 * ever; taking that for "loss outran the history" grew every connection
 * that saw any loss to four windows (3.3 KiB) for no match it could make. */
static bool sent_slot_in_use(const struct rudp_conn *c, uint32_t slot)
{
	const struct sent_history *h = &c->sent;
	uint32_t oldest;

	if (!(h->tag[slot] & SENT_HISTORY_VALID) || c->rel_sent == 0)
		return false;
	oldest = sendq_at(&c->rel, 0)->reliable_index;
	for (uint32_t j = 0; j < h->count[slot]; j++) {
		uint32_t pos = h->first[slot] + j;
		int32_t i;
		const struct sendq_frame *f;

		if (h->ring_head - pos > h->size)
			continue; /* overwritten: matched by last_dgram_seq alone */
		i = rudp_u24_diff(h->ring[pos & (h->size - 1)], oldest);
		if (i < 0 || (uint32_t)i >= c->rel_sent)
			continue; /* acknowledged and released */
		f = sendq_at(&c->rel, (uint32_t)i);
		if (f->state == FRAME_IN_FLIGHT || f->state == FRAME_NACKED)
			return true;
	}
	return false;
}

/* The owner took the datagram: its frames are now in flight (or gone). */
static void builder_commit(struct rudp_conn *c, struct dgram_builder *b, uint64_t now_us)
{
	struct sent_history *h = &c->sent;
	uint32_t slot;

	/* Four copies' room per frame in flight, and room for every datagram
	 * whose frames still wait: a slot about to be reused that names an
	 * unacknowledged frame means loss or delay outran the history (on a
	 * clean path its ACK cleared it long ago), and under loss is when
	 * first-copy matches save resends. Out of memory keeps the smaller
	 * history, which only loses such matches. */
	slot = c->next_dgram_seq & (h->size - 1);
	if (h->size < h->max_size &&
	    (4 * (c->rel_unacked + b->new_frames) > h->size || sent_slot_in_use(c, slot)) &&
	    sent_history_resize(h, h->size * 2) == 0)
		slot = c->next_dgram_seq & (h->size - 1);

	if (h->valid == 0)
		h->oldest_valid = c->next_dgram_seq;
	else if (rudp_u24_diff(c->next_dgram_seq, h->oldest_valid) >= (int32_t)h->size)
		h->oldest_valid = rudp_u24_add(c->next_dgram_seq, 1u - h->size); /* older slots were reused */
	h->valid += !(h->tag[slot] & SENT_HISTORY_VALID);
	h->tag[slot] = c->next_dgram_seq | SENT_HISTORY_VALID;
	h->first[slot] = h->ring_head;
	h->count[slot] = 0;
	h->sent_us[slot] = (uint32_t)now_us;
	for (uint32_t i = 0; i < b->nframes; i++) {
		const struct flush_ref *ref = &c->flush_refs[i];
		struct sendq_frame *f;

		if (ref->kind != FLUSH_UNREL) {
			f = sendq_at(&c->rel, ref->index);
			h->ring[h->ring_head++ & (h->size - 1)] = f->reliable_index;
			h->count[slot]++;
			cc_on_sent(&c->cc, sendq_frame_wire_bytes(f));
		}
		switch (ref->kind) {
		case FLUSH_NEW:
			f = sendq_at(&c->rel, ref->index);
			f->first_send_us = now_us;
			f->transmissions = 1;
			f->backoff = 0;
			commit_reliable(c, f, now_us);
			c->rel_unacked++;
			break;
		case FLUSH_RETX_RTO:
		case FLUSH_RETX_NACK:
			f = sendq_at(&c->rel, ref->index);
			/* Back off only on timeouts: a NACK proves the path still works. */
			if (ref->kind == FLUSH_RETX_RTO && f->backoff < FLUSH_MAX_BACKOFF)
				f->backoff++;
			if (f->transmissions < UINT8_MAX)
				f->transmissions++;
			c->stats.frames_retransmitted++;
			if (ref->kind == FLUSH_RETX_RTO)
				c->stats.resent_timeout++;
			else if (f->resend_why == RESEND_NACK)
				c->stats.resent_nack++;
			else if (f->resend_why == RESEND_INFERRED)
				c->stats.resent_inferred++;
			else
				c->stats.resent_probe++;
			commit_reliable(c, f, now_us);
			break;
		default: break;
		}
	}
	c->rel_sent += b->new_frames;
	c->rel_unsent_wire -= b->new_wire;
	if (b->budget != UINT64_MAX)
		b->budget = b->len < b->budget ? b->budget - b->len : 0;
	for (uint32_t i = 0; i < b->unrel_frames; i++)
		sendq_pop_front(&c->unrel);
	c->next_dgram_seq = rudp_u24_add(c->next_dgram_seq, 1);
	c->stats.datagrams_sent++;
	c->stats.bytes_sent += b->len;
	c->last_send_us = now_us;
}

/* Hands the datagram being built to the owner. False when it was refused. */
static bool builder_emit(struct rudp_conn *c, struct dgram_builder *b, uint64_t now_us)
{
	struct rudp_wire_dgram_header h = {.flags = FLUSH_DGRAM_FLAGS, .seq = c->next_dgram_seq};

	if (b->nframes == 0)
		return true;
	rudp_wire_encode_dgram_header(b->buf, RUDP_WIRE_DGRAM_HEADER_LEN, &h);
	if (c->cb.send_datagram(c->cb.ud, b->buf, b->len) < 0) {
		b->blocked = true;
		return false;
	}
	builder_commit(c, b, now_us);
	b->emitted++;
	builder_reset(b);
	return true;
}

/* Adds one frame, sending the current datagram first when the frame does not
 * fit in it. index is only used for retransmissions; new and unreliable frames
 * are taken in queue order. */
static bool builder_add(struct rudp_conn *c, struct dgram_builder *b, enum flush_kind kind, uint32_t index,
			uint64_t now_us)
{
	struct rudp_wire_frame wf;
	struct sendq_frame *f;
	const struct sendq *q;
	size_t need;
	int n;

	for (int attempt = 0; attempt < 2; attempt++) {
		if (kind == FLUSH_NEW)
			index = c->rel_sent + b->new_frames;
		else if (kind == FLUSH_UNREL)
			index = b->unrel_frames;
		q = kind == FLUSH_UNREL ? &c->unrel : &c->rel;
		f = sendq_at(q, index);
		frame_to_wire(q, f, &wf);
		need = sendq_frame_wire_bytes(f);
		if (b->nframes < c->cfg.max_frames_per_datagram && b->len + need <= c->payload_max)
			break;
		if (!builder_emit(c, b, now_us))
			return false;
	}
	/* Per-flush budget (limits only): stop before the frame that would take
	 * this flush past it, but always let one datagram out so a budget
	 * smaller than a datagram still makes progress. */
	if (b->len + need > b->budget && (b->nframes > 0 || b->emitted > 0)) {
		if (!builder_emit(c, b, now_us))
			return false;
		b->budget_spent = true;
		return false;
	}
	/* The buffer is asked for only when there is a frame to put in it: a
	 * flush with nothing to send takes no I/O slot. */
	if (!b->buf && !(b->buf = conn_datagram_buffer(c))) {
		b->blocked = true;
		return false;
	}
	n = rudp_wire_encode_frame(b->buf + b->len, c->payload_max - b->len, &wf);
	if (n < 0) {
		/* Frames are sized to fit an empty datagram; this would be our bug.
		 * Stop instead of spinning. */
		b->blocked = true;
		return false;
	}
	b->len += (size_t)n;
	c->flush_refs[b->nframes].kind = (uint8_t)kind;
	c->flush_refs[b->nframes].index = index;
	b->nframes++;
	if (kind != FLUSH_UNREL)
		b->cc_bytes += (uint32_t)need;
	if (kind == FLUSH_NEW) {
		b->new_frames++;
		b->new_wire += need;
	} else if (kind == FLUSH_UNREL)
		b->unrel_frames++;
	return true;
}

/*
 * Tail-loss probe. When the last datagrams of a burst are lost, nothing
 * later reaches the peer to reveal the gap (no NACK) and nothing later is
 * acknowledged (no inferred loss), so only the RTO would recover, and an
 * application waiting for those messages sends nothing meanwhile. So when
 * frames are in flight and nothing was sent for two RTTs plus a little
 * slack, resend the newest one: its ACK (which repeats the peer's recent
 * ranges), or the NACK its new sequence number provokes, recovers the rest
 * at once. At most two probes go out per ACK progress, so a dead peer is
 * left to the RTO's backoff.
 *
 * The slack only covers an ACK leaving the peer a little late (RTT samples
 * already include a peer's usual ACK delay); a spurious probe costs one
 * frame. It is small because the host's timers wait whole milliseconds on
 * top of it: with 1 ms a probe on a LAN fired after 2 ms, now after 1, and
 * on a fast path a stalled ordered channel waits for exactly this.
 */
#define FLUSH_MAX_PROBES 2
#define FLUSH_PROBE_SLACK_US 250

void flush_note_rto_due(struct rudp_conn *c)
{
	c->rto_due_us = UINT64_MAX;
	for (uint32_t i = 0; i < c->rel_sent; i++) {
		const struct sendq_frame *f = sendq_at(&c->rel, i);

		if (f->state == FRAME_IN_FLIGHT && frame_rto_deadline(c, f) < c->rto_due_us)
			c->rto_due_us = frame_rto_deadline(c, f);
	}
}

/* The frame in flight sent last (of those sent in the same microsecond,
 * the highest index): the one committed last while it is still in flight,
 * else found by a walk. */
static struct sendq_frame *newest_in_flight(const struct rudp_conn *c)
{
	struct sendq_frame *newest = NULL;

	if (c->newest_sent_valid && c->rel_sent > 0) {
		int32_t i = rudp_u24_diff(c->newest_sent_index, sendq_at(&c->rel, 0)->reliable_index);

		if (i >= 0 && (uint32_t)i < c->rel_sent) {
			newest = sendq_at(&c->rel, (uint32_t)i);
			if (newest->state == FRAME_IN_FLIGHT)
				return newest;
			newest = NULL;
		}
	}
	for (uint32_t i = 0; i < c->rel_sent; i++) {
		struct sendq_frame *f = sendq_at(&c->rel, i);

		if (f->state == FRAME_IN_FLIGHT && (!newest || f->last_send_us >= newest->last_send_us))
			newest = f;
	}
	return newest;
}

uint64_t flush_probe_deadline(const struct rudp_conn *c)
{
	const struct sendq_frame *f;
	uint64_t pto;

	if (c->rel_unacked == 0 || c->probes_without_ack >= FLUSH_MAX_PROBES)
		return UINT64_MAX;
	f = newest_in_flight(c);
	if (!f)
		return UINT64_MAX;
	pto = c->rtt.has_sample ? 2 * c->rtt.srtt_us + FLUSH_PROBE_SLACK_US : c->rtt.rto_us;
	return f->last_send_us + pto;
}

/* New reliable frames while the reliable window and the congestion window
 * allow. False when the datagram builder stopped. */
static bool add_new_reliable(struct rudp_conn *c, struct dgram_builder *b, uint64_t now_us)
{
	while (c->rel_sent + b->new_frames < c->rel.frames_count &&
	       c->rel_sent + b->new_frames < c->cfg.window_frames) {
		const struct sendq_frame *f = sendq_at(&c->rel, c->rel_sent + b->new_frames);

		if (!cc_can_send(&c->cc, b->cc_bytes, sendq_frame_wire_bytes(f)))
			break;
		if (!builder_add(c, b, FLUSH_NEW, 0, now_us))
			return false;
	}
	return true;
}

static bool add_unreliable(struct rudp_conn *c, struct dgram_builder *b, uint64_t now_us)
{
	while (b->unrel_frames < c->unrel.frames_count) {
		if (!builder_add(c, b, FLUSH_UNREL, 0, now_us))
			return false;
	}
	return true;
}

int flush_data(struct rudp_conn *c, uint64_t now_us, const struct rudp_conn_flush_limits *limits,
	       bool *blocked, bool *budget_spent)
{
	struct dgram_builder b = {0};

	builder_reset(&b);
	b.budget = limits ? limits->max_bytes : UINT64_MAX;
	c->cc.window_limited = false;
	if (flush_probe_deadline(c) <= now_us) {
		struct sendq_frame *f = newest_in_flight(c);

		f->state = FRAME_NACKED;
		f->resend_why = RESEND_PROBE;
		cc_on_left(&c->cc, sendq_frame_wire_bytes(f));
		c->probes_without_ack++;
		c->resend_pending = true;
	}
	/* Nothing to resend and no timer due: no walk (see resend_pending). */
	bool walk = c->resend_pending || now_us >= c->rto_due_us;
	bool timeout_taken = false, nacked_left = false;

	if (walk)
		c->rto_due_us = UINT64_MAX; /* the walk and the commits below set it again */
	for (uint32_t i = 0; walk && i < c->rel_sent; i++) {
		struct sendq_frame *f = sendq_at(&c->rel, i);
		bool timed_out = f->state == FRAME_IN_FLIGHT && frame_rto_deadline(c, f) <= now_us;

		/* One frame per timeout, the oldest (RFC 6298 5.4-5.6); the others
		 * that ran out with it wait a backed-off RTO more. Why: the RTO
		 * runs out on every frame of a flight at once when ACKs are late
		 * rather than lost (a peer's queue behind an overload: at 1,024
		 * and 2,048 busy connections 60-79 % of all resends were such
		 * timeouts, most of them duplicates at the peer), and resending
		 * the whole flight adds to the queue that delayed it. A real loss
		 * among the others costs a round trip more at most: the resent
		 * frame's ACK lets inference mark the frames sent before it lost
		 * at once, and NACKs still act (measured: rudp (send)'s p99 under
		 * load at 800 B rose, docs/benchmarks.md). */
		if (timed_out && timeout_taken) {
			if (f->backoff < FLUSH_MAX_BACKOFF)
				f->backoff++;
			f->deadline_us = now_us + rtt_backed_off_rto(&c->rtt, f->backoff);
		} else if (timed_out) {
			/* Declared lost here, like a NACKed frame: it leaves the
			 * flight and its resend waits for the window. */
			timeout_taken = true;
			f->state = FRAME_NACKED;
			f->resend_why = RESEND_TIMEOUT;
			cc_on_left(&c->cc, sendq_frame_wire_bytes(f));
			cc_on_timeout(&c->cc, f->last_dgram_seq, c->next_dgram_seq);
		}
		if (f->state == FRAME_IN_FLIGHT) {
			uint64_t due = frame_rto_deadline(c, f);

			if (due < c->rto_due_us)
				c->rto_due_us = due;
		}
		if (f->state != FRAME_NACKED)
			continue;
		/* Held back frames are skipped, not the end of the scan: a tail
		 * probe further on still goes. */
		if (f->resend_why != RESEND_PROBE &&
		    !cc_can_send(&c->cc, b.cc_bytes, sendq_frame_wire_bytes(f))) {
			nacked_left = true;
			continue;
		}
		if (!builder_add(c, &b, f->resend_why == RESEND_TIMEOUT ? FLUSH_RETX_RTO : FLUSH_RETX_NACK, i,
				 now_us)) {
			/* The walk stops here: rto_due_us from a walk of its
			 * own, and resends may be left. */
			flush_note_rto_due(c);
			c->resend_pending = true;
			goto out;
		}
	}
	if (walk)
		c->resend_pending = nacked_left;
	if (limits && limits->unreliable_first) {
		if (!add_unreliable(c, &b, now_us) || !add_new_reliable(c, &b, now_us))
			goto out;
	} else {
		if (!add_new_reliable(c, &b, now_us) || !add_unreliable(c, &b, now_us))
			goto out;
	}
	builder_emit(c, &b, now_us);
out:
	if (b.blocked)
		*blocked = true;
	/* Resends put in a datagram that did not go out are still marked. */
	if (b.blocked || b.nframes > 0)
		c->resend_pending = true;
	if (budget_spent)
		*budget_spent = b.budget_spent;
	return b.emitted;
}

int conn_emit_acks(struct rudp_conn *c, bool nack, uint64_t now_us, bool *blocked)
{
	struct ackq *q = nack ? &c->acktr.nacks : &c->acktr.acks;
	int sent = 0;

	if (q->count == 0)
		return 0;
	acktr_prepare(&c->acktr, nack);
	while (q->count > 0) {
		size_t encoded = 0;
		uint8_t *buf = conn_datagram_buffer(c);
		int n;

		if (!buf) {
			*blocked = true;
			return sent;
		}
		n = rudp_wire_encode_ack(buf, c->payload_max, nack, q->ranges, q->count, &encoded);
		if (n < 0 || encoded == 0) {
			/* Cannot happen with sane ranges; never loop on it. */
			q->count = 0;
			break;
		}
		if (c->cb.send_datagram(c->cb.ud, buf, (size_t)n) < 0) {
			*blocked = true;
			return sent;
		}
		c->stats.datagrams_sent++;
		c->stats.bytes_sent += (uint64_t)n;
		c->last_send_us = now_us;
		ackq_drop_front(q, (uint32_t)encoded);
		sent++;
	}
	return sent;
}

int rudp_conn_flush_control(struct rudp_conn *c, uint64_t now_us, bool *data_next)
{
	bool blocked = false;
	int emitted = 0;

	*data_next = false;
	if (c->state == RUDP_CONN_STATE_CLOSED)
		return 0;
	/* Time never runs backwards inside the engine, whatever the owner passes. */
	if (now_us > c->now_us)
		c->now_us = now_us;
	now_us = c->now_us;
	if (conn_check_timers(c, now_us))
		return 0;
	if (c->disconnect_unqueued)
		conn_retry_disconnect(c);

	emitted += conn_emit_acks(c, false, now_us, &blocked);
	if (!blocked)
		emitted += conn_emit_acks(c, true, now_us, &blocked);
	if (blocked)
		return emitted;

	conn_maybe_queue_keepalive(c, now_us);
	*data_next = true;
	return emitted;
}

int rudp_conn_flush_data(struct rudp_conn *c, uint64_t now_us, const struct rudp_conn_flush_limits *limits,
			 bool *budget_spent)
{
	bool blocked = false;
	int emitted;

	if (budget_spent)
		*budget_spent = false;
	if (c->state == RUDP_CONN_STATE_CLOSED)
		return 0;
	if (now_us > c->now_us)
		c->now_us = now_us;
	now_us = c->now_us;
	emitted = flush_data(c, now_us, limits, &blocked, budget_spent);
	/* Idle connections flush at least for their keepalive, so a ring a
	 * burst grew is given back within a keepalive interval or so. */
	sendq_trim_idle(&c->rel, now_us);
	sendq_trim_idle(&c->unrel, now_us);
	return emitted;
}

int rudp_conn_flush(struct rudp_conn *c, uint64_t now_us)
{
	bool data_next;
	int emitted = rudp_conn_flush_control(c, now_us, &data_next);

	if (data_next)
		emitted += rudp_conn_flush_data(c, now_us, NULL, NULL);
	return emitted;
}
