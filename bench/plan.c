/* SPDX-License-Identifier: MIT */
/*
 * Which runs a mode makes: the workload rows of BENCH.md (full), a short
 * selection (quick), or a few seconds per column (smoke), filtered by the
 * command line, each row repeated for its rounds with the column order
 * rotated every round.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

const char *const wl_kind_names[WL_KINDS] = {"single", "sparse", "many", "loaded", "path", "stream"};
static const char *const *kind_names = wl_kind_names;

uint32_t row_mtu(const struct row *row, int column)
{
	const char *n = columns[column].name;
	bool rudp = !strncmp(n, "rudp-", 5);
	if (row->kind == WL_MANY || row->kind == WL_LOADED)
		return rudp || !strcmp(n, "kcp") ? 1400 : 0;
	if (rudp)
		return 1428;
	return !strcmp(n, "kcp") ? 1400 : 0;
}

/* Path rows: message size, application window per connection, warm-up
 * echoes per connection, and how long the burst should take at the link
 * rate (the message count follows from it; a column slower than the link
 * takes longer, up to the row's timeout). */
#define PATH_SIZE 1000
#define PATH_WINDOW 1024
#define PATH_WARMUP 10
#define PATH_SECONDS 10.0
#define PATH_GAME_HZ 60
#define PATH_GAME_SIZE 200

static void path_label(struct row *r)
{
	char what[48], loss[24] = "";
	if (r->game_hz)
		snprintf(what, sizeof what, "game %u Hz x %u B + bulk", r->game_hz, r->game_size);
	else
		snprintf(what, sizeof what, "%u x 1,000 B%s", r->conns, r->competitor ? " + TCP flow" : "");
	if (r->loss_pct > 0)
		snprintf(loss, sizeof loss, ", %g %% loss", r->loss_pct);
	/* The rows' labels fit; one that did not would only be cut short. */
	int n = snprintf(r->label, sizeof r->label, "%c: %s, %g Mbit/s, %g ms RTT, %g ms buffer%s",
			 r->path_case, what, r->rate_mbit, r->delay_ms, r->queue_ms, loss);
	(void)n;
}

/* A row of kind with the fields every row sets; the rest zero. */
static struct row row_of(enum wl_kind kind, uint32_t size, uint32_t conns, double delay, double loss)
{
	struct row r;
	memset(&r, 0, sizeof r);
	r.kind = kind;
	r.workload_name = kind_names[kind];
	r.size = size;
	r.conns = conns;
	r.delay_ms = delay;
	r.loss_pct = loss;
	return r;
}

/* Burst messages for `seconds` of the link; with a competing flow the
 * column's fair half. */
static uint64_t path_messages(const struct row *r, double seconds)
{
	double share = r->competitor ? 0.5 : 1.0;
	uint64_t m = (uint64_t)(r->rate_mbit * 1e6 / 8 * share * seconds / r->size + 0.5);
	return m < r->conns ? r->conns : m;
}

static struct row mk_path(char id, uint32_t conns, double rate, double rtt, double queue, double loss,
			  bool competitor, bool game, double seconds)
{
	struct row r = row_of(WL_PATH, PATH_SIZE, conns, rtt, loss);
	r.path_case = id;
	r.window = PATH_WINDOW;
	r.warmup = PATH_WARMUP;
	r.rate_mbit = rate;
	r.queue_ms = queue;
	r.competitor = competitor;
	if (game) {
		r.game_hz = PATH_GAME_HZ;
		r.game_size = PATH_GAME_SIZE;
	}
	r.messages = path_messages(&r, seconds);
	path_label(&r);
	return r;
}

static void loss_label(char *b, size_t n, double loss, double delay)
{
	if (delay > 0 && loss > 0)
		snprintf(b, n, "%g ms RTT + %g %%", delay, loss);
	else if (delay > 0)
		snprintf(b, n, "%g ms RTT", delay);
	else if (loss > 0)
		snprintf(b, n, "%g %%", loss);
	else
		snprintf(b, n, "no loss");
}

static void thousands(char *b, size_t n, uint64_t v)
{
	if (v >= 1000)
		snprintf(b, n, "%llu,%03llu", (unsigned long long)(v / 1000), (unsigned long long)(v % 1000));
	else
		snprintf(b, n, "%llu", (unsigned long long)v);
}

