/* SPDX-License-Identifier: MIT */
/*
 * Wire layer tests: hand-written byte vectors from PROTOCOL.md (so the
 * encoder is checked against the spec, not only against our decoder),
 * round trips, every truncation of every packet, seeded garbage and
 * mutations, forbidden values, and every too-small output buffer.
 *
 * Inputs to decoders are copied into heap buffers of exactly n bytes so that
 * AddressSanitizer reports any read past n.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/wire.h"
#include "test_rng.h"

#define MAGIC_BYTES                                                                                          \
	0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78

/* ---- helpers ---- */

/* For test_rng.h; rng_seed keeps it off 0, where xorshift stays. */
static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s ? s : 0x9e3779b97f4a7c15ull;
}

/* An exactly-sized heap copy: reading byte n is a reported ASan error. */
static uint8_t *exact_copy(const uint8_t *src, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	assert_non_null(p);
	if (n)
		memcpy(p, src, n);
	return p;
}

static const struct rudp_wire_addr addr4 = {
	.version = 4,
	.port = 19132,
	.ip = {192, 168, 1, 20},
};

static const struct rudp_wire_addr addr6 = {
	.version = 6,
	.port = 19133,
	.ip = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef},
	.family = 10,
	.flowinfo = 0x12345,
	.scope_id = 7,
};

static void assert_addr_equal(const struct rudp_wire_addr *a, const struct rudp_wire_addr *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->port, b->port);
	if (a->version == 4) {
		assert_memory_equal(a->ip, b->ip, 4);
	} else {
		assert_memory_equal(a->ip, b->ip, 16);
		assert_int_equal(a->family, b->family);
		assert_int_equal(a->flowinfo, b->flowinfo);
		assert_int_equal(a->scope_id, b->scope_id);
	}
}

/* ---- decoder / encoder adapters for table-driven tests ---- */

typedef int (*dec_fn)(const uint8_t *p, size_t n);
typedef int (*enc_fn)(uint8_t *p, size_t cap, const void *in);

#define DEC_WRAP(name, type)                                                                                 \
	static int dec_##name(const uint8_t *p, size_t n)                                                    \
	{                                                                                                    \
		type o;                                                                                      \
		return rudp_wire_decode_##name(p, n, &o);                                                    \
	}
#define ENC_WRAP(name, type)                                                                                 \
	static int enc_##name(uint8_t *p, size_t cap, const void *in)                                        \
	{                                                                                                    \
		return rudp_wire_encode_##name(p, cap, (const type *)in);                                    \
	}

DEC_WRAP(addr, struct rudp_wire_addr)
DEC_WRAP(unconnected_ping, struct rudp_wire_unconnected_ping)
DEC_WRAP(unconnected_pong, struct rudp_wire_unconnected_pong)
DEC_WRAP(open_request_1, struct rudp_wire_open_request_1)
DEC_WRAP(open_reply_1, struct rudp_wire_open_reply_1)
DEC_WRAP(open_reply_2, struct rudp_wire_open_reply_2)
DEC_WRAP(incompatible_protocol, struct rudp_wire_incompatible_protocol)
DEC_WRAP(offline_reject, struct rudp_wire_offline_reject)
DEC_WRAP(dgram_header, struct rudp_wire_dgram_header)
DEC_WRAP(connection_request, struct rudp_wire_connection_request)
DEC_WRAP(connection_accepted, struct rudp_wire_connection_accepted)
DEC_WRAP(new_incoming_connection, struct rudp_wire_new_incoming_connection)
DEC_WRAP(connected_ping, struct rudp_wire_connected_ping)
DEC_WRAP(connected_pong, struct rudp_wire_connected_pong)

ENC_WRAP(addr, struct rudp_wire_addr)
ENC_WRAP(unconnected_ping, struct rudp_wire_unconnected_ping)
ENC_WRAP(unconnected_pong, struct rudp_wire_unconnected_pong)
ENC_WRAP(open_request_1, struct rudp_wire_open_request_1)
ENC_WRAP(open_reply_1, struct rudp_wire_open_reply_1)
ENC_WRAP(open_request_2, struct rudp_wire_open_request_2)
ENC_WRAP(open_reply_2, struct rudp_wire_open_reply_2)
ENC_WRAP(incompatible_protocol, struct rudp_wire_incompatible_protocol)
ENC_WRAP(offline_reject, struct rudp_wire_offline_reject)
ENC_WRAP(dgram_header, struct rudp_wire_dgram_header)
ENC_WRAP(frame, struct rudp_wire_frame)
ENC_WRAP(connection_request, struct rudp_wire_connection_request)
ENC_WRAP(connection_accepted, struct rudp_wire_connection_accepted)
ENC_WRAP(new_incoming_connection, struct rudp_wire_new_incoming_connection)
ENC_WRAP(connected_ping, struct rudp_wire_connected_ping)
ENC_WRAP(connected_pong, struct rudp_wire_connected_pong)

static int enc_disconnect(uint8_t *p, size_t cap, const void *in)
{
	(void)in;
	return rudp_wire_encode_disconnect(p, cap);
}

static int dec_open_request_2_cookie(const uint8_t *p, size_t n)
{
	struct rudp_wire_open_request_2 o;
	return rudp_wire_decode_open_request_2(p, n, true, &o);
}

static int dec_open_request_2_plain(const uint8_t *p, size_t n)
{
	struct rudp_wire_open_request_2 o;
	return rudp_wire_decode_open_request_2(p, n, false, &o);
}

/* A frame decode also proves the body pointer stays inside the input. */
static int dec_frame(const uint8_t *p, size_t n)
{
	struct rudp_wire_frame f;
	int rc = rudp_wire_decode_frame(p, n, &f);

	if (rc >= 0) {
		assert_true(f.body >= p && f.body + f.body_len <= p + n);
		assert_true(f.body_len > 0);
		assert_true(f.reliability <= 4);
		assert_int_equal((size_t)rc, rudp_wire_frame_header_len(&f) + f.body_len);
	}
	return rc;
}

static int dec_ack(const uint8_t *p, size_t n)
{
	struct rudp_wire_range r[4];
	size_t count = 99, dropped = 99;
	bool nack;
	int rc = rudp_wire_decode_ack(p, n, r, 4, &count, &dropped, &nack);

	if (rc >= 0)
		assert_true(count <= 4);
	return rc;
}

static int dec_ack_no_store(const uint8_t *p, size_t n)
{
	size_t count, dropped;
	bool nack;
	return rudp_wire_decode_ack(p, n, NULL, 0, &count, &dropped, &nack);
}

/* How a prefix of a valid encoding may legitimately decode. */
enum prefix_rule {
	PREFIX_NONE, /* every proper prefix is an error */
	PREFIX_OPAQUE, /* the packet ends in an open-ended tail: prefixes >= min_len decode */
	PREFIX_ADDR_LIST, /* a prefix may re-split as fewer internal addresses + the 16-byte tail */
};

struct wire_case {
	const char *name;
	uint8_t buf[1024];
	size_t len;
	dec_fn dec;
	enc_fn enc;
	const void *in;
	enum prefix_rule rule;
	size_t min_len;
};

#define MAX_CASES 80
static struct wire_case cases[MAX_CASES];
static size_t n_cases;

static const uint8_t pong_data[] = "MCPE;librudp;594;1.20;0;10;1234;world;Survival;1;19132;19133;";
static const uint8_t body_bytes[] = {0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

static struct rudp_wire_unconnected_ping in_ping1 = {
	.id = 0x01, .time = 0x0102030405060708, .client_guid = -2};
static struct rudp_wire_unconnected_ping in_ping2 = {
	.id = 0x02, .time = 1, .client_guid = 0x1122334455667788};
static struct rudp_wire_unconnected_pong in_pong = {
	.time = 99, .server_guid = 42, .data = pong_data, .data_len = sizeof(pong_data) - 1};
static struct rudp_wire_unconnected_pong in_pong_empty = {.time = -1, .server_guid = INT64_MIN};
static struct rudp_wire_open_request_1 in_req1 = {.protocol = 11, .mtu = 576};
static struct rudp_wire_open_reply_1 in_rep1 = {.server_guid = 77, .security = false, .mtu = 1400};
static struct rudp_wire_open_reply_1 in_rep1_sec = {
	.server_guid = 77, .security = true, .cookie = 0xdeadbeef, .mtu = 1492};
static struct rudp_wire_open_request_2 in_req2_4, in_req2_6, in_req2_cookie4, in_req2_cookie6;
static struct rudp_wire_open_reply_2 in_rep2_4, in_rep2_6;
static struct rudp_wire_incompatible_protocol in_incompat = {.protocol = 10, .server_guid = 5};
static struct rudp_wire_offline_reject in_reject[4];
static struct rudp_wire_dgram_header in_dgram = {.flags = 0x84, .seq = 0xfffffe};
static struct rudp_wire_frame in_frames[16];
static struct rudp_wire_connection_request in_creq = {.client_guid = 123456789, .time = 1000};
static struct rudp_wire_connection_accepted in_acc10, in_acc20;
static struct rudp_wire_new_incoming_connection in_nic10, in_nic20;
static struct rudp_wire_connected_ping in_cping = {.time = 31337};
static struct rudp_wire_connected_pong in_cpong = {.ping_time = 31337, .pong_time = 31340};

static void add_case(const char *name, enc_fn enc, const void *in, dec_fn dec, enum prefix_rule rule,
		     size_t min_len)
{
	struct wire_case *c;
	int rc;

	assert_true(n_cases < MAX_CASES);
	c = &cases[n_cases++];
	c->name = name;
	c->enc = enc;
	c->in = in;
	c->dec = dec;
	c->rule = rule;
	c->min_len = min_len;
	rc = enc(c->buf, sizeof(c->buf), in);
	if (rc <= 0)
		fail_msg("encoding case %s failed: %d", name, rc);
	c->len = (size_t)rc;
}

static void fill_internal(struct rudp_wire_addr *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		a[i] = (i % 3 == 2) ? addr6 : addr4;
		a[i].port = (uint16_t)(1000 + i);
	}
}

