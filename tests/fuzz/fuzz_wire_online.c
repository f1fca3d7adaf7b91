/* SPDX-License-Identifier: MIT */
/*
 * The online decoders on the same bytes: datagram header and every frame in
 * it, ACK/NACK records, and the connected control messages. Decoded frames
 * and ACK ranges must re-encode to the same fields.
 */
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

#define CHECK(cond)                                                                                          \
	do {                                                                                                 \
		if (!(cond))                                                                                 \
			abort();                                                                             \
	} while (0)

static void frames(const uint8_t *p, size_t n)
{
	struct rudp_wire_dgram_header h;
	static uint8_t out[9000];
	int rc = rudp_wire_decode_dgram_header(p, n, &h);

	if (rc < 0)
		return;
	CHECK(rc == RUDP_WIRE_DGRAM_HEADER_LEN);
	for (size_t off = (size_t)rc; off < n; off += (size_t)rc) {
		struct rudp_wire_frame f, g;

		rc = rudp_wire_decode_frame(p + off, n - off, &f);
		if (rc < 0)
			return;
		CHECK(rc > 0 && (size_t)rc <= n - off);
		CHECK(f.body >= p + off && f.body + f.body_len <= p + n && f.body_len > 0);
		CHECK(f.order_channel < RUDP_WIRE_ORDER_CHANNELS);
		CHECK(!f.split || (f.split_count > 0 && f.split_index < f.split_count));
		CHECK((size_t)rc == rudp_wire_frame_header_len(&f) + f.body_len);
		int len = rudp_wire_encode_frame(out, sizeof(out), &f);
		CHECK(len == rc);
		CHECK(rudp_wire_decode_frame(out, (size_t)len, &g) == len);
		CHECK(g.reliability == f.reliability && g.split == f.split && g.body_len == f.body_len);
		CHECK(memcmp(g.body, f.body, f.body_len) == 0);
	}
}

static void acks(const uint8_t *p, size_t n)
{
	static struct rudp_wire_range r[64], r2[128];
	static uint8_t out[1500];
	size_t count = 0, dropped = 0, count2 = 0, dropped2 = 0, enc = 0;
	bool nack, nack2;

	if (rudp_wire_decode_ack(p, n, r, 64, &count, &dropped, &nack) != 0)
		return;
	CHECK(count <= 64);
	for (size_t i = 0; i < count; i++)
		CHECK(r[i].start <= RUDP_WIRE_U24_MASK && r[i].end <= RUDP_WIRE_U24_MASK &&
		      rudp_u24_diff(r[i].end, r[i].start) >= 0);
	if (count == 0)
		return;
	int len = rudp_wire_encode_ack(out, sizeof(out), nack, r, count, &enc);
	CHECK(len > 0 && enc > 0);
	CHECK(rudp_wire_decode_ack(out, (size_t)len, r2, 128, &count2, &dropped2, &nack2) == 0);
	CHECK(nack2 == nack && dropped2 == 0);
	/* Each range comes back as itself, or as two records split at the 2^24
	 * wrap, which is how the encoder must send a wrapped range. */
	size_t k = 0;
	for (size_t i = 0; i < enc; i++) {
		CHECK(k < count2 && r2[k].start == r[i].start && r2[k].start <= r2[k].end);
		if (r[i].end < r[i].start) {
			CHECK(r2[k].end == RUDP_WIRE_U24_MASK);
			k++;
			CHECK(k < count2 && r2[k].start == 0 && r2[k].end == r[i].end);
		} else {
			CHECK(r2[k].end == r[i].end);
		}
		k++;
	}
	CHECK(k == count2);
}

static void control(const uint8_t *p, size_t n)
{
	static uint8_t out[2048];
	struct rudp_wire_connection_request cr;
	struct rudp_wire_connection_accepted ca;
	struct rudp_wire_new_incoming_connection nic;
	struct rudp_wire_connected_ping ping;
	struct rudp_wire_connected_pong pong;

	/* security requests are decoded but never encoded (no proofs). */
	if (rudp_wire_decode_connection_request(p, n, &cr) >= 0 && !cr.security) {
		struct rudp_wire_connection_request b;
		int len = rudp_wire_encode_connection_request(out, sizeof(out), &cr);
		CHECK(len > 0 && rudp_wire_decode_connection_request(out, (size_t)len, &b) == len);
		CHECK(b.client_guid == cr.client_guid && b.time == cr.time);
	}
	if (rudp_wire_decode_connection_accepted(p, n, &ca) >= 0) {
		struct rudp_wire_connection_accepted b;
		CHECK(ca.n_internal <= RUDP_WIRE_MAX_INTERNAL_ADDRS);
		int len = rudp_wire_encode_connection_accepted(out, sizeof(out), &ca);
		CHECK(len > 0 && rudp_wire_decode_connection_accepted(out, (size_t)len, &b) == len);
		CHECK(b.n_internal == ca.n_internal && b.request_time == ca.request_time &&
		      b.accepted_time == ca.accepted_time && b.system_index == ca.system_index);
	}
	if (rudp_wire_decode_new_incoming_connection(p, n, &nic) >= 0) {
		struct rudp_wire_new_incoming_connection b;
		CHECK(nic.n_internal <= RUDP_WIRE_MAX_INTERNAL_ADDRS);
		int len = rudp_wire_encode_new_incoming_connection(out, sizeof(out), &nic);
		CHECK(len > 0 && rudp_wire_decode_new_incoming_connection(out, (size_t)len, &b) == len);
		CHECK(b.n_internal == nic.n_internal && b.accepted_time == nic.accepted_time);
	}
	if (rudp_wire_decode_connected_ping(p, n, &ping) >= 0) {
		struct rudp_wire_connected_ping b;
		int len = rudp_wire_encode_connected_ping(out, sizeof(out), &ping);
		CHECK(len > 0 && rudp_wire_decode_connected_ping(out, (size_t)len, &b) == len &&
		      b.time == ping.time);
	}
	if (rudp_wire_decode_connected_pong(p, n, &pong) >= 0) {
		struct rudp_wire_connected_pong b;
		int len = rudp_wire_encode_connected_pong(out, sizeof(out), &pong);
		CHECK(len > 0 && rudp_wire_decode_connected_pong(out, (size_t)len, &b) == len);
		CHECK(b.ping_time == pong.ping_time && b.pong_time == pong.pong_time);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *p, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *p, size_t n)
{
	frames(p, n);
	acks(p, n);
	control(p, n);
	(void)rudp_wire_strstatus((int)(n % 8) - 7);
	return 0;
}
