/* SPDX-License-Identifier: MIT */
/*
 * rudp_peer_status_get: a peer's live status from its conn's (conn_status.c)
 * and, with a send policy, what the policy still holds. O(1) and nothing
 * allocated, so a server can read it for every peer every tick.
 */
#include <string.h>

#include "host_internal.h"
#if RUDP_HAVE_SEND_POLICY
#include "policy/policy.h"
#endif

/* Fields are appended and read as a prefix (the _sized call): padding
 * would hand out uninitialised bytes and move with the compiler. */
_Static_assert(sizeof(rudp_peer_status) == 8 * sizeof(uint64_t) + 4 * sizeof(uint32_t) + 2 * sizeof(float),
	       "rudp_peer_status has padding");

static float percent(uint64_t part, uint64_t whole)
{
	return whole ? (float)((double)part * 100.0 / (double)whole) : 0.0f;
}

static void fill_status(const struct rudp_peer *p, rudp_peer_status *st)
{
	const struct rudp_host *h = p->host;
	struct rudp_conn_status cs;
	uint64_t oldest;

	rudp_conn_get_status(p->conn, h->now_us, &cs);
	st->send_rate = cs.send_bytes_per_s;
	st->receive_rate = cs.recv_bytes_per_s;
	st->bandwidth_estimate = cs.bandwidth_bytes_per_s;
	st->pending_reliable_bytes = cs.reliable_unsent_bytes;
	st->pending_unreliable_bytes = cs.unreliable_bytes;
	st->in_flight_bytes = cs.in_flight_bytes;
	st->window_us = cs.window_us;
	st->rtt_us = cs.rtt_us;
	st->rtt_var_us = cs.rtt_var_us;
	st->send_loss_percent = percent(cs.send_dgrams_lost, cs.send_dgrams);
	st->receive_loss_percent = percent(cs.recv_dgrams_missing, cs.recv_dgrams_expected);
	st->state = (int32_t)cs.state;
	st->reserved = 0;
	oldest = cs.oldest_queued_us;
#if RUDP_HAVE_SEND_POLICY
	if (p->policy) {
		struct rudp_policy_pending pp;

		rudp_policy_get_pending(p->policy, &pp);
		st->pending_reliable_bytes += pp.reliable_bytes;
		st->pending_unreliable_bytes += pp.unreliable_bytes;
		if (pp.oldest_queued_us && (oldest == 0 || pp.oldest_queued_us < oldest))
			oldest = pp.oldest_queued_us;
	}
#endif
	st->queue_time_us = oldest && h->now_us > oldest ? h->now_us - oldest : 0;
}

int rudp_peer_status_get_sized(const rudp_peer *p, rudp_peer_status *out, size_t size)
{
	rudp_peer_status tmp;
	/* A caller with the whole struct (the inline wrapper) is written in
	 * place; an older, shorter one gets a copy of its prefix. */
	rudp_peer_status *st = size >= sizeof(tmp) ? out : &tmp;
	int rc = 0;

	if (!p || !out || size == 0)
		return RUDP_E_INVALID;
	if (p->stage == PEER_ONLINE && p->conn && rudp_conn_state(p->conn) != RUDP_CONN_STATE_CLOSED) {
		fill_status(p, st);
	} else {
		memset(st, 0, sizeof(*st));
		if (p->stage == PEER_DEAD || p->conn) {
			st->state = 3;
			rc = RUDP_E_NOT_CONNECTED;
		}
	}
	if (st == &tmp)
		memcpy(out, &tmp, size);
	return rc;
}
