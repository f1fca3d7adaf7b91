/* SPDX-License-Identifier: MIT */
/*
 * Receive and ordering: reliable-index dedup, ordering and sequencing per
 * channel. It says what to deliver; the conn (conn_recv.c) delivers.
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

#include "conn/conn.h"
#include "conn/recv.h"

#define HOLD_MIN_CAP 16u
#define DEDUP_FIRST_BITS 256u
#define HOLD_BLOCK_CACHE 32u

/* ---- dedup ---- */

/* The bit ring starts at DEDUP_FIRST_BITS and doubles, up to the window,
 * when an index arrives further ahead of the base than it covers: on a
 * clean path the indexes arrive nearly in order, and a ring for the whole
 * window (recv_window 8,192: 1 KiB) is memory every connection pays. */
bool recv_dedup_grow(struct receiver *r, uint32_t ri)
{
	struct recv_dedup *d = &r->dedup;
	uint32_t ahead = (uint32_t)rudp_u24_diff(ri, d->base); /* checked: nbits <= ahead < window */
	uint32_t nbits = d->nbits;
	uint64_t *bits;

	while (nbits <= ahead)
		nbits <<= 1;
	bits = calloc(nbits / 64, sizeof(uint64_t));
	if (!bits)
		return false;
	/* Only [base, highest_plus_one) can have bits set. */
	for (uint32_t k = d->base; k != d->highest_plus_one; k = rudp_u24_add(k, 1)) {
		if (recv_dedup_bit(d, k)) {
			uint32_t i = k & (nbits - 1);

			bits[i / 64] |= (uint64_t)1 << (i % 64);
		}
	}
	free(d->bits);
	d->bits = bits;
	d->nbits = nbits;
	return true;
}

int recv_init(struct receiver *r, uint32_t recv_window, uint32_t payload_max, uint32_t max_order_hold)
{
	uint32_t nbits = DEDUP_FIRST_BITS;

	memset(r, 0, sizeof(*r));
	r->dedup.bits = calloc(nbits / 64, sizeof(uint64_t));
	r->dedup.nbits = nbits;
	r->dedup.window = recv_window;
	r->hold_block_cache = calloc(HOLD_BLOCK_CACHE, sizeof(*r->hold_block_cache));
	r->payload_max = payload_max;
	r->max_order_hold = max_order_hold;
	if (!r->dedup.bits || !r->hold_block_cache)
		return RUDP_CONN_E_NOMEM;
	return 0;
}

struct recv_channel *recv_channel_make(struct receiver *r, uint8_t ch)
{
	if (ch >= RUDP_WIRE_ORDER_CHANNELS)
		return NULL;
	struct recv_channel *chans = realloc(r->chans, ((size_t)ch + 1) * sizeof(*chans));

	if (!chans)
		return NULL;
	for (uint32_t i = r->chans_count; i <= ch; i++)
		chans[i] = (struct recv_channel){.expected_order = r->chans_first_order};
	r->chans = chans;
	r->chans_count = (uint32_t)ch + 1;
	return &chans[ch];
}

void recv_free(struct receiver *r)
{
	for (uint32_t ch = 0; ch < r->chans_count; ch++) {
		struct recv_channel *rc = &r->chans[ch];

		for (uint32_t i = 0; i < rc->hold_cap; i++)
			free(rc->hold[i].data);
		free(rc->hold);
	}
	free(r->chans);
	r->chans = NULL;
	r->chans_count = 0;
	if (r->hold_block_cache) {
		for (uint32_t i = 0; i < r->hold_block_cached; i++)
			free(r->hold_block_cache[i]);
	}
	free(r->hold_block_cache);
	r->hold_block_cache = NULL;
	free(r->dedup.bits);
	r->dedup.bits = NULL;
}

/* ---- held (out of order) message buffers ---- */

/* Small messages are held in payload_max-sized blocks recycled through a
 * little cache, so loss on a busy channel does not mean a malloc per message. */
static uint8_t *hold_buf_alloc(struct receiver *r, size_t len, bool *block)
{
	*block = len <= r->payload_max;
	if (*block) {
		if (r->hold_block_cached > 0)
			return r->hold_block_cache[--r->hold_block_cached];
		return malloc(r->payload_max);
	}
	return malloc(len);
}

