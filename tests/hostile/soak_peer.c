/* SPDX-License-Identifier: MIT */
/*
 * A verifying traffic peer for the fault tests (public API only).
 *
 *   soak_peer server ADDR:PORT
 *       echoes every message on its reliability and channel, forever.
 *   soak_peer client ADDR:PORT SECONDS
 *       sends reliable-ordered messages on 8 channels for SECONDS, keeping
 *       up to 256 unanswered, sizes 16 B..20 KiB (the large ones split);
 *       each echo must come back on its channel with the next sequence
 *       number of that channel and intact content (XXH3). Then drains.
 *       Exit 0 only with zero lost, duplicated, misordered or corrupt.
 *   soak_peer restart ADDR:PORT TIMEOUT_MS
 *       like client, but the server is expected to be killed and restarted
 *       once: the disconnect must be seen within TIMEOUT_MS (+500 ms) of the
 *       last message heard, and the client must reconnect (retrying) and
 *       carry 200 more verified messages. Exit 0 when all of that held.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "rudp.h"
#include "test_clock.h"

#define CHANNELS 8
#define OUTSTANDING 256
#define HDR 17 /* 0xfe, channel, seq (4), len (4), hash (8) -- hash excludes itself */

static int run_server(const char *bind)
{
	rudp_config cfg;
	rudp_host *h;
	rudp_event ev[128];
	rudp_config_init(&cfg);
	cfg.bind_address = bind;
	int r = rudp_host_create(&cfg, &h);
	if (r != 0) {
		fprintf(stderr, "server: %s\n", rudp_strerror(r));
		return 1;
	}
	printf("listening on %s\n", bind);
	fflush(stdout);
	for (;;) {
		int n = rudp_service(h, ev, 128, 100);
		for (int i = 0; i < n; i++) {
			if (ev[i].type == RUDP_EVENT_RECEIVE)
				rudp_send(ev[i].peer, ev[i].data, ev[i].len, ev[i].reliability,
					  ev[i].channel);
		}
	}
}

struct client {
	rudp_host *h;
	rudp_peer *peer;
	const char *addr;
	bool connected;
	int disconnect_reason;
	uint64_t last_heard_ms;
	uint32_t tx_seq[CHANNELS], rx_seq[CHANNELS];
	uint64_t sent, received, bytes, errors;
	uint64_t rng;
	uint8_t buf[20480];
};

static uint32_t rnd(struct client *c, uint32_t n)
{
	c->rng = c->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(c->rng >> 33) % n;
}

static void make_msg(struct client *c, uint8_t ch, uint32_t seq, uint32_t len)
{
	uint8_t *b = c->buf;
	b[0] = 0xfe;
	b[1] = ch;
	memcpy(b + 2, &seq, 4);
	memcpy(b + 6, &len, 4);
	for (uint32_t i = HDR; i < len; i++)
		b[i] = (uint8_t)(seq * 31u + i * 7u + ch);
	uint64_t hash = XXH3_64bits(b + HDR, len - HDR) ^ XXH3_64bits(b, 10);
	memcpy(b + 10, &hash, 7);
}

static void check_msg(struct client *c, const rudp_event *e)
{
	const uint8_t *b = e->data;
	uint32_t seq, len;
	uint64_t hash;
	if (e->len < HDR || b[0] != 0xfe || b[1] >= CHANNELS || e->channel != b[1] ||
	    e->reliability != RUDP_RELIABLE_ORDERED) {
		c->errors++;
		return;
	}
	memcpy(&seq, b + 2, 4);
	memcpy(&len, b + 6, 4);
	hash = XXH3_64bits(b + HDR, e->len - HDR) ^ XXH3_64bits(b, 10);
	if (len != e->len || memcmp(&hash, b + 10, 7) != 0) {
		if (c->errors++ < 5)
			fprintf(stderr, "corrupt message on channel %u\n", b[1]);
		return;
	}
	if (seq != c->rx_seq[b[1]]) {
		if (c->errors++ < 5)
			fprintf(stderr, "channel %u: got seq %u, expected %u (%s)\n", b[1], seq,
				c->rx_seq[b[1]], seq < c->rx_seq[b[1]] ? "duplicate or reordered" : "lost");
		c->rx_seq[b[1]] = seq + 1;
		return;
	}
	c->rx_seq[b[1]]++;
	c->received++;
	c->bytes += e->len;
}

static void pump(struct client *c, int wait_ms)
{
	rudp_event ev[128];
	int n = rudp_service(c->h, ev, 128, wait_ms);
	for (int i = 0; i < n; i++) {
		switch (ev[i].type) {
		case RUDP_EVENT_CONNECT: c->connected = true; break;
		case RUDP_EVENT_RECEIVE:
			c->last_heard_ms = now_ms();
			check_msg(c, &ev[i]);
			break;
		case RUDP_EVENT_DISCONNECT:
			c->connected = false;
			c->peer = NULL;
			c->disconnect_reason = ev[i].reason;
			break;
		}
	}
}

static bool connect_within(struct client *c, uint64_t ms)
{
	uint64_t until = now_ms() + ms;
	c->disconnect_reason = 0;
	if (rudp_connect(c->h, c->addr, &c->peer) != 0)
		return false;
	while (!c->connected && !c->disconnect_reason && now_ms() < until)
		pump(c, 10);
	return c->connected;
}

