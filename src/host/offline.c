/* SPDX-License-Identifier: MIT */
/*
 * The offline (unconnected) part of RakNet: unconnected ping/pong and the
 * open-connection exchange that agrees on an MTU before a conn exists.
 *
 * Server side is stateless until open connection request 2: request 1 is
 * answered from the packet alone, so a flood of request 1s costs no memory.
 * guard.c decides what an unknown source may make us do: a rate per source
 * address, bounded pending handshakes, optional cookies. Replies are never
 * larger than the request that caused them (no reflection amplification),
 * with one exception fixed by the protocol: open connection reply 2 is one
 * byte longer than request 2; it goes only to a source that passed the
 * rate limit (and, in cookie mode, proved its address).
 */
#include <string.h>

#include "host_internal.h"

/* RakNet probes large to small; 576 is the IPv4 minimum every path carries. */
static const uint16_t mtu_probes[] = {1492, 1200, 576};
#define PROBE_COUNT (sizeof(mtu_probes) / sizeof(mtu_probes[0]))
#define ATTEMPTS_PER_PROBE 4
#define ATTEMPT_INTERVAL_US 250000u
#define RUDP_MIN_MTU 576

void host_send_raw(struct rudp_host *h, const struct rudp_peer *p, const struct sockaddr_storage *to_norm,
		   const uint8_t *data, size_t len)
{
	struct sockaddr_storage sa;
	socklen_t salen;
	if (p) {
		sa = p->send_addr;
		salen = p->send_addrlen;
	} else if (!rudp_addr_for_socket(to_norm, h->family, &sa, &salen)) {
		return;
	}
	if (len > RUDP_IO_SLOT_SIZE)
		return;
	if (h->sim && netsim_outgoing(h->sim, h->now_us, p ? p->sock : 0, data, len,
				      (const struct sockaddr *)&sa, salen) != NETSIM_PASS)
		return;
	uint8_t *slot = rudp_io_tx_slot(h->io);
	memcpy(slot, data, len);
	rudp_io_tx_commit_on(h->io, p ? p->sock : 0, len, (const struct sockaddr *)&sa, salen);
}

/* The i-th MTU to probe: our own limit first, then the standard sizes below it. */
static uint16_t probe_mtu(const struct rudp_host *h, uint32_t index)
{
	uint16_t first = h->cfg.mtu;
	uint32_t seen = 0;
	if (index == 0)
		return first;
	for (uint32_t i = 0; i < PROBE_COUNT; i++) {
		if (mtu_probes[i] < first && ++seen == index)
			return mtu_probes[i];
	}
	return RUDP_MIN_MTU;
}

static void client_send_request(struct rudp_host *h, struct rudp_peer *p)
{
	uint8_t buf[1500];
	int n;
	if (p->stage == PEER_OFFLINE_1) {
		struct rudp_wire_open_request_1 r = {.protocol = h->cfg.protocol_version,
						     .mtu = probe_mtu(h, p->probe_index)};
		n = rudp_wire_encode_open_request_1(buf, sizeof(buf), &r);
	} else {
		struct rudp_wire_open_request_2 r = {
			.has_cookie = p->server_wants_cookie,
			.cookie = p->cookie,
			.mtu = p->mtu,
			.client_guid = (int64_t)h->guid,
		};
		rudp_addr_to_wire(&p->addr, &r.server_addr);
		n = rudp_wire_encode_open_request_2(buf, sizeof(buf), &r);
	}
	if (n > 0)
		host_send_raw(h, p, NULL, buf, (size_t)n);
	p->attempts++;
	p->next_attempt_us = h->now_us + ATTEMPT_INTERVAL_US;
	timer_heap_set(&h->timers, p, p->next_attempt_us);
}

int offline_client_start(struct rudp_host *h, struct rudp_peer *p)
{
	p->stage = PEER_OFFLINE_1;
	p->handshake_started_us = h->now_us;
	p->probe_index = 0;
	p->attempts = 0;
	client_send_request(h, p);
	return 0;
}

void offline_client_timer(struct rudp_host *h, struct rudp_peer *p)
{
	if (h->now_us - p->handshake_started_us >= (uint64_t)h->cfg.connect_timeout_ms * 1000) {
		host_peer_close(h, p, RUDP_REASON_CONNECT_FAILED);
		return;
	}
	if (h->now_us < p->next_attempt_us) {
		timer_heap_set(&h->timers, p, p->next_attempt_us);
		return;
	}
	if (p->stage == PEER_OFFLINE_1 && p->attempts >= ATTEMPTS_PER_PROBE) {
		uint16_t cur = probe_mtu(h, p->probe_index);
		if (cur > RUDP_MIN_MTU) {
			p->probe_index++;
			p->attempts = 0;
		}
	}
	client_send_request(h, p);
}

