/* SPDX-License-Identifier: MIT */
/*
 * interop_rudp: the librudp side of one cell of the interop matrix
 * (tests/interop/run_cell.sh starts it against a RakNet peer nobody here
 * wrote: jsp-raknet or raknet-node, driven by peer.js).
 *
 *   interop_rudp server SCENARIO [options]          binds 127.0.0.1:0, prints
 *                                                   "listening PORT GUID"
 *   interop_rudp client SCENARIO PORT [options]     connects to 127.0.0.1:PORT
 *
 * Scenarios (peer.js implements the other half of each; the message formats
 * are shared with it, see "Messages" below):
 *   ping        unconnected ping/pong with application pong data
 *   handshake   handshake and MTU agreement; MTU-sized and split messages
 *   bulk        10,000 reliable-ordered messages of 1 B .. 64 KiB, each way
 *   unreliable  unreliable messages both ways, counted and checked
 *   keepalive   an idle connection survives 3x timeout_ms on connected pings
 *   disc-rudp   librudp closes gracefully, the peer sees it
 *   disc-peer   the peer closes gracefully, librudp reports it (not a timeout)
 *   kill        the peer process is SIGKILLed; librudp reports a timeout
 *               within timeout_ms (+ scheduling slack)
 *
 * Options:
 *   --protocol V       RakNet protocol a client sends (default 11)
 *   --mtu N            cfg.mtu (default 1492)
 *   --expect-mtu N     the negotiated MTU must be N
 *   --timeout MS       cfg.timeout_ms (keepalive is a quarter of it)
 *   --idle MS          keepalive: how long the connection stays idle
 *   --rto-min MS       cfg.rto_min_ms (default: the library's)
 *   --redundant MASK   rudp_peer_set_redundant_channels(peer, MASK) once
 *                      connected: every reliable-ordered message goes twice
 *                      with one reliable index, and the peer must deliver it
 *                      once (bulk: a copy must have been sent)
 *   --pid-file PATH    kill: file holding the peer's process id
 *   --expect-pong TEXT ping (client): the pong data must contain TEXT
 *   --expect-guid G    ping (client): the pong must carry server guid G
 *   --peer-no-unreliable REASON
 *                      unreliable: the peer cannot send unreliable messages;
 *                      only librudp -> peer is checked and REASON is printed
 *   --deadline MS      give up after MS (default 60000)
 *
 * Exit status 0 when the cell passed, 1 with "FAIL: reason" on stderr.
 *
 * Messages: every application message starts with 0xfe (raknet-node passes
 * on nothing else, jsp-raknet nothing below 0x80). In "bulk" message i is
 * bulk_size(i) bytes of bulk_byte(i, j); in the other scenarios the second
 * byte is a tag: 'H' hello, 'M' MTU report (u16 LE MTU, then pattern), 'B'
 * big split message, 'U' unreliable (u32 LE id, then pattern), 'E' end of an
 * unreliable burst (u32 LE count, u8 flags: 1 = this side cannot send
 * unreliable), 'R' report (u32 LE count received), 'A' after the idle time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rudp.h"

#define BULK_COUNT 10000
#define BULK_MAX 65536
/* Messages a bulk client keeps unechoed: a flow control the peers can
 * follow (jsp-raknet resends only on NACK, so it must never be pushed
 * beyond what the receiver takes at once). */
#define BULK_OUTSTANDING 64
#define UNREL_COUNT 200
#define UNREL_MIN_PERCENT 90
/* Time left for unreliable stragglers after the reliable 'E' marker. */
#define UNREL_SETTLE_MS 200
/* A fixed server guid, so that the peer can check the one in the pong. */
#define SERVER_GUID UINT64_C(0x72756470696e7472)

enum scenario {
	SC_PING,
	SC_HANDSHAKE,
	SC_BULK,
	SC_UNRELIABLE,
	SC_KEEPALIVE,
	SC_DISC_RUDP,
	SC_DISC_PEER,
	SC_KILL
};
static const char *const scenario_names[] = {"ping",      "handshake", "bulk",      "unreliable",
					     "keepalive", "disc-rudp", "disc-peer", "kill"};

