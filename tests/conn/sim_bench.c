/* SPDX-License-Identifier: MIT */
/*
 * Loss recovery in simulated time: rudp-bench's single-connection echo
 * (the client keeps at most `outstanding` messages awaiting their echo,
 * the server sends each one straight back, reliable ordered) over the
 * deterministic link of sim.c. Reports goodput in simulated time and what
 * was resent, so recovery changes can be compared without the noise of a
 * shared machine.
 *
 *   sim_bench [loss=PM] [delay=US] [n=MESSAGES] [size=B] [tx=US] [cpu=US]
 *             [timer=US] [seed=N] [queue=DATAGRAMS] [cc=0|1|2] [jitter=US]
 *             [rate=BYTES_PER_S] [qms=MS] [outstanding=N] [ack_every=N]
 *             [ack_delay=US]
 *
 * Defaults: 10 per mille loss each way, 25 us one way (a loopback-like RTT
 * of 50 us plus what the load adds), 50,000 x 800 B, 64 outstanding, 5 us
 * of link time per datagram (about 76 MiB/s of echo without loss, one ACK
 * datagram per data datagram), timers in whole milliseconds as the host
 * waits. cpu=US instead models each side as one thread spending that long
 * per datagram read or sent, reading what arrived meanwhile as one batch
 * (so ACKs cover batches, as on a busy host); use it with tx=0. queue=N
 * gives the tx link a drop-tail queue of N datagrams per direction (0, the
 * default: unbounded); cc= picks the congestion control (0 none, 1 the
 * AIMD window, 2 the rate controller; the default is AIMD here, while
 * rudp_config_init's is the rate controller: pass cc=2 to measure what a
 * default librudp does). rate= adds a router's bottleneck of that many
 * bytes a second per direction with a drop-tail buffer of qms= ms at
 * that rate (0: unbounded), and prints its queue wait; outstanding= sets
 * the echo window (64). jitter=US adds up to that much
 * random delay per datagram (so datagrams also arrive out of order).
 * redundant=1 turns redundancy on for every channel at both ends
 * (rudp_conn_set_redundant_channels). ack_every=N and ack_delay=US set
 * the ACK thinning (rudp_conn_config; defaults as the library's).
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

struct bench_args {
	uint32_t loss_pm;
	uint64_t delay_us;
	uint32_t messages;
	uint32_t size;
	uint64_t tx_us;
	uint64_t timer_us;
	uint64_t cpu_us;
	uint64_t seed;
	uint64_t queue;
	uint64_t cc;
	uint64_t jitter_us;
	uint64_t redundant;
	uint64_t rate_bps;
	uint64_t queue_ms;
	uint64_t outstanding;
	uint64_t ack_every;
	uint64_t ack_delay_us;
};

static struct bench_args args = {
	.loss_pm = 10,
	.delay_us = 25,
	.messages = 50000,
	.size = 800,
	.tx_us = 5,
	.timer_us = 1000,
	.seed = 1,
	.cc = 1,
	.outstanding = 64,
	.ack_every = RUDP_DEFAULT_ACK_EVERY,
	.ack_delay_us = RUDP_DEFAULT_ACK_DELAY_US,
};

static void run(void **state)
{
	struct rudp_conn_config cfg;
	struct sim_link link = {.loss_pm = args.loss_pm,
				.delay_us = args.delay_us,
				.tx_us = args.tx_us,
				.jitter_us = args.jitter_us,
				.rate_bps = args.rate_bps,
				.queue_bytes = args.rate_bps * args.queue_ms / 1000};
	struct rudp_conn_stats st[2];
	struct sim *s = malloc(sizeof(*s));
	uint64_t start;
	double secs;

	(void)state;
	assert_non_null(s);
	/* What a host with rudp_config_init's defaults gives its conns. */
	rudp_conn_config_init(&cfg);
	cfg.rto_min_us = 30000;
	cfg.rto_initial_us = 200000;
	cfg.rto_max_us = 2000000;
	cfg.recv_window = 8192;
	cfg.congestion_control = (uint8_t)args.cc;
	cfg.ack_every = (uint32_t)args.ack_every;
	cfg.ack_delay_us = args.ack_delay_us;
	link.queue_max = (uint32_t)args.queue;
	sim_init(s, args.seed, &cfg, &link);
	s->timer_granularity_us = args.timer_us;
	s->cpu_us = args.cpu_us;
	s->ep[0].work = (struct sim_workload){
		.count = args.messages,
		.min_size = args.size,
		.max_size = args.size,
		.rel_mask = 1u << RUDP_WIRE_RELIABLE_ORDERED,
		.channels = 1,
		.max_outstanding = (uint32_t)args.outstanding,
	};
	s->ep[1].work = (struct sim_workload){.echo = true};
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 30000000));
	if (args.redundant)
		for (int i = 0; i < 2; i++)
			rudp_conn_set_redundant_channels(s->ep[i].c, UINT32_MAX);
	start = s->now;
	assert_true(sim_run(s, sim_all_delivered, 3600ull * 1000000));
	sim_assert_complete(s, 0);
	sim_assert_complete(s, 1);
	secs = (double)(s->now - start) / 1e6;
	for (int i = 0; i < 2; i++)
		rudp_conn_get_stats(s->ep[i].c, &st[i]);
	printf("loss %u pm, delay %llu us, tx %llu us, queue %llu, cpu %llu us, timers %llu us, %u x %u B, "
	       "seed %llu, congestion control %s\n",
	       args.loss_pm, (unsigned long long)args.delay_us, (unsigned long long)args.tx_us,
	       (unsigned long long)args.queue, (unsigned long long)args.cpu_us,
	       (unsigned long long)args.timer_us, args.messages, args.size, (unsigned long long)args.seed,
	       args.cc == 2 ? "rate"
	       : args.cc    ? "AIMD"
			    : "off");
	printf("  time %.4f s  goodput %.2f MiB/s  datagrams %llu (lost %llu, %llu of them at a full "
	       "queue)\n",
	       secs, (double)args.messages * args.size / secs / 1048576.0, (unsigned long long)s->dgrams_sent,
	       (unsigned long long)s->dgrams_lost, (unsigned long long)s->dgrams_queue_dropped);
	if (args.rate_bps)
		for (int to = 0; to < 2; to++)
			printf("  towards the %s: bottleneck goodput %.3f of the link, queue wait mean %.1f "
			       "ms, max "
			       "%.1f ms\n",
			       to ? "server" : "client",
			       (double)args.messages * args.size / secs / (double)args.rate_bps,
			       s->rate_dgrams[to]
				       ? (double)s->rate_wait_us[to] / (double)s->rate_dgrams[to] / 1000
				       : 0,
			       (double)s->rate_wait_max_us[to] / 1000);
	for (int i = 0; i < 2; i++) {
		const struct rudp_conn *c = s->ep[i].c;

		printf("  %s: retx %llu (nack %llu, inferred %llu, probe %llu, rto %llu)  dgrams %llu (acks "
		       "%llu)  "
		       "bytes %llu  copies %llu  srtt %u us  rto %u us  cwnd %u B (%llu reductions)\n",
		       i ? "server" : "client", (unsigned long long)st[i].frames_retransmitted,
		       (unsigned long long)c->stats.resent_nack, (unsigned long long)c->stats.resent_inferred,
		       (unsigned long long)c->stats.resent_probe, (unsigned long long)c->stats.resent_timeout,
		       (unsigned long long)st[i].datagrams_sent, (unsigned long long)s->ep[i].ack_dgrams_sent,
		       (unsigned long long)st[i].bytes_sent, (unsigned long long)st[i].frames_copied,
		       st[i].rtt_us, st[i].rto_us, st[i].cwnd_bytes, (unsigned long long)st[i].cc_reductions);
	}
	sim_free(s);
	free(s);
}

