/* SPDX-License-Identifier: MIT */
/*
 * Receive and ordering: reliable-index dedup, the order channels with their
 * hold of messages that came ahead of their turn, and sequencing. A part of
 * the conn (conn_internal.h): it owns struct receiver and calls no other
 * part; it tells the conn what to deliver (enum recv_route, recv_order_next)
 * and the conn delivers it.
 */
#ifndef RUDP_CONN_RECV_H
#define RUDP_CONN_RECV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

/* Which reliable indexes arrived: bit i of the ring is index (base + k) for the
 * k with (base + k) & (nbits - 1) == i, for k < nbits; indexes from base +
 * nbits to base + window are accepted by growing the ring first. */
struct recv_dedup {
	uint64_t *bits;
	uint32_t nbits; /* power of two; grows on demand up to the first >= window */
	uint32_t window; /* cfg.recv_window */
	uint32_t base; /* lowest reliable index not received yet */
	uint32_t highest_plus_one; /* one past the highest received; == base when no gaps */
};

enum hold_kind {
	HOLD_EMPTY = 0,
	HOLD_MESSAGE,
	HOLD_SKIP, /* an order index whose message was refused: deliver nothing, move on */
};

struct order_hold_entry {
	uint8_t *data;
	uint32_t len;
	uint32_t order_index;
	uint8_t kind; /* enum hold_kind */
	uint8_t reliability;
	/* data is a payload_max block, recycled through hold_block_cache;
	 * otherwise a buffer of its own (a large message, or a reassembled
	 * one handed over whole) */
	bool block;
};

struct recv_channel {
	uint32_t expected_order; /* next order index to deliver */
	struct order_hold_entry *hold; /* indexed by order_index & (hold_cap - 1) */
	uint32_t hold_cap;
	uint32_t held;
	/* last delivered sequenced message: (order index, sequenced index) */
	bool have_sequenced;
	uint32_t last_seq_order;
	uint32_t last_seq_index;
};

struct receiver {
	struct recv_dedup dedup;
	/* Order channels 0 .. chans_count - 1, made when a message first
	 * arrives on a channel (most applications use one of the 32: the
	 * full array was 1.3 KiB of every connection's 3.2). Channels not
	 * made yet expect chans_first_order (0, or what a test set). */
	struct recv_channel *chans;
	uint32_t chans_count;
	uint32_t chans_first_order;
	uint8_t **hold_block_cache; /* freed payload_max-sized hold buffers */
	uint32_t hold_block_cached;
	uint32_t payload_max; /* a hold block's size */
	uint32_t max_order_hold; /* cfg.max_order_hold */
	uint64_t held_bytes; /* message bytes held for their turn, all channels */
	uint64_t frames_dropped; /* messages dropped as bad (the conn's stats add them) */
};

enum dedup_result {
	DEDUP_NEW,
	DEDUP_DUPLICATE,
	DEDUP_AHEAD, /* beyond the receive window */
};

/* 0 or RUDP_CONN_E_NOMEM (then recv_free it). */
int recv_init(struct receiver *r, uint32_t recv_window, uint32_t payload_max, uint32_t max_order_hold);
void recv_free(struct receiver *r);

/* The receive path runs the dedup, channel and drain steps below for every
 * frame: their common cases are inline, so the split from the conn adds
 * no call per frame; the rare ones (growing, making a channel, held
 * messages) are calls. */

static inline bool recv_dedup_bit(const struct recv_dedup *d, uint32_t ri)
{
	uint32_t i = ri & (d->nbits - 1);

	return (d->bits[i / 64] >> (i % 64)) & 1u;
}

/* Whether reliable index ri is new, a duplicate, or beyond the window. */
static inline enum dedup_result recv_dedup_check(const struct receiver *r, uint32_t ri)
{
	const struct recv_dedup *d = &r->dedup;
	int32_t ahead = rudp_u24_diff(ri, d->base);

	if (ahead < 0)
		return DEDUP_DUPLICATE;
	if ((uint32_t)ahead >= d->window)
		return DEDUP_AHEAD;
	/* Beyond the ring: never received (every mark is preceded by
	 * recv_dedup_make_room), and its bit would alias a nearer index. */
	if ((uint32_t)ahead >= d->nbits)
		return DEDUP_NEW;
	return recv_dedup_bit(d, ri) ? DEDUP_DUPLICATE : DEDUP_NEW;
}

bool recv_dedup_grow(struct receiver *r, uint32_t ri);
/* Room in the dedup ring for ri (checked DEDUP_NEW); false when out of
 * memory (the frame is then treated as too far ahead: not acknowledged,
 * so the peer sends it again). */
static inline bool recv_dedup_make_room(struct receiver *r, uint32_t ri)
{
	return (uint32_t)rudp_u24_diff(ri, r->dedup.base) < r->dedup.nbits || recv_dedup_grow(r, ri);
}

