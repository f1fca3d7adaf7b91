/* SPDX-License-Identifier: MIT */
/*
 * A peer's life: its creation, its going online (the conn and the callbacks
 * through which the conn reaches the host), its close, and its free once
 * the application has seen it go. Both the service loop (host.c) and the
 * offline handshake (offline.c) make and end peers through these.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_internal.h"

#define NOT_IN_HEAP UINT32_MAX

/* ---- conn callbacks: ud is the peer ---- */

static int cb_send_datagram(void *ud, const uint8_t *data, size_t len)
{
	struct rudp_peer *p = ud;
	struct rudp_host *h = p->host;
	if (len > RUDP_IO_SLOT_SIZE)
		return -1;
	/* Held or lost by the simulator: the slot is not committed and serves
	 * the next datagram. */
	if (h->sim && netsim_outgoing(h->sim, h->now_us, p->sock, data, len,
				      (const struct sockaddr *)&p->send_addr, p->send_addrlen) != NETSIM_PASS)
		return 0;
	uint8_t *slot = rudp_io_tx_slot(h->io);
	if (slot != data) /* built in place (cb_datagram_buffer) unless the conn had to use its own */
		memcpy(slot, data, len);
	/* ACKs and NACKs carry no datagram sequence number, so the backend
	 * may move them behind data to the same peer: the ACK of a request,
	 * built when it arrives, then ends the GSO send of the answer. */
	if (slot[0] & (RUDP_DGRAM_ACK | RUDP_DGRAM_NACK))
		rudp_io_tx_commit_movable_on(h->io, p->sock, len, (const struct sockaddr *)&p->send_addr,
					     p->send_addrlen);
	else
		rudp_io_tx_commit_on(h->io, p->sock, len, (const struct sockaddr *)&p->send_addr,
				     p->send_addrlen);
	return 0;
}

/* The conn builds its next datagram right in the I/O send slot, which stays
 * the same until it is committed (cb_send_datagram). */
static uint8_t *cb_datagram_buffer(void *ud, size_t len)
{
	struct rudp_peer *p = ud;
	return len <= RUDP_IO_SLOT_SIZE ? rudp_io_tx_slot(p->host->io) : NULL;
}

static void cb_deliver(void *ud, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel)
{
	struct rudp_peer *p = ud;
	/* Reliable messages had their room made (cb_reserve_delivery); an
	 * unreliable one may be dropped, as the network may drop it. */
	if (event_queue_push_receive(&p->host->events, p, data, len, reliability, channel) != 0)
		host_log(p->host, 1, "out of memory queueing an unreliable message; dropped");
}

/* Before the conn acknowledges a reliable frame: room in the event queue
 * for every event the frame may cause (and a close event after them). */
static bool cb_reserve_delivery(void *ud, uint32_t messages, uint64_t bytes)
{
	struct rudp_peer *p = ud;
	return event_queue_reserve(&p->host->events, messages + 1, bytes) == 0;
}

static void cb_connected(void *ud)
{
	struct rudp_peer *p = ud;
	struct pending_event e = {.type = RUDP_EVENT_CONNECT, .peer = p};
	guard_pending_remove(&p->host->guard, p);
	/* Its room was made with the frame that finished the handshake. */
	event_queue_push(&p->host->events, &e, NULL);
}

static int map_close_reason(enum rudp_conn_close_reason r)
{
	switch (r) {
	case RUDP_CONN_CLOSE_LOCAL: return RUDP_REASON_LOCAL;
	case RUDP_CONN_CLOSE_REMOTE: return RUDP_REASON_REMOTE;
	case RUDP_CONN_CLOSE_TIMEOUT: return RUDP_REASON_TIMEOUT;
	case RUDP_CONN_CLOSE_CONNECT_FAILED: return RUDP_REASON_CONNECT_FAILED;
	default: return RUDP_REASON_PROTOCOL;
	}
}

static void cb_closed(void *ud, enum rudp_conn_close_reason reason)
{
	/* The conn is still on the stack: finish the close once it returns. */
	struct rudp_peer *p = ud;
	p->closing_pending = true;
	p->close_reason = map_close_reason(reason);
}

struct rudp_peer *host_peer_new(struct rudp_host *h, const struct sockaddr_storage *norm, uint32_t sock,
				bool outgoing)
{
	/* Past the memory budget nothing new starts, either way: a new
	 * connection would only add to what has to drain first. */
	if (budget_over(h))
		return NULL;
	struct rudp_peer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->host = h;
	p->addr = *norm;
	p->sock = sock;
	p->own_fd = -1;
	p->outgoing = outgoing;
	p->heap_index = NOT_IN_HEAP;
	p->deadline_us = UINT64_MAX;
	p->protocol = h->cfg.protocol_version;
	p->has_send_opts = h->has_send_opts;
	p->send_opts = h->send_opts;
	if (!rudp_addr_for_socket(norm, h->family, &p->send_addr, &p->send_addrlen)) {
		free(p);
		return NULL;
	}
	p->addr_hash = peer_table_hash(&h->table, norm, sock);
	if (peer_table_insert(&h->table, p) != 0) {
		free(p);
		return NULL;
	}
	h->peer_count++;
	return p;
}

