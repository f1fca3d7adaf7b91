/* SPDX-License-Identifier: MIT */
/*
 * Send policy, conn level (psim.h): each budget, the writable signal,
 * priority order, the anti-starvation rule, ordered channels across
 * priorities, graceful disconnect and detaching with staged messages, and
 * the conn without a policy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psim.h"

#define MS 1000ull
#define SEC 1000000ull

static const struct psim_link fast = {.delay_us = 5 * MS};

static struct psim *pair_cc(uint32_t window, bool congestion_control, const struct psim_link *link)
{
	struct rudp_conn_config cfg;
	struct psim *s = malloc(sizeof(*s));

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	cfg.window_frames = window;
	cfg.congestion_control = congestion_control;
	psim_init(s, &cfg, link, link, 1);
	psim_connect(s);
	return s;
}

static struct psim *pair(uint32_t window, const struct psim_link *link)
{
	return pair_cc(window, false, link);
}

static void pair_free(struct psim *s)
{
	psim_free(s);
	free(s);
}

static struct rudp_policy_config defaults(void)
{
	struct rudp_policy_config p;

	rudp_policy_config_init(&p);
	return p;
}

static struct rudp_policy_stats stats(struct psim *s, int ep)
{
	struct rudp_policy_stats st;

	rudp_policy_get_stats(s->ep[ep].policy, &st);
	return st;
}

/* Tags of what endpoint 1 received, in delivery order. */
static void received_tags(struct psim *s, char *out, size_t cap)
{
	size_t n = s->ep[1].nlog < cap - 1 ? s->ep[1].nlog : cap - 1;

	for (size_t i = 0; i < n; i++)
		out[i] = (char)s->ep[1].log[i].tag;
	out[n] = 0;
}

static void test_config_defaults_and_checks(void **state)
{
	struct rudp_policy_config p = defaults(), bad;

	(void)state;
	assert_int_equal(p.max_in_flight_bytes, 64u << 20);
	assert_int_equal(p.reliable_soft_budget, 256u << 10);
	assert_int_equal(p.unreliable_reserve, 64u << 10);
	assert_int_equal(p.flush_budget, 256u << 10);
	assert_int_equal(p.starvation_limit, 16);
	assert_int_equal(rudp_policy_config_check(&p), 0);
	assert_int_equal(rudp_policy_config_check(NULL), RUDP_CONN_E_ARG);
	bad = p, bad.max_in_flight_bytes = 0;
	assert_int_equal(rudp_policy_config_check(&bad), RUDP_CONN_E_ARG);
	bad = p, bad.reliable_soft_budget = 0;
	assert_int_equal(rudp_policy_config_check(&bad), RUDP_CONN_E_ARG);
	bad = p, bad.flush_budget = 0;
	assert_int_equal(rudp_policy_config_check(&bad), RUDP_CONN_E_ARG);
	bad = p, bad.unreliable_reserve = RUDP_POLICY_MIN_RESERVE - 1;
	assert_int_equal(rudp_policy_config_check(&bad), RUDP_CONN_E_ARG);
	bad = p, bad.starvation_limit = 0;
	assert_int_equal(rudp_policy_config_check(&bad), RUDP_CONN_E_ARG);
	bad = p, bad.starvation_limit = RUDP_POLICY_MAX_STARVATION + 1;
	assert_int_equal(rudp_policy_config_check(&bad), RUDP_CONN_E_ARG);
	assert_null(rudp_policy_create(&bad));
	assert_int_equal(rudp_policy_reconfigure(NULL, &p), RUDP_CONN_E_ARG);
}