/* Sends an offline reply to a request of request_len bytes unless it would
 * be larger than the request. */
static void offline_reply(struct rudp_host *h, const struct sockaddr_storage *from, size_t request_len,
			  const uint8_t *buf, int len)
{
	if (len <= 0)
		return;
	if (!guard_reply_fits(request_len, (size_t)len)) {
		h->guard.replies_suppressed++;
		return;
	}
	host_send_raw(h, NULL, from, buf, (size_t)len);
}

static void server_reply_reject(struct rudp_host *h, const struct sockaddr_storage *from, size_t request_len,
				uint8_t id)
{
	uint8_t buf[64];
	struct rudp_wire_offline_reject r = {.id = id, .server_guid = (int64_t)h->guid};
	offline_reply(h, from, request_len, buf, rudp_wire_encode_offline_reject(buf, sizeof(buf), &r));
	h->stats.handshakes_refused++;
}

static void server_on_request_1(struct rudp_host *h, const struct sockaddr_storage *from, const uint8_t *p,
				size_t n)
{
	struct rudp_wire_open_request_1 req;
	uint8_t buf[64];
	/* A probe below the IPv4 minimum is no client's: RakNet probes from
	 * 1492 down to 576. Refusing it also keeps request 1 (>= 548 bytes)
	 * larger than any reply to it. */
	if (rudp_wire_decode_open_request_1(p, n, &req) < 0 || req.mtu < RUDP_MIN_MTU) {
		h->stats.datagrams_dropped++;
		return;
	}
	if (req.protocol < h->cfg.protocol_min || req.protocol > h->cfg.protocol_max) {
		struct rudp_wire_incompatible_protocol r = {.protocol = h->cfg.protocol_version,
							    .server_guid = (int64_t)h->guid};
		offline_reply(h, from, n, buf, rudp_wire_encode_incompatible_protocol(buf, sizeof(buf), &r));
		h->stats.handshakes_refused++;
		host_log(h, 2, "refused protocol version %u", req.protocol);
		return;
	}
	/* The probe arrived whole, so the path carries req.mtu; offer the smaller
	 * of that and our own limit. */
	struct rudp_wire_open_reply_1 rep = {
		.server_guid = (int64_t)h->guid,
		.security = h->guard.cookies,
		.cookie = h->guard.cookies ? guard_cookie(&h->guard, from, h->now_us) : 0,
		.mtu = req.mtu < h->cfg.mtu ? req.mtu : h->cfg.mtu,
	};
	offline_reply(h, from, n, buf, rudp_wire_encode_open_reply_1(buf, sizeof(buf), &rep));
}

static void server_send_reply_2(struct rudp_host *h, struct rudp_peer *peer)
{
	uint8_t buf[96];
	struct rudp_wire_open_reply_2 rep = {
		.server_guid = (int64_t)h->guid, .mtu = peer->mtu, .encryption = false};
	rudp_addr_to_wire(&peer->addr, &rep.client_addr);
	int len = rudp_wire_encode_open_reply_2(buf, sizeof(buf), &rep);
	if (len > 0)
		host_send_raw(h, peer, NULL, buf, (size_t)len);
}

