/* SPDX-License-Identifier: MIT */
/*
 * Every offline decoder on the same bytes. A decode that succeeds must
 * re-encode and decode to the same fields: a decoder that accepts what the
 * encoder cannot reproduce reads something the protocol does not say.
 */
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

#define CHECK(cond)                                                                                          \
	do {                                                                                                 \
		if (!(cond))                                                                                 \
			abort();                                                                             \
	} while (0)

static bool addr_equal(const struct rudp_wire_addr *a, const struct rudp_wire_addr *b)
{
	if (a->version != b->version || a->port != b->port)
		return false;
	if (a->version == 4)
		return memcmp(a->ip, b->ip, 4) == 0;
	/* The encoder writes Linux's AF_INET6 for a family left 0. */
	return memcmp(a->ip, b->ip, 16) == 0 &&
	       (a->family == b->family || (a->family == 0 && b->family == 10)) &&
	       a->flowinfo == b->flowinfo && a->scope_id == b->scope_id;
}

int LLVMFuzzerTestOneInput(const uint8_t *p, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *p, size_t n)
{
	static uint8_t out[70000];
	(void)rudp_wire_is_offline(p, n);

	struct rudp_wire_unconnected_ping ping, ping2;
	if (rudp_wire_decode_unconnected_ping(p, n, &ping) >= 0) {
		int len = rudp_wire_encode_unconnected_ping(out, sizeof(out), &ping);
		CHECK(len > 0 && rudp_wire_decode_unconnected_ping(out, (size_t)len, &ping2) == len);
		CHECK(ping.id == ping2.id && ping.time == ping2.time &&
		      ping.client_guid == ping2.client_guid);
	}
	struct rudp_wire_unconnected_pong pong, pong2;
	if (rudp_wire_decode_unconnected_pong(p, n, &pong) >= 0) {
		CHECK(pong.data_len <= n &&
		      (pong.data_len == 0 || (pong.data >= p && pong.data + pong.data_len <= p + n)));
		int len = rudp_wire_encode_unconnected_pong(out, sizeof(out), &pong);
		CHECK(len > 0 && rudp_wire_decode_unconnected_pong(out, (size_t)len, &pong2) == len);
		CHECK(pong2.data_len == pong.data_len && pong2.server_guid == pong.server_guid);
		CHECK(pong.data_len == 0 || memcmp(pong.data, pong2.data, pong.data_len) == 0);
	}
	struct rudp_wire_open_request_1 r1, r1b;
	if (rudp_wire_decode_open_request_1(p, n, &r1) >= 0) {
		CHECK(r1.mtu == n + RUDP_WIRE_UDP_IP_OVERHEAD);
		int len = rudp_wire_encode_open_request_1(out, sizeof(out), &r1);
		if (len > 0) {
			CHECK(rudp_wire_decode_open_request_1(out, (size_t)len, &r1b) >= 0);
			CHECK(r1b.protocol == r1.protocol && r1b.mtu == r1.mtu);
		}
	}
	struct rudp_wire_open_reply_1 o1, o1b;
	if (rudp_wire_decode_open_reply_1(p, n, &o1) >= 0) {
		int len = rudp_wire_encode_open_reply_1(out, sizeof(out), &o1);
		CHECK(len > 0 && rudp_wire_decode_open_reply_1(out, (size_t)len, &o1b) == len);
		CHECK(o1b.server_guid == o1.server_guid && o1b.security == o1.security && o1b.mtu == o1.mtu);
		CHECK(!o1.security || o1b.cookie == o1.cookie);
	}
	for (int cookie = 0; cookie < 2; cookie++) {
		struct rudp_wire_open_request_2 r2, r2b;
		if (rudp_wire_decode_open_request_2(p, n, cookie, &r2) >= 0) {
			int len = rudp_wire_encode_open_request_2(out, sizeof(out), &r2);
			CHECK(len > 0 &&
			      rudp_wire_decode_open_request_2(out, (size_t)len, cookie, &r2b) == len);
			CHECK(r2b.mtu == r2.mtu && r2b.client_guid == r2.client_guid);
			CHECK(addr_equal(&r2.server_addr, &r2b.server_addr));
			CHECK(!cookie || r2b.cookie == r2.cookie);
		}
	}
	struct rudp_wire_open_reply_2 o2, o2b;
	if (rudp_wire_decode_open_reply_2(p, n, &o2) >= 0) {
		int len = rudp_wire_encode_open_reply_2(out, sizeof(out), &o2);
		CHECK(len > 0 && rudp_wire_decode_open_reply_2(out, (size_t)len, &o2b) == len);
		CHECK(o2b.server_guid == o2.server_guid && o2b.mtu == o2.mtu &&
		      o2b.encryption == o2.encryption);
		CHECK(addr_equal(&o2.client_addr, &o2b.client_addr));
	}
	struct rudp_wire_incompatible_protocol ip, ip2;
	if (rudp_wire_decode_incompatible_protocol(p, n, &ip) >= 0) {
		int len = rudp_wire_encode_incompatible_protocol(out, sizeof(out), &ip);
		CHECK(len > 0 && rudp_wire_decode_incompatible_protocol(out, (size_t)len, &ip2) == len);
		CHECK(ip2.protocol == ip.protocol && ip2.server_guid == ip.server_guid);
	}
	struct rudp_wire_offline_reject rj, rj2;
	if (rudp_wire_decode_offline_reject(p, n, &rj) >= 0) {
		int len = rudp_wire_encode_offline_reject(out, sizeof(out), &rj);
		CHECK(len > 0 && rudp_wire_decode_offline_reject(out, (size_t)len, &rj2) == len);
		CHECK(rj2.id == rj.id && rj2.server_guid == rj.server_guid);
	}
	struct rudp_wire_addr a, a2;
	int alen = rudp_wire_decode_addr(p, n, &a);
	if (alen >= 0) {
		CHECK((size_t)alen <= n);
		int len = rudp_wire_encode_addr(out, sizeof(out), &a);
		CHECK(len == alen && rudp_wire_decode_addr(out, (size_t)len, &a2) == len &&
		      addr_equal(&a, &a2));
	}
	return 0;
}