struct opts {
	bool server;
	enum scenario sc;
	unsigned port;
	unsigned protocol, mtu, expect_mtu, timeout_ms, idle_ms, deadline_ms, rto_min_ms;
	uint32_t redundant; /* channel mask, 0: off */
	const char *pid_file, *expect_pong, *peer_no_unreliable;
	uint64_t expect_guid; /* 0: not checked */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *role_name;

static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("interop_rudp %s: ", role_name);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static _Noreturn void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fflush(stdout);
	fprintf(stderr, "interop_rudp %s: FAIL: ", role_name);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

/* The bulk stream; peer.js computes the same sizes and bytes. Sizes cover
 * 1 B (the first message: only the 0xfe id), many small messages that get
 * coalesced, split ones of 1..5 KiB around the MTU, and three of 20..64 KiB
 * including exactly 64 KiB (message 1000). The mix is light on bytes
 * (~1 MB each way) because jsp-raknet handles at most 4 datagrams per 10 ms
 * tick; the counts, not the volume, are what this cell is about. */
static uint32_t bulk_size(uint32_t i)
{
	if (i % 4000 == 1000)
		return BULK_MAX - i / 4000 * 22000;
	if (i % 100 == 50)
		return 1000 + (i * 37) % 4200;
	return 1 + (i * 13) % 100;
}

static uint8_t bulk_byte(uint32_t i, uint32_t j)
{
	return j == 0 ? 0xfe : (uint8_t)((i * 131 + j * 7 + (j >> 8)) & 0xff);
}

static void bulk_fill(uint32_t i, uint8_t *buf)
{
	uint32_t n = bulk_size(i);
	for (uint32_t j = 0; j < n; j++)
		buf[j] = bulk_byte(i, j);
}

static bool bulk_check(uint32_t i, const uint8_t *p, size_t n)
{
	if (n != bulk_size(i))
		return false;
	for (uint32_t j = 0; j < n; j++)
		if (p[j] != bulk_byte(i, j))
			return false;
	return true;
}

/* Pattern bytes after a tagged header; shared with peer.js. */
static uint8_t pattern_byte(uint32_t seed, uint32_t j)
{
	return (uint8_t)((seed * 17 + j * 11 + 5) & 0xff);
}

static void put_u32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A tagged message: 0xfe, tag, `head` bytes, then pattern(seed) up to len. */
static size_t make_tagged(uint8_t *buf, size_t len, uint8_t tag, const uint8_t *head, size_t head_len,
			  uint32_t seed)
{
	buf[0] = 0xfe;
	buf[1] = tag;
	if (head_len)
		memcpy(buf + 2, head, head_len);
	for (size_t j = 2 + head_len; j < len; j++)
		buf[j] = pattern_byte(seed, (uint32_t)j);
	return len < 2 + head_len ? 2 + head_len : len;
}

static bool check_pattern(const uint8_t *p, size_t n, size_t from, uint32_t seed)
{
	for (size_t j = from; j < n; j++)
		if (p[j] != pattern_byte(seed, (uint32_t)j))
			return false;
	return true;
}

struct state {
	struct opts o;
	rudp_host *host;
	rudp_peer *peer;
	uint64_t start_ms, connected_ms;
	bool connected, done, closing;
	uint8_t *buf; /* BULK_MAX bytes of scratch */
	/* bulk */
	uint32_t sent, got;
	/* handshake */
	bool got_m, got_b;
	/* unreliable */
	uint8_t *seen;
	uint32_t unrel_got, unrel_expected;
	uint64_t settle_at; /* when to judge a burst, 0 = not waiting */
	bool peer_cannot, sent_burst, got_report;
	/* keepalive */
	uint64_t idle_until;
	bool sent_after;
	/* disc-peer / kill */
	uint64_t mark_ms;
};

static void send_or_fail(struct state *s, const void *p, size_t n, int rel)
{
	int r = rudp_send(s->peer, p, n, rel, 0);
	if (r != 0)
		fail("rudp_send of %zu bytes: %s", n, rudp_strerror(r));
}

static void send_tag(struct state *s, uint8_t tag, const uint8_t *head, size_t head_len, size_t len, int rel)
{
	size_t n = make_tagged(s->buf, len, tag, head, head_len, tag);
	send_or_fail(s, s->buf, n, rel);
}

static void send_burst(struct state *s)
{
	/* Paced in groups so that no socket buffer on the way overflows: the
	 * point is that unreliable frames are understood, not loss. */
	for (uint32_t id = 0; id < UNREL_COUNT; id++) {
		uint8_t head[4];
		put_u32le(head, id);
		size_t len = 50 + (id * 29) % 400;
		size_t n = make_tagged(s->buf, len, 'U', head, 4, id);
		send_or_fail(s, s->buf, n, RUDP_UNRELIABLE);
		if (id % 20 == 19) {
			rudp_flush(s->host);
			usleep(2000);
		}
	}
	uint8_t end[5];
	put_u32le(end, UNREL_COUNT);
	end[4] = 0;
	send_tag(s, 'E', end, 5, 7, RUDP_RELIABLE_ORDERED);
	s->sent_burst = true;
	note("sent %u unreliable messages", UNREL_COUNT);
}

static void start_close(struct state *s)
{
	if (s->closing)
		return;
	s->closing = true;
	int r = rudp_disconnect(s->peer);
	if (r != 0)
		fail("rudp_disconnect: %s", rudp_strerror(r));
}

/* The pid file is written by run_cell.sh, which started the peer. */
static void kill_peer(struct state *s)
{
	long pid = 0;
	for (int tries = 0; tries < 100 && pid <= 0; tries++) {
		FILE *f = fopen(s->o.pid_file, "r");
		if (f) {
			if (fscanf(f, "%ld", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		if (pid <= 0)
			usleep(50000);
	}
	if (pid <= 1)
		fail("no peer pid in %s", s->o.pid_file);
	if (kill((pid_t)pid, SIGKILL) != 0)
		fail("kill(%ld): %s", pid, strerror(errno));
	s->mark_ms = now_ms();
	note("peer process %ld killed; waiting for the timeout (timeout_ms %u)", pid, s->o.timeout_ms);
}

static void on_connect(struct state *s)
{
	rudp_peer_stats st;
	if (s->o.redundant && rudp_peer_set_redundant_channels(s->peer, s->o.redundant) != 0)
		fail("rudp_peer_set_redundant_channels failed");
	rudp_peer_stats_get(s->peer, &st);
	s->connected = true;
	s->connected_ms = now_ms();
	note("connected after %" PRIu64 " ms: protocol %u, mtu %u, guid %016" PRIx64,
	     s->connected_ms - s->start_ms, st.protocol_version, st.mtu, rudp_peer_guid(s->peer));
	if (s->o.expect_mtu && st.mtu != s->o.expect_mtu)
		fail("negotiated MTU %u, expected %u", st.mtu, s->o.expect_mtu);
	switch (s->o.sc) {
	case SC_HANDSHAKE: {
		uint8_t head[2] = {(uint8_t)st.mtu, (uint8_t)(st.mtu >> 8)};
		/* One message that just fits a datagram at the agreed MTU
		 * (RakNet peers keep 60 B for headers), one split in three. */
		send_tag(s, 'M', head, 2, st.mtu - 60u, RUDP_RELIABLE_ORDERED);
		send_tag(s, 'B', NULL, 0, 3u * st.mtu, RUDP_RELIABLE_ORDERED);
		break;
	}
	case SC_BULK: break; /* the client pumps below */
	case SC_UNRELIABLE:
		if (!s->o.server)
			send_burst(s);
		break;
	default:
		if (!s->o.server)
			send_tag(s, 'H', NULL, 0, 16, RUDP_RELIABLE_ORDERED);
		break;
	}
}

static void judge_burst(struct state *s)
{
	s->settle_at = 0;
	uint8_t head[4];
	put_u32le(head, s->unrel_got);
	send_tag(s, 'R', head, 4, 6, RUDP_RELIABLE_ORDERED);
	if (s->peer_cannot) {
		note("SKIPPED HALF: peer -> librudp unreliable: %s",
		     s->o.peer_no_unreliable ? s->o.peer_no_unreliable
					     : "the peer says it cannot send unreliable");
	} else {
		note("received %u/%u unreliable messages from the peer", s->unrel_got, s->unrel_expected);
		if (s->unrel_expected != UNREL_COUNT)
			fail("peer announced %u unreliable messages, expected %u", s->unrel_expected,
			     UNREL_COUNT);
		if (s->unrel_got * 100 < s->unrel_expected * UNREL_MIN_PERCENT)
			fail("only %u of %u unreliable messages arrived", s->unrel_got, s->unrel_expected);
	}
	if (s->o.server)
		send_burst(s);
	else if (s->got_report)
		s->done = true;
}

static void on_receive(struct state *s, const rudp_event *ev)
{
	const uint8_t *p = ev->data;
	size_t n = ev->len;
	if (n == 0 || p[0] != 0xfe)
		fail("message of %zu bytes without the 0xfe id", n);
	if (s->o.sc == SC_BULK) {
		if (ev->reliability != RUDP_RELIABLE_ORDERED)
			fail("bulk message %u arrived with reliability %u", s->got, ev->reliability);
		if (s->got >= BULK_COUNT)
			fail("extra bulk message of %zu bytes", n);
		if (!bulk_check(s->got, p, n))
			fail("bulk message %u: got %zu bytes, expected %u (or content differs)", s->got, n,
			     bulk_size(s->got));
		s->got++;
		if (s->o.server) /* echo: the peer client checks the way back */
			send_or_fail(s, p, n, RUDP_RELIABLE_ORDERED);
		if (s->got == BULK_COUNT) {
			rudp_peer_stats st;
			rudp_peer_stats_get(s->peer, &st);
			note("verified %u/%u bulk messages in order (%s) in %" PRIu64
			     " ms; datagrams sent %" PRIu64 " received %" PRIu64
			     ", frames retransmitted %" PRIu64 ", rtt %.1f ms",
			     s->got, BULK_COUNT, s->o.server ? "and echoed them" : "echoes of ours",
			     now_ms() - s->connected_ms, st.datagrams_sent, st.datagrams_received,
			     st.frames_retransmitted, st.rtt_us / 1000.0);
			if (s->o.redundant && st.frames_copied == 0)
				fail("redundancy on, but no copy was sent");
			if (s->o.redundant)
				note("redundant copies sent: %" PRIu64, st.frames_copied);
			s->done = true;
		}
		return;
	}
	if (n < 2)
		fail("message of %zu bytes in scenario %s", n, scenario_names[s->o.sc]);
	uint8_t tag = p[1];
	switch (tag) {
	case 'H':
		if (s->o.server)
			send_or_fail(s, p, n, RUDP_RELIABLE_ORDERED);
		if (s->o.sc == SC_KEEPALIVE && !s->o.server) {
			s->idle_until = now_ms() + s->o.idle_ms;
			note("idle for %u ms (timeout_ms %u)", s->o.idle_ms, s->o.timeout_ms);
		}
		if (s->o.sc == SC_DISC_RUDP) {
			note("closing");
			s->mark_ms = now_ms();
			start_close(s);
		}
		if (s->o.sc == SC_DISC_PEER)
			s->mark_ms = now_ms(); /* the peer closes after this exchange */
		if (s->o.sc == SC_KILL)
			kill_peer(s);
		break;
	case 'A':
		if (s->o.sc != SC_KEEPALIVE)
			fail("unexpected 'A' message");
		if (s->o.server) {
			uint64_t idle = now_ms() - s->connected_ms;
			send_or_fail(s, p, n, RUDP_RELIABLE_ORDERED);
			note("'A' after %" PRIu64 " ms connected", idle);
			if (idle < s->o.idle_ms)
				fail("the peer did not stay idle (%" PRIu64 " ms < %u)", idle, s->o.idle_ms);
		} else {
			note("echo after the idle time arrived");
		}
		s->done = true;
		break;
	case 'M': {
		if (n < 4 || !check_pattern(p, n, 4, 'M'))
			fail("bad 'M' message (%zu bytes)", n);
		unsigned peer_mtu = p[2] | p[3] << 8;
		rudp_peer_stats st;
		rudp_peer_stats_get(s->peer, &st);
		if (peer_mtu == 0)
			note("peer cannot tell its MTU (its API does not expose it); got its %zu-byte "
			     "message",
			     n);
		else if (peer_mtu != st.mtu)
			fail("MTU disagreement: librudp %u, peer %u", st.mtu, peer_mtu);
		else
			note("MTU agreed: %u on both sides; peer's %zu-byte message arrived", peer_mtu, n);
		s->got_m = true;
		break;
	}
	case 'B':
		if (!check_pattern(p, n, 2, 'B') || n < 1000)
			fail("bad 'B' message (%zu bytes)", n);
		note("split message of %zu bytes from the peer arrived", n);
		s->got_b = true;
		break;
	case 'U': {
		if (ev->reliability != RUDP_UNRELIABLE)
			fail("'U' message arrived with reliability %u", ev->reliability);
		if (n < 6)
			fail("short 'U' message");
		uint32_t id = get_u32le(p + 2);
		if (id >= UNREL_COUNT || n != 50 + (id * 29) % 400 || !check_pattern(p, n, 6, id))
			fail("bad unreliable message id %u (%zu bytes)", id, n);
		if (s->seen[id])
			fail("unreliable message %u delivered twice", id);
		s->seen[id] = 1;
		s->unrel_got++;
		break;
	}
	case 'E':
		if (n < 7)
			fail("short 'E' message");
		s->unrel_expected = get_u32le(p + 2);
		s->peer_cannot = (p[6] & 1) != 0;
		s->settle_at = now_ms() + UNREL_SETTLE_MS;
		break;
	case 'R': {
		if (n < 6)
			fail("short 'R' message");
		uint32_t r = get_u32le(p + 2);
		note("peer received %u/%u of our unreliable messages", r, UNREL_COUNT);
		if (r * 100 < UNREL_COUNT * UNREL_MIN_PERCENT)
			fail("the peer received only %u of our %u unreliable messages", r, UNREL_COUNT);
		s->got_report = true;
		if (s->o.server)
			s->done = true;
		break;
	}
	default: fail("unexpected message tag 0x%02x", tag);
	}
	if (s->o.sc == SC_HANDSHAKE && s->got_m && s->got_b)
		s->done = true;
}

static void pump_bulk(struct state *s)
{
	while (s->sent < BULK_COUNT && s->sent - s->got < BULK_OUTSTANDING) {
		bulk_fill(s->sent, s->buf);
		send_or_fail(s, s->buf, bulk_size(s->sent), RUDP_RELIABLE_ORDERED);
		s->sent++;
	}
}

static void on_disconnect(struct state *s, int reason)
{
	uint64_t t = now_ms();
	note("disconnected: %s", rudp_reason_string(reason));
	/* What the link saw, for a failure's log: counts only, cheap. */
	rudp_peer_stats st;
	if (s->peer && rudp_peer_stats_get(s->peer, &st) == 0)
		note("link: datagrams %" PRIu64 " in / %" PRIu64 " out, messages %" PRIu64 " in / %" PRIu64
		     " out, dropped %" PRIu64 ", duplicates %" PRIu64 ", retransmitted %" PRIu64
		     ", nacks %" PRIu64 ", reassembly %u B",
		     st.datagrams_received, st.datagrams_sent, st.messages_received, st.messages_sent,
		     st.datagrams_dropped, st.duplicates_dropped, st.frames_retransmitted, st.nacks_received,
		     st.reassembly_bytes);
	switch (s->o.sc) {
	case SC_DISC_RUDP:
		if (reason != RUDP_REASON_LOCAL)
			fail("expected a local disconnect, got %s", rudp_reason_string(reason));
		note("graceful close acknowledged after %" PRIu64 " ms", t - s->mark_ms);
		return;
	case SC_DISC_PEER:
		if (reason != RUDP_REASON_REMOTE)
			fail("expected the peer's disconnect, got %s", rudp_reason_string(reason));
		if (!s->mark_ms)
			fail("disconnect before the hello exchange");
		note("peer's disconnect reported %" PRIu64 " ms after the exchange", t - s->mark_ms);
		if (t - s->mark_ms > 3000)
			fail("the peer's disconnect took %" PRIu64 " ms to be seen", t - s->mark_ms);
		s->done = true;
		return;
	case SC_KILL: {
		if (!s->mark_ms)
			fail("disconnected (%s) before the peer was killed", rudp_reason_string(reason));
		if (reason != RUDP_REASON_TIMEOUT)
			fail("expected a timeout, got %s", rudp_reason_string(reason));
		uint64_t took = t - s->mark_ms;
		/* The last packet from the peer came at or before the kill, so
		 * a timeout later than timeout_ms after the kill is late; the
		 * slack covers timer granularity and a loaded 2-core CI box. */
		note("timeout reported %" PRIu64 " ms after the kill (timeout_ms %u)", took, s->o.timeout_ms);
		if (took > s->o.timeout_ms + 500u)
			fail("timeout reported after %" PRIu64 " ms, configured %u ms", took,
			     s->o.timeout_ms);
		s->done = true;
		return;
	}
	default:
		if (!s->done)
			fail("disconnected (%s) before the scenario finished", rudp_reason_string(reason));
		if (s->closing && reason != RUDP_REASON_LOCAL)
			fail("our close ended as %s", rudp_reason_string(reason));
		return;
	}
}

static volatile sig_atomic_t got_term;
static void on_term(int sig)
{
	(void)sig;
	got_term = 1;
}

static int run_ping_client(struct state *s)
{
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", s->o.port);
	for (int i = 0; i < 3; i++) {
		rudp_pong pong;
		int r = rudp_ping(s->host, addr, 5000, &pong);
		if (r != 0)
			fail("rudp_ping %s: %s", addr, rudp_strerror(r));
		if (pong.data_len < 2 || (size_t)(pong.data[0] << 8 | pong.data[1]) != pong.data_len - 2)
			fail("pong data (%zu bytes) is not a uint16-length-prefixed string", pong.data_len);
		char text[1500];
		size_t tl = pong.data_len - 2 < sizeof text - 1 ? pong.data_len - 2 : sizeof text - 1;
		memcpy(text, pong.data + 2, tl);
		text[tl] = '\0';
		note("pong %d: guid %016" PRIx64 ", rtt %u us, data \"%s\"", i, pong.server_guid, pong.rtt_us,
		     text);
		if (s->o.expect_pong && !strstr(text, s->o.expect_pong))
			fail("pong data lacks \"%s\"", s->o.expect_pong);
		if (pong.server_guid == 0)
			fail("pong without a server guid");
		if (s->o.expect_guid && pong.server_guid != s->o.expect_guid)
			fail("pong guid %" PRIu64 ", expected %" PRIu64, pong.server_guid, s->o.expect_guid);
	}
	note("PASS");
	return 0;
}

static int run(struct state *s)
{
	rudp_config cfg;
	rudp_config_init(&cfg);
	cfg.bind_address = s->o.server ? "127.0.0.1:0" : "0.0.0.0:0";
	cfg.protocol_version = (uint8_t)s->o.protocol;
	cfg.mtu = (uint16_t)s->o.mtu;
	if (s->o.server) {
		cfg.guid = SERVER_GUID;
		/* A Bedrock-facing server: its pong data must reach clients whose
		 * pings are 33 bytes (both peers'), which the anti-amplification
		 * default would strip; jsp-raknet's client even throws on a pong
		 * without its string (see docs/interop.md). */
		cfg.pong_amplification = 1;
	}
	if (s->o.rto_min_ms)
		cfg.rto_min_ms = s->o.rto_min_ms;
	if (s->o.timeout_ms) {
		cfg.timeout_ms = s->o.timeout_ms;
		cfg.keepalive_ms = s->o.timeout_ms / 4;
	}
	s->o.timeout_ms = cfg.timeout_ms;
	/* A peer that processes 0x10 late (jsp-raknet, ~1.5 s) still connects. */
	cfg.connect_timeout_ms = 10000;
	int r = rudp_host_create(&cfg, &s->host);
	if (r != 0)
		fail("rudp_host_create: %s", rudp_strerror(r));
	s->start_ms = now_ms();
	uint64_t deadline = s->start_ms + s->o.deadline_ms;

	if (s->o.server) {
		char local[64], pong[512];
		rudp_host_local_address(s->host, local, sizeof local);
		const char *port = strrchr(local, ':') + 1;
		/* Bedrock-style pong data: a uint16-BE-length string, the form
		 * both peers' ping APIs decode. */
		int tl = snprintf(pong + 2, sizeof pong - 2,
				  "MCPE;librudp interop server;594;1.20.0;0;10;%" PRIu64
				  ";interop;Survival;1;%s;",
				  (uint64_t)SERVER_GUID, port);
		pong[0] = (char)(tl >> 8);
		pong[1] = (char)tl;
		r = rudp_host_set_pong_data(s->host, pong, (size_t)tl + 2);
		if (r != 0)
			fail("rudp_host_set_pong_data: %s", rudp_strerror(r));
		printf("listening %s %" PRIu64 "\n", port, (uint64_t)SERVER_GUID);
		fflush(stdout);
	} else if (s->o.sc == SC_PING) {
		int rc = run_ping_client(s);
		rudp_host_destroy(s->host);
		return rc;
	} else {
		char addr[64];
		snprintf(addr, sizeof addr, "127.0.0.1:%u", s->o.port);
		r = rudp_connect(s->host, addr, &s->peer);
		if (r != 0)
			fail("rudp_connect %s: %s", addr, rudp_strerror(r));
	}

	rudp_event ev[64];
	bool finished = false;
	uint64_t done_at = 0;
	while (!finished) {
		uint64_t t = now_ms();
		if (t > deadline)
			fail("scenario %s did not finish in %u ms", scenario_names[s->o.sc],
			     s->o.deadline_ms);
		if (got_term) {
			/* run_cell.sh stops a server this way once the peer client
			 * is gone; only the ping server is meant to end like that. */
			if (s->o.sc == SC_PING) {
				note("PASS (served pings)");
				break;
			}
			fail("stopped before the scenario finished");
		}
		if (s->settle_at && t >= s->settle_at)
			judge_burst(s);
		if (s->idle_until && t >= s->idle_until && !s->sent_after) {
			s->sent_after = true;
			rudp_peer_stats st;
			rudp_peer_stats_get(s->peer, &st);
			note("still connected after idling (rtt %.3f ms from connected pings)",
			     st.rtt_us / 1000.0);
			send_tag(s, 'A', NULL, 0, 16, RUDP_RELIABLE_ORDERED);
		}
		if (s->o.sc == SC_BULK && !s->o.server && s->connected && !s->closing)
			pump_bulk(s);
		int n = rudp_service(s->host, ev, 64, 5);
		if (n < 0)
			fail("rudp_service: %s", rudp_strerror(n));
		for (int i = 0; i < n && !finished; i++) {
			switch (ev[i].type) {
			case RUDP_EVENT_CONNECT:
				if (s->peer && ev[i].peer != s->peer)
					fail("a second connection");
				s->peer = ev[i].peer;
				on_connect(s);
				break;
			case RUDP_EVENT_RECEIVE: on_receive(s, &ev[i]); break;
			case RUDP_EVENT_DISCONNECT:
				if (!s->connected) {
					/* What the connection saw, for a failure that
					 * only shows under load (CI logs). */
					rudp_peer_stats st;

					if (rudp_peer_stats_get(ev[i].peer, &st) == 0)
						note("the failed connection: datagrams sent %llu, received "
						     "%llu; "
						     "messages received %llu; acks %llu, nacks %llu "
						     "received; "
						     "dropped %llu, duplicates %llu; resent %llu; reassembly "
						     "%u B; "
						     "state %d",
						     (unsigned long long)st.datagrams_sent,
						     (unsigned long long)st.datagrams_received,
						     (unsigned long long)st.messages_received,
						     (unsigned long long)st.acks_received,
						     (unsigned long long)st.nacks_received,
						     (unsigned long long)st.datagrams_dropped,
						     (unsigned long long)st.duplicates_dropped,
						     (unsigned long long)st.frames_retransmitted,
						     st.reassembly_bytes, st.state);
					fail("could not connect: %s", rudp_reason_string(ev[i].reason));
				}
				on_disconnect(s, ev[i].reason);
				finished = true;
				break;
			}
		}
		if (finished)
			break;
		if (s->done && !done_at) {
			done_at = now_ms();
			/* The client ends the connection once its side is done; a
			 * server waits for the peer client to leave (a short grace
			 * covers peers that close without telling us). */
			if (!s->o.server)
				start_close(s);
		}
		if (done_at && s->o.server && now_ms() - done_at > 3000) {
			note("peer client did not close within 3 s after the scenario finished; ending");
			break;
		}
	}
	if (s->o.sc == SC_DISC_RUDP && !s->closing)
		fail("never closed");
	note("PASS");
	rudp_host_destroy(s->host);
	return 0;
}

static unsigned parse_num(const char *what, const char *v, unsigned min, unsigned max)
{
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || !*v || *end || x < min || x > max)
		fail("bad %s '%s' (%u..%u)", what, v, min, max);
	return (unsigned)x;
}

int main(int argc, char **argv)
{
	static struct state s;
	role_name = argc > 1 ? argv[1] : "?";
	if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: interop_rudp server SCENARIO [options]\n"
				"       interop_rudp client SCENARIO PORT [options]\n");
		return 2;
	}
	s.o.server = !strcmp(argv[1], "server");
	int sc = -1;
	for (int i = 0; i < (int)(sizeof scenario_names / sizeof *scenario_names); i++)
		if (!strcmp(argv[2], scenario_names[i]))
			sc = i;
	if (sc < 0)
		fail("unknown scenario '%s'", argv[2]);
	s.o.sc = (enum scenario)sc;
	int i = 3;
	if (!s.o.server) {
		if (argc < 4)
			fail("client needs a PORT");
		s.o.port = parse_num("port", argv[3], 1, 65535);
		i = 4;
	}
	s.o.protocol = 11;
	s.o.mtu = 1492;
	s.o.deadline_ms = 60000;
	for (; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			fail("option %s needs a value", a);
		i++;
		if (!strcmp(a, "--protocol"))
			s.o.protocol = parse_num(a, v, 6, 11);
		else if (!strcmp(a, "--mtu"))
			s.o.mtu = parse_num(a, v, 576, 1500);
		else if (!strcmp(a, "--expect-mtu"))
			s.o.expect_mtu = parse_num(a, v, 576, 1500);
		else if (!strcmp(a, "--timeout"))
			s.o.timeout_ms = parse_num(a, v, 100, 600000);
		else if (!strcmp(a, "--idle"))
			s.o.idle_ms = parse_num(a, v, 0, 600000);
		else if (!strcmp(a, "--rto-min"))
			s.o.rto_min_ms = parse_num(a, v, 1, 10000);
		else if (!strcmp(a, "--redundant"))
			s.o.redundant = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--deadline"))
			s.o.deadline_ms = parse_num(a, v, 100, 600000);
		else if (!strcmp(a, "--pid-file"))
			s.o.pid_file = v;
		else if (!strcmp(a, "--expect-pong"))
			s.o.expect_pong = v;
		else if (!strcmp(a, "--expect-guid")) {
			char *end;
			errno = 0;
			s.o.expect_guid = strtoull(v, &end, 10);
			if (errno || !*v || *end)
				fail("bad guid '%s'", v);
		} else if (!strcmp(a, "--peer-no-unreliable"))
			s.o.peer_no_unreliable = v;
		else
			fail("unknown option %s", a);
	}
	if (s.o.sc == SC_KILL && !s.o.pid_file)
		fail("kill needs --pid-file");
	if (s.o.sc == SC_KEEPALIVE && (!s.o.timeout_ms || s.o.idle_ms < s.o.timeout_ms))
		fail("keepalive needs --timeout and an --idle longer than it");
	s.buf = malloc(BULK_MAX);
	s.seen = calloc(UNREL_COUNT, 1);
	if (!s.buf || !s.seen)
		fail("out of memory");
	struct sigaction sa = {.sa_handler = on_term};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	int rc = run(&s);
	free(s.buf);
	free(s.seen);
	return rc;
}
