/* SPDX-License-Identifier: MIT */
/*
 * Server workers (BENCH.md: "one socket per worker with SO_REUSEPORT"): a
 * driver opens one socket per worker on the same address before it says
 * ready, so the kernel's reuseport group is complete before any client
 * arrives, then serves each socket and its connections on one thread.
 * Workers share nothing; the process's CPU set (given by the orchestrator)
 * bounds where their threads run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

struct worker_start {
	struct bench_worker *w;
	int (*fn)(struct bench_worker *);
};

static void *worker_main(void *arg)
{
	struct worker_start *s = arg;
	s->w->rc = s->fn(s->w);
	if (s->w->rc)
		bench_stop = 1;
	return NULL;
}

int bench_run_workers(struct bench_worker *w, unsigned n, int (*fn)(struct bench_worker *))
{
	pthread_t tid[BENCH_MAX_WORKERS];
	struct worker_start st[BENCH_MAX_WORKERS];
	unsigned started = 1;
	if (n > BENCH_MAX_WORKERS)
		n = BENCH_MAX_WORKERS;
	for (unsigned i = 0; i < n; i++) {
		w[i].index = i;
		w[i].resent_bytes = -1; /* a driver that knows says so */
	}
	for (; started < n; started++) {
		st[started] = (struct worker_start){&w[started], fn};
		int e = pthread_create(&tid[started], NULL, worker_main, &st[started]);
		if (e) {
			bench_fail("server: cannot start worker %u: %s", started, strerror(e));
			bench_stop = 1;
			w[started].rc = 1;
			break;
		}
	}
	st[0] = (struct worker_start){&w[0], fn};
	worker_main(&st[0]);
	for (unsigned i = 1; i < started; i++)
		pthread_join(tid[i], NULL);
	for (unsigned i = 0; i < n; i++)
		if (w[i].rc)
			return w[i].rc;
	return 0;
}

/* snprintf at b->len that never runs past the buffer (output is cut instead). */
struct sbuf {
	char s[64 + BENCH_MAX_WORKERS * 2 * 21];
	size_t len;
};

__attribute__((format(printf, 2, 3))) static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	if (b->len >= sizeof b->s - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(b->s + b->len, sizeof b->s - b->len, fmt, ap);
	va_end(ap);
	if (r > 0)
		b->len += (size_t)r < sizeof b->s - b->len ? (size_t)r : sizeof b->s - 1 - b->len;
}

void bench_server_summary(int fd, const struct bench_worker *w, unsigned n)
{
	struct sbuf b = {.len = 0};
	sb_add(&b, "served workers=%u conns=", n);
	for (unsigned i = 0; i < n; i++) {
		if (w[i].conns == UINT64_MAX)
			sb_add(&b, "%s-", i ? "," : "");
		else
			sb_add(&b, "%s%" PRIu64, i ? "," : "", w[i].conns);
	}
	sb_add(&b, " echoes=");
	for (unsigned i = 0; i < n; i++)
		sb_add(&b, "%s%" PRIu64, i ? "," : "", w[i].echoes);
	int64_t resent = 0;
	for (unsigned i = 0; i < n && resent >= 0; i++)
		resent = w[i].resent_bytes < 0 ? -1 : resent + w[i].resent_bytes;
	if (resent >= 0)
		sb_add(&b, " resent_bytes=%" PRId64, resent);
	sb_add(&b, " hwm_kib=%ld\n", bench_self_hwm_kib());
	if (fd < 0) {
		fprintf(stderr, "rudp-bench: %s", b.s);
		return;
	}
	ssize_t r = write(fd, b.s, b.len);
	(void)r;
	close(fd);
}

int bench_reuseport(int fd)
{
	int one = 1;
	return setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
}
