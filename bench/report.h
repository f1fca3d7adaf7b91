/* SPDX-License-Identifier: MIT */
/* The run plan (workload rows x columns x rounds), results, and the
 * Markdown / JSON / SVG output (plan.c, report.c). */
#ifndef RUDP_BENCH_REPORT_H
#define RUDP_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"

#define NCOLUMNS 11

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
	/* The emulated bottleneck (path rows, --rate): rate and drop-tail
	 * buffer in ms of it; 0: none. */
	double rate_mbit, queue_ms;
	char path_case; /* 'a'..'e': the path rows of BENCH.md; 0: another row */
	bool competitor; /* a kernel TCP bulk flow shares the link */
	uint32_t game_hz, game_size; /* a game stream on connection 0 */
	unsigned timeout_s;
	double estimate_s;
	int rounds;
};

/* Figures of a path row's run, kept as runs.json writes them (-1: none):
 * report.c writes and resume.c reads them by these names. */
enum path_fig {
	PF_GOODPUT_SHARE, /* verified bytes per direction / link rate */
	PF_RESENT_SHARE, /* resent bytes, both directions / delivered bytes, both */
	PF_RESENT_BYTES,
	PF_QUEUE_BASE_MS, /* the probe's RTT on the idle path: propagation + serialisation */
	PF_QUEUE_P50_MS, /* probe echo RTT above the base over the burst */
	PF_QUEUE_P99_MS,
	PF_PROBES_SENT,
	PF_PROBES_ECHOED,
	PF_JAIN,
	PF_TCP_MBIT, /* the competing TCP flow's verified echo rate over the burst */
	PF_TCP_SHARE, /* this column's goodput / the competing flow's */
	PF_TCP_RETRANS_BYTES,
	PF_GAME_BASE_MS,
	PF_GAME_U_P50_MS, /* game echo RTT above the base */
	PF_GAME_U_P99_MS,
	PF_GAME_U_SENT,
	PF_GAME_U_ECHOED,
	PF_GAME_R_P50_MS,
	PF_GAME_R_P99_MS,
	PF_GAME_R_SENT,
	PF_EMU_UP_QUEUE_DROPS,
	PF_EMU_UP_RANDOM_DROPS,
	PF_EMU_UP_OVERFLOW_DROPS,
	PF_EMU_UP_PACKETS,
	PF_EMU_DOWN_QUEUE_DROPS,
	PF_EMU_DOWN_RANDOM_DROPS,
	PF_EMU_DOWN_OVERFLOW_DROPS,
	PF_EMU_DOWN_PACKETS,
	PF_EMU_MAIN_DROPPED_BYTES, /* the measured transport's packets the link dropped, both ways */
	PF_EMU_QUEUE_PEAK_BYTES,
	PF_EMU_LATE_MAX_US, /* the emulator's worst lateness writing a packet */
	PF_EMU_LATE_OVER_1MS,
	PF_COUNT
};
extern const char *const path_fig_key[PF_COUNT];

/* Where a path run's resent figure comes from. */
enum resent_source { RESENT_NONE, RESENT_OWN, RESENT_LINK };

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
	/* Bytes the client's transport sent (RESULT wire_bytes); -1: the
	 * column cannot tell. */
	int64_t wire_bytes;
	double seconds;
	char impairment[256];
	char error[256];
	/* Server workers the run asked for; the server's own count and, per
	 * worker, connections (-1: the column has none) and echoes, when it
	 * reported them at exit (workers_reported > 0). */
	int workers, workers_reported;
	int64_t worker_conns[BENCH_MAX_WORKERS], worker_echoes[BENCH_MAX_WORKERS];
	/* Path rows: the figures above, and where the resent one came from:
	 * the transport's own counts, or the link's drops of its packets
	 * (a lower bound: each needed at least one resend). */
	double path[PF_COUNT];
	enum resent_source resent_source;
};

struct plan_opts {
	enum bench_mode mode;
	const char *columns, *workloads, *case_filter;
	int rounds; /* 0: the mode's default */
	double loss_pct, delay_ms; /* < 0: the fixed cases */
	double rate_mbit, queue_ms; /* < 0: the fixed cases */
};

/* Run names of the workload kinds (JSON, --workload). */
extern const char *const wl_kind_names[WL_KINDS];

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
	/* The rudp columns' rudp_config.congestion_control: --cc, or librudp's
	 * default resolved (a resumed file must match either way). */
	int congestion_control;
	bool root;
	double seconds;
	char chart_note[160];
	/* --resume: the folder the verified runs were copied from, and how many. */
	char resumed_from[1024];
	size_t resumed_runs;
};

/* Path rows (pathfig.c). The queueing probe: PATH_PROBE_SIZE B of UDP
 * every PATH_PROBE_INTERVAL_US. */
#define PATH_PROBE_SIZE 64
#define PATH_PROBE_INTERVAL_US 10000
struct emu_stats;
struct probe_shared;
struct competitor_shared;
struct path_inputs {
	const char *result; /* the client's output, with its RESULT line */
	const char *served; /* the server's summary line */
	const struct emu_stats *emu;
	const struct probe_shared *probe; /* NULL: none */
	const struct competitor_shared *comp; /* NULL: none */
};
/* Fills r->path and r->resent_source (r->throughput and verified_msgs set). */
void path_figures(struct run *r, const struct path_inputs *in);
/* The idle path's RTT for a message of udp_payload bytes (ms). */
double path_base_rtt_ms(const struct row *row, uint32_t udp_payload);
/* The emulated link of a row, as the report's path column gives it. */
void path_describe(const struct row *row, const char *tcp_cc, char *buf, size_t n);

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
/* m->congestion_control as --cc spells it: "none", "aimd", "rate". */
const char *cc_desc(const struct meta *m);

#endif
