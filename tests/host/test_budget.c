/* SPDX-License-Identifier: MIT */
/*
 * What the host memory budget (rudp_config.max_host_memory) counts and
 * refuses, over loopback, once per I/O backend: rudp_connect() past the
 * budget, messages a receiver holds for their turn on an ordered channel,
 * and rudp_send_many() bodies (once, however many queues share them). The
 * host's total is read where the budget reads it (budget_total).
 */
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
#include "host/netsim.h"
#include "rudp.h"
#include "test_backend.h"
#include "test_clock.h"
#include "test_host_pair.h"

#define NPEERS 4
#define MSG 1000

static uint64_t total(rudp_host *h)
{
	return budget_total((const struct rudp_host *)h);
}

/* Services h once; returns how many messages it handed out, with the
 * server's peers (CONNECT events) added to peers[*npeers]. */
static int service(rudp_host *h, int timeout_ms, rudp_peer **peers, int *npeers)
{
	rudp_event ev[32];
	int n = rudp_service(h, ev, 32, timeout_ms), got = 0;
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].type == RUDP_EVENT_RECEIVE)
			got++;
		else if (ev[i].type == RUDP_EVENT_CONNECT && peers)
			peers[(*npeers)++] = ev[i].peer;
		assert_int_not_equal(ev[i].type, RUDP_EVENT_DISCONNECT);
	}
	return got;
}

/* A server and a client host with n connections (socket_per_connect), the
 * client's budget client_budget; waits until both ends saw every connect
 * and both hosts' totals are 0 (nothing queued or uncollected). */
struct rig {
	rudp_host *server, *client;
	rudp_peer *at_client[NPEERS], *at_server[NPEERS];
	int nserver, nclient;
};

static void rig_up(struct rig *r, int n, uint64_t client_budget)
{
	rudp_config sc, cc;
	char addr[64];
	memset(r, 0, sizeof(*r));
	rudp_config_init(&sc);
	rudp_config_init(&cc);
	sc.max_pending_per_address = NPEERS; /* all from 127.0.0.1 */
	cc.socket_per_connect = 1;
	cc.max_host_memory = client_budget;
	test_host_pair_start(sc, &cc, &r->server, &r->client, &r->at_client[0]);
	assert_int_equal(rudp_host_local_address(r->server, addr, sizeof(addr)), 0);
	for (int i = 1; i < n; i++)
		assert_int_equal(rudp_connect(r->client, addr, &r->at_client[i]), 0);
	rudp_peer *ignored[NPEERS];
	for (uint64_t until = now_ms() + 3000; now_ms() < until;) {
		service(r->server, 0, r->at_server, &r->nserver);
		service(r->client, 1, ignored, &r->nclient);
		if (r->nserver == n && r->nclient == n && total(r->server) == 0 && total(r->client) == 0)
			break;
	}
	assert_int_equal(r->nserver, n);
	assert_int_equal(r->nclient, n);
	assert_int_equal(total(r->server), 0);
	assert_int_equal(total(r->client), 0);
}

static void rig_down(struct rig *r)
{
	rudp_host_destroy(r->client);
	rudp_host_destroy(r->server);
}

/* A host at its budget starts no new connection (RUDP_E_NOMEM, nothing
 * made); once its queue has drained, the same call starts one. */
static void test_connect_refused_past_budget(void **state)
{
	(void)state;
	struct rig r;
	rig_up(&r, 1, 16 << 10);
	uint8_t msg[MSG];
	memset(msg, 0x80, sizeof(msg));
	int sent = 0;
	while (rudp_send(r.at_client[0], msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0) == 0)
		assert_true(++sent < 100);
	assert_true(budget_over((const struct rudp_host *)r.client));

	rudp_peer *p = (rudp_peer *)1;
	assert_int_equal(rudp_connect(r.client, "127.0.0.1:9", &p), RUDP_E_NOMEM);
	assert_null(p);
	rudp_host_stats hs;
	assert_int_equal(rudp_host_stats_get(r.client, &hs), 0);
	assert_int_equal(hs.peers, 1);

	int got = 0;
	for (uint64_t until = now_ms() + 3000; (got < sent || total(r.client) > 0) && now_ms() < until;) {
		got += service(r.server, 0, NULL, NULL);
		service(r.client, 1, NULL, NULL);
	}
	assert_int_equal(got, sent);
	assert_int_equal(rudp_connect(r.client, "127.0.0.1:9", &p), 0);
	assert_non_null(p);
	rig_down(&r);
}

