/* SPDX-License-Identifier: MIT */
/*
 * rudp-tickserver: the shape of an authoritative game server on librudp,
 * and a client that plays N players from one process against it.
 *
 *   rudp-tickserver server [--bind ADDR] [--seconds S] [--lifetime MS] [--max-players N] [--sim-* ...]
 *   rudp-tickserver client --connect ADDR [--players N] [--timeout S] [--sim-* ...]
 *
 * The server runs a 30 Hz loop. Each tick it sends one snapshot to every
 * player with rudp_send_many() (unreliable-sequenced, channel 0, with a
 * lifetime: a snapshot that could not leave within it is dropped, the next
 * one is newer anyway), and each player an event of its own (reliable
 * ordered, channel 1, numbered from 1). Players send an input every tick
 * (unreliable-sequenced) and a chat line every tenth (reliable ordered,
 * channel 1, numbered); the server checks each player's chat arrives once
 * and in order. Once a second the server prints a line of per-player
 * figures. After --seconds it sends each player an END event carrying the
 * number of the last event, then disconnects them.
 *
 * The client exits 0 when every player received END and every event
 * exactly once and in order before it, 1 otherwise; the server exits 0
 * when every chat line arrived exactly once and in order. The --sim-*
 * options (sim_options.h) put the built-in network simulator on either
 * side. All players of a client come from one address, so the server
 * lifts its per-address handshake limits to --max-players.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rudp.h"
#include "sim_options.h"

#define TICK_HZ 30
#define TICK_US (1000000 / TICK_HZ)
#define EVENTS 256
#define MAX_PLAYERS 4096

/* Message ids, above RakNet's own. */
enum { MSG_SNAPSHOT = 0x86, MSG_EVENT = 0x87, MSG_END = 0x88, MSG_INPUT = 0x89, MSG_CHAT = 0x8a };
enum { CH_STATE = 0, CH_EVENTS = 1 };

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static int parse_u(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *s == '\0' || *s == '-' || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

/* ---- server ---- */

struct player {
	rudp_peer *peer;
	uint32_t events_sent; /* number of the last event sent */
	uint32_t chat_next; /* number of the chat line expected next */
	uint32_t last_input_tick;
	bool gone;
};

struct figures {
	uint32_t rtt_ms;
	float loss_percent; /* recent send loss */
	uint64_t send_rate; /* bytes a second */
	uint64_t pending_bytes; /* queued, not yet sent */
	uint64_t queue_time_ms; /* age of the oldest queued message */
	uint64_t expired; /* snapshots dropped at their lifetime */
};

/* The per-tick status call: O(1) and allocation-free, so a server can read
 * every player's figures each tick. The expired-snapshot count is a
 * diagnostic counter of rudp_peer_stats, read here once a second. */
static void player_figures(rudp_peer *peer, struct figures *f)
{
	rudp_peer_status st;
	rudp_peer_stats stats;
	memset(f, 0, sizeof(*f));
	if (rudp_peer_status_get(peer, &st) != 0)
		return;
	f->rtt_ms = st.rtt_us / 1000;
	f->loss_percent = st.send_loss_percent;
	f->send_rate = st.send_rate;
	f->pending_bytes = st.pending_reliable_bytes + st.pending_unreliable_bytes;
	f->queue_time_ms = st.queue_time_us / 1000;
	if (rudp_peer_stats_get(peer, &stats) == 0)
		f->expired = stats.unreliable_expired;
}

static void print_second(int second, struct player *pl, int n)
{
	uint32_t rtt_min = UINT32_MAX, rtt_max = 0;
	uint64_t rtt_sum = 0, expired = 0, rate_sum = 0, pending_max = 0, queue_ms_max = 0;
	float loss_max = 0;
	int live = 0;
	for (int i = 0; i < n; i++) {
		if (pl[i].gone)
			continue;
		struct figures f;
		player_figures(pl[i].peer, &f);
		rtt_min = f.rtt_ms < rtt_min ? f.rtt_ms : rtt_min;
		rtt_max = f.rtt_ms > rtt_max ? f.rtt_ms : rtt_max;
		pending_max = f.pending_bytes > pending_max ? f.pending_bytes : pending_max;
		queue_ms_max = f.queue_time_ms > queue_ms_max ? f.queue_time_ms : queue_ms_max;
		loss_max = f.loss_percent > loss_max ? f.loss_percent : loss_max;
		rtt_sum += f.rtt_ms;
		rate_sum += f.send_rate;
		expired += f.expired;
		live++;
	}
	if (live == 0) {
		printf("t=%ds players 0\n", second);
		return;
	}
	printf("t=%ds players %d rtt ms min/avg/max %u/%" PRIu64 "/%u send loss max %.1f %% sent %" PRIu64
	       " B/s pending max %" PRIu64 " B queue max %" PRIu64 " ms snapshots expired %" PRIu64 "\n",
	       second, live, rtt_min, rtt_sum / (uint64_t)live, rtt_max, (double)loss_max, rate_sum,
	       pending_max, queue_ms_max, expired);
}

static struct player *find_player(struct player *pl, int n, rudp_peer *peer)
{
	for (int i = 0; i < n; i++)
		if (pl[i].peer == peer && !pl[i].gone)
			return &pl[i];
	return NULL;
}

/* Returns the number of chat errors seen. */
static int server_event(const rudp_event *e, struct player *pl, int *n, int max)
{
	struct player *p = e->peer ? find_player(pl, *n, e->peer) : NULL;
	switch (e->type) {
	case RUDP_EVENT_CONNECT:
		if (*n < max)
			pl[(*n)++] = (struct player){.peer = e->peer, .chat_next = 1};
		return 0;
	case RUDP_EVENT_DISCONNECT:
		if (p)
			p->gone = true;
		return 0;
	case RUDP_EVENT_RECEIVE:
		if (!p || e->len < 5)
			return 0;
		if (e->data[0] == MSG_INPUT) {
			p->last_input_tick = get_u32(e->data + 1);
		} else if (e->data[0] == MSG_CHAT) {
			uint32_t seq = get_u32(e->data + 1);
			if (seq != p->chat_next) {
				fprintf(stderr, "chat %u from a player, expected %u\n", seq, p->chat_next);
				p->chat_next = seq + 1;
				return 1;
			}
			p->chat_next++;
		}
		return 0;
	default: return 0;
	}
}

static int run_server(const char *bind, unsigned long seconds, unsigned long lifetime_ms,
		      unsigned long max_players, const rudp_sim_config *sim)
{
	rudp_config cfg;
	rudp_host *h;
	rudp_config_init(&cfg);
	cfg.bind_address = bind;
	cfg.max_peers = (uint32_t)max_players;
	/* Many players behind one address (a test client, a NAT). */
	cfg.max_pending_per_address = (uint32_t)max_players;
	cfg.offline_rate_per_address = 0;
	cfg.sim = *sim;
	int r = rudp_host_create(&cfg, &h);
	if (r != 0) {
		fprintf(stderr, "server: %s\n", rudp_strerror(r));
		return 1;
	}
	char addr[80];
	rudp_host_local_address(h, addr, sizeof(addr));
	printf("listening on %s\n", addr);
	fflush(stdout);

	struct player *pl = calloc(max_players, sizeof(*pl));
	rudp_peer **targets = calloc(max_players, sizeof(*targets));
	if (!pl || !targets)
		return 1;
	int n = 0, errors = 0;
	uint32_t tick = 0;
	uint64_t start = now_us(), next_tick = start, end = start + (uint64_t)seconds * 1000000u;
	int second = 0;
	rudp_event ev[EVENTS];

	while (now_us() < end) {
		uint64_t t = now_us();
		if (t >= next_tick) {
			/* The snapshot: the same bytes for everyone, queued once. */
			uint8_t snap[200];
			int k = 0;
			for (int i = 0; i < n; i++)
				if (!pl[i].gone)
					targets[k++] = pl[i].peer;
			memset(snap, 0, sizeof(snap));
			snap[0] = MSG_SNAPSHOT;
			put_u32(snap + 1, tick);
			put_u32(snap + 5, (uint32_t)k);
			rudp_send_many(h, targets, (size_t)k, snap, sizeof(snap), RUDP_UNRELIABLE_SEQUENCED,
				       CH_STATE, (uint32_t)lifetime_ms, NULL);
			/* Each player's own event, numbered. */
			for (int i = 0; i < n; i++) {
				if (pl[i].gone)
					continue;
				uint8_t e[16] = {MSG_EVENT};
				put_u32(e + 1, pl[i].events_sent + 1);
				put_u32(e + 5, tick);
				if (rudp_send(pl[i].peer, e, sizeof(e), RUDP_RELIABLE_ORDERED, CH_EVENTS) ==
				    0)
					pl[i].events_sent++;
			}
			rudp_flush(h);
			tick++;
			next_tick += TICK_US;
			if (next_tick < t)
				next_tick = t + TICK_US; /* late: no burst of catch-up ticks */
			if ((t - start) / 1000000u > (uint64_t)second) {
				second = (int)((t - start) / 1000000u);
				print_second(second, pl, n);
			}
		}
		t = now_us();
		int wait_ms = next_tick > t ? (int)((next_tick - t + 999) / 1000) : 0;
		int k = rudp_service(h, ev, EVENTS, wait_ms);
		if (k < 0) {
			fprintf(stderr, "server: %s\n", rudp_strerror(k));
			return 1;
		}
		for (int i = 0; i < k; i++)
			errors += server_event(&ev[i], pl, &n, (int)max_players);
	}

	/* The end: each player learns the last event's number, then goes. */
	for (int i = 0; i < n; i++) {
		if (pl[i].gone)
			continue;
		uint8_t e[8] = {MSG_END};
		put_u32(e + 1, pl[i].events_sent);
		rudp_send(pl[i].peer, e, sizeof(e), RUDP_RELIABLE_ORDERED, CH_EVENTS);
		rudp_disconnect(pl[i].peer);
	}
	for (uint64_t until = now_us() + 5000000u; now_us() < until;) {
		int live = 0;
		for (int i = 0; i < n; i++)
			live += !pl[i].gone;
		if (live == 0)
			break;
		int k = rudp_service(h, ev, EVENTS, 10);
		for (int i = 0; i < k; i++)
			errors += server_event(&ev[i], pl, &n, (int)max_players);
	}
	rudp_host_stats hs;
	rudp_host_stats_get(h, &hs);
	print_sim_stats("server", &hs);
	printf("server: %d players, %u ticks, %d chat errors\n", n, tick, errors);
	rudp_host_destroy(h);
	free(pl);
	free(targets);
	return errors == 0 ? 0 : 1;
}

/* ---- client: N players in one process ---- */

struct bot {
	rudp_peer *peer;
	bool connected, ended, failed, disconnected;
	uint32_t events; /* number of the last event received */
	uint32_t snapshots, last_snapshot_tick;
	uint32_t chat_sent;
};

static struct bot *find_bot(struct bot *b, int n, rudp_peer *peer)
{
	for (int i = 0; i < n; i++)
		if (b[i].peer == peer)
			return &b[i];
	return NULL;
}

static void bot_fail(struct bot *b, int i, const char *why, uint32_t a, uint32_t c)
{
	if (!b->failed)
		fprintf(stderr, "player %d: %s (%u, %u)\n", i, why, a, c);
	b->failed = true;
}

static void bot_receive(struct bot *bots, int idx, const rudp_event *e)
{
	struct bot *b = &bots[idx];
	if (e->len < 5)
		return bot_fail(b, idx, "short message", (uint32_t)e->len, 0);
	uint32_t v = get_u32(e->data + 1);
	switch (e->data[0]) {
	case MSG_SNAPSHOT:
		if (b->snapshots > 0 && v <= b->last_snapshot_tick)
			bot_fail(b, idx, "snapshot went backwards", v, b->last_snapshot_tick);
		b->last_snapshot_tick = v;
		b->snapshots++;
		break;
	case MSG_EVENT:
		if (b->ended || v != b->events + 1)
			bot_fail(b, idx, "event out of order, twice or after END", v, b->events + 1);
		b->events = v;
		break;
	case MSG_END:
		if (b->ended || v != b->events)
			bot_fail(b, idx, "END does not match the events received", v, b->events);
		b->ended = true;
		break;
	default: bot_fail(b, idx, "unknown message", e->data[0], 0);
	}
}

static int run_client(const char *addr, unsigned long players, unsigned long timeout_s,
		      const rudp_sim_config *sim)
{
	rudp_config cfg;
	rudp_host *h;
	rudp_config_init(&cfg);
	cfg.socket_per_connect = 1;
	cfg.max_peers = (uint32_t)players;
	cfg.sim = *sim;
	int r = rudp_host_create(&cfg, &h);
	if (r != 0) {
		fprintf(stderr, "client: %s\n", rudp_strerror(r));
		return 1;
	}
	struct bot *bots = calloc(players, sizeof(*bots));
	if (!bots)
		return 1;
	int n = (int)players;
	for (int i = 0; i < n; i++) {
		r = rudp_connect(h, addr, &bots[i].peer);
		if (r != 0) {
			fprintf(stderr, "client: connect %d: %s\n", i, rudp_strerror(r));
			return 1;
		}
	}
	rudp_event ev[EVENTS];
	uint64_t deadline = now_us() + (uint64_t)timeout_s * 1000000u, next_tick = now_us();
	uint32_t tick = 0;
	int done = 0;
	while (done < n && now_us() < deadline) {
		if (now_us() >= next_tick) {
			for (int i = 0; i < n; i++) {
				if (!bots[i].connected || bots[i].disconnected)
					continue;
				uint8_t in[12] = {MSG_INPUT};
				put_u32(in + 1, tick);
				rudp_send(bots[i].peer, in, sizeof(in), RUDP_UNRELIABLE_SEQUENCED, CH_STATE);
				if (tick % 10 == (uint32_t)i % 10) {
					uint8_t chat[24] = {MSG_CHAT};
					put_u32(chat + 1, bots[i].chat_sent + 1);
					if (rudp_send(bots[i].peer, chat, sizeof(chat), RUDP_RELIABLE_ORDERED,
						      CH_EVENTS) == 0)
						bots[i].chat_sent++;
				}
			}
			tick++;
			next_tick += TICK_US;
		}
		int k = rudp_service(h, ev, EVENTS, 5);
		if (k < 0) {
			fprintf(stderr, "client: %s\n", rudp_strerror(k));
			return 1;
		}
		for (int j = 0; j < k; j++) {
			struct bot *b = find_bot(bots, n, ev[j].peer);
			if (!b)
				continue;
			int idx = (int)(b - bots);
			if (ev[j].type == RUDP_EVENT_CONNECT) {
				b->connected = true;
			} else if (ev[j].type == RUDP_EVENT_RECEIVE) {
				bot_receive(bots, idx, &ev[j]);
			} else if (ev[j].type == RUDP_EVENT_DISCONNECT) {
				b->disconnected = true;
				done++;
				if (!b->ended)
					bot_fail(b, idx, "disconnected before END", (uint32_t)ev[j].reason,
						 b->events);
			}
		}
	}
	int ok = 0;
	uint64_t snapshots = 0, events = 0;
	for (int i = 0; i < n; i++) {
		if (!bots[i].ended && !bots[i].failed)
			bot_fail(&bots[i], i, "no END before the timeout", bots[i].events, 0);
		ok += !bots[i].failed;
		snapshots += bots[i].snapshots;
		events += bots[i].events;
	}
	rudp_host_stats hs;
	rudp_host_stats_get(h, &hs);
	print_sim_stats("client", &hs);
	printf("client: %d of %d players OK; %" PRIu64 " events, %" PRIu64 " snapshots received\n", ok, n,
	       events, snapshots);
	rudp_host_destroy(h);
	free(bots);
	return ok == n ? 0 : 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: rudp-tickserver server [--bind ADDR] [--seconds S] [--lifetime MS] "
			"[--max-players N] [options]\n"
			"       rudp-tickserver client --connect ADDR [--players N] [--timeout S] [options]\n"
			"options:\n" SIM_OPTIONS_USAGE);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	bool server = strcmp(argv[1], "server") == 0;
	if (!server && strcmp(argv[1], "client") != 0)
		return usage();
	const char *bind = "127.0.0.1:19140", *connect = NULL;
	unsigned long seconds = 10, lifetime = 2 * 1000 / TICK_HZ, max_players = 256, players = 20,
		      timeout = 30;
	rudp_sim_config sim = {0};
	for (int i = 2; i < argc; i++) {
		int s = sim_option(argc, argv, &i, &sim);
		if (s < 0)
			return 2;
		if (s > 0)
			continue;
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = !v;
		if (!bad && !strcmp(a, "--bind"))
			bind = v;
		else if (!bad && !strcmp(a, "--connect"))
			connect = v;
		else if (!bad && !strcmp(a, "--seconds"))
			bad = parse_u(v, 86400, &seconds);
		else if (!bad && !strcmp(a, "--lifetime"))
			bad = parse_u(v, 60000, &lifetime) || lifetime == 0;
		else if (!bad && !strcmp(a, "--max-players"))
			bad = parse_u(v, MAX_PLAYERS, &max_players) || max_players == 0;
		else if (!bad && !strcmp(a, "--players"))
			bad = parse_u(v, MAX_PLAYERS, &players) || players == 0;
		else if (!bad && !strcmp(a, "--timeout"))
			bad = parse_u(v, 86400, &timeout);
		else
			bad = 1;
		if (bad) {
			fprintf(stderr, "bad argument '%s'\n", a);
			return usage();
		}
		i++;
	}
	if (server)
		return run_server(bind, seconds, lifetime, max_players, &sim);
	if (!connect)
		return usage();
	return run_client(connect, players, timeout, &sim);
}
