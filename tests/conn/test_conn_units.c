/* SPDX-License-Identifier: MIT */
/* Small pieces of conn on their own: the RTO estimator, ACK range queues,
 * the send queue's byte ring and the congestion window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conn/conn_internal.h"

static void test_rtt_first_sample(void **state)
{
	struct rtt_estimator r;

	(void)state;
	rtt_init(&r, 500000, 50000, 2000000);
	assert_int_equal(r.rto_us, 500000);
	rtt_on_sample(&r, 100000);
	/* RFC 6298 2.2: srtt = R, rttvar = R/2, rto = srtt + 4 rttvar */
	assert_int_equal(r.srtt_us, 100000);
	assert_int_equal(r.rttvar_us, 50000);
	assert_int_equal(r.rto_us, 300000);
	rtt_on_sample(&r, 100000);
	/* rttvar = 3/4 * 50000 + 1/4 * 0; srtt unchanged */
	assert_int_equal(r.srtt_us, 100000);
	assert_int_equal(r.rttvar_us, 37500);
	assert_int_equal(r.rto_us, 250000);
	rtt_on_sample(&r, 200000);
	/* rttvar = (3 * 37500 + 100000) / 4, srtt = (7 * 100000 + 200000) / 8 */
	assert_int_equal(r.rttvar_us, 53125);
	assert_int_equal(r.srtt_us, 112500);
	assert_int_equal(r.rto_us, 112500 + 4 * 53125);
}

static void test_rtt_clamps_and_backoff(void **state)
{
	struct rtt_estimator r;

	(void)state;
	rtt_init(&r, 500000, 50000, 2000000);
	for (int i = 0; i < 50; i++)
		rtt_on_sample(&r, 100);
	assert_int_equal(r.rto_us, 50000); /* floor */
	assert_int_equal(rtt_backed_off_rto(&r, 0), 50000);
	assert_int_equal(rtt_backed_off_rto(&r, 1), 100000);
	assert_int_equal(rtt_backed_off_rto(&r, 3), 400000);
	assert_int_equal(rtt_backed_off_rto(&r, 6), 2000000); /* cap */
	assert_int_equal(rtt_backed_off_rto(&r, 1000), 2000000);
	rtt_on_sample(&r, 10000000);
	assert_int_equal(r.rto_us, 2000000);
	/* The granularity floor: rttvar near zero still leaves 1 ms. */
	rtt_init(&r, 500000, 1, 2000000);
	for (int i = 0; i < 100; i++)
		rtt_on_sample(&r, 10000);
	assert_int_equal(r.rto_us, 11000);
}

static void test_ackq_coalesces(void **state)
{
	struct ackq q;

	(void)state;
	assert_int_equal(ackq_init(&q, 4), 0);
	for (uint32_t s = 10; s < 20; s++)
		assert_true(ackq_push_seq(&q, s));
	assert_int_equal(q.count, 1);
	assert_int_equal(q.ranges[0].start, 10);
	assert_int_equal(q.ranges[0].end, 19);
	assert_true(ackq_push_seq(&q, 15)); /* already there */
	assert_int_equal(q.count, 1);
	assert_true(ackq_push_seq(&q, 25));
	assert_true(ackq_push_seq(&q, 21));
	assert_true(ackq_push_seq(&q, 20));
	assert_true(ackq_push_seq(&q, 22));
	/* 20 extended 21 downwards, 22 extended it up: 10..19, 25, 20..22 */
	assert_int_equal(q.count, 3);
	assert_int_equal(q.ranges[2].start, 20);
	assert_int_equal(q.ranges[2].end, 22);
	assert_true(ackq_push_seq(&q, 40));
	/* full: a fifth separate range is refused (the caller sends early) */
	assert_false(ackq_push_seq(&q, 50));
	ackq_normalize(&q, 40);
	/* 10..19 and 20..22 merge; 25 and 40 stay alone */
	assert_int_equal(q.count, 3);
	assert_int_equal(q.ranges[0].start, 10);
	assert_int_equal(q.ranges[0].end, 22);
	assert_int_equal(q.ranges[1].start, 25);
	assert_int_equal(q.ranges[1].end, 25);
	assert_int_equal(q.ranges[2].start, 40);
	ackq_free(&q);
}

static void test_ackq_wraps(void **state)
{
	struct ackq q;

	(void)state;
	assert_int_equal(ackq_init(&q, 8), 0);
	assert_true(ackq_push_seq(&q, 0xfffffe));
	assert_true(ackq_push_seq(&q, 0xffffff));
	assert_true(ackq_push_seq(&q, 0));
	assert_true(ackq_push_seq(&q, 1));
	assert_int_equal(q.count, 1);
	assert_int_equal(q.ranges[0].start, 0xfffffe);
	assert_int_equal(q.ranges[0].end, 1);
	/* out of order across the wrap, then sorted by distance from ref */
	assert_true(ackq_push_seq(&q, 5));
	assert_true(ackq_push_seq(&q, 0xfffff0));
	assert_true(ackq_push_seq(&q, 3));
	ackq_normalize(&q, 5);
	assert_int_equal(q.count, 4);
	assert_int_equal(q.ranges[0].start, 0xfffff0);
	assert_int_equal(q.ranges[1].start, 0xfffffe);
	assert_int_equal(q.ranges[2].start, 3);
	assert_int_equal(q.ranges[3].start, 5);
	ackq_free(&q);
}

