/* SPDX-License-Identifier: MIT */
/*
 * Incoming frames: reliable-index dedup, ordering and sequencing per channel,
 * then delivery (to conn's control handling or to the application).
 *
 * Dedup keeps one bit per reliable index in a sliding window starting at the
 * lowest index not received yet. Everything behind it is a duplicate. A frame
 * too far ahead, or an ordered message too far ahead of its channel, is not
 * accepted and its datagram not acknowledged: the peer sends it again later,
 * when there is room. Dropping it after acknowledging would lose reliable data
 * (and stall an ordered channel for good).
 */
#include <stdlib.h>
#include <string.h>

#include "conn/conn_internal.h"

#define HOLD_MIN_CAP 16u
#define DEDUP_FIRST_BITS 256u
#define HOLD_BLOCK_CACHE 32u

/* ---- dedup ---- */

enum dedup_result {
	DEDUP_NEW,
	DEDUP_DUPLICATE,
	DEDUP_AHEAD, /* beyond the receive window */
};

static bool dedup_bit(const struct recv_dedup *d, uint32_t ri)
{
	uint32_t i = ri & (d->nbits - 1);

	return (d->bits[i / 64] >> (i % 64)) & 1u;
}

static enum dedup_result dedup_check(const struct recv_dedup *d, uint32_t ri)
{
	int32_t ahead = rudp_u24_diff(ri, d->base);

	if (ahead < 0)
		return DEDUP_DUPLICATE;
	if ((uint32_t)ahead >= d->window)
		return DEDUP_AHEAD;
	/* Beyond the ring: never received (every mark is preceded by
	 * dedup_make_room), and its bit would alias a nearer index. */
	if ((uint32_t)ahead >= d->nbits)
		return DEDUP_NEW;
	return dedup_bit(d, ri) ? DEDUP_DUPLICATE : DEDUP_NEW;
}

/* The bit ring starts at DEDUP_FIRST_BITS and doubles, up to the window,
 * when an index arrives further ahead of the base than it covers: on a
 * clean path the indexes arrive nearly in order, and a ring for the whole
 * window (recv_window 8,192: 1 KiB) is memory every connection pays. False
 * when out of memory (the frame is then treated as too far ahead: not
 * acknowledged, so the peer sends it again). */
static bool dedup_make_room(struct recv_dedup *d, uint32_t ri)
{
	uint32_t ahead = (uint32_t)rudp_u24_diff(ri, d->base); /* checked: 0 <= ahead < window */
	uint32_t nbits = d->nbits;
	uint64_t *bits;

	if (ahead < nbits)
		return true;
	while (nbits <= ahead)
		nbits <<= 1;
	bits = calloc(nbits / 64, sizeof(uint64_t));
	if (!bits)
		return false;
	/* Only [base, highest_plus_one) can have bits set. */
	for (uint32_t k = d->base; k != d->highest_plus_one; k = rudp_u24_add(k, 1)) {
		if (dedup_bit(d, k)) {
			uint32_t i = k & (nbits - 1);

			bits[i / 64] |= (uint64_t)1 << (i % 64);
		}
	}
	free(d->bits);
	d->bits = bits;
	d->nbits = nbits;
	return true;
}

static void dedup_mark(struct recv_dedup *d, uint32_t ri)
{
	uint32_t i = ri & (d->nbits - 1);

	d->bits[i / 64] |= (uint64_t)1 << (i % 64);
	if (rudp_u24_diff(rudp_u24_add(ri, 1), d->highest_plus_one) > 0)
		d->highest_plus_one = rudp_u24_add(ri, 1);
	while (dedup_bit(d, d->base)) {
		i = d->base & (d->nbits - 1);
		d->bits[i / 64] &= ~((uint64_t)1 << (i % 64));
		d->base = rudp_u24_add(d->base, 1);
	}
}

bool recv_no_reliable_gaps(const struct rudp_conn *c)
{
	return c->dedup.base == c->dedup.highest_plus_one;
}

