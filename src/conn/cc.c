/* SPDX-License-Identifier: MIT */
/*
 * Congestion control: how many bytes of reliable frames may be in flight.
 *
 * Without it, a connection keeps its whole reliable window (64 frames by
 * default, up to 4096) in flight whatever the path can carry. Into a queue
 * that cannot hold that, the excess is dropped, every drop is resent, the
 * resends add to the queue, and on a host with many connections behind one
 * socket the drops come faster than recovery (a retransmission storm,
 * which the window shrinks but does not end where CPU-bound endpoints,
 * not a network queue, hold the RTT up).
 *
 * The rules are TCP's (RFC 5681), counted in wire bytes of frames:
 *
 *   - The window starts at ten datagrams (RFC 6928's initial window) and
 *     grows by what each ACK acknowledges (slow start) until the first loss.
 *   - Above ssthresh it grows by one datagram per two windows acknowledged:
 *     with the decrease below, the AIMD that takes the same share of a
 *     bottleneck as a Reno TCP flow (RFC 8312 section 4.2, alpha about 0.5
 *     for beta 0.7), with smaller steps, which is kinder to the latency of
 *     everything else on the connection than halving.
 *   - A loss (a NACK, or loss inference) sets window and ssthresh to 0.7 of
 *     the window, once per round trip: losses of datagrams sent before the
 *     reduction belong to it (NewReno's recovery point, RFC 6582). But only
 *     a loss that comes with a queue: the smoothed RTT stands clearly above
 *     the path's minimum, so the loss is that queue overflowing. Other loss
 *     is taken for random loss (a radio link) and leaves the window alone,
 *     which is TCP Veno's idea: random loss says nothing about the path's
 *     capacity, and shrinking on it would cost a game on Wi-Fi most of its
 *     throughput (test_echo_loss_with_cc). Counting loss above a share of
 *     what was sent as congestion (for queues too shallow to show in the
 *     RTT) would take random loss for it too. What does count besides the
 *     queue is a resend lost again (loss.c, declare_lost; conn.c,
 *     tell_cc_losses): a full drop-tail queue drops the resends sent into
 *     it, where random loss at p loses a resend with probability p, so a
 *     5-datagram queue (no RTT signal) is found within a round trip of
 *     overflowing.
 *   - A retransmission timeout (nothing acknowledged for an RTO: the path
 *     or the peer went quiet) is the strong signal: ssthresh to half the
 *     window, the window to its floor of two datagrams, and slow start
 *     again.
 *   - It only grows while it limits: an application sending less than the
 *     window (a game's usual traffic) must not build up a window it never
 *     tested and then burst it into the path (RFC 7661's concern).
 *
 * What is not held back: unreliable frames (they never wait behind the
 * reliable window either; the application chooses their rate), ACKs and
 * NACKs, and tail-loss probes (one frame, when the path went quiet). A
 * frame declared lost leaves the flight, so its resend counts again when it
 * goes out, and the lowest window still lets one frame go when nothing is
 * in flight, so a connection never stalls on its own window.
 *
 * On loopback and LANs the window opens within a few round trips and never
 * limits; random loss (the benchmark's 1 % and 5 % cases) does not raise
 * the RTT, so it costs nothing. It is off unless
 * rudp_config.congestion_control is RUDP_CC_AIMD (docs/tuning.md says what
 * it costs where endpoints are short of CPU).
 */
#include <string.h>

#include "conn/cc.h"
#include "wire/wire.h"

#define CC_INITIAL_DATAGRAMS 10u
#define CC_MIN_DATAGRAMS 2u
/* Queueing delay below this is not told apart from the peer's ACK timing
 * (its flush loop), our own timer granularity, and a path's ordinary
 * jitter. A quarter of the minimum RTT on longer paths: with less, a
 * relay that shares the CPUs with both ends made its jitter look like a
 * queue often enough to cost real throughput. */
#define CC_QUEUE_DELAY_MIN_US 2000u

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

void cc_init(struct congestion *cc, bool enabled, uint32_t mss, uint32_t max_cwnd)
{
	memset(cc, 0, sizeof(*cc));
	cc->enabled = enabled;
	cc->mss = mss;
	cc->min_cwnd = CC_MIN_DATAGRAMS * mss;
	cc->max_cwnd = max_u32(max_cwnd, cc->min_cwnd);
	cc->cwnd = CC_INITIAL_DATAGRAMS * mss;
	if (cc->cwnd > cc->max_cwnd)
		cc->cwnd = cc->max_cwnd;
	cc->ssthresh = UINT32_MAX;
}

