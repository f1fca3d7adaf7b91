/* SPDX-License-Identifier: MIT */
/*
 * The conn's side of an incoming frame: what must hold before a reliable
 * frame counts as received (dedup, room in the hold, in reassembly, for the
 * handshake's answer, with the owner), then reassembly, ordering and
 * delivery, to conn_control.c's control handling or to the application.
 * Orchestrates the receive part (recv.h) and reassembly (reassembly.h).
 */
#include "conn/conn_internal.h"

static void deliver_body(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			 uint8_t channel, uint64_t now_us)
{
	if (len > 0 && rudp_wire_is_control_id(data[0]))
		conn_on_control(c, data, len, now_us);
	else
		conn_deliver_app(c, data, len, reliability, channel);
}

/* Delivers held messages of channel (made) that have become next in line. */
static void order_drain(struct rudp_conn *c, uint8_t channel, uint64_t now_us)
{
	struct recv_held_msg m;

	while (c->state != RUDP_CONN_STATE_CLOSED && recv_order_next(&c->rx, channel, &m)) {
		deliver_body(c, m.data, m.len, m.reliability, channel, now_us);
		recv_held_done(&c->rx, &m);
	}
}

/* Routes a complete message by reliability: ordering, sequencing, delivery.
 * Inline: every message received comes through here. */
static inline void route_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
				 uint8_t channel, uint32_t order_index, uint32_t sequenced_index,
				 uint64_t now_us)
{
	uint8_t deliver_channel;

	switch (recv_route(&c->rx, data, len, reliability, channel, order_index, sequenced_index,
			   c->state == RUDP_CONN_STATE_CONNECTING, &deliver_channel)) {
	case RECV_DELIVER: deliver_body(c, data, len, reliability, deliver_channel, now_us); break;
	case RECV_DELIVER_THEN_DRAIN:
		deliver_body(c, data, len, reliability, deliver_channel, now_us);
		if (c->state != RUDP_CONN_STATE_CLOSED && recv_holds(&c->rx, channel))
			order_drain(c, channel, now_us);
		break;
	default: break;
	}
}

/*
 * Room with the owner for what reliable frame f may deliver at once, asked
 * before the frame counts as received: once the peer has its ACK it never
 * sends the frame again, so a message the owner then had no room for would
 * be lost. ch: f's channel when it is ordered or sequenced. *dgram_room:
 * the owner made room for every frame of f's datagram delivering its own
 * body alone (conn_on_frame_set), and nothing beyond that was delivered
 * since; a frame that may deliver more asks for itself and ends it.
 */
static bool delivery_room(struct rudp_conn *c, const struct rudp_wire_frame *f, const struct recv_channel *ch,
			  bool *dgram_room)
{
	uint32_t messages = 1;
	uint64_t bytes = f->body_len;

	if (f->split) {
		if (!reasm_may_end_set(&c->reasm, f, &bytes))
			return true;
		messages = bytes > 0;
	}
	/* In turn on its channel: the messages held behind it come out too. */
	if (ch)
		recv_hold_released_with(ch, f, &messages, &bytes);
	/* A connecting client's handshake answer: connected, then the early ones. */
	if (c->state == RUDP_CONN_STATE_CONNECTING) {
		messages += c->early_count + 1;
		bytes += c->early_bytes;
	}
	if (*dgram_room && messages == 1 && bytes == f->body_len)
		return true;
	*dgram_room = false;
	return c->cb.reserve_delivery(c->cb.ud, messages, bytes);
}

static void on_fragment(struct rudp_conn *c, const struct rudp_wire_frame *f, uint64_t now_us)
{
	struct reasm_slot *slot = NULL;
	struct reasm_skip skip;
	size_t len = 0;
	bool early = c->role == RUDP_CONN_CLIENT && c->state == RUDP_CONN_STATE_CONNECTING;

	switch (reasm_on_fragment(&c->reasm, f, now_us, early, &slot, &len, &skip)) {
	case REASM_SKIP_ORDER:
		if (recv_order_skip(&c->rx, skip.channel, skip.order_index))
			order_drain(c, skip.channel, c->now_us);
		if (slot)
			reasm_release(&c->reasm, slot);
		break;
	case REASM_COMPLETE: {
		/* Still connecting: the message may become an early one,
		 * taking the buffer its first fragment made room for. */
		uint8_t *handoff = NULL;

		if (slot->early && c->state == RUDP_CONN_STATE_CONNECTING)
			handoff = c->early_handoff = slot->buf;
		/* A reassembled ordered message that must wait for earlier
		 * ones: the hold takes the reassembly buffer itself rather
		 * than a copy, so holding it needs no memory beyond the entry
		 * recv_hold_reserve made room for. */
		if (recv_hold_take(&c->rx, slot->buf, len, slot->reliability, slot->channel,
				   slot->order_index)) {
			slot->buf = NULL;
			slot->buf_cap = 0;
		} else {
			route_message(c, slot->buf, len, slot->reliability, slot->channel, slot->order_index,
				      slot->sequenced_index, now_us);
		}
		if (handoff && !c->early_handoff) {
			slot->buf = NULL; /* taken by conn_deliver_app */
			slot->buf_cap = 0;
		}
		c->early_handoff = NULL;
		reasm_release(&c->reasm, slot);
		break;
	}
	default: break;
	}
}

