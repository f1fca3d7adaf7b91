/* SPDX-License-Identifier: MIT */
/*
 * The send queue: frame records and their bodies in a byte ring, in queue
 * order. A part of the conn (conn_internal.h): it owns struct sendq and
 * calls no other part. The frame record (struct sendq_frame) is also what
 * the loss and RTT engine (loss.h) keeps its per-frame state in, through
 * the inline accessors below.
 */
#ifndef RUDP_CONN_SENDQ_H
#define RUDP_CONN_SENDQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/body_ring.h"
#include "common/shared_body.h"

enum sendq_frame_state {
	FRAME_QUEUED, /* never sent */
	FRAME_IN_FLIGHT, /* sent, waiting for an ACK */
	FRAME_NACKED, /* sent, peer reported its datagram missing: resend at next flush */
	FRAME_ACKED, /* done; stays in the ring until everything older is done too */
};

/* A record is one cache line, and the record array starts on one
 * (sendq.c), so queueing a message writes one line of it: a server
 * sending to many peers in a row (rudp_send_many) waits for each. Hence
 * the wire's 24-bit numbers each share a word with a byte-sized field,
 * and a shared body's pointer the words of a split frame's numbers. */
#define SENDQ_FRAME_ALIGN 64u

struct sendq_frame {
	uint64_t body_pos; /* position of the body in the queue's byte ring */
	uint64_t first_send_us; /* for "reliable data never acked" timeouts; while queued: when queued */
	uint64_t last_send_us;
	/* Reliable: retransmit when still unacked at this time. Unreliable:
	 * drop when still unsent at this time (a lifetime); 0: never. */
	uint64_t deadline_us;
	uint32_t reliable_index : 24;
	uint32_t reliability : 8;
	uint32_t sequenced_index : 24;
	uint32_t channel : 8;
	uint32_t order_index : 24;
	uint32_t hdr_len : 8; /* encoded frame header bytes: body_len + hdr_len is its size on the wire */
	uint32_t last_dgram_seq : 24; /* the datagram it was last sent in: ACKs name datagrams */
	uint32_t transmissions : 8; /* saturates at 255 */
	union {
		/* split: which fragment of how many (a frame not split has
		 * other bits here; the encoder reads these only when split) */
		struct {
			uint32_t split_count;
			uint32_t split_index;
		};
		/* not split: not NULL when the body is this shared one
		 * (rudp_send_many), not in the ring; body_pos is then the
		 * ring's head when it was queued, so the ring's tail still
		 * moves forward frame by frame. Read it through
		 * sendq_frame_shared. */
		struct shared_body *shared;
	};
	uint16_t split_id;
	uint16_t body_len;
	uint8_t state; /* enum sendq_frame_state */
	uint8_t backoff; /* RTO doublings so far */
	uint8_t resend_why; /* enum conn_resend_why (loss.h), while FRAME_NACKED */
	bool split;
};
_Static_assert(sizeof(struct sendq_frame) == SENDQ_FRAME_ALIGN, "a frame record is one cache line");

/* The shared body of f, NULL when its body is in the ring. */
static inline struct shared_body *sendq_frame_shared(const struct sendq_frame *f)
{
	return f->split ? NULL : f->shared;
}

/* What the queues of one owner (a conn's two) hold together, kept by each
 * queue as it changes: a send checks its owner's queue budget here
 * without reading the other queue's line. */
struct sendq_totals {
	uint64_t body_bytes; /* sum of the queues' body_bytes */
	uint64_t records; /* sum of their frames_count */
};

/*
 * A FIFO of frame records plus a byte ring holding their bodies in the same
 * order. Positions in the byte ring grow forever (uint64); the physical
 * offset is pos & (cap - 1). A body never wraps: when it would, the ring skips
 * to the start, and the skipped bytes are freed with the frame before them.
 * Releasing the oldest frame moves the tail to the next frame's body, so the
 * memory only ever comes back in FIFO order, as the reliable window needs.
 */
