/* SPDX-License-Identifier: MIT */
/*
 * conn internals: struct rudp_conn and the helpers the files of src/conn/ share.
 * Not installed; the host sees only conn.h.
 *
 * Layout of the engine, one idea per file:
 *   conn.c        create/destroy, state machine, control messages, stats, deadlines
 *   sendq.c       queued frames (reliable and unreliable rings), splitting, rudp_conn_send
 *   flush.c       building datagrams: retransmissions, new frames, coalescing
 *   ackq.c        pending ACK/NACK ranges out; incoming ACK/NACK records in
 *   rtt.c         RFC 6298 estimator and per-frame backoff
 *   recv.c        incoming frame sets: dedup, ordering, sequencing, delivery
 *   reassembly.c  split messages
 */
#ifndef RUDP_CONN_INTERNAL_H
#define RUDP_CONN_INTERNAL_H

#include "common/body_ring.h"
#include "conn/acktr.h"
#include "conn/cc.h"
#include "conn/conn.h"
#include "conn/reassembly.h"
#include "conn/recv.h"
#include "conn/rtt.h"
#include "conn/sendq.h"
#include "rudp_version.h"

#define CONN_CHANNELS RUDP_WIRE_ORDER_CHANNELS

/* ---- ackq.c: incoming ACK/NACK datagrams ---- */

struct rudp_conn;
/* Makes the ACK decode scratch hold at least want records (at most
 * max_ack_ranges); the first call makes it. 0 or RUDP_CONN_E_NOMEM. */
int ack_scratch_grow(struct rudp_conn *c, size_t want);
/* An incoming ACK or NACK datagram. */
int ackq_on_ack_datagram(struct rudp_conn *c, const uint8_t *p, size_t n, uint64_t now_us);

/*
 * Which reliable frames each recent datagram carried (RakNet keeps the same):
 * an ACK for any copy of a frame finishes it, not only for its latest copy.
 * Without this, a frame resent after a spurious NACK (reordering) stays
 * unacked when only the first copy's ACK comes back, and is sent a third time.
 *
 * A slot per recent datagram names a run in one shared ring of reliable
 * indexes, written in send order, rather than max_frames_per_datagram
 * entries per datagram: a datagram of 800 B messages carries one frame, and
 * the fixed layout cost 8 KiB per connection for the seven unused entries.
 * The ring holds as many frame copies as there are slots; when it wraps
 * first (datagrams of many small frames), a datagram's run is partly
 * overwritten and those frames fall back, like datagrams older than the
 * history, to matching the frame's last_dgram_seq.
 *
 * Both hold four times the frames in flight: 64 at first, doubled (up to
 * four windows) when more are in flight, or when a slot about to be
 * reused still waits for its datagram's ACK (loss or delay) and names a
 * frame not yet acknowledged; a lost datagram whose frames arrived in
 * later copies is no reason to grow. A connection
 * with a few messages out at a time on a clean path keeps 0.8 KiB, not
 * the 3.3 KiB four windows take.
 */
struct sent_history {
	uint32_t *tag; /* seq | SENT_HISTORY_VALID per slot */
	uint32_t *first; /* per slot: ring position of its first reliable index */
	uint8_t *count; /* reliable frames recorded per slot */
	/* per slot: its datagram's send time (low 32 bits of the µs clock).
	 * An ACK names datagrams, and every copy of a frame goes in a new
	 * one, so the ACK of any datagram times that datagram alone: no
	 * retransmission ambiguity (Karn's) to avoid. */
	uint32_t *sent_us;
	uint32_t *ring; /* reliable indexes, at position & (size - 1) */
	uint32_t ring_head; /* next position written (wraps at 2^32, harmlessly) */
	/* Slots whose tag is valid: an ACK (which names again up to
	 * CONN_ACK_REPEAT_SPAN recent datagrams) stops looking once it has
	 * cleared them all. */
	uint32_t valid;
	/* No slot for a seq older than this is valid (a lower bound, kept
	 * within size of next_dgram_seq): with a window in flight some slot
	 * is always valid, so without it every ACK walked all the recent seqs
	 * it names again, cleared long ago (an eighth of a bulk sender's ACK
	 * work). */
	uint32_t oldest_valid;
	uint32_t size; /* slots, and ring entries: a power of two */
	uint32_t max_size; /* four windows */
};
#define SENT_HISTORY_MIN 64u
/* flush.c: (re)makes the history with size slots (a power of two, larger
 * than now), keeping what it holds; 0 or RUDP_CONN_E_NOMEM (unchanged). */
