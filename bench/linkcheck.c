/* SPDX-License-Identifier: MIT */
/*
 * `rudp-bench link-check`: measures the TUN link emulator against the link
 * it was asked for, with UDP datagrams between two namespaces of its own,
 * sent and received by one process (one clock, no process hops):
 *
 *   idle       64 B every 20 ms: the one-way delay is the propagation delay
 *              plus one serialisation, no more;
 *   saturated  1,000 B at twice the rate: what arrives, arrives at the
 *              rate; what waits, waits the buffer's time; the rest is
 *              dropped at the queue;
 *   loss       (with --loss) 64 B every 0.25 ms, below the rate: the share
 *              lost is the share asked for, within four standard errors.
 *
 * It prints each figure beside what it should be and exits 0 when all are
 * within their tolerance, 1 when one is not, 2 on bad arguments or when
 * the namespaces or the emulator cannot be set up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
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
#include "emu.h"
#include "netns.h"

#define LC_PORT 19600
#define LC_HDR 12 /* sequence number, send time */
#define LC_UDP_IP 28

static volatile sig_atomic_t lc_stop;

static void lc_on_signal(int sig)
{
	(void)sig;
	lc_stop = 1;
}

struct phase {
	uint32_t n; /* sent */
	uint64_t *sent_ns, *arrived_ns; /* per sequence number; arrived 0: lost */
};

/* CLOCK_REALTIME - CLOCK_MONOTONIC, read between two monotonic reads (the
 * closest pair of three tries), to put the kernel's receive stamps on the
 * clock the send times use. */
static uint64_t realtime_minus_monotonic(void)
{
	uint64_t best = 0, best_gap = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		struct timespec rt;
		uint64_t a = bench_now_ns();
		clock_gettime(CLOCK_REALTIME, &rt);
		uint64_t b = bench_now_ns();
		uint64_t real = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
		if (b - a < best_gap) {
			best_gap = b - a;
			best = real - (a + (b - a) / 2);
		}
	}
	return best;
}

/* recv() that also returns when the kernel took the datagram in
 * (SO_TIMESTAMPNS, CLOCK_REALTIME), or 0 in *stamp when it gave none. The
 * delays are measured to that stamp, not to when this process got round
 * to reading: a checker scheduled late on a loaded machine is not the
 * link being slow. */
static ssize_t recv_stamped(int fd, uint8_t *buf, size_t len, uint64_t *stamp)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} control;
	struct iovec iov = {buf, len};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof control.buf};
	ssize_t r = recvmsg(fd, &msg, MSG_DONTWAIT);
	*stamp = 0;
	for (struct cmsghdr *c = r >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(c), sizeof ts);
			*stamp = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		}
	}
	return r;
}

/* Sends n datagrams of size bytes, one every interval_ns, and collects what
 * arrives until drain_ns after the last. Returns 0, or -1 (interrupted or
 * out of memory). */
