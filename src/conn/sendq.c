/* SPDX-License-Identifier: MIT */
/*
 * The send queue: a FIFO of frame records and a byte ring of their bodies
 * (common/body_ring.h), grown on demand and given back when idle.
 */
#include <stdlib.h>
#include <string.h>

#include "common/body_ring.h"
#include "conn/conn.h"
#include "conn/sendq.h"

/* The record ring starts small and doubles: a connection with a few
 * messages in flight (a game client, each of 2,048 in one process) needs
 * 16 or 32 records, and 64 cost 4.6 KiB each. */
#define SENDQ_MIN_FRAMES 16u

static uint64_t round_up_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

void sendq_init(struct sendq *q, struct sendq_totals *totals)
{
	memset(q, 0, sizeof(*q));
	q->totals = totals;
}

void sendq_free(struct sendq *q)
{
	for (uint32_t i = 0; i < q->frames_count; i++) {
		struct sendq_frame *f = sendq_at(q, i);

		if (sendq_frame_shared(f))
			shared_body_release(f->shared);
	}
	struct sendq_totals *totals = q->totals;

	if (totals) {
		totals->records -= q->frames_count;
		totals->body_bytes -= q->body_bytes;
	}
	free(q->frames_block);
	body_ring_free(&q->ring);
	sendq_init(q, totals); /* empty again */
}

static int sendq_grow_frames(struct sendq *q, uint32_t need)
{
	uint32_t cap = (uint32_t)round_up_pow2(need < SENDQ_MIN_FRAMES ? SENDQ_MIN_FRAMES : need);
	/* malloc's alignment is smaller than a line: room to move up to one. */
	uint8_t *block = malloc((size_t)cap * sizeof(struct sendq_frame) + SENDQ_FRAME_ALIGN - 1);

	if (!block)
		return RUDP_CONN_E_NOMEM;
	struct sendq_frame *frames =
		(struct sendq_frame *)(block + (-(uintptr_t)block & (uintptr_t)(SENDQ_FRAME_ALIGN - 1)));
	for (uint32_t i = 0; i < q->frames_count; i++)
		frames[i] = *sendq_at(q, i);
	free(q->frames_block);
	q->frames_block = block;
	q->frames = frames;
	q->frames_cap = cap;
	q->frames_head = 0;
	return 0;
}

/* Doubles the ring (common/body_ring.h) and moves every position with it. */
static int sendq_grow_bytes(struct sendq *q, uint64_t need, uint64_t now_us)
{
	uint64_t base;

	if (body_ring_grow(&q->ring, body_ring_cap_for(need), now_us, &base) != 0)
		return RUDP_CONN_E_NOMEM;
	for (uint32_t i = 0; i < q->frames_count; i++)
		sendq_at(q, i)->body_pos -= base;
	return 0;
}

/* Whether nbytes in bodies of max_body (the last one shorter) fit in the
 * ring as it is, each placed where sendq_push will put it. The worst case
 * (a whole body skipped at the ring's end) grew a ring holding 16 messages
 * of 800 B in 16 KiB as soon as a 17th waited for its ACK. */
static bool sendq_bodies_fit(const struct sendq *q, uint64_t nbytes, uint32_t max_body)
{
	uint64_t head = q->ring.head;

	if (q->ring.cap == 0)
		return false; /* no ring yet: even an empty body gets one, as before */
	while (nbytes > 0) {
		uint64_t part = nbytes < max_body || max_body == 0 ? nbytes : max_body;

		if (!body_ring_fits(q->ring.cap, q->ring.tail, head, part))
			return false;
		head = body_ring_place(q->ring.cap, head, part);
		nbytes -= part;
	}
	return true;
}

int sendq_reserve_slow(struct sendq *q, uint32_t nframes, uint64_t nbytes, uint32_t max_body, uint64_t now_us)
{
	uint64_t used = q->ring.head - q->ring.tail;
	/* After growing, the run must fit wherever the head then is: it wraps
	 * the ring at most once, wasting less than one body. */
	uint64_t need = used + nbytes + max_body;
	int rc;

	if ((uint64_t)q->frames_count + nframes > q->frames_cap) {
		rc = sendq_grow_frames(q, q->frames_count + nframes);
		if (rc < 0)
			return rc;
	}
	if (need > q->ring.cap && !sendq_bodies_fit(q, nbytes, max_body)) {
		rc = sendq_grow_bytes(q, need, now_us);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void sendq_trim_idle(struct sendq *q, uint64_t now_us)
{
	if (q->frames_count == 0)
		body_ring_trim_idle(&q->ring, now_us);
}

void sendq_release_shared(struct sendq *q, struct sendq_frame *f)
{
	shared_body_release(f->shared);
	q->shared_bytes -= f->body_len;
}

/* A frame leaves the queue: its shared body's reference and its bytes in
 * the queue's and the conn's totals. */
static void sendq_forget(struct sendq *q, struct sendq_frame *f)
{
	if (sendq_frame_shared(f))
		sendq_release_shared(q, f);
	q->body_bytes -= f->body_len;
	q->wire_bytes -= (uint64_t)f->body_len + f->hdr_len;
	q->totals->records--;
	q->totals->body_bytes -= f->body_len;
}

uint32_t sendq_drop_expired(struct sendq *q, uint64_t now_us, uint64_t *next_deadline)
{
	uint64_t next = UINT64_MAX;
	uint32_t kept = 0, dropped = 0;

	for (uint32_t i = 0; i < q->frames_count; i++) {
		struct sendq_frame *f = sendq_at(q, i);

		if (f->deadline_us != 0 && f->deadline_us <= now_us) {
			sendq_forget(q, f);
			dropped++;
			continue;
		}
		if (f->deadline_us != 0 && f->deadline_us < next)
			next = f->deadline_us;
		if (kept != i)
			*sendq_at(q, kept) = *f;
		kept++;
	}
	q->frames_count = kept;
	/* Frames are in body order: the first one left holds the oldest body. */
	if (kept == 0)
		body_ring_reset(&q->ring);
	else
		q->ring.tail = sendq_at(q, 0)->body_pos;
	*next_deadline = next;
	return dropped;
}
