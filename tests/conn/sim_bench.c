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
 *             [ack_delay=US] [game_hz=N] [seq=N] [late=US] [late_pm=PM]
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
 * random delay per datagram (so datagrams also arrive out of order);
 * late=US up to that much without reordering (a late host or emulator
 * holds back what follows too, as rudp-bench's TUN link does), for
 * late_pm per mille of the datagrams (default: all).
 * redundant=1 turns redundancy on for every channel at both ends
 * (rudp_conn_set_redundant_channels). ack_every=N and ack_delay=US set
 * the ACK thinning (rudp_conn_config; defaults as the library's).
 * game_hz=N adds a game's stream to the client: a 200 B unreliable
 * message N times a second beside the bulk, echoed like it, and prints
 * its echo time over the base RTT (rudp-bench's row e, in virtual time).
 * seq=N first echoes N messages one at a time, untimed, as rudp-bench's
 * single rows do (warm-up and RTT samples) before their timed burst.
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
	uint64_t late_us;
	uint64_t late_pm;
	uint64_t redundant;
	uint64_t rate_bps;
	uint64_t queue_ms;
	uint64_t outstanding;
	uint64_t ack_every;
	uint64_t ack_delay_us;
	uint64_t game_hz;
	uint64_t seq;
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

static uint32_t seq_target;

static bool seq_done(struct sim *s)
{
	return s->ep[0].rx_messages >= seq_target;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Runs the echo to its end with the game's stream beside it: each update is
 * a message of the workload (so the echo window still counts right), and
 * its echo time is when the client sees it come back. */
static void run_with_game(struct sim *s)
{
	enum { GAME_SIZE = 200, MAX_UPDATES = 60000 };
	const uint64_t tick_us = 1000000 / args.game_hz;
	uint64_t *sent_at = calloc(MAX_UPDATES, sizeof(*sent_at));
	uint64_t *echo_us = calloc(MAX_UPDATES, sizeof(*echo_us));
	uint64_t *there_us = calloc(MAX_UPDATES, sizeof(*there_us));
	const struct sim_stream_rx *arrived = &s->ep[1].rx[RUDP_WIRE_UNRELIABLE][0];
	struct sim_endpoint *client = &s->ep[0];
	const struct sim_stream_rx *echoed = &client->rx[RUDP_WIRE_UNRELIABLE][0];
	uint32_t updates = 0, pending = 0, got = 0;
	uint64_t next = s->now;

	assert_non_null(sent_at);
	assert_non_null(echo_us);
	assert_non_null(there_us);
	while (!sim_all_delivered(s)) {
		if (s->now >= next && updates < MAX_UPDATES) {
			if (sim_send_next(client, GAME_SIZE, RUDP_WIRE_UNRELIABLE, 0) == 0)
				sent_at[updates++] = s->now;
			next += tick_us;
		}
		s->wake_at = next;
		sim_step(s);
		assert_false(s->stuck);
		for (uint32_t i = pending; i < updates; i++) {
			if (!there_us[i] && arrived->got[i])
				there_us[i] = s->now - sent_at[i];
			if (!echo_us[i] && echoed->got[i]) {
				echo_us[i] = s->now - sent_at[i];
				got++;
			}
		}
		/* An update a second old is lost, not late. */
		while (pending < updates && (echo_us[pending] || s->now - sent_at[pending] > 1000000))
			pending++;
	}
	uint32_t n = 0;
	uint64_t there_sum = 0, back_sum = 0;
	for (uint32_t i = 0; i < updates; i++)
		if (echo_us[i]) {
			there_sum += there_us[i];
			back_sum += echo_us[i] - there_us[i];
			echo_us[n++] = echo_us[i];
		}
	qsort(echo_us, n, sizeof(*echo_us), cmp_u64);
	double base_ms = 2.0 * (double)args.delay_us / 1000;
	if (n) {
		printf("  game: %u of %u updates echoed; echo over the base RTT p50 %.1f ms, p99 %.1f ms, "
		       "max %.1f "
		       "ms\n",
		       got, updates, (double)echo_us[n / 2] / 1000 - base_ms,
		       (double)echo_us[(size_t)n * 99 / 100] / 1000 - base_ms,
		       (double)echo_us[n - 1] / 1000 - base_ms);
		printf("  game: one way over the base, mean: to the server %.1f ms, back %.1f ms\n",
		       (double)there_sum / n / 1000 - (double)args.delay_us / 1000,
		       (double)back_sum / n / 1000 - (double)args.delay_us / 1000);
	}
	free(sent_at);
	free(echo_us);
	free(there_us);
}

static void run(void **state)
{
	struct rudp_conn_config cfg;
	struct sim_link link = {.loss_pm = args.loss_pm,
				.delay_us = args.delay_us,
				.tx_us = args.tx_us,
				.jitter_us = args.jitter_us,
				.late_us = args.late_us,
				.late_pm = (uint32_t)args.late_pm,
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
		.count = args.messages + (uint32_t)args.seq,
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
	if (args.seq) {
		/* rudp-bench's sequential phase: one echo at a time, untimed. */
		s->ep[0].work.max_outstanding = 1;
		seq_target = (uint32_t)args.seq;
		assert_true(sim_run(s, seq_done, 3600ull * 1000000));
		s->ep[0].work.max_outstanding = (uint32_t)args.outstanding;
	}
	start = s->now;
	if (args.game_hz)
		run_with_game(s);
	else
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
			 arg_u64(argv[i], "ack_delay", &args.ack_delay_us) ||
			 arg_u64(argv[i], "game_hz", &args.game_hz) || arg_u64(argv[i], "seq", &args.seq) ||
			 arg_u64(argv[i], "late", &args.late_us) ||
			 arg_u64(argv[i], "late_pm", &args.late_pm))
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
				"[rate=BYTES_PER_S] [qms=MS] [outstanding=N] [ack_every=N] [ack_delay=US] "
				"[game_hz=N] [seq=N] [late=US] [late_pm=PM]\n",
				argv[0]);
			return 2;
		}
	}
	if (args.size < SIM_MSG_HEADER || args.messages > SIM_MAX_MSGS || args.game_hz > 1000) {
		fprintf(stderr, "size >= %d, messages <= %d, game_hz <= 1000\n", SIM_MSG_HEADER,
			SIM_MAX_MSGS);
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
