/* SPDX-License-Identifier: MIT */
/*
 * The userspace link emulator: a forwarder process joins a client namespace
 * and a server namespace through two TUN devices and gives each direction
 * random loss, a drop-tail queue in front of a rate-limited bottleneck, and
 * a propagation delay (the kernels this runs on may lack sch_netem).
 *
 * The bottleneck is computed, not slept: a packet that arrives at `now`
 * starts serialising when the one before it has finished (link_free), so
 * its departure is max(now, link_free) + its IP length at the rate, and it
 * is written to the far side a one-way delay after that. What is still to
 * serialise, (link_free - now) at the rate, is the queue the drop-tail
 * limit applies to. Departure times only grow, so one ring per direction
 * holds the queue and the delay line together, and the loop sleeps in
 * ppoll until the earliest due packet (timer slack set to 1 us) instead of
 * spinning. A packet the loop writes late does not delay the ones behind
 * it: their times were fixed when they arrived.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "emu.h"
#include "netns.h"

/* Packets held per direction (queue and delay line): the bound on the
 * forwarder's memory, 16 MiB a direction. */
#define EMU_SLOTS 8192
#define EMU_PKT 2048

struct emu_ring {
	uint8_t *buf; /* EMU_SLOTS packets of up to EMU_PKT bytes */
	uint16_t len[EMU_SLOTS];
	uint64_t due[EMU_SLOTS]; /* when it is written to the far side */
	uint32_t head, count;
	uint64_t link_free_ns; /* when the bottleneck has serialised all it holds */
};

uint64_t emu_queue_bytes(double rate_mbit, double queue_ms)
{
	return rate_mbit > 0 ? (uint64_t)(rate_mbit * 1e6 / 8 * queue_ms / 1e3 + 0.5) : 0;
}

struct emu_counters emu_total(const struct emu_stats *s, int flow, int dir)
{
	struct emu_counters t;
	memset(&t, 0, sizeof t);
	for (int d = 0; d < EMU_DIRS; d++)
		for (int f = 0; f < EMU_FLOWS; f++) {
			if ((dir >= 0 && d != dir) || (flow >= 0 && f != flow))
				continue;
			const struct emu_counters *c = &s->flow[d][f];
			t.packets += c->packets;
			t.bytes += c->bytes;
			t.random_drops += c->random_drops;
			t.queue_drops += c->queue_drops;
			t.overflow_drops += c->overflow_drops;
			t.dropped_bytes += c->dropped_bytes;
		}
	return t;
}

static int tun_open(const char *ns, const char *ifname)
{
	if (ns_enter(ns) < 0)
		return -1;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint64_t rng_state = 0x853c49e6748fea9bull;
static uint32_t rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 32);
}

/* Which flow an IPv4 packet belongs to: its server-side port (the
 * destination going up, the source coming down). Fragments after the
 * first carry no port and count as other. */
static int flow_of(const uint8_t *p, size_t len, int dir, const uint16_t *ports)
{
	if (len < 20 || p[0] >> 4 != 4)
		return EMU_FLOW_OTHER;
	size_t ihl = (size_t)(p[0] & 15) * 4;
	unsigned frag = (unsigned)(p[6] & 0x1f) << 8 | p[7];
	if (frag || (p[9] != 6 && p[9] != 17) || len < ihl + 4)
		return EMU_FLOW_OTHER;
	const uint8_t *port = p + ihl + (dir == EMU_UP ? 2 : 0);
	uint16_t v = (uint16_t)(port[0] << 8 | port[1]);
	for (int f = 0; f < EMU_FLOW_OTHER; f++)
		if (ports[f] && ports[f] == v)
			return f;
	return EMU_FLOW_OTHER;
}

struct emu_cfg {
	uint64_t delay_ns;
	uint32_t drop_per_million;
	double ns_per_byte; /* 0: no bottleneck */
	uint64_t queue_limit;
	uint16_t ports[EMU_FLOW_OTHER];
};

/* Takes one packet that just arrived in direction d into the ring, or
 * drops it (random loss, full queue, full ring). */
static void admit(struct emu_ring *e, const struct emu_cfg *cfg, struct emu_stats *st, int d, uint32_t len,
		  uint64_t now)
{
	uint32_t tail = (e->head + e->count) % EMU_SLOTS;
	struct emu_counters *c = &st->flow[d][flow_of(e->buf + (size_t)tail * EMU_PKT, len, d, cfg->ports)];
	c->packets++;
	c->bytes += len;
	if (cfg->drop_per_million && rng_next() % 1000000u < cfg->drop_per_million) {
		c->random_drops++;
		c->dropped_bytes += len;
		return;
	}
	uint64_t leave = now;
	if (cfg->ns_per_byte > 0) {
		uint64_t backlog_ns = e->link_free_ns > now ? e->link_free_ns - now : 0;
		uint64_t backlog = (uint64_t)((double)backlog_ns / cfg->ns_per_byte + 0.5);
		/* Drop-tail on the bytes not yet serialised; an idle link takes
		 * any packet, however small the limit. */
		if (backlog_ns > 0 && backlog + len > cfg->queue_limit) {
			c->queue_drops++;
			c->dropped_bytes += len;
			return;
		}
		if (backlog + len > st->queue_peak_bytes[d])
			st->queue_peak_bytes[d] = backlog + len;
		uint64_t start = e->link_free_ns > now ? e->link_free_ns : now;
		e->link_free_ns = start + (uint64_t)((double)len * cfg->ns_per_byte + 0.5);
		leave = e->link_free_ns;
	}
	e->len[tail] = (uint16_t)len;
	e->due[tail] = leave + cfg->delay_ns;
	e->count++;
}

