/* SPDX-License-Identifier: MIT */
/*
 * conn: one RakNet connection's reliability engine, sans-I/O.
 *
 * No syscalls and no clock reads: the owner passes the current time (in
 * microseconds, any monotonic origin) into every call, feeds received
 * datagrams in with rudp_conn_on_datagram(), queues messages with
 * rudp_conn_send(), and calls rudp_conn_flush() to get datagrams out through
 * the send_datagram callback. rudp_conn_next_deadline() says when flush must
 * next be called even if nothing arrives (retransmission, ACK, keepalive,
 * timeout). Messages and state changes come back through callbacks, called
 * synchronously from inside on_datagram / flush / send / disconnect / abort.
 * A callback may call rudp_conn_send, _disconnect or _abort on its conn, but
 * must not destroy it: destroy after the outer call has returned.
 *
 * The connected part of the RakNet handshake (0x09 connection request, 0x10
 * accepted, 0x13 new incoming connection), connected ping/pong (0x00/0x03)
 * and the disconnection notification (0x15) are handled here; the offline
 * handshake (0x05..0x08) belongs to the host.
 */
#ifndef RUDP_CONN_H
#define RUDP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

struct shared_body; /* common/shared_body.h */

enum rudp_conn_role {
	RUDP_CONN_CLIENT, /* sends 0x09 at init, waits for 0x10, answers 0x13 */
	RUDP_CONN_SERVER, /* waits for 0x09, answers 0x10, connected on 0x13 */
};

enum rudp_conn_state {
	RUDP_CONN_STATE_CONNECTING, /* online handshake under way */
	RUDP_CONN_STATE_CONNECTED,
	RUDP_CONN_STATE_DISCONNECTING, /* local disconnect: draining reliable data, then 0x15 acked */
	RUDP_CONN_STATE_CLOSED, /* final; the owner may destroy it */
};

/* Why a connection closed; mirrors the public rudp_disconnect_reason. */
enum rudp_conn_close_reason {
	RUDP_CONN_CLOSE_LOCAL = 1, /* rudp_conn_disconnect() finished */
	RUDP_CONN_CLOSE_REMOTE = 2, /* peer sent 0x15 */
	RUDP_CONN_CLOSE_TIMEOUT = 3, /* nothing heard for timeout_us, or data never acked */
	RUDP_CONN_CLOSE_CONNECT_FAILED = 4, /* online handshake did not complete in time */
	RUDP_CONN_CLOSE_PROTOCOL = 5, /* peer broke the protocol beyond repair */
};

struct rudp_conn_config {
	uint16_t mtu; /* negotiated RakNet MTU (counts 28 B of IP/UDP) */
	uint16_t ip_udp_overhead; /* 28 for IPv4, 48 for IPv6: payload max = mtu - overhead */
	uint32_t window_frames; /* reliable frames in flight, default 64 */
	uint32_t max_frames_per_datagram; /* coalescing limit, default 8 */
	uint32_t max_queue_bytes; /* bytes queued not yet acked, per conn; send refuses beyond */
	uint32_t max_split_count; /* fragments one incoming message may declare */
	uint32_t max_split_ids; /* incomplete split messages held at once */
	uint32_t max_reassembly_bytes; /* bytes reserved for incomplete split messages */
	uint32_t max_message_size; /* largest message sent or accepted, bytes */
	uint32_t max_order_hold; /* out-of-order messages held per channel */
	uint32_t recv_window; /* reliable-index dedup window; ahead of it is dropped */
	uint32_t max_ack_ranges; /* ACK/NACK records processed per datagram */
	/* A datagram seq further ahead of the highest seen is dropped, not
	 * adopted, unless the peer goes on from there (acktr.c, acktr_on_dgram_seq) */
	uint32_t max_dgram_seq_jump;
	uint64_t rto_initial_us; /* before any RTT sample */
	uint64_t rto_min_us;
	uint64_t rto_max_us;
	uint64_t keepalive_us; /* connected ping when idle this long */
	uint64_t timeout_us; /* dead peer: nothing received this long */
	uint64_t connect_timeout_us; /* online handshake must finish within this */
	uint64_t disconnect_linger_us; /* local disconnect gives up draining after this */
	uint8_t protocol_version; /* selects 10 vs 20 internal addresses (>= 11: 20) */
	/* enum rudp_conn_cc: NONE (0) only window_frames, AIMD (1) a window
	 * over reliable frames (cc.c), RATE (2) paced at an estimate of the
	 * path's bandwidth (cc_rate.c); other values are NONE. Default
	 * RUDP_DEFAULT_CONGESTION_CONTROL (conn/defaults.h). */
	uint8_t congestion_control;
	/* Tail-loss probe slack, µs: the oldest frame in flight (and the rest
	 * of its datagram) goes again srtt + max(2 * rttvar, this) after its
	 * send (4 * rttvar over three minimum RTTs), and at
	 * least srtt / 4 + this after the last ACK that acknowledged
	 * something (loss.c). Default RUDP_DEFAULT_PROBE_MARGIN_US. */
	uint64_t probe_margin_us;
	/* ACK thinning (acktr.h, acktr_note_queued): received data datagrams
	 * are acknowledged once ack_every of them wait or ack_delay_us after
	 * the first, whichever is first; a gap, a late datagram and the
	 * handshake at once. The peer is taken to do the same: our tail
	 * probe and RTO allow it ack_delay_us (loss.c). 1 or 0: an ACK per
	 * datagram, as before thinning. Defaults RUDP_DEFAULT_ACK_EVERY,
	 * RUDP_DEFAULT_ACK_DELAY_US; at most 64 and 100 ms. */
	uint32_t ack_every;
	uint64_t ack_delay_us;
};

