/* SPDX-License-Identifier: MIT */
/*
 * A reliable game stream beside a bulk echo, with the send policy and the
 * rate controller (rudp-bench's path row e, in virtual time): one
 * connection over a 5 Mbit/s bottleneck each way (625,000 B/s) with a
 * 30 ms drop-tail buffer and 10 ms one-way delay, MTU 1500, default
 * connection and send options at both ends. The client keeps 1,024
 * messages of 1,000 B reliable-ordered (channel 0, MEDIUM, as rudp_send)
 * awaiting their echo, and 60 times a second sends a 200 B game message
 * unreliable-sequenced on channel 1 and one reliable-ordered on channel 2,
 * both IMMEDIATE; the server echoes everything it receives with the
 * reliability, channel and priority it came with, the game's first.
 *
 * A reliable game message the soft budget refuses (the stage is full of
 * bulk) waits and goes first when there is room, as rudp-bench's client
 * does; its time runs from its tick.
 *
 * What it holds the policy to: a reliable game message staged at
 * IMMEDIATE goes out ahead of the bulk staged before it, so its echo
 * waits about as long as the unreliable one's (the bottleneck queues both
 * meet), not behind bulk the policy had already committed to the conn's
 * queue (fed up to the rate controller's window, about 11 KB, 17 ms at
 * the rate, sat there); and the bulk still fills the link.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psim.h"

#define MS 1000ull
#define SEC 1000000ull

#define LINK_RATE 625000u /* bytes per second: 5 Mbit/s */
#define LINK_DELAY_US (10 * MS)
#define LINK_QUEUE_BYTES (LINK_RATE * 30ull / 1000) /* 30 ms at the rate */
#define BASE_RTT_US (2 * LINK_DELAY_US)
#define MTU 1500u

#define BULK_SIZE 1000u
#define BULK_OUTSTANDING 1024u
#define GAME_SIZE 200u
#define GAME_EVERY_US (SEC / 60)
#define CH_BULK 0
#define CH_GAME_UNREL 1
#define CH_GAME_REL 2

/* The game messages of [WARMUP_US, GAME_END_US) are measured, and the bulk
 * delivered in [WARMUP_US, RUN_US); the last second lets the game's echoes
 * come home. */
#define WARMUP_US (2 * SEC)
#define GAME_END_US (11 * SEC)
#define RUN_US (12 * SEC)
#define MAX_TICKS 1024u
/* Stated bounds: the reliable game message's echo over the unreliable
 * one's, p50 and p99 (1 ms = 625 B at the link's rate); the bulk's share
 * of the link's bytes, each way and run (a datagram of one 1,000 B
 * message carries 1,014 B, and the game and ACKs take their part); and
 * drops at most 1 % of the datagrams through the bottleneck. */
#define MAX_P50_GAP_MS 6.0
#define MAX_P99_GAP_MS 8.0
#define MIN_BULK_SHARE 0.88
/* Runs with different GUIDs: the rate controllers' probing cycles start
 * elsewhere in each, and a round of PROBE_RTT falls differently. */
#define RUNS 8u

/* The echoes the server owes, oldest first: a ring each for the game and
 * the bulk (at most BULK_OUTSTANDING bulk messages are ever owed). */
#define ECHO_RING 2048u

struct echo {
	uint8_t tag;
	uint8_t reliability;
	uint8_t channel;
	uint8_t priority;
	uint32_t seq;
	uint32_t len;
};

struct echo_ring {
	struct echo e[ECHO_RING];
	uint32_t head, count;
};

struct workload {
	uint64_t start;
	uint32_t bulk_seq, bulk_echoed;
	uint32_t ticks; /* game ticks so far: their unreliable messages are sent */
	uint32_t rel_sent; /* of those, the ones whose reliable message the policy took */
	bool rel_held[MAX_TICKS]; /* its reliable message was refused at least once */
	uint64_t rel_taken_us[MAX_TICKS]; /* when the policy took it */
	/* The client conn's unsent reliable bytes then: committed ahead of it */
	uint64_t ahead_sum, ahead_max;
	uint32_t ahead_n;
	uint64_t there_us[2][MAX_TICKS]; /* when the server had it */
	uint64_t tick_sent_us[MAX_TICKS];
	uint64_t echo_us[2][MAX_TICKS]; /* [0] unreliable, [1] reliable; 0: not yet */
	size_t client_seen, server_seen; /* deliveries already handled */
	struct echo_ring game, bulk;
	uint64_t bulk_bytes[2]; /* bulk delivered in the measured part: [0] at the server, [1] back */
	bool measuring;
};