static void server_on_request_2(struct rudp_host *h, const struct sockaddr_storage *from, uint64_t hash,
				const uint8_t *p, size_t n)
{
	struct rudp_wire_open_request_2 req;
	if (rudp_wire_decode_open_request_2(p, n, h->guard.cookies, &req) < 0) {
		h->stats.datagrams_dropped++;
		return;
	}
	/* Cookie mode: only a source that received our reply 1 gets any state. */
	if (h->guard.cookies && !guard_cookie_valid(&h->guard, from, req.cookie, h->now_us)) {
		h->guard.cookie_rejected++;
		h->stats.datagrams_dropped++;
		return;
	}
	struct rudp_peer *peer = peer_table_find(&h->table, from, 0, hash);
	if (peer) {
		/* Our reply 2 was lost and the client asks again: answer the same. */
		if (!peer->outgoing && peer->stage == PEER_ONLINE && peer->conn &&
		    rudp_conn_state(peer->conn) == RUDP_CONN_STATE_CONNECTING &&
		    peer->remote_guid == (uint64_t)req.client_guid) {
			server_send_reply_2(h, peer);
			return;
		}
		server_reply_reject(h, from, n, RUDP_ID_ALREADY_CONNECTED);
		return;
	}
	/* Half-open handshakes never keep a real client out: when the peers
	 * or the pending handshakes are full, the oldest pending one gives way. */
	/* Over the memory budget nothing new comes in; what is accepted stays. */
	if (budget_over(h) || (h->peer_count >= h->cfg.max_peers && !guard_oldest_pending(&h->guard))) {
		server_reply_reject(h, from, n, RUDP_ID_NO_FREE_INCOMING_CONNECTIONS);
		return;
	}
	enum guard_admit admit = guard_admit_pending(&h->guard, from);
	if (admit == GUARD_ADMIT_ADDR_FULL) {
		server_reply_reject(h, from, n, RUDP_ID_NO_FREE_INCOMING_CONNECTIONS);
		return;
	}
	uint16_t mtu = req.mtu;
	if (mtu > h->cfg.mtu)
		mtu = h->cfg.mtu;
	if (mtu < RUDP_MIN_MTU) {
		h->stats.handshakes_refused++;
		return;
	}
	/* Only a request we are about to accept may push out an older one. */
	if (admit == GUARD_ADMIT_EVICT || h->peer_count >= h->cfg.max_peers) {
		struct rudp_peer *oldest = guard_oldest_pending(&h->guard);
		h->guard.pending_evicted++;
		host_peer_close(h, oldest, RUDP_REASON_TIMEOUT);
	}
	peer = host_peer_new(h, from, 0, false);
	if (!peer)
		return;
	peer->remote_guid = (uint64_t)req.client_guid;
	if (host_peer_go_online(h, peer, RUDP_CONN_SERVER, mtu) != 0)
		return;
	guard_pending_add(&h->guard, peer, h->now_us);
	server_send_reply_2(h, peer);
}

static void client_on_reply_1(struct rudp_host *h, struct rudp_peer *peer, const uint8_t *p, size_t n)
{
	struct rudp_wire_open_reply_1 rep;
	if (peer->stage != PEER_OFFLINE_1)
		return; /* a late duplicate */
	if (rudp_wire_decode_open_reply_1(p, n, &rep) < 0) {
		h->stats.datagrams_dropped++;
		return;
	}
	uint16_t probed = probe_mtu(h, peer->probe_index);
	uint16_t mtu = rep.mtu < probed ? rep.mtu : probed;
	if (mtu < RUDP_MIN_MTU)
		mtu = RUDP_MIN_MTU;
	peer->mtu = mtu;
	peer->remote_guid = (uint64_t)rep.server_guid;
	peer->server_wants_cookie = rep.security;
	peer->cookie = rep.cookie;
	peer->stage = PEER_OFFLINE_2;
	peer->attempts = 0;
	client_send_request(h, peer);
}

static void client_on_reply_2(struct rudp_host *h, struct rudp_peer *peer, const uint8_t *p, size_t n)
{
	struct rudp_wire_open_reply_2 rep;
	if (peer->stage != PEER_OFFLINE_2)
		return;
	if (rudp_wire_decode_open_reply_2(p, n, &rep) < 0) {
		h->stats.datagrams_dropped++;
		return;
	}
	uint16_t mtu = rep.mtu < peer->mtu ? rep.mtu : peer->mtu;
	if (mtu < RUDP_MIN_MTU) {
		host_peer_close(h, peer, RUDP_REASON_PROTOCOL);
		return;
	}
	host_peer_go_online(h, peer, RUDP_CONN_CLIENT, mtu);
}

