/* SPDX-License-Identifier: MIT */
/*
 * Rate-based congestion control: estimate the bottleneck, pace at it.
 *
 * A window controller (cc.c) reads congestion from loss and the RTT; on a
 * host whose CPUs are the bottleneck (loopback, many connections) the RTT
 * rises with no network queue at all, and a game on Wi-Fi loses datagrams
 * with no congestion at all. This one instead models the path from what
 * the ACKs say was delivered, as BBR does:
 *
 *   - Every datagram carries a snapshot of the delivery count when it
 *     left; its ACK gives a delivery-rate sample (bytes delivered between
 *     the two, over the longer of the send and the ACK intervals, so that
 *     neither a burst of sends nor a burst of ACKs inflates it). Samples
 *     over an interval shorter than the minimum RTT are dropped: only ACK
 *     compression makes those.
 *   - The bandwidth estimate is the largest sample of the last ten round
 *     trips (a queue can delay deliveries, never speed them up, so the
 *     maximum is the honest figure). Samples taken while the application
 *     had nothing to send (it says so: cc_rate_on_app_limited) only count
 *     when they raise it, and rounds made of them do not age the filter:
 *     a game sending little, or an echo waiting for its replies, keeps
 *     the estimate it had instead of teaching itself its own low rate.
 *   - The minimum RTT is the smallest sample of the last five seconds;
 *     when it is that old, PROBE_RTT holds the flight at half an
 *     estimated bandwidth-delay product (BDP) for 200 ms and a round, so
 *     that the queue drains and the true minimum shows again. Five, not
 *     BBRv1's ten: a flow that starts behind a standing queue takes the
 *     queue for path until then, and so holds it up: several flows
 *     sharing a bottleneck keep each other's queue standing longer. Not
 *     while the sender has nothing queued and the round's samples were
 *     all app-limited (an echo, a game): its flight is what the
 *     application gives, the queue it sees is another flow's, and
 *     holding the flight down would only hold back its data; the
 *     minimum it has stays another five seconds.
 *   - The pacing rate is the bandwidth times a gain: 2/ln 2 in STARTUP
 *     (the rate doubles each round), its inverse in DRAIN (until the
 *     flight is down to one BDP), then in PROBE_BW a cycle of eight
 *     phases, 1.25 (probe for more), 0.75 (drain what the probe queued),
 *     six times 1, each lasting a minimum RTT and at least one round (a
 *     receiver that acknowledges once a millisecond makes rounds longer
 *     than the minimum RTT, and a probe shorter than a round shows in no
 *     sample). STARTUP ends when three rounds in a row did not raise the
 *     estimate by a quarter, on congestion, or in a round that leaves a
 *     standing queue (below), as soon as its first eight ACKs show it:
 *     the rate has outgrown the path, and each further round of doubling
 *     would add a round trip's worth of queue.
 *   - A round whose RTT samples all stood above the minimum (by an
 *     eighth of it, at least 1 ms) left a standing queue. The estimate
 *     can read high: where traffic flows both ways, ACKs wait in the
 *     return path's queue behind the peer's data and arrive bunched
 *     when it shrinks, so a sample reads up to a tenth above what the
 *     bottleneck delivers, and the maximum keeps it ten rounds. Until
 *     the queue is gone, cruising paces at 0.95 instead of 0.99 and the
 *     window shrinks to 0.9 BDP plus the batching allowance: a flight
 *     that fills the path even with such an estimate, and for flows
 *     sharing a queue a cut in proportion to each one's share, so they
 *     drain it together. Not where the ACKs' batching exceeds a BDP (a
 *     host or LAN whose receiver acknowledges in batches): there the RTT
 *     above the minimum is that batching, which the window must cover.
 *   - Those rules drain this flow's own queue, and only give way to one
 *     another flow keeps full whatever the others do (a loss-based one):
 *     when a PROBE_RTT, which librudp flows sharing a queue make
 *     together, ends without the RTT back at the minimum it was to
 *     renew, the queue is taken for another's and the rules stop until
 *     a round shows that minimum again (queue_foreign).
 *   - The window is twice the BDP plus what the ACKs show arrives in
 *     batches beyond the estimated rate (the largest such excess of the
 *     last ten rounds). A receiver that reads and acknowledges in batches
 *     (a busy host, or loopback where the minimum RTT is tens of
 *     microseconds and the loaded one milliseconds because both ends are
 *     CPU-bound) would otherwise hold the sender to two tiny BDPs and
 *     starve itself. The RTT's rise alone is never a congestion signal.
 *
 * Loss: random loss does not touch the rate, which comes from the
 * bandwidth filter alone, and loss lowers no sample. Loss counts only in
 * a congested round: a round with loss whose smallest RTT sample stood
 * clearly above the minimum (a standing queue: a queue that drained once
 * in the round shows the minimum again; random loss with no queue does
 * not raise it), or whose loss exceeded both 2 % and two datagrams (a buffer
 * too shallow for the RTT to show it); in a round in which every sample
 * was app-limited only the latter counts. Datagrams merely unanswered an
 * RTO after they left count only in a round that kept a queue standing,
 * and not when its RTT stood at three times the minimum or more
 * (cc_rate_on_expired). A congested round
 *
 *   - caps the flight (inflight_hi) at 0.85 of what was in flight when
 *     the lost datagram left, never below one BDP plus the batching
 *     allowance, which the rate needs; while probing, each uncongested
 *     round the cap held the flight raises it by a step that doubles each
 *     time (1, 2, 4 ... datagrams);
 *   - brings the bandwidth estimate down to what the round delivered, by
 *     at most 15 %: flows sharing a queue each believe in a little more
 *     than their share (the estimate is a maximum), which keeps the queue
 *     standing; without it the simulator's eight flows shared a link with
 *     a fairness index of 0.83-0.96 instead of 0.94-0.98.
 *
 * Pacing is a byte budget the caller asks for, not a timer per datagram:
 * it fills at the pacing rate up to a quantum (1 ms at the rate, at least
 * two datagrams) and each datagram sent spends it, so a host that wakes
 * every millisecond sends a quantum in one batch. While the application
 * is the limit the budget may fill up to the window (burst_cap).
 */
