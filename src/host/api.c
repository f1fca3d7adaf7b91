/* SPDX-License-Identifier: MIT */
/* Public API pieces that need no socket: config defaults (and taking a
 * caller's config of any published size), strings, statistics. */
#include <stddef.h>
#include <string.h>

#include "conn/defaults.h"
#include "host_internal.h"

/* Every published layout must be a prefix of the current one, including
 * its tail: a program's sizeof(rudp_config) counts its tail padding, and a
 * field appended inside that padding would be taken from the caller's
 * uninitialised bytes. Update this to the new last field when appending,
 * and pad explicitly if the struct would end in padding. */
_Static_assert(sizeof(rudp_config) == offsetof(rudp_config, ack_delay_us) + sizeof(uint32_t),
	       "rudp_config ends in padding, or its last field is not the one named here");

static void config_defaults(rudp_config *c)
{
	memset(c, 0, sizeof(*c));
	c->struct_size = sizeof(*c);
	/* A connection's limits and timers: conn/defaults.h, which the conn's
	 * own rudp_conn_config_init uses too. */
	c->max_peers = 1024;
	c->mtu = RUDP_DEFAULT_MTU;
	c->protocol_version = RUDP_DEFAULT_PROTOCOL_VERSION;
	c->protocol_min = 6;
	c->protocol_max = 11;
	c->window_frames = RUDP_DEFAULT_WINDOW_FRAMES;
	c->max_frames_per_datagram = RUDP_DEFAULT_MAX_FRAMES_PER_DATAGRAM;
	c->max_message_size = RUDP_DEFAULT_MAX_MESSAGE_SIZE;
	c->max_queue_bytes = RUDP_DEFAULT_MAX_QUEUE_BYTES;
	c->max_split_count = RUDP_DEFAULT_MAX_SPLIT_COUNT;
	c->max_split_ids = RUDP_DEFAULT_MAX_SPLIT_IDS;
	c->max_reassembly_bytes = RUDP_DEFAULT_MAX_REASSEMBLY_BYTES;
	c->max_order_hold = RUDP_DEFAULT_MAX_ORDER_HOLD;
	c->max_ack_ranges = RUDP_DEFAULT_MAX_ACK_RANGES;
	c->rto_min_ms = RUDP_DEFAULT_RTO_MIN_MS;
	c->rto_max_ms = RUDP_DEFAULT_RTO_MAX_MS;
	c->rto_initial_ms = RUDP_DEFAULT_RTO_INITIAL_MS;
	c->keepalive_ms = RUDP_DEFAULT_KEEPALIVE_MS;
	c->timeout_ms = RUDP_DEFAULT_TIMEOUT_MS;
	c->connect_timeout_ms = RUDP_DEFAULT_CONNECT_TIMEOUT_MS;
	c->disconnect_linger_ms = RUDP_DEFAULT_DISCONNECT_LINGER_MS;
	c->io.socket_rcvbuf = 4u << 20;
	c->io.socket_sndbuf = 4u << 20;
	c->io.batch = 32;
	c->io.udp_gso = 1;
	c->io.udp_gro = 1;
	c->max_pending_events = 65536;
	c->max_pending_event_bytes = 64u << 20;
	c->log_level_max = 3;
	c->max_pending_handshakes = 256;
	c->max_pending_per_address = 8;
	c->handshake_timeout_ms = 3000;
	c->offline_rate_per_address = 64;
	c->congestion_control = RUDP_DEFAULT_CONGESTION_CONTROL;
	c->io.wait_spin_us = 50;
	c->max_datagram_seq_jump = RUDP_DEFAULT_MAX_DGRAM_SEQ_JUMP;
	c->max_pings = 256;
	c->max_host_memory = 256ull << 20;
	c->ack_every = RUDP_DEFAULT_ACK_EVERY;
	c->ack_delay_us = RUDP_DEFAULT_ACK_DELAY_US;
}

