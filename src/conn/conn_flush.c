/* SPDX-License-Identifier: MIT */
/*
 * Building datagrams at flush time.
 *
 * Order of what goes out: ACKs and NACKs first (they unblock the peer), then
 * reliable frames due again (NACKed, or past their retransmit deadline), then
 * (on redundant channels) the copies an earlier flush stopped before, then
 * new frames, reliable ones while the windows allow and unreliable ones
 * (which never wait behind the reliable window), taking turns; on redundant
 * channels each datagram of new reliable frames is followed by a second
 * copy of each, packed with what comes next.
 * Frames are packed into the current datagram while they fit and fewer
 * than max_frames_per_datagram are in it;
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
	FLUSH_COPY, /* a redundant copy of a frame sent earlier */
};

/* RakNet marks data datagrams "needs B and AS" (0x84); peers expect it. */
#define FLUSH_DGRAM_FLAGS (RUDP_DGRAM_VALID | RUDP_DGRAM_NEEDS_B_AND_AS)

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
	bool paced; /* the rate controller held the next datagram back */
	bool exempt; /* the frame being added may start a datagram whatever the pacing (a probe) */
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

/* The owner took the datagram: its frames are now in flight (or gone). */
static void builder_commit(struct rudp_conn *c, struct dgram_builder *b, uint64_t now_us)
{
	uint32_t seq = c->next_dgram_seq;
	uint32_t slot = loss_dgram_begin(&c->loss, &c->rel, c->rel_sent, seq, now_us, b->new_frames);

	if (c->rate_on) {
		struct dgram_evicted ev;
		uint32_t *data = loss_dgram_record(&c->loss, seq, (uint32_t)b->len, now_us, &ev);

		if (ev.any)
			cc_rate_on_lost(&c->rate, conn_rate_snap(ev.data), ev.bytes);
		cc_rate_on_sent(&c->rate, conn_rate_snap(data), (uint32_t)b->len, now_us);
	}

	for (uint32_t i = 0; i < b->nframes; i++) {
		const struct flush_ref *ref = &c->flush_refs[i];
		struct sendq_frame *f;

		if (ref->kind == FLUSH_UNREL)
			continue;
		f = sendq_at(&c->rel, ref->index);
		loss_dgram_add(&c->loss, slot, f->reliable_index);
		if (ref->kind == FLUSH_COPY) {
			/* Not counted in the congestion window's flight: the
			 * frame's bytes are, once, and leave it once, whichever
			 * copy is acknowledged. */
			loss_frame_copied(f, seq);
			c->stats.frames_copied++;
			continue;
		}
		cc_on_sent(&c->cc, sendq_frame_wire_bytes(f));
		if (ref->kind == FLUSH_NEW) {
			loss_frame_sent_first(&c->loss, f, seq, now_us);
			continue;
		}
		loss_frame_sent_again(&c->loss, f, seq, now_us, ref->kind == FLUSH_RETX_RTO);
		c->stats.frames_retransmitted++;
		if (ref->kind == FLUSH_RETX_RTO)
			c->stats.resent_timeout++;
		else if (f->resend_why == RESEND_NACK)
			c->stats.resent_nack++;
		else if (f->resend_why == RESEND_INFERRED)
			c->stats.resent_inferred++;
		else
			c->stats.resent_probe++;
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

	if (kind == FLUSH_NEW)
		index = c->rel_sent + b->new_frames;
	else if (kind == FLUSH_UNREL)
		index = b->unrel_frames;
	q = kind == FLUSH_UNREL ? &c->unrel : &c->rel;
	f = sendq_at(q, index);
	need = sendq_frame_wire_bytes(f);
	if (b->nframes >= c->cfg.max_frames_per_datagram || b->len + need > c->payload_max) {
		if (!builder_emit(c, b, now_us))
			return false;
		/* The datagram is empty now, and frames are sized to fit an
		 * empty one. The same frame: new ones are still next after
		 * rel_sent, and unreliable ones went from the front. */
		if (kind == FLUSH_UNREL) {
			index = 0;
			f = sendq_at(q, 0);
		}
	}
	/* A new datagram waits for the rate controller's pacing and window;
	 * tail-loss probes (and ACKs, which are not built here) never do. */
	if (b->nframes == 0 && !b->exempt && !conn_rate_open(c, now_us)) {
		b->paced = true;
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
	/* Converted only now: a frame that did not fit, or that the pacing
	 * holds back, needs no wire form. */
	frame_to_wire(q, f, &wf);
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

/* Whether the next new reliable frame may go in this flush: the reliable
 * window and the congestion window let it. */
static bool next_new_reliable(struct rudp_conn *c, const struct dgram_builder *b)
{
	uint32_t next = c->rel_sent + b->new_frames;

	return next < c->rel.frames_count && next < c->cfg.window_frames &&
	       cc_can_send(&c->cc, b->cc_bytes, sendq_frame_wire_bytes(sendq_at(&c->rel, next)));
}

/* Redundancy: the frames from rel[from] on still want their copy, and so
 * do those whose copy is in the datagram being built, which the owner may
 * have refused (a tail of rel, as copies go in queue order). */
static void owe_copies(struct rudp_conn *c, const struct dgram_builder *b, uint32_t from)
{
	for (uint32_t k = 0; k < b->nframes; k++)
		if (c->flush_refs[k].kind == FLUSH_COPY && c->flush_refs[k].index < from) {
			from = c->flush_refs[k].index;
			break;
		}
	c->copies_owed = c->rel_sent - from;
}

static bool add_copies(struct rudp_conn *c, struct dgram_builder *b, uint32_t from, bool fresh,
		       uint64_t now_us);

/* New frames, reliable and unreliable, the two taking turns frame by frame
 * while both have one ready, or every unreliable one first when the owner
 * asks. Taking all reliable frames first would starve unreliable ones
 * whenever pacing, not the windows, is what limits a flush (a player's
 * state updates would wait behind a whole bulk transfer); taking them in
 * queue order would do the same, behind the bulk already queued. Taking
 * turns gives each kind at least half of what the path takes. On
 * redundant channels, once a datagram of new frames has gone, their copies
 * go next (from *copy_from on), not after all the new frames: a flush the
 * pacing or the window stops would otherwise send none of them, and the
 * copy of a frame is worth the most soon after it. False when the
 * datagram builder stopped. */
static bool add_new_frames(struct rudp_conn *c, struct dgram_builder *b, bool unreliable_first,
			   uint32_t *copy_from, uint64_t now_us)
{
	for (;;) {
		bool rel = next_new_reliable(c, b);
		bool unrel = b->unrel_frames < c->unrel.frames_count;

		if (!rel && !unrel)
			return true;
		bool take_unrel = !rel || (unrel && (unreliable_first || c->unrel_turn));

		if (!builder_add(c, b, take_unrel ? FLUSH_UNREL : FLUSH_NEW, 0, now_us)) {
			if (c->redundant_channels)
				owe_copies(c, b, *copy_from);
			return false;
		}
		if (rel && unrel)
			c->unrel_turn = !take_unrel;
		if (c->redundant_channels && c->rel_sent > *copy_from) {
			uint32_t from = *copy_from;

			*copy_from = c->rel_sent;
			if (!add_copies(c, b, from, false, now_us))
				return false;
		}
	}
}

/* Redundancy: a second copy of each frame of rel[from, rel_sent) sent
 * once, on a redundant channel. fresh: the datagram being built may hold
 * some of those frames, so it goes first (one lost datagram must never
 * take both copies); frames already in datagrams that went need no such
 * care. Only first copies: copying resends too cost bytes where loss was
 * already being repaired. When the builder stops, the copies not sent are
 * owed to the next flush (c->copies_owed): dropped, as they were, a
 * sender the pacing or the window holds back (a long RTT, a slow start)
 * got redundancy for a few of its frames only. False when the builder
 * stopped. */
static bool add_copies(struct rudp_conn *c, struct dgram_builder *b, uint32_t from, bool fresh,
		       uint64_t now_us)
{
	uint32_t i = from, to;

	if (fresh && !builder_emit(c, b, now_us))
		goto owed;
	/* After the emit: it committed the frames still being built. */
	to = c->rel_sent;
	for (; i < to; i++) {
		const struct sendq_frame *f = sendq_at(&c->rel, i);

		if (f->state != FRAME_IN_FLIGHT || f->transmissions != 1 ||
		    !rudp_wire_is_ordered_or_sequenced(f->reliability) ||
		    !(c->redundant_channels & (1u << f->channel)))
			continue;
		if (!builder_add(c, b, FLUSH_COPY, i, now_us))
			goto owed;
	}
	c->copies_owed = c->rel_sent - to;
	return true;
owed:
	owe_copies(c, b, i);
	return false;
}

/* Builds and sends data datagrams within limits (NULL: none); sets
 * *blocked when the owner refused one, *budget_spent when the byte budget
 * stopped it. Returns the number sent. */
static int flush_data(struct rudp_conn *c, uint64_t now_us, const struct rudp_conn_flush_limits *limits,
		      bool *blocked, bool *budget_spent)
{
	struct dgram_builder b = {0};
	uint32_t first_new;

	builder_reset(&b);
	b.budget = limits ? limits->max_bytes : UINT64_MAX;
	/* Before any frame is picked: the builder refers to unreliable frames
	 * by their place from the front. */
	if (c->unrel_expiry_min <= now_us)
		c->stats.unreliable_expired += sendq_drop_expired(&c->unrel, now_us, &c->unrel_expiry_min);
	c->cc.window_limited = false;
	/* The inline due time first: the walk of the records is rarely due,
	 * and this runs at every flush. */
	if (c->rate_on && loss_dgram_aged_due(&c->loss, now_us) <= now_us &&
	    loss_dgram_expire_aged(&c->loss, now_us, c->next_dgram_seq) > 0)
		conn_rate_take_expired(c, now_us);
	uint32_t probe_bytes;

	if (loss_take_probe(&c->loss, &c->rel, c->rel_sent, now_us, &probe_bytes) > 0)
		cc_on_left(&c->cc, probe_bytes);
	/* Nothing to resend and no timer due: no walk (see resend_pending). */
	bool walk = loss_walk_begin(&c->loss, now_us);
	struct loss_walk timeouts = {0};
	bool nacked_left = false;

	for (uint32_t i = 0; walk && i < c->rel_sent; i++) {
		struct sendq_frame *f = sendq_at(&c->rel, i);

		if (loss_walk_frame(&c->loss, &timeouts, f, now_us)) {
			cc_on_left(&c->cc, sendq_frame_wire_bytes(f));
			cc_on_timeout(&c->cc, f->last_dgram_seq, c->next_dgram_seq);
			/* Its datagram, and all sent before it, will not be answered now. */
			if (c->rate_on) {
				loss_dgram_expire(&c->loss, f->last_dgram_seq, c->next_dgram_seq);
				conn_rate_take_expired(c, now_us);
			}
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
		b.exempt = f->resend_why == RESEND_PROBE;
		bool added = builder_add(
			c, &b, f->resend_why == RESEND_TIMEOUT ? FLUSH_RETX_RTO : FLUSH_RETX_NACK, i, now_us);

		b.exempt = false;
		/* Held back by the pacing: the walk goes on, for the timers and
		 * for a probe further on, as past the congestion window above. */
		if (!added && b.paced && !b.blocked) {
			nacked_left = true;
			continue;
		}
		if (!added) {
			/* The walk stops here: rto_due_us from a walk of its
			 * own, and resends may be left. */
			loss_note_rto_due(&c->loss, &c->rel, c->rel_sent);
			loss_note_resend_pending(&c->loss);
			goto out;
		}
	}
	if (walk)
		loss_walk_end(&c->loss, nacked_left);
	/* Copies owed by an earlier flush first: a copy is worth the most
	 * shortly after its first. Acknowledged frames leave rel from its
	 * front, so the owed ones are still its last (fewer, if they left). */
	if (c->copies_owed && c->redundant_channels) {
		uint32_t owed = c->copies_owed < c->rel_sent ? c->copies_owed : c->rel_sent;

		if (!add_copies(c, &b, c->rel_sent - owed, false, now_us))
			goto out;
	}
	first_new = c->rel_sent;
	if (!add_new_frames(c, &b, limits && limits->unreliable_first, &first_new, now_us))
		goto out;
	if (c->redundant_channels && c->rel_sent + b.new_frames > first_new &&
	    !add_copies(c, &b, first_new, true, now_us))
		goto out;
	if (!builder_emit(c, &b, now_us) && c->redundant_channels)
		owe_copies(c, &b, c->rel_sent);
	/* Out of data, or at the reliable window, with the pacing and window
	 * still open: the rate samples of what is in flight say how much we
	 * sent, not what the path takes. */
	if (c->rate_on && !b.blocked && conn_rate_open(c, now_us)) {
		if (c->rel_sent < c->rel.frames_count || c->loss.resend_pending ||
		    (limits && limits->more_staged))
			cc_rate_on_app_limited(&c->rate);
		else
			cc_rate_on_out_of_data(&c->rate);
	}
out:
	if (b.blocked)
		*blocked = true;
	/* Resends put in a datagram that did not go out are still marked. */
	if (b.blocked || b.nframes > 0)
		loss_note_resend_pending(&c->loss);
	if (budget_spent)
		*budget_spent = b.budget_spent;
	return b.emitted;
}

uint8_t *conn_datagram_buffer(struct rudp_conn *c)
{
	if (c->cb.datagram_buffer) {
		uint8_t *p = c->cb.datagram_buffer(c->cb.ud, c->payload_max);

		if (p)
			return p;
	}
	if (!c->dgram_buf)
		c->dgram_buf = malloc(c->payload_max);
	return c->dgram_buf;
}

/* Timeouts (dead peer, unacked data, handshake, linger). True when it closed. */
static bool conn_check_timers(struct rudp_conn *c, uint64_t now_us)
{
	if (c->state == RUDP_CONN_STATE_CONNECTING && now_us - c->created_us >= c->cfg.connect_timeout_us) {
		conn_close(c, RUDP_CONN_CLOSE_CONNECT_FAILED);
		return true;
	}
	if (c->state == RUDP_CONN_STATE_DISCONNECTING &&
	    now_us - c->disconnect_start_us >= c->cfg.disconnect_linger_us) {
		conn_close(c, RUDP_CONN_CLOSE_LOCAL);
		return true;
	}
	if (now_us - c->last_recv_us >= c->cfg.timeout_us) {
		conn_close(c, c->state == RUDP_CONN_STATE_CONNECTING ? RUDP_CONN_CLOSE_CONNECT_FAILED
								     : RUDP_CONN_CLOSE_TIMEOUT);
		return true;
	}
	/* Frames go out first in queue order, so the first one not yet
	 * acknowledged was sent before all the others. */
	const struct sendq_frame *f = loss_oldest_unacked(&c->rel, c->rel_sent);

	if (f && now_us - f->first_send_us >= c->cfg.timeout_us) {
		conn_close(c, c->state == RUDP_CONN_STATE_CONNECTING ? RUDP_CONN_CLOSE_CONNECT_FAILED
								     : RUDP_CONN_CLOSE_TIMEOUT);
		return true;
	}
	return false;
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
	if (!nack)
		acktr_acks_sent(&c->acktr);
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
	conn_status_roll(c, now_us);
	if (conn_check_timers(c, now_us))
		return 0;
	if (c->disconnect_unqueued)
		conn_retry_disconnect(c);

	/* ACKs when thinning lets them go (acktr_note_queued); NACKs at once. */
	if (acktr_acks_due(&c->acktr, now_us))
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
