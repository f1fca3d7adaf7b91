/* SPDX-License-Identifier: MIT */
/*
 * The connection: creation and limits, the state machine, the connected
 * control messages (0x09 request, 0x10 accepted, 0x13 new incoming, 0x00/0x03
 * ping/pong, 0x15 disconnect), timers, deadlines and stats. Datagrams in are
 * dispatched from here to ackq.c (ACK/NACK) and recv.c (frame sets).
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
/* Room for an encoded 0x10 or 0x13: addresses at their IPv6 size. */
#define CONN_ANSWER_MAX (RUDP_WIRE_ADDR6_LEN * (RUDP_WIRE_MAX_INTERNAL_ADDRS + 1) + 64)

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
	cfg->congestion_control = false; /* rudp_config_init's default: see include/rudp.h */
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
}

static int64_t time_ms(uint64_t now_us)
{
	return (int64_t)(now_us / 1000u);
}

static void make_unassigned_addr(struct rudp_wire_addr *a)
{
	/* "No address here": 255.255.255.255 port 0, as RakNet-style peers fill
	 * the unused entries of their internal address lists. */
	memset(a, 0, sizeof(*a));
	a->version = 4;
	memset(a->ip, 0xff, 4);
}

static uint8_t internal_addr_count(const struct rudp_conn *c)
{
	return c->cfg.protocol_version >= 11 ? 20 : 10;
}

static void queue_control(struct rudp_conn *c, const uint8_t *body, int len, uint8_t reliability)
{
	/* Control messages bypass the app's queue budget: the handshake and pongs
	 * must not fail because the app filled the queue. */
	if (len > 0)
		conn_queue_message(c, body, (size_t)len, reliability, 0, false);
}

static void queue_connection_request(struct rudp_conn *c, uint64_t now_us)
{
	struct rudp_wire_connection_request req = {
		.client_guid = c->id.local_guid,
		.time = time_ms(now_us),
		.security = false,
	};
	uint8_t buf[64];

	queue_control(c, buf, rudp_wire_encode_connection_request(buf, sizeof(buf), &req),
		      RUDP_WIRE_RELIABLE);
}

struct rudp_conn *rudp_conn_create(const struct rudp_conn_config *cfg, const struct rudp_conn_callbacks *cb,
				   enum rudp_conn_role role, const struct rudp_conn_identity *id,
				   uint64_t now_us)
{
	struct rudp_conn *c = calloc(1, sizeof(*c));
	uint32_t body_max;

	if (!c)
		return NULL;
	c->cfg = *cfg;
	sanitize_config(&c->cfg);
	c->cb = *cb;
	if (id)
		c->id = *id;
	c->role = role;
	c->state = RUDP_CONN_STATE_CONNECTING;
	c->now_us = now_us;
	c->created_us = now_us;
	c->last_recv_us = now_us;
	c->last_send_us = now_us;

	c->payload_max = (uint32_t)c->cfg.mtu - c->cfg.ip_udp_overhead;
	body_max = c->payload_max - RUDP_WIRE_DGRAM_HEADER_LEN - RUDP_WIRE_FRAME_HEADER_MAX;
	c->frag_body_max = body_max > CONN_MAX_FRAME_BODY ? CONN_MAX_FRAME_BODY : body_max;

	sendq_init(&c->rel);
	sendq_init(&c->unrel);
	/* A full window of full datagrams is the most the window could ever use. */
	cc_init(&c->cc, c->cfg.congestion_control, c->payload_max, c->cfg.window_frames * c->payload_max);
	struct loss_config loss_cfg = {
		.window_frames = c->cfg.window_frames,
		.max_ack_ranges = c->cfg.max_ack_ranges,
		.rto_initial_us = c->cfg.rto_initial_us,
		.rto_min_us = c->cfg.rto_min_us,
		.rto_max_us = c->cfg.rto_max_us,
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
	    acktr_init(&c->acktr, c->cfg.max_dgram_seq_jump) < 0 ||
	    recv_init(&c->rx, c->cfg.recv_window, c->payload_max, c->cfg.max_order_hold) < 0 ||
	    reasm_init(&c->reasm, c->payload_max, &reasm_lim) < 0) {
		rudp_conn_destroy(c);
		return NULL;
	}
	if (role == RUDP_CONN_CLIENT) {
		queue_connection_request(c, now_us);
		if (c->rel.frames_count == 0) {
			rudp_conn_destroy(c);
			return NULL;
		}
	}
	return c;
}

