/* SPDX-License-Identifier: MIT */
/*
 * The rate-based congestion controller (src/conn/cc_rate.c) on its own:
 * its filters, rate samples, states and pacing budget fed by hand, then
 * senders driven by it through simulated paths: a byte-rate bottleneck
 * with a drop-tail queue, and loopback where both ends are CPU-bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conn/cc_rate.h"
#include "test_rng.h"

#define DGRAM 1000u
#define T0 1000000ull /* not zero: catches "0 means unset" mistakes */

static void init_cc(struct cc_rate *cc, uint32_t initial_cwnd)
{
	struct cc_rate_config cfg = {.mss = DGRAM, .initial_cwnd = initial_cwnd, .seed = 1};

	cc_rate_init(cc, &cfg, T0);
}

/* ---- a feeder: datagrams at a rate the test picks, whatever the controller says ---- */

#define FEED_RING 65536u

struct fed {
	struct cc_rate_snapshot snap;
	uint64_t ack_at;
	bool lost;
};

struct feeder {
	struct cc_rate *cc;
	uint64_t now;
	uint64_t next_send;
	struct fed ring[FEED_RING];
	uint32_t head, tail; /* tail: oldest unanswered */
	uint64_t sent;
	bool out_of_data; /* app-limited feeds say so with cc_rate_on_out_of_data */
};

static void feeder_init(struct feeder *f, struct cc_rate *cc)
{
	memset(f, 0, sizeof(*f));
	f->cc = cc;
	f->now = T0;
	f->next_send = T0;
}

/* Sends DGRAM bytes every 10^6 * DGRAM / rate µs for duration_us; each is
 * acknowledged rtt_us (rising by rtt_growth_per_s µs per second of the
 * feed) after it left, or reported lost at that time for every
 * lose_every-th (0: none). app_limited: the sender says it has nothing
 * more before every send (with f->out_of_data: nothing queued at all). What is in flight at the end stays in
 * flight for the next feed (or feeder_drain). */
static void feed(struct feeder *f, uint64_t rate, uint64_t rtt_us, uint64_t rtt_growth_per_s,
		 uint64_t duration_us, uint32_t lose_every, bool app_limited)
{
	uint64_t start = f->now, end = f->now + duration_us, gap = (uint64_t)DGRAM * 1000000 / rate;

	if (f->next_send != UINT64_MAX && f->next_send < f->now)
		f->next_send = f->now;
	for (;;) {
		uint64_t ack_t = f->tail != f->head ? f->ring[f->tail % FEED_RING].ack_at : UINT64_MAX;

		if (f->next_send < end && f->next_send <= ack_t) {
			struct fed *d = &f->ring[f->head++ % FEED_RING];

			assert_true(f->head - f->tail < FEED_RING);
			f->now = f->next_send;
			if (app_limited && f->out_of_data)
				cc_rate_on_out_of_data(f->cc);
			else if (app_limited)
				cc_rate_on_app_limited(f->cc);
			cc_rate_on_sent(f->cc, &d->snap, DGRAM, f->now);
			d->ack_at = f->now + rtt_us + (f->now - start) * rtt_growth_per_s / 1000000;
			d->lost = lose_every && ++f->sent % lose_every == 0;
			f->next_send += gap;
		} else if (ack_t < end) {
			struct fed *d = &f->ring[f->tail++ % FEED_RING];

			f->now = ack_t;
			if (d->lost)
				cc_rate_on_lost(f->cc, &d->snap, DGRAM);
			else
				cc_rate_on_acked(f->cc, &d->snap, DGRAM, f->now);
			cc_rate_on_ack_end(f->cc, f->now);
		} else {
			break;
		}
	}
	f->now = end;
}

/* Sends nothing more until everything in flight is answered. */
static void feeder_drain(struct feeder *f)
{
	if (f->tail != f->head) {
		uint64_t last = f->ring[(f->head - 1) % FEED_RING].ack_at;

		f->next_send = UINT64_MAX;
		feed(f, 1000000, 0, 0, last + 1 - f->now, 0, false);
		f->next_send = f->now;
	}
}

static void test_snapshot_is_small(void **state)
{
	(void)state;
	/* What the sent history stores per datagram. */
	assert_int_equal(sizeof(struct cc_rate_snapshot), 20);
}

static void test_rate_sample_and_min_rtt(void **state)
{
	static struct feeder f;
	struct cc_rate cc;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	assert_int_equal(cc_rate_bandwidth(&cc), 0);
	assert_int_equal(cc_rate_min_rtt_us(&cc), 0);
	feed(&f, 1000000, 20000, 0, 500000, 0, false);
	assert_in_range(cc_rate_bandwidth(&cc), 990000, 1010000);
	assert_int_equal(cc_rate_min_rtt_us(&cc), 20000);
	feeder_drain(&f);
	assert_int_equal(cc_rate_in_flight(&cc), 0);
	/* A burst of ACKs (one ACK for 20 datagrams sent 1 ms apart, as a
	 * peer reading in batches would send it) does not raise the
	 * estimate: the sample's interval is the longer of the two. */
	{
		struct cc_rate_snapshot s[20];
		uint64_t t = f.now + 1000;

		for (int i = 0; i < 20; i++)
			cc_rate_on_sent(&cc, &s[i], DGRAM, t + (uint64_t)i * 1000);
		t += 19 * 1000 + 20000;
		for (int i = 0; i < 20; i++)
			cc_rate_on_acked(&cc, &s[i], DGRAM, t);
		cc_rate_on_ack_end(&cc, t);
		assert_in_range(cc_rate_bandwidth(&cc), 990000, 1010000);
	}
}

static void test_bw_filter_is_a_windowed_max(void **state)
{
	static struct feeder f;
	struct cc_rate cc;
	uint64_t r0;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 2000000, 20000, 0, 300000, 0, false);
	assert_in_range(cc_rate_bandwidth(&cc), 1980000, 2020000);
	/* Half the rate: the maximum holds for the filter's window... */
	r0 = cc.round_count;
	while (cc.round_count < r0 + CC_RATE_BW_ROUNDS - 2)
		feed(&f, 1000000, 20000, 0, 5000, 0, false);
	assert_in_range(cc_rate_bandwidth(&cc), 1980000, 2020000);
	/* ...and is forgotten once it is older than that. */
	while (cc.round_count < r0 + CC_RATE_BW_ROUNDS + 3)
		feed(&f, 1000000, 20000, 0, 5000, 0, false);
	assert_in_range(cc_rate_bandwidth(&cc), 990000, 1010000);
}

static void test_app_limited_samples_keep_the_estimate(void **state)
{
	static struct feeder f;
	struct cc_rate cc, control;

	(void)state;
	for (int limited = 0; limited < 2; limited++) {
		struct cc_rate *c = limited ? &cc : &control;

		init_cc(c, 0);
		feeder_init(&f, c);
		feed(&f, 2000000, 20000, 0, 300000, 0, false);
		/* Fifty round trips at a twentieth of the rate. */
		feed(&f, 100000, 20000, 0, 1000000, 0, limited);
	}
	assert_in_range(cc_rate_bandwidth(&cc), 1980000, 2020000);
	assert_true(cc_rate_pacing_rate(&cc) >= 1900000);
	/* The same samples, not marked, do teach the lower rate. */
	assert_in_range(cc_rate_bandwidth(&control), 99000, 101000);

	/* The mark ends with what was in flight when it was set: later
	 * samples count again. */
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 2000000, 20000, 0, 300000, 0, false);
	feed(&f, 100000, 20000, 0, 200000, 0, true);
	assert_true(cc.app_limited_until != 0);
	feed(&f, 100000, 20000, 0, 1000000, 0, false);
	assert_int_equal(cc.app_limited_until, 0);
	assert_in_range(cc_rate_bandwidth(&cc), 99000, 101000);

	/* A game's traffic from the start: a datagram every 50 ms. It never
	 * tested the path, so its own rate is no limit: it stays in STARTUP
	 * with the initial pacing rate and window, and a burst of ten
	 * datagrams goes at once. */
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 20000, 20000, 0, 2000000, 0, true);
	feeder_drain(&f);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_STARTUP);
	assert_true(cc_rate_pacing_rate(&cc) >= 28850000);
	assert_true(cc_rate_send_allowance(&cc, f.now) >= 10 * DGRAM);
}

