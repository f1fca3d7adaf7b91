/* SPDX-License-Identifier: MIT */
/*
 * The workload engine and verifier every C client driver uses: it decides
 * which connection may send (sequential warm-up and RTT samples, then a
 * windowed burst behind a barrier), builds messages into reusable slots and
 * checks each echo. Drivers only move bytes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "bench.h"

atomic_int bench_stop;
int bench_wait_spin_us = -1;
int bench_cc = -1;

int bench_cc_from_name(const char *name)
{
	static const char *const names[] = {"none", "aimd", "rate"}; /* RUDP_CC_ order */

	for (int i = 0; i < 3; i++) {
		if (!strcmp(name, names[i]))
			return i;
	}
	return -1;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_stop(int sig)
{
	(void)sig;
	bench_stop = 1;
}

void bench_on_stop_signals(void (*handler)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

void bench_install_stop_handler(void)
{
	bench_on_stop_signals(on_stop);
	signal(SIGPIPE, SIG_IGN);
}

int bench_parse_addr(const char *s, void *out)
{
	struct sockaddr_in *sin = out;
	char host[64];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof host)
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (*end || port == 0 || port > 65535)
		return -1;
	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}

void bench_signal_ready(int fd)
{
	if (fd < 0)
		return;
	ssize_t r = write(fd, "ready\n", 6);
	(void)r;
	/* Left open: bench_server_summary() writes what each worker served. */
}

long bench_self_hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmHWM:", 6)) {
			kib = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

void bench_udp_buffers(int fd)
{
	int v = BENCH_UDP_SOCKBUF;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}

void bench_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("rudp-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* A stream's messages get tags of their own: a game message never passes
 * for a workload message of the same id. */
static uint64_t msg_tag(uint32_t c, uint32_t id, unsigned stream)
{
	uint64_t t = mix64(((uint64_t)c << 32) | id);
	return stream ? mix64(t + stream) : t;
}

static uint64_t msg_hash(const uint8_t *m, size_t len)
{
	return XXH3_64bits_withSeed(m + 32, len - 32, XXH3_64bits(m, 24));
}

static void ready_push(struct wl *w, uint32_t c)
{
	if (w->c[c].queued)
		return;
	w->c[c].queued = true;
	w->ready[(w->ready_head + w->ready_len) % w->p.conns] = c;
	w->ready_len++;
}

int wl_pop_ready(struct wl *w)
{
	if (w->ready_len == 0)
		return -1;
	uint32_t c = w->ready[w->ready_head];
	w->ready_head = (w->ready_head + 1) % w->p.conns;
	w->ready_len--;
	w->c[c].queued = false;
	return (int)c;
}

bool wl_can_send(const struct wl *w, uint32_t c)
{
	const struct wl_conn *k = &w->c[c];
	if (k->sent >= k->total)
		return false;
	if (k->sent < k->pre)
		return k->sent == k->done; /* sequential: one at a time */
	return w->burst && k->sent - k->done < w->p.window;
}

static void fill_random(uint8_t *b, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i += 8) {
		*seed = mix64(*seed + 0x9e3779b97f4a7c15ull);
		memcpy(b + i, seed, n - i < 8 ? n - i : 8);
	}
}

/* Room for a game stream of up to ten minutes at the rate asked. */
static int game_init(struct wl *w, uint64_t *seed)
{
	struct wl_game *g = &w->game;
	g->period_ns = 1000000000ull / w->p.game_hz;
	for (int i = 0; i < 2; i++) {
		struct wl_game_stream *s = &g->s[i];
		size_t bytes = (size_t)WL_GAME_SLOTS * (4 + w->p.game_size);
		s->slots = malloc(bytes);
		s->rtt_cap = w->p.game_hz * 600;
		s->rtt_us = malloc(s->rtt_cap * sizeof *s->rtt_us);
		if (!s->slots || !s->rtt_us)
			return -1;
		fill_random(s->slots, bytes, seed);
	}
	w->game_open = true;
	return 0;
}

