/* SPDX-License-Identifier: MIT */
/*
 * A rate-based congestion controller (in the style of BBR): from what the
 * ACKs say was delivered and how fast, it estimates the path's bottleneck
 * bandwidth and minimum RTT, and from those derives a pacing rate and a
 * window of bytes in flight. See cc_rate.c for the rules and their reasons.
 *
 * Sans-I/O: every time is a microsecond clock value passed in, nothing is
 * allocated, and the caller owns the per-datagram snapshot (struct
 * cc_rate_snapshot, 20 bytes) that it keeps with the datagram in its sent
 * history. Sizes are wire bytes (UDP payload; add the IP/UDP overhead if
 * the caller counts it elsewhere, consistently) of the datagrams the peer
 * acknowledges: every datagram carrying frames, not ACK/NACK-only ones.
 *
 * The calls, in the order a connection makes them:
 *
 *   building datagrams:  cc_rate_send_allowance() > 0: one more may go;
 *                        otherwise wait until cc_rate_next_send_us().
 *   each datagram sent:  cc_rate_on_sent(), which fills its snapshot.
 *   nothing left to send while the allowance was still > 0:
 *                        cc_rate_on_out_of_data() (nothing queued) or
 *                        cc_rate_on_app_limited() (a limit of the
 *                        sender's own, such as a full reliable window).
 *   an ACK or NACK:      cc_rate_on_acked() for each datagram it
 *                        acknowledges, cc_rate_on_lost() for each one
 *                        declared lost, then cc_rate_on_ack_end() once.
 *   datagrams given up unanswered (no ACK an RTO after their send, or
 *   sent before a frame that timed out): cc_rate_on_expired() for each,
 *                        then cc_rate_on_ack_end().
 *
 * Each datagram sent gets exactly one of cc_rate_on_acked,
 * cc_rate_on_lost and cc_rate_on_expired, whatever happens to it (a later
 * ACK of a datagram already declared lost is not reported; one dropped
 * from the history unanswered is lost): bytes in flight are counted from
 * these calls alone.
 */
#ifndef RUDP_CONN_CC_RATE_H
#define RUDP_CONN_CC_RATE_H

#include <stdbool.h>
#include <stdint.h>

/* What the controller knew when a datagram left; times and counts are the
 * low 32 bits (differences stay right while under 2^32 µs, 71 minutes, and
 * 4 GiB between a send and its ACK). */
struct cc_rate_snapshot {
	uint32_t delivered; /* bytes delivered before it was sent */
	uint32_t delivered_us; /* when that count last grew */
	uint32_t first_sent_us; /* send time of the datagram that started the interval */
	uint32_t sent_us; /* its own send time */
	uint32_t in_flight : 31; /* bytes in flight once it was sent, itself included */
	uint32_t app_limited : 1; /* sent while the application was the limit */
};

enum cc_rate_state {
	CC_RATE_STARTUP, /* doubling the rate each round until it stops growing */
	CC_RATE_DRAIN, /* emptying the queue startup built */
	CC_RATE_PROBE_BW, /* cruising at the estimate, probing above it one round in eight */
	CC_RATE_PROBE_RTT, /* a small window for a moment, to measure the RTT afresh */
};

#define CC_RATE_BW_ROUNDS 10u /* the bandwidth filter's window, in round trips */

struct cc_rate_config {
	uint32_t mss; /* largest datagram, bytes (> 0) */
	uint32_t initial_cwnd; /* bytes; 0: ten datagrams */
	/* Pacing lets this much time's worth at the pacing rate go as one
	 * burst (never less than two datagrams): a host that wakes every
	 * millisecond sends a quantum per wake-up, not one datagram. Out of
	 * data (cc_rate_on_out_of_data) a burst may fill the window.
	 * 0: 1000. */
	uint32_t quantum_us;
	uint32_t seed; /* picks where the probing cycle starts, so flows differ */
};

struct cc_rate {
	uint32_t mss;
	uint32_t quantum_us;
	uint32_t rng;
	enum cc_rate_state state;

