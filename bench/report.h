/* SPDX-License-Identifier: MIT */
/* The run plan (workload rows x columns x rounds), results, and the
 * Markdown / JSON / SVG output (plan.c, report.c). */
#ifndef RUDP_BENCH_REPORT_H
#define RUDP_BENCH_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"

#define NCOLUMNS 10

struct column_info {
	const char *name; /* as on the command line and in JSON */
	const char *title; /* as in the report */
	drv_server_fn server;
	drv_client_fn client;
	bool reliable; /* can run lossy rows */
};

extern const struct column_info columns[NCOLUMNS];
const char *column_unavailable(int i);
const char *column_version(int i);
int column_index(const char *name);

enum bench_mode { MODE_QUICK, MODE_FULL, MODE_SMOKE };

struct row {
	enum wl_kind kind;
	const char *workload_name;
	char label[128]; /* "800 B, 1 %", "800 B x 1,024, no loss" */
	uint32_t size, conns, window, warmup, samples;
	uint64_t messages;
	double loss_pct, delay_ms; /* loss each way; delay is the round trip */
	unsigned timeout_s;
	double estimate_s;
	int rounds;
};

struct run {
	const struct row *row;
	int column, round;
	bool ok, verified;
	bool copied; /* taken from the --resume folder, not made in this sitting */
	uint64_t messages, verified_msgs;
	double throughput; /* MiB/s of verified message bytes per direction, -1: none */
	double rtt_p50_us, rtt_p95_us, rtt_p99_us;
	double connect_p50_ms, connect_p99_ms;
	long rss_client_kib, rss_server_kib, rcvbuf_errors;
	/* librudp columns: frames the client resent and duplicates it dropped
	 * (the server's resends of what had arrived); -1: not reported. */
	int64_t client_resent, client_dups;
	/* Of client_resent: by cause (NACK, inferred, tail probe, timeout) and
	 * those shown unneeded (rudp_peer_stats.resent_spurious); -1: not
	 * reported. */
	int64_t client_resent_why[4], client_spurious;
	double seconds;
	char impairment[128];
	char error[256];
	/* Server workers the run asked for; the server's own count and, per
	 * worker, connections (-1: the column has none) and echoes, when it
	 * reported them at exit (workers_reported > 0). */
	int workers, workers_reported;
	int64_t worker_conns[BENCH_MAX_WORKERS], worker_echoes[BENCH_MAX_WORKERS];
};

struct plan_opts {
	enum bench_mode mode;
	const char *columns, *workloads, *case_filter;
	int rounds; /* 0: the mode's default */
	double loss_pct, delay_ms; /* < 0: the fixed cases */
};

struct plan {
	enum bench_mode mode;
	bool col_on[NCOLUMNS];
	struct row *rows;
	size_t nrows;
	struct run *runs;
	size_t nruns;
	char *skipped[64];
	size_t nskipped;
};

struct meta {
	char date[32], commit[64], cpu[128], kernel[160], compiler[128], mode[16];
	int cpus;
	/* CPU sets of the server and client processes ("0-3,8", or "any" when
	 * the affinity could not be read); shared: one CPU, both on it. */
	char server_cpus[128], client_cpus[128];
	int server_ncpus, client_ncpus;
	bool cpus_shared;
	unsigned workers_forced; /* --workers N; 0: one per server CPU on many/loaded rows, else 1 */
	int wait_spin_us; /* --wait-spin-us N for the rudp columns; -1: librudp's default */
	bool root;
	double seconds;
	char chart_note[160];
	/* --resume: the folder the verified runs were copied from, and how many. */
	char resumed_from[1024];
	size_t resumed_runs;
};

/* Datagram budget a column uses on a row (its own meaning; 0 = the driver's default). */
uint32_t row_mtu(const struct row *row, int column);
int plan_build(struct plan *p, const struct plan_opts *o, bool root);
void plan_free(struct plan *p);
void meta_fill(struct meta *m, const struct plan *p, bool root);
int make_results_dir(const char *base, const struct meta *m, char *out, size_t n);
/* Prints the Markdown tables; writes SVG charts into dir when not NULL. */
void report_print(FILE *f, const struct plan *p, struct meta *m, const char *dir);
int json_write(const char *path, const struct plan *p, const struct meta *m);
/* "default" or the --wait-spin-us value, as runs.json's meta gives it. */
const char *wait_spin_desc(const struct meta *m);
/* --resume: copies every planned run that dir/runs.json holds verified
 * into p (marked copied). Returns 0, or -1 with the reason on stderr when
 * the file is missing or malformed or came from another commit or mode. */
int resume_load(struct plan *p, const char *dir, const struct meta *m, size_t *copied);
/* "1 per server CPU (2) on many and loaded rows, 1 on single and sparse" or "3 (--workers)". */
const char *workers_desc(const struct meta *m);

#endif