#include <string.h>

#include "conn/cc_rate.h"
#include "conn/rtt.h"

#define PM 1000u /* gains are per mille */
#define STARTUP_GAIN_PM 2885u /* 2/ln 2: doubles the delivery rate each round */
#define DRAIN_GAIN_PM 347u /* its inverse */
#define PROBE_BW_CWND_GAIN_PM 2000u
#define CYCLE_PHASES 8u
#define FULL_BW_GROWTH_PM 1250u
#define FULL_BW_ROUNDS 3u
#define MIN_RTT_WINDOW_US 5000000u
#define PROBE_RTT_US 200000u
#define MIN_CWND_DATAGRAMS 4u
#define INITIAL_CWND_DATAGRAMS 10u
#define DEFAULT_QUANTUM_US 1000u
/* Before the first RTT sample the initial window paces over this. */
#define NO_RTT_US 1000u
/* Pacing a hair under the estimate drains what the estimate's own error queues. */
#define PACING_MARGIN_PM 990u
/* Cruising after a round whose every RTT sample stood above the minimum:
 * a queue the 0.75 phase did not empty (flows sharing the bottleneck each
 * believe in a little more than their share) stands for every other
 * packet on the link; pacing this far under the estimate drains it within
 * a few rounds while the estimate, a maximum, keeps the rate to come back to. */
#define STANDING_QUEUE_PACING_PM 950u
/* Round loss above this is congestion even without a queue in the RTT. */
#define LOSS_THRESH_PM 20u
/* ...if it is more than a datagram or two: in a round of twenty
 * datagrams one loss is 5 %, and 1 % random loss gives that often. */
#define LOSS_THRESH_MIN_DATAGRAMS 3u
/* A round's smallest RTT this far above the minimum (or this share of it,
 * if more) is a standing queue; below, the peer's ACK timing and the
 * path's jitter. */
#define QUEUE_DELAY_MIN_US 1000u
#define QUEUE_DELAY_SHARE 8u
/* Startup judges the queue within a round once this many ACKs gave an RTT
 * sample: a few, so that the ACK timing of one datagram decides nothing. */
#define STARTUP_QUEUE_ACKS 8u
/* The window's cap while a queue stands, per mille of the BDP (plus the
 * batching allowance). */
#define STANDING_QUEUE_BDP_PM 900u
/* A congested round caps the flight at this share of what was in flight
 * when its loss left, and takes at most this share off the bandwidth.
 * BBRv2's 0.7 cost the simulator's eight flows their fairness (an index
 * down to 0.85). */
#define INFLIGHT_HI_BETA_PM 850u
/* The batching allowance forgets in two halves of this many rounds, and
 * never exceeds this long at the estimated rate. */
#define EXTRA_ACKED_ROUNDS 5u
#define EXTRA_ACKED_MAX_US 100000u
#define US_PER_S 1000000u

static const uint32_t cycle_gain_pm[CYCLE_PHASES] = {1250, 750, 1000, 1000, 1000, 1000, 1000, 1000};

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* What the bandwidth estimate delivers in us µs, without overflow for any
 * elapsed time. */
static uint64_t bw_bytes_in(const struct cc_rate *cc, uint64_t us)
{
	return cc->bw_whole * us + cc->bw_frac * us / US_PER_S;
}

static uint32_t next_random(struct cc_rate *cc)
{
	cc->rng = cc->rng * 1664525u + 1013904223u;
	return cc->rng >> 16;
}

