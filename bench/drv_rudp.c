/* SPDX-License-Identifier: MIT */
/*
 * librudp columns: reliable-ordered messages on channel 0, 64-frame window.
 *   rudp-send:  rudp_send per message, events from rudp_service.
 *   rudp-batch: the client submits up to 16 ready messages per
 *               rudp_send_batch (never waiting to fill one); the server
 *               drains with rudp_recv_batch and echoes with rudp_send_batch.
 *   *-policy:   the same with the send-policy module on at its defaults.
 *   rudp-send-redundant: rudp-send with redundancy on every channel, both
 *               ways (rudp_peer_set_redundant_channels): each reliable
 *               message goes twice, its copy in the next datagram.
 * A client uses one host for all its connections; with more than one, each
 * has a socket of its own (rudp_config.socket_per_connect), since a server
 * knows a peer by its address and port. The server runs o->workers threads,
 * each with its own host on the port (reuse_port).
 * A game stream (path rows) goes on channels of its own: unreliable-
 * sequenced on 1, reliable-ordered on 2, both at RUDP_PRIORITY_IMMEDIATE;
 * the server echoes every message with the reliability and channel it came
 * with, the game's at that priority too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "rudp.h"

#define EVENTS 256

static void log_err(void *ud, int level, const char *msg)
{
	(void)ud;
	if (level <= 1)
		fprintf(stderr, "rudp: %s\n", msg);
}

static void base_config(rudp_config *cfg, uint32_t mtu)
{
	rudp_config_init(cfg);
	cfg->mtu = (uint16_t)(mtu ? mtu : 1428);
	cfg->window_frames = 64;
	cfg->log = log_err;
	cfg->log_level_max = 2;
	if (bench_wait_spin_us >= 0)
		cfg->io.wait_spin_us = (uint32_t)bench_wait_spin_us;
	if (bench_cc >= 0)
		cfg->congestion_control = bench_cc;
}

#define GAME_PRIORITY RUDP_PRIORITY_IMMEDIATE
#define CHANNEL_GAME_UNRELIABLE 1
#define CHANNEL_GAME_RELIABLE 2

/* Sends one message: on channel 0 as the column always did, on the game's
 * channels at the game's priority. */
static int send_msg(rudp_peer *peer, const void *data, size_t len, int reliability, int channel)
{
	if (channel == 0)
		return rudp_send(peer, data, len, reliability, channel);
	return rudp_send_ex(peer, data, len, reliability, channel, GAME_PRIORITY);
}

/* Echoes the server could not queue yet (send policy backpressure), kept
 * per peer in arrival order and sent on RUDP_EVENT_WRITABLE: one lane for
 * channel 0, one for the game's channels, which goes first. Allocated only
 * when a send is refused. An entry is its length (u32 LE), reliability,
 * channel, two zero bytes, then the message. */
#define ENTRY_HDR 8
struct lane {
	uint8_t *buf;
	size_t head, len, cap;
};
struct backlog {
	struct lane lane[2]; /* [0] channel 0, [1] the game's channels */
	struct backlog *next_all;
};

/* One server worker: a host of its own on the shared port, used by its
 * thread only (librudp's rule), the backlogs of that host's peers, and the
 * peers themselves for their resend counts at the end. */
struct rworker {
	rudp_host *h;
	bool batch;
	bool redundant;
	struct backlog *backlogs;
	rudp_peer **peers;
	uint32_t npeers, max_peers;
	uint64_t gone_resent; /* frames the peers that left had resent */
	uint64_t echoed_bytes;
};

static int lane_of(int channel)
{
	return channel != 0;
}

static int backlog_push(struct rworker *wk, rudp_peer *peer, const rudp_event *ev)
{
	struct backlog *b = rudp_peer_get_userdata(peer);
	if (!b) {
		b = calloc(1, sizeof *b);
		if (!b)
			return -1;
		b->next_all = wk->backlogs;
		wk->backlogs = b;
		rudp_peer_set_userdata(peer, b);
	}
	struct lane *l = &b->lane[lane_of(ev->channel)];
	if (l->head > 0 && l->head == l->len)
		l->head = l->len = 0;
	if (l->len + ENTRY_HDR + ev->len > l->cap) {
		size_t cap = (l->len + ENTRY_HDR + ev->len) * 2;
		uint8_t *n = realloc(l->buf, cap);
		if (!n)
			return -1;
		l->buf = n;
		l->cap = cap;
	}
	uint8_t *e = l->buf + l->len;
	put_le32(e, (uint32_t)ev->len);
	e[4] = (uint8_t)ev->reliability;
	e[5] = ev->channel;
	e[6] = e[7] = 0;
	memcpy(e + ENTRY_HDR, ev->data, ev->len);
	l->len += ENTRY_HDR + ev->len;
	return 0;
}

