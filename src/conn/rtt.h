/* SPDX-License-Identifier: MIT */
/*
 * The RTT estimator (RFC 6298) and the RTO it gives, with its backoff. A
 * leaf of the loss and RTT engine (loss.h), which owns one; the conn reads
 * it for stats and deadlines and feeds it the connected pongs.
 */
#ifndef RUDP_CONN_RTT_H
#define RUDP_CONN_RTT_H

#include <stdbool.h>
#include <stdint.h>

struct rtt_estimator {
	uint64_t srtt_us;
	uint64_t rttvar_us;
	uint64_t rto_us;
	uint64_t rto_min_us;
	uint64_t rto_max_us;
	/* Added to every RTO from samples: the longest the peer may hold an
	 * ACK back (its ACK thinning), as QUIC's PTO adds max_ack_delay. Our
	 * samples mostly come from ACKs sent at once, so srtt lacks it. */
	uint64_t ack_delay_us;
	/* Smallest ACK-timed sample lately: the path's RTT without the queues
	 * our own bursts build, which srtt includes. Renewed every
	 * RTT_MIN_WINDOW_US so a longer path is noticed. 0: no sample yet. */
	uint64_t min_us;
	uint64_t min_stamp_us;
	bool has_sample;
};

/* A peer thins its ACKs only on a path whose RTT is at least this many
 * ACK delays (conn_recv.c, ack_may_wait): on a shorter one a sender
 * limited by its window would stall for the delay every flight. Both
 * ends judge it by their own srtt, so the sender allows for the delay
 * (RTO, tail probe) exactly where the peer takes it. */
#define RTT_ACK_DELAY_SHARE 4u

/* An RTT this many times the minimum is a host's queue, not a path's:
 * CPU-bound endpoints serving many connections run rounds at 5 to 20
 * times a minimum an idle moment measured, while a flow's own drop-tail
 * queue holds it under 1 + buffer / RTT times (2.25-2.5 on rudp-bench's
 * paths). The rate controller's expired rule (cc_rate.c) and the tail
 * probe's wait (loss.c) judge by it. */
#define RTT_HOST_QUEUE_FACTOR 3u

static inline bool rtt_ack_delay_applies(const struct rtt_estimator *r, uint64_t ack_delay_us)
{
	return ack_delay_us > 0 && r->has_sample && r->srtt_us >= RTT_ACK_DELAY_SHARE * ack_delay_us;
}

void rtt_init(struct rtt_estimator *r, uint64_t initial_us, uint64_t min_us, uint64_t max_us);
void rtt_on_sample(struct rtt_estimator *r, uint64_t sample_us);
/* The RTO doubled `backoff` times, never above rto_max_us. */
uint64_t rtt_backed_off_rto(const struct rtt_estimator *r, uint32_t backoff);
/* Feeds the windowed minimum; only samples timed in microseconds (ACKs),
 * not the millisecond pongs. */
void rtt_note_min(struct rtt_estimator *r, uint64_t sample_us, uint64_t now_us);

#endif
