/* SPDX-License-Identifier: MIT */
/*
 * Sending: rudp_conn_send() and the calls of a send scheduler above
 * (conn.h), which turn a message into frames of the send queue (splitting
 * it when it does not fit in one datagram) with its reliable / ordered /
 * sequenced indexes, and report the room left.
 *
 * Indexes are assigned when a message is queued, not when it is first sent:
 * reliable frames then sit in the ring in reliable-index order, so the frame
 * with reliable index r is at position r - oldest_unacked, the window test is
 * a subtraction, and no per-frame lookup structure is needed.
 */
#include <string.h>

#include "conn/conn_internal.h"

/* Each queued frame also costs a record; bound how many records a budget of
 * max_queue_bytes can pin, whatever the message sizes. */
#define SENDQ_BYTES_PER_RECORD 64u
#define SENDQ_MIN_RECORDS 1024u

/* Fragments a message of len bytes takes. Most messages fit one frame, and
 * this runs several times per message: no division for them. */
static inline size_t conn_frag_count(const struct rudp_conn *c, size_t len)
{
	if (len != 0 && len <= c->frag_body_max)
		return 1;
	return (len + c->frag_body_max - 1) / c->frag_body_max;
}

void conn_send_init(struct rudp_conn *c)
{
	c->one_frame_max =
		c->frag_body_max < c->cfg.max_message_size ? c->frag_body_max : c->cfg.max_message_size;
	c->queue_max_bytes = c->cfg.max_queue_bytes;
}

uint8_t rudp_conn_effective_reliability(const struct rudp_conn *c, size_t len, uint8_t reliability)
{
	uint8_t rel = rudp_wire_plain_reliability(reliability);

	if (len > c->frag_body_max) {
		/* A lost fragment would lose the whole message; RakNet sends split
		 * unreliable messages reliably for the same reason. */
		if (rel == RUDP_WIRE_UNRELIABLE)
			rel = RUDP_WIRE_RELIABLE;
		else if (rel == RUDP_WIRE_UNRELIABLE_SEQUENCED)
			rel = RUDP_WIRE_RELIABLE_SEQUENCED;
	}
	return rel;
}

int rudp_conn_check_size(const struct rudp_conn *c, size_t len)
{
	/* In one frame and within max_message_size (max_split_count is at
	 * least 1): the send line says so, without cfg's. */
	if (len <= c->one_frame_max)
		return 0;
	size_t nfrags = conn_frag_count(c, len);

	if (len > c->cfg.max_message_size || nfrags > c->cfg.max_split_count || nfrags > UINT32_MAX)
		return RUDP_CONN_E_TOO_LARGE;
	return 0;
}

static void take_indexes(struct rudp_conn *c, uint8_t rel, uint8_t channel, struct rudp_conn_msg_indexes *ix)
{
	ix->order_index = 0;
	ix->sequenced_index = 0;
	if (!rudp_wire_is_ordered_or_sequenced(rel))
		return;
	if (rudp_wire_is_sequenced(rel)) {
		/* A sequenced message carries the channel's current order index
		 * (the next ordered message's), as RakNet does, so the receiver can
		 * tell it is not older than the ordered stream. */
		ix->sequenced_index = c->chan_write[channel].sequenced;
		c->chan_write[channel].sequenced = rudp_u24_add(c->chan_write[channel].sequenced, 1);
		ix->order_index = c->chan_write[channel].order;
	} else {
		ix->order_index = c->chan_write[channel].order;
		c->chan_write[channel].order = rudp_u24_add(c->chan_write[channel].order, 1);
	}
}

void rudp_conn_take_indexes(struct rudp_conn *c, uint8_t reliability, uint8_t channel,
			    struct rudp_conn_msg_indexes *ix)
{
	take_indexes(c, reliability, channel, ix);
	c->messages_sent++;
}

/* Room for one record on a shared body. The byte ring holds nothing of
 * it, so it is not stamped as used either (sendq_reserve would): a ring
 * idle but for shared bodies may give its pages back. */
static inline int reserve_shared_record(struct sendq *q, uint64_t now_us)
{
	if (q->frames_count < q->frames_cap)
		return 0;
	return sendq_reserve_slow(q, 1, 0, 0, now_us);
}