static void emu_loop(int fd[2], const struct emu_cfg *cfg, struct emu_stats *st)
{
	struct emu_ring q[EMU_DIRS];
	for (int d = 0; d < EMU_DIRS; d++) {
		memset(&q[d], 0, sizeof q[d]);
		q[d].buf = malloc((size_t)EMU_SLOTS * EMU_PKT);
		if (!q[d].buf)
			_exit(1);
	}
	rng_state ^= (uint64_t)getpid() << 17;
	uint8_t scratch[EMU_PKT];
	while (!bench_stop) {
		uint64_t now = bench_now_ns();
		uint64_t next = now + 100000000u;
		for (int d = 0; d < EMU_DIRS; d++) {
			/* d = EMU_UP: read fd[0] (client side), write fd[1]; EMU_DOWN the reverse. */
			struct emu_ring *e = &q[d];
			while (e->count > 0 && e->due[e->head] <= now) {
				uint32_t h = e->head;
				uint64_t late = now - e->due[h];
				if (late > st->late_max_ns[d])
					st->late_max_ns[d] = late;
				if (late > 1000000u)
					st->late_over_1ms[d]++;
				ssize_t w = write(fd[1 - d], e->buf + (size_t)h * EMU_PKT, e->len[h]);
				(void)w;
				st->delivered[d]++;
				e->head = (h + 1) % EMU_SLOTS;
				e->count--;
				now = bench_now_ns();
			}
			if (e->count > 0 && e->due[e->head] < next)
				next = e->due[e->head];
		}
		struct pollfd p[2] = {{.fd = fd[0], .events = POLLIN}, {.fd = fd[1], .events = POLLIN}};
		uint64_t wait = next > now ? next - now : 0;
		struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
		if (ppoll(p, 2, &ts, NULL) <= 0)
			continue;
		for (int d = 0; d < EMU_DIRS; d++) {
			if (!(p[d].revents & POLLIN))
				continue;
			struct emu_ring *e = &q[d];
			for (;;) {
				uint32_t tail = (e->head + e->count) % EMU_SLOTS;
				bool room = e->count < EMU_SLOTS;
				ssize_t r = read(fd[d], room ? e->buf + (size_t)tail * EMU_PKT : scratch,
						 EMU_PKT);
				if (r <= 0)
					break;
				if (!room) {
					struct emu_counters *c =
						&st->flow[d][flow_of(scratch, (size_t)r, d, cfg->ports)];
					c->packets++;
					c->bytes += (uint64_t)r;
					c->overflow_drops++;
					c->dropped_bytes += (uint64_t)r;
					continue;
				}
				admit(e, cfg, st, d, (uint32_t)r, bench_now_ns());
			}
		}
	}
	_exit(0);
}

void emu_stats_free(struct emu_stats *stats)
{
	helper_shared_free(stats, sizeof *stats);
}

pid_t emu_start(const char *ns_client, const char *ns_server, const struct emu_link *link,
		struct emu_stats **stats)
{
	*stats = NULL;
	struct emu_stats *st = helper_shared_alloc(sizeof *st);
	if (!st)
		return -1;
	struct emu_cfg cfg = {
		.delay_ns = (uint64_t)(link->delay_ms_oneway * 1e6 + 0.5),
		.drop_per_million = (uint32_t)(link->loss_pct * 10000.0 + 0.5),
		.ns_per_byte = link->rate_mbit > 0 ? 8e3 / link->rate_mbit : 0,
		.queue_limit = emu_queue_bytes(link->rate_mbit, link->queue_ms),
	};
	memcpy(cfg.ports, link->flow_port, sizeof cfg.ports);
	st->queue_limit_bytes = cfg.queue_limit;
	int ready;
	pid_t pid = helper_fork(&ready);
	if (pid < 0) {
		emu_stats_free(st);
		return -1;
	}
	if (pid == 0) {
		/* ppoll wakes within 1 us of a packet's due time, not the
		 * default 50 us: at 20 Mbit/s a full packet serialises in 600. */
		prctl(PR_SET_TIMERSLACK, 1000UL);
		st->realtime = helper_realtime();
		bench_install_stop_handler();
		int fd[2];
		fd[0] = tun_open(ns_client, "rbtun0");
		fd[1] = tun_open(ns_server, "rbtun1");
		helper_ready(ready, fd[0] >= 0 && fd[1] >= 0);
		emu_loop(fd, &cfg, st);
	}
	if (!helper_started(pid, ready)) {
		emu_stats_free(st);
		return -1;
	}
	char mtu[16];
	snprintf(mtu, sizeof mtu, "%d", EMU_MTU);
	char *c1[] = {"ip",          "-n",  (char *)ns_client, "addr", "add", EMU_CLIENT_IP, "peer",
		      EMU_SERVER_IP, "dev", "rbtun0",          NULL};
	char *c2[] = {"ip", "-n", (char *)ns_client, "link", "set", "rbtun0", "mtu", mtu, "up", NULL};
	char *s1[] = {"ip",          "-n",  (char *)ns_server, "addr", "add", EMU_SERVER_IP, "peer",
		      EMU_CLIENT_IP, "dev", "rbtun1",          NULL};
	char *s2[] = {"ip", "-n", (char *)ns_server, "link", "set", "rbtun1", "mtu", mtu, "up", NULL};
	if (run_cmd(c1, NULL) < 0 || run_cmd(c2, NULL) < 0 || run_cmd(s1, NULL) < 0 ||
	    run_cmd(s2, NULL) < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		emu_stats_free(st);
		return -1;
	}
	*stats = st;
	return pid;
}
