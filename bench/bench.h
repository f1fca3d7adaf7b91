/* SPDX-License-Identifier: MIT */
/*
 * rudp-bench internals shared by the orchestrator and the C drivers.
 *
 * Every column runs the same echo protocol. A message of `size` bytes is
 *
 *   [0]      0xfe (a Bedrock-style game id: never a RakNet control id)
 *   [1]      stream: 0 the workload's messages, 1 and 2 the game stream's
 *            unreliable-sequenced and reliable-ordered messages (path rows)
 *   [2..3]   zero
 *   [4..7]   connection id, u32 little-endian
 *   [8..11]  message id within the connection, u32 LE, from 0, in send order
 *   [12..15] size, u32 LE
 *   [16..23] client send time, CLOCK_MONOTONIC ns, u64 LE
 *   [24..31] XXH3-64 of bytes [32..size) seeded with XXH3-64 of bytes [0..24)
 *   [32..39] a value mixed from (connection, message id): a stale echo of
 *            an older slot never passes
 *   [40..]   random filler
 *
 * Stream transports (TCP, the QUIC stream) put a 4-byte LE length before
 * each message. The client verifies every echo (wl_deliver): length,
 * marker, connection id, message id == the next expected one (order, no
 * loss, no duplicate) and the hash. One failure ends the run with an error.
 * A game stream's messages have ids of their own per stream: the reliable
 * one is checked like the workload's, the unreliable-sequenced one may lose
 * messages but never goes back or repeats one. Their send time is the tick
 * they were due at, so an echo's RTT includes any wait to be sent.
 */
#ifndef RUDP_BENCH_H
#define RUDP_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_HDR 40 /* bytes of the header above; the smallest message */
#define BENCH_MARK 0xfe
#define BENCH_MAX_SIZE (1u << 20)
#define BENCH_MAX_CONNS 8192
#define BENCH_MAX_WORKERS 64 /* server worker threads (sockets on one port) */
#define BENCH_MAX_WAIT_SPIN_US 1000 /* librudp's own bound on rudp_config.io.wait_spin_us */

/* drv_rudp.c implements the rudp-batch and policy columns (they still need
 * RUDP_HAVE_BATCH_API / RUDP_HAVE_SEND_POLICY_API from rudp.h). */
#define BENCH_RUDP_BATCH_IMPL 1
#define BENCH_RUDP_POLICY_IMPL 1

/* Workload kinds, as named in JSON and on the command line. WL_PATH: bulk
 * echoes over an emulated bottleneck (a warm-up, then a windowed burst on
 * every connection; no RTT samples of its own), optionally with a game
 * stream on connection 0. WL_STREAM: one connection's warm-up, then only
 * the game stream's reliable-ordered messages, `messages` ticks of them,
 * each echo's RTT from its tick a sample. */
enum wl_kind { WL_SINGLE, WL_SPARSE, WL_MANY, WL_LOADED, WL_PATH, WL_STREAM, WL_KINDS };

/* Message streams (byte [1] of a message). */
enum wl_stream { WL_STREAM_BULK, WL_STREAM_GAME_UNRELIABLE, WL_STREAM_GAME_RELIABLE };
#define WL_GAME_SLOTS                                                                                        \
	256 /* game messages built and not yet handed to the transport, per stream (4 s at 60 Hz) */

/* Fault a client driver injects into its delivery path (tests only). */
enum wl_fault { FAULT_NONE, FAULT_CORRUPT, FAULT_REORDER, FAULT_DROP };

/* What one client process runs. */
struct wl_params {
	enum wl_kind kind;
	uint32_t size; /* bytes per message, >= BENCH_HDR */
	uint32_t conns; /* connections */
	uint32_t window; /* messages awaiting their echo per connection in the burst */
	uint32_t warmup; /* sequential echoes per connection before timing (untimed) */
	uint32_t samples; /* sequential RTT samples per connection (single, sparse) */
	uint64_t messages; /* burst messages in total over all connections; stream: game ticks */
	uint32_t mtu; /* datagram budget the driver should use (its own meaning) */
	uint32_t stall_ms; /* no verified echo for this long: the run fails */
	uint32_t game_hz; /* game stream ticks per second on connection 0; 0: none */
	uint32_t game_size; /* bytes of each game message, >= BENCH_HDR */
	enum wl_fault fault;
};

