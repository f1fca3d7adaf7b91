/* SPDX-License-Identifier: MIT */
/*
 * Connected control messages: frame bodies that conn consumes itself. Like
 * offline packets, peers may append bytes we do not know (security proofs),
 * so decoders accept a longer body, except for the two messages whose
 * internal-address list has no count and is delimited only by the two int64
 * that end the body.
 */
#include "codec.h"

/* request time + accepted time after the internal addresses */
#define WIRE_TIMES_TAIL 16

static int rd_control_id(struct wire_reader *r, uint8_t want)
{
	uint8_t id = rd_u8(r);

	if (r->short_read)
		return RUDP_WIRE_TRUNCATED;
	return id == want ? 0 : RUDP_WIRE_BAD_ID;
}

/* RakNet sends 10 internal addresses, Bedrock 20, and neither says how many:
 * read addresses until exactly the two trailing int64 remain. An address that
 * would eat into those 16 bytes means the body cannot be split that way. */
static int rd_internal_addrs(struct wire_reader *r, struct rudp_wire_addr *out, uint8_t *n_out)
{
	struct rudp_wire_addr spare;
	uint8_t stored = 0;
	int st;

	if (r->short_read)
		return RUDP_WIRE_TRUNCATED;
	while (rd_left(r) != WIRE_TIMES_TAIL) {
		if (rd_left(r) < WIRE_TIMES_TAIL)
			return RUDP_WIRE_TRUNCATED;
		st = rd_addr(r, WIRE_TIMES_TAIL,
			     stored < RUDP_WIRE_MAX_INTERNAL_ADDRS ? &out[stored] : &spare);
		if (st < 0)
			return st;
		if (stored < RUDP_WIRE_MAX_INTERNAL_ADDRS)
			stored++;
	}
	*n_out = stored;
	return 0;
}

static int wr_internal_addrs(struct wire_writer *w, const struct rudp_wire_addr *in, uint8_t n)
{
	int st;

	if (n > RUDP_WIRE_MAX_INTERNAL_ADDRS)
		return RUDP_WIRE_BAD_VALUE;
	for (uint8_t i = 0; i < n; i++) {
		st = wr_addr(w, &in[i]);
		if (st < 0)
			return st;
	}
	return 0;
}

/* ---- 0x09 connection request ---- */

int rudp_wire_decode_connection_request(const uint8_t *p, size_t n, struct rudp_wire_connection_request *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_control_id(&r, RUDP_ID_CONNECTION_REQUEST);
	if (st < 0)
		return st;
	out->client_guid = rd_i64(&r);
	out->time = rd_i64(&r);
	/* With security set, proofs follow; we do not do RakNet security, and
	 * the host decides what to do with such a client. */
	out->security = rd_bool(&r);
	return rd_done(&r);
}

int rudp_wire_encode_connection_request(uint8_t *p, size_t cap, const struct rudp_wire_connection_request *in)
{
	struct wire_writer w = wr_init(p, cap);

	/* Setting security would promise proofs that we cannot write. */
	if (in->security)
		return RUDP_WIRE_BAD_VALUE;
	wr_u8(&w, RUDP_ID_CONNECTION_REQUEST);
	wr_i64(&w, in->client_guid);
	wr_i64(&w, in->time);
	wr_bool(&w, false);
	return wr_done(&w);
}

/* ---- 0x10 connection request accepted ---- */

int rudp_wire_decode_connection_accepted(const uint8_t *p, size_t n,
					 struct rudp_wire_connection_accepted *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_control_id(&r, RUDP_ID_CONNECTION_REQUEST_ACCEPTED);
	if (st < 0)
		return st;
	st = rd_addr(&r, 0, &out->client_addr);
	if (st < 0)
		return st;
	out->system_index = rd_u16be(&r);
	st = rd_internal_addrs(&r, out->internal, &out->n_internal);
	if (st < 0)
		return st;
	out->request_time = rd_i64(&r);
	out->accepted_time = rd_i64(&r);
	return rd_done(&r);
}

int rudp_wire_encode_connection_accepted(uint8_t *p, size_t cap,
					 const struct rudp_wire_connection_accepted *in)
{
	struct wire_writer w = wr_init(p, cap);
	int st;

	wr_u8(&w, RUDP_ID_CONNECTION_REQUEST_ACCEPTED);
	st = wr_addr(&w, &in->client_addr);
	if (st < 0)
		return st;
	wr_u16be(&w, in->system_index);
	st = wr_internal_addrs(&w, in->internal, in->n_internal);
	if (st < 0)
		return st;
	wr_i64(&w, in->request_time);
	wr_i64(&w, in->accepted_time);
	return wr_done(&w);
}

/* ---- 0x13 new incoming connection ---- */

int rudp_wire_decode_new_incoming_connection(const uint8_t *p, size_t n,
					     struct rudp_wire_new_incoming_connection *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_control_id(&r, RUDP_ID_NEW_INCOMING_CONNECTION);
	if (st < 0)
		return st;
	st = rd_addr(&r, 0, &out->server_addr);
	if (st < 0)
		return st;
	st = rd_internal_addrs(&r, out->internal, &out->n_internal);
	if (st < 0)
		return st;
	out->request_time = rd_i64(&r);
	out->accepted_time = rd_i64(&r);
	return rd_done(&r);
}

int rudp_wire_encode_new_incoming_connection(uint8_t *p, size_t cap,
					     const struct rudp_wire_new_incoming_connection *in)
{
	struct wire_writer w = wr_init(p, cap);
	int st;

	wr_u8(&w, RUDP_ID_NEW_INCOMING_CONNECTION);
	st = wr_addr(&w, &in->server_addr);
	if (st < 0)
		return st;
	st = wr_internal_addrs(&w, in->internal, in->n_internal);
	if (st < 0)
		return st;
	wr_i64(&w, in->request_time);
	wr_i64(&w, in->accepted_time);
	return wr_done(&w);
}

/* ---- 0x00 / 0x03 connected ping / pong ---- */

int rudp_wire_decode_connected_ping(const uint8_t *p, size_t n, struct rudp_wire_connected_ping *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_control_id(&r, RUDP_ID_CONNECTED_PING);
	if (st < 0)
		return st;
	out->time = rd_i64(&r);
	return rd_done(&r);
}

int rudp_wire_encode_connected_ping(uint8_t *p, size_t cap, const struct rudp_wire_connected_ping *in)
{
	struct wire_writer w = wr_init(p, cap);

	wr_u8(&w, RUDP_ID_CONNECTED_PING);
	wr_i64(&w, in->time);
	return wr_done(&w);
}

int rudp_wire_decode_connected_pong(const uint8_t *p, size_t n, struct rudp_wire_connected_pong *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_control_id(&r, RUDP_ID_CONNECTED_PONG);
	if (st < 0)
		return st;
	out->ping_time = rd_i64(&r);
	out->pong_time = rd_i64(&r);
	return rd_done(&r);
}

int rudp_wire_encode_connected_pong(uint8_t *p, size_t cap, const struct rudp_wire_connected_pong *in)
{
	struct wire_writer w = wr_init(p, cap);

	wr_u8(&w, RUDP_ID_CONNECTED_PONG);
	wr_i64(&w, in->ping_time);
	wr_i64(&w, in->pong_time);
	return wr_done(&w);
}

/* ---- 0x15 disconnection notification ---- */

int rudp_wire_encode_disconnect(uint8_t *p, size_t cap)
{
	struct wire_writer w = wr_init(p, cap);

	wr_u8(&w, RUDP_ID_DISCONNECTION_NOTIFICATION);
	return wr_done(&w);
}