static void test_ackq_remove(void **state)
{
	struct ackq q;

	(void)state;
	assert_int_equal(ackq_init(&q, 8), 0);
	assert_true(ackq_push_range(&q, 100, 110));
	ackq_remove_seq(&q, 100);
	assert_int_equal(q.ranges[0].start, 101);
	ackq_remove_seq(&q, 110);
	assert_int_equal(q.ranges[0].end, 109);
	ackq_remove_seq(&q, 105);
	assert_int_equal(q.count, 2);
	assert_int_equal(q.ranges[0].end, 104);
	assert_int_equal(q.ranges[1].start, 106);
	assert_int_equal(q.ranges[1].end, 109);
	assert_true(ackq_push_range(&q, 200, 200));
	ackq_remove_seq(&q, 200);
	assert_int_equal(q.count, 2);
	ackq_remove_seq(&q, 300); /* not there */
	assert_int_equal(q.count, 2);
	ackq_free(&q);
}

/* The range array starts small and doubles up to max; at max a push fails
 * (the caller emits) and a split that needs a slot is skipped. */
static void test_ackq_grows_to_max(void **state)
{
	struct ackq q;

	(void)state;
	assert_int_equal(ackq_init(&q, 100), 0);
	assert_true(q.cap < 100);
	for (uint32_t i = 0; i < 100; i++)
		assert_true(ackq_push_seq(&q, 10 * i));
	assert_int_equal(q.count, 100);
	assert_int_equal(q.cap, 100);
	assert_false(ackq_push_seq(&q, 5000));
	for (uint32_t i = 0; i < 100; i++) {
		assert_int_equal(q.ranges[i].start, 10 * i);
		assert_int_equal(q.ranges[i].end, 10 * i);
	}
	/* Joining an existing range needs no slot even when full. */
	assert_true(ackq_push_seq(&q, 991));
	assert_int_equal(q.ranges[99].end, 991);
	assert_true(ackq_push_seq(&q, 992));
	ackq_remove_seq(&q, 991); /* would split [990, 992]: no room, kept */
	assert_int_equal(q.count, 100);
	ackq_free(&q);

	/* A split grows the array like a push does. */
	assert_int_equal(ackq_init(&q, 64), 0);
	uint32_t cap0 = q.cap;
	for (uint32_t i = 0; i < cap0; i++)
		assert_true(ackq_push_range(&q, 100 * i, 100 * i + 10));
	assert_int_equal(q.count, cap0);
	ackq_remove_seq(&q, 5);
	assert_int_equal(q.count, cap0 + 1);
	assert_true(q.cap > cap0);
	assert_int_equal(q.ranges[0].end, 4);
	assert_int_equal(q.ranges[1].start, 6);
	assert_int_equal(q.ranges[1].end, 10);
	assert_int_equal(q.ranges[2].start, 100);
	ackq_free(&q);
}

/* Both trackers hold the same: seqs seen and acknowledged, ranges queued. */
static void acktr_check_same(const struct ack_tracker *a, const struct ack_tracker *b)
{
	assert_int_equal(a->have_highest_dgram, b->have_highest_dgram);
	assert_int_equal(a->highest_dgram_seq, b->highest_dgram_seq);
	assert_int_equal(a->far_ahead_count, b->far_ahead_count);
	assert_memory_equal(a->dgram_seen, b->dgram_seen, sizeof(a->dgram_seen));
	assert_memory_equal(a->dgram_acked, b->dgram_acked, sizeof(a->dgram_acked));
	assert_int_equal(a->acks.count, b->acks.count);
	assert_memory_equal(a->acks.ranges, b->acks.ranges, a->acks.count * sizeof(*a->acks.ranges));
	assert_int_equal(a->nacks.count, b->nacks.count);
	assert_memory_equal(a->nacks.ranges, b->nacks.ranges, a->nacks.count * sizeof(*a->nacks.ranges));
}

/* The ACK tracker's inline paths for the next datagram in line and its ACK
 * (acktr_on_dgram_seq, acktr_queue_ack) against the general ones alone
 * (the _any functions): datagrams in order for several laps of the
 * 1024-seq bitmaps and across the 24-bit wrap, with a gap, a duplicate, a
 * datagram not acknowledged and an ACK queue sent (emptied) now and then,
 * leave both trackers the same
 * after every datagram; the in-order ones are new, the duplicates seen. */