static void free_early(struct rudp_conn *c);

uint8_t *conn_datagram_buffer(struct rudp_conn *c)
{
	if (c->cb.datagram_buffer) {
		uint8_t *p = c->cb.datagram_buffer(c->cb.ud, c->payload_max);

		if (p)
			return p;
	}
	if (!c->dgram_buf)
		c->dgram_buf = malloc(c->payload_max);
	return c->dgram_buf;
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
	free_early(c);
	free(c->dgram_buf);
	loss_free(&c->loss);
	free(c->flush_refs);
	free(c);
}

/* ---- state ---- */

void conn_close(struct rudp_conn *c, enum rudp_conn_close_reason reason)
{
	if (c->closed_reported)
		return;
	c->state = RUDP_CONN_STATE_CLOSED;
	c->closed_reported = true;
	if (c->cb.closed)
		c->cb.closed(c->cb.ud, reason);
}

/* Held early messages: as many as the array holds, and at most this many
 * bytes (a server has no business sending more before it is answered). */
#define CONN_EARLY_MAX (sizeof(((struct rudp_conn *)0)->early) / sizeof(((struct rudp_conn *)0)->early[0]))
#define CONN_EARLY_BYTES (64u * 1024u)

static void free_early(struct rudp_conn *c)
{
	for (uint32_t i = 0; i < c->early_count; i++)
		free(c->early[i].data);
	c->early_count = 0;
	c->early_bytes = 0;
	free(c->early_spare);
	c->early_spare = NULL;
	c->early_spare_cap = 0;
}

/*
 * Some servers (raknet-node) send data as soon as they have our connection
 * request, and their 0x10 can come after it: a resend, after ours was
 * retried, or queued behind the application's first messages on the same
 * ordered channel. What a connecting client acknowledges it must keep, or
 * the message is lost for good: so a reliable application frame is taken
 * only when it can be kept for delivery after the handshake: within the
 * early bounds, with its room made now, and deliverable as it stands. A
 * split message's room is the whole message's (its fragment count times
 * the largest fragment), set aside when its first fragment opens a
 * reassembly slot (reasm_open marks it early); the reassembly buffer then
 * becomes the early message, without a copy. Only reliable and reliable
 * ordered sets are taken so. The rest is deferred, not acknowledged, and
 * the server sends it again, by when we are connected: an ordered message
 * ahead of its turn (it would wait in the order hold and come out later,
 * beyond what was reserved here) and whatever does not fit. A server that
 * sends more than fits before its 0x10 gets the 0x10 handled anyway: a
 * control message ahead of its turn does not wait (order_on_message).
 */
bool conn_reserve_early(struct rudp_conn *c, const struct rudp_wire_frame *f, bool held)
{
	size_t len = f->body_len;
	uint32_t split_msgs;
	uint64_t split_bytes;

	if (c->role != RUDP_CONN_CLIENT || c->state != RUDP_CONN_STATE_CONNECTING)
		return true;
	if (!f->split && len > 0 && rudp_wire_is_control_id(f->body[0]))
		return true;
	if (held)
		return false;
	if (f->split && reasm_is_open(&c->reasm, f->split_id))
		return true; /* its room was set aside with the first fragment */
	if (f->split && f->reliability != RUDP_WIRE_RELIABLE && f->reliability != RUDP_WIRE_RELIABLE_ORDERED)
		return false;
	reasm_early_reserved(&c->reasm, &split_msgs, &split_bytes);
	if (f->split)
		return c->early_count + split_msgs < CONN_EARLY_MAX &&
		       c->early_bytes + split_bytes + reasm_need(&c->reasm, f->split_count) <=
			       CONN_EARLY_BYTES;
	if (c->early_count + split_msgs >= CONN_EARLY_MAX ||
	    c->early_bytes + split_bytes + len > CONN_EARLY_BYTES)
		return false;
	if (!c->early_spare || c->early_spare_cap < len) {
		uint8_t *copy = malloc(len ? len : 1);

		if (!copy)
			return false;
		free(c->early_spare);
		c->early_spare = copy;
		c->early_spare_cap = len ? len : 1;
	}
	return true;
}