enum rudp_conn_cc {
	RUDP_CONN_CC_NONE = 0,
	RUDP_CONN_CC_AIMD = 1,
	RUDP_CONN_CC_RATE = 2,
};
/* Fills the defaults, the same as the public rudp_config_init's (both take
 * them from conn/defaults.h): MTU 1492 (IPv4 overhead 28), window 64
 * frames, 8 frames per datagram, max_queue_bytes 32 MiB, max_split_count
 * 8192, max_split_ids 32, max_reassembly_bytes 8 MiB, max_message_size
 * 4 MiB, max_order_hold 4096, recv_window 8192 (the host widens it to four
 * windows), max_ack_ranges 256, max_dgram_seq_jump 1024, RTO 200 ms
 * initial / 30 ms min / 2 s max, keepalive 2 s, timeout 10 s, connect
 * timeout 5 s, linger 2 s, protocol 11, congestion control as the public
 * default, tail-probe margin 250 µs, an ACK per 2 datagrams or 2 ms
 * (conn/defaults.h). With these
 * a 4 MiB message goes through at MTU 576 too. */
void rudp_conn_config_init(struct rudp_conn_config *cfg);

struct rudp_conn_callbacks {
	void *ud;
	/* A finished datagram; the buffer is only valid during the call. Returns
	 * 0, or < 0 when the owner cannot take it now (then flush stops early and
	 * tries again next time; nothing is lost). */
	int (*send_datagram)(void *ud, const uint8_t *data, size_t len);
	/* Optional (may be NULL): a buffer of at least len bytes to build the
	 * next outgoing datagram in, then passed to send_datagram; it must stay
	 * valid until then, and a second call before that must return the same
	 * buffer. NULL: the conn builds in a buffer of its own. The host hands
	 * out its next I/O send slot, so datagrams are written once, in place,
	 * and no connection keeps an MTU-sized buffer of its own. */
	uint8_t *(*datagram_buffer)(void *ud, size_t len);
	/* An application message, in delivery order; data valid during the call. */
	void (*deliver)(void *ud, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel);
	/* Optional (may be NULL: the owner always has room). Called before a
	 * reliable frame counts as received, with what the frame may hand to
	 * deliver (and connected) at once: its own message, those waiting
	 * behind it on its channel, a connecting client's early ones; or once
	 * for all the frames of a datagram (those of a connected conn, none
	 * split: each frame's own message, unreliable ones too). True:
	 * the owner has made room for them all, so those calls cannot fail.
	 * False (out of memory): the frame is not acknowledged and the peer
	 * sends it again later; nothing acknowledged is ever lost. */
	bool (*reserve_delivery)(void *ud, uint32_t messages, uint64_t bytes);
	/* The online handshake finished. */
	void (*connected)(void *ud);
	/* The connection is closed (state CLOSED); called once. */
	void (*closed)(void *ud, enum rudp_conn_close_reason reason);
};

