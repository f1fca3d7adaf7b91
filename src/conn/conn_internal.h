/* SPDX-License-Identifier: MIT */
/*
 * conn internals: struct rudp_conn, made of the parts' structs, and what
 * the orchestrator files share. Not installed; the host sees only conn.h.
 *
 * The parts each own a struct, take only it (and plain values), and call
 * no other part (scripts/check-layers.sh checks it in the built objects);
 * the loss engine is also handed the reliable queue's frame records, which
 * hold its per-frame state, as a view (loss.h):
 *   sendq.c       the send queue: frame records and their bodies
 *   acktr.c       the ACK tracker: what we received, as ranges to send
 *   loss.c        the loss and RTT engine: what we sent and what became of it
 *                 (rtt.c: the RTT estimator, a leaf it calls)
 *   cc.c          the AIMD congestion controller
 *   cc_rate.c     the rate-based congestion controller
 *   recv.c        receive and ordering: dedup, channels, order hold, sequencing
 *   reassembly.c  split messages
 * The orchestrator files are the only ones that call across the parts:
 *   conn.c         create/destroy, state, datagrams in, ACK handling, deadlines, stats
 *   conn_recv.c    frame sets in: reception checks, reassembly, delivery
 *   conn_flush.c   building datagrams: ACKs, resends, new frames; the flush calls
 *   conn_control.c the handshake and control messages, early messages, our close
 *   conn_send.c    rudp_conn_send and the scheduler's queries
 * Each calls only the ones listed after it, never back.
 */
#ifndef RUDP_CONN_INTERNAL_H
#define RUDP_CONN_INTERNAL_H

#include "common/body_ring.h"
#include "conn/acktr.h"
#include "conn/cc.h"
#include "conn/cc_rate.h"
#include "conn/conn.h"
#include "conn/loss.h"
#include "conn/reassembly.h"
#include "conn/recv.h"
#include "conn/rtt.h"
#include "conn/sendq.h"
#include "rudp_version.h"

#include <stddef.h>
#include <string.h>

#define CONN_CHANNELS RUDP_WIRE_ORDER_CHANNELS
/* A cache line: what the send path's layout counts in (struct rudp_conn). */
#define CONN_LINE 64

/* ---- the connection ---- */

/* conn_status.c: running counters at the start of a 1 s bucket. */
struct conn_status_mark {
	uint64_t at_us;
	uint64_t bytes_sent, bytes_received;
	uint64_t dgrams_reliable, dgrams_lost; /* loss engine's */
	uint64_t dgrams_expected, dgrams_missing; /* ACK tracker's */
};

struct rudp_conn {
	/* send side, first and in consecutive lines: a server sending to
	 * many peers in a row (rudp_send_many) waits for each line of each
	 * conn it touches, and lines side by side are the ones the hardware
	 * fetches ahead. The conn starts on a line (rudp_conn_create). A send
	 * of a message in one frame (rudp_conn_send_shared_prepared) touches
	 * two: the chosen queue's first line and the send line, from state to
	 * channel 0's indexes, with the queue budget's totals; a copied send
	 * (rudp_conn_send) also the rest of the chosen queue (its byte ring),
	 * the other queue's first line (the memory gauge) and the line between
	 * (frag_body_max). */
	_Alignas(CONN_LINE) struct sendq rel; /* reliable frames, oldest unacked first */
	_Alignas(CONN_LINE) struct sendq unrel; /* unreliable frames, released when sent */
	uint32_t frag_body_max; /* largest body we put in one frame */
	uint32_t redundant_channels; /* rudp_conn_set_redundant_channels */
	/* earliest lifetime end of the unreliable frames (UINT64_MAX: none);
	 * a flush at or past it drops the expired ones (conn_flush.c) */
	uint64_t unrel_expiry_min;
	uint32_t rel_sent; /* frames [0, rel_sent) of rel were sent at least once */
	/* When both a new reliable and an unreliable frame are ready, whose
	 * turn it is (conn_flush.c: they alternate). */
	bool unrel_turn;
	uint32_t next_dgram_seq;
	uint16_t next_split_id;
	_Alignas(CONN_LINE) enum rudp_conn_state state;
	/* The largest message sent in one frame: frag_body_max, or less when
	 * cfg.max_message_size is; and cfg.max_queue_bytes, both set once by
	 * conn_send_init, here for the send path. */
	uint32_t one_frame_max;
	uint32_t queue_max_bytes;
	uint32_t next_reliable_index;
	uint64_t now_us; /* latest time passed in; next_deadline() is const and needs it */
	uint64_t messages_sent; /* stats.messages_sent, kept here (rudp_conn_get_stats) */
	uint64_t rel_unsent_wire; /* encoded bytes of rel[rel_sent ..): queued, never sent */
	struct sendq_totals queued; /* what rel and unrel hold together */
	/* per channel, the next order and sequenced index to give: side by
	 * side, as a sequenced send reads both */
	struct conn_channel_write {
		uint32_t order;
		uint32_t sequenced;
	} chan_write[CONN_CHANNELS];

