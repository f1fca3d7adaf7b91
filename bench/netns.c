/* SPDX-License-Identifier: MIT */
/*
 * Private network namespaces for runs, nftables loss rules,
 * /proc/net/snmp counters, and the helper processes that run in them
 * (their start and the memory they share with the parent).
 *
 * The kernels this runs on may lack sch_netem, so loss on loopback is an
 * nftables `numgen random` drop on the input hook of the namespace's
 * loopback (every packet crosses input once, so both directions lose
 * alike); delay and bottlenecks come from the TUN link emulator (emu.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
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

int ns_socket(const char *name, int type)
{
	if (ns_enter(name) < 0)
		return -1;
	return socket(AF_INET, type | SOCK_CLOEXEC, 0);
}

void close_inherited_fds(int keep)
{
	if (keep > 3)
		close_range(3, (unsigned)keep - 1, 0);
	close_range((unsigned)(keep >= 3 ? keep + 1 : 3), ~0u, 0);
}

void *helper_shared_alloc(size_t size)
{
	/* An anonymous mapping starts zeroed. */
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void helper_shared_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

pid_t helper_fork(int *ready_fd)
{
	int sync[2];
	if (pipe(sync) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(sync[0]);
		close(sync[1]);
		return -1;
	}
	if (pid == 0) {
		close(sync[0]);
		close_inherited_fds(sync[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		*ready_fd = sync[1];
		return 0;
	}
	close(sync[1]);
	*ready_fd = sync[0];
	return pid;
}

void helper_ready(int ready_fd, bool ok)
{
	char c = ok ? 'y' : 'n';
	ssize_t w = write(ready_fd, &c, 1);
	(void)w;
	close(ready_fd);
	if (!ok)
		_exit(1);
}

bool helper_started(pid_t pid, int ready_fd)
{
	char c = 'n';
	ssize_t r = read(ready_fd, &c, 1);
	close(ready_fd);
	if (r == 1 && c == 'y')
		return true;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return false;
}

bool helper_realtime(void)
{
	struct sched_param sp = {.sched_priority = 10};
	return sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
}