struct rudp_conn_stats {
	uint64_t bytes_sent, bytes_received; /* UDP payload bytes */
	uint64_t datagrams_sent, datagrams_received;
	uint64_t messages_sent, messages_received; /* application messages */
	uint64_t frames_retransmitted;
	uint64_t nacks_received, acks_received; /* records */
	uint64_t datagrams_dropped; /* bad / unwanted input, counted and dropped */
	uint64_t duplicates_dropped; /* frames already received */
	uint32_t rtt_us, rtt_var_us, rto_us; /* smoothed RTT, variance, current RTO */
	uint32_t window_in_use; /* reliable frames in flight now */
	uint32_t window_frames;
	uint32_t send_queue_bytes; /* queued + unacked payload bytes */
	uint32_t reassembly_bytes; /* reserved for incomplete splits */
	uint64_t frames_dropped; /* bad / unwanted frames inside accepted datagrams
				    (window or split violations, refused splits) */
	uint32_t cwnd_bytes; /* congestion window, 0 when off */
	/* AIMD and off: encoded bytes of reliable frames sent, not acked or
	 * declared lost; RATE: UDP payload bytes of every datagram carrying
	 * frames, sent and not yet acked or declared lost */
	uint32_t in_flight_bytes;
	uint64_t cc_reductions; /* loss and timeout reductions of the window */
	/* frames_retransmitted by cause: reported missing (NACK), a later
	 * datagram acknowledged first (inferred), tail-loss probe, RTO */
	uint64_t resent_nack, resent_inferred, resent_probe, resent_timeout;
	/* resends an older copy's ACK showed unneeded (loss.c, ack_from_history) */
	uint64_t resent_spurious;
	/* RATE only (0 otherwise, and before the first sample): the path's
	 * bottleneck bandwidth estimate and the pacing rate, UDP payload
	 * bytes a second, and the minimum RTT the controller holds, µs */
	uint64_t bandwidth_bytes_per_s;
	uint64_t pacing_bytes_per_s;
	uint32_t min_rtt_us;
	/* redundant copies sent (rudp_conn_set_redundant_channels) */
	uint64_t frames_copied;
	/* unreliable messages dropped unsent at their lifetime's end */
	uint64_t unreliable_expired;
};

struct rudp_conn; /* opaque; defined in conn_internal.h */

/* A cheap live view of the connection (conn_status.c), for a status call
 * made every tick: O(1), no allocation. "Recent" runs from the start of
 * the previous 1 s bucket to now (window_us long: 1..2 s once the conn is
 * that old, longer after an idle spell with no datagrams or flushes), so
 * it never reads 0 just after a bucket ends. */
struct rudp_conn_status {
	uint64_t window_us;
	uint64_t send_bytes_per_s, recv_bytes_per_s; /* UDP payload over the window */
	/* Datagrams over the window. Send: carrying reliable frames, and of
	 * them NACKed or inferred lost (tail losses repaired by a probe or
	 * the RTO are not counted). Receive: expected from the seqs, and of
	 * them still missing. */
	uint64_t send_dgrams, send_dgrams_lost;
	uint64_t recv_dgrams_expected, recv_dgrams_missing;
	uint64_t bandwidth_bytes_per_s; /* RATE's estimate, else 0 */
	uint64_t reliable_unsent_bytes; /* encoded, queued and never sent */
	uint64_t unreliable_bytes; /* encoded, queued */
	uint64_t in_flight_bytes; /* encoded reliable frames sent, not acked or declared lost */
	uint64_t oldest_queued_us; /* when the oldest message not yet sent was queued; 0: none */
	uint32_t rtt_us, rtt_var_us;
	enum rudp_conn_state state;
};
/* Fills *out as of now_us (the conn's own time when later). */
void rudp_conn_get_status(const struct rudp_conn *c, uint64_t now_us, struct rudp_conn_status *out);
/* Bytes of memory the conn holds for queued data: send queue bodies
 * (reliable, unsent or unacknowledged, and unreliable) and their frame
 * records, reassembly reservations, and received messages held for their
 * turn on an ordered channel. A shared body (rudp_conn_send_shared) is
 * not counted, only its record here: its pool counts it once. O(1): what
 * a host-wide budget adds up. */
