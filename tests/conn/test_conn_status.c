/* SPDX-License-Identifier: MIT */
/*
 * The conn's live status (conn_status.c) over the simulated network
 * (sim.h): loss figures each way under random loss, none under reordering
 * alone, rates and the recent window, the bound on a forged jump in
 * datagram sequence numbers, and what send loss counts when ACKs or NACKs
 * are lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define MS 1000ull
#define SEC 1000000ull

static uint64_t run_until_us;

static bool reached_time(struct sim *s)
{
	return s->now >= run_until_us;
}

static struct sim *start_bulk(uint64_t seed, const struct sim_link *link, uint32_t count)
{
	struct rudp_conn_config cfg;
	struct sim *s = malloc(sizeof(*s));

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	cfg.timeout_us = 120 * SEC;
	/* A datagram per message and a wide window: thousands of datagrams a
	 * second, so a 1..2 s window holds enough for a percentage. */
	cfg.max_frames_per_datagram = 1;
	cfg.window_frames = 256;
	sim_init(s, seed, &cfg, link);
	for (int i = 0; i < 2; i++) {
		s->ep[i].work = (struct sim_workload){
			.count = count,
			.min_size = 100,
			.max_size = 300,
			.rel_mask = 1u << 3, /* reliable ordered */
			.channels = 2,
		};
	}
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 30 * SEC));
	return s;
}

