/* SPDX-License-Identifier: MIT */
/*
 * rudp_peer_status_get and the host memory budget (rudp_config.
 * max_host_memory) over real sockets on loopback, once per I/O backend:
 * the status of a live connection (RTT, rates, pending bytes, queue time),
 * its error codes and size-prefix contract; past a small budget sends are
 * refused and exactly one WRITABLE follows once it drains, a new client
 * is turned away as "server full", and everything accepted is delivered.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rudp.h"
#include "test_backend.h"
#include "test_clock.h"
#include "test_host_pair.h"

struct pair {
	rudp_host *server, *client;
	rudp_peer *peer; /* the client's peer (the server) */
	rudp_peer *server_peer; /* the server's peer (the client) */
	uint32_t server_next; /* next message id the server expects */
	uint32_t writable; /* WRITABLE events the client got */
};

/* Services the server; every message must be the next in order and intact. */
static void service_server(struct pair *p, int timeout_ms)
{
	rudp_event ev[64];
	int n = rudp_service(p->server, ev, 64, timeout_ms);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].type == RUDP_EVENT_CONNECT) {
			p->server_peer = ev[i].peer;
			continue;
		}
		if (ev[i].type == RUDP_EVENT_DISCONNECT)
			continue; /* the end of test_status_live */
		assert_int_equal(ev[i].type, RUDP_EVENT_RECEIVE);
		assert_int_equal(test_msg_id(ev[i].data), p->server_next);
		assert_int_equal(ev[i].data[ev[i].len - 1], (uint8_t)(p->server_next & 0xff));
		p->server_next++;
	}
}

static void service_client(struct pair *p, int timeout_ms)
{
	rudp_event ev[16];
	int n = rudp_service(p->client, ev, 16, timeout_ms);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		assert_int_not_equal(ev[i].type, RUDP_EVENT_DISCONNECT);
		if (ev[i].type == RUDP_EVENT_WRITABLE) {
			assert_ptr_equal(ev[i].peer, p->peer);
			p->writable++;
		}
	}
}

static void serve_once(void *p)
{
	service_server(p, 0);
}

static void pair_connect(struct pair *p, const rudp_config *client_cfg, const rudp_config *server_cfg)
{
	rudp_config sc, cc;
	if (server_cfg) {
		sc = *server_cfg;
	} else {
		rudp_config_init(&sc);
	}
	if (client_cfg) {
		cc = *client_cfg;
	} else {
		rudp_config_init(&cc);
	}
	*p = (struct pair){0};
	test_host_pair_start(sc, &cc, &p->server, &p->client, &p->peer);
	test_host_pair_wait_connect(p->client, serve_once, p);
	for (uint64_t t = now_ms() + 2000; !p->server_peer && now_ms() < t;) {
		service_client(p, 0); /* what the client's simulator holds */
		service_server(p, 1);
	}
	assert_non_null(p->server_peer);
}

static void pair_free(struct pair *p)
{
	test_host_pair_destroy(p->server, p->client);
}

static void get_status(rudp_peer *peer, rudp_peer_status *st)
{
	assert_int_equal(rudp_peer_status_get(peer, st), 0);
}

/* ---- rudp_peer_status_get ---- */

static void test_status_invalid_args(void **state)
{
	(void)state;
	rudp_peer_status st;
	memset(&st, 0x5a, sizeof(st));
	assert_int_equal(rudp_peer_status_get(NULL, &st), RUDP_E_INVALID);
	assert_int_equal(st.state, 0x5a5a5a5a); /* nothing stored */

	rudp_config c;
	rudp_config_init(&c);
	rudp_host *h;
	rudp_peer *peer;
	assert_int_equal(rudp_host_create(&c, &h), 0);
	/* Nobody listens there: the peer stays in the offline handshake. */
	assert_int_equal(rudp_connect(h, "127.0.0.1:9", &peer), 0);
	assert_int_equal(rudp_peer_status_get(peer, NULL), RUDP_E_INVALID);
	assert_int_equal(rudp_peer_status_get_sized(peer, &st, 0), RUDP_E_INVALID);
	assert_int_equal(st.state, 0x5a5a5a5a);
	assert_int_equal(rudp_peer_status_get(peer, &st), 0);
	assert_int_equal(st.state, 0);
	assert_int_equal(st.rtt_us, 0);
	assert_int_equal(st.send_rate, 0);
	rudp_host_destroy(h);
}

/* A program built against an older, shorter struct gets its prefix only. */
static void test_status_sized_prefix(void **state)
{
	(void)state;
	struct pair p;
	pair_connect(&p, NULL, NULL);
	unsigned char buf[sizeof(rudp_peer_status) + 16];
	size_t part = offsetof(rudp_peer_status, bandwidth_estimate);
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(rudp_peer_status_get_sized(p.peer, (rudp_peer_status *)buf, part), 0);
	for (size_t i = part; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xa5);
	pair_free(&p);
}