	/* delivery accounting (the Delivery Rate Estimation draft's) */
	uint64_t delivered; /* bytes acknowledged since creation */
	uint64_t delivered_us; /* when delivered last grew */
	uint64_t first_sent_us; /* send time of the newest datagram acknowledged */
	uint64_t app_limited_until; /* 0, or the delivered count that ends app-limited samples */
	bool out_of_data; /* app-limited because nothing was queued (cc_rate_on_out_of_data) */
	uint64_t lost; /* bytes declared lost since creation */
	uint64_t expired; /* of lost: given up unanswered (cc_rate_on_expired) */
	uint32_t in_flight;

	/* The ACK being processed. Per datagram acknowledged, only what
	 * cannot wait is done: the sample's snapshot is kept as it is, and
	 * in_flight, the round's RTT minimum and the app-limited mark are
	 * brought up to date once, in cc_rate_on_ack_end. */
	bool ack_has_sample;
	bool ack_round_start;
	struct cc_rate_snapshot ack_snap; /* of its newest datagram */
	uint64_t ack_prior_delivered; /* that snapshot's delivered count, in full; 0: no sample yet */
	uint64_t ack_now_us; /* when that datagram was acknowledged */
	uint64_t ack_acked; /* bytes this ACK acknowledged (still in in_flight) */
	uint64_t ack_lost; /* bytes it declared lost */
	uint64_t ack_min_rtt_us; /* its smallest RTT sample; UINT64_MAX: none */

	/* round trips: one ends when a datagram sent after it began is acknowledged */
	uint64_t round_count;
	uint64_t next_round_delivered;
	uint64_t round_delivered_start;
	uint64_t round_start_us;
	uint64_t round_lost_start;
	uint64_t round_expired_start;
	uint64_t round_min_rtt_us; /* smallest RTT sample in this round */
	uint32_t round_rtt_acks; /* ACKs of this round with an RTT sample */
	bool round_cwnd_limited; /* a send of this round found the window (nearly) full */
	uint32_t round_lost_in_flight; /* largest in_flight snapshot among this round's losses */
	bool round_not_app_limited; /* a sample of this round was not app-limited */
	bool queue_standing; /* the last round's RTT samples all stood above the minimum */
	/* The minimum RTT before it expired: what PROBE_RTT should show again. */
	uint64_t probe_rtt_prior_min_us;
	/* Not 0: a PROBE_RTT did not bring the RTT back to this minimum, so
	 * the queue is another flow's (cc_rate.c queue_foreign). */
	uint64_t foreign_min_rtt_us;
	/* Rounds ended with the queue taken for another's, for stats and tests. */
	uint64_t foreign_queue_rounds;

	/* bandwidth: the largest sample per round, over the last CC_RATE_BW_ROUNDS rounds */
	uint64_t bw_round[CC_RATE_BW_ROUNDS];
	uint32_t bw_slot;
	uint64_t bw; /* bytes/s, max of bw_round; 0: no sample yet */
	/* From bw and min_rtt_us, worked out when either changes rather than
	 * at every ACK (cc_rate.c note_model). */
	uint64_t bdp_base; /* the BDP in bytes; the initial window before both exist */
	uint64_t bw_whole; /* bw / 10^6: bytes per µs... */
	uint64_t bw_frac; /* ...and the rest, in bytes per 10^6 µs */
	uint64_t extra_acked_max; /* the batching allowance's ceiling, bytes */

	/* minimum RTT, renewed when it expires (PROBE_RTT) */
	uint64_t min_rtt_us; /* 0: no sample yet */
	uint64_t min_rtt_stamp_us;
	uint64_t probe_rtt_done_us; /* 0: not yet timing the stay */
	uint64_t probe_rtt_round;

	/* ACK aggregation: bytes acknowledged beyond what bw explains, as a
	 * host that reads and acknowledges in batches produces */
	uint64_t agg_epoch_us;
	uint64_t agg_epoch_acked;
	uint64_t extra_acked[2];
	uint32_t extra_acked_slot;
	uint64_t extra_acked_round;

	/* startup's exit: the estimate stopped growing */
	bool full_bw_reached;
	uint64_t full_bw;
	uint32_t full_bw_rounds;

