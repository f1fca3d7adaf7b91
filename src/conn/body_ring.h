/* SPDX-License-Identifier: MIT */
/*
 * Growth of the byte rings that hold message bodies: the send queue's
 * (sendq.c) and the send policy's stage classes (policy.c). Both keep
 * bodies at absolute positions, never wrapped (a body that would wrap
 * starts at the ring's beginning), in a power-of-two ring: physical offset
 * = position & (cap - 1).
 *
 * Why not plain doubling into a new block: every block left behind has
 * been written, so it stays resident in the heap. A ring that grows from
 * 4 KiB to 64 KiB leaves 60 KiB of such holes, which in a process with few
 * connections is most of what the rings cost (measured: the heap of the
 * one-connection rudp-bench server, rudp-batch-policy column, fell from
 * 468 to 348 KiB without them). So a
 * ring starts in a block of BODY_RING_FIRST bytes (a quiet connection never
 * needs more), and the first time it outgrows that it moves once into a
 * block of BODY_RING_RESERVE bytes, inside which it then doubles in place:
 * pages of the block the ring has not reached yet are address space only,
 * never written, so they cost no memory. Beyond the reserve a ring moves
 * to a new block of its new size (from 128 KiB glibc maps such a block on
 * its own, so what it leaves behind goes back to the system).
 */
#ifndef RUDP_CONN_BODY_RING_H
#define RUDP_CONN_BODY_RING_H

#include <stdint.h>
#include <string.h>

#define BODY_RING_FIRST 4096u
#define BODY_RING_RESERVE 65536u

/* The block to allocate for a ring that must grow to cap (a power of two)
 * and cannot do it in its current block. */
static inline uint64_t body_ring_block_size(uint64_t cap)
{
	if (cap <= BODY_RING_FIRST)
		return BODY_RING_FIRST;
	return cap > BODY_RING_RESERVE ? cap : BODY_RING_RESERVE;
}

/* Grows a ring of cap bytes in place, in a block of at least twice that,
 * holding the live bytes [tail, head) (absolute positions, head - tail <=
 * cap). The bytes that wrapped to the ring's start move to just past its
 * old end, so the live bytes become one run starting at the tail's offset.
 * Returns base, the absolute position of the tail's lap: the caller
 * subtracts it from tail, head and every body position, after which each
 * position is its physical offset in any ring of 2 * cap or more. */
static inline uint64_t body_ring_unwrap(uint8_t *buf, uint64_t cap, uint64_t tail, uint64_t head)
{
	uint64_t base = tail & ~(cap - 1);

	if (head - base > cap)
		memcpy(buf + cap, buf, (size_t)(head - base - cap));
	return base;
}

#endif