static void test_soft_budget_refuses_then_writable(void **state)
{
	/* A window of one frame: nothing goes straight in (half of it is
	 * none), so the budget counts staged bodies here. */
	struct psim *s = pair(1, &fast);
	struct rudp_policy_config p = defaults();
	struct rudp_conn_stats cs;
	struct rudp_policy_stats st;
	uint32_t seq = 0;

	(void)state;
	p.reliable_soft_budget = 8192;
	psim_attach_policy(s, 0, &p);
	/* 8 KiB of reliable-ordered messages fill the budget exactly. */
	for (int i = 0; i < 8; i++)
		assert_int_equal(psim_send(s, 0, 1024, 'r', seq++, 3, 0, RUDP_CONN_PRIO_MEDIUM), 0);
	assert_int_equal(psim_send(s, 0, 1024, 'r', seq, 3, 0, RUDP_CONN_PRIO_MEDIUM),
			 RUDP_POLICY_E_WOULD_BLOCK);
	/* Every priority and every reliable kind is refused alike. */
	assert_int_equal(psim_send(s, 0, 20, 'r', seq, 2, 0, RUDP_CONN_PRIO_IMMEDIATE),
			 RUDP_POLICY_E_WOULD_BLOCK);
	st = stats(s, 0);
	assert_int_equal(st.sends_refused, 2);
	assert_int_equal(st.reliable_queue_bytes, 8192);
	rudp_conn_get_stats(s->ep[0].c, &cs);
	assert_int_equal(cs.messages_sent, 8); /* nothing of the refused ones was taken */
	/* Unreliable messages are not held back by the reliable budget. */
	assert_int_equal(psim_send(s, 0, 100, 'u', 0, 0, 0, RUDP_CONN_PRIO_HIGH), 0);
	assert_int_equal(s->ep[0].writable, 0);

	psim_settle(s, 5 * SEC);
	assert_int_equal(s->ep[0].writable, 1);
	assert_int_equal(stats(s, 0).writable_signals, 1);
	assert_int_equal(stats(s, 0).reliable_queue_bytes, 0);
	/* The refused message did not take an order index: seq 8 follows 7. */
	assert_int_equal(psim_send(s, 0, 1024, 'r', seq++, 3, 0, RUDP_CONN_PRIO_MEDIUM), 0);
	/* Soft: an empty queue takes a message larger than the whole budget. */
	assert_int_equal(psim_send(s, 0, 20000, 'r', seq++, 3, 0, RUDP_CONN_PRIO_MEDIUM), 0);
	assert_int_equal(psim_send(s, 0, 100, 'r', seq, 3, 0, RUDP_CONN_PRIO_MEDIUM),
			 RUDP_POLICY_E_WOULD_BLOCK);
	psim_settle(s, 5 * SEC);
	assert_int_equal(s->ep[0].writable, 2);

	uint32_t want = 0;
	for (size_t i = 0; i < s->ep[1].nlog; i++) {
		if (s->ep[1].log[i].tag == 'r')
			assert_int_equal(s->ep[1].log[i].seq, want++);
	}
	assert_int_equal(want, 10);
	pair_free(s);
}

static void test_unreliable_reserve_drops_oldest(void **state)
{
	struct psim *s = pair(64, &fast);
	struct rudp_policy_config p = defaults();
	struct rudp_policy_stats st;

	(void)state;
	p.unreliable_reserve = 8192;
	psim_attach_policy(s, 0, &p);
	/* Mixed priorities: eviction goes by age, not by class. */
	for (uint32_t i = 0; i < 20; i++)
		assert_int_equal(psim_send(s, 0, 1000, 'u', i, 0, 0, (uint8_t)(i % 4)), 0);
	st = stats(s, 0);
	assert_int_equal(st.dropped[RUDP_POLICY_DROP_RESERVE], 12);
	assert_int_equal(st.unreliable_queue_bytes, 8000);
	assert_true(st.peak_unreliable_queue_bytes <= 8192);
	psim_settle(s, 5 * SEC);
	/* The 8 newest arrive (seqs 12..19), in priority order. */
	assert_int_equal(s->ep[1].nlog, 8);
	uint32_t seen = 0;
	for (size_t i = 0; i < s->ep[1].nlog; i++) {
		assert_true(s->ep[1].log[i].seq >= 12);
		seen |= 1u << (s->ep[1].log[i].seq - 12);
		if (i > 0)
			assert_true(s->ep[1].log[i - 1].seq % 4 <= s->ep[1].log[i].seq % 4);
	}
	assert_int_equal(seen, 0xff);
	pair_free(s);
}

