/* SPDX-License-Identifier: MIT */
/*
 * rudp-bench: librudp beside TCP, KCP, quic-go, ENet and raw UDP on the same
 * verified echo workloads (see BENCH.md for the method).
 *
 *   rudp-bench [--full | --smoke] [--columns LIST] [--workload LIST] [--case TEXT]
 *              [--rounds N] [--loss PCT] [--delay MS] [--workers N] [--json FILE] [--out DIR]
 *              [--no-netns] [--resume DIR]
 *   rudp-bench server --column C --bind ADDR:PORT [--mtu N] [--conns N] [--workers N]
 *              [--ready-fd FD]
 *   rudp-bench client --column C --connect ADDR:PORT [--workload W] [--size N]
 *              [--connections N] [--window N] [--warmup N] [--samples N] [--messages N] [--mtu N]
 *   rudp-bench --list
 *
 * The orchestrator (no sub-command) starts a server process and a client
 * process of this same binary for every run, each in a fresh namespace,
 * and collects the client's verified figures and both peak RSS values. The
 * usable CPUs are split into a server set and a disjoint client set, and the
 * server runs one worker (thread + SO_REUSEPORT socket) per CPU of its set on
 * the many and loaded rows, one on the others, unless --workers says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_config.h"
#include "emu.h"
#include "netns.h"
#include "report.h"
#include "rudp.h"
#include "side.h"

/* The batch and policy columns exist only when the library has those APIs
 * and this file's drivers implement them. */
#if defined(RUDP_HAVE_BATCH_API) && BENCH_RUDP_BATCH_IMPL
#define BENCH_HAVE_RUDP_BATCH 1
#else
#define BENCH_HAVE_RUDP_BATCH 0
#endif
#if defined(RUDP_HAVE_SEND_POLICY_API) && BENCH_RUDP_POLICY_IMPL
#define BENCH_HAVE_RUDP_POLICY 1
#else
#define BENCH_HAVE_RUDP_POLICY 0
#endif

/* ---- columns ---- */

const struct column_info columns[NCOLUMNS] = {
	{"tcp", "TCP", tcp_server, tcp_client, true},
	{"tcp-batch", "TCP (batch)", tcp_server, tcp_client, true},
	{"rudp-send", "rudp (send)", rudp_server_drv, rudp_client_drv, true},
	{"rudp-batch", "rudp (batch)", rudp_server_drv, rudp_client_drv, true},
	{"rudp-send-policy", "rudp (send + policy)", rudp_server_drv, rudp_client_drv, true},
	{"rudp-batch-policy", "rudp (batch + policy)", rudp_server_drv, rudp_client_drv, true},
	/* Redundancy on (drv_rudp.c): run on stream rows, or when --columns names it. */
	{"rudp-send-redundant", "rudp (send, redundant)", rudp_server_drv, rudp_client_drv, true},
	{"kcp", "C KCP", kcp_server_drv, kcp_client_drv, true},
	{"quic-go", "quic-go", NULL, NULL, true},
	{"enet", "ENet", enet_server_drv, enet_client_drv, true},
	{"raw-udp", "raw UDP", udp_server, udp_client, false},
};

static char quic_path[PATH_MAX + 32];

/* Why a column cannot run here, or NULL when it can. */
const char *column_unavailable(int i)
{
	const char *n = columns[i].name;
	if (!strcmp(n, "rudp-batch"))
		return BENCH_HAVE_RUDP_BATCH ? NULL : "n/a: not built";
	if (!strcmp(n, "rudp-send-policy"))
		return BENCH_HAVE_RUDP_POLICY ? NULL : "n/a: not built";
	if (!strcmp(n, "rudp-batch-policy"))
		return BENCH_HAVE_RUDP_POLICY && BENCH_HAVE_RUDP_BATCH ? NULL : "n/a: not built";
	if (!strcmp(n, "kcp"))
		return BENCH_KCP_BUILT ? NULL : "n/a: not built (npm unreachable at build)";
	if (!strcmp(n, "enet"))
		return BENCH_ENET_BUILT ? NULL : "n/a: not built (no libenet-dev)";
	if (!strcmp(n, "quic-go")) {
		if (!BENCH_QUIC_BUILT)
			return "n/a: not built (" BENCH_QUIC_WHY ")";
		if (!quic_path[0])
			return "n/a: rudp-bench-quic not found (neither beside this rudp-bench nor "
			       "at " BENCH_QUIC_INSTALLED ")";
	}
	return NULL;
}

int column_index(const char *name)
{
	for (int i = 0; i < NCOLUMNS; i++)
		if (!strcmp(columns[i].name, name))
			return i;
	return -1;
}

static void find_quic(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(quic_path, sizeof quic_path, "%s/rudp-bench-quic", self);
			if (access(quic_path, X_OK) == 0)
				return;
		}
	}
	snprintf(quic_path, sizeof quic_path, "%s", BENCH_QUIC_INSTALLED);
	if (access(quic_path, X_OK) != 0)
		quic_path[0] = '\0';
}

/* ---- server / client sub-commands ---- */

static int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || !*s || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* 0 and *out when s is all a number in [min, max]; else -1 (NaN too). */
static int parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= min && v <= max))
		return -1;
	*out = v;
	return 0;
}

static int kind_from_name(const char *s)
{
	for (int i = 0; i < WL_KINDS; i++)
		if (!strcmp(s, wl_kind_names[i]))
			return i;
	return -1;
}

/* Server workers a column can run: ENet's API cannot share a port. */
static unsigned column_workers(int column, unsigned want)
{
	return !strcmp(columns[column].name, "enet") ? 1 : want;
}

static void sub_usage(void)
{
	fprintf(stderr,
		"usage: rudp-bench server --column C --bind ADDR:PORT [--mtu N] [--conns N] [--workers N]\n"
		"                  [--wait-spin-us N] [--tcp-cc NAME] [--cc none|aimd|rate]\n"
		"       rudp-bench client --column C --connect ADDR:PORT [--workload single|sparse|many|"
		"loaded|path|stream]\n"
		"                  [--size N] [--connections N] [--window N] [--warmup N] [--samples N]\n"
		"                  [--messages N] [--mtu N] [--stall-ms N] [--wait-spin-us N]\n"
		"                  [--game-hz N --game-size N] [--tcp-cc NAME] [--cc none|aimd|rate]\n");
}

