/* SPDX-License-Identifier: MIT */
/*
 * The handshake and the connected control messages (0x09 request, 0x10
 * accepted, 0x13 new incoming, 0x00/0x03 ping/pong, 0x15 disconnect): what
 * they change in the conn and what they queue in answer, the keepalive,
 * our own close, and the delivery of application messages, with those a
 * connecting client keeps until its handshake completes.
 */
#include <stdlib.h>
#include <string.h>

#include "conn/conn_internal.h"

/* Room for an encoded 0x10 or 0x13: addresses at their IPv6 size. */
#define CONN_ANSWER_MAX (RUDP_WIRE_ADDR6_LEN * (RUDP_WIRE_MAX_INTERNAL_ADDRS + 1) + 64)

static int64_t time_ms(uint64_t now_us)
{
	return (int64_t)(now_us / 1000u);
}

/* The internal address list of our 0x10 or 0x13: as many entries as the
 * protocol version has, each "no address here" (255.255.255.255 port 0),
 * as RakNet-style peers fill the unused ones. */
static void fill_internal_addrs(const struct rudp_conn *c, struct rudp_wire_addr *internal, uint8_t *n)
{
	*n = c->cfg.protocol_version >= 11 ? 20 : 10;
	for (uint32_t i = 0; i < *n; i++) {
		memset(&internal[i], 0, sizeof(internal[i]));
		internal[i].version = 4;
		memset(internal[i].ip, 0xff, 4);
	}
}

static void queue_control(struct rudp_conn *c, const uint8_t *body, int len, uint8_t reliability)
{
	/* Control messages bypass the app's queue budget: the handshake and pongs
	 * must not fail because the app filled the queue. */
	if (len > 0)
		conn_queue_message(c, body, (size_t)len, reliability, 0, false);
}

void conn_queue_connection_request(struct rudp_conn *c, uint64_t now_us)
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

/* Held early messages: as many as the array holds, and at most this many
 * bytes (a server has no business sending more before it is answered). */
#define CONN_EARLY_MAX (sizeof(((struct rudp_conn *)0)->early) / sizeof(((struct rudp_conn *)0)->early[0]))
#define CONN_EARLY_BYTES (64u * 1024u)

void conn_free_early(struct rudp_conn *c)
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
 * control message ahead of its turn does not wait (recv.c, order_on_message).
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
	conn_free_early(c);
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
	fill_internal_addrs(c, acc.internal, &acc.n_internal);
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
	fill_internal_addrs(c, nic.internal, &nic.n_internal);
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