/* Takes frame f of a datagram (dup_dgram: seen before); false when a
 * reliable one is refused (its datagram is then not acknowledged).
 * dgram_room: as for delivery_room. */
static bool conn_recv_frame(struct rudp_conn *c, const struct rudp_wire_frame *f, bool dup_dgram,
			    bool *dgram_room, uint64_t now_us)
{
	bool reliable = rudp_wire_is_reliable(f->reliability);

	if (!reliable && dup_dgram) {
		c->stats.duplicates_dropped++;
		return true;
	}
	if (reliable) {
		switch (recv_dedup_check(&c->rx, f->reliable_index)) {
		case DEDUP_DUPLICATE: c->stats.duplicates_dropped++; return true;
		case DEDUP_AHEAD: conn_count_bad_frame(c); return false;
		case DEDUP_NEW: break;
		}
		if (!recv_dedup_make_room(&c->rx, f->reliable_index)) {
			conn_count_bad_frame(c);
			return false;
		}
		bool held = false;
		struct recv_channel *ch = NULL;

		if (rudp_wire_is_ordered_or_sequenced(f->reliability)) {
			/* The channel is made before the frame counts as
			 * received: out of memory, it is not acknowledged and
			 * comes again, instead of being lost after its ACK. */
			ch = recv_channel(&c->rx, f->order_channel);
			if (!ch)
				return false;
			if (f->reliability == RUDP_WIRE_RELIABLE_ORDERED) {
				int32_t ahead = rudp_u24_diff(f->order_index, ch->expected_order);

				if (ahead > 0 && (uint32_t)ahead > c->cfg.max_order_hold) {
					conn_count_bad_frame(c);
					return false;
				}
				if (ahead > 0 && !recv_hold_reserve(&c->rx, ch, (uint32_t)ahead, f))
					return false;
				held = ahead > 0;
			}
		}
		/* Both only ever refuse during the handshake: checked inline
		 * so a connected conn's frames pay one compare, not two calls. */
		if (c->state == RUDP_CONN_STATE_CONNECTING && !conn_reserve_early(c, f, held))
			return false;
		if (f->split && reasm_admit(&c->reasm, f) == REASM_DEFER)
			return false;
		if (c->state == RUDP_CONN_STATE_CONNECTING && !conn_reserve_answer(c, f))
			return false;
		if (c->cb.reserve_delivery && !delivery_room(c, f, ch, dgram_room))
			return false;
		recv_dedup_mark(&c->rx, f->reliable_index);
	}

	if (f->split)
		on_fragment(c, f, now_us);
	else
		route_message(c, f->body, f->body_len, f->reliability, f->order_channel, f->order_index,
			      f->sequenced_index, now_us);
	return true;
}

/* ---- frame-set datagrams ---- */

/* at_once: the ACK may not wait (acktr_note_queued). */
static void queue_ack(struct rudp_conn *c, uint32_t seq, bool at_once, uint64_t now_us)
{
	bool blocked = false;

	if (!acktr_queue_ack(&c->acktr, seq)) {
		/* Too many separate ranges to hold: send what we have now. */
		conn_emit_acks(c, false, now_us, &blocked);
		acktr_force_ack(&c->acktr, seq);
	}
	acktr_note_queued(&c->acktr, now_us, at_once);
}

/*
 * Whether datagram seq's ACK may wait for thinning (acktr_note_queued):
 * only the next datagram in line, with no gap waiting for its NACK, on a
 * connected conn, on a path whose RTT is long against the delay
 * (rtt_ack_delay_applies). A late or repeated datagram says the peer is
 * recovering (or our ACK was lost); the handshake must not wait; and on
 * a shorter path (a LAN, loopback, or no RTT sample yet) a sender limited
 * by its window would stall for the delay every flight, many times what
 * the ACKs cost.
 */