	struct rudp_conn_config cfg;
	struct rudp_conn_callbacks cb;
	struct rudp_conn_identity id;
	enum rudp_conn_role role;

	uint64_t created_us;
	uint64_t last_recv_us;
	uint64_t last_send_us;
	uint64_t disconnect_start_us;

	uint32_t payload_max; /* UDP payload bytes per datagram */

	/* payload_max bytes, made on first use: only when the owner gives no
	 * datagram_buffer (conn_datagram_buffer) */
	uint8_t *dgram_buf;
	struct flush_ref *flush_refs; /* max_frames_per_datagram entries */
	/* Redundancy: the last copies_owed frames of rel[0, rel_sent) went out
	 * with no copy yet, because the flush that sent them stopped first
	 * (conn_flush.c add_copies); fewer when acknowledged ones left. */
	uint32_t copies_owed;
	struct loss_engine loss; /* what became of the reliable frames sent */
	struct congestion cc;
	/* RUDP_CONN_CC_RATE: the rate controller, fed per datagram through the
	 * loss engine's records (loss_dgram_record, loss_dgram_verdicts) */
	bool rate_on;
	struct cc_rate rate;

	/* acknowledgements */
	struct ack_tracker acktr;

	/* receive side */
	struct receiver rx;
	struct reassembly reasm;

	/* handshake and close */
	bool answered_request; /* server: 0x10 queued */
	bool remote_closing; /* 0x15 delivered; close once no reliable data is missing */
	bool disconnect_unqueued; /* DISCONNECTING, but our 0x15 found no memory: queued at a later flush */
	bool closed_reported;
	int64_t peer_request_time;

	struct rudp_conn_stats stats;
	/* conn_status.c: the counters at the start of the previous and of
	 * the current 1 s bucket; "recent" figures run from marks[0] */
	struct conn_status_mark marks[2];
	uint64_t frames_dropped; /* with the parts' own (rx, reasm): stats.frames_dropped */
	/* Client side: messages that arrived before the server's connection
	 * request accepted (0x10) was handled, held for delivery right after
	 * it. Bounded by CONN_EARLY_MAX messages and CONN_EARLY_BYTES; a
	 * reliable frame beyond them is not acknowledged (conn_reserve_early). */
	struct conn_early_msg {
		uint8_t *data;
		uint32_t len;
		uint8_t reliability, channel;
	} early[8];
	uint32_t early_count;
	size_t early_bytes;
	/* The copy for the next early message, made before its frame counts
	 * as received, so that keeping it cannot fail afterwards. */
	uint8_t *early_spare;
	size_t early_spare_cap;
	/* A reassembled message being routed whose buffer an early message
	 * may take instead of a copy (its room was set aside when its first
	 * fragment came); NULL once taken, or when there is none. */
	uint8_t *early_handoff;
	void *block; /* what was allocated for the conn, to free (rudp_conn_create) */
};
_Static_assert(
	sizeof(struct sendq) == 2 * CONN_LINE && offsetof(struct rudp_conn, state) == 5 * CONN_LINE &&
		offsetof(struct rudp_conn, chan_write[1]) == 6 * CONN_LINE,
	"the send side: the two queues in two lines each, a line of the rest, then the send line up to "
	"channel 0's indexes");

#define CONN_STATUS_BUCKET_US 1000000u

/* Starts a new bucket (conn_status.c). */
void conn_status_roll_slow(struct rudp_conn *c, uint64_t now_us);
/* Called with every advance of the conn's time (datagrams in, flushes):
 * one comparison unless a bucket has ended. */
static inline void conn_status_roll(struct rudp_conn *c, uint64_t now_us)
{
	if (now_us - c->marks[1].at_us >= CONN_STATUS_BUCKET_US)
		conn_status_roll_slow(c, now_us);
}

struct flush_ref {
	uint8_t kind; /* FLUSH_NEW, FLUSH_RETX_NACK, FLUSH_RETX_RTO, FLUSH_UNREL, FLUSH_COPY */
	uint32_t index;
};

static inline void conn_close(struct rudp_conn *c, enum rudp_conn_close_reason reason)
{
	if (c->closed_reported)
		return;
	c->state = RUDP_CONN_STATE_CLOSED;
	c->closed_reported = true;
	if (c->cb.closed)
		c->cb.closed(c->cb.ud, reason);
}

static inline void conn_count_bad_frame(struct rudp_conn *c)
{
	c->frames_dropped++;
}

_Static_assert(sizeof(struct cc_rate_snapshot) == LOSS_DGRAM_DATA_WORDS * sizeof(uint32_t) &&
		       _Alignof(struct cc_rate_snapshot) <= _Alignof(uint32_t),
	       "a datagram record holds one rate snapshot");

/* A datagram record's opaque data as the rate snapshot it holds, in
 * place: a copy each way cost more than the snapshot's own stores. The
 * snapshot's members are uint32_t, which the data array is made of. */
static inline struct cc_rate_snapshot *conn_rate_snap(uint32_t *data)
{
	return (struct cc_rate_snapshot *)(void *)data;
}
static inline const struct cc_rate_snapshot *conn_rate_snap_const(const uint32_t *data)
{
	return (const struct cc_rate_snapshot *)(const void *)data;
}

