/* SPDX-License-Identifier: MIT */
/*
 * RakNet system addresses. RakNet serialises IPv4 with every address byte
 * inverted (so an all-zero address never looks like padding) and IPv6 as a raw
 * sockaddr_in6 whose family field is in the sender's host order: we keep that
 * field as received instead of guessing.
 */
#include <string.h>

#include "codec.h"

/* Linux AF_INET6, used when the caller leaves the family unset. */
#define WIRE_AF_INET6_DEFAULT 10

int rudp_wire_decode_addr(const uint8_t *p, size_t n, struct rudp_wire_addr *out)
{
	struct wire_reader r = rd_init(p, n);
	const uint8_t *ip;
	uint8_t version;

	version = rd_u8(&r);
	if (r.short_read)
		return RUDP_WIRE_TRUNCATED;
	if (version != 4 && version != 6)
		return RUDP_WIRE_BAD_VALUE;

	memset(out, 0, sizeof(*out));
	out->version = version;
	if (version == 4) {
		ip = rd_take(&r, 4);
		out->port = rd_u16be(&r);
		if (r.short_read)
			return RUDP_WIRE_TRUNCATED;
		for (int i = 0; i < 4; i++)
			out->ip[i] = (uint8_t)~ip[i];
	} else {
		out->family = rd_u16le(&r);
		out->port = rd_u16be(&r);
		out->flowinfo = rd_u32be(&r);
		ip = rd_take(&r, 16);
		out->scope_id = rd_u32be(&r);
		if (r.short_read)
			return RUDP_WIRE_TRUNCATED;
		memcpy(out->ip, ip, 16);
	}
	return rd_done(&r);
}

int rudp_wire_encode_addr(uint8_t *p, size_t cap, const struct rudp_wire_addr *a)
{
	struct wire_writer w = wr_init(p, cap);

	if (a->version == 4) {
		wr_u8(&w, 4);
		for (int i = 0; i < 4; i++)
			wr_u8(&w, (uint8_t)~a->ip[i]);
		wr_u16be(&w, a->port);
	} else if (a->version == 6) {
		wr_u8(&w, 6);
		wr_u16le(&w, a->family ? a->family : WIRE_AF_INET6_DEFAULT);
		wr_u16be(&w, a->port);
		wr_u32be(&w, a->flowinfo);
		wr_bytes(&w, a->ip, 16);
		wr_u32be(&w, a->scope_id);
	} else {
		return RUDP_WIRE_BAD_VALUE;
	}
	return wr_done(&w);
}