static void test_startup_ends_at_a_standing_queue(void **state)
{
	static struct feeder f;
	struct cc_rate cc;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	/* The delivery rate doubling each round, so startup would go on... */
	feed(&f, 250000, 20000, 0, 60000, 0, false);
	feed(&f, 500000, 20000, 0, 20000, 0, false);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_STARTUP);
	/* ...but in the next rounds every RTT sample stood 5 ms above the
	 * 20 ms minimum: the rate outgrew the path. No loss. */
	feed(&f, 1000000, 25000, 0, 25000, 0, false);
	feed(&f, 2000000, 25000, 0, 50000, 0, false);
	assert_true(cc.full_bw_reached);
	assert_int_not_equal(cc_rate_state(&cc), CC_RATE_STARTUP);
	assert_int_equal(cc.congestion_rounds, 0);
	assert_int_equal(cc.lost, 0);
}

/* Startup leaves within the round in which the queue shows, not at its
 * end: a round of doubling that runs its course adds its own queue. */
static void test_startup_ends_within_the_round(void **state)
{
	static struct feeder f;
	struct cc_rate cc;
	uint64_t round = 0;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 250000, 20000, 0, 60000, 0, false);
	feed(&f, 500000, 20000, 0, 20000, 0, false);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_STARTUP);
	/* From now every datagram's RTT is 25 ms, 5 ms above the minimum;
	 * the first of them is acknowledged 25 ms on, in a round that began
	 * with 20 ms samples. The next round is all queue. */
	for (uint32_t ms = 0; ms < 200 && !cc.full_bw_reached; ms++) {
		feed(&f, 1000000, 25000, 0, 1000, 0, false);
		if (ms == 25)
			round = cc.round_count;
	}
	assert_true(cc.full_bw_reached);
	assert_true(round != 0);
	assert_true(cc.round_count <= round + 1);
	assert_int_equal(cc.congestion_rounds, 0);
}

/* An echo server's RTT sees the forward path's queue, which it cannot
 * drain: with nothing queued (it sent every echo it had), its minimum RTT
 * expires without PROBE_RTT holding its echoes back. A sender held by a
 * limit of its own (data queued) still probes. */
static bool enters_probe_rtt(bool out_of_data)
{
	static struct feeder f;
	struct cc_rate cc;
	bool probed = false;

	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 100000, 20000, 0, 1000000, 0, false);
	f.out_of_data = out_of_data;
	for (int i = 0; i < 70 && !probed; i++) {
		feed(&f, 50000, 30000, 0, 100000, 0, true);
		probed = cc_rate_state(&cc) == CC_RATE_PROBE_RTT;
	}
	/* Skipped, the minimum it had stays (no lower sample came). */
	if (!probed)
		assert_int_equal(cc_rate_min_rtt_us(&cc), 20000);
	return probed;
}

static void test_out_of_data_skips_probe_rtt(void **state)
{
	(void)state;
	assert_false(enters_probe_rtt(true));
	assert_true(enters_probe_rtt(false));
}

static void test_state_transitions(void **state)
{
	static struct feeder f;
	struct cc_rate cc;
	uint32_t phases_seen = 0;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_STARTUP);
	assert_int_equal(cc.pacing_gain_pm, 2885);
	/* A flat delivery rate: three rounds without growth end startup. */
	feed(&f, 1000000, 20000, 0, 200000, 0, false);
	assert_true(cc.full_bw_reached);
	assert_int_not_equal(cc_rate_state(&cc), CC_RATE_STARTUP);
	/* The feeder keeps the flight at one BDP: drain ends at once. */
	assert_int_equal(cc_rate_state(&cc), CC_RATE_PROBE_BW);
	for (int i = 0; i < 400; i++) {
		feed(&f, 1000000, 20000, 0, 2000, 0, false);
		phases_seen |= 1u << cc.cycle_phase;
		assert_int_equal(cc_rate_state(&cc), CC_RATE_PROBE_BW);
	}
	assert_int_equal(phases_seen, 0xff);
	/* Five seconds without a lower RTT: PROBE_RTT holds the window down
	 * to half a BDP, then the cycle resumes with the renewed minimum. */
	feed(&f, 1000000, 25000, 0, 4000000, 0, false);
	assert_int_equal(cc_rate_min_rtt_us(&cc), 20000);
	for (int i = 0; i < 2000 && cc_rate_state(&cc) != CC_RATE_PROBE_RTT; i++)
		feed(&f, 1000000, 25000, 0, 1000, 0, false);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_PROBE_RTT);
	assert_int_equal(cc_rate_min_rtt_us(&cc), 25000);
	assert_true(cc_rate_cwnd(&cc) <= 13000);
	/* The feeder ignores the window: a sender held to it would send
	 * less for a while; this one does by itself. */
	for (int i = 0; i < 400 && cc_rate_state(&cc) == CC_RATE_PROBE_RTT; i++)
		feed(&f, 400000, 25000, 0, 1000, 0, false);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_PROBE_BW);
	assert_int_equal(cc_rate_min_rtt_us(&cc), 25000);
}

/* In cruise (PROBE_BW at gain 1) after a round whose RTT samples all
 * stood above the minimum, the pacing rate is 0.95 of the estimate, not
 * 0.99: a standing queue drains. Without one it is 0.99 again. */
static void test_standing_queue_paces_under_the_estimate(void **state)
{
	static struct feeder f;
	struct cc_rate cc;
	uint32_t seen = 0;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 1000000, 20000, 0, 300000, 0, false);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_PROBE_BW);
	/* Every sample 10 ms above the 20 ms minimum: a standing queue. */
	for (int i = 0; i < 300; i++) {
		feed(&f, 1000000, 30000, 0, 2000, 0, false);
		assert_int_equal(cc_rate_min_rtt_us(&cc), 20000);
		if (cc_rate_state(&cc) == CC_RATE_PROBE_BW && cc.pacing_gain_pm == 1000 &&
		    cc.queue_standing) {
			assert_int_equal(cc_rate_pacing_rate(&cc), cc_rate_bandwidth(&cc) * 950 / 1000);
			seen++;
		}
	}
	assert_true(seen > 50);
	/* The queue gone: the samples show the minimum again. */
	seen = 0;
	for (int i = 0; i < 300; i++) {
		feed(&f, 1000000, 20000, 0, 2000, 0, false);
		if (i < 50)
			continue;
		assert_false(cc.queue_standing);
		if (cc_rate_state(&cc) == CC_RATE_PROBE_BW && cc.pacing_gain_pm == 1000) {
			assert_int_equal(cc_rate_pacing_rate(&cc), cc_rate_bandwidth(&cc) * 990 / 1000);
			seen++;
		}
	}
	assert_true(seen > 50);
}

