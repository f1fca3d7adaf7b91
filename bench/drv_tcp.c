/* SPDX-License-Identifier: MIT */
/*
 * TCP columns. Records are a 4-byte LE length then the message.
 *   tcp:       one whole-record write per message on both sides.
 *   tcp-batch: the client writes all its ready messages with one writev; the
 *              server echoes every complete record it has read with one write.
 * TCP_NODELAY everywhere; buffers are allocated once per connection. The
 * server runs o->workers threads, each with its own SO_REUSEPORT listening
 * socket and the connections the kernel gave it. Neither side ever waits
 * on one full socket: an echo the server's socket does not take at once
 * waits in the connection's output buffer, and the connection is not read
 * again until it has gone; a client's records wait in the connection's
 * queue for EPOLLOUT while the other connections go on. One connection
 * whose peer reads slowly (a bottleneck) never holds up the others.
 * A game stream (path rows) goes in-band, on connection 0's byte stream.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench.h"

#define TCP_RBUF (256 * 1024)

struct tconn {
	int fd;
	uint8_t *buf;
	size_t len, cap;
	uint8_t *out; /* server: echoes the socket has not taken yet (cap bytes) */
	size_t out_len;
	/* client: records built and not yet all written, oldest first (they
	 * stay in the workload's slots meanwhile); blocked: the socket is
	 * full and the connection waits for EPOLLOUT. */
	struct iovec *pend;
	uint32_t pend_head, pend_len, pend_cap;
	bool blocked;
};

const char *bench_tcp_cc;

int bench_set_tcp_cc_name(int fd, const char *cc)
{
	if (!cc || !cc[0])
		return 0;
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc));
}

int bench_set_tcp_cc(int fd)
{
	return bench_set_tcp_cc_name(fd, bench_tcp_cc);
}

/* TCP_INFO of fd; false when it fails or the kernel's struct ends before
 * `need` bytes (an older kernel without the field asked for). */
static bool tcp_info_of(int fd, struct tcp_info *ti, size_t need)
{
	socklen_t len = sizeof *ti;

	memset(ti, 0, sizeof *ti);
	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len) == 0 && len >= need;
}

int64_t bench_tcp_bytes_retrans(int fd)
{
	struct tcp_info ti;

	if (!tcp_info_of(fd, &ti,
			 offsetof(struct tcp_info, tcpi_bytes_retrans) + sizeof ti.tcpi_bytes_retrans))
		return -1;
	return (int64_t)ti.tcpi_bytes_retrans;
}

int64_t bench_tcp_bytes_sent(int fd)
{
	struct tcp_info ti;

	if (!tcp_info_of(fd, &ti, offsetof(struct tcp_info, tcpi_bytes_sent) + sizeof ti.tcpi_bytes_sent))
		return -1;
	return (int64_t)ti.tcpi_bytes_sent;
}