static void ring_push(struct echo_ring *r, const struct psim_delivery *d, uint8_t priority)
{
	struct echo *e;

	assert_true(r->count < ECHO_RING);
	e = &r->e[(r->head + r->count++) % ECHO_RING];
	e->tag = d->tag;
	e->reliability = d->reliability;
	e->channel = d->channel;
	e->priority = priority;
	e->seq = d->seq;
	e->len = d->len;
}

/* Sends what the ring holds, oldest first, until the policy refuses. */
static void ring_send(struct psim *s, struct echo_ring *r)
{
	while (r->count) {
		const struct echo *e = &r->e[r->head];
		int rc = psim_send(s, 1, e->len, e->tag, e->seq, e->reliability, e->channel, e->priority);

		if (rc == RUDP_POLICY_E_WOULD_BLOCK)
			return;
		assert_int_equal(rc, 0);
		r->head = (r->head + 1) % ECHO_RING;
		r->count--;
	}
}

static bool measured(const struct workload *w, uint64_t t)
{
	return t >= w->start + WARMUP_US && t < w->start + RUN_US;
}

static void server(struct psim *s, struct workload *w)
{
	const struct psim_endpoint *e = &s->ep[1];

	for (; w->server_seen < e->nlog; w->server_seen++) {
		const struct psim_delivery *d = &e->log[w->server_seen];

		if (d->tag == 'b') {
			ring_push(&w->bulk, d, RUDP_CONN_PRIO_MEDIUM);
			if (measured(w, d->recv_us))
				w->bulk_bytes[0] += d->len;
		} else {
			w->there_us[d->tag == 'r'][d->seq] = d->recv_us;
			ring_push(&w->game, d, RUDP_CONN_PRIO_IMMEDIATE);
		}
	}
	ring_send(s, &w->game);
	ring_send(s, &w->bulk);
}

static void client(struct psim *s, struct workload *w)
{
	const struct psim_endpoint *e = &s->ep[0];

	for (; w->client_seen < e->nlog; w->client_seen++) {
		const struct psim_delivery *d = &e->log[w->client_seen];

		if (d->tag == 'b') {
			w->bulk_echoed++;
			if (measured(w, d->recv_us))
				w->bulk_bytes[1] += d->len;
		} else {
			int rel = d->tag == 'r';

			assert_true(d->seq < w->ticks && w->echo_us[rel][d->seq] == 0);
			w->echo_us[rel][d->seq] = d->recv_us - w->tick_sent_us[d->seq];
		}
	}
	if (s->now >= s->app_wakeup && s->now < w->start + GAME_END_US) {
		assert_true(w->ticks < MAX_TICKS);
		w->tick_sent_us[w->ticks] = s->now;
		assert_int_equal(psim_send(s, 0, GAME_SIZE, 'u', w->ticks, RUDP_WIRE_UNRELIABLE_SEQUENCED,
					   CH_GAME_UNREL, RUDP_CONN_PRIO_IMMEDIATE),
				 0);
		w->ticks++;
		s->app_wakeup += GAME_EVERY_US;
	} else if (s->now >= w->start + GAME_END_US) {
		s->app_wakeup = UINT64_MAX;
	}
	/* The reliable one may find the soft budget full of bulk: it waits
	 * (its time runs from its tick) and goes first when there is room,
	 * as rudp-bench's client does on RUDP_EVENT_WRITABLE. */
	while (w->rel_sent < w->ticks) {
		int rc = psim_send(s, 0, GAME_SIZE, 'r', w->rel_sent, RUDP_WIRE_RELIABLE_ORDERED, CH_GAME_REL,
				   RUDP_CONN_PRIO_IMMEDIATE);

		if (rc == RUDP_POLICY_E_WOULD_BLOCK) {
			for (uint32_t i = w->rel_sent; i < w->ticks; i++)
				w->rel_held[i] = true;
			break;
		}
		assert_int_equal(rc, 0);
		w->rel_taken_us[w->rel_sent] = s->now;
		if (s->now >= w->start + WARMUP_US) {
			uint64_t ahead = rudp_conn_reliable_unsent_bytes(s->ep[0].c);

			w->ahead_sum += ahead;
			w->ahead_n++;
			if (ahead > w->ahead_max)
				w->ahead_max = ahead;
		}
		w->rel_sent++;
	}
	if (w->rel_sent < w->ticks)
		return;
	while (w->bulk_seq - w->bulk_echoed < BULK_OUTSTANDING) {
		int rc = psim_send(s, 0, BULK_SIZE, 'b', w->bulk_seq, RUDP_WIRE_RELIABLE_ORDERED, CH_BULK,
				   RUDP_CONN_PRIO_MEDIUM);

		if (rc == RUDP_POLICY_E_WOULD_BLOCK)
			break;
		assert_int_equal(rc, 0);
		w->bulk_seq++;
	}
}