static int run_phase(int cli, int srv, uint32_t size, uint64_t interval_ns, uint32_t n, uint64_t drain_ns,
		     struct phase *ph)
{
	uint8_t out[2048], in[2048];
	memset(out, 0, sizeof out);
	ph->n = 0;
	ph->sent_ns = calloc(n, sizeof *ph->sent_ns);
	ph->arrived_ns = calloc(n, sizeof *ph->arrived_ns);
	if (!ph->sent_ns || !ph->arrived_ns)
		return -1;
	uint64_t realtime_offset = realtime_minus_monotonic(), at_realtime = 0;
	uint64_t start = bench_now_ns(), next = start, end = 0;
	for (;;) {
		uint64_t now = bench_now_ns();
		if (lc_stop)
			return -1;
		while (ph->n < n && now >= next) {
			put_le32(out, ph->n);
			put_le64(out + 4, now);
			ph->sent_ns[ph->n++] = now;
			if (send(cli, out, size, MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != ENOBUFS)
				return -1;
			next += interval_ns;
			if (ph->n == n)
				end = now + drain_ns;
		}
		if (end && now >= end)
			return 0;
		uint64_t until = ph->n < n ? next : end;
		uint64_t wait = until > now ? until - now : 0;
		struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
		struct pollfd p = {.fd = srv, .events = POLLIN};
		if (ppoll(&p, 1, &ts, NULL) <= 0)
			continue;
		ssize_t r;
		while ((r = recv_stamped(srv, in, sizeof in, &at_realtime)) >= LC_HDR) {
			uint64_t at = at_realtime ? at_realtime - realtime_offset : bench_now_ns();
			uint32_t seq = get_le32(in);
			if (seq < ph->n && get_le64(in + 4) == ph->sent_ns[seq] && !ph->arrived_ns[seq])
				ph->arrived_ns[seq] = at;
		}
	}
}

static void phase_free(struct phase *ph)
{
	free(ph->sent_ns);
	free(ph->arrived_ns);
	memset(ph, 0, sizeof *ph);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One-way delays (ms) of the packets sent in [from, to) that arrived,
 * sorted, in *out; returns their count. */
static uint32_t delays(const struct phase *ph, uint32_t from, uint32_t to, double **out)
{
	*out = malloc((to > from ? to - from : 1) * sizeof **out);
	uint32_t k = 0;
	for (uint32_t i = from; *out && i < to && i < ph->n; i++)
		if (ph->arrived_ns[i])
			(*out)[k++] = (double)(ph->arrived_ns[i] - ph->sent_ns[i]) / 1e6;
	if (*out)
		qsort(*out, k, sizeof **out, cmp_d);
	return *out ? k : 0;
}

static int failures;

/* sqrt without libm (rudp-bench links none: its pages would count in
 * every column's peak RSS). */
static double root(double x)
{
	double r = x > 1 ? x : 1;
	for (int i = 0; i < 64 && x > 0; i++)
		r = (r + x / r) / 2;
	return x > 0 ? r : 0;
}

static void check(const char *what, double got, double lo, double hi, const char *unit)
{
	bool ok = got >= lo && got <= hi;
	failures += !ok;
	printf("%-44s %10.3f %-7s want %.3f .. %.3f  %s\n", what, got, unit, lo, hi, ok ? "ok" : "FAIL");
}

/* The three phases and their checks; -1 when interrupted. */
static int run_checks(int cli, int srv, const struct emu_link *link, double seconds,
		      const struct emu_stats *st)
{
	double oneway = link->delay_ms_oneway, q = link->queue_ms;
	double ser_small = (64 + LC_UDP_IP) * 8 / (link->rate_mbit * 1e3);
	double ser_big = (1000 + LC_UDP_IP) * 8 / (link->rate_mbit * 1e3);
	uint64_t drain = (uint64_t)((2 * oneway + q + 200) * 1e6);
	struct phase ph = {0};
	double *d = NULL;
	int rc = -1;

	/* Idle: each datagram finds the link empty. */
	if (run_phase(cli, srv, 64, 20000000, 50, drain, &ph) < 0)
		goto out;
	uint32_t k = delays(&ph, 0, ph.n, &d);
	if (k) {
		/* Above the ideal: the forwarder's wake-up and the TUN write, a
		 * few hundred microseconds, more on a loaded machine. */
		check("idle: one-way delay p50", d[k / 2], oneway + ser_small, oneway + ser_small + 1, "ms");
		/* p90 is shown, not checked: on CI's loaded VM a tenth of the
		 * idle datagrams came 12-18 ms late, kernel receive stamps and
		 * all, while the emulator wrote every one on time (its own
		 * lateness, checked below, stayed under 2.2 ms). What the link
		 * adds is the p50 above and that lateness. */
		printf("%-44s %10.3f %-7s (shown, not checked)\n", "idle: one-way delay p90", d[k * 9 / 10],
		       "ms");
	} else {
		check("idle: datagrams through", 0, 1, 50, "");
	}
	free(d);
	d = NULL;
	phase_free(&ph);

	/* Saturated: twice the rate; over the second half of the sending
	 * time the queue is full. */
	double interval = ser_big * 1e6 / 2;
	uint32_t n = (uint32_t)(seconds * 1e9 / interval);
	struct emu_counters before = emu_total(st, EMU_FLOW_MAIN, EMU_UP);
	if (run_phase(cli, srv, 1000, (uint64_t)interval, n, drain, &ph) < 0)
		goto out;
	struct emu_counters after = emu_total(st, EMU_FLOW_MAIN, EMU_UP);
	uint32_t from = n / 2, first = 0, last = 0, got = 0, through = 0;
	for (uint32_t i = 0; i < n; i++) {
		through += ph.arrived_ns[i] != 0;
		if (i >= from && ph.arrived_ns[i]) {
			if (!got++)
				first = i;
			last = i;
		}
	}
	if (got > 1) {
		double span = (double)(ph.arrived_ns[last] - ph.arrived_ns[first]) / 1e9;
		double mbit = (got - 1) * (1000.0 + LC_UDP_IP) * 8 / span / 1e6;
		check("saturated: arrival rate (IP bytes)", mbit, link->rate_mbit * 0.985,
		      link->rate_mbit * 1.015, "Mbit/s");
		k = delays(&ph, from, n, &d);
		check("saturated: one-way delay p50", d[k / 2], oneway + q - 2 * ser_big - 0.5,
		      oneway + q + ser_big + 1, "ms");
		check("saturated: one-way delay p99", d[k * 99 / 100], oneway, oneway + q + ser_big + 2,
		      "ms");
		free(d);
		d = NULL;
		double p = link->loss_pct / 100;
		check("saturated: share dropped", 1 - (double)got / (n - from), 0.5 - 0.05 - p,
		      0.5 + 0.05 + p, "");
	} else {
		check("saturated: datagrams through", got, 2, n, "");
	}
	double counted = (double)(after.queue_drops + after.random_drops + after.overflow_drops -
				  before.queue_drops - before.random_drops - before.overflow_drops);
	check("saturated: drops counted = datagrams lost", counted, n - through, n - through, "");
	check("saturated: of them at the queue", (double)(after.queue_drops - before.queue_drops), 1, n, "");
	phase_free(&ph);

	if (link->loss_pct > 0) {
		uint32_t m = (uint32_t)(3e9 / 250000);
		if (run_phase(cli, srv, 64, 250000, m, drain, &ph) < 0)
			goto out;
		uint32_t arrived = 0;
		for (uint32_t i = 0; i < ph.n; i++)
			arrived += ph.arrived_ns[i] != 0;
		double p = link->loss_pct / 100, se = root(p * (1 - p) / m);
		check("loss: share lost", 1 - (double)arrived / m, p - 4 * se - 0.0005, p + 4 * se + 0.0005,
		      "");
	}
	rc = 0;
out:
	free(d);
	phase_free(&ph);
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rudp-bench link-check --rate MBIT [--queue-ms MS] [--delay RTT_MS] [--loss PCT]\n"
		"                  [--seconds S]\n");
}

int link_check_main(int argc, char **argv)
{
	struct emu_link link = {
		.delay_ms_oneway = 10, .rate_mbit = 0, .queue_ms = 50, .flow_port = {LC_PORT}};
	double seconds = 2;
	static const struct option opts[] = {{"rate", 1, 0, 'r'},    {"queue-ms", 1, 0, 'q'},
					     {"delay", 1, 0, 'd'},   {"loss", 1, 0, 'l'},
					     {"seconds", 1, 0, 's'}, {0, 0, 0, 0}};
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end;
		double v = optarg ? strtod(optarg, &end) : 0;
		if (o == '?' || !optarg || *end || end == optarg) {
			usage();
			return 2;
		}
		switch (o) {
		case 'r': link.rate_mbit = v; break;
		case 'q': link.queue_ms = v; break;
		case 'd': link.delay_ms_oneway = v / 2; break;
		case 'l': link.loss_pct = v; break;
		case 's': seconds = v; break;
		}
	}
	if (optind < argc || !(link.rate_mbit >= 1 && link.rate_mbit <= 200) ||
	    !(link.queue_ms >= 1 && link.queue_ms <= 1000) ||
	    !(link.delay_ms_oneway >= 0 && link.delay_ms_oneway <= 500) ||
	    !(link.loss_pct >= 0 && link.loss_pct <= 10) || !(seconds >= 0.5 && seconds <= 30)) {
		usage();
		fprintf(stderr, "rudp-bench link-check: --rate 1..200, --queue-ms 1..1000, --delay 0..1000, "
				"--loss 0..10, --seconds 0.5..30\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "rudp-bench link-check: needs root (it makes two namespaces)\n");
		return 2;
	}
	bench_on_stop_signals(lc_on_signal);
	char ns_c[64], ns_s[64];
	snprintf(ns_c, sizeof ns_c, "rudpb-lc-%d-c", (int)getpid());
	snprintf(ns_s, sizeof ns_s, "rudpb-lc-%d-s", (int)getpid());
	struct emu_stats *st = NULL;
	pid_t emu = -1;
	int cli = -1, srv = -1, rc = 2;
	if (ns_create(ns_c) < 0 || ns_create(ns_s) < 0) {
		fprintf(stderr, "rudp-bench link-check: cannot create namespaces\n");
		goto out;
	}
	emu = emu_start(ns_c, ns_s, &link, &st);
	char addr[64];
	snprintf(addr, sizeof addr, "%s:%d", EMU_SERVER_IP, LC_PORT);
	struct sockaddr_in sin;
	if (emu < 0 || bench_parse_addr(addr, &sin) < 0 || (srv = ns_socket(ns_s, SOCK_DGRAM)) < 0 ||
	    bind(srv, (struct sockaddr *)&sin, sizeof sin) < 0 || (cli = ns_socket(ns_c, SOCK_DGRAM)) < 0 ||
	    connect(cli, (struct sockaddr *)&sin, sizeof sin) < 0) {
		fprintf(stderr, "rudp-bench link-check: cannot set up the emulator or its sockets\n");
		goto out;
	}
	bench_udp_buffers(srv);
	bench_udp_buffers(cli);
	int on = 1;
	bool stamped = setsockopt(srv, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
	prctl(PR_SET_TIMERSLACK, 1000UL);
	bool rt = helper_realtime();
	printf("link: %g Mbit/s, %g ms buffer (%llu B), %g ms each way, %g %% loss; emulator %s, checker "
	       "%s; arrivals %s\n",
	       link.rate_mbit, link.queue_ms, (unsigned long long)st->queue_limit_bytes, link.delay_ms_oneway,
	       link.loss_pct, st->realtime ? "real-time" : "NOT real-time",
	       rt ? "real-time" : "NOT real-time", stamped ? "stamped by the kernel" : "timed when read");
	bool done = run_checks(cli, srv, &link, seconds, st) == 0;
	kill(emu, SIGTERM);
	waitpid(emu, NULL, 0);
	emu = -1;
	if (!done) {
		fprintf(stderr, "rudp-bench link-check: interrupted\n");
		goto out;
	}
	uint64_t delivered = st->delivered[EMU_UP] + st->delivered[EMU_DOWN];
	uint64_t late = st->late_over_1ms[EMU_UP] + st->late_over_1ms[EMU_DOWN];
	uint64_t late_max = st->late_max_ns[EMU_UP] > st->late_max_ns[EMU_DOWN] ? st->late_max_ns[EMU_UP]
										: st->late_max_ns[EMU_DOWN];
	printf("emulator lateness: max %.3f ms, %llu of %llu packets over 1 ms late\n",
	       (double)late_max / 1e6, (unsigned long long)late, (unsigned long long)delivered);
	/* Scheduling noise of a shared machine, not a fault of the emulator:
	 * one stall of a few ms makes every packet due in it late at once,
	 * so up to one packet in twenty; an emulator that misses its times
	 * (timer granularity, a busy loop's own work) is late for most. */
	check("emulator: packets written over 1 ms late", (double)late, 0, (double)delivered / 20 + 2, "");
	rc = failures ? 1 : 0;
	printf("%s: %d check%s failed\n", rc == 0 ? "PASS" : "FAIL", failures, failures == 1 ? "" : "s");
out:
	if (emu > 0) {
		kill(emu, SIGKILL);
		waitpid(emu, NULL, 0);
	}
	if (cli >= 0)
		close(cli);
	if (srv >= 0)
		close(srv);
	emu_stats_free(st);
	ns_delete(ns_c);
	ns_delete(ns_s);
	return rc;
}