static void become_connected(struct rudp_conn *c)
{
	c->state = RUDP_CONN_STATE_CONNECTED;
	if (c->cb.connected)
		c->cb.connected(c->cb.ud);
	/* Then what the server sent before we had its 0x10, in order. */
	for (uint32_t i = 0; i < c->early_count && c->state == RUDP_CONN_STATE_CONNECTED; i++) {
		c->stats.messages_received++;
		if (c->cb.deliver)
			c->cb.deliver(c->cb.ud, c->early[i].data, c->early[i].len, c->early[i].reliability,
				      c->early[i].channel);
	}
	free_early(c);
}

void conn_count_bad_frame(struct rudp_conn *c)
{
	c->frames_dropped++;
}

void conn_check_disconnect_done(struct rudp_conn *c)
{
	if (c->state == RUDP_CONN_STATE_DISCONNECTING && !c->disconnect_unqueued && c->rel.frames_count == 0)
		conn_close(c, RUDP_CONN_CLOSE_LOCAL);
}

/* Queues our 0x15: reliable ordered on channel 0, behind everything queued,
 * so it is the last reliable frame and once everything is acked the peer
 * has it all. Out of memory it is left for a later flush
 * (conn_retry_disconnect) rather than closing at once, which would drop
 * whatever reliable data is still queued and leave the peer to time out. */
static void queue_disconnect(struct rudp_conn *c)
{
	uint8_t body[1];
	int len = rudp_wire_encode_disconnect(body, sizeof(body));

	c->disconnect_unqueued = len <= 0 || conn_queue_message(c, body, (size_t)len,
								RUDP_WIRE_RELIABLE_ORDERED, 0, false) < 0;
}

void conn_retry_disconnect(struct rudp_conn *c)
{
	if (c->state == RUDP_CONN_STATE_DISCONNECTING && c->disconnect_unqueued)
		queue_disconnect(c);
}

void rudp_conn_disconnect(struct rudp_conn *c, uint64_t now_us)
{
	if (now_us > c->now_us)
		c->now_us = now_us;
	now_us = c->now_us;
	if (c->state == RUDP_CONN_STATE_CLOSED || c->state == RUDP_CONN_STATE_DISCONNECTING)
		return;
	if (c->state == RUDP_CONN_STATE_CONNECTING) {
		/* Nothing to drain and nobody to tell yet. */
		conn_close(c, RUDP_CONN_CLOSE_LOCAL);
		return;
	}
	/* The linger bounds the close whether or not the 0x15 could be queued. */
	c->state = RUDP_CONN_STATE_DISCONNECTING;
	c->disconnect_start_us = now_us;
	queue_disconnect(c);
}

void rudp_conn_abort(struct rudp_conn *c, enum rudp_conn_close_reason reason)
{
	conn_close(c, reason);
}

enum rudp_conn_state rudp_conn_state(const struct rudp_conn *c)
{
	return c->state;
}

/* ---- control messages ---- */

static void on_connection_request(struct rudp_conn *c, const uint8_t *data, size_t len, uint64_t now_us)
{
	struct rudp_wire_connection_request req;
	struct rudp_wire_connection_accepted acc;
	uint8_t buf[CONN_ANSWER_MAX];

	if (c->role != RUDP_CONN_SERVER || rudp_wire_decode_connection_request(data, len, &req) < 0) {
		conn_count_bad_frame(c);
		return;
	}
	if (c->answered_request)
		return; /* a duplicate request; our 0x10 is reliable already */
	c->answered_request = true;
	c->id.remote_guid = req.client_guid;
	c->peer_request_time = req.time;

	memset(&acc, 0, sizeof(acc));
	acc.client_addr = c->id.remote_addr;
	acc.system_index = 0;
	acc.n_internal = internal_addr_count(c);
	for (uint32_t i = 0; i < acc.n_internal; i++)
		make_unassigned_addr(&acc.internal[i]);
	acc.request_time = req.time;
	acc.accepted_time = time_ms(now_us);
	queue_control(c, buf, rudp_wire_encode_connection_accepted(buf, sizeof(buf), &acc),
		      RUDP_WIRE_RELIABLE);
}