struct sendq {
	/* What a send of a shared body reads and writes, the ring's head
	 * with it (its first field): the first 56 bytes, one cache line for
	 * a queue that starts on one (conn_internal.h). */
	struct sendq_frame *frames; /* in frames_block, at its first SENDQ_FRAME_ALIGN boundary */
	uint32_t frames_cap; /* power of two */
	uint32_t frames_head;
	uint32_t frames_count;
	uint64_t body_bytes; /* sum of body_len of the frames held */
	uint64_t wire_bytes; /* the same with frame headers: what the frames take on the wire */
	uint64_t shared_bytes; /* of body_bytes, the bodies of frames on a shared body */
	struct sendq_totals *totals; /* given to sendq_init */
	struct body_ring ring; /* the bodies; its times are conn time (sendq_trim_idle) */
	void *frames_block; /* what was allocated for frames, to free */
};
_Static_assert(offsetof(struct sendq, ring.head) + sizeof(uint64_t) <= SENDQ_FRAME_ALIGN,
	       "a send's fields of the queue fit in one line");

/* An empty queue whose changes are also counted in totals (shared with
 * other queues; not NULL). */
void sendq_init(struct sendq *q, struct sendq_totals *totals);
void sendq_free(struct sendq *q);
int sendq_reserve_slow(struct sendq *q, uint32_t nframes, uint64_t nbytes, uint32_t max_body,
		       uint64_t now_us);
/* Makes room for nframes more records and nbytes more body bytes split in
 * bodies of at most max_body; 0 or RUDP_CONN_E_NOMEM (nothing changed). A
 * growth of the body ring is stamped with now_us (sendq_trim_idle). Inline
 * for the common case, room enough already: it runs for every message. */
static inline int sendq_reserve(struct sendq *q, uint32_t nframes, uint64_t nbytes, uint32_t max_body,
				uint64_t now_us)
{
	body_ring_mark_used(&q->ring, now_us);
	if ((uint64_t)q->frames_count + nframes <= q->frames_cap &&
	    q->ring.head - q->ring.tail + nbytes + max_body <= q->ring.cap)
		return 0;
	return sendq_reserve_slow(q, nframes, nbytes, max_body, now_us);
}
/* Appends a record (copied from tmpl) with a copy of body; room must be
 * reserved. */
static inline struct sendq_frame *sendq_push(struct sendq *q, const struct sendq_frame *tmpl,
					     const uint8_t *body, uint16_t len)
{
	uint64_t pos = body_ring_push(&q->ring, body, len);
	struct sendq_frame *f;

	f = &q->frames[(q->frames_head + q->frames_count) & (q->frames_cap - 1)];
	*f = *tmpl;
	f->body_pos = pos;
	f->body_len = len;
	if (!f->split)
		f->shared = NULL; /* the body is in the ring, whatever tmpl said */
	q->frames_count++;
	q->body_bytes += len;
	q->totals->records++;
	q->totals->body_bytes += len;
	q->wire_bytes += (uint64_t)len + f->hdr_len;
	return f;
}
/* The record sendq_push would fill, with a copy of body in the ring at
 * *pos, counted as pushed (but for wire_bytes); the caller writes the
 * whole record (body_pos = *pos, body_len = len, not split, no shared
 * body) and adds to wire_bytes. Room must be reserved. */
static inline struct sendq_frame *sendq_push_slot(struct sendq *q, const uint8_t *body, uint16_t len,
						  uint64_t *pos)
{
	*pos = body_ring_push(&q->ring, body, len);
	q->body_bytes += len;
	q->totals->records++;
	q->totals->body_bytes += len;
	return &q->frames[(q->frames_head + q->frames_count++) & (q->frames_cap - 1)];
}
/* Appends a record (copied from tmpl) referencing a shared body, taking a
 * reference on it; room for the record must be reserved. */
static inline struct sendq_frame *sendq_push_shared(struct sendq *q, const struct sendq_frame *tmpl,
						    struct shared_body *body)
{
	struct sendq_frame *f;

