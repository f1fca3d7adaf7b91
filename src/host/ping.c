/* SPDX-License-Identifier: MIT */
/*
 * rudp_ping: a blocking unconnected ping. It sends the ping and runs the
 * host's service rounds until the pong arrives (offline.c matches it into
 * the host's ping fields) or the time is up.
 */
#include <string.h>

#include "host_internal.h"

int rudp_ping(rudp_host *h, const char *address, int timeout_ms, rudp_pong *out)
{
	struct sockaddr_storage addr, norm;
	socklen_t alen;
	/* Servers never answer with a pong larger than the ping (no reflection
	 * amplification, docs/security.md), so the ping is padded to the largest
	 * pong: 33 bytes of header plus the 1400 of rudp_host_set_pong_data(). */
	uint8_t buf[33 + 1400];
	if (!h || !address || !out || timeout_ms < 0)
		return RUDP_E_INVALID;
	int r = rudp_addr_parse(address, &addr, &alen);
	if (r != 0)
		return r;
	rudp_addr_normalize((const struct sockaddr *)&addr, &norm);
	h->now_us = rudp_now_us();
	struct rudp_wire_unconnected_ping ping = {.id = RUDP_ID_UNCONNECTED_PING,
						  .time = (int64_t)(h->now_us / 1000),
						  .client_guid = (int64_t)h->guid};
	int n = rudp_wire_encode_unconnected_ping(buf, sizeof(buf), &ping);
	if (n < 0)
		return RUDP_E_INVALID;
	memset(buf + n, 0, sizeof(buf) - (size_t)n);
	n = (int)sizeof(buf);
	struct sockaddr_storage probe;
	socklen_t plen;
	if (!rudp_addr_for_socket(&norm, h->family, &probe, &plen))
		return RUDP_E_ADDRESS;
	h->ping_waiting = true;
	h->ping_got = false;
	h->ping_addr = norm;
	h->ping_sent_time = (int64_t)h->now_us;
	memset(&h->ping_result, 0, sizeof(h->ping_result));
	uint64_t limit = h->now_us + (uint64_t)timeout_ms * 1000;
	uint64_t next_send = 0;
	while (!h->ping_got && h->now_us < limit) {
		if (h->now_us >= next_send) {
			/* Resend now and then: one lost datagram should not fail the ping. */
			host_send_raw(h, NULL, &norm, buf, (size_t)n);
			rudp_io_flush(h->io);
			next_send = h->now_us + 500000;
		}
		uint64_t wait = limit - h->now_us;
		if (wait > next_send - h->now_us)
			wait = next_send - h->now_us;
		if (host_pump(h, wait) < 0)
			break;
	}
	h->ping_waiting = false;
	if (!h->ping_got)
		return RUDP_E_NOT_CONNECTED;
	*out = h->ping_result;
	return 0;
}