int sent_history_resize(struct sent_history *h, uint32_t size);
#define SENT_HISTORY_VALID 0x80000000u

/* ---- the connection ---- */

struct rudp_conn {
	struct rudp_conn_config cfg;
	struct rudp_conn_callbacks cb;
	struct rudp_conn_identity id;
	enum rudp_conn_role role;
	enum rudp_conn_state state;

	uint64_t now_us; /* latest time passed in; next_deadline() is const and needs it */
	uint64_t created_us;
	uint64_t last_recv_us;
	uint64_t last_send_us;
	uint64_t disconnect_start_us;

	uint32_t payload_max; /* UDP payload bytes per datagram */
	uint32_t frag_body_max; /* largest body we put in one frame */

	/* send side */
	struct sendq rel; /* reliable frames, oldest unacked first */
	struct sendq unrel; /* unreliable frames, released when sent */
	uint32_t rel_sent; /* frames [0, rel_sent) of rel were sent at least once */
	uint32_t rel_unacked; /* sent frames not acked yet */
	uint32_t next_reliable_index;
	uint32_t next_dgram_seq;
	uint16_t next_split_id;
	uint32_t order_write[CONN_CHANNELS];
	uint32_t sequenced_write[CONN_CHANNELS];
	/* payload_max bytes, made on first use: only when the owner gives no
	 * datagram_buffer (conn_datagram_buffer) */
	uint8_t *dgram_buf;
	struct sent_history sent;
	struct flush_ref *flush_refs; /* max_frames_per_datagram entries */
	struct rtt_estimator rtt;
	struct congestion cc;
	uint8_t probes_without_ack; /* tail-loss probes sent since the last ACK progress */
	uint32_t nack_resends_since_ack; /* frames NACKs or loss inference marked for resend since then */
	uint64_t ack_progress_us; /* when an ACK last acknowledged a reliable frame (frame_rto_deadline) */
	uint64_t rel_unsent_wire; /* encoded bytes of rel[rel_sent ..): queued, never sent */
	/* What lets a flush and the deadline skip their walks over the frames
	 * in flight (five per flush with its deadline; with a window of 64 and
	 * a dozen messages per flush they were a twentieth of a busy client's
	 * CPU). resend_pending: some sent frame may be FRAME_NACKED; set
	 * wherever a frame is marked, cleared by a flush walk that left none.
	 * rto_due_us: the earliest frame_rto_deadline of the frames in flight,
	 * set by every walk (flush_data's, and flush_note_rto_due after an
	 * ACK, whose progress restarts the timers) and lowered by every send
	 * (commit_reliable); 0 before the first flush. newest_sent_index: the
	 * frame sent last (of those sent in the same microsecond, the highest
	 * index), which while still in flight is the newest in flight that
	 * the tail probe resends. */
	bool resend_pending;
	bool newest_sent_valid;
	uint32_t newest_sent_index;
	uint64_t newest_sent_us;
	uint64_t rto_due_us;

	/* acknowledgements */
	struct ack_tracker acktr;
	/* Decoded records of one incoming ACK and the same normalized: ack_cap
	 * of each, grown on demand (doubling) up to max_ack_ranges. */
	struct rudp_wire_range *ack_scratch;
	struct ack_key_range *ack_keys;
	uint32_t ack_cap;

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
	uint64_t frames_dropped; /* mirrored into stats.frames_dropped */
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
};

