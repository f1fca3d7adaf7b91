/* SPDX-License-Identifier: MIT */
/*
 * Event queue. Message bytes are copied into one growable ring of bodies
 * (common/body_ring.h), kept as positions (so growth may move the block),
 * and released in bulk at the start of the next service call: the
 * application gets plain pointers that stay valid until then, with no
 * allocation per message once the ring has grown.
 *
 * Why a ring: a host whose application reads more slowly than messages
 * arrive (a busy server) always has events queued, so the oldest bodies
 * are released while new ones are added behind them. A ring reuses the
 * released room at its start; an arena that only appends grows to about
 * twice what it holds, all of it resident.
 */
#include <stdlib.h>
#include <string.h>

#include "common/body_ring.h"
#include "host_internal.h"

void event_queue_init(struct event_queue *q, uint32_t max)
{
	memset(q, 0, sizeof(*q));
	q->max = max;
}

void event_queue_free(struct event_queue *q)
{
	free(q->items);
	body_ring_free(&q->arena);
	memset(q, 0, sizeof(*q));
}

/* How often an empty queue looks at whether its arena and event array can
 * shrink, and the least each keeps. Why: a burst the application reads
 * slowly grows the arena to what it held at once (up to max_pending_events
 * messages), and without this that stays resident for the host's life. Each shrinks to what the busiest
 * moment since the last look needed, not to the floor, so a host that is
 * steadily busy keeps its working size and pays no page faults or system
 * calls for it; one that went quiet shrinks within two periods. */
#define EVENT_QUEUE_TRIM_US 1000000u
#define EVENT_ARENA_KEEP BODY_RING_KEEP
#define EVENT_ITEMS_KEEP 64u

/* The queue is empty: nothing in the arena or the array is live. */
static void event_queue_trim(struct event_queue *q, uint64_t now_us)
{
	if (now_us - q->trim_checked_us < EVENT_QUEUE_TRIM_US)
		return;
	uint64_t bytes = EVENT_ARENA_KEEP;
	while (bytes < q->arena_peak)
		bytes *= 2;
	if (bytes < q->arena.cap) {
		/* The block stays (growing again is in place); its pages past
		 * the kept size go back to the system. */
		body_ring_release_range(q->arena.buf + bytes,
					q->arena.buf + q->arena.block - BODY_RING_ALLOC_META);
		q->arena.cap = bytes;
	}
	uint32_t items = EVENT_ITEMS_KEEP;
	while (items < q->count_peak)
		items *= 2;
	/* Only a fourfold excess: the array is copied when it grows again. */
	if ((uint64_t)items * 4 <= q->cap) {
		struct pending_event *smaller = realloc(q->items, items * sizeof(*smaller));
		if (smaller) {
			q->items = smaller;
			q->cap = items;
			q->head = 0;
		}
	}
	q->arena_peak = 0;
	q->count_peak = 0;
	q->trim_checked_us = now_us;
}

void event_queue_release(struct event_queue *q, uint64_t now_us)
{
	if (q->count == 0) {
		/* Empty: the next body starts at the block's beginning, so a
		 * host that reads everything each call touches only what one
		 * call holds. */
		body_ring_reset(&q->arena);
		event_queue_trim(q, now_us);
		return;
	}
	/* Data before the oldest queued body belonged to returned events. */
	q->arena.tail = q->arena.head;
	for (uint32_t i = 0; i < q->count; i++) {
		const struct pending_event *e = &q->items[(q->head + i) & (q->cap - 1)];
		if (e->len) {
			q->arena.tail = e->data_pos;
			break;
		}
	}
}

static int grow_items(struct event_queue *q)
{
	/* Starts small and doubles, like the arena: a client host sees a
	 * window's worth of events per call, a busy server grows in a few
	 * steps (a copy of the queued entries each time, never per event). */
	uint32_t cap = q->cap ? q->cap * 2 : 16;
	struct pending_event *items = malloc(cap * sizeof(*items));
	if (!items)
		return RUDP_E_NOMEM;
	for (uint32_t i = 0; i < q->count; i++)
		items[i] = q->items[(q->head + i) & (q->cap - 1)];
	free(q->items);
	q->items = items;
	q->cap = cap;
	q->head = 0;
	return 0;
}

/* Grows the arena for a body of len bytes that does not fit in the room
 * the released bodies left (event_queue_arena_fits): by the steps of
 * common/body_ring.h, to hold what it holds plus the body twice (it may
 * skip up to one body at the ring's end). */
static int arena_grow(struct event_queue *q, uint64_t len)
{
	struct body_ring *r = &q->arena;
	uint64_t base;

	if (body_ring_grow(r, body_ring_cap_for(r->head - r->tail + 2 * len), 0, &base) != 0)
		return RUDP_E_NOMEM;
	for (uint32_t i = 0; i < q->count; i++) {
		struct pending_event *e = &q->items[(q->head + i) & (q->cap - 1)];
		if (e->len)
			e->data_pos -= base;
	}
	return 0;
}

/* Bodies of `bytes` in all fit once a single body of that size does: they
 * go in one after another where it would have gone, the first perhaps at
 * the end of the ring and the rest, after one skip, at its start. */