/* One stream of the game (unreliable-sequenced or reliable-ordered). */
struct wl_game_stream {
	uint8_t *slots; /* WL_GAME_SLOTS of (4 + game_size) bytes */
	uint32_t sent, received;
	uint32_t next; /* reliable: the id due next; sequenced: one past the newest seen */
	float *rtt_us; /* echo RTT from the tick */
	uint32_t rtt_n, rtt_cap;
};

/* The game stream: each tick, one message on each stream, from the burst's
 * start until connection 0's workload messages are all verified. */
struct wl_game {
	bool ticking, stopped; /* ticks running; ticks over (connection 0's workload is done) */
	uint64_t period_ns, next_tick_ns, tick_ns, stop_ns;
	int due; /* streams of the current tick still to build: 2, 1 or 0 */
	struct wl_game_stream s[2]; /* [0] unreliable-sequenced, [1] reliable-ordered */
};

/* Per connection engine state. */
struct wl_conn {
	uint8_t *slots; /* window slots of (4 + size) bytes: LE length, then the message */
	uint32_t sent, done; /* messages sent / verified */
	uint32_t pre; /* sequential messages (warmup + samples) before the burst */
	uint32_t total; /* pre + this connection's burst share */
	bool queued; /* on the ready list */
	uint64_t connect_start_ns, connect_ns;
};

struct wl {
	struct wl_params p;
	uint32_t slot_count; /* slots per connection: max(window, 1) */
	uint32_t slot_bytes;
	struct wl_conn *c;
	uint32_t *ready; /* ring of connection indexes that may send */
	uint32_t ready_head, ready_len;
	uint32_t at_barrier; /* connections done with their sequential phase */
	bool burst; /* all connections passed the barrier */
	uint64_t burst_start_ns, end_ns;
	uint64_t verified, burst_verified, total;
	uint64_t last_progress_ns;
	float *rtt_us; /* samples kept for percentiles */
	uint64_t rtt_n, rtt_cap;
	/* fault injection state */
	uint64_t fault_at; /* delivered-message index on connection 0 that the fault hits */
	uint8_t *fault_hold;
	uint32_t fault_hold_len;
	bool fault_holding;
	/* librudp client columns: what the client's peers resent and the
	 * duplicates they dropped (the server's resends that had arrived
	 * already), summed at the end; -1 for other columns. */
	int64_t frames_resent, duplicates_in;
	/* frames_resent by cause (rudp_peer_stats): NACK, inferred, tail
	 * probe, timeout; printed on the RESULT line for runs by hand. */
	int64_t resent_by_cause[4];
	/* of frames_resent, those an older copy's ACK showed unneeded */
	int64_t resent_spurious;
	/* Bytes the transport resent, both directions, where the client's
	 * driver knows them (TCP_INFO, KCP's xmit); -1 otherwise. */
	int64_t resent_bytes;
	/* Bytes the client's transport sent over the run, resends and its own
	 * headers included as far as the driver can count them (librudp: UDP
	 * payload; TCP: tcpi_bytes_sent); -1 where it cannot. */
	int64_t wire_bytes;
	/* Path rows: each connection's verified burst messages at the moment
	 * the first connection finished its burst (Jain's index). */
	uint32_t *first_done;
	bool first_done_taken;
	struct wl_game game;
	bool game_open; /* a game stream still awaits echoes */
	char err[256];
};

uint64_t bench_now_ns(void);

/* Sets up the engine; returns 0 or -1 with w->err set. */
int wl_init(struct wl *w, const struct wl_params *p);
void wl_free(struct wl *w);