static int setup_cases(void **state)
{
	static const uint8_t rels[8] = {0, 1, 2, 3, 4, 5, 6, 7};

	(void)state;
	n_cases = 0;
	in_req2_4 = (struct rudp_wire_open_request_2){.server_addr = addr4, .mtu = 1400, .client_guid = 9};
	in_req2_6 = (struct rudp_wire_open_request_2){.server_addr = addr6, .mtu = 1200, .client_guid = -9};
	in_req2_cookie4 = in_req2_4;
	in_req2_cookie4.has_cookie = true;
	in_req2_cookie4.cookie = 0xcafef00d;
	in_req2_cookie6 = in_req2_6;
	in_req2_cookie6.has_cookie = true;
	in_req2_cookie6.cookie = 1;
	in_rep2_4 = (struct rudp_wire_open_reply_2){.server_guid = 3, .client_addr = addr4, .mtu = 1400};
	in_rep2_6 = (struct rudp_wire_open_reply_2){
		.server_guid = 3, .client_addr = addr6, .mtu = 576, .encryption = true};
	in_reject[0] = (struct rudp_wire_offline_reject){.id = 0x12, .server_guid = 1};
	in_reject[1] = (struct rudp_wire_offline_reject){.id = 0x14, .server_guid = 2};
	in_reject[2] = (struct rudp_wire_offline_reject){.id = 0x17, .server_guid = 3};
	in_reject[3] = (struct rudp_wire_offline_reject){.id = 0x1a, .server_guid = 4};
	for (int i = 0; i < 16; i++) {
		struct rudp_wire_frame *f = &in_frames[i];

		*f = (struct rudp_wire_frame){.reliability = rels[i % 8],
					      .split = i >= 8,
					      .reliable_index = 0xfffffd + (uint32_t)i,
					      .sequenced_index = 0xffffff,
					      .order_index = 0x800000,
					      .order_channel = 31,
					      .body = body_bytes,
					      .body_len = (uint16_t)(1 + i % 13)};
		f->reliable_index &= RUDP_WIRE_U24_MASK;
		if (f->split) {
			f->split_count = 3;
			f->split_id = 0xabcd;
			f->split_index = 2;
		}
	}
	in_acc10 = (struct rudp_wire_connection_accepted){.client_addr = addr4,
							  .system_index = 0,
							  .n_internal = 10,
							  .request_time = 5,
							  .accepted_time = 6};
	fill_internal(in_acc10.internal, 10);
	in_acc20 = (struct rudp_wire_connection_accepted){.client_addr = addr6,
							  .system_index = 0x1234,
							  .n_internal = 20,
							  .request_time = INT64_MAX,
							  .accepted_time = INT64_MIN};
	fill_internal(in_acc20.internal, 20);
	in_nic10 = (struct rudp_wire_new_incoming_connection){
		.server_addr = addr4, .n_internal = 10, .request_time = 7, .accepted_time = 8};
	fill_internal(in_nic10.internal, 10);
	in_nic20 = (struct rudp_wire_new_incoming_connection){
		.server_addr = addr6, .n_internal = 20, .request_time = 7, .accepted_time = 8};
	fill_internal(in_nic20.internal, 20);

	add_case("addr4", enc_addr, &addr4, dec_addr, PREFIX_NONE, 0);
	add_case("addr6", enc_addr, &addr6, dec_addr, PREFIX_NONE, 0);
	add_case("ping1", enc_unconnected_ping, &in_ping1, dec_unconnected_ping, PREFIX_NONE, 0);
	add_case("ping2", enc_unconnected_ping, &in_ping2, dec_unconnected_ping, PREFIX_NONE, 0);
	add_case("pong", enc_unconnected_pong, &in_pong, dec_unconnected_pong, PREFIX_OPAQUE, 33);
	add_case("pong-empty", enc_unconnected_pong, &in_pong_empty, dec_unconnected_pong, PREFIX_NONE, 0);
	add_case("req1", enc_open_request_1, &in_req1, dec_open_request_1, PREFIX_OPAQUE, 18);
	add_case("rep1", enc_open_reply_1, &in_rep1, dec_open_reply_1, PREFIX_NONE, 0);
	add_case("rep1-sec", enc_open_reply_1, &in_rep1_sec, dec_open_reply_1, PREFIX_NONE, 0);
	add_case("req2-4", enc_open_request_2, &in_req2_4, dec_open_request_2_plain, PREFIX_NONE, 0);
	add_case("req2-6", enc_open_request_2, &in_req2_6, dec_open_request_2_plain, PREFIX_NONE, 0);
	add_case("req2-cookie4", enc_open_request_2, &in_req2_cookie4, dec_open_request_2_cookie, PREFIX_NONE,
		 0);
	add_case("req2-cookie6", enc_open_request_2, &in_req2_cookie6, dec_open_request_2_cookie, PREFIX_NONE,
		 0);
	add_case("rep2-4", enc_open_reply_2, &in_rep2_4, dec_open_reply_2, PREFIX_NONE, 0);
	add_case("rep2-6", enc_open_reply_2, &in_rep2_6, dec_open_reply_2, PREFIX_NONE, 0);
	add_case("incompat", enc_incompatible_protocol, &in_incompat, dec_incompatible_protocol, PREFIX_NONE,
		 0);
	for (int i = 0; i < 4; i++)
		add_case("reject", enc_offline_reject, &in_reject[i], dec_offline_reject, PREFIX_NONE, 0);
	add_case("dgram", enc_dgram_header, &in_dgram, dec_dgram_header, PREFIX_NONE, 0);
	for (int i = 0; i < 16; i++)
		add_case("frame", enc_frame, &in_frames[i], dec_frame, PREFIX_NONE, 0);
	add_case("conn-req", enc_connection_request, &in_creq, dec_connection_request, PREFIX_NONE, 0);
	add_case("accepted10", enc_connection_accepted, &in_acc10, dec_connection_accepted, PREFIX_ADDR_LIST,
		 0);
	add_case("accepted20", enc_connection_accepted, &in_acc20, dec_connection_accepted, PREFIX_ADDR_LIST,
		 0);
	add_case("nic10", enc_new_incoming_connection, &in_nic10, dec_new_incoming_connection,
		 PREFIX_ADDR_LIST, 0);
	add_case("nic20", enc_new_incoming_connection, &in_nic20, dec_new_incoming_connection,
		 PREFIX_ADDR_LIST, 0);
	add_case("cping", enc_connected_ping, &in_cping, dec_connected_ping, PREFIX_NONE, 0);
	add_case("cpong", enc_connected_pong, &in_cpong, dec_connected_pong, PREFIX_NONE, 0);
	return 0;
}

/* ---- known byte vectors, written from PROTOCOL.md ---- */