/*
 * When a frame in flight times out: its RTO (backed off) after its send, or
 * after the last ACK that acknowledged anything, whichever is later (RFC
 * 6298 5.3 restarts the timer on such an ACK). While ACKs make progress the
 * peer is alive and reading, and a frame lost meanwhile is found by the
 * NACK or loss inference that the later datagrams' ACKs bring; a timer
 * from the send alone fired whenever the round trip grew past an RTO
 * learnt before, and under a burst's queues that was most frames (a
 * resend of each, which lengthened the queues). The RTO is left for what
 * it is for: the peer or the path gone quiet.
 */
static inline uint64_t frame_rto_deadline(const struct rudp_conn *c, const struct sendq_frame *f)
{
	uint64_t restarted = c->ack_progress_us + (f->deadline_us - f->last_send_us);

	return restarted > f->deadline_us ? restarted : f->deadline_us;
}

/* Sets rto_due_us to the earliest frame_rto_deadline of the frames in
 * flight (UINT64_MAX: none), by a walk: after an ACK, whose progress
 * restarts the timers and whose frames leave the flight. */
void flush_note_rto_due(struct rudp_conn *c);

struct flush_ref {
	uint8_t kind; /* FLUSH_NEW, FLUSH_RETX_NACK, FLUSH_RETX_RTO, FLUSH_UNREL */
	uint32_t index;
};

struct ack_key_range {
	int32_t lo; /* distances from next_dgram_seq, negative for sent seqs */
	int32_t hi;
};

/* conn.c */
void conn_close(struct rudp_conn *c, enum rudp_conn_close_reason reason);
/* Where to build the next outgoing datagram (payload_max bytes): the
 * owner's buffer (callbacks.datagram_buffer) or the conn's own. NULL when
 * out of memory: the caller sends nothing now, as if the owner refused. */
uint8_t *conn_datagram_buffer(struct rudp_conn *c);
/* Queues a message without the checks rudp_conn_send does for the app
 * (state, control first byte, queue budget). */
int conn_queue_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
		       uint8_t channel, bool enforce_budget);

/* conn_recv.c: a decoded, valid frame-set datagram's frames; dup_dgram:
 * the datagram was seen before (its unreliable frames are dropped).
 * Returns true when the datagram may be acknowledged (false: a frame was
 * deferred for lack of room and must be sent again by the peer). */
bool conn_recv_frame(struct rudp_conn *c, const struct rudp_wire_frame *f, bool dup_dgram, uint64_t now_us);

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
void conn_count_bad_frame(struct rudp_conn *c);
/* After an ACK: DISCONNECTING conns close once everything is acknowledged. */
void conn_check_disconnect_done(struct rudp_conn *c);
/* DISCONNECTING with our 0x15 not queued for want of memory: try again. */
void conn_retry_disconnect(struct rudp_conn *c);
/* Timeouts (dead peer, unacked data, handshake, linger). True when it closed. */
bool conn_check_timers(struct rudp_conn *c, uint64_t now_us);
/* Queues a connected ping when nothing was sent for keepalive_us. */
void conn_maybe_queue_keepalive(struct rudp_conn *c, uint64_t now_us);

/* flush.c: sends every pending ACK (or NACK) range as ACK datagrams.
 * Returns the number sent; sets *blocked when the owner refused one (the
 * rest stays queued). */
int conn_emit_acks(struct rudp_conn *c, bool nack, uint64_t now_us, bool *blocked);
/* flush.c: when a tail-loss probe is due (UINT64_MAX: none). */
uint64_t flush_probe_deadline(const struct rudp_conn *c);
/* flush.c: builds and sends data datagrams within limits (NULL: none);
 * sets *blocked when the owner refused one, *budget_spent when the byte
 * budget stopped it. Returns the number sent. */
int flush_data(struct rudp_conn *c, uint64_t now_us, const struct rudp_conn_flush_limits *limits,
	       bool *blocked, bool *budget_spent);

/* Test hook: start the counters somewhere (e.g. near 2^24 to cross the wrap).
 * Sets both what this side sends next and what it expects from the peer, so
 * call it on both ends with the same values right after create. */
void rudp_conn_test_set_counters(struct rudp_conn *c, uint32_t dgram_seq, uint32_t reliable_index,
				 uint32_t order_index, uint16_t split_id);

#endif