static void start_burst(struct wl *w, uint64_t now)
{
	w->burst = true;
	w->burst_start_ns = now;
	if (w->p.kind == WL_PATH) {
		/* Said at once: the orchestrator starts the competing flow. */
		printf("BURST %" PRIu64 "\n", now);
		fflush(stdout);
	}
	if (w->p.game_hz) {
		w->game.ticking = true;
		w->game.next_tick_ns = now;
	}
}

int wl_init(struct wl *w, const struct wl_params *p)
{
	memset(w, 0, sizeof *w);
	w->p = *p;
	w->frames_resent = w->duplicates_in = w->resent_bytes = w->wire_bytes = -1;
	bool stream = p->kind == WL_STREAM;
	if (p->size < BENCH_HDR || p->size > BENCH_MAX_SIZE || p->conns == 0 || p->conns > BENCH_MAX_CONNS ||
	    p->window == 0 ||
	    (p->game_hz && (p->game_hz > 1000 || p->game_size < BENCH_HDR || p->game_size > 65536 ||
			    (p->kind != WL_PATH && !stream))) ||
	    (stream &&
	     (!p->game_hz || p->conns != 1 || p->messages == 0 || p->messages > 600ull * p->game_hz))) {
		snprintf(w->err, sizeof w->err,
			 "bad workload: size %u (min %u), %u connections, window %u, game %u Hz x %u B "
			 "(path and stream rows only; a stream: 1 connection, 1 to 600 s of ticks)",
			 p->size, BENCH_HDR, p->conns, p->window, p->game_hz, p->game_size);
		return -1;
	}
	/* A stream's messages are the game's: no burst of workload messages. */
	uint64_t bulk = stream ? 0 : p->messages;
	if (w->p.stall_ms == 0)
		w->p.stall_ms = 15000;
	w->slot_count = p->window;
	w->slot_bytes = 4 + p->size;
	w->c = calloc(p->conns, sizeof *w->c);
	w->ready = calloc(p->conns, sizeof *w->ready);
	w->fault_hold = malloc(p->size);
	w->first_done = calloc(p->conns, sizeof *w->first_done);
	if (!w->c || !w->ready || !w->fault_hold || !w->first_done)
		goto nomem;
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	if (p->game_hz && game_init(w, &seed) < 0)
		goto nomem;
	for (uint32_t i = 0; i < p->conns; i++) {
		struct wl_conn *k = &w->c[i];
		k->slots = malloc((size_t)w->slot_count * w->slot_bytes);
		if (!k->slots)
			goto nomem;
		/* Random filler once; per message only the header and tag change. */
		fill_random(k->slots, (size_t)w->slot_count * w->slot_bytes, &seed);
		uint64_t share = bulk / p->conns + (i < bulk % p->conns ? 1 : 0);
		k->pre = p->warmup + p->samples;
		k->total = k->pre + (uint32_t)share;
		w->total += k->total;
		if (k->pre == 0)
			w->at_barrier++;
		ready_push(w, i);
	}
	w->rtt_cap = (uint64_t)p->conns * p->samples;
	if (p->kind == WL_MANY || p->kind == WL_LOADED || stream)
		w->rtt_cap += p->messages;
	w->rtt_us = malloc((w->rtt_cap ? w->rtt_cap : 1) * sizeof *w->rtt_us);
	if (!w->rtt_us)
		goto nomem;
	if (w->at_barrier == p->conns)
		start_burst(w, bench_now_ns());
	/* The fault hits connection 0 in the middle of its burst (or of its
	 * sequential phase when it has no burst). */
	uint32_t share0 = w->c[0].total - w->c[0].pre;
	w->fault_at = share0 >= 2 ? w->c[0].pre + share0 / 2 : w->c[0].pre / 2;
	w->last_progress_ns = bench_now_ns();
	return 0;
nomem:
	snprintf(w->err, sizeof w->err, "out of memory for %u connections of %u B", p->conns, p->size);
	wl_free(w);
	return -1;
}