/* The full delivered count a snapshot's low 32 bits stand for. */
static uint64_t unwrap_delivered(const struct cc_rate *cc, uint32_t low)
{
	return cc->delivered - (uint32_t)((uint32_t)cc->delivered - low);
}

static uint64_t initial_cwnd(const struct cc_rate *cc)
{
	return (uint64_t)INITIAL_CWND_DATAGRAMS * cc->mss;
}

/* After any change to bw or min_rtt_us: what follows from them. */
static void note_model(struct cc_rate *cc)
{
	if (cc->bw == 0 || cc->min_rtt_us == 0)
		cc->bdp_base = initial_cwnd(cc);
	else
		cc->bdp_base = cc->bw * cc->min_rtt_us / US_PER_S;
	cc->bw_whole = cc->bw / US_PER_S;
	cc->bw_frac = cc->bw % US_PER_S;
	cc->extra_acked_max = cc->bw * EXTRA_ACKED_MAX_US / US_PER_S;
}

/* The estimated bandwidth-delay product times gain_pm / 1000; before both
 * estimates exist, the initial window. */
static uint64_t bdp(const struct cc_rate *cc, uint32_t gain_pm)
{
	return cc->bdp_base * gain_pm / PM;
}

static uint64_t extra_acked(const struct cc_rate *cc)
{
	return max_u64(cc->extra_acked[0], cc->extra_acked[1]);
}

static uint64_t min_cwnd(const struct cc_rate *cc)
{
	return (uint64_t)MIN_CWND_DATAGRAMS * cc->mss;
}

static void set_pacing_rate(struct cc_rate *cc, uint64_t rate);

void cc_rate_init(struct cc_rate *cc, const struct cc_rate_config *cfg, uint64_t now_us)
{
	memset(cc, 0, sizeof(*cc));
	cc->mss = cfg->mss ? cfg->mss : 1;
	cc->quantum_us = cfg->quantum_us ? cfg->quantum_us : DEFAULT_QUANTUM_US;
	cc->rng = cfg->seed ^ 0x5bd1e995u;
	cc->state = CC_RATE_STARTUP;
	cc->pacing_gain_pm = STARTUP_GAIN_PM;
	cc->cwnd_gain_pm = STARTUP_GAIN_PM;
	cc->cwnd = cfg->initial_cwnd ? cfg->initial_cwnd : initial_cwnd(cc);
	set_pacing_rate(cc, cc->cwnd * US_PER_S / NO_RTT_US * STARTUP_GAIN_PM / PM);
	cc->delivered_us = now_us;
	cc->first_sent_us = now_us;
	cc->round_min_rtt_us = UINT64_MAX;
	cc->ack_min_rtt_us = UINT64_MAX;
	cc->tokens_us = now_us;
	cc->tokens = INT64_MAX; /* clipped to one quantum on first use */
	note_model(cc);
}

/* ---- pacing budget ---- */

/* The most the budget holds. While the application is the limit (it sent
 * all it had, cc_rate_on_out_of_data, and what it sends next is its answer to what comes back, as
 * an echo's or a request's), the window: such a sender waits for its
 * replies anyway, and trickling its next batch out at the rate instead
 * made a host's busy connections send one datagram per wake-up (twice the
 * CPU per message over loopback, with 1,024 connections of 16 messages
 * each). A bulk sender, never app-limited, keeps the quantum: its bursts
 * into a queue shared with other flows were what overflowed it. */
static int64_t burst_cap(const struct cc_rate *cc)
{
	uint64_t cap = cc->quantum_cap;

	if (cc->app_limited_until && cc->out_of_data)
		cap = max_u64(cap, cc->cwnd * US_PER_S);
	return (int64_t)cap;
}

/* The pacing rate, and the quantum's share of burst_cap that follows from
 * it (worked out here, not at every send: the rate rarely changes). */
static void set_pacing_rate(struct cc_rate *cc, uint64_t rate)
{
	cc->pacing_rate = rate;
	cc->quantum_cap = max_u64(rate * cc->quantum_us, 2ull * cc->mss * US_PER_S);
}

/* The budget at now_us, in byte-µs. */
static int64_t tokens_at(const struct cc_rate *cc, uint64_t now_us)
{
	int64_t cap = burst_cap(cc), t = cc->tokens;
	uint64_t elapsed = now_us > cc->tokens_us ? now_us - cc->tokens_us : 0;

	if (t >= cap)
		return cap;
	/* A second's refill more than fills any quantum; the bound keeps the product small. */
	if (elapsed > US_PER_S)
		elapsed = US_PER_S;
	t += (int64_t)(cc->pacing_rate * elapsed);
	return t > cap ? cap : t;
}