uint64_t rudp_conn_memory_bytes(const struct rudp_conn *c);
/* Its send queues' part, the only one a send changes: read before and
 * after a send, the difference is what the send added to the gauge
 * without touching the receive side's lines. */
uint64_t rudp_conn_send_memory_bytes(const struct rudp_conn *c);

struct rudp_conn_identity {
	int64_t local_guid;
	int64_t remote_guid; /* 0 when unknown */
	struct rudp_wire_addr local_addr; /* written into 0x10 / 0x13 */
	struct rudp_wire_addr remote_addr;
};

/* Creates a connection in state CONNECTING. A client queues its 0x09 at once
 * (it goes out on the first flush). cfg is copied; cb is copied. Returns NULL
 * on allocation failure only. */
struct rudp_conn *rudp_conn_create(const struct rudp_conn_config *cfg, const struct rudp_conn_callbacks *cb,
				   enum rudp_conn_role role, const struct rudp_conn_identity *id,
				   uint64_t now_us);
void rudp_conn_destroy(struct rudp_conn *c);

/* Feeds one received online datagram (frame set, ACK or NACK). Bad input is
 * counted in datagrams_dropped and ignored; returns 0 or a negative
 * RUDP_WIRE_* status describing why it was dropped (informational). */
int rudp_conn_on_datagram(struct rudp_conn *c, const uint8_t *p, size_t n, uint64_t now_us);

/* Redundancy for the reliable frames on the ordering channels in mask (bit
 * n: channel n; reliable-ordered and reliable-sequenced frames): each
 * new one is sent a second time, in a later datagram of the same flush,
 * before any ACK could say whether the first arrived. The copy keeps the
 * frame's reliable index, so the receiver (this library or a RakNet peer)
 * drops whichever comes second; a lost datagram costs nothing when the
 * other got through, at about twice the bytes. Resends are not copied.
 * 0 turns it off (the default). */
void rudp_conn_set_redundant_channels(struct rudp_conn *c, uint32_t mask);

/* Queues one application message. reliability is 0..4 (5..7 accepted as
 * 0/2/3), channel < 32 (ignored for unreliable / reliable). Messages larger
 * than one datagram are split. Returns 0 or a negative error:
 *   RUDP_CONN_E_STATE    not connected (or disconnecting/closed)
 *   RUDP_CONN_E_ARG      bad reliability/channel, empty, or a control first byte
 *   RUDP_CONN_E_TOO_LARGE larger than max_message_size or would need > max_split_count fragments
 *   RUDP_CONN_E_QUEUE_FULL would exceed max_queue_bytes (nothing queued)
 *   RUDP_CONN_E_NOMEM
 * Nothing is sent until rudp_conn_flush(). */
int rudp_conn_send(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel,
		   uint64_t now_us);
enum {
	RUDP_CONN_E_STATE = -101,
	RUDP_CONN_E_ARG = -102,
	RUDP_CONN_E_TOO_LARGE = -103,
	RUDP_CONN_E_QUEUE_FULL = -104,
	RUDP_CONN_E_NOMEM = -105,
	/* -106 and below: left to the layers above (src/policy) */
};

/* Message priorities (RakNet's). The conn checks them and queues every
 * message in FIFO order; a send scheduler above it (src/policy) is what
 * gives them a meaning. */
enum rudp_conn_priority {
	RUDP_CONN_PRIO_IMMEDIATE = 0,
	RUDP_CONN_PRIO_HIGH = 1,
	RUDP_CONN_PRIO_MEDIUM = 2,
	RUDP_CONN_PRIO_LOW = 3,
	RUDP_CONN_PRIORITIES = 4,
};

/* rudp_conn_send with a priority (rudp_conn_send uses MEDIUM): the same
 * returns, and priority >= RUDP_CONN_PRIORITIES is RUDP_CONN_E_ARG. */
int rudp_conn_send_ex(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
		      uint8_t channel, uint8_t priority, uint64_t now_us);

/* rudp_conn_send_ex for an unreliable or unreliable-sequenced message
 * that is dropped (and counted in stats.unreliable_expired) when a flush
 * finds it still unsent at expire_us (0: never). A message that must be
 * split travels reliably (rudp_conn_effective_reliability) and keeps no
 * lifetime. A reliable kind with expire_us != 0 is RUDP_CONN_E_ARG. */
