/* SPDX-License-Identifier: MIT */
/*
 * rudp_send_many over loopback, once per I/O backend: a server sends one
 * message to n connected clients (one host, a socket per connection);
 * every client gets exactly one copy, errors[] names the bad peers, the
 * shared body stays alive until the last queue lets go of it (acknowledged,
 * sent, reset peer, host destroyed: ASan and valgrind see any leak), a peer
 * with a send policy gets its own copy, and lifetimes are checked.
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

#include <cmocka.h>

#include "host/host_internal.h"
#include "rudp.h"
#include "test_backend.h"
#include "test_clock.h"

#define NPEERS 8

struct fleet {
	rudp_host *server, *clients;
	rudp_peer *at_server[NPEERS]; /* the server's peers, in connect order */
	rudp_peer *at_client[NPEERS];
	int connected;
	int got[NPEERS]; /* messages each client received */
	uint8_t last[NPEERS][64];
};

static int client_index(const struct fleet *f, const rudp_peer *p)
{
	for (int i = 0; i < NPEERS; i++)
		if (f->at_client[i] == p)
			return i;
	fail_msg("unknown client peer");
	return -1;
}

static void pump(struct fleet *f, int rounds)
{
	rudp_event ev[64];
	for (int r = 0; r < rounds; r++) {
		int n = rudp_service(f->server, ev, 64, 0);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].type == RUDP_EVENT_CONNECT)
				f->at_server[f->connected++] = ev[i].peer;
			assert_int_not_equal(ev[i].type, RUDP_EVENT_RECEIVE);
		}
		n = rudp_service(f->clients, ev, 64, 1);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].type != RUDP_EVENT_RECEIVE)
				continue;
			int k = client_index(f, ev[i].peer);
			f->got[k]++;
			memcpy(f->last[k], ev[i].data, ev[i].len < 64 ? ev[i].len : 64);
		}
	}
}

static void fleet_up(struct fleet *f)
{
	rudp_config sc, cc;
	char addr[64];
	memset(f, 0, sizeof(*f));
	rudp_config_init(&sc);
	rudp_config_init(&cc);
	sc.bind_address = "127.0.0.1:0";
	sc.max_pending_per_address = NPEERS; /* all from 127.0.0.1 */
	cc.socket_per_connect = 1;
	assert_int_equal(rudp_host_create(&sc, &f->server), 0);
	assert_int_equal(rudp_host_local_address(f->server, addr, sizeof(addr)), 0);
	assert_int_equal(rudp_host_create(&cc, &f->clients), 0);
	for (int i = 0; i < NPEERS; i++)
		assert_int_equal(rudp_connect(f->clients, addr, &f->at_client[i]), 0);
	for (uint64_t until = now_ms() + 5000; f->connected < NPEERS && now_ms() < until;)
		pump(f, 1);
	assert_int_equal(f->connected, NPEERS);
}

static void fleet_down(struct fleet *f)
{
	rudp_host_destroy(f->clients);
	rudp_host_destroy(f->server);
}

static uint32_t live_bodies(const struct fleet *f)
{
	return ((const struct rudp_host *)f->server)->shared_bodies.live;
}

/* Pumps until every client has want messages (or 3 s), then a little more
 * so duplicates would show. */
static void pump_until(struct fleet *f, int want)
{
	for (uint64_t until = now_ms() + 3000; now_ms() < until;) {
		int done = 1;
		for (int i = 0; i < NPEERS; i++)
			done &= f->got[i] >= want;
		if (done)
			break;
		pump(f, 1);
	}
	pump(f, 20);
}

static void test_each_gets_one_copy(void **state)
{
	(void)state;
	struct fleet f;
	fleet_up(&f);
	const uint8_t msg[] = "\xfesnapshot 1";
	int errors[NPEERS];
	memset(errors, 0x55, sizeof(errors));
	assert_int_equal(rudp_send_many(f.server, f.at_server, NPEERS, msg, sizeof(msg),
					RUDP_RELIABLE_ORDERED, 3, 0, errors),
			 NPEERS);
	for (int i = 0; i < NPEERS; i++)
		assert_int_equal(errors[i], 0);
	assert_int_equal(live_bodies(&f), 1); /* one body for all eight */
	pump_until(&f, 1);
	for (int i = 0; i < NPEERS; i++) {
		assert_int_equal(f.got[i], 1);
		assert_memory_equal(f.last[i], msg, sizeof(msg));
	}
	/* Every ACK is in: the body went back to the pool. */
	for (uint64_t until = now_ms() + 2000; live_bodies(&f) != 0 && now_ms() < until;)
		pump(&f, 1);
	assert_int_equal(live_bodies(&f), 0);

	/* Unreliable sequenced with a lifetime, errors NULL. */
	const uint8_t snap[] = "\xfesnapshot 2";
	assert_int_equal(rudp_send_many(f.server, f.at_server, NPEERS, snap, sizeof(snap),
					RUDP_UNRELIABLE_SEQUENCED, 1, 1000, NULL),
			 NPEERS);
	pump_until(&f, 2);
	for (int i = 0; i < NPEERS; i++) {
		assert_int_equal(f.got[i], 2);
		assert_memory_equal(f.last[i], snap, sizeof(snap));
	}
	assert_int_equal(live_bodies(&f), 0);
	rudp_peer_stats st;
	assert_int_equal(rudp_peer_stats_get(f.at_server[0], &st), 0);
	assert_int_equal(st.unreliable_expired, 0);
	assert_int_equal(st.messages_sent, 2);
	fleet_down(&f);
}

