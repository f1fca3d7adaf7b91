/* SPDX-License-Identifier: MIT */
/*
 * Message lifetimes and shared bodies in the conn's send queue, over the
 * simulated network (sim.h): an unreliable message still unsent at its
 * lifetime's end is dropped at the flush and counted, the others go, in
 * order; reliable kinds refuse a lifetime; a shared body is referenced by
 * the queue until the frame is sent, acknowledged, expired or dropped with
 * the conn, and then goes back to its pool.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/shared_body.h"
#include "sim.h"

#define MS 1000ull
#define SEC 1000000ull

static const struct sim_link clean_link = {.delay_us = 10 * MS};

static struct sim *connected_sim(uint64_t seed)
{
	struct rudp_conn_config cfg;
	struct sim *s = malloc(sizeof(*s));

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	sim_init(s, seed, &cfg, &clean_link);
	s->ep[0].work.count = 0;
	s->ep[1].work.count = 0;
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 5 * SEC));
	return s;
}

/* Runs to the time limit: for a run that waits for ACKs and resends. */
static bool never(struct sim *s)
{
	(void)s;
	return false;
}

/* Lets everything in the link arrive (no workload is left to send). */
static void settle(struct sim *s)
{
	for (int i = 0; i < 10000 && s->heap_n; i++)
		sim_step(s);
}

static uint64_t expired_count(const struct rudp_conn *c)
{
	struct rudp_conn_stats st;

	rudp_conn_get_stats(c, &st);
	return st.unreliable_expired;
}

/* Sends message seq of stream (rel, ch) from the client with a lifetime end. */
static void send_expiring(struct sim *s, uint8_t rel, uint8_t ch, uint32_t seq, uint64_t expire_us)
{
	uint8_t buf[64];

	sim_make_message(buf, sizeof(buf), rel, ch, seq);
	assert_int_equal(rudp_conn_send_expiring(s->ep[0].c, buf, sizeof(buf), rel, ch, RUDP_CONN_PRIO_MEDIUM,
						 s->now, expire_us),
			 0);
	s->ep[0].tx_next[rel][ch] = seq + 1;
}

/* Every other message has a lifetime that ends before the flush: exactly
 * those are dropped and counted, the others arrive in order. */
static void check_expiry(uint8_t rel, uint8_t ch)
{
	struct sim *s = connected_sim(3);
	const struct sim_stream_rx *rx = &s->ep[1].rx[rel][ch];

	for (uint32_t seq = 0; seq < 10; seq++)
		send_expiring(s, rel, ch, seq, seq % 2 == 0 ? s->now + 5 * MS : s->now + 1 * SEC);
	s->now += 10 * MS;
	rudp_conn_flush(s->ep[0].c, s->now);
	settle(s);
	assert_int_equal(expired_count(s->ep[0].c), 5);
	assert_int_equal(rx->delivered, 5);
	for (uint32_t seq = 0; seq < 10; seq++) {
		if (rel == 0)
			assert_int_equal(rx->got[seq], seq % 2);
	}
	if (rel != 0)
		assert_int_equal(rx->last_sequenced, 9);
	assert_int_equal(s->ep[1].errors, 0);
	sim_delete(s);
}

static void test_expired_unreliable_dropped(void **state)
{
	(void)state;
	check_expiry(RUDP_WIRE_UNRELIABLE, 0);
}

static void test_expired_sequenced_dropped(void **state)
{
	(void)state;
	check_expiry(RUDP_WIRE_UNRELIABLE_SEQUENCED, 7);
}

static void test_unexpired_go(void **state)
{
	struct sim *s = connected_sim(4);

	(void)state;
	for (uint32_t seq = 0; seq < 10; seq++)
		send_expiring(s, RUDP_WIRE_UNRELIABLE, 0, seq, s->now + 100 * MS);
	s->now += 1 * MS;
	rudp_conn_flush(s->ep[0].c, s->now);
	settle(s);
	assert_int_equal(expired_count(s->ep[0].c), 0);
	assert_int_equal(s->ep[1].rx[0][0].delivered, 10);
	assert_int_equal(s->ep[1].errors, 0);
	/* Expiry at the flush time itself counts as expired. */
	send_expiring(s, RUDP_WIRE_UNRELIABLE, 0, 10, s->now + 2 * MS);
	s->now += 2 * MS;
	rudp_conn_flush(s->ep[0].c, s->now);
	settle(s);
	assert_int_equal(expired_count(s->ep[0].c), 1);
	assert_int_equal(s->ep[1].rx[0][0].delivered, 10);
	sim_delete(s);
}

static void test_reliable_refuses_lifetime(void **state)
{
	struct sim *s = connected_sim(5);
	uint8_t buf[32];

	(void)state;
	sim_make_message(buf, sizeof(buf), 2, 0, 0);
	for (uint8_t rel = RUDP_WIRE_RELIABLE; rel <= RUDP_WIRE_RELIABLE_SEQUENCED; rel++)
		assert_int_equal(rudp_conn_send_expiring(s->ep[0].c, buf, sizeof(buf), rel, 0,
							 RUDP_CONN_PRIO_MEDIUM, s->now, s->now + SEC),
				 RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_send_expiring(s->ep[0].c, buf, sizeof(buf), RUDP_WIRE_RELIABLE, 0,
						 RUDP_CONN_PRIO_MEDIUM, s->now, 0),
			 0);
	sim_delete(s);
}