static void test_acktr_in_order_fast_path(void **state)
{
	struct ack_tracker fast, slow;
	uint32_t seq = RUDP_WIRE_U24_MASK - 1500, news = 0;

	(void)state;
	assert_int_equal(acktr_init(&fast, 1024, 1, 0), 0);
	assert_int_equal(acktr_init(&slow, 1024, 1, 0), 0);
	for (uint32_t i = 0; i < 5 * CONN_DGRAM_HISTORY; i++) {
		uint32_t s = seq;
		bool dup = i % 89 == 88;

		if (dup)
			s = (seq - 1) & RUDP_WIRE_U24_MASK; /* the last one again */
		else if (i % 97 == 96)
			s = seq = rudp_u24_add(seq, 2); /* a gap of two */
		enum dgram_seq_verdict vf = acktr_on_dgram_seq(&fast, s);
		enum dgram_seq_verdict vs = acktr_on_dgram_seq_any(&slow, s);

		assert_int_equal(vf, vs);
		assert_int_equal(vf, dup ? DGRAM_SEEN : DGRAM_NEW);
		news += vf == DGRAM_NEW;
		if (i % 11 != 10) { /* else not acknowledged: a frame was refused */
			assert_true(acktr_queue_ack(&fast, s));
			assert_true(acktr_queue_ack_any(&slow, s));
		}
		acktr_check_same(&fast, &slow);
		if (i % 7 == 6) /* the queues were sent */
			fast.acks.count = slow.acks.count = fast.nacks.count = slow.nacks.count = 0;
		if (!dup)
			seq = rudp_u24_add(seq, 1);
	}
	assert_true(rudp_u24_diff(seq, 0) > 0 && seq < 5 * CONN_DGRAM_HISTORY); /* wrapped */
	assert_true(news > 4 * CONN_DGRAM_HISTORY);
	acktr_free(&fast);
	acktr_free(&slow);
}

/* Message seq of the send-queue test: its length and bytes follow from it. */
static uint16_t ring_len(uint32_t seq)
{
	return (uint16_t)(300 + (seq * 389u) % 1000);
}

static void ring_body(uint8_t *b, uint32_t seq)
{
	for (uint16_t i = 0; i < ring_len(seq); i++)
		b[i] = (uint8_t)(seq * 7u + i);
}

static void ring_check(const struct sendq *q, uint32_t oldest)
{
	uint8_t want[1400];

	for (uint32_t i = 0; i < q->frames_count; i++) {
		const struct sendq_frame *f = sendq_at(q, i);

		assert_int_equal(f->body_len, ring_len(oldest + i));
		ring_body(want, oldest + i);
		assert_memory_equal(sendq_body(q, f), want, f->body_len);
	}
}

/* The send queue's byte ring runs laps at a steady backlog (bodies skip to
 * its start, the tail moves round), then the backlog doubles and the ring
 * must grow with part of its bodies wrapped and its tail several laps from
 * where it started: in place inside its block, and with the block
 * reallocated (4, 16, 64, 128, 256 KiB; common/body_ring.h). Every body held
 * stays intact. */
static void test_sendq_ring_grows_while_wrapped(void **state)
{
	struct sendq q;
	struct sendq_totals totals = {0};
	uint8_t body[1400];
	uint32_t next = 0, oldest = 0, grows = 0, grows_lapped = 0;

	(void)state;
	sendq_init(&q, &totals);
	for (uint32_t backlog = 3; backlog <= 300; backlog = backlog * 2 + 1) {
		for (int lap = 0; lap < 150; lap++) {
			while (next - oldest < backlog) {
				struct sendq_frame tmpl;
				uint64_t cap = q.ring.cap, tail = q.ring.tail;

				memset(&tmpl, 0, sizeof(tmpl));
				tmpl.reliable_index = next;
				assert_int_equal(sendq_reserve(&q, 1, ring_len(next), ring_len(next), 0), 0);
				if (q.ring.cap != cap && cap) {
					grows++;
					grows_lapped += tail >= cap;
					ring_check(&q, oldest);
				}
				ring_body(body, next);
				sendq_push(&q, &tmpl, body, ring_len(next));
				next++;
			}
			ring_check(&q, oldest);
			sendq_pop_front(&q);
			oldest++;
		}
	}
	/* 4 KiB to 256 KiB, twice after the tail had run at least a lap. */
	assert_true(grows >= 6);
	assert_true(grows_lapped >= 2);
	assert_true(q.ring.cap >= 256u << 10);
	sendq_free(&q);
}

/* A frame record is one cache line and each starts on one (sendq.h), at
 * every size the record array grows to; what a record holds survives the
 * moves, the 24-bit numbers at their largest beside their byte fields,
 * a split frame's numbers and a shared frame's body. The totals two
 * queues share follow every push, drop, pop and free. */