static int set_nodelay(int fd)
{
	int one = 1;
	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ---- server ---- */

/* One worker: its own listening socket, epoll set and connections. */
struct tcp_worker {
	int ls, ep;
	bool batch;
	int64_t resent; /* bytes retransmitted on closed connections; -1: unknown */
};

/* Writes what the socket takes of data; keeps the rest (and everything
 * after it) in k->out for EPOLLOUT. Returns 0 or -1 (connection broken). */
static int echo_out(struct tconn *k, const uint8_t *data, size_t n)
{
	if (k->out_len == 0) {
		ssize_t w = write(k->fd, data, n);
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (w > 0) {
			data += w;
			n -= (size_t)w;
		}
	}
	if (n == 0)
		return 0;
	if (!k->out && !(k->out = malloc(k->cap)))
		return -1;
	if (k->out_len + n > k->cap)
		return -1; /* cannot happen: one read's echoes fit in cap */
	memcpy(k->out + k->out_len, data, n);
	k->out_len += n;
	return 0;
}

/* Reads what connection k has and echoes every complete record; counts them
 * into *echoes. Stops reading while echoes wait in k->out (the connection
 * then waits for EPOLLOUT). Returns 0, or -1 when the connection is done. */
static int server_echo(struct tcp_worker *t, struct tconn *k, uint64_t *echoes)
{
	while (k->out_len == 0) {
		if (k->len == k->cap)
			return -1; /* a record larger than the buffer: not ours */
		ssize_t r = read(k->fd, k->buf + k->len, k->cap - k->len);
		if (r == 0)
			return -1;
		if (r < 0)
			return errno == EAGAIN ? 0 : -1;
		k->len += (size_t)r;
		size_t off = 0;
		while (k->len - off >= 4) {
			uint32_t n = get_le32(k->buf + off);
			if (n > BENCH_MAX_SIZE || n + 4 > k->cap)
				return -1;
			if (k->len - off < 4 + (size_t)n)
				break;
			if (!t->batch && echo_out(k, k->buf + off, 4 + (size_t)n) < 0)
				return -1;
			off += 4 + n;
			(*echoes)++;
		}
		if (t->batch && off > 0 && echo_out(k, k->buf, off) < 0)
			return -1;
		memmove(k->buf, k->buf + off, k->len - off);
		k->len -= off;
	}
	struct epoll_event e = {.events = EPOLLOUT, .data.u64 = (uint64_t)k->fd};
	return epoll_ctl(t->ep, EPOLL_CTL_MOD, k->fd, &e);
}

/* EPOLLOUT: writes what waits in k->out; once all is gone, reads again. */
static int server_flush(struct tcp_worker *t, struct tconn *k, uint64_t *echoes)
{
	ssize_t w = write(k->fd, k->out, k->out_len);
	if (w < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	memmove(k->out, k->out + w, k->out_len - (size_t)w);
	k->out_len -= (size_t)w;
	if (k->out_len)
		return 0;
	struct epoll_event e = {.events = EPOLLIN, .data.u64 = (uint64_t)k->fd};
	if (epoll_ctl(t->ep, EPOLL_CTL_MOD, k->fd, &e) < 0)
		return -1;
	return server_echo(t, k, echoes);
}

static void server_close(struct tcp_worker *t, struct tconn *k)
{
	int64_t r = bench_tcp_bytes_retrans(k->fd);
	t->resent = t->resent < 0 || r < 0 ? -1 : t->resent + r;
	close(k->fd);
	free(k->buf);
	free(k->out);
	free(k);
}

static int tcp_worker_run(struct bench_worker *bw)
{
	struct tcp_worker *t = bw->drv;
	size_t cap = 1024;
	struct tconn **conns = calloc(cap, sizeof *conns); /* by fd */
	struct epoll_event evs[256];
	int rc = 0;
	bw->conns = 0;
	t->resent = 0;
	if (!conns)
		return 1;
	while (!bench_stop && rc == 0) {
		int n = epoll_wait(t->ep, evs, 256, 200);
		for (int i = 0; i < n && rc == 0; i++) {
			if (evs[i].data.u64 == UINT64_MAX) {
				int fd;
				while ((fd = accept4(t->ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					set_nodelay(fd);
					bench_set_tcp_cc(fd);
					if ((size_t)fd >= cap) {
						size_t nc = (size_t)fd * 2;
						struct tconn **g = realloc(conns, nc * sizeof *g);
						if (!g) {
							close(fd);
							rc = 1;
							break;
						}
						memset(g + cap, 0, (nc - cap) * sizeof *g);
						conns = g;
						cap = nc;
					}
					struct tconn *k = calloc(1, sizeof *k);
					if (k) {
						k->cap = TCP_RBUF + BENCH_MAX_SIZE / 4;
						k->buf = malloc(k->cap);
					}
					if (!k || !k->buf) {
						free(k);
						close(fd);
						rc = 1;
						break;
					}
					k->fd = fd;
					conns[fd] = k;
					bw->conns++;
					struct epoll_event e = {.events = EPOLLIN, .data.u64 = (uint64_t)fd};
					epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &e);
				}
				continue;
			}
			struct tconn *k = conns[evs[i].data.u64];
			if (!k)
				continue;
			int r = (evs[i].events & EPOLLOUT) && k->out_len ? server_flush(t, k, &bw->echoes)
									 : server_echo(t, k, &bw->echoes);
			if (r < 0) {
				conns[evs[i].data.u64] = NULL;
				server_close(t, k);
			}
		}
	}
	if (rc)
		bench_fail("tcp server: worker %u: out of memory", bw->index);
	for (size_t i = 0; i < cap; i++)
		if (conns[i])
			server_close(t, conns[i]);
	free(conns);
	bw->resent_bytes = t->resent;
	return rc;
}

int tcp_server(const char *column, const struct drv_server_opts *o)
{
	bool batch = strcmp(column, "tcp-batch") == 0;
	struct sockaddr_in sin;
	if (bench_parse_addr(o->bind, &sin) < 0) {
		bench_fail("bad --bind %s (want IPv4:port)", o->bind);
		return 2;
	}
	unsigned nw = o->workers ? o->workers : 1;
	struct tcp_worker t[BENCH_MAX_WORKERS];
	struct bench_worker bw[BENCH_MAX_WORKERS];
	memset(bw, 0, sizeof bw);
	unsigned made = 0;
	int rc = 1;
	for (; made < nw; made++) {
		int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		int one = 1;
		t[made] = (struct tcp_worker){.ls = ls, .ep = -1, .batch = batch, .resent = 0};
		if (ls < 0)
			break;
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		bench_set_tcp_cc(ls);
		/* One listening socket per worker: the kernel hashes each new
		 * connection to one of them and it stays there. */
		if ((nw > 1 && bench_reuseport(ls) < 0) ||
		    bind(ls, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(ls, 8192) < 0) {
			close(ls);
			break;
		}
		t[made].ep = epoll_create1(0);
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
		if (t[made].ep < 0 || epoll_ctl(t[made].ep, EPOLL_CTL_ADD, ls, &ev) < 0) {
			close(ls);
			if (t[made].ep >= 0)
				close(t[made].ep);
			break;
		}
		bw[made].drv = &t[made];
	}
	if (made < nw) {
		bench_fail("tcp server: cannot listen on %s (worker %u of %u): %s", o->bind, made + 1, nw,
			   strerror(errno));
	} else {
		bench_signal_ready(o->ready_fd);
		rc = bench_run_workers(bw, nw, tcp_worker_run);
		bench_server_summary(o->ready_fd, bw, nw);
	}
	for (unsigned i = 0; i < made; i++) {
		close(t[i].ep);
		close(t[i].ls);
	}
	return rc;
}

/* ---- client ---- */

/* A connection whose socket is full waits for EPOLLOUT while the others go
 * on: the client never blocks on one connection. */
struct tclient {
	struct wl *w;
	struct tconn *k;
	bool batch;
	int ep;
};

static int client_read(struct tclient *t, uint32_t c)
{
	struct tconn *k = &t->k[c];
	for (;;) {
		ssize_t r = read(k->fd, k->buf + k->len, k->cap - k->len);
		if (r == 0) {
			snprintf(t->w->err, sizeof t->w->err, "connection %u closed by the server", c);
			return -1;
		}
		if (r < 0) {
			if (errno == EAGAIN)
				return 0;
			if (errno == EINTR)
				continue;
			snprintf(t->w->err, sizeof t->w->err, "connection %u: read: %s", c, strerror(errno));
			return -1;
		}
		k->len += (size_t)r;
		size_t off = 0;
		while (k->len - off >= 4) {
			uint32_t n = get_le32(k->buf + off);
			if (n > BENCH_MAX_SIZE) {
				snprintf(t->w->err, sizeof t->w->err, "connection %u: bad record length %u",
					 c, n);
				return -1;
			}
			if (k->len - off < 4 + (size_t)n)
				break;
			if (wl_deliver(t->w, c, k->buf + off + 4, n) < 0)
				return -1;
			off += 4 + n;
		}
		memmove(k->buf, k->buf + off, k->len - off);
		k->len -= off;
	}
}

static int pend_push(struct tclient *t, uint32_t c, uint8_t *rec, size_t len)
{
	struct tconn *k = &t->k[c];
	if (k->pend_len == k->pend_cap) {
		snprintf(t->w->err, sizeof t->w->err, "connection %u: %u records waiting to be written", c,
			 k->pend_len);
		return -1;
	}
	k->pend[(k->pend_head + k->pend_len++) % k->pend_cap] = (struct iovec){rec, len};
	return 0;
}

static int set_blocked(struct tclient *t, uint32_t c, bool blocked)
{
	struct tconn *k = &t->k[c];
	if (k->blocked == blocked)
		return 0;
	k->blocked = blocked;
	struct epoll_event e = {.events = EPOLLIN | (blocked ? EPOLLOUT : 0), .data.u32 = c};
	return epoll_ctl(t->ep, EPOLL_CTL_MOD, k->fd, &e);
}

/* Writes connection c's waiting records: one per write (tcp), up to 64
 * per writev (tcp-batch). Returns 0 (all written, or the socket is full
 * and c is blocked) or -1. */
static int pend_flush(struct tclient *t, uint32_t c)
{
	struct tconn *k = &t->k[c];
	while (k->pend_len) {
		struct iovec iov[64];
		uint32_t n = 0, max = t->batch ? 64 : 1;
		while (n < max && n < k->pend_len) {
			iov[n] = k->pend[(k->pend_head + n) % k->pend_cap];
			n++;
		}
		ssize_t w = writev(k->fd, iov, (int)n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return set_blocked(t, c, true);
		if (w < 0) {
			snprintf(t->w->err, sizeof t->w->err, "connection %u: write: %s", c, strerror(errno));
			return -1;
		}
		while (w > 0) {
			struct iovec *h = &k->pend[k->pend_head];
			if ((size_t)w < h->iov_len) {
				h->iov_base = (uint8_t *)h->iov_base + w;
				h->iov_len -= (size_t)w;
				break;
			}
			w -= (ssize_t)h->iov_len;
			k->pend_head = (k->pend_head + 1) % k->pend_cap;
			k->pend_len--;
		}
	}
	return set_blocked(t, c, false);
}

/* The game stream's due messages, in-band on connection 0: a byte stream
 * has no other way, so they queue behind whatever bulk it holds. */
static int queue_game(struct tclient *t)
{
	enum wl_stream st;
	uint8_t *slot;
	while ((slot = wl_game_next(t->w, &st)) != NULL)
		if (pend_push(t, 0, slot, 4 + (size_t)t->w->p.game_size) < 0)
			return -1;
	return 0;
}

/* Builds connection c's messages while its window allows and writes them,
 * until it has nothing to send or its socket is full. Echoes freeing the
 * window keep it going: on connection 0 the game's due messages go
 * between its writes. */
static int client_send(struct tclient *t, uint32_t c)
{
	struct tconn *k = &t->k[c];
	size_t len = 4 + (size_t)t->w->p.size;
	for (;;) {
		if (c == 0 && queue_game(t) < 0)
			return -1;
		if (k->pend_len == 0) {
			uint8_t *slot;
			int n = 0;
			while (n < (t->batch ? 64 : 1) && (slot = wl_next(t->w, c)) != NULL) {
				if (pend_push(t, c, slot, len) < 0)
					return -1;
				n++;
			}
			if (n == 0)
				return 0;
		}
		if (pend_flush(t, c) < 0)
			return -1;
		if (k->pend_len)
			return 0;
	}
}

int tcp_client(const char *column, const struct drv_client_opts *o, struct wl *w)
{
	struct tclient t = {.w = w, .batch = strcmp(column, "tcp-batch") == 0};
	struct sockaddr_in sin;
	if (bench_parse_addr(o->connect, &sin) < 0) {
		snprintf(w->err, sizeof w->err, "bad --connect %s (want IPv4:port)", o->connect);
		return -1;
	}
	uint32_t nc = w->p.conns;
	t.k = calloc(nc, sizeof *t.k);
	t.ep = epoll_create1(0);
	int rc = -1;
	uint32_t pending = nc;
	for (uint32_t c = 0; c < nc; c++)
		t.k[c].fd = -1;
	for (uint32_t c = 0; c < nc; c++) {
		struct tconn *k = &t.k[c];
		k->cap = TCP_RBUF + 2 * ((size_t)w->p.size + 4);
		k->buf = malloc(k->cap);
		/* At most a window of messages, and on connection 0 the game's
		 * held messages, wait to be written. */
		k->pend_cap = w->p.window + (c == 0 && w->p.game_hz ? 2 * WL_GAME_SLOTS : 0);
		k->pend = malloc(k->pend_cap * sizeof *k->pend);
		k->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (k->fd < 0 || !k->buf || !k->pend) {
			snprintf(w->err, sizeof w->err, "socket: %s", strerror(errno));
			goto out;
		}
		set_nodelay(k->fd);
		bench_set_tcp_cc(k->fd);
		w->c[c].connect_start_ns = bench_now_ns();
		if (connect(k->fd, (struct sockaddr *)&sin, sizeof sin) < 0 && errno != EINPROGRESS) {
			snprintf(w->err, sizeof w->err, "connect %s: %s", o->connect, strerror(errno));
			goto out;
		}
		struct epoll_event e = {.events = EPOLLOUT, .data.u32 = c};
		epoll_ctl(t.ep, EPOLL_CTL_ADD, k->fd, &e);
	}
	struct epoll_event evs[256];
	while (pending > 0) {
		int n = epoll_wait(t.ep, evs, 256, 100);
		for (int i = 0; i < n; i++) {
			uint32_t c = evs[i].data.u32;
			int err = 0;
			socklen_t el = sizeof err;
			getsockopt(t.k[c].fd, SOL_SOCKET, SO_ERROR, &err, &el);
			if (err) {
				snprintf(w->err, sizeof w->err, "connect %s: %s", o->connect, strerror(err));
				goto out;
			}
			wl_connected(w, c);
			struct epoll_event e = {.events = EPOLLIN, .data.u32 = c};
			epoll_ctl(t.ep, EPOLL_CTL_MOD, t.k[c].fd, &e);
			pending--;
		}
		if (wl_check_stall(w) < 0)
			goto out;
	}
	w->last_progress_ns = bench_now_ns();
	while (!wl_finished(w)) {
		int c;
		if (w->p.game_hz && (queue_game(&t) < 0 || (!t.k[0].blocked && pend_flush(&t, 0) < 0)))
			goto out;
		while ((c = wl_pop_ready(w)) >= 0)
			if (!t.k[c].blocked && client_send(&t, (uint32_t)c) < 0)
				goto out;
		if (wl_finished(w))
			break;
		int n = epoll_wait(t.ep, evs, 256, wl_wait_ms(w, 10));
		for (int i = 0; i < n; i++) {
			uint32_t k = evs[i].data.u32;
			if ((evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && client_read(&t, k) < 0)
				goto out;
			if ((evs[i].events & EPOLLOUT) && t.k[k].blocked && client_send(&t, k) < 0)
				goto out;
		}
		if (wl_check_stall(w) < 0)
			goto out;
	}
	rc = 0;
out:
	w->resent_bytes = w->wire_bytes = 0;
	for (uint32_t c = 0; c < nc; c++) {
		int64_t r = t.k[c].fd >= 0 ? bench_tcp_bytes_retrans(t.k[c].fd) : -1;
		w->resent_bytes = w->resent_bytes < 0 || r < 0 ? -1 : w->resent_bytes + r;
		int64_t s = t.k[c].fd >= 0 ? bench_tcp_bytes_sent(t.k[c].fd) : -1;
		w->wire_bytes = w->wire_bytes < 0 || s < 0 ? -1 : w->wire_bytes + s;
		if (t.k[c].fd >= 0)
			close(t.k[c].fd);
		free(t.k[c].buf);
		free(t.k[c].pend);
	}
	free(t.k);
	close(t.ep);
	return rc;
}
