/* SPDX-License-Identifier: MIT */
/*
 * --resume DIR: takes the verified runs of an earlier results folder's
 * runs.json into the plan so that a long run can be finished over several
 * sittings. The file is our own json_write output (the meta object opening
 * on one line, then one run object per line), so a small line parser is
 * enough; it bounds every line, string, array and the run count, and a run
 * line it cannot read fully is dropped: that run is simply made again.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define RESUME_MAX_RUNS 8192 /* a --full plan has 845; more is not our file */
#define RESUME_LINE 16384 /* a run line with 64 workers' arrays stays under 4 KiB */

/* One key's value in a flat object: a string, a number, a boolean, null or
 * an array of numbers and nulls (the worker arrays). */
enum jv_type { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR };

struct jv {
	enum jv_type type;
	bool b;
	double num;
	char str[256];
	int n; /* array length */
	bool anull[BENCH_MAX_WORKERS];
	double arr[BENCH_MAX_WORKERS];
};

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* A JSON string into out (at most n - 1 bytes); NULL when it does not parse
 * or does not fit. Only the escapes jstr() writes are accepted. */
static const char *parse_str(const char *s, char *out, size_t n)
{
	if (*s != '"')
		return NULL;
	size_t j = 0;
	for (s++; *s != '"'; s++) {
		unsigned char c = (unsigned char)*s;
		if (!c || c < 0x20)
			return NULL;
		if (c == '\\') {
			s++;
			if (*s == '"' || *s == '\\') {
				c = (unsigned char)*s;
			} else if (*s == 'u') {
				unsigned v = 0;
				for (int k = 1; k <= 4; k++) {
					if (!isxdigit((unsigned char)s[k]))
						return NULL;
					v = v * 16 +
					    (unsigned)(isdigit((unsigned char)s[k])
							       ? s[k] - '0'
							       : (tolower((unsigned char)s[k]) - 'a' + 10));
				}
				if (v >= 0x20)
					return NULL;
				c = (unsigned char)v;
				s += 4;
			} else {
				return NULL;
			}
		}
		if (j + 1 >= n)
			return NULL;
		out[j++] = (char)c;
	}
	out[j] = '\0';
	return s + 1;
}

static const char *parse_num(const char *s, double *v)
{
	if (*s != '-' && !isdigit((unsigned char)*s))
		return NULL;
	char *end;
	*v = strtod(s, &end);
	/* Every figure we write fits; beyond, converting to an integer field
	 * would be undefined (and it is no file of ours). */
	if (end == s || !(*v > -1e15 && *v < 1e15))
		return NULL;
	return end;
}

static const char *parse_value(const char *s, struct jv *v)
{
	memset(v, 0, sizeof *v);
	if (*s == '"') {
		v->type = JV_STR;
		return parse_str(s, v->str, sizeof v->str);
	}
	if (!strncmp(s, "null", 4)) {
		v->type = JV_NULL;
		return s + 4;
	}
	if (!strncmp(s, "true", 4) || !strncmp(s, "false", 5)) {
		v->type = JV_BOOL;
		v->b = *s == 't';
		return s + (v->b ? 4 : 5);
	}
	if (*s == '[') {
		v->type = JV_ARR;
		s = skip_ws(s + 1);
		if (*s == ']')
			return s + 1;
		for (;;) {
			if (v->n >= BENCH_MAX_WORKERS)
				return NULL;
			if (!strncmp(s, "null", 4)) {
				v->anull[v->n++] = true;
				s += 4;
			} else if (!(s = parse_num(s, &v->arr[v->n++]))) {
				return NULL;
			}
			s = skip_ws(s);
			if (*s == ']')
				return s + 1;
			if (*s != ',')
				return NULL;
			s = skip_ws(s + 1);
		}
	}
	v->type = JV_NUM;
	return parse_num(s, &v->num);
}