static void test_sendq_records_on_lines(void **state)
{
	struct shared_body_pool pool = {0};
	static const uint8_t msg[] = {0x86, 1, 2, 3};
	struct shared_body *body = shared_body_new(&pool, msg, sizeof(msg));
	struct sendq q;
	struct sendq_totals totals = {0};
	uint8_t bytes[8] = {0x86};
	uint32_t grows = 0;

	(void)state;
	assert_non_null(body);
	sendq_init(&q, &totals);
	for (uint32_t i = 0; i < 300; i++) {
		struct sendq_frame tmpl;
		uint32_t cap = q.frames_cap;

		memset(&tmpl, 0, sizeof(tmpl));
		tmpl.reliable_index = RUDP_WIRE_U24_MASK - i;
		tmpl.reliability = 0xa5;
		tmpl.sequenced_index = RUDP_WIRE_U24_MASK;
		tmpl.channel = 31;
		tmpl.order_index = i;
		tmpl.hdr_len = 0xff;
		tmpl.last_dgram_seq = RUDP_WIRE_U24_MASK;
		tmpl.transmissions = 0xff;
		tmpl.deadline_us = i % 5 == 0 ? 10 : 0;
		assert_int_equal(sendq_reserve(&q, 1, sizeof(bytes), sizeof(bytes), 0), 0);
		if (q.frames_cap != cap) {
			grows++;
			assert_int_equal((uintptr_t)q.frames % 64, 0);
		}
		if (i % 3 == 0) {
			sendq_push_shared(&q, &tmpl, body);
		} else if (i % 3 == 1) {
			tmpl.split = true;
			tmpl.split_count = 0x400000;
			tmpl.split_index = i;
			sendq_push(&q, &tmpl, bytes, sizeof(bytes));
		} else {
			tmpl.shared = body; /* a copy's template may say anything here */
			sendq_push(&q, &tmpl, bytes, sizeof(bytes));
		}
	}
	assert_int_equal(sizeof(struct sendq_frame), 64);
	assert_true(grows >= 5);
	for (uint32_t i = 0; i < q.frames_count; i++) {
		const struct sendq_frame *f = sendq_at(&q, i);

		assert_int_equal((uintptr_t)f % 64, 0);
		assert_int_equal(f->reliable_index, RUDP_WIRE_U24_MASK - i);
		assert_int_equal(f->reliability, 0xa5);
		assert_int_equal(f->sequenced_index, RUDP_WIRE_U24_MASK);
		assert_int_equal(f->channel, 31);
		assert_int_equal(f->order_index, i);
		assert_int_equal(f->hdr_len, 0xff);
		assert_int_equal(f->last_dgram_seq, RUDP_WIRE_U24_MASK);
		assert_int_equal(f->transmissions, 0xff);
		if (i % 3 == 0) {
			assert_ptr_equal(sendq_frame_shared(f), body);
			assert_ptr_equal(sendq_body(&q, f), body->bytes);
		} else {
			assert_null(sendq_frame_shared(f));
			assert_memory_equal(sendq_body(&q, f), bytes, sizeof(bytes));
		}
		if (i % 3 == 1) {
			assert_int_equal(f->split_count, 0x400000);
			assert_int_equal(f->split_index, i);
		}
	}
	assert_int_equal(body->refs, 1 + 100);
	assert_int_equal(totals.records, 300);
	assert_int_equal(totals.body_bytes, q.body_bytes);

	struct sendq other;
	uint64_t next;
	sendq_init(&other, &totals);
	assert_int_equal(sendq_reserve(&other, 1, sizeof(bytes), sizeof(bytes), 0), 0);
	struct sendq_frame tmpl = {0};
	sendq_push(&other, &tmpl, bytes, 5);
	assert_int_equal(totals.records, 301);
	assert_int_equal(totals.body_bytes, q.body_bytes + 5);
	assert_int_equal(sendq_drop_expired(&q, 10, &next), 60);
	assert_int_equal(totals.records, 241);
	assert_int_equal(totals.body_bytes, q.body_bytes + 5);
	for (int i = 0; i < 10; i++)
		sendq_pop_front(&q);
	assert_int_equal(q.frames_count, 230);
	assert_int_equal(totals.records, 231);
	assert_int_equal(totals.body_bytes, q.body_bytes + 5);
	sendq_free(&q);
	assert_int_equal(body->refs, 1);
	assert_int_equal(totals.records, 1);
	assert_int_equal(totals.body_bytes, 5);
	sendq_free(&other);
	assert_int_equal(totals.records, 0);
	assert_int_equal(totals.body_bytes, 0);
	shared_body_release(body);
	shared_body_pool_destroy(&pool);
}

/* A ring grows only when the bodies would not fit where they will be put:
 * at a steady 20 unacknowledged 800 B messages, 16 KiB holds them on every
 * lap (the 384 B left at the ring's end are skipped), so it stays 16 KiB.
 * Once it held 16 messages plus a whole body of slack and doubled at the
 * 17th. A message of two 1,200 B fragments is placed one body at a time,
 * as sendq_push places them, and with 19 held it does not fit: the ring
 * grows, every body intact. */
