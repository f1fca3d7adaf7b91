/* SPDX-License-Identifier: MIT */
/*
 * Retransmission timeout from RTT samples, RFC 6298 style.
 *
 * Samples come from ACKs, one per ACK datagram: the newest datagram it
 * names, timed from that datagram's send (loss.c). Karn's rule is not
 * needed: every copy of a frame travels in a datagram with a sequence
 * number of its own, and ACKs name datagrams, so an ACK always says which
 * copy it answers. And from connected pongs. The
 * clock granularity G of the RFC is taken as 1 ms: our clock is in
 * microseconds, but the peer's ACK timing is no finer than its flush loop.
 */
#include "conn/rtt.h"

#define RTT_GRANULARITY_US 1000u
/* How long a minimum RTT sample stands before a larger one replaces it. */
#define RTT_MIN_WINDOW_US 10000000u

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
	if (v < lo)
		return lo;
	if (v > hi)
		return hi;
	return v;
}

void rtt_init(struct rtt_estimator *r, uint64_t initial_us, uint64_t min_us, uint64_t max_us)
{
	r->srtt_us = 0;
	r->rttvar_us = 0;
	r->rto_min_us = min_us;
	r->rto_max_us = max_us < min_us ? min_us : max_us;
	r->rto_us = clamp_u64(initial_us, r->rto_min_us, r->rto_max_us);
	r->min_us = 0;
	r->min_stamp_us = 0;
	r->ack_delay_us = 0;
	r->has_sample = false;
}

void rtt_on_sample(struct rtt_estimator *r, uint64_t sample_us)
{
	uint64_t var_term;

	if (!r->has_sample) {
		r->srtt_us = sample_us;
		r->rttvar_us = sample_us / 2;
		r->has_sample = true;
	} else {
		uint64_t err = r->srtt_us > sample_us ? r->srtt_us - sample_us : sample_us - r->srtt_us;

		/* beta = 1/4, alpha = 1/8 */
		r->rttvar_us = (3 * r->rttvar_us + err) / 4;
		r->srtt_us = (7 * r->srtt_us + sample_us) / 8;
	}
	var_term = 4 * r->rttvar_us;
	if (var_term < RTT_GRANULARITY_US)
		var_term = RTT_GRANULARITY_US;
	if (rtt_ack_delay_applies(r, r->ack_delay_us))
		var_term += r->ack_delay_us;
	r->rto_us = clamp_u64(r->srtt_us + var_term, r->rto_min_us, r->rto_max_us);
}

uint64_t rtt_backed_off_rto(const struct rtt_estimator *r, uint32_t backoff)
{
	uint64_t rto = r->rto_us;

	/* Doubling stops at the cap, so this cannot overflow however large backoff is. */
	while (backoff-- > 0 && rto < r->rto_max_us)
		rto *= 2;
	return rto > r->rto_max_us ? r->rto_max_us : rto;
}

void rtt_note_min(struct rtt_estimator *r, uint64_t sample_us, uint64_t now_us)
{
	if (r->min_us == 0 || sample_us <= r->min_us || now_us - r->min_stamp_us >= RTT_MIN_WINDOW_US) {
		/* 0 means "none": a sample below the clock's resolution counts as 1. */
		r->min_us = sample_us ? sample_us : 1;
		r->min_stamp_us = now_us;
	}
}