static void on_unconnected_ping(struct rudp_host *h, const struct sockaddr_storage *from, const uint8_t *p,
				size_t n)
{
	struct rudp_wire_unconnected_ping ping;
	uint8_t buf[RUDP_IO_SLOT_SIZE];
	if (rudp_wire_decode_unconnected_ping(p, n, &ping) < 0) {
		h->stats.datagrams_dropped++;
		return;
	}
	/* 0x02 asks for an answer only from servers with free slots. */
	if (ping.id == RUDP_ID_UNCONNECTED_PING_OPEN && h->peer_count >= h->cfg.max_peers)
		return;
	struct rudp_wire_unconnected_pong pong = {
		.time = ping.time,
		.server_guid = (int64_t)h->guid,
		.data = h->pong_data,
		.data_len = h->pong_len,
	};
	/* The pong header is exactly the ping's size, so a pong without its
	 * data always fits: the client still learns the server is there. */
	if (!h->guard.pong_amplification && h->pong_len && !guard_reply_fits(n, 33 + h->pong_len)) {
		pong.data = NULL;
		pong.data_len = 0;
		h->guard.replies_trimmed++;
	}
	int len = rudp_wire_encode_unconnected_pong(buf, sizeof(buf), &pong);
	if (h->guard.pong_amplification) {
		if (len > 0)
			host_send_raw(h, NULL, from, buf, (size_t)len);
	} else {
		offline_reply(h, from, n, buf, len);
	}
}

void offline_on_datagram(struct rudp_host *h, const struct sockaddr_storage *from,
			 const struct rudp_io_datagram *d)
{
	const uint8_t *p = d->data;
	size_t n = d->len;
	uint64_t hash = peer_table_hash(&h->table, from, d->sock);
	struct rudp_peer *peer;

	/* A connection's own socket (rudp_config.socket_per_connect) hears
	 * only its server's replies: requests and pings are for the host's. */
	if (d->sock != 0) {
		switch (p[0]) {
		case RUDP_ID_UNCONNECTED_PING:
		case RUDP_ID_UNCONNECTED_PING_OPEN:
		case RUDP_ID_UNCONNECTED_PONG:
		case RUDP_ID_OPEN_CONNECTION_REQUEST_1:
		case RUDP_ID_OPEN_CONNECTION_REQUEST_2: h->stats.datagrams_dropped++; return;
		default: break;
		}
	}

	switch (p[0]) {
	case RUDP_ID_UNCONNECTED_PING:
	case RUDP_ID_UNCONNECTED_PING_OPEN:
	case RUDP_ID_OPEN_CONNECTION_REQUEST_1:
	case RUDP_ID_OPEN_CONNECTION_REQUEST_2:
		/* Every request an unknown source can make us answer is rated. */
		if (!guard_offline_allowed(&h->guard, from, h->now_us)) {
			h->stats.datagrams_dropped++;
			return;
		}
		break;
	default: break;
	}
	switch (p[0]) {
	case RUDP_ID_UNCONNECTED_PING:
	case RUDP_ID_UNCONNECTED_PING_OPEN: on_unconnected_ping(h, from, p, n); return;
	case RUDP_ID_UNCONNECTED_PONG: ping_on_pong(h, from, p, n); return;
	case RUDP_ID_OPEN_CONNECTION_REQUEST_1: server_on_request_1(h, from, p, n); return;
	case RUDP_ID_OPEN_CONNECTION_REQUEST_2: server_on_request_2(h, from, hash, p, n); return;
	default: break;
	}
	/* Replies only matter to a client peer we are connecting with. */
	peer = peer_table_find(&h->table, from, d->sock, hash);
	if (!peer || !peer->outgoing) {
		h->stats.datagrams_dropped++;
		return;
	}
	switch (p[0]) {
	case RUDP_ID_OPEN_CONNECTION_REPLY_1: client_on_reply_1(h, peer, p, n); break;
	case RUDP_ID_OPEN_CONNECTION_REPLY_2: client_on_reply_2(h, peer, p, n); break;
	case RUDP_ID_INCOMPATIBLE_PROTOCOL_VERSION:
		if (peer->stage == PEER_OFFLINE_1 || peer->stage == PEER_OFFLINE_2)
			host_peer_close(h, peer, RUDP_REASON_INCOMPATIBLE);
		break;
	case RUDP_ID_NO_FREE_INCOMING_CONNECTIONS:
		if (peer->stage == PEER_OFFLINE_1 || peer->stage == PEER_OFFLINE_2)
			host_peer_close(h, peer, RUDP_REASON_SERVER_FULL);
		break;
	case RUDP_ID_ALREADY_CONNECTED:
	case RUDP_ID_CONNECTION_BANNED:
	case RUDP_ID_IP_RECENTLY_CONNECTED:
		if (peer->stage == PEER_OFFLINE_1 || peer->stage == PEER_OFFLINE_2)
			host_peer_close(h, peer, RUDP_REASON_REJECTED);
		break;
	default: h->stats.datagrams_dropped++; break;
	}
}
