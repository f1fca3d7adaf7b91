/* SPDX-License-Identifier: MIT */
/*
 * The conn's live status: recent rates and loss from two 1 s buckets of
 * counter marks, and the queue and RTT gauges, for a status call cheap
 * enough to make every tick (O(1), nothing allocated, nothing walked).
 *
 * Each bucket keeps the running counters as they were at its start; the
 * recent figures are the counters now minus those at the start of the
 * previous bucket. Buckets roll on the conn's clock (conn_status_roll, on
 * every datagram in and every flush); a reader that finds a roll due
 * reads as if it had happened, so a status taken between two rolls never
 * covers less than the last second.
 */
#include <string.h>

#include "conn/conn_internal.h"

static void status_mark_now(const struct rudp_conn *c, uint64_t now_us, struct conn_status_mark *m)
{
	m->at_us = now_us;
	m->bytes_sent = c->stats.bytes_sent;
	m->bytes_received = c->stats.bytes_received;
	m->dgrams_reliable = c->loss.dgrams_reliable;
	m->dgrams_lost = c->loss.dgrams_lost;
	m->dgrams_expected = c->acktr.dgrams_expected;
	m->dgrams_missing = c->acktr.dgrams_missing;
}

void conn_status_roll_slow(struct rudp_conn *c, uint64_t now_us)
{
	/* After an idle spell the previous bucket is the old current one,
	 * however long ago it started: window_us says how long that is. */
	c->marks[0] = c->marks[1];
	status_mark_now(c, now_us, &c->marks[1]);
}

static uint64_t per_second(uint64_t amount, uint64_t window_us)
{
	if (window_us == 0)
		return 0;
	/* amount * 1e6 would overflow past 18 TB; no window sees that much. */
	return amount * 1000000u / window_us;
}

static uint64_t delta(uint64_t now, uint64_t then)
{
	/* A counter taken back (a late datagram) may dip below its mark. */
	return now > then ? now - then : 0;
}

static uint32_t sat_u32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void rudp_conn_get_status(const struct rudp_conn *c, uint64_t now_us, struct rudp_conn_status *out)
{
	const struct conn_status_mark *base = &c->marks[0];
	uint64_t oldest = 0;

	if (now_us < c->now_us)
		now_us = c->now_us;
	if (now_us - c->marks[1].at_us >= CONN_STATUS_BUCKET_US)
		base = &c->marks[1]; /* a roll is due: read as if it happened */
	out->window_us = now_us - base->at_us;
	out->send_bytes_per_s = per_second(c->stats.bytes_sent - base->bytes_sent, out->window_us);
	out->recv_bytes_per_s = per_second(c->stats.bytes_received - base->bytes_received, out->window_us);
	out->send_dgrams = delta(c->loss.dgrams_reliable, base->dgrams_reliable);
	out->send_dgrams_lost = delta(c->loss.dgrams_lost, base->dgrams_lost);
	out->recv_dgrams_expected = delta(c->acktr.dgrams_expected, base->dgrams_expected);
	out->recv_dgrams_missing = delta(c->acktr.dgrams_missing, base->dgrams_missing);
	if (out->send_dgrams_lost > out->send_dgrams)
		out->send_dgrams_lost = out->send_dgrams;
	if (out->recv_dgrams_missing > out->recv_dgrams_expected)
		out->recv_dgrams_missing = out->recv_dgrams_expected;
	out->bandwidth_bytes_per_s = c->rate_on ? cc_rate_bandwidth(&c->rate) : 0;
	out->reliable_unsent_bytes = c->rel_unsent_wire;
	out->unreliable_bytes = c->unrel.wire_bytes;
	out->in_flight_bytes = c->cc.in_flight;
	/* A queued frame's first_send_us holds when it was queued
	 * (conn_queue_message) until it is sent. */
	if (c->rel_sent < c->rel.frames_count)
		oldest = sendq_at(&c->rel, c->rel_sent)->first_send_us;
	if (c->unrel.frames_count > 0) {
		uint64_t u = sendq_at(&c->unrel, 0)->first_send_us;

		if (oldest == 0 || u < oldest)
			oldest = u;
	}
	out->oldest_queued_us = oldest;
	out->rtt_us = sat_u32(c->loss.rtt.srtt_us);
	out->rtt_var_us = sat_u32(c->loss.rtt.rttvar_us);
	out->state = c->state;
}

uint64_t rudp_conn_memory_bytes(const struct rudp_conn *c)
{
	return sendq_memory_bytes(&c->rel) + sendq_memory_bytes(&c->unrel) + c->reasm.reserved_bytes +
	       recv_held_bytes(&c->rx);
}