/* queue_frames for a message in one frame with its body in the ring (most
 * messages): the same record, written in place, with no template to clear
 * and copy. Room is reserved and the indexes taken. */
static int queue_one_frame(struct rudp_conn *c, struct sendq *q, const uint8_t *data, uint16_t len,
			   uint8_t rel, uint8_t channel, const struct rudp_conn_msg_indexes *ix,
			   const struct conn_msg_extra *extra)
{
	bool ordered = rudp_wire_is_ordered_or_sequenced(rel);
	uint32_t hdr_len = (uint32_t)rudp_wire_frame_header_len_of(rel, false);
	uint32_t reliable_index = 0;
	uint64_t deadline = 0, pos;

	/* A lifetime only for what is sent once (conn_flush.c drops it). */
	if (extra && extra->expire_us != 0 && q == &c->unrel) {
		deadline = extra->expire_us;
		if (deadline < c->unrel_expiry_min)
			c->unrel_expiry_min = deadline;
	}
	if (q == &c->rel) {
		reliable_index = c->next_reliable_index;
		c->next_reliable_index = rudp_u24_add(c->next_reliable_index, 1);
		c->rel_unsent_wire += (uint64_t)len + hdr_len;
	}
	struct sendq_frame *f = sendq_push_slot(q, data, len, &pos);
	*f = (struct sendq_frame){
		.body_pos = pos,
		.first_send_us = c->now_us, /* until sent: when queued (conn_status.c) */
		.deadline_us = deadline,
		.reliable_index = reliable_index,
		.reliability = rel,
		.sequenced_index = ordered ? ix->sequenced_index : 0,
		.channel = ordered ? channel : 0,
		.order_index = ordered ? ix->order_index : 0,
		.hdr_len = hdr_len,
		.body_len = len,
		.state = FRAME_QUEUED,
	};
	q->wire_bytes += (uint64_t)len + hdr_len;
	return 0;
}

/* rel is already effective (see rudp_conn_effective_reliability). */
static int queue_frames(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t rel, uint8_t channel,
			const struct rudp_conn_msg_indexes *ix_or_null, const struct conn_msg_extra *extra)
{
	size_t nfrags = conn_frag_count(c, len);
	struct rudp_conn_msg_indexes ix;
	struct sendq_frame tmpl;
	struct sendq *q;
	int rc;

	/* Reliable indexes must stay well inside half the 24-bit space from the
	 * oldest unacked one, or the peer could not tell new from old. */
	if ((uint64_t)c->rel.frames_count + nfrags >= (1u << 22))
		return RUDP_CONN_E_QUEUE_FULL;

	q = rudp_wire_is_reliable(rel) ? &c->rel : &c->unrel;
	/* A split message copies its fragments: sharing one body between
	 * frames of different lengths is not worth a second kind of record. */
	struct shared_body *shared = extra && nfrags == 1 ? extra->shared : NULL;
	if (shared)
		rc = reserve_shared_record(q, c->now_us);
	else
		rc = sendq_reserve(q, (uint32_t)nfrags, len, c->frag_body_max, c->now_us);
	if (rc < 0)
		return rc;

	if (ix_or_null)
		ix = *ix_or_null;
	else
		take_indexes(c, rel, channel, &ix);
	if (nfrags == 1 && !shared)
		return queue_one_frame(c, q, data, (uint16_t)len, rel, channel, &ix, extra);
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.reliability = rel;
	tmpl.state = FRAME_QUEUED;
	tmpl.first_send_us = c->now_us; /* until sent: when queued (conn_status.c) */
	if (rudp_wire_is_ordered_or_sequenced(rel)) {
		tmpl.channel = channel;
		tmpl.order_index = ix.order_index;
		tmpl.sequenced_index = ix.sequenced_index;
	}
	if (nfrags > 1) {
		tmpl.split = true;
		tmpl.split_count = (uint32_t)nfrags;
		tmpl.split_id = c->next_split_id++;
	}
	/* A lifetime only for what is sent once (conn_flush.c drops it). */
	if (extra && extra->expire_us != 0 && q == &c->unrel) {
		tmpl.deadline_us = extra->expire_us;
		if (extra->expire_us < c->unrel_expiry_min)
			c->unrel_expiry_min = extra->expire_us;
	}
	/* Every fragment of a message has the same header layout. */
	tmpl.hdr_len = (uint8_t)rudp_wire_frame_header_len_of(rel, tmpl.split);
	for (size_t i = 0; i < nfrags; i++) {
		size_t off = i * c->frag_body_max;
		size_t part = len - off < c->frag_body_max ? len - off : c->frag_body_max;

		tmpl.split_index = (uint32_t)i;
		if (rudp_wire_is_reliable(rel)) {
			tmpl.reliable_index = c->next_reliable_index;
			c->next_reliable_index = rudp_u24_add(c->next_reliable_index, 1);
		}
		if (shared)
			sendq_push_shared(q, &tmpl, shared);
		else
			sendq_push(q, &tmpl, data + off, (uint16_t)part);
	}
	if (q == &c->rel)
		c->rel_unsent_wire += (uint64_t)len + (uint64_t)nfrags * tmpl.hdr_len;
	return 0;
}