	/* probing cycle (PROBE_BW) */
	uint32_t cycle_phase;
	uint64_t cycle_stamp_us;
	uint64_t cycle_round; /* round_count when the phase began */
	bool cycle_lost; /* loss since the phase began */

	/* loss with a queue: a ceiling on bytes in flight (0: none) */
	uint64_t inflight_hi;
	uint64_t inflight_hi_step;
	uint64_t congestion_rounds; /* rounds judged congested, for stats and tests */

	uint32_t pacing_gain_pm; /* per mille */
	uint32_t cwnd_gain_pm;
	uint64_t pacing_rate; /* bytes/s */
	uint64_t cwnd; /* bytes */

	/* pacing budget, in byte-microseconds (bytes x 10^6) so that slow
	 * rates lose no fractions; negative: the last datagram overran it */
	int64_t tokens;
	uint64_t tokens_us;
	uint64_t quantum_cap; /* the budget's cap from the quantum (cc_rate.c burst_cap) */
};

/* Sets up *cc from *cfg. */
void cc_rate_init(struct cc_rate *cc, const struct cc_rate_config *cfg, uint64_t now_us);

/* Bytes that may still go now, by both the pacing budget and the window.
 * While it is > 0 one more datagram may be started, whatever its size: the
 * overrun (at most one datagram) is repaid from the next budget. Never
 * negative. */
uint64_t cc_rate_send_allowance(const struct cc_rate *cc, uint64_t now_us);

/* cc_rate_send_allowance(cc, now_us) > 0, cheaply: a connection asks
 * before every datagram and at every deadline. */
static inline bool cc_rate_can_send(const struct cc_rate *cc, uint64_t now_us)
{
	uint64_t elapsed;

	if (cc->in_flight != 0 && cc->in_flight >= cc->cwnd)
		return false;
	if (cc->tokens > 0)
		return true;
	/* The budget's cap is positive, so only the refill decides. */
	elapsed = now_us > cc->tokens_us ? now_us - cc->tokens_us : 0;
	if (elapsed > 1000000u)
		elapsed = 1000000u;
	return (int64_t)(cc->pacing_rate * elapsed) > -cc->tokens;
}

/* The window alone, for a send scheduler's room queries (the pacing
 * budget refills within a quantum, so it is no measure of room): may
 * `bytes` more go (always when nothing is in flight), and would `bytes`
 * more still leave half the window free. */
static inline bool cc_rate_window_allows(const struct cc_rate *cc, uint64_t bytes)
{
	return cc->in_flight == 0 || cc->in_flight + bytes <= cc->cwnd;
}
static inline bool cc_rate_window_half_free(const struct cc_rate *cc, uint64_t bytes)
{
	return cc->in_flight + bytes <= cc->cwnd / 2;
}

/* When the allowance is next > 0: now_us if it is now, UINT64_MAX if only
 * an ACK can open it (the window is full). */
uint64_t cc_rate_next_send_us(const struct cc_rate *cc, uint64_t now_us);

/* The pacing budget brought to now_us: cc_rate_on_sent's part for the
 * first datagram of a flush. */
void cc_rate_refill(struct cc_rate *cc, uint64_t now_us);

/* A datagram of `bytes` left at now_us; fills *snap for the sent history.
 * Once per datagram sent: inline, its rare part apart (cc_rate_refill). */
