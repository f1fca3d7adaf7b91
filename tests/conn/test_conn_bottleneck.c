/* SPDX-License-Identifier: MIT */
/*
 * Two conns through the simulator's byte-rate bottleneck (a router's link:
 * bytes a second and a drop-tail queue in bytes, sim_link.rate_bps and
 * queue_bytes): the link itself, and the figures of a bulk transfer over
 * the path of issue 44 (5 Mbit/s, 20 ms RTT, a 30 ms queue) with the
 * conn's congestion control off and with its AIMD window, printed as the
 * baseline a rate-based controller is measured against.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define MS 1000ull
#define SEC 1000000ull
#define MSG 1000u
#define RATE_5MBIT (5000000ull / 8)

struct bulk_result {
	uint64_t took_us;
	uint64_t wire_bytes; /* what crossed the bottleneck towards the receiver */
	uint64_t queue_drops, dgrams_sent, resends;
	uint64_t wait_mean_us, wait_max_us; /* in the queue towards the receiver */
};

/* count messages of MSG bytes, reliable ordered, one way, as fast as the
 * send queue takes them, over delay_us each way and a bottleneck of rate
 * bytes/s with queue_us of queue (0: unbounded) in both directions. */
static struct bulk_result run_bulk(bool cc, uint32_t count, uint64_t rate, uint64_t delay_us,
				   uint64_t queue_us)
{
	struct rudp_conn_config cfg;
	struct sim_link link = {.delay_us = delay_us, .rate_bps = rate, .queue_bytes = rate * queue_us / SEC};
	struct rudp_conn_stats st;
	struct bulk_result r = {0};
	struct sim *s = malloc(sizeof(*s));
	uint64_t start;

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	cfg.mtu = 1492;
	cfg.congestion_control = cc;
	sim_init(s, 5, &cfg, &link);
	s->timer_granularity_us = MS;
	s->ep[0].work = (struct sim_workload){
		.count = count,
		.min_size = MSG,
		.max_size = MSG,
		.rel_mask = 1u << RUDP_WIRE_RELIABLE_ORDERED,
		.channels = 1,
	};
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 30 * SEC));
	start = s->now;
	assert_true(sim_run(s, sim_all_delivered, 600 * SEC));
	sim_assert_complete(s, 1);
	r.took_us = s->now - start;
	rudp_conn_get_stats(s->ep[0].c, &st);
	r.resends = st.frames_retransmitted;
	r.dgrams_sent = st.datagrams_sent;
	r.wire_bytes = st.bytes_sent + st.datagrams_sent * cfg.ip_udp_overhead;
	r.queue_drops = s->dgrams_queue_dropped;
	r.wait_mean_us = s->rate_dgrams[1] ? s->rate_wait_us[1] / s->rate_dgrams[1] : 0;
	r.wait_max_us = s->rate_wait_max_us[1];
	print_message(
		"%s, %llu B/s, %llu ms RTT, queue %llu ms: %u x %u B in %.3f s, goodput %.2f of the link, "
		"%llu queue drops (%.1f %% of %llu datagrams sent), %.2f frames resent per message, "
		"queue wait mean %.1f ms max %.1f ms\n",
		cc ? "AIMD window" : "no congestion control", (unsigned long long)rate,
		(unsigned long long)(2 * delay_us / MS), (unsigned long long)(queue_us / MS), count, MSG,
		(double)r.took_us / SEC, (double)count * MSG / ((double)rate * (double)r.took_us / SEC),
		(unsigned long long)r.queue_drops, 100.0 * (double)r.queue_drops / (double)r.dgrams_sent,
		(unsigned long long)r.dgrams_sent, (double)r.resends / count, (double)r.wait_mean_us / MS,
		(double)r.wait_max_us / MS);
	sim_free(s);
	free(s);
	return r;
}

static void test_byte_rate_link_is_the_limit(void **state)
{
	struct bulk_result r;

	(void)state;
	/* An unbounded queue: nothing dropped, nothing faster than the
	 * link, and the sender's window waits in the queue. */
	r = run_bulk(false, 2000, RATE_5MBIT, 10 * MS, 0);
	assert_int_equal(r.queue_drops, 0);
	assert_int_equal(r.resends, 0);
	assert_true(r.took_us >= r.wire_bytes * SEC / RATE_5MBIT - 20 * MS);
	assert_true(r.wait_max_us > 20 * MS);
	/* Twice the rate: about half the time. */
	r = run_bulk(false, 2000, 2 * RATE_5MBIT, 10 * MS, 0);
	assert_true(r.took_us >= r.wire_bytes * SEC / (2 * RATE_5MBIT) - 20 * MS);
	assert_true(r.took_us <= r.wire_bytes * SEC / (2 * RATE_5MBIT) + 500 * MS);
}

static void test_byte_rate_queue_drops_the_tail(void **state)
{
	struct bulk_result plain, aimd;

	(void)state;
	/* Issue 44's path. Without congestion control the window overfills
	 * the 30 ms queue: it drops, and every drop is resent; what arrives
	 * is still complete (run_bulk checks it). */
	plain = run_bulk(false, 5000, RATE_5MBIT, 10 * MS, 30 * MS);
	assert_true(plain.queue_drops > 0);
	assert_true(plain.resends >= plain.queue_drops / 2);
	/* Never more than the queue's 30 ms of wait. */
	assert_true(plain.wait_max_us <= 30 * MS + 2 * MS);
	aimd = run_bulk(true, 5000, RATE_5MBIT, 10 * MS, 30 * MS);
	assert_true(aimd.wait_max_us <= 30 * MS + 2 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_byte_rate_link_is_the_limit),
		cmocka_unit_test(test_byte_rate_queue_drops_the_tail),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