static void hold_buf_free(struct receiver *r, uint8_t *buf, bool block)
{
	if (block && r->hold_block_cached < HOLD_BLOCK_CACHE)
		r->hold_block_cache[r->hold_block_cached++] = buf;
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
 * buffer is handed over whole (recv_hold_take), and a body larger
 * than a block only comes from a peer that ignores the MTU.
 */
static bool hold_room(struct recv_channel *ch, uint32_t ahead)
{
	return ahead < ch->hold_cap || hold_grow(ch, ahead + 1) == 0;
}

bool recv_hold_reserve(struct receiver *r, struct recv_channel *ch, uint32_t ahead,
		       const struct rudp_wire_frame *f)
{
	if (!hold_room(ch, ahead))
		return false;
	if (!f->split && f->body_len <= r->payload_max && r->hold_block_cached == 0) {
		uint8_t *b = malloc(r->payload_max);

		if (!b)
			return false;
		r->hold_block_cache[r->hold_block_cached++] = b;
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

static void hold_fill(struct receiver *r, struct recv_channel *ch, struct order_hold_entry *e,
		      enum hold_kind kind, uint8_t *data, size_t len, bool block, uint32_t order_index,
		      uint8_t reliability)
{
	e->data = data;
	e->len = (uint32_t)len;
	e->order_index = order_index;
	e->kind = (uint8_t)kind;
	e->reliability = reliability;
	e->block = block;
	ch->held++;
	r->held_bytes += len;
}

/* Stores a copy of a message (or a skip marker when data is NULL) at order
 * index expected + ahead, ahead > 0. False when it cannot be stored. */
static bool hold_put(struct receiver *r, struct recv_channel *ch, uint32_t order_index, uint32_t ahead,
		     const uint8_t *data, size_t len, uint8_t reliability)
{
	struct order_hold_entry *e = hold_entry(ch, order_index, ahead);
	uint8_t *copy;
	bool block = false;

	if (!e)
		return false;
	if (!data) {
		hold_fill(r, ch, e, HOLD_SKIP, NULL, 0, false, order_index, reliability);
		return true;
	}
	copy = hold_buf_alloc(r, len, &block);
	if (!copy)
		return false;
	memcpy(copy, data, len);
	hold_fill(r, ch, e, HOLD_MESSAGE, copy, len, block, order_index, reliability);
	return true;
}

bool recv_hold_take(struct receiver *r, uint8_t *buf, size_t len, uint8_t reliability, uint8_t channel,
		    uint32_t order_index)
{
	struct recv_channel *ch;
	struct order_hold_entry *e;
	int32_t ahead;

	if (reliability != RUDP_WIRE_RELIABLE_ORDERED || !(ch = recv_channel(r, channel)))
		return false;
	ahead = rudp_u24_diff(order_index, ch->expected_order);
	if (ahead <= 0 || (uint32_t)ahead > r->max_order_hold ||
	    !(e = hold_entry(ch, order_index, (uint32_t)ahead)))
		return false;
	hold_fill(r, ch, e, HOLD_MESSAGE, buf, len, false, order_index, reliability);
	return true;
}

/* ---- ordering and sequencing ---- */

bool recv_order_next_held(struct receiver *r, uint8_t channel, struct recv_held_msg *out)
{
	struct recv_channel *ch = &r->chans[channel];

	while (ch->held > 0) {
		struct order_hold_entry *e = &ch->hold[ch->expected_order & (ch->hold_cap - 1)];
		struct order_hold_entry taken;

		if (e->kind == HOLD_EMPTY || e->order_index != ch->expected_order)
			break;
		taken = *e;
		memset(e, 0, sizeof(*e));
		ch->held--;
		r->held_bytes -= taken.len;
		ch->expected_order = rudp_u24_add(ch->expected_order, 1);
		if (taken.kind == HOLD_MESSAGE) {
			out->data = taken.data;
			out->len = taken.len;
			out->reliability = taken.reliability;
			out->block = taken.block;
			return true;
		}
	}
	return false;
}

void recv_held_done(struct receiver *r, struct recv_held_msg *m)
{
	hold_buf_free(r, m->data, m->block);
	m->data = NULL;
}

static enum recv_route order_on_message(struct receiver *r, const uint8_t *data, size_t len,
					uint8_t reliability, uint8_t channel, uint32_t order_index,
					bool connecting)
{
	/* The conn made the channel before it accepted the frame. */
	struct recv_channel *ch = recv_channel(r, channel);
	if (!ch) {
		r->frames_dropped++;
		return RECV_DROP;
	}
	int32_t ahead = rudp_u24_diff(order_index, ch->expected_order);

	if (ahead < 0) {
		/* Reliable dedup already passed it, so the peer reused an order index. */
		r->frames_dropped++;
		return RECV_DROP;
	}
	if (ahead == 0) {
		ch->expected_order = rudp_u24_add(ch->expected_order, 1);
		return RECV_DELIVER_THEN_DRAIN;
	}
	if ((uint32_t)ahead > r->max_order_hold) {
		r->frames_dropped++;
		return RECV_DROP;
	}
	if (connecting && len > 0 && rudp_wire_is_control_id(data[0])) {
		/* A connecting client defers what it cannot keep yet (split
		 * fragments, conn_reserve_early), and a busy raknet-node can
		 * queue its application's first message ahead of its 0x10 on
		 * one channel: the 0x10 waiting its turn would wait for ever.
		 * Control messages are the library's own, so one is handled
		 * now and its order index passed over (the conn reserved the
		 * marker's room); the application's messages keep their
		 * order. */
		if (!hold_put(r, ch, order_index, (uint32_t)ahead, NULL, 0, reliability)) {
			r->frames_dropped++;
			return RECV_DROP;
		}
		return RECV_DELIVER;
	}
	if (!hold_put(r, ch, order_index, (uint32_t)ahead, data, len, reliability)) {
		r->frames_dropped++;
		return RECV_DROP;
	}
	return RECV_HELD;
}

bool recv_order_skip(struct receiver *r, uint8_t channel, uint32_t order_index)
{
	struct recv_channel *ch = recv_channel(r, channel);
	if (!ch)
		return false;
	int32_t ahead = rudp_u24_diff(order_index, ch->expected_order);

	if (ahead < 0)
		return false;
	if (ahead == 0) {
		ch->expected_order = rudp_u24_add(ch->expected_order, 1);
		return true;
	}
	if ((uint32_t)ahead <= r->max_order_hold)
		hold_put(r, ch, order_index, (uint32_t)ahead, NULL, 0, RUDP_WIRE_RELIABLE_ORDERED);
	return false;
}

/* Sequenced: only ever forward. Newer means a later order index (a later
 * "epoch" of the ordered stream), or the same one with a later sequenced
 * index; RakNet peers restart sequenced indexes at each ordered message,
 * which this comparison allows. */
static enum recv_route sequenced_on_message(struct receiver *r, uint8_t channel, uint32_t order_index,
					    uint32_t sequenced_index)
{
	/* Made before a reliable one was accepted; an unreliable one whose
	 * channel cannot be made now is dropped like a late one. */
	struct recv_channel *ch = recv_channel(r, channel);
	if (!ch)
		return RECV_DROP;
	if (rudp_u24_diff(order_index, ch->expected_order) < 0)
		return RECV_DROP;
	if (ch->have_sequenced) {
		int32_t epoch = rudp_u24_diff(order_index, ch->last_seq_order);

		if (epoch < 0 || (epoch == 0 && rudp_u24_diff(sequenced_index, ch->last_seq_index) <= 0))
			return RECV_DROP;
	}
	ch->have_sequenced = true;
	ch->last_seq_order = order_index;
	ch->last_seq_index = sequenced_index;
	return RECV_DELIVER;
}

enum recv_route recv_route_any(struct receiver *r, const uint8_t *data, size_t len, uint8_t reliability,
			       uint8_t channel, uint32_t order_index, uint32_t sequenced_index,
			       bool connecting, uint8_t *deliver_channel)
{
	*deliver_channel = channel;
	switch (reliability) {
	case RUDP_WIRE_RELIABLE_ORDERED:
		return order_on_message(r, data, len, reliability, channel, order_index, connecting);
	case RUDP_WIRE_UNRELIABLE_SEQUENCED:
	case RUDP_WIRE_RELIABLE_SEQUENCED:
		return sequenced_on_message(r, channel, order_index, sequenced_index);
	default: *deliver_channel = 0; return RECV_DELIVER;
	}
}

void recv_hold_released_by(const struct recv_channel *ch, uint32_t *messages, uint64_t *bytes)
{
	for (uint32_t k = 1; k <= ch->held; k++) {
		uint32_t index = rudp_u24_add(ch->expected_order, k);
		const struct order_hold_entry *e = &ch->hold[index & (ch->hold_cap - 1)];

		if (e->kind == HOLD_EMPTY || e->order_index != index)
			break;
		*messages += e->kind == HOLD_MESSAGE;
		*bytes += e->len;
	}
}
