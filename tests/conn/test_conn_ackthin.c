/* SPDX-License-Identifier: MIT */
/*
 * ACK thinning (acktr.h, acktr_note_queued) on the simulator's virtual
 * clock at a 20 ms RTT: a stream is acknowledged about every second
 * datagram; a gap is NACKed the moment it shows; a datagram that waits
 * for its ACK gets it when the delay ends, with nothing else to wake the
 * conn; a lone one at once; ack_every 1 acknowledges every datagram.
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
#define ONE_WAY (10 * MS)
/* Thinning is off by default (conn/defaults.h): these tests turn it on
 * at two datagrams an ACK, with the default delay. */
#define THIN_EVERY 2u

static struct sim *thin_sim(uint32_t ack_every, uint8_t cc, const struct sim_link *link)
{
	struct rudp_conn_config cfg;
	struct sim *s = malloc(sizeof(*s));

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	cfg.ack_every = ack_every;
	cfg.congestion_control = cc;
	sim_init(s, 91, &cfg, link);
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 10 * SEC));
	return s;
}

static void send_ordered(struct sim *s, uint32_t len)
{
	assert_int_equal(sim_send_next(&s->ep[0], len, 3, 0), 0);
}

/* One message at a time, each delivered before the next: the RTT
 * estimates settle on the path's 20 ms (thinning needs an RTT of four
 * ACK delays, conn_recv.c). */
static void settle(struct sim *s)
{
	for (int i = 0; i < 10; i++) {
		send_ordered(s, 100);
		assert_true(sim_run(s, sim_all_delivered, SEC));
		sim_run_until(s, s->now + 50 * MS);
	}
}

/* ACK datagrams the server sent per data datagram it received, over a
 * one-way bulk transfer through a 5 Mbit/s bottleneck (a datagram every
 * 1.6 ms, within the 2 ms delay). */
static double acks_per_datagram(uint32_t ack_every)
{
	const struct sim_link link = {
		.delay_us = ONE_WAY, .rate_bps = 625000, .queue_bytes = 625000 * 30 / 1000};
	struct sim *s = thin_sim(ack_every, RUDP_CONN_CC_RATE, &link);
	uint64_t acks0, data0, data;
	double ratio;

	settle(s);
	acks0 = s->ep[1].ack_dgrams_sent;
	data0 = s->ep[1].c->stats.datagrams_received;
	s->ep[0].work = (struct sim_workload){.count = s->ep[0].sent + 2000,
					      .min_size = 1000,
					      .max_size = 1000,
					      .rel_mask = 1u << RUDP_WIRE_RELIABLE_ORDERED,
					      .channels = 1};
	assert_true(sim_run(s, sim_all_delivered, 60 * SEC));
	assert_int_equal(s->ep[1].errors, 0);
	data = s->ep[1].c->stats.datagrams_received - data0;
	ratio = (double)(s->ep[1].ack_dgrams_sent - acks0) / (double)data;
	printf("ack_every %u: %llu data datagrams, %.3f ACKs each\n", ack_every, (unsigned long long)data,
	       ratio);
	sim_delete(s);
	return ratio;
}

static void test_bulk_acks_halve(void **state)
{
	(void)state;
	assert_true(acks_per_datagram(1) > 0.95);
	assert_true(acks_per_datagram(THIN_EVERY) < 0.6);
}

/* A burst of ten, 0.5 ms apart on the link (no congestion control), with
 * the fourth datagram lost: the fifth shows the gap and the server NACKs
 * the fourth, and acknowledges the fifth, as it arrives, without waiting
 * for the ACK delay; the resend follows the NACK. */
#define SPACING (MS / 2)

