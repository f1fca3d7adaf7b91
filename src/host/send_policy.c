/* SPDX-License-Identifier: MIT */
/*
 * The host's side of the optional send policy (src/policy): a peer with
 * send options has a policy, and sending, flushing and disconnecting its
 * conn go through it; the conn itself knows nothing of it. Also the
 * public calls that set the options and read the policy's statistics.
 * Built without the module, the calls go straight to the conn and the
 * public ones say the feature is not there.
 */
#include <string.h>

#include "host_internal.h"
#if RUDP_HAVE_SEND_POLICY
#include "policy/policy.h"
#endif

void rudp_send_options_init(rudp_send_options *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof(*o));
	/* The same values as rudp_policy_config_init(), which explains them;
	 * kept here too so the defaults can be read without the module. */
	o->max_in_flight_bytes = 64u << 20;
	o->reliable_soft_budget = 256u << 10;
	o->unreliable_reserve = 64u << 10;
	o->flush_budget = 256u << 10;
	o->starvation_limit = 16;
}

/* Straight to the conn, referencing the shared body when there is one.
 * The arguments are checked (send.c): the conn checks only its own. */
static int host_conn_send(struct rudp_peer *p, const uint8_t *data, size_t len, uint8_t reliability,
			  uint8_t channel, uint8_t priority, const struct host_send_extra *extra,
			  uint64_t *grew)
{
	if (extra->shared) {
		uint64_t before = rudp_conn_send_memory_bytes(p->conn);
		int r = rudp_conn_send_shared(p->conn, extra->shared, reliability, channel, priority,
					      p->host->now_us, extra->expire_us);

		*grew = rudp_conn_send_memory_bytes(p->conn) - before;
		return r;
	}
	return rudp_conn_send_checked(p->conn, data, len, reliability, channel, p->host->now_us,
				      extra->expire_us, grew);
}

#if RUDP_HAVE_SEND_POLICY
int host_peer_send(struct rudp_peer *p, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel,
		   uint8_t priority, const struct host_send_extra *extra, uint64_t *grew)
{
	if (p->policy) {
		int r = rudp_policy_send(p->policy, data, len, reliability, channel, priority,
					 p->host->now_us, grew);

		return r == RUDP_POLICY_E_WOULD_BLOCK ? RUDP_E_WOULD_BLOCK : r;
	}
	return host_conn_send(p, data, len, reliability, channel, priority, extra, grew);
}

void host_peer_flush(struct rudp_host *h, struct rudp_peer *p)
{
	bool writable = false;

	if (!p->policy) {
		rudp_conn_flush(p->conn, h->now_us);
		return;
	}
	rudp_policy_flush(p->policy, h->now_us, &writable);
	if (writable) {
		/* A refused sender may send again. */
		struct pending_event e = {.type = RUDP_EVENT_WRITABLE, .peer = p};
		event_queue_push(&h->events, &e, NULL);
	}
}

void host_peer_disconnect(struct rudp_peer *p)
{
	if (p->policy)
		rudp_policy_disconnect(p->policy, p->host->now_us);
	else
		rudp_conn_disconnect(p->conn, p->host->now_us);
}

static void to_policy_config(const rudp_send_options *o, struct rudp_policy_config *c)
{
	rudp_policy_config_init(c);
	c->max_in_flight_bytes = o->max_in_flight_bytes;
	c->reliable_soft_budget = o->reliable_soft_budget;
	c->unreliable_reserve = o->unreliable_reserve;
	c->flush_budget = o->flush_budget;
	c->starvation_limit = o->starvation_limit;
}

static bool send_options_valid(const rudp_send_options *o)
{
	struct rudp_policy_config c;

	to_policy_config(o, &c);
	return rudp_policy_config_check(&c) == 0;
}

int host_peer_policy_attach(struct rudp_peer *p)
{
	struct rudp_policy_config c;

	if (!p->has_send_opts || !p->conn)
		return 0;
	to_policy_config(&p->send_opts, &c);
	if (p->policy)
		rudp_policy_reconfigure(p->policy, &c);
	else
		p->policy = rudp_policy_create(&c);
	if (!p->policy)
		return RUDP_E_NOMEM;
	return rudp_policy_attach(p->policy, p->conn) == 0 ? 0 : RUDP_E_NOMEM;
}

void host_peer_policy_closing(struct rudp_peer *p)
{
	if (p->policy && p->conn)
		rudp_policy_conn_closing(p->policy);
}