static void test_flush_budget_bounds_one_flush(void **state)
{
	struct psim *s = pair(64, &fast);
	struct rudp_policy_config p = defaults();
	uint64_t before_bytes, before_dgrams;

	(void)state;
	p.flush_budget = 4096;
	psim_attach_policy(s, 0, &p);
	for (uint32_t i = 0; i < 40; i++)
		assert_int_equal(psim_send(s, 0, 1000, 'r', i, 2, 0, RUDP_CONN_PRIO_MEDIUM), 0);
	before_bytes = s->ep[0].bytes_out;
	psim_flush(s, 0);
	assert_true(s->ep[0].bytes_out - before_bytes <= 4096);
	assert_true(s->ep[0].bytes_out - before_bytes >= 3000); /* it did use the budget */
	assert_int_equal(stats(s, 0).flushes_budget_limited, 1);
	/* The conn knows it has more to do right now. */
	assert_true(rudp_conn_wants_flush(s->ep[0].c));

	/* A budget below one datagram still lets exactly one out per flush. */
	p.flush_budget = 1;
	assert_int_equal(rudp_policy_reconfigure(s->ep[0].policy, &p), 0);
	before_dgrams = s->ep[0].dgrams_out;
	psim_flush(s, 0);
	assert_int_equal(s->ep[0].dgrams_out - before_dgrams, 1);
	p.flush_budget = 4096;
	assert_int_equal(rudp_policy_reconfigure(s->ep[0].policy, &p), 0);
	psim_settle(s, 10 * SEC);
	assert_int_equal(s->ep[1].nlog, 40);
	pair_free(s);
}

static bool all_40(struct psim *s)
{
	return s->ep[1].nlog == 40;
}

static void run_in_flight(uint32_t cap, uint64_t *peak_out)
{
	const struct psim_link slow = {.delay_us = 50 * MS};
	struct psim *s = pair(64, &slow);
	struct rudp_policy_config p = defaults();

	p.max_in_flight_bytes = cap;
	psim_attach_policy(s, 0, &p);
	for (uint32_t i = 0; i < 40; i++)
		assert_int_equal(psim_send(s, 0, 1000, 'r', i, 2, 0, RUDP_CONN_PRIO_MEDIUM), 0);
	while (!all_40(s)) {
		psim_step(s);
		assert_true(stats(s, 0).in_flight_bytes <= (cap < 1100 ? 1100 : cap));
		assert_true(s->now < 100 * SEC);
	}
	*peak_out = stats(s, 0).peak_in_flight_bytes;
	pair_free(s);
}

static void test_in_flight_cap(void **state)
{
	uint64_t peak;

	(void)state;
	run_in_flight(8192, &peak);
	assert_true(peak <= 8192 && peak > 8192 - 1100); /* reached, never passed */
	/* A cap below one frame: one frame at a time, and it still finishes. */
	run_in_flight(1, &peak);
	assert_true(peak > 1000 && peak < 1100);
}

static void run_order(uint32_t starvation, const char *send_tags, uint8_t rel, char *got, size_t cap)
{
	struct psim *s = pair(1, &fast);
	struct rudp_policy_config p = defaults();
	uint32_t seq = 0;

	p.starvation_limit = starvation;
	psim_attach_policy(s, 0, &p);
	/* The tag is the priority digit. */
	for (const char *t = send_tags; *t; t++)
		assert_int_equal(psim_send(s, 0, 40, (uint8_t)*t, seq++, rel, 0, (uint8_t)(*t - '0')), 0);
	psim_settle(s, 30 * SEC);
	received_tags(s, got, cap);
	pair_free(s);
}

static void test_priority_order(void **state)
{
	char got[128];

	(void)state;
	/* Window of one frame: the delivery order is the order of picks. */
	run_order(1000, "333222111000", RUDP_WIRE_RELIABLE, got, sizeof(got));
	assert_string_equal(got, "000111222333");
	run_order(1000, "313020321", RUDP_WIRE_RELIABLE, got, sizeof(got));
	assert_string_equal(got, "001122333");
	/* Unreliable messages go by priority too (all in one flush here). */
	run_order(1000, "333222111000", RUDP_WIRE_UNRELIABLE, got, sizeof(got));
	assert_string_equal(got, "000111222333");
}

