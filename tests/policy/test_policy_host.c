/* SPDX-License-Identifier: MIT */
/*
 * Send policy through the public API, over real sockets on loopback: the
 * options and their checks, RUDP_E_WOULD_BLOCK and RUDP_EVENT_WRITABLE,
 * stats, IMMEDIATE flushing at once. Built with -Dsend_policy=false it
 * checks the other promise: the API is there and says "not supported",
 * the feature macro says so, and sending with priorities still works.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rudp.h"
#include "test_clock.h"

struct pair {
	rudp_host *server, *client;
	rudp_peer *to_server, *to_client;
	uint32_t server_received; /* reliable ordered messages, checked in order */
	uint32_t server_unreliable;
	uint32_t next_seq; /* ordered check of what the server receives */
	uint32_t client_writable;
};

static void service(struct pair *p)
{
	rudp_event ev[64];
	int n = rudp_service(p->server, ev, 64, 0);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].type == RUDP_EVENT_CONNECT)
			p->to_client = ev[i].peer;
		if (ev[i].type == RUDP_EVENT_RECEIVE && ev[i].reliability != RUDP_RELIABLE_ORDERED) {
			p->server_unreliable++;
		} else if (ev[i].type == RUDP_EVENT_RECEIVE) {
			uint32_t seq;
			assert_true(ev[i].len >= 5);
			memcpy(&seq, ev[i].data + 1, 4);
			assert_int_equal(seq, p->next_seq);
			p->next_seq++;
			p->server_received++;
		}
	}
	n = rudp_service(p->client, ev, 64, 1);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].type == RUDP_EVENT_WRITABLE) {
			assert_ptr_equal(ev[i].peer, p->to_server);
			p->client_writable++;
		}
	}
}

static void pair_open(struct pair *p, const rudp_send_options *client_opts)
{
	rudp_config cfg;
	char addr[64];
	uint64_t until;

	memset(p, 0, sizeof(*p));
	rudp_config_init(&cfg);
	cfg.bind_address = "127.0.0.1:0";
	assert_int_equal(rudp_host_create(&cfg, &p->server), 0);
	assert_int_equal(rudp_host_local_address(p->server, addr, sizeof(addr)), 0);
	rudp_config_init(&cfg);
	assert_int_equal(rudp_host_create(&cfg, &p->client), 0);
	if (client_opts)
		assert_int_equal(rudp_host_set_send_options(p->client, client_opts), 0);
	assert_int_equal(rudp_connect(p->client, addr, &p->to_server), 0);
	until = now_ms() + 5000;
	while (now_ms() < until) {
		rudp_peer_stats st;
		service(p);
		assert_int_equal(rudp_peer_stats_get(p->to_server, &st), 0);
		if (st.state == 1 && p->to_client)
			return;
	}
	fail_msg("no connection");
}

static void pair_close(struct pair *p)
{
	rudp_host_destroy(p->client);
	rudp_host_destroy(p->server);
}

static int send_seq(struct pair *p, uint32_t *seq, size_t len, int rel, int prio)
{
	static uint8_t buf[4096];
	buf[0] = 0xfe;
	memcpy(buf + 1, seq, 4);
	int r = rudp_send_ex(p->to_server, buf, len, rel, 0, prio);
	if (r == 0)
		(*seq)++;
	return r;
}

