/* SPDX-License-Identifier: MIT */
/* host: sockets, peer table, offline handshake, timers, events, API glue. */
#ifndef RUDP_HOST_INTERNAL_H
#define RUDP_HOST_INTERNAL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "common/body_ring.h"
#include "common/shared_body.h"
#include "conn/conn.h"
#include "host/guard.h"
#include "host/netsim.h"
#include "io/io.h"
#include "rudp.h"
#include "wire/wire.h"

/* ---- addresses (sockaddr.c) ---- */

/* Parses "a.b.c.d:port", "[v6]:port" or "name:port" (resolved). */
int rudp_addr_parse(const char *text, struct sockaddr_storage *out, socklen_t *outlen);
/* Writes "a.b.c.d:port" or "[v6]:port"; v4-mapped v6 is shown as v4. */
int rudp_addr_format(const struct sockaddr *sa, char *buf, size_t len);
/* A v4-mapped IPv6 address becomes plain IPv4 (for hashing, comparing and
 * RakNet encoding); anything else is copied. */
void rudp_addr_normalize(const struct sockaddr *in, struct sockaddr_storage *out);
/* The form a socket of family sock_family can send to (maps v4 into v6 for a
 * dual-stack socket). Returns false when it cannot. */
bool rudp_addr_for_socket(const struct sockaddr_storage *in, int sock_family, struct sockaddr_storage *out,
			  socklen_t *outlen);
bool rudp_addr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b); /* normalized */
void rudp_addr_to_wire(const struct sockaddr_storage *normalized, struct rudp_wire_addr *out);
/* The MTU of the kernel's route to a normalized address (IP packet bytes:
 * the device's, or a smaller path MTU the kernel has learned), or 0 when
 * it cannot tell. A few system calls: once per connection. */
unsigned rudp_addr_route_mtu(const struct sockaddr_storage *normalized);

/* ---- peers ---- */
enum peer_stage {
	PEER_OFFLINE_1, /* client: sending open connection request 1 (MTU probes) */
	PEER_OFFLINE_2, /* client: sending open connection request 2 */
	PEER_ONLINE, /* conn exists (connecting or connected) */
	PEER_DEAD, /* closed; waiting for the application to see its event */
};

struct rudp_peer {
	/* What every send reads or writes, together at the start: a server
	 * sending to many peers in a row (rudp_send_many) waits for each
	 * cache line of each peer. */
	struct rudp_host *host;
	enum peer_stage stage;
	bool outgoing;
	/* the list of peers with output to flush after this batch */
	bool dirty;
	/* memory budget (budget.c): refused a send while over it (on the
	 * list below), and the bytes of this peer in the host's total */
	bool budget_refused;
	struct rudp_conn *conn;
	struct send_policy *policy; /* see send_opts */
	uint64_t budget_bytes;
	struct rudp_peer *dirty_next;

	struct sockaddr_storage addr; /* normalized (v4 as AF_INET) */
	struct sockaddr_storage send_addr; /* the form our socket sends to */
	socklen_t send_addrlen;
	uint64_t addr_hash;
	uint64_t remote_guid;
	uint16_t mtu;
	uint8_t protocol;
	void *userdata;
	uint32_t redundant_channels; /* rudp_peer_set_redundant_channels, for the conn */
	/* The io socket it talks over: 0 the host's, else the peer's own
	 * (rudp_config.socket_per_connect), own_fd then its descriptor. */
	uint32_t sock;
	int own_fd;

	/* client offline handshake */
	uint64_t handshake_started_us;
	uint64_t next_attempt_us;
	uint32_t attempts; /* at the current stage / probe */
	uint32_t probe_index; /* which MTU of the probe list */
	bool server_wants_cookie;
	uint32_t cookie;

	/* server: an incoming handshake not finished yet (guard.c), oldest first */
	bool guard_pending;
	uint64_t pending_since_us;
	struct rudp_peer *pending_prev, *pending_next;

