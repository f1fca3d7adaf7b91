/* SPDX-License-Identifier: MIT */
/*
 * Shared by every layer (src/common): one message body referenced by many
 * send queues (rudp_send_many), counted so it goes back to its pool when
 * the last queue lets go of it (sent, acknowledged, expired or dropped
 * with its connection). The host owns the pool; a conn only takes and
 * releases references, so it needs no call into the host. A host belongs
 * to one thread: the count is a plain integer.
 *
 * The pool keeps up to SHARED_BODY_POOL_KEEP released bodies for reuse, so
 * a server sending one snapshot a tick allocates nothing in steady state.
 */
#ifndef RUDP_COMMON_SHARED_BODY_H
#define RUDP_COMMON_SHARED_BODY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SHARED_BODY_POOL_KEEP 64u
/* Bodies are at least this big, so one kept body fits most snapshots. */
#define SHARED_BODY_MIN_CAP 512u

struct shared_body_pool;

struct shared_body {
	struct shared_body_pool *pool;
	struct shared_body *next_free; /* in the pool's free list */
	uint32_t refs;
	uint32_t len;
	uint32_t cap;
	uint8_t bytes[];
};

struct shared_body_pool {
	struct shared_body *free_list;
	uint32_t nfree;
	uint32_t live; /* bodies handed out and not yet back: must be 0 at destroy */
	uint64_t live_bytes; /* their lengths: each counted once, however many queues share it */
};

static inline void shared_body_pool_destroy(struct shared_body_pool *pool)
{
	while (pool->free_list) {
		struct shared_body *b = pool->free_list;

		pool->free_list = b->next_free;
		free(b);
	}
	pool->nfree = 0;
}

/* A body holding a copy of data, with one reference (the caller's);
 * NULL when out of memory. */
static inline struct shared_body *shared_body_new(struct shared_body_pool *pool, const void *data,
						  uint32_t len)
{
	struct shared_body *b = pool->free_list;

	if (b && b->cap >= len) {
		pool->free_list = b->next_free;
		pool->nfree--;
	} else {
		uint32_t cap = len < SHARED_BODY_MIN_CAP ? SHARED_BODY_MIN_CAP : len;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->cap = cap;
		b->pool = pool;
	}
	b->next_free = NULL;
	b->refs = 1;
	b->len = len;
	memcpy(b->bytes, data, len);
	pool->live++;
	pool->live_bytes += len;
	return b;
}

static inline void shared_body_ref(struct shared_body *b)
{
	b->refs++;
}

static inline void shared_body_release(struct shared_body *b)
{
	struct shared_body_pool *pool = b->pool;

	if (--b->refs > 0)
		return;
	pool->live--;
	pool->live_bytes -= b->len;
	if (pool->nfree >= SHARED_BODY_POOL_KEEP) {
		free(b);
		return;
	}
	b->next_free = pool->free_list;
	pool->free_list = b;
	pool->nfree++;
}

#endif