void host_peer_free(struct rudp_host *h, struct rudp_peer *p)
{
	budget_peer_forget(h, p);
	host_peer_policy_closing(p);
	if (p->conn)
		rudp_conn_destroy(p->conn);
	host_peer_policy_free(p);
	if (p->own_fd >= 0) {
		/* Its socket goes with it (the io is gone when the host is). */
		if (h->io)
			rudp_io_remove_socket(h->io, p->sock);
		/* Its index may go to another socket: nothing held may use it. */
		if (h->sim)
			netsim_forget_socket(h->sim, p->sock);
		close(p->own_fd);
	}
	free(p);
}

int host_peer_go_online(struct rudp_host *h, struct rudp_peer *p, enum rudp_conn_role role, uint16_t mtu)
{
	struct rudp_conn_config cc = h->conn_cfg;
	struct rudp_conn_callbacks cb = {.ud = p,
					 .send_datagram = cb_send_datagram,
					 .datagram_buffer = cb_datagram_buffer,
					 .deliver = cb_deliver,
					 .reserve_delivery = cb_reserve_delivery,
					 .connected = cb_connected,
					 .closed = cb_closed};
	struct rudp_conn_identity id = {.local_guid = (int64_t)h->guid,
					.remote_guid = (int64_t)p->remote_guid};
	struct sockaddr_storage local, own;
	socklen_t own_len = sizeof(own);
	if (p->own_fd >= 0 && getsockname(p->own_fd, (struct sockaddr *)&own, &own_len) == 0)
		rudp_addr_normalize((const struct sockaddr *)&own, &local);
	else
		rudp_addr_normalize((const struct sockaddr *)&h->local_addr, &local);
	rudp_addr_to_wire(&local, &id.local_addr);
	rudp_addr_to_wire(&p->addr, &id.remote_addr);
	/* RakNet's MTU probing cannot see the first hop: the kernel fragments
	 * an oversized probe locally and it arrives, so a host on a link with
	 * a smaller MTU (a cloud VM at 1460, a tunnel) agrees on 1492 and then
	 * sends every full datagram as IP fragments; worse, a UDP GSO run of
	 * such datagrams is not fragmented but lost. Never send datagrams
	 * larger than the kernel's route to the peer allows (each side only
	 * limits what it sends, so the two may differ). */
	unsigned route = rudp_addr_route_mtu(&p->addr);
	if (route && route < mtu)
		mtu = (uint16_t)(route < 576 ? 576 : route);
	cc.mtu = mtu;
	cc.ip_udp_overhead = p->addr.ss_family == AF_INET6 ? 48 : 28;
	if (role == RUDP_CONN_CLIENT) {
		/* The connect timeout covers the whole handshake, offline part too. */
		uint64_t spent = h->now_us - p->handshake_started_us;
		cc.connect_timeout_us = spent < cc.connect_timeout_us ? cc.connect_timeout_us - spent : 1;
	} else {
		/* An incoming handshake holds a pending slot (guard.c): keep it short. */
		cc.connect_timeout_us = (uint64_t)h->cfg.handshake_timeout_ms * 1000;
	}
	p->mtu = mtu;
	p->conn = rudp_conn_create(&cc, &cb, role, &id, h->now_us);
	if (!p->conn || host_peer_policy_attach(p) != 0) {
		host_peer_close(h, p, RUDP_REASON_CONNECT_FAILED);
		return RUDP_E_NOMEM;
	}
	rudp_conn_set_redundant_channels(p->conn, p->redundant_channels);
	p->stage = PEER_ONLINE;
	host_mark_dirty(h, p);
	host_peer_touch(h, p);
	return 0;
}

void host_peer_close(struct rudp_host *h, struct rudp_peer *p, int reason)
{
	if (p->stage == PEER_DEAD)
		return;
	p->stage = PEER_DEAD;
	if (p->guard_pending) {
		/* An incoming handshake that never finished (timed out or evicted):
		 * the application never saw it connect, so it hears nothing now. */
		guard_pending_remove(&h->guard, p);
		p->silent_close = true;
		if (reason == RUDP_REASON_CONNECT_FAILED)
			h->guard.pending_timed_out++;
	}
	peer_table_remove(&h->table, p);
	timer_heap_set(&h->timers, p, UINT64_MAX);
	h->peer_count--;
	budget_peer_forget(h, p);
	if (p->conn) {
		rudp_conn_get_stats(p->conn, &p->final_stats);
		p->has_final_stats = true;
		host_peer_policy_closing(p);
		rudp_conn_destroy(p->conn);
		p->conn = NULL;
	}
	p->dead_next = h->dead_head;
	h->dead_head = p;
	if (p->silent_close)
		return;
	struct pending_event e = {.type = RUDP_EVENT_DISCONNECT, .peer = p, .reason = reason};
	if (event_queue_push(&h->events, &e, NULL) != 0)
		p->event_seen = true; /* no way to report it; free it next round */
}

/* Frees closed peers whose DISCONNECT event the application has had. */
void host_free_seen_dead(struct rudp_host *h)
{
	struct rudp_peer **link = &h->dead_head;
	while (*link) {
		struct rudp_peer *p = *link;
		if ((p->event_seen || p->silent_close) && !p->dirty) {
			*link = p->dead_next;
			host_peer_free(h, p);
		} else {
			link = &p->dead_next;
		}
	}
}
