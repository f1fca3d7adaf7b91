/* SPDX-License-Identifier: MIT */
/*
 * A loopback client-server pair for the host tests: a server bound to
 * 127.0.0.1 on an ephemeral port, a client and its connect call; the wait
 * for the client's CONNECT (the test services its server its own way on
 * the way); and the numbered messages the pair's tests send and check.
 * Include after cmocka.h.
 */
#ifndef RUDP_TEST_HOST_PAIR_H
#define RUDP_TEST_HOST_PAIR_H

#include <stdint.h>
#include <string.h>

#include "rudp.h"
#include "test_clock.h"

static inline void test_host_pair_start(rudp_config server_cfg, const rudp_config *client_cfg,
					rudp_host **server, rudp_host **client, rudp_peer **peer)
{
	char addr[64];

	server_cfg.bind_address = "127.0.0.1:0";
	assert_int_equal(rudp_host_create(&server_cfg, server), 0);
	assert_int_equal(rudp_host_local_address(*server, addr, sizeof(addr)), 0);
	assert_int_equal(rudp_host_create(client_cfg, client), 0);
	assert_int_equal(rudp_connect(*client, addr, peer), 0);
}

/* Services the client until its CONNECT event (any other event it gets
 * first fails the test), calling serve(ctx) before each 1 ms wait so the
 * server answers; at most 4 s. */
static inline void test_host_pair_wait_connect(rudp_host *client, void (*serve)(void *ctx), void *ctx)
{
	rudp_event ev;

	for (uint64_t until = now_ms() + 4000; now_ms() < until;) {
		serve(ctx);
		int n = rudp_service(client, &ev, 1, 1);
		assert_true(n >= 0);
		if (n == 1) {
			assert_int_equal(ev.type, RUDP_EVENT_CONNECT);
			return;
		}
	}
	fail_msg("no connection");
}

static inline void test_host_pair_destroy(rudp_host *server, rudp_host *client)
{
	rudp_host_destroy(client);
	rudp_host_destroy(server);
}

/* A numbered test message of size bytes (at least 5): 0xfe (no control
 * id), the id (4 bytes, host order), then its low byte to the end, so a
 * wrong or torn message shows at either end. */
static inline void test_msg_fill(uint8_t *msg, size_t size, uint32_t id)
{
	memset(msg, (int)(id & 0xff), size);
	msg[0] = 0xfe;
	memcpy(msg + 1, &id, 4);
}

static inline uint32_t test_msg_id(const uint8_t *msg)
{
	uint32_t id;

	memcpy(&id, msg + 1, 4);
	return id;
}

#endif
