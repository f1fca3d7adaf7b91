/* SPDX-License-Identifier: MIT */
/*
 * kcp column: the upstream C KCP core (ikcp.c from node-kcp 1.0.13, fetched
 * at build time, unmodified) over UDP. Message mode, nodelay(1, 10, 2, 1),
 * windows 64/64 for one connection and 64/128 for many, a 1400 B MTU by
 * default, and an immediate flush after every send and every input so data
 * and ACKs leave at once. The conversation id is the connection index + 1;
 * the client uses one connected UDP socket per connection. The server runs
 * o->workers threads, each with its own SO_REUSEPORT socket and sessions.
 * KCP has one ordered stream per conversation: a game stream (path rows)
 * goes in-band on connection 0's. What KCP resent is counted from the
 * datagrams it puts out: the data bytes of its PUSH segments beyond the
 * bytes the application gave it (its own xmit counter leaves out fast
 * retransmissions).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#if defined(BENCH_HAVE_KCP)
#include "ikcp.h"

#define KCP_BATCH 64
#define KCP_DGRAM 2048
static IUINT32 now_ms32(void)
{
	return (IUINT32)(bench_now_ns() / 1000000u);
}

#define KCP_SEG_HDR 24 /* conv, cmd, frg, wnd, ts, sn, una, len */
#define KCP_CMD_PUSH 81

/* Data bytes of the PUSH segments in one datagram KCP puts out. */
static uint64_t pushed_bytes(const char *buf, int len)
{
	uint64_t n = 0;
	for (int off = 0; off + KCP_SEG_HDR <= len;) {
		uint32_t seg = get_le32((const uint8_t *)buf + off + 20);
		if ((uint8_t)buf[off + 4] == KCP_CMD_PUSH)
			n += seg;
		off += KCP_SEG_HDR + (int)seg;
	}
	return n;
}

static void configure(ikcpcb *k, uint32_t mtu, bool many)
{
	ikcp_nodelay(k, 1, 10, 2, 1);
	ikcp_wndsize(k, 64, many ? 128 : 64);
	ikcp_setmtu(k, (int)(mtu ? mtu : 1400));
}

/* ---- server ---- */

struct ksess {
	ikcpcb *kcp;
	struct sockaddr_in addr;
	int fd;
	uint64_t *pushed; /* the worker's count of PUSH data bytes */
};

static int server_output(const char *buf, int len, ikcpcb *kcp, void *user)
{
	(void)kcp;
	struct ksess *s = user;
	*s->pushed += pushed_bytes(buf, len);
	return (int)sendto(s->fd, buf, (size_t)len, 0, (struct sockaddr *)&s->addr, sizeof s->addr);
}

/* One worker: its own socket (SO_REUSEPORT when there are several) and the
 * sessions of the clients the kernel hashed to it. */
struct kcp_worker {
	int fd;
	uint32_t mtu;
	bool many;
};

