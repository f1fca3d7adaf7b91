/* SPDX-License-Identifier: MIT */
/*
 * wire: RakNet packets <-> structs. Pure functions, no allocation, no I/O.
 *
 * Every decoder takes (const uint8_t *p, size_t n), never reads past p + n,
 * and returns a negative RUDP_WIRE_* status on bad input instead of crashing:
 * this file is the fuzzing surface. Encoders take (uint8_t *p, size_t cap)
 * and return the number of bytes written, or RUDP_WIRE_NO_SPACE.
 *
 * Return values: a decoder returns the number of bytes it parsed (trailing
 * bytes that offline packets and control messages may carry are tolerated and
 * not counted) or a negative status; rudp_wire_decode_ack returns 0. On
 * failure the contents of *out are unspecified. Encoders check their input
 * first and return RUDP_WIRE_BAD_VALUE for anything a peer would reject (bad
 * id, channel >= 32, split_index >= split_count, empty body, address version
 * other than 4/6), then RUDP_WIRE_NO_SPACE if cap is too small; on failure
 * bytes below cap may have been written. 24-bit fields are written as their
 * low 24 bits.
 *
 * Byte order (PROTOCOL.md): multi-byte integers are big-endian except the
 * 24-bit counters (datagram sequence numbers, reliable / sequenced / order
 * indexes), which are little-endian.
 */
#ifndef RUDP_WIRE_H
#define RUDP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- status codes (all negative; >= 0 means success / a byte count) ---- */
enum {
	RUDP_WIRE_TRUNCATED = -1, /* input ends before the packet does */
	RUDP_WIRE_BAD_ID = -2, /* first byte is not the packet expected */
	RUDP_WIRE_BAD_MAGIC = -3, /* offline magic mismatch */
	RUDP_WIRE_BAD_VALUE = -4, /* a field holds a value the protocol forbids */
	RUDP_WIRE_NO_SPACE = -5, /* encoder: output buffer too small */
	RUDP_WIRE_TRAILING = -6, /* bytes left over where none may be */
};

/** Human-readable name of a RUDP_WIRE_* status. */
const char *rudp_wire_strstatus(int status);

/* ---- constants ---- */
#define RUDP_WIRE_MAGIC_LEN 16
extern const uint8_t rudp_wire_magic[RUDP_WIRE_MAGIC_LEN];

/* RakNet counts 28 bytes of IPv4 + UDP header inside its "MTU". */
#define RUDP_WIRE_UDP_IP_OVERHEAD 28

#define RUDP_WIRE_ORDER_CHANNELS 32
#define RUDP_WIRE_U24_MASK 0xffffffu

/* Packet ids. */
enum {
	RUDP_ID_CONNECTED_PING = 0x00,
	RUDP_ID_UNCONNECTED_PING = 0x01,
	RUDP_ID_UNCONNECTED_PING_OPEN = 0x02,
	RUDP_ID_CONNECTED_PONG = 0x03,
	RUDP_ID_OPEN_CONNECTION_REQUEST_1 = 0x05,
	RUDP_ID_OPEN_CONNECTION_REPLY_1 = 0x06,
	RUDP_ID_OPEN_CONNECTION_REQUEST_2 = 0x07,
	RUDP_ID_OPEN_CONNECTION_REPLY_2 = 0x08,
	RUDP_ID_CONNECTION_REQUEST = 0x09,
	RUDP_ID_CONNECTION_REQUEST_ACCEPTED = 0x10,
	RUDP_ID_ALREADY_CONNECTED = 0x12,
	RUDP_ID_NEW_INCOMING_CONNECTION = 0x13,
	RUDP_ID_NO_FREE_INCOMING_CONNECTIONS = 0x14,
	RUDP_ID_DISCONNECTION_NOTIFICATION = 0x15,
	RUDP_ID_CONNECTION_BANNED = 0x17,
	RUDP_ID_INCOMPATIBLE_PROTOCOL_VERSION = 0x19,
	RUDP_ID_IP_RECENTLY_CONNECTED = 0x1a,
	RUDP_ID_UNCONNECTED_PONG = 0x1c,
};