static bool arg_u64(const char *a, const char *key, uint64_t *out)
{
	size_t n = strlen(key);

	if (strncmp(a, key, n) != 0 || a[n] != '=')
		return false;
	*out = strtoull(a + n + 1, NULL, 0);
	return true;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(run)};

	for (int i = 1; i < argc; i++) {
		uint64_t v;

		if (arg_u64(argv[i], "loss", &v))
			args.loss_pm = (uint32_t)v;
		else if (arg_u64(argv[i], "delay", &args.delay_us) || arg_u64(argv[i], "tx", &args.tx_us) ||
			 arg_u64(argv[i], "timer", &args.timer_us) || arg_u64(argv[i], "seed", &args.seed) ||
			 arg_u64(argv[i], "cpu", &args.cpu_us) || arg_u64(argv[i], "queue", &args.queue) ||
			 arg_u64(argv[i], "cc", &args.cc) || arg_u64(argv[i], "jitter", &args.jitter_us) ||
			 arg_u64(argv[i], "redundant", &args.redundant) ||
			 arg_u64(argv[i], "rate", &args.rate_bps) ||
			 arg_u64(argv[i], "qms", &args.queue_ms) ||
			 arg_u64(argv[i], "outstanding", &args.outstanding) ||
			 arg_u64(argv[i], "ack_every", &args.ack_every) ||
			 arg_u64(argv[i], "ack_delay", &args.ack_delay_us))
			continue;
		else if (arg_u64(argv[i], "n", &v))
			args.messages = (uint32_t)v;
		else if (arg_u64(argv[i], "size", &v))
			args.size = (uint32_t)v;
		else {
			fprintf(stderr,
				"usage: %s [loss=PM] [delay=US] [n=MESSAGES] [size=B] [tx=US] [cpu=US] "
				"[timer=US] [seed=N] [queue=DATAGRAMS] [cc=0|1|2] [jitter=US] "
				"[redundant=0|1] "
				"[rate=BYTES_PER_S] [qms=MS] [outstanding=N] [ack_every=N] [ack_delay=US]\n",
				argv[0]);
			return 2;
		}
	}
	if (args.size < SIM_MSG_HEADER || args.messages > SIM_MAX_MSGS) {
		fprintf(stderr, "size >= %d, messages <= %d\n", SIM_MSG_HEADER, SIM_MAX_MSGS);
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
