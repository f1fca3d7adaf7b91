/* SPDX-License-Identifier: MIT */
/*
 * How soon a lost reliable frame comes back at a real round-trip time,
 * on the simulator's virtual clock (sim.h): a lone lost message (only a
 * timer can find it), one lost in the middle of a flight (the peer's
 * NACK), the last datagram of a flight (the tail-loss probe), and a frame
 * sent with redundancy (its copy arrives, the application sees it once).
 * Each bound is what the mechanism can do plus a small tolerance, so a
 * recovery that falls back to a slower path fails the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conn/defaults.h"
#include "sim.h"

#define MS 1000ull
#define SEC 1000000ull
#define ONE_WAY (10 * MS) /* a 20 ms round trip */
#define RTT (2 * ONE_WAY)
/* What a bound allows beyond the mechanism's own time: the RTT estimate's
 * variance on a link without jitter is well under this. */
#define TOLERANCE (1 * MS)

static const struct sim_link path = {.delay_us = ONE_WAY};

static struct sim *recovery_sim(uint64_t seed, uint32_t redundant_channels)
{
	struct rudp_conn_config cfg;
	struct sim *s = malloc(sizeof(*s));

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	sim_init(s, seed, &cfg, &path);
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 10 * SEC));
	if (redundant_channels)
		rudp_conn_set_redundant_channels(s->ep[0].c, redundant_channels);
	return s;
}

static struct rudp_conn_stats client_stats(const struct sim *s)
{
	struct rudp_conn_stats st;

	rudp_conn_get_stats(s->ep[0].c, &st);
	return st;
}

/* The client queues one reliable-ordered message of len bytes on channel
 * ch, as the sim's own workload would (so its checks apply). */
static void send_ordered(struct sim *s, uint32_t len, uint8_t ch)
{
	assert_int_equal(sim_send_next(&s->ep[0], len, 3, ch), 0);
}

/* Sends n messages, one every 50 ms, each delivered before the next: the
 * RTT estimate settles on the path's 20 ms, variance near zero. */
static void settle_rtt(struct sim *s, int n)
{
	for (int i = 0; i < n; i++) {
		send_ordered(s, 100, 0);
		assert_true(sim_run(s, sim_all_delivered, SEC));
		sim_run_until(s, s->now + 50 * MS);
	}
	assert_int_equal(client_stats(s).frames_retransmitted, 0);
	assert_true(client_stats(s).rtt_us >= RTT && client_stats(s).rtt_us < RTT + TOLERANCE);
}

/* Sends burst messages of len bytes at once, per_dgram of them to a data
 * datagram (1 at 1,000 bytes), with `dropped` data datagrams lost from the
 * drop-th (from 1); returns how long after the last lost datagram's send
 * the last message those carried (with redundancy on a one-message burst:
 * the message) reached the application. From the lost datagram, not from the burst: the rate
 * controller paces a burst out over its estimate, and that is not
 * recovery. */
static uint64_t burst_with_loss(struct sim *s, uint32_t burst, uint32_t len, uint32_t per_dgram,
				uint32_t drop, uint32_t dropped)
{
	const struct sim_stream_rx *rx = &s->ep[1].rx[3][0];
	uint32_t carried = (drop - 1 + dropped) * per_dgram, lost;
	uint64_t arrived = 0;

	settle_rtt(s, 20);
	lost = s->ep[0].tx_next[3][0] + (carried <= burst ? carried : burst) - 1;
	for (uint32_t i = 0; i < burst; i++)
		send_ordered(s, len, 0);
	s->drop_data_skip[0] = drop - 1;
	s->drop_data_next[0] = dropped;
	for (uint64_t until = s->now + 5 * SEC; !sim_all_delivered(s) && s->now < until && !s->stuck;) {
		sim_step(s);
		if (!arrived && rx->delivered > lost)
			arrived = s->now;
	}
	assert_true(sim_all_delivered(s));
	assert_int_equal(s->ep[1].errors, 0);
	assert_int_equal(s->drop_data_next[0], 0);
	return arrived - s->data_dropped_at[0];
}

/* A lone message lost: nothing after it reveals the gap, so the tail-loss
 * probe resends it srtt + margin after its send; it arrives one way
 * later. Before the probe was timed from one RTT, that was two. */
static void test_lone_loss_returns_within_rtt_and_margin(void **state)
{
	struct sim *s = recovery_sim(45, 0);
	uint64_t took;

	(void)state;
	took = burst_with_loss(s, 1, 100, 1, 1, 1);
	assert_true(took <= ONE_WAY + RTT + RUDP_DEFAULT_PROBE_MARGIN_US + TOLERANCE);
	assert_int_equal(client_stats(s).resent_probe, 1);
	assert_int_equal(client_stats(s).frames_retransmitted, 1);
	sim_delete(s);
}