/* Next connection allowed to send, or -1. A connection popped here must
 * be given wl_next() until it returns NULL (it is re-queued as echoes
 * free its window). */
int wl_pop_ready(struct wl *w);

/* Builds connection c's next message if its window and phase allow one:
 * returns a pointer to the 4-byte LE length prefix followed by the message
 * (4 + size bytes, stable until that message's echo is verified), else NULL. */
uint8_t *wl_next(struct wl *w, uint32_t c);

/* True while a connection may still send (used by drivers that loop per
 * connection instead of using the ready list). */
bool wl_can_send(const struct wl *w, uint32_t c);

/* Verifies one echo that arrived on connection c. Returns 0, or -1 with
 * w->err describing the mismatch: the run has failed. */
int wl_deliver(struct wl *w, uint32_t c, const uint8_t *data, size_t len);

/* The run is complete (every message verified, the game stream done). */
static inline bool wl_finished(const struct wl *w)
{
	return w->verified == w->total && !w->game_open;
}

/* The game stream's next message when a tick is due: a pointer to its
 * 4-byte LE length and the message (stable for WL_GAME_SLOTS more game
 * messages of that stream), its stream in *stream; NULL when none is due. */
uint8_t *wl_game_next(struct wl *w, enum wl_stream *stream);

/* Milliseconds (rounded up) until the next game tick, at most max_ms: the
 * longest a driver may wait for input without making the stream late. */
int wl_wait_ms(const struct wl *w, int max_ms);

/* Fails the run when nothing was verified for stall_ms; also ends the
 * game stream's wait for unreliable echoes that were lost. */
int wl_check_stall(struct wl *w);

/* Marks connection c as connected now (handshake timing). */
void wl_connected(struct wl *w, uint32_t c);

/* Prints the RESULT line the orchestrator parses. */
void wl_report(struct wl *w);

/* Client and server entry points of the C drivers. */
struct drv_server_opts {
	const char *bind; /* "ADDR:PORT" */
	uint32_t mtu;
	uint32_t conns_hint; /* expected connections (sizes tables) */
	uint32_t workers; /* threads, each with its own socket on bind (SO_REUSEPORT when > 1) */
	int ready_fd; /* "ready\n" once listening, the summary at exit; -1: stderr */
};

/* One server worker: a thread with its own socket(s) and connections, and
 * what it served. Only its own thread writes it until it is joined. */
struct bench_worker {
	unsigned index;
	void *drv; /* the driver's state for this worker */
	uint64_t conns; /* connections it accepted; UINT64_MAX: the column has none */
	uint64_t echoes; /* messages it echoed */
	/* Bytes its transport resent (TCP_INFO, KCP's xmit, librudp's
	 * counters), where the driver knows them; -1 otherwise. */
	int64_t resent_bytes;
	int rc; /* nonzero: it failed (and stopped the others) */
};

/* Runs fn for workers w[0..n): w[0] on the calling thread, the others on
 * threads of their own. A worker that fails sets bench_stop so that the
 * others end too. Returns the first nonzero rc, else 0. */
int bench_run_workers(struct bench_worker *w, unsigned n, int (*fn)(struct bench_worker *));

/* Writes "served workers=N conns=a,b,.. echoes=x,y,..[ resent_bytes=R]\n"
 * (the orchestrator records it per run; R, the workers' sum, only when
 * every worker knows its own) to fd, or to stderr when fd < 0, and closes
 * fd. */
void bench_server_summary(int fd, const struct bench_worker *w, unsigned n);

/* Why the enet column's server has one worker (report, --list, stderr). */
#define BENCH_ENET_ONE_WORKER                                                                                \
	"libenet binds its socket inside enet_host_create(), so SO_REUSEPORT cannot be set before bind"

/* Sets SO_REUSEPORT so that every worker's socket can bind the same port;
 * the kernel then hashes each flow (TCP connection, UDP 4-tuple) to one of
 * them. Returns 0 or -1 (errno). */