static int sub_main(int argc, char **argv, bool server)
{
	const char *column = NULL, *addr = NULL;
	struct wl_params p = {.kind = WL_SINGLE,
			      .size = 800,
			      .conns = 1,
			      .window = 64,
			      .warmup = 100,
			      .samples = 300,
			      .messages = 10000,
			      .mtu = 0,
			      .stall_ms = 15000,
			      .game_size = 200};
	uint32_t conns_hint = 1, workers = 1;
	int ready_fd = -1;
	static const struct option opts[] = {
		{"column", 1, 0, 'c'},       {"bind", 1, 0, 'b'},
		{"connect", 1, 0, 'C'},      {"mtu", 1, 0, 'm'},
		{"conns", 1, 0, 'n'},        {"ready-fd", 1, 0, 'r'},
		{"workload", 1, 0, 'W'},     {"size", 1, 0, 's'},
		{"connections", 1, 0, 'N'},  {"window", 1, 0, 'w'},
		{"warmup", 1, 0, 'u'},       {"samples", 1, 0, 'S'},
		{"messages", 1, 0, 'M'},     {"stall-ms", 1, 0, 't'},
		{"inject-fault", 1, 0, 'F'}, {"workers", 1, 0, 'K'},
		{"wait-spin-us", 1, 0, 'P'}, {"game-hz", 1, 0, 'G'},
		{"game-size", 1, 0, 'Z'},    {"tcp-cc", 1, 0, 'T'},
		{"cc", 1, 0, 'X'},           {0, 0, 0, 0},
	};
	int o;
	uint64_t v;
	optind = 1;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		int bad = 0;
		switch (o) {
		case 'c': column = optarg; break;
		case 'b':
		case 'C': addr = optarg; break;
		case 'm':
			bad = parse_uint(optarg, 9000, &v) || (v && v < 576);
			p.mtu = (uint32_t)v;
			break;
		case 'n':
			bad = parse_uint(optarg, BENCH_MAX_CONNS, &v);
			conns_hint = (uint32_t)v;
			break;
		case 'r':
			bad = parse_uint(optarg, 1024, &v);
			ready_fd = (int)v;
			break;
		case 'K':
			bad = parse_uint(optarg, BENCH_MAX_WORKERS, &v) || v == 0;
			workers = (uint32_t)v;
			break;
		case 'P':
			bad = parse_uint(optarg, BENCH_MAX_WAIT_SPIN_US, &v);
			bench_wait_spin_us = (int)v;
			break;
		case 'G':
			bad = parse_uint(optarg, 1000, &v) || v == 0;
			p.game_hz = (uint32_t)v;
			break;
		case 'Z':
			bad = parse_uint(optarg, 65536, &v) || v < BENCH_HDR;
			p.game_size = (uint32_t)v;
			break;
		case 'T':
			bad = !*optarg || strlen(optarg) > 15;
			bench_tcp_cc = optarg;
			break;
		case 'X':
			bench_cc = bench_cc_from_name(optarg);
			bad = bench_cc < 0;
			break;
		case 'W':
			bad = (kind_from_name(optarg) < 0);
			p.kind = (enum wl_kind)kind_from_name(optarg);
			break;
		case 's':
			bad = parse_uint(optarg, BENCH_MAX_SIZE, &v) || v < BENCH_HDR;
			p.size = (uint32_t)v;
			break;
		case 'N':
			bad = parse_uint(optarg, BENCH_MAX_CONNS, &v) || v == 0;
			p.conns = (uint32_t)v;
			break;
		case 'w':
			bad = parse_uint(optarg, 4096, &v) || v == 0;
			p.window = (uint32_t)v;
			break;
		case 'u':
			bad = parse_uint(optarg, 1u << 30, &v);
			p.warmup = (uint32_t)v;
			break;
		case 'S':
			bad = parse_uint(optarg, 1u << 30, &v);
			p.samples = (uint32_t)v;
			break;
		case 'M':
			bad = parse_uint(optarg, 1ull << 34, &v);
			p.messages = v;
			break;
		case 't':
			bad = parse_uint(optarg, 3600000, &v) || v == 0;
			p.stall_ms = (uint32_t)v;
			break;
		case 'F':
			p.fault = !strcmp(optarg, "corrupt")   ? FAULT_CORRUPT
				  : !strcmp(optarg, "reorder") ? FAULT_REORDER
				  : !strcmp(optarg, "drop")    ? FAULT_DROP
							       : FAULT_NONE;
			bad = p.fault == FAULT_NONE;
			break;
		default: sub_usage(); return 2;
		}
		if (bad) {
			for (int i = 0; opts[i].name; i++)
				if (opts[i].val == o)
					fprintf(stderr, "rudp-bench: bad value for --%s: %s\n", opts[i].name,
						optarg);
			return 2;
		}
	}
	if (!column || !addr) {
		sub_usage();
		return 2;
	}
	int ci = column_index(column);
	if (ci < 0) {
		fprintf(stderr, "rudp-bench: unknown column %s\n", column);
		return 2;
	}
	const char *why = column_unavailable(ci);
	if (why) {
		fprintf(stderr, "rudp-bench: %s: %s\n", column, why);
		return 3;
	}
	if (!strcmp(column, "quic-go")) {
		/* The Go driver takes the same arguments after its mode. */
		char **qargv = calloc((size_t)argc + 2, sizeof *qargv);
		if (!qargv)
			return 1;
		qargv[0] = quic_path;
		qargv[1] = server ? "server" : "client";
		for (int i = 1; i < argc; i++)
			qargv[i + 1] = argv[i];
		execv(quic_path, qargv);
		free(qargv);
		fprintf(stderr, "rudp-bench: cannot run %s: %s\n", quic_path, strerror(errno));
		return 1;
	}
	bench_install_stop_handler();
	if (server) {
		struct drv_server_opts so = {.bind = addr,
					     .mtu = p.mtu,
					     .conns_hint = conns_hint,
					     .workers = workers,
					     .ready_fd = ready_fd};
		return columns[ci].server(column, &so);
	}
	if (p.kind == WL_SPARSE) {
		p.window = 1;
		p.messages = 0;
	}
	struct wl w;
	if (wl_init(&w, &p) < 0) {
		fprintf(stderr, "rudp-bench: %s\n", w.err);
		return 2;
	}
	struct drv_client_opts co = {.connect = addr};
	int r = columns[ci].client(column, &co, &w);
	if (r < 0 || !wl_finished(&w)) {
		fprintf(stderr, "rudp-bench: %s client FAILED: %s\n", column,
			w.err[0] ? w.err : "incomplete");
		wl_free(&w);
		return 1;
	}
	wl_report(&w);
	wl_free(&w);
	return 0;
}

/* ---- orchestrator ---- */

static volatile sig_atomic_t interrupted;
static pid_t live_pids[8];
static char live_ns[4][64];

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void track_pid(pid_t p)
{
	for (int i = 0; i < 8; i++)
		if (live_pids[i] == 0) {
			live_pids[i] = p;
			return;
		}
}