void wl_free(struct wl *w)
{
	if (w->c)
		for (uint32_t i = 0; i < w->p.conns; i++)
			free(w->c[i].slots);
	free(w->c);
	free(w->ready);
	free(w->rtt_us);
	free(w->fault_hold);
	free(w->first_done);
	for (int i = 0; i < 2; i++) {
		free(w->game.s[i].slots);
		free(w->game.s[i].rtt_us);
		w->game.s[i].slots = NULL;
		w->game.s[i].rtt_us = NULL;
	}
	w->c = NULL;
	w->ready = NULL;
	w->rtt_us = NULL;
	w->fault_hold = NULL;
	w->first_done = NULL;
}

/* Writes the length prefix and message id of connection c, stream, sent at
 * sent_at into slot; the filler after the header is already there. */
static void build(uint8_t *slot, uint32_t size, uint32_t c, uint32_t id, unsigned stream, uint64_t sent_at)
{
	uint8_t *m = slot + 4;
	put_le32(slot, size);
	m[0] = BENCH_MARK;
	m[1] = (uint8_t)stream;
	m[2] = m[3] = 0;
	put_le32(m + 4, c);
	put_le32(m + 8, id);
	put_le32(m + 12, size);
	put_le64(m + 16, sent_at);
	put_le64(m + 32, msg_tag(c, id, stream));
	put_le64(m + 24, msg_hash(m, size));
}

static void game_check(struct wl *w, uint64_t now);

uint8_t *wl_game_next(struct wl *w, enum wl_stream *stream)
{
	struct wl_game *g = &w->game;
	if (!g->ticking)
		return NULL;
	bool stream_row = w->p.kind == WL_STREAM;
	if (g->due == 0) {
		uint64_t now = bench_now_ns();
		if (stream_row && g->s[1].sent >= w->p.messages) {
			/* The stream's ticks are all sent: its echoes end the run. */
			g->ticking = false;
			g->stopped = true;
			g->stop_ns = now;
			game_check(w, now);
			return NULL;
		}
		if (now < g->next_tick_ns)
			return NULL;
		/* A late driver catches up tick by tick: every tick sends its
		 * messages, stamped with the time it was due. A stream's tick
		 * has only the reliable-ordered one. */
		g->tick_ns = g->next_tick_ns;
		g->next_tick_ns += g->period_ns;
		g->due = stream_row ? 1 : 2;
	}
	int i = 2 - g->due--;
	struct wl_game_stream *s = &g->s[i];
	uint32_t id = s->sent++;
	uint8_t *slot = s->slots + (size_t)(id % WL_GAME_SLOTS) * (4 + w->p.game_size);
	*stream = i ? WL_STREAM_GAME_RELIABLE : WL_STREAM_GAME_UNRELIABLE;
	build(slot, w->p.game_size, 0, id, *stream, g->tick_ns);
	return slot;
}

int wl_wait_ms(const struct wl *w, int max_ms)
{
	const struct wl_game *g = &w->game;
	if (!g->ticking)
		return max_ms;
	if (g->due)
		return 0;
	uint64_t now = bench_now_ns();
	if (g->next_tick_ns <= now)
		return 0;
	uint64_t ms = (g->next_tick_ns - now + 999999) / 1000000;
	return ms < (uint64_t)max_ms ? (int)ms : max_ms;
}

/* The game is over once its ticks stopped and every reliable echo is in,
 * and the unreliable ones too or a second has passed since the last tick
 * (the rest were lost). */
static void game_check(struct wl *w, uint64_t now)
{
	struct wl_game *g = &w->game;
	if (!w->game_open || !g->stopped)
		return;
	if (g->s[1].received == g->s[1].sent &&
	    (g->s[0].next == g->s[0].sent || now - g->stop_ns > 1000000000ull))
		w->game_open = false;
}

uint8_t *wl_next(struct wl *w, uint32_t c)
{
	if (!wl_can_send(w, c))
		return NULL;
	struct wl_conn *k = &w->c[c];
	uint32_t id = k->sent++;
	uint8_t *slot = k->slots + (size_t)(id % w->slot_count) * w->slot_bytes;
	build(slot, w->p.size, c, id, WL_STREAM_BULK, bench_now_ns());
	return slot;
}