int bench_reuseport(int fd);

struct drv_client_opts {
	const char *connect; /* "ADDR:PORT" */
};

typedef int (*drv_server_fn)(const char *column, const struct drv_server_opts *o);
typedef int (*drv_client_fn)(const char *column, const struct drv_client_opts *o, struct wl *w);

int tcp_server(const char *column, const struct drv_server_opts *o);
int tcp_client(const char *column, const struct drv_client_opts *o, struct wl *w);
int udp_server(const char *column, const struct drv_server_opts *o);
int udp_client(const char *column, const struct drv_client_opts *o, struct wl *w);
int rudp_server_drv(const char *column, const struct drv_server_opts *o);
int rudp_client_drv(const char *column, const struct drv_client_opts *o, struct wl *w);
int enet_server_drv(const char *column, const struct drv_server_opts *o);
int enet_client_drv(const char *column, const struct drv_client_opts *o, struct wl *w);
int kcp_server_drv(const char *column, const struct drv_server_opts *o);
int kcp_client_drv(const char *column, const struct drv_client_opts *o, struct wl *w);

/* Helpers for drivers. */
/* Set by SIGTERM/SIGINT in driver processes, or by a failing server worker;
 * atomic because every worker thread polls it. */
extern atomic_int bench_stop;
/* --wait-spin-us N: rudp_config.io.wait_spin_us for the rudp columns' hosts
 * (both halves); -1, the default, leaves librudp's own default. */
extern int bench_wait_spin_us;
/* --tcp-cc NAME: TCP_CONGESTION for the TCP columns' sockets (both halves);
 * NULL, the default, leaves the namespace's default. */
extern const char *bench_tcp_cc;
/* Sets TCP_CONGESTION to bench_tcp_cc on a TCP socket (when given); 0 or
 * -1 (errno). */
int bench_set_tcp_cc(int fd);
/* The same with the algorithm cc (NULL or "": the socket keeps its own). */
int bench_set_tcp_cc_name(int fd, const char *cc);
/* Bytes TCP resent on this socket (TCP_INFO tcpi_bytes_retrans), -1 if the
 * kernel does not say. */
int64_t bench_tcp_bytes_retrans(int fd);
/* --cc none|aimd|rate: rudp_config.congestion_control for the rudp
 * columns' hosts (both halves); -1, the default, leaves librudp's own. */
extern int bench_cc;
/* "none", "aimd", "rate" as the RUDP_CC_ value; -1 for anything else. */
int bench_cc_from_name(const char *name);
/* Bytes TCP sent on this socket, resends included (TCP_INFO
 * tcpi_bytes_sent), -1 if the kernel does not say. */
int64_t bench_tcp_bytes_sent(int fd);
/* SIGINT and SIGTERM call handler (no SA_RESTART: a blocked call returns
 * EINTR, so a loop sees its stop flag). */
void bench_on_stop_signals(void (*handler)(int));
/* bench_on_stop_signals setting bench_stop, and SIGPIPE ignored. */
void bench_install_stop_handler(void);
int bench_parse_addr(const char *s, void *sin_out); /* IPv4 "a.b.c.d:port" into sockaddr_in */
void bench_signal_ready(int fd); /* writes "ready\n"; fd stays open for the summary */
/* Every UDP column's sockets get the same kernel buffers (SO_*BUFFORCE
 * as root, else as much as the sysctl caps allow): 4 MiB each way. */
#define BENCH_UDP_SOCKBUF (4 * 1024 * 1024)
void bench_udp_buffers(int fd);
/* This process's peak resident set (VmHWM of /proc/self/status) in KiB, or
 * -1. Reported by each half at exit: wait4()'s ru_maxrss would also count
 * the pages of rudp-bench itself, which the child held between fork() and
 * exec() (Linux keeps the larger of the two across exec). */
long bench_self_hwm_kib(void);
void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

#endif