/* Calls fn for each "key": value of a flat object whose '{' s points past.
 * Returns the text after the closing '}', or, when open is true (the meta
 * object continues on the next line), the end of the line; NULL when the
 * text does not parse or fn refuses a value. */
static const char *parse_pairs(const char *s, bool open,
			       int (*fn)(void *ctx, const char *key, const struct jv *v), void *ctx)
{
	static struct jv v; /* one caller at a time; too big for a small stack */
	char key[64];
	s = skip_ws(s);
	if (*s == '}')
		return s + 1;
	for (;;) {
		if (!(s = parse_str(s, key, sizeof key)))
			return NULL;
		s = skip_ws(s);
		if (*s != ':')
			return NULL;
		s = skip_ws(s + 1);
		if (!(s = parse_value(s, &v)) || fn(ctx, key, &v) < 0)
			return NULL;
		s = skip_ws(s);
		if (*s == '}')
			return s + 1;
		if (*s != ',')
			return NULL;
		s = skip_ws(s + 1);
		if (open && (*s == '\n' || *s == '\0'))
			return s;
	}
}

struct meta_seen {
	char commit[64], mode[16], wait_spin[16], cc[16];
};

static int meta_pair(void *ctx, const char *key, const struct jv *v)
{
	struct meta_seen *m = ctx;
	bool commit = !strcmp(key, "commit"), mode = !strcmp(key, "mode"),
	     spin = !strcmp(key, "wait_spin_us"), cc = !strcmp(key, "congestion_control");
	if (!commit && !mode && !spin && !cc)
		return 0;
	char *to = commit ? m->commit : mode ? m->mode : spin ? m->wait_spin : m->cc;
	size_t n = commit ? sizeof m->commit
		   : mode ? sizeof m->mode
		   : spin ? sizeof m->wait_spin
			  : sizeof m->cc,
	       len = strlen(v->str);
	/* Longer than ours can be: not a value this binary wrote. */
	if (v->type != JV_STR || len >= n)
		return -1;
	memcpy(to, v->str, len + 1);
	return 0;
}

/* A run line read back: its identity and the figures struct run holds. */
struct old_run {
	char column[32], workload[16];
	char label[128]; /* path rows: their case */
	double size, conns, loss_pct, delay_ms, round;
	double rate_mbit; /* 0: no bottleneck */
	unsigned have; /* bit per required key seen */
	bool verified, used;
	struct run r;
};

enum {
	K_COLUMN,
	K_WORKLOAD,
	K_SIZE,
	K_CONNS,
	K_LOSS,
	K_DELAY,
	K_ROUND,
	K_VERIFIED,
	K_MESSAGES,
	K_TPUT,
	K_P50,
	K_P95,
	K_P99,
	K_RSSC,
	K_RSSS,
	K_RCVBUF,
	K_C50,
	K_C99,
	K_IMPAIR,
	K_SECONDS,
	K_WORKERS,
	K_NREQUIRED
};

/* A figure: a number, or null for "none" (-1 in struct run). */
static int figure(const struct jv *v, double *out)
{
	if (v->type == JV_NULL) {
		*out = -1;
		return 0;
	}
	if (v->type != JV_NUM)
		return -1;
	*out = v->num;
	return 0;
}

/* Copies a string that must fit (a longer one makes the line malformed);
 * memcpy, not snprintf, so no compiler sees a truncation it cannot rule out. */
static int put_str(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n >= cap)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