	/* timer heap position (UINT32_MAX: not in the heap) and key */
	uint32_t heap_index;
	uint64_t deadline_us;
	/* the list of closed peers to free once the application saw the event */
	struct rudp_peer *dead_next;
	bool closing_pending; /* conn closed inside a callback; finish after it returns */
	int close_reason;
	bool event_seen; /* the DISCONNECT event was handed out */
	bool silent_close; /* rudp_peer_reset: no event */
	/* The conn's counters as they were when it closed, so statistics stay
	 * readable while the application handles the DISCONNECT event. */
	bool has_final_stats;
	struct rudp_conn_stats final_stats;
	/* send policy (send_policy.c; src/policy): options to apply when the
	 * conn starts, and the policy object, which outlives the conn so its
	 * final statistics stay readable (policy: at the start) */
	bool has_send_opts;
	rudp_send_options send_opts;
	/* the list of peers refused a send while over the memory budget */
	struct rudp_peer *refused_prev, *refused_next;
};

/* ---- peer table (peer_table.c): open addressing, XXH3 seeded hash ---- */
struct peer_table {
	struct rudp_peer **slots; /* NULL empty, TOMBSTONE deleted */
	uint32_t cap; /* power of two */
	uint32_t used; /* live entries */
	uint32_t tombstones;
	uint64_t seed;
};
int peer_table_init(struct peer_table *t, uint32_t expected, uint64_t seed);
void peer_table_free(struct peer_table *t);
/* Peers are known by remote address and io socket: with a socket per
 * connection, many peers share the server's address. */
uint64_t peer_table_hash(const struct peer_table *t, const struct sockaddr_storage *normalized,
			 uint32_t sock);
struct rudp_peer *peer_table_find(const struct peer_table *t, const struct sockaddr_storage *normalized,
				  uint32_t sock, uint64_t hash);
int peer_table_insert(struct peer_table *t, struct rudp_peer *p);
void peer_table_remove(struct peer_table *t, struct rudp_peer *p);

/* ---- timers (timer_heap.c): binary min-heap of peers by deadline ---- */
/* The key beside the peer: a sift compares keys without reading peers. */
struct timer_item {
	uint64_t deadline_us;
	struct rudp_peer *peer;
};
struct timer_heap {
	struct timer_item *items;
	uint32_t count, cap;
};
int timer_heap_init(struct timer_heap *h, uint32_t cap);
void timer_heap_free(struct timer_heap *h);
/* Inserts, moves or (deadline == UINT64_MAX) removes p. */
int timer_heap_set(struct timer_heap *h, struct rudp_peer *p, uint64_t deadline_us);
struct rudp_peer *timer_heap_top(const struct timer_heap *h);

/* ---- events (events.c): FIFO of events plus a byte ring for message data ---- */
struct pending_event {
	uint8_t type, reliability, channel;
	/* PONG and PING_TIMEOUT: the body starts with a struct ping_event_head
	 * and the address text, this many bytes in all; the rest is pong data. */
	uint8_t head_len;
	int reason;
	struct rudp_peer *peer;
	uint64_t data_pos; /* the body's position in the event queue's arena ring */
	size_t len;
};
struct event_queue {
	struct pending_event *items;
	uint32_t head, count, cap; /* ring; cap is a power of two (index & (cap - 1)) */
	uint32_t non_receive; /* queued events that are not RUDP_EVENT_RECEIVE */
	uint32_t max;
	/* Message bodies, a ring (common/body_ring.h): [tail, head) holds the
	 * data of queued events and of those returned by the current call. */
	struct body_ring arena;
	/* Message bytes of the queued events (not yet popped), and the most
	 * there were at once since the queue was made (rudp_host_stats). */
	uint64_t bytes, bytes_peak;
	/* Most arena bytes and events held at once since the last trim check,
	 * and when that check was (event_queue_release). */
	uint64_t arena_peak;
	uint32_t count_peak;
	uint64_t trim_checked_us;
};
void event_queue_init(struct event_queue *q, uint32_t max);
void event_queue_free(struct event_queue *q);
/* Releases data of events returned by the previous call; when the queue is
 * empty, at most once per EVENT_QUEUE_TRIM_US, also shrinks the arena and
 * the event array to what the busiest moment since the last check held. */
void event_queue_release(struct event_queue *q, uint64_t now_us);
/* Copies the event and its data in; 0, or RUDP_E_NOMEM (nothing queued).
 * After event_queue_reserve succeeded, pushes within what it reserved
 * cannot fail. */
int event_queue_push(struct event_queue *q, const struct pending_event *e, const uint8_t *data);
/* The same for a received message's event, the one pushed per message
 * (cb_deliver): its fields stored in place rather than copied through a
 * struct pending_event. */