static void untrack_pid(pid_t p)
{
	for (int i = 0; i < 8; i++)
		if (live_pids[i] == p)
			live_pids[i] = 0;
}

static void track_ns(const char *n)
{
	for (int i = 0; i < 4; i++)
		if (!live_ns[i][0]) {
			snprintf(live_ns[i], sizeof live_ns[i], "%s", n);
			return;
		}
}

/* Kills what a run started and deletes its namespaces; also the exit path
 * after SIGINT/SIGTERM or a failure. */
static void cleanup_all(void)
{
	for (int i = 0; i < 8; i++)
		if (live_pids[i] > 0) {
			kill(live_pids[i], SIGKILL);
			waitpid(live_pids[i], NULL, 0);
			live_pids[i] = 0;
		}
	for (int i = 0; i < 4; i++)
		if (live_ns[i][0]) {
			ns_delete(live_ns[i]);
			live_ns[i][0] = '\0';
		}
}

/* Waits for pid until deadline (monotonic ns); SIGKILL after it. */
static int wait_until(pid_t pid, uint64_t deadline, int *status, struct rusage *ru)
{
	for (;;) {
		pid_t r = wait4(pid, status, WNOHANG, ru);
		if (r == pid) {
			untrack_pid(pid);
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return -1;
		if (interrupted || bench_now_ns() > deadline) {
			kill(pid, SIGKILL);
			wait4(pid, status, 0, ru);
			untrack_pid(pid);
			return -1;
		}
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
}

static pid_t spawn(const char *ns, const cpu_set_t *cpus, char **argv, int out_fd, int ready_fd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (ns && ns_enter(ns) < 0) {
		fprintf(stderr, "rudp-bench: cannot enter namespace %s: %s\n", ns, strerror(errno));
		_exit(126);
	}
	if (cpus)
		sched_setaffinity(0, sizeof *cpus, cpus);
	if (out_fd >= 0)
		dup2(out_fd, 1);
	if (ready_fd >= 0 && ready_fd != 3) {
		dup2(ready_fd, 3);
		close(ready_fd);
	}
	execv("/proc/self/exe", argv);
	_exit(127);
}

/* Puts a and b in the first two of the NULL slots that end argv (the
 * caller's array has at least three left). */
static void append_args(char **argv, char *a, char *b)
{
	while (*argv)
		argv++;
	argv[0] = a;
	argv[1] = b;
}

static bool have_root;
static unsigned workers_forced; /* --workers N; 0: BENCH.md's defaults */
/* --tcp-cc: the TCP congestion control of the TCP columns and the competing
 * flow on rows with a bottleneck; NULL: the kernel's default. */
static const char *path_tcp_cc = "cubic";

/* Server-side ports in a run's namespace: the measured transport's, the
 * queueing probe's echo socket and the competing TCP flow's listener. */
#define PORT_MAIN 19500
#define PORT_PROBE 19501
#define PORT_COMPETITOR 19502

/* Stops a helper process of a run (emulator, probe, competing flow):
 * SIGTERM, then SIGKILL after 2 s. */
static void stop_helper(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	int st;
	struct rusage ru;
	wait_until(*pid, bench_now_ns() + 2000000000ull, &st, &ru);
	*pid = -1;
}

/* Where the two processes of a run may execute: the CPUs this process may
 * use, split into two disjoint sets. The server takes the larger half (its
 * workers can use several CPUs; the C clients run one thread). With one CPU
 * both share it, and the report says so. */
static struct {
	cpu_set_t server, client;
	int nserver, nclient;
	bool shared, pinned; /* pinned: sched_getaffinity worked and sets apply */
} cpu_sets;

/* "0-3,8" */
static void cpu_list(const cpu_set_t *set, char *out, size_t n)
{
	size_t len = 0;
	out[0] = '\0';
	for (int i = 0; i < CPU_SETSIZE && len < n; i++) {
		if (!CPU_ISSET(i, set))
			continue;
		int j = i;
		while (j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, set))
			j++;
		int r = j > i ? snprintf(out + len, n - len, "%s%d-%d", len ? "," : "", i, j)
			      : snprintf(out + len, n - len, "%s%d", len ? "," : "", i);
		if (r < 0)
			break;
		len += (size_t)r;
		i = j;
	}
}

static void split_cpus(struct meta *m)
{
	cpu_set_t all;
	CPU_ZERO(&all);
	CPU_ZERO(&cpu_sets.server);
	CPU_ZERO(&cpu_sets.client);
	cpu_sets.pinned = sched_getaffinity(0, sizeof all, &all) == 0 && CPU_COUNT(&all) > 0;
	int n = cpu_sets.pinned ? CPU_COUNT(&all) : 1;
	int take = (n + 1) / 2, seen = 0;
	for (int i = 0; cpu_sets.pinned && i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &all))
			CPU_SET(i, seen++ < take ? &cpu_sets.server : &cpu_sets.client);
	cpu_sets.shared = n == 1;
	if (cpu_sets.shared)
		cpu_sets.client = cpu_sets.server;
	cpu_sets.nserver = take;
	cpu_sets.nclient = cpu_sets.shared ? 1 : n - take;
	if (cpu_sets.pinned) {
		cpu_list(&cpu_sets.server, m->server_cpus, sizeof m->server_cpus);
		cpu_list(&cpu_sets.client, m->client_cpus, sizeof m->client_cpus);
	} else {
		snprintf(m->server_cpus, sizeof m->server_cpus, "any");
		snprintf(m->client_cpus, sizeof m->client_cpus, "any");
	}
	m->server_ncpus = cpu_sets.nserver;
	m->client_ncpus = cpu_sets.nclient;
	m->cpus_shared = cpu_sets.shared;
}

/* Reads the server's "served workers=N conns=a,b echoes=x,y" line (written
 * to the ready pipe at its exit) into r; leaves r as it is without one. */
static void parse_served(const char *s, struct run *r)
{
	const char *p = strstr(s, "served workers=");
	if (!p)
		return;
	char *end;
	unsigned long n = strtoul(p + 15, &end, 10);
	if (n == 0 || n > BENCH_MAX_WORKERS)
		return;
	const char *c = strstr(end, " conns="), *e = strstr(end, " echoes=");
	if (!c || !e)
		return;
	c += 7;
	e += 8;
	for (unsigned i = 0; i < n; i++) {
		if (*c == '-') {
			r->worker_conns[i] = -1;
			c++;
		} else {
			r->worker_conns[i] = (int64_t)strtoll(c, &end, 10);
			if (end == c)
				return;
			c = end;
		}
		r->worker_echoes[i] = (int64_t)strtoll(e, &end, 10);
		if (end == e)
			return;
		e = end;
		if (i + 1 < n && (*c++ != ',' || *e++ != ','))
			return;
	}
	r->workers = (int)n;
	r->workers_reported = (int)n;
}

