/* SPDX-License-Identifier: MIT */
/*
 * Offline (unconnected) packets: the ping/pong and the open-connection
 * handshake, sent as bare UDP payloads before any datagram sequence exists.
 * Real clients append extras (Bedrock padding, security proofs), so decoders
 * accept trailing bytes and report how many bytes they understood.
 */
#include <string.h>

#include "codec.h"

const uint8_t rudp_wire_magic[RUDP_WIRE_MAGIC_LEN] = {
	0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78,
};

/* The challenge a security-enabled RakNet client appends after the cookie. */
#define WIRE_CLIENT_CHALLENGE_LEN 64

static bool is_reject_id(uint8_t id)
{
	return id == RUDP_ID_ALREADY_CONNECTED || id == RUDP_ID_NO_FREE_INCOMING_CONNECTIONS ||
	       id == RUDP_ID_CONNECTION_BANNED || id == RUDP_ID_IP_RECENTLY_CONNECTED;
}

/* Where the magic sits for each offline id, or -1 for ids that are not offline. */
static int magic_offset(uint8_t id)
{
	switch (id) {
	case RUDP_ID_UNCONNECTED_PING:
	case RUDP_ID_UNCONNECTED_PING_OPEN: return 9; /* after time */
	case RUDP_ID_UNCONNECTED_PONG: return 17; /* after time and server guid */
	case RUDP_ID_OPEN_CONNECTION_REQUEST_1:
	case RUDP_ID_OPEN_CONNECTION_REPLY_1:
	case RUDP_ID_OPEN_CONNECTION_REQUEST_2:
	case RUDP_ID_OPEN_CONNECTION_REPLY_2: return 1;
	case RUDP_ID_INCOMPATIBLE_PROTOCOL_VERSION: return 2; /* after the protocol byte */
	default: return is_reject_id(id) ? 1 : -1;
	}
}

bool rudp_wire_is_offline(const uint8_t *p, size_t n)
{
	int off;

	/* Online datagrams always have 0x80 set in their first byte, and no
	 * offline id does, so the id alone would nearly do; the magic guards
	 * against stray bytes that happen to start with a small value. */
	if (!p || n < 1)
		return false;
	off = magic_offset(p[0]);
	if (off < 0 || n < (size_t)off + RUDP_WIRE_MAGIC_LEN)
		return false;
	return memcmp(p + off, rudp_wire_magic, RUDP_WIRE_MAGIC_LEN) == 0;
}

/* Reads the id byte; 0 when it is `want`. */
static int rd_id(struct wire_reader *r, uint8_t want)
{
	uint8_t id = rd_u8(r);

	if (r->short_read)
		return RUDP_WIRE_TRUNCATED;
	return id == want ? 0 : RUDP_WIRE_BAD_ID;
}

/* ---- 0x01 / 0x02 unconnected ping ---- */

int rudp_wire_decode_unconnected_ping(const uint8_t *p, size_t n, struct rudp_wire_unconnected_ping *out)
{
	struct wire_reader r = rd_init(p, n);
	uint8_t id;
	int st;

	id = rd_u8(&r);
	if (r.short_read)
		return RUDP_WIRE_TRUNCATED;
	if (id != RUDP_ID_UNCONNECTED_PING && id != RUDP_ID_UNCONNECTED_PING_OPEN)
		return RUDP_WIRE_BAD_ID;
	out->id = id;
	out->time = rd_i64(&r);
	st = rd_magic(&r);
	if (st < 0)
		return st;
	out->client_guid = rd_i64(&r);
	return rd_done(&r);
}

int rudp_wire_encode_unconnected_ping(uint8_t *p, size_t cap, const struct rudp_wire_unconnected_ping *in)
{
	struct wire_writer w = wr_init(p, cap);

	if (in->id != RUDP_ID_UNCONNECTED_PING && in->id != RUDP_ID_UNCONNECTED_PING_OPEN)
		return RUDP_WIRE_BAD_VALUE;
	wr_u8(&w, in->id);
	wr_i64(&w, in->time);
	wr_magic(&w);
	wr_i64(&w, in->client_guid);
	return wr_done(&w);
}

/* ---- 0x1c unconnected pong ---- */

int rudp_wire_decode_unconnected_pong(const uint8_t *p, size_t n, struct rudp_wire_unconnected_pong *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_id(&r, RUDP_ID_UNCONNECTED_PONG);
	if (st < 0)
		return st;
	out->time = rd_i64(&r);
	out->server_guid = rd_i64(&r);
	st = rd_magic(&r);
	if (st < 0)
		return st;
	/* Everything after the magic is the server's opaque pong data. */
	out->data_len = rd_left(&r);
	out->data = rd_take(&r, out->data_len);
	return rd_done(&r);
}

