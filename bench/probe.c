/* SPDX-License-Identifier: MIT */
/*
 * The queueing-delay probe of a path row: small UDP datagrams at a fixed
 * interval from the client namespace to an echo socket of the probe's own
 * in the server namespace, through the same emulated link as the measured
 * transport. Their echo RTT above the path's base RTT is the queueing
 * delay that transport added for everyone else on the link. One process
 * holds both sockets (a socket stays in the namespace it was made in), so
 * the echo costs no process hop and both ends read one clock.
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

#define PROBE_MAGIC 0x52425052u /* "RBPR" */
#define PROBE_MIN 16 /* magic, sequence number, send time */
#define PROBE_BUF 2048

static void probe_loop(int cli, int srv, uint32_t interval_us, uint32_t size, struct probe_shared *sh)
{
	uint8_t out[PROBE_BUF], in[PROBE_BUF];
	memset(out, 0, sizeof out);
	uint64_t next = bench_now_ns();
	while (!bench_stop) {
		uint64_t now = bench_now_ns();
		if (now >= next && sh->sent < PROBE_MAX) {
			uint32_t seq = sh->sent;
			put_le32(out, PROBE_MAGIC);
			put_le32(out + 4, seq);
			put_le64(out + 8, now);
			sh->sent_ns[seq] = now;
			sh->sent = seq + 1;
			if (send(cli, out, size, 0) < 0 && errno != EAGAIN && errno != ENOBUFS) {
				snprintf(sh->err, sizeof sh->err, "probe send: %s", strerror(errno));
				return;
			}
			next += (uint64_t)interval_us * 1000u;
			if (next < now)
				next = now; /* far behind (stopped): no burst of catch-up probes */
			continue;
		}
		struct pollfd p[2] = {{.fd = cli, .events = POLLIN}, {.fd = srv, .events = POLLIN}};
		uint64_t wait = next > now ? next - now : 0;
		struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
		if (ppoll(p, 2, &ts, NULL) <= 0)
			continue;
		if (p[1].revents & POLLIN) {
			struct sockaddr_in from;
			socklen_t fl;
			ssize_t r;
			while ((fl = sizeof from, r = recvfrom(srv, in, sizeof in, MSG_DONTWAIT,
							       (struct sockaddr *)&from, &fl)) > 0)
				sendto(srv, in, (size_t)r, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
		}
		if (p[0].revents & POLLIN) {
			ssize_t r;
			while ((r = recv(cli, in, sizeof in, MSG_DONTWAIT)) > 0) {
				uint64_t at = bench_now_ns();
				if (r < PROBE_MIN || get_le32(in) != PROBE_MAGIC)
					continue;
				uint32_t seq = get_le32(in + 4);
				/* Only an echo of a probe we sent, and the first one. */
				if (seq >= sh->sent || get_le64(in + 8) != sh->sent_ns[seq] ||
				    sh->rtt_ns[seq])
					continue;
				uint64_t rtt = at - sh->sent_ns[seq];
				sh->rtt_ns[seq] = rtt > UINT32_MAX ? UINT32_MAX : rtt ? (uint32_t)rtt : 1;
			}
		}
	}
}

void probe_free(struct probe_shared *p)
{
	helper_shared_free(p, sizeof *p);
}

pid_t probe_start(const char *ns_client, const char *ns_server, const char *server_ip, uint16_t port,
		  uint32_t interval_us, uint32_t size, struct probe_shared **out)
{
	*out = NULL;
	if (size < PROBE_MIN || size > PROBE_BUF || interval_us == 0)
		return -1;
	struct probe_shared *sh = helper_shared_alloc(sizeof *sh);
	if (!sh)
		return -1;
	int ready;
	pid_t pid = helper_fork(&ready);
	if (pid < 0) {
		probe_free(sh);
		return -1;
	}
	if (pid == 0) {
		prctl(PR_SET_TIMERSLACK, 1000UL); /* probes leave on time, to the microsecond */
		helper_realtime(); /* and are echoed at once however busy the CPUs are */
		bench_install_stop_handler();
		char addr[64];
		snprintf(addr, sizeof addr, "%s:%u", server_ip, port);
		struct sockaddr_in sin;
		int srv = ns_socket(ns_server, SOCK_DGRAM);
		bool ok = srv >= 0 && bench_parse_addr(addr, &sin) == 0 &&
			  bind(srv, (struct sockaddr *)&sin, sizeof sin) == 0;
		int cli = ok ? ns_socket(ns_client, SOCK_DGRAM) : -1;
		ok = ok && cli >= 0 && connect(cli, (struct sockaddr *)&sin, sizeof sin) == 0;
		helper_ready(ready, ok);
		probe_loop(cli, srv, interval_us, size, sh);
		_exit(0);
	}
	if (!helper_started(pid, ready)) {
		probe_free(sh);
		return -1;
	}
	*out = sh;
	return pid;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

void probe_window(const struct probe_shared *p, uint64_t from_ns, uint64_t to_ns, struct probe_figures *out)
{
	memset(out, 0, sizeof *out);
	out->p50_ms = out->p99_ms = -1;
	uint32_t *v = malloc(PROBE_MAX * sizeof *v);
	if (!v)
		return;
	uint32_t n = p->sent < PROBE_MAX ? p->sent : PROBE_MAX;
	for (uint32_t i = 0; i < n; i++) {
		if (p->sent_ns[i] < from_ns || p->sent_ns[i] >= to_ns)
			continue;
		out->sent++;
		if (p->rtt_ns[i])
			v[out->echoed++] = p->rtt_ns[i];
	}
	if (out->echoed) {
		qsort(v, out->echoed, sizeof *v, cmp_u32);
		out->p50_ms = v[(size_t)(0.50 * (out->echoed - 1) + 0.5)] / 1e6;
		out->p99_ms = v[(size_t)(0.99 * (out->echoed - 1) + 0.5)] / 1e6;
	}
	free(v);
}