static uint64_t cwnd_room(const struct cc_rate *cc)
{
	if (cc->in_flight == 0)
		return max_u64(cc->cwnd, 1);
	return cc->cwnd > cc->in_flight ? cc->cwnd - cc->in_flight : 0;
}

uint64_t cc_rate_send_allowance(const struct cc_rate *cc, uint64_t now_us)
{
	int64_t t = tokens_at(cc, now_us);
	uint64_t paced;

	if (t <= 0)
		return 0;
	/* Round up: a fraction of a byte still lets a datagram start. */
	paced = ((uint64_t)t + US_PER_S - 1) / US_PER_S;
	return min_u64(paced, cwnd_room(cc));
}

uint64_t cc_rate_next_send_us(const struct cc_rate *cc, uint64_t now_us)
{
	int64_t t = tokens_at(cc, now_us);

	if (cwnd_room(cc) == 0)
		return UINT64_MAX;
	if (t > 0)
		return now_us;
	if (cc->pacing_rate == 0)
		return UINT64_MAX;
	return now_us + ((uint64_t)-t + cc->pacing_rate) / cc->pacing_rate;
}

/* ---- send and ACK bookkeeping ---- */

void cc_rate_refill(struct cc_rate *cc, uint64_t now_us)
{
	cc->tokens = tokens_at(cc, now_us);
	cc->tokens_us = now_us;
}

void cc_rate_on_app_limited(struct cc_rate *cc)
{
	uint64_t until = cc->delivered + cc->in_flight;

	cc->app_limited_until = until ? until : 1;
	cc->out_of_data = false;
}

void cc_rate_on_out_of_data(struct cc_rate *cc)
{
	cc_rate_on_app_limited(cc);
	cc->out_of_data = true;
}

static void leave_flight(struct cc_rate *cc, uint32_t bytes)
{
	cc->in_flight = bytes < cc->in_flight ? cc->in_flight - bytes : 0;
}

/* Called once per datagram an ACK covers, so it keeps to what must be
 * done per datagram (the delivered count, which dates a round's end, and
 * the choice of the sample); the rest waits for cc_rate_on_ack_end. */
void cc_rate_on_acked(struct cc_rate *cc, const struct cc_rate_snapshot *snap, uint32_t bytes,
		      uint64_t now_us)
{
	uint64_t prior = unwrap_delivered(cc, snap->delivered);
	uint64_t rtt = (uint32_t)((uint32_t)now_us - snap->sent_us);

	cc->delivered += bytes;
	cc->delivered_us = now_us;
	cc->ack_acked += bytes;
	if (rtt < cc->ack_min_rtt_us)
		cc->ack_min_rtt_us = rtt;
	if (prior >= cc->next_round_delivered) {
		cc->ack_round_start = true;
		cc->next_round_delivered = cc->delivered;
	}
	/* The sample comes from the newest datagram this ACK covers (the
	 * first one always: ack_prior_delivered is 0 then). */
	if (prior >= cc->ack_prior_delivered) {
		cc->ack_has_sample = true;
		cc->ack_prior_delivered = prior;
		cc->ack_snap = *snap;
		cc->ack_now_us = now_us;
	}
}

static void count_lost(struct cc_rate *cc, const struct cc_rate_snapshot *snap, uint32_t bytes)
{
	leave_flight(cc, bytes);
	cc->lost += bytes;
	cc->ack_lost += bytes;
	if (snap->in_flight > cc->round_lost_in_flight)
		cc->round_lost_in_flight = snap->in_flight;
}

void cc_rate_on_lost(struct cc_rate *cc, const struct cc_rate_snapshot *snap, uint32_t bytes)
{
	count_lost(cc, snap, bytes);
	cc->cycle_lost = true;
}

void cc_rate_on_expired(struct cc_rate *cc, const struct cc_rate_snapshot *snap, uint32_t bytes)
{
	count_lost(cc, snap, bytes);
	cc->expired += bytes;
}

/* ---- the model ---- */

static void bw_filter_refresh(struct cc_rate *cc)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < CC_RATE_BW_ROUNDS; i++)
		m = max_u64(m, cc->bw_round[i]);
	if (m != cc->bw) {
		cc->bw = m;
		note_model(cc);
	}
}

static void enter_probe_bw(struct cc_rate *cc, uint64_t now_us)
{
	cc->state = CC_RATE_PROBE_BW;
	/* Start cruising at a random phase, so flows do not probe in step. */
	cc->cycle_phase = 2 + next_random(cc) % (CYCLE_PHASES - 2);
	cc->cycle_stamp_us = now_us;
	cc->cycle_round = cc->round_count;
	cc->cycle_lost = false;
}

/* An RTT this far above the minimum min_rtt_us is a queue. */
static uint64_t above_queue_floor(uint64_t min_rtt_us)
{
	return min_rtt_us + max_u64(min_rtt_us / QUEUE_DELAY_SHARE, QUEUE_DELAY_MIN_US);
}

