/* SPDX-License-Identifier: MIT */
/*
 * librudp columns: reliable-ordered messages on channel 0, 64-frame window.
 *   rudp-send:  rudp_send per message, events from rudp_service.
 *   rudp-batch: the client submits up to 16 ready messages per
 *               rudp_send_batch (never waiting to fill one); the server
 *               drains with rudp_recv_batch and echoes with rudp_send_batch.
 *   *-policy:   the same with the send-policy module on at its defaults.
 * A client uses one host for all its connections; with more than one, each
 * has a socket of its own (rudp_config.socket_per_connect), since a server
 * knows a peer by its address and port. The server runs o->workers threads,
 * each with its own host on the port (reuse_port).
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
		cfg->wait_spin_us = (uint32_t)bench_wait_spin_us;
	if (bench_cc >= 0)
		cfg->congestion_control = bench_cc;
}

/* Echoes the server could not queue yet (send policy backpressure): kept
 * per peer in arrival order and sent on RUDP_EVENT_WRITABLE. Allocated only
 * when a send is refused. */
struct backlog {
	uint8_t *buf;
	size_t head, len, cap;
	struct backlog *next_all;
};

/* One server worker: a host of its own on the shared port, used by its
 * thread only (librudp's rule), and the backlogs of that host's peers. */
struct rworker {
	rudp_host *h;
	bool batch;
	struct backlog *backlogs;
};

static int backlog_push(struct rworker *wk, rudp_peer *peer, const uint8_t *data, size_t len)
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
	if (b->head > 0 && b->head == b->len)
		b->head = b->len = 0;
	if (b->len + 4 + len > b->cap) {
		size_t cap = (b->len + 4 + len) * 2;
		uint8_t *n = realloc(b->buf, cap);
		if (!n)
			return -1;
		b->buf = n;
		b->cap = cap;
	}
	put_le32(b->buf + b->len, (uint32_t)len);
	memcpy(b->buf + b->len + 4, data, len);
	b->len += 4 + len;
	return 0;
}

static bool backlog_busy(rudp_peer *peer)
{
	struct backlog *b = rudp_peer_get_userdata(peer);
	return b && b->head < b->len;
}

static int backlog_drain(rudp_peer *peer)
{
	struct backlog *b = rudp_peer_get_userdata(peer);
	while (b && b->head < b->len) {
		uint32_t n = get_le32(b->buf + b->head);
		int r = rudp_send(peer, b->buf + b->head + 4, n, RUDP_RELIABLE_ORDERED, 0);
		if (r == RUDP_E_WOULD_BLOCK)
			return 0;
		if (r < 0)
			return r;
		b->head += 4 + n;
	}
	return 0;
}

static int echo_one(struct rworker *wk, rudp_peer *peer, const uint8_t *data, size_t len)
{
	if (backlog_busy(peer))
		return backlog_push(wk, peer, data, len) < 0 ? RUDP_E_NOMEM : 0;
	int r = rudp_send(peer, data, len, RUDP_RELIABLE_ORDERED, 0);
	if (r == RUDP_E_WOULD_BLOCK)
		return backlog_push(wk, peer, data, len) < 0 ? RUDP_E_NOMEM : 0;
	return r;
}

/* Echoes a run of received messages of one peer with one batch send. */
static int echo_batch(struct rworker *wk, rudp_peer *peer, const rudp_event *ev, int n)
{
	rudp_message out[EVENTS];
	if (backlog_busy(peer)) {
		for (int i = 0; i < n; i++)
			if (backlog_push(wk, peer, ev[i].data, ev[i].len) < 0)
				return RUDP_E_NOMEM;
		return 0;
	}
	for (int i = 0; i < n; i++)
		out[i] = (rudp_message){ev[i].data, ev[i].len, ev[i].reliability, ev[i].channel};
	int err = 0;
	int q = rudp_send_batch(peer, out, (size_t)n, &err);
	if (q < 0)
		return q;
	if (q < n && err != RUDP_E_WOULD_BLOCK)
		return err;
	for (int i = q; i < n; i++)
		if (backlog_push(wk, peer, ev[i].data, ev[i].len) < 0)
			return RUDP_E_NOMEM;
	return 0;
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
				r = 0;
			} else if (batch) {
				int k = i;
				while (k < n && ev[k].type == RUDP_EVENT_RECEIVE && ev[k].peer == peer)
					k++;
				r = echo_batch(wk, peer, ev + i, k - i);
				bw->echoes += (uint64_t)(k - i);
				i = k;
				goto checked;
			} else {
				r = echo_one(wk, peer, ev[i].data, ev[i].len);
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
		wk[made] = (struct rworker){.h = NULL, .batch = batch, .backlogs = NULL};
		r = rudp_host_create(&cfg, &wk[made].h);
		if (r < 0)
			break;
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
		while (wk[i].backlogs) {
			struct backlog *b = wk[i].backlogs;
			wk[i].backlogs = b->next_all;
			free(b->buf);
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
};

/* The connection an event is about: its index rides on the peer. */
static uint32_t conn_of(const rudp_event *e)
{
	return (uint32_t)(uintptr_t)rudp_peer_get_userdata(e->peer);
}

static int send_ready(struct rclient *t, uint32_t c);

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
			cfg.socket_rcvbuf = cfg.socket_sndbuf = 256 * 1024;
			cfg.rx_buffers = nc < 32768 ? nc : 32768;
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
	}
	rudp_flush(t.h);
	while (t.connected < nc || !wl_finished(w)) {
		if (t.connected == nc) {
			int c;
			while ((c = wl_pop_ready(w)) >= 0)
				if (send_ready(&t, (uint32_t)c) < 0)
					goto out;
			if (wl_finished(w))
				break;
		}
		int n = t.batch ? rudp_recv_batch(t.h, ev, EVENTS, 5) : rudp_service(t.h, ev, EVENTS, 5);
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
		w->frames_resent = w->duplicates_in = w->resent_spurious = 0;
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
			}
		}
	}
	rudp_host_destroy(t.h);
	free(t.peer);
	free(t.unsent);
	return rc;
}