static void test_sendq_grows_only_when_bodies_do_not_fit(void **state)
{
	struct sendq q;
	struct sendq_totals totals = {0};
	uint8_t body[1200];
	struct sendq_frame tmpl;
	uint32_t next = 0, oldest = 0;

	(void)state;
	memset(&tmpl, 0, sizeof(tmpl));
	sendq_init(&q, &totals);
	assert_int_equal(sendq_reserve(&q, 16, 16 * 800, 1200, 0), 0);
	assert_int_equal(q.ring.cap, 16384);
	for (int i = 0; i < 500; i++) {
		while (next - oldest < 20) {
			assert_int_equal(sendq_reserve(&q, 1, 800, 1200, 0), 0);
			assert_int_equal(q.ring.cap, 16384);
			memset(body, (int)(next & 0xff), 800);
			tmpl.reliable_index = next++;
			sendq_push(&q, &tmpl, body, 800);
		}
		assert_true(q.ring.head - q.ring.tail <= q.ring.cap);
		sendq_pop_front(&q);
		oldest++;
	}
	/* 19 held: 15,200 B plus up to 800 skipped; two 1,200 B bodies more
	 * cannot fit in 16 KiB. The ring grows with its bodies intact, the
	 * block it leaves given back (common/body_ring.h). */
	assert_int_equal(sendq_reserve(&q, 2, 2400, 1200, 0), 0);
	assert_int_equal(q.ring.cap, 32768);
	for (uint32_t i = 0; i < q.frames_count; i++) {
		const struct sendq_frame *f = sendq_at(&q, i);

		assert_int_equal(f->reliable_index, oldest + i);
		memset(body, (int)((oldest + i) & 0xff), 800);
		assert_memory_equal(sendq_body(&q, f), body, 800);
	}
	sendq_free(&q);
}

/* An empty ring a burst grew shrinks back to 16 KiB once it has gone
 * SENDQ_TRIM_AFTER_US (1 s) without growing, never while it holds a body,
 * and grows again in its block with every body intact. */
static void test_sendq_idle_ring_shrinks(void **state)
{
	struct sendq q;
	struct sendq_totals totals = {0};
	uint8_t body[1000];
	struct sendq_frame tmpl;
	uint64_t block;

	(void)state;
	memset(&tmpl, 0, sizeof(tmpl));
	sendq_init(&q, &totals);
	for (int round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < 60; i++) {
			/* Grown at 5 s (conn time), by the reserve's own stamp. */
			assert_int_equal(sendq_reserve(&q, 1, 1000, 1000, 5000000), 0);
			memset(body, (int)(i + 7 * round), sizeof(body));
			tmpl.reliable_index = i;
			sendq_push(&q, &tmpl, body, sizeof(body));
		}
		assert_int_equal(q.ring.cap, 65536);
		if (round == 0)
			block = q.ring.block;
		/* Grown again in place: the block the first burst left. */
		assert_int_equal(q.ring.block, block);
		for (uint32_t i = 0; i < 60; i++) {
			memset(body, (int)(i + 7 * round), sizeof(body));
			assert_memory_equal(sendq_body(&q, sendq_at(&q, i)), body, sizeof(body));
		}
		/* Not while a body is held, however long ago the growth was. */
		while (q.frames_count > 1)
			sendq_pop_front(&q);
		sendq_trim_idle(&q, 60000000);
		assert_int_equal(q.ring.cap, 65536);
		sendq_pop_front(&q);
		/* Empty, but grown less than a second ago. */
		sendq_trim_idle(&q, 5999999);
		assert_int_equal(q.ring.cap, 65536);
		sendq_trim_idle(&q, 6000000);
		assert_int_equal(q.ring.cap, 16384);
		assert_int_equal(q.ring.head, 0);
		assert_int_equal(q.ring.tail, 0);
	}
	/* A ring that never grew past 16 KiB stays as it is. */
	sendq_trim_idle(&q, 60000000);
	assert_int_equal(q.ring.cap, 16384);
	sendq_free(&q);
}

/* The congestion window's rules (cc.c), in bytes with a 1,000 B datagram. */
/* A ring in steady use that grew long ago shrinks back to 16 KiB when it
 * is empty, but keeps its pages (it is not idle): the second branch of the
 * idle rule, which the tests above, idle for a second, never reach. */
static void test_sendq_busy_ring_shrinks_but_keeps_pages(void **state)
{
	struct sendq q;
	struct sendq_totals totals = {0};
	uint8_t body[1000];
	struct sendq_frame tmpl;

	(void)state;
	memset(&tmpl, 0, sizeof(tmpl));
	memset(body, 3, sizeof(body));
	sendq_init(&q, &totals);
	for (uint32_t i = 0; i < 60; i++) {
		assert_int_equal(sendq_reserve(&q, 1, sizeof(body), sizeof(body), 5000000), 0);
		sendq_push(&q, &tmpl, body, sizeof(body));
	}
	assert_int_equal(q.ring.cap, 65536);
	while (q.frames_count > 0)
		sendq_pop_front(&q);
	/* One small message a while later: used, not grown. */
	assert_int_equal(sendq_reserve(&q, 1, 100, 100, 6500000), 0);
	sendq_push(&q, &tmpl, body, 100);
	assert_int_equal(q.ring.cap, 65536);
	sendq_pop_front(&q);
	sendq_trim_idle(&q, 6600000);
	assert_int_equal(q.ring.cap, 16384);
	assert_false(q.ring.pages_released);
	assert_int_equal(q.ring.head, 0);
	assert_int_equal(q.ring.tail, 0);
	sendq_free(&q);
}