static void test_vector_unconnected_ping(void **state)
{
	static const uint8_t want[] = {
		0x01,        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		MAGIC_BYTES, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
	};
	struct rudp_wire_unconnected_ping in = {
		.id = 1, .time = 0x0102030405060708, .client_guid = 0x1122334455667788};
	struct rudp_wire_unconnected_ping out;
	uint8_t buf[64];

	(void)state;
	assert_int_equal(rudp_wire_encode_unconnected_ping(buf, sizeof(buf), &in), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(rudp_wire_decode_unconnected_ping(want, sizeof(want), &out), sizeof(want));
	assert_int_equal(out.id, 1);
	assert_true(out.time == 0x0102030405060708);
	assert_true(out.client_guid == 0x1122334455667788);
	assert_true(rudp_wire_is_offline(want, sizeof(want)));
}

static void test_vector_unconnected_pong(void **state)
{
	static const uint8_t want[] = {
		0x1c, 0,    0,    0,    0,    0,    0,           0,    0x2a, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, MAGIC_BYTES, 0x00, 0x02, 'h',  'i',
	};
	static const uint8_t data[] = {0x00, 0x02, 'h', 'i'};
	struct rudp_wire_unconnected_pong in = {.time = 42, .server_guid = -2, .data = data, .data_len = 4};
	struct rudp_wire_unconnected_pong out;
	uint8_t buf[64];

	(void)state;
	assert_int_equal(rudp_wire_encode_unconnected_pong(buf, sizeof(buf), &in), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(rudp_wire_decode_unconnected_pong(want, sizeof(want), &out), sizeof(want));
	assert_true(out.time == 42 && out.server_guid == -2);
	assert_int_equal(out.data_len, 4);
	assert_ptr_equal(out.data, want + 33);
}

static void test_vector_open_request_1(void **state)
{
	/* An MTU probe of 50 is 22 payload bytes: id, magic, protocol, 4 zero pads. */
	static const uint8_t want[] = {0x05, MAGIC_BYTES, 0x0b, 0, 0, 0, 0};
	struct rudp_wire_open_request_1 in = {.protocol = 11, .mtu = 50}, out;
	uint8_t buf[64];

	(void)state;
	assert_int_equal(rudp_wire_encode_open_request_1(buf, sizeof(buf), &in), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(rudp_wire_decode_open_request_1(want, sizeof(want), &out), sizeof(want));
	assert_int_equal(out.protocol, 11);
	assert_int_equal(out.mtu, 50);
}

static void test_vector_open_reply_1_cookie(void **state)
{
	static const uint8_t want[] = {
		0x06, MAGIC_BYTES, 0, 0, 0, 0, 0, 0, 0x01, 0x02, 0x01, 0xde, 0xad, 0xbe, 0xef, 0x05, 0xd4,
	};
	struct rudp_wire_open_reply_1 in = {
		.server_guid = 0x0102, .security = true, .cookie = 0xdeadbeef, .mtu = 1492};
	struct rudp_wire_open_reply_1 out;
	uint8_t buf[64];

	(void)state;
	assert_int_equal(rudp_wire_encode_open_reply_1(buf, sizeof(buf), &in), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(rudp_wire_decode_open_reply_1(want, sizeof(want), &out), sizeof(want));
	assert_true(out.security);
	assert_int_equal(out.cookie, 0xdeadbeef);
	assert_int_equal(out.mtu, 1492);
}

static void test_vector_addresses(void **state)
{
	/* 127.0.0.1:19132, each address byte inverted. */
	static const uint8_t want4[] = {0x04, 0x80, 0xff, 0xff, 0xfe, 0x4a, 0xbc};
	/* [::1]:19132, family 10 little-endian, flowinfo 1, scope 2. */
	static const uint8_t want6[] = {
		0x06, 0x0a, 0x00, 0x4a, 0xbc, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
		0,    0,    0,    0,    0,    0, 0, 0, 0, 1, 0, 0, 0, 2,
	};
	struct rudp_wire_addr a4 = {.version = 4, .port = 19132, .ip = {127, 0, 0, 1}};
	struct rudp_wire_addr a6 = {.version = 6, .port = 19132, .family = 10, .flowinfo = 1, .scope_id = 2};
	struct rudp_wire_addr out;
	uint8_t buf[64];

	(void)state;
	a6.ip[15] = 1;
	assert_int_equal(rudp_wire_encode_addr(buf, sizeof(buf), &a4), RUDP_WIRE_ADDR4_LEN);
	assert_memory_equal(buf, want4, sizeof(want4));
	assert_int_equal(rudp_wire_decode_addr(want4, sizeof(want4), &out), RUDP_WIRE_ADDR4_LEN);
	assert_addr_equal(&out, &a4);
	assert_int_equal(rudp_wire_encode_addr(buf, sizeof(buf), &a6), RUDP_WIRE_ADDR6_LEN);
	assert_memory_equal(buf, want6, sizeof(want6));
	assert_int_equal(rudp_wire_decode_addr(want6, sizeof(want6), &out), RUDP_WIRE_ADDR6_LEN);
	assert_addr_equal(&out, &a6);

	/* An unset v6 family goes out as Linux AF_INET6. */
	a6.family = 0;
	assert_int_equal(rudp_wire_encode_addr(buf, sizeof(buf), &a6), RUDP_WIRE_ADDR6_LEN);
	assert_memory_equal(buf, want6, sizeof(want6));
}

static void test_vector_dgram_header(void **state)
{
	static const uint8_t want[] = {0x84, 0x56, 0x34, 0x12};
	struct rudp_wire_dgram_header in = {.flags = RUDP_DGRAM_NEEDS_B_AND_AS, .seq = 0x123456}, out;
	uint8_t buf[8];

	(void)state;
	assert_int_equal(rudp_wire_encode_dgram_header(buf, sizeof(buf), &in), 4);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(rudp_wire_decode_dgram_header(want, sizeof(want), &out), 4);
	assert_int_equal(out.flags, 0x84);
	assert_int_equal(out.seq, 0x123456);

	/* Counters are 24-bit: the encoder writes only the low 24 bits. */
	in.seq = 0x01abcdef;
	assert_int_equal(rudp_wire_encode_dgram_header(buf, sizeof(buf), &in), 4);
	assert_int_equal(buf[1], 0xef);
	assert_int_equal(buf[3], 0xab);
}

static void test_vector_ack(void **state)
{
	/* ACK, one record, a range 0x000102..0x000105. */
	static const uint8_t want_ack[] = {0xc0, 0x00, 0x01, 0x00, 0x02, 0x01, 0x00, 0x05, 0x01, 0x00};
	/* NACK, two records: single 7 and a range 0xfffffe..0x000001 written
	 * across the wrap, as librudp before 2026-12 sent it: still accepted. */
	static const uint8_t wrapped_nack[] = {
		0xa0, 0x00, 0x02, 0x01, 0x07, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0x01, 0x00, 0x00,
	};
	/* What the encoder sends for the same ranges: the wrapped one split. */
	static const uint8_t want_nack[] = {
		0xa0, 0x00, 0x03, 0x01, 0x07, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff,
		0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	};
	/* RakNet's ACK with "has B and AS" set carries a float before the count. */
	static const uint8_t ack_bas[] = {0xe0, 0x3f, 0x80, 0, 0, 0x00, 0x01, 0x01, 0x09, 0x00, 0x00};
	struct rudp_wire_range r1 = {0x102, 0x105};
	struct rudp_wire_range r2[2] = {{7, 7}, {0xfffffe, 1}};
	struct rudp_wire_range out[4];
	size_t count, dropped, enc;
	uint8_t buf[64];
	bool nack;

	(void)state;
	assert_int_equal(rudp_wire_encode_ack(buf, sizeof(buf), false, &r1, 1, &enc), sizeof(want_ack));
	assert_int_equal(enc, 1);
	assert_memory_equal(buf, want_ack, sizeof(want_ack));
	assert_int_equal(rudp_wire_decode_ack(want_ack, sizeof(want_ack), out, 4, &count, &dropped, &nack),
			 0);
	assert_false(nack);
	assert_int_equal(count, 1);
	assert_int_equal(dropped, 0);
	assert_int_equal(out[0].start, 0x102);
	assert_int_equal(out[0].end, 0x105);

	assert_int_equal(rudp_wire_encode_ack(buf, sizeof(buf), true, r2, 2, &enc), sizeof(want_nack));
	assert_int_equal(enc, 2);
	assert_memory_equal(buf, want_nack, sizeof(want_nack));
	assert_int_equal(rudp_wire_decode_ack(want_nack, sizeof(want_nack), out, 4, &count, &dropped, &nack),
			 0);
	assert_true(nack);
	assert_int_equal(count, 3);
	assert_int_equal(out[1].start, 0xfffffe);
	assert_int_equal(out[1].end, 0xffffff);
	assert_int_equal(out[2].start, 0);
	assert_int_equal(out[2].end, 1);
	assert_int_equal(
		rudp_wire_decode_ack(wrapped_nack, sizeof(wrapped_nack), out, 4, &count, &dropped, &nack), 0);
	assert_true(nack);
	assert_int_equal(count, 2);
	assert_int_equal(out[0].start, 7);
	assert_int_equal(out[0].end, 7);
	assert_int_equal(out[1].start, 0xfffffe);
	assert_int_equal(out[1].end, 1);

	assert_int_equal(rudp_wire_decode_ack(ack_bas, sizeof(ack_bas), out, 4, &count, &dropped, &nack), 0);
	assert_false(nack);
	assert_int_equal(count, 1);
	assert_int_equal(out[0].start, 9);
}

static void test_vector_frames(void **state)
{
	/* Reliable ordered (3 << 5 = 0x60), 3 bytes = 24 bits, reliable index 5,
	 * order index 7 on channel 2, body "abc". */
	static const uint8_t want_ro[] = {0x60, 0x00, 0x18, 0x05, 0x00, 0x00, 0x07,
					  0x00, 0x00, 0x02, 'a',  'b',  'c'};
	/* Reliable + split (0x40 | 0x10), 1 byte, reliable index 0x010203, count 4,
	 * id 0x0102, index 3. */
	static const uint8_t want_split[] = {
		0x50, 0x00, 0x08, 0x03, 0x02, 0x01, 0, 0, 0, 4, 0x01, 0x02, 0, 0, 0, 3, 0xfe,
	};
	/* Unreliable sequenced: sequenced index then order index and channel. */
	static const uint8_t want_us[] = {0x20, 0x00, 0x08, 0x09, 0, 0, 0x0a, 0, 0, 0x1f, 0x42};
	/* A body of 9 bits occupies 2 bytes. */
	static const uint8_t odd_bits[] = {0x00, 0x00, 0x09, 0xaa, 0xbb};
	struct rudp_wire_frame f = {.reliability = RUDP_WIRE_RELIABLE_ORDERED,
				    .reliable_index = 5,
				    .order_index = 7,
				    .order_channel = 2,
				    .body = (const uint8_t *)"abc",
				    .body_len = 3};
	struct rudp_wire_frame out;
	uint8_t buf[64];

	(void)state;
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), sizeof(want_ro));
	assert_memory_equal(buf, want_ro, sizeof(want_ro));
	assert_int_equal(rudp_wire_decode_frame(want_ro, sizeof(want_ro), &out), sizeof(want_ro));
	assert_int_equal(out.reliability, 3);
	assert_int_equal(out.reliable_index, 5);
	assert_int_equal(out.order_index, 7);
	assert_int_equal(out.order_channel, 2);
	assert_int_equal(out.body_len, 3);
	assert_memory_equal(out.body, "abc", 3);

	/* "With ack receipt" goes out as the plain reliability. */
	f.reliability = RUDP_WIRE_RELIABLE_ORDERED_ACK_RECEIPT;
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), sizeof(want_ro));
	assert_memory_equal(buf, want_ro, sizeof(want_ro));

	f = (struct rudp_wire_frame){.reliability = RUDP_WIRE_RELIABLE,
				     .split = true,
				     .reliable_index = 0x010203,
				     .split_count = 4,
				     .split_id = 0x0102,
				     .split_index = 3,
				     .body = body_bytes,
				     .body_len = 1};
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), sizeof(want_split));
	assert_memory_equal(buf, want_split, sizeof(want_split));
	assert_int_equal(rudp_wire_decode_frame(want_split, sizeof(want_split), &out), sizeof(want_split));
	assert_true(out.split);
	assert_int_equal(out.split_count, 4);
	assert_int_equal(out.split_id, 0x0102);
	assert_int_equal(out.split_index, 3);

	f = (struct rudp_wire_frame){.reliability = RUDP_WIRE_UNRELIABLE_SEQUENCED,
				     .sequenced_index = 9,
				     .order_index = 10,
				     .order_channel = 31,
				     .body = (const uint8_t *)"B",
				     .body_len = 1};
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), sizeof(want_us));
	assert_memory_equal(buf, want_us, sizeof(want_us));

	assert_int_equal(rudp_wire_decode_frame(odd_bits, sizeof(odd_bits), &out), sizeof(odd_bits));
	assert_int_equal(out.body_len, 2);
}

static void test_vector_control(void **state)
{
	static const uint8_t want_req[] = {0x09, 0, 0, 0, 0, 0, 0,    0,    0x10,
					   0,    0, 0, 0, 0, 0, 0x03, 0xe8, 0x00};
	static const uint8_t want_pong[] = {0x03, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2};
	static const uint8_t want_nic[] = {
		0x13, 0x04, 0x80, 0xff, 0xff, 0xfe, 0x4a, 0xbc, /* server address 127.0.0.1:19132 */
		0x04, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, /* one internal address 0.0.0.0:0 */
		0,    0,    0,    0,    0,    0,    0,    1,    0, 0, 0, 0, 0, 0, 0, 2,
	};
	struct rudp_wire_connection_request req = {.client_guid = 16, .time = 1000};
	struct rudp_wire_connected_pong pong = {.ping_time = 1, .pong_time = 2};
	struct rudp_wire_new_incoming_connection nic = {
		.server_addr = {.version = 4, .port = 19132, .ip = {127, 0, 0, 1}},
		.n_internal = 1,
		.request_time = 1,
		.accepted_time = 2};
	struct rudp_wire_new_incoming_connection nic_out;
	uint8_t buf[128];

	(void)state;
	nic.internal[0].version = 4;
	assert_int_equal(rudp_wire_encode_connection_request(buf, sizeof(buf), &req), sizeof(want_req));
	assert_memory_equal(buf, want_req, sizeof(want_req));
	assert_int_equal(rudp_wire_encode_connected_pong(buf, sizeof(buf), &pong), sizeof(want_pong));
	assert_memory_equal(buf, want_pong, sizeof(want_pong));
	assert_int_equal(rudp_wire_encode_new_incoming_connection(buf, sizeof(buf), &nic), sizeof(want_nic));
	assert_memory_equal(buf, want_nic, sizeof(want_nic));
	assert_int_equal(rudp_wire_decode_new_incoming_connection(want_nic, sizeof(want_nic), &nic_out),
			 sizeof(want_nic));
	assert_int_equal(nic_out.n_internal, 1);
	assert_true(nic_out.request_time == 1 && nic_out.accepted_time == 2);
	assert_int_equal(rudp_wire_encode_disconnect(buf, sizeof(buf)), 1);
	assert_int_equal(buf[0], 0x15);
}

