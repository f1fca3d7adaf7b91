/* SPDX-License-Identifier: MIT */
/*
 * The connection: creation and limits, the state, incoming datagrams (an
 * ACK or NACK is handled here, between the loss and RTT engine and the
 * congestion controller; frame sets go to conn_recv.c), the next deadline
 * and stats. It and the other conn_*.c files orchestrate the parts (see
 * conn_internal.h); none of the parts calls them or each other.
 *
 * Callbacks run synchronously inside on_datagram / flush / send / disconnect.
 * The owner may call rudp_conn_send, rudp_conn_disconnect or rudp_conn_abort
 * from deliver / connected / closed, but must not destroy the conn inside a
 * callback (defer it until the call returns).
 */
#include <stdlib.h>
#include <string.h>

#include "conn/conn_internal.h"
#include "conn/defaults.h"

/* Largest frame body the bit-length field can describe. */
#define CONN_MAX_FRAME_BODY 8191u
/* ACK thinning's bounds (rudp_conn_config): beyond them the peer's timers
 * would take our silence for loss. */
#define CONN_MAX_ACK_EVERY 64u
#define CONN_MAX_ACK_DELAY_US 100000u

void rudp_conn_config_init(struct rudp_conn_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mtu = RUDP_DEFAULT_MTU;
	cfg->ip_udp_overhead = RUDP_WIRE_UDP_IP_OVERHEAD;
	cfg->window_frames = RUDP_DEFAULT_WINDOW_FRAMES;
	cfg->max_frames_per_datagram = RUDP_DEFAULT_MAX_FRAMES_PER_DATAGRAM;
	cfg->max_queue_bytes = RUDP_DEFAULT_MAX_QUEUE_BYTES;
	cfg->max_split_count = RUDP_DEFAULT_MAX_SPLIT_COUNT;
	cfg->max_split_ids = RUDP_DEFAULT_MAX_SPLIT_IDS;
	cfg->max_reassembly_bytes = RUDP_DEFAULT_MAX_REASSEMBLY_BYTES;
	cfg->max_message_size = RUDP_DEFAULT_MAX_MESSAGE_SIZE;
	cfg->max_order_hold = RUDP_DEFAULT_MAX_ORDER_HOLD;
	cfg->recv_window = RUDP_DEFAULT_RECV_WINDOW;
	cfg->max_ack_ranges = RUDP_DEFAULT_MAX_ACK_RANGES;
	cfg->rto_initial_us = RUDP_DEFAULT_RTO_INITIAL_MS * 1000ull;
	cfg->rto_min_us = RUDP_DEFAULT_RTO_MIN_MS * 1000ull;
	cfg->rto_max_us = RUDP_DEFAULT_RTO_MAX_MS * 1000ull;
	cfg->keepalive_us = RUDP_DEFAULT_KEEPALIVE_MS * 1000ull;
	cfg->timeout_us = RUDP_DEFAULT_TIMEOUT_MS * 1000ull;
	cfg->connect_timeout_us = RUDP_DEFAULT_CONNECT_TIMEOUT_MS * 1000ull;
	cfg->disconnect_linger_us = RUDP_DEFAULT_DISCONNECT_LINGER_MS * 1000ull;
	cfg->max_dgram_seq_jump = RUDP_DEFAULT_MAX_DGRAM_SEQ_JUMP;
	cfg->protocol_version = RUDP_DEFAULT_PROTOCOL_VERSION;
	cfg->congestion_control = RUDP_DEFAULT_CONGESTION_CONTROL; /* rudp_config_init's too */
	cfg->probe_margin_us = RUDP_DEFAULT_PROBE_MARGIN_US;
	cfg->ack_every = RUDP_DEFAULT_ACK_EVERY;
	cfg->ack_delay_us = RUDP_DEFAULT_ACK_DELAY_US;
}

