/* SPDX-License-Identifier: MIT */
/*
 * Sending from the application: rudp_send, rudp_send_ex, rudp_send_expiring
 * and rudp_send_many. They share the argument checks (host_send_check_args)
 * and the per-peer step (host_send_to_peer); rudp_send_many copies the
 * message once, into a shared body from the host's pool, which the peers'
 * queues reference.
 */
#include "host_internal.h"
#if RUDP_HAVE_SEND_POLICY
#include "policy/policy.h"
#endif

/* Lifetimes beyond this are a caller's mistake, not a wish. */
#define SEND_LIFETIME_MAX_MS 3600000u

/* The conn trusts these checks (rudp_conn_send_checked): the public
 * values are the wire's. */
_Static_assert((int)RUDP_UNRELIABLE == (int)RUDP_WIRE_UNRELIABLE &&
		       (int)RUDP_RELIABLE_SEQUENCED == (int)RUDP_WIRE_RELIABLE_SEQUENCED &&
		       RUDP_CHANNELS <= RUDP_WIRE_ORDER_CHANNELS &&
		       (int)RUDP_PRIORITY_LOW == (int)RUDP_CONN_PRIO_LOW &&
		       RUDP_CONN_PRIO_LOW + 1 == RUDP_CONN_PRIORITIES,
	       "send argument ranges");

/* The checks of a send that do not depend on the peer. */
static int host_send_check_args(const void *data, size_t len, int reliability, int channel, int priority,
				uint32_t lifetime_ms)
{
	if (!data && len)
		return RUDP_E_INVALID;
	if (reliability < RUDP_UNRELIABLE || reliability > RUDP_RELIABLE_SEQUENCED || channel < 0 ||
	    channel >= RUDP_CHANNELS || priority < RUDP_PRIORITY_IMMEDIATE || priority > RUDP_PRIORITY_LOW)
		return RUDP_E_INVALID;
	if (lifetime_ms != 0 &&
	    ((reliability != RUDP_UNRELIABLE && reliability != RUDP_UNRELIABLE_SEQUENCED) ||
	     lifetime_ms > SEND_LIFETIME_MAX_MS))
		return RUDP_E_INVALID;
	if (len == 0 || rudp_wire_is_control_id(((const uint8_t *)data)[0]))
		return RUDP_E_RESERVED_ID;
	return 0;
}

/* The public code of a conn send's failure. */
static int host_send_error(int r)
{
	switch (r) {
	case RUDP_CONN_E_STATE: return RUDP_E_NOT_CONNECTED;
	case RUDP_CONN_E_TOO_LARGE: return RUDP_E_TOO_LARGE;
	case RUDP_CONN_E_QUEUE_FULL: return RUDP_E_QUEUE_FULL;
	case RUDP_E_WOULD_BLOCK: return RUDP_E_WOULD_BLOCK; /* the send policy's */
	case RUDP_CONN_E_NOMEM: return RUDP_E_NOMEM;
	default: return RUDP_E_INVALID;
	}
}

/* Over the memory budget the peer is refused, unless it is not connected. */
static int host_send_refused(struct rudp_peer *p)
{
	if (rudp_conn_state(p->conn) != RUDP_CONN_STATE_CONNECTED)
		return RUDP_E_NOT_CONNECTED;
	budget_refuse(p->host, p);
	return RUDP_E_WOULD_BLOCK;
}

/* host_peer_send, with its common paths one call less: straight to the
 * policy, or to the conn without a shared body. */
static inline int host_queue_message(struct rudp_peer *p, const void *data, size_t len, uint8_t reliability,
				     uint8_t channel, uint8_t priority, const struct host_send_extra *extra,
				     uint64_t *grew)
{
#if RUDP_HAVE_SEND_POLICY
	if (p->policy) {
		int r = rudp_policy_send(p->policy, data, len, reliability, channel, priority,
					 p->host->now_us, grew);

		return r == RUDP_POLICY_E_WOULD_BLOCK ? RUDP_E_WOULD_BLOCK : r;
	}
#endif
	if (!extra->shared)
		return rudp_conn_send_checked(p->conn, data, len, reliability, channel, p->host->now_us,
					      extra->expire_us, grew);
	return host_peer_send(p, data, len, reliability, channel, priority, extra, grew);
}

/* Queues a checked message on one peer and marks it for the next flush. */
static int host_send_to_peer(struct rudp_peer *p, const void *data, size_t len, int reliability, int channel,
			     int priority, const struct host_send_extra *extra)
{
	if (p->stage != PEER_ONLINE || rudp_conn_state(p->conn) != RUDP_CONN_STATE_CONNECTED)
		return RUDP_E_NOT_CONNECTED;
	if (budget_over(p->host))
		return host_send_refused(p);
	/* A send changes only the conn's send queues and the policy's stage:
	 * their growth is the share's (both say what it is), and reassembly
	 * and the order hold stay out of the cache. */
	uint64_t grew = 0;
	int r = host_queue_message(p, data, len, (uint8_t)reliability, (uint8_t)channel, (uint8_t)priority,
				   extra, &grew);
	if (r != 0)
		return host_send_error(r);
	budget_peer_grew(p->host, p, grew);
	host_mark_dirty(p->host, p);
	return 0;
}