/* One datagram lost in a flight of twenty: the next one shows the peer
 * the gap, its NACK goes in the same flush, and the resend arrives about
 * one RTT after the lost one would have. */
static void test_loss_in_flight_returns_within_rtt(void **state)
{
	struct sim *s = recovery_sim(46, 0);
	uint64_t took;
	struct rudp_conn_stats st;

	(void)state;
	took = burst_with_loss(s, 20, 1000, 1, 5, 1);
	st = client_stats(s);
	assert_true(took <= ONE_WAY + RTT + TOLERANCE);
	assert_int_equal(st.frames_retransmitted, 1);
	assert_int_equal(st.resent_nack + st.resent_inferred, 1);
	sim_delete(s);
}

/* The last datagram of a flight lost: the probe goes srtt / 4 + margin
 * after the flight's ACKs stopped making progress (they all came back one
 * RTT after the send), the resend one way later. */
static void test_last_of_flight_returns_by_probe(void **state)
{
	struct sim *s = recovery_sim(47, 0);
	uint64_t took;
	struct rudp_conn_stats st;

	(void)state;
	took = burst_with_loss(s, 20, 1000, 1, 20, 1);
	st = client_stats(s);
	assert_true(took <= ONE_WAY + RTT + RTT / 4 + RUDP_DEFAULT_PROBE_MARGIN_US + TOLERANCE);
	assert_int_equal(st.resent_probe, 1);
	assert_int_equal(st.frames_retransmitted, 1);
	sim_delete(s);
}

/* Small messages, eight to a datagram, and the flight's last datagram
 * lost: the probe resends the oldest frame in flight and the rest of its
 * datagram with it, so all eight come back a probe wait and one way after
 * the loss. A probe of the oldest frame alone left the other seven to be
 * inferred from its ACK, an RTT later. */
static void test_last_datagram_returns_whole_by_probe(void **state)
{
	struct sim *s = recovery_sim(48, 0);
	uint64_t took;
	struct rudp_conn_stats st;

	(void)state;
	took = burst_with_loss(s, 16, 64, 8, 2, 1);
	st = client_stats(s);
	assert_true(took <= ONE_WAY + RTT + RTT / 4 + RUDP_DEFAULT_PROBE_MARGIN_US + TOLERANCE);
	assert_int_equal(st.resent_probe, 8);
	assert_int_equal(st.frames_retransmitted, 8);
	sim_delete(s);
}

/* The flight's last two datagrams lost, eight small messages in each: the
 * probe resends the first one's frames and leaves the second's alone (it
 * is one datagram's worth, not an RTO of the flight). The second's eight
 * then time out together (the RTO, its 30 ms floor here, runs out before
 * the probe's ACK could show them lost one RTT after the probe) and come
 * back in one datagram. A timeout of one frame left the other seven to
 * that ACK's inference, ten milliseconds later. */
static void test_two_lost_datagrams_return_whole(void **state)
{
	struct sim *s = recovery_sim(49, 0);
	uint64_t took;
	struct rudp_conn_stats st;

	(void)state;
	took = burst_with_loss(s, 16, 64, 8, 1, 2);
	st = client_stats(s);
	assert_int_equal(st.resent_probe, 8);
	assert_int_equal(st.resent_timeout, 8);
	assert_int_equal(st.frames_retransmitted, 16);
	assert_true(took <= ONE_WAY + RUDP_DEFAULT_RTO_MIN_MS * MS + TOLERANCE);
	sim_delete(s);
}

/* Redundancy on channel 0: each message's copy goes in the datagram after
 * it. Whichever of the two is lost, the other brings the message at the
 * one-way delay, with no resend, and the application sees it once (the
 * sim fails a message delivered twice as out of order); the receiver
 * drops the other copy as a duplicate. Channel 1 is not copied. */
static void test_redundant_frame_arrives_once(void **state)
{
	(void)state;
	for (uint32_t drop = 1; drop <= 2; drop++) {
		struct sim *s = recovery_sim(48 + drop, 1u << 0);
		struct rudp_conn_stats st, rx;
		uint64_t took = burst_with_loss(s, 1, 100, 1, drop, 1);

		sim_run_until(s, s->now + RTT); /* the ACK comes back */
		st = client_stats(s);
		rudp_conn_get_stats(s->ep[1].c, &rx);
		assert_true(took <= ONE_WAY + TOLERANCE);
		assert_int_equal(st.frames_retransmitted, 0);
		assert_int_equal(st.frames_copied, 21);
		assert_int_equal(s->ep[1].rx[3][0].delivered, 21);
		/* Every copy but the one whose twin was lost. */
		assert_int_equal(rx.duplicates_dropped, 20);
		assert_int_equal(st.window_in_use, 0);

		send_ordered(s, 100, 1);
		assert_true(sim_run(s, sim_all_delivered, SEC));
		assert_int_equal(client_stats(s).frames_copied, 21);
		assert_int_equal(s->ep[1].errors, 0);
		sim_delete(s);
	}
}