static void test_errors_per_peer(void **state)
{
	(void)state;
	struct fleet f;
	fleet_up(&f);
	rudp_peer *peers[NPEERS + 2];
	int errors[NPEERS + 2];
	for (int i = 0; i < NPEERS; i++)
		peers[i] = f.at_server[i];
	peers[NPEERS] = NULL;
	peers[NPEERS + 1] = f.at_client[0]; /* another host's peer */
	const uint8_t msg[] = "\xfehello";
	assert_int_equal(
		rudp_send_many(f.server, peers, NPEERS + 2, msg, sizeof(msg), RUDP_RELIABLE, 0, 0, errors),
		NPEERS);
	for (int i = 0; i < NPEERS; i++)
		assert_int_equal(errors[i], 0);
	assert_int_equal(errors[NPEERS], RUDP_E_INVALID);
	assert_int_equal(errors[NPEERS + 1], RUDP_E_INVALID);
	pump_until(&f, 1);
	for (int i = 0; i < NPEERS; i++)
		assert_int_equal(f.got[i], 1);

	/* Errors common to all: every errors[i], nothing queued. */
	assert_int_equal(
		rudp_send_many(f.server, peers, NPEERS, msg, sizeof(msg), RUDP_RELIABLE, 0, 100, errors), 0);
	for (int i = 0; i < NPEERS; i++)
		assert_int_equal(errors[i], RUDP_E_INVALID);
	const uint8_t reserved[] = "\x10no";
	assert_int_equal(rudp_send_many(f.server, peers, NPEERS, reserved, sizeof(reserved), RUDP_UNRELIABLE,
					0, 0, errors),
			 0);
	for (int i = 0; i < NPEERS; i++)
		assert_int_equal(errors[i], RUDP_E_RESERVED_ID);
	assert_int_equal(rudp_send_many(NULL, peers, NPEERS, msg, sizeof(msg), RUDP_UNRELIABLE, 0, 0, errors),
			 RUDP_E_INVALID);
	assert_int_equal(rudp_send_many(f.server, NULL, 1, msg, sizeof(msg), RUDP_UNRELIABLE, 0, 0, errors),
			 RUDP_E_INVALID);
	assert_int_equal(rudp_send_many(f.server, peers, 0, msg, sizeof(msg), RUDP_UNRELIABLE, 0, 0, errors),
			 0);
	assert_int_equal(rudp_send_expiring(f.at_server[0], msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0, 10),
			 RUDP_E_INVALID);
	assert_int_equal(rudp_send_expiring(f.at_server[0], msg, sizeof(msg), RUDP_UNRELIABLE, 0, 3600001),
			 RUDP_E_INVALID);
	assert_int_equal(live_bodies(&f), 0);
	pump(&f, 20);
	for (int i = 0; i < NPEERS; i++)
		assert_int_equal(f.got[i], 1);
	fleet_down(&f);
}

/* A reset peer lets go of its reference, the others keep the body until
 * they are done (the reset peer's client gets nothing); a peer with a send policy stages a copy of its own. A
 * host destroyed with bodies queued frees them (the leak checkers see it). */
static void test_body_held_until_released(void **state)
{
	(void)state;
	struct fleet f;
	fleet_up(&f);
#if RUDP_HAVE_SEND_POLICY
	rudp_send_options so;
	rudp_send_options_init(&so);
	assert_int_equal(rudp_peer_set_send_options(f.at_server[1], &so), 0);
#endif
	const uint8_t msg[] = "\xfeheld";
	assert_int_equal(rudp_send_many(f.server, f.at_server, NPEERS, msg, sizeof(msg),
					RUDP_RELIABLE_ORDERED, 0, 0, NULL),
			 NPEERS);
	const struct shared_body *body = ((const struct rudp_host *)f.server)->shared_bodies.free_list;
	assert_null(body); /* in use, not in the pool */
	assert_int_equal(live_bodies(&f), 1);
	rudp_peer_reset(f.at_server[0]);
	assert_int_equal(live_bodies(&f), 1);
	/* Client and server peers are not in the same order: count. */
	int ones = 0;
	for (uint64_t until = now_ms() + 3000; ones < NPEERS - 1 && now_ms() < until;) {
		pump(&f, 1);
		ones = 0;
		for (int i = 0; i < NPEERS; i++)
			ones += f.got[i] == 1;
	}
	pump(&f, 20);
	ones = 0;
	for (int i = 0; i < NPEERS; i++) {
		assert_in_range(f.got[i], 0, 1);
		ones += f.got[i];
	}
	assert_int_equal(ones, NPEERS - 1);
	for (uint64_t until = now_ms() + 2000; live_bodies(&f) != 0 && now_ms() < until;)
		pump(&f, 1);
	assert_int_equal(live_bodies(&f), 0);
	/* Queued and never flushed when the host goes. */
	assert_int_equal(rudp_send_many(f.server, f.at_server + 1, NPEERS - 1, msg, sizeof(msg),
					RUDP_RELIABLE, 0, 0, NULL),
			 NPEERS - 1);
	assert_int_equal(live_bodies(&f), 1);
	fleet_down(&f);
}

int main(int argc, char **argv)
{
	int skip = test_backend_from_args(argc, argv);
	if (skip)
		return skip;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_gets_one_copy),
		cmocka_unit_test(test_errors_per_peer),
		cmocka_unit_test(test_body_held_until_released),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