int rudp_wire_encode_unconnected_pong(uint8_t *p, size_t cap, const struct rudp_wire_unconnected_pong *in)
{
	struct wire_writer w = wr_init(p, cap);

	if (in->data_len && !in->data)
		return RUDP_WIRE_BAD_VALUE;
	wr_u8(&w, RUDP_ID_UNCONNECTED_PONG);
	wr_i64(&w, in->time);
	wr_i64(&w, in->server_guid);
	wr_magic(&w);
	wr_bytes(&w, in->data, in->data_len);
	return wr_done(&w);
}

/* ---- 0x05 open connection request 1 ---- */

/* id + magic + protocol: the smallest request 1, i.e. an MTU probe of 46. */
#define WIRE_REQUEST_1_MIN 18

int rudp_wire_decode_open_request_1(const uint8_t *p, size_t n, struct rudp_wire_open_request_1 *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_id(&r, RUDP_ID_OPEN_CONNECTION_REQUEST_1);
	if (st < 0)
		return st;
	st = rd_magic(&r);
	if (st < 0)
		return st;
	out->protocol = rd_u8(&r);
	if (r.short_read)
		return RUDP_WIRE_TRUNCATED;
	/* The padding is the message: its length is the MTU being probed. Its
	 * content is not checked, some clients do not zero it. */
	if (n > (size_t)UINT16_MAX - RUDP_WIRE_UDP_IP_OVERHEAD)
		return RUDP_WIRE_BAD_VALUE;
	out->mtu = (uint16_t)(n + RUDP_WIRE_UDP_IP_OVERHEAD);
	rd_take(&r, rd_left(&r));
	return rd_done(&r);
}

int rudp_wire_encode_open_request_1(uint8_t *p, size_t cap, const struct rudp_wire_open_request_1 *in)
{
	struct wire_writer w = wr_init(p, cap);
	size_t len;

	if (in->mtu < WIRE_REQUEST_1_MIN + RUDP_WIRE_UDP_IP_OVERHEAD)
		return RUDP_WIRE_BAD_VALUE;
	len = (size_t)in->mtu - RUDP_WIRE_UDP_IP_OVERHEAD;
	if (cap < len)
		return RUDP_WIRE_NO_SPACE;
	wr_u8(&w, RUDP_ID_OPEN_CONNECTION_REQUEST_1);
	wr_magic(&w);
	wr_u8(&w, in->protocol);
	wr_zeros(&w, len - WIRE_REQUEST_1_MIN);
	return wr_done(&w);
}

/* ---- 0x06 open connection reply 1 ---- */

int rudp_wire_decode_open_reply_1(const uint8_t *p, size_t n, struct rudp_wire_open_reply_1 *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_id(&r, RUDP_ID_OPEN_CONNECTION_REPLY_1);
	if (st < 0)
		return st;
	st = rd_magic(&r);
	if (st < 0)
		return st;
	out->server_guid = rd_i64(&r);
	out->security = rd_bool(&r);
	/* The cookie sits between the security flag and the MTU. */
	out->cookie = out->security ? rd_u32be(&r) : 0;
	out->mtu = rd_u16be(&r);
	return rd_done(&r);
}

int rudp_wire_encode_open_reply_1(uint8_t *p, size_t cap, const struct rudp_wire_open_reply_1 *in)
{
	struct wire_writer w = wr_init(p, cap);

	wr_u8(&w, RUDP_ID_OPEN_CONNECTION_REPLY_1);
	wr_magic(&w);
	wr_i64(&w, in->server_guid);
	wr_bool(&w, in->security);
	if (in->security)
		wr_u32be(&w, in->cookie);
	wr_u16be(&w, in->mtu);
	return wr_done(&w);
}

/* ---- 0x07 open connection request 2 ---- */

int rudp_wire_decode_open_request_2(const uint8_t *p, size_t n, bool expect_cookie,
				    struct rudp_wire_open_request_2 *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_id(&r, RUDP_ID_OPEN_CONNECTION_REQUEST_2);
	if (st < 0)
		return st;
	st = rd_magic(&r);
	if (st < 0)
		return st;
	/* Nothing in the packet says whether a cookie is there: only the server
	 * knows whether its reply 1 asked for one. */
	out->has_cookie = expect_cookie;
	out->cookie = 0;
	if (expect_cookie) {
		out->cookie = rd_u32be(&r);
		if (rd_bool(&r))
			rd_take(&r, WIRE_CLIENT_CHALLENGE_LEN);
	}
	st = rd_addr(&r, 0, &out->server_addr);
	if (st < 0)
		return st;
	out->mtu = rd_u16be(&r);
	out->client_guid = rd_i64(&r);
	return rd_done(&r);
}