static int run_pair(void *ctx, const char *key, const struct jv *v)
{
	struct old_run *o = ctx;
	struct run *r = &o->r;
	double d = 0;
	int k;
	if (!strcmp(key, "column") || !strcmp(key, "workload") || !strcmp(key, "impairment")) {
		if (v->type != JV_STR)
			return -1;
		if (key[0] == 'c') {
			k = K_COLUMN;
			if (put_str(o->column, sizeof o->column, v->str) < 0)
				return -1;
		} else if (key[0] == 'w') {
			k = K_WORKLOAD;
			if (put_str(o->workload, sizeof o->workload, v->str) < 0)
				return -1;
		} else {
			k = K_IMPAIR;
			if (put_str(r->impairment, sizeof r->impairment, v->str) < 0)
				return -1;
		}
	} else if (!strcmp(key, "verified")) {
		if (v->type != JV_BOOL)
			return -1;
		k = K_VERIFIED;
		o->verified = v->b;
	} else if (!strcmp(key, "worker_connections") || !strcmp(key, "worker_echoes")) {
		if (v->type != JV_ARR || v->n == 0 || (r->workers_reported && r->workers_reported != v->n))
			return -1;
		r->workers_reported = v->n;
		bool conns = key[7] == 'c';
		for (int i = 0; i < v->n; i++) {
			if (v->anull[i] && !conns)
				return -1;
			if (conns)
				r->worker_conns[i] = v->anull[i] ? -1 : (int64_t)v->arr[i];
			else
				r->worker_echoes[i] = (int64_t)v->arr[i];
		}
		return 0;
	} else if (!strcmp(key, "error")) {
		return 0; /* only failed runs carry one, and those are made again */
	} else if (!strcmp(key, "case")) {
		/* Path rows: which one (its label names its link). */
		return v->type == JV_STR ? put_str(o->label, sizeof o->label, v->str) : -1;
	} else if (!strcmp(key, "path_case") || !strcmp(key, "queue_ms")) {
		return 0; /* both in the case's label */
	} else if (!strcmp(key, "rate_mbit")) {
		if (figure(v, &d) < 0 || d <= 0)
			return -1;
		o->rate_mbit = d;
		return 0;
	} else if (!strcmp(key, "resent_source")) {
		if (v->type != JV_STR)
			return -1;
		r->resent_source = !strcmp(v->str, "own")          ? RESENT_OWN
				   : !strcmp(v->str, "link drops") ? RESENT_LINK
								   : RESENT_NONE;
		return r->resent_source == RESENT_NONE ? -1 : 0;
	} else if (!strcmp(key, "client_resent") || !strcmp(key, "client_dups")) {
		/* Optional (librudp columns, files from before them lack it). */
		if (figure(v, &d) < 0 || (d < 0 && v->type != JV_NULL))
			return -1;
		if (key[7] == 'r')
			r->client_resent = (int64_t)d;
		else
			r->client_dups = (int64_t)d;
		return 0;
	} else if (!strcmp(key, "wire_bytes")) {
		/* Optional (columns that can count them; files from before lack it). */
		if (figure(v, &d) < 0 || (d < 0 && v->type != JV_NULL))
			return -1;
		r->wire_bytes = (int64_t)d;
		return 0;
	} else if (!strncmp(key, "client_resent_", 14)) {
		/* Optional too: by cause, and those shown unneeded. */
		static const char *const why[] = {"nack", "inferred", "probe", "timeout"};
		int64_t *slot = !strcmp(key + 14, "spurious") ? &r->client_spurious : NULL;
		for (int w = 0; !slot && w < 4; w++)
			if (!strcmp(key + 14, why[w]))
				slot = &r->client_resent_why[w];
		if (!slot || figure(v, &d) < 0 || (d < 0 && v->type != JV_NULL))
			return -1;
		*slot = (int64_t)d;
		return 0;
	} else {
		static const struct {
			const char *key;
			int k;
		} nums[] = {
			{"size", K_SIZE},
			{"connections", K_CONNS},
			{"loss_pct", K_LOSS},
			{"delay_ms", K_DELAY},
			{"round", K_ROUND},
			{"messages", K_MESSAGES},
			{"throughput_mib_s", K_TPUT},
			{"rtt_p50_us", K_P50},
			{"rtt_p95_us", K_P95},
			{"rtt_p99_us", K_P99},
			{"rss_client_kib", K_RSSC},
			{"rss_server_kib", K_RSSS},
			{"rcvbuf_errors", K_RCVBUF},
			{"connect_p50_ms", K_C50},
			{"connect_p99_ms", K_C99},
			{"seconds", K_SECONDS},
			{"server_workers", K_WORKERS},
		};
		k = -1;
		for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
			if (!strcmp(key, nums[i].key))
				k = nums[i].k;
		/* Optional: a path row's figures (null: none). */
		for (int i = 0; k < 0 && i < PF_COUNT; i++)
			if (!strcmp(key, path_fig_key[i])) {
				if (figure(v, &d) < 0 || (d < 0 && v->type != JV_NULL))
					return -1;
				r->path[i] = d;
				return 0;
			}
		if (k < 0)
			return 0; /* a key a later version added: not ours to copy */
		if (figure(v, &d) < 0)
			return -1;
		switch (k) {
		case K_SIZE: o->size = d; break;
		case K_CONNS: o->conns = d; break;
		case K_LOSS: o->loss_pct = d; break;
		case K_DELAY: o->delay_ms = d; break;
		case K_ROUND: o->round = d; break;
		case K_MESSAGES: r->messages = r->verified_msgs = (uint64_t)(d < 0 ? 0 : d); break;
		case K_TPUT: r->throughput = d; break;
		case K_P50: r->rtt_p50_us = d; break;
		case K_P95: r->rtt_p95_us = d; break;
		case K_P99: r->rtt_p99_us = d; break;
		case K_RSSC: r->rss_client_kib = (long)d; break;
		case K_RSSS: r->rss_server_kib = (long)d; break;
		case K_RCVBUF: r->rcvbuf_errors = (long)d; break;
		case K_C50: r->connect_p50_ms = d; break;
		case K_C99: r->connect_p99_ms = d; break;
		case K_SECONDS: r->seconds = d; break;
		case K_WORKERS:
			if (d < 1 || d > BENCH_MAX_WORKERS)
				return -1;
			r->workers = (int)d;
			break;
		}
	}
	if (o->have & 1u << k)
		return -1; /* a key twice */
	o->have |= 1u << k;
	return 0;
}