static int kcp_worker_run(struct bench_worker *bw)
{
	const struct kcp_worker *kw = bw->drv;
	int fd = kw->fd;
	struct ksess **sess = calloc(BENCH_MAX_CONNS + 1, sizeof *sess);
	struct ksess **active = calloc(BENCH_MAX_CONNS + 1, sizeof *active);
	size_t nactive = 0;
	uint8_t *bufs = malloc((size_t)KCP_BATCH * KCP_DGRAM);
	uint8_t *msg = malloc(BENCH_MAX_SIZE);
	struct mmsghdr mm[KCP_BATCH];
	struct iovec iov[KCP_BATCH];
	struct sockaddr_in from[KCP_BATCH];
	int ep = epoll_create1(0);
	int rc = 0;
	struct epoll_event e = {.events = EPOLLIN};
	if (!sess || !active || !bufs || !msg || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) < 0) {
		bench_fail("kcp server: worker %u: cannot set up: %s", bw->index, strerror(errno));
		rc = 1;
	}
	IUINT32 last_update = 0;
	uint64_t pushed = 0, echoed = 0;
	while (!bench_stop && rc == 0) {
		struct epoll_event evs[1];
		epoll_wait(ep, evs, 1, nactive ? 2 : 100);
		for (;;) {
			for (int i = 0; i < KCP_BATCH; i++) {
				iov[i].iov_base = bufs + (size_t)i * KCP_DGRAM;
				iov[i].iov_len = KCP_DGRAM;
				memset(&mm[i].msg_hdr, 0, sizeof mm[i].msg_hdr);
				mm[i].msg_hdr.msg_iov = &iov[i];
				mm[i].msg_hdr.msg_iovlen = 1;
				mm[i].msg_hdr.msg_name = &from[i];
				mm[i].msg_hdr.msg_namelen = sizeof from[i];
			}
			int n = recvmmsg(fd, mm, KCP_BATCH, MSG_DONTWAIT, NULL);
			if (n <= 0)
				break;
			for (int i = 0; i < n; i++) {
				if (mm[i].msg_len < 24)
					continue;
				IUINT32 conv = ikcp_getconv(iov[i].iov_base);
				if (conv == 0 || conv > BENCH_MAX_CONNS)
					continue;
				struct ksess *s = sess[conv];
				if (s && (s->addr.sin_addr.s_addr != from[i].sin_addr.s_addr ||
					  s->addr.sin_port != from[i].sin_port)) {
					/* A new client reuses the conversation id (split mode runs
					 * several clients against one server): start afresh. */
					ikcp_release(s->kcp);
					s->kcp = ikcp_create(conv, s);
					s->kcp->output = server_output;
					s->addr = from[i];
					configure(s->kcp, kw->mtu, kw->many);
					ikcp_update(s->kcp, now_ms32());
					bw->conns++;
				}
				if (!s) {
					s = calloc(1, sizeof *s);
					if (!s) {
						bench_fail("kcp server: out of memory");
						rc = 1;
						break;
					}
					s->fd = fd;
					s->pushed = &pushed;
					s->addr = from[i];
					s->kcp = ikcp_create(conv, s);
					s->kcp->output = server_output;
					configure(s->kcp, kw->mtu, kw->many);
					/* ikcp_flush does nothing before the first update. */
					ikcp_update(s->kcp, now_ms32());
					sess[conv] = s;
					active[nactive++] = s;
					bw->conns++;
				}
				ikcp_input(s->kcp, (const char *)iov[i].iov_base, (long)mm[i].msg_len);
				int len;
				while ((len = ikcp_recv(s->kcp, (char *)msg, BENCH_MAX_SIZE)) > 0) {
					ikcp_send(s->kcp, (const char *)msg, len);
					echoed += (uint64_t)len;
					bw->echoes++;
				}
				ikcp_flush(s->kcp);
			}
			if (n < KCP_BATCH || rc)
				break;
		}
		IUINT32 now = now_ms32();
		if (now != last_update) {
			last_update = now;
			for (size_t i = 0; i < nactive; i++)
				ikcp_update(active[i]->kcp, now);
		}
	}
	for (size_t i = 0; i < nactive; i++) {
		ikcp_release(active[i]->kcp);
		free(active[i]);
	}
	/* Once the client has every echo, each echoed byte went out at least
	 * once: the rest of what was pushed was resent. */
	bw->resent_bytes = pushed > echoed ? (int64_t)(pushed - echoed) : 0;
	free(sess);
	free(active);
	free(bufs);
	free(msg);
	if (ep >= 0)
		close(ep);
	return rc;
}

int kcp_server_drv(const char *column, const struct drv_server_opts *o)
{
	(void)column;
	struct sockaddr_in sin;
	if (bench_parse_addr(o->bind, &sin) < 0) {
		bench_fail("bad --bind %s (want IPv4:port)", o->bind);
		return 2;
	}
	unsigned nw = o->workers ? o->workers : 1;
	struct kcp_worker kw[BENCH_MAX_WORKERS];
	struct bench_worker bw[BENCH_MAX_WORKERS];
	memset(bw, 0, sizeof bw);
	unsigned made = 0;
	int rc = 1;
	for (; made < nw; made++) {
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		if (fd < 0)
			break;
		/* A client's 4-tuple always hashes to the same socket, so its
		 * conversation lives in one worker only. */
		if ((nw > 1 && bench_reuseport(fd) < 0) ||
		    bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0) {
			close(fd);
			break;
		}
		bench_udp_buffers(fd);
		kw[made] = (struct kcp_worker){.fd = fd, .mtu = o->mtu, .many = o->conns_hint > 1};
		bw[made].drv = &kw[made];
	}
	if (made < nw) {
		bench_fail("kcp server: cannot bind %s (worker %u of %u): %s", o->bind, made + 1, nw,
			   strerror(errno));
	} else {
		bench_signal_ready(o->ready_fd);
		rc = bench_run_workers(bw, nw, kcp_worker_run);
		bench_server_summary(o->ready_fd, bw, nw);
	}
	for (unsigned i = 0; i < made; i++)
		close(kw[i].fd);
	return rc;
}

/* ---- client ---- */

struct kconn {
	ikcpcb *kcp;
	int fd;
	uint64_t pushed, given; /* PUSH data bytes put out; bytes given to ikcp_send */
	uint64_t wire; /* bytes of every datagram it sent */
};

static int client_output(const char *buf, int len, ikcpcb *kcp, void *user)
{
	(void)kcp;
	struct kconn *k = user;
	k->pushed += pushed_bytes(buf, len);
	k->wire += (uint64_t)len;
	return (int)send(k->fd, buf, (size_t)len, 0);
}