/* Redundancy when the rate controller, not the application, limits the
 * sender: a burst of 64 x 1,000 B, one message a datagram, is more than
 * its window after a quiet start, so it leaves over several flushes, each
 * stopped by the window. The copies of what each flush sent are owed to
 * the next one, not dropped with it, so a datagram lost anywhere in the
 * burst is made good by its copy with no resend. The exceptions are
 * copies the window held back until the frame's ACK came (no use any
 * more) or, once here, its NACK. Before, 4 of the 64 went twice, and each
 * of these losses cost a resend. */
static void test_redundant_copies_survive_pacing(void **state)
{
	uint64_t resent = 0;

	(void)state;
	for (uint32_t drop = 4; drop <= 64; drop += 6) {
		struct sim *s = recovery_sim(52 + drop, 1u << 0);
		struct rudp_conn_stats st;

		burst_with_loss(s, 64, 1000, 1, drop, 1);
		st = client_stats(s);
		assert_true(st.frames_copied >= 20 + 56);
		resent += st.frames_retransmitted;
		sim_delete(s);
	}
	assert_true(resent <= 1);
}

/* An echo of 3,400 x 800 B, 64 outstanding, over 10 ms RTT with 1 % loss
 * each way and up to jitter_us of random delay per datagram (which
 * reorders them), with the default congestion control; returns the
 * seconds it took, and the client's stats in *st. */
static double reordered_echo(uint64_t jitter_us, struct rudp_conn_stats *st, uint64_t *dgrams_lost)
{
	const struct sim_link link = {.loss_pm = 10, .delay_us = 5 * MS, .jitter_us = jitter_us};
	struct rudp_conn_config cfg;
	struct sim *s = malloc(sizeof(*s));

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	sim_init(s, 9, &cfg, &link);
	s->timer_granularity_us = MS;
	s->ep[0].work = (struct sim_workload){
		.count = 3400,
		.min_size = 800,
		.max_size = 800,
		.rel_mask = 1u << 3,
		.channels = 1,
		.max_outstanding = 64,
	};
	s->ep[1].work = (struct sim_workload){.echo = true};
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 30 * SEC));
	uint64_t start = s->now;
	assert_true(sim_run(s, sim_all_delivered, 600 * SEC));
	sim_assert_complete(s, 0);
	sim_assert_complete(s, 1);
	*st = client_stats(s);
	*dgrams_lost = s->dgrams_lost;
	double took = (double)(s->now - start) / SEC;
	sim_delete(s);
	return took;
}

/* Datagrams that arrive out of order are late, not lost: once the ACKs
 * show reordering, loss is declared by time alone, so the late ones are
 * not resent and the rate controller does not take them for congestion.
 * (Before, at 2 ms of jitter, the client resent more frames than twice
 * the datagrams lost both ways, cut its rate in 21 round trips, and took
 * four times as long as without the jitter.) */
static void test_reordering_is_not_loss(void **state)
{
	struct rudp_conn_stats clean, jittered;
	uint64_t lost_clean, lost;

	(void)state;
	double base = reordered_echo(0, &clean, &lost_clean);
	double took = reordered_echo(2 * MS, &jittered, &lost);

	print_message("no jitter %.3f s, %llu resent; 2 ms jitter %.3f s, %llu resent (%llu datagrams lost), "
		      "%llu congested rounds\n",
		      base, (unsigned long long)clean.frames_retransmitted, took,
		      (unsigned long long)jittered.frames_retransmitted, (unsigned long long)lost,
		      (unsigned long long)jittered.cc_reductions);
	assert_true(jittered.frames_retransmitted <= lost);
	assert_true(jittered.cc_reductions <= 5);
	assert_true(took <= 2.5 * base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lone_loss_returns_within_rtt_and_margin),
		cmocka_unit_test(test_loss_in_flight_returns_within_rtt),
		cmocka_unit_test(test_last_of_flight_returns_by_probe),
		cmocka_unit_test(test_last_datagram_returns_whole_by_probe),
		cmocka_unit_test(test_two_lost_datagrams_return_whole),
		cmocka_unit_test(test_redundant_frame_arrives_once),
		cmocka_unit_test(test_redundant_copies_survive_pacing),
		cmocka_unit_test(test_reordering_is_not_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