/* IMMEDIATE skips the wait for the next service or flush call (both builds). */
static void test_immediate_flushes_at_once(void **state)
{
	struct pair p;
	rudp_host_stats hs;
	uint64_t before;
	uint32_t seq = 0;

	(void)state;
	pair_open(&p, NULL);
	assert_int_equal(rudp_host_stats_get(p.client, &hs), 0);
	before = hs.datagrams_sent;
	assert_int_equal(send_seq(&p, &seq, 100, RUDP_RELIABLE_ORDERED, RUDP_PRIORITY_MEDIUM), 0);
	assert_int_equal(rudp_host_stats_get(p.client, &hs), 0);
	assert_int_equal(hs.datagrams_sent, before); /* queued, waits for service/flush */
	assert_int_equal(send_seq(&p, &seq, 100, RUDP_RELIABLE_ORDERED, RUDP_PRIORITY_IMMEDIATE), 0);
	assert_int_equal(rudp_host_stats_get(p.client, &hs), 0);
	assert_true(hs.datagrams_sent > before);
	assert_int_equal(send_seq(&p, &seq, 100, RUDP_RELIABLE_ORDERED, 4), RUDP_E_INVALID);
	assert_int_equal(send_seq(&p, &seq, 100, RUDP_RELIABLE_ORDERED, -1), RUDP_E_INVALID);
	uint64_t until = now_ms() + 3000;
	while (p.server_received < 2 && now_ms() < until)
		service(&p);
	assert_int_equal(p.server_received, 2);
	pair_close(&p);
}

static void test_options_defaults_and_strings(void **state)
{
	rudp_send_options o;

	(void)state;
	memset(&o, 0xff, sizeof(o));
	rudp_send_options_init(&o);
	assert_int_equal(o.max_in_flight_bytes, 64u << 20);
	assert_int_equal(o.reliable_soft_budget, 256u << 10);
	assert_int_equal(o.unreliable_reserve, 64u << 10);
	assert_int_equal(o.flush_budget, 256u << 10);
	assert_int_equal(o.starvation_limit, 16);
	assert_string_not_equal(rudp_strerror(RUDP_E_WOULD_BLOCK), rudp_strerror(-1000));
	assert_int_equal(RUDP_PRIORITIES, 4);
}

#if RUDP_HAVE_SEND_POLICY

#ifndef RUDP_HAVE_SEND_POLICY_API
#error "RUDP_HAVE_SEND_POLICY_API must be defined when the module is built"
#endif

static void test_options_are_checked(void **state)
{
	struct pair p;
	rudp_send_options o, bad;
	rudp_send_stats st;

	(void)state;
	rudp_send_options_init(&o);
	pair_open(&p, NULL);
	assert_int_equal(rudp_peer_set_send_options(NULL, &o), RUDP_E_INVALID);
	assert_int_equal(rudp_host_set_send_options(NULL, &o), RUDP_E_INVALID);
	assert_int_equal(rudp_peer_send_stats_get(NULL, &st), RUDP_E_INVALID);
	assert_int_equal(rudp_peer_send_stats_get(p.to_server, NULL), RUDP_E_INVALID);
	bad = o, bad.reliable_soft_budget = 0;
	assert_int_equal(rudp_peer_set_send_options(p.to_server, &bad), RUDP_E_INVALID);
	bad = o, bad.unreliable_reserve = 100;
	assert_int_equal(rudp_peer_set_send_options(p.to_server, &bad), RUDP_E_INVALID);
	bad = o, bad.starvation_limit = 0;
	assert_int_equal(rudp_host_set_send_options(p.client, &bad), RUDP_E_INVALID);
	/* No policy until asked for. */
	assert_int_equal(rudp_peer_send_stats_get(p.to_server, &st), 0);
	assert_int_equal(st.enabled, 0);
	assert_int_equal(rudp_peer_set_send_options(p.to_server, &o), 0);
	assert_int_equal(rudp_peer_send_stats_get(p.to_server, &st), 0);
	assert_int_equal(st.enabled, 1);
	/* Off again: what it held moves on, nothing is lost. */
	uint32_t seq = 0;
	for (int i = 0; i < 10; i++)
		assert_int_equal(send_seq(&p, &seq, 500, RUDP_RELIABLE_ORDERED, RUDP_PRIORITY_LOW), 0);
	assert_int_equal(rudp_peer_set_send_options(p.to_server, NULL), 0);
	assert_int_equal(rudp_peer_send_stats_get(p.to_server, &st), 0);
	assert_int_equal(st.enabled, 0);
	uint64_t until = now_ms() + 3000;
	while (p.server_received < 10 && now_ms() < until)
		service(&p);
	assert_int_equal(p.server_received, 10);
	pair_close(&p);
}