/* Every RTT sample of the round stood clearly above the minimum: a queue
 * that did not drain once in a round trip. */
static bool round_queue_standing(const struct cc_rate *cc)
{
	if (cc->min_rtt_us == 0 || cc->round_min_rtt_us == UINT64_MAX)
		return false;
	return cc->round_min_rtt_us > above_queue_floor(cc->min_rtt_us);
}

/* The standing-queue rules (cruising at 0.95, the window at 0.9 BDP) are
 * there to empty this flow's own queue. Flows that all follow them need
 * not empty a shared queue (each one's estimate is a maximum), but their
 * PROBE_RTTs, which fall together, do. A queue that even PROBE_RTT left
 * standing is another flow's, one that does not answer (a loss-based one
 * keeps the buffer full whatever others do): giving way to it only hands
 * it the link, and the estimate, a maximum of what the capped flight
 * delivers, spirals down. So the rules stop until the old minimum shows
 * again; congested rounds still count as ever. */
static bool queue_foreign(const struct cc_rate *cc)
{
	return cc->foreign_min_rtt_us != 0;
}

/* PROBE_RTT ends: did the minimum it was to renew show again? Each one
 * judges afresh, against the minimum the last five seconds had: a path
 * whose RTT grew for good shows its new minimum at the next one. */
static void judge_probe_rtt(struct cc_rate *cc)
{
	uint64_t prior = cc->probe_rtt_prior_min_us;

	cc->foreign_min_rtt_us = prior && cc->min_rtt_us > above_queue_floor(prior) ? prior : 0;
}

/* Startup, within the round: its first STARTUP_QUEUE_ACKS ACKs all stood
 * above the minimum as round_queue_standing means it. Judged only at the
 * round's end, a round of doubling runs its course first and can fill a
 * shallow buffer before startup ends. A round whose sends found the
 * window full counts like one that was not app-limited (its samples
 * often are, marked by the connection's first idle flush), but a sender
 * of little learns nothing of a queue from its own samples. */
static bool startup_queue_rising(const struct cc_rate *cc)
{
	return cc->round_rtt_acks >= STARTUP_QUEUE_ACKS &&
	       (cc->round_not_app_limited || cc->round_cwnd_limited) && round_queue_standing(cc);
}

static bool round_congested(const struct cc_rate *cc, uint64_t round_delivered, uint64_t round_lost)
{
	if (round_lost == 0)
		return false;
	if (round_lost >= LOSS_THRESH_MIN_DATAGRAMS * (uint64_t)cc->mss &&
	    round_lost * PM > (round_delivered + round_lost) * LOSS_THRESH_PM)
		return true;
	/* In a round the application limited, the RTT says nothing of a
	 * queue of ours: one message at a time samples it once or twice, and
	 * any loss with one raised sample would cap the flight and end
	 * startup at the application's own rate, which only the probing
	 * cycle's 25 % steps then climb back from. Heavy loss still counts. */
	return cc->queue_standing && cc->round_not_app_limited;
}

/* The least in flight the estimated rate needs: one BDP (times bdp_pm /
 * 1000), the batching allowance, and two datagrams for the rounding of
 * both. */
static uint64_t inflight_floor(const struct cc_rate *cc, uint32_t bdp_pm)
{
	return bdp(cc, bdp_pm) + extra_acked(cc) + 2ull * cc->mss;
}

/* A congested round: the flows through the queue together believe in
 * more than it serves (each estimate is a maximum), so the estimate comes
 * down to what the round delivered, by at most 15 %. Probing raises it
 * again where there is room. */
static void lower_bw(struct cc_rate *cc, uint64_t now_us)
{
	uint64_t elapsed = now_us - cc->round_start_us;
	uint64_t got = cc->delivered - cc->round_delivered_start;
	uint64_t floor = cc->bw * INFLIGHT_HI_BETA_PM / PM, target = floor;

	if (elapsed > 0)
		target = max_u64(floor, got * US_PER_S / elapsed);
	for (uint32_t i = 0; i < CC_RATE_BW_ROUNDS; i++)
		cc->bw_round[i] = min_u64(cc->bw_round[i], target);
	bw_filter_refresh(cc);
}