static bool backlog_busy(rudp_peer *peer, int lane)
{
	struct backlog *b = rudp_peer_get_userdata(peer);
	return b && b->lane[lane].head < b->lane[lane].len;
}

static int backlog_drain(rudp_peer *peer)
{
	struct backlog *b = rudp_peer_get_userdata(peer);
	for (int i = 1; b && i >= 0; i--) {
		struct lane *l = &b->lane[i];
		while (l->head < l->len) {
			const uint8_t *e = l->buf + l->head;
			uint32_t n = get_le32(e);
			int r = send_msg(peer, e + ENTRY_HDR, n, e[4], e[5]);
			if (r == RUDP_E_WOULD_BLOCK)
				return 0;
			if (r < 0)
				return r;
			l->head += ENTRY_HDR + n;
		}
	}
	return 0;
}

static int echo_one(struct rworker *wk, rudp_peer *peer, const rudp_event *ev)
{
	if (backlog_busy(peer, lane_of(ev->channel)))
		return backlog_push(wk, peer, ev) < 0 ? RUDP_E_NOMEM : 0;
	int r = send_msg(peer, ev->data, ev->len, ev->reliability, ev->channel);
	if (r == RUDP_E_WOULD_BLOCK)
		return backlog_push(wk, peer, ev) < 0 ? RUDP_E_NOMEM : 0;
	return r;
}

/* Echoes a run of received messages of one peer, those of channel 0 with
 * one batch send per run of them, the game's one by one at its priority. */
static int echo_batch(struct rworker *wk, rudp_peer *peer, const rudp_event *ev, int n)
{
	rudp_message out[EVENTS];
	for (int i = 0; i < n;) {
		if (ev[i].channel != 0) {
			int r = echo_one(wk, peer, &ev[i++]);
			if (r < 0)
				return r;
			continue;
		}
		int k = 0;
		while (i + k < n && ev[i + k].channel == 0)
			k++;
		const rudp_event *run = ev + i;
		i += k;
		if (backlog_busy(peer, 0)) {
			for (int j = 0; j < k; j++)
				if (backlog_push(wk, peer, &run[j]) < 0)
					return RUDP_E_NOMEM;
			continue;
		}
		for (int j = 0; j < k; j++)
			out[j] = (rudp_message){run[j].data, run[j].len, run[j].reliability, run[j].channel};
		int err = 0;
		int q = rudp_send_batch(peer, out, (size_t)k, &err);
		if (q < 0)
			return q;
		if (q < k && err != RUDP_E_WOULD_BLOCK)
			return err;
		for (int j = q; j < k; j++)
			if (backlog_push(wk, peer, &run[j]) < 0)
				return RUDP_E_NOMEM;
	}
	return 0;
}

static uint64_t frames_resent(const rudp_peer *peer)
{
	rudp_peer_stats st;
	return rudp_peer_stats_get(peer, &st) == 0 ? st.frames_retransmitted : 0;
}

/* A peer joins the worker's list on CONNECT and leaves it, its resends
 * counted, on DISCONNECT (its pointer is not valid after that event). */
static void peer_track(struct rworker *wk, rudp_peer *peer, bool gone)
{
	if (!gone) {
		if (wk->npeers < wk->max_peers)
			wk->peers[wk->npeers++] = peer;
		return;
	}
	for (uint32_t i = 0; i < wk->npeers; i++)
		if (wk->peers[i] == peer) {
			wk->gone_resent += frames_resent(peer);
			wk->peers[i] = wk->peers[--wk->npeers];
			return;
		}
}

static void set_policy(rudp_host *h, bool policy)
{
	if (!policy)
		return;
	/* BENCH.md: the module on at its defaults (64 MiB in flight, 256 KiB
	 * reliable soft budget, 64 KiB unreliable reserve, 256 KiB per flush). */
	rudp_send_options so;
	rudp_send_options_init(&so);
	rudp_host_set_send_options(h, &so);
}