/* The stats getters take the caller's sizeof too: a shorter struct gets
 * its prefix, the same bytes the whole struct starts with, and nothing
 * past it is written. */
static void check_prefix(const unsigned char *buf, size_t part, size_t whole)
{
	for (size_t i = part; i < whole; i++)
		assert_int_equal(buf[i], 0xa5);
}

static void test_stats_sized_prefix(void **state)
{
	(void)state;
	struct pair p;
	pair_connect(&p, NULL, NULL);
	unsigned char buf[sizeof(rudp_host_stats) + sizeof(rudp_peer_stats) + sizeof(rudp_send_stats) + 16];

	rudp_peer_stats ps;
	size_t part = offsetof(rudp_peer_stats, frames_copied);
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(rudp_peer_stats_get_sized(p.peer, (rudp_peer_stats *)buf, part), 0);
	check_prefix(buf, part, sizeof(buf));
	assert_int_equal(rudp_peer_stats_get(p.peer, &ps), 0);
	assert_true(ps.mtu > 0);
	assert_memory_equal(buf, &ps, offsetof(rudp_peer_stats, mtu) + sizeof(ps.mtu));
	assert_int_equal(rudp_peer_stats_get_sized(p.peer, &ps, 0), RUDP_E_INVALID);

	rudp_host_stats hs;
	part = offsetof(rudp_host_stats, pongs_dropped);
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(rudp_host_stats_get_sized(p.client, (rudp_host_stats *)buf, part), 0);
	check_prefix(buf, part, sizeof(buf));
	assert_int_equal(rudp_host_stats_get(p.client, &hs), 0);
	assert_int_equal(((rudp_host_stats *)buf)->peers, hs.peers);
	assert_int_equal(hs.peers, 1);
	assert_int_equal(rudp_host_stats_get_sized(p.client, &hs, 0), RUDP_E_INVALID);

	part = offsetof(rudp_send_stats, peak_in_flight_bytes);
	memset(buf, 0xa5, sizeof(buf));
	int rc = rudp_peer_send_stats_get_sized(p.peer, (rudp_send_stats *)buf, part);
	assert_true(rc == 0 || rc == RUDP_E_UNSUPPORTED); /* the latter without the send policy */
	check_prefix(buf, rc == 0 ? part : 0, sizeof(buf));
	pair_free(&p);
}

/* A live connection: the RTT the simulator's latency makes, rates both
 * ways, a window of 1..2 s, then queued bytes and their age. */
static void test_status_live(void **state)
{
	(void)state;
	rudp_config cc;
	rudp_config_init(&cc);
	cc.sim.latency_ms = 5; /* a round trip of at least 10 ms */
	struct pair p;
	pair_connect(&p, &cc, NULL);

	uint8_t msg[500];
	uint32_t sent = 0;
	for (uint64_t until = now_ms() + 1300; now_ms() < until;) {
		for (int k = 0; k < 8; k++, sent++) {
			test_msg_fill(msg, sizeof(msg), sent);
			assert_int_equal(rudp_send(p.peer, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0), 0);
		}
		service_client(&p, 0);
		service_server(&p, 1);
	}
	for (uint64_t until = now_ms() + 3000; p.server_next < sent && now_ms() < until;) {
		service_client(&p, 1);
		service_server(&p, 1);
	}
	assert_int_equal(p.server_next, sent);

	rudp_peer_status st;
	get_status(p.peer, &st);
	assert_int_equal(st.state, 1);
	assert_in_range(st.rtt_us, 10000, 1000000);
	assert_true(st.window_us >= 1000000 && st.window_us <= 2100000);
	assert_true(st.send_rate > 100000); /* 8 x 500 B a millisecond or so, whatever the machine */
	assert_true(st.receive_rate > 0); /* ACKs */
	assert_true(st.receive_loss_percent >= 0 && st.receive_loss_percent <= 100);
	assert_true(st.bandwidth_estimate > 0); /* RUDP_CC_RATE, the default */
	assert_int_equal(st.reserved, 0);
	rudp_peer_status ss;
	get_status(p.server_peer, &ss);
	assert_true(ss.receive_rate > 100000);
	assert_int_equal(ss.send_loss_percent, 0);
	assert_int_equal(ss.receive_loss_percent, 0); /* loopback, no simulated loss */

	/* More than a window queued and sent once: the rest waits, and ages. */
	assert_int_equal(st.pending_reliable_bytes, 0);
	assert_int_equal(st.queue_time_us, 0);
	for (int k = 0; k < 200; k++, sent++) {
		test_msg_fill(msg, sizeof(msg), sent);
		assert_int_equal(rudp_send(p.peer, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0), 0);
	}
	assert_true(rudp_flush(p.client) >= 0); /* the simulator holds them a while */
	usleep(30000);
	rudp_flush(p.client); /* the host's clock moves on; no ACK has been read */
	get_status(p.peer, &st);
	/* At most the 64-frame window is in flight, less where the congestion
	 * window holds it (a standing queue in a loaded machine's RTTs). */
	assert_true(st.in_flight_bytes > 0 && st.in_flight_bytes <= 64 * (sizeof(msg) + 32));
	assert_true(st.pending_reliable_bytes + st.in_flight_bytes >= 200 * sizeof(msg));
	assert_true(st.pending_reliable_bytes >= (200 - 64) * sizeof(msg));
	assert_true(st.queue_time_us >= 30000);
	for (uint64_t until = now_ms() + 3000; p.server_next < sent && now_ms() < until;) {
		service_client(&p, 1);
		service_server(&p, 1);
	}
	assert_int_equal(p.server_next, sent);

	/* Closed: the error, and state 3. */
	assert_int_equal(rudp_disconnect(p.peer), 0);
	rudp_event ev[8];
	int closed = 0;
	for (uint64_t until = now_ms() + 3000; !closed && now_ms() < until;) {
		service_server(&p, 1);
		int n = rudp_service(p.client, ev, 8, 1);
		for (int i = 0; i < n; i++)
			closed |= ev[i].type == RUDP_EVENT_DISCONNECT;
	}
	assert_true(closed);
	assert_int_equal(rudp_peer_status_get(p.peer, &st), RUDP_E_NOT_CONNECTED);
	assert_int_equal(st.state, 3);
	assert_int_equal(st.rtt_us, 0);
	pair_free(&p);
}

