/* SPDX-License-Identifier: MIT */
/*
 * Private network namespaces for runs, nftables loss rules, the userspace
 * TUN link emulator for delay, and /proc/net/snmp counters.
 *
 * The kernels this runs on may lack sch_netem, so loss is an nftables
 * `numgen random` drop on the input hook of the namespace's loopback (every
 * packet crosses input once, so both directions lose alike), and delay is a
 * forwarder process that joins a client namespace and a server namespace
 * through two TUN devices, holding each packet for the one-way delay and
 * dropping at the same rate in both directions.
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
#include "netns.h"

int run_cmd(char *const argv[], const char *input)
{
	int pfd[2] = {-1, -1};
	if (input && pipe(pfd) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (input) {
			dup2(pfd[0], 0);
			close(pfd[0]);
			close(pfd[1]);
		}
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (input) {
		close(pfd[0]);
		size_t len = strlen(input);
		ssize_t w = write(pfd[1], input, len);
		(void)w;
		close(pfd[1]);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int ns_create(const char *name)
{
	char *add[] = {"ip", "netns", "add", (char *)name, NULL};
	char *lo[] = {"ip", "-n", (char *)name, "link", "set", "lo", "mtu", "1500", "up", NULL};
	if (run_cmd(add, NULL) < 0)
		return -1;
	if (run_cmd(lo, NULL) < 0) {
		ns_delete(name);
		return -1;
	}
	return 0;
}

void ns_delete(const char *name)
{
	char *del[] = {"ip", "netns", "del", (char *)name, NULL};
	run_cmd(del, NULL);
}

int ns_add_loss(const char *name, double pct)
{
	char script[512];
	int per_mille = (int)(pct * 10.0 + 0.5);
	snprintf(script, sizeof script,
		 "table inet rudpbench {\n chain input {\n  type filter hook input priority 0;\n"
		 "  numgen random mod 1000 < %d drop\n }\n}\n",
		 per_mille);
	char *argv[] = {"ip", "netns", "exec", (char *)name, "nft", "-f", "-", NULL};
	return run_cmd(argv, script);
}

int ns_enter(const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "/run/netns/%s", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = setns(fd, CLONE_NEWNET);
	close(fd);
	return r;
}

static long snmp_rcvbuf_errors_self(void)
{
	FILE *f = fopen("/proc/thread-self/net/snmp", "r");
	if (!f)
		return -1;
	char hdr[1024], val[1024];
	long result = -1;
	while (fgets(hdr, sizeof hdr, f) && fgets(val, sizeof val, f)) {
		if (strncmp(hdr, "Udp:", 4) != 0 || strncmp(val, "Udp:", 4) != 0)
			continue;
		/* Find RcvbufErrors' position in the header line, take the same field. */
		char *hs, *vs, *hp = hdr + 4, *vp = val + 4;
		for (;;) {
			char *h = strtok_r(hp, " \n", &hs);
			char *v = strtok_r(vp, " \n", &vs);
			hp = vp = NULL;
			if (!h || !v)
				break;
			if (strcmp(h, "RcvbufErrors") == 0) {
				result = atol(v);
				break;
			}
		}
		break;
	}
	fclose(f);
	return result;
}

long ns_rcvbuf_errors(const char *name)
{
	if (!name)
		return snmp_rcvbuf_errors_self();
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -1;
	long r = -1;
	if (ns_enter(name) == 0) {
		r = snmp_rcvbuf_errors_self();
		setns(self, CLONE_NEWNET);
	}
	close(self);
	return r;
}

/* ---- TUN link emulator ---- */

#define EMU_SLOTS 8192
#define EMU_PKT 2048

struct emu_queue {
	uint8_t *buf; /* EMU_SLOTS packets */
	uint16_t len[EMU_SLOTS];
	uint64_t due[EMU_SLOTS];
	uint32_t head, count;
	uint64_t overflow;
};

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