/* ---- round trips ---- */

static void test_roundtrip_table(void **state)
{
	(void)state;
	/* Every case decodes in full and re-encodes to the same bytes. */
	for (size_t i = 0; i < n_cases; i++) {
		struct wire_case *c = &cases[i];
		uint8_t *p = exact_copy(c->buf, c->len);
		int rc = c->dec(p, c->len);

		if (rc != (int)c->len)
			fail_msg("case %zu (%s): decode returned %d, want %zu", i, c->name, rc, c->len);
		free(p);
	}
}

static void test_roundtrip_offline(void **state)
{
	uint8_t buf[1600];
	int rc;

	(void)state;
	{
		struct rudp_wire_unconnected_ping o;
		rc = rudp_wire_encode_unconnected_ping(buf, sizeof(buf), &in_ping2);
		assert_int_equal(rudp_wire_decode_unconnected_ping(buf, (size_t)rc, &o), rc);
		assert_int_equal(o.id, 2);
		assert_true(o.time == in_ping2.time && o.client_guid == in_ping2.client_guid);
	}
	{
		struct rudp_wire_unconnected_pong o;
		rc = rudp_wire_encode_unconnected_pong(buf, sizeof(buf), &in_pong);
		assert_int_equal(rudp_wire_decode_unconnected_pong(buf, (size_t)rc, &o), rc);
		assert_int_equal(o.data_len, in_pong.data_len);
		assert_memory_equal(o.data, in_pong.data, o.data_len);
		rc = rudp_wire_encode_unconnected_pong(buf, sizeof(buf), &in_pong_empty);
		assert_int_equal(rc, 33);
		assert_int_equal(rudp_wire_decode_unconnected_pong(buf, (size_t)rc, &o), rc);
		assert_int_equal(o.data_len, 0);
		assert_true(o.server_guid == INT64_MIN);
	}
	{
		static const uint16_t mtus[] = {46, 576, 1200, 1400, 1492};
		struct rudp_wire_open_request_1 in = {.protocol = 10}, o;

		for (size_t i = 0; i < sizeof(mtus) / sizeof(mtus[0]); i++) {
			in.mtu = mtus[i];
			rc = rudp_wire_encode_open_request_1(buf, sizeof(buf), &in);
			assert_int_equal(rc, mtus[i] - 28);
			for (int k = 18; k < rc; k++)
				assert_int_equal(buf[k], 0);
			assert_int_equal(rudp_wire_decode_open_request_1(buf, (size_t)rc, &o), rc);
			assert_int_equal(o.mtu, mtus[i]);
			assert_int_equal(o.protocol, 10);
		}
	}
	{
		struct rudp_wire_open_reply_1 o;
		rc = rudp_wire_encode_open_reply_1(buf, sizeof(buf), &in_rep1);
		assert_int_equal(rc, 28);
		assert_int_equal(rudp_wire_decode_open_reply_1(buf, (size_t)rc, &o), rc);
		assert_false(o.security);
		assert_int_equal(o.cookie, 0);
		assert_int_equal(o.mtu, 1400);
		rc = rudp_wire_encode_open_reply_1(buf, sizeof(buf), &in_rep1_sec);
		assert_int_equal(rc, 32);
		assert_int_equal(rudp_wire_decode_open_reply_1(buf, (size_t)rc, &o), rc);
		assert_true(o.security);
		assert_int_equal(o.cookie, 0xdeadbeef);
	}
	{
		const struct rudp_wire_open_request_2 *ins[] = {&in_req2_4, &in_req2_6, &in_req2_cookie4,
								&in_req2_cookie6};
		struct rudp_wire_open_request_2 o;

		for (int i = 0; i < 4; i++) {
			rc = rudp_wire_encode_open_request_2(buf, sizeof(buf), ins[i]);
			assert_int_equal(rc, 1 + 16 + (ins[i]->has_cookie ? 5 : 0) +
						     (ins[i]->server_addr.version == 4 ? 7 : 29) + 2 + 8);
			assert_int_equal(
				rudp_wire_decode_open_request_2(buf, (size_t)rc, ins[i]->has_cookie, &o), rc);
			assert_int_equal(o.has_cookie, ins[i]->has_cookie);
			assert_int_equal(o.cookie, ins[i]->has_cookie ? ins[i]->cookie : 0);
			assert_addr_equal(&o.server_addr, &ins[i]->server_addr);
			assert_int_equal(o.mtu, ins[i]->mtu);
			assert_true(o.client_guid == ins[i]->client_guid);
		}
	}
	{
		const struct rudp_wire_open_reply_2 *ins[] = {&in_rep2_4, &in_rep2_6};
		struct rudp_wire_open_reply_2 o;

		for (int i = 0; i < 2; i++) {
			rc = rudp_wire_encode_open_reply_2(buf, sizeof(buf), ins[i]);
			assert_int_equal(rudp_wire_decode_open_reply_2(buf, (size_t)rc, &o), rc);
			assert_true(o.server_guid == ins[i]->server_guid);
			assert_addr_equal(&o.client_addr, &ins[i]->client_addr);
			assert_int_equal(o.mtu, ins[i]->mtu);
			assert_int_equal(o.encryption, ins[i]->encryption);
		}
	}
	{
		struct rudp_wire_incompatible_protocol o;
		rc = rudp_wire_encode_incompatible_protocol(buf, sizeof(buf), &in_incompat);
		assert_int_equal(rc, 26);
		assert_int_equal(rudp_wire_decode_incompatible_protocol(buf, (size_t)rc, &o), rc);
		assert_int_equal(o.protocol, 10);
		assert_true(o.server_guid == 5);
	}
	for (int i = 0; i < 4; i++) {
		struct rudp_wire_offline_reject o;
		rc = rudp_wire_encode_offline_reject(buf, sizeof(buf), &in_reject[i]);
		assert_int_equal(rc, 25);
		assert_int_equal(rudp_wire_decode_offline_reject(buf, (size_t)rc, &o), rc);
		assert_int_equal(o.id, in_reject[i].id);
		assert_true(o.server_guid == in_reject[i].server_guid);
	}
}

static void test_roundtrip_request_2_challenge(void **state)
{
	/* A security-enabled client sets the challenge flag and sends 64 bytes. */
	uint8_t buf[256];
	size_t n = 0;
	struct rudp_wire_open_request_2 o;

	(void)state;
	buf[n++] = 0x07;
	memcpy(buf + n, rudp_wire_magic, 16);
	n += 16;
	buf[n++] = 0x11, buf[n++] = 0x22, buf[n++] = 0x33, buf[n++] = 0x44;
	buf[n++] = 0x01;
	memset(buf + n, 0x5a, 64);
	n += 64;
	n += (size_t)rudp_wire_encode_addr(buf + n, sizeof(buf) - n, &addr4);
	buf[n++] = 0x05, buf[n++] = 0x78;
	memset(buf + n, 0, 7);
	n += 7;
	buf[n++] = 0x2a;
	assert_int_equal(rudp_wire_decode_open_request_2(buf, n, true, &o), (int)n);
	assert_int_equal(o.cookie, 0x11223344);
	assert_addr_equal(&o.server_addr, &addr4);
	assert_int_equal(o.mtu, 1400);
	assert_true(o.client_guid == 42);
	for (size_t k = 0; k < n; k++) {
		uint8_t *p = exact_copy(buf, k);
		assert_true(rudp_wire_decode_open_request_2(p, k, true, &o) < 0);
		free(p);
	}
}

static void test_roundtrip_trailing_tolerated(void **state)
{
	/* Real clients append extras to offline packets and control messages. */
	uint8_t buf[256];
	int rc;

	(void)state;
	rc = rudp_wire_encode_unconnected_ping(buf, sizeof(buf), &in_ping1);
	memset(buf + rc, 0xaa, 8);
	assert_int_equal(dec_unconnected_ping(buf, (size_t)rc + 8), rc);
	rc = rudp_wire_encode_open_reply_1(buf, sizeof(buf), &in_rep1);
	memset(buf + rc, 0xaa, 8);
	assert_int_equal(dec_open_reply_1(buf, (size_t)rc + 8), rc);
	rc = rudp_wire_encode_open_reply_2(buf, sizeof(buf), &in_rep2_6);
	memset(buf + rc, 0xaa, 8);
	assert_int_equal(dec_open_reply_2(buf, (size_t)rc + 8), rc);
	rc = rudp_wire_encode_open_request_2(buf, sizeof(buf), &in_req2_4);
	memset(buf + rc, 0xaa, 8);
	assert_int_equal(dec_open_request_2_plain(buf, (size_t)rc + 8), rc);
	rc = rudp_wire_encode_incompatible_protocol(buf, sizeof(buf), &in_incompat);
	memset(buf + rc, 0xaa, 8);
	assert_int_equal(dec_incompatible_protocol(buf, (size_t)rc + 8), rc);
	rc = rudp_wire_encode_offline_reject(buf, sizeof(buf), &in_reject[2]);
	memset(buf + rc, 0xaa, 8);
	assert_int_equal(dec_offline_reject(buf, (size_t)rc + 8), rc);
	rc = rudp_wire_encode_connected_ping(buf, sizeof(buf), &in_cping);
	memset(buf + rc, 0xaa, 8);
	assert_int_equal(dec_connected_ping(buf, (size_t)rc + 8), rc);
	rc = rudp_wire_encode_connected_pong(buf, sizeof(buf), &in_cpong);
	memset(buf + rc, 0xaa, 8);
	assert_int_equal(dec_connected_pong(buf, (size_t)rc + 8), rc);
	/* A connection request with security set carries proofs we skip. */
	rc = rudp_wire_encode_connection_request(buf, sizeof(buf), &in_creq);
	buf[rc - 1] = 1;
	memset(buf + rc, 0xaa, 100);
	{
		struct rudp_wire_connection_request o;
		assert_int_equal(rudp_wire_decode_connection_request(buf, (size_t)rc + 100, &o), rc);
		assert_true(o.security);
		assert_true(o.client_guid == in_creq.client_guid && o.time == in_creq.time);
	}
}