/* The window's cap while a queue stands (cc_rate.c): 0.9 BDP plus the
 * batching allowance and two datagrams. */
static uint64_t standing_cap(const struct cc_rate *cc)
{
	uint64_t extra = cc->extra_acked[0] > cc->extra_acked[1] ? cc->extra_acked[0] : cc->extra_acked[1];

	return cc_rate_bandwidth(cc) * cc_rate_min_rtt_us(cc) / 1000000 * 900 / 1000 + extra + 2 * DGRAM;
}

static void test_standing_queue_caps_the_window(void **state)
{
	static struct feeder f;
	struct cc_rate cc;
	uint32_t capped = 0;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 1000000, 20000, 0, 500000, 0, false);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_PROBE_BW);
	assert_true(cc_rate_cwnd(&cc) >= 2 * 19000);
	/* Every sample 3 ms above the 20 ms minimum (more than an eighth of
	 * it): a standing queue. Cruising, the window holds the flight to
	 * 0.9 BDP plus the allowance, whatever the feeder sends. */
	for (int i = 0; i < 500; i++) {
		feed(&f, 1000000, 23000, 0, 2000, 0, false);
		if (cc_rate_state(&cc) == CC_RATE_PROBE_BW && cc.pacing_gain_pm <= 1000 &&
		    cc.queue_standing) {
			assert_true(cc_rate_cwnd(&cc) <= standing_cap(&cc));
			capped++;
		}
	}
	assert_true(capped > 100);
	assert_true(cc_rate_cwnd(&cc) < 2 * 19000);
	/* The queue gone: the window is two BDPs again. */
	feed(&f, 1000000, 20000, 0, 1000000, 0, false);
	assert_false(cc.queue_standing);
	assert_true(cc_rate_cwnd(&cc) >= 2 * 19000);
}

/* A queue that PROBE_RTT does not drain is another flow's (a loss-based
 * one keeps the buffer full): the standing-queue rules stop giving way to
 * it until the old minimum shows again. The path: 20 ms, then a queue of
 * 10 ms that stays through PROBE_RTT unless `drains` (the sender then
 * keeps to PROBE_RTT's window); then 6 ms of it
 * (a lower sample, as at a loss-based flow's trough, renews the minimum
 * at 26 ms) and 10 ms again, a queue standing above that minimum.
 * The rules hold the window then (at most the cap, and paced at 0.95
 * when cruising) only if it drained. */
static void standing_rules_after_probe_rtt(bool drains)
{
	static struct feeder f;
	struct cc_rate cc;
	bool probed = false, capped = false, paced = false;
	uint64_t prev_rtt = 20000;

	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 1000000, 20000, 0, 500000, 0, false);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_PROBE_BW);
	for (int i = 0; i < 4000 && !(probed && cc_rate_state(&cc) == CC_RATE_PROBE_BW); i++) {
		bool in_probe_rtt = cc_rate_state(&cc) == CC_RATE_PROBE_RTT;
		uint64_t rtt = in_probe_rtt && drains ? 20000 : 30000;

		probed |= in_probe_rtt;
		/* A shorter RTT must not answer datagrams before older ones. */
		if (rtt < prev_rtt)
			feeder_drain(&f);
		prev_rtt = rtt;
		/* In PROBE_RTT the sender keeps to its window (half a BDP). */
		feed(&f, in_probe_rtt ? 300000 : 1000000, rtt, 0, 2000, 0, false);
	}
	assert_true(probed);
	assert_int_equal(cc.foreign_min_rtt_us != 0, !drains);
	feeder_drain(&f);
	feed(&f, 1000000, 26000, 0, 200000, 0, false);
	assert_int_equal(cc_rate_min_rtt_us(&cc), drains ? 20000 : 26000);
	for (int i = 0; i < 500; i++) {
		feed(&f, 1000000, 30000, 0, 2000, 0, false);
		if (cc_rate_state(&cc) == CC_RATE_PROBE_BW && cc.pacing_gain_pm == 1000 &&
		    cc.queue_standing) {
			capped |= cc_rate_cwnd(&cc) <= standing_cap(&cc);
			paced |= cc_rate_pacing_rate(&cc) == cc_rate_bandwidth(&cc) * 950 / 1000;
		}
	}
	assert_int_equal(capped, paced);
	assert_int_equal(capped, drains);
	/* The old minimum shows again: the queue was this flow's after all,
	 * and the rules are back. */
	if (!drains) {
		assert_true(cc.foreign_queue_rounds > 0);
		feeder_drain(&f);
		feed(&f, 1000000, 20000, 0, 200000, 0, false);
		assert_int_equal(cc.foreign_min_rtt_us, 0);
	}
}

static void test_foreign_queue_stops_the_standing_rules(void **state)
{
	(void)state;
	standing_rules_after_probe_rtt(true);
	standing_rules_after_probe_rtt(false);
}

static void test_startup_exit_on_loss_with_queue(void **state)
{
	static struct feeder f;
	struct cc_rate cc;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 1000000, 20000, 0, 30000, 0, false);
	assert_int_equal(cc_rate_state(&cc), CC_RATE_STARTUP);
	/* The rate still doubling, 1 % loss (below the 2 % that counts
	 * alone) and the RTT rising: a queue overflowing. */
	feed(&f, 2000000, 20000, 500000, 200000, 100, false);
	assert_true(cc.congestion_rounds > 0);
	assert_true(cc.full_bw_reached);
	/* Not by three rounds without growth. */
	assert_true(cc.full_bw_rounds < 3);
	assert_int_not_equal(cc_rate_state(&cc), CC_RATE_STARTUP);
}

/* The cheap test a connection makes before each datagram says what the
 * allowance says, at every step of a run that fills the window, runs the
 * budget dry and waits. */
static void test_can_send_is_allowance_open(void **state)
{
	struct cc_rate cc;
	struct cc_rate_snapshot snaps[64];
	uint64_t now = T0, checks = 0, open = 0;
	uint32_t head = 0, tail = 0;

	(void)state;
	init_cc(&cc, 0);
	for (int step = 0; step < 20000; step++) {
		bool can = cc_rate_can_send(&cc, now);

		assert_int_equal(can, cc_rate_send_allowance(&cc, now) > 0);
		checks++;
		open += can;
		if (can && head - tail < 64) {
			cc_rate_on_sent(&cc, &snaps[head++ % 64], DGRAM, now);
		} else if (tail != head && (step % 3 == 0 || head - tail == 64)) {
			cc_rate_on_acked(&cc, &snaps[tail++ % 64], DGRAM, now);
			cc_rate_on_ack_end(&cc, now);
		}
		now += (uint64_t)(step % 7) * 37;
	}
	/* Both answers came up. */
	assert_true(open > 0 && open < checks);
}

/* A sender out of data (it waits for replies) may send up to its window
 * at once after a pause; one only held by a limit of its own keeps the
 * quantum, like a bulk sender. */
static void test_out_of_data_bursts_the_window(void **state)
{
	static struct feeder f;
	struct cc_rate cc;
	struct cc_rate_config cfg = {.mss = DGRAM, .quantum_us = 4000, .seed = 1};
	uint64_t now, cap;

	(void)state;
	cc_rate_init(&cc, &cfg, T0);
	feeder_init(&f, &cc);
	feed(&f, 1000000, 20000, 0, 1000000, 0, false);
	feeder_drain(&f);
	now = f.now + 100000;
	cap = cc_rate_pacing_rate(&cc) * 4000 / 1000000;
	assert_true(cap + DGRAM < cc_rate_cwnd(&cc));
	cc_rate_on_app_limited(&cc);
	assert_in_range(cc_rate_send_allowance(&cc, now), cap, cap + 1);
	cc_rate_on_out_of_data(&cc);
	assert_int_equal(cc_rate_send_allowance(&cc, now), cc_rate_cwnd(&cc));
	/* Back to the quantum once the sender is held by its own limit again. */
	cc_rate_on_app_limited(&cc);
	assert_in_range(cc_rate_send_allowance(&cc, now), cap, cap + 1);
}