/* Whole pages of [from, to) that are resident now (mincore). */
static size_t resident_pages(const uint8_t *from, const uint8_t *to)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)from + page - 1) & ~(page - 1), hi = (uintptr_t)to & ~(page - 1);
	unsigned char vec[64];
	size_t n = 0;

	assert_true(hi > lo && (hi - lo) / page <= sizeof(vec));
	assert_int_equal(mincore((void *)lo, hi - lo, vec), 0);
	for (size_t i = 0; i < (hi - lo) / page; i++)
		n += vec[i] & 1;
	return n;
}

/* A queue nothing was put on for a second gives all its ring's pages back
 * (once: the flag stops a madvise per flush), and works as before when
 * used again. */
static void test_sendq_idle_ring_pages_released(void **state)
{
	struct sendq q;
	struct sendq_totals totals = {0};
	uint8_t body[800];
	struct sendq_frame tmpl;

	(void)state;
	memset(&tmpl, 0, sizeof(tmpl));
	sendq_init(&q, &totals);
	for (uint32_t i = 0; i < 20; i++) {
		assert_int_equal(sendq_reserve(&q, 1, sizeof(body), sizeof(body), 5000000), 0);
		memset(body, (int)i + 1, sizeof(body));
		sendq_push(&q, &tmpl, body, sizeof(body));
	}
	assert_int_equal(q.ring.cap, 16384);
	assert_true(resident_pages(q.ring.buf, q.ring.buf + q.ring.block) >= 2);
	while (q.frames_count > 0)
		sendq_pop_front(&q);
	sendq_trim_idle(&q, 5999999);
	assert_false(q.ring.pages_released);
	assert_true(resident_pages(q.ring.buf, q.ring.buf + q.ring.block) >= 2);
	sendq_trim_idle(&q, 6000000);
	assert_true(q.ring.pages_released);
	assert_int_equal(resident_pages(q.ring.buf, q.ring.buf + q.ring.block), 0);
	assert_int_equal(q.ring.cap, 16384);
	/* Used again: in the same block, the bodies read back intact. */
	uint8_t *block = q.ring.buf;
	for (uint32_t i = 0; i < 20; i++) {
		assert_int_equal(sendq_reserve(&q, 1, sizeof(body), sizeof(body), 7000000), 0);
		memset(body, (int)i + 50, sizeof(body));
		sendq_push(&q, &tmpl, body, sizeof(body));
	}
	assert_false(q.ring.pages_released);
	assert_ptr_equal(q.ring.buf, block);
	for (uint32_t i = 0; i < 20; i++) {
		memset(body, (int)i + 50, sizeof(body));
		assert_memory_equal(sendq_body(&q, sendq_at(&q, i)), body, sizeof(body));
	}
	sendq_free(&q);
}

/* A loss engine with per-datagram records, as a rate controller's conn has. */
static const struct loss_config dgram_log_cfg = {.window_frames = 64,
						 .max_ack_ranges = 64,
						 .rto_initial_us = 1000000,
						 .rto_min_us = 200000,
						 .rto_max_us = 8000000,
						 .dgram_log = true};

/* The loss engine's per-datagram records: they grow while datagrams wait
 * unresolved, up to LOSS_DGRAM_LOG_MAX; past it the oldest record is
 * reused, and handed back as evicted with its bytes and data. */
static void test_dgram_log_grows_then_evicts(void **state)
{
	struct loss_engine l;
	struct dgram_evicted ev;
	uint32_t *data;

	(void)state;
	assert_int_equal(loss_init(&l, &dgram_log_cfg), 0);
	for (uint32_t seq = 0; seq < LOSS_DGRAM_LOG_MAX; seq++) {
		data = loss_dgram_record(&l, seq, 100 + seq, 1000 + seq, &ev);
		assert_false(ev.any);
		data[0] = seq * 3;
	}
	assert_int_equal(l.dlog.size, LOSS_DGRAM_LOG_MAX);
	assert_int_equal(l.dlog.pending, LOSS_DGRAM_LOG_MAX);
	assert_int_equal(l.dlog.oldest, 0);
	for (uint32_t seq = LOSS_DGRAM_LOG_MAX; seq < LOSS_DGRAM_LOG_MAX + 3; seq++) {
		uint32_t old = seq - LOSS_DGRAM_LOG_MAX;

		data = loss_dgram_record(&l, seq, 7, 9000, &ev);
		assert_true(ev.any);
		assert_int_equal(ev.bytes, 100 + old);
		assert_int_equal(ev.data[0], old * 3);
		assert_int_equal(l.dlog.pending, LOSS_DGRAM_LOG_MAX);
		assert_int_equal(l.dlog.oldest, old + 1);
		data[0] = 0;
	}
	assert_int_equal(l.dlog.size, LOSS_DGRAM_LOG_MAX);
	loss_free(&l);
}

/* An ACK resolves the records it names, and the oldest unresolved one is
 * found past them: at the first gap the ACK leaves, or, with none left,
 * at the next seq. */
/* Feeds l an ACK of ranges (nothing in flight in the frame queue) and
 * checks the datagram records after it. */