static void test_roundtrip_dgram_header(void **state)
{
	static const uint32_t seqs[] = {0, 1, 0x7fffff, 0x800000, 0xfffffe, 0xffffff};
	static const uint8_t flags[] = {0x80, 0x84, 0x88, 0x90, 0x9c, 0x00};
	struct rudp_wire_dgram_header in, o;
	uint8_t buf[8];

	(void)state;
	for (size_t i = 0; i < 6; i++) {
		for (size_t j = 0; j < 6; j++) {
			in.flags = flags[j];
			in.seq = seqs[i];
			assert_int_equal(rudp_wire_encode_dgram_header(buf, sizeof(buf), &in), 4);
			assert_int_equal(rudp_wire_decode_dgram_header(buf, 4, &o), 4);
			assert_int_equal(o.flags, flags[j] | 0x80);
			assert_int_equal(o.seq, seqs[i]);
		}
	}
}

static void test_roundtrip_frames(void **state)
{
	static const uint8_t plain[8] = {0, 1, 2, 3, 4, 0, 2, 3};
	static const uint32_t idx[] = {0, 1, 0x7fffff, 0xfffffe, 0xffffff};
	static uint8_t big[8191];
	uint8_t buf[9000];

	(void)state;
	for (size_t k = 0; k < sizeof(big); k++)
		big[k] = (uint8_t)(k * 7);
	for (uint8_t rel = 0; rel < 8; rel++) {
		for (int split = 0; split < 2; split++) {
			for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
				struct rudp_wire_frame f = {
					.reliability = rel,
					.split = split,
					.reliable_index = idx[i],
					.sequenced_index = idx[(i + 1) % 5],
					.order_index = idx[(i + 2) % 5],
					.order_channel = (uint8_t)(i * 7 % 32),
					.split_count = split ? 0xffffffffu : 0,
					.split_id = (uint16_t)(split ? 0xffff : 0),
					.split_index = split ? 0xfffffffeu : 0,
					.body = big,
					.body_len = (uint16_t)(i == 4 ? sizeof(big) : 1 + i * 100),
				};
				struct rudp_wire_frame o;
				int rc = rudp_wire_encode_frame(buf, sizeof(buf), &f);

				assert_int_equal(rc, rudp_wire_frame_header_len(&f) + f.body_len);
				assert_int_equal(rudp_wire_decode_frame(buf, (size_t)rc, &o), rc);
				assert_int_equal(o.reliability, plain[rel]);
				assert_int_equal(o.split, f.split);
				assert_int_equal(o.reliable_index,
						 rudp_wire_is_reliable(rel) ? f.reliable_index : 0);
				assert_int_equal(o.sequenced_index,
						 rudp_wire_is_sequenced(rel) ? f.sequenced_index : 0);
				if (rudp_wire_is_ordered_or_sequenced(rel)) {
					assert_int_equal(o.order_index, f.order_index);
					assert_int_equal(o.order_channel, f.order_channel);
				} else {
					assert_int_equal(o.order_index, 0);
					assert_int_equal(o.order_channel, 0);
				}
				assert_int_equal(o.split_count, f.split_count);
				assert_int_equal(o.split_id, f.split_id);
				assert_int_equal(o.split_index, f.split_index);
				assert_int_equal(o.body_len, f.body_len);
				assert_memory_equal(o.body, f.body, f.body_len);
				assert_ptr_equal(o.body, buf + rudp_wire_frame_header_len(&f));
			}
		}
	}
}

static void test_roundtrip_frame_set(void **state)
{
	/* A datagram header followed by several frames, decoded in sequence. */
	uint8_t buf[512];
	size_t off = 0, n_frames = 0;
	struct rudp_wire_dgram_header h = {.flags = 0x80, .seq = 0xffffff}, ho;
	int rc;

	(void)state;
	rc = rudp_wire_encode_dgram_header(buf, sizeof(buf), &h);
	off += (size_t)rc;
	for (int i = 0; i < 16; i++) {
		rc = rudp_wire_encode_frame(buf + off, sizeof(buf) - off, &in_frames[i]);
		assert_true(rc > 0);
		off += (size_t)rc;
	}
	assert_int_equal(rudp_wire_decode_dgram_header(buf, off, &ho), 4);
	for (size_t pos = 4; pos < off; n_frames++) {
		struct rudp_wire_frame f;

		rc = rudp_wire_decode_frame(buf + pos, off - pos, &f);
		assert_true(rc > 0);
		assert_int_equal(f.body_len, in_frames[n_frames].body_len);
		pos += (size_t)rc;
	}
	assert_int_equal(n_frames, 16);
}

/* The records an encoder must put on the wire for ranges: one each, or two
 * for a range that crosses the 2^24 wrap. Returns how many. */
static size_t expected_records(const struct rudp_wire_range *in, size_t n, struct rudp_wire_range *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (in[i].end < in[i].start) {
			out[k++] = (struct rudp_wire_range){in[i].start, 0xffffff};
			out[k++] = (struct rudp_wire_range){0, in[i].end};
		} else {
			out[k++] = in[i];
		}
	}
	return k;
}

static void test_roundtrip_ack(void **state)
{
	struct rudp_wire_range in[300], want[600], out[600];
	size_t count, dropped, enc, nwant;
	uint8_t buf[8192];
	bool nack;
	int rc;

	(void)state;
	rng_seed(7);
	for (size_t i = 0; i < 300; i++) {
		uint32_t s = i < 4 ? 0xfffffc + (uint32_t)i : rng_below(&rng_state, 1u << 24);
		uint32_t len = rng_below(&rng_state, 3) == 0 ? 0 : rng_below(&rng_state, 50);

		in[i].start = s;
		in[i].end = rudp_u24_add(s, len);
	}
	in[0] = (struct rudp_wire_range){0xffffff, 0xffffff};
	in[1] = (struct rudp_wire_range){0xffffff, 0x000000};
	nwant = expected_records(in, 300, want);
	assert_true(nwant > 301); /* in[1], in[2], in[3] and the random ones cross the wrap */
	for (int which = 0; which < 2; which++) {
		size_t want_len = 3;

		for (size_t i = 0; i < 300; i++)
			want_len += rudp_wire_range_len(&in[i]);
		rc = rudp_wire_encode_ack(buf, sizeof(buf), which, in, 300, &enc);
		assert_int_equal(rc, want_len);
		assert_int_equal(enc, 300);
		assert_int_equal(rudp_wire_decode_ack(buf, (size_t)rc, out, 600, &count, &dropped, &nack), 0);
		assert_int_equal(nack, which);
		assert_int_equal(count, nwant);
		assert_int_equal(dropped, 0);
		assert_memory_equal(out, want, nwant * sizeof(want[0]));
		/* No record on the wire runs past 0xffffff. */
		for (size_t i = 0; i < count; i++)
			assert_true(out[i].start <= out[i].end);

		/* Beyond max_ranges, records are counted, not stored. */
		memset(out, 0, sizeof(out));
		assert_int_equal(rudp_wire_decode_ack(buf, (size_t)rc, out, 10, &count, &dropped, &nack), 0);
		assert_int_equal(count, 10);
		assert_int_equal(dropped, nwant - 10);
		assert_memory_equal(out, want, 10 * sizeof(want[0]));
		assert_int_equal(out[10].start, 0);
	}
}

/* A range across the wrap is two records, byte for byte, and goes out whole
 * or not at all. */
static void test_ack_wrap_split(void **state)
{
	static const uint8_t want[] = {
		0xc0, 0x00, 0x03, /* ACK, three records */
		0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, /* [0xfffffe, 0xffffff] */
		0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, /* [0, 2] */
		0x01, 0x05, 0x00, 0x00, /* 5 */
	};
	struct rudp_wire_range in[2] = {{0xfffffe, 0x000002}, {5, 5}};
	struct rudp_wire_range single = {0xffffff, 0};
	uint8_t buf[64];
	size_t enc = 0;

	(void)state;
	assert_int_equal(rudp_wire_encode_ack(buf, sizeof(buf), false, in, 2, &enc), sizeof(want));
	assert_int_equal(enc, 2);
	assert_memory_equal(buf, want, sizeof(want));
	/* Room for the first half only: the wrapped range is not started. */
	assert_int_equal(rudp_wire_encode_ack(buf, 3 + 7 + 6, false, in, 2, &enc), RUDP_WIRE_NO_SPACE);
	assert_int_equal(enc, 0);
	/* [0xffffff, 0] is two single records. */
	assert_int_equal(rudp_wire_encode_ack(buf, sizeof(buf), true, &single, 1, &enc), 3 + 4 + 4);
	assert_int_equal(buf[2], 2);
	assert_int_equal(buf[3], 1);
	assert_int_equal(buf[7], 1);
	assert_int_equal(buf[8] | buf[9] | buf[10], 0);
}

static void test_roundtrip_internal_addrs(void **state)
{
	const struct rudp_wire_connection_accepted *accs[] = {&in_acc10, &in_acc20};
	const struct rudp_wire_new_incoming_connection *nics[] = {&in_nic10, &in_nic20};
	struct rudp_wire_connection_accepted ao;
	struct rudp_wire_new_incoming_connection no;
	uint8_t buf[2048];
	int rc;

	(void)state;
	for (int i = 0; i < 2; i++) {
		rc = rudp_wire_encode_connection_accepted(buf, sizeof(buf), accs[i]);
		assert_int_equal(rudp_wire_decode_connection_accepted(buf, (size_t)rc, &ao), rc);
		assert_addr_equal(&ao.client_addr, &accs[i]->client_addr);
		assert_int_equal(ao.system_index, accs[i]->system_index);
		assert_int_equal(ao.n_internal, accs[i]->n_internal);
		for (int k = 0; k < ao.n_internal; k++)
			assert_addr_equal(&ao.internal[k], &accs[i]->internal[k]);
		assert_true(ao.request_time == accs[i]->request_time);
		assert_true(ao.accepted_time == accs[i]->accepted_time);

		rc = rudp_wire_encode_new_incoming_connection(buf, sizeof(buf), nics[i]);
		assert_int_equal(rudp_wire_decode_new_incoming_connection(buf, (size_t)rc, &no), rc);
		assert_addr_equal(&no.server_addr, &nics[i]->server_addr);
		assert_int_equal(no.n_internal, nics[i]->n_internal);
		for (int k = 0; k < no.n_internal; k++)
			assert_addr_equal(&no.internal[k], &nics[i]->internal[k]);
		assert_true(no.request_time == nics[i]->request_time);
	}

	/* Zero internal addresses, and more than we store: the extras are
	 * skipped but the trailing times are still found. */
	{
		struct rudp_wire_connection_accepted a = in_acc10;
		size_t n = 0;

		a.n_internal = 0;
		rc = rudp_wire_encode_connection_accepted(buf, sizeof(buf), &a);
		assert_int_equal(rudp_wire_decode_connection_accepted(buf, (size_t)rc, &ao), rc);
		assert_int_equal(ao.n_internal, 0);

		a.n_internal = 20;
		fill_internal(a.internal, 20);
		rc = rudp_wire_encode_connection_accepted(buf, sizeof(buf), &a);
		n = (size_t)rc - 16;
		/* splice in 5 more v4 addresses before the times */
		for (int k = 0; k < 5; k++)
			n += (size_t)rudp_wire_encode_addr(buf + n, sizeof(buf) - n, &addr4);
		memset(buf + n, 0, 16);
		buf[n + 7] = 5;
		buf[n + 15] = 6;
		n += 16;
		assert_int_equal(rudp_wire_decode_connection_accepted(buf, n, &ao), (int)n);
		assert_int_equal(ao.n_internal, RUDP_WIRE_MAX_INTERNAL_ADDRS);
		assert_true(ao.request_time == 5 && ao.accepted_time == 6);
	}
}

