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

/* Routes a complete message by reliability: ordering, sequencing, delivery. */
static void route_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			  uint8_t channel, uint32_t order_index, uint32_t sequenced_index, uint64_t now_us)
{
	uint8_t deliver_channel;

	switch (recv_route(&c->rx, data, len, reliability, channel, order_index, sequenced_index,
			   c->state == RUDP_CONN_STATE_CONNECTING, &deliver_channel)) {
	case RECV_DELIVER: deliver_body(c, data, len, reliability, deliver_channel, now_us); break;
	case RECV_DELIVER_THEN_DRAIN:
		deliver_body(c, data, len, reliability, deliver_channel, now_us);
		order_drain(c, channel, now_us);
		break;
	default: break;
	}
}

/*
 * Room with the owner for what reliable frame f may deliver at once, asked
 * before the frame counts as received: once the peer has its ACK it never
 * sends the frame again, so a message the owner then had no room for would
 * be lost. ch: f's channel when it is ordered or sequenced.
 */
static bool delivery_room(struct rudp_conn *c, const struct rudp_wire_frame *f, const struct recv_channel *ch)
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

bool conn_recv_frame(struct rudp_conn *c, const struct rudp_wire_frame *f, bool dup_dgram, uint64_t now_us)
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
		if (c->cb.reserve_delivery && !delivery_room(c, f, ch))
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
