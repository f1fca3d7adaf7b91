/* SPDX-License-Identifier: MIT */
/*
 * The congestion controller: a part of the conn (conn_internal.h) that owns
 * struct congestion and calls no other part. The conn tells it what was
 * sent, acknowledged and lost, and asks it whether a frame may go.
 */
#ifndef RUDP_CONN_CC_H
#define RUDP_CONN_CC_H

#include <stdbool.h>
#include <stdint.h>

/*
 * AIMD over the wire bytes of reliable frames in flight (sent, neither
 * acknowledged nor declared lost). Unreliable frames, ACKs and tail-loss
 * probes are not held back by it. See cc.c for the rules and their reasons.
 */
struct congestion {
	bool enabled; /* false: in_flight is still counted, nothing is held back */
	bool recovering; /* a reduction happened; see recovery_seq */
	bool window_limited; /* the window held a frame back since the last ACK */
	uint32_t recovery_seq; /* losses of datagrams older than this belong to the last reduction */
	uint32_t cwnd; /* bytes */
	uint32_t ssthresh; /* bytes; slow start below it */
	uint32_t in_flight; /* bytes */
	uint32_t mss; /* one datagram's payload: the unit of growth */
	uint32_t min_cwnd, max_cwnd;
	uint32_t avoid_acked; /* bytes acked toward the next mss of growth above ssthresh */
	uint64_t reductions; /* loss and timeout reductions (stats) */
};

void cc_init(struct congestion *cc, bool enabled, uint32_t mss, uint32_t max_cwnd);
/* May a reliable frame of `bytes` go out with `pending` bytes already put
 * in the datagram being built? Notes a refusal (window_limited). */
bool cc_can_send(struct congestion *cc, uint32_t pending, uint32_t bytes);
/* The same test without noting anything, for "is there work" checks. */
bool cc_would_send(const struct congestion *cc, uint32_t bytes);
/* Off, or `pending` + `bytes` more would leave at least half the window
 * free (rudp_conn_congestion_half_free). */
bool cc_leaves_half_free(const struct congestion *cc, uint64_t pending, uint64_t bytes);
void cc_on_sent(struct congestion *cc, uint32_t bytes);
/* A frame left flight: acknowledged, or declared lost. */
void cc_on_left(struct congestion *cc, uint32_t bytes);
/* After an ACK datagram: `acked` bytes newly acknowledged. */
void cc_on_acked(struct congestion *cc, uint32_t acked);
/* Does the smoothed RTT stand clearly above the path's minimum (by a
 * quarter of it, and at least 2 ms), as when a queue builds up on the way? */
bool cc_queue_is_building(uint64_t srtt_us, uint64_t min_rtt_us);
/* A frame last sent in datagram lost_seq was declared lost (NACK or
 * inference); next_seq is the seq the next datagram will carry; queueing
 * from cc_queue_is_building(). */
void cc_on_loss(struct congestion *cc, uint32_t lost_seq, uint32_t next_seq, bool queueing);
/* A frame's retransmission timer expired. */
void cc_on_timeout(struct congestion *cc, uint32_t lost_seq, uint32_t next_seq);

#endif