static struct row mk(enum wl_kind kind, uint32_t size, uint32_t conns, uint64_t messages, double loss,
		     double delay)
{
	struct row r = row_of(kind, size, conns, delay, loss);
	r.messages = messages;
	char l[64], c[32];
	loss_label(l, sizeof l, loss, delay);
	thousands(c, sizeof c, conns);
	switch (kind) {
	case WL_SINGLE:
		r.window = 64;
		r.warmup = 100;
		r.samples = 300;
		snprintf(r.label, sizeof r.label, "%s B, %s",
			 size >= 1000  ? "4,096"
			 : size == 800 ? "800"
				       : "64",
			 l);
		if (size != 800 && size != 64 && size != 4096)
			snprintf(r.label, sizeof r.label, "%u B, %s", size, l);
		break;
	case WL_SPARSE:
		r.window = 1;
		r.warmup = 1000;
		r.samples = 10000;
		r.messages = 0;
		snprintf(r.label, sizeof r.label, "%u B, %s", size, l);
		break;
	case WL_MANY:
	case WL_LOADED:
		r.window = 16;
		r.warmup = 20;
		r.samples = 0;
		snprintf(r.label, sizeof r.label, "%u B x %s, %s", size, c, l);
		break;
	case WL_PATH: /* made by mk_path */
	case WL_STREAM: /* made by mk_stream */
	case WL_KINDS: break;
	}
	return r;
}

static void finish_row(struct row *r)
{
	if (r->kind == WL_STREAM) {
		/* Bounded by the ticks, whatever the column: 60 s to spare. */
		r->estimate_s = 1 + r->warmup * r->delay_ms / 1000.0 + (double)r->messages / r->game_hz;
		r->timeout_s = (unsigned)(60 + r->estimate_s * 3);
		return;
	}
	if (r->kind == WL_PATH) {
		/* The warm-up, then the burst at 80 % of the link (the
		 * competing flow's half of it where there is one). */
		double share = r->competitor ? 0.4 : 0.8;
		double burst = (double)r->messages * r->size * 8 / (r->rate_mbit * 1e6 * share);
		r->estimate_s = 1.5 + r->warmup * r->delay_ms / 1000.0 + burst;
		/* Six times the estimate: a column at a sixth of the link's rate
		 * still finishes; one slower than that is cut off and says so. */
		double t = 60 + r->estimate_s * 6;
		r->timeout_s = t > 1800 ? 1800 : (unsigned)t;
		return;
	}
	double bytes = (double)r->messages * r->size + (double)r->conns * (r->warmup + r->samples) * r->size;
	/* Bytes/s a typical column reaches here. Loss slows the one-connection
	 * rows (recovery is on the critical path of a 64-message window); the
	 * many-connection rows stay bound by the server's CPU either way (the
	 * 964b1a4 full run: 1 % loss made them take a quarter longer, not the
	 * seven times the one-connection rate would say). */
	double rate = r->loss_pct > 0 && r->kind == WL_SINGLE ? 8e6 : 60e6;
	if (r->delay_ms > 0)
		rate = 64.0 * r->size / (r->delay_ms / 1000.0) / 2;
	if (r->rate_mbit > 0 && rate > r->rate_mbit * 1e6 / 8 * 0.8)
		rate = r->rate_mbit * 1e6 / 8 * 0.8;
	double seq = (double)(r->warmup + r->samples) * (r->delay_ms > 0 ? r->delay_ms / 1000.0 : 60e-6);
	r->estimate_s = 0.6 + bytes / rate + seq + r->conns * 0.0005;
	/* The timeout keeps the pessimistic rate for every lossy row: a slow
	 * column on a slow machine must not be cut short. */
	double slow = r->loss_pct > 0 && r->delay_ms <= 0 && r->rate_mbit <= 0
			      ? 0.6 + bytes / 8e6 + seq + r->conns * 0.0005
			      : r->estimate_s;
	double t = slow * 20 + 60;
	r->timeout_s = t > 1800 ? 1800 : (unsigned)t;
}

/* Stream rows: one connection's reliable-ordered messages at a fixed rate,
 * each echo's RTT counted from the tick it was due at (issue 45). */
#define STREAM_HZ 60
#define STREAM_SIZE 400
#define STREAM_TICKS 600 /* 10 s at 60 Hz */
#define STREAM_WARMUP 10

