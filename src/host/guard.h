/* SPDX-License-Identifier: MIT */
/*
 * Handshake admission (guard.c): what an unauthenticated source may make the
 * server do before it is a connected peer.
 *
 *  - Offline rate: offline requests (unconnected pings, open connection
 *    requests 1 and 2) answered per source IP address per second, from a
 *    fixed table of token buckets keyed by a seeded hash of the address: no
 *    memory per source, so a flood from a million addresses costs the same
 *    as one from ten. Colliding addresses share a bucket (conservative).
 *  - Pending handshakes: incoming peers between open connection request 2
 *    and the end of the online handshake, counted host-wide and per source
 *    IP address (any port; IPv6 by /64), each ended after handshake_timeout_ms. When the
 *    host-wide count is full the oldest pending handshake gives way to the
 *    new one: honest clients finish within a few round trips, so under a
 *    flood of half-open handshakes they still get through while the flood's
 *    entries age out first.
 *  - Cookies (opt-in): open connection reply 1 carries RakNet's security
 *    flag and a 32-bit cookie, a keyed hash of the source address and port
 *    and a 10 s time bucket with a random per-host secret; request 2 must
 *    echo it. No state is kept until it does, so spoofed sources never get
 *    a pending handshake.
 *  - No amplification: helpers that say whether an offline reply may go out
 *    given the size of the request that caused it (see offline.c).
 */
#ifndef RUDP_HOST_GUARD_H
#define RUDP_HOST_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct rudp_peer;

/* Offline rate buckets per host (a power of two); 16 bytes each. */
#define GUARD_RATE_BUCKETS 8192u
/* Cookie time bucket; a cookie is accepted in its bucket and the next one. */
#define GUARD_COOKIE_PERIOD_US 10000000u

struct guard_bucket {
	uint64_t last_us; /* when tokens were last refilled */
	uint32_t tokens_milli; /* tokens * 1000, so slow rates refill smoothly */
	uint32_t pad;
};

struct guard_addr_count {
	uint8_t key[17]; /* family byte + 16 address bytes; key[0] == 0: empty slot */
	uint32_t count;
};

struct host_guard {
	/* limits, copied from the config */
	uint32_t max_pending;
	uint32_t max_pending_per_addr;
	uint32_t rate_per_addr; /* 0: unlimited */
	bool cookies;
	bool pong_amplification;
	/* keys: hashing buckets and pending counts, and the cookie secret */
	uint64_t seed;
	uint64_t cookie_secret;
	/* offline rate */
	struct guard_bucket *buckets;
	/* pending handshakes: FIFO (oldest first) through the peers, plus
	 * per-address counts in an open-addressing table of count_cap slots */
	struct rudp_peer *pending_head, *pending_tail;
	uint32_t pending;
	struct guard_addr_count *counts;
	uint32_t count_cap;
	uint32_t count_used; /* slots holding an address */
	uint32_t count_cap_max; /* twice max_pending, a power of two: the most it grows to */
	/* counters (exposed to tests through the host) */
	uint64_t rate_limited; /* offline requests not answered: over the rate */
	uint64_t pending_refused; /* request 2 refused: per-address limit */
	uint64_t pending_evicted; /* oldest pending handshake dropped for a new one */
	uint64_t pending_timed_out; /* pending handshakes that never finished */
	uint64_t cookie_rejected; /* request 2 without a valid cookie */
	uint64_t replies_trimmed; /* pongs sent without their data (would amplify) */
	uint64_t replies_suppressed; /* replies not sent at all (would amplify) */
};

/* Fills g from the host's config (fields max_pending_handshakes,
 * max_pending_per_address, offline_rate_per_address, handshake_cookies,
 * pong_amplification) with random keys. Returns 0 or RUDP_E_NOMEM. */
struct rudp_config;
int guard_init(struct host_guard *g, const struct rudp_config *cfg, uint64_t seed, uint64_t secret);
void guard_free(struct host_guard *g);

/* One offline request from `from` (normalized) at now_us: true when it may
 * be answered, false when the address is over its rate (counted). */
bool guard_offline_allowed(struct host_guard *g, const struct sockaddr_storage *from, uint64_t now_us);

/* Whether a reply of reply_len bytes may answer a request of request_len
 * bytes: never larger, so a spoofed source cannot use the host to amplify. */
static inline bool guard_reply_fits(size_t request_len, size_t reply_len)
{
	return reply_len <= request_len;
}

/* Admission of a new pending handshake from `from`. */
enum guard_admit {
	GUARD_ADMIT_OK, /* room: go ahead */
	GUARD_ADMIT_EVICT, /* host-wide full: the oldest must go first (guard_oldest_pending) */
	GUARD_ADMIT_ADDR_FULL, /* this address has max_pending_per_address already: refuse */
};
enum guard_admit guard_admit_pending(struct host_guard *g, const struct sockaddr_storage *from);
/* The oldest pending handshake's peer (NULL when none). */
struct rudp_peer *guard_oldest_pending(const struct host_guard *g);
/* Starts / ends tracking p (an incoming peer) as a pending handshake.
 * guard_pending_add returns false when the per-address table is full (it
 * cannot be: it has room for max_pending addresses). Removing a peer that
 * is not pending is a no-op. */
bool guard_pending_add(struct host_guard *g, struct rudp_peer *p, uint64_t now_us);
void guard_pending_remove(struct host_guard *g, struct rudp_peer *p);
/* Pending handshakes from this address now (tests and logs). */
uint32_t guard_pending_for(const struct host_guard *g, const struct sockaddr_storage *from);

/* The cookie for `from` (address and port) at now_us. */
uint32_t guard_cookie(const struct host_guard *g, const struct sockaddr_storage *from, uint64_t now_us);
/* True when cookie is the one for `from` in this period or the previous. */
bool guard_cookie_valid(const struct host_guard *g, const struct sockaddr_storage *from, uint32_t cookie,
			uint64_t now_us);

#endif