/* The one rule: off, nothing in use yet, or it fits. */
static bool fits(const struct congestion *cc, uint32_t pending, uint32_t bytes)
{
	uint64_t used = (uint64_t)cc->in_flight + pending;

	return !cc->enabled || used == 0 || used + bytes <= cc->cwnd;
}

bool cc_would_send(const struct congestion *cc, uint32_t bytes)
{
	return fits(cc, 0, bytes);
}

bool cc_leaves_half_free(const struct congestion *cc, uint64_t pending, uint64_t bytes)
{
	return !cc->enabled || (uint64_t)cc->in_flight + pending + bytes <= cc->cwnd / 2;
}

bool cc_can_send(struct congestion *cc, uint32_t pending, uint32_t bytes)
{
	if (fits(cc, pending, bytes))
		return true;
	cc->window_limited = true;
	return false;
}

void cc_on_sent(struct congestion *cc, uint32_t bytes)
{
	cc->in_flight += bytes;
}

void cc_on_left(struct congestion *cc, uint32_t bytes)
{
	cc->in_flight = bytes < cc->in_flight ? cc->in_flight - bytes : 0;
}

void cc_on_acked(struct congestion *cc, uint32_t acked)
{
	if (!cc->enabled || acked == 0)
		return;
	/* Limited: the window held a frame back since the last flush began,
	 * or the flight this ACK answered filled at least half of it. */
	if (!cc->window_limited && 2 * ((uint64_t)cc->in_flight + acked) < cc->cwnd)
		return;
	if (cc->cwnd < cc->ssthresh) {
		uint64_t grown = (uint64_t)cc->cwnd + acked;

		cc->cwnd = grown > cc->ssthresh ? cc->ssthresh : (uint32_t)grown;
	} else {
		cc->avoid_acked += acked;
		while (cc->avoid_acked >= 2 * (uint64_t)cc->cwnd) {
			cc->avoid_acked -= 2 * cc->cwnd;
			cc->cwnd += cc->mss;
		}
	}
	if (cc->cwnd > cc->max_cwnd)
		cc->cwnd = cc->max_cwnd;
}

/* True when the loss of datagram lost_seq is news: sent after the last
 * reduction, so not one of the same burst of losses. */
static bool new_episode(const struct congestion *cc, uint32_t lost_seq)
{
	return !cc->recovering || rudp_u24_diff(lost_seq, cc->recovery_seq) >= 0;
}

static void start_episode(struct congestion *cc, uint32_t next_seq)
{
	cc->recovering = true;
	cc->recovery_seq = next_seq;
	cc->avoid_acked = 0;
	cc->reductions++;
}

bool cc_queue_is_building(uint64_t srtt_us, uint64_t min_rtt_us)
{
	uint64_t floor = min_rtt_us / 4;

	if (floor < CC_QUEUE_DELAY_MIN_US)
		floor = CC_QUEUE_DELAY_MIN_US;
	return min_rtt_us > 0 && srtt_us >= min_rtt_us + floor;
}

void cc_on_loss(struct congestion *cc, uint32_t lost_seq, uint32_t next_seq, bool queueing)
{
	if (!cc->enabled || !queueing || !new_episode(cc, lost_seq))
		return;
	cc->ssthresh = max_u32((uint32_t)((uint64_t)cc->cwnd * 7 / 10), cc->min_cwnd);
	cc->cwnd = cc->ssthresh;
	start_episode(cc, next_seq);
}

void cc_on_timeout(struct congestion *cc, uint32_t lost_seq, uint32_t next_seq)
{
	if (!cc->enabled)
		return;
	/* A frame timing out again (backoff) lowers nothing further: RFC 5681
	 * holds ssthresh on repeated timeouts of the same data. */
	if (new_episode(cc, lost_seq)) {
		cc->ssthresh = max_u32(cc->cwnd / 2, cc->min_cwnd);
		start_episode(cc, next_seq);
	}
	cc->cwnd = cc->min_cwnd;
	cc->avoid_acked = 0;
}