/* A round ended: judge it, age the filters, check startup's exit. */
static void on_round_end(struct cc_rate *cc, bool sample_app_limited, uint64_t now_us)
{
	uint64_t rd = cc->delivered - cc->round_delivered_start;
	uint64_t rl = cc->lost - cc->round_lost_start;
	uint64_t re = cc->expired - cc->round_expired_start;

	cc->round_count++;
	cc->queue_standing = round_queue_standing(cc);
	if (queue_foreign(cc)) {
		if (cc->round_min_rtt_us <= above_queue_floor(cc->foreign_min_rtt_us))
			cc->foreign_min_rtt_us = 0;
		else
			cc->foreign_queue_rounds++;
	}
	/* Given up unanswered: congestion only behind a standing queue that
	 * could be of this flow's making (see cc_rate_on_expired). No queue of
	 * its making holds a round's smallest RTT at RTT_HOST_QUEUE_FACTOR
	 * times the minimum (its window is two BDPs plus the batching
	 * allowance, and a drop-tail buffer that overflows first drops, which
	 * counts anyway): such a queue is a host's or another flow's, and a
	 * datagram outrunning the RTO in it says nothing of this flow's rate. */
	if (!cc->queue_standing || cc->round_min_rtt_us / RTT_HOST_QUEUE_FACTOR >= cc->min_rtt_us)
		rl -= re;
	if (round_congested(cc, rd, rl)) {
		uint64_t hi = (uint64_t)cc->round_lost_in_flight * INFLIGHT_HI_BETA_PM / PM;

		cc->inflight_hi = max_u64(hi, inflight_floor(cc, PM));
		cc->inflight_hi_step = cc->mss;
		lower_bw(cc, now_us);
		cc->congestion_rounds++;
		if (cc->state == CC_RATE_STARTUP)
			cc->full_bw_reached = true;
	} else if (cc->state == CC_RATE_STARTUP && cc->queue_standing && cc->round_not_app_limited) {
		cc->full_bw_reached = true;
	} else if (cc->inflight_hi && cc->round_cwnd_limited && cc->state == CC_RATE_PROBE_BW &&
		   cycle_gain_pm[cc->cycle_phase] > PM) {
		/* Probing, held by the cap, and no congestion: the cap was low. */
		cc->inflight_hi += cc->inflight_hi_step;
		cc->inflight_hi_step *= 2;
	}

	if (cc->round_not_app_limited) {
		cc->bw_slot = (cc->bw_slot + 1) % CC_RATE_BW_ROUNDS;
		cc->bw_round[cc->bw_slot] = 0;
		bw_filter_refresh(cc);
	}
	if (cc->round_count - cc->extra_acked_round >= EXTRA_ACKED_ROUNDS) {
		cc->extra_acked_slot ^= 1;
		cc->extra_acked[cc->extra_acked_slot] = 0;
		cc->extra_acked_round = cc->round_count;
	}

	if (!cc->full_bw_reached && !sample_app_limited && cc->bw) {
		if (cc->bw * PM >= cc->full_bw * FULL_BW_GROWTH_PM) {
			cc->full_bw = cc->bw;
			cc->full_bw_rounds = 0;
		} else if (++cc->full_bw_rounds >= FULL_BW_ROUNDS) {
			cc->full_bw_reached = true;
		}
	}

	cc->round_delivered_start = cc->delivered;
	cc->round_start_us = now_us;
	cc->round_lost_start = cc->lost;
	cc->round_expired_start = cc->expired;
	cc->round_min_rtt_us = UINT64_MAX;
	cc->round_rtt_acks = 0;
	cc->round_cwnd_limited = false;
	cc->round_lost_in_flight = 0;
	cc->round_not_app_limited = false;
}

static void update_ack_aggregation(struct cc_rate *cc, uint64_t now_us)
{
	uint64_t expected, extra;

	if (cc->bw == 0 || cc->ack_acked == 0)
		return;
	expected = bw_bytes_in(cc, now_us - cc->agg_epoch_us);
	/* Deliveries caught up with the rate: a new epoch starts here. */
	if (cc->agg_epoch_acked <= expected) {
		cc->agg_epoch_us = now_us;
		cc->agg_epoch_acked = 0;
		expected = 0;
	}
	cc->agg_epoch_acked += cc->ack_acked;
	extra = cc->agg_epoch_acked - min_u64(expected, cc->agg_epoch_acked);
	extra = min_u64(extra, cc->extra_acked_max);
	extra = min_u64(extra, cc->cwnd);
	if (extra > cc->extra_acked[cc->extra_acked_slot])
		cc->extra_acked[cc->extra_acked_slot] = extra;
}

