/* SPDX-License-Identifier: MIT */
/* Public API pieces that need no socket: defaults, strings, statistics. */
#include <string.h>

#include "host_internal.h"
#if RUDP_HAVE_SEND_POLICY
#include "policy/policy.h"
#endif

void rudp_config_init(rudp_config *c)
{
	if (!c)
		return;
	memset(c, 0, sizeof(*c));
	c->max_peers = 1024;
	c->mtu = 1492;
	c->protocol_version = 11;
	c->protocol_min = 6;
	c->protocol_max = 11;
	c->window_frames = 64;
	c->max_frames_per_datagram = 8;
	c->max_message_size = 4u << 20;
	c->max_queue_bytes = 32u << 20;
	c->max_split_count = 8192;
	c->max_split_ids = 32;
	c->max_reassembly_bytes = 8u << 20;
	c->max_order_hold = 4096;
	c->max_ack_ranges = 256;
	c->rto_min_ms = 30;
	c->rto_max_ms = 2000;
	c->rto_initial_ms = 200;
	c->keepalive_ms = 2000;
	c->timeout_ms = 10000;
	c->connect_timeout_ms = 5000;
	c->disconnect_linger_ms = 2000;
	c->socket_rcvbuf = 4u << 20;
	c->socket_sndbuf = 4u << 20;
	c->io_batch = 32;
	c->udp_gso = 1;
	c->udp_gro = 1;
	c->max_pending_events = 65536;
	c->max_pending_event_bytes = 64u << 20;
	c->log_level_max = 3;
	c->max_pending_handshakes = 256;
	c->max_pending_per_address = 8;
	c->handshake_timeout_ms = 3000;
	c->offline_rate_per_address = 64;
	c->congestion_control = RUDP_CC_NONE;
	c->wait_spin_us = 50;
	c->max_datagram_seq_jump = 1024;
	c->max_pings = 256;
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

int rudp_peer_stats_get(const rudp_peer *p, rudp_peer_stats *out)
{
	if (!p || !out)
		return RUDP_E_INVALID;
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
		return 0;
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
	out->resent_nack = s.resent_nack;
	out->resent_inferred = s.resent_inferred;
	out->resent_probe = s.resent_probe;
	out->resent_timeout = s.resent_timeout;
	out->resent_spurious = s.resent_spurious;
	return 0;
}

int rudp_host_stats_get(const rudp_host *h, rudp_host_stats *out)
{
	if (!h || !out)
		return RUDP_E_INVALID;
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
	return 0;
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

/* ---- send policy glue (the policy itself is src/policy) ---- */

void rudp_send_options_init(rudp_send_options *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof(*o));
	/* The same values as rudp_policy_config_init(), which explains them;
	 * kept here too so the defaults can be read without the module. */
	o->max_in_flight_bytes = 64u << 20;
	o->reliable_soft_budget = 256u << 10;
	o->unreliable_reserve = 64u << 10;
	o->flush_budget = 256u << 10;
	o->starvation_limit = 16;
}

#if RUDP_HAVE_SEND_POLICY
static void to_policy_config(const rudp_send_options *o, struct rudp_policy_config *c)
{
	rudp_policy_config_init(c);
	c->max_in_flight_bytes = o->max_in_flight_bytes;
	c->reliable_soft_budget = o->reliable_soft_budget;
	c->unreliable_reserve = o->unreliable_reserve;
	c->flush_budget = o->flush_budget;
	c->starvation_limit = o->starvation_limit;
}

static bool send_options_valid(const rudp_send_options *o)
{
	struct rudp_policy_config c;

	to_policy_config(o, &c);
	return rudp_policy_config_check(&c) == 0;
}

int host_peer_policy_attach(struct rudp_peer *p)
{
	struct rudp_policy_config c;

	if (!p->has_send_opts || !p->conn)
		return 0;
	to_policy_config(&p->send_opts, &c);
	if (p->policy)
		rudp_policy_reconfigure(p->policy, &c);
	else
		p->policy = rudp_policy_create(&c);
	if (!p->policy)
		return RUDP_E_NOMEM;
	return rudp_conn_set_policy(p->conn, p->policy) == 0 ? 0 : RUDP_E_NOMEM;
}

void host_peer_policy_closing(struct rudp_peer *p)
{
	if (p->policy && p->conn)
		rudp_policy_conn_closing(p->conn);
}

void host_peer_policy_free(struct rudp_peer *p)
{
	/* The conn is gone already (host_peer_policy_closing came first). */
	rudp_policy_destroy(p->policy);
	p->policy = NULL;
}

int rudp_peer_set_send_options(rudp_peer *p, const rudp_send_options *o)
{
	if (!p || (o && !send_options_valid(o)))
		return RUDP_E_INVALID;
	if (p->stage == PEER_DEAD)
		return RUDP_E_NOT_CONNECTED;
	if (!o) {
		p->has_send_opts = false;
		if (p->policy && p->conn) {
			if (rudp_conn_set_policy(p->conn, NULL) < 0)
				return RUDP_E_NOMEM;
			/* What the policy held is in the plain queue now. */
			host_mark_dirty(p->host, p);
		}
		rudp_policy_destroy(p->policy);
		p->policy = NULL;
		return 0;
	}
	p->send_opts = *o;
	p->has_send_opts = true;
	return host_peer_policy_attach(p);
}

int rudp_host_set_send_options(rudp_host *h, const rudp_send_options *o)
{
	if (!h || (o && !send_options_valid(o)))
		return RUDP_E_INVALID;
	h->has_send_opts = o != NULL;
	if (o)
		h->send_opts = *o;
	return 0;
}

int rudp_peer_send_stats_get(const rudp_peer *p, rudp_send_stats *out)
{
	struct rudp_policy_stats s;

	if (!p || !out)
		return RUDP_E_INVALID;
	memset(out, 0, sizeof(*out));
	if (!p->policy)
		return 0;
	rudp_policy_get_stats(p->policy, &s);
	out->enabled = 1;
	for (int i = 0; i < RUDP_PRIORITIES; i++) {
		out->reliable_queued_bytes[i] = s.reliable_staged_bytes[i];
		out->unreliable_queued_bytes[i] = s.unreliable_staged_bytes[i];
	}
	out->reliable_queue_bytes = s.reliable_queue_bytes;
	out->unreliable_queue_bytes = s.unreliable_queue_bytes;
	out->in_flight_bytes = s.in_flight_bytes;
	out->dropped[RUDP_DROP_UNRELIABLE_RESERVE] = s.dropped[RUDP_POLICY_DROP_RESERVE];
	out->dropped[RUDP_DROP_CLOSED] = s.dropped[RUDP_POLICY_DROP_CLOSED];
	out->sends_refused = s.sends_refused;
	out->writable_events = s.writable_signals;
	out->flushes_budget_limited = s.flushes_budget_limited;
	out->peak_reliable_queue_bytes = s.peak_reliable_queue_bytes;
	out->peak_unreliable_queue_bytes = s.peak_unreliable_queue_bytes;
	out->peak_in_flight_bytes = s.peak_in_flight_bytes;
	return 0;
}
#else
/* Built with -Dsend_policy=false: the API exists and says so. */
int host_peer_policy_attach(struct rudp_peer *p)
{
	(void)p;
	return 0;
}

void host_peer_policy_closing(struct rudp_peer *p)
{
	(void)p;
}

void host_peer_policy_free(struct rudp_peer *p)
{
	(void)p;
}

int rudp_peer_set_send_options(rudp_peer *p, const rudp_send_options *o)
{
	(void)p;
	(void)o;
	return RUDP_E_UNSUPPORTED;
}

int rudp_host_set_send_options(rudp_host *h, const rudp_send_options *o)
{
	(void)h;
	(void)o;
	return RUDP_E_UNSUPPORTED;
}

int rudp_peer_send_stats_get(const rudp_peer *p, rudp_send_stats *out)
{
	(void)p;
	(void)out;
	return RUDP_E_UNSUPPORTED;
}
#endif
