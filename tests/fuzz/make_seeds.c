/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpora (tests/fuzz/corpus/<target>/) from the encoders,
 * so each seed is a valid packet the fuzzer mutates from. Run by hand after
 * a wire format change: make_seeds DIR. The seeds are committed.
 */
#include <stdio.h>
#include <string.h>

#include "wire/wire.h"

static const char *root;

static void put(const char *target, const char *name, const uint8_t *p, int len)
{
	char path[512];
	FILE *f;

	if (len <= 0) {
		fprintf(stderr, "encoding %s/%s failed: %d\n", target, name, len);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return;
	}
	fwrite(p, 1, (size_t)len, f);
	fclose(f);
}

static struct rudp_wire_addr v4(void)
{
	struct rudp_wire_addr a = {.version = 4, .port = 19132, .ip = {127, 0, 0, 1}};
	return a;
}

static struct rudp_wire_addr v6(void)
{
	struct rudp_wire_addr a = {.version = 6, .port = 19132, .family = 10};
	a.ip[15] = 1;
	return a;
}

static int frame_set(uint8_t *buf, size_t cap, uint32_t seq, const struct rudp_wire_frame *f, int nf)
{
	struct rudp_wire_dgram_header h = {.flags = RUDP_DGRAM_VALID, .seq = seq};
	int off = rudp_wire_encode_dgram_header(buf, cap, &h);

	for (int i = 0; i < nf; i++) {
		int len = rudp_wire_encode_frame(buf + off, cap - (size_t)off, &f[i]);
		if (len < 0)
			return len;
		off += len;
	}
	return off;
}

static void offline(void)
{
	uint8_t b[1500];
	const uint8_t motd[] = "MCPE;librudp;11;1.0;0;10;1;world;Survival";
	struct rudp_wire_unconnected_ping ping = {.id = 1, .time = 1234, .client_guid = 42};
	struct rudp_wire_unconnected_pong pong = {
		.time = 1234, .server_guid = 7, .data = motd, .data_len = sizeof(motd) - 1};
	struct rudp_wire_open_request_1 r1 = {.protocol = 11, .mtu = 576};
	struct rudp_wire_open_reply_1 o1 = {.server_guid = 7, .mtu = 1492};
	struct rudp_wire_open_reply_1 o1c = {
		.server_guid = 7, .security = true, .cookie = 0xdeadbeef, .mtu = 1200};
	struct rudp_wire_open_request_2 r2 = {.server_addr = v4(), .mtu = 1492, .client_guid = 42};
	struct rudp_wire_open_request_2 r2c = {.has_cookie = true,
					       .cookie = 0xdeadbeef,
					       .server_addr = v6(),
					       .mtu = 1200,
					       .client_guid = 42};
	struct rudp_wire_open_reply_2 o2 = {.server_guid = 7, .client_addr = v4(), .mtu = 1492};
	struct rudp_wire_incompatible_protocol ip = {.protocol = 11, .server_guid = 7};
	struct rudp_wire_offline_reject rj = {.id = RUDP_ID_NO_FREE_INCOMING_CONNECTIONS, .server_guid = 7};
	struct rudp_wire_addr a4 = v4(), a6 = v6();

	put("wire_offline", "ping", b, rudp_wire_encode_unconnected_ping(b, sizeof(b), &ping));
	put("wire_offline", "pong", b, rudp_wire_encode_unconnected_pong(b, sizeof(b), &pong));
	put("wire_offline", "request1", b, rudp_wire_encode_open_request_1(b, sizeof(b), &r1));
	put("wire_offline", "reply1", b, rudp_wire_encode_open_reply_1(b, sizeof(b), &o1));
	put("wire_offline", "reply1-cookie", b, rudp_wire_encode_open_reply_1(b, sizeof(b), &o1c));
	put("wire_offline", "request2", b, rudp_wire_encode_open_request_2(b, sizeof(b), &r2));
	put("wire_offline", "request2-cookie-v6", b, rudp_wire_encode_open_request_2(b, sizeof(b), &r2c));
	put("wire_offline", "reply2", b, rudp_wire_encode_open_reply_2(b, sizeof(b), &o2));
	put("wire_offline", "incompatible", b, rudp_wire_encode_incompatible_protocol(b, sizeof(b), &ip));
	put("wire_offline", "reject", b, rudp_wire_encode_offline_reject(b, sizeof(b), &rj));
	put("wire_offline", "addr4", b, rudp_wire_encode_addr(b, sizeof(b), &a4));
	put("wire_offline", "addr6", b, rudp_wire_encode_addr(b, sizeof(b), &a6));
}

