/* SPDX-License-Identifier: MIT */
/*
 * many_clients ADDR:PORT CONNECTIONS MESSAGES
 *
 * Opens CONNECTIONS connections to an echo server (on loopback), each from
 * its own host and socket on one of 64 addresses 127.0.1.x (so the server's
 * SO_REUSEPORT group can spread them by source address and port), sends MESSAGES reliable-ordered messages on
 * each with rudp_send_batch, and checks every echo's connection, id, order and XXH3. Prints "verified N/N
 * echoes over C connections"; exits 0 only when all were verified.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "rudp.h"
#include "test_clock.h"

enum { SIZE = 48, BATCH = 8 };

struct conn {
	rudp_host *host;
	rudp_peer *peer;
	int connected, closed;
	uint32_t sent, verified;
};

/* 0xfe, connection index, message id, then bytes derived from both. */
static void fill(uint8_t *b, uint32_t conn, uint32_t id)
{
	b[0] = 0xfe;
	memcpy(b + 1, &conn, 4);
	memcpy(b + 5, &id, 4);
	uint64_t x = 0x9e3779b97f4a7c15ull * (((uint64_t)conn << 32 | id) + 1);
	for (size_t i = 9; i < SIZE; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: many_clients ADDR:PORT CONNECTIONS MESSAGES\n");
		return 2;
	}
	const char *addr = argv[1];
	uint32_t nconn = (uint32_t)strtoul(argv[2], NULL, 10), count = (uint32_t)strtoul(argv[3], NULL, 10);
	if (nconn == 0 || nconn > 4096 || count == 0) {
		fprintf(stderr, "many_clients: bad arguments\n");
		return 2;
	}
	struct conn *c = calloc(nconn, sizeof(*c));
	if (!c)
		return 1;
	rudp_config cfg;
	rudp_config_init(&cfg);
	/* Hundreds of hosts in one process: keep each one small. */
	cfg.io.batch = 8;
	cfg.io.socket_rcvbuf = cfg.io.socket_sndbuf = 256 * 1024;
	cfg.max_peers = 1;
	for (uint32_t i = 0; i < nconn; i++) {
		/* Spread the clients over 64 loopback addresses, as real clients
		 * come from many: the server's per-address handshake limits are
		 * for floods from one address, not for this test. */
		char local[32];
		snprintf(local, sizeof(local), "127.0.1.%u:0", 1 + i % 64);
		cfg.bind_address = local;
		int r = rudp_host_create(&cfg, &c[i].host);
		if (r == 0)
			r = rudp_connect(c[i].host, addr, &c[i].peer);
		if (r != 0) {
			fprintf(stderr, "many_clients: connection %u: %s\n", i, rudp_strerror(r));
			return 1;
		}
	}
	uint8_t msgs[BATCH][SIZE], expect[SIZE];
	rudp_message out[BATCH];
	rudp_event ev[32];
	uint64_t total = (uint64_t)nconn * count, verified = 0;
	const char *failure = NULL;
	char why[200];
	for (uint64_t until = now_ms() + 60000; verified < total && !failure && now_ms() < until;) {
		for (uint32_t i = 0; i < nconn && !failure; i++) {
			struct conn *k = &c[i];
			if (k->connected && !k->closed && k->sent < count && k->sent - k->verified < 16) {
				uint32_t n = 0;
				for (; n < BATCH && k->sent + n < count; n++) {
					fill(msgs[n], i, k->sent + n);
					out[n] = (rudp_message){msgs[n], SIZE, RUDP_RELIABLE_ORDERED, 0};
				}
				int err, q = rudp_send_batch(k->peer, out, n, &err);
				if (q > 0)
					k->sent += (uint32_t)q;
			}
			int n = rudp_service(k->host, ev, 32, 0);
			for (int e = 0; e < n && !failure; e++) {
				if (ev[e].type == RUDP_EVENT_CONNECT) {
					k->connected = 1;
				} else if (ev[e].type == RUDP_EVENT_DISCONNECT) {
					snprintf(why, sizeof(why), "connection %u lost: %s", i,
						 rudp_reason_string(ev[e].reason));
					failure = why;
				} else {
					fill(expect, i, k->verified);
					if (ev[e].len != SIZE ||
					    XXH3_64bits(ev[e].data, SIZE) != XXH3_64bits(expect, SIZE)) {
						snprintf(why, sizeof(why),
							 "connection %u: echo %u wrong or out of order", i,
							 k->verified);
						failure = why;
					}
					k->verified++;
					verified++;
				}
			}
		}
	}
	/* Close politely so the server sees every disconnect. */
	for (uint32_t i = 0; i < nconn; i++)
		rudp_disconnect(c[i].peer);
	for (uint64_t until = now_ms() + 2000; now_ms() < until;) {
		int open = 0;
		for (uint32_t i = 0; i < nconn; i++) {
			if (c[i].closed)
				continue;
			int n = rudp_service(c[i].host, ev, 32, 0);
			for (int e = 0; e < n; e++)
				if (ev[e].type == RUDP_EVENT_DISCONNECT)
					c[i].closed = 1;
			open += !c[i].closed;
		}
		if (!open)
			break;
	}
	for (uint32_t i = 0; i < nconn; i++)
		rudp_host_destroy(c[i].host);
	free(c);
	printf("verified %" PRIu64 "/%" PRIu64 " echoes over %u connections\n", verified, total, nconn);
	if (failure)
		fprintf(stderr, "many_clients: %s\n", failure);
	return !failure && verified == total ? 0 : 1;
}