/* The hwm_kib= field of the line that starts with prefix, or -1. */
static long reported_hwm_kib(const char *s, const char *prefix)
{
	const char *p = strstr(s, prefix);
	if (!p)
		return -1;
	const char *nl = strchr(p, '\n');
	const char *h = strstr(p, " hwm_kib=");
	if (!h || (nl && h > nl))
		return -1;
	return strtol(h + 9, NULL, 10);
}

static int parse_result(const char *out, struct run *r)
{
	const char *p = strstr(out, "RESULT ");
	if (!p)
		return -1;
	unsigned long long burst_msgs = 0, burst_ns = 0, verified = 0, messages = 0;
	int n = sscanf(p,
		       "RESULT verified=%llu messages=%llu burst_messages=%llu burst_ns=%llu rtt_p50_us=%lf "
		       "rtt_p95_us=%lf rtt_p99_us=%lf connect_p50_ms=%lf connect_p99_ms=%lf",
		       &verified, &messages, &burst_msgs, &burst_ns, &r->rtt_p50_us, &r->rtt_p95_us,
		       &r->rtt_p99_us, &r->connect_p50_ms, &r->connect_p99_ms);
	if (n != 9)
		return -1;
	/* Optional, librudp columns only; on the RESULT line itself. */
	const char *eol = strchr(p, '\n');
	const char *q = strstr(p, " resent=");
	long long resent, dups, why[4], spurious;
	if (q && (!eol || q < eol) && sscanf(q, " resent=%lld dups=%lld", &resent, &dups) == 2 &&
	    resent >= 0 && dups >= 0) {
		r->client_resent = resent;
		r->client_dups = dups;
		/* The causes and the spurious count came later: a client that
		 * does not print them leaves them unreported. */
		if (sscanf(q,
			   " resent=%lld dups=%lld resent_nack=%lld resent_inferred=%lld resent_probe=%lld "
			   "resent_timeout=%lld resent_spurious=%lld",
			   &resent, &dups, &why[0], &why[1], &why[2], &why[3], &spurious) == 7 &&
		    why[0] >= 0 && why[1] >= 0 && why[2] >= 0 && why[3] >= 0 && spurious >= 0) {
			for (int i = 0; i < 4; i++)
				r->client_resent_why[i] = why[i];
			r->client_spurious = spurious;
		}
	}
	const char *wb = strstr(p, " wire_bytes=");
	long long wire;
	if (wb && (!eol || wb < eol) && sscanf(wb, " wire_bytes=%lld", &wire) == 1 && wire >= 0)
		r->wire_bytes = wire;
	r->verified_msgs = verified;
	r->messages = messages;
	r->verified = verified == messages;
	r->throughput =
		burst_ns ? (double)burst_msgs * r->row->size / ((double)burst_ns / 1e9) / 1048576.0 : -1;
	return 0;
}

static void fmt_u(char *buf, size_t n, uint64_t v)
{
	snprintf(buf, n, "%" PRIu64, v);
}