int rudp_conn_send_expiring(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			    uint8_t channel, uint8_t priority, uint64_t now_us, uint64_t expire_us);
/* rudp_conn_send_expiring for an owner that has made its argument checks
 * itself, at least as strict (data of len > 0 bytes whose first is no
 * control id, reliability at most RUDP_WIRE_RELIABLE_SEQUENCED, channel
 * below RUDP_WIRE_ORDER_CHANNELS, a valid priority, expire_us only for an
 * unreliable kind): the same codes and queued frames, with the state, the
 * size and the queue's budget checked here. On 0, *grew is what
 * rudp_conn_send_memory_bytes grew by, so a caller keeping a total need
 * not read the gauge before and after. */
int rudp_conn_send_checked(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			   uint8_t channel, uint64_t now_us, uint64_t expire_us, uint64_t *grew);
/* rudp_conn_send_expiring with the body of a shared message: the frame
 * references it (taking a reference, released when the frame is sent and
 * acknowledged, expires or is dropped with the conn) instead of copying
 * it. A message that must be split is copied into the queue instead. */
int rudp_conn_send_shared(struct rudp_conn *c, struct shared_body *body, uint8_t reliability, uint8_t channel,
			  uint8_t priority, uint64_t now_us, uint64_t expire_us);

/* One shared message for many conns (rudp_send_many), with what does not
 * depend on the conn worked out once by rudp_conn_shared_send_init: its
 * checks, plain reliability, channel and the header size of one frame.
 * The caller keeps body alive while it uses the description. */
struct rudp_conn_shared_send {
	struct shared_body *body;
	uint64_t now_us;
	uint64_t expire_us;
	uint32_t len;
	uint8_t reliability; /* as given, for a message that must be split */
	uint8_t rel; /* plain */
	uint8_t channel; /* 0 unless ordered or sequenced */
	uint8_t priority;
	uint8_t hdr_len; /* of the message in one frame */
	bool reliable;
};
/* Fills m: 0, or RUDP_CONN_E_ARG for what rudp_conn_send_shared refuses
 * as arguments (then m must not be sent). */
int rudp_conn_shared_send_init(struct rudp_conn_shared_send *m, struct shared_body *body, uint8_t reliability,
			       uint8_t channel, uint8_t priority, uint64_t now_us, uint64_t expire_us);
/* rudp_conn_send_shared(c, m->body, ...) with m's arguments: the same
 * result, codes and queued frames (the argument checks were init's), with
 * only the conn's own checks left per conn; a conn not connected is left
 * as it is, its clock too. On 0, *grew is what rudp_conn_memory_bytes grew
 * by, so a caller keeping a total need not read the gauge again. */
int rudp_conn_send_shared_prepared(struct rudp_conn *c, const struct rudp_conn_shared_send *m,
				   uint64_t *grew);

/* Asks the CPU to start loading what rudp_conn_send_shared_prepared(c, m)
 * will touch, for a caller about to send to many conns in a row
 * (rudp_send_many), in two steps a few sends apart: the conn's own lines
 * of lines_of, and (once those are loaded) the queue's next frame record
 * of record_of. Either may be NULL. Changes nothing. */
void rudp_conn_prefetch_send(const struct rudp_conn *lines_of, const struct rudp_conn *record_of,
			     const struct rudp_conn_shared_send *m);

/* Emits everything due at now_us: ACKs and NACKs (as coalesced ranges),
 * retransmissions (NACKed, or RTO expired, with backoff), new frames within
 * the window (up to max_frames_per_datagram small messages per datagram,
 * without waiting to fill one), keepalive pings; detects timeouts. Returns
 * the number of datagrams emitted. */
int rudp_conn_flush(struct rudp_conn *c, uint64_t now_us);

/*
 * rudp_conn_flush in two steps, for a send scheduler that queues messages
 * between them (src/policy): it sees the room left after the control step
 * and queues only what may go out now.
 *
 * rudp_conn_flush_control: timeouts, ACKs and NACKs, keepalive. Returns the
 * number of datagrams emitted; *data_next is true when data frames may
 * follow (false: the conn closed, or the owner refused a datagram, and
 * this flush ends here, as rudp_conn_flush would).
 *
 * rudp_conn_flush_data: resends, new reliable frames within the window,
 * unreliable frames; call it only after flush_control set *data_next.
 * limits NULL: no byte budget, reliable frames before unreliable ones
 * (rudp_conn_flush). Returns the number of datagrams emitted; sets
 * *budget_spent (may be NULL) when the byte budget stopped it.
 */