static void test_anti_starvation(void **state)
{
	char got[128];
	char sent[64];
	size_t n = 0;

	(void)state;
	/* 20 high, 5 low, limit 4: low goes after every 4 highs. */
	memset(sent, '1', 20);
	memset(sent + 20, '3', 5);
	sent[25] = 0;
	run_order(4, sent, RUDP_WIRE_RELIABLE, got, sizeof(got));
	assert_string_equal(got, "1111311113111131111311113");

	/* Three backlogged classes, limit 2: between two picks of any class
	 * (and before its first) at most limit + 3 picks of others. */
	memset(sent, '3', 10);
	memset(sent + 10, '2', 10);
	memset(sent + 20, '1', 10);
	sent[30] = 0;
	run_order(2, sent, RUDP_WIRE_RELIABLE, got, sizeof(got));
	assert_int_equal(strlen(got), 30);
	for (char cls = '1'; cls <= '3'; cls++) {
		size_t last = 0, count = 0;

		for (size_t i = 0; i < 30; i++) {
			if (got[i] != cls)
				continue;
			assert_true(i - last <= 2 + 3);
			last = i + 1;
			count++;
		}
		assert_int_equal(count, 10);
		n += count;
	}
	assert_int_equal(n, 30);
	/* ...and high priority still gets the larger share early on. */
	size_t high_first10 = 0;
	for (size_t i = 0; i < 10; i++)
		high_first10 += got[i] == '1';
	assert_true(high_first10 >= 4);
}

static void test_ordered_channel_keeps_send_order(void **state)
{
	struct psim *s = pair(4, &fast);
	struct rudp_policy_config p = defaults();

	(void)state;
	psim_attach_policy(s, 0, &p);
	for (uint32_t i = 0; i < 24; i++)
		assert_int_equal(psim_send(s, 0, 200, 'o', i, 3, 5, (uint8_t)(3 - i % 4)), 0);
	psim_settle(s, 10 * SEC);
	assert_int_equal(s->ep[1].nlog, 24);
	for (uint32_t i = 0; i < 24; i++) {
		assert_int_equal(s->ep[1].log[i].seq, i);
		assert_int_equal(s->ep[1].log[i].channel, 5);
	}
	pair_free(s);
}

static bool never(struct psim *s)
{
	(void)s;
	return false;
}

/* A stage class's byte ring runs laps while the window drains it, then
 * grows with part of it wrapped and its tail laps from where it started:
 * in place inside its block, and with the block reallocated
 * (common/body_ring.h). Every message must come out whole and in order
 * (psim checks each byte of each body). */
static void test_stage_ring_grows_while_wrapped(void **state)
{
	struct psim *s = pair(2, &fast);
	struct rudp_policy_config p = defaults();
	struct rudp_policy_stats st;
	uint32_t seq = 0;

	(void)state;
	p.reliable_soft_budget = 1u << 20;
	psim_attach_policy(s, 0, &p);
	for (int phase = 0; phase < 6; phase++) {
		/* A burst the class cannot hold in its ring (it grows),
		 * then a steady stream about as fast as the window of two
		 * frames takes it (one round trip: 10 ms), so the backlog
		 * stays while the tail runs laps of the ring. */
		for (int k = 0; k < 6 << phase; k++, seq++)
			assert_int_equal(psim_send(s, 0, 300 + (seq * 389) % 1000, 'g', seq, 3, 0,
						   RUDP_CONN_PRIO_MEDIUM),
					 0);
		for (int round = 0; round < 37 + 11 * phase; round++) {
			for (int k = 0; k < 3; k++, seq++)
				assert_int_equal(psim_send(s, 0, 300 + (seq * 389) % 1000, 'g', seq, 3, 0,
							   RUDP_CONN_PRIO_MEDIUM),
						 0);
			psim_run(s, never, 10 * MS);
		}
	}
	st = stats(s, 0);
	/* Staged well past 128 KiB: the block went 4 -> 16 -> 64 -> 128 KiB and on. */
	assert_true(st.peak_reliable_queue_bytes > 128u << 10);
	psim_settle(s, 600 * SEC);
	assert_int_equal(s->ep[1].nlog, seq);
	for (uint32_t i = 0; i < seq; i++)
		assert_int_equal(s->ep[1].log[i].seq, i);
	pair_free(s);
}

/* A class's stage ring grows only when a body does not fit where it would
 * be placed: twenty 800 B bodies stay in 16 KiB lap after lap (each lap
 * skips 384 B at the ring's end), where reserving a whole body of slack
 * would double the ring to 32 KiB at the twentieth (common/body_ring.h). */