static void ack_records_expect(struct loss_engine *l, const struct rudp_wire_range *ranges, size_t n_ranges,
			       uint32_t verdicts, uint32_t pending, uint32_t oldest)
{
	struct sendq rel = {0};
	struct loss_verdict v;
	uint8_t buf[64];
	size_t encoded;
	int n = rudp_wire_encode_ack(buf, sizeof(buf), false, ranges, n_ranges, &encoded);

	assert_true(n > 0);
	assert_int_equal(loss_on_ack_datagram(l, &rel, 0, 10, buf, (size_t)n, 5000, &v), 0);
	assert_int_equal(loss_dgram_verdicts(l), verdicts);
	assert_int_equal(l->dlog.pending, pending);
	assert_int_equal(l->dlog.oldest, oldest);
}

static void test_dgram_log_ack_moves_oldest(void **state)
{
	const struct rudp_wire_range top[] = {{7, 9}}, two[] = {{0, 4}, {6, 9}}, gap[] = {{5, 5}};
	struct loss_engine l;
	struct dgram_evicted ev;

	(void)state;
	assert_int_equal(loss_init(&l, &dgram_log_cfg), 0);
	for (uint32_t seq = 0; seq < 10; seq++)
		loss_dgram_record(&l, seq, 100, 1000 + seq, &ev);
	/* The newest first: the oldest stays. */
	ack_records_expect(&l, top, 1, 3, 7, 0);
	ack_records_expect(&l, two, 2, 6, 1, 5);
	ack_records_expect(&l, gap, 1, 1, 0, 10);
	loss_free(&l);
}

/* How long (µs) after its send at 1 s the tail-loss probe of one frame is
 * due, for an RTT estimate of srtt, rttvar and minimum min (ms), no ACK
 * progress since and a probe margin of 250 µs. */
static uint64_t probe_wait_us(uint64_t srtt, uint64_t rttvar, uint64_t min)
{
	const struct loss_config cfg = {.window_frames = 64,
					.max_ack_ranges = 64,
					.rto_initial_us = 200000,
					.rto_min_us = 30000,
					.rto_max_us = 2000000,
					.probe_margin_us = 250};
	struct loss_engine l;
	struct sendq q;
	struct sendq_totals totals = {0};
	struct sendq_frame tmpl, *f;
	uint8_t body[100] = {0};
	uint64_t due;

	assert_int_equal(loss_init(&l, &cfg), 0);
	sendq_init(&q, &totals);
	memset(&tmpl, 0, sizeof(tmpl));
	assert_int_equal(sendq_reserve(&q, 1, sizeof(body), sizeof(body), 0), 0);
	f = sendq_push(&q, &tmpl, body, sizeof(body));
	f->state = FRAME_IN_FLIGHT;
	f->last_send_us = 1000000;
	l.rel_unacked = 1;
	l.rtt.has_sample = true;
	l.rtt.srtt_us = srtt * 1000;
	l.rtt.rttvar_us = rttvar * 1000;
	l.rtt.min_us = min * 1000;
	due = loss_probe_deadline(&l, &q, 1);
	sendq_free(&q);
	loss_free(&l);
	return due - 1000000;
}

/* The probe waits srtt + 2 rttvar where the RTT stays within three
 * minimum RTTs (a path, its own queue included), and srtt + 4 rttvar
 * past that (a busy host's queue, heavy-tailed), never under the margin. */
static void test_probe_wait_follows_the_queue(void **state)
{
	(void)state;
	assert_int_equal(probe_wait_us(20, 1, 19), 22000);
	assert_int_equal(probe_wait_us(45, 5, 15), 55000);
	assert_int_equal(probe_wait_us(46, 5, 15), 66000);
	assert_int_equal(probe_wait_us(30, 0, 3), 30250);
}

static void test_cc_slow_start_and_limits(void **state)
{
	struct congestion cc;

	(void)state;
	cc_init(&cc, true, 1000, 64000);
	assert_int_equal(cc.cwnd, 10000);
	assert_int_equal(cc.min_cwnd, 2000);
	/* Nothing in flight: any frame may go, even one larger than the window. */
	assert_true(cc_can_send(&cc, 0, 20000));
	cc_on_sent(&cc, 9500);
	assert_true(cc_can_send(&cc, 0, 500));
	assert_false(cc_would_send(&cc, 501));
	assert_false(cc.window_limited);
	/* A frame already in the datagram being built counts too. */
	assert_false(cc_can_send(&cc, 400, 200));
	assert_true(cc.window_limited);
	/* Slow start: the window grows by what is acknowledged. */
	cc_on_left(&cc, 4000);
	cc_on_acked(&cc, 4000);
	assert_int_equal(cc.cwnd, 14000);
	assert_int_equal(cc.in_flight, 5500);
	/* Up to the most the reliable window could use. */
	cc.window_limited = true;
	cc_on_acked(&cc, 100000);
	assert_int_equal(cc.cwnd, 64000);
	/* An application sending little (flight under half the window, never
	 * held back) does not grow it. */
	cc_init(&cc, true, 1000, 64000);
	cc_on_sent(&cc, 3000);
	cc_on_left(&cc, 1000);
	cc_on_acked(&cc, 1000);
	assert_int_equal(cc.cwnd, 10000);
	/* Off: nothing is held back, the window never moves. */
	cc_init(&cc, false, 1000, 64000);
	cc_on_sent(&cc, 50000);
	assert_true(cc_can_send(&cc, 0, 20000));
	cc_on_loss(&cc, 5, 10, true);
	cc_on_timeout(&cc, 5, 10);
	assert_int_equal(cc.cwnd, 10000);
	assert_int_equal(cc.reductions, 0);
	assert_int_equal(cc.in_flight, 50000);
}