static int send_one(rudp_peer *p, const void *data, size_t len, int reliability, int channel, int priority,
		    uint32_t lifetime_ms)
{
	if (!p)
		return RUDP_E_INVALID;
	int r = host_send_check_args(data, len, reliability, channel, priority, lifetime_ms);
	if (r != 0)
		return r;
	struct rudp_host *h = p->host;
	struct host_send_extra extra = {0};
	if (lifetime_ms != 0) {
		h->now_us = rudp_now_us();
		extra.expire_us = h->now_us + (uint64_t)lifetime_ms * 1000u;
	}
	r = host_send_to_peer(p, data, len, reliability, channel, priority, &extra);
	/* Immediate skips the wait for the next service or flush call. */
	if (r == 0 && priority == RUDP_PRIORITY_IMMEDIATE) {
		h->now_us = rudp_now_us();
		host_flush_dirty(h);
		rudp_io_flush(h->io);
	}
	return r;
}

int rudp_send(rudp_peer *p, const void *data, size_t len, int reliability, int channel)
{
	return send_one(p, data, len, reliability, channel, RUDP_PRIORITY_MEDIUM, 0);
}

int rudp_send_ex(rudp_peer *p, const void *data, size_t len, int reliability, int channel, int priority)
{
	return send_one(p, data, len, reliability, channel, priority, 0);
}

int rudp_send_expiring(rudp_peer *p, const void *data, size_t len, int reliability, int channel,
		       uint32_t lifetime_ms)
{
	return send_one(p, data, len, reliability, channel, RUDP_PRIORITY_MEDIUM, lifetime_ms);
}

/* Peers and conns sit apart in memory and each send touches a dozen of
 * their cache lines: loading them while earlier peers are served hides
 * most of the wait. Distances in peers: the peer's lines, then the conn's,
 * then its next frame record (each needs the one before loaded). */
#define PREFETCH_PEER 24
#define PREFETCH_CONN 12
#define PREFETCH_FRAME 4

static void prefetch_ahead(rudp_peer *const *peers, size_t n, size_t i, const struct rudp_conn_shared_send *m)
{
	const struct rudp_peer *p;
	const struct rudp_conn *lines_of = NULL, *record_of = NULL;

	if (i + PREFETCH_PEER < n && (p = peers[i + PREFETCH_PEER])) {
		/* The send fields, at the peer's start: one or two lines. */
		__builtin_prefetch(&p->host, 1);
		__builtin_prefetch(&p->dirty_next, 1);
	}
	if (i + PREFETCH_CONN < n && (p = peers[i + PREFETCH_CONN]))
		lines_of = p->conn;
	if (i + PREFETCH_FRAME < n && (p = peers[i + PREFETCH_FRAME]))
		record_of = p->conn;
	rudp_conn_prefetch_send(lines_of, record_of, m);
}

/* rudp_send_many's step for one peer of h: host_send_to_peer's checks and
 * results, a peer without a send policy given the message as prepared
 * once for all (m) and its conn state tested by the conn itself (here,
 * before the budget, only when over it: the rare case). */
static int send_many_to_peer(struct rudp_host *h, struct rudp_peer *p, const struct rudp_conn_shared_send *m,
			     const struct host_send_extra *extra)
{
	if (!p || p->host != h)
		return RUDP_E_INVALID;
	if (p->stage != PEER_ONLINE)
		return RUDP_E_NOT_CONNECTED;
	if (budget_over(h))
		return host_send_refused(p);
	if (p->policy)
		return host_send_to_peer(p, m->body->bytes, m->len, m->reliability, m->channel, m->priority,
					 extra);
	uint64_t grew;
	int r = rudp_conn_send_shared_prepared(p->conn, m, &grew);
	if (r != 0)
		return host_send_error(r);
	/* The conn said what it took: no gauge to read again. */
	budget_peer_grew(h, p, grew);
	host_mark_dirty_online(h, p);
	return 0;
}

int rudp_send_many(rudp_host *h, rudp_peer *const *peers, size_t n, const void *data, size_t len,
		   int reliability, int channel, uint32_t lifetime_ms, int *errors)
{
	if (!h || (!peers && n) || n > INT32_MAX)
		return RUDP_E_INVALID;
	int r = host_send_check_args(data, len, reliability, channel, RUDP_PRIORITY_MEDIUM, lifetime_ms);
	if (r == 0 && len > UINT32_MAX)
		r = RUDP_E_TOO_LARGE;
	struct shared_body *body = NULL;
	if (r == 0 && n > 0 && !(body = shared_body_new(&h->shared_bodies, data, (uint32_t)len)))
		r = RUDP_E_NOMEM;
	if (r != 0 || n == 0) {
		for (size_t i = 0; errors && i < n; i++)
			errors[i] = r;
		return 0;
	}
	struct host_send_extra extra = {.shared = body};
	if (lifetime_ms != 0) {
		h->now_us = rudp_now_us();
		extra.expire_us = h->now_us + (uint64_t)lifetime_ms * 1000u;
	}
	struct rudp_conn_shared_send m;
	/* The host's checks are stricter than the conn's: this cannot fail. */
	if (rudp_conn_shared_send_init(&m, body, (uint8_t)reliability, (uint8_t)channel, RUDP_PRIORITY_MEDIUM,
				       h->now_us, extra.expire_us) != 0)
		r = RUDP_E_INVALID;
	size_t queued = 0;
	for (size_t i = 0; i < n; i++) {
		int e = r;

		if (e == 0) {
			prefetch_ahead(peers, n, i, &m);
			e = send_many_to_peer(h, peers[i], &m, &extra);
		}
		if (e == 0)
			queued++;
		if (errors)
			errors[i] = e;
	}
	shared_body_release(body); /* ours; the queues hold their own */
	return (int)queued;
}