/* The game stream's due messages, in-band on connection 0's conversation. */
static int send_game(struct wl *w, struct kconn *k)
{
	enum wl_stream st;
	uint8_t *slot;
	bool any = false;
	while ((slot = wl_game_next(w, &st)) != NULL) {
		if (ikcp_send(k->kcp, (const char *)slot + 4, (int)w->p.game_size) < 0) {
			snprintf(w->err, sizeof w->err, "ikcp_send refused a game message");
			return -1;
		}
		k->given += w->p.game_size;
		any = true;
	}
	if (any)
		ikcp_flush(k->kcp);
	return 0;
}

int kcp_client_drv(const char *column, const struct drv_client_opts *o, struct wl *w)
{
	(void)column;
	struct sockaddr_in sin;
	if (bench_parse_addr(o->connect, &sin) < 0) {
		snprintf(w->err, sizeof w->err, "bad --connect %s (want IPv4:port)", o->connect);
		return -1;
	}
	uint32_t nc = w->p.conns;
	struct kconn *k = calloc(nc, sizeof *k);
	uint8_t *msg = malloc(w->p.size + 1);
	uint8_t *dgram = malloc(KCP_DGRAM);
	int ep = epoll_create1(0);
	int rc = -1;
	for (uint32_t c = 0; c < nc; c++)
		k[c].fd = -1;
	for (uint32_t c = 0; c < nc; c++) {
		k[c].fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		if (k[c].fd < 0 || connect(k[c].fd, (struct sockaddr *)&sin, sizeof sin) < 0) {
			snprintf(w->err, sizeof w->err, "udp socket: %s", strerror(errno));
			goto out;
		}
		bench_udp_buffers(k[c].fd);
		k[c].kcp = ikcp_create(c + 1, &k[c]);
		k[c].kcp->output = client_output;
		configure(k[c].kcp, w->p.mtu, nc > 1);
		ikcp_update(k[c].kcp, now_ms32());
		struct epoll_event e = {.events = EPOLLIN, .data.u32 = c};
		epoll_ctl(ep, EPOLL_CTL_ADD, k[c].fd, &e);
	}
	struct epoll_event evs[256];
	IUINT32 last_update = 0;
	while (!wl_finished(w)) {
		int c;
		if (send_game(w, &k[0]) < 0)
			goto out;
		while ((c = wl_pop_ready(w)) >= 0) {
			uint8_t *slot;
			while ((slot = wl_next(w, (uint32_t)c)) != NULL) {
				if (ikcp_send(k[c].kcp, (const char *)slot + 4, (int)w->p.size) < 0) {
					snprintf(w->err, sizeof w->err, "ikcp_send refused %u B", w->p.size);
					goto out;
				}
				k[c].given += w->p.size;
			}
			ikcp_flush(k[c].kcp);
		}
		if (wl_finished(w))
			break;
		int ne = epoll_wait(ep, evs, 256, 1);
		for (int i = 0; i < ne; i++) {
			uint32_t j = evs[i].data.u32;
			ssize_t r;
			while ((r = recv(k[j].fd, dgram, KCP_DGRAM, 0)) > 0)
				ikcp_input(k[j].kcp, (const char *)dgram, (long)r);
			int len;
			while ((len = ikcp_recv(k[j].kcp, (char *)msg, (int)w->p.size + 1)) > 0)
				if (wl_deliver(w, j, msg, (size_t)len) < 0)
					goto out;
			if (len < -2) {
				snprintf(w->err, sizeof w->err, "connection %u: echo larger than %u B", j,
					 w->p.size);
				goto out;
			}
			ikcp_flush(k[j].kcp);
		}
		IUINT32 now = now_ms32();
		if (now != last_update) {
			last_update = now;
			for (uint32_t i = 0; i < nc; i++)
				ikcp_update(k[i].kcp, now);
		}
		if (wl_check_stall(w) < 0)
			goto out;
	}
	rc = 0;
out:
	w->resent_bytes = w->wire_bytes = 0;
	for (uint32_t c = 0; c < nc; c++) {
		w->wire_bytes += (int64_t)k[c].wire;
		if (k[c].pushed > k[c].given)
			w->resent_bytes += (int64_t)(k[c].pushed - k[c].given);
		if (k[c].kcp)
			ikcp_release(k[c].kcp);
		if (k[c].fd >= 0)
			close(k[c].fd);
	}
	free(k);
	free(msg);
	free(dgram);
	close(ep);
	return rc;
}

#else

int kcp_server_drv(const char *column, const struct drv_server_opts *o)
{
	(void)o;
	bench_fail("%s: not built (ikcp.c could not be fetched with npm at configure time)", column);
	return 2;
}

int kcp_client_drv(const char *column, const struct drv_client_opts *o, struct wl *w)
{
	(void)o;
	snprintf(w->err, sizeof w->err, "%s: not built (ikcp.c could not be fetched with npm)", column);
	return -1;
}

#endif