static void test_gap_nacked_at_once(void **state)
{
	const struct sim_link link = {.delay_us = ONE_WAY, .tx_us = SPACING};
	struct sim *s = thin_sim(THIN_EVERY, RUDP_CONN_CC_NONE, &link);
	uint64_t fifth;

	(void)state;
	settle(s);
	s->timer_granularity_us = 0;
	assert_int_equal(s->ep[1].nack_dgrams_sent, 0);
	for (int i = 0; i < 10; i++)
		send_ordered(s, 1000);
	s->drop_data_skip[0] = 3;
	s->drop_data_next[0] = 1;
	/* All ten are sent at once and leave the link SPACING apart: the
	 * fifth arrives five spacings and one way after the send. */
	while (s->data_dropped_at[0] == 0 || s->ep[1].nack_dgrams_sent == 0)
		sim_step(s);
	fifth = s->data_dropped_at[0] + 5 * SPACING + ONE_WAY;
	assert_int_equal(s->ep[1].last_nack_at, fifth);
	assert_int_equal(s->ep[1].last_ack_at, fifth);
	assert_true(sim_run(s, sim_all_delivered, 5 * SEC));
	assert_int_equal(s->ep[1].errors, 0);
	assert_int_equal(s->ep[1].nack_dgrams_sent, 1);
	assert_int_equal(s->ep[0].c->stats.frames_retransmitted, 1);
	sim_delete(s);
}

/* Two datagrams after a quiet spell, 0.5 ms apart on the link: the
 * first (lone so far) is acknowledged on arrival; the second waits, and
 * its ACK goes exactly when the delay ends, the conn's deadline waking it
 * (the simulator's timers here are exact, and nothing else is due). With
 * ack_every 1, each is acknowledged on arrival, as before thinning. */
static void two_datagrams(uint32_t ack_every)
{
	const struct sim_link link = {.delay_us = ONE_WAY, .tx_us = SPACING};
	struct sim *s = thin_sim(ack_every, RUDP_CONN_CC_NONE, &link);
	uint64_t first, acks0;

	settle(s);
	s->timer_granularity_us = 0;
	acks0 = s->ep[1].ack_dgrams_sent;
	send_ordered(s, 1000);
	send_ordered(s, 1000);
	while (s->ep[1].ack_dgrams_sent == acks0)
		sim_step(s);
	first = s->ep[1].last_ack_at;
	/* The second datagram arrives SPACING later. */
	sim_run_until(s, first + SPACING);
	if (ack_every == 1) {
		assert_int_equal(s->ep[1].ack_dgrams_sent, acks0 + 2);
		assert_int_equal(s->ep[1].last_ack_at, first + SPACING);
	} else {
		assert_int_equal(s->ep[1].ack_dgrams_sent, acks0 + 1);
		assert_int_equal(rudp_conn_next_deadline(s->ep[1].c),
				 first + SPACING + RUDP_DEFAULT_ACK_DELAY_US);
		sim_run_until(s, first + SPACING + RUDP_DEFAULT_ACK_DELAY_US);
		assert_int_equal(s->ep[1].ack_dgrams_sent, acks0 + 2);
		assert_int_equal(s->ep[1].last_ack_at, first + SPACING + RUDP_DEFAULT_ACK_DELAY_US);
	}
	assert_true(sim_run(s, sim_all_delivered, SEC));
	/* No probe: the sender allowed the wait (loss.c, probe_ack_delay). */
	sim_run_until(s, s->now + 100 * MS);
	assert_int_equal(s->ep[0].c->stats.frames_retransmitted, 0);
	assert_int_equal(s->ep[1].errors, 0);
	sim_delete(s);
}

static void test_waiting_ack_sent_at_delay(void **state)
{
	(void)state;
	two_datagrams(THIN_EVERY);
}

static void test_ack_every_one_acks_each(void **state)
{
	(void)state;
	two_datagrams(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bulk_acks_halve),
		cmocka_unit_test(test_gap_nacked_at_once),
		cmocka_unit_test(test_waiting_ack_sent_at_delay),
		cmocka_unit_test(test_ack_every_one_acks_each),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