int event_queue_push_receive(struct event_queue *q, struct rudp_peer *peer, const uint8_t *data, size_t len,
			     uint8_t reliability, uint8_t channel);
/* Whether a body of len bytes fits in the arena now. */
static inline bool event_queue_arena_fits(const struct event_queue *q, uint64_t len)
{
	return body_ring_fits(q->arena.cap, q->arena.tail, q->arena.head, len);
}
/* event_queue_reserve's growth, when the room is not there yet. */
int event_queue_grow(struct event_queue *q, uint32_t events, uint64_t bytes);
/* Makes room now for `events` more events whose data add up to `bytes`;
 * 0, or RUDP_E_NOMEM (the queue is as it was, only perhaps larger). Inline:
 * it is asked once per reliable frame received, and nearly always the room
 * is there. */
static inline int event_queue_reserve(struct event_queue *q, uint32_t events, uint64_t bytes)
{
	if (q->cap - q->count >= events && (bytes == 0 || event_queue_arena_fits(q, bytes)))
		return 0;
	return event_queue_grow(q, events, bytes);
}
/* Pops up to max into out (pointers into the arena). */
int event_queue_pop(struct event_queue *q, rudp_event *out, int max);
/* Removes queued events of a peer (rudp_peer_reset). */
void event_queue_forget_peer(struct event_queue *q, const struct rudp_peer *p);

/* ---- pings (ping.c): unconnected pings outstanding, rudp_ping_start ---- */
#define PING_SENDS 3 /* the first datagram and at most two resends */
struct ping_slot {
	bool used;
	bool blocking; /* rudp_ping's: its answer is kept for it, not queued */
	uint8_t sends; /* datagrams sent so far */
	uint32_t id;
	struct sockaddr_storage addr; /* normalized */
	uint64_t token; /* the time field of send k is token + k */
	uint64_t sent_us[PING_SENDS];
	uint64_t next_send_us, deadline_us;
};
/* The head of a PONG / PING_TIMEOUT event's body in the event queue. */
struct ping_event_head {
	uint64_t guid;
	uint32_t rtt_us, ping_id;
};
struct ping_table {
	struct ping_slot *slots; /* max_pings of them, allocated at the first ping */
	uint32_t cap, count;
	uint32_t last_id;
	uint64_t next_due_us; /* earliest resend or deadline; UINT64_MAX with none */
	uint64_t token_state; /* splitmix64 state seeded from getrandom */
	/* rudp_ping: the answer of the blocking ping, when it came */
	bool blocking_done, blocking_got;
	rudp_pong blocking_result;
	uint8_t blocking_data[RUDP_IO_SLOT_SIZE];
};
void ping_table_free(struct ping_table *t);
/* An unconnected pong arrived (offline.c): ends the ping it answers, or
 * counts it dropped. */
void ping_on_pong(struct rudp_host *h, const struct sockaddr_storage *from, const uint8_t *p, size_t n);
/* Resends and timeouts that are due (the service loop's timer round). */
void ping_run_timers(struct rudp_host *h);

/* ---- memory budget (budget.c): rudp_config.max_host_memory ---- */
struct host_budget {
	uint64_t peers_bytes; /* sum of every peer's budget_bytes */
	struct rudp_peer *refused_head; /* peers owed a WRITABLE event */
};

/* ---- host ---- */
struct rudp_host {
	rudp_config cfg;
	struct rudp_conn_config conn_cfg;
	int fd;
	int family; /* AF_INET or AF_INET6 (dual-stack) */
	struct sockaddr_storage local_addr;
	socklen_t local_addrlen;
	struct rudp_io *io;
	uint64_t guid;
	struct peer_table table;
	struct timer_heap timers;
	struct event_queue events;
	struct rudp_peer *dirty_head;
	struct rudp_peer *dead_head;
	uint32_t peer_count;
	uint8_t *pong_data;
	size_t pong_len;
	rudp_host_stats stats;
	uint64_t now_us;
	struct ping_table pings; /* rudp_ping_start, rudp_ping (ping.c) */
	bool in_callback_flush;
	bool has_send_opts; /* rudp_host_set_send_options: given to new peers */
	rudp_send_options send_opts;
	struct host_guard guard; /* handshake admission (guard.c) */
	/* The network simulator (rudp_config.sim); NULL when off, and then
	 * the only cost is the test of this pointer. */
	struct netsim *sim;
	struct host_budget budget; /* max_host_memory (budget.c) */
	/* Bodies of rudp_send_many() messages, shared by the peers' queues. */
	struct shared_body_pool shared_bodies;
};