/* ri counts as received from now on (room made). */
static inline void recv_dedup_mark(struct receiver *r, uint32_t ri)
{
	struct recv_dedup *d = &r->dedup;
	uint32_t i = ri & (d->nbits - 1);

	d->bits[i / 64] |= (uint64_t)1 << (i % 64);
	if (rudp_u24_diff(rudp_u24_add(ri, 1), d->highest_plus_one) > 0)
		d->highest_plus_one = rudp_u24_add(ri, 1);
	while (recv_dedup_bit(d, d->base)) {
		i = d->base & (d->nbits - 1);
		d->bits[i / 64] &= ~((uint64_t)1 << (i % 64));
		d->base = rudp_u24_add(d->base, 1);
	}
}
/* All reliable frames the peer sent so far are in (no holes). */
static inline bool recv_no_reliable_gaps(const struct receiver *r)
{
	return r->dedup.base == r->dedup.highest_plus_one;
}

struct recv_channel *recv_channel_make(struct receiver *r, uint8_t ch);
/* The receive state of order channel ch, made (with those below it) on
 * first use; NULL when out of memory or ch is not a channel. Pointers stay
 * valid until the next call that makes a channel. */
static inline struct recv_channel *recv_channel(struct receiver *r, uint8_t ch)
{
	return ch < r->chans_count ? &r->chans[ch] : recv_channel_make(r, ch);
}
/* Before reliable ordered frame f, ahead > 0 of its channel's turn, counts
 * as received: room to hold its message. False when out of memory. */
bool recv_hold_reserve(struct receiver *r, struct recv_channel *ch, uint32_t ahead,
		       const struct rudp_wire_frame *f);
void recv_hold_released_by(const struct recv_channel *ch, uint32_t *messages, uint64_t *bytes);
/* What ordered frame f in its turn on ch releases from the hold with it:
 * adds those messages and their bytes. */
static inline void recv_hold_released_with(const struct recv_channel *ch, const struct rudp_wire_frame *f,
					   uint32_t *messages, uint64_t *bytes)
{
	if (f->reliability == RUDP_WIRE_RELIABLE_ORDERED && ch->held > 0 &&
	    f->order_index == ch->expected_order)
		recv_hold_released_by(ch, messages, bytes);
}
/* A reassembled reliable ordered message that must wait for earlier ones:
 * the hold takes buf itself (a heap buffer, freed with the entry) rather
 * than a copy. False when it is not such a message (route it as usual). */
bool recv_hold_take(struct receiver *r, uint8_t *buf, size_t len, uint8_t reliability, uint8_t channel,
		    uint32_t order_index);

/* What to do with a complete message (recv_route). */
enum recv_route {
	RECV_DROP, /* nothing to deliver (a stale sequenced one, or dropped and counted) */
	RECV_DELIVER, /* deliver it now */
	/* Ordered, in its turn: deliver it, then what recv_order_next gives. */
	RECV_DELIVER_THEN_DRAIN,
	RECV_HELD, /* kept for its turn */
};
/* Routes a complete message by reliability: ordering, sequencing.
 * connecting: the conn is still in its handshake (a control message ahead
 * of its turn is then delivered at once, its index passed over). A message
 * delivered goes on channel *deliver_channel (0 unless ordered or
 * sequenced). */
enum recv_route recv_route_any(struct receiver *r, const uint8_t *data, size_t len, uint8_t reliability,
			       uint8_t channel, uint32_t order_index, uint32_t sequenced_index,
			       bool connecting, uint8_t *deliver_channel);
/* The common message, reliable ordered in its turn on a channel already
 * made, is routed inline; every other goes to recv_route_any. */
static inline enum recv_route recv_route(struct receiver *r, const uint8_t *data, size_t len,
					 uint8_t reliability, uint8_t channel, uint32_t order_index,
					 uint32_t sequenced_index, bool connecting, uint8_t *deliver_channel)
{
	if (reliability == RUDP_WIRE_RELIABLE_ORDERED && channel < r->chans_count &&
	    order_index == r->chans[channel].expected_order) {
		r->chans[channel].expected_order = rudp_u24_add(order_index, 1);
		*deliver_channel = channel;
		return RECV_DELIVER_THEN_DRAIN;
	}
	return recv_route_any(r, data, len, reliability, channel, order_index, sequenced_index, connecting,
			      deliver_channel);
}
/* Marks an order index as "nothing to deliver" (a refused split message).
 * True when it was the one in turn: the conn then drains (recv_order_next). */
bool recv_order_skip(struct receiver *r, uint8_t channel, uint32_t order_index);

/* A held message come out of the hold (recv_order_next). */
struct recv_held_msg {
	uint8_t *data;
	uint32_t len;
	uint8_t reliability;
	bool block;
};
bool recv_order_next_held(struct receiver *r, uint8_t channel, struct recv_held_msg *out);
/* The next held message of channel (made) now in turn, passing over skip
 * markers; false when there is none. Deliver it, then recv_held_done. */
static inline bool recv_order_next(struct receiver *r, uint8_t channel, struct recv_held_msg *out)
{
	return r->chans[channel].held > 0 && recv_order_next_held(r, channel, out);
}
/* Whether channel (made) holds messages that came ahead of their turn. */
static inline bool recv_holds(const struct receiver *r, uint8_t channel)
{
	return r->chans[channel].held > 0;
}
/* Frees (or keeps for reuse) a delivered held message's buffer. */
void recv_held_done(struct receiver *r, struct recv_held_msg *m);
/* Bytes of the messages held for their turn (the conn's memory gauge):
 * kept as they come and go, O(1). */
static inline uint64_t recv_held_bytes(const struct receiver *r)
{
	return r->held_bytes;
}

#endif