static void update_min_rtt(struct cc_rate *cc, uint64_t now_us)
{
	bool expired = cc->min_rtt_us && now_us - cc->min_rtt_stamp_us > MIN_RTT_WINDOW_US;

	/* An echo server's flight is the echoes of what arrived, and the
	 * queue its RTT sees is the forward path's, which it cannot drain:
	 * PROBE_RTT would only hold its echoes back for 200 ms. See the
	 * file's first comment. */
	if (expired && cc->out_of_data && !cc->round_not_app_limited) {
		cc->min_rtt_stamp_us = now_us;
		expired = false;
	}

	if (expired && cc->state != CC_RATE_PROBE_RTT)
		cc->probe_rtt_prior_min_us = cc->min_rtt_us;
	if (cc->ack_min_rtt_us != UINT64_MAX &&
	    (cc->min_rtt_us == 0 || cc->ack_min_rtt_us <= cc->min_rtt_us || expired)) {
		uint64_t rtt = cc->ack_min_rtt_us ? cc->ack_min_rtt_us : 1;

		if (rtt != cc->min_rtt_us) {
			cc->min_rtt_us = rtt;
			note_model(cc);
		}
		cc->min_rtt_stamp_us = now_us;
	}
	if (expired && cc->state != CC_RATE_PROBE_RTT) {
		cc->state = CC_RATE_PROBE_RTT;
		cc->probe_rtt_done_us = 0;
	}
}

static uint64_t probe_rtt_cwnd(const struct cc_rate *cc)
{
	return max_u64(bdp(cc, PM / 2), min_cwnd(cc));
}

static void update_state(struct cc_rate *cc, uint64_t now_us, uint64_t prior_in_flight)
{
	switch (cc->state) {
	case CC_RATE_STARTUP:
		if (cc->full_bw_reached)
			cc->state = CC_RATE_DRAIN;
		break;
	case CC_RATE_DRAIN: break;
	case CC_RATE_PROBE_BW: {
		uint32_t gain = cycle_gain_pm[cc->cycle_phase];
		/* A phase lasts a minimum RTT and a round: where ACKs come in
		 * batches (a receiver acknowledging once a millisecond) a
		 * round is longer than the minimum RTT, and a probe shorter
		 * than a round would not be seen in the samples. */
		bool full = now_us - cc->cycle_stamp_us > cc->min_rtt_us && cc->round_count > cc->cycle_round;
		bool next;

		/* Probing: until the flight reached the probe's or loss said
		 * stop; a sender paced at the gain gets there in a round trip,
		 * one that does not (it had little to send) gives up after two. */
		if (gain > PM)
			next = full && (cc->cycle_lost ||
					prior_in_flight + cc->mss >= min_u64(bdp(cc, gain), cc->cwnd) ||
					now_us - cc->cycle_stamp_us > 2 * cc->min_rtt_us);
		else if (gain < PM) /* draining: until the extra queue is gone */
			next = full || prior_in_flight <= bdp(cc, PM);
		else
			next = full;
		if (next) {
			cc->cycle_phase = (cc->cycle_phase + 1) % CYCLE_PHASES;
			cc->cycle_stamp_us = now_us;
			cc->cycle_round = cc->round_count;
			cc->cycle_lost = false;
		}
		break;
	}
	case CC_RATE_PROBE_RTT:
		if (cc->probe_rtt_done_us == 0) {
			if (cc->in_flight <= probe_rtt_cwnd(cc)) {
				cc->probe_rtt_done_us = now_us + PROBE_RTT_US;
				cc->probe_rtt_round = cc->round_count;
			}
		} else if (now_us >= cc->probe_rtt_done_us && cc->round_count > cc->probe_rtt_round) {
			cc->min_rtt_stamp_us = now_us;
			judge_probe_rtt(cc);
			if (cc->full_bw_reached)
				enter_probe_bw(cc, now_us);
			else
				cc->state = CC_RATE_STARTUP;
		}
		break;
	}
	/* Not in the switch: DRAIN may end on the ACK that began it. */
	if (cc->state == CC_RATE_DRAIN && cc->in_flight <= bdp(cc, PM))
		enter_probe_bw(cc, now_us);

	switch (cc->state) {
	case CC_RATE_STARTUP:
		cc->pacing_gain_pm = STARTUP_GAIN_PM;
		cc->cwnd_gain_pm = STARTUP_GAIN_PM;
		break;
	case CC_RATE_DRAIN:
		cc->pacing_gain_pm = DRAIN_GAIN_PM;
		cc->cwnd_gain_pm = STARTUP_GAIN_PM;
		break;
	case CC_RATE_PROBE_BW:
		cc->pacing_gain_pm = cycle_gain_pm[cc->cycle_phase];
		cc->cwnd_gain_pm = PROBE_BW_CWND_GAIN_PM;
		break;
	case CC_RATE_PROBE_RTT:
		cc->pacing_gain_pm = PM;
		cc->cwnd_gain_pm = PM;
		break;
	}
}

static void update_pacing_rate(struct cc_rate *cc)
{
	uint64_t rate;

	if (cc->bw == 0) {
		rate = cc->cwnd * US_PER_S / max_u64(cc->min_rtt_us, NO_RTT_US) * cc->pacing_gain_pm / PM;
	} else {
		bool cruise = cc->state == CC_RATE_PROBE_BW && cc->pacing_gain_pm == PM;
		uint32_t margin = cruise && cc->queue_standing && !queue_foreign(cc)
					  ? STANDING_QUEUE_PACING_PM
					  : PACING_MARGIN_PM;

		rate = cc->bw * cc->pacing_gain_pm / PM * margin / PM;
	}
	/* In startup early samples are small: the rate only rises there. */
	if (cc->full_bw_reached || rate > cc->pacing_rate)
		set_pacing_rate(cc, rate ? rate : 1);
}