static int rudp_worker_run(struct bench_worker *bw)
{
	struct rworker *wk = bw->drv;
	rudp_host *h = wk->h;
	bool batch = wk->batch;
	rudp_event ev[EVENTS];
	int rc = 0, r;
	while (!bench_stop && rc == 0) {
		int n = batch ? rudp_recv_batch(h, ev, EVENTS, 50) : rudp_service(h, ev, EVENTS, 50);
		if (n < 0) {
			bench_fail("rudp server: service: %s", rudp_strerror(n));
			rc = 1;
			break;
		}
		for (int i = 0; i < n;) {
			rudp_peer *peer = ev[i].peer;
			if (ev[i].type == RUDP_EVENT_WRITABLE) {
				r = backlog_drain(peer);
			} else if (ev[i].type != RUDP_EVENT_RECEIVE) {
				if (ev[i].type == RUDP_EVENT_CONNECT)
					bw->conns++;
				if (ev[i].type == RUDP_EVENT_CONNECT && wk->redundant)
					rudp_peer_set_redundant_channels(peer, UINT32_MAX);
				if (ev[i].type == RUDP_EVENT_CONNECT || ev[i].type == RUDP_EVENT_DISCONNECT)
					peer_track(wk, peer, ev[i].type == RUDP_EVENT_DISCONNECT);
				r = 0;
			} else if (batch) {
				int k = i;
				while (k < n && ev[k].type == RUDP_EVENT_RECEIVE && ev[k].peer == peer)
					wk->echoed_bytes += ev[k++].len;
				r = echo_batch(wk, peer, ev + i, k - i);
				bw->echoes += (uint64_t)(k - i);
				i = k;
				goto checked;
			} else {
				r = echo_one(wk, peer, &ev[i]);
				wk->echoed_bytes += ev[i].len;
				bw->echoes++;
			}
			i++;
		checked:
			if (r < 0) {
				/* Dropping an echo would fail the client's verifier; say why. */
				bench_fail("rudp server: send: %s", rudp_strerror(r));
				rc = 1;
				break;
			}
		}
		if (n > 0 && !batch)
			rudp_flush(h);
	}
	/* Resent bytes, estimated: frames resent times the mean message
	 * echoed (each message of these rows fits one frame). */
	uint64_t resent = wk->gone_resent;
	for (uint32_t i = 0; i < wk->npeers; i++)
		resent += frames_resent(wk->peers[i]);
	bw->resent_bytes = bw->echoes ? (int64_t)(resent * (wk->echoed_bytes / bw->echoes)) : 0;
	return rc;
}

int rudp_server_drv(const char *column, const struct drv_server_opts *o)
{
	bool batch = strstr(column, "batch") != NULL, policy = strstr(column, "policy") != NULL;
	unsigned nw = o->workers ? o->workers : 1;
	rudp_config cfg;
	base_config(&cfg, o->mtu);
	cfg.bind_address = o->bind;
	/* Every client may hash to the same worker: each host can hold them all. */
	cfg.max_peers = o->conns_hint + 64 > 1024 ? o->conns_hint + 64 : 1024;
	/* Thousands of clients connect at once: the handshake must not time out
	 * while the server works through them. */
	cfg.connect_timeout_ms = 30000;
	cfg.handshake_timeout_ms = 30000;
	cfg.max_pending_handshakes = cfg.max_peers;
	cfg.max_pending_per_address = cfg.max_peers; /* every client is on one IP here */
	cfg.offline_rate_per_address = 0;
	/* One host per worker on the same port; the kernel keeps each client's
	 * datagrams on one socket, so a peer belongs to one host and thread. */
	cfg.reuse_port = nw > 1;
	struct rworker wk[BENCH_MAX_WORKERS];
	struct bench_worker bw[BENCH_MAX_WORKERS];
	memset(bw, 0, sizeof bw);
	unsigned made = 0;
	int r = 0, rc = 1;
	for (; made < nw; made++) {
		wk[made] = (struct rworker){.h = NULL,
					    .batch = batch,
					    .redundant = strstr(column, "redundant") != NULL,
					    .max_peers = cfg.max_peers};
		wk[made].peers = calloc(cfg.max_peers, sizeof *wk[made].peers);
		r = wk[made].peers ? rudp_host_create(&cfg, &wk[made].h) : RUDP_E_NOMEM;
		if (r < 0) {
			free(wk[made].peers);
			break;
		}
		set_policy(wk[made].h, policy);
		bw[made].drv = &wk[made];
	}
	if (made < nw) {
		bench_fail("rudp server: %s on %s (worker %u of %u)", rudp_strerror(r), o->bind, made + 1,
			   nw);
	} else {
		bench_signal_ready(o->ready_fd);
		rc = bench_run_workers(bw, nw, rudp_worker_run);
		bench_server_summary(o->ready_fd, bw, nw);
	}
	for (unsigned i = 0; i < made; i++) {
		rudp_host_destroy(wk[i].h);
		free(wk[i].peers);
		while (wk[i].backlogs) {
			struct backlog *b = wk[i].backlogs;
			wk[i].backlogs = b->next_all;
			free(b->lane[0].buf);
			free(b->lane[1].buf);
			free(b);
		}
	}
	return rc;
}