static void on_connection_accepted(struct rudp_conn *c, const uint8_t *data, size_t len, uint64_t now_us)
{
	struct rudp_wire_connection_accepted acc;
	struct rudp_wire_new_incoming_connection nic;
	uint8_t buf[CONN_ANSWER_MAX];

	if (c->role != RUDP_CONN_CLIENT || rudp_wire_decode_connection_accepted(data, len, &acc) < 0) {
		conn_count_bad_frame(c);
		return;
	}
	if (c->state != RUDP_CONN_STATE_CONNECTING)
		return; /* duplicate */

	memset(&nic, 0, sizeof(nic));
	nic.server_addr = c->id.remote_addr;
	nic.n_internal = internal_addr_count(c);
	for (uint32_t i = 0; i < nic.n_internal; i++)
		make_unassigned_addr(&nic.internal[i]);
	nic.request_time = time_ms(now_us);
	nic.accepted_time = acc.accepted_time;
	queue_control(c, buf, rudp_wire_encode_new_incoming_connection(buf, sizeof(buf), &nic),
		      RUDP_WIRE_RELIABLE_ORDERED);
	become_connected(c);
}

static void on_new_incoming_connection(struct rudp_conn *c, const uint8_t *data, size_t len)
{
	struct rudp_wire_new_incoming_connection nic;

	if (c->role != RUDP_CONN_SERVER || rudp_wire_decode_new_incoming_connection(data, len, &nic) < 0) {
		conn_count_bad_frame(c);
		return;
	}
	if (c->state == RUDP_CONN_STATE_CONNECTING && c->answered_request)
		become_connected(c);
}

static void on_ping(struct rudp_conn *c, const uint8_t *data, size_t len, uint64_t now_us)
{
	struct rudp_wire_connected_ping ping;
	struct rudp_wire_connected_pong pong;
	uint8_t buf[32];

	if (rudp_wire_decode_connected_ping(data, len, &ping) < 0) {
		conn_count_bad_frame(c);
		return;
	}
	pong.ping_time = ping.time;
	pong.pong_time = time_ms(now_us);
	queue_control(c, buf, rudp_wire_encode_connected_pong(buf, sizeof(buf), &pong), RUDP_WIRE_UNRELIABLE);
}

static void on_pong(struct rudp_conn *c, const uint8_t *data, size_t len, uint64_t now_us)
{
	struct rudp_wire_connected_pong pong;
	int64_t now_ms = time_ms(now_us);

	if (rudp_wire_decode_connected_pong(data, len, &pong) < 0) {
		conn_count_bad_frame(c);
		return;
	}
	/* ping_time is our own clock echoed back; ignore echoes that cannot be
	 * ours (from the future, or older than a dead-peer timeout). */
	if (pong.ping_time <= now_ms && (uint64_t)(now_ms - pong.ping_time) * 1000u < c->cfg.timeout_us)
		rtt_on_sample(&c->loss.rtt, (uint64_t)(now_ms - pong.ping_time) * 1000u);
}

/*
 * The handshake's answers are queued from inside the frame that asks for
 * them, after that frame counts as received and its ACK is due: were
 * queueing one to fail for want of memory, the peer would never send its
 * question again and the handshake would hang until connect_timeout_us. So
 * their room is made before (conn_recv_frame), and a frame that finds none
 * is deferred and comes again.
 */
bool conn_reserve_answer(struct rudp_conn *c, const struct rudp_wire_frame *f)
{
	uint32_t nframes = (CONN_ANSWER_MAX + c->frag_body_max - 1) / c->frag_body_max;
	bool request, accepted;

	if (f->split || f->body_len == 0)
		return true;
	request = f->body[0] == RUDP_ID_CONNECTION_REQUEST && c->role == RUDP_CONN_SERVER &&
		  !c->answered_request;
	accepted = f->body[0] == RUDP_ID_CONNECTION_REQUEST_ACCEPTED && c->role == RUDP_CONN_CLIENT &&
		   c->state == RUDP_CONN_STATE_CONNECTING;
	if (!request && !accepted)
		return true;
	return sendq_reserve(&c->rel, nframes, CONN_ANSWER_MAX, c->frag_body_max, c->now_us) == 0;
}

