/* SPDX-License-Identifier: MIT */
/* Handshake admission: offline rate, pending handshakes, cookies. See guard.h. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "host_internal.h"

/* Slots of the pending-count table when a host starts (guard_init). */
#define GUARD_COUNTS_FIRST 16u

/* key[0] holds the family tag, so an all-zero key marks an empty slot.
 * Limits count an IPv6 source by its /64: one subscriber gets a whole /64
 * and could otherwise rotate through 2^64 "addresses". Cookies bind the
 * full address (full = true). */
static void addr_key_full(const struct sockaddr_storage *a, uint8_t key[17], bool full)
{
	memset(key, 0, 17);
	if (a->ss_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)a)->sin_addr, 4);
	} else {
		key[0] = 6;
		memcpy(key + 1, &((const struct sockaddr_in6 *)a)->sin6_addr, full ? 16 : 8);
	}
}

static void addr_key(const struct sockaddr_storage *a, uint8_t key[17])
{
	addr_key_full(a, key, false);
}

static uint64_t key_hash(const struct host_guard *g, const uint8_t key[17])
{
	return XXH3_64bits_withSeed(key, 17, g->seed);
}

int guard_init(struct host_guard *g, const struct rudp_config *cfg, uint64_t seed, uint64_t secret)
{
	memset(g, 0, sizeof(*g));
	g->max_pending =
		cfg->max_pending_handshakes < cfg->max_peers ? cfg->max_pending_handshakes : cfg->max_peers;
	g->max_pending_per_addr = cfg->max_pending_per_address;
	g->rate_per_addr = cfg->offline_rate_per_address;
	g->cookies = cfg->handshake_cookies != 0;
	g->pong_amplification = cfg->pong_amplification != 0;
	g->seed = seed;
	g->cookie_secret = secret;
	/* At most max_pending addresses are live at once; twice that many
	 * slots keeps linear probe runs short. The table starts at
	 * GUARD_COUNTS_FIRST slots and doubles as addresses come (count_grow),
	 * so a server that allows thousands of pending handshakes but sees a
	 * few clients at a time does not keep a table for all of them. */
	g->count_cap_max = GUARD_COUNTS_FIRST;
	while (g->count_cap_max < 2 * g->max_pending)
		g->count_cap_max <<= 1;
	g->count_cap = GUARD_COUNTS_FIRST;
	g->counts = calloc(g->count_cap, sizeof(*g->counts));
	/* The rate buckets (128 KiB) are made by the first offline request:
	 * a client host, or one of many hosts in a process, never gets one. */
	if (!g->counts) {
		guard_free(g);
		return RUDP_E_NOMEM;
	}
	return 0;
}

void guard_free(struct host_guard *g)
{
	free(g->buckets);
	free(g->counts);
	g->buckets = NULL;
	g->counts = NULL;
}

bool guard_offline_allowed(struct host_guard *g, const struct sockaddr_storage *from, uint64_t now_us)
{
	uint8_t key[17];
	struct guard_bucket *b;
	uint64_t cap_milli, refill;

	if (!g->rate_per_addr)
		return true;
	if (!g->buckets) {
		g->buckets = calloc(GUARD_RATE_BUCKETS, sizeof(*g->buckets));
		if (!g->buckets) {
			g->rate_limited++; /* out of memory: refuse rather than go unlimited */
			return false;
		}
	}
	addr_key(from, key);
	b = &g->buckets[key_hash(g, key) & (GUARD_RATE_BUCKETS - 1)];
	cap_milli = (uint64_t)g->rate_per_addr * 1000u;
	if (b->last_us == 0) {
		/* A fresh bucket starts full: the first burst of a new client passes. */
		b->tokens_milli = (uint32_t)(cap_milli > UINT32_MAX ? UINT32_MAX : cap_milli);
		b->last_us = now_us;
	} else if (now_us > b->last_us) {
		/* rate tokens per second = rate milli-tokens per millisecond */
		refill = (now_us - b->last_us) / 1000u * g->rate_per_addr;
		if (refill > 0) {
			uint64_t t = b->tokens_milli + refill;
			b->tokens_milli = (uint32_t)(t > cap_milli ? cap_milli : t);
			b->last_us = now_us - (now_us - b->last_us) % 1000u;
		}
	}
	if (b->tokens_milli < 1000u) {
		g->rate_limited++;
		return false;
	}
	b->tokens_milli -= 1000u;
	return true;
}

/* The slot holding key, or the empty slot where it would go. */
static struct guard_addr_count *count_slot(const struct host_guard *g, const uint8_t key[17])
{
	uint32_t mask = g->count_cap - 1;
	uint32_t i = (uint32_t)key_hash(g, key) & mask;

	for (uint32_t probes = 0; probes < g->count_cap; probes++, i = (i + 1) & mask) {
		struct guard_addr_count *s = &g->counts[i];
		if (s->key[0] == 0 || memcmp(s->key, key, 17) == 0)
			return s;
	}
	return NULL;
}

/* Doubles the pending-count table (at most to count_cap_max) and puts
 * every address back in its place for the new size. Returns false, with
 * the table unchanged, when it is at its largest or out of memory: the
 * table still works while it has an empty slot. */