static void test_stage_ring_holds_bodies_that_fit_exactly(void **state)
{
	struct psim *s = pair(1, &fast);
	struct rudp_policy_config p = defaults();
	struct rudp_policy_stats st;
	uint32_t seq = 0;

	(void)state;
	psim_attach_policy(s, 0, &p);
	for (int step = 0; step < 500; step++) {
		/* A window of one frame: each round trip takes one message off
		 * the stage, and the stage is topped up to twenty again. */
		while (stats(s, 0).reliable_staged_bytes[RUDP_CONN_PRIO_LOW] < 20 * 800) {
			assert_int_equal(psim_send(s, 0, 800, 'x', seq, 3, 0, RUDP_CONN_PRIO_LOW), 0);
			seq++;
		}
		st = stats(s, 0);
		assert_int_equal(st.stage_ring_bytes, 16384);
		psim_run(s, never, 10 * MS);
	}
	/* Past 20 laps of the ring, and every message arrives in order. */
	assert_true(seq > 20 * 20);
	psim_settle(s, 600 * SEC);
	assert_int_equal(s->ep[1].nlog, seq);
	for (uint32_t i = 0; i < seq; i++)
		assert_int_equal(s->ep[1].log[i].seq, i);
	assert_int_equal(stats(s, 0).stage_ring_bytes, 16384);
	pair_free(s);
}

/* A stage ring a burst grew shrinks back to 16 KiB once its class is empty
 * and a second has passed since it last grew (the idle connection's
 * keepalive flush does it), and grows again for the next burst. */
static void test_idle_stage_ring_shrinks(void **state)
{
	struct psim *s = pair(8, &fast);
	struct rudp_policy_config p = defaults();
	uint32_t seq = 0;

	(void)state;
	psim_attach_policy(s, 0, &p);
	for (int burst = 0; burst < 2; burst++) {
		uint64_t start = s->now;

		for (int i = 0; i < 100; i++, seq++)
			assert_int_equal(psim_send(s, 0, 1000, 'b', seq, 3, 0, RUDP_CONN_PRIO_LOW), 0);
		/* 96 of them staged: 96,000 B in a 128 KiB ring. */
		assert_int_equal(stats(s, 0).stage_ring_bytes, 131072);
		psim_settle(s, 10 * SEC);
		assert_int_equal(s->ep[1].nlog, seq);
		assert_true(s->now - start < SEC);
		assert_int_equal(stats(s, 0).reliable_staged_bytes[RUDP_CONN_PRIO_LOW], 0);
		assert_int_equal(stats(s, 0).stage_ring_bytes, 131072);
		psim_run(s, never, 3 * SEC);
		assert_int_equal(stats(s, 0).stage_ring_bytes, 16384);
	}
	for (uint32_t i = 0; i < seq; i++)
		assert_int_equal(s->ep[1].log[i].seq, i);
	pair_free(s);
}

static bool both_closed(struct psim *s)
{
	return s->ep[0].closed && s->ep[1].closed;
}

/* How many of 40 reliable 1000 B messages sent at once went straight into
 * the conn's queue under config p and a window of `window` frames. */
static uint64_t straight_of_40(uint32_t window, bool cc, const struct rudp_policy_config *p,
			       uint32_t *cwnd_out)
{
	struct psim *s = pair_cc(window, cc, &fast);
	struct rudp_conn_stats cs;
	uint64_t n;

	psim_attach_policy(s, 0, p);
	rudp_conn_get_stats(s->ep[0].c, &cs);
	*cwnd_out = cs.cwnd_bytes;
	for (uint32_t i = 0; i < 40; i++)
		assert_int_equal(psim_send(s, 0, 1000, 'r', i, 2, 0, RUDP_CONN_PRIO_LOW), 0);
	n = stats(s, 0).straight_in;
	psim_settle(s, 30 * SEC);
	assert_int_equal(s->ep[1].nlog, 40);
	pair_free(s);
	return n;
}

/* A reliable message nothing waits ahead of skips the stage while every
 * limit the feed checks stays at most half used; from the first one that
 * waits, the rest wait behind it, and priority decides again. */