struct rudp_conn_flush_limits {
	/* Datagram bytes this flush may emit; UINT64_MAX: no limit. The first
	 * datagram always goes, so a budget below one datagram still makes
	 * progress. */
	uint64_t max_bytes;
	/* New unreliable frames before new reliable ones (they are worthless
	 * late); resends still go first. */
	bool unreliable_first;
	/* The caller holds reliable messages it has not given the conn yet (a
	 * scheduler's stage): a conn that sent all it has is then at its
	 * window, not out of data, and the rate controller opens no burst for
	 * the next data. */
	bool more_staged;
};
int rudp_conn_flush_control(struct rudp_conn *c, uint64_t now_us, bool *data_next);
int rudp_conn_flush_data(struct rudp_conn *c, uint64_t now_us, const struct rudp_conn_flush_limits *limits,
			 bool *budget_spent);

/* Absolute time at which rudp_conn_flush() has work even if nothing arrives;
 * UINT64_MAX when none. Valid after any call above. */
uint64_t rudp_conn_next_deadline(const struct rudp_conn *c);

/* True when a flush now would emit something (NACKs, ACKs that thinning no
 * longer holds back, or sendable frames). Lets the owner keep a list of
 * conns to flush after a batch; held ACKs are in rudp_conn_next_deadline. */
bool rudp_conn_wants_flush(const struct rudp_conn *c);

/* Starts a graceful disconnect: queues 0x15 reliable-ordered behind all
 * queued data; the conn closes (reason LOCAL) when it is acknowledged, or
 * after disconnect_linger_us. Calling it again, or on a closed conn, is a no-op. */
void rudp_conn_disconnect(struct rudp_conn *c, uint64_t now_us);

/* Closes at once without telling the peer; closed() is called with reason. */
void rudp_conn_abort(struct rudp_conn *c, enum rudp_conn_close_reason reason);

enum rudp_conn_state rudp_conn_state(const struct rudp_conn *c);
void rudp_conn_get_stats(const struct rudp_conn *c, struct rudp_conn_stats *out);

/*
 * ---- for a send scheduler layered above the conn (src/policy) ----
 *
 * A scheduler holds messages back and queues them later, in an order of its
 * own. It asks the conn how much room is left, and it takes a message's
 * order and sequenced indexes when the application sends it, so an ordered
 * channel still delivers in send order whatever order the messages are
 * queued in. Sizes named "encoded" count frame headers too, as on the wire.
 */

/* The reliable window (config window_frames), and the reliable frames it
 * holds now: queued, or sent and not yet released by ACKs. */
uint32_t rudp_conn_window_frames(const struct rudp_conn *c);
uint32_t rudp_conn_window_frames_used(const struct rudp_conn *c);
/* Encoded bytes of those reliable frames, and of those never sent. */
uint64_t rudp_conn_reliable_bytes(const struct rudp_conn *c);
uint64_t rudp_conn_reliable_unsent_bytes(const struct rudp_conn *c);
/* Encoded bytes of the unreliable frames waiting to be sent. */
uint64_t rudp_conn_unreliable_bytes(const struct rudp_conn *c);
/* Message bytes the queues still take before max_queue_bytes (0 when full
 * or beyond: control messages do not count against it). */
uint64_t rudp_conn_queue_room(const struct rudp_conn *c);
/* Congestion room: whether the congestion window (AIMD's, or RATE's over
 * datagrams) lets reliable frames of `bytes` encoded bytes go out now
 * (always with congestion control off or nothing in flight); and whether
 * the unsent reliable bytes plus `bytes` would still leave half the window
 * free (always when off). Pacing is not in these: it opens within a
 * quantum (rudp_conn_pacing_room below). */