static void app(struct psim *s, void *ud)
{
	struct workload *w = ud;

	/* The bottleneck's figures are of the measured part too. */
	if (!w->measuring && s->now >= w->start + WARMUP_US) {
		w->measuring = true;
		for (int i = 0; i < 2; i++) {
			s->queue_drops[i] = 0;
			s->queued_dgrams[i] = 0;
			s->queue_wait_us[i] = 0;
			s->max_backlog_bytes[i] = 0;
		}
	}
	server(s, w);
	client(s, w);
}

/* The figures of all runs together. */
struct totals {
	uint64_t *echo[2]; /* [0] unreliable, [1] reliable: echo times */
	uint32_t n[2], sent[2], held;
	/* sums: refused by the policy, then there and back over the one-way delay */
	uint64_t refused_us[2], there_us[2], back_us[2];
	uint64_t bulk_bytes[2], drops[2], queued_dgrams[2], queue_wait_us[2], max_backlog[2];
	uint64_t ahead_sum, ahead_max;
	uint32_t ahead_n;
	double bulk_share_min;
};

static void add_game(struct totals *t, const struct workload *w)
{
	for (int rel = 0; rel < 2; rel++) {
		for (uint32_t i = 0; i < w->ticks; i++) {
			uint64_t taken, there;

			if (w->tick_sent_us[i] < w->start + WARMUP_US)
				continue;
			t->sent[rel]++;
			t->held += rel && w->rel_held[i];
			if (!w->echo_us[rel][i])
				continue;
			taken = rel ? w->rel_taken_us[i] : w->tick_sent_us[i];
			there = w->there_us[rel][i];
			t->echo[rel][t->n[rel]++] = w->echo_us[rel][i];
			t->refused_us[rel] += taken - w->tick_sent_us[i];
			t->there_us[rel] += there - taken - LINK_DELAY_US;
			t->back_us[rel] += w->tick_sent_us[i] + w->echo_us[rel][i] - there - LINK_DELAY_US;
		}
	}
}