void conn_on_control(struct rudp_conn *c, const uint8_t *data, size_t len, uint64_t now_us)
{
	switch (data[0]) {
	case RUDP_ID_CONNECTION_REQUEST: on_connection_request(c, data, len, now_us); break;
	case RUDP_ID_CONNECTION_REQUEST_ACCEPTED: on_connection_accepted(c, data, len, now_us); break;
	case RUDP_ID_NEW_INCOMING_CONNECTION: on_new_incoming_connection(c, data, len); break;
	case RUDP_ID_CONNECTED_PING:
		if (c->state != RUDP_CONN_STATE_CLOSED)
			on_ping(c, data, len, now_us);
		break;
	case RUDP_ID_CONNECTED_PONG: on_pong(c, data, len, now_us); break;
	case RUDP_ID_DISCONNECTION_NOTIFICATION:
		/* Acted on at the end of the datagram, once no earlier reliable data
		 * is missing: see rudp_conn_on_datagram. */
		c->remote_closing = true;
		break;
	default: break;
	}
}

void conn_deliver_app(struct rudp_conn *c, const uint8_t *data, size_t len, uint8_t reliability,
		      uint8_t channel)
{
	if (c->state == RUDP_CONN_STATE_CONNECTING) {
		/* A client only sends data once it has our 0x10, so data after we
		 * answered means its 0x13 is late or lost: it is connected. */
		if (c->role == RUDP_CONN_SERVER && c->answered_request) {
			become_connected(c);
		} else if (c->role == RUDP_CONN_CLIENT && c->early_count < CONN_EARLY_MAX &&
			   c->early_bytes + len <= CONN_EARLY_BYTES) {
			/* Held until the handshake completes (conn_reserve_early):
			 * a reliable message in the copy made before its frame was
			 * acknowledged, an unreliable one if memory allows. Rare, so
			 * a copy on the heap is fine. */
			uint8_t *copy;

			if (c->early_handoff && data == c->early_handoff) {
				/* A reassembled message: its buffer is kept as it is. */
				copy = c->early_handoff;
				c->early_handoff = NULL;
			} else {
				if (c->early_spare && c->early_spare_cap >= len) {
					copy = c->early_spare;
					c->early_spare = NULL;
					c->early_spare_cap = 0;
				} else {
					copy = malloc(len ? len : 1);
				}
				if (!copy) {
					conn_count_bad_frame(c);
					return;
				}
				memcpy(copy, data, len);
			}
			c->early[c->early_count++] =
				(struct conn_early_msg){copy, (uint32_t)len, reliability, channel};
			c->early_bytes += len;
			return;
		} else {
			conn_count_bad_frame(c);
			return;
		}
	}
	if (c->state == RUDP_CONN_STATE_CLOSED)
		return;
	c->stats.messages_received++;
	if (c->cb.deliver)
		c->cb.deliver(c->cb.ud, data, len, reliability, channel);
}

/* ---- datagrams in ---- */

static void queue_ack(struct rudp_conn *c, uint32_t seq, uint64_t now_us)
{
	bool blocked = false;

	if (acktr_queue_ack(&c->acktr, seq))
		return;
	/* Too many separate ranges to hold: send what we have now. */
	conn_emit_acks(c, false, now_us, &blocked);
	acktr_force_ack(&c->acktr, seq);
}

/* Frames of one datagram kept from the checking pass for the acting pass
 * (on_frame_set); a datagram with more is decoded again past them. librudp
 * packs at most eight (max_frames_per_datagram's default). */
#define FRAME_SET_KEEP 16