int rudp_conn_queue_indexed(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			    uint8_t channel, const struct rudp_conn_msg_indexes *ix)
{
	int rc = queue_frames(c, data, len, rudp_conn_effective_reliability(c, len, reliability), channel, ix,
			      NULL);

	if (rc == 0 && !ix)
		c->messages_sent++;
	return rc;
}

static int queue_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			 uint8_t channel, bool enforce_budget, const struct conn_msg_extra *extra)
{
	uint8_t rel = rudp_conn_effective_reliability(c, len, reliability);

	if (enforce_budget) {
		size_t nfrags = conn_frag_count(c, len);
		uint64_t queued = c->queued.body_bytes;
		uint64_t records = c->queued.records;
		uint64_t max_records = c->queue_max_bytes / SENDQ_BYTES_PER_RECORD + SENDQ_MIN_RECORDS;
		int rc = rudp_conn_check_size(c, len);

		if (rc < 0)
			return rc;
		if (queued + len > c->queue_max_bytes || records + nfrags > max_records)
			return RUDP_CONN_E_QUEUE_FULL;
	}
	return queue_frames(c, data, len, rel, channel, NULL, extra);
}

int conn_queue_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
		       uint8_t channel, bool enforce_budget)
{
	return queue_message(c, data, len, reliability, channel, enforce_budget, NULL);
}

int rudp_conn_check_send(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			 uint8_t channel, uint64_t now_us)
{
	uint8_t rel;

	if (now_us > c->now_us)
		c->now_us = now_us;
	if (c->state != RUDP_CONN_STATE_CONNECTED)
		return RUDP_CONN_E_STATE;
	if (!data || len == 0 || reliability > RUDP_WIRE_RELIABLE_ORDERED_ACK_RECEIPT)
		return RUDP_CONN_E_ARG;
	rel = rudp_wire_plain_reliability(reliability);
	if (rudp_wire_is_ordered_or_sequenced(rel) && channel >= CONN_CHANNELS)
		return RUDP_CONN_E_ARG;
	/* The peer's conn would consume such a message as a control message. */
	if (rudp_wire_is_control_id(data[0]))
		return RUDP_CONN_E_ARG;
	return 0;
}

int rudp_conn_check_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			    uint8_t channel, uint8_t priority, uint64_t now_us, struct rudp_conn_send_view *v)
{
	int rc = rudp_conn_check_send(c, data, len, reliability, channel, now_us);

	if (rc == 0 && priority >= RUDP_CONN_PRIORITIES)
		rc = RUDP_CONN_E_ARG;
	if (rc == 0)
		rc = rudp_conn_check_size(c, len);
	if (rc < 0)
		return rc;
	uint8_t rel = rudp_conn_effective_reliability(c, len, reliability);
	size_t nfrags = conn_frag_count(c, len);
	uint64_t queued = c->rel.body_bytes + c->unrel.body_bytes;

	v->reliability = rel;
	v->channel = rudp_wire_is_ordered_or_sequenced(rel) ? channel : 0;
	v->frames = (uint32_t)nfrags;
	v->encoded_bytes = len + nfrags * rudp_wire_frame_header_len_of(rel, nfrags > 1);
	/* The copied body and a record per fragment (sendq_memory_bytes). */
	v->memory_bytes = (uint64_t)len + (uint64_t)nfrags * sizeof(struct sendq_frame);
	v->queue_room = queued < c->cfg.max_queue_bytes ? c->cfg.max_queue_bytes - queued : 0;
	rudp_conn_get_window_room(c, &v->room);
	return 0;
}