static bool count_grow(struct host_guard *g)
{
	struct guard_addr_count *old = g->counts;
	uint32_t old_cap = g->count_cap;
	struct guard_addr_count *counts;

	if (old_cap * 2 > g->count_cap_max || !(counts = calloc(old_cap * 2, sizeof(*counts))))
		return false;
	g->counts = counts;
	g->count_cap = old_cap * 2;
	for (uint32_t k = 0; k < old_cap; k++)
		if (old[k].key[0] != 0)
			*count_slot(g, old[k].key) = old[k];
	free(old);
	return true;
}

/* Linear-probing deletion by moving later entries back, so no tombstones
 * accumulate however many addresses come and go. */
static void count_delete(struct host_guard *g, struct guard_addr_count *s)
{
	uint32_t mask = g->count_cap - 1;
	uint32_t hole = (uint32_t)(s - g->counts);
	uint32_t i = hole;

	for (;;) {
		i = (i + 1) & mask;
		struct guard_addr_count *n = &g->counts[i];
		if (n->key[0] == 0)
			break;
		uint32_t home = (uint32_t)key_hash(g, n->key) & mask;
		/* n may fill the hole if its home is not in (hole, i] cyclically. */
		bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
		if (stays)
			continue;
		g->counts[hole] = *n;
		hole = i;
	}
	memset(&g->counts[hole], 0, sizeof(g->counts[hole]));
	g->count_used--;
}

uint32_t guard_pending_for(const struct host_guard *g, const struct sockaddr_storage *from)
{
	uint8_t key[17];
	struct guard_addr_count *s;

	addr_key(from, key);
	s = count_slot(g, key);
	return s && s->key[0] ? s->count : 0;
}

enum guard_admit guard_admit_pending(struct host_guard *g, const struct sockaddr_storage *from)
{
	if (guard_pending_for(g, from) >= g->max_pending_per_addr) {
		g->pending_refused++;
		return GUARD_ADMIT_ADDR_FULL;
	}
	if (g->pending >= g->max_pending)
		return GUARD_ADMIT_EVICT;
	return GUARD_ADMIT_OK;
}

struct rudp_peer *guard_oldest_pending(const struct host_guard *g)
{
	return g->pending_head;
}

bool guard_pending_add(struct host_guard *g, struct rudp_peer *p, uint64_t now_us)
{
	uint8_t key[17];
	struct guard_addr_count *s;

	if (p->guard_pending)
		return true;
	addr_key(&p->addr, key);
	s = count_slot(g, key);
	/* A new address keeps the table at most half full while it may grow. */
	if ((!s || s->key[0] == 0) && 2 * (g->count_used + 1) > g->count_cap && count_grow(g))
		s = count_slot(g, key);
	if (!s)
		return false;
	if (s->key[0] == 0) {
		memcpy(s->key, key, 17);
		s->count = 0;
		g->count_used++;
	}
	s->count++;
	p->guard_pending = true;
	p->pending_since_us = now_us;
	p->pending_next = NULL;
	p->pending_prev = g->pending_tail;
	if (g->pending_tail)
		g->pending_tail->pending_next = p;
	else
		g->pending_head = p;
	g->pending_tail = p;
	g->pending++;
	return true;
}

void guard_pending_remove(struct host_guard *g, struct rudp_peer *p)
{
	uint8_t key[17];
	struct guard_addr_count *s;

	if (!p->guard_pending)
		return;
	p->guard_pending = false;
	if (p->pending_prev)
		p->pending_prev->pending_next = p->pending_next;
	else
		g->pending_head = p->pending_next;
	if (p->pending_next)
		p->pending_next->pending_prev = p->pending_prev;
	else
		g->pending_tail = p->pending_prev;
	p->pending_prev = p->pending_next = NULL;
	g->pending--;
	addr_key(&p->addr, key);
	s = count_slot(g, key);
	if (s && s->key[0] && --s->count == 0)
		count_delete(g, s);
}

static uint32_t cookie_at(const struct host_guard *g, const struct sockaddr_storage *from, uint64_t period)
{
	uint8_t buf[17 + 2 + 8];
	uint16_t port;

	addr_key_full(from, buf, true);
	port = from->ss_family == AF_INET ? ((const struct sockaddr_in *)from)->sin_port
					  : ((const struct sockaddr_in6 *)from)->sin6_port;
	memcpy(buf + 17, &port, 2);
	memcpy(buf + 19, &period, 8);
	return (uint32_t)XXH3_64bits_withSeed(buf, sizeof(buf), g->cookie_secret);
}

uint32_t guard_cookie(const struct host_guard *g, const struct sockaddr_storage *from, uint64_t now_us)
{
	return cookie_at(g, from, now_us / GUARD_COOKIE_PERIOD_US);
}

bool guard_cookie_valid(const struct host_guard *g, const struct sockaddr_storage *from, uint32_t cookie,
			uint64_t now_us)
{
	uint64_t period = now_us / GUARD_COOKIE_PERIOD_US;

	return cookie == cookie_at(g, from, period) ||
	       (period > 0 && cookie == cookie_at(g, from, period - 1));
}