/* Runs one (row, column, round). Fills r; returns 0 or -1 (r->error says why). */
static int run_one(struct run *r, int seq, bool use_ns)
{
	const struct row *row = r->row;
	const char *col = columns[r->column].name;
	char ns_c[64] = "", ns_s[64] = "";
	const char *addr_ip = "127.0.0.1";
	pid_t emu = -1, probe = -1, comp = -1;
	struct emu_stats *emu_st = NULL;
	struct probe_shared *probe_sh = NULL;
	struct competitor_shared *comp_sh = NULL;
	bool emulated = row->delay_ms > 0 || row->rate_mbit > 0;
	bool tcp_col = !strncmp(col, "tcp", 3);
	/* Only rows with a bottleneck: the delay rows keep the kernel's default. */
	const char *tcp_cc = row->rate_mbit > 0 && tcp_col ? path_tcp_cc : NULL;
	char out[4096] = "", served[4096] = "";
	int rc = -1;
	r->rcvbuf_errors = -1;
	r->client_resent = r->client_dups = r->client_spurious = r->wire_bytes = -1;
	for (int i = 0; i < 4; i++)
		r->client_resent_why[i] = -1;
	for (int i = 0; i < PF_COUNT; i++)
		r->path[i] = -1;
	if (use_ns) {
		snprintf(ns_s, sizeof ns_s, "rudpb-%d-%d", (int)getpid(), seq);
		if (ns_create(ns_s) < 0) {
			snprintf(r->error, sizeof r->error, "cannot create namespace %s", ns_s);
			return -1;
		}
		track_ns(ns_s);
		if (emulated) {
			snprintf(ns_c, sizeof ns_c, "rudpb-%d-%dc", (int)getpid(), seq);
			if (ns_create(ns_c) < 0) {
				snprintf(r->error, sizeof r->error, "cannot create namespace %s", ns_c);
				goto out;
			}
			track_ns(ns_c);
			struct emu_link link = {.delay_ms_oneway = row->delay_ms / 2.0,
						.loss_pct = row->loss_pct,
						.rate_mbit = row->rate_mbit,
						.queue_ms = row->queue_ms,
						.flow_port = {PORT_MAIN, PORT_PROBE, PORT_COMPETITOR}};
			emu = emu_start(ns_c, ns_s, &link, &emu_st);
			if (emu < 0) {
				snprintf(r->error, sizeof r->error, "TUN link emulator failed to start");
				goto out;
			}
			track_pid(emu);
			addr_ip = EMU_SERVER_IP;
			path_describe(row, path_tcp_cc, r->impairment, sizeof r->impairment);
			if (!emu_st->realtime) {
				/* Said where the figures are: its timing may have slipped. */
				size_t len = strlen(r->impairment);
				snprintf(r->impairment + len, sizeof r->impairment - len,
					 "; emulator not real-time");
			}
			if (row->kind == WL_PATH) {
				probe = probe_start(ns_c, ns_s, EMU_SERVER_IP, PORT_PROBE,
						    PATH_PROBE_INTERVAL_US, PATH_PROBE_SIZE, &probe_sh);
				if (probe < 0) {
					snprintf(r->error, sizeof r->error, "queueing probe failed to start");
					goto out;
				}
				track_pid(probe);
			}
		} else {
			snprintf(ns_c, sizeof ns_c, "%s", ns_s);
			if (row->loss_pct > 0) {
				if (ns_add_loss(ns_s, row->loss_pct) < 0) {
					snprintf(r->error, sizeof r->error, "nft loss rule failed");
					goto out;
				}
				snprintf(r->impairment, sizeof r->impairment,
					 "nft numgen drop %.2g %% on input (both directions); lo MTU 1500",
					 row->loss_pct);
			} else {
				snprintf(r->impairment, sizeof r->impairment, "none; lo MTU 1500");
			}
		}
	} else {
		snprintf(r->impairment, sizeof r->impairment, "none; host loopback (no namespace)");
	}
	char addr[64];
	int port = use_ns ? PORT_MAIN : 20000 + seq % 20000;
	snprintf(addr, sizeof addr, "%s:%d", addr_ip, port);
	char mtu[16], conns[16], size[16], window[16], warmup[16], samples[16], messages[16], stall[16];
	snprintf(mtu, sizeof mtu, "%u", row_mtu(row, r->column));
	snprintf(conns, sizeof conns, "%u", row->conns);
	snprintf(size, sizeof size, "%u", row->size);
	snprintf(window, sizeof window, "%u", row->window);
	snprintf(warmup, sizeof warmup, "%u", row->warmup);
	snprintf(samples, sizeof samples, "%u", row->samples);
	fmt_u(messages, sizeof messages, row->messages);
	snprintf(stall, sizeof stall, "%u", emulated || row->loss_pct > 0 ? 30000 : 15000);
	const char *const *kinds = wl_kind_names;
	/* BENCH.md: one worker per server CPU for the many-connection rows. */
	unsigned want = workers_forced                                   ? workers_forced
			: row->kind == WL_MANY || row->kind == WL_LOADED ? (unsigned)cpu_sets.nserver
									 : 1;
	r->workers = (int)column_workers(r->column, want);
	char workers[16];
	snprintf(workers, sizeof workers, "%d", r->workers);
	const cpu_set_t *scpu = cpu_sets.pinned ? &cpu_sets.server : NULL,
			*ccpu = cpu_sets.pinned ? &cpu_sets.client : NULL;
	int rp[2], op[2];
	if (pipe2(rp, O_CLOEXEC) < 0 || pipe2(op, O_CLOEXEC) < 0)
		goto out;
	/* The ready pipe's write end must survive exec in the server: fd 3
	 * without CLOEXEC. The server writes "ready" on it, and at exit what
	 * each worker served. */
	char *sargv[24] = {"rudp-bench", "server", "--column",  (char *)col, "--bind",     addr, "--mtu", mtu,
			   "--conns",    conns,    "--workers", workers,     "--ready-fd", "3",  NULL};
	/* --wait-spin-us goes to the rudp columns' halves only: the others
	 * have no such setting (and quic-go's driver would refuse it). */
	char spin[16];
	bool pass_spin = bench_wait_spin_us >= 0 && !strncmp(col, "rudp", 4);
	snprintf(spin, sizeof spin, "%d", bench_wait_spin_us);
	if (pass_spin)
		append_args(sargv, "--wait-spin-us", spin);
	if (tcp_cc)
		append_args(sargv, "--tcp-cc", (char *)tcp_cc);
	/* --cc likewise. */
	static const char *const cc_names[] = {"none", "aimd", "rate"};
	bool pass_cc = bench_cc >= 0 && !strncmp(col, "rudp", 4);
	if (pass_cc)
		append_args(sargv, "--cc", (char *)cc_names[bench_cc]);
	fcntl(rp[1], F_SETFD, 0);
	pid_t srv = spawn(use_ns ? ns_s : NULL, scpu, sargv, -1, rp[1]);
	close(rp[1]);
	if (srv < 0) {
		close(rp[0]);
		close(op[0]);
		close(op[1]);
		goto out;
	}
	track_pid(srv);
	struct pollfd pf = {.fd = rp[0], .events = POLLIN};
	char rbuf[16] = "";
	if (poll(&pf, 1, 15000) <= 0 || read(rp[0], rbuf, 6) < 5) {
		snprintf(r->error, sizeof r->error, "server did not start");
		close(rp[0]);
		close(op[0]);
		close(op[1]);
		int st;
		struct rusage ru;
		wait_until(srv, bench_now_ns(), &st, &ru);
		goto out;
	}
	char *cargv[40] = {"rudp-bench", "client", "--column",      (char *)col,
			   "--connect",  addr,     "--workload",    (char *)kinds[row->kind],
			   "--size",     size,     "--connections", conns,
			   "--window",   window,   "--warmup",      warmup,
			   "--samples",  samples,  "--messages",    messages,
			   "--mtu",      mtu,      "--stall-ms",    stall,
			   NULL};
	if (pass_spin)
		append_args(cargv, "--wait-spin-us", spin);
	if (tcp_cc)
		append_args(cargv, "--tcp-cc", (char *)tcp_cc);
	char game_hz[16], game_size[16];
	snprintf(game_hz, sizeof game_hz, "%u", row->game_hz);
	snprintf(game_size, sizeof game_size, "%u", row->game_size);
	if (row->game_hz) {
		append_args(cargv, "--game-hz", game_hz);
		append_args(cargv, "--game-size", game_size);
	}
	/* The competing flow connects now and starts sending when the client
	 * says its burst has started. */
	if (row->competitor && use_ns) {
		comp = competitor_start(ns_c, ns_s, EMU_SERVER_IP, PORT_COMPETITOR, path_tcp_cc, &comp_sh);
		if (comp < 0) {
			snprintf(r->error, sizeof r->error, "competing TCP flow failed to start");
			close(rp[0]);
			close(op[0]);
			close(op[1]);
			kill(srv, SIGKILL);
			int st;
			struct rusage ru;
			wait_until(srv, bench_now_ns(), &st, &ru);
			goto out;
		}
		track_pid(comp);
	}
	if (pass_cc)
		append_args(cargv, "--cc", (char *)cc_names[bench_cc]);
	fcntl(op[1], F_SETFD, 0);
	uint64_t t0 = bench_now_ns();
	pid_t cli = spawn(use_ns ? ns_c : NULL, ccpu, cargv, op[1], -1);
	close(op[1]);
	track_pid(cli);
	/* Read the client's stdout until it closes, then reap it. */
	size_t olen = 0;
	uint64_t deadline = t0 + (uint64_t)row->timeout_s * 1000000000ull;
	for (;;) {
		struct pollfd q = {.fd = op[0], .events = POLLIN};
		int pr = poll(&q, 1, 200);
		if (interrupted || bench_now_ns() > deadline)
			break;
		if (pr <= 0)
			continue;
		ssize_t n = read(op[0], out + olen, sizeof out - 1 - olen);
		if (n <= 0)
			break;
		olen += (size_t)n;
		out[olen] = '\0';
		if (comp_sh && !comp_sh->go && strstr(out, "BURST "))
			comp_sh->go = 1;
		if (olen == sizeof out - 1)
			break;
	}
	out[olen] = '\0';
	close(op[0]);
	int cst = 0, sst = 0;
	struct rusage cru, sru;
	memset(&cru, 0, sizeof cru);
	memset(&sru, 0, sizeof sru);
	int cw = wait_until(cli, deadline, &cst, &cru);
	r->seconds = (double)(bench_now_ns() - t0) / 1e9;
	/* Counters before the server (and with it a namespace) goes away. */
	if (use_ns) {
		long a = ns_rcvbuf_errors(ns_s);
		long b = strcmp(ns_c, ns_s) ? ns_rcvbuf_errors(ns_c) : 0;
		r->rcvbuf_errors = (a < 0 || b < 0) ? -1 : a + b;
	} else {
		r->rcvbuf_errors = -1;
	}
	kill(srv, SIGTERM);
	wait_until(srv, bench_now_ns() + 3000000000ull, &sst, &sru);
	/* The server is gone, so its end of the pipe is closed: read to EOF. */
	size_t slen = 0;
	for (;;) {
		struct pollfd q = {.fd = rp[0], .events = POLLIN};
		if (poll(&q, 1, 500) <= 0)
			break;
		ssize_t n = read(rp[0], served + slen, sizeof served - 1 - slen);
		if (n <= 0)
			break;
		slen += (size_t)n;
		if (slen == sizeof served - 1)
			break;
	}
	served[slen] = '\0';
	close(rp[0]);
	parse_served(served, r);
	/* Each half's own peak (VmHWM) where it reported one: ru_maxrss also
	 * counts rudp-bench's pages, held by the child between fork and exec,
	 * which put rudp-bench's own size under every column's figure. */
	long chwm = reported_hwm_kib(out, "RESULT "), shwm = reported_hwm_kib(served, "served ");
	r->rss_client_kib = chwm > 0 ? chwm : cru.ru_maxrss;
	r->rss_server_kib = shwm > 0 ? shwm : sru.ru_maxrss;
	if (interrupted) {
		snprintf(r->error, sizeof r->error, "interrupted");
		goto out;
	}
	if (cw < 0) {
		snprintf(r->error, sizeof r->error, "client timed out after %u s", row->timeout_s);
		goto out;
	}
	if (!WIFEXITED(cst) || WEXITSTATUS(cst) != 0) {
		snprintf(r->error, sizeof r->error, "client failed (exit %d; its error is printed above)",
			 WIFEXITED(cst) ? WEXITSTATUS(cst) : 128 + WTERMSIG(cst));
		goto out;
	}
	if (parse_result(out, r) < 0 || !r->verified) {
		snprintf(r->error, sizeof r->error, "client printed no complete verified result");
		goto out;
	}
	rc = 0;
	if (probe > 0) {
		/* Probes sent up to the burst's end get time to come back. */
		const char *e = strstr(out, " burst_end_ns=");
		uint64_t until = e ? strtoull(e + 14, NULL, 10) + 300000000ull : 0;
		while (!interrupted && bench_now_ns() < until) {
			struct timespec ts = {0, 10000000};
			nanosleep(&ts, NULL);
		}
	}
out:
	stop_helper(&comp);
	stop_helper(&probe);
	stop_helper(&emu);
	if (rc == 0 && comp_sh && comp_sh->err[0]) {
		snprintf(r->error, sizeof r->error, "competing TCP flow: %s", comp_sh->err);
		rc = -1;
	} else if (rc == 0 && probe_sh && probe_sh->err[0]) {
		snprintf(r->error, sizeof r->error, "queueing probe: %s", probe_sh->err);
		rc = -1;
	}
	if (rc == 0 && row->kind == WL_PATH) {
		struct path_inputs in = {out, served, emu_st, probe_sh, comp_sh};
		path_figures(r, &in);
	}
	emu_stats_free(emu_st);
	probe_free(probe_sh);
	competitor_free(comp_sh);
	if (ns_c[0] && strcmp(ns_c, ns_s))
		ns_delete(ns_c);
	if (ns_s[0])
		ns_delete(ns_s);
	for (int i = 0; i < 4; i++)
		if (!strcmp(live_ns[i], ns_s) || !strcmp(live_ns[i], ns_c))
			live_ns[i][0] = '\0';
	r->ok = rc == 0;
	if (!r->ok)
		r->verified = false;
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rudp-bench [--full | --smoke] [--columns LIST] [--workload LIST] [--case TEXT]\n"
		"                  [--rounds N] [--loss PCT] [--delay MS] [--rate MBIT] [--queue-ms MS]\n"
		"                  [--tcp-cc NAME|default] [--cc none|aimd|rate] [--workers N] [--json "
		"FILE]\n"
		"                  [--out DIR] [--no-netns] [--resume DIR] [--list]\n"
		"       rudp-bench server|client --column C ... (one half of a run; see docs/benchmarks.md)\n"
		"       rudp-bench link-check --rate MBIT [--queue-ms MS] [--delay RTT_MS] [--loss PCT]\n"
		"                  (measures the link emulator against what it was asked for)\n"
		"columns: tcp tcp-batch rudp-send rudp-batch rudp-send-policy rudp-batch-policy kcp quic-go\n"
		"         enet raw-udp rudp-send-redundant (stream rows, or when named);\n"
		"         workloads: single sparse many loaded path stream (path, stream: in\n"
		"         --full, or when named); --case TEXT: the rows whose label holds TEXT ('a:' .. "
		"'e:'\n"
		"         a path row, '50 ms' a single row)\n");
}