#if RUDP_HAVE_SEND_POLICY_API
/* With a send policy, what it holds counts as pending and ages too. */
static void test_status_counts_policy(void **state)
{
	(void)state;
	struct pair p;
	pair_connect(&p, NULL, NULL);
	rudp_send_options o;
	rudp_send_options_init(&o);
	o.max_in_flight_bytes = 1; /* one message in the window at a time */
	assert_int_equal(rudp_peer_set_send_options(p.peer, &o), 0);
	uint8_t msg[300];
	for (uint32_t k = 0; k < 50; k++) {
		test_msg_fill(msg, sizeof(msg), k);
		assert_int_equal(rudp_send(p.peer, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0), 0);
	}
	rudp_peer_status st;
	get_status(p.peer, &st);
	assert_true(st.pending_reliable_bytes >= 45 * sizeof(msg));
	for (uint64_t until = now_ms() + 3000; p.server_next < 50 && now_ms() < until;) {
		service_client(&p, 1);
		service_server(&p, 1);
	}
	assert_int_equal(p.server_next, 50);
	get_status(p.peer, &st);
	assert_int_equal(st.pending_reliable_bytes, 0);
	assert_int_equal(st.queue_time_us, 0);
	pair_free(&p);
}
#endif

/* ---- the memory budget ---- */

/* Sends 1000 B messages without servicing until the client's budget
 * refuses one; then exactly one WRITABLE once the queue drains, the next
 * send succeeds, and every message arrives once, in order. */
static void test_budget_would_block_then_writable(void **state)
{
	(void)state;
	rudp_config cc;
	rudp_config_init(&cc);
	cc.max_host_memory = 64 << 10;
	struct pair p;
	pair_connect(&p, &cc, NULL);
	uint8_t msg[1000];
	uint32_t sent = 0;
	int r;
	for (;;) {
		test_msg_fill(msg, sizeof(msg), sent);
		r = rudp_send(p.peer, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0);
		if (r != 0)
			break;
		sent++;
		assert_true(sent < 1000);
	}
	assert_int_equal(r, RUDP_E_WOULD_BLOCK);
	/* Soft: the total (each message's bytes and frame record) reached
	 * the budget with the last message taken. */
	assert_in_range(sent, 60, 70);
	/* Refused again: still only one WRITABLE owed. */
	assert_int_equal(rudp_send(p.peer, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0), RUDP_E_WOULD_BLOCK);
	for (uint64_t until = now_ms() + 3000; p.writable == 0 && now_ms() < until;) {
		service_client(&p, 1);
		service_server(&p, 0);
	}
	assert_int_equal(p.writable, 1);
	test_msg_fill(msg, sizeof(msg), sent);
	assert_int_equal(rudp_send(p.peer, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0), 0);
	sent++;
	for (uint64_t until = now_ms() + 3000; p.server_next < sent && now_ms() < until;) {
		service_client(&p, 1);
		service_server(&p, 1);
	}
	assert_int_equal(p.server_next, sent);
	/* Never more than the one. */
	for (int i = 0; i < 20; i++)
		service_client(&p, 1);
	assert_int_equal(p.writable, 1);
	pair_free(&p);
}