int recv_init(struct rudp_conn *c)
{
	uint32_t nbits = DEDUP_FIRST_BITS;

	c->dedup.bits = calloc(nbits / 64, sizeof(uint64_t));
	c->dedup.nbits = nbits;
	c->dedup.window = c->cfg.recv_window;
	c->dedup.base = 0;
	c->dedup.highest_plus_one = 0;
	c->hold_block_cache = calloc(HOLD_BLOCK_CACHE, sizeof(*c->hold_block_cache));
	c->hold_block_cached = 0;
	if (!c->dedup.bits || !c->hold_block_cache)
		return RUDP_CONN_E_NOMEM;
	return 0;
}

struct recv_channel *recv_channel(struct rudp_conn *c, uint8_t ch)
{
	if (ch < c->chans_count)
		return &c->chans[ch];
	if (ch >= CONN_CHANNELS)
		return NULL;
	struct recv_channel *chans = realloc(c->chans, ((size_t)ch + 1) * sizeof(*chans));

	if (!chans)
		return NULL;
	for (uint32_t i = c->chans_count; i <= ch; i++)
		chans[i] = (struct recv_channel){.expected_order = c->chans_first_order};
	c->chans = chans;
	c->chans_count = (uint32_t)ch + 1;
	return &chans[ch];
}

void recv_free(struct rudp_conn *c)
{
	for (uint32_t ch = 0; ch < c->chans_count; ch++) {
		struct recv_channel *rc = &c->chans[ch];

		for (uint32_t i = 0; i < rc->hold_cap; i++)
			free(rc->hold[i].data);
		free(rc->hold);
	}
	free(c->chans);
	c->chans = NULL;
	c->chans_count = 0;
	if (c->hold_block_cache) {
		for (uint32_t i = 0; i < c->hold_block_cached; i++)
			free(c->hold_block_cache[i]);
	}
	free(c->hold_block_cache);
	c->hold_block_cache = NULL;
	free(c->dedup.bits);
	c->dedup.bits = NULL;
}

/* ---- held (out of order) message buffers ---- */

/* Small messages are held in payload_max-sized blocks recycled through a
 * little cache, so loss on a busy channel does not mean a malloc per message. */
static uint8_t *hold_buf_alloc(struct rudp_conn *c, size_t len, bool *block)
{
	*block = len <= c->payload_max;
	if (*block) {
		if (c->hold_block_cached > 0)
			return c->hold_block_cache[--c->hold_block_cached];
		return malloc(c->payload_max);
	}
	return malloc(len);
}

static void hold_buf_free(struct rudp_conn *c, uint8_t *buf, bool block)
{
	if (block && c->hold_block_cached < HOLD_BLOCK_CACHE)
		c->hold_block_cache[c->hold_block_cached++] = buf;
	else
		free(buf);
}

static int hold_grow(struct recv_channel *ch, uint32_t need)
{
	uint32_t cap = ch->hold_cap ? ch->hold_cap : HOLD_MIN_CAP;
	struct order_hold_entry *hold;

	while (cap < need)
		cap <<= 1;
	hold = calloc(cap, sizeof(*hold));
	if (!hold)
		return RUDP_CONN_E_NOMEM;
	for (uint32_t i = 0; i < ch->hold_cap; i++) {
		if (ch->hold[i].kind != HOLD_EMPTY)
			hold[ch->hold[i].order_index & (cap - 1)] = ch->hold[i];
	}
	free(ch->hold);
	ch->hold = hold;
	ch->hold_cap = cap;
	return 0;
}

/*
 * Room to hold ordered frame f's message at expected + ahead (ahead > 0),
 * made before the frame counts as received: once it does, the peer has its
 * ACK and never sends it again, so a message that then found no room would
 * be lost and its channel stalled behind the gap for good. Out of memory,
 * the frame is deferred instead (not acknowledged: it comes again). The
 * array entry, and for a frame's own body a block: a reassembled message's
 * buffer is handed over whole (hold_take_reassembled), and a body larger
 * than a block only comes from a peer that ignores the MTU.
 */
static bool hold_room(struct recv_channel *ch, uint32_t ahead)
{
	return ahead < ch->hold_cap || hold_grow(ch, ahead + 1) == 0;
}