static inline void cc_rate_on_sent(struct cc_rate *cc, struct cc_rate_snapshot *snap, uint32_t bytes,
				   uint64_t now_us)
{
	uint32_t in_flight = cc->in_flight;

	if (in_flight == 0) {
		/* Nothing in flight: the send interval and the ACK interval both
		 * start now, not at the last ACK of a flight long gone. */
		cc->first_sent_us = now_us;
		cc->delivered_us = now_us;
	}
	/* The datagrams of one flush share now_us, and each one after the
	 * first finds the budget below its cap (the one before spent from
	 * it): refilling would leave it as it is. */
	if (now_us != cc->tokens_us || cc->tokens >= (int64_t)cc->quantum_cap)
		cc_rate_refill(cc, now_us);
	cc->tokens -= (int64_t)bytes * 1000000;
	in_flight += bytes;
	cc->in_flight = in_flight;
	if ((uint64_t)in_flight + cc->mss > cc->cwnd)
		cc->round_cwnd_limited = true;
	/* Whole, so the two bit-fields go in one store with the rest. */
	*snap = (struct cc_rate_snapshot){
		.delivered = (uint32_t)cc->delivered,
		.delivered_us = (uint32_t)cc->delivered_us,
		.first_sent_us = (uint32_t)cc->first_sent_us,
		.sent_us = (uint32_t)now_us,
		.in_flight = in_flight & 0x7fffffffu,
		.app_limited = cc->app_limited_until != 0,
	};
}

/* The sender had nothing more to send while the allowance was still
 * open: rate samples until what is in flight now is delivered say nothing
 * about the path's capacity, and may not lower the estimate. */
void cc_rate_on_app_limited(struct cc_rate *cc);
/* The same, when the sender had nothing queued at all (not merely a
 * limit of its own, such as a full reliable window): until what is in
 * flight is delivered, the pacing budget may also fill up to the window,
 * so the next batch of a sender that waits for replies goes at once. */
void cc_rate_on_out_of_data(struct cc_rate *cc);

/* One datagram, sent with *snap, was acknowledged (first time only, and
 * not after cc_rate_on_lost for it). Its bytes leave in_flight at the
 * cc_rate_on_ack_end that follows, with the rest of the ACK's. */
void cc_rate_on_acked(struct cc_rate *cc, const struct cc_rate_snapshot *snap, uint32_t bytes,
		      uint64_t now_us);

/* One datagram, sent with *snap, was declared lost (NACKed, or inferred
 * from later ACKs) or forgotten unacknowledged (its record reused): it
 * leaves the flight. */
void cc_rate_on_lost(struct cc_rate *cc, const struct cc_rate_snapshot *snap, uint32_t bytes);
/* A datagram given up unanswered: it leaves the flight and counts as lost,
 * but as congestion only in a round that kept a queue standing, and not
 * when that round's RTT stood at three times the minimum or more.
 * Unanswered is often late: on a steady path the RTO is the smoothed RTT
 * plus a millisecond or so, and a host or link late by that much makes a
 * whole flight expire with nothing dropped (a drop shows as a gap in later
 * ACKs instead, and goes to cc_rate_on_lost). Behind a queue that this
 * flow's sending builds, lateness is the queue growing, a signal; a
 * CPU-bound host serving many connections keeps a queue of its own, many
 * times the minimum RTT and jumping past the RTO, which says nothing of
 * this flow's rate. */
void cc_rate_on_expired(struct cc_rate *cc, const struct cc_rate_snapshot *snap, uint32_t bytes);

/* After the cc_rate_on_acked / _on_lost calls of one ACK or NACK: takes
 * the rate sample, advances the model and recomputes rate and window.
 * Harmless when nothing was acknowledged or lost. */
void cc_rate_on_ack_end(struct cc_rate *cc, uint64_t now_us);

/* ---- stats ---- */

/* Bottleneck bandwidth estimate, bytes/s; 0 before the first sample. */
static inline uint64_t cc_rate_bandwidth(const struct cc_rate *cc)
{
	return cc->bw;
}
/* Minimum RTT, µs; 0 before the first sample. */
static inline uint64_t cc_rate_min_rtt_us(const struct cc_rate *cc)
{
	return cc->min_rtt_us;
}
/* Bytes/s. */
static inline uint64_t cc_rate_pacing_rate(const struct cc_rate *cc)
{
	return cc->pacing_rate;
}
/* Bytes. */
static inline uint64_t cc_rate_cwnd(const struct cc_rate *cc)
{
	return cc->cwnd;
}
/* Bytes. */
static inline uint32_t cc_rate_in_flight(const struct cc_rate *cc)
{
	return cc->in_flight;
}
static inline enum cc_rate_state cc_rate_state(const struct cc_rate *cc)
{
	return cc->state;
}

#endif