/* Whether the rate controller lets a data datagram start now (always when
 * it is not on). */
static inline bool conn_rate_open(const struct rudp_conn *c, uint64_t now_us)
{
	return !c->rate_on || cc_rate_can_send(&c->rate, now_us);
}

/* Hands the loss engine's per-datagram verdicts of its last call to the
 * rate controller, then ends the ACK there. expired: the call gave records
 * up unanswered (loss_dgram_expire, loss_dgram_expire_aged), not an ACK
 * or NACK. */
static inline void conn_rate_verdicts(struct rudp_conn *c, uint64_t now_us, bool expired)
{
	uint32_t n = loss_dgram_verdicts(&c->loss);

	if (!c->rate_on)
		return;
	for (uint32_t i = 0; i < n; i++) {
		const struct dgram_rec *r = loss_dgram_verdict_rec(&c->loss, i);
		const struct cc_rate_snapshot *snap = conn_rate_snap_const(r->data);

		if (!loss_dgram_verdict_lost(&c->loss, i))
			cc_rate_on_acked(&c->rate, snap, r->bytes, now_us);
		else if (expired)
			cc_rate_on_expired(&c->rate, snap, r->bytes);
		else
			cc_rate_on_lost(&c->rate, snap, r->bytes);
	}
	cc_rate_on_ack_end(&c->rate, now_us);
}

static inline void conn_rate_take_verdicts(struct rudp_conn *c, uint64_t now_us)
{
	conn_rate_verdicts(c, now_us, false);
}

static inline void conn_rate_take_expired(struct rudp_conn *c, uint64_t now_us)
{
	conn_rate_verdicts(c, now_us, true);
}

/* ---- conn_send.c ---- */

/* Sets the send path's copies of limits (one_frame_max, queue_max_bytes)
 * once cfg and frag_body_max are final. */
void conn_send_init(struct rudp_conn *c);
/* Queues a message without the checks rudp_conn_send does for the app
 * (state, control first byte, queue budget). */
int conn_queue_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
		       uint8_t channel, bool enforce_budget);
/* What a message from the app may carry besides its bytes: a lifetime end
 * (unreliable kinds; 0: none) and a shared body to reference instead of
 * copying (NULL: copy data). */
struct conn_msg_extra {
	uint64_t expire_us;
	struct shared_body *shared;
};

/* ---- conn_control.c ---- */

/* A client's first message, the connection request (0x09). */
void conn_queue_connection_request(struct rudp_conn *c, uint64_t now_us);
/* Frees the early messages a connecting client holds. */
void conn_free_early(struct rudp_conn *c);
void conn_on_control(struct rudp_conn *c, const uint8_t *data, size_t len, uint64_t now_us);
/* Before a reliable frame counts as received: room in the send queue for
 * the reliable answer its control message asks for (a server's 0x10 to a
 * 0x09, a client's 0x13 to a 0x10). False when out of memory: the frame
 * is deferred. */
bool conn_reserve_answer(struct rudp_conn *c, const struct rudp_wire_frame *f);
/* Before a reliable frame counts as received on a client still connecting:
 * room to keep its application message until the handshake completes.
 * False (the frame is deferred) when it cannot be kept: over the early
 * bounds, no memory, split, or (held) an ordered message ahead of its turn. */
bool conn_reserve_early(struct rudp_conn *c, const struct rudp_wire_frame *f, bool held);
void conn_deliver_app(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
		      uint8_t channel);
/* DISCONNECTING with our 0x15 not queued for want of memory: try again. */
void conn_retry_disconnect(struct rudp_conn *c);
/* Queues a connected ping when nothing was sent for keepalive_us. */
void conn_maybe_queue_keepalive(struct rudp_conn *c, uint64_t now_us);

/* ---- conn_flush.c ---- */

/* Where to build the next outgoing datagram (payload_max bytes): the
 * owner's buffer (callbacks.datagram_buffer) or the conn's own. NULL when
 * out of memory: the caller sends nothing now, as if the owner refused. */
uint8_t *conn_datagram_buffer(struct rudp_conn *c);
/* Sends every pending ACK (or NACK) range as ACK datagrams. Returns the
 * number sent; sets *blocked when the owner refused one (the rest stays
 * queued). */
int conn_emit_acks(struct rudp_conn *c, bool nack, uint64_t now_us, bool *blocked);

/* ---- conn_recv.c ---- */

/* An incoming frame-set datagram: its seq noted, its frames received, an
 * ACK queued when they all could be. 0, or a wire error code for a
 * datagram dropped whole. */
int conn_on_frame_set(struct rudp_conn *c, const uint8_t *p, size_t n, uint64_t now_us);

/* Test hook: start the counters somewhere (e.g. near 2^24 to cross the wrap).
 * Sets both what this side sends next and what it expects from the peer, so
 * call it on both ends with the same values right after create. */
void rudp_conn_test_set_counters(struct rudp_conn *c, uint32_t dgram_seq, uint32_t reliable_index,
				 uint32_t order_index, uint16_t split_id);

#endif