static bool hold_reserve(struct rudp_conn *c, struct recv_channel *ch, uint32_t ahead,
			 const struct rudp_wire_frame *f)
{
	if (!hold_room(ch, ahead))
		return false;
	if (!f->split && f->body_len <= c->payload_max && c->hold_block_cached == 0) {
		uint8_t *b = malloc(c->payload_max);

		if (!b)
			return false;
		c->hold_block_cache[c->hold_block_cached++] = b;
	}
	return true;
}

/* The empty entry for order index expected + ahead, ahead > 0; NULL when
 * it cannot be made, or is taken (a duplicate order index). */
static struct order_hold_entry *hold_entry(struct recv_channel *ch, uint32_t order_index, uint32_t ahead)
{
	struct order_hold_entry *e;

	if (!hold_room(ch, ahead))
		return NULL;
	e = &ch->hold[order_index & (ch->hold_cap - 1)];
	return e->kind == HOLD_EMPTY ? e : NULL;
}

static void hold_fill(struct recv_channel *ch, struct order_hold_entry *e, enum hold_kind kind, uint8_t *data,
		      size_t len, bool block, uint32_t order_index, uint8_t reliability)
{
	e->data = data;
	e->len = (uint32_t)len;
	e->order_index = order_index;
	e->kind = (uint8_t)kind;
	e->reliability = reliability;
	e->block = block;
	ch->held++;
}

/* Stores a copy of a message (or a skip marker when data is NULL) at order
 * index expected + ahead, ahead > 0. False when it cannot be stored. */
static bool hold_put(struct rudp_conn *c, struct recv_channel *ch, uint32_t order_index, uint32_t ahead,
		     const uint8_t *data, size_t len, uint8_t reliability)
{
	struct order_hold_entry *e = hold_entry(ch, order_index, ahead);
	uint8_t *copy;
	bool block = false;

	if (!e)
		return false;
	if (!data) {
		hold_fill(ch, e, HOLD_SKIP, NULL, 0, false, order_index, reliability);
		return true;
	}
	copy = hold_buf_alloc(c, len, &block);
	if (!copy)
		return false;
	memcpy(copy, data, len);
	hold_fill(ch, e, HOLD_MESSAGE, copy, len, block, order_index, reliability);
	return true;
}

/* A reassembled ordered message that must wait for earlier ones: the hold
 * takes the reassembly buffer itself rather than a copy, so holding it
 * needs no memory beyond the entry hold_reserve made room for. False when
 * it is not such a message (the caller routes it as usual). */
static bool hold_take_reassembled(struct rudp_conn *c, struct reasm_slot *s, size_t len)
{
	struct recv_channel *ch;
	struct order_hold_entry *e;
	int32_t ahead;

	if (s->reliability != RUDP_WIRE_RELIABLE_ORDERED || !(ch = recv_channel(c, s->channel)))
		return false;
	ahead = rudp_u24_diff(s->order_index, ch->expected_order);
	if (ahead <= 0 || (uint32_t)ahead > c->cfg.max_order_hold ||
	    !(e = hold_entry(ch, s->order_index, (uint32_t)ahead)))
		return false;
	hold_fill(ch, e, HOLD_MESSAGE, s->buf, len, false, s->order_index, s->reliability);
	s->buf = NULL;
	s->buf_cap = 0;
	return true;
}

/* ---- delivery ---- */

static void deliver_body(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			 uint8_t channel, uint64_t now_us)
{
	if (len > 0 && rudp_wire_is_control_id(data[0]))
		conn_on_control(c, data, len, now_us);
	else
		conn_deliver_app(c, data, len, reliability, channel);
}

/* Delivers held messages that have become next in line. */
static void order_drain(struct rudp_conn *c, uint8_t channel, uint64_t now_us)
{
	struct recv_channel *ch = &c->chans[channel]; /* made by the caller */

	while (ch->held > 0 && c->state != RUDP_CONN_STATE_CLOSED) {
		struct order_hold_entry *e = &ch->hold[ch->expected_order & (ch->hold_cap - 1)];
		struct order_hold_entry taken;

		if (e->kind == HOLD_EMPTY || e->order_index != ch->expected_order)
			break;
		taken = *e;
		memset(e, 0, sizeof(*e));
		ch->held--;
		ch->expected_order = rudp_u24_add(ch->expected_order, 1);
		if (taken.kind == HOLD_MESSAGE) {
			deliver_body(c, taken.data, taken.len, taken.reliability, channel, now_us);
			hold_buf_free(c, taken.data, taken.block);
		}
	}
}