	f = &q->frames[(q->frames_head + q->frames_count) & (q->frames_cap - 1)];
	*f = *tmpl;
	f->body_pos = q->ring.head;
	f->body_len = (uint16_t)body->len;
	f->shared = body;
	shared_body_ref(body);
	q->frames_count++;
	q->body_bytes += body->len;
	q->totals->records++;
	q->totals->body_bytes += body->len;
	q->shared_bytes += body->len;
	q->wire_bytes += (uint64_t)body->len + f->hdr_len;
	return f;
}
/* The record sendq_push_shared would fill, counted as pushed (but for
 * wire_bytes) and holding a reference on body; the caller writes the
 * whole record (shared = body, body_pos = the ring's head, body_len =
 * body->len) and adds to wire_bytes. Room must be reserved. */
static inline struct sendq_frame *sendq_push_shared_slot(struct sendq *q, struct shared_body *body)
{
	struct sendq_frame *f = &q->frames[(q->frames_head + q->frames_count) & (q->frames_cap - 1)];

	shared_body_ref(body);
	q->frames_count++;
	q->body_bytes += body->len;
	q->shared_bytes += body->len;
	q->totals->records++;
	q->totals->body_bytes += body->len;
	return f;
}
static inline struct sendq_frame *sendq_at(const struct sendq *q, uint32_t i)
{
	return &q->frames[(q->frames_head + i) & (q->frames_cap - 1)];
}
/* The memory the queue holds, as a host-wide budget counts it: its own
 * bodies and every frame's record; a shared body is not its own, and is
 * counted once by its pool (common/shared_body.h). */
static inline uint64_t sendq_memory_bytes(const struct sendq *q)
{
	return q->body_bytes - q->shared_bytes + (uint64_t)q->frames_count * sizeof(struct sendq_frame);
}
/* A frame's size on the wire, header included: what the congestion window counts. */
static inline uint32_t sendq_frame_wire_bytes(const struct sendq_frame *f)
{
	return (uint32_t)f->body_len + f->hdr_len;
}
static inline const uint8_t *sendq_body(const struct sendq *q, const struct sendq_frame *f)
{
	struct shared_body *b = sendq_frame_shared(f);

	return b ? b->bytes : body_ring_at(&q->ring, f->body_pos);
}
/* sendq_pop_front's part for a frame on a shared body: its reference. */
void sendq_release_shared(struct sendq *q, struct sendq_frame *f);
/* Removes the front frame: its shared body's reference and its bytes in
 * the queue's and the owner's totals go with it. Inline: once per frame
 * acknowledged. */
static inline void sendq_pop_front(struct sendq *q)
{
	const uint32_t mask = q->frames_cap - 1;
	struct sendq_frame *f = &q->frames[q->frames_head & mask];
	uint64_t len = f->body_len;

	if (sendq_frame_shared(f))
		sendq_release_shared(q, f);
	q->body_bytes -= len;
	q->wire_bytes -= len + f->hdr_len;
	q->totals->records--;
	q->totals->body_bytes -= len;
	q->frames_head = (q->frames_head + 1) & mask;
	if (--q->frames_count == 0)
		body_ring_reset(&q->ring);
	else
		q->ring.tail = q->frames[q->frames_head].body_pos;
}
/* Removes every frame with a deadline_us at or before now_us (unreliable
 * queue: expired lifetimes), keeping the others in order. Returns how many
 * were removed and sets *next_deadline to the earliest deadline left
 * (UINT64_MAX: none). */
uint32_t sendq_drop_expired(struct sendq *q, uint64_t now_us, uint64_t *next_deadline);
/* An empty queue whose body ring grew past BODY_RING_KEEP and has not grown
 * for BODY_RING_TRIM_AFTER_US shrinks back to it (common/body_ring.h); one
 * that nothing was queued on for that long also gives all the ring's pages
 * back, once until its next use. */
void sendq_trim_idle(struct sendq *q, uint64_t now_us);

#endif