void rudp_config_init_sized(rudp_config *cfg, size_t size)
{
	if (!cfg || size < sizeof(cfg->struct_size))
		return;
	rudp_config d;
	config_defaults(&d);
	/* Never past the caller's size bytes: an older program's struct is
	 * smaller than ours. A newer one's fields we do not know are zeroed,
	 * and rudp_host_create() refuses its size. */
	memcpy(cfg, &d, size < sizeof(d) ? size : sizeof(d));
	if (size > sizeof(d))
		memset((char *)cfg + sizeof(d), 0, size - sizeof(d));
	cfg->struct_size = size;
}

int host_config_take(const rudp_config *caller, size_t oldest_size, rudp_config *out)
{
	size_t size = caller->struct_size;
	if (size < oldest_size || size > sizeof(*out) || size < sizeof(caller->struct_size))
		return RUDP_E_INVALID;
	rudp_config c;
	config_defaults(&c);
	memcpy(&c, caller, size);
	c.struct_size = sizeof(c);
	*out = c;
	return 0;
}

const char *rudp_strerror(int e)
{
	switch (e) {
	case RUDP_OK: return "success";
	case RUDP_E_INVALID: return "invalid argument";
	case RUDP_E_NOMEM: return "out of memory";
	case RUDP_E_SYSTEM: return "system call failed (see errno)";
	case RUDP_E_ADDRESS: return "address cannot be parsed, resolved or reached from this socket";
	case RUDP_E_PEERS_FULL: return "peer limit reached";
	case RUDP_E_NOT_CONNECTED: return "peer is not connected";
	case RUDP_E_TOO_LARGE: return "message larger than max_message_size";
	case RUDP_E_QUEUE_FULL: return "send queue full; service the host and retry";
	case RUDP_E_UNSUPPORTED: return "not supported by this build or system";
	case RUDP_E_RESERVED_ID: return "message is empty or begins with a RakNet control id";
	case RUDP_E_WOULD_BLOCK: return "send queue over its soft budget; wait for RUDP_EVENT_WRITABLE";
	case RUDP_E_ALREADY_CONNECTED: return "the host has a connection to that address already";
	case RUDP_E_PINGS_FULL: return "max_pings pings are outstanding; wait for their answers";
	default: return "unknown error";
	}
}

const char *rudp_reason_string(int r)
{
	switch (r) {
	case RUDP_REASON_LOCAL: return "closed locally";
	case RUDP_REASON_REMOTE: return "closed by the remote side";
	case RUDP_REASON_TIMEOUT: return "timed out";
	case RUDP_REASON_CONNECT_FAILED: return "connection attempt failed";
	case RUDP_REASON_PROTOCOL: return "protocol violation";
	case RUDP_REASON_INCOMPATIBLE: return "incompatible protocol version";
	case RUDP_REASON_SERVER_FULL: return "server full";
	case RUDP_REASON_REJECTED: return "rejected by the server";
	default: return "unknown reason";
	}
}