void wl_connected(struct wl *w, uint32_t c)
{
	struct wl_conn *k = &w->c[c];
	if (k->connect_ns == 0)
		k->connect_ns = bench_now_ns() - k->connect_start_ns + 1;
}

static int verify(struct wl *w, uint32_t c, const uint8_t *m, size_t len)
{
	struct wl_conn *k = &w->c[c];
	uint32_t want = k->done;
	if (c >= w->p.conns) {
		snprintf(w->err, sizeof w->err, "echo on unknown connection %u", c);
		return -1;
	}
	if (len != w->p.size) {
		snprintf(w->err, sizeof w->err, "connection %u message %u: echo of %zu B, expected %u B", c,
			 want, len, w->p.size);
		return -1;
	}
	if (m[0] != BENCH_MARK || get_le32(m + 12) != w->p.size) {
		snprintf(w->err, sizeof w->err, "connection %u message %u: header corrupted", c, want);
		return -1;
	}
	if (get_le32(m + 4) != c) {
		snprintf(w->err, sizeof w->err, "connection %u: received connection %u's message", c,
			 get_le32(m + 4));
		return -1;
	}
	uint32_t id = get_le32(m + 8);
	if (id != want || want >= k->sent) {
		snprintf(w->err, sizeof w->err,
			 "connection %u: message %u arrived where %u was due (lost, reordered or duplicated)",
			 c, id, want);
		return -1;
	}
	if (get_le64(m + 32) != msg_tag(c, id, WL_STREAM_BULK) || get_le64(m + 24) != msg_hash(m, len)) {
		snprintf(w->err, sizeof w->err, "connection %u message %u: payload hash mismatch", c, id);
		return -1;
	}
	uint64_t now = bench_now_ns();
	uint64_t sent_at = get_le64(m + 16);
	bool sample = (id >= w->p.warmup && id < k->pre) ||
		      (id >= k->pre && (w->p.kind == WL_MANY || w->p.kind == WL_LOADED));
	if (sample && w->rtt_n < w->rtt_cap)
		w->rtt_us[w->rtt_n++] = (float)((double)(now - sent_at) / 1000.0);
	k->done++;
	w->verified++;
	w->last_progress_ns = now;
	if (id >= k->pre)
		w->burst_verified++;
	if (k->done == k->pre && k->pre > 0) {
		if (++w->at_barrier == w->p.conns && !w->burst) {
			start_burst(w, now);
			for (uint32_t i = 0; i < w->p.conns; i++)
				if (wl_can_send(w, i))
					ready_push(w, i);
		}
	}
	if (k->done == k->total && k->total > k->pre && !w->first_done_taken) {
		w->first_done_taken = true;
		for (uint32_t i = 0; i < w->p.conns; i++)
			w->first_done[i] = w->c[i].done > w->c[i].pre ? w->c[i].done - w->c[i].pre : 0;
	}
	if (c == 0 && k->done == k->total && w->game.ticking && w->p.kind == WL_PATH) {
		w->game.ticking = false;
		w->game.stopped = true;
		w->game.stop_ns = now;
	}
	if (wl_can_send(w, c))
		ready_push(w, c);
	if (w->verified == w->total)
		w->end_ns = now;
	game_check(w, now);
	return 0;
}