static void run(uint64_t seed, struct totals *t)
{
	const struct psim_link link = {
		.delay_us = LINK_DELAY_US, .rate_bytes_per_s = LINK_RATE, .queue_bytes = LINK_QUEUE_BYTES};
	struct rudp_conn_config cfg;
	struct rudp_policy_config pcfg;
	struct psim *s = malloc(sizeof(*s));
	struct workload *w = calloc(1, sizeof(*w));

	assert_non_null(s);
	assert_non_null(w);
	rudp_conn_config_init(&cfg);
	assert_int_equal(cfg.congestion_control, RUDP_CONN_CC_RATE);
	cfg.mtu = MTU;
	psim_init(s, &cfg, &link, &link, seed);
	s->guid = 1000 + 2 * seed;
	psim_connect(s);
	rudp_policy_config_init(&pcfg);
	psim_attach_policy(s, 0, &pcfg);
	psim_attach_policy(s, 1, &pcfg);
	w->start = s->now;
	s->app = app;
	s->app_ud = w;
	/* The first tick falls elsewhere in each run too. */
	s->app_wakeup = s->now + seed * 7919 % GAME_EVERY_US;
	while (s->now < w->start + RUN_US)
		psim_step(s);

	add_game(t, w);
	for (int i = 0; i < 2; i++) {
		double share = (double)w->bulk_bytes[i] / ((double)LINK_RATE * (RUN_US - WARMUP_US) / SEC);

		if (share < t->bulk_share_min)
			t->bulk_share_min = share;
		t->bulk_bytes[i] += w->bulk_bytes[i];
		t->drops[i] += s->queue_drops[i];
		t->queued_dgrams[i] += s->queued_dgrams[i];
		t->queue_wait_us[i] += s->queue_wait_us[i];
		if (s->max_backlog_bytes[i] > t->max_backlog[i])
			t->max_backlog[i] = s->max_backlog_bytes[i];
	}
	t->ahead_sum += w->ahead_sum;
	t->ahead_n += w->ahead_n;
	if (w->ahead_max > t->ahead_max)
		t->ahead_max = w->ahead_max;
	psim_free(s);
	free(s);
	free(w);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Echo time over the base RTT, ms, of the sorted samples' quantile q / 100. */
static double quantile_ms(const uint64_t *v, uint32_t n, uint32_t q)
{
	return n ? ((double)v[(size_t)n * q / 100] - (double)BASE_RTT_US) / 1000.0 : 1e9;
}

static double mean_ms(uint64_t sum, uint32_t n)
{
	return n ? (double)sum / n / 1000.0 : 0;
}

struct figures {
	double p50_ms[2], p99_ms[2]; /* [0] unreliable, [1] reliable */
	double bulk_share_min;
	uint64_t drops;
};

static void report(struct totals *t, struct figures *f)
{
	static const char *const name[2] = {"unreliable", "reliable"};
	double secs = (double)RUNS * (RUN_US - WARMUP_US) / SEC;

	for (int rel = 0; rel < 2; rel++) {
		uint32_t n = t->n[rel];

		qsort(t->echo[rel], n, sizeof(uint64_t), cmp_u64);
		f->p50_ms[rel] = quantile_ms(t->echo[rel], n, 50);
		f->p99_ms[rel] = quantile_ms(t->echo[rel], n, 99);
		printf("game %-10s %u/%u echoed; echo over the base RTT p50 %.1f ms, p99 %.1f ms, max %.1f "
		       "ms\n",
		       name[rel], n, t->sent[rel], f->p50_ms[rel], f->p99_ms[rel],
		       n ? ((double)t->echo[rel][n - 1] - (double)BASE_RTT_US) / 1000.0 : 0);
		printf("     %-10s mean: refused %.1f ms, then there %.1f ms and back %.1f ms over the "
		       "delay\n",
		       "", mean_ms(t->refused_us[rel], n), mean_ms(t->there_us[rel], n),
		       mean_ms(t->back_us[rel], n));
	}
	printf("reliable game messages refused a while (soft budget full of bulk): %u\n", t->held);
	printf("bulk %.1f %% of the link to the server, %.1f %% back (lowest of one run and way %.1f %%)\n",
	       100.0 * t->bulk_bytes[0] / (LINK_RATE * secs), 100.0 * t->bulk_bytes[1] / (LINK_RATE * secs),
	       100.0 * t->bulk_share_min);
	printf("bottleneck: drops %llu there, %llu back; mean wait %.1f ms there, %.1f ms back; deepest "
	       "%llu B there, %llu B back\n",
	       (unsigned long long)t->drops[0], (unsigned long long)t->drops[1],
	       mean_ms(t->queue_wait_us[0], (uint32_t)t->queued_dgrams[0]),
	       mean_ms(t->queue_wait_us[1], (uint32_t)t->queued_dgrams[1]),
	       (unsigned long long)t->max_backlog[0], (unsigned long long)t->max_backlog[1]);
	printf("client conn's unsent reliable bytes when it takes a reliable game message: mean %llu, max "
	       "%llu\n",
	       (unsigned long long)(t->ahead_n ? t->ahead_sum / t->ahead_n : 0),
	       (unsigned long long)t->ahead_max);
	f->bulk_share_min = t->bulk_share_min;
	f->drops = t->drops[0] + t->drops[1];
}

static void test_reliable_game_beside_bulk(void **state)
{
	struct totals t = {.bulk_share_min = 1e9};
	struct figures f;

	(void)state;
	for (int rel = 0; rel < 2; rel++) {
		t.echo[rel] = calloc((size_t)RUNS * MAX_TICKS, sizeof(uint64_t));
		assert_non_null(t.echo[rel]);
	}
	for (uint64_t seed = 1; seed <= RUNS; seed++)
		run(seed, &t);
	printf("%u runs, %.0f ms one way, %u B/s each way, %llu B drop-tail buffer; measured after %llu s:\n",
	       RUNS, LINK_DELAY_US / 1000.0, LINK_RATE, (unsigned long long)LINK_QUEUE_BYTES,
	       (unsigned long long)(WARMUP_US / SEC));
	report(&t, &f);

	/* Every reliable message comes back, and nearly every unreliable one. */
	assert_int_equal(t.n[1], t.sent[1]);
	assert_true(t.n[0] * 100 >= t.sent[0] * 95);
	/* The reliable one waits for the bulk committed ahead of it (at most
	 * the pacing's room) and for room in the soft budget: a few ms more
	 * than the unreliable one, not the ~20 ms of a BDP of committed bulk. */
	assert_true(f.p50_ms[1] <= f.p50_ms[0] + MAX_P50_GAP_MS);
	assert_true(f.p99_ms[1] <= f.p99_ms[0] + MAX_P99_GAP_MS);
	/* And the bulk still fills the link. */
	assert_true(f.bulk_share_min >= MIN_BULK_SHARE);
	assert_true(f.drops * 100 <= t.queued_dgrams[0] + t.queued_dgrams[1]);
	free(t.echo[0]);
	free(t.echo[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reliable_game_beside_bulk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