static void test_straight_in_only_with_room_to_spare(void **state)
{
	struct psim *s = pair(8, &fast);
	struct rudp_policy_config p = defaults();
	struct rudp_policy_stats st;
	char got[16];
	uint32_t cwnd;
	uint64_t n;

	(void)state;
	psim_attach_policy(s, 0, &p);
	/* Window of 8: four LOW messages fill half of it and go straight in. */
	for (uint32_t i = 0; i < 6; i++)
		assert_int_equal(psim_send(s, 0, 100, '3', i, 2, 0, RUDP_CONN_PRIO_LOW), 0);
	/* Something waits: this HIGH one waits too, and goes first of them. */
	assert_int_equal(psim_send(s, 0, 100, '1', 6, 2, 0, RUDP_CONN_PRIO_HIGH), 0);
	st = stats(s, 0);
	assert_int_equal(st.straight_in, 4);
	assert_int_equal(st.reliable_staged_bytes[RUDP_CONN_PRIO_LOW], 200);
	assert_int_equal(st.reliable_staged_bytes[RUDP_CONN_PRIO_HIGH], 100);
	assert_int_equal(s->ep[0].c->rel.frames_count, 4);
	/* The soft budget counts the queued ones as encoded frames. */
	assert_int_equal(st.reliable_queue_bytes, 300 + s->ep[0].c->rel_unsent_wire);
	assert_true(s->ep[0].c->rel_unsent_wire > 400);
	psim_settle(s, 5 * SEC);
	received_tags(s, got, sizeof(got));
	assert_string_equal(got, "3333133");
	/* Once the queue is empty again, messages skip the stage again. */
	assert_int_equal(psim_send(s, 0, 100, '2', 7, 2, 0, RUDP_CONN_PRIO_MEDIUM), 0);
	assert_int_equal(stats(s, 0).straight_in, 5);
	/* Unreliable messages are always staged (the reserve may evict them). */
	assert_int_equal(psim_send(s, 0, 100, 'u', 0, 0, 0, RUDP_CONN_PRIO_MEDIUM), 0);
	assert_int_equal(stats(s, 0).unreliable_queue_bytes, 100);
	psim_settle(s, 5 * SEC);
	assert_int_equal(s->ep[1].nlog, 9);
	pair_free(s);

	/* Each limit on its own: half of it, in 1000 B reliable messages
	 * (1,006 bytes each encoded: a 6-byte frame header). */
	p = defaults();
	assert_int_equal(straight_of_40(64, false, &p, &cwnd), 32);
	assert_int_equal(cwnd, 0);
	assert_int_equal(straight_of_40(16, false, &p, &cwnd), 8);
	assert_int_equal(straight_of_40(1, false, &p, &cwnd), 0);
	p.flush_budget = 4096;
	assert_int_equal(straight_of_40(64, false, &p, &cwnd), 2);
	p = defaults();
	p.max_in_flight_bytes = 8192;
	assert_int_equal(straight_of_40(64, false, &p, &cwnd), 4);
	p.max_in_flight_bytes = 1;
	assert_int_equal(straight_of_40(64, false, &p, &cwnd), 0);
	/* The congestion window, before anything was sent: its initial size. */
	p = defaults();
	n = straight_of_40(64, true, &p, &cwnd);
	assert_true(cwnd > 4 * 1006);
	assert_int_equal(n, cwnd / 2 / 1006);
}

static void test_disconnect_delivers_staged(void **state)
{
	struct psim *s = pair(1, &fast);
	struct rudp_policy_config p = defaults();

	(void)state;
	psim_attach_policy(s, 0, &p);
	for (uint32_t i = 0; i < 10; i++)
		assert_int_equal(psim_send(s, 0, 300, 'r', i, 3, 0, RUDP_CONN_PRIO_LOW), 0);
	psim_disconnect(s, 0);
	assert_true(psim_run(s, both_closed, 30 * SEC));
	assert_int_equal(s->ep[0].reason, RUDP_CONN_CLOSE_LOCAL);
	assert_int_equal(s->ep[1].reason, RUDP_CONN_CLOSE_REMOTE);
	assert_int_equal(s->ep[1].nlog, 10);
	rudp_policy_conn_closing(s->ep[0].policy);
	assert_int_equal(stats(s, 0).dropped[RUDP_POLICY_DROP_CLOSED], 0);
	pair_free(s);
}