static void order_on_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			     uint8_t channel, uint32_t order_index, uint64_t now_us)
{
	/* recv_on_frame made the channel before it accepted the frame. */
	struct recv_channel *ch = recv_channel(c, channel);
	if (!ch) {
		conn_count_bad_frame(c);
		return;
	}
	int32_t ahead = rudp_u24_diff(order_index, ch->expected_order);

	if (ahead < 0) {
		/* Reliable dedup already passed it, so the peer reused an order index. */
		conn_count_bad_frame(c);
		return;
	}
	if (ahead == 0) {
		ch->expected_order = rudp_u24_add(ch->expected_order, 1);
		deliver_body(c, data, len, reliability, channel, now_us);
		order_drain(c, channel, now_us);
		return;
	}
	if ((uint32_t)ahead > c->cfg.max_order_hold) {
		conn_count_bad_frame(c);
		return;
	}
	if (c->state == RUDP_CONN_STATE_CONNECTING && len > 0 && rudp_wire_is_control_id(data[0])) {
		/* A connecting client defers what it cannot keep yet (split
		 * fragments, conn_reserve_early), and a busy raknet-node can
		 * queue its application's first message ahead of its 0x10 on
		 * one channel: the 0x10 waiting its turn would wait for ever.
		 * Control messages are the library's own, so one is handled
		 * now and its order index passed over (recv_on_frame reserved
		 * the marker's room); the application's messages keep their
		 * order. */
		if (!hold_put(c, ch, order_index, (uint32_t)ahead, NULL, 0, reliability)) {
			conn_count_bad_frame(c);
			return;
		}
		deliver_body(c, data, len, reliability, channel, now_us);
		return;
	}
	if (!hold_put(c, ch, order_index, (uint32_t)ahead, data, len, reliability))
		conn_count_bad_frame(c);
}

void recv_order_skip(struct rudp_conn *c, uint8_t channel, uint32_t order_index)
{
	struct recv_channel *ch = recv_channel(c, channel);
	if (!ch)
		return;
	int32_t ahead = rudp_u24_diff(order_index, ch->expected_order);

	if (ahead < 0)
		return;
	if (ahead == 0) {
		ch->expected_order = rudp_u24_add(ch->expected_order, 1);
		order_drain(c, channel, c->now_us);
		return;
	}
	if ((uint32_t)ahead <= c->cfg.max_order_hold)
		hold_put(c, ch, order_index, (uint32_t)ahead, NULL, 0, RUDP_WIRE_RELIABLE_ORDERED);
}

/* Sequenced: only ever forward. Newer means a later order index (a later
 * "epoch" of the ordered stream), or the same one with a later sequenced
 * index; RakNet peers restart sequenced indexes at each ordered message,
 * which this comparison allows. */
static void sequenced_on_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
				 uint8_t channel, uint32_t order_index, uint32_t sequenced_index,
				 uint64_t now_us)
{
	/* Made before a reliable one was accepted; an unreliable one whose
	 * channel cannot be made now is dropped like a late one. */
	struct recv_channel *ch = recv_channel(c, channel);
	if (!ch)
		return;
	if (rudp_u24_diff(order_index, ch->expected_order) < 0)
		return;
	if (ch->have_sequenced) {
		int32_t epoch = rudp_u24_diff(order_index, ch->last_seq_order);

		if (epoch < 0 || (epoch == 0 && rudp_u24_diff(sequenced_index, ch->last_seq_index) <= 0))
			return;
	}
	ch->have_sequenced = true;
	ch->last_seq_order = order_index;
	ch->last_seq_index = sequenced_index;
	deliver_body(c, data, len, reliability, channel, now_us);
}