static void list_columns(void)
{
	for (int i = 0; i < NCOLUMNS; i++) {
		const char *why = column_unavailable(i);
		printf("%-20s %-22s %s\n", columns[i].name, columns[i].title, why ? why : column_version(i));
	}
}

/* Seconds a run is expected to take, for the progress line: its row's
 * estimate (plan.c) weighted by column where a column is known to run
 * several times slower. Weights from the per-run seconds of the full runs
 * of 2026-12-02 (e10751c, 964b1a4): at 1 % and 5 % loss on one connection
 * TCP takes about 6 times a librudp column's time per byte (its window
 * stalls on each retransmission timeout), ENet 4 and TCP (batch) 2.5;
 * quic-go about 4 on the many-connection rows. The static estimates
 * alone put the full run at over 4 h, where it takes under 1 h 30 min. */
static double run_estimate_s(const struct run *r)
{
	const char *col = columns[r->column].name;
	double w = 1;

	if (r->row->kind == WL_SINGLE && r->row->loss_pct > 0 && r->row->delay_ms <= 0)
		w = !strcmp(col, "tcp") ? 6 : !strcmp(col, "enet") ? 4 : !strcmp(col, "tcp-batch") ? 2.5 : 1;
	else if ((r->row->kind == WL_MANY || r->row->kind == WL_LOADED) && !strcmp(col, "quic-go"))
		w = 4;
	return r->row->estimate_s * w;
}