struct rclient {
	struct wl *w;
	rudp_host *h; /* one host for every connection */
	rudp_peer **peer;
	uint32_t *unsent; /* messages built but refused by the send policy: the last ids sent */
	uint32_t connected;
	bool batch;
	/* Reliable game messages the send policy refused, oldest first
	 * (they stay in the game's slots meanwhile). */
	uint8_t *game_held[WL_GAME_SLOTS];
	uint32_t game_held_head, game_held_len;
	uint64_t game_sent, game_bytes; /* game messages handed to the host */
};

/* The connection an event is about: its index rides on the peer. */
static uint32_t conn_of(const rudp_event *e)
{
	return (uint32_t)(uintptr_t)rudp_peer_get_userdata(e->peer);
}

static int send_ready(struct rclient *t, uint32_t c);

/* Hands the game stream's due messages to connection 0's peer, refused
 * reliable ones first and in order. A refused unreliable message is one
 * the stream lost. */
static int send_game(struct rclient *t)
{
	struct wl *w = t->w;
	size_t len = w->p.game_size;
	int r;
	while (t->game_held_len) {
		uint8_t *m = t->game_held[t->game_held_head];
		r = rudp_send_ex(t->peer[0], m, len, RUDP_RELIABLE_ORDERED, CHANNEL_GAME_RELIABLE,
				 GAME_PRIORITY);
		if (r == RUDP_E_WOULD_BLOCK)
			return 0;
		if (r < 0)
			goto failed;
		t->game_held_head = (t->game_held_head + 1) % WL_GAME_SLOTS;
		t->game_held_len--;
		t->game_sent++;
		t->game_bytes += len;
	}
	enum wl_stream st;
	uint8_t *slot;
	while ((slot = wl_game_next(w, &st)) != NULL) {
		bool reliable = st == WL_STREAM_GAME_RELIABLE;
		r = t->game_held_len && reliable
			    ? RUDP_E_WOULD_BLOCK
			    : rudp_send_ex(t->peer[0], slot + 4, len,
					   reliable ? RUDP_RELIABLE_ORDERED : RUDP_UNRELIABLE_SEQUENCED,
					   reliable ? CHANNEL_GAME_RELIABLE : CHANNEL_GAME_UNRELIABLE,
					   GAME_PRIORITY);
		if (r == RUDP_E_WOULD_BLOCK && reliable) {
			if (t->game_held_len == WL_GAME_SLOTS) {
				snprintf(w->err, sizeof w->err,
					 "game stream: %d reliable messages refused by the send policy",
					 WL_GAME_SLOTS);
				return -1;
			}
			t->game_held[(t->game_held_head + t->game_held_len++) % WL_GAME_SLOTS] = slot + 4;
			continue;
		}
		if (r < 0 && r != RUDP_E_WOULD_BLOCK)
			goto failed;
		if (r >= 0) {
			t->game_sent++;
			t->game_bytes += len;
		}
	}
	return 0;
failed:
	snprintf(w->err, sizeof w->err, "game stream: send: %s", rudp_strerror(r));
	return -1;
}