static int verify_game(struct wl *w, uint32_t c, const uint8_t *m, size_t len, unsigned stream)
{
	struct wl_game_stream *s = &w->game.s[stream == WL_STREAM_GAME_RELIABLE];
	const char *name = stream == WL_STREAM_GAME_RELIABLE ? "reliable" : "unreliable-sequenced";
	if (!w->p.game_hz || c != 0) {
		snprintf(w->err, sizeof w->err, "connection %u: a game message where no game stream runs", c);
		return -1;
	}
	if (len != w->p.game_size || m[0] != BENCH_MARK || get_le32(m + 12) != w->p.game_size ||
	    get_le32(m + 4) != c) {
		snprintf(w->err, sizeof w->err, "game %s message after %u: %zu B, header corrupted", name,
			 s->next, len);
		return -1;
	}
	uint32_t id = get_le32(m + 8);
	if (id >= s->sent || id < s->next || (stream == WL_STREAM_GAME_RELIABLE && id != s->next)) {
		snprintf(w->err, sizeof w->err,
			 "game %s message %u arrived where %u was due (lost, reordered or duplicated)", name,
			 id, s->next);
		return -1;
	}
	if (get_le64(m + 32) != msg_tag(c, id, stream) || get_le64(m + 24) != msg_hash(m, len)) {
		snprintf(w->err, sizeof w->err, "game %s message %u: payload hash mismatch", name, id);
		return -1;
	}
	uint64_t now = bench_now_ns();
	float rtt_us = (float)((double)(now - get_le64(m + 16)) / 1000.0);
	if (s->rtt_n < s->rtt_cap)
		s->rtt_us[s->rtt_n++] = rtt_us;
	/* A stream row's RTT figures are its messages'. */
	if (w->p.kind == WL_STREAM && w->rtt_n < w->rtt_cap)
		w->rtt_us[w->rtt_n++] = rtt_us;
	s->next = id + 1;
	s->received++;
	w->last_progress_ns = now;
	game_check(w, now);
	return 0;
}

/* Sends a message to its stream's check by byte [1]. */
static int verify_any(struct wl *w, uint32_t c, const uint8_t *m, size_t len)
{
	unsigned stream = len > 1 ? m[1] : 0;
	if (stream == WL_STREAM_BULK)
		return verify(w, c, m, len);
	if (stream == WL_STREAM_GAME_UNRELIABLE || stream == WL_STREAM_GAME_RELIABLE)
		return verify_game(w, c, m, len, stream);
	snprintf(w->err, sizeof w->err, "connection %u: message of unknown stream %u", c, stream);
	return -1;
}

int wl_deliver(struct wl *w, uint32_t c, const uint8_t *data, size_t len)
{
	if (c >= w->p.conns) {
		snprintf(w->err, sizeof w->err, "echo on unknown connection %u", c);
		return -1;
	}
	if (len > 1 && data[1] != WL_STREAM_BULK)
		return verify_any(w, c, data, len);
	if (w->p.fault != FAULT_NONE && c == 0) {
		if (w->fault_holding) {
			/* Reorder: the message after the held one goes first. */
			w->fault_holding = false;
			if (verify(w, c, data, len) < 0)
				return -1;
			return verify(w, c, w->fault_hold, w->fault_hold_len);
		}
		if (w->c[0].done == w->fault_at && len <= w->p.size && len > 0) {
			enum wl_fault f = w->p.fault;
			w->p.fault = FAULT_NONE; /* once */
			switch (f) {
			case FAULT_DROP: return 0;
			case FAULT_REORDER:
				memcpy(w->fault_hold, data, len);
				w->fault_hold_len = (uint32_t)len;
				w->fault_holding = true;
				w->p.fault = FAULT_REORDER;
				return 0;
			case FAULT_CORRUPT:
				memcpy(w->fault_hold, data, len);
				w->fault_hold[len - 1] ^= 0x01;
				return verify(w, c, w->fault_hold, len);
			case FAULT_NONE: break;
			}
		}
	}
	return verify_any(w, c, data, len);
}