static void fmt_dur(char *b, size_t n, double s)
{
	/* Whole seconds in integers: no libm, whose pages would count in
	 * every column's peak RSS. */
	long t = (long)s;
	if (s < 0)
		snprintf(b, n, "?");
	else if (t >= 3600)
		snprintf(b, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
	else
		snprintf(b, n, "%ldm%02lds", t / 60, t % 60);
}

int main(int argc, char **argv)
{
	find_quic();
	if (argc > 1 && (!strcmp(argv[1], "server") || !strcmp(argv[1], "client")))
		return sub_main(argc - 1, argv + 1, !strcmp(argv[1], "server"));
	if (argc > 1 && !strcmp(argv[1], "link-check"))
		return link_check_main(argc - 1, argv + 1);

	struct plan_opts po = {.mode = MODE_QUICK,
			       .rounds = 0,
			       .loss_pct = -1,
			       .delay_ms = -1,
			       .rate_mbit = -1,
			       .queue_ms = -1};
	const char *json_path = NULL, *outdir = "rudp-bench-results", *resume_dir = NULL;
	bool no_ns = false, list = false, out_given = false;
	static const struct option opts[] = {
		{"full", 0, 0, 'f'},         {"smoke", 0, 0, 'k'},
		{"quick", 0, 0, 'q'},        {"columns", 1, 0, 'c'},
		{"workload", 1, 0, 'w'},     {"case", 1, 0, 'a'},
		{"rounds", 1, 0, 'r'},       {"loss", 1, 0, 'l'},
		{"delay", 1, 0, 'd'},        {"json", 1, 0, 'j'},
		{"out", 1, 0, 'o'},          {"no-netns", 0, 0, 'n'},
		{"list", 0, 0, 'L'},         {"help", 0, 0, 'h'},
		{"workers", 1, 0, 'W'},      {"resume", 1, 0, 'R'},
		{"wait-spin-us", 1, 0, 'P'}, {"rate", 1, 0, 'M'},
		{"queue-ms", 1, 0, 'Q'},     {"tcp-cc", 1, 0, 'T'},
		{"cc", 1, 0, 'X'},           {0, 0, 0, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		switch (o) {
		case 'f': po.mode = MODE_FULL; break;
		case 'k': po.mode = MODE_SMOKE; break;
		case 'q': po.mode = MODE_QUICK; break;
		case 'c': po.columns = optarg; break;
		case 'w': po.workloads = optarg; break;
		case 'a': po.case_filter = optarg; break;
		case 'r':
			po.rounds = (int)strtol(optarg, &end, 10);
			if (*end || po.rounds < 1 || po.rounds > 100) {
				fprintf(stderr, "rudp-bench: --rounds wants 1..100\n");
				return 2;
			}
			break;
		case 'l':
			if (parse_double(optarg, 0, 50, &po.loss_pct) < 0) {
				fprintf(stderr, "rudp-bench: --loss wants a percentage 0..50\n");
				return 2;
			}
			break;
		case 'd':
			if (parse_double(optarg, 0, 2000, &po.delay_ms) < 0) {
				fprintf(stderr,
					"rudp-bench: --delay wants a round-trip delay in ms, 0..2000\n");
				return 2;
			}
			break;
		case 'M':
			if (parse_double(optarg, 0.1, 1000, &po.rate_mbit) < 0) {
				fprintf(stderr,
					"rudp-bench: --rate wants a bottleneck rate in Mbit/s, 0.1..1000\n");
				return 2;
			}
			break;
		case 'Q':
			if (parse_double(optarg, 0, 5000, &po.queue_ms) < 0) {
				fprintf(stderr, "rudp-bench: --queue-ms wants the bottleneck's buffer in ms, "
						"0..5000\n");
				return 2;
			}
			break;
		case 'T':
			if (!*optarg || strlen(optarg) > 15) {
				fprintf(stderr, "rudp-bench: --tcp-cc wants a congestion control name "
						"(or 'default')\n");
				return 2;
			}
			path_tcp_cc = strcmp(optarg, "default") ? optarg : NULL;
			break;
		case 'W': {
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > BENCH_MAX_WORKERS) {
				fprintf(stderr, "rudp-bench: --workers wants 1..%d\n", BENCH_MAX_WORKERS);
				return 2;
			}
			workers_forced = (unsigned)v;
			break;
		}
		case 'P': {
			long v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 0 || v > BENCH_MAX_WAIT_SPIN_US) {
				fprintf(stderr, "rudp-bench: --wait-spin-us wants 0..%d\n",
					BENCH_MAX_WAIT_SPIN_US);
				return 2;
			}
			bench_wait_spin_us = (int)v;
			break;
		}
		case 'X':
			bench_cc = bench_cc_from_name(optarg);
			if (bench_cc < 0) {
				fprintf(stderr, "rudp-bench: --cc wants none, aimd or rate\n");
				return 2;
			}
			break;
		case 'j': json_path = optarg; break;
		case 'o':
			outdir = optarg;
			out_given = true;
			break;
		case 'n': no_ns = true; break;
		case 'R': resume_dir = optarg; break;
		case 'L': list = true; break;
		default: usage(); return o == 'h' ? 0 : 2;
		}
	}
	if (optind < argc) {
		usage();
		return 2;
	}
	/* Only path rows have a bottleneck of their own to give a buffer to. */
	if (po.queue_ms >= 0 && po.rate_mbit < 0 && !(po.workloads && !strcmp(po.workloads, "path"))) {
		fprintf(stderr,
			"rudp-bench: --queue-ms needs --rate (or --workload path, whose rows have one)\n");
		return 2;
	}
	if (list) {
		list_columns();
		return 0;
	}
	have_root = geteuid() == 0 && !no_ns && access("/run", W_OK) == 0;
	if (have_root) {
		char *probe[] = {"ip", "-V", NULL};
		if (run_cmd(probe, NULL) < 0) {
			fprintf(stderr, "rudp-bench: iproute2 (ip) not found: running without namespaces\n");
			have_root = false;
		}
	}
	struct plan plan;
	if (plan_build(&plan, &po, have_root) < 0)
		return 2;
	bench_on_stop_signals(on_interrupt);
	signal(SIGPIPE, SIG_IGN);

	struct meta meta;
	meta_fill(&meta, &plan, have_root);
	split_cpus(&meta);
	meta.workers_forced = workers_forced;
	meta.wait_spin_us = bench_wait_spin_us;
	{
		rudp_config defaults;
		rudp_config_init(&defaults);
		meta.congestion_control = bench_cc >= 0 ? bench_cc : defaults.congestion_control;
	}
	if (resume_dir) {
		/* A resumed run must be the same code and plan: resume_load
		 * refuses another commit or mode; the filters are the caller's. */
		if (strlen(resume_dir) >= sizeof meta.resumed_from) {
			fprintf(stderr, "rudp-bench: --resume: path too long\n");
			plan_free(&plan);
			return 2;
		}
		if (resume_load(&plan, resume_dir, &meta, &meta.resumed_runs) < 0) {
			plan_free(&plan);
			return 2;
		}
		snprintf(meta.resumed_from, sizeof meta.resumed_from, "%s", resume_dir);
	}
	printf("rudp-bench %s mode, commit %s, %s, %d CPUs, kernel %s\n", meta.mode, meta.commit, meta.cpu,
	       meta.cpus, meta.kernel);
	printf("server CPUs %s, client CPUs %s%s; server workers: %s\n", meta.server_cpus, meta.client_cpus,
	       meta.cpus_shared ? " (one CPU: shared)" : "", workers_desc(&meta));
	for (size_t i = 0; i < plan.nskipped; i++)
		printf("skipped: %s\n", plan.skipped[i]);
	/* Said before the first run, not only in the report an hour later. */
	for (int i = 0; i < NCOLUMNS; i++)
		if (plan.col_on[i] && column_unavailable(i))
			printf("column %s: %s; its cells will read so\n", columns[i].name,
			       column_unavailable(i));
	size_t todo = plan.nruns - meta.resumed_runs, done = 0;
	if (resume_dir)
		printf("resumed from %s: %zu of %zu runs copied, %zu to run\n", resume_dir, meta.resumed_runs,
		       plan.nruns, todo);
	fflush(stdout);

	/* Progress and the estimate count only the runs this sitting makes. */
	double spent = 0, estimate_total = 0;
	for (size_t i = 0; i < plan.nruns; i++)
		if (!plan.runs[i].copied)
			estimate_total += run_estimate_s(&plan.runs[i]);
	/* The static estimates weigh as this many seconds of measured runs, so
	 * the first rows (the fast one-connection ones) do not set the pace of
	 * the whole run on their own. */
	double prior_s = estimate_total / 10 < 600 ? estimate_total / 10 : 600;
	int failures = 0;
	bool tty = isatty(2);
	uint64_t start = bench_now_ns();
	for (size_t i = 0; i < plan.nruns && !interrupted; i++) {
		struct run *r = &plan.runs[i];
		if (r->copied)
			continue;
		double est_left = 0;
		for (size_t j = i; j < plan.nruns; j++)
			if (!plan.runs[j].copied)
				est_left += run_estimate_s(&plan.runs[j]);
		/* Scale the static estimate by how fast the runs so far went. */
		double done_est = estimate_total - est_left;
		if (done_est + prior_s > 0)
			est_left *= (spent + prior_s) / (done_est + prior_s);
		char left[32];
		fmt_dur(left, sizeof left, est_left);
		fprintf(stderr, "%s[%zu/%zu] %s %s · %s · round %d · about %s left%s", tty ? "\r\033[K" : "",
			++done, todo, r->row->workload_name, r->row->label, columns[r->column].name,
			r->round + 1, left, tty ? "" : "\n");
		fflush(stderr);
		uint64_t t = bench_now_ns();
		if (run_one(r, (int)i, have_root) < 0 && interrupted) {
			/* Cut short by SIGINT: not a failure of the column. Left
			 * as never reached, it stays out of runs.json and the
			 * tables, and a --resume of this folder makes it again. */
			const struct row *row = r->row;
			int column = r->column, round = r->round;
			memset(r, 0, sizeof *r);
			r->row = row;
			r->column = column;
			r->round = round;
			r->throughput = -1;
		} else if (!r->ok) {
			failures++;
			fprintf(stderr, "%sFAILED: %s %s %s round %d: %s\n", tty ? "\r\033[K" : "",
				r->row->workload_name, r->row->label, columns[r->column].name, r->round + 1,
				r->error);
		}
		spent += (double)(bench_now_ns() - t) / 1e9;
	}
	cleanup_all();
	if (tty)
		fprintf(stderr, "\r\033[K");
	char took[32];
	fmt_dur(took, sizeof took, (double)(bench_now_ns() - start) / 1e9);
	meta.seconds = (double)(bench_now_ns() - start) / 1e9;
	if (interrupted)
		fprintf(stderr, "rudp-bench: interrupted; namespaces and processes cleaned up\n");

	char dir[PATH_MAX] = "";
	if (po.mode != MODE_SMOKE || out_given) {
		if (make_results_dir(outdir, &meta, dir, sizeof dir) < 0)
			fprintf(stderr, "rudp-bench: cannot create a results folder under %s\n", outdir);
	}
	report_print(stdout, &plan, &meta, dir[0] ? dir : NULL);
	if (dir[0]) {
		char path[PATH_MAX + 32];
		snprintf(path, sizeof path, "%s/runs.json", dir);
		json_write(path, &plan, &meta);
		snprintf(path, sizeof path, "%s/report.md", dir);
		FILE *f = fopen(path, "w");
		if (f) {
			report_print(f, &plan, &meta, dir);
			fclose(f);
		}
		printf("\nresults: %s (report.md, runs.json, charts)\n", dir);
		if (interrupted)
			printf("to finish it later: the same command with --resume %s\n", dir);
	}
	if (json_path && json_write(json_path, &plan, &meta) < 0)
		fprintf(stderr, "rudp-bench: cannot write %s\n", json_path);
	if (resume_dir)
		printf("%s: %zu runs (%zu copied from %s), %d failed, took %s\n",
		       failures      ? "FAILED"
		       : interrupted ? "interrupted"
				     : "done",
		       plan.nruns, meta.resumed_runs, resume_dir, failures, took);
	else
		printf("%s: %zu runs, %d failed, took %s\n",
		       failures      ? "FAILED"
		       : interrupted ? "interrupted"
				     : "done",
		       plan.nruns, failures, took);
	plan_free(&plan);
	return failures || interrupted ? 1 : 0;
}
