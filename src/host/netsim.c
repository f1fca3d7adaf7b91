/* SPDX-License-Identifier: MIT */
/*
 * The built-in network simulator: what happens to one datagram on a bad
 * path (loss, a rate-limited link with a drop-tail queue, latency, jitter,
 * duplication, reordering), and the timer-ordered store that holds delayed
 * datagrams until they are due. The host calls it only when rudp_config.sim
 * asks for something, so a host without it pays one pointer test.
 */
#include "host/netsim.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_RATE_QUEUE_BYTES 65536u
#define DEFAULT_MAX_HELD 4096u
#define FIRST_CAP 16u
/* Used when rudp_sim_config.seed is 0, so runs are repeatable by default. */
#define DEFAULT_SEED 0x6a09e667f3bcc909ull
/* A reordered datagram is held back 1 ms to (jitter + REORDER_EXTRA_MS) ms
 * more: long enough for datagrams sent just after it to overtake it. */
#define REORDER_EXTRA_MS 10u

static bool percent_ok(float p)
{
	return p >= 0.0f && p <= 100.0f; /* false for NaN */
}

bool netsim_config_enabled(const rudp_sim_config *c)
{
	return c->loss_percent != 0.0f || c->latency_ms || c->jitter_ms || c->duplicate_percent != 0.0f ||
	       c->reorder_percent != 0.0f || c->rate_kbps;
}

bool netsim_config_valid(const rudp_sim_config *c)
{
	if (!percent_ok(c->loss_percent) || !percent_ok(c->duplicate_percent) ||
	    !percent_ok(c->reorder_percent))
		return false;
	if (c->latency_ms > 10000 || c->jitter_ms > 10000 || c->rate_kbps > 100000000u)
		return false;
	if (c->rate_queue_bytes != 0 &&
	    (c->rate_queue_bytes < RUDP_IO_SLOT_SIZE || c->rate_queue_bytes > (64u << 20)))
		return false;
	if (c->max_held_datagrams != 0 && (c->max_held_datagrams < 16 || c->max_held_datagrams > (1u << 20)))
		return false;
	return true;
}

int netsim_init(struct netsim **out, const rudp_sim_config *cfg)
{
	struct netsim *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (!s)
		return RUDP_E_NOMEM;
	s->cfg = *cfg;
	if (!s->cfg.rate_queue_bytes)
		s->cfg.rate_queue_bytes = DEFAULT_RATE_QUEUE_BYTES;
	if (!s->cfg.max_held_datagrams)
		s->cfg.max_held_datagrams = DEFAULT_MAX_HELD;
	s->rng = cfg->seed ? cfg->seed : DEFAULT_SEED;
	*out = s;
	return 0;
}

void netsim_free(struct netsim *s)
{
	if (!s)
		return;
	free(s->held);
	free(s->data);
	free(s->heap);
	free(s->free_stack);
	free(s);
}