/* Datagram header flag bits (first byte of every online datagram). */
enum {
	RUDP_DGRAM_VALID = 0x80,
	RUDP_DGRAM_ACK = 0x40,
	RUDP_DGRAM_NACK = 0x20,
	RUDP_DGRAM_PACKET_PAIR = 0x10,
	RUDP_DGRAM_CONTINUOUS_SEND = 0x08,
	RUDP_DGRAM_NEEDS_B_AND_AS = 0x04,
};

/* Reliabilities as carried in the top 3 bits of a frame's flags. */
enum {
	RUDP_WIRE_UNRELIABLE = 0,
	RUDP_WIRE_UNRELIABLE_SEQUENCED = 1,
	RUDP_WIRE_RELIABLE = 2,
	RUDP_WIRE_RELIABLE_ORDERED = 3,
	RUDP_WIRE_RELIABLE_SEQUENCED = 4,
	RUDP_WIRE_UNRELIABLE_ACK_RECEIPT = 5,
	RUDP_WIRE_RELIABLE_ACK_RECEIPT = 6,
	RUDP_WIRE_RELIABLE_ORDERED_ACK_RECEIPT = 7,
};

static inline bool rudp_wire_is_reliable(uint8_t r)
{
	return r == 2 || r == 3 || r == 4 || r == 6 || r == 7;
}
/* The "with ack receipt" reliabilities are a sender-local notion: on the
 * wire, and after decoding, they are their plain counterparts. */
static inline uint8_t rudp_wire_plain_reliability(uint8_t r)
{
	switch (r) {
	case RUDP_WIRE_UNRELIABLE_ACK_RECEIPT: return RUDP_WIRE_UNRELIABLE;
	case RUDP_WIRE_RELIABLE_ACK_RECEIPT: return RUDP_WIRE_RELIABLE;
	case RUDP_WIRE_RELIABLE_ORDERED_ACK_RECEIPT: return RUDP_WIRE_RELIABLE_ORDERED;
	default: return r;
	}
}
static inline bool rudp_wire_is_sequenced(uint8_t r)
{
	return r == 1 || r == 4;
}
static inline bool rudp_wire_is_ordered_or_sequenced(uint8_t r)
{
	return r == 1 || r == 3 || r == 4 || r == 7;
}

/* 24-bit serial arithmetic: signed distance a - b in [-2^23, 2^23). */
static inline int32_t rudp_u24_diff(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & RUDP_WIRE_U24_MASK;
	return d >= 0x800000u ? (int32_t)d - 0x1000000 : (int32_t)d;
}
static inline uint32_t rudp_u24_add(uint32_t a, uint32_t b)
{
	return (a + b) & RUDP_WIRE_U24_MASK;
}

/* ---- addresses ---- */
struct rudp_wire_addr {
	uint8_t version; /* 4 or 6 */
	uint16_t port; /* host byte order */
	uint8_t ip[16]; /* v4: first 4 bytes, network order, NOT inverted */
	uint16_t family; /* v6 only: the raw family field (AF_INET6 = 10 on Linux, 23 on Windows) */
	uint32_t flowinfo; /* v6 only */
	uint32_t scope_id; /* v6 only */
};
/* Encoded sizes: 7 bytes for v4, 29 for v6. */
#define RUDP_WIRE_ADDR4_LEN 7
#define RUDP_WIRE_ADDR6_LEN 29
int rudp_wire_decode_addr(const uint8_t *p, size_t n,
			  struct rudp_wire_addr *out); /* returns bytes consumed */
int rudp_wire_encode_addr(uint8_t *p, size_t cap, const struct rudp_wire_addr *a);

/* ---- offline packets (first byte is the id, never inside a datagram) ---- */

/* True when p looks like an offline packet: a known offline id with the magic
 * at the position that id carries it. Used to tell offline from online. */