bool rudp_conn_congestion_allows(const struct rudp_conn *c, uint64_t bytes);
bool rudp_conn_congestion_half_free(const struct rudp_conn *c, uint64_t bytes);
/* Pacing room: the bytes the rate controller (RUDP_CC_RATE) lets go out
 * at now_us (its pacing budget, within its window), plus one pacing
 * quantum (a millisecond at the pacing rate, at least two datagrams) for
 * its next sends. A scheduler that keeps the unsent reliable bytes below
 * it commits about what the pacer sends soon, not the window's room (up
 * to a BDP more). UINT64_MAX with the other controllers (no pacing). */
uint64_t rudp_conn_pacing_room(const struct rudp_conn *c, uint64_t now_us);

/* Frames a message of len bytes takes (more than one: split), and their
 * encoded bytes with the given (effective) reliability. */
uint32_t rudp_conn_message_frames(const struct rudp_conn *c, size_t len);
uint64_t rudp_conn_message_encoded_bytes(const struct rudp_conn *c, size_t len, uint8_t reliability);
/* The reliability a message of len bytes travels with: the ack-receipt
 * kinds as their plain ones, and a split unreliable message reliably (a
 * lost fragment would lose it all). */
uint8_t rudp_conn_effective_reliability(const struct rudp_conn *c, size_t len, uint8_t reliability);

/* The checks rudp_conn_send makes before looking at sizes, without queueing
 * anything: advances the conn's time to now_us, then 0, or
 * RUDP_CONN_E_STATE (not connected) or RUDP_CONN_E_ARG (no data, bad
 * reliability or channel, a control first byte). */
int rudp_conn_check_send(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			 uint8_t channel, uint64_t now_us);
/* 0, or RUDP_CONN_E_TOO_LARGE when len exceeds max_message_size or would
 * need more than max_split_count fragments. */
int rudp_conn_check_size(const struct rudp_conn *c, size_t len);

/* The reliable window's gauges above, from one call (a scheduler reads
 * them all for each message it moves). */
struct rudp_conn_window_room {
	uint64_t reliable_bytes; /* rudp_conn_reliable_bytes */
	uint64_t reliable_unsent_bytes; /* rudp_conn_reliable_unsent_bytes */
	uint32_t window_frames; /* rudp_conn_window_frames */
	uint32_t window_frames_used; /* rudp_conn_window_frames_used */
};
void rudp_conn_get_window_room(const struct rudp_conn *c, struct rudp_conn_window_room *r);
/* What a scheduler needs to judge one message, from one call (the
 * queries above, for this message and this moment). */
struct rudp_conn_send_view {
	struct rudp_conn_window_room room;
	uint64_t encoded_bytes; /* rudp_conn_message_encoded_bytes, effective reliability */
	uint64_t memory_bytes; /* what queueing it adds to the conn's memory gauge */
	uint64_t queue_room; /* rudp_conn_queue_room */
	uint32_t frames; /* rudp_conn_message_frames */
	uint8_t reliability; /* rudp_conn_effective_reliability */
	uint8_t channel; /* the channel, 0 for kinds without one */
};
/* rudp_conn_check_send, then RUDP_CONN_E_ARG for a priority not below
 * RUDP_CONN_PRIORITIES, then rudp_conn_check_size; on 0 fills *v. */
int rudp_conn_check_message(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			    uint8_t channel, uint8_t priority, uint64_t now_us,
			    struct rudp_conn_send_view *v);

/* A message's order and sequenced indexes on its channel. */
struct rudp_conn_msg_indexes {
	uint32_t order_index;
	uint32_t sequenced_index;
};
/* Takes the next indexes of the channel for a message of the given
 * (effective) reliability (zeros for kinds that have none), and counts the
 * message as sent (stats.messages_sent): the application sent it now,
 * whenever it is queued. */
void rudp_conn_take_indexes(struct rudp_conn *c, uint8_t reliability, uint8_t channel,
			    struct rudp_conn_msg_indexes *ix);
/* Queues a message checked already, without the queue budget check. ix:
 * the indexes taken when it was sent; NULL takes them now, once the queue
 * has room (so a failure takes none) and counts it as sent, as
 * rudp_conn_take_indexes does. Returns 0, RUDP_CONN_E_QUEUE_FULL (too many
 * reliable frames for the 24-bit index space) or RUDP_CONN_E_NOMEM;
 * nothing is queued on failure. */
int rudp_conn_queue_indexed(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
			    uint8_t channel, const struct rudp_conn_msg_indexes *ix);

#endif
