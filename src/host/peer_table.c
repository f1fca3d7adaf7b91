/* SPDX-License-Identifier: MIT */
/*
 * Peer table: open addressing with linear probing, keyed by a seeded XXH3
 * hash of the normalized address. The seed is random per host so a remote
 * sender cannot pick source addresses that collide into one long probe run.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "host_internal.h"

#define TOMBSTONE ((struct rudp_peer *)(uintptr_t)1)

static uint32_t round_pow2(uint32_t v)
{
	uint32_t p = 16;
	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

int peer_table_init(struct peer_table *t, uint32_t expected, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	t->cap = round_pow2(expected < 8 ? 16 : expected * 2);
	t->slots = calloc(t->cap, sizeof(*t->slots));
	t->seed = seed;
	return t->slots ? 0 : RUDP_E_NOMEM;
}

void peer_table_free(struct peer_table *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

uint64_t peer_table_hash(const struct peer_table *t, const struct sockaddr_storage *n, uint32_t sock)
{
	uint8_t key[24];
	size_t len;
	if (n->ss_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)n;
		memcpy(key, &v4->sin_addr, 4);
		memcpy(key + 4, &v4->sin_port, 2);
		len = 6;
	} else {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)n;
		memcpy(key, &v6->sin6_addr, 16);
		memcpy(key + 16, &v6->sin6_port, 2);
		len = 18;
	}
	memcpy(key + len, &sock, sizeof(sock));
	return XXH3_64bits_withSeed(key, len + sizeof(sock), t->seed);
}

struct rudp_peer *peer_table_find(const struct peer_table *t, const struct sockaddr_storage *n, uint32_t sock,
				  uint64_t hash)
{
	uint32_t mask = t->cap - 1;
	for (uint32_t i = (uint32_t)hash & mask, probes = 0; probes < t->cap; i = (i + 1) & mask, probes++) {
		struct rudp_peer *p = t->slots[i];
		if (!p)
			return NULL;
		if (p != TOMBSTONE && p->addr_hash == hash && p->sock == sock && rudp_addr_equal(&p->addr, n))
			return p;
	}
	return NULL;
}

static int rehash(struct peer_table *t, uint32_t new_cap)
{
	struct rudp_peer **slots = calloc(new_cap, sizeof(*slots));
	if (!slots)
		return RUDP_E_NOMEM;
	for (uint32_t i = 0; i < t->cap; i++) {
		struct rudp_peer *p = t->slots[i];
		if (!p || p == TOMBSTONE)
			continue;
		uint32_t j = (uint32_t)p->addr_hash & (new_cap - 1);
		while (slots[j])
			j = (j + 1) & (new_cap - 1);
		slots[j] = p;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = new_cap;
	t->tombstones = 0;
	return 0;
}

int peer_table_insert(struct peer_table *t, struct rudp_peer *p)
{
	/* Keep the load (live + deleted) under 1/2 so probe runs stay short. */
	if ((t->used + t->tombstones + 1) * 2 > t->cap) {
		uint32_t cap = (t->used + 1) * 4 > t->cap ? t->cap * 2 : t->cap;
		if (rehash(t, cap) != 0)
			return RUDP_E_NOMEM;
	}
	uint32_t mask = t->cap - 1;
	uint32_t i = (uint32_t)p->addr_hash & mask;
	while (t->slots[i] && t->slots[i] != TOMBSTONE)
		i = (i + 1) & mask;
	if (t->slots[i] == TOMBSTONE)
		t->tombstones--;
	t->slots[i] = p;
	t->used++;
	return 0;
}

void peer_table_remove(struct peer_table *t, struct rudp_peer *p)
{
	uint32_t mask = t->cap - 1;
	for (uint32_t i = (uint32_t)p->addr_hash & mask, probes = 0; probes < t->cap;
	     i = (i + 1) & mask, probes++) {
		if (!t->slots[i])
			return;
		if (t->slots[i] == p) {
			t->slots[i] = TOMBSTONE;
			t->used--;
			t->tombstones++;
			return;
		}
	}
}
