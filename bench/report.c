/* SPDX-License-Identifier: MIT */
/*
 * Output: Markdown tables in BENCH.md's layout (median of the rounds with
 * min-max), peak RSS client/server, SVG charts through gnuplot, and the
 * JSON file with every run's raw figures. A cell of a failed run says FAIL:
 * a figure is never taken from it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_config.h"
#include "netns.h"
#include "report.h"
#include "rudp.h"

#if defined(BENCH_HAVE_ENET)
#include <enet/enet.h>
#endif

const char *column_version(int i)
{
	static char buf[NCOLUMNS][256];
	const char *n = columns[i].name;
	if (!strncmp(n, "tcp", 3) || !strcmp(n, "raw-udp")) {
		struct utsname u;
		uname(&u);
		snprintf(buf[i], sizeof buf[i], "Linux %s kernel stack", u.release);
	} else if (!strncmp(n, "rudp-", 5)) {
		snprintf(buf[i], sizeof buf[i], "librudp %s", RUDP_VERSION_STRING);
	} else if (!strcmp(n, "kcp")) {
		snprintf(buf[i], sizeof buf[i], "%s", BENCH_KCP_VERSION);
	} else if (!strcmp(n, "quic-go")) {
		snprintf(buf[i], sizeof buf[i], "%s", BENCH_QUIC_VERSION);
	} else if (!strcmp(n, "enet")) {
#if defined(BENCH_HAVE_ENET)
		snprintf(buf[i], sizeof buf[i],
			 "libenet %d.%d.%d (Debian libenet-dev); server: 1 worker (%s)", ENET_VERSION_MAJOR,
			 ENET_VERSION_MINOR, ENET_VERSION_PATCH, BENCH_ENET_ONE_WORKER);
#else
		snprintf(buf[i], sizeof buf[i], "not built");
#endif
	}
	return buf[i];
}

static void read_cpu(char *out, size_t n)
{
	snprintf(out, n, "unknown CPU");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "model name", 10)) {
			char *c = strchr(line, ':');
			if (c) {
				c += 2;
				c[strcspn(c, "\n")] = '\0';
				snprintf(out, n, "%s", c);
			}
			break;
		}
	fclose(f);
}

void meta_fill(struct meta *m, const struct plan *p, bool root)
{
	memset(m, 0, sizeof *m);
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(m->commit, sizeof m->commit, "%s", BENCH_COMMIT);
	read_cpu(m->cpu, sizeof m->cpu);
	struct utsname u;
	uname(&u);
	snprintf(m->kernel, sizeof m->kernel, "%s %s", u.sysname, u.release);
	snprintf(m->compiler, sizeof m->compiler, "%s", BENCH_COMPILER);
	snprintf(m->mode, sizeof m->mode, "%s",
		 p->mode == MODE_FULL    ? "full"
		 : p->mode == MODE_SMOKE ? "smoke"
					 : "quick");
	m->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	m->root = root;
}

int make_results_dir(const char *base, const struct meta *m, char *out, size_t n)
{
	char stamp[32];
	snprintf(stamp, sizeof stamp, "%s", m->date);
	/* "2026-10-01T12:00:00Z" -> "20261001T120000Z": no colons in paths. */
	char compact[32];
	size_t j = 0;
	for (size_t i = 0; stamp[i] && j < sizeof compact - 1; i++)
		if (stamp[i] != '-' && stamp[i] != ':')
			compact[j++] = stamp[i];
	compact[j] = '\0';
	if (mkdir(base, 0755) < 0 && errno != EEXIST)
		return -1;
	if (snprintf(out, n, "%s/%s_%s", base, compact, m->commit) >= (int)n)
		return -1;
	if (mkdir(out, 0755) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* ---- statistics ---- */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct agg {
	int n, failed;
	const char *error;
	double med, min, max;
};

typedef double (*metric_fn)(const struct run *r);

static struct agg aggregate(const struct plan *p, const struct row *row, int col, metric_fn f)
{
	struct agg a = {0};
	double v[8];
	for (size_t i = 0; i < p->nruns; i++) {
		const struct run *r = &p->runs[i];
		if (r->row != row || r->column != col)
			continue;
		if (!r->ok) {
			if (r->error[0] || r->seconds > 0) {
				a.failed++;
				if (!a.error)
					a.error = r->error;
			}
			continue;
		}
		double x = f(r);
		if (x < 0 || a.n >= 8)
			continue;
		v[a.n++] = x;
	}
	if (a.n) {
		qsort(v, (size_t)a.n, sizeof v[0], cmp_d);
		a.min = v[0];
		a.max = v[a.n - 1];
		a.med = a.n % 2 ? v[a.n / 2] : (v[a.n / 2 - 1] + v[a.n / 2]) / 2;
	}
	return a;
}

static double m_tput(const struct run *r)
{
	return r->throughput;
}
/* Single rows with a round trip: the share of what the application window
 * allows, window x size per RTT (a column cannot go faster, whatever its
 * loss recovery). */
static double m_cap_share(const struct run *r)
{
	const struct row *row = r->row;
	if (r->throughput < 0 || row->kind != WL_SINGLE || row->delay_ms <= 0)
		return -1;
	double cap = (double)row->window * row->size / (row->delay_ms / 1000.0);
	return r->throughput * 1048576.0 / cap;
}
/* Messages the client sent in a run: a stream row's ticks are not among
 * the workload's messages the RESULT line counts. */
static uint64_t sent_messages(const struct run *r)
{
	const struct row *row = r->row;
	return row->kind == WL_STREAM ? row->warmup + row->samples + row->messages : r->messages;
}

/* Bytes the client's transport sent per message it sent; resends and
 * headers count, so the same figure at 0 % loss is the baseline a
 * loss-free link costs. */
static double m_wire_per_msg(const struct run *r)
{
	uint64_t sent = sent_messages(r);
	if (r->wire_bytes < 0 || sent == 0)
		return -1;
	return (double)r->wire_bytes / (double)sent;
}
static double m_p50(const struct run *r)
{
	return r->rtt_p50_us;
}
static double m_p95(const struct run *r)
{
	return r->rtt_p95_us;
}
static double m_p99(const struct run *r)
{
	return r->rtt_p99_us;
}
static double m_p50ms(const struct run *r)
{
	return r->rtt_p50_us < 0 ? -1 : r->rtt_p50_us / 1000;
}
static double m_p95ms(const struct run *r)
{
	return r->rtt_p95_us < 0 ? -1 : r->rtt_p95_us / 1000;
}
static double m_p99ms(const struct run *r)
{
	return r->rtt_p99_us < 0 ? -1 : r->rtt_p99_us / 1000;
}
static double m_c50(const struct run *r)
{
	return r->connect_p50_ms;
}
static double m_c99(const struct run *r)
{
	return r->connect_p99_ms;
}
static double m_rssc(const struct run *r)
{
	return r->rss_client_kib / 1024.0;
}
static double m_rsss(const struct run *r)
{
	return r->rss_server_kib / 1024.0;
}
static double m_rcvbuf(const struct run *r)
{
	return (double)r->rcvbuf_errors;
}

static double m_resent(const struct run *r)
{
	return r->client_resent < 0 ? -1 : (double)r->client_resent;
}
static double m_dups(const struct run *r)
{
	return r->client_dups < 0 ? -1 : (double)r->client_dups;
}
static double m_spurious(const struct run *r)
{
	return r->client_spurious < 0 ? -1 : (double)r->client_spurious;
}
static double m_why_nack(const struct run *r)
{
	return r->client_resent_why[0] < 0 ? -1 : (double)r->client_resent_why[0];
}
static double m_why_inferred(const struct run *r)
{
	return r->client_resent_why[1] < 0 ? -1 : (double)r->client_resent_why[1];
}
static double m_why_probe(const struct run *r)
{
	return r->client_resent_why[2] < 0 ? -1 : (double)r->client_resent_why[2];
}
static double m_why_timeout(const struct run *r)
{
	return r->client_resent_why[3] < 0 ? -1 : (double)r->client_resent_why[3];
}
/* Resends per hundred messages the client sent, so rows of different
 * lengths compare. */
static double m_resent_pct(const struct run *r)
{
	return r->client_resent < 0 || sent_messages(r) == 0
		       ? -1
		       : 100.0 * (double)r->client_resent / (double)sent_messages(r);
}

static bool row_has_runs(const struct plan *p, const struct row *row)
{
	for (size_t i = 0; i < p->nruns; i++)
		if (p->runs[i].row == row && (p->runs[i].ok || p->runs[i].error[0]))
			return true;
	return false;
}

/* Text of a cell that has no figure, or NULL. */
static const char *no_figure(const struct plan *p, const struct row *row, int col, struct agg *a)
{
	const char *why = column_unavailable(col);
	if (why)
		return why;
	if (!columns[col].reliable && (row->loss_pct > 0 || row->delay_ms > 0 || row->rate_mbit > 0))
		return "n/a: no reliability";
	if (a->failed)
		return "FAIL";
	if (a->n == 0)
		return row_has_runs(p, row) ? "n/a" : "not run";
	return NULL;
}

static void cell_range(char *b, size_t n, const struct agg *a, int prec)
{
	if (a->n > 1)
		snprintf(b, n, "%.*f (%.*f-%.*f)", prec, a->med, prec, a->min, prec, a->max);
	else
		snprintf(b, n, "%.*f", prec, a->med);
}

static void header(FILE *f, const struct plan *p, const char *first)
{
	fprintf(f, "| %s | path |", first);
	for (int c = 0; c < NCOLUMNS; c++)
		if (p->col_on[c])
			fprintf(f, " %s |", columns[c].title);
	fprintf(f, "\n|---|---|");
	for (int c = 0; c < NCOLUMNS; c++)
		if (p->col_on[c])
			fprintf(f, "---|");
	fprintf(f, "\n");
}

/* The row's impairment, then how the server ran: "; server: 2 workers (enet 1)". */
static const char *row_path(const struct plan *p, const struct row *row)
{
	static char buf[512];
	const char *imp = "";
	int most = 0;
	for (size_t i = 0; i < p->nruns; i++)
		if (p->runs[i].row == row) {
			if (!imp[0] && p->runs[i].impairment[0])
				imp = p->runs[i].impairment;
			if (p->runs[i].workers > most)
				most = p->runs[i].workers;
		}
	int len = snprintf(buf, sizeof buf, "%s", imp);
	if (most <= 0)
		return buf;
	len += snprintf(buf + len, sizeof buf - (size_t)len, "%sserver: %d worker%s", imp[0] ? "; " : "",
			most, most > 1 ? "s" : "");
	/* Columns that ran fewer (enet: one socket only). */
	bool paren = false;
	for (int c = 0; c < NCOLUMNS && len < (int)sizeof buf; c++) {
		int w = 0;
		for (size_t i = 0; i < p->nruns; i++)
			if (p->runs[i].row == row && p->runs[i].column == c && p->runs[i].workers > 0)
				w = p->runs[i].workers;
		if (w > 0 && w < most) {
			len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%s %d", paren ? ", " : " (",
					columns[c].name, w);
			paren = true;
		}
	}
	if (paren && len < (int)sizeof buf)
		snprintf(buf + len, sizeof buf - (size_t)len, ")");
	return buf;
}

/* How the kernel spread the work over the server's workers, for rows where
 * some column ran more than one: connections per worker (echoes where the
 * column has no connections), from each column's first reported round. */
static void spread(FILE *f, const struct plan *p, enum wl_kind kind)
{
	bool any = false;
	for (size_t i = 0; i < p->nrows; i++) {
		const struct row *row = &p->rows[i];
		if (row->kind != kind)
			continue;
		char line[2048];
		int len = 0;
		for (int c = 0; c < NCOLUMNS && len < (int)sizeof line; c++) {
			const struct run *r = NULL;
			for (size_t k = 0; k < p->nruns && !r; k++)
				if (p->runs[k].row == row && p->runs[k].column == c &&
				    p->runs[k].workers_reported > 1)
					r = &p->runs[k];
			if (!r)
				continue;
			bool conns = r->worker_conns[0] >= 0;
			len += snprintf(line + len, sizeof line - (size_t)len, "%s%s %s", len ? ", " : "",
					columns[c].name, conns ? "" : "echoes ");
			for (int w = 0; w < r->workers_reported && len < (int)sizeof line; w++)
				len += snprintf(
					line + len, sizeof line - (size_t)len, "%s%lld", w ? "/" : "",
					(long long)(conns ? r->worker_conns[w] : r->worker_echoes[w]));
		}
		if (!len)
			continue;
		if (!any)
			fprintf(f, "Server workers: connections per worker as the kernel spread them "
				   "(SO_REUSEPORT; first round):\n\n");
		any = true;
		fprintf(f, "- %s: %s\n", row->label, line);
	}
	if (any)
		fprintf(f, "\n");
}

const char *wait_spin_desc(const struct meta *m)
{
	static char buf[32];
	if (m->wait_spin_us < 0)
		return "default";
	snprintf(buf, sizeof buf, "%d", m->wait_spin_us);
	return buf;
}

const char *cc_desc(const struct meta *m)
{
	switch (m->congestion_control) {
	case RUDP_CC_NONE: return "none";
	case RUDP_CC_AIMD: return "aimd";
	case RUDP_CC_RATE: return "rate";
	default: return "unknown";
	}
}

const char *workers_desc(const struct meta *m)
{
	static char buf[160];
	if (m->workers_forced)
		snprintf(buf, sizeof buf, "%u on every row (--workers)", m->workers_forced);
	else
		snprintf(buf, sizeof buf,
			 "%d (one per server CPU) on many and loaded rows, 1 on single and sparse",
			 m->server_ncpus);
	return buf;
}

/* One table: one metric (or up to three joined with " / "). */
/* Rows of kind that want() takes (NULL: all). */
typedef bool (*row_filter)(const struct row *row);

static void table_rows(FILE *f, const struct plan *p, enum wl_kind kind, row_filter want, const char *first,
		       metric_fn *fs, int nf, int prec, bool range)
{
	header(f, p, first);
	for (size_t i = 0; i < p->nrows; i++) {
		const struct row *row = &p->rows[i];
		if (row->kind != kind || (want && !want(row)))
			continue;
		fprintf(f, "| %s | %s |", row->label, row_path(p, row));
		for (int c = 0; c < NCOLUMNS; c++) {
			if (!p->col_on[c])
				continue;
			char cell[160] = "";
			for (int k = 0; k < nf; k++) {
				struct agg a = aggregate(p, row, c, fs[k]);
				const char *nf_ = no_figure(p, row, c, &a);
				if (nf_) {
					snprintf(cell, sizeof cell, "%s", nf_);
					break;
				}
				char part[64];
				if (range)
					cell_range(part, sizeof part, &a, prec);
				else
					snprintf(part, sizeof part, "%.*f", prec, a.med);
				size_t len = strlen(cell);
				snprintf(cell + len, sizeof cell - len, "%s%s", k ? " / " : "", part);
			}
			fprintf(f, " %s |", cell);
		}
		fprintf(f, "\n");
	}
	fprintf(f, "\n");
}

static void table(FILE *f, const struct plan *p, enum wl_kind kind, const char *first, metric_fn *fs, int nf,
		  int prec, bool range)
{
	table_rows(f, p, kind, NULL, first, fs, nf, prec, range);
}

static void rss_table(FILE *f, const struct plan *p, enum wl_kind kind)
{
	fprintf(f, "Peak RSS, client / server (MiB, median), and UDP RcvbufErrors in the namespace where "
		   "any:\n\n");
	header(f, p, "case");
	for (size_t i = 0; i < p->nrows; i++) {
		const struct row *row = &p->rows[i];
		if (row->kind != kind)
			continue;
		fprintf(f, "| %s | |", row->label);
		for (int c = 0; c < NCOLUMNS; c++) {
			if (!p->col_on[c])
				continue;
			struct agg a = aggregate(p, row, c, m_rssc), b = aggregate(p, row, c, m_rsss);
			struct agg e = aggregate(p, row, c, m_rcvbuf);
			const char *nf_ = no_figure(p, row, c, &a);
			if (nf_)
				fprintf(f, " %s |", nf_);
			else if (e.n && e.max > 0)
				fprintf(f, " %.1f / %.1f; rcvbuf %.0f |", a.med, b.med, e.max);
			else
				fprintf(f, " %.1f / %.1f |", a.med, b.med);
		}
		fprintf(f, "\n");
	}
	fprintf(f, "\n");
}

/* One cell of a resend table: row's figures for column c. */
typedef void (*resend_cell_fn)(FILE *f, const struct plan *p, const struct row *row, int c);

/* A resend table of the columns in has[], one row per case of kind. */
static void resend_rows(FILE *f, const struct plan *p, enum wl_kind kind, const bool *has,
			resend_cell_fn cell)
{
	fprintf(f, "| case |");
	for (int c = 0; c < NCOLUMNS; c++)
		if (has[c])
			fprintf(f, " %s |", columns[c].title);
	fprintf(f, "\n|---|");
	for (int c = 0; c < NCOLUMNS; c++)
		if (has[c])
			fprintf(f, "---|");
	fprintf(f, "\n");
	for (size_t i = 0; i < p->nrows; i++) {
		const struct row *row = &p->rows[i];
		if (row->kind != kind)
			continue;
		fprintf(f, "| %s |", row->label);
		for (int c = 0; c < NCOLUMNS; c++)
			if (has[c])
				cell(f, p, row, c);
		fprintf(f, "\n");
	}
	fprintf(f, "\n");
}

static void resent_cell(FILE *f, const struct plan *p, const struct row *row, int c)
{
	struct agg a = aggregate(p, row, c, m_resent), d = aggregate(p, row, c, m_dups);
	struct agg pct = aggregate(p, row, c, m_resent_pct), s = aggregate(p, row, c, m_spurious);
	const char *nf_ = no_figure(p, row, c, &a);
	if (nf_)
		fprintf(f, " %s |", nf_);
	else if (s.n)
		fprintf(f, " %.0f (%.2f %%), %.0f unneeded / %.0f |", a.med, pct.med, s.med, d.med);
	else
		fprintf(f, " %.0f (%.2f %%) / %.0f |", a.med, pct.med, d.med);
}

static void cause_cell(FILE *f, const struct plan *p, const struct row *row, int c)
{
	struct agg a = aggregate(p, row, c, m_why_nack);
	const char *nf_ = no_figure(p, row, c, &a);
	if (nf_ || a.n == 0)
		fprintf(f, " %s |", nf_ ? nf_ : "n/a");
	else
		fprintf(f, " %.0f / %.0f / %.0f / %.0f |", a.med, aggregate(p, row, c, m_why_inferred).med,
			aggregate(p, row, c, m_why_probe).med, aggregate(p, row, c, m_why_timeout).med);
}

/* What the librudp columns resent, from the counts the client prints at
 * exit: the client's resends, those shown unneeded (an older copy was
 * acknowledged after the resend) and the duplicates it dropped (the
 * server's resends of what had already arrived), then the resends by
 * cause; medians over verified rounds. Only columns whose runs reported
 * them appear; a table is left out when none did (other libraries do not
 * say, and runs from before the counts existed lack the second). */
static void resend_table(FILE *f, const struct plan *p, enum wl_kind kind)
{
	bool has[NCOLUMNS] = {false}, has_why[NCOLUMNS] = {false};
	bool any = false, any_why = false;
	for (size_t i = 0; i < p->nruns; i++) {
		const struct run *r = &p->runs[i];
		if (r->row->kind != kind || !r->ok || r->client_resent < 0 || !p->col_on[r->column])
			continue;
		any = has[r->column] = true;
		if (r->client_spurious >= 0)
			any_why = has_why[r->column] = true;
	}
	if (!any)
		return;
	fprintf(f, "librudp resends, per run (median): frames the client resent (%% of its messages), those "
		   "of them shown unneeded (an older copy was acknowledged after the resend) / duplicates "
		   "the client dropped (the server's unneeded resends):\n\n");
	resend_rows(f, p, kind, has, resent_cell);
	if (any_why) {
		fprintf(f, "librudp resends by cause, per run (median): NACK / inferred (a later datagram "
			   "acknowledged) / tail probe / timeout:\n\n");
		resend_rows(f, p, kind, has_why, cause_cell);
	}
}

static void failures(FILE *f, const struct plan *p, enum wl_kind kind)
{
	bool any = false;
	for (size_t i = 0; i < p->nruns; i++) {
		const struct run *r = &p->runs[i];
		if (r->row->kind != kind || r->ok || !r->error[0])
			continue;
		if (!any)
			fprintf(f, "Failed runs (no figure is taken from them):\n\n");
		any = true;
		fprintf(f, "- %s, %s, round %d: %s\n", r->row->label, columns[r->column].name, r->round + 1,
			r->error);
	}
	if (any)
		fprintf(f, "\n");
}

/* ---- path rows ---- */

#define PATH_METRIC(name, fig)                                                                               \
	static double name(const struct run *r)                                                              \
	{                                                                                                    \
		return r->path[fig];                                                                         \
	}
PATH_METRIC(m_goodput, PF_GOODPUT_SHARE)
PATH_METRIC(m_queue50, PF_QUEUE_P50_MS)
PATH_METRIC(m_queue99, PF_QUEUE_P99_MS)
PATH_METRIC(m_gu50, PF_GAME_U_P50_MS)
PATH_METRIC(m_gu99, PF_GAME_U_P99_MS)
PATH_METRIC(m_gr50, PF_GAME_R_P50_MS)
PATH_METRIC(m_gr99, PF_GAME_R_P99_MS)
PATH_METRIC(m_upq, PF_EMU_UP_QUEUE_DROPS)
PATH_METRIC(m_downq, PF_EMU_DOWN_QUEUE_DROPS)
PATH_METRIC(m_upr, PF_EMU_UP_RANDOM_DROPS)
PATH_METRIC(m_downr, PF_EMU_DOWN_RANDOM_DROPS)
#undef PATH_METRIC

static double m_resent_share_pct(const struct run *r)
{
	return r->path[PF_RESENT_SHARE] < 0 ? -1 : 100 * r->path[PF_RESENT_SHARE];
}

/* Several connections: Jain's index; beside a TCP flow: the share. */
static double m_fair(const struct run *r)
{
	return r->row->competitor ? r->path[PF_TCP_SHARE] : r->path[PF_JAIN];
}

static bool fair_row(const struct row *row)
{
	return row->competitor || row->conns > 1;
}

static bool game_row(const struct row *row)
{
	return row->game_hz > 0;
}

/* How a column carries the game stream. */
static const char *game_carriage(int c)
{
	const char *n = columns[c].name;
	if (!strncmp(n, "rudp-", 5))
		return "own channels, unreliable-sequenced and reliable-ordered, at RUDP_PRIORITY_IMMEDIATE";
	if (!strcmp(n, "enet"))
		return "own channels, unreliable (sequenced) and reliable; no priorities";
	return "in-band: both streams ride the bulk's one ordered stream (no unreliable delivery)";
}

static void resent_path_table(FILE *f, const struct plan *p)
{
	header(f, p, "case");
	for (size_t i = 0; i < p->nrows; i++) {
		const struct row *row = &p->rows[i];
		if (row->kind != WL_PATH)
			continue;
		fprintf(f, "| %s | %s |", row->label, row_path(p, row));
		for (int c = 0; c < NCOLUMNS; c++) {
			if (!p->col_on[c])
				continue;
			struct agg a = aggregate(p, row, c, m_resent_share_pct);
			const char *nf_ = no_figure(p, row, c, &a);
			if (nf_) {
				fprintf(f, " %s |", nf_);
				continue;
			}
			bool link = false;
			for (size_t k = 0; k < p->nruns; k++)
				if (p->runs[k].row == row && p->runs[k].column == c && p->runs[k].ok)
					link |= p->runs[k].resent_source == RESENT_LINK;
			char cell[64];
			cell_range(cell, sizeof cell, &a, 2);
			fprintf(f, " %s%s |", cell, link ? " (link drops)" : "");
		}
		fprintf(f, "\n");
	}
	fprintf(f, "\n");
}

static void path_section(FILE *f, const struct plan *p)
{
	fprintf(f, "### Paths: bottleneck rows\n\n"
		   "Each run goes through the TUN link emulator between a client and a server namespace. Per "
		   "direction: random loss, then a drop-tail queue holding what the rate serialises in the "
		   "buffer's time, in front of the bottleneck rate (IP bytes), then half the RTT of "
		   "propagation delay. Messages of 1,000 B, an application window of 1,024 per connection; "
		   "the burst is sized for about 10 s of the link (of half of it beside the TCP flow). The "
		   "path column gives every row's link; medians of the rounds, (min-max) where there are "
		   "several.\n\n");
	fprintf(f, "Goodput / link rate (verified message bytes per direction over the burst, divided by "
		   "the link rate):\n\n");
	metric_fn g[] = {m_goodput};
	table(f, p, WL_PATH, "case", g, 1, 3, true);
	fprintf(f, "Resent / delivered (%%; bytes resent in both directions over message bytes delivered "
		   "in both): from the transport's own counts (TCP: tcpi_bytes_retrans of both ends; KCP: "
		   "PUSH data bytes put out beyond those given to it; librudp: frames resent times the "
		   "mean message size, rudp_peer_stats of both ends), or, marked (link drops), the link's "
		   "drops of the flow's packets in IP bytes, where the library does not count its resends "
		   "(ENet, quic-go): a lower bound, since each dropped packet needed a resend and spurious "
		   "ones go unseen:\n\n");
	resent_path_table(f, p);
	fprintf(f,
		"Queueing delay added, p50 / p99 (ms): the echo RTT of a %d B UDP probe every %d ms "
		"through the same link (its own echo socket in the server namespace), over the burst, "
		"above the idle path's RTT (propagation plus serialising the probe each way):\n\n",
		PATH_PROBE_SIZE, PATH_PROBE_INTERVAL_US / 1000);
	metric_fn q[] = {m_queue50, m_queue99};
	table(f, p, WL_PATH, "case", q, 2, 1, false);
	bool any_fair = false, any_game = false;
	for (size_t i = 0; i < p->nrows; i++) {
		any_fair |= p->rows[i].kind == WL_PATH && fair_row(&p->rows[i]);
		any_game |= p->rows[i].kind == WL_PATH && game_row(&p->rows[i]);
	}
	if (any_fair) {
		fprintf(f, "Sharing: Jain's index over the connections' goodput (each connection's verified "
			   "burst bytes when the first of them finished), or, beside a kernel TCP flow "
			   "echoing bulk on the same link, this column's goodput over that flow's over the "
			   "same burst:\n\n");
		metric_fn s_[] = {m_fair};
		table_rows(f, p, WL_PATH, fair_row, "case", s_, 1, 2, true);
	}
	if (any_game) {
		fprintf(f, "Game stream beside bulk on one connection, echo RTT above the idle path's "
			   "(from the 60 Hz tick each message was due at, so waiting to be sent counts), ms: "
			   "unreliable-sequenced p50 / p99 / reliable-ordered p50 / p99:\n\n");
		metric_fn gm[] = {m_gu50, m_gu99, m_gr50, m_gr99};
		table_rows(f, p, WL_PATH, game_row, "case", gm, 4, 1, false);
		fprintf(f, "How each column carries the game stream:\n\n");
		for (int c = 0; c < NCOLUMNS; c++)
			if (p->col_on[c] && columns[c].reliable && !column_unavailable(c))
				fprintf(f, "- %s: %s\n", columns[c].name, game_carriage(c));
		fprintf(f, "\n");
	}
	fprintf(f, "Link drops per run (median, packets): queue up / down, random up / down (all flows: "
		   "the measured one, the probe and any competing flow):\n\n");
	metric_fn d[] = {m_upq, m_downq, m_upr, m_downr};
	table(f, p, WL_PATH, "case", d, 4, 0, false);
}

static bool rtt_row(const struct row *row)
{
	return row->kind == WL_SINGLE && row->delay_ms > 0;
}

static bool any_row(const struct plan *p, row_filter want)
{
	for (size_t i = 0; i < p->nrows; i++)
		if (want(&p->rows[i]))
			return true;
	return false;
}

static bool kind_present(const struct plan *p, enum wl_kind k)
{
	for (size_t i = 0; i < p->nrows; i++)
		if (p->rows[i].kind == k)
			return true;
	return false;
}

/* Clustered bars of the median of metric fn per row and column. */
static void chart(const struct plan *p, enum wl_kind kind, const char *dir, const char *name,
		  const char *ylabel, metric_fn fn, struct meta *m, FILE *md)
{
	char dat[4200], gp[4200], svg[4200];
	snprintf(dat, sizeof dat, "%s/%s.dat", dir, name);
	snprintf(gp, sizeof gp, "%s/%s.gp", dir, name);
	snprintf(svg, sizeof svg, "%s/%s.svg", dir, name);
	/* Only columns with a figure on some row: gnuplot warns, in the
	 * middle of the report on the terminal, of a series with none (the
	 * redundant column outside stream rows, a column that failed on
	 * every row). */
	bool plotted[NCOLUMNS] = {false};
	int ncol = 0;
	for (int c = 0; c < NCOLUMNS; c++) {
		if (!p->col_on[c] || column_unavailable(c))
			continue;
		for (size_t i = 0; i < p->nrows && !plotted[c]; i++) {
			struct agg a;
			if (p->rows[i].kind != kind)
				continue;
			a = aggregate(p, &p->rows[i], c, fn);
			plotted[c] = a.n && !a.failed;
		}
		ncol += plotted[c];
	}
	if (ncol == 0)
		return;
	FILE *d = fopen(dat, "w");
	if (!d)
		return;
	fprintf(d, "case");
	for (int c = 0; c < NCOLUMNS; c++)
		if (plotted[c])
			fprintf(d, "\t\"%s\"", columns[c].name);
	fprintf(d, "\n");
	for (size_t i = 0; i < p->nrows; i++) {
		const struct row *row = &p->rows[i];
		if (row->kind != kind)
			continue;
		fprintf(d, "\"%s\"", row->label);
		for (int c = 0; c < NCOLUMNS; c++) {
			if (!plotted[c])
				continue;
			struct agg a = aggregate(p, row, c, fn);
			if (a.n && !a.failed)
				fprintf(d, "\t%g", a.med);
			else
				fprintf(d, "\tNaN");
		}
		fprintf(d, "\n");
	}
	fclose(d);
	FILE *g = fopen(gp, "w");
	if (!g)
		return;
	fprintf(g,
		"set terminal svg size 1000,480 dynamic background rgb 'white'\nset output '%s'\n"
		"set datafile missing 'NaN'\nset style data histograms\nset style histogram clustered gap 1\n"
		"set style fill solid 0.85 border -1\nset key outside right top\nset ylabel '%s'\n"
		"set title 'rudp-bench %s (median of rounds)'\nset xtics rotate by -20\nset grid ytics\n"
		"plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i)\n",
		svg, ylabel, name, ncol + 1, dat);
	fclose(g);
	char *argv[] = {"gnuplot", gp, NULL};
	if (run_cmd(argv, NULL) == 0) {
		fprintf(md, "![%s](%s.svg)\n\n", name, name);
	} else {
		snprintf(m->chart_note, sizeof m->chart_note,
			 "no charts: gnuplot is not installed or failed");
		unlink(gp);
	}
}

void report_print(FILE *f, const struct plan *p, struct meta *m, const char *dir)
{
	fprintf(f, "\n## rudp-bench %s run, %s, commit %s\n\n", m->mode, m->date, m->commit);
	fprintf(f, "CPU: %s (%d online); kernel: %s; compiler: %s; %s\n\n", m->cpu, m->cpus, m->kernel,
		m->compiler,
		m->root ? "root: private namespace per run" : "not root: host loopback, no loss/delay rows");
	if (m->cpus_shared)
		fprintf(f,
			"CPU sets: server and client share CPU %s (one usable CPU: each run's figures "
			"include their contention). ",
			m->server_cpus);
	else
		fprintf(f, "CPU sets (sched_setaffinity): server CPUs %s, client CPUs %s. ", m->server_cpus,
			m->client_cpus);
	fprintf(f,
		"Server workers (a thread and an SO_REUSEPORT socket each): %s; enet: always 1 (%s). "
		"The path column gives each row's count.\n\n",
		workers_desc(m), BENCH_ENET_ONE_WORKER);
	{
		rudp_config defaults;
		rudp_config_init(&defaults);
		fprintf(f,
			"Congestion control in the rudp columns (`rudp_config.congestion_control`, `--cc`): "
			"`%s`%s.\n\n",
			cc_desc(m),
			m->congestion_control == defaults.congestion_control ? ", librudp's default" : "");
	}
	if (m->wait_spin_us >= 0) {
		rudp_config defaults;
		rudp_config_init(&defaults);
		fprintf(f,
			"librudp's watch for input before a sleep (`rudp_config.io.wait_spin_us`, "
			"`--wait-spin-us`): %d us in the rudp columns (default %u)%s.\n\n",
			m->wait_spin_us, (unsigned)defaults.io.wait_spin_us,
			m->wait_spin_us == 0 ? ": their waits block, as the other columns' do" : "");
	}
	if (m->resumed_from[0]) {
		size_t made = 0;
		for (size_t i = 0; i < p->nruns; i++)
			made += !p->runs[i].copied && (p->runs[i].ok || p->runs[i].error[0]);
		fprintf(f,
			"Resumed from %s: %zu verified runs copied from there (same commit and mode), %zu "
			"made "
			"in this sitting.\n\n",
			m->resumed_from, m->resumed_runs, made);
	}
	fprintf(f, "| column | version |\n|---|---|\n");
	for (int c = 0; c < NCOLUMNS; c++) {
		if (!p->col_on[c])
			continue;
		const char *why = column_unavailable(c);
		fprintf(f, "| %s | %s |\n", columns[c].name, why ? why : column_version(c));
	}
	fprintf(f, "\n");
	for (size_t i = 0; i < p->nskipped; i++)
		fprintf(f, "Skipped: %s\n\n", p->skipped[i]);
	bool charts = dir != NULL;
	if (kind_present(p, WL_SINGLE)) {
		fprintf(f, "### Single connection: throughput (MiB/s, median (min-max))\n\n");
		metric_fn fs[] = {m_tput};
		table(f, p, WL_SINGLE, "case", fs, 1, 2, true);
		if (any_row(p, rtt_row)) {
			fprintf(f, "Share of the application window's cap (throughput / (window x size per "
				   "RTT), median (min-max)):\n\n");
			metric_fn cs[] = {m_cap_share};
			table_rows(f, p, WL_SINGLE, rtt_row, "case", cs, 1, 2, true);
		}
		metric_fn rt[] = {m_p50, m_p99};
		fprintf(f, "Sequential RTT samples p50 / p99 (µs, median):\n\n");
		table(f, p, WL_SINGLE, "case", rt, 2, 1, false);
		rss_table(f, p, WL_SINGLE);
		resend_table(f, p, WL_SINGLE);
		failures(f, p, WL_SINGLE);
		if (charts)
			chart(p, WL_SINGLE, dir, "single", "MiB/s", m_tput, m, f);
	}
	if (kind_present(p, WL_SPARSE)) {
		fprintf(f, "### Sparse RTT: p50 / p95 / p99 (µs, median of rounds)\n\n");
		metric_fn fs[] = {m_p50, m_p95, m_p99};
		table(f, p, WL_SPARSE, "case", fs, 3, 1, false);
		rss_table(f, p, WL_SPARSE);
		resend_table(f, p, WL_SPARSE);
		failures(f, p, WL_SPARSE);
		if (charts)
			chart(p, WL_SPARSE, dir, "sparse", "p50 RTT (us)", m_p50, m, f);
	}
	if (kind_present(p, WL_MANY)) {
		fprintf(f, "### Many connections: throughput (MiB/s, median (min-max))\n\n");
		metric_fn fs[] = {m_tput};
		table(f, p, WL_MANY, "case", fs, 1, 2, true);
		fprintf(f, "Connection set-up, all at once: handshake p50 / p99 (ms, median):\n\n");
		metric_fn cs[] = {m_c50, m_c99};
		table(f, p, WL_MANY, "case", cs, 2, 2, false);
		rss_table(f, p, WL_MANY);
		resend_table(f, p, WL_MANY);
		spread(f, p, WL_MANY);
		failures(f, p, WL_MANY);
		if (charts)
			chart(p, WL_MANY, dir, "many", "MiB/s", m_tput, m, f);
	}
	if (kind_present(p, WL_LOADED)) {
		fprintf(f, "### Latency under load: p50 / p99 (ms, median)\n\n");
		metric_fn fs[] = {m_p50ms, m_p99ms};
		table(f, p, WL_LOADED, "case", fs, 2, 2, false);
		rss_table(f, p, WL_LOADED);
		resend_table(f, p, WL_LOADED);
		spread(f, p, WL_LOADED);
		failures(f, p, WL_LOADED);
		if (charts)
			chart(p, WL_LOADED, dir, "loaded", "p99 RTT under load (us)", m_p99, m, f);
	}
	if (kind_present(p, WL_STREAM)) {
		fprintf(f, "### Stream: one connection's reliable-ordered messages at a fixed rate, echo RTT "
			   "from each message's tick p50 / p95 / p99 (ms, median of rounds)\n\n");
		metric_fn fs[] = {m_p50ms, m_p95ms, m_p99ms};
		table(f, p, WL_STREAM, "case", fs, 3, 1, false);
		fprintf(f, "Bytes the client's transport sent per message, resends and its headers included "
			   "(median; -: the column cannot tell):\n\n");
		metric_fn wb[] = {m_wire_per_msg};
		table(f, p, WL_STREAM, "case", wb, 1, 0, false);
		rss_table(f, p, WL_STREAM);
		resend_table(f, p, WL_STREAM);
		failures(f, p, WL_STREAM);
	}
	if (kind_present(p, WL_PATH)) {
		path_section(f, p);
		rss_table(f, p, WL_PATH);
		failures(f, p, WL_PATH);
		if (charts)
			chart(p, WL_PATH, dir, "path", "goodput / link rate", m_goodput, m, f);
	}
	if (charts && m->chart_note[0])
		fprintf(f, "%s\n\n", m->chart_note);
	else if (!charts)
		fprintf(f, "(no charts: no results folder in this mode)\n\n");
}

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void jnum(FILE *f, const char *key, double v)
{
	if (v < 0 || isnan(v))
		fprintf(f, "\"%s\": null", key);
	else
		fprintf(f, "\"%s\": %.3f", key, v);
}

int json_write(const char *path, const struct plan *p, const struct meta *m)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\n  \"meta\": {\"date\": ");
	jstr(f, m->date);
	fprintf(f, ", \"commit\": ");
	jstr(f, m->commit);
	fprintf(f, ", \"mode\": ");
	jstr(f, m->mode);
	/* On the meta's first line, which --resume reads (resume.c). */
	fprintf(f, ", \"wait_spin_us\": ");
	jstr(f, wait_spin_desc(m));
	fprintf(f, ", \"congestion_control\": ");
	jstr(f, cc_desc(m));
	fprintf(f, ", \"cpu\": ");
	jstr(f, m->cpu);
	fprintf(f, ", \"cpus\": %d, \"kernel\": ", m->cpus);
	jstr(f, m->kernel);
	fprintf(f, ", \"compiler\": ");
	jstr(f, m->compiler);
	fprintf(f, ", \"root\": %s, \"seconds\": %.1f,\n    \"server_cpus\": ", m->root ? "true" : "false",
		m->seconds);
	jstr(f, m->server_cpus);
	fprintf(f, ", \"client_cpus\": ");
	jstr(f, m->client_cpus);
	fprintf(f, ", \"cpus_shared\": %s, \"workers\": ", m->cpus_shared ? "true" : "false");
	if (m->workers_forced)
		fprintf(f, "%u", m->workers_forced);
	else
		fprintf(f, "\"auto\"");
	fprintf(f, ", \"workers_note\": ");
	jstr(f, workers_desc(m));
	if (m->resumed_from[0]) {
		fprintf(f, ", \"resumed_from\": ");
		jstr(f, m->resumed_from);
		fprintf(f, ", \"resumed_runs\": %zu", m->resumed_runs);
	}
	fprintf(f, ",\n    \"columns\": {");
	bool first = true;
	for (int c = 0; c < NCOLUMNS; c++) {
		const char *why = column_unavailable(c);
		fprintf(f, "%s\"%s\": ", first ? "" : ", ", columns[c].name);
		jstr(f, why ? why : column_version(c));
		first = false;
	}
	fprintf(f, "}},\n  \"runs\": [");
	const char *const *kinds = wl_kind_names;
	bool first_run = true;
	for (size_t i = 0; i < p->nruns; i++) {
		const struct run *r = &p->runs[i];
		if (!r->ok && !r->error[0])
			continue; /* not reached (interrupted) */
		fprintf(f,
			"%s\n    {\"column\": \"%s\", \"workload\": \"%s\", \"size\": %u, \"connections\": "
			"%u, ",
			first_run ? "" : ",", columns[r->column].name, kinds[r->row->kind], r->row->size,
			r->row->conns);
		first_run = false;
		fprintf(f,
			"\"loss_pct\": %g, \"delay_ms\": %g, \"round\": %d, \"messages\": %llu, "
			"\"verified\": %s, ",
			r->row->loss_pct, r->row->delay_ms, r->round + 1,
			(unsigned long long)(r->ok ? r->messages : 0),
			r->ok && r->verified ? "true" : "false");
		if (r->row->rate_mbit > 0)
			fprintf(f, "\"rate_mbit\": %g, \"queue_ms\": %g, ", r->row->rate_mbit,
				r->row->queue_ms);
		if (r->row->kind == WL_PATH) {
			fprintf(f, "\"case\": ");
			jstr(f, r->row->label);
			fprintf(f, ", \"path_case\": \"%c\", ", r->row->path_case);
			for (int k = 0; r->ok && k < PF_COUNT; k++) {
				if (r->path[k] < 0 || isnan(r->path[k]))
					fprintf(f, "\"%s\": null, ", path_fig_key[k]);
				else
					fprintf(f, "\"%s\": %.6g, ", path_fig_key[k], r->path[k]);
			}
			if (r->ok && r->resent_source != RESENT_NONE)
				fprintf(f, "\"resent_source\": \"%s\", ",
					r->resent_source == RESENT_OWN ? "own" : "link drops");
		}
		jnum(f, "throughput_mib_s", r->ok ? r->throughput : -1);
		fprintf(f, ", ");
		if (rtt_row(r->row)) {
			jnum(f, "window_cap_share", r->ok ? m_cap_share(r) : -1);
			fprintf(f, ", ");
		}
		if (r->ok && r->wire_bytes >= 0) {
			fprintf(f, "\"wire_bytes\": %lld, ", (long long)r->wire_bytes);
			jnum(f, "wire_bytes_per_msg", m_wire_per_msg(r));
			fprintf(f, ", ");
		}
		jnum(f, "rtt_p50_us", r->ok ? r->rtt_p50_us : -1);
		fprintf(f, ", ");
		jnum(f, "rtt_p95_us", r->ok ? r->rtt_p95_us : -1);
		fprintf(f, ", ");
		jnum(f, "rtt_p99_us", r->ok ? r->rtt_p99_us : -1);
		fprintf(f, ", \"rss_client_kib\": %ld, \"rss_server_kib\": %ld, ", r->rss_client_kib,
			r->rss_server_kib);
		if (r->rcvbuf_errors < 0)
			fprintf(f, "\"rcvbuf_errors\": null, ");
		else
			fprintf(f, "\"rcvbuf_errors\": %ld, ", r->rcvbuf_errors);
		if (r->client_resent >= 0)
			fprintf(f, "\"client_resent\": %lld, \"client_dups\": %lld, ",
				(long long)r->client_resent, (long long)r->client_dups);
		if (r->client_resent >= 0 && r->client_spurious >= 0)
			fprintf(f,
				"\"client_resent_nack\": %lld, \"client_resent_inferred\": %lld, "
				"\"client_resent_probe\": %lld, \"client_resent_timeout\": %lld, "
				"\"client_resent_spurious\": %lld, ",
				(long long)r->client_resent_why[0], (long long)r->client_resent_why[1],
				(long long)r->client_resent_why[2], (long long)r->client_resent_why[3],
				(long long)r->client_spurious);
		jnum(f, "connect_p50_ms", r->ok ? r->connect_p50_ms : -1);
		fprintf(f, ", ");
		jnum(f, "connect_p99_ms", r->ok ? r->connect_p99_ms : -1);
		fprintf(f, ", \"impairment\": ");
		jstr(f, r->impairment);
		fprintf(f, ", \"seconds\": %.2f, \"server_workers\": %d", r->seconds, r->workers);
		if (r->workers_reported > 0) {
			fprintf(f, ", \"worker_connections\": [");
			for (int w = 0; w < r->workers_reported; w++) {
				if (r->worker_conns[w] < 0)
					fprintf(f, "%snull", w ? ", " : "");
				else
					fprintf(f, "%s%lld", w ? ", " : "", (long long)r->worker_conns[w]);
			}
			fprintf(f, "], \"worker_echoes\": [");
			for (int w = 0; w < r->workers_reported; w++)
				fprintf(f, "%s%lld", w ? ", " : "", (long long)r->worker_echoes[w]);
			fprintf(f, "]");
		}
		if (!r->ok) {
			fprintf(f, ", \"error\": ");
			jstr(f, r->error);
		}
		fprintf(f, "}");
	}
	fprintf(f, "\n  ]\n}\n");
	return fclose(f) == 0 ? 0 : -1;
}
