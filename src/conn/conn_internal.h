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
#include "conn/loss.h"
#include "conn/conn.h"
#include "conn/reassembly.h"
#include "conn/recv.h"
#include "conn/rtt.h"
#include "conn/sendq.h"
#include "rudp_version.h"

#define CONN_CHANNELS RUDP_WIRE_ORDER_CHANNELS

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
	uint32_t next_reliable_index;
	uint32_t next_dgram_seq;
	uint16_t next_split_id;
	uint32_t order_write[CONN_CHANNELS];
	uint32_t sequenced_write[CONN_CHANNELS];
	/* payload_max bytes, made on first use: only when the owner gives no
	 * datagram_buffer (conn_datagram_buffer) */
	uint8_t *dgram_buf;
	struct flush_ref *flush_refs; /* max_frames_per_datagram entries */
	struct loss_engine loss; /* what became of the reliable frames sent */
	struct congestion cc;
	uint64_t rel_unsent_wire; /* encoded bytes of rel[rel_sent ..): queued, never sent */

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

struct flush_ref {
	uint8_t kind; /* FLUSH_NEW, FLUSH_RETX_NACK, FLUSH_RETX_RTO, FLUSH_UNREL */
	uint32_t index;
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