static void online(void)
{
	uint8_t b[1500], body[600];
	struct rudp_wire_frame f[5];
	struct rudp_wire_range r[3] = {{0, 0}, {5, 9}, {0xfffff0, 0x10}};
	size_t enc;
	struct rudp_wire_connection_request cr = {.client_guid = 42, .time = 99};
	struct rudp_wire_connection_accepted ca = {
		.client_addr = v4(), .n_internal = 20, .request_time = 99, .accepted_time = 100};
	struct rudp_wire_new_incoming_connection nic = {
		.server_addr = v4(), .n_internal = 10, .request_time = 1, .accepted_time = 2};
	struct rudp_wire_connected_ping ping = {.time = 5};
	struct rudp_wire_connected_pong pong = {.ping_time = 5, .pong_time = 6};

	memset(body, 0xfe, sizeof(body));
	memset(f, 0, sizeof(f));
	for (int i = 0; i < 5; i++) {
		f[i].reliability = (uint8_t)i;
		f[i].reliable_index = (uint32_t)i;
		f[i].order_index = (uint32_t)i;
		f[i].sequenced_index = (uint32_t)i;
		f[i].order_channel = (uint8_t)i;
		f[i].body = body;
		f[i].body_len = (uint16_t)(10 + i);
	}
	f[4].split = true;
	f[4].split_count = 3;
	f[4].split_id = 9;
	f[4].split_index = 1;
	put("wire_online", "frameset", b, frame_set(b, sizeof(b), 77, f, 5));
	put("wire_online", "ack", b, rudp_wire_encode_ack(b, sizeof(b), false, r, 3, &enc));
	put("wire_online", "nack", b, rudp_wire_encode_ack(b, sizeof(b), true, r, 2, &enc));
	put("wire_online", "conn-request", b, rudp_wire_encode_connection_request(b, sizeof(b), &cr));
	for (int i = 0; i < 20; i++)
		ca.internal[i] = v4();
	put("wire_online", "conn-accepted", b, rudp_wire_encode_connection_accepted(b, sizeof(b), &ca));
	for (int i = 0; i < 10; i++)
		nic.internal[i] = v6();
	put("wire_online", "new-incoming", b, rudp_wire_encode_new_incoming_connection(b, sizeof(b), &nic));
	put("wire_online", "ping", b, rudp_wire_encode_connected_ping(b, sizeof(b), &ping));
	put("wire_online", "pong", b, rudp_wire_encode_connected_pong(b, sizeof(b), &pong));

	/* conn scripts: op 0 = datagram to the server (len lo, len hi), 3 = a
	 * link round, 2 = a time jump. After the handshake the client used
	 * datagram seqs 0..1 and reliable indexes 0..1. */
	uint8_t s[1500], d[1400];
	int n = 0, len;
	for (int i = 0; i < 4; i++) {
		f[i].reliable_index = 2u + (uint32_t)i;
		f[i].order_index = 1u + (uint32_t)i;
		f[i].order_channel = 0;
	}
	len = frame_set(d, sizeof(d), 2, f, 4);
	s[n++] = 0;
	s[n++] = (uint8_t)len;
	s[n++] = (uint8_t)(len >> 8);
	memcpy(s + n, d, (size_t)len);
	n += len;
	s[n++] = 3;
	s[n++] = 2;
	len = rudp_wire_encode_ack(d, sizeof(d), false, r, 3, &enc);
	s[n++] = 0;
	s[n++] = (uint8_t)len;
	s[n++] = (uint8_t)(len >> 8);
	memcpy(s + n, d, (size_t)len);
	n += len;
	s[n++] = 4;
	s[n++] = 60;
	s[n++] = 3;
	s[n++] = 0;
	s[n++] = 2;
	s[n++] = 200;
	s[n++] = 3;
	s[n++] = 3;
	put("conn", "script-frames-ack-send", s, n);

	/* reassembly records: id, count, index, len lo, len hi|channel, flags */
	const uint8_t rec[] = {1, 3, 0, 200, 0, 1, 1, 3, 2, 17, 0, 1,    1, 3,    1, 255, 1, 0x21,
			       2, 2, 1, 5,   0, 0, 2, 2, 0, 9,  0, 0x20, 3, 0x90, 5, 4,   0, 0};
	put("reassembly", "three-sets", rec, (int)sizeof(rec));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR (e.g. tests/fuzz/corpus)\n");
		return 2;
	}
	root = argv[1];
	offline();
	online();
	return 0;
}