static void test_pacing_budget(void **state)
{
	static struct feeder f;
	struct cc_rate cc;
	struct cc_rate_config cfg = {.mss = DGRAM, .quantum_us = 4000, .seed = 1};
	struct cc_rate_snapshot s;
	uint64_t now, rate, cap, sent = 0, allow;

	(void)state;
	/* A fresh controller paces its initial window over a millisecond
	 * at the startup gain: 10 datagrams x 2.885 per ms. */
	init_cc(&cc, 0);
	assert_int_equal(cc_rate_pacing_rate(&cc), 28850000);
	assert_int_equal(cc_rate_send_allowance(&cc, T0), 10 * DGRAM); /* the window's */

	/* Learn 1 MB/s over 20 ms, then watch the budget alone. */
	cc_rate_init(&cc, &cfg, T0);
	feeder_init(&f, &cc);
	feed(&f, 1000000, 20000, 0, 1000000, 0, false);
	feeder_drain(&f);
	now = f.now;
	rate = cc_rate_pacing_rate(&cc);
	assert_in_range(rate, 700000, 1300000);
	cap = rate * 4000 / 1000000; /* a 4 ms quantum at the rate */
	assert_true(cap < cc_rate_cwnd(&cc) / 2);
	/* After a pause, one quantum at once... */
	allow = cc_rate_send_allowance(&cc, now);
	assert_in_range(allow, cap, cap + 1);
	assert_int_equal(cc_rate_next_send_us(&cc, now), now);
	while (cc_rate_send_allowance(&cc, now) > 0) {
		cc_rate_on_sent(&cc, &s, DGRAM, now);
		sent += DGRAM;
	}
	/* ...spent with at most one datagram of overrun... */
	assert_in_range(sent, allow, allow + DGRAM);
	/* ...then the next when the overrun is repaid. */
	assert_true(cc_rate_next_send_us(&cc, now) > now);
	assert_true(cc_rate_next_send_us(&cc, now) <= now + 1 + DGRAM * 1000000ull / rate);
	now = cc_rate_next_send_us(&cc, now);
	assert_true(cc_rate_send_allowance(&cc, now) > 0);
	/* A long pause still leaves one quantum, not the pause's worth. */
	now += 1000000;
	assert_in_range(cc_rate_send_allowance(&cc, now), cap, cap + 1);
	/* Sending whenever the budget allows, over 10 ms: the rate, plus the quantum. */
	sent = 0;
	for (uint64_t end = now + 10000; now < end; now = cc_rate_next_send_us(&cc, now)) {
		while (cc_rate_send_allowance(&cc, now) > 0) {
			cc_rate_on_sent(&cc, &s, DGRAM, now);
			sent += DGRAM;
		}
	}
	assert_in_range(sent, rate / 100 + cap - DGRAM, rate / 100 + cap + 2 * DGRAM);

	/* The window: full, only an ACK opens it. */
	init_cc(&cc, 0);
	now = T0;
	for (int i = 0; i < 10; i++) {
		assert_true(cc_rate_send_allowance(&cc, now) > 0);
		cc_rate_on_sent(&cc, &s, DGRAM, now);
	}
	assert_int_equal(cc_rate_in_flight(&cc), 10 * DGRAM);
	assert_int_equal(cc_rate_send_allowance(&cc, now), 0);
	assert_int_equal(cc_rate_next_send_us(&cc, now), UINT64_MAX);
	cc_rate_on_acked(&cc, &s, DGRAM, now + 20000);
	cc_rate_on_ack_end(&cc, now + 20000);
	assert_true(cc_rate_send_allowance(&cc, now + 20000) > 0);
}

/* The datagrams of one flush go at one now_us: the first brings the
 * budget to its cap (a fresh one too, however full it starts), and each
 * spends exactly its bytes; time passing refills it at the rate. */
static void test_sends_at_one_time_spend_the_budget(void **state)
{
	struct cc_rate cc;
	struct cc_rate_config cfg = {.mss = DGRAM, .initial_cwnd = 100 * DGRAM, .quantum_us = 100, .seed = 1};
	struct cc_rate_snapshot s;
	uint64_t left, sends = 0;

	(void)state;
	cc_rate_init(&cc, &cfg, T0);
	/* 100 datagrams a millisecond at the startup gain: 288.5 bytes a µs,
	 * and a 100 µs quantum of them, under the window. */
	assert_int_equal(cc_rate_pacing_rate(&cc), 288500000);
	left = cc_rate_send_allowance(&cc, T0);
	assert_int_equal(left, 28850);
	while (left > 0) {
		cc_rate_on_sent(&cc, &s, DGRAM, T0);
		sends++;
		left = left > DGRAM ? left - DGRAM : 0;
		assert_int_equal(cc_rate_send_allowance(&cc, T0), left);
	}
	assert_int_equal(sends, 29);
	/* 150 bytes overrun, then 10 µs at the rate. */
	assert_int_equal(cc_rate_send_allowance(&cc, T0 + 10), 2885 - 150);
	cc_rate_on_sent(&cc, &s, DGRAM, T0 + 10);
	assert_int_equal(cc_rate_send_allowance(&cc, T0 + 10), 2885 - 150 - DGRAM);
	assert_int_equal(s.sent_us, (uint32_t)(T0 + 10));
	assert_int_equal(s.in_flight, 30 * DGRAM);
	assert_int_equal(cc_rate_in_flight(&cc), 30 * DGRAM);
}

static void test_random_loss_does_not_cut_the_rate(void **state)
{
	static struct feeder f;
	struct cc_rate cc;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	/* 5 % loss at a constant RTT: no queue behind it. */
	feed(&f, 1000000, 20000, 0, 3000000, 20, false);
	assert_true(cc.lost > 0);
	/* One loss in a round of twenty is not congestion. */
	assert_int_equal(cc.congestion_rounds, 0);
	assert_int_equal(cc.inflight_hi, 0);
	/* What arrives: 95 % of what was sent, the same as without loss but
	 * for the lost bytes themselves. */
	assert_in_range(cc_rate_bandwidth(&cc), 940000, 960000);
	/* The pacing rate is the model's, nothing taken off for loss, and
	 * the window the full two BDPs. */
	assert_true(cc_rate_pacing_rate(&cc) * 1000 >= cc_rate_bandwidth(&cc) * cc.pacing_gain_pm * 98 / 100);
	assert_true(cc_rate_cwnd(&cc) >= 2 * 18800);

	/* 20 % loss: above 2 % a round counts as congested even without a
	 * queue (a buffer too shallow to show one), and caps the flight,
	 * but not below one BDP; the rate is still what arrives. */
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 1000000, 20000, 0, 3000000, 5, false);
	assert_true(cc.congestion_rounds > 0);
	assert_in_range(cc_rate_bandwidth(&cc), 790000, 810000);
	assert_true(cc_rate_pacing_rate(&cc) * 1000 >= cc_rate_bandwidth(&cc) * cc.pacing_gain_pm * 98 / 100);
	assert_true(cc_rate_cwnd(&cc) >= 16000);
}