bool rudp_wire_is_offline(const uint8_t *p, size_t n);

struct rudp_wire_unconnected_ping {
	uint8_t id; /* 0x01 or 0x02 */
	int64_t time;
	int64_t client_guid;
};
int rudp_wire_decode_unconnected_ping(const uint8_t *p, size_t n, struct rudp_wire_unconnected_ping *out);
int rudp_wire_encode_unconnected_ping(uint8_t *p, size_t cap, const struct rudp_wire_unconnected_ping *in);

struct rudp_wire_unconnected_pong {
	int64_t time;
	int64_t server_guid;
	const uint8_t *data; /* application pong data, points into the input */
	size_t data_len;
};
int rudp_wire_decode_unconnected_pong(const uint8_t *p, size_t n, struct rudp_wire_unconnected_pong *out);
int rudp_wire_encode_unconnected_pong(uint8_t *p, size_t cap, const struct rudp_wire_unconnected_pong *in);

struct rudp_wire_open_request_1 {
	uint8_t protocol;
	uint16_t mtu; /* decode: payload length + 28; encode: pad so that payload + 28 == mtu */
};
int rudp_wire_decode_open_request_1(const uint8_t *p, size_t n, struct rudp_wire_open_request_1 *out);
int rudp_wire_encode_open_request_1(uint8_t *p, size_t cap, const struct rudp_wire_open_request_1 *in);

struct rudp_wire_open_reply_1 {
	int64_t server_guid;
	bool security;
	uint32_t cookie; /* present on the wire only when security is set */
	uint16_t mtu;
};
int rudp_wire_decode_open_reply_1(const uint8_t *p, size_t n, struct rudp_wire_open_reply_1 *out);
int rudp_wire_encode_open_reply_1(uint8_t *p, size_t cap, const struct rudp_wire_open_reply_1 *in);

struct rudp_wire_open_request_2 {
	bool has_cookie; /* decode: caller sets expect_cookie; encode: write cookie + a false "challenge" bool
			  */
	uint32_t cookie;
	struct rudp_wire_addr server_addr;
	uint16_t mtu;
	int64_t client_guid;
};
int rudp_wire_decode_open_request_2(const uint8_t *p, size_t n, bool expect_cookie,
				    struct rudp_wire_open_request_2 *out);
int rudp_wire_encode_open_request_2(uint8_t *p, size_t cap, const struct rudp_wire_open_request_2 *in);

struct rudp_wire_open_reply_2 {
	int64_t server_guid;
	struct rudp_wire_addr client_addr;
	uint16_t mtu;
	bool encryption;
};
int rudp_wire_decode_open_reply_2(const uint8_t *p, size_t n, struct rudp_wire_open_reply_2 *out);
int rudp_wire_encode_open_reply_2(uint8_t *p, size_t cap, const struct rudp_wire_open_reply_2 *in);

struct rudp_wire_incompatible_protocol {
	uint8_t protocol;
	int64_t server_guid;
};
int rudp_wire_decode_incompatible_protocol(const uint8_t *p, size_t n,
					   struct rudp_wire_incompatible_protocol *out);
int rudp_wire_encode_incompatible_protocol(uint8_t *p, size_t cap,
					   const struct rudp_wire_incompatible_protocol *in);

/* 0x12 already connected, 0x14 no free incoming connections, 0x17 banned,
 * 0x1a IP recently connected: id, magic, server guid. */
struct rudp_wire_offline_reject {
	uint8_t id;
	int64_t server_guid;
};
int rudp_wire_decode_offline_reject(const uint8_t *p, size_t n, struct rudp_wire_offline_reject *out);
int rudp_wire_encode_offline_reject(uint8_t *p, size_t cap, const struct rudp_wire_offline_reject *in);

