/* SPDX-License-Identifier: MIT */
/*
 * rudp-bench's stream workload in simulated time: one connection, a 400 B
 * reliable-ordered message every 1/60 s, echoed by the peer, each echo's
 * RTT counted from its tick, over sim.c's deterministic link (loss each
 * way, both directions' datagrams alike). Prints the echo RTT p50 / p95 /
 * p99 and the client's bytes on the wire per message, so recovery changes
 * are compared without a shared machine's noise.
 *
 *   sim_stream [loss=PM] [delay=US] [n=TICKS] [seed=N] [redundant=0|1] [timer=US]
 *              [ack_every=N] [ack_delay=US]
 *
 * Defaults: 10 per mille loss each way, 10 ms one way (20 ms RTT), 6,000
 * ticks, timers in whole milliseconds as the host waits, redundancy off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define TICK_US 16667u
#define STREAM_SIZE 400u

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t arg(int argc, char **argv, const char *name, uint64_t def)
{
	size_t n = strlen(name);

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
			return strtoull(argv[i] + n + 1, NULL, 10);
	return def;
}

int main(int argc, char **argv)
{
	struct sim_link link = {0};
	struct rudp_conn_config cfg;
	struct rudp_conn_stats st;
	struct sim *s = calloc(1, sizeof(*s));
	uint32_t ticks = (uint32_t)arg(argc, argv, "n", 6000);
	uint64_t *sent_at = calloc(ticks, sizeof(*sent_at)), *rtt = calloc(ticks, sizeof(*rtt));
	uint32_t got = 0;
	uint64_t bytes0;

	if (!s || !sent_at || !rtt || ticks == 0 || ticks >= SIM_MAX_MSGS)
		return 2;
	link.loss_pm = (uint32_t)arg(argc, argv, "loss", 10);
	link.delay_us = arg(argc, argv, "delay", 10000);
	rudp_conn_config_init(&cfg);
	cfg.ack_every = (uint32_t)arg(argc, argv, "ack_every", cfg.ack_every);
	cfg.ack_delay_us = arg(argc, argv, "ack_delay", cfg.ack_delay_us);
	sim_init(s, arg(argc, argv, "seed", 1), &cfg, &link);
	s->timer_granularity_us = arg(argc, argv, "timer", 1000);
	sim_start(s);
	if (!sim_run(s, sim_both_connected, 30000000ull))
		return 1;
	s->ep[1].work.echo = true;
#ifndef SIM_STREAM_NO_REDUNDANCY
	if (arg(argc, argv, "redundant", 0))
		for (int i = 0; i < 2; i++)
			rudp_conn_set_redundant_channels(s->ep[i].c, UINT32_MAX);
#endif
	rudp_conn_get_stats(s->ep[0].c, &st);
	bytes0 = st.bytes_sent;
	uint64_t start = s->now + 100000;
	for (uint32_t t = 0; got < ticks && s->now < start + (uint64_t)ticks * TICK_US + 10000000ull;) {
		uint64_t next = t < ticks ? start + (uint64_t)t * TICK_US : UINT64_MAX;

		if (s->now >= next) {
			if (sim_send_next(&s->ep[0], STREAM_SIZE, 3, 0) != 0)
				return 1;
			sent_at[t++] = next;
		}
		s->wake_at = t < ticks ? start + (uint64_t)t * TICK_US : 0;
		sim_step(s);
		if (s->stuck)
			return 1;
		while (got < s->ep[0].rx[3][0].delivered)
			rtt[got] = s->now - sent_at[got], got++;
	}
	if (got < ticks || s->ep[0].errors || s->ep[1].errors) {
		fprintf(stderr, "sim_stream: %u of %u echoes, errors %llu / %llu\n", got, ticks,
			(unsigned long long)s->ep[0].errors, (unsigned long long)s->ep[1].errors);
		return 1;
	}
	rudp_conn_get_stats(s->ep[0].c, &st);
	qsort(rtt, ticks, sizeof(*rtt), cmp_u64);
	printf("loss %u pm, one way %llu us: echo RTT p50 %.1f p95 %.1f p99 %.1f ms, "
	       "client bytes/msg %.0f, resent %llu (nack %llu, inferred %llu, probe %llu, rto %llu)\n",
	       link.loss_pm, (unsigned long long)link.delay_us, rtt[ticks / 2] / 1000.0,
	       rtt[ticks * 95 / 100] / 1000.0, rtt[ticks * 99 / 100] / 1000.0,
	       (double)(st.bytes_sent - bytes0) / ticks, (unsigned long long)st.frames_retransmitted,
	       (unsigned long long)st.resent_nack, (unsigned long long)st.resent_inferred,
	       (unsigned long long)st.resent_probe, (unsigned long long)st.resent_timeout);
	sim_free(s);
	free(s);
	free(sent_at);
	free(rtt);
	return 0;
}