static void peer_stats_fill(const void *obj, void *dst)
{
	const rudp_peer *p = obj;
	rudp_peer_stats *out = dst;

	memset(out, 0, sizeof(*out));
	out->mtu = p->mtu;
	out->protocol_version = p->protocol;
	struct rudp_conn_stats s;
	if (p->conn) {
		rudp_conn_get_stats(p->conn, &s);
		out->state = (int)rudp_conn_state(p->conn);
	} else if (p->has_final_stats) {
		s = p->final_stats;
	} else {
		out->state = p->stage == PEER_DEAD ? 3 : 0;
		return;
	}
	if (p->stage == PEER_DEAD)
		out->state = 3;
	out->bytes_sent = s.bytes_sent;
	out->bytes_received = s.bytes_received;
	out->datagrams_sent = s.datagrams_sent;
	out->datagrams_received = s.datagrams_received;
	out->messages_sent = s.messages_sent;
	out->messages_received = s.messages_received;
	out->frames_retransmitted = s.frames_retransmitted;
	out->acks_received = s.acks_received;
	out->nacks_received = s.nacks_received;
	out->datagrams_dropped = s.datagrams_dropped;
	out->duplicates_dropped = s.duplicates_dropped;
	out->rtt_us = s.rtt_us;
	out->rtt_var_us = s.rtt_var_us;
	out->rto_us = s.rto_us;
	out->window_in_use = s.window_in_use;
	out->window_frames = s.window_frames;
	out->send_queue_bytes = s.send_queue_bytes;
	out->reassembly_bytes = s.reassembly_bytes;
	out->congestion_window = s.cwnd_bytes;
	out->bytes_in_flight = s.in_flight_bytes;
	out->congestion_reductions = s.cc_reductions;
	out->bandwidth_estimate = s.bandwidth_bytes_per_s;
	out->pacing_rate = s.pacing_bytes_per_s;
	out->min_rtt_us = s.min_rtt_us;
	out->resent_nack = s.resent_nack;
	out->resent_inferred = s.resent_inferred;
	out->resent_probe = s.resent_probe;
	out->resent_timeout = s.resent_timeout;
	out->resent_spurious = s.resent_spurious;
	out->frames_copied = s.frames_copied;
	out->unreliable_expired = s.unreliable_expired;
}

int rudp_peer_stats_get_sized(const rudp_peer *p, rudp_peer_stats *out, size_t size)
{
	rudp_peer_stats scratch;

	return host_sized_get(p, out, size, sizeof(scratch), &scratch, peer_stats_fill);
}

static void host_stats_fill(const void *obj, void *dst)
{
	const rudp_host *h = obj;
	rudp_host_stats *out = dst;

	*out = h->stats;
	out->datagrams_received = h->io->stats.datagrams_received;
	out->datagrams_sent = h->io->stats.datagrams_sent;
	out->bytes_received = h->io->stats.bytes_received;
	out->bytes_sent = h->io->stats.bytes_sent;
	out->syscalls_recv = h->io->stats.recv_calls;
	out->syscalls_send = h->io->stats.send_calls;
	out->gso_sends = h->io->stats.gso_sends;
	out->gro_receives = h->io->stats.gro_receives;
	out->rx_rearms = h->io->stats.rx_rearms;
	out->send_errors = h->io->stats.send_errors;
	out->events_pending = h->events.count;
	out->event_bytes_pending = h->events.bytes;
	out->event_bytes_peak = h->events.bytes_peak;
	out->peers = h->peer_count;
	out->io_backend = h->io->ops->name;
	if (h->sim)
		netsim_stats(h->sim, out);
}

int rudp_host_stats_get_sized(const rudp_host *h, rudp_host_stats *out, size_t size)
{
	rudp_host_stats scratch;

	return host_sized_get(h, out, size, sizeof(scratch), &scratch, host_stats_fill);
}

int rudp_peer_address(const rudp_peer *p, char *buf, size_t len)
{
	if (!p)
		return RUDP_E_INVALID;
	return rudp_addr_format((const struct sockaddr *)&p->addr, buf, len);
}

uint64_t rudp_peer_guid(const rudp_peer *p)
{
	return p ? p->remote_guid : 0;
}

void rudp_peer_set_userdata(rudp_peer *p, void *ud)
{
	if (p)
		p->userdata = ud;
}

void *rudp_peer_get_userdata(const rudp_peer *p)
{
	return p ? p->userdata : NULL;
}

int rudp_peer_set_redundant_channels(rudp_peer *p, uint32_t channel_mask)
{
	if (!p)
		return RUDP_E_INVALID;
	p->redundant_channels = channel_mask;
	if (p->conn)
		rudp_conn_set_redundant_channels(p->conn, channel_mask);
	return 0;
}
