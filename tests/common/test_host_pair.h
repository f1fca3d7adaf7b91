/* SPDX-License-Identifier: MIT */
/*
 * The start of a loopback client-server pair for the host tests: a server
 * bound to 127.0.0.1 on an ephemeral port, a client, and its connect
 * call. Each test waits for the connection its own way (what it services
 * and checks on the way differs).
 */
#ifndef RUDP_TEST_HOST_PAIR_H
#define RUDP_TEST_HOST_PAIR_H

#include "rudp.h"

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

#endif
