/* SPDX-License-Identifier: MIT */
/*
 * events.c on its own: the event arena and array give back what a burst
 * grew once the queue has been empty and quiet, keep their size while the
 * host stays busy, never touch queued data, and work as before after
 * shrinking; a queue that is never empty (an application behind its
 * peers) reuses the room its released bodies left instead of growing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "host/host_internal.h"

#define MSG 1000u
#define SECOND 1000000u

static void fill(uint8_t *buf, uint32_t id)
{
	for (uint32_t i = 0; i < MSG; i++)
		buf[i] = (uint8_t)(id * 31u + i);
}

static void push_n(struct event_queue *q, uint32_t first, uint32_t n)
{
	uint8_t buf[MSG];
	for (uint32_t i = 0; i < n; i++) {
		struct pending_event e = {.type = RUDP_EVENT_RECEIVE, .len = MSG};
		fill(buf, first + i);
		assert_int_equal(event_queue_push(q, &e, buf), 0);
	}
}

/* Pops everything and checks each message's bytes against its id. */
static void pop_check(struct event_queue *q, uint32_t first, uint32_t n)
{
	rudp_event ev[64];
	uint8_t want[MSG];
	uint32_t seen = 0;
	int got;
	while ((got = event_queue_pop(q, ev, 64)) > 0)
		for (int i = 0; i < got; i++, seen++) {
			assert_int_equal(ev[i].len, MSG);
			fill(want, first + seen);
			assert_memory_equal(ev[i].data, want, MSG);
		}
	assert_int_equal(seen, n);
}

static void test_burst_arena_shrinks_when_quiet(void **state)
{
	(void)state;
	struct event_queue q;
	uint64_t now = 5 * (uint64_t)SECOND;
	event_queue_init(&q, 65536);
	event_queue_release(&q, now);
	push_n(&q, 0, 2000); /* 2 MB held at once */
	assert_true(q.arena.cap >= 2000u * MSG);
	assert_true(q.cap >= 2000);
	pop_check(&q, 0, 2000);
	size_t grown = q.arena.cap;
	/* Within the period of the burst: nothing changes. */
	event_queue_release(&q, now + SECOND / 2);
	assert_int_equal(q.arena.cap, grown);
	/* The look that sees the burst keeps its size... */
	event_queue_release(&q, now + SECOND + 1);
	assert_int_equal(q.arena.cap, grown);
	/* ...and the next, a quiet period later, shrinks both. */
	event_queue_release(&q, now + 2 * (uint64_t)SECOND + 2);
	assert_int_equal(q.arena.cap, 16384);
	assert_int_equal(q.cap, 64);
	/* Works as before afterwards, growing in place in the kept block. */
	uint8_t *block = q.arena.buf;
	push_n(&q, 7, 300);
	assert_ptr_equal(q.arena.buf, block);
	pop_check(&q, 7, 300);
	event_queue_free(&q);
}

static void test_busy_queue_keeps_its_size(void **state)
{
	(void)state;
	struct event_queue q;
	uint64_t now = 5 * (uint64_t)SECOND;
	event_queue_init(&q, 65536);
	event_queue_release(&q, now);
	push_n(&q, 0, 500);
	pop_check(&q, 0, 500);
	size_t grown = q.arena.cap;
	uint32_t grown_items = q.cap;
	uint8_t *block = q.arena.buf;
	/* The same load every 0.3 s for 10 s: the working size stays. */
	for (uint32_t round = 1; round <= 33; round++) {
		now += 3 * SECOND / 10;
		event_queue_release(&q, now);
		assert_int_equal(q.arena.cap, grown);
		assert_int_equal(q.cap, grown_items);
		push_n(&q, round, 500);
		pop_check(&q, round, 500);
	}
	assert_ptr_equal(q.arena.buf, block);
	event_queue_free(&q);
}

static void test_queued_events_are_never_trimmed(void **state)
{
	(void)state;
	struct event_queue q;
	uint64_t now = 5 * (uint64_t)SECOND;
	rudp_event ev[1];
	event_queue_init(&q, 65536);
	event_queue_release(&q, now);
	push_n(&q, 0, 1000);
	/* The application took one message; the rest wait for seconds. */
	assert_int_equal(event_queue_pop(&q, ev, 1), 1);
	size_t grown = q.arena.cap;
	for (int i = 1; i <= 5; i++) {
		event_queue_release(&q, now + (uint64_t)i * 2 * SECOND);
		assert_int_equal(q.arena.cap, grown);
	}
	pop_check(&q, 1, 999);
	event_queue_free(&q);
}

/*
 * An application that stays behind: every call it takes 100 messages while
 * 100 more arrive, over a backlog of 1,000 that never empties. The arena
 * holds about 1.1 MB at once, so a ring of 2 MiB suffices (bodies never
 * wrap; at most one is skipped at the ring's end); the flat arena this
 * replaced grew to 4 MiB here, adding at its end while half of it was
 * released room. Every message still arrives intact and in order, across
 * many laps of the ring.
 */
static void test_backlog_reuses_released_room(void **state)
{
	(void)state;
	struct event_queue q;
	uint64_t now = 5 * (uint64_t)SECOND;
	uint32_t pushed = 0, popped = 0;
	rudp_event ev[100];
	uint8_t want[MSG];
	event_queue_init(&q, 65536);
	event_queue_release(&q, now);
	push_n(&q, 0, 1000);
	pushed = 1000;
	for (int call = 0; call < 200; call++) {
		event_queue_release(&q, now);
		push_n(&q, pushed, 100);
		pushed += 100;
		int got = event_queue_pop(&q, ev, 100);
		assert_int_equal(got, 100);
		for (int i = 0; i < got; i++, popped++) {
			assert_int_equal(ev[i].len, MSG);
			fill(want, popped);
			assert_memory_equal(ev[i].data, want, MSG);
		}
		assert_true(q.arena.cap <= 2u << 20);
	}
	/* 200 calls moved 20 MB through it: many laps of a 2 MiB ring. */
	assert_int_equal(q.arena.cap, 2u << 20);
	pop_check(&q, popped, pushed - popped);
	event_queue_free(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_arena_shrinks_when_quiet),
		cmocka_unit_test(test_busy_queue_keeps_its_size),
		cmocka_unit_test(test_queued_events_are_never_trimmed),
		cmocka_unit_test(test_backlog_reuses_released_room),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
