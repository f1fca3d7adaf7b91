/* SPDX-License-Identifier: MIT */
/*
 * Shared by every layer (src/common): the byte rings that hold message
 * bodies (struct body_ring) for the conn's send queue (sendq.c), the send
 * policy's stage classes (policy.c) and the host's event arena
 * (host/events.c), each keeping its records beside it. Bodies sit at
 * absolute positions in a power-of-two ring, never wrapped (a body that
 * would wrap starts at the ring's beginning): offset = position & (cap - 1).
 *
 * Why the block grows in steps: a block left behind by plain doubling was
 * written, so it stays resident. The ring doubles inside a block that
 * grows fourfold (BODY_RING_BLOCK_GROWTH) up to BODY_RING_STEP_MAX; pages
 * the ring has not reached are never written and cost nothing, and a
 * larger block left behind gives its pages back (body_ring_release_pages).
 * One large block from the start would cost a process of many hosts far
 * more address space. After each growth the ring is unwrapped in its block.
 */
#ifndef RUDP_COMMON_BODY_RING_H
#define RUDP_COMMON_BODY_RING_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BODY_RING_FIRST 4096u
#define BODY_RING_BLOCK_GROWTH 4u
/* Blocks above this are exactly the ring's size: glibc maps them on their
 * own (from 128 KiB) and grows them with mremap, leaving nothing behind,
 * and reserving four times a large ring would be memory in the accounts
 * of whoever counts allocations. */
#define BODY_RING_STEP_MAX 65536u
/* Bytes at each end of a freed block that the allocator may use for its
 * own bookkeeping (glibc: links and sizes, 32 bytes at the start). */
#define BODY_RING_ALLOC_META 64u

/* A block left behind of at least this many bytes gives its whole pages
 * back to the system before it is freed (body_ring_release_pages). */
#define BODY_RING_RELEASE_MIN 16384u

/*
 * One ring of message bodies (the send queue's, each stage class's) and
 * what its idle rule needs. Positions are absolute and only grow; a body's
 * bytes are at buf + (pos & (cap - 1)).
 */
struct body_ring {
	/* position after the newest body; first, as the send queue reads it
	 * with its own counts (conn/sendq.h) */
	uint64_t head;
	uint8_t *buf; /* the block, `block` bytes */
	uint64_t cap; /* power of two; 0: no block yet */
	uint64_t block; /* the ring may double inside it */
	uint64_t tail; /* position of the oldest body (head when empty) */
	uint64_t grown_us; /* owner's time of the last growth (body_ring_trim_idle) */
	uint64_t used_us; /* owner's time of the last reservation (body_ring_trim_idle) */
	bool pages_released; /* idle: the ring's pages went back to the system */
};