/* ---- online datagrams ---- */
#define RUDP_WIRE_DGRAM_HEADER_LEN 4
struct rudp_wire_dgram_header {
	uint8_t flags; /* RUDP_DGRAM_* bits, VALID always set */
	uint32_t seq; /* 24-bit */
};
/* Frame-set header. Fails with BAD_ID on ACK/NACK or non-0x80 first bytes. */
int rudp_wire_decode_dgram_header(const uint8_t *p, size_t n, struct rudp_wire_dgram_header *out);
int rudp_wire_encode_dgram_header(uint8_t *p, size_t cap, const struct rudp_wire_dgram_header *in);

/* Largest frame header: flags 1 + bit length 2 + reliable 3 + sequenced 3 +
 * order 3 + channel 1 + split 10. */
#define RUDP_WIRE_FRAME_HEADER_MAX 23

struct rudp_wire_frame {
	uint8_t reliability; /* decode maps 5/6/7 to 0/2/3 */
	bool split;
	uint32_t reliable_index; /* 24-bit, when reliable */
	uint32_t sequenced_index; /* 24-bit, when sequenced */
	uint32_t order_index; /* 24-bit, when ordered or sequenced */
	uint8_t order_channel; /* < 32 */
	uint32_t split_count; /* when split: > 0 */
	uint16_t split_id;
	uint32_t split_index; /* < split_count */
	const uint8_t *body; /* points into the input on decode */
	uint16_t body_len; /* bytes, > 0 */
};
/* Header size this frame will take on the wire (without the body). */
size_t rudp_wire_frame_header_len(const struct rudp_wire_frame *f);
/* The same from a plain reliability (no ACK-receipt variant) and the split
 * flag alone: the send path asks it per message, without a frame struct. */
static inline size_t rudp_wire_frame_header_len_of(uint8_t plain_rel, bool split)
{
	size_t len = 3; /* flags + bit length */

	if (rudp_wire_is_reliable(plain_rel))
		len += 3; /* reliable index */
	if (rudp_wire_is_sequenced(plain_rel))
		len += 3; /* sequenced index */
	if (rudp_wire_is_ordered_or_sequenced(plain_rel))
		len += 4; /* order index and channel */
	if (split)
		len += 10; /* split count, id and index */
	return len;
}
/* Decodes one frame at p; returns bytes consumed (> 0) or a status. Rejects a
 * zero-length body, a body running past n, a channel >= 32, split_count 0 and
 * split_index >= split_count. */
int rudp_wire_decode_frame(const uint8_t *p, size_t n, struct rudp_wire_frame *out);
int rudp_wire_encode_frame(uint8_t *p, size_t cap, const struct rudp_wire_frame *f);

/* ---- ACK / NACK ---- */
struct rudp_wire_range {
	uint32_t start; /* 24-bit, inclusive */
	uint32_t end; /* 24-bit, inclusive; == start for a single record */
};
/* Decodes an ACK (0xc0 flags) or NACK (0xa0) datagram. Stores at most
 * max_ranges records in out and sets *count; *nack tells which it was. Records
 * past max_ranges are not stored and *dropped counts them (a limit against
 * work amplification). Returns 0 or a status. */
int rudp_wire_decode_ack(const uint8_t *p, size_t n, struct rudp_wire_range *out, size_t max_ranges,
			 size_t *count, size_t *dropped, bool *nack);
/* Encodes as many of the count ranges as fit in cap; *encoded says how many.
 * A range that crosses the 2^24 wrap (end < start as plain numbers) goes out
 * as two records, [start, 0xffffff] and [0, end], and only whole: RakNet
 * and the peers modelled on it walk a record from start up to end, so a
 * wrapped record names nothing for them (or fails the whole ACK). Returns
 * bytes written (>= 3) or a status (no range fits). */
int rudp_wire_encode_ack(uint8_t *p, size_t cap, bool nack, const struct rudp_wire_range *ranges,
			 size_t count, size_t *encoded);