static void emu_loop(int fd[2], uint64_t delay_ns, uint32_t drop_per_million)
{
	struct emu_queue q[2];
	for (int d = 0; d < 2; d++) {
		memset(&q[d], 0, sizeof q[d]);
		q[d].buf = malloc((size_t)EMU_SLOTS * EMU_PKT);
		if (!q[d].buf)
			_exit(1);
	}
	rng_state ^= (uint64_t)getpid() << 17;
	while (!bench_stop) {
		uint64_t now = bench_now_ns();
		uint64_t next = now + 100000000u;
		for (int d = 0; d < 2; d++) {
			/* d = 0: client -> server (read fd[0], write fd[1]); d = 1 the reverse. */
			while (q[d].count > 0 && q[d].due[q[d].head] <= now) {
				uint32_t h = q[d].head;
				ssize_t w = write(fd[1 - d], q[d].buf + (size_t)h * EMU_PKT, q[d].len[h]);
				(void)w;
				q[d].head = (h + 1) % EMU_SLOTS;
				q[d].count--;
			}
			if (q[d].count > 0 && q[d].due[q[d].head] < next)
				next = q[d].due[q[d].head];
		}
		struct pollfd p[2] = {{.fd = fd[0], .events = POLLIN}, {.fd = fd[1], .events = POLLIN}};
		uint64_t wait = next > now ? next - now : 0;
		struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
		if (ppoll(p, 2, &ts, NULL) <= 0)
			continue;
		for (int d = 0; d < 2; d++) {
			if (!(p[d].revents & POLLIN))
				continue;
			for (;;) {
				struct emu_queue *e = &q[d];
				uint8_t scratch[EMU_PKT];
				uint32_t tail = (e->head + e->count) % EMU_SLOTS;
				uint8_t *dst =
					e->count < EMU_SLOTS ? e->buf + (size_t)tail * EMU_PKT : scratch;
				ssize_t r = read(fd[d], dst, EMU_PKT);
				if (r <= 0)
					break;
				if (dst == scratch) {
					e->overflow++;
					continue;
				}
				if (drop_per_million && rng_next() % 1000000u < drop_per_million)
					continue;
				e->len[tail] = (uint16_t)r;
				e->due[tail] = bench_now_ns() + delay_ns;
				e->count++;
			}
		}
	}
	_exit(0);
}

pid_t emu_start(const char *ns_client, const char *ns_server, double delay_ms_oneway, double loss_pct)
{
	int sync[2];
	if (pipe(sync) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(sync[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bench_install_stop_handler();
		int fd[2];
		fd[0] = tun_open(ns_client, "rbtun0");
		fd[1] = tun_open(ns_server, "rbtun1");
		char ok = (fd[0] >= 0 && fd[1] >= 0) ? 'y' : 'n';
		ssize_t w = write(sync[1], &ok, 1);
		(void)w;
		close(sync[1]);
		if (ok != 'y')
			_exit(1);
		emu_loop(fd, (uint64_t)(delay_ms_oneway * 1e6), (uint32_t)(loss_pct * 10000.0 + 0.5));
	}
	close(sync[1]);
	char ok = 'n';
	ssize_t r = read(sync[0], &ok, 1);
	close(sync[0]);
	if (r != 1 || ok != 'y') {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	char *c1[] = {"ip",          "-n",  (char *)ns_client, "addr", "add", EMU_CLIENT_IP, "peer",
		      EMU_SERVER_IP, "dev", "rbtun0",          NULL};
	char *c2[] = {"ip", "-n", (char *)ns_client, "link", "set", "rbtun0", "mtu", "1500", "up", NULL};
	char *s1[] = {"ip",          "-n",  (char *)ns_server, "addr", "add", EMU_SERVER_IP, "peer",
		      EMU_CLIENT_IP, "dev", "rbtun1",          NULL};
	char *s2[] = {"ip", "-n", (char *)ns_server, "link", "set", "rbtun1", "mtu", "1500", "up", NULL};
	if (run_cmd(c1, NULL) < 0 || run_cmd(c2, NULL) < 0 || run_cmd(s1, NULL) < 0 ||
	    run_cmd(s2, NULL) < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}