static int send_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			uint8_t channel, uint8_t priority, uint64_t now_us,
			const struct conn_msg_extra *extra)
{
	uint8_t rel = rudp_wire_plain_reliability(reliability);
	int rc = rudp_conn_check_send(c, data, len, reliability, channel, now_us);

	/* Priority and lifetime are checked with the other arguments, after
	 * the state. */
	if (rc == 0 && priority >= RUDP_CONN_PRIORITIES)
		rc = RUDP_CONN_E_ARG;
	if (rc == 0 && extra && extra->expire_us != 0 && rudp_wire_is_reliable(rel))
		rc = RUDP_CONN_E_ARG;
	if (rc < 0)
		return rc;
	if (!rudp_wire_is_ordered_or_sequenced(rel))
		channel = 0;
	rc = queue_message(c, data, len, rel, channel, true, extra);
	if (rc == 0)
		c->messages_sent++;
	return rc;
}

int rudp_conn_send_ex(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
		      uint8_t channel, uint8_t priority, uint64_t now_us)
{
	return send_message(c, data, len, reliability, channel, priority, now_us, NULL);
}

int rudp_conn_send_expiring(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			    uint8_t channel, uint8_t priority, uint64_t now_us, uint64_t expire_us)
{
	struct conn_msg_extra extra = {.expire_us = expire_us, .shared = NULL};

	return send_message(c, data, len, reliability, channel, priority, now_us, &extra);
}

int rudp_conn_send_checked(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			   uint8_t channel, uint64_t now_us, uint64_t expire_us, uint64_t *grew)
{
	struct conn_msg_extra extra = {.expire_us = expire_us, .shared = NULL};
	int rc;

	/* send_message's order: the clock, then the state. */
	if (now_us > c->now_us)
		c->now_us = now_us;
	if (c->state != RUDP_CONN_STATE_CONNECTED)
		return RUDP_CONN_E_STATE;
	/* The channel is read for ordered and sequenced kinds only. */
	rc = queue_message(c, data, len, reliability, channel, true, &extra);
	if (rc == 0) {
		c->messages_sent++;
		/* The copied body and a record per fragment (sendq_memory_bytes). */
		*grew = (uint64_t)len + (uint64_t)conn_frag_count(c, len) * sizeof(struct sendq_frame);
	}
	return rc;
}

int rudp_conn_send_shared(struct rudp_conn *c, struct shared_body *body, uint8_t reliability, uint8_t channel,
			  uint8_t priority, uint64_t now_us, uint64_t expire_us)
{
	struct conn_msg_extra extra = {.expire_us = expire_us, .shared = body};

	return send_message(c, body->bytes, body->len, reliability, channel, priority, now_us, &extra);
}

int rudp_conn_shared_send_init(struct rudp_conn_shared_send *m, struct shared_body *body, uint8_t reliability,
			       uint8_t channel, uint8_t priority, uint64_t now_us, uint64_t expire_us)
{
	uint8_t rel = rudp_wire_plain_reliability(reliability);

	/* send_message's argument checks, made once. */
	if (!body || body->len == 0 || reliability > RUDP_WIRE_RELIABLE_ORDERED_ACK_RECEIPT ||
	    (rudp_wire_is_ordered_or_sequenced(rel) && channel >= CONN_CHANNELS) ||
	    rudp_wire_is_control_id(body->bytes[0]) || priority >= RUDP_CONN_PRIORITIES ||
	    (expire_us != 0 && rudp_wire_is_reliable(rel)))
		return RUDP_CONN_E_ARG;
	m->body = body;
	m->now_us = now_us;
	m->expire_us = expire_us;
	m->len = body->len;
	m->reliability = reliability;
	m->rel = rel;
	m->channel = rudp_wire_is_ordered_or_sequenced(rel) ? channel : 0;
	m->priority = priority;
	m->hdr_len = (uint8_t)rudp_wire_frame_header_len_of(rel, false);
	m->reliable = rudp_wire_is_reliable(rel);
	return 0;
}