/* Loss and a raised RTT while the application is the limit (an echo's
 * one message at a time): no congested round, no cap on the flight, and
 * startup goes on, so a bulk phase after it starts from the path's rate,
 * not the application's. */
static void test_app_limited_rounds_are_not_congested(void **state)
{
	static struct feeder f;
	struct cc_rate cc;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 1000000, 20000, 0, 20000, 0, false);
	feed(&f, 50000, 20000, 20000, 2000000, 4, true);
	assert_true(cc.lost > 0);
	assert_int_equal(cc.congestion_rounds, 0);
	assert_int_equal(cc.inflight_hi, 0);
	assert_false(cc.full_bw_reached);
}

static void test_growing_queue_limits_the_window(void **state)
{
	static struct feeder f;
	struct cc_rate cc, control;
	uint64_t cwnd_before;

	(void)state;
	init_cc(&cc, 0);
	feeder_init(&f, &cc);
	feed(&f, 1000000, 20000, 0, 500000, 0, false);
	cwnd_before = cc_rate_cwnd(&cc);
	/* The same sending rate, the RTT rising 100 ms per second: a queue
	 * (and the ACKs come a tenth slower). The window stays at its gain
	 * times bw x min RTT, about 40 kB, while the feeder's flight grows
	 * to 200 kB. */
	feed(&f, 1000000, 20000, 100000, 2000000, 0, false);
	assert_int_equal(cc_rate_min_rtt_us(&cc), 20000);
	assert_in_range(cc_rate_bandwidth(&cc), 900000, 920000);
	assert_true(cc_rate_cwnd(&cc) <= cwnd_before + 2 * DGRAM);
	assert_true(cc_rate_cwnd(&cc) <= 2 * 18200 + 3 * DGRAM);
	assert_true(cc_rate_in_flight(&cc) > 150000);
	assert_int_equal(cc_rate_send_allowance(&cc, f.now), 0);
	assert_int_equal(cc.congestion_rounds, 0);

	/* Loss with a standing queue (10 ms above the minimum, 30 kB in
	 * flight): the flight is capped below the window's two BDPs, not
	 * below one. The control sees the same queue without loss: no loss
	 * cap, only the standing queue's (test_standing_queue_caps_the_window). */
	for (int lossy = 0; lossy < 2; lossy++) {
		struct cc_rate *c = lossy ? &cc : &control;

		init_cc(c, 0);
		feeder_init(&f, c);
		feed(&f, 1000000, 20000, 0, 500000, 0, false);
		feed(&f, 1000000, 30000, 0, 1000000, lossy ? 50 : 0, false);
	}
	assert_int_equal(control.congestion_rounds, 0);
	assert_int_equal(control.inflight_hi, 0);
	assert_true(control.queue_standing);
	assert_true(cc.congestion_rounds > 0);
	assert_true(cc.inflight_hi > 0);
	assert_true(cc_rate_cwnd(&cc) <= 30000 * 85 / 100 + DGRAM);
	assert_true(cc_rate_cwnd(&cc) >= 20000);
	/* The rate is untouched. */
	assert_true(cc_rate_bandwidth(&cc) >= 960000);
}

/* ---- a bottleneck: senders driven by the controller ---- */

#define NET_FLOWS 8
#define NET_RING 65536u
#define NET_EVENTS (1u << 18)
#define NET_DELAY_BUCKET_US 100u
#define NET_DELAY_BUCKETS 20000u

enum net_event_kind { EV_ACK, EV_WAKE };

struct net_event {
	uint64_t t;
	uint64_t serial;
	uint32_t kind;
	uint32_t flow;
	uint32_t seq;
};

/* A min-heap of events by time, FIFO among equal times. */
struct evq {
	struct net_event *ev;
	uint32_t n;
	uint64_t serial;
};

struct net_sent {
	struct cc_rate_snapshot snap;
	bool acked, dropped;
};

struct net_flow {
	struct cc_rate cc;
	uint64_t start_us;
	uint32_t next_seq, oldest; /* oldest: first seq not resolved */
	uint64_t wake_at; /* the pending wake event's time; UINT64_MAX: none */
	uint64_t last_progress;
	uint64_t delivered_bytes, measured_bytes;
	struct net_sent ring[NET_RING];
};

struct net {
	uint64_t rate; /* bytes/s of the bottleneck */
	uint64_t rtt_us; /* propagation, both ways */
	uint64_t queue_bytes; /* drop-tail */
	uint32_t loss_pm; /* random, per mille x 10 (per 10,000) */
	uint64_t granularity_us; /* a sender wakes for pacing on multiples of this (0: exact) */
	uint32_t flows;
	uint64_t now;
	uint64_t link_free; /* when the bottleneck's queue will be empty */
	uint64_t rng;
	struct evq q;
	uint64_t measure_from;
	uint64_t sent, dropped, random_lost;
	uint64_t measured_sent, measured_dropped; /* of those, after measure_from */
	uint64_t delay_hist[NET_DELAY_BUCKETS];
	uint64_t delay_n;
	struct net_flow flow[NET_FLOWS];
};

static bool ev_before(const struct net_event *a, const struct net_event *b)
{
	return a->t < b->t || (a->t == b->t && a->serial < b->serial);
}

static void ev_push(struct evq *q, struct net_event e)
{
	uint32_t i = q->n++;

	assert_true(q->n < NET_EVENTS);
	e.serial = q->serial++;
	while (i > 0 && ev_before(&e, &q->ev[(i - 1) / 2])) {
		q->ev[i] = q->ev[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q->ev[i] = e;
}

static struct net_event ev_pop(struct evq *q)
{
	struct net_event top = q->ev[0], last = q->ev[--q->n];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= q->n)
			break;
		if (c + 1 < q->n && ev_before(&q->ev[c + 1], &q->ev[c]))
			c++;
		if (!ev_before(&q->ev[c], &last))
			break;
		q->ev[i] = q->ev[c];
		i = c;
	}
	q->ev[i] = last;
	return top;
}

static void evq_init(struct evq *q)
{
	memset(q, 0, sizeof(*q));
	q->ev = calloc(NET_EVENTS, sizeof(*q->ev));
	assert_non_null(q->ev);
}

static struct net *net_new(uint64_t rate, uint64_t rtt_us, uint64_t queue_us, uint32_t loss_per_10k,
			   uint32_t flows, uint64_t start_gap_us, uint64_t seed)
{
	struct net *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	evq_init(&n->q);
	n->rate = rate;
	n->rtt_us = rtt_us;
	n->queue_bytes = rate * queue_us / 1000000;
	n->loss_pm = loss_per_10k;
	n->flows = flows;
	n->now = T0;
	n->link_free = T0;
	n->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	for (uint32_t i = 0; i < flows; i++) {
		struct net_flow *fl = &n->flow[i];
		struct cc_rate_config cfg = {.mss = DGRAM, .seed = (uint32_t)(seed * 31 + i)};

		fl->start_us = T0 + i * start_gap_us;
		cc_rate_init(&fl->cc, &cfg, fl->start_us);
		fl->wake_at = fl->start_us;
		fl->last_progress = fl->start_us;
		ev_push(&n->q, (struct net_event){.t = fl->start_us, .kind = EV_WAKE, .flow = i});
	}
	return n;
}

static void net_free(struct net *n)
{
	free(n->q.ev);
	free(n);
}

/* One datagram into the bottleneck: dropped if its queue is full, else
 * acknowledged a propagation RTT after it leaves the link. */