/* The value json_write printed for x ("%g"), read back: what a planned
 * row's loss or delay looks like in the file. */
static double as_written(double x)
{
	char b[32];
	snprintf(b, sizeof b, "%g", x);
	return strtod(b, NULL);
}

static bool same_run(const struct old_run *o, const struct run *r)
{
	const struct row *w = r->row;
	return !strcmp(o->column, columns[r->column].name) && !strcmp(o->workload, wl_kind_names[w->kind]) &&
	       o->size == w->size && o->conns == w->conns && o->round == r->round + 1 &&
	       o->loss_pct == as_written(w->loss_pct) && o->delay_ms == as_written(w->delay_ms) &&
	       o->rate_mbit == as_written(w->rate_mbit) &&
	       (w->kind != WL_PATH || !strcmp(o->label, w->label));
}

int resume_load(struct plan *p, const char *dir, const struct meta *m, size_t *copied)
{
	*copied = 0;
	char path[4096];
	if (snprintf(path, sizeof path, "%s/runs.json", dir) >= (int)sizeof path) {
		fprintf(stderr, "rudp-bench: --resume: path too long\n");
		return -1;
	}
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "rudp-bench: --resume: cannot read %s\n", path);
		return -1;
	}
	char *line = malloc(RESUME_LINE);
	struct old_run *old = calloc(RESUME_MAX_RUNS, sizeof *old);
	/* Files from before --wait-spin-us were made at librudp's default;
	 * those from before the congestion_control key, with RUDP_CC_NONE
	 * unless --cc said otherwise (which they did not record). */
	struct meta_seen seen = {"", "", "default", "none"};
	size_t nold = 0, bad = 0;
	bool in_runs = false, closed = false, have_meta = false;
	int rc = -1;
	const char *why = NULL;
	bool mismatch = false; /* a readable file from another commit or mode */
	if (!line || !old) {
		why = "out of memory";
		goto out;
	}
	while (fgets(line, RESUME_LINE, f)) {
		size_t len = strlen(line);
		bool whole = len && line[len - 1] == '\n';
		if (!whole && !feof(f)) {
			/* Longer than any line json_write makes: skip the rest. */
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			if (in_runs)
				bad++;
			continue;
		}
		const char *s = skip_ws(line);
		if (!in_runs) {
			if (!strncmp(s, "\"meta\": {", 9)) {
				if (!parse_pairs(s + 9, true, meta_pair, &seen)) {
					why = "its meta line does not parse";
					goto out;
				}
				have_meta = true;
			} else if (!strncmp(s, "\"runs\": [", 9)) {
				in_runs = true;
				if (!strncmp(skip_ws(s + 9), "]", 1))
					closed = true;
			}
			continue;
		}
		if (closed)
			continue;
		if (*s == ']') {
			closed = true;
			continue;
		}
		if (nold == RESUME_MAX_RUNS) {
			why = "more runs than a plan has";
			goto out;
		}
		struct old_run *o = &old[nold];
		memset(o, 0, sizeof *o);
		o->r.rcvbuf_errors = -1;
		o->r.client_resent = o->r.client_dups = o->r.client_spurious = o->r.wire_bytes = -1;
		for (int w = 0; w < 4; w++)
			o->r.client_resent_why[w] = -1;
		for (int k = 0; k < PF_COUNT; k++)
			o->r.path[k] = -1;
		const char *e = *s == '{' ? parse_pairs(s + 1, false, run_pair, o) : NULL;
		if (e) {
			e = skip_ws(e);
			if (*e == ',')
				e = skip_ws(e + 1);
		}
		if (!e || (*e != '\n' && *e != '\0') || o->have != (1u << K_NREQUIRED) - 1) {
			bad++;
			continue;
		}
		nold++;
	}
	if (ferror(f))
		why = "read error";
	else if (!have_meta || !seen.commit[0] || !seen.mode[0])
		why = "no meta object with commit and mode";
	else if (!in_runs || !closed)
		why = "no complete runs array";
	else if ((mismatch = strcmp(seen.commit, m->commit) != 0))
		why = "it was made by another commit";
	else if ((mismatch = strcmp(seen.mode, m->mode) != 0))
		why = "it was made in another mode";
	else if ((mismatch = strcmp(seen.wait_spin, wait_spin_desc(m)) != 0))
		why = "it was made with another --wait-spin-us";
	else if ((mismatch = strcmp(seen.cc, cc_desc(m)) != 0))
		why = "it was made with another congestion control (--cc)";
	if (why) {
		if (mismatch)
			fprintf(stderr,
				"rudp-bench: --resume %s: %s (%s mode, commit %s, wait_spin_us %s, cc %s; "
				"this is %s mode, commit %s, wait_spin_us %s, cc %s)\n",
				dir, why, seen.mode, seen.commit, seen.wait_spin, seen.cc, m->mode, m->commit,
				wait_spin_desc(m), cc_desc(m));
		goto out;
	}
	if (bad)
		fprintf(stderr,
			"rudp-bench: --resume: %zu lines of %s do not parse: those runs are made again\n",
			bad, path);
	for (size_t i = 0; i < p->nruns; i++) {
		struct run *r = &p->runs[i];
		for (size_t j = 0; j < nold; j++) {
			struct old_run *o = &old[j];
			if (o->used || !o->verified || !same_run(o, r))
				continue;
			o->used = true;
			const struct row *row = r->row;
			int column = r->column, round = r->round;
			*r = o->r;
			r->row = row;
			r->column = column;
			r->round = round;
			r->ok = r->verified = r->copied = true;
			r->error[0] = '\0';
			++*copied;
			break;
		}
	}
	rc = 0;
out:
	if (why && !mismatch)
		fprintf(stderr, "rudp-bench: --resume %s: %s: %s\n", dir, path, why);
	fclose(f);
	free(line);
	free(old);
	return rc;
}
