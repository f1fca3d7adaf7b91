/* SPDX-License-Identifier: MIT */
/*
 * timer_heap.c on its own: through a long run of inserts, moves (earlier
 * and later) and removals on many peers, the heap stays a min-heap by the
 * peers' deadlines, each item's key stays its peer's deadline_us, each
 * peer knows its position, and the top is always a peer with the earliest
 * deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "host/host_internal.h"

#define PEERS 300u
#define STEPS 20000u

static uint32_t rng = 12345;

static uint32_t next_rand(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

static void check_heap(const struct timer_heap *h, struct rudp_peer *peers)
{
	uint64_t min = UINT64_MAX;
	uint32_t in_heap = 0;

	for (uint32_t i = 0; i < h->count; i++) {
		const struct timer_item *it = &h->items[i];

		assert_int_equal(it->peer->heap_index, i);
		assert_true(it->deadline_us == it->peer->deadline_us);
		if (i > 0)
			assert_true(h->items[(i - 1) / 2].deadline_us <= it->deadline_us);
	}
	for (uint32_t i = 0; i < PEERS; i++) {
		if (peers[i].heap_index == UINT32_MAX) {
			assert_true(peers[i].deadline_us == UINT64_MAX);
			continue;
		}
		in_heap++;
		if (peers[i].deadline_us < min)
			min = peers[i].deadline_us;
	}
	assert_int_equal(in_heap, h->count);
	if (h->count)
		assert_true(timer_heap_top(h)->deadline_us == min);
	else
		assert_null(timer_heap_top(h));
}

static void test_heap_order_through_moves(void **state)
{
	(void)state;
	static struct rudp_peer peers[PEERS];
	struct timer_heap h;

	memset(peers, 0, sizeof(peers));
	for (uint32_t i = 0; i < PEERS; i++) {
		peers[i].heap_index = UINT32_MAX;
		peers[i].deadline_us = UINT64_MAX;
	}
	assert_int_equal(timer_heap_init(&h, 4), 0); /* grows past its first room */
	for (uint32_t s = 0; s < STEPS; s++) {
		struct rudp_peer *p = &peers[next_rand() % PEERS];
		uint32_t r = next_rand() % 10;
		/* Few distinct deadlines: ties are common, as with timers
		 * set from one clock reading. */
		uint64_t d = r == 0 ? UINT64_MAX : 1000 + next_rand() % 64;

		assert_int_equal(timer_heap_set(&h, p, d), 0);
		check_heap(&h, peers);
	}
	/* Every peer's deadline moved later, one by one: the sift-down case. */
	for (uint32_t i = 0; i < PEERS; i++) {
		assert_int_equal(timer_heap_set(&h, &peers[i], 5000 + i), 0);
		check_heap(&h, peers);
	}
	for (uint32_t i = 0; i < PEERS; i++) {
		struct rudp_peer *top = timer_heap_top(&h);

		assert_true(top->deadline_us == 5000 + i);
		assert_int_equal(timer_heap_set(&h, top, UINT64_MAX), 0);
		check_heap(&h, peers);
	}
	timer_heap_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_order_through_moves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