static void test_cc_loss_and_timeout(void **state)
{
	struct congestion cc;

	(void)state;
	cc_init(&cc, true, 1000, 64000);
	/* A loss: window and ssthresh to 0.7 of it, once per flight. */
	cc_on_loss(&cc, 100, 120, true);
	assert_int_equal(cc.cwnd, 7000);
	assert_int_equal(cc.ssthresh, 7000);
	assert_int_equal(cc.reductions, 1);
	cc_on_loss(&cc, 119, 125, true); /* sent before the reduction: the same episode */
	assert_int_equal(cc.cwnd, 7000);
	cc_on_loss(&cc, 120, 130, true); /* sent after it: news */
	assert_int_equal(cc.cwnd, 4900);
	assert_int_equal(cc.reductions, 2);
	/* Above ssthresh: one datagram per two windows acknowledged. */
	cc.window_limited = true;
	cc_on_acked(&cc, 4900);
	assert_int_equal(cc.cwnd, 4900);
	cc_on_acked(&cc, 4900);
	assert_int_equal(cc.cwnd, 5900);
	/* The floor: two datagrams. */
	for (uint32_t seq = 200; seq < 260; seq += 10)
		cc_on_loss(&cc, seq, seq + 5, true);
	assert_int_equal(cc.cwnd, 2000);
	/* A timeout: ssthresh to half the window, the window to its floor,
	 * slow start again. */
	cc_init(&cc, true, 1000, 64000);
	cc.cwnd = 30000;
	cc_on_timeout(&cc, 50, 60);
	assert_int_equal(cc.cwnd, 2000);
	assert_int_equal(cc.ssthresh, 15000);
	/* The same data timing out again (backoff) keeps ssthresh. */
	cc_on_timeout(&cc, 55, 61);
	assert_int_equal(cc.ssthresh, 15000);
	assert_int_equal(cc.reductions, 1);
	cc.window_limited = true;
	cc_on_acked(&cc, 20000);
	assert_int_equal(cc.cwnd, 15000);
	/* Loss while the RTT stays at the path's minimum is taken for random
	 * (a radio link, not a full queue): the window stays. */
	cc_init(&cc, true, 1000, 64000);
	cc_on_loss(&cc, 100, 120, false);
	assert_int_equal(cc.cwnd, 10000);
	assert_int_equal(cc.reductions, 0);
	assert_false(cc_queue_is_building(24999, 20000));
	assert_true(cc_queue_is_building(25000, 20000)); /* a quarter above */
	assert_false(cc_queue_is_building(2099, 100)); /* under 2 ms of queue */
	assert_true(cc_queue_is_building(2100, 100));
	assert_false(cc_queue_is_building(5000, 0)); /* no sample yet */
	/* Datagram seqs are 24 bits: the recovery point works across the wrap. */
	cc_init(&cc, true, 1000, 64000);
	cc_on_loss(&cc, 0xfffff0, 0xfffffe, true);
	assert_int_equal(cc.cwnd, 7000);
	cc_on_loss(&cc, 0xfffffd, 0x000003, true); /* older than the point */
	assert_int_equal(cc.cwnd, 7000);
	cc_on_loss(&cc, 0x000001, 0x000005, true); /* newer, past the wrap */
	assert_int_equal(cc.cwnd, 4900);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rtt_first_sample),
		cmocka_unit_test(test_dgram_log_grows_then_evicts),
		cmocka_unit_test(test_dgram_log_ack_moves_oldest),
		cmocka_unit_test(test_probe_wait_follows_the_queue),
		cmocka_unit_test(test_rtt_clamps_and_backoff),
		cmocka_unit_test(test_ackq_coalesces),
		cmocka_unit_test(test_ackq_wraps),
		cmocka_unit_test(test_ackq_remove),
		cmocka_unit_test(test_acktr_in_order_fast_path),
		cmocka_unit_test(test_ackq_grows_to_max),
		cmocka_unit_test(test_sendq_ring_grows_while_wrapped),
		cmocka_unit_test(test_sendq_records_on_lines),
		cmocka_unit_test(test_sendq_grows_only_when_bodies_do_not_fit),
		cmocka_unit_test(test_sendq_idle_ring_shrinks),
		cmocka_unit_test(test_sendq_idle_ring_pages_released),
		cmocka_unit_test(test_sendq_busy_ring_shrinks_but_keeps_pages),
		cmocka_unit_test(test_cc_slow_start_and_limits),
		cmocka_unit_test(test_cc_loss_and_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