/* Sends while fewer than OUTSTANDING are unanswered; stop_after_ms == 0: until `total` sent. */
static void traffic(struct client *c, uint64_t until_ms, uint64_t total)
{
	uint64_t start = now_ms();
	while (c->connected && (until_ms ? now_ms() < until_ms : c->sent < total)) {
		/* Timed runs are paced at 10,000 messages/s: a soak is about time
		 * and faults, not about taking both CI cores for a minute. */
		uint64_t allowed = until_ms ? (now_ms() - start + 1) * 10 : UINT64_MAX;
		while (c->connected && c->sent - c->received - c->errors < OUTSTANDING && c->sent < allowed &&
		       (until_ms || c->sent < total)) {
			uint8_t ch = (uint8_t)rnd(c, CHANNELS);
			uint32_t len = rnd(c, 50) == 0 ? 2000 + rnd(c, 18000) : HDR + rnd(c, 1200);
			make_msg(c, ch, c->tx_seq[ch], len);
			int r = rudp_send(c->peer, c->buf, len, RUDP_RELIABLE_ORDERED, ch);
			if (r == RUDP_E_QUEUE_FULL)
				break;
			if (r != 0) {
				fprintf(stderr, "send: %s\n", rudp_strerror(r));
				c->errors++;
				return;
			}
			c->tx_seq[ch]++;
			c->sent++;
		}
		pump(c, 1);
	}
}

static bool drain(struct client *c, uint64_t ms)
{
	uint64_t until = now_ms() + ms;
	while (c->connected && c->received + c->errors < c->sent && now_ms() < until)
		pump(c, 5);
	return c->received == c->sent && c->errors == 0;
}

static int run_client(const char *addr, int seconds)
{
	struct client c = {.addr = addr, .rng = 0x5eed};
	rudp_config cfg;
	rudp_config_init(&cfg);
	cfg.timeout_ms = 20000; /* a lossy namespace: do not give up early */
	if (rudp_host_create(&cfg, &c.h) != 0 || !connect_within(&c, 10000)) {
		fprintf(stderr, "client: could not connect to %s\n", addr);
		return 1;
	}
	uint64_t start = now_ms();
	traffic(&c, start + (uint64_t)seconds * 1000, 0);
	bool ok = drain(&c, 60000);
	rudp_peer_stats ps;
	if (c.peer && rudp_peer_stats_get(c.peer, &ps) == 0)
		printf("peer: rtt %u us, %llu datagrams sent, %llu frames retransmitted, %llu duplicates "
		       "dropped\n",
		       ps.rtt_us, (unsigned long long)ps.datagrams_sent,
		       (unsigned long long)ps.frames_retransmitted,
		       (unsigned long long)ps.duplicates_dropped);
	printf("soak: %llu s, %llu messages sent, %llu verified (%llu bytes), %llu errors, connected %s\n",
	       (unsigned long long)((now_ms() - start) / 1000), (unsigned long long)c.sent,
	       (unsigned long long)c.received, (unsigned long long)c.bytes, (unsigned long long)c.errors,
	       c.connected ? "yes" : "no");
	rudp_host_destroy(c.h);
	return ok && c.sent > 0 ? 0 : 1;
}

static int run_restart(const char *addr, int timeout_ms)
{
	struct client c = {.addr = addr, .rng = 0xbeef};
	rudp_config cfg;
	rudp_config_init(&cfg);
	cfg.timeout_ms = (uint32_t)timeout_ms;
	if (rudp_host_create(&cfg, &c.h) != 0 || !connect_within(&c, 5000)) {
		fprintf(stderr, "restart: could not connect to %s\n", addr);
		return 1;
	}
	printf("connected\n");
	fflush(stdout);
	/* Traffic until the server dies (the script kills it). */
	traffic(&c, now_ms() + 60000, 0);
	if (c.connected) {
		fprintf(stderr, "restart: the server never went away\n");
		return 1;
	}
	uint64_t noticed = now_ms() - c.last_heard_ms;
	printf("disconnect seen %llu ms after the last message (timeout %d ms), reason: %s\n",
	       (unsigned long long)noticed, timeout_ms, rudp_reason_string(c.disconnect_reason));
	fflush(stdout);
	bool ok = c.disconnect_reason == RUDP_REASON_TIMEOUT && noticed <= (uint64_t)timeout_ms + 500;
	/* Reconnect, retrying while the server restarts. */
	uint64_t t0 = now_ms();
	int attempts = 0;
	while (!c.connected && now_ms() - t0 < 20000) {
		attempts++;
		if (!connect_within(&c, 2000))
			pump(&c, 100);
	}
	if (!c.connected) {
		fprintf(stderr, "restart: could not reconnect\n");
		return 1;
	}
	printf("reconnected after %llu ms (%d attempts)\n", (unsigned long long)(now_ms() - t0), attempts);
	/* The new server knows nothing of the old session: start afresh. */
	memset(c.tx_seq, 0, sizeof(c.tx_seq));
	memset(c.rx_seq, 0, sizeof(c.rx_seq));
	c.sent = c.received = 0;
	uint64_t errors_before = c.errors;
	c.errors = 0;
	traffic(&c, 0, 200);
	ok = drain(&c, 10000) && ok;
	printf("after reconnect: %llu sent, %llu verified, %llu errors (%llu in flight when the server "
	       "died)\n",
	       (unsigned long long)c.sent, (unsigned long long)c.received, (unsigned long long)c.errors,
	       (unsigned long long)errors_before);
	rudp_host_destroy(c.h);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "server"))
		return run_server(argv[2]);
	if (argc >= 4 && !strcmp(argv[1], "client"))
		return run_client(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "restart"))
		return run_restart(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: soak_peer server ADDR:PORT | client ADDR:PORT SECONDS | restart ADDR:PORT "
			"TIMEOUT_MS\n");
	return 2;
}