static void net_transmit(struct net *n, uint32_t flow, uint32_t seq)
{
	uint64_t backlog = n->link_free > n->now ? (n->link_free - n->now) * n->rate / 1000000 : 0;
	uint64_t depart;

	n->sent++;
	if (n->now >= n->measure_from)
		n->measured_sent++;
	if (backlog + DGRAM > n->queue_bytes) {
		n->dropped++;
		if (n->now >= n->measure_from)
			n->measured_dropped++;
		return;
	}
	if (n->now >= n->measure_from) {
		uint64_t b = (n->link_free > n->now ? n->link_free - n->now : 0) / NET_DELAY_BUCKET_US;

		n->delay_hist[b < NET_DELAY_BUCKETS ? b : NET_DELAY_BUCKETS - 1]++;
		n->delay_n++;
	}
	depart = (n->link_free > n->now ? n->link_free : n->now) + (uint64_t)DGRAM * 1000000 / n->rate;
	n->link_free = depart;
	/* Random loss past the bottleneck (a radio hop): it cost the link. */
	if (rng_below(&n->rng, 10000) < n->loss_pm) {
		n->random_lost++;
		return;
	}
	ev_push(&n->q, (struct net_event){.t = depart + n->rtt_us, .kind = EV_ACK, .flow = flow, .seq = seq});
}

static void net_schedule_wake(struct net *n, uint32_t i, uint64_t t)
{
	struct net_flow *fl = &n->flow[i];

	if (n->granularity_us)
		t = (t + n->granularity_us - 1) / n->granularity_us * n->granularity_us;
	if (t < fl->wake_at) {
		fl->wake_at = t;
		ev_push(&n->q, (struct net_event){.t = t, .kind = EV_WAKE, .flow = i});
	}
}

/* A bulk sender: sends while its controller allows it. */
static void net_send(struct net *n, uint32_t i)
{
	struct net_flow *fl = &n->flow[i];
	uint64_t next;

	while (cc_rate_send_allowance(&fl->cc, n->now) > 0) {
		struct net_sent *s = &fl->ring[fl->next_seq % NET_RING];

		assert_true(fl->next_seq - fl->oldest < NET_RING);
		memset(s, 0, sizeof(*s));
		cc_rate_on_sent(&fl->cc, &s->snap, DGRAM, n->now);
		net_transmit(n, i, fl->next_seq++);
	}
	next = cc_rate_next_send_us(&fl->cc, n->now);
	/* Window-limited: an ACK or the retransmission timeout wakes it. */
	net_schedule_wake(n, i, next != UINT64_MAX ? next : fl->last_progress + 1000000);
}

static void net_on_ack(struct net *n, uint32_t i, uint32_t seq)
{
	struct net_flow *fl = &n->flow[i];

	/* FIFO path: whatever was sent before and is unanswered is lost. */
	for (; fl->oldest != seq; fl->oldest++)
		cc_rate_on_lost(&fl->cc, &fl->ring[fl->oldest % NET_RING].snap, DGRAM);
	cc_rate_on_acked(&fl->cc, &fl->ring[seq % NET_RING].snap, DGRAM, n->now);
	fl->oldest = seq + 1;
	cc_rate_on_ack_end(&fl->cc, n->now);
	fl->last_progress = n->now;
	fl->delivered_bytes += DGRAM;
	if (n->now >= n->measure_from)
		fl->measured_bytes += DGRAM;
}

static void net_on_timeout(struct net *n, uint32_t i)
{
	struct net_flow *fl = &n->flow[i];

	for (; fl->oldest != fl->next_seq; fl->oldest++)
		cc_rate_on_lost(&fl->cc, &fl->ring[fl->oldest % NET_RING].snap, DGRAM);
	cc_rate_on_ack_end(&fl->cc, n->now);
	fl->last_progress = n->now;
}

static void net_run(struct net *n, uint64_t until)
{
	while (n->q.n && n->q.ev[0].t <= until) {
		struct net_event e = ev_pop(&n->q);
		struct net_flow *fl = &n->flow[e.flow];

		n->now = e.t;

		if (e.kind == EV_ACK) {
			net_on_ack(n, e.flow, e.seq);
		} else {
			if (e.t != fl->wake_at)
				continue; /* superseded by an earlier wake */
			fl->wake_at = UINT64_MAX;
			if (fl->next_seq != fl->oldest && n->now >= fl->last_progress + 1000000)
				net_on_timeout(n, e.flow);
		}
		net_send(n, e.flow);
	}
	n->now = until;
}

static uint64_t net_delay_percentile_us(const struct net *n, uint32_t pct)
{
	uint64_t want = n->delay_n * pct / 100, seen = 0;

	for (uint32_t b = 0; b < NET_DELAY_BUCKETS; b++) {
		seen += n->delay_hist[b];
		if (seen > want)
			return (uint64_t)b * NET_DELAY_BUCKET_US;
	}
	return UINT64_MAX;
}

static double jain(const struct net *n)
{
	double sum = 0, sq = 0;

	for (uint32_t i = 0; i < n->flows; i++) {
		double x = (double)n->flow[i].measured_bytes;

		sum += x;
		sq += x * x;
	}
	return sq > 0 ? sum * sum / (n->flows * sq) : 0;
}

static uint64_t net_measured(const struct net *n)
{
	uint64_t b = 0;

	for (uint32_t i = 0; i < n->flows; i++)
		b += n->flow[i].measured_bytes;
	return b;
}

static void print_net(const char *name, const struct net *n, uint64_t measured_us)
{
	uint64_t link = n->rate * measured_us / 1000000;

	printf("%s: goodput %.3f of the link, drops %.2f %% (%llu of %llu; %.2f %% after the warm-up), "
	       "random loss %llu, "
	       "queue delay p50 %.1f ms p95 %.1f ms, Jain %.3f\n",
	       name, (double)net_measured(n) / (double)link, 100.0 * (double)n->dropped / (double)n->sent,
	       (unsigned long long)n->dropped, (unsigned long long)n->sent,
	       100.0 * (double)n->measured_dropped / (double)(n->measured_sent ? n->measured_sent : 1),
	       (unsigned long long)n->random_lost, (double)net_delay_percentile_us(n, 50) / 1000,
	       (double)net_delay_percentile_us(n, 95) / 1000, jain(n));
	for (uint32_t i = 0; i < n->flows; i++) {
		const struct cc_rate *cc = &n->flow[i].cc;

		printf("  flow %u: %.3f of the link, bw %llu B/s, min RTT %llu us, pacing %llu B/s, cwnd "
		       "%llu, "
		       "in flight %u, state %d, congested rounds %llu, extra %llu, hi %llu\n",
		       i, (double)n->flow[i].measured_bytes / (double)link,
		       (unsigned long long)cc_rate_bandwidth(cc), (unsigned long long)cc_rate_min_rtt_us(cc),
		       (unsigned long long)cc_rate_pacing_rate(cc), (unsigned long long)cc_rate_cwnd(cc),
		       cc_rate_in_flight(cc), cc_rate_state(cc), (unsigned long long)cc->congestion_rounds,
		       (unsigned long long)(cc->extra_acked[0] > cc->extra_acked[1] ? cc->extra_acked[0]
										    : cc->extra_acked[1]),
		       (unsigned long long)cc->inflight_hi);
	}
}

#define MBIT(x) ((uint64_t)(x)*1000000 / 8)

/* The seed of a scenario; CC_RATE_SEED=n in the environment runs it with
 * another, to see how the figures spread. */
static uint64_t seed_or(uint64_t fixed)
{
	const char *e = getenv("CC_RATE_SEED");

	return e ? strtoull(e, NULL, 10) : fixed;
}