static void status_of(struct sim *s, int i, struct rudp_conn_status *st)
{
	rudp_conn_get_status(s->ep[i].c, s->now, st);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* 10 % of the datagrams lost each way: both ends see about 10 % received
 * missing, and about 10 % of what they sent reported or inferred lost. */
static void test_loss_each_way(void **state)
{
	static const struct sim_link link = {.delay_us = 10 * MS, .loss_pm = 100};
	struct sim *s = start_bulk(71, &link, 60000);

	(void)state;
	run_until_us = s->now + 4 * SEC;
	assert_true(sim_run(s, reached_time, 10 * SEC));
	for (int i = 0; i < 2; i++) {
		struct rudp_conn_status st;
		double rx, tx;

		status_of(s, i, &st);
		rx = pct(st.recv_dgrams_missing, st.recv_dgrams_expected);
		tx = pct(st.send_dgrams_lost, st.send_dgrams);
		printf("end %d: window %llu us, recv %.2f %% of %llu, send %.2f %% of %llu, rates %llu / "
		       "%llu B/s\n",
		       i, (unsigned long long)st.window_us, rx, (unsigned long long)st.recv_dgrams_expected,
		       tx, (unsigned long long)st.send_dgrams, (unsigned long long)st.send_bytes_per_s,
		       (unsigned long long)st.recv_bytes_per_s);
		/* Enough datagrams in the window for the figures to mean something. */
		assert_true(st.recv_dgrams_expected > 2000);
		assert_true(st.send_dgrams > 2000);
		assert_true(st.window_us >= 1 * SEC && st.window_us <= 2 * SEC);
		assert_true(rx > 7.0 && rx < 13.0);
		/* Tail losses go unreported (low); with ACKs lost too, some datagrams
		 * that arrived are inferred lost and never named again (high). */
		assert_true(tx > 5.0 && tx < 16.0);
		assert_true(st.send_bytes_per_s > 0 && st.recv_bytes_per_s > 0);
		assert_true(st.rtt_us >= 20 * MS);
		assert_int_equal(st.state, RUDP_CONN_STATE_CONNECTED);
	}
	sim_free(s);
	free(s);
}

/* Reordering alone loses nothing: the gaps it opens are filled, and the
 * NACKs it causes are taken back by the late datagrams' ACKs. */
static void test_reorder_only(void **state)
{
	static const struct sim_link link = {.delay_us = 10 * MS, .reorder_pm = 200, .reorder_us = 8 * MS};
	struct sim *s = start_bulk(72, &link, 6000);
	struct rudp_conn_stats cs;

	(void)state;
	assert_true(sim_run(s, sim_all_delivered, 60 * SEC));
	/* Let the last ACKs land. */
	run_until_us = s->now + 300 * MS;
	assert_true(sim_run(s, reached_time, 10 * SEC));
	rudp_conn_get_stats(s->ep[0].c, &cs);
	for (int i = 0; i < 2; i++) {
		struct rudp_conn_status st;

		status_of(s, i, &st);
		printf("end %d: recv missing %llu of %llu, send lost %llu of %llu\n", i,
		       (unsigned long long)st.recv_dgrams_missing,
		       (unsigned long long)st.recv_dgrams_expected, (unsigned long long)st.send_dgrams_lost,
		       (unsigned long long)st.send_dgrams);
		assert_true(s->ep[i].c->acktr.dgrams_expected > 1000);
		assert_int_equal(st.recv_dgrams_missing, 0);
		assert_int_equal(st.send_dgrams_lost, 0);
		/* Whole counters too, not only the window. */
		assert_int_equal(s->ep[i].c->acktr.dgrams_missing, 0);
		assert_int_equal(s->ep[i].c->loss.dgrams_lost, 0);
	}
	/* The link did reorder, and NACKs did come. */
	assert_true(cs.nacks_received > 0);
	sim_free(s);
	free(s);
}

/* A clean link: no loss either way, a window of 1..2 s, and a quiet conn
 * reads rates near 0 once its traffic is more than 2 s behind. */
static void test_clean_and_quiet(void **state)
{
	static const struct sim_link link = {.delay_us = 5 * MS};
	struct sim *s = start_bulk(73, &link, 2000);
	struct rudp_conn_status st;

	(void)state;
	assert_true(sim_run(s, sim_all_delivered, 60 * SEC));
	status_of(s, 0, &st);
	assert_int_equal(st.recv_dgrams_missing, 0);
	assert_int_equal(st.send_dgrams_lost, 0);
	assert_int_equal(st.reliable_unsent_bytes, 0);
	assert_int_equal(st.oldest_queued_us, 0);
	/* Queued and not yet flushed: the queue's age and bytes show. */
	uint8_t msg[64];
	sim_make_message(msg, sizeof(msg), 3, 0, 0);
	msg[0] = 0x86;
	uint64_t at = s->now;
	assert_int_equal(rudp_conn_send(s->ep[0].c, msg, sizeof(msg), 3, 0, at), 0);
	rudp_conn_get_status(s->ep[0].c, at + 5 * MS, &st);
	assert_true(st.reliable_unsent_bytes >= sizeof(msg));
	assert_int_equal(st.oldest_queued_us, at);
	sim_free(s);
	free(s);
}

static void send_ordered(struct sim *s, uint32_t n);

/* A conn over a 20 ms round trip sending one message per datagram, its
 * RTT estimate settled by a few messages sent one at a time. Without
 * congestion control: the scenarios need a whole flight in the air at
 * once, which the rate controller would pace out over its estimate. */
static struct sim *start_quiet(uint64_t seed)
{
	static const struct sim_link link = {.delay_us = 10 * MS};
	struct rudp_conn_config cfg;
	struct sim *s = malloc(sizeof(*s));

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	cfg.max_frames_per_datagram = 1;
	cfg.window_frames = 256;
	cfg.congestion_control = RUDP_CONN_CC_NONE;
	sim_init(s, seed, &cfg, &link);
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 10 * SEC));
	for (int i = 0; i < 10; i++) {
		send_ordered(s, 1);
		assert_true(sim_run(s, sim_all_delivered, SEC));
		run_until_us = s->now + 50 * MS;
		assert_true(sim_run(s, reached_time, SEC));
	}
	return s;
}

/* The client queues n reliable-ordered messages, as the sim's own
 * workload would (so its checks apply). */
static void send_ordered(struct sim *s, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(sim_send_next(&s->ep[0], 200, 3, 0), 0);
}

/* Delivers all, lets the last ACKs land; the client's stats. */
static struct rudp_conn_stats finish(struct sim *s)
{
	struct rudp_conn_stats st;