int event_queue_grow(struct event_queue *q, uint32_t events, uint64_t bytes)
{
	while (q->cap - q->count < events) {
		if (grow_items(q) != 0)
			return RUDP_E_NOMEM;
	}
	return bytes && !event_queue_arena_fits(q, bytes) ? arena_grow(q, bytes) : 0;
}

/* Copies an event's body of len > 0 bytes into the arena; 0 with its
 * position in *pos, or RUDP_E_NOMEM (nothing changed). */
static inline int push_body(struct event_queue *q, const uint8_t *data, uint64_t len, uint64_t *pos)
{
	if (!event_queue_arena_fits(q, len) && arena_grow(q, len) != 0)
		return RUDP_E_NOMEM;
	*pos = body_ring_push(&q->arena, data, len);
	q->bytes += len;
	if (q->bytes > q->bytes_peak)
		q->bytes_peak = q->bytes;
	if (q->arena.head - q->arena.tail > q->arena_peak)
		q->arena_peak = q->arena.head - q->arena.tail;
	return 0;
}

/* The slot of the next event (room made), counted in. */
static inline struct pending_event *push_slot(struct event_queue *q)
{
	struct pending_event *slot = &q->items[(q->head + q->count) & (q->cap - 1)];

	q->count++;
	if (q->count > q->count_peak)
		q->count_peak = q->count;
	return slot;
}

int event_queue_push(struct event_queue *q, const struct pending_event *e, const uint8_t *data)
{
	if (q->count == q->cap && grow_items(q) != 0)
		return RUDP_E_NOMEM;
	struct pending_event ev = *e;
	if (ev.len && push_body(q, data, ev.len, &ev.data_pos) != 0)
		return RUDP_E_NOMEM;
	*push_slot(q) = ev;
	q->non_receive += ev.type != RUDP_EVENT_RECEIVE;
	return 0;
}

int event_queue_push_receive(struct event_queue *q, struct rudp_peer *peer, const uint8_t *data, size_t len,
			     uint8_t reliability, uint8_t channel)
{
	uint64_t pos = 0;

	if (q->count == q->cap && grow_items(q) != 0)
		return RUDP_E_NOMEM;
	if (len && push_body(q, data, len, &pos) != 0)
		return RUDP_E_NOMEM;
	struct pending_event *e = push_slot(q);
	e->type = RUDP_EVENT_RECEIVE;
	e->reliability = reliability;
	e->channel = channel;
	e->head_len = 0;
	e->reason = 0;
	e->peer = peer;
	e->data_pos = pos;
	e->len = len;
	return 0;
}

/* PONG and PING_TIMEOUT (ping.c): the body's head fills the ping fields,
 * the address text follows it, and the rest is the pong data. */
static void pop_ping_head(rudp_event *o, uint8_t head_len)
{
	struct ping_event_head head;
	const uint8_t *body = o->data;
	memcpy(&head, body, sizeof(head));
	o->ping_id = head.ping_id;
	o->rtt_us = head.rtt_us;
	o->guid = head.guid;
	o->address = (const char *)body + sizeof(head);
	o->len -= head_len;
	o->data = o->len ? body + head_len : NULL;
}

int event_queue_pop(struct event_queue *q, rudp_event *out, int max)
{
	/* The ring's indexes and counts in locals, stored once at the end:
	 * the stores to out (uint8_t fields may alias anything) made the
	 * compiler load and store them again for every event. */
	const struct pending_event *items = q->items;
	const struct body_ring arena = q->arena;
	const uint32_t mask = q->cap - 1;
	uint32_t head = q->head, count = q->count, non_receive = q->non_receive;
	uint64_t bytes = q->bytes;
	int n = 0;

	while (n < max && count) {
		const struct pending_event *e = &items[head];
		rudp_event *o = &out[n++];
		o->type = e->type;
		o->peer = e->peer;
		o->data = e->len ? body_ring_at(&arena, e->data_pos) : NULL;
		o->len = e->len;
		o->reliability = e->reliability;
		o->channel = e->channel;
		o->reason = e->reason;
		o->ping_id = 0;
		o->rtt_us = 0;
		o->guid = 0;
		o->address = NULL;
		if (e->head_len)
			pop_ping_head(o, e->head_len);
		if (e->type == RUDP_EVENT_DISCONNECT)
			e->peer->event_seen = true;
		non_receive -= e->type != RUDP_EVENT_RECEIVE;
		bytes -= e->len;
		head = (head + 1) & mask;
		count--;
	}
	q->head = head;
	q->count = count;
	q->non_receive = non_receive;
	q->bytes = bytes;
	return n;
}

void event_queue_forget_peer(struct event_queue *q, const struct rudp_peer *p)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < q->count; i++) {
		struct pending_event e = q->items[(q->head + i) & (q->cap - 1)];
		if (e.peer != p) {
			q->items[(q->head + kept++) & (q->cap - 1)] = e;
		} else {
			q->non_receive -= e.type != RUDP_EVENT_RECEIVE;
			q->bytes -= e.len;
		}
	}
	q->count = kept;
}