/* Messages that arrive ahead of a lost one on an ordered channel are held
 * by the receiver until it comes: the receiver's total grows by exactly
 * their bytes while they wait, and is back where it was once the gap is
 * filled and everything collected. False when the try could not set that
 * up: a client held up between its two flushes for longer than a loopback
 * round trip (a loaded machine, valgrind) sends a tail-loss probe of the
 * lost message in the second one, and then nothing waits. */
static bool order_hold_try(void)
{
	struct rig r;
	rig_up(&r, 1, 0);
	/* The client's network: the first message is lost, then nothing. */
	struct rudp_host *ch = (struct rudp_host *)r.client;
	rudp_sim_config lossy = {.loss_percent = 100.0f};
	assert_int_equal(netsim_init(&ch->sim, &lossy), 0);
	uint8_t msg[MSG];
	memset(msg, 0x80, sizeof(msg));
	assert_int_equal(rudp_send(r.at_client[0], msg, 100, RUDP_RELIABLE_ORDERED, 3), 0);
	assert_int_equal(rudp_flush(r.client), 0); /* lost on the way */
	assert_int_equal(ch->sim->dropped, 1);
	ch->sim->cfg.loss_percent = 0.0f;
	assert_int_equal(rudp_send(r.at_client[0], msg, 300, RUDP_RELIABLE_ORDERED, 3), 0);
	assert_int_equal(rudp_send(r.at_client[0], msg, 700, RUDP_RELIABLE_ORDERED, 3), 0);
	assert_true(rudp_flush(r.client) > 0);
	rudp_peer_stats ps;
	assert_int_equal(rudp_peer_stats_get(r.at_client[0], &ps), 0);
	if (ps.resent_probe + ps.resent_timeout + ps.resent_nack + ps.resent_inferred > 0) {
		rig_down(&r);
		return false;
	}

	/* Only the server runs: the client resends nothing meanwhile. */
	int got = 0;
	for (uint64_t until = now_ms() + 2000; total(r.server) == 0 && now_ms() < until;)
		got += service(r.server, 1, NULL, NULL);
	assert_int_equal(got, 0);
	assert_int_equal(total(r.server), 300 + 700);

	for (uint64_t until = now_ms() + 3000; (got < 3 || total(r.server) > 0) && now_ms() < until;) {
		got += service(r.server, 0, NULL, NULL);
		service(r.client, 1, NULL, NULL);
	}
	assert_int_equal(got, 3);
	assert_int_equal(total(r.server), 0);
	rig_down(&r);
	return true;
}

static void test_order_hold_counted(void **state)
{
	(void)state;
	int tries = 0;
	while (!order_hold_try())
		assert_true(++tries < 10);
}

/* A rudp_send_many() body is counted once, each peer's queue adding only
 * its frame record (what one rudp_send() adds beyond the message's bytes);
 * everything acknowledged, the total and the pool's live bytes are 0. */
static void test_send_many_body_counted_once(void **state)
{
	(void)state;
	struct rig r;
	rig_up(&r, NPEERS, 0);
	uint8_t msg[MSG];
	memset(msg, 0x80, sizeof(msg));
	assert_int_equal(rudp_send(r.at_client[0], msg, sizeof(msg), RUDP_RELIABLE, 0), 0);
	uint64_t record = total(r.client) - sizeof(msg);
	assert_true(record > 0 && record < sizeof(msg));
	assert_int_equal(
		rudp_send_many(r.client, r.at_client, NPEERS, msg, sizeof(msg), RUDP_RELIABLE, 0, 0, NULL),
		NPEERS);
	assert_int_equal(total(r.client), sizeof(msg) + record + sizeof(msg) + NPEERS * record);

	int got = 0;
	for (uint64_t until = now_ms() + 3000;
	     (got < 1 + NPEERS || total(r.client) > 0) && now_ms() < until;) {
		got += service(r.server, 0, NULL, NULL);
		service(r.client, 1, NULL, NULL);
	}
	assert_int_equal(got, 1 + NPEERS);
	assert_int_equal(total(r.client), 0);
	assert_int_equal(((struct rudp_host *)r.client)->shared_bodies.live_bytes, 0);
	rig_down(&r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_refused_past_budget),
		cmocka_unit_test(test_order_hold_counted),
		cmocka_unit_test(test_send_many_body_counted_once),
	};
	return test_backend_run_group(argc, argv, tests);
}