static int handle(struct rclient *t, const rudp_event *ev, int n)
{
	struct wl *w = t->w;
	for (int i = 0; i < n; i++) {
		uint32_t c = conn_of(&ev[i]);
		switch (ev[i].type) {
		case RUDP_EVENT_CONNECT:
			wl_connected(w, c);
			t->connected++;
			break;
		case RUDP_EVENT_RECEIVE:
			if (wl_deliver(w, c, ev[i].data, ev[i].len) < 0)
				return -1;
			break;
		case RUDP_EVENT_WRITABLE: /* the send policy takes more: retry the refused ones */
			if (c == 0 && send_game(t) < 0)
				return -1;
			if (t->unsent[c] && t->connected == w->p.conns && send_ready(t, c) < 0)
				return -1;
			break;
		case RUDP_EVENT_DISCONNECT:
			snprintf(w->err, sizeof w->err, "connection %u: disconnected (%s)", c,
				 rudp_reason_string(ev[i].reason));
			return -1;
		}
	}
	return 0;
}

static uint8_t *slot_of(struct wl *w, uint32_t c, uint32_t id)
{
	return w->c[c].slots + (size_t)(id % w->slot_count) * w->slot_bytes;
}

/* Sends connection c's refused messages, then new ones, up to 16 per batch
 * call (never waiting to fill a batch). What is queued goes out with the
 * host's next service or flush call, together with every other
 * connection's. */
static int send_ready(struct rclient *t, uint32_t c)
{
	struct wl *w = t->w;
	for (;;) {
		rudp_message m[16];
		int k = 0;
		uint32_t first = w->c[c].sent - t->unsent[c];
		while (k < (t->batch ? 16 : 1) && t->unsent[c] > 0) {
			m[k] = (rudp_message){slot_of(w, c, first + (uint32_t)k) + 4, w->p.size,
					      RUDP_RELIABLE_ORDERED, 0};
			k++;
			t->unsent[c]--;
		}
		uint8_t *slot;
		while (k < (t->batch ? 16 : 1) && t->unsent[c] == 0 && (slot = wl_next(w, c)) != NULL)
			m[k++] = (rudp_message){slot + 4, w->p.size, RUDP_RELIABLE_ORDERED, 0};
		if (k == 0)
			break;
		int q, err = 0;
		if (t->batch) {
			q = rudp_send_batch(t->peer[c], m, (size_t)k, &err);
			if (q < 0)
				err = q;
		} else {
			err = rudp_send(t->peer[c], m[0].data, m[0].len, RUDP_RELIABLE_ORDERED, 0);
			q = err < 0 ? 0 : 1;
		}
		if (q < k) {
			if (err != RUDP_E_WOULD_BLOCK) {
				snprintf(w->err, sizeof w->err, "connection %u: send: %s", c,
					 rudp_strerror(err));
				return -1;
			}
			t->unsent[c] += (uint32_t)(k - q); /* retried after WRITABLE */
			break;
		}
	}
	/* rudp-send on one connection sends at once, as an application that
	 * calls rudp_send between service calls would see; batch leaves it to
	 * the next receive call, and many connections send together. */
	if (!t->batch && w->p.conns == 1)
		rudp_flush(t->h);
	return 0;
}

/* Every connection on one host: with more than one, each gets a socket of
 * its own (socket_per_connect; RakNet knows a connection by its address
 * and port), and all share the host's ring, buffers and event queue. */