/* queue_message and queue_frames for a message in one frame, in the same
 * order of checks and with the same effects, minus what m holds already. */
int rudp_conn_send_shared_prepared(struct rudp_conn *c, const struct rudp_conn_shared_send *m, uint64_t *grew)
{
	uint32_t len = m->len;

	/* The state first: a conn not connected is left as it is. */
	if (c->state != RUDP_CONN_STATE_CONNECTED)
		return RUDP_CONN_E_STATE;
	if (m->now_us > c->now_us)
		c->now_us = m->now_us;
	/* A message to split is copied (queue_frames), and one too large is
	 * refused there: the general path. */
	if (len > c->one_frame_max) {
		uint64_t before = rudp_conn_memory_bytes(c);
		int rc = rudp_conn_send_shared(c, m->body, m->reliability, m->channel, m->priority, m->now_us,
					       m->expire_us);

		*grew = rudp_conn_memory_bytes(c) - before;
		return rc;
	}
	/* One fragment: max_split_count is at least 1 (conn.c clamps it). */
	uint64_t queued = c->queued.body_bytes;
	uint64_t records = c->queued.records;
	uint64_t max_records = c->queue_max_bytes / SENDQ_BYTES_PER_RECORD + SENDQ_MIN_RECORDS;
	if (queued + len > c->queue_max_bytes || records + 1 > max_records)
		return RUDP_CONN_E_QUEUE_FULL;
	/* queue_frames' bound on reliable records, whatever the queue; the
	 * reliable queue's own line is read only when the total comes near. */
	if (records + 1 >= (1u << 22) && (uint64_t)c->rel.frames_count + 1 >= (1u << 22))
		return RUDP_CONN_E_QUEUE_FULL;

	struct sendq *q = m->reliable ? &c->rel : &c->unrel;
	int rc = reserve_shared_record(q, c->now_us);
	if (rc < 0)
		return rc;
	struct rudp_conn_msg_indexes ix;
	take_indexes(c, m->rel, m->channel, &ix);
	uint64_t deadline = 0;
	if (m->expire_us != 0 && !m->reliable) {
		deadline = m->expire_us;
		if (deadline < c->unrel_expiry_min)
			c->unrel_expiry_min = deadline;
	}
	uint32_t reliable_index = 0;
	if (m->reliable) {
		reliable_index = c->next_reliable_index;
		c->next_reliable_index = rudp_u24_add(c->next_reliable_index, 1);
		c->rel_unsent_wire += (uint64_t)len + m->hdr_len;
	}
	/* Written in place: no template to clear and copy. */
	*sendq_push_shared_slot(q, m->body) = (struct sendq_frame){
		.body_pos = q->ring.head,
		.first_send_us = c->now_us, /* until sent: when queued (conn_status.c) */
		.deadline_us = deadline,
		.reliable_index = reliable_index,
		.sequenced_index = ix.sequenced_index,
		.order_index = ix.order_index,
		.body_len = (uint16_t)len,
		.reliability = m->rel,
		.channel = m->channel,
		.state = FRAME_QUEUED,
		.hdr_len = m->hdr_len,
		.shared = m->body,
	};
	q->wire_bytes += (uint64_t)len + m->hdr_len;
	c->messages_sent++;
	/* The body is its pool's: this conn holds one more record. */
	*grew = sizeof(struct sendq_frame);
	return 0;
}

int rudp_conn_send(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel,
		   uint64_t now_us)
{
	return rudp_conn_send_ex(c, data, len, reliability, channel, RUDP_CONN_PRIO_MEDIUM, now_us);
}