/* splitmix64: small, fast, and the same sequence everywhere for a seed. */
static uint64_t next_random(struct netsim *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* True with probability percent / 100. Draws nothing for 0, so a knob
 * left at 0 does not change the outcomes of the others. */
static bool chance(struct netsim *s, float percent)
{
	if (percent <= 0.0f)
		return false;
	double u = (double)(next_random(s) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
	return u * 100.0 < (double)percent;
}

/* Uniform in [0, max_us]. */
static uint64_t random_upto(struct netsim *s, uint64_t max_us)
{
	return max_us ? next_random(s) % (max_us + 1) : 0;
}

/* ---- the store: a min-heap of indices by (release_us, order) ---- */

static bool held_before(const struct netsim *s, uint32_t a, uint32_t b)
{
	const struct netsim_held *x = &s->held[a], *y = &s->held[b];
	return x->release_us < y->release_us || (x->release_us == y->release_us && x->order < y->order);
}

static void heap_up(struct netsim *s, uint32_t i)
{
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (!held_before(s, s->heap[i], s->heap[parent]))
			break;
		uint32_t t = s->heap[i];
		s->heap[i] = s->heap[parent];
		s->heap[parent] = t;
		i = parent;
	}
}

static void heap_down(struct netsim *s, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->count && held_before(s, s->heap[l], s->heap[m]))
			m = l;
		if (r < s->count && held_before(s, s->heap[r], s->heap[m]))
			m = r;
		if (m == i)
			break;
		uint32_t t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

/* Doubles the store (never past max_held_datagrams). Allocation happens
 * here only, so a steady state holds no per-datagram allocation. */
static bool grow(struct netsim *s)
{
	uint32_t max = s->cfg.max_held_datagrams;
	if (s->cap >= max)
		return false;
	uint32_t cap = s->cap ? s->cap * 2 : FIRST_CAP;
	if (cap > max)
		cap = max;
	struct netsim_held *held = realloc(s->held, (size_t)cap * sizeof(*held));
	if (!held)
		return false;
	s->held = held;
	uint8_t *data = realloc(s->data, (size_t)cap * RUDP_IO_SLOT_SIZE);
	if (!data)
		return false;
	s->data = data;
	uint32_t *heap = realloc(s->heap, (size_t)cap * sizeof(*heap));
	if (!heap)
		return false;
	s->heap = heap;
	uint32_t *free_stack = realloc(s->free_stack, (size_t)cap * sizeof(*free_stack));
	if (!free_stack)
		return false;
	s->free_stack = free_stack;
	/* Pushed highest first so the lowest indices are used first. */
	for (uint32_t i = cap; i > s->cap; i--)
		s->free_stack[s->free_count++] = i - 1;
	s->cap = cap;
	return true;
}

static bool hold(struct netsim *s, enum netsim_dir dir, uint64_t release_us, uint32_t sock,
		 const uint8_t *data, size_t len, const struct sockaddr *addr, socklen_t addrlen)
{
	if (s->free_count == 0 && !grow(s))
		return false;
	uint32_t i = s->free_stack[--s->free_count];
	struct netsim_held *e = &s->held[i];
	e->release_us = release_us;
	e->order = s->next_order++;
	memcpy(&e->addr, addr, addrlen);
	e->addrlen = addrlen;
	e->sock = sock;
	e->len = (uint16_t)len;
	e->dir = (uint8_t)dir;
	memcpy(s->data + (size_t)i * RUDP_IO_SLOT_SIZE, data, len);
	s->heap[s->count] = i;
	heap_up(s, s->count++);
	s->link[dir].held++;
	return true;
}

/* Removes heap position pos and frees its index. */
static void unhold(struct netsim *s, uint32_t pos)
{
	uint32_t i = s->heap[pos];
	s->link[s->held[i].dir].held--;
	s->free_stack[s->free_count++] = i;
	s->heap[pos] = s->heap[--s->count];
	if (pos < s->count) {
		heap_down(s, pos);
		heap_up(s, pos);
	}
}

/* ---- one datagram's fate ---- */

/* When the rate-limited link has sent this datagram, or 0 when its queue
 * is full (drop-tail). The queue is what the link has accepted and not yet
 * sent, measured as the time it still needs at its rate. */
static uint64_t rate_limit(struct netsim *s, struct netsim_link *l, uint64_t now_us, size_t len)
{
	uint64_t now_ns = now_us * 1000;
	uint64_t rate = s->cfg.rate_kbps; /* kbit/s: bytes * 8e6 / rate is ns */
	if (l->busy_until_ns < now_ns)
		l->busy_until_ns = now_ns;
	uint64_t queued_bytes = (l->busy_until_ns - now_ns) * rate / 8000000u;
	if (queued_bytes + len > s->cfg.rate_queue_bytes)
		return 0;
	l->busy_until_ns += (uint64_t)len * 8000000u / rate;
	return (l->busy_until_ns + 999) / 1000;
}

static enum netsim_verdict simulate(struct netsim *s, enum netsim_dir dir, uint64_t now_us, uint32_t sock,
				    const uint8_t *data, size_t len, const struct sockaddr *addr,
				    socklen_t addrlen)
{
	struct netsim_link *l = &s->link[dir];
	if (len > RUDP_IO_SLOT_SIZE || addrlen > sizeof(((struct netsim_held *)0)->addr))
		return NETSIM_PASS; /* nothing the host would send or process; not ours to judge */
	if (chance(s, s->cfg.loss_percent)) {
		s->dropped++;
		return NETSIM_DROPPED;
	}
	uint64_t release = now_us;
	if (s->cfg.rate_kbps) {
		release = rate_limit(s, l, now_us, len);
		if (!release) {
			s->overflowed++;
			return NETSIM_DROPPED;
		}
	}
	release += (uint64_t)s->cfg.latency_ms * 1000 + random_upto(s, (uint64_t)s->cfg.jitter_ms * 1000);
	bool reorder = chance(s, s->cfg.reorder_percent);
	if (reorder) {
		/* Held back, and not a bound for the datagrams after it. */
		release += 1000 + random_upto(s, ((uint64_t)s->cfg.jitter_ms + REORDER_EXTRA_MS - 1) * 1000);
	} else {
		if (release < l->last_release_us)
			release = l->last_release_us;
		l->last_release_us = release;
	}
	bool duplicate = chance(s, s->cfg.duplicate_percent);
	uint64_t copy_release = duplicate ? release + random_upto(s, (uint64_t)s->cfg.jitter_ms * 1000) : 0;
	enum netsim_verdict v = NETSIM_PASS;
	/* Due now with nothing of its direction held before it: it goes as
	 * is, without a copy. */
	if (reorder || release > now_us || l->held > 0) {
		if (!hold(s, dir, release, sock, data, len, addr, addrlen)) {
			s->overflowed++;
			return NETSIM_DROPPED;
		}
		s->delayed++;
		if (reorder)
			s->reordered++;
		v = NETSIM_HELD;
	}
	if (duplicate) {
		if (hold(s, dir, copy_release, sock, data, len, addr, addrlen))
			s->duplicated++;
		else
			s->overflowed++;
	}
	return v;
}

enum netsim_verdict netsim_outgoing(struct netsim *s, uint64_t now_us, uint32_t sock, const uint8_t *data,
				    size_t len, const struct sockaddr *to, socklen_t tolen)
{
	return simulate(s, NETSIM_OUT, now_us, sock, data, len, to, tolen);
}

enum netsim_verdict netsim_incoming(struct netsim *s, uint64_t now_us, const struct rudp_io_datagram *d)
{
	if (d->truncated)
		return NETSIM_PASS; /* the host drops and counts it */
	return simulate(s, NETSIM_IN, now_us, d->sock, d->data, d->len, (const struct sockaddr *)&d->addr,
			d->addrlen);
}

uint64_t netsim_next_release_us(const struct netsim *s)
{
	return s->count ? s->held[s->heap[0]].release_us : UINT64_MAX;
}

bool netsim_release_due(struct netsim *s, uint64_t now_us, enum netsim_dir *dir, struct rudp_io_datagram *out)
{
	if (s->count == 0)
		return false;
	uint32_t i = s->heap[0];
	const struct netsim_held *e = &s->held[i];
	if (e->release_us > now_us)
		return false;
	/* Copied out so that the store may grow (and move) while the host
	 * handles it: processing an incoming datagram may hold replies. */
	memcpy(s->released, s->data + (size_t)i * RUDP_IO_SLOT_SIZE, e->len);
	*dir = (enum netsim_dir)e->dir;
	memset(out, 0, sizeof(*out));
	memcpy(&out->addr, &e->addr, e->addrlen);
	out->addrlen = e->addrlen;
	out->sock = e->sock;
	out->len = e->len;
	out->data = s->released;
	unhold(s, 0);
	return true;
}

void netsim_forget_socket(struct netsim *s, uint32_t sock)
{
	uint32_t kept = 0;
	for (uint32_t pos = 0; pos < s->count; pos++) {
		uint32_t i = s->heap[pos];
		if (s->held[i].sock == sock) {
			s->link[s->held[i].dir].held--;
			s->free_stack[s->free_count++] = i;
		} else {
			s->heap[kept++] = i;
		}
	}
	s->count = kept;
	for (uint32_t pos = kept / 2; pos-- > 0;)
		heap_down(s, pos);
}

void netsim_stats(const struct netsim *s, rudp_host_stats *out)
{
	out->sim_dropped = s->dropped;
	out->sim_overflowed = s->overflowed;
	out->sim_duplicated = s->duplicated;
	out->sim_reordered = s->reordered;
	out->sim_delayed = s->delayed;
}