void host_peer_policy_free(struct rudp_peer *p)
{
	/* The conn is gone already (host_peer_policy_closing came first). */
	rudp_policy_destroy(p->policy);
	p->policy = NULL;
}

int rudp_peer_set_send_options(rudp_peer *p, const rudp_send_options *o)
{
	if (!p || (o && !send_options_valid(o)))
		return RUDP_E_INVALID;
	if (p->stage == PEER_DEAD)
		return RUDP_E_NOT_CONNECTED;
	if (!o) {
		p->has_send_opts = false;
		if (p->policy && p->conn) {
			if (rudp_policy_detach(p->policy) < 0)
				return RUDP_E_NOMEM;
			/* What the policy held is in the plain queue now. */
			host_mark_dirty(p->host, p);
		}
		rudp_policy_destroy(p->policy);
		p->policy = NULL;
		return 0;
	}
	p->send_opts = *o;
	p->has_send_opts = true;
	return host_peer_policy_attach(p);
}

int rudp_host_set_send_options(rudp_host *h, const rudp_send_options *o)
{
	if (!h || (o && !send_options_valid(o)))
		return RUDP_E_INVALID;
	h->has_send_opts = o != NULL;
	if (o)
		h->send_opts = *o;
	return 0;
}

static void send_stats_fill(const void *obj, void *dst)
{
	const rudp_peer *p = obj;
	rudp_send_stats *out = dst;
	struct rudp_policy_stats s;

	memset(out, 0, sizeof(*out));
	if (!p->policy)
		return;
	rudp_policy_get_stats(p->policy, &s);
	out->enabled = 1;
	for (int i = 0; i < RUDP_PRIORITIES; i++) {
		out->reliable_queued_bytes[i] = s.reliable_staged_bytes[i];
		out->unreliable_queued_bytes[i] = s.unreliable_staged_bytes[i];
	}
	out->reliable_queue_bytes = s.reliable_queue_bytes;
	out->unreliable_queue_bytes = s.unreliable_queue_bytes;
	out->in_flight_bytes = s.in_flight_bytes;
	out->dropped[RUDP_DROP_UNRELIABLE_RESERVE] = s.dropped[RUDP_POLICY_DROP_RESERVE];
	out->dropped[RUDP_DROP_CLOSED] = s.dropped[RUDP_POLICY_DROP_CLOSED];
	out->sends_refused = s.sends_refused;
	out->writable_events = s.writable_signals;
	out->flushes_budget_limited = s.flushes_budget_limited;
	out->peak_reliable_queue_bytes = s.peak_reliable_queue_bytes;
	out->peak_unreliable_queue_bytes = s.peak_unreliable_queue_bytes;
	out->peak_in_flight_bytes = s.peak_in_flight_bytes;
}

int rudp_peer_send_stats_get_sized(const rudp_peer *p, rudp_send_stats *out, size_t size)
{
	rudp_send_stats scratch;

	return host_sized_get(p, out, size, sizeof(scratch), &scratch, send_stats_fill);
}
#else
/* Built with -Dsend_policy=false: straight to the conn, and the API exists
 * and says so. */
int host_peer_send(struct rudp_peer *p, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel,
		   uint8_t priority, const struct host_send_extra *extra, uint64_t *grew)
{
	return host_conn_send(p, data, len, reliability, channel, priority, extra, grew);
}

void host_peer_flush(struct rudp_host *h, struct rudp_peer *p)
{
	rudp_conn_flush(p->conn, h->now_us);
}

void host_peer_disconnect(struct rudp_peer *p)
{
	rudp_conn_disconnect(p->conn, p->host->now_us);
}

int host_peer_policy_attach(struct rudp_peer *p)
{
	(void)p;
	return 0;
}

void host_peer_policy_closing(struct rudp_peer *p)
{
	(void)p;
}

void host_peer_policy_free(struct rudp_peer *p)
{
	(void)p;
}

int rudp_peer_set_send_options(rudp_peer *p, const rudp_send_options *o)
{
	(void)p;
	(void)o;
	return RUDP_E_UNSUPPORTED;
}

int rudp_host_set_send_options(rudp_host *h, const rudp_send_options *o)
{
	(void)h;
	(void)o;
	return RUDP_E_UNSUPPORTED;
}

int rudp_peer_send_stats_get_sized(const rudp_peer *p, rudp_send_stats *out, size_t size)
{
	(void)p;
	(void)out;
	(void)size;
	return RUDP_E_UNSUPPORTED;
}
#endif