void rudp_conn_prefetch_send(const struct rudp_conn *lines_of, const struct rudp_conn *record_of,
			     const struct rudp_conn_shared_send *m)
{
	const struct rudp_conn *c = lines_of;

	if (c) {
		/* What rudp_conn_send_shared_prepared reads and writes, by line
		 * (conn_internal.h): the send fields with channel 0, the chosen
		 * queue's first line, and a channel past 0's indexes. */
		__builtin_prefetch(&c->state, 1);
		__builtin_prefetch(m->reliable ? &c->rel : &c->unrel, 1);
		if (m->channel > 0)
			__builtin_prefetch(&c->chan_write[m->channel & (CONN_CHANNELS - 1)], 1);
	}
	c = record_of;
	if (c) {
		const struct sendq *q = m->reliable ? &c->rel : &c->unrel;

		/* A record is one line (sendq.h). */
		if (q->frames_cap != 0)
			__builtin_prefetch(
				&q->frames[(q->frames_head + q->frames_count) & (q->frames_cap - 1)], 1);
	}
}

/* ---- the room a send scheduler above asks for (conn.h) ---- */

uint64_t rudp_conn_send_memory_bytes(const struct rudp_conn *c)
{
	return sendq_memory_bytes(&c->rel) + sendq_memory_bytes(&c->unrel);
}

uint32_t rudp_conn_window_frames(const struct rudp_conn *c)
{
	return c->cfg.window_frames;
}

uint32_t rudp_conn_window_frames_used(const struct rudp_conn *c)
{
	return c->rel.frames_count;
}

uint64_t rudp_conn_reliable_bytes(const struct rudp_conn *c)
{
	return c->rel.wire_bytes;
}

uint64_t rudp_conn_reliable_unsent_bytes(const struct rudp_conn *c)
{
	return c->rel_unsent_wire;
}

void rudp_conn_get_window_room(const struct rudp_conn *c, struct rudp_conn_window_room *r)
{
	r->reliable_bytes = c->rel.wire_bytes;
	r->reliable_unsent_bytes = c->rel_unsent_wire;
	r->window_frames = c->cfg.window_frames;
	r->window_frames_used = c->rel.frames_count;
}

uint64_t rudp_conn_unreliable_bytes(const struct rudp_conn *c)
{
	return c->unrel.wire_bytes;
}

uint64_t rudp_conn_queue_room(const struct rudp_conn *c)
{
	uint64_t queued = c->rel.body_bytes + c->unrel.body_bytes;

	return queued < c->cfg.max_queue_bytes ? c->cfg.max_queue_bytes - queued : 0;
}

/* With RUDP_CC_RATE the AIMD window is off and the rate controller's
 * window is the room: a scheduler that asked the AIMD one would queue
 * without bound behind the pacing. Encoded frame bytes stand for the
 * datagram bytes the rate window counts (a few header bytes apart). */
bool rudp_conn_congestion_allows(const struct rudp_conn *c, uint64_t bytes)
{
	if (c->rate_on)
		return cc_rate_window_allows(&c->rate, bytes);
	return cc_would_send(&c->cc, (uint32_t)bytes);
}

bool rudp_conn_congestion_half_free(const struct rudp_conn *c, uint64_t bytes)
{
	if (c->rate_on)
		return cc_rate_window_half_free(&c->rate, c->rel_unsent_wire + bytes);
	return cc_leaves_half_free(&c->cc, c->rel_unsent_wire, bytes);
}

/* The quantum beyond the budget (what the pacing lets go in one burst:
 * a millisecond at its rate, at least two datagrams) keeps frames queued
 * after the flush that sends the budget, so the conn's deadline holds the
 * pacer's next send time (an empty queue would wait for the next ACK) and
 * that send finds a burst's worth. */
uint64_t rudp_conn_pacing_room(const struct rudp_conn *c, uint64_t now_us)
{
	if (!c->rate_on)
		return UINT64_MAX;
	return cc_rate_send_allowance(&c->rate, now_us) + c->rate.quantum_cap / 1000000u;
}

uint32_t rudp_conn_message_frames(const struct rudp_conn *c, size_t len)
{
	return (uint32_t)conn_frag_count(c, len);
}

uint64_t rudp_conn_message_encoded_bytes(const struct rudp_conn *c, size_t len, uint8_t reliability)
{
	uint64_t nfrags = conn_frag_count(c, len);

	return len +
	       nfrags * rudp_wire_frame_header_len_of(rudp_wire_plain_reliability(reliability), nfrags > 1);
}