/* ---- every truncation ---- */

static void test_truncations(void **state)
{
	(void)state;
	for (size_t i = 0; i < n_cases; i++) {
		struct wire_case *c = &cases[i];

		for (size_t k = 0; k < c->len; k++) {
			uint8_t *p = exact_copy(c->buf, k);
			int rc = c->dec(p, k);

			switch (c->rule) {
			case PREFIX_NONE:
				if (rc >= 0)
					fail_msg("case %s: prefix %zu/%zu decoded (%d)", c->name, k, c->len,
						 rc);
				break;
			case PREFIX_OPAQUE:
				if (k < c->min_len ? rc >= 0 : rc != (int)k)
					fail_msg("case %s: prefix %zu/%zu gave %d", c->name, k, c->len, rc);
				break;
			case PREFIX_ADDR_LIST:
				/* Either an error, or the whole prefix re-split as fewer addresses. */
				if (rc >= 0 && rc != (int)k)
					fail_msg("case %s: prefix %zu/%zu gave %d", c->name, k, c->len, rc);
				break;
			}
			free(p);
		}
	}
}

static void test_truncations_addr_list(void **state)
{
	/* The address list has no count, so a prefix that is exactly some whole
	 * number of addresses shorter resolves to fewer of them; any other cut
	 * must fail. Check the successful ones really are that. */
	uint8_t buf[1024];
	struct rudp_wire_connection_accepted a = in_acc10, o;
	int full, ok = 0;

	(void)state;
	for (int i = 0; i < 10; i++)
		a.internal[i] = addr4;
	full = rudp_wire_encode_connection_accepted(buf, sizeof(buf), &a);
	for (int k = 0; k < full; k++) {
		uint8_t *p = exact_copy(buf, (size_t)k);
		int rc = rudp_wire_decode_connection_accepted(p, (size_t)k, &o);
		int fixed = 1 + 7 + 2 + 16;

		if (k >= fixed && (k - fixed) % 7 == 0) {
			assert_int_equal(rc, k);
			assert_int_equal(o.n_internal, (k - fixed) / 7);
			ok++;
		} else {
			assert_true(rc < 0);
		}
		free(p);
	}
	assert_int_equal(ok, 10);
}

/* ---- garbage and mutations ---- */

struct named_dec {
	const char *name;
	dec_fn dec;
	uint8_t id; /* forced first byte for targeted garbage */
	int magic_at;
};

static const struct named_dec all_decoders[] = {
	{"addr", dec_addr, 4, -1},
	{"ping", dec_unconnected_ping, 0x01, 9},
	{"pong", dec_unconnected_pong, 0x1c, 17},
	{"req1", dec_open_request_1, 0x05, 1},
	{"rep1", dec_open_reply_1, 0x06, 1},
	{"req2c", dec_open_request_2_cookie, 0x07, 1},
	{"req2", dec_open_request_2_plain, 0x07, 1},
	{"rep2", dec_open_reply_2, 0x08, 1},
	{"incompat", dec_incompatible_protocol, 0x19, 2},
	{"reject", dec_offline_reject, 0x12, 1},
	{"dgram", dec_dgram_header, 0x84, -1},
	{"frame", dec_frame, 0x60, -1},
	{"ack", dec_ack, 0xc0, -1},
	{"nack", dec_ack, 0xa0, -1},
	{"ack-nostore", dec_ack_no_store, 0xe0, -1},
	{"creq", dec_connection_request, 0x09, -1},
	{"accepted", dec_connection_accepted, 0x10, -1},
	{"nic", dec_new_incoming_connection, 0x13, -1},
	{"cping", dec_connected_ping, 0x00, -1},
	{"cpong", dec_connected_pong, 0x03, -1},
};
#define N_DECODERS (sizeof(all_decoders) / sizeof(all_decoders[0]))

static void feed(dec_fn dec, const uint8_t *src, size_t n)
{
	uint8_t *p = exact_copy(src, n);
	int rc = dec(p, n);

	assert_true(rc <= (int)n);
	assert_true(rc >= RUDP_WIRE_TRAILING);
	(void)rudp_wire_is_offline(p, n);
	free(p);
}

static void test_garbage(void **state)
{
	uint8_t buf[256];

	(void)state;
	rng_seed(0x5eed);
	for (int iter = 0; iter < 20000; iter++) {
		for (size_t d = 0; d < N_DECODERS; d++) {
			size_t n = rng_below(&rng_state, 4) == 0 ? rng_below(&rng_state, 256)
								 : rng_below(&rng_state, 80);
			int mode = (int)rng_below(&rng_state, 4);

			for (size_t k = 0; k < n; k++)
				buf[k] = (uint8_t)rng_next(&rng_state);
			/* Steer some inputs past the id and magic checks, and some
			 * toward small values that hit length and count fields. */
			if (mode >= 1 && n > 0)
				buf[0] = all_decoders[d].id;
			if (mode >= 2 && all_decoders[d].magic_at >= 0 &&
			    n >= (size_t)all_decoders[d].magic_at + 16)
				memcpy(buf + all_decoders[d].magic_at, rudp_wire_magic, 16);
			if (mode == 3)
				for (size_t k = 1; k < n; k++)
					if (rng_below(&rng_state, 2))
						buf[k] = (uint8_t)rng_below(&rng_state, 8);
			feed(all_decoders[d].dec, buf, n);
		}
	}
}

static void test_mutations(void **state)
{
	uint8_t buf[1100];

	(void)state;
	rng_seed(0xfeedface);
	for (int iter = 0; iter < 400; iter++) {
		for (size_t i = 0; i < n_cases; i++) {
			struct wire_case *c = &cases[i];
			size_t n = c->len;
			int flips = 1 + (int)rng_below(&rng_state, 4);

			memcpy(buf, c->buf, n);
			for (int f = 0; f < flips; f++) {
				size_t at = rng_below(&rng_state, (uint32_t)n);

				if (rng_below(&rng_state, 2))
					buf[at] ^= (uint8_t)(1u << rng_below(&rng_state, 8));
				else
					buf[at] = (uint8_t)rng_next(&rng_state);
			}
			switch (rng_below(&rng_state, 3)) {
			case 0: n = rng_below(&rng_state, (uint32_t)n + 1); break;
			case 1:
				for (size_t k = 0, extra = rng_below(&rng_state, 40); k < extra; k++)
					buf[n++] = (uint8_t)rng_next(&rng_state);
				break;
			default: break;
			}
			feed(c->dec, buf, n);
		}
	}
	/* Also mutate ACK datagrams, which are not in the encoder table. */
	for (int iter = 0; iter < 20000; iter++) {
		struct rudp_wire_range r[6];
		size_t enc;
		int rc;

		for (int k = 0; k < 6; k++) {
			r[k].start = rng_below(&rng_state, 1u << 24);
			r[k].end = rng_below(&rng_state, 2)
					   ? r[k].start
					   : rudp_u24_add(r[k].start, rng_below(&rng_state, 100));
		}
		rc = rudp_wire_encode_ack(buf, sizeof(buf), rng_below(&rng_state, 2), r,
					  1 + rng_below(&rng_state, 6), &enc);
		assert_true(rc > 0);
		buf[rng_below(&rng_state, (uint32_t)rc)] ^= (uint8_t)(1u << rng_below(&rng_state, 8));
		feed(dec_ack, buf, (size_t)rc - rng_below(&rng_state, 2));
		feed(dec_ack_no_store, buf, (size_t)rc);
	}
}

/* ---- forbidden values ---- */