static inline void body_ring_free(struct body_ring *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Bytes of the body at pos. */
static inline uint8_t *body_ring_at(const struct body_ring *r, uint64_t pos)
{
	return r->buf + (pos & (r->cap - 1));
}

/* Empty now: the next body starts at offset 0 (no padding at the next
 * wrap). */
static inline void body_ring_reset(struct body_ring *r)
{
	r->head = 0;
	r->tail = 0;
}

/* Something is about to be put in at now_us: the ring is not idle. */
static inline void body_ring_mark_used(struct body_ring *r, uint64_t now_us)
{
	r->used_us = now_us;
	r->pages_released = false;
}

/* Gives the whole pages in [from, to) back to the system (madvise
 * MADV_DONTNEED); they read as zeros when touched again. */
static inline void body_ring_release_range(uint8_t *from, uint8_t *to)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo, hi;

	if (page == 0 || (page & (page - 1)) != 0 || to <= from)
		return;
	lo = ((uintptr_t)from + page - 1) & ~(page - 1);
	hi = (uintptr_t)to & ~(page - 1);
	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/*
 * Gives back the whole pages inside a block about to be freed, keeping its
 * first and last bytes, where the allocator keeps its free-list links and
 * sizes. Why: the blocks a ring leaves behind were written, so they stay
 * resident, and in a process of many connections the allocator rarely has
 * a later request they fit (the rings grow past them). The pages read as
 * zeros if the allocator hands them out again. One madvise per growth
 * from BODY_RING_RELEASE_MIN, never on a message's path.
 */
static inline void body_ring_release_pages(uint8_t *block, uint64_t size)
{
	if (size < 2 * BODY_RING_ALLOC_META)
		return;
	body_ring_release_range(block + BODY_RING_ALLOC_META, block + size - BODY_RING_ALLOC_META);
}

/* What an idle ring that had grown shrinks back to (body_ring_shrink): the
 * ring most connections live in (20 bodies of 800 B). */
#define BODY_RING_KEEP 16384u
/* How long after its last growth an empty ring is trimmed, and after its
 * last use an empty ring gives all its pages back (body_ring_trim_idle): a
 * peer sending in bursts keeps its ring between them, and trimming costs a
 * system call and the page faults of growing again. */
#define BODY_RING_TRIM_AFTER_US 1000000u

/*
 * Shrinks an empty ring (cap more than BODY_RING_KEEP) to BODY_RING_KEEP,
 * giving the pages past that back to the system; the block stays, so
 * growing again is in place and touches the pages afresh. Why: a burst (or
 * lost ACKs) grows a peer's ring to hold a window of datagrams (128 KiB at
 * 64 frames of 1,400 B) or whatever the application queued, and without
 * this it stays resident for the connection's life: in a server of
 * thousands of peers, for every peer that ever had a burst.
 */
static inline void body_ring_shrink(struct body_ring *r)
{
	if (r->cap <= BODY_RING_KEEP)
		return;
	body_ring_release_range(r->buf + BODY_RING_KEEP, r->buf + r->block - BODY_RING_ALLOC_META);
	r->cap = BODY_RING_KEEP;
}

/*
 * The idle rule of an empty ring (the caller checks it holds no body): one
 * nothing was put in for BODY_RING_TRIM_AFTER_US gives all its pages back
 * (a connection that went quiet keeps its block, not its memory: 16 KiB a
 * peer in a server of idle peers), once until its next use clears
 * pages_released; one in use whose last growth is that old shrinks back to
 * BODY_RING_KEEP. Either way its positions start again at 0.
 */
static inline void body_ring_trim_idle(struct body_ring *r, uint64_t now_us)
{
	if (r->pages_released || r->cap == 0)
		return;
	if (now_us - r->used_us >= BODY_RING_TRIM_AFTER_US) {
		if (r->cap > BODY_RING_KEEP)
			r->cap = BODY_RING_KEEP;
		body_ring_release_range(r->buf, r->buf + r->block);
		r->pages_released = true;
	} else if (r->cap > BODY_RING_KEEP && now_us - r->grown_us >= BODY_RING_TRIM_AFTER_US) {
		body_ring_shrink(r);
	} else {
		return;
	}
	body_ring_reset(r);
}

/* The ring size that holds `need` bytes: a power of two, at least
 * BODY_RING_FIRST. */
static inline uint64_t body_ring_cap_for(uint64_t need)
{
	uint64_t cap = BODY_RING_FIRST;

	while (cap < need)
		cap <<= 1;
	return cap;
}

/* The block for a ring that must grow to cap (a power of two) and cannot
 * do it in its current block of `block` bytes (0: none yet). */
static inline uint64_t body_ring_block_size(uint64_t block, uint64_t cap)
{
	uint64_t next = block ? block * BODY_RING_BLOCK_GROWTH : BODY_RING_FIRST;

	return cap > next || next > BODY_RING_STEP_MAX ? cap : next;
}

/* Grows the ring (cap 0: none yet) holding the live bytes [tail, head)
 * to new_cap (a power of two above cap): reallocates the block when it is
 * too small, then moves the bytes that wrapped to the ring's start to just
 * past its old end, so the live bytes become one run from the tail's
 * offset, and stamps the growth with now_us. Stores in *base the absolute
 * position of the tail's lap, already taken off head and tail: the caller
 * subtracts it from every body position it keeps, after which each
 * position is its physical offset. Returns 0, or -1 when out of memory
 * (nothing changed). */
static inline int body_ring_grow(struct body_ring *r, uint64_t new_cap, uint64_t now_us, uint64_t *base)
{
	if (new_cap > r->block) {
		uint64_t size = body_ring_block_size(r->block, new_cap);
		uint8_t *b;

		if (size > SIZE_MAX)
			return -1;
		if (r->block < BODY_RING_RELEASE_MIN || size > BODY_RING_STEP_MAX) {
			b = realloc(r->buf, (size_t)size);
			if (!b)
				return -1;
		} else {
			b = malloc((size_t)size);
			if (!b)
				return -1;
			memcpy(b, r->buf, (size_t)r->cap);
			body_ring_release_pages(r->buf, r->block);
			free(r->buf);
		}
		r->buf = b;
		r->block = size;
	}
	*base = 0;
	if (r->cap) {
		*base = r->tail & ~(r->cap - 1);
		if (r->head - *base > r->cap)
			memcpy(r->buf + r->cap, r->buf, (size_t)(r->head - *base - r->cap));
	}
	r->cap = new_cap;
	r->tail -= *base;
	r->head -= *base;
	r->grown_us = now_us;
	return 0;
}

/* Where a body of len bytes goes when the ring's head is at pos: at pos,
 * or at the start of the next lap when it would cross the ring's end
 * (bodies never wrap). Returns the position after it; the bytes skipped
 * count as used until the frame before them is released. */
static inline uint64_t body_ring_place(uint64_t cap, uint64_t pos, uint64_t len)
{
	uint64_t phys = pos & (cap - 1);

	if (phys + len > cap)
		pos += cap - phys;
	return pos + len;
}

/* Whether a body of len bytes fits in a ring of cap bytes (0: none yet)
 * holding [tail, head), placed exactly as body_ring_place puts it. Growing
 * only when this fails, rather than whenever the worst case (a whole body
 * skipped) would not fit, keeps a ring from doubling for a message that
 * fits: 16 KiB hold 20 bodies of 800 B, not 16 plus a body of slack. */
static inline bool body_ring_fits(uint64_t cap, uint64_t tail, uint64_t head, uint64_t len)
{
	return cap > 0 && len <= cap && body_ring_place(cap, head, len) - tail <= cap;
}

/* Copies a body of len bytes in (the caller made room: body_ring_fits)
 * where body_ring_place puts it; returns its position. */
static inline uint64_t body_ring_push(struct body_ring *r, const uint8_t *data, uint64_t len)
{
	uint64_t end = body_ring_place(r->cap, r->head, len);
	uint64_t pos = end - len;

	memcpy(body_ring_at(r, pos), data, (size_t)len);
	r->head = end;
	return pos;
}

#endif