void recv_route_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			uint8_t channel, uint32_t order_index, uint32_t sequenced_index, uint64_t now_us)
{
	switch (reliability) {
	case RUDP_WIRE_RELIABLE_ORDERED:
		order_on_message(c, data, len, reliability, channel, order_index, now_us);
		break;
	case RUDP_WIRE_UNRELIABLE_SEQUENCED:
	case RUDP_WIRE_RELIABLE_SEQUENCED:
		sequenced_on_message(c, data, len, reliability, channel, order_index, sequenced_index,
				     now_us);
		break;
	default: deliver_body(c, data, len, reliability, 0, now_us); break;
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
	if (ch && f->reliability == RUDP_WIRE_RELIABLE_ORDERED && ch->held > 0 &&
	    f->order_index == ch->expected_order) {
		for (uint32_t k = 1; k <= ch->held; k++) {
			uint32_t index = rudp_u24_add(ch->expected_order, k);
			const struct order_hold_entry *e = &ch->hold[index & (ch->hold_cap - 1)];

			if (e->kind == HOLD_EMPTY || e->order_index != index)
				break;
			messages += e->kind == HOLD_MESSAGE;
			bytes += e->len;
		}
	}
	/* A connecting client's handshake answer: connected, then the early ones. */
	if (c->state == RUDP_CONN_STATE_CONNECTING) {
		messages += c->early_count + 1;
		bytes += c->early_bytes;
	}
	return c->cb.reserve_delivery(c->cb.ud, messages, bytes);
}

bool recv_on_frame(struct rudp_conn *c, const struct rudp_wire_frame *f, bool dup_dgram, uint64_t now_us)
{
	bool reliable = rudp_wire_is_reliable(f->reliability);

	if (!reliable && dup_dgram) {
		c->stats.duplicates_dropped++;
		return true;
	}
	if (reliable) {
		switch (dedup_check(&c->dedup, f->reliable_index)) {
		case DEDUP_DUPLICATE: c->stats.duplicates_dropped++; return true;
		case DEDUP_AHEAD: conn_count_bad_frame(c); return false;
		case DEDUP_NEW: break;
		}
		if (!dedup_make_room(&c->dedup, f->reliable_index)) {
			conn_count_bad_frame(c);
			return false;
		}
		bool held = false;
		struct recv_channel *ch = NULL;

		if (rudp_wire_is_ordered_or_sequenced(f->reliability)) {
			/* The channel is made before the frame counts as
			 * received: out of memory, it is not acknowledged and
			 * comes again, instead of being lost after its ACK. */
			ch = recv_channel(c, f->order_channel);
			if (!ch)
				return false;
			if (f->reliability == RUDP_WIRE_RELIABLE_ORDERED) {
				int32_t ahead = rudp_u24_diff(f->order_index, ch->expected_order);

				if (ahead > 0 && (uint32_t)ahead > c->cfg.max_order_hold) {
					conn_count_bad_frame(c);
					return false;
				}
				if (ahead > 0 && !hold_reserve(c, ch, (uint32_t)ahead, f))
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
		dedup_mark(&c->dedup, f->reliable_index);
	}

	if (f->split) {
		struct reasm_slot *slot = NULL;
		struct reasm_skip skip;
		size_t len = 0;
		bool early = c->role == RUDP_CONN_CLIENT && c->state == RUDP_CONN_STATE_CONNECTING;

		switch (reasm_on_fragment(&c->reasm, f, now_us, early, &slot, &len, &skip)) {
		case REASM_SKIP_ORDER:
			recv_order_skip(c, skip.channel, skip.order_index);
			if (slot)
				reasm_release(&c->reasm, slot);
			break;
		case REASM_COMPLETE: {
			/* Still connecting: the message may become an early one,
			 * taking the buffer its first fragment made room for. */
			uint8_t *handoff = NULL;

			if (slot->early && c->state == RUDP_CONN_STATE_CONNECTING)
				handoff = c->early_handoff = slot->buf;
			if (!hold_take_reassembled(c, slot, len))
				recv_route_message(c, slot->buf, len, slot->reliability, slot->channel,
						   slot->order_index, slot->sequenced_index, now_us);
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
	} else {
		recv_route_message(c, f->body, f->body_len, f->reliability, f->order_channel, f->order_index,
				   f->sequenced_index, now_us);
	}
	return true;
}