static void test_bad_frames(void **state)
{
	uint8_t buf[64];
	struct rudp_wire_frame f, o;
	int rc;

	(void)state;
	/* bit length 0 */
	{
		static const uint8_t b[] = {0x00, 0x00, 0x00, 0xaa};
		assert_int_equal(rudp_wire_decode_frame(b, sizeof(b), &o), RUDP_WIRE_BAD_VALUE);
	}
	/* body past the end */
	{
		static const uint8_t b[] = {0x00, 0x00, 0x11, 0xaa, 0xbb};
		assert_int_equal(rudp_wire_decode_frame(b, sizeof(b), &o), RUDP_WIRE_TRUNCATED);
	}
	/* channel 32 on reliable ordered, and on both sequenced kinds */
	{
		static const uint8_t hdr[] = {0x60, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 32, 0xaa};
		static const uint8_t us[] = {0x20, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0xff, 0xaa};
		static const uint8_t rs[] = {0x80, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0xaa};
		assert_int_equal(rudp_wire_decode_frame(hdr, sizeof(hdr), &o), RUDP_WIRE_BAD_VALUE);
		assert_int_equal(rudp_wire_decode_frame(us, sizeof(us), &o), RUDP_WIRE_BAD_VALUE);
		assert_int_equal(rudp_wire_decode_frame(rs, sizeof(rs), &o), RUDP_WIRE_BAD_VALUE);
		/* 0xe0 = reliable ordered with ack receipt: same rule after mapping */
		uint8_t ra[sizeof(hdr)];
		memcpy(ra, hdr, sizeof(hdr));
		ra[0] = 0xe0;
		assert_int_equal(rudp_wire_decode_frame(ra, sizeof(ra), &o), RUDP_WIRE_BAD_VALUE);
		ra[9] = 31;
		assert_int_equal(rudp_wire_decode_frame(ra, sizeof(ra), &o), (int)sizeof(ra));
		assert_int_equal(o.reliability, RUDP_WIRE_RELIABLE_ORDERED);
	}
	/* split: count 0, index == count, index > count */
	{
		uint8_t b[] = {0x10, 0x00, 0x08, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 0xaa};
		assert_int_equal(rudp_wire_decode_frame(b, sizeof(b), &o), RUDP_WIRE_BAD_VALUE);
		b[6] = 2; /* count 2 */
		b[12] = 2; /* index 2 */
		assert_int_equal(rudp_wire_decode_frame(b, sizeof(b), &o), RUDP_WIRE_BAD_VALUE);
		b[12] = 0xff;
		assert_int_equal(rudp_wire_decode_frame(b, sizeof(b), &o), RUDP_WIRE_BAD_VALUE);
		b[12] = 1;
		assert_int_equal(rudp_wire_decode_frame(b, sizeof(b), &o), (int)sizeof(b));
	}

	/* The encoder refuses the same things, plus unencodable sizes. */
	f = (struct rudp_wire_frame){
		.reliability = 3, .order_channel = 32, .body = body_bytes, .body_len = 1};
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), RUDP_WIRE_BAD_VALUE);
	f.order_channel = 31;
	assert_true(rudp_wire_encode_frame(buf, sizeof(buf), &f) > 0);
	f.reliability = 2;
	f.order_channel = 200; /* not on the wire for plain reliable */
	assert_true(rudp_wire_encode_frame(buf, sizeof(buf), &f) > 0);
	f.body_len = 0;
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), RUDP_WIRE_BAD_VALUE);
	f.body_len = 8192;
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), RUDP_WIRE_BAD_VALUE);
	f.body_len = 1;
	f.body = NULL;
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), RUDP_WIRE_BAD_VALUE);
	f.body = body_bytes;
	f.reliability = 8;
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), RUDP_WIRE_BAD_VALUE);
	f.reliability = 0;
	f.split = true;
	f.split_count = 0;
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), RUDP_WIRE_BAD_VALUE);
	f.split_count = 5;
	f.split_index = 5;
	assert_int_equal(rudp_wire_encode_frame(buf, sizeof(buf), &f), RUDP_WIRE_BAD_VALUE);
	f.split_index = 4;
	rc = rudp_wire_encode_frame(buf, sizeof(buf), &f);
	assert_int_equal(rc, 3 + 10 + 1);
}

static void test_bad_offline(void **state)
{
	uint8_t buf[1024];
	int rc;

	(void)state;
	/* Bad magic at each offline packet's magic offset; wrong id for each. */
	static const struct {
		dec_fn dec;
		int magic_at;
		uint8_t wrong_id;
	} t[] = {
		{dec_unconnected_ping, 9, 0x03},      {dec_unconnected_pong, 17, 0x01},
		{dec_open_request_1, 1, 0x06},        {dec_open_reply_1, 1, 0x05},
		{dec_open_request_2_plain, 1, 0x08},  {dec_open_reply_2, 1, 0x07},
		{dec_incompatible_protocol, 2, 0x1a}, {dec_offline_reject, 1, 0x13},
	};
	const void *ins[] = {&in_ping1,  &in_pong,   &in_req1,     &in_rep1,
			     &in_req2_4, &in_rep2_4, &in_incompat, &in_reject[0]};
	enc_fn encs[] = {enc_unconnected_ping,      enc_unconnected_pong, enc_open_request_1,
			 enc_open_reply_1,          enc_open_request_2,   enc_open_reply_2,
			 enc_incompatible_protocol, enc_offline_reject};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		rc = encs[i](buf, sizeof(buf), ins[i]);
		assert_true(rc > 0);
		assert_true(rudp_wire_is_offline(buf, (size_t)rc));
		assert_int_equal(t[i].dec(buf, (size_t)rc), rc);
		for (int m = 0; m < 16; m++) {
			buf[t[i].magic_at + m] ^= 0x01;
			assert_int_equal(t[i].dec(buf, (size_t)rc), RUDP_WIRE_BAD_MAGIC);
			assert_false(rudp_wire_is_offline(buf, (size_t)rc));
			buf[t[i].magic_at + m] ^= 0x01;
		}
		buf[0] = t[i].wrong_id;
		assert_int_equal(t[i].dec(buf, (size_t)rc), RUDP_WIRE_BAD_ID);
	}

	/* Every id other than the right ones is refused. */
	for (int id = 0; id < 256; id++) {
		rc = rudp_wire_encode_offline_reject(buf, sizeof(buf), &in_reject[0]);
		buf[0] = (uint8_t)id;
		if (id == 0x12 || id == 0x14 || id == 0x17 || id == 0x1a)
			assert_int_equal(dec_offline_reject(buf, (size_t)rc), rc);
		else
			assert_int_equal(dec_offline_reject(buf, (size_t)rc), RUDP_WIRE_BAD_ID);
		rc = rudp_wire_encode_unconnected_ping(buf, sizeof(buf), &in_ping1);
		buf[0] = (uint8_t)id;
		assert_int_equal(dec_unconnected_ping(buf, (size_t)rc),
				 id == 1 || id == 2 ? rc : RUDP_WIRE_BAD_ID);
	}

	/* Encoders refuse ids and sizes that have no valid encoding. */
	{
		struct rudp_wire_unconnected_ping ping = {.id = 0x03};
		struct rudp_wire_offline_reject rej = {.id = 0x13};
		struct rudp_wire_open_request_1 r1 = {.protocol = 11, .mtu = 45};
		struct rudp_wire_unconnected_pong pong = {.data = NULL, .data_len = 3};
		struct rudp_wire_open_request_2 r2 = in_req2_4;
		struct rudp_wire_open_reply_2 p2 = in_rep2_4;

		assert_int_equal(rudp_wire_encode_unconnected_ping(buf, sizeof(buf), &ping),
				 RUDP_WIRE_BAD_VALUE);
		assert_int_equal(rudp_wire_encode_offline_reject(buf, sizeof(buf), &rej),
				 RUDP_WIRE_BAD_VALUE);
		assert_int_equal(rudp_wire_encode_open_request_1(buf, sizeof(buf), &r1), RUDP_WIRE_BAD_VALUE);
		r1.mtu = 46;
		assert_int_equal(rudp_wire_encode_open_request_1(buf, sizeof(buf), &r1), 18);
		assert_int_equal(rudp_wire_encode_unconnected_pong(buf, sizeof(buf), &pong),
				 RUDP_WIRE_BAD_VALUE);
		r2.server_addr.version = 5;
		assert_int_equal(rudp_wire_encode_open_request_2(buf, sizeof(buf), &r2), RUDP_WIRE_BAD_VALUE);
		assert_int_equal(rudp_wire_encode_open_request_2(buf, 3, &r2), RUDP_WIRE_BAD_VALUE);
		p2.client_addr.version = 0;
		assert_int_equal(rudp_wire_encode_open_reply_2(buf, sizeof(buf), &p2), RUDP_WIRE_BAD_VALUE);
	}

	/* Address version other than 4 or 6. */
	{
		static const uint8_t a[] = {0x05, 1, 2, 3, 4, 5, 6};
		struct rudp_wire_addr o, bad = {.version = 0};

		assert_int_equal(rudp_wire_decode_addr(a, sizeof(a), &o), RUDP_WIRE_BAD_VALUE);
		assert_int_equal(rudp_wire_encode_addr(buf, sizeof(buf), &bad), RUDP_WIRE_BAD_VALUE);
		rc = rudp_wire_encode_open_reply_2(buf, sizeof(buf), &in_rep2_4);
		buf[25] = 7; /* the address version byte */
		assert_int_equal(dec_open_reply_2(buf, (size_t)rc), RUDP_WIRE_BAD_VALUE);
	}
}

static void test_bad_datagrams(void **state)
{
	struct rudp_wire_dgram_header h;
	struct rudp_wire_range r[4];
	size_t count, dropped, enc;
	uint8_t buf[64];
	bool nack;

	(void)state;
	/* Frame-set header: ACK, NACK and offline first bytes are not frame sets. */
	{
		uint8_t b[] = {0xc0, 0, 0, 0};
		assert_int_equal(rudp_wire_decode_dgram_header(b, 4, &h), RUDP_WIRE_BAD_ID);
		b[0] = 0xa0;
		assert_int_equal(rudp_wire_decode_dgram_header(b, 4, &h), RUDP_WIRE_BAD_ID);
		b[0] = 0x05;
		assert_int_equal(rudp_wire_decode_dgram_header(b, 4, &h), RUDP_WIRE_BAD_ID);
		h.flags = RUDP_DGRAM_ACK;
		h.seq = 0;
		assert_int_equal(rudp_wire_encode_dgram_header(buf, sizeof(buf), &h), RUDP_WIRE_BAD_VALUE);
	}
	/* ACK decode: not an ACK, a backwards range, trailing bytes, truncated count. */
	{
		uint8_t b[] = {0x84, 0x00, 0x01, 0x00, 0x05, 0, 0, 0x02, 0, 0};
		assert_int_equal(rudp_wire_decode_ack(b, sizeof(b), r, 4, &count, &dropped, &nack),
				 RUDP_WIRE_BAD_ID);
		b[0] = 0x40;
		assert_int_equal(rudp_wire_decode_ack(b, sizeof(b), r, 4, &count, &dropped, &nack),
				 RUDP_WIRE_BAD_ID);
		b[0] = 0xc0;
		assert_int_equal(rudp_wire_decode_ack(b, sizeof(b), r, 4, &count, &dropped, &nack),
				 RUDP_WIRE_BAD_VALUE);
		b[7] = 0x05;
		assert_int_equal(rudp_wire_decode_ack(b, sizeof(b), r, 4, &count, &dropped, &nack), 0);
		assert_int_equal(rudp_wire_decode_ack(b, sizeof(b) - 1, r, 4, &count, &dropped, &nack),
				 RUDP_WIRE_TRUNCATED);
		memcpy(buf, b, sizeof(b));
		buf[sizeof(b)] = 0;
		assert_int_equal(rudp_wire_decode_ack(buf, sizeof(b) + 1, r, 4, &count, &dropped, &nack),
				 RUDP_WIRE_TRAILING);
		/* A huge record count on a short datagram fails fast. */
		b[1] = 0xff;
		b[2] = 0xff;
		assert_int_equal(rudp_wire_decode_ack(b, sizeof(b), r, 4, &count, &dropped, &nack),
				 RUDP_WIRE_TRUNCATED);
	}
	/* ACK encode: nothing to send, backwards range. */
	{
		struct rudp_wire_range back = {10, 9};
		assert_int_equal(rudp_wire_encode_ack(buf, sizeof(buf), false, r, 0, &enc),
				 RUDP_WIRE_BAD_VALUE);
		assert_int_equal(rudp_wire_encode_ack(buf, sizeof(buf), false, &back, 1, &enc),
				 RUDP_WIRE_BAD_VALUE);
	}
}