/* A split unreliable message travels reliably: its lifetime is not kept. */
static void test_split_keeps_no_lifetime(void **state)
{
	struct sim *s = connected_sim(6);
	uint32_t len = 5000;
	uint8_t *buf = malloc(len);

	(void)state;
	assert_non_null(buf);
	sim_make_message(buf, len, RUDP_WIRE_UNRELIABLE, 0, 0);
	assert_int_equal(rudp_conn_send_expiring(s->ep[0].c, buf, len, RUDP_WIRE_UNRELIABLE, 0,
						 RUDP_CONN_PRIO_MEDIUM, s->now, s->now + 1),
			 0);
	s->now += 10 * MS;
	rudp_conn_flush(s->ep[0].c, s->now);
	sim_run(s, never, 2 * SEC);
	assert_int_equal(expired_count(s->ep[0].c), 0);
	assert_int_equal(s->ep[1].rx[0][0].delivered, 1);
	assert_int_equal(s->ep[1].errors, 0);
	free(buf);
	sim_delete(s);
}

static struct shared_body *make_shared(struct shared_body_pool *pool, uint8_t rel, uint8_t ch, uint32_t seq)
{
	uint8_t buf[200];

	sim_make_message(buf, sizeof(buf), rel, ch, seq);
	return shared_body_new(pool, buf, sizeof(buf));
}

static int send_shared(struct sim *s, struct shared_body *body, uint8_t rel, uint8_t ch, uint64_t expire_us)
{
	return rudp_conn_send_shared(s->ep[0].c, body, rel, ch, RUDP_CONN_PRIO_MEDIUM, s->now, expire_us);
}

/* The body stays referenced until the reliable frame is acknowledged and
 * the unreliable one sent; then it is back in the pool, reused. */
static void test_shared_released_when_done(void **state)
{
	struct shared_body_pool pool = {0};
	struct sim *s = connected_sim(7);
	struct shared_body *rel_body = make_shared(&pool, RUDP_WIRE_RELIABLE_ORDERED, 2, 0);
	struct shared_body *unrel_body = make_shared(&pool, RUDP_WIRE_UNRELIABLE, 0, 0);

	(void)state;
	assert_int_equal(send_shared(s, rel_body, RUDP_WIRE_RELIABLE_ORDERED, 2, 0), 0);
	assert_int_equal(send_shared(s, unrel_body, RUDP_WIRE_UNRELIABLE, 0, 0), 0);
	s->ep[0].tx_next[RUDP_WIRE_RELIABLE_ORDERED][2] = 1;
	shared_body_release(rel_body);
	shared_body_release(unrel_body);
	assert_int_equal(pool.live, 2);
	rudp_conn_flush(s->ep[0].c, s->now);
	/* Sent: the unreliable body is free, the reliable one waits for its ACK. */
	assert_int_equal(pool.live, 1);
	assert_int_equal(rel_body->refs, 1);
	sim_run(s, never, 2 * SEC);
	assert_int_equal(pool.live, 0);
	assert_int_equal(pool.nfree, 2);
	assert_int_equal(s->ep[1].rx[RUDP_WIRE_RELIABLE_ORDERED][2].delivered, 1);
	assert_int_equal(s->ep[1].rx[0][0].delivered, 1);
	assert_int_equal(s->ep[1].errors, 0);
	sim_delete(s);
	shared_body_pool_destroy(&pool);
}

/* Expired, or queued when the conn is destroyed: released too. */
static void test_shared_released_on_expiry_and_close(void **state)
{
	struct shared_body_pool pool = {0};
	struct sim *s = connected_sim(8);
	struct shared_body *a = make_shared(&pool, RUDP_WIRE_UNRELIABLE_SEQUENCED, 1, 0);
	struct shared_body *b = make_shared(&pool, RUDP_WIRE_RELIABLE, 0, 0);

	(void)state;
	assert_int_equal(send_shared(s, a, RUDP_WIRE_UNRELIABLE_SEQUENCED, 1, s->now + 1 * MS), 0);
	assert_int_equal(send_shared(s, b, RUDP_WIRE_RELIABLE, 0, s->now + 1 * MS), RUDP_CONN_E_ARG);
	assert_int_equal(send_shared(s, b, RUDP_WIRE_RELIABLE, 0, 0), 0);
	shared_body_release(a);
	shared_body_release(b);
	s->now += 2 * MS;
	s->silent = true; /* the reliable frame is never acknowledged */
	rudp_conn_flush(s->ep[0].c, s->now);
	assert_int_equal(expired_count(s->ep[0].c), 1);
	assert_int_equal(pool.live, 1);
	sim_delete(s);
	assert_int_equal(pool.live, 0);
	shared_body_pool_destroy(&pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expired_unreliable_dropped),
		cmocka_unit_test(test_expired_sequenced_dropped),
		cmocka_unit_test(test_unexpired_go),
		cmocka_unit_test(test_reliable_refuses_lifetime),
		cmocka_unit_test(test_split_keeps_no_lifetime),
		cmocka_unit_test(test_shared_released_when_done),
		cmocka_unit_test(test_shared_released_on_expiry_and_close),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