int rudp_client_drv(const char *column, const struct drv_client_opts *o, struct wl *w)
{
	bool policy = strstr(column, "policy") != NULL;
	uint32_t nc = w->p.conns;
	struct rclient t = {.w = w, .batch = strstr(column, "batch") != NULL};
	t.peer = calloc(nc, sizeof *t.peer);
	t.unsent = calloc(nc, sizeof *t.unsent);
	int rc = -1;
	rudp_event ev[EVENTS];
	rudp_config cfg;
	base_config(&cfg, w->p.mtu);
	cfg.bind_address = "0.0.0.0:0";
	cfg.max_peers = nc;
	cfg.max_pending_handshakes = 1; /* an outgoing-only host: none come in */
	cfg.connect_timeout_ms = 30000;
	if (nc > 1) {
		cfg.socket_per_connect = 1;
		/* Many sockets in one process: keep each one's buffers modest,
		 * and read no more than about 1 MiB of messages ahead of the
		 * client: what the host has read but the client not yet taken
		 * is resident memory (at the default 65,536 events the queue's
		 * arena reached 32 MiB at 2,048 connections of 800 B, 8 MiB at
		 * 4 MiB ahead), while what waits in the sockets is not. The
		 * same goes for the io_uring receive pool: one buffer per
		 * connection instead of the default two (3.4 MiB instead of
		 * 13.4 at 2,048), since each connection has at most a window in
		 * flight and the rest waits in its socket. Measured in
		 * docs/benchmarks.md ("Less read ahead on the many-connection
		 * client"): 800 B x 2,048 client RSS 107-112 -> 90-94 MiB,
		 * throughput not lower; 64 B x 1,024 within 2 %. Bounded by
		 * bytes, not a fixed count: 4,096 events (256 KiB of 64 B
		 * messages) raised the loaded p99 by a third; the floor of
		 * 1,024 only applies to messages above 1 KiB. */
		if (nc > 64) {
			cfg.io.socket_rcvbuf = cfg.io.socket_sndbuf = 256 * 1024;
			cfg.io.rx_buffers = nc < 32768 ? nc : 32768;
			uint32_t ahead = (1u << 20) / w->p.size;
			cfg.max_pending_events = ahead < 1024 ? 1024 : ahead > 65536 ? 65536 : ahead;
		}
	}
	if (!t.peer || !t.unsent) {
		snprintf(w->err, sizeof w->err, "out of memory");
		goto out;
	}
	int r = rudp_host_create(&cfg, &t.h);
	if (r < 0) {
		snprintf(w->err, sizeof w->err, "rudp_host_create: %s", rudp_strerror(r));
		goto out;
	}
	set_policy(t.h, policy);
	for (uint32_t c = 0; c < nc; c++) {
		w->c[c].connect_start_ns = bench_now_ns();
		r = rudp_connect(t.h, o->connect, &t.peer[c]);
		if (r < 0) {
			snprintf(w->err, sizeof w->err, "rudp_connect %s: %s (connection %u)", o->connect,
				 rudp_strerror(r), c);
			goto out;
		}
		rudp_peer_set_userdata(t.peer[c], (void *)(uintptr_t)c);
		if (strstr(column, "redundant"))
			rudp_peer_set_redundant_channels(t.peer[c], UINT32_MAX);
	}
	rudp_flush(t.h);
	while (t.connected < nc || !wl_finished(w)) {
		if (t.connected == nc) {
			int c;
			if (send_game(&t) < 0)
				goto out;
			while ((c = wl_pop_ready(w)) >= 0)
				if (send_ready(&t, (uint32_t)c) < 0)
					goto out;
			if (wl_finished(w))
				break;
		}
		int wait = wl_wait_ms(w, 5);
		int n = t.batch ? rudp_recv_batch(t.h, ev, EVENTS, wait)
				: rudp_service(t.h, ev, EVENTS, wait);
		if (n < 0 || handle(&t, ev, n) < 0)
			goto out;
		if (nc == 1 && t.unsent[0] && t.connected == 1 && send_ready(&t, 0) < 0)
			goto out;
		if (wl_check_stall(w) < 0)
			goto out;
	}
	rc = 0;
out:
	/* What the protocol resent to get the run through: spurious resends
	 * show as the other side's duplicates. */
	if (t.h && t.peer) {
		w->frames_resent = w->duplicates_in = w->resent_spurious = w->wire_bytes = 0;
		memset(w->resent_by_cause, 0, sizeof w->resent_by_cause);
		for (uint32_t c = 0; c < nc; c++) {
			rudp_peer_stats st;
			if (t.peer[c] && rudp_peer_stats_get(t.peer[c], &st) == 0) {
				w->frames_resent += (int64_t)st.frames_retransmitted;
				w->duplicates_in += (int64_t)st.duplicates_dropped;
				w->resent_by_cause[0] += (int64_t)st.resent_nack;
				w->resent_by_cause[1] += (int64_t)st.resent_inferred;
				w->resent_by_cause[2] += (int64_t)st.resent_probe;
				w->resent_by_cause[3] += (int64_t)st.resent_timeout;
				w->resent_spurious += (int64_t)st.resent_spurious;
				w->wire_bytes += (int64_t)st.bytes_sent;
			}
		}
		/* Bytes, estimated: frames resent times the mean message handed
		 * to the host (each message of the path rows fits one frame). */
		uint64_t msgs = t.game_sent, bytes = t.game_bytes;
		for (uint32_t c = 0; c < nc; c++) {
			msgs += w->c[c].sent;
			bytes += (uint64_t)w->c[c].sent * w->p.size;
		}
		w->resent_bytes = msgs ? w->frames_resent * (int64_t)(bytes / msgs) : 0;
	}
	rudp_host_destroy(t.h);
	free(t.peer);
	free(t.unsent);
	return rc;
}