/* Encoded size of one record [start, end] (start <= end): 4 single, 7 otherwise. */
static inline size_t rudp_wire_record_len(uint32_t start, uint32_t end)
{
	return start == end ? 4 : 7;
}
/* Encoded size of one range: one record, or two when it crosses the wrap. */
static inline size_t rudp_wire_range_len(const struct rudp_wire_range *r)
{
	if (r->end < r->start)
		return rudp_wire_record_len(r->start, RUDP_WIRE_U24_MASK) + rudp_wire_record_len(0, r->end);
	return rudp_wire_record_len(r->start, r->end);
}
/* Records a range takes on the wire: 2 when it crosses the wrap, else 1. */
static inline size_t rudp_wire_range_records(const struct rudp_wire_range *r)
{
	return r->end < r->start ? 2 : 1;
}
#define RUDP_WIRE_ACK_HEADER_LEN 3

/* ---- connected control messages (first byte of a frame body) ---- */
#define RUDP_WIRE_MAX_INTERNAL_ADDRS 20

struct rudp_wire_connection_request {
	int64_t client_guid;
	int64_t time;
	bool security; /* we never set it; decode accepts it and ignores proofs */
};
int rudp_wire_decode_connection_request(const uint8_t *p, size_t n, struct rudp_wire_connection_request *out);
int rudp_wire_encode_connection_request(uint8_t *p, size_t cap,
					const struct rudp_wire_connection_request *in);

/* Internal address lists: decoders read addresses until exactly 16 bytes (the
 * two trailing int64) remain, storing at most RUDP_WIRE_MAX_INTERNAL_ADDRS and
 * skipping the rest; encoders write n_internal entries. The list has no count
 * on the wire, so these two decoders cannot accept trailing bytes, and a body
 * cut short by a whole number of addresses still decodes (with fewer). */
struct rudp_wire_connection_accepted {
	struct rudp_wire_addr client_addr;
	uint16_t system_index;
	uint8_t n_internal;
	struct rudp_wire_addr internal[RUDP_WIRE_MAX_INTERNAL_ADDRS];
	int64_t request_time;
	int64_t accepted_time;
};
int rudp_wire_decode_connection_accepted(const uint8_t *p, size_t n,
					 struct rudp_wire_connection_accepted *out);
int rudp_wire_encode_connection_accepted(uint8_t *p, size_t cap,
					 const struct rudp_wire_connection_accepted *in);

struct rudp_wire_new_incoming_connection {
	struct rudp_wire_addr server_addr;
	uint8_t n_internal;
	struct rudp_wire_addr internal[RUDP_WIRE_MAX_INTERNAL_ADDRS];
	int64_t request_time;
	int64_t accepted_time;
};
int rudp_wire_decode_new_incoming_connection(const uint8_t *p, size_t n,
					     struct rudp_wire_new_incoming_connection *out);
int rudp_wire_encode_new_incoming_connection(uint8_t *p, size_t cap,
					     const struct rudp_wire_new_incoming_connection *in);

struct rudp_wire_connected_ping {
	int64_t time;
};
int rudp_wire_decode_connected_ping(const uint8_t *p, size_t n, struct rudp_wire_connected_ping *out);
int rudp_wire_encode_connected_ping(uint8_t *p, size_t cap, const struct rudp_wire_connected_ping *in);

struct rudp_wire_connected_pong {
	int64_t ping_time;
	int64_t pong_time;
};
int rudp_wire_decode_connected_pong(const uint8_t *p, size_t n, struct rudp_wire_connected_pong *out);
int rudp_wire_encode_connected_pong(uint8_t *p, size_t cap, const struct rudp_wire_connected_pong *in);

/* 0x15: just the id. */
int rudp_wire_encode_disconnect(uint8_t *p, size_t cap);

/* True for the first bytes that conn consumes itself (0x00 0x03 0x09 0x10 0x13
 * 0x15); any other first byte is application data. */
static inline bool rudp_wire_is_control_id(uint8_t id)
{
	return id == 0x00 || id == 0x03 || id == 0x09 || id == 0x10 || id == 0x13 || id == 0x15;
}

#endif