uint64_t rudp_now_us(void); /* host.c */
/* The first published rudp_config layout (librudp 0.2) ends with sim;
 * a struct_size below it cannot come from rudp_config_init(). */
#define RUDP_CONFIG_SIZE_FIRST (offsetof(rudp_config, sim) + sizeof(rudp_sim_config))

/* api.c: builds in *out the config a host runs with from the caller's: this
 * library's defaults, overwritten by the caller's first struct_size bytes
 * (a program built against an older header knows fewer fields; the rest
 * keep their defaults). Returns RUDP_E_INVALID, *out untouched, when
 * struct_size is below oldest_size or above sizeof(rudp_config).
 * rudp_host_create() passes RUDP_CONFIG_SIZE_FIRST; tests pass a smaller
 * one to act as a library that has grown past the program. */
int host_config_take(const rudp_config *caller, size_t oldest_size, rudp_config *out);

/* log.c: to the application's log callback when level < log_level_max. */
void host_log(struct rudp_host *h, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* offline.c */
void offline_on_datagram(struct rudp_host *h, const struct sockaddr_storage *from_norm,
			 const struct rudp_io_datagram *d);
int offline_client_start(struct rudp_host *h, struct rudp_peer *p);
void offline_client_timer(struct rudp_host *h, struct rudp_peer *p);
void host_send_raw(struct rudp_host *h, const struct rudp_peer *p_or_null,
		   const struct sockaddr_storage *to_norm, const uint8_t *data, size_t len);

/* peer_life.c: a peer's life. new: makes a peer and enters it in the
 * table (NULL without memory, with the host at max_host_memory, or when
 * the host's socket cannot reach the address); go_online: gives it its conn (0, or RUDP_E_NOMEM and the peer
 * is closed); close: ends it, with a DISCONNECT event unless silent; free:
 * frees it and what it owns; free_seen_dead: frees closed peers whose
 * DISCONNECT event the application has had. */
struct rudp_peer *host_peer_new(struct rudp_host *h, const struct sockaddr_storage *norm, uint32_t sock,
				bool outgoing);
int host_peer_go_online(struct rudp_host *h, struct rudp_peer *p, enum rudp_conn_role role, uint16_t mtu);
void host_peer_close(struct rudp_host *h, struct rudp_peer *p, int reason);
void host_peer_free(struct rudp_host *h, struct rudp_peer *p);
void host_free_seen_dead(struct rudp_host *h);
/* host.c: the earliest deadline of the host's timers, peers' and pings';
 * UINT64_MAX with none. */
uint64_t host_next_deadline_us(const struct rudp_host *h);

/* host.c */
void host_peer_touch(struct rudp_host *h, struct rudp_peer *p);
void host_mark_dirty_push(struct rudp_host *h, struct rudp_peer *p);
/* Puts p on the list to flush; the flag test inline, as most sends find
 * their peer on it already or push it once. */
static inline void host_mark_dirty(struct rudp_host *h, struct rudp_peer *p)
{
	if (!p->dirty)
		host_mark_dirty_push(h, p);
}
/* host_mark_dirty for a peer known to be online (never dead): all inline,
 * for rudp_send_many, which pushes each of its peers once. */
static inline void host_mark_dirty_online(struct rudp_host *h, struct rudp_peer *p)
{
	if (p->dirty)
		return;
	p->dirty = true;
	p->dirty_next = h->dirty_head;
	h->dirty_head = p;
}
void host_flush_dirty(struct rudp_host *h);
/* One round of the service loop's work (flush, read, timers), first
 * waiting up to wait_us when nothing is due; everything is sent when it
 * returns (rudp_ping). Returns 0 or RUDP_E_SYSTEM. */
int host_pump(struct rudp_host *h, uint64_t wait_us);

/* What a send may carry besides the message (send.c): a lifetime end in
 * host time (unreliable kinds; 0: none) and a shared body the conn
 * references instead of copying data (NULL: none). A peer with a send
 * policy copies the message into the policy's stage and keeps no
 * lifetime: the policy's unreliable reserve bounds what waits there. */
struct host_send_extra {
	uint64_t expire_us;
	struct shared_body *shared;
};

/* send_policy.c: the peer's conn through its send policy when it has one
 * (straight to the conn without one, or without the module), at the
 * host's now_us; the peer must be online. send: rudp_conn_send_ex's
 * codes, and the policy's refusal as the public RUDP_E_WOULD_BLOCK;
 * arguments as host_send_check_args (send.c) checked them; on 0 without
 * a policy, *grew is what rudp_conn_send_memory_bytes grew by (untouched
 * with one); flush: as rudp_conn_flush, and queues the WRITABLE event the policy
 * asks for; disconnect: as rudp_conn_disconnect, behind what the policy
 * holds. */
int host_peer_send(struct rudp_peer *p, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel,
		   uint8_t priority, const struct host_send_extra *extra, uint64_t *grew);
void host_peer_flush(struct rudp_host *h, struct rudp_peer *p);
void host_peer_disconnect(struct rudp_peer *p);
/* send_policy.c (no-ops without the module). attach: gives the peer's new
 * conn the policy its options ask for (0 or RUDP_E_NOMEM); closing: right
 * before the conn is destroyed; free: after that, when the peer is freed. */
int host_peer_policy_attach(struct rudp_peer *p);
void host_peer_policy_closing(struct rudp_peer *p);
void host_peer_policy_free(struct rudp_peer *p);
/* The work of one rudp_service() call short of handing out events: flush,
 * read, timers, and (want_events) waiting up to timeout_ms for an event.
 * rudp_service() and rudp_recv_batch() (batch.c) differ only in what they
 * pop afterwards. Returns 0 or a negative RUDP_E_* code. */
int host_service_run(struct rudp_host *h, int timeout_ms, bool want_events);

/* budget.c: the host-wide memory total, kept up to date per peer (each
 * peer's share is read again, O(1), after every call that may change it),
 * plus the event queue's message bytes and the live rudp_send_many bodies
 * (each once, however many peers' queues share it). update: after a send or a flush of
 * the peer; forget: its conn is gone (or the peer is freed), also leaving
 * the refused list; over: at or past max_host_memory (never with 0);
 * refuse: p was refused a send, owe it a WRITABLE event; signal: under the
 * budget again, queue the owed events (one per peer). */
void budget_peer_update(struct rudp_host *h, struct rudp_peer *p);
/* grew: budget_peer_update when the caller knows the peer's share grew by
 * exactly bytes since its last read (a conn call that says what it took),
 * without reading it again; what else changed is still taken at the next
 * update, as the difference from the share then. */
static inline void budget_peer_grew(struct rudp_host *h, struct rudp_peer *p, uint64_t bytes)
{
	p->budget_bytes += bytes;
	h->budget.peers_bytes += bytes;
}
void budget_peer_forget(struct rudp_host *h, struct rudp_peer *p);
static inline bool budget_over(const struct rudp_host *h)
{
	return h->cfg.max_host_memory &&
	       h->budget.peers_bytes + h->events.bytes + h->shared_bodies.live_bytes >=
		       h->cfg.max_host_memory;
}
void budget_refuse(struct rudp_host *h, struct rudp_peer *p);
void budget_signal_writable(struct rudp_host *h);
/* The total the budget compares, bytes. */
static inline uint64_t budget_total(const struct rudp_host *h)
{
	return h->budget.peers_bytes + h->events.bytes + h->shared_bodies.live_bytes;
}

/* The structs the library fills grow at their end (docs/api.md, "ABI and
 * soname"), so a getter takes the caller's sizeof. fill(obj, dst) writes
 * the whole current struct: in place for a caller with all of it, else
 * into scratch (ours bytes), of which the caller gets its size's prefix.
 * Returns 0, or RUDP_E_INVALID for a NULL obj or out or a size of 0. */
static inline int host_sized_get(const void *obj, void *out, size_t size, size_t ours, void *scratch,
				 void (*fill)(const void *obj, void *dst))
{
	if (!obj || !out || size == 0)
		return RUDP_E_INVALID;
	fill(obj, size >= ours ? out : scratch);
	if (size < ours)
		memcpy(out, scratch, size);
	return 0;
}

#endif
