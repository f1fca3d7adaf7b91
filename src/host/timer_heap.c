/* SPDX-License-Identifier: MIT */
/*
 * One deadline per peer in a binary min-heap, so a service call touches only
 * the peers whose time has come instead of scanning every peer. Each item
 * holds its key (the peer's deadline_us, kept equal) so that a sift walks
 * the heap's array alone, not one peer struct per level.
 */
#include <stdlib.h>

#include "host_internal.h"

#define NOT_IN_HEAP UINT32_MAX

int timer_heap_init(struct timer_heap *h, uint32_t cap)
{
	h->count = 0;
	h->cap = cap < 16 ? 16 : cap;
	h->items = malloc(h->cap * sizeof(*h->items));
	return h->items ? 0 : RUDP_E_NOMEM;
}

void timer_heap_free(struct timer_heap *h)
{
	free(h->items);
	h->items = NULL;
	h->count = h->cap = 0;
}

static void place(struct timer_item *items, uint32_t i, struct timer_item it)
{
	items[i] = it;
	it.peer->heap_index = i;
}

/* The sifts keep the array and its count in locals: a peer's heap_index
 * store could alias them for the compiler, which would reload them at
 * every level. */
static void sift_up(struct timer_heap *h, uint32_t i)
{
	struct timer_item *items = h->items;
	struct timer_item it = items[i];
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (items[parent].deadline_us <= it.deadline_us)
			break;
		place(items, i, items[parent]);
		i = parent;
	}
	place(items, i, it);
}

static void sift_down(struct timer_heap *h, uint32_t i)
{
	struct timer_item *items = h->items;
	uint32_t count = h->count;
	struct timer_item it = items[i];
	for (;;) {
		uint32_t child = 2 * i + 1;
		if (child >= count)
			break;
		if (child + 1 < count && items[child + 1].deadline_us < items[child].deadline_us)
			child++;
		if (items[child].deadline_us >= it.deadline_us)
			break;
		place(items, i, items[child]);
		i = child;
	}
	place(items, i, it);
}

static void remove_at(struct timer_heap *h, uint32_t i)
{
	struct rudp_peer *p = h->items[i].peer;
	p->heap_index = NOT_IN_HEAP;
	h->count--;
	if (i == h->count)
		return;
	struct timer_item last = h->items[h->count];
	place(h->items, i, last);
	sift_down(h, i);
	sift_up(h, last.peer->heap_index);
}

int timer_heap_set(struct timer_heap *h, struct rudp_peer *p, uint64_t deadline_us)
{
	if (deadline_us == UINT64_MAX) {
		if (p->heap_index != NOT_IN_HEAP)
			remove_at(h, p->heap_index);
		p->deadline_us = UINT64_MAX;
		return 0;
	}
	if (p->heap_index != NOT_IN_HEAP) {
		uint64_t old = p->deadline_us;
		p->deadline_us = deadline_us;
		h->items[p->heap_index].deadline_us = deadline_us;
		if (deadline_us < old)
			sift_up(h, p->heap_index);
		else if (deadline_us > old)
			sift_down(h, p->heap_index);
		return 0;
	}
	if (h->count == h->cap) {
		uint32_t cap = h->cap * 2;
		struct timer_item *items = realloc(h->items, cap * sizeof(*items));
		if (!items)
			return RUDP_E_NOMEM;
		h->items = items;
		h->cap = cap;
	}
	p->deadline_us = deadline_us;
	h->items[h->count] = (struct timer_item){.deadline_us = deadline_us, .peer = p};
	p->heap_index = h->count++;
	sift_up(h, p->heap_index);
	return 0;
}

struct rudp_peer *timer_heap_top(const struct timer_heap *h)
{
	return h->count ? h->items[0].peer : NULL;
}