static void test_close_counts_staged_as_dropped(void **state)
{
	struct psim *s = pair(1, &fast);
	struct rudp_policy_config p = defaults();

	(void)state;
	psim_attach_policy(s, 0, &p);
	for (uint32_t i = 0; i < 10; i++)
		assert_int_equal(psim_send(s, 0, 300, 'r', i, 3, 0, RUDP_CONN_PRIO_LOW), 0);
	assert_int_equal(psim_send(s, 0, 300, 'u', 0, 0, 0, RUDP_CONN_PRIO_LOW), 0);
	rudp_conn_abort(s->ep[0].c, RUDP_CONN_CLOSE_TIMEOUT);
	rudp_policy_conn_closing(s->ep[0].policy);
	assert_null(rudp_policy_conn(s->ep[0].policy));
	/* The final figures stay readable after the conn let go. */
	assert_int_equal(stats(s, 0).dropped[RUDP_POLICY_DROP_CLOSED], 11);
	assert_int_equal(stats(s, 0).reliable_queue_bytes, 3000);
	pair_free(s);
}

static void test_detach_moves_everything(void **state)
{
	struct psim *s = pair(1, &fast);
	struct rudp_policy_config p = defaults();
	struct send_policy *other;

	(void)state;
	psim_attach_policy(s, 0, &p);
	/* A policy serves one conn at a time. */
	assert_int_equal(rudp_policy_attach(s->ep[0].policy, s->ep[1].c), RUDP_CONN_E_ARG);
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(psim_send(s, 0, 300, 'r', i, 3, 0, (uint8_t)(i % 4)), 0);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(psim_send(s, 0, 300, 'u', i, 0, 0, RUDP_CONN_PRIO_LOW), 0);
	assert_int_equal(rudp_policy_detach(s->ep[0].policy), 0);
	assert_null(rudp_policy_conn(s->ep[0].policy));
	assert_int_equal(s->ep[0].c->rel.frames_count, 5);
	assert_int_equal(s->ep[0].c->unrel.frames_count, 3);
	/* Without a policy the conn is its plain self: no refusal at 8 KiB. */
	for (uint32_t i = 5; i < 300; i++)
		assert_int_equal(psim_send(s, 0, 300, 'r', i, 3, 0, RUDP_CONN_PRIO_LOW), 0);
	psim_settle(s, 60 * SEC);
	assert_int_equal(s->ep[1].nlog, 303);
	/* A detached policy can serve another conn. */
	other = s->ep[0].policy;
	assert_int_equal(rudp_policy_attach(other, s->ep[1].c), 0);
	assert_int_equal(rudp_policy_detach(other), 0);
	pair_free(s);
}

static void test_without_policy_priority_is_fifo(void **state)
{
	struct psim *s = pair(1, &fast);
	char got[16];

	(void)state;
	assert_int_equal(psim_send(s, 0, 40, 'x', 0, 2, 0, RUDP_CONN_PRIORITIES), RUDP_CONN_E_ARG);
	assert_int_equal(psim_send(s, 0, 40, '3', 0, 2, 0, RUDP_CONN_PRIO_LOW), 0);
	assert_int_equal(psim_send(s, 0, 40, '0', 1, 2, 0, RUDP_CONN_PRIO_IMMEDIATE), 0);
	assert_int_equal(psim_send(s, 0, 40, '1', 2, 2, 0, RUDP_CONN_PRIO_HIGH), 0);
	psim_settle(s, 10 * SEC);
	received_tags(s, got, sizeof(got));
	assert_string_equal(got, "301");
	pair_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_defaults_and_checks),
		cmocka_unit_test(test_soft_budget_refuses_then_writable),
		cmocka_unit_test(test_unreliable_reserve_drops_oldest),
		cmocka_unit_test(test_flush_budget_bounds_one_flush),
		cmocka_unit_test(test_in_flight_cap),
		cmocka_unit_test(test_priority_order),
		cmocka_unit_test(test_anti_starvation),
		cmocka_unit_test(test_ordered_channel_keeps_send_order),
		cmocka_unit_test(test_stage_ring_grows_while_wrapped),
		cmocka_unit_test(test_stage_ring_holds_bodies_that_fit_exactly),
		cmocka_unit_test(test_idle_stage_ring_shrinks),
		cmocka_unit_test(test_straight_in_only_with_room_to_spare),
		cmocka_unit_test(test_disconnect_delivers_staged),
		cmocka_unit_test(test_close_counts_staged_as_dropped),
		cmocka_unit_test(test_detach_moves_everything),
		cmocka_unit_test(test_without_policy_priority_is_fifo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