static void update_cwnd(struct cc_rate *cc)
{
	/* The gain applies to the batching allowance too: a window of
	 * exactly one batch would stall between batches. */
	uint64_t target = (bdp(cc, PM) + extra_acked(cc)) * cc->cwnd_gain_pm / PM;

	if (cc->state == CC_RATE_PROBE_BW && cc->pacing_gain_pm > PM)
		target += 2ull * cc->mss;
	target = max_u64(target, min_cwnd(cc));
	if (cc->full_bw_reached)
		cc->cwnd = min_u64(cc->cwnd + cc->ack_acked, target);
	else if (cc->cwnd < target || cc->delivered < initial_cwnd(cc))
		cc->cwnd += cc->ack_acked;
	if (cc->inflight_hi)
		cc->cwnd = min_u64(cc->cwnd, cc->inflight_hi);
	if (cc->state == CC_RATE_PROBE_RTT)
		cc->cwnd = min_u64(cc->cwnd, probe_rtt_cwnd(cc));
	if (cc->state == CC_RATE_PROBE_BW && cc->pacing_gain_pm <= PM && cc->queue_standing &&
	    !queue_foreign(cc) && extra_acked(cc) < bdp(cc, PM))
		cc->cwnd = min_u64(cc->cwnd, inflight_floor(cc, STANDING_QUEUE_BDP_PM));
	cc->cwnd = max_u64(cc->cwnd, min_cwnd(cc));
}

void cc_rate_on_ack_end(struct cc_rate *cc, uint64_t now_us)
{
	uint64_t prior_in_flight;
	/* Read only where there is a sample (a round starts with one). */
	bool ack_app_limited = cc->ack_snap.app_limited;
	bool sample_app_limited = ack_app_limited;
	uint64_t rate = 0;

	/* What cc_rate_on_acked left for once per ACK. */
	cc->in_flight = cc->ack_acked < cc->in_flight ? cc->in_flight - (uint32_t)cc->ack_acked : 0;
	if (cc->ack_min_rtt_us != UINT64_MAX) {
		if (cc->ack_min_rtt_us < cc->round_min_rtt_us)
			cc->round_min_rtt_us = cc->ack_min_rtt_us;
		cc->round_rtt_acks++;
	}
	if (cc->app_limited_until && cc->delivered > cc->app_limited_until) {
		cc->app_limited_until = 0;
		cc->out_of_data = false;
	}
	if (cc->ack_acked == 0 && cc->ack_lost == 0)
		return;
	prior_in_flight = (uint64_t)cc->in_flight + cc->ack_acked + cc->ack_lost;
	update_min_rtt(cc, now_us);
	if (cc->ack_has_sample) {
		const struct cc_rate_snapshot *s = &cc->ack_snap;
		uint64_t got = cc->delivered - cc->ack_prior_delivered;
		uint64_t ack_elapsed = (uint32_t)((uint32_t)cc->ack_now_us - s->delivered_us);
		uint64_t send_elapsed = (uint32_t)(s->sent_us - s->first_sent_us);
		uint64_t interval = max_u64(send_elapsed, ack_elapsed);

		cc->first_sent_us = cc->ack_now_us - (uint32_t)((uint32_t)cc->ack_now_us - s->sent_us);
		if (interval > 0 && interval >= cc->min_rtt_us)
			rate = got * US_PER_S / interval;
		else
			sample_app_limited = true; /* no sample: says nothing for startup's exit */
		if (rate && !ack_app_limited)
			cc->round_not_app_limited = true;
	}
	if (cc->ack_round_start)
		on_round_end(cc, sample_app_limited, now_us);
	if (cc->state == CC_RATE_STARTUP && startup_queue_rising(cc))
		cc->full_bw_reached = true;
	if (rate && (!ack_app_limited || rate >= cc->bw)) {
		if (rate > cc->bw_round[cc->bw_slot])
			cc->bw_round[cc->bw_slot] = rate;
		if (rate > cc->bw) {
			cc->bw = rate;
			note_model(cc);
		}
	}
	update_ack_aggregation(cc, now_us);
	update_state(cc, now_us, prior_in_flight);
	update_pacing_rate(cc);
	update_cwnd(cc);

	cc->ack_has_sample = false;
	cc->ack_prior_delivered = 0;
	cc->ack_round_start = false;
	cc->ack_acked = 0;
	cc->ack_lost = 0;
	cc->ack_min_rtt_us = UINT64_MAX;
}
