/* SPDX-License-Identifier: MIT */
/*
 * Soak over the simulated link (tests/conn/sim.c): reliable-ordered traffic
 * both ways on 8 channels, sizes up to 1200 B plus every 50th message 20 KB
 * (split), over 5 % loss, 2 % duplication, 10 % of datagrams reordered by up
 * to 30 ms, 20 ms delay and 5 ms jitter. Pairs with new seeds run back to
 * back for the wall-clock seconds given (argv[1], default 60); every message
 * of every pair is checked: none lost, duplicated, misordered or corrupt.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../conn/sim.h"

#define SEC 1000000ull

static int soak_seconds = 60;

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_soak_reliable_ordered(void **state)
{
	(void)state;
	const struct sim_link link = {.loss_pm = 50,
				      .dup_pm = 20,
				      .reorder_pm = 100,
				      .delay_us = 20000,
				      .jitter_us = 5000,
				      .reorder_us = 30000};
	uint64_t start = wall_ms(), virt_us = 0, messages = 0, lost = 0, dups = 0, pairs = 0;

	for (uint64_t seed = 1; wall_ms() - start < (uint64_t)soak_seconds * 1000; seed++) {
		struct rudp_conn_config cfg;
		struct sim *s = malloc(sizeof(*s));

		assert_non_null(s);
		rudp_conn_config_init(&cfg);
		cfg.timeout_us = 120 * SEC;
		sim_init(s, seed * 7919, &cfg, &link);
		for (int i = 0; i < 2; i++) {
			s->ep[i].work = (struct sim_workload){.count = 20000,
							      .min_size = SIM_MSG_HEADER,
							      .max_size = 1200,
							      .big_every = 50,
							      .big_size = 20000,
							      .rel_mask = 1u << RUDP_WIRE_RELIABLE_ORDERED,
							      .channels = 8};
		}
		sim_start(s);
		assert_true(sim_run(s, sim_both_connected, 60 * SEC));
		uint64_t t0 = s->now;
		if (!sim_run(s, sim_all_delivered, 3600 * SEC))
			fail_msg("seed %llu: not delivered (sent %u/%u, received %llu/%llu) %s %s",
				 (unsigned long long)seed, s->ep[0].sent, s->ep[1].sent,
				 (unsigned long long)s->ep[0].rx_messages,
				 (unsigned long long)s->ep[1].rx_messages, s->ep[0].first_error,
				 s->ep[1].first_error);
		sim_assert_complete(s, 0);
		sim_assert_complete(s, 1);
		for (int i = 0; i < 2; i++)
			assert_int_equal(s->ep[i].rx_messages, s->ep[1 - i].sent);
		virt_us += s->now - t0;
		messages += s->ep[0].rx_messages + s->ep[1].rx_messages;
		lost += s->dgrams_lost;
		dups += s->dgrams_duplicated;
		pairs++;
		sim_free(s);
		free(s);
	}
	printf("soak: %llu pairs in %llu s wall, %.1f s simulated, %llu messages verified "
	       "(0 lost, 0 duplicated, 0 misordered); link lost %llu and duplicated %llu datagrams\n",
	       (unsigned long long)pairs, (unsigned long long)((wall_ms() - start) / 1000),
	       (double)virt_us / 1e6, (unsigned long long)messages, (unsigned long long)lost,
	       (unsigned long long)dups);
	assert_true(pairs >= 1);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		soak_seconds = atoi(argv[1]);
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_soak_reliable_ordered)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