static void test_net_one_flow_5mbit(void **state)
{
	uint64_t run = 20000000, warm = 2000000;

	(void)state;
	/* 5 Mbit/s, 20 ms RTT, 30 ms drop-tail buffer; a sender that wakes
	 * for its pacing exactly, then one that wakes on whole milliseconds
	 * (ACKs still wake it at once), as a host's timer does. */
	for (uint64_t granularity = 0; granularity <= 1000; granularity += 1000) {
		struct net *n = net_new(MBIT(5), 20000, 30000, 0, 1, 0, seed_or(1));

		n->granularity_us = granularity;
		n->measure_from = T0 + warm;
		net_run(n, T0 + run);
		print_net(granularity ? "5 Mbit/s, 20 ms, 1 ms timers" : "5 Mbit/s, 20 ms", n, run - warm);
		assert_true(net_measured(n) * 100 >= n->rate * (run - warm) / 1000000 * 92);
		assert_true(n->dropped * 100 <= n->sent * 2);
		assert_true(net_delay_percentile_us(n, 50) <= 5000);
		net_free(n);
	}
}

static void test_net_eight_flows_20mbit(void **state)
{
	/* 8 flows, 20 Mbit/s, 40 ms RTT, 50 ms buffer, starting 250 ms apart. */
	struct net *n = net_new(MBIT(20), 40000, 50000, 0, 8, 250000, seed_or(2));
	uint64_t run = 30000000, warm = 10000000;

	(void)state;
	n->measure_from = T0 + warm;
	net_run(n, T0 + run);
	print_net("8 flows, 20 Mbit/s, 40 ms", n, run - warm);
	assert_true(jain(n) >= 0.9);
	assert_true(n->dropped * 100 <= n->sent * 2);
	net_free(n);
}

static void test_net_random_loss_20mbit(void **state)
{
	uint64_t run = 20000000, warm = 2000000;

	(void)state;
	/* 20 Mbit/s, 60 ms RTT, 0.5 % random loss, a 60 ms buffer. */
	for (uint64_t granularity = 0; granularity <= 1000; granularity += 1000) {
		struct net *n = net_new(MBIT(20), 60000, 60000, 50, 1, 0, seed_or(3));

		n->granularity_us = granularity;
		n->measure_from = T0 + warm;
		net_run(n, T0 + run);
		print_net(granularity ? "20 Mbit/s, 60 ms, 0.5 % loss, 1 ms timers"
				      : "20 Mbit/s, 60 ms, 0.5 % loss",
			  n, run - warm);
		assert_true(net_measured(n) * 100 >= n->rate * (run - warm) / 1000000 * 85);
		net_free(n);
	}
}

/* ---- loopback: no network, two CPU-bound endpoints ---- */

/*
 * Each end is one thread that pays per datagram: the sender to send one
 * and to read an ACK datagram, the receiver to read one. The receiver
 * reads whatever waits in its socket as one batch and then sends one ACK
 * for the batch, as a host with batched reads does; datagrams arriving at
 * a full socket buffer are dropped. The path itself adds only
 * microseconds, so the minimum RTT is tens of microseconds while the RTT
 * under load is the time the receiver takes for a batch: milliseconds
 * with a large window, with no network queue anywhere.
 */

enum loop_event_kind { LE_DGRAM, LE_ACK, LE_SENDER, LE_RECEIVER };

#define LOOP_SEQS (1u << 20)
#define LOOP_SEND_BATCH 64u

struct loop {
	uint64_t send_us, read_us, ack_us, prop_us; /* costs and the path */
	uint32_t rcvbuf; /* datagrams */
	uint32_t window; /* datagrams in flight, the conn's own limit */
	uint64_t ack_every_us; /* the receiver acknowledges at most this often (0: every batch) */
	bool use_cc;
	uint64_t now;
	struct evq q;
	/* sender */
	struct cc_rate cc;
	uint64_t sender_free, sender_wake;
	uint32_t next_seq, oldest;
	struct net_sent *sent; /* LOOP_SEQS */
	uint64_t *sent_at; /* LOOP_SEQS */
	uint32_t *acks; /* LOOP_SEQS: seqs the receiver acknowledged, in order */
	uint32_t acks_head;
	uint32_t ack_waiting_from; /* acks index of the first arrived, unread */
	uint32_t acks_arrived; /* acks index up to which ACK datagrams arrived */
	uint64_t ack_dgrams_waiting;
	/* receiver */
	uint32_t *rq; /* LOOP_SEQS ring: seqs in the socket buffer */
	uint32_t rq_head, rq_tail;
	uint64_t receiver_free;
	bool receiver_scheduled;
	uint64_t last_ack_sent;
	uint32_t acks_sent; /* acks index up to which an ACK datagram went */
	/* figures */
	uint64_t measure_from;
	uint64_t received, measured, dropped, sent_total;
	uint64_t rtt_sum, rtt_n;
};

static struct loop *loop_new(uint64_t send_us, uint64_t read_us, uint32_t window, uint64_t ack_every_us,
			     bool use_cc)
{
	struct loop *l = calloc(1, sizeof(*l));
	struct cc_rate_config cfg = {.mss = DGRAM, .seed = 7};

	assert_non_null(l);
	l->send_us = send_us;
	l->read_us = read_us;
	l->ack_us = 1;
	l->prop_us = 10;
	l->rcvbuf = 4096;
	l->window = window;
	l->ack_every_us = ack_every_us;
	l->use_cc = use_cc;
	l->now = T0;
	evq_init(&l->q);
	l->sent = calloc(LOOP_SEQS, sizeof(*l->sent));
	l->acks = calloc(LOOP_SEQS, sizeof(*l->acks));
	l->rq = calloc(LOOP_SEQS, sizeof(*l->rq));
	l->sent_at = calloc(LOOP_SEQS, sizeof(*l->sent_at));
	assert_true(l->sent && l->acks && l->rq && l->sent_at);
	cc_rate_init(&l->cc, &cfg, T0);
	l->sender_wake = T0;
	ev_push(&l->q, (struct net_event){.t = T0, .kind = LE_SENDER});
	return l;
}

static void loop_free(struct loop *l)
{
	free(l->q.ev);
	free(l->sent);
	free(l->acks);
	free(l->rq);
	free(l->sent_at);
	free(l);
}

static void loop_wake_sender(struct loop *l, uint64_t t)
{
	if (t < l->sender_free)
		t = l->sender_free;
	if (t < l->sender_wake) {
		l->sender_wake = t;
		ev_push(&l->q, (struct net_event){.t = t, .kind = LE_SENDER});
	}
}