int rudp_wire_encode_open_request_2(uint8_t *p, size_t cap, const struct rudp_wire_open_request_2 *in)
{
	struct wire_writer w = wr_init(p, cap);
	int st;

	wr_u8(&w, RUDP_ID_OPEN_CONNECTION_REQUEST_2);
	wr_magic(&w);
	if (in->has_cookie) {
		wr_u32be(&w, in->cookie);
		wr_bool(&w, false); /* we never send a client challenge */
	}
	st = wr_addr(&w, &in->server_addr);
	if (st < 0)
		return st;
	wr_u16be(&w, in->mtu);
	wr_i64(&w, in->client_guid);
	return wr_done(&w);
}

/* ---- 0x08 open connection reply 2 ---- */

int rudp_wire_decode_open_reply_2(const uint8_t *p, size_t n, struct rudp_wire_open_reply_2 *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_id(&r, RUDP_ID_OPEN_CONNECTION_REPLY_2);
	if (st < 0)
		return st;
	st = rd_magic(&r);
	if (st < 0)
		return st;
	out->server_guid = rd_i64(&r);
	st = rd_addr(&r, 0, &out->client_addr);
	if (st < 0)
		return st;
	out->mtu = rd_u16be(&r);
	out->encryption = rd_bool(&r);
	return rd_done(&r);
}

int rudp_wire_encode_open_reply_2(uint8_t *p, size_t cap, const struct rudp_wire_open_reply_2 *in)
{
	struct wire_writer w = wr_init(p, cap);
	int st;

	wr_u8(&w, RUDP_ID_OPEN_CONNECTION_REPLY_2);
	wr_magic(&w);
	wr_i64(&w, in->server_guid);
	st = wr_addr(&w, &in->client_addr);
	if (st < 0)
		return st;
	wr_u16be(&w, in->mtu);
	wr_bool(&w, in->encryption);
	return wr_done(&w);
}

/* ---- 0x19 incompatible protocol version ---- */

int rudp_wire_decode_incompatible_protocol(const uint8_t *p, size_t n,
					   struct rudp_wire_incompatible_protocol *out)
{
	struct wire_reader r = rd_init(p, n);
	int st;

	st = rd_id(&r, RUDP_ID_INCOMPATIBLE_PROTOCOL_VERSION);
	if (st < 0)
		return st;
	out->protocol = rd_u8(&r);
	st = rd_magic(&r);
	if (st < 0)
		return st;
	out->server_guid = rd_i64(&r);
	return rd_done(&r);
}

int rudp_wire_encode_incompatible_protocol(uint8_t *p, size_t cap,
					   const struct rudp_wire_incompatible_protocol *in)
{
	struct wire_writer w = wr_init(p, cap);

	wr_u8(&w, RUDP_ID_INCOMPATIBLE_PROTOCOL_VERSION);
	wr_u8(&w, in->protocol);
	wr_magic(&w);
	wr_i64(&w, in->server_guid);
	return wr_done(&w);
}

/* ---- 0x12 / 0x14 / 0x17 / 0x1a connection refusals ---- */

int rudp_wire_decode_offline_reject(const uint8_t *p, size_t n, struct rudp_wire_offline_reject *out)
{
	struct wire_reader r = rd_init(p, n);
	uint8_t id;
	int st;

	id = rd_u8(&r);
	if (r.short_read)
		return RUDP_WIRE_TRUNCATED;
	if (!is_reject_id(id))
		return RUDP_WIRE_BAD_ID;
	out->id = id;
	st = rd_magic(&r);
	if (st < 0)
		return st;
	out->server_guid = rd_i64(&r);
	return rd_done(&r);
}

int rudp_wire_encode_offline_reject(uint8_t *p, size_t cap, const struct rudp_wire_offline_reject *in)
{
	struct wire_writer w = wr_init(p, cap);

	if (!is_reject_id(in->id))
		return RUDP_WIRE_BAD_VALUE;
	wr_u8(&w, in->id);
	wr_magic(&w);
	wr_i64(&w, in->server_guid);
	return wr_done(&w);
}