static void stream_label(struct row *r)
{
	char l[64];
	loss_label(l, sizeof l, r->loss_pct, r->delay_ms);
	snprintf(r->label, sizeof r->label, "%u B at %u Hz, %s", r->game_size, r->game_hz, l);
}

static struct row mk_stream(double rtt, double loss, uint32_t ticks)
{
	/* size: the warm-up's messages */
	struct row r = row_of(WL_STREAM, STREAM_SIZE, 1, rtt, loss);
	r.window = 1;
	r.warmup = STREAM_WARMUP;
	r.messages = ticks;
	r.game_hz = STREAM_HZ;
	r.game_size = STREAM_SIZE;
	stream_label(&r);
	return r;
}

static void add_stream_rows(struct row *all, size_t *n)
{
	static const double loss[] = {0, 1, 5};
	for (size_t i = 0; i < sizeof loss / sizeof loss[0]; i++)
		all[(*n)++] = mk_stream(20, loss[i], STREAM_TICKS);
}

/* Loss recovery at long round trips (issue 45): one connection, 800 B,
 * window 64, so the application caps it at 64 x 800 B per RTT (1 MB/s at
 * 50 ms). The counts give about 8 s of burst at 60 % of that cap, 6 s at
 * 80 %; the sequential phase is cut to 50 echoes (5 s at 100 ms instead of
 * 40 s), so that a run takes 10 to 15 s. */
static void add_long_rtt_rows(struct row *all, size_t *n)
{
	static const struct {
		double rtt, loss;
		uint64_t messages;
	} longs[] = {{50, 1, 8000}, {100, 2, 3000}};
	for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++) {
		struct row r = mk(WL_SINGLE, 800, 1, longs[i].messages, longs[i].loss, longs[i].rtt);
		r.warmup = 10;
		r.samples = 40;
		all[(*n)++] = r;
	}
}

/* The path rows of BENCH.md: (a) one connection on a slow link, (b) eight
 * on a faster one, (c) four with random loss, (d) one beside a kernel TCP
 * flow, (e) a game stream beside bulk on one connection. */
static void add_path_rows(struct row *all, size_t *n, double seconds)
{
	all[(*n)++] = mk_path('a', 1, 5, 20, 30, 0, false, false, seconds);
	all[(*n)++] = mk_path('b', 8, 20, 40, 50, 0, false, false, seconds);
	all[(*n)++] = mk_path('c', 4, 20, 60, 60, 0.5, false, false, seconds);
	all[(*n)++] = mk_path('d', 1, 20, 40, 50, 0, true, false, seconds);
	all[(*n)++] = mk_path('e', 1, 5, 20, 30, 0, false, true, seconds);
}

static bool in_list(const char *list, const char *name)
{
	if (!list)
		return true;
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		p += len + (e ? 1 : 0);
	}
	return false;
}

/* Every name in list must be one of names[0..n). */
static int check_list(const char *list, const char *what, const char *const *names, int n)
{
	if (!list)
		return 0;
	char *dup = strdup(list), *save = NULL;
	int rc = 0;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		bool found = false;
		for (int i = 0; i < n; i++)
			found |= !strcmp(t, names[i]);
		if (!found) {
			fprintf(stderr, "rudp-bench: unknown %s '%s'\n", what, t);
			rc = -1;
		}
	}
	free(dup);
	return rc;
}

static void add_skip(struct plan *p, const char *fmt, const char *a, const char *b)
{
	if (p->nskipped >= 64)
		return;
	char buf[256];
	snprintf(buf, sizeof buf, fmt, a, b);
	p->skipped[p->nskipped++] = strdup(buf);
}

