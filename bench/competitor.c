/* SPDX-License-Identifier: MIT */
/*
 * The competing flow of a path row: one kernel TCP connection that echoes
 * bulk data through the same emulated link as the measured transport, so
 * that both directions carry a TCP flow beside it, as both carry the
 * measured echo. One process holds the client socket (client namespace)
 * and the echoing server socket (server namespace). Connected beforehand,
 * it starts when its parent says (with the measured transport's burst:
 * an older flow would hold an incumbent's advantage, and a kernel TCP
 * flow beside another would not get half). The client writes a known
 * byte pattern without pause and checks every echoed byte; every 10 ms it
 * records how many it has verified, from which the parent takes the
 * flow's rate over the measured transport's burst.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "netns.h"
#include "side.h"

#define CHUNK (64 * 1024)

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)(((uint32_t)off * 0x9e3779b1u) >> 24);
}

static void record(struct competitor_shared *sh, uint64_t now, uint64_t verified)
{
	uint64_t slot = (now - sh->t0_ns) / COMPETITOR_SLOT_NS;
	while (sh->n <= slot && sh->n < COMPETITOR_SLOTS)
		sh->bytes[sh->n++] = verified;
}

static void competitor_loop(int cli, int srv, struct competitor_shared *sh)
{
	uint8_t *out = malloc(CHUNK), *in = malloc(CHUNK), *echo = malloc(CHUNK);
	if (!out || !in || !echo) {
		snprintf(sh->err, sizeof sh->err, "out of memory");
		return;
	}
	uint64_t sent = 0, verified = 0;
	size_t echo_len = 0; /* read by the server, not yet written back */
	while (!bench_stop) {
		record(sh, bench_now_ns(), verified);
		struct pollfd p[2] = {
			{.fd = cli, .events = (short)(POLLIN | (sh->go ? POLLOUT : 0))},
			{.fd = srv,
			 .events = (short)((echo_len < CHUNK ? POLLIN : 0) | (echo_len ? POLLOUT : 0))}};
		if (poll(p, 2, 10) <= 0)
			continue;
		if (p[0].revents & POLLOUT) {
			for (size_t i = 0; i < CHUNK; i++)
				out[i] = pattern(sent + i);
			ssize_t w = send(cli, out, CHUNK, MSG_DONTWAIT);
			if (w > 0)
				sent += (uint64_t)w;
		}
		if (p[1].revents & POLLIN) {
			ssize_t r = recv(srv, echo + echo_len, CHUNK - echo_len, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN)) {
				snprintf(sh->err, sizeof sh->err, "server side: %s",
					 r ? strerror(errno) : "closed");
				break;
			}
			if (r > 0)
				echo_len += (size_t)r;
		}
		if (echo_len && (p[1].revents & POLLOUT)) {
			ssize_t w = send(srv, echo, echo_len, MSG_DONTWAIT);
			if (w > 0) {
				memmove(echo, echo + w, echo_len - (size_t)w);
				echo_len -= (size_t)w;
			}
		}
		if (p[0].revents & (POLLIN | POLLERR | POLLHUP)) {
			ssize_t r = recv(cli, in, CHUNK, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN)) {
				snprintf(sh->err, sizeof sh->err, "client side: %s",
					 r ? strerror(errno) : "closed");
				break;
			}
			for (ssize_t i = 0; i < r; i++)
				if (in[i] != pattern(verified + (uint64_t)i)) {
					snprintf(sh->err, sizeof sh->err,
						 "echoed byte %llu differs from the one sent",
						 (unsigned long long)(verified + (uint64_t)i));
					goto out;
				}
			if (r > 0)
				verified += (uint64_t)r;
		}
	}
out:
	/* The last slots up to the stop: the parent stops the flow only after
	 * the measured burst ended, so the burst's slots are all filled even
	 * when this process was starved of CPU at the end. */
	record(sh, bench_now_ns(), verified);
	int64_t a = bench_tcp_bytes_retrans(cli), b = bench_tcp_bytes_retrans(srv);
	sh->retrans_bytes = a < 0 || b < 0 ? -1 : a + b;
	free(out);
	free(in);
	free(echo);
}

void competitor_free(struct competitor_shared *c)
{
	helper_shared_free(c, sizeof *c);
}

/* Connects cli to the listener ls (both non-blocking) and accepts: the
 * accepted socket, or -1. */
static int pair_up(int cli, int ls, const struct sockaddr_in *sin)
{
	if (connect(cli, (const struct sockaddr *)sin, sizeof *sin) < 0 && errno != EINPROGRESS)
		return -1;
	uint64_t deadline = bench_now_ns() + 5000000000ull;
	while (!bench_stop && bench_now_ns() < deadline) {
		int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != EAGAIN)
			return -1;
		struct pollfd p = {.fd = ls, .events = POLLIN};
		poll(&p, 1, 50);
	}
	return -1;
}

pid_t competitor_start(const char *ns_client, const char *ns_server, const char *server_ip, uint16_t port,
		       const char *cc, struct competitor_shared **out)
{
	*out = NULL;
	struct competitor_shared *sh = helper_shared_alloc(sizeof *sh);
	if (!sh)
		return -1;
	sh->retrans_bytes = -1;
	int ready;
	pid_t pid = helper_fork(&ready);
	if (pid < 0) {
		competitor_free(sh);
		return -1;
	}
	if (pid == 0) {
		bench_install_stop_handler();
		char addr[64];
		snprintf(addr, sizeof addr, "%s:%u", server_ip, port);
		struct sockaddr_in sin;
		int one = 1;
		int ls = ns_socket(ns_server, SOCK_STREAM | SOCK_NONBLOCK);
		bool ok = ls >= 0 && bench_parse_addr(addr, &sin) == 0 &&
			  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
			  bind(ls, (struct sockaddr *)&sin, sizeof sin) == 0 && listen(ls, 4) == 0;
		int cli = ok ? ns_socket(ns_client, SOCK_STREAM | SOCK_NONBLOCK) : -1;
		if (cli >= 0)
			bench_set_tcp_cc_name(cli, cc);
		int srv = cli >= 0 ? pair_up(cli, ls, &sin) : -1;
		if (srv >= 0)
			bench_set_tcp_cc_name(srv, cc);
		ok = srv >= 0;
		/* The clock starts before the parent hears "ready": a burst
		 * that begins while this process waits for a CPU still lies
		 * after t0 (nothing is sent before go). */
		sh->t0_ns = bench_now_ns();
		helper_ready(ready, ok);
		competitor_loop(cli, srv, sh);
		_exit(0);
	}
	if (!helper_started(pid, ready)) {
		competitor_free(sh);
		return -1;
	}
	*out = sh;
	return pid;
}

double competitor_rate(const struct competitor_shared *c, uint64_t from_ns, uint64_t to_ns)
{
	if (!c->t0_ns || from_ns < c->t0_ns || to_ns <= from_ns)
		return -1;
	uint64_t a = (from_ns - c->t0_ns) / COMPETITOR_SLOT_NS, b = (to_ns - c->t0_ns) / COMPETITOR_SLOT_NS;
	if (b >= c->n || b <= a)
		return -1;
	return (double)(c->bytes[b] - c->bytes[a]) / ((double)(b - a) * COMPETITOR_SLOT_NS / 1e9);
}