static void test_bad_control(void **state)
{
	uint8_t buf[1024];
	int rc;

	(void)state;
	/* Wrong id for every control decoder. */
	rc = rudp_wire_encode_connection_request(buf, sizeof(buf), &in_creq);
	buf[0] = 0x10;
	assert_int_equal(dec_connection_request(buf, (size_t)rc), RUDP_WIRE_BAD_ID);
	rc = rudp_wire_encode_connection_accepted(buf, sizeof(buf), &in_acc10);
	buf[0] = 0x13;
	assert_int_equal(dec_connection_accepted(buf, (size_t)rc), RUDP_WIRE_BAD_ID);
	buf[0] = 0x10;
	assert_int_equal(dec_new_incoming_connection(buf, (size_t)rc), RUDP_WIRE_BAD_ID);
	rc = rudp_wire_encode_connected_ping(buf, sizeof(buf), &in_cping);
	buf[0] = 0x03;
	assert_int_equal(dec_connected_ping(buf, (size_t)rc), RUDP_WIRE_BAD_ID);
	rc = rudp_wire_encode_connected_pong(buf, sizeof(buf), &in_cpong);
	buf[0] = 0x00;
	assert_int_equal(dec_connected_pong(buf, (size_t)rc), RUDP_WIRE_BAD_ID);

	/* A bad address version inside the internal list. */
	rc = rudp_wire_encode_connection_accepted(buf, sizeof(buf), &in_acc10);
	buf[1 + 7 + 2] = 9;
	assert_int_equal(dec_connection_accepted(buf, (size_t)rc), RUDP_WIRE_BAD_VALUE);

	/* Trailing bytes cannot be told apart from the list: a length that does
	 * not split into addresses + 16 is refused. */
	rc = rudp_wire_encode_connection_accepted(buf, sizeof(buf), &in_acc10);
	buf[rc] = 0;
	assert_true(dec_connection_accepted(buf, (size_t)rc + 1) < 0);

	/* Encoders: more internal addresses than the struct holds, security. */
	{
		struct rudp_wire_connection_accepted a = in_acc10;
		struct rudp_wire_new_incoming_connection nic = in_nic10;
		struct rudp_wire_connection_request req = in_creq;

		a.n_internal = 21;
		assert_int_equal(rudp_wire_encode_connection_accepted(buf, sizeof(buf), &a),
				 RUDP_WIRE_BAD_VALUE);
		nic.n_internal = 21;
		assert_int_equal(rudp_wire_encode_new_incoming_connection(buf, sizeof(buf), &nic),
				 RUDP_WIRE_BAD_VALUE);
		nic.n_internal = 3;
		nic.internal[2].version = 0;
		assert_int_equal(rudp_wire_encode_new_incoming_connection(buf, sizeof(buf), &nic),
				 RUDP_WIRE_BAD_VALUE);
		req.security = true;
		assert_int_equal(rudp_wire_encode_connection_request(buf, sizeof(buf), &req),
				 RUDP_WIRE_BAD_VALUE);
	}
}

/* ---- every too-small output buffer ---- */

static void test_no_space(void **state)
{
	(void)state;
	for (size_t i = 0; i < n_cases; i++) {
		struct wire_case *c = &cases[i];

		for (size_t cap = 0; cap < c->len; cap++) {
			/* Exact-size heap buffer: a write at p[cap] is an ASan error. */
			uint8_t *p = malloc(cap ? cap : 1);
			int rc;

			assert_non_null(p);
			rc = c->enc(p, cap, c->in);
			if (rc != RUDP_WIRE_NO_SPACE)
				fail_msg("case %s: cap %zu/%zu gave %d", c->name, cap, c->len, rc);
			free(p);
		}
	}
	for (size_t cap = 0; cap < 1; cap++) {
		uint8_t *p = malloc(1);
		assert_int_equal(enc_disconnect(p, cap, NULL), RUDP_WIRE_NO_SPACE);
		free(p);
	}
	assert_int_equal(rudp_wire_encode_disconnect(NULL, 0), RUDP_WIRE_NO_SPACE);
}

static void test_no_space_ack(void **state)
{
	/* ACKs encode as many records as fit: too small for even the first one
	 * is NO_SPACE, in between is a shorter but valid ACK. */
	struct rudp_wire_range in[5] = {{1, 1}, {3, 9}, {11, 11}, {0xfffff0, 0x10}, {20, 20}};
	size_t full = 3 + 4 + 7 + 4 + 7 + 7 + 4; /* the wrapped range is two records */

	(void)state;
	for (size_t cap = 0; cap <= full; cap++) {
		uint8_t *p = malloc(cap ? cap : 1);
		struct rudp_wire_range out[6], records[6];
		size_t enc = 99, count, dropped;
		bool nack;
		int rc = rudp_wire_encode_ack(p, cap, true, in, 5, &enc);

		if (cap < 7) {
			assert_int_equal(rc, RUDP_WIRE_NO_SPACE);
			assert_int_equal(enc, 0);
		} else {
			size_t want = 3, n = 0;

			while (n < 5 && want + rudp_wire_range_len(&in[n]) <= cap)
				want += rudp_wire_range_len(&in[n++]);
			assert_int_equal(rc, want);
			assert_int_equal(enc, n);
			size_t nrec = expected_records(in, n, records);

			assert_int_equal(rudp_wire_decode_ack(p, (size_t)rc, out, 6, &count, &dropped, &nack),
					 0);
			assert_true(nack);
			assert_int_equal(count, nrec);
			assert_memory_equal(out, records, nrec * sizeof(records[0]));
		}
		free(p);
	}
}

/* ---- offline detection ---- */

static void test_is_offline(void **state)
{
	uint8_t buf[256];
	int rc;

	(void)state;
	for (size_t i = 0; i < n_cases; i++) {
		struct wire_case *c = &cases[i];
		bool offline = c->dec == dec_unconnected_ping || c->dec == dec_unconnected_pong ||
			       c->dec == dec_open_request_1 || c->dec == dec_open_reply_1 ||
			       c->dec == dec_open_request_2_plain || c->dec == dec_open_request_2_cookie ||
			       c->dec == dec_open_reply_2 || c->dec == dec_incompatible_protocol ||
			       c->dec == dec_offline_reject;

		if (offline) {
			assert_true(rudp_wire_is_offline(c->buf, c->len));
		} else if (c->dec != dec_addr) {
			assert_false(rudp_wire_is_offline(c->buf, c->len));
		}
	}
	/* The magic must be whole: a packet cut inside it is not offline. */
	rc = rudp_wire_encode_unconnected_pong(buf, sizeof(buf), &in_pong_empty);
	assert_true(rudp_wire_is_offline(buf, 33));
	for (size_t n = 0; n < 33; n++) {
		uint8_t *p = exact_copy(buf, n);
		assert_false(rudp_wire_is_offline(p, n));
		free(p);
	}
	/* Magic at the wrong offset for the id. */
	buf[0] = 0x05;
	assert_false(rudp_wire_is_offline(buf, (size_t)rc));
	buf[0] = 0x19;
	assert_false(rudp_wire_is_offline(buf, (size_t)rc));
	/* Magic where request 1 has it, but behind an online first byte or an
	 * id that carries no magic. */
	rc = rudp_wire_encode_open_request_1(buf, sizeof(buf), &in_req1);
	buf[0] = 0x84;
	assert_false(rudp_wire_is_offline(buf, (size_t)rc));
	buf[0] = 0x09;
	assert_false(rudp_wire_is_offline(buf, (size_t)rc));
	assert_false(rudp_wire_is_offline(NULL, 0));
}

static void test_helpers(void **state)
{
	(void)state;
	assert_int_equal(rudp_u24_diff(0, 0xffffff), 1);
	assert_int_equal(rudp_u24_diff(0xffffff, 0), -1);
	assert_int_equal(rudp_u24_diff(0x7fffff, 0), 0x7fffff);
	assert_int_equal(rudp_u24_diff(0x800000, 0), -0x800000);
	assert_int_equal(rudp_u24_add(0xffffff, 2), 1);
	for (int s = RUDP_WIRE_TRAILING; s <= 0; s++)
		assert_non_null(rudp_wire_strstatus(s));
	assert_string_equal(rudp_wire_strstatus(RUDP_WIRE_TRUNCATED), "truncated packet");
	assert_non_null(rudp_wire_strstatus(-100));
	assert_int_equal(RUDP_WIRE_FRAME_HEADER_MAX, 23);
	{
		struct rudp_wire_frame f = {.reliability = 4, .split = true};
		assert_int_equal(rudp_wire_frame_header_len(&f), RUDP_WIRE_FRAME_HEADER_MAX);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vector_unconnected_ping),
		cmocka_unit_test(test_vector_unconnected_pong),
		cmocka_unit_test(test_vector_open_request_1),
		cmocka_unit_test(test_vector_open_reply_1_cookie),
		cmocka_unit_test(test_vector_addresses),
		cmocka_unit_test(test_vector_dgram_header),
		cmocka_unit_test(test_vector_ack),
		cmocka_unit_test(test_vector_frames),
		cmocka_unit_test(test_vector_control),
		cmocka_unit_test(test_roundtrip_table),
		cmocka_unit_test(test_roundtrip_offline),
		cmocka_unit_test(test_roundtrip_request_2_challenge),
		cmocka_unit_test(test_roundtrip_trailing_tolerated),
		cmocka_unit_test(test_roundtrip_dgram_header),
		cmocka_unit_test(test_roundtrip_frames),
		cmocka_unit_test(test_roundtrip_frame_set),
		cmocka_unit_test(test_roundtrip_ack),
		cmocka_unit_test(test_ack_wrap_split),
		cmocka_unit_test(test_roundtrip_internal_addrs),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_truncations_addr_list),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_bad_frames),
		cmocka_unit_test(test_bad_offline),
		cmocka_unit_test(test_bad_datagrams),
		cmocka_unit_test(test_bad_control),
		cmocka_unit_test(test_no_space),
		cmocka_unit_test(test_no_space_ack),
		cmocka_unit_test(test_is_offline),
		cmocka_unit_test(test_helpers),
	};

	return cmocka_run_group_tests(tests, setup_cases, NULL);
}