static int on_frame_set(struct rudp_conn *c, const uint8_t *p, size_t n, uint64_t now_us)
{
	struct rudp_wire_dgram_header h;
	struct rudp_wire_frame kept[FRAME_SET_KEEP], f;
	bool ackable = true, dup;
	enum dgram_seq_verdict verdict;
	size_t off, nframes = 0, kept_end = 0;
	int rc;

	rc = rudp_wire_decode_dgram_header(p, n, &h);
	if (rc < 0) {
		c->stats.datagrams_dropped++;
		return rc;
	}
	/* Check every frame before acting on any: a datagram is taken (and
	 * acknowledged) whole or not at all. */
	for (off = RUDP_WIRE_DGRAM_HEADER_LEN; off < n; off += (size_t)rc, nframes++) {
		rc = rudp_wire_decode_frame(p + off, n - off, nframes < FRAME_SET_KEEP ? &kept[nframes] : &f);
		if (rc < 0) {
			c->stats.datagrams_dropped++;
			return rc;
		}
		if (nframes < FRAME_SET_KEEP)
			kept_end = off + (size_t)rc;
	}
	verdict = acktr_on_dgram_seq(&c->acktr, h.seq);
	if (verdict == DGRAM_FAR_AHEAD) {
		c->stats.datagrams_dropped++;
		return RUDP_WIRE_BAD_VALUE;
	}
	dup = verdict == DGRAM_SEEN;
	c->last_recv_us = now_us;
	off = kept_end;
	for (size_t i = 0; i < nframes && c->state != RUDP_CONN_STATE_CLOSED; i++) {
		const struct rudp_wire_frame *fr;

		if (i < FRAME_SET_KEEP) {
			fr = &kept[i];
		} else {
			rc = rudp_wire_decode_frame(p + off, n - off, &f);
			off += (size_t)rc;
			fr = &f;
		}
		if (!conn_recv_frame(c, fr, dup, now_us))
			ackable = false;
	}
	if (c->state == RUDP_CONN_STATE_CLOSED)
		return 0;
	/* Duplicates are acknowledged too: the first ACK may have been lost. */
	if (ackable)
		queue_ack(c, h.seq, now_us);
	if (c->remote_closing && recv_no_reliable_gaps(&c->rx)) {
		bool blocked = false;

		/* The peer waits for the ACK of its 0x15 before it closes: send it
		 * now, there is no later flush on a closed conn. */
		conn_emit_acks(c, false, now_us, &blocked);
		/* While our own close is under way the peer's 0x15 is its answer
		 * to ours (jsp-raknet sends it instead of acknowledging ours): our
		 * close is what finished. */
		conn_close(c, c->state == RUDP_CONN_STATE_DISCONNECTING ? RUDP_CONN_CLOSE_LOCAL
									: RUDP_CONN_CLOSE_REMOTE);
	}
	return 0;
}

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
		return 0;
	}
	/* Growth first: a loss inferred from this same ACK then reduces the
	 * window it reached. */
	cc_on_acked(&c->cc, v.acked_bytes);
	loss_ack_end(&c->loss, &c->rel, c->rel_sent, c->next_dgram_seq, now_us, &v);
	if (v.left_bytes)
		cc_on_left(&c->cc, v.left_bytes);
	tell_cc_losses(c, &v);
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
	c->stats.datagrams_received++;
	c->stats.bytes_received += n;
	if (!(p[0] & RUDP_DGRAM_VALID)) {
		c->stats.datagrams_dropped++;
		return RUDP_WIRE_BAD_ID;
	}
	if (p[0] & (RUDP_DGRAM_ACK | RUDP_DGRAM_NACK))
		return on_ack_datagram(c, p, n, now_us);
	return on_frame_set(c, p, n, now_us);
}

/* ---- timers ---- */

bool conn_check_timers(struct rudp_conn *c, uint64_t now_us)
{
	if (c->state == RUDP_CONN_STATE_CONNECTING && now_us - c->created_us >= c->cfg.connect_timeout_us) {
		conn_close(c, RUDP_CONN_CLOSE_CONNECT_FAILED);
		return true;
	}
	if (c->state == RUDP_CONN_STATE_DISCONNECTING &&
	    now_us - c->disconnect_start_us >= c->cfg.disconnect_linger_us) {
		conn_close(c, RUDP_CONN_CLOSE_LOCAL);
		return true;
	}
	if (now_us - c->last_recv_us >= c->cfg.timeout_us) {
		conn_close(c, c->state == RUDP_CONN_STATE_CONNECTING ? RUDP_CONN_CLOSE_CONNECT_FAILED
								     : RUDP_CONN_CLOSE_TIMEOUT);
		return true;
	}
	/* Frames go out first in queue order, so the first one not yet
	 * acknowledged was sent before all the others. */
	const struct sendq_frame *f = loss_oldest_unacked(&c->rel, c->rel_sent);

	if (f && now_us - f->first_send_us >= c->cfg.timeout_us) {
		conn_close(c, c->state == RUDP_CONN_STATE_CONNECTING ? RUDP_CONN_CLOSE_CONNECT_FAILED
								     : RUDP_CONN_CLOSE_TIMEOUT);
		return true;
	}
	return false;
}