/* A server over its budget (received messages it has not collected)
 * refuses a new client with "no free incoming connections", keeps the
 * first client, and delivers all it accepted; once collected, a new
 * client gets in. */
static void test_budget_refuses_new_connections(void **state)
{
	(void)state;
	rudp_config sc;
	rudp_config_init(&sc);
	sc.max_host_memory = 32 << 10;
	struct pair p;
	pair_connect(&p, NULL, &sc);
	uint8_t msg[1000];
	uint32_t sent = 0;
	for (; sent < 100; sent++) {
		test_msg_fill(msg, sizeof(msg), sent);
		assert_int_equal(rudp_send(p.peer, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0), 0);
	}
	/* The server reads but hands out nothing: the messages pile up. */
	rudp_host_stats hs;
	for (uint64_t until = now_ms() + 3000; now_ms() < until;) {
		service_client(&p, 1);
		assert_true(rudp_service(p.server, NULL, 0, 1) >= 0);
		assert_int_equal(rudp_host_stats_get(p.server, &hs), 0);
		if (hs.event_bytes_pending >= 100 * sizeof(msg))
			break;
	}
	assert_true(hs.event_bytes_pending >= 100 * sizeof(msg));

	char addr[64];
	assert_int_equal(rudp_host_local_address(p.server, addr, sizeof(addr)), 0);
	rudp_config c2;
	rudp_config_init(&c2);
	rudp_host *other;
	rudp_peer *op;
	assert_int_equal(rudp_host_create(&c2, &other), 0);
	assert_int_equal(rudp_connect(other, addr, &op), 0);
	rudp_event ev[4];
	int reason = 0;
	for (uint64_t until = now_ms() + 4000; !reason && now_ms() < until;) {
		assert_true(rudp_service(p.server, NULL, 0, 0) >= 0);
		int n = rudp_service(other, ev, 4, 1);
		for (int i = 0; i < n; i++) {
			assert_int_not_equal(ev[i].type, RUDP_EVENT_CONNECT);
			if (ev[i].type == RUDP_EVENT_DISCONNECT)
				reason = ev[i].reason;
		}
	}
	assert_int_equal(reason, RUDP_REASON_SERVER_FULL);
	assert_int_equal(rudp_host_stats_get(p.server, &hs), 0);
	assert_int_equal(hs.peers, 1);
	assert_true(hs.handshakes_refused >= 1);
	rudp_host_destroy(other);

	/* Everything accepted is delivered. */
	for (uint64_t until = now_ms() + 3000; p.server_next < sent && now_ms() < until;) {
		service_client(&p, 1);
		service_server(&p, 1);
	}
	assert_int_equal(p.server_next, sent);

	/* Collected: room again, and a new client gets in. */
	assert_int_equal(rudp_host_create(&c2, &other), 0);
	assert_int_equal(rudp_connect(other, addr, &op), 0);
	int connected = 0;
	for (uint64_t until = now_ms() + 4000; !connected && now_ms() < until;) {
		service_server(&p, 0);
		int n = rudp_service(other, ev, 4, 1);
		for (int i = 0; i < n; i++) {
			assert_int_not_equal(ev[i].type, RUDP_EVENT_DISCONNECT);
			connected |= ev[i].type == RUDP_EVENT_CONNECT;
		}
	}
	assert_true(connected);
	rudp_host_destroy(other);
	pair_free(&p);
}

/* 0 is no limit; the default is 256 MiB. */
static void test_budget_default_and_off(void **state)
{
	(void)state;
	rudp_config c;
	rudp_config_init(&c);
	assert_int_equal(c.max_host_memory, 256ull << 20);
	c.max_host_memory = 0;
	struct pair p;
	pair_connect(&p, &c, NULL);
	uint8_t msg[1000];
	for (uint32_t k = 0; k < 2000; k++) {
		test_msg_fill(msg, sizeof(msg), k);
		assert_int_equal(rudp_send(p.peer, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0), 0);
	}
	pair_free(&p);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_invalid_args),
		cmocka_unit_test(test_status_sized_prefix),
		cmocka_unit_test(test_stats_sized_prefix),
		cmocka_unit_test(test_status_live),
#if RUDP_HAVE_SEND_POLICY_API
		cmocka_unit_test(test_status_counts_policy),
#endif
		cmocka_unit_test(test_budget_would_block_then_writable),
		cmocka_unit_test(test_budget_refuses_new_connections),
		cmocka_unit_test(test_budget_default_and_off),
	};
	return test_backend_run_group(argc, argv, tests);
}