static void loop_sender(struct loop *l)
{
	uint64_t t = l->now;
	uint32_t n = 0;

	/* Read the ACK datagrams that arrived: each costs ack_us. */
	if (l->ack_dgrams_waiting) {
		for (uint32_t i = l->ack_waiting_from; i != l->acks_arrived; i++) {
			uint32_t seq = l->acks[i % LOOP_SEQS];

			if (l->use_cc) {
				for (; l->oldest != seq; l->oldest++)
					cc_rate_on_lost(&l->cc, &l->sent[l->oldest % LOOP_SEQS].snap, DGRAM);
				cc_rate_on_acked(&l->cc, &l->sent[seq % LOOP_SEQS].snap, DGRAM, t);
			}
			l->rtt_sum += t - l->sent_at[seq % LOOP_SEQS];
			l->rtt_n++;
			l->oldest = seq + 1;
		}
		t += l->ack_us * l->ack_dgrams_waiting;
		if (l->use_cc)
			cc_rate_on_ack_end(&l->cc, t);
		l->ack_waiting_from = l->acks_arrived;
		l->ack_dgrams_waiting = 0;
	}
	while (n < LOOP_SEND_BATCH && l->next_seq - l->oldest < l->window &&
	       (!l->use_cc || cc_rate_send_allowance(&l->cc, t) > 0)) {
		if (l->use_cc)
			cc_rate_on_sent(&l->cc, &l->sent[l->next_seq % LOOP_SEQS].snap, DGRAM, t);
		l->sent_at[l->next_seq % LOOP_SEQS] = t;
		ev_push(&l->q,
			(struct net_event){.t = t + l->prop_us, .kind = LE_DGRAM, .seq = l->next_seq++});
		l->sent_total++;
		t += l->send_us;
		n++;
	}
	l->sender_free = t;
	l->sender_wake = UINT64_MAX;
	if (n == LOOP_SEND_BATCH)
		loop_wake_sender(l, t);
	else if (l->use_cc && l->next_seq - l->oldest < l->window) {
		uint64_t next = cc_rate_next_send_us(&l->cc, t);

		if (next != UINT64_MAX)
			loop_wake_sender(l, next);
	}
}

static void loop_receiver(struct loop *l)
{
	uint32_t batch = l->rq_head - l->rq_tail;
	uint64_t t = l->now + batch * l->read_us;

	l->receiver_scheduled = false;
	/* One batch read... */
	for (uint32_t i = 0; i < batch; i++)
		l->acks[l->acks_head++ % LOOP_SEQS] = l->rq[l->rq_tail++ % LOOP_SEQS];
	if (l->now >= l->measure_from)
		l->measured += batch;
	l->received += batch;
	/* ...then one ACK for all that waits, if it is time for one. */
	if (l->acks_sent != l->acks_head) {
		if (t >= l->last_ack_sent + l->ack_every_us) {
			t += l->ack_us;
			ev_push(&l->q,
				(struct net_event){.t = t + l->prop_us, .kind = LE_ACK, .seq = l->acks_head});
			l->acks_sent = l->acks_head;
			l->last_ack_sent = t;
		} else if (batch == 0) {
			return;
		}
	}
	l->receiver_free = t;
	if (batch || l->acks_sent != l->acks_head) {
		uint64_t wake = t;

		if (l->rq_head == l->rq_tail && l->acks_sent != l->acks_head)
			wake = l->last_ack_sent + l->ack_every_us;
		l->receiver_scheduled = true;
		ev_push(&l->q, (struct net_event){.t = wake, .kind = LE_RECEIVER});
	}
}

static void loop_run(struct loop *l, uint64_t until)
{
	while (l->q.n && l->q.ev[0].t <= until) {
		struct net_event e = ev_pop(&l->q);

		l->now = e.t;
		switch (e.kind) {
		case LE_DGRAM:
			if (l->rq_head - l->rq_tail >= l->rcvbuf) {
				l->dropped++;
				break;
			}
			l->rq[l->rq_head++ % LOOP_SEQS] = e.seq;
			if (!l->receiver_scheduled) {
				l->receiver_scheduled = true;
				ev_push(&l->q,
					(struct net_event){.t = l->now > l->receiver_free ? l->now
											  : l->receiver_free,
							   .kind = LE_RECEIVER});
			}
			break;
		case LE_ACK:
			l->acks_arrived = e.seq;
			l->ack_dgrams_waiting++;
			loop_wake_sender(l, l->now);
			break;
		case LE_SENDER:
			if (e.t != l->sender_wake)
				break;
			loop_sender(l);
			break;
		case LE_RECEIVER: loop_receiver(l); break;
		}
	}
}

/* Datagrams per second the receiver got over the measured second. */
static uint64_t loop_throughput(uint64_t send_us, uint64_t read_us, uint32_t window, uint64_t ack_every_us,
				bool use_cc)
{
	struct loop *l = loop_new(send_us, read_us, window, ack_every_us, use_cc);
	uint64_t r;

	l->measure_from = T0 + 200000;
	loop_run(l, T0 + 1200000);
	r = l->measured;
	printf("loopback, send %llu us, read %llu us, window %u, ACK every %llu us, %s: %llu datagrams/s, "
	       "drops %llu, "
	       "min RTT %llu us, mean RTT %llu us, bw %llu B/s, cwnd %llu, pacing %llu B/s, state %d\n",
	       (unsigned long long)send_us, (unsigned long long)read_us, window,
	       (unsigned long long)ack_every_us, use_cc ? "cc_rate" : "no cc", (unsigned long long)r,
	       (unsigned long long)l->dropped, (unsigned long long)cc_rate_min_rtt_us(&l->cc),
	       (unsigned long long)(l->rtt_n ? l->rtt_sum / l->rtt_n : 0),
	       (unsigned long long)cc_rate_bandwidth(&l->cc), (unsigned long long)cc_rate_cwnd(&l->cc),
	       (unsigned long long)cc_rate_pacing_rate(&l->cc), cc_rate_state(&l->cc));
	loop_free(l);
	return r;
}

static void test_loopback_cpu_bound_is_not_strangled(void **state)
{
	static const struct {
		uint64_t send_us, read_us;
		uint32_t window;
		uint64_t ack_every_us;
	} cases[] = {
		{2, 4, 64, 0}, /* receiver-bound, the default window */
		{2, 4, 1024, 0}, /* receiver-bound, RTT in milliseconds without cc */
		{4, 2, 64, 0}, /* sender-bound */
		{4, 2, 1024, 0},    {2, 4, 1024, 1000}, /* a receiver that acknowledges once a millisecond */
		{4, 2, 1024, 1000},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t without = loop_throughput(cases[i].send_us, cases[i].read_us, cases[i].window,
						   cases[i].ack_every_us, false);
		uint64_t with = loop_throughput(cases[i].send_us, cases[i].read_us, cases[i].window,
						cases[i].ack_every_us, true);

		assert_true(with * 100 >= without * 90);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot_is_small),
		cmocka_unit_test(test_rate_sample_and_min_rtt),
		cmocka_unit_test(test_bw_filter_is_a_windowed_max),
		cmocka_unit_test(test_app_limited_samples_keep_the_estimate),
		cmocka_unit_test(test_startup_ends_at_a_standing_queue),
		cmocka_unit_test(test_startup_ends_within_the_round),
		cmocka_unit_test(test_out_of_data_skips_probe_rtt),
		cmocka_unit_test(test_state_transitions),
		cmocka_unit_test(test_startup_exit_on_loss_with_queue),
		cmocka_unit_test(test_standing_queue_paces_under_the_estimate),
		cmocka_unit_test(test_standing_queue_caps_the_window),
		cmocka_unit_test(test_foreign_queue_stops_the_standing_rules),
		cmocka_unit_test(test_can_send_is_allowance_open),
		cmocka_unit_test(test_pacing_budget),
		cmocka_unit_test(test_sends_at_one_time_spend_the_budget),
		cmocka_unit_test(test_out_of_data_bursts_the_window),
		cmocka_unit_test(test_random_loss_does_not_cut_the_rate),
		cmocka_unit_test(test_app_limited_rounds_are_not_congested),
		cmocka_unit_test(test_growing_queue_limits_the_window),
		cmocka_unit_test(test_net_one_flow_5mbit),
		cmocka_unit_test(test_net_eight_flows_20mbit),
		cmocka_unit_test(test_net_random_loss_20mbit),
		cmocka_unit_test(test_loopback_cpu_bound_is_not_strangled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