int plan_build(struct plan *p, const struct plan_opts *o, bool root)
{
	memset(p, 0, sizeof *p);
	p->mode = o->mode;
	const char *colnames[NCOLUMNS];
	for (int i = 0; i < NCOLUMNS; i++)
		colnames[i] = columns[i].name;
	if (check_list(o->columns, "column", colnames, NCOLUMNS) < 0 ||
	    check_list(o->workloads, "workload", kind_names, WL_KINDS) < 0)
		return -1;
	for (int i = 0; i < NCOLUMNS; i++)
		p->col_on[i] = in_list(o->columns, columns[i].name);

	struct row all[64];
	size_t n = 0;
	switch (o->mode) {
	case MODE_SMOKE:
		all[n] = mk(WL_SINGLE, 800, 1, 400, 0, 0);
		all[n].warmup = 10;
		all[n++].samples = 20;
		all[n] = mk(WL_MANY, 800, 4, 400, 0, 0);
		all[n++].warmup = 5;
		/* Path rows only with --workload path: a bulk row with every
		 * part (two connections, a competing TCP flow, loss) and a
		 * game row, each about half a second of a fast link. */
		all[n] = mk_path('s', 2, 20, 20, 20, 0.5, true, false, 0.4);
		all[n++].warmup = 3;
		all[n] = mk_path('t', 1, 20, 20, 20, 0, false, true, 0.4);
		all[n++].warmup = 3;
		/* A stream row only with --workload stream: half a second. */
		all[n] = mk_stream(20, 1, 30);
		all[n++].warmup = 3;
		break;
	case MODE_QUICK:
		all[n++] = mk(WL_SINGLE, 800, 1, 50000, 0, 0);
		all[n++] = mk(WL_SINGLE, 64, 1, 50000, 0, 0);
		all[n++] = mk(WL_SINGLE, 800, 1, 10000, 1, 0);
		all[n] = mk(WL_SPARSE, 800, 1, 0, 0, 0);
		all[n].warmup = 200;
		all[n++].samples = 2000;
		all[n++] = mk(WL_MANY, 800, 64, 65536, 0, 0);
		/* Path rows only when asked for (--workload path): they
		 * would more than double the quick run's time. */
		add_path_rows(all, &n, PATH_SECONDS);
		add_stream_rows(all, &n);
		break;
	case MODE_FULL:
		all[n++] = mk(WL_SINGLE, 800, 1, 200000, 0, 0);
		all[n++] = mk(WL_SINGLE, 800, 1, 50000, 1, 0);
		all[n++] = mk(WL_SINGLE, 800, 1, 50000, 5, 0);
		all[n++] = mk(WL_SINGLE, 64, 1, 300000, 0, 0);
		all[n++] = mk(WL_SINGLE, 64, 1, 100000, 1, 0);
		all[n++] = mk(WL_SINGLE, 64, 1, 100000, 5, 0);
		all[n++] = mk(WL_SINGLE, 4096, 1, 50000, 0, 0);
		all[n++] = mk(WL_SINGLE, 800, 1, 3000, 1, 10);
		add_long_rtt_rows(all, &n);
		all[n++] = mk(WL_SPARSE, 800, 1, 0, 0, 0);
		for (int loss = 0; loss <= 1; loss++) {
			static const uint32_t c800[] = {64, 256, 1024, 2048}, c64[] = {64, 1024};
			for (int i = 0; i < 4; i++)
				all[n++] = mk(WL_MANY, 800, c800[i], 1048576, loss, 0);
			for (int i = 0; i < 2; i++)
				all[n++] = mk(WL_MANY, 64, c64[i], 1048576, loss, 0);
			for (int s = 0; s < 2; s++)
				for (int i = 0; i < 2; i++)
					all[n++] = mk(WL_LOADED, s ? 800 : 64, c64[i], 262144, loss, 0);
		}
		add_path_rows(all, &n, PATH_SECONDS);
		add_stream_rows(all, &n);
		break;
	}
	/* --loss / --delay / --rate / --queue-ms replace the fixed impairment
	 * of every selected row; a path row keeps what is not given. */
	if (o->loss_pct >= 0 || o->delay_ms >= 0 || o->rate_mbit >= 0 || o->queue_ms >= 0) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			struct row r = all[i];
			if (r.kind == WL_PATH) {
				r.loss_pct = o->loss_pct >= 0 ? o->loss_pct : r.loss_pct;
				r.delay_ms = o->delay_ms >= 0 ? o->delay_ms : r.delay_ms;
				r.rate_mbit = o->rate_mbit > 0 ? o->rate_mbit : r.rate_mbit;
				r.queue_ms = o->queue_ms >= 0 ? o->queue_ms : r.queue_ms;
				r.messages = path_messages(
					&r, (double)r.messages * r.size * 8 /
						    (all[i].rate_mbit * 1e6 * (r.competitor ? 0.5 : 1.0)));
				path_label(&r);
				all[m++] = r;
				continue;
			}
			if (r.kind == WL_STREAM) {
				/* One copy: the no-loss row with what is given. */
				if (r.loss_pct > 0 || o->rate_mbit > 0)
					continue;
				r.loss_pct = o->loss_pct >= 0 ? o->loss_pct : r.loss_pct;
				r.delay_ms = o->delay_ms >= 0 ? o->delay_ms : r.delay_ms;
				stream_label(&r);
				all[m++] = r;
				continue;
			}
			if (r.loss_pct > 0 || r.delay_ms > 0)
				continue; /* keep one copy of each case: its no-loss row */
			double loss = o->loss_pct >= 0 ? o->loss_pct : 0,
			       delay = o->delay_ms >= 0 ? o->delay_ms : 0;
			struct row c = mk(r.kind, r.size, r.conns, r.messages, loss, delay);
			c.warmup = r.warmup;
			c.samples = r.samples;
			if (delay > 0 && c.messages > 20000)
				c.messages = 20000; /* a window per RTT: keep the row within minutes */
			if (o->rate_mbit > 0) {
				c.rate_mbit = o->rate_mbit;
				c.queue_ms = o->queue_ms >= 0 ? o->queue_ms : 50;
				/* About ten seconds of the link. */
				uint64_t cap = (uint64_t)(c.rate_mbit * 1e6 / 8 * 10 / c.size) + 1;
				if (c.messages > cap)
					c.messages = cap;
				size_t len = strlen(c.label);
				snprintf(c.label + len, sizeof c.label - len, ", %g Mbit/s, %g ms buffer",
					 c.rate_mbit, c.queue_ms);
			}
			all[m++] = c;
		}
		n = m;
	}
	p->rows = calloc(n ? n : 1, sizeof *p->rows);
	int on_cols = 0;
	for (int i = 0; i < NCOLUMNS; i++)
		on_cols += p->col_on[i] && !column_unavailable(i);
	p->runs = calloc(n * NCOLUMNS * 5 + 1, sizeof *p->runs);
	for (size_t i = 0; i < n; i++) {
		struct row *r = &all[i];
		if (!in_list(o->workloads, r->workload_name))
			continue;
		/* Outside --full, path and stream rows run only when --workload
		 * names them. */
		if ((r->kind == WL_PATH || r->kind == WL_STREAM) && o->mode != MODE_FULL && !o->workloads)
			continue;
		if (o->case_filter && !strstr(r->label, o->case_filter))
			continue;
		if ((r->loss_pct > 0 || r->delay_ms > 0 || r->rate_mbit > 0) && !root) {
			add_skip(p, "%s %s: needs root for a namespace with loss, delay or a bottleneck",
				 r->workload_name, r->label);
			continue;
		}
		r->rounds = o->rounds ? o->rounds : o->mode == MODE_FULL ? (r->kind == WL_SPARSE ? 5 : 3) : 1;
		if (r->rounds > 5)
			r->rounds = 5;
		finish_row(r);
		p->rows[p->nrows] = *r;
		struct row *pr = &p->rows[p->nrows++];
		for (int round = 0; round < pr->rounds; round++)
			for (int k = 0; k < NCOLUMNS; k++) {
				int c = (k + round) % NCOLUMNS; /* rotate the order each round */
				if (!p->col_on[c] || column_unavailable(c))
					continue;
				/* Redundancy is a latency option: the stream rows and
				 * the one-connection rows with a round trip (recovery
				 * there costs an RTT a loss) are what it is judged on;
				 * elsewhere only when named. */
				if (strstr(columns[c].name, "redundant") && pr->kind != WL_STREAM &&
				    !(pr->kind == WL_SINGLE && pr->delay_ms > 0) && !o->columns)
					continue;
				if (!columns[c].reliable &&
				    (pr->loss_pct > 0 || pr->delay_ms > 0 || pr->rate_mbit > 0))
					continue;
				struct run *run = &p->runs[p->nruns++];
				run->row = pr;
				run->column = c;
				run->round = round;
				run->throughput = -1;
			}
	}
	if (p->nruns == 0) {
		fprintf(stderr,
			"rudp-bench: nothing to run (%d usable columns selected; check the filters)\n",
			on_cols);
		plan_free(p);
		return -1;
	}
	return 0;
}

void plan_free(struct plan *p)
{
	free(p->rows);
	free(p->runs);
	for (size_t i = 0; i < p->nskipped; i++)
		free(p->skipped[i]);
	memset(p, 0, sizeof *p);
}