int wl_check_stall(struct wl *w)
{
	if (w->err[0])
		return -1;
	if (bench_stop) {
		snprintf(w->err, sizeof w->err, "interrupted");
		return -1;
	}
	uint64_t now = bench_now_ns();
	game_check(w, now);
	if (now - w->last_progress_ns > (uint64_t)w->p.stall_ms * 1000000u) {
		snprintf(w->err, sizeof w->err,
			 "stalled: no verified echo for %u ms (%" PRIu64 "/%" PRIu64 " verified)",
			 w->p.stall_ms, w->verified, w->total);
		return -1;
	}
	return 0;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static double pct(const float *v, uint64_t n, double q)
{
	if (n == 0)
		return -1;
	uint64_t i = (uint64_t)(q * (double)(n - 1) + 0.5);
	return v[i];
}

/* The path row fields of the RESULT line: the burst's bounds on
 * CLOCK_MONOTONIC (the orchestrator takes the probe's and the competing
 * flow's figures over it), Jain's index over the connections, what the
 * client's driver knows it resent, and the game stream. */
static void report_path(struct wl *w)
{
	double sum = 0, sq = 0;
	for (uint32_t i = 0; i < w->p.conns; i++) {
		double x = w->first_done_taken ? w->first_done[i] : 0;
		sum += x;
		sq += x * x;
	}
	printf(" burst_start_ns=%" PRIu64 " burst_end_ns=%" PRIu64 " jain=%.4f", w->burst_start_ns, w->end_ns,
	       sq > 0 ? sum * sum / (w->p.conns * sq) : -1.0);
	if (w->resent_bytes >= 0)
		printf(" resent_bytes=%" PRId64, w->resent_bytes);
	if (!w->p.game_hz)
		return;
	static const char *name[2] = {"game_u", "game_r"};
	for (int i = 0; i < 2; i++) {
		struct wl_game_stream *s = &w->game.s[i];
		qsort(s->rtt_us, s->rtt_n, sizeof *s->rtt_us, cmp_float);
		printf(" %s_sent=%u %s_echoed=%u %s_p50_us=%.1f %s_p99_us=%.1f", name[i], s->sent, name[i],
		       s->received, name[i], pct(s->rtt_us, s->rtt_n, 0.50), name[i],
		       pct(s->rtt_us, s->rtt_n, 0.99));
	}
}

void wl_report(struct wl *w)
{
	qsort(w->rtt_us, w->rtt_n, sizeof *w->rtt_us, cmp_float);
	float *conn_ms = malloc(w->p.conns * sizeof *conn_ms);
	uint64_t cn = 0;
	for (uint32_t i = 0; conn_ms && i < w->p.conns; i++)
		if (w->c[i].connect_ns)
			conn_ms[cn++] = (float)((double)w->c[i].connect_ns / 1e6);
	if (conn_ms)
		qsort(conn_ms, cn, sizeof *conn_ms, cmp_float);
	uint64_t burst_ns = w->burst_verified ? w->end_ns - w->burst_start_ns : 0;
	printf("RESULT verified=%" PRIu64 " messages=%" PRIu64 " burst_messages=%" PRIu64 " burst_ns=%" PRIu64
	       " rtt_p50_us=%.2f rtt_p95_us=%.2f rtt_p99_us=%.2f connect_p50_ms=%.3f connect_p99_ms=%.3f"
	       " hwm_kib=%ld",
	       w->verified, w->total, w->burst_verified, burst_ns, pct(w->rtt_us, w->rtt_n, 0.50),
	       pct(w->rtt_us, w->rtt_n, 0.95), pct(w->rtt_us, w->rtt_n, 0.99), pct(conn_ms, cn, 0.50),
	       pct(conn_ms, cn, 0.99), bench_self_hwm_kib());
	if (w->frames_resent >= 0)
		printf(" resent=%" PRId64 " dups=%" PRId64 " resent_nack=%" PRId64 " resent_inferred=%" PRId64
		       " resent_probe=%" PRId64 " resent_timeout=%" PRId64 " resent_spurious=%" PRId64,
		       w->frames_resent, w->duplicates_in, w->resent_by_cause[0], w->resent_by_cause[1],
		       w->resent_by_cause[2], w->resent_by_cause[3], w->resent_spurious);
	if (w->wire_bytes >= 0)
		printf(" wire_bytes=%" PRId64, w->wire_bytes);
	if (w->p.kind == WL_PATH)
		report_path(w);
	printf("\n");
	fflush(stdout);
	free(conn_ms);
}