static void test_would_block_then_writable(void **state)
{
	struct pair p;
	rudp_send_options o;
	rudp_send_stats st;
	uint32_t seq = 0, accepted = 0;
	int r;

	(void)state;
	rudp_send_options_init(&o);
	o.reliable_soft_budget = 16 * 1024;
	pair_open(&p, &o); /* host-wide default: the new peer has it */
	assert_int_equal(rudp_peer_send_stats_get(p.to_server, &st), 0);
	assert_int_equal(st.enabled, 1);
	/* Without servicing, the queue only grows: 16 KiB are taken, then no more. */
	while ((r = send_seq(&p, &seq, 1024, RUDP_RELIABLE_ORDERED, RUDP_PRIORITY_MEDIUM)) == 0)
		accepted++;
	assert_int_equal(r, RUDP_E_WOULD_BLOCK);
	assert_int_equal(accepted, 16);
	/* Unreliable messages still go. */
	uint8_t u[8] = {0xfe};
	assert_int_equal(rudp_send_ex(p.to_server, u, sizeof(u), RUDP_UNRELIABLE, 0, RUDP_PRIORITY_HIGH), 0);
	assert_int_equal(rudp_peer_send_stats_get(p.to_server, &st), 0);
	assert_int_equal(st.sends_refused, 1);
	assert_true(st.reliable_queue_bytes >= 16 * 1024);
	assert_int_equal(st.writable_events, 0);

	uint64_t until = now_ms() + 5000;
	while (p.client_writable == 0 && now_ms() < until)
		service(&p);
	assert_int_equal(p.client_writable, 1);
	assert_int_equal(send_seq(&p, &seq, 1024, RUDP_RELIABLE_ORDERED, RUDP_PRIORITY_MEDIUM), 0);
	until = now_ms() + 5000;
	while (p.server_received < accepted + 1 && now_ms() < until)
		service(&p);
	assert_int_equal(p.server_received, accepted + 1); /* all, in order (checked in service) */
	assert_int_equal(p.server_unreliable, 1); /* loopback loses nothing here */
	assert_int_equal(rudp_peer_send_stats_get(p.to_server, &st), 0);
	assert_int_equal(st.writable_events, 1);
	assert_true(st.peak_reliable_queue_bytes >= 16 * 1024 &&
		    st.peak_reliable_queue_bytes < 17 * 1024 + 64);
	pair_close(&p);
}

#else /* built with -Dsend_policy=false */

#ifdef RUDP_HAVE_SEND_POLICY_API
#error "RUDP_HAVE_SEND_POLICY_API must not be defined without the module"
#endif

static void test_not_built_says_unsupported(void **state)
{
	struct pair p;
	rudp_send_options o;
	rudp_send_stats st;
	uint32_t seq = 0;

	(void)state;
	rudp_send_options_init(&o);
	pair_open(&p, NULL);
	assert_int_equal(rudp_peer_set_send_options(p.to_server, &o), RUDP_E_UNSUPPORTED);
	assert_int_equal(rudp_peer_set_send_options(p.to_server, NULL), RUDP_E_UNSUPPORTED);
	assert_int_equal(rudp_host_set_send_options(p.client, &o), RUDP_E_UNSUPPORTED);
	assert_int_equal(rudp_peer_send_stats_get(p.to_server, &st), RUDP_E_UNSUPPORTED);
	/* Priorities are accepted and ignored: plain FIFO, nothing refused. */
	for (int i = 0; i < 400; i++)
		assert_int_equal(send_seq(&p, &seq, 1024, RUDP_RELIABLE_ORDERED, (3 - i % 4)), 0);
	uint64_t until = now_ms() + 5000;
	while (p.server_received < 400 && now_ms() < until)
		service(&p);
	assert_int_equal(p.server_received, 400);
	pair_close(&p);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_defaults_and_strings),
		cmocka_unit_test(test_immediate_flushes_at_once),
#if RUDP_HAVE_SEND_POLICY
		cmocka_unit_test(test_options_are_checked),
		cmocka_unit_test(test_would_block_then_writable),
#else
		cmocka_unit_test(test_not_built_says_unsupported),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