static uint32_t clamp_u32(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Whatever the owner passed, the engine runs on limits it can honour. */
static void sanitize_config(struct rudp_conn_config *cfg)
{
	if (cfg->ip_udp_overhead == 0 || cfg->ip_udp_overhead > 128)
		cfg->ip_udp_overhead = RUDP_WIRE_UDP_IP_OVERHEAD;
	if (cfg->mtu < cfg->ip_udp_overhead + 128u)
		cfg->mtu = (uint16_t)(cfg->ip_udp_overhead + 128u);
	cfg->window_frames = clamp_u32(cfg->window_frames, 1, 1u << 16);
	cfg->max_frames_per_datagram = clamp_u32(cfg->max_frames_per_datagram, 1, 255);
	cfg->max_split_count = clamp_u32(cfg->max_split_count, 1, 1u << 22);
	cfg->max_split_ids = clamp_u32(cfg->max_split_ids, 1, 4096);
	cfg->max_order_hold = clamp_u32(cfg->max_order_hold, 1, 1u << 20);
	/* Our own window must fit in it, or we would refuse our own kind. */
	cfg->recv_window = clamp_u32(cfg->recv_window, 64, 1u << 20);
	cfg->max_ack_ranges = clamp_u32(cfg->max_ack_ranges, 1, UINT16_MAX);
	/* Below a window's worth, a burst lost on the path would look forged. */
	cfg->max_dgram_seq_jump = clamp_u32(cfg->max_dgram_seq_jump, 64, 1u << 22);
	if (cfg->max_message_size == 0)
		cfg->max_message_size = 1;
	if (cfg->rto_min_us == 0)
		cfg->rto_min_us = 1000;
	if (cfg->rto_max_us < cfg->rto_min_us)
		cfg->rto_max_us = cfg->rto_min_us;
	if (cfg->keepalive_us == 0)
		cfg->keepalive_us = 1000000;
	if (cfg->timeout_us == 0)
		cfg->timeout_us = 10000000;
	cfg->ack_every = clamp_u32(cfg->ack_every, 1, CONN_MAX_ACK_EVERY);
	if (cfg->ack_delay_us > CONN_MAX_ACK_DELAY_US)
		cfg->ack_delay_us = CONN_MAX_ACK_DELAY_US;
}

struct rudp_conn *rudp_conn_create(const struct rudp_conn_config *cfg, const struct rudp_conn_callbacks *cb,
				   enum rudp_conn_role role, const struct rudp_conn_identity *id,
				   uint64_t now_us)
{
	/* On a cache line, as its send fields are laid out (conn_internal.h). */
	uint8_t *block = calloc(1, sizeof(struct rudp_conn) + CONN_LINE - 1);
	uint32_t body_max;

	if (!block)
		return NULL;
	struct rudp_conn *c = (struct rudp_conn *)(block + (-(uintptr_t)block & (CONN_LINE - 1)));
	c->block = block;
	c->cfg = *cfg;
	sanitize_config(&c->cfg);
	c->cb = *cb;
	if (id)
		c->id = *id;
	c->role = role;
	c->state = RUDP_CONN_STATE_CONNECTING;
	c->now_us = now_us;
	c->created_us = now_us;
	c->marks[0].at_us = now_us;
	c->marks[1].at_us = now_us;
	c->last_recv_us = now_us;
	c->last_send_us = now_us;

	c->payload_max = (uint32_t)c->cfg.mtu - c->cfg.ip_udp_overhead;
	body_max = c->payload_max - RUDP_WIRE_DGRAM_HEADER_LEN - RUDP_WIRE_FRAME_HEADER_MAX;
	c->frag_body_max = body_max > CONN_MAX_FRAME_BODY ? CONN_MAX_FRAME_BODY : body_max;
	conn_send_init(c);

	sendq_init(&c->rel, &c->queued);
	sendq_init(&c->unrel, &c->queued);
	c->unrel_expiry_min = UINT64_MAX;
	/* A full window of full datagrams is the most the window could ever use. */
	cc_init(&c->cc, c->cfg.congestion_control == RUDP_CONN_CC_AIMD, c->payload_max,
		c->cfg.window_frames * c->payload_max);
	c->rate_on = c->cfg.congestion_control == RUDP_CONN_CC_RATE;
	if (c->rate_on) {
		/* Flows that start together start their probing cycles apart. */
		struct cc_rate_config rate_cfg = {
			.mss = c->payload_max,
			.seed = (uint32_t)c->id.local_guid ^ (uint32_t)((uint64_t)c->id.local_guid >> 32),
		};

		cc_rate_init(&c->rate, &rate_cfg, now_us);
	}
	struct loss_config loss_cfg = {
		.window_frames = c->cfg.window_frames,
		.max_ack_ranges = c->cfg.max_ack_ranges,
		.rto_initial_us = c->cfg.rto_initial_us,
		.rto_min_us = c->cfg.rto_min_us,
		.rto_max_us = c->cfg.rto_max_us,
		.probe_margin_us = c->cfg.probe_margin_us,
		/* The peer is taken to thin its ACKs as we do. */
		.peer_ack_delay_us = c->cfg.ack_every > 1 ? c->cfg.ack_delay_us : 0,
		.dgram_log = c->rate_on,
	};
	struct reasm_limits reasm_lim = {
		.max_split_ids = c->cfg.max_split_ids,
		.max_split_count = c->cfg.max_split_count,
		.max_bytes = c->cfg.max_reassembly_bytes,
		.max_message_size = c->cfg.max_message_size,
		/* split ids are 16 bits and come round again */
		.refused_memory_us = c->cfg.timeout_us,
	};
	c->flush_refs = calloc(c->cfg.max_frames_per_datagram, sizeof(*c->flush_refs));
	if (loss_init(&c->loss, &loss_cfg) < 0 || !c->flush_refs ||
	    acktr_init(&c->acktr, c->cfg.max_dgram_seq_jump, c->cfg.ack_every, c->cfg.ack_delay_us) < 0 ||
	    recv_init(&c->rx, c->cfg.recv_window, c->payload_max, c->cfg.max_order_hold) < 0 ||
	    reasm_init(&c->reasm, c->payload_max, &reasm_lim) < 0) {
		rudp_conn_destroy(c);
		return NULL;
	}
	if (role == RUDP_CONN_CLIENT) {
		conn_queue_connection_request(c, now_us);
		if (c->rel.frames_count == 0) {
			rudp_conn_destroy(c);
			return NULL;
		}
	}
	return c;
}

void rudp_conn_destroy(struct rudp_conn *c)
{
	if (!c)
		return;
	sendq_free(&c->rel);
	sendq_free(&c->unrel);
	acktr_free(&c->acktr);
	recv_free(&c->rx);
	reasm_free(&c->reasm);
	conn_free_early(c);
	free(c->dgram_buf);
	loss_free(&c->loss);
	free(c->flush_refs);
	free(c->block);
}

/* ---- state ---- */

/* After an ACK: DISCONNECTING conns close once everything is acknowledged. */
static void conn_check_disconnect_done(struct rudp_conn *c)
{
	if (c->state == RUDP_CONN_STATE_DISCONNECTING && !c->disconnect_unqueued && c->rel.frames_count == 0)
		conn_close(c, RUDP_CONN_CLOSE_LOCAL);
}

void rudp_conn_abort(struct rudp_conn *c, enum rudp_conn_close_reason reason)
{
	conn_close(c, reason);
}

enum rudp_conn_state rudp_conn_state(const struct rudp_conn *c)
{
	return c->state;
}

/* ---- datagrams in ---- */

/* Tells the congestion controller of the frames an ACK or NACK declared
 * lost. It reduces once per episode, and whether a loss starts a new one
 * is a test of its datagram's seq that, among seqs less than half the seq
 * space apart, holds for one of them exactly when it holds for the oldest
 * or the newest: so those two stand for all. A loss counts when a queue
 * shows in the RTT, or when the copy lost was itself a resend. */
static void tell_cc_losses(struct rudp_conn *c, const struct loss_verdict *v)
{
	const struct loss_seqs *s;

	if (!v->lost.any)
		return;
	s = cc_queue_is_building(c->loss.rtt.srtt_us, c->loss.rtt.min_us) ? &v->lost : &v->lost_resent;
	if (!s->any)
		return;
	cc_on_loss(&c->cc, s->oldest, c->next_dgram_seq, true);
	cc_on_loss(&c->cc, s->newest, c->next_dgram_seq, true);
}

static int on_ack_datagram(struct rudp_conn *c, const uint8_t *p, size_t n, uint64_t now_us)
{
	struct loss_verdict v;
	int rc = loss_on_ack_datagram(&c->loss, &c->rel, c->rel_sent, c->next_dgram_seq, p, n, now_us, &v);

	if (rc < 0) {
		c->stats.datagrams_dropped++;
		return rc;
	}
	c->last_recv_us = now_us;
	if (v.nack)
		c->stats.nacks_received += v.records;
	else
		c->stats.acks_received += v.records;
	if (!v.named)
		return 0;
	c->stats.resent_spurious += v.resent_spurious;
	if (v.left_bytes)
		cc_on_left(&c->cc, v.left_bytes);
	if (v.nack) {
		tell_cc_losses(c, &v);
		conn_rate_take_verdicts(c, now_us);
		return 0;
	}
	/* Growth first: a loss inferred from this same ACK then reduces the
	 * window it reached. */
	cc_on_acked(&c->cc, v.acked_bytes);
	loss_ack_end(&c->loss, &c->rel, c->rel_sent, c->next_dgram_seq, now_us, &v);
	if (v.left_bytes)
		cc_on_left(&c->cc, v.left_bytes);
	tell_cc_losses(c, &v);
	conn_rate_take_verdicts(c, now_us);
	while (c->rel.frames_count > 0 && c->rel_sent > 0 && sendq_at(&c->rel, 0)->state == FRAME_ACKED) {
		sendq_pop_front(&c->rel);
		c->rel_sent--;
	}
	loss_ack_sample(&c->loss, &v, now_us);
	conn_check_disconnect_done(c);
	return 0;
}

int rudp_conn_on_datagram(struct rudp_conn *c, const uint8_t *p, size_t n, uint64_t now_us)
{
	if (c->state == RUDP_CONN_STATE_CLOSED)
		return 0;
	if (now_us > c->now_us)
		c->now_us = now_us;
	now_us = c->now_us;
	if (n == 0) {
		c->stats.datagrams_dropped++;
		return RUDP_WIRE_TRUNCATED;
	}
	conn_status_roll(c, now_us);
	c->stats.datagrams_received++;
	c->stats.bytes_received += n;
	if (!(p[0] & RUDP_DGRAM_VALID)) {
		c->stats.datagrams_dropped++;
		return RUDP_WIRE_BAD_ID;
	}
	if (p[0] & (RUDP_DGRAM_ACK | RUDP_DGRAM_NACK))
		return on_ack_datagram(c, p, n, now_us);
	return conn_on_frame_set(c, p, n, now_us);
}

/* ---- deadlines ---- */

static bool has_sendable_frames(const struct rudp_conn *c)
{
	if (c->unrel.frames_count > 0)
		return true;
	/* Copies a flush stopped before (conn_flush.c add_copies). */
	if (c->copies_owed && c->rel_sent && c->redundant_channels)
		return true;
	return c->rel_sent < c->rel.frames_count && c->rel_sent < c->cfg.window_frames &&
	       cc_would_send(&c->cc, sendq_frame_wire_bytes(sendq_at(&c->rel, c->rel_sent)));
}

/* A resend waiting in the window's flight that a flush would send now. A
 * resend the congestion window holds back waits for an ACK, which wakes
 * the owner anyway: wanting a flush for it would spin. */
static bool resend_wants_flush(const struct rudp_conn *c, bool open)
{
	for (uint32_t i = 0; c->loss.resend_pending && i < c->rel_sent; i++) {
		const struct sendq_frame *f = sendq_at(&c->rel, i);

		if (f->state == FRAME_NACKED && (f->resend_why == RESEND_PROBE ||
						 (open && cc_would_send(&c->cc, sendq_frame_wire_bytes(f)))))
			return true;
	}
	return false;
}

/* Whether a flush now would send something, and (in *sendable) whether
 * new reliable frames wait, which rudp_conn_next_deadline also needs. Data
 * waiting for the pacing budget or the rate controller's window is due at
 * its next send time instead (rudp_conn_next_deadline). */
static bool flush_due_now(const struct rudp_conn *c, bool *sendable)
{
	bool open;

	*sendable = false;
	if (acktr_due_us(&c->acktr) <= c->now_us)
		return true;
	open = conn_rate_open(c, c->now_us);
	*sendable = has_sendable_frames(c);
	return (open && *sendable) || resend_wants_flush(c, open);
}

bool rudp_conn_wants_flush(const struct rudp_conn *c)
{
	bool sendable;

	if (c->state == RUDP_CONN_STATE_CLOSED)
		return false;
	return flush_due_now(c, &sendable);
}

static void min_into(uint64_t *d, uint64_t t)
{
	if (t < *d)
		*d = t;
}

uint64_t rudp_conn_next_deadline(const struct rudp_conn *c)
{
	uint64_t d = UINT64_MAX;
	bool sendable;

	if (c->state == RUDP_CONN_STATE_CLOSED)
		return UINT64_MAX;
	if (flush_due_now(c, &sendable))
		return c->now_us;
	if (c->state == RUDP_CONN_STATE_CONNECTING)
		min_into(&d, c->created_us + c->cfg.connect_timeout_us);
	else
		min_into(&d, c->last_send_us + c->cfg.keepalive_us);
	if (c->state == RUDP_CONN_STATE_DISCONNECTING)
		min_into(&d, c->disconnect_start_us + c->cfg.disconnect_linger_us);
	if (c->state == RUDP_CONN_STATE_DISCONNECTING && c->disconnect_unqueued)
		min_into(&d, c->now_us + c->loss.rtt.rto_us); /* another try at queueing our 0x15 */
	min_into(&d, c->last_recv_us + c->cfg.timeout_us);
	/* ACKs held back by thinning: due later, not at the next unrelated event. */
	min_into(&d, acktr_due_us(&c->acktr));
	min_into(&d, loss_probe_deadline(&c->loss, &c->rel, c->rel_sent));
	if (c->rate_on && (sendable || c->loss.resend_pending))
		min_into(&d, cc_rate_next_send_us(&c->rate, c->now_us));
	if (c->rate_on)
		min_into(&d, loss_dgram_aged_due(&c->loss, c->now_us));
	/* Kept by the walks and sends (rto_due_us), and the oldest frame
	 * not acknowledged was sent first, so no walk here. */
	const struct sendq_frame *oldest = loss_oldest_unacked(&c->rel, c->rel_sent);

	if (oldest) {
		min_into(&d, c->loss.rto_due_us);
		min_into(&d, oldest->first_send_us + c->cfg.timeout_us);
	}
	return d;
}

void rudp_conn_set_redundant_channels(struct rudp_conn *c, uint32_t mask)
{
	c->redundant_channels = mask;
	c->copies_owed = 0;
}

/* ---- stats and test hooks ---- */

static uint32_t sat_u32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void rudp_conn_get_stats(const struct rudp_conn *c, struct rudp_conn_stats *out)
{
	*out = c->stats;
	out->messages_sent = c->messages_sent;
	out->rtt_us = sat_u32(c->loss.rtt.srtt_us);
	out->rtt_var_us = sat_u32(c->loss.rtt.rttvar_us);
	out->rto_us = sat_u32(c->loss.rtt.rto_us);
	out->window_in_use = c->loss.rel_unacked;
	out->window_frames = c->cfg.window_frames;
	out->send_queue_bytes = sat_u32(c->rel.body_bytes + c->unrel.body_bytes);
	out->reassembly_bytes = sat_u32(c->reasm.reserved_bytes);
	out->frames_dropped = c->frames_dropped + c->rx.frames_dropped + c->reasm.frames_dropped;
	out->cwnd_bytes = c->cc.enabled ? c->cc.cwnd : 0;
	out->in_flight_bytes = c->cc.in_flight;
	out->cc_reductions = c->cc.reductions;
	if (c->rate_on) {
		out->cwnd_bytes = sat_u32(cc_rate_cwnd(&c->rate));
		out->in_flight_bytes = cc_rate_in_flight(&c->rate);
		out->cc_reductions = c->rate.congestion_rounds;
		out->bandwidth_bytes_per_s = cc_rate_bandwidth(&c->rate);
		out->pacing_bytes_per_s = cc_rate_pacing_rate(&c->rate);
		out->min_rtt_us = sat_u32(cc_rate_min_rtt_us(&c->rate));
	}
}

void rudp_conn_test_set_counters(struct rudp_conn *c, uint32_t dgram_seq, uint32_t reliable_index,
				 uint32_t order_index, uint16_t split_id)
{
	c->next_dgram_seq = dgram_seq & RUDP_WIRE_U24_MASK;
	c->next_reliable_index = reliable_index & RUDP_WIRE_U24_MASK;
	for (uint32_t i = 0; i < c->rel.frames_count; i++) {
		sendq_at(&c->rel, i)->reliable_index = c->next_reliable_index;
		c->next_reliable_index = rudp_u24_add(c->next_reliable_index, 1);
	}
	for (uint32_t ch = 0; ch < CONN_CHANNELS; ch++) {
		c->chan_write[ch].order = order_index & RUDP_WIRE_U24_MASK;
		c->chan_write[ch].sequenced = order_index & RUDP_WIRE_U24_MASK;
	}
	c->rx.chans_first_order = order_index & RUDP_WIRE_U24_MASK;
	for (uint32_t ch = 0; ch < c->rx.chans_count; ch++)
		c->rx.chans[ch].expected_order = c->rx.chans_first_order;
	c->rx.dedup.base = reliable_index & RUDP_WIRE_U24_MASK;
	c->rx.dedup.highest_plus_one = c->rx.dedup.base;
	memset(c->rx.dedup.bits, 0, c->rx.dedup.nbits / 8);
	c->next_split_id = split_id;
}