static bool ack_may_wait(const struct rudp_conn *c, uint32_t seq, bool dup)
{
	return !dup && seq == c->acktr.highest_dgram_seq && c->acktr.nacks.count == 0 &&
	       c->state == RUDP_CONN_STATE_CONNECTED &&
	       rtt_ack_delay_applies(&c->loss.rtt, c->acktr.ack_delay_us);
}

/* Frames of one datagram kept from the checking pass for the acting pass
 * (on_frame_set); a datagram with more is decoded again past them. librudp
 * packs at most eight (max_frames_per_datagram's default). */
#define FRAME_SET_KEEP 16

int conn_on_frame_set(struct rudp_conn *c, const uint8_t *p, size_t n, uint64_t now_us)
{
	struct rudp_wire_dgram_header h;
	struct rudp_wire_frame kept[FRAME_SET_KEEP], f;
	bool ackable = true, dup, split = false, dgram_room = false;
	enum dgram_seq_verdict verdict;
	size_t off, nframes = 0, kept_end = 0;
	uint64_t bytes = 0;
	int rc;

	rc = rudp_wire_decode_dgram_header(p, n, &h);
	if (rc < 0) {
		c->stats.datagrams_dropped++;
		return rc;
	}
	/* Check every frame before acting on any: a datagram is taken (and
	 * acknowledged) whole or not at all. */
	for (off = RUDP_WIRE_DGRAM_HEADER_LEN; off < n; off += (size_t)rc, nframes++) {
		rc = rudp_wire_decode_frame(p + off, n - off, nframes < FRAME_SET_KEEP ? &kept[nframes] : &f);
		if (rc < 0) {
			c->stats.datagrams_dropped++;
			return rc;
		}
		if (nframes < FRAME_SET_KEEP) {
			kept_end = off + (size_t)rc;
			bytes += kept[nframes].body_len;
			split |= kept[nframes].split;
		} else {
			bytes += f.body_len;
			split |= f.split;
		}
	}
	verdict = acktr_on_dgram_seq(&c->acktr, h.seq);
	if (verdict == DGRAM_FAR_AHEAD) {
		c->stats.datagrams_dropped++;
		return RUDP_WIRE_BAD_VALUE;
	}
	dup = verdict == DGRAM_SEEN;
	c->last_recv_us = now_us;
	/*
	 * Room with the owner for the whole datagram at once, rather than a
	 * call per reliable frame (delivery_room): when no frame is split
	 * and the handshake is over, each frame delivers at most its own
	 * body, unless it releases held messages (it then asks for itself).
	 * Unreliable frames are counted too: their events take room as well.
	 * Refused (out of memory), each frame asks for itself.
	 */
	if (nframes > 1 && !split && !dup && c->cb.reserve_delivery && c->state != RUDP_CONN_STATE_CONNECTING)
		dgram_room = c->cb.reserve_delivery(c->cb.ud, (uint32_t)nframes, bytes);
	off = kept_end;
	for (size_t i = 0; i < nframes && c->state != RUDP_CONN_STATE_CLOSED; i++) {
		const struct rudp_wire_frame *fr;

		if (i < FRAME_SET_KEEP) {
			fr = &kept[i];
		} else {
			rc = rudp_wire_decode_frame(p + off, n - off, &f);
			off += (size_t)rc;
			fr = &f;
		}
		if (!conn_recv_frame(c, fr, dup, &dgram_room, now_us))
			ackable = false;
	}
	if (c->state == RUDP_CONN_STATE_CLOSED)
		return 0;
	/* Duplicates are acknowledged too: the first ACK may have been lost. */
	if (ackable)
		queue_ack(c, h.seq, !ack_may_wait(c, h.seq, dup), now_us);
	if (c->remote_closing && recv_no_reliable_gaps(&c->rx)) {
		bool blocked = false;

		/* The peer waits for the ACK of its 0x15 before it closes: send it
		 * now, there is no later flush on a closed conn. */
		conn_emit_acks(c, false, now_us, &blocked);
		/* While our own close is under way the peer's 0x15 is its answer
		 * to ours (jsp-raknet sends it instead of acknowledging ours): our
		 * close is what finished. */
		conn_close(c, c->state == RUDP_CONN_STATE_DISCONNECTING ? RUDP_CONN_CLOSE_LOCAL
									: RUDP_CONN_CLOSE_REMOTE);
	}
	return 0;
}