	assert_true(sim_run(s, sim_all_delivered, 10 * SEC));
	run_until_us = s->now + 300 * MS;
	assert_true(sim_run(s, reached_time, SEC));
	assert_int_equal(s->ep[1].errors, 0);
	rudp_conn_get_stats(s->ep[0].c, &st);
	return st;
}

/* Every ACK for a flight of 200 lost, nothing lost else: the tail probe's
 * ACK names again only the peer's newest runs, the older part of the
 * flight is inferred lost and resent, yet none of it was lost. */
static void test_lost_acks_then_probe_count_nothing(void **state)
{
	struct sim *s = start_quiet(74);
	struct rudp_conn_stats st;

	(void)state;
	send_ordered(s, 200);
	s->drop_ctl_flags[1] = RUDP_DGRAM_ACK;
	s->drop_ctl_until[1] = s->now + 15 * MS;
	st = finish(s);
	printf("probes %llu, inferred %llu, lost counted %llu of %llu\n", (unsigned long long)st.resent_probe,
	       (unsigned long long)st.resent_inferred, (unsigned long long)s->ep[0].c->loss.dgrams_lost,
	       (unsigned long long)s->ep[0].c->loss.dgrams_reliable);
	/* The path the test is about was taken. */
	assert_true(st.resent_probe > 0);
	assert_true(st.resent_inferred > 0);
	assert_int_equal(s->ep[0].c->loss.dgrams_lost, 0);
	sim_free(s);
	free(s);
}

/* One datagram of a flight lost and its NACK lost too: the ACKs that
 * follow name the datagrams around it, and it counts once. */
static void test_loss_inferred_within_acks_counts_once(void **state)
{
	struct sim *s = start_quiet(75);
	struct rudp_conn_stats st;

	(void)state;
	send_ordered(s, 20);
	s->drop_data_skip[0] = 4;
	s->drop_data_next[0] = 1;
	s->drop_ctl_flags[1] = RUDP_DGRAM_NACK;
	s->drop_ctl_until[1] = s->now + 15 * MS;
	st = finish(s);
	assert_int_equal(s->drop_data_next[0], 0);
	assert_int_equal(st.resent_inferred, 1);
	assert_int_equal(s->ep[0].c->loss.dgrams_lost, 1);
	sim_free(s);
	free(s);
}

/* A datagram far ahead (a forged seq, within max_dgram_seq_jump so it is
 * taken) counts at most 512 missing, not the whole jump. */
static void test_seq_jump_bounded(void **state)
{
	struct ack_tracker t;

	(void)state;
	assert_int_equal(acktr_init(&t, 1u << 20, 1, 0), 0);
	for (uint32_t seq = 0; seq < 100; seq++)
		assert_int_equal(acktr_on_dgram_seq(&t, seq), DGRAM_NEW);
	assert_int_equal(t.dgrams_expected, 100);
	assert_int_equal(t.dgrams_missing, 0);
	assert_int_equal(acktr_on_dgram_seq(&t, 99 + 100000), DGRAM_NEW);
	assert_int_equal(t.dgrams_missing, 512);
	assert_int_equal(t.dgrams_expected, 100 + 513);
	/* A gap filled late is taken back. */
	assert_int_equal(acktr_on_dgram_seq(&t, 100100), DGRAM_NEW);
	assert_int_equal(acktr_on_dgram_seq(&t, 100102), DGRAM_NEW);
	assert_int_equal(t.dgrams_missing, 513);
	assert_int_equal(acktr_on_dgram_seq(&t, 100101), DGRAM_NEW);
	assert_int_equal(t.dgrams_missing, 512);
	/* A duplicate changes nothing. */
	assert_int_equal(acktr_on_dgram_seq(&t, 100101), DGRAM_SEEN);
	assert_int_equal(t.dgrams_missing, 512);
	acktr_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loss_each_way),
		cmocka_unit_test(test_reorder_only),
		cmocka_unit_test(test_clean_and_quiet),
		cmocka_unit_test(test_seq_jump_bounded),
		cmocka_unit_test(test_lost_acks_then_probe_count_nothing),
		cmocka_unit_test(test_loss_inferred_within_acks_counts_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