void conn_maybe_queue_keepalive(struct rudp_conn *c, uint64_t now_us)
{
	struct rudp_wire_connected_ping ping = {.time = time_ms(now_us)};
	uint8_t buf[16];

	if (c->state != RUDP_CONN_STATE_CONNECTED && c->state != RUDP_CONN_STATE_DISCONNECTING)
		return;
	if (now_us - c->last_send_us < c->cfg.keepalive_us || c->unrel.frames_count > 0)
		return;
	queue_control(c, buf, rudp_wire_encode_connected_ping(buf, sizeof(buf), &ping), RUDP_WIRE_UNRELIABLE);
}

static bool has_sendable_frames(const struct rudp_conn *c)
{
	if (c->unrel.frames_count > 0)
		return true;
	return c->rel_sent < c->rel.frames_count && c->rel_sent < c->cfg.window_frames &&
	       cc_would_send(&c->cc, sendq_frame_wire_bytes(sendq_at(&c->rel, c->rel_sent)));
}

bool rudp_conn_wants_flush(const struct rudp_conn *c)
{
	if (c->state == RUDP_CONN_STATE_CLOSED)
		return false;
	if (acktr_pending(&c->acktr) || has_sendable_frames(c))
		return true;
	/* A resend the congestion window holds back waits for an ACK, which
	 * wakes the owner anyway: wanting a flush for it would spin. */
	for (uint32_t i = 0; c->loss.resend_pending && i < c->rel_sent; i++) {
		const struct sendq_frame *f = sendq_at(&c->rel, i);

		if (f->state == FRAME_NACKED &&
		    (f->resend_why == RESEND_PROBE || cc_would_send(&c->cc, sendq_frame_wire_bytes(f))))
			return true;
	}
	return false;
}

static void min_into(uint64_t *d, uint64_t t)
{
	if (t < *d)
		*d = t;
}

uint64_t rudp_conn_next_deadline(const struct rudp_conn *c)
{
	uint64_t d = UINT64_MAX;

	if (c->state == RUDP_CONN_STATE_CLOSED)
		return UINT64_MAX;
	if (rudp_conn_wants_flush(c))
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
	min_into(&d, loss_probe_deadline(&c->loss, &c->rel, c->rel_sent));
	/* Kept by the walks and sends (rto_due_us), and the oldest frame
	 * not acknowledged was sent first, so no walk here. */
	const struct sendq_frame *oldest = loss_oldest_unacked(&c->rel, c->rel_sent);

	if (oldest) {
		min_into(&d, c->loss.rto_due_us);
		min_into(&d, oldest->first_send_us + c->cfg.timeout_us);
	}
	return d;
}

/* ---- stats and test hooks ---- */

static uint32_t sat_u32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void rudp_conn_get_stats(const struct rudp_conn *c, struct rudp_conn_stats *out)
{
	*out = c->stats;
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
		c->order_write[ch] = order_index & RUDP_WIRE_U24_MASK;
		c->sequenced_write[ch] = order_index & RUDP_WIRE_U24_MASK;
	}
	c->rx.chans_first_order = order_index & RUDP_WIRE_U24_MASK;
	for (uint32_t ch = 0; ch < c->rx.chans_count; ch++)
		c->rx.chans[ch].expected_order = c->rx.chans_first_order;
	c->rx.dedup.base = reliable_index & RUDP_WIRE_U24_MASK;
	c->rx.dedup.highest_plus_one = c->rx.dedup.base;
	memset(c->rx.dedup.bits, 0, c->rx.dedup.nbits / 8);
	c->next_split_id = split_id;
}
