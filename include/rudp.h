/* SPDX-License-Identifier: MIT */
/**
 * @file rudp.h
 * @brief librudp: reliable messaging over UDP, wire-compatible with RakNet.
 *
 * A *host* owns one UDP socket, a table of *peers* (connections) and the
 * timers that drive them. The application calls rudp_service() in its loop:
 * it reads datagrams, runs retransmission and keepalive timers, sends what
 * is due, and returns events (a peer connected, a message arrived, a peer
 * disconnected).
 *
 * Threading: a host and every peer on it belong to one thread at a time. No
 * function locks; call nothing on a host from two threads at once. A
 * multi-core server runs one host per thread, all bound to one port with
 * rudp_config.reuse_port (SO_REUSEPORT): the kernel keeps each client on
 * one socket, so the hosts share nothing (docs/io.md).
 *
 * Errors: functions that can fail return a negative RUDP_E_* code (see
 * rudp_strerror()); none of them aborts on bad arguments.
 *
 * Lifetimes: data in a RUDP_EVENT_RECEIVE event points into the host's
 * buffers and stays valid until the next call of rudp_service() (or
 * rudp_host_destroy()) on that host; copy what you keep. The same holds for
 * the data and address of RUDP_EVENT_PONG and RUDP_EVENT_PING_TIMEOUT
 * events. A peer handle stays
 * valid until the rudp_service() call after the one that returned its
 * RUDP_EVENT_DISCONNECT event.
 */
#ifndef RUDP_H
#define RUDP_H

#include <stddef.h>
#include <stdint.h>

#include "rudp_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RUDP_API __attribute__((visibility("default")))
#else
#define RUDP_API
#endif

/** Opaque host: a socket, its peers and timers. */
typedef struct rudp_host rudp_host;
/** Opaque peer: one connection on a host. */
typedef struct rudp_peer rudp_peer;

/** Error codes. Every failing call returns one of these (all negative). */
enum rudp_error {
	RUDP_OK = 0,
	RUDP_E_INVALID = -1, /**< a bad argument (NULL, out of range, malformed address) */
	RUDP_E_NOMEM = -2, /**< memory allocation failed; rudp_connect(): also the host at max_host_memory */
	RUDP_E_SYSTEM = -3, /**< a system call failed; errno holds the reason */
	RUDP_E_ADDRESS = -4, /**< an address string could not be parsed or resolved */
	RUDP_E_PEERS_FULL = -5, /**< max_peers reached */
	RUDP_E_NOT_CONNECTED = -6, /**< the peer is not (or no longer) connected */
	RUDP_E_TOO_LARGE = -7, /**< message larger than max_message_size */
	RUDP_E_QUEUE_FULL = -8, /**< the peer's send queue is at max_queue_bytes; retry after service */
	RUDP_E_UNSUPPORTED = -9, /**< not built into this library or not available here */
	RUDP_E_RESERVED_ID = -10, /**< message is empty or starts with a RakNet control id */
	RUDP_E_WOULD_BLOCK = -11, /**< send policy over its soft budget, or the host at max_host_memory; wait
				     for RUDP_EVENT_WRITABLE */
	RUDP_E_PINGS_FULL = -12, /**< rudp_ping_start(): rudp_config.max_pings pings are outstanding */
	RUDP_E_ALREADY_CONNECTED = -13, /**< rudp_connect(): the host has a peer at that address already */
};

/** Returns a static English description of an error code. Never NULL. */
RUDP_API const char *rudp_strerror(int error);

/** RakNet reliabilities, as on the wire. */
enum rudp_reliability {
	RUDP_UNRELIABLE = 0, /**< may be lost, duplicated never */
	RUDP_UNRELIABLE_SEQUENCED = 1, /**< may be lost; older ones than the newest seen are dropped */
	RUDP_RELIABLE = 2, /**< delivered exactly once, in any order */
	RUDP_RELIABLE_ORDERED = 3, /**< delivered exactly once, in send order per channel */
	RUDP_RELIABLE_SEQUENCED = 4, /**< arrives unless superseded; never goes backwards */
};

/** Number of order channels (0..31) for ordered and sequenced messages. */
#define RUDP_CHANNELS 32

/** The built-in network simulator (rudp_config.sim): bad-network
 * conditions applied by the host itself to every datagram it sends and
 * receives (offline handshake, pings and connected traffic alike), so an
 * application can be tested under loss, delay and a slow link without root
 * or netem. Every value applies to each direction on its own: a host with
 * latency_ms L delays what it sends by L and what it receives by L, so its
 * round trips grow by 2L; loss_percent 5 drops 5 % of each direction. All
 * zero (the default) is off and costs nothing. Outcomes are drawn from a
 * generator seeded with seed, so a run is repeatable given the seed and the
 * order of events. rudp_host_create() returns RUDP_E_INVALID for a value
 * out of its range. What the simulator did is counted in rudp_host_stats
 * (sim_*). docs/api.md, "Network simulator", describes the model. */
typedef struct rudp_sim_config {
	/** Datagrams dropped at random, in percent of each direction. 0..100. */
	float loss_percent;
	/** Delay added to each datagram, each direction. 0..10000 ms. */
	uint32_t latency_ms;
	/** Up to this much more delay, uniform, per datagram. Jitter alone
	 * never reorders: a datagram is not released before one that went
	 * into the simulator ahead of it in the same direction. 0..10000 ms. */
	uint32_t jitter_ms;
	/** Datagrams delivered twice, in percent; the copy follows within
	 * jitter_ms (at least at the next service round). 0..100. */
	float duplicate_percent;
	/** Datagrams held back an extra 1..(jitter_ms + 10) ms, in percent,
	 * so that datagrams sent after them overtake them. 0..100. */
	float reorder_percent;
	/** A link of this many kbit/s (1000 bit/s) in each direction: each
	 * datagram takes its UDP payload's bytes x 8 / rate to leave, queued
	 * behind the ones before it. 0: no limit. At most 100000000. */
	uint32_t rate_kbps;
	/** Bytes the rate limit may queue per direction; a datagram that does
	 * not fit is dropped (drop-tail), like a router's full buffer. 0 means
	 * 65536; else 1536..67108864. */
	uint32_t rate_queue_bytes;
	/** Datagrams the simulator may hold at once (both directions; each
	 * takes about 1.6 KiB while held, and the store grows by doubling as
	 * needed); more are dropped. 0 means 4096; else 16..1048576. */
	uint32_t max_held_datagrams;
	/** Seed of the simulator's random generator; 0 uses a fixed one. */
	uint64_t seed;
} rudp_sim_config;

/** I/O backend tuning (rudp_config.io): how the host's sockets are read
 * and written. None of it changes what goes on the wire; docs/io.md and
 * docs/tuning.md say when to change what. rudp_host_create() returns
 * RUDP_E_INVALID for a value out of its range. Like rudp_sim_config, this
 * struct is embedded in rudp_config and so never changes while the soname
 * stays: a new I/O setting is appended to rudp_config itself (see there). */
typedef struct rudp_io_config {
	/** I/O backend, an rudp_io_backend: RUDP_IO_AUTO (default) uses
	 * io_uring when built in and allowed, else recvmmsg/sendmmsg. The
	 * environment variable RUDP_IO=uring|mmsg overrides this field
	 * (RUDP_IO=auto or unset leaves it in charge). A forced uring that
	 * cannot be used makes rudp_host_create() fail with
	 * RUDP_E_UNSUPPORTED; auto falls back and logs why, once. */
	int backend;
	/** Datagrams read or written per system call. 1..1024, default 32.
	 * Memory grows with it: each host keeps up to 2 x batch receive
	 * buffers with io_uring (at least 64; see rx_buffers), batch with
	 * recvmmsg, and room for as many outgoing datagrams of up to 1.5 KiB
	 * (io_uring packs them by length, so a flush makes resident only the
	 * bytes it sends); raise it for servers with many busy peers. */
	uint32_t batch;
	/** Most io_uring receive buffers a host keeps. With udp_gro (default)
	 * a buffer is 68 KiB of address space (reserved, not committed) and
	 * holds a run of datagrams; the pages a run fills become memory. 8 are
	 * provided at first, doubled only when the kernel keeps running out of
	 * them on single datagrams (many peers sending alone). Without GRO a
	 * buffer is about 1.7 KiB and holds one datagram; 16 at first, doubled
	 * each time the kernel runs out. 0 (default) means 2 x batch, at
	 * least 64, which absorbs a full window of MTU-sized datagrams from one
	 * peer, or a datagram from each of as many peers, between two calls.
	 * 16..32768, rounded up to a power of two. A lower cap saves memory on
	 * hosts that receive little, paid for with an extra system call
	 * whenever a burst outgrows the buffers (the rest waits in the socket's
	 * receive buffer; nothing is dropped by librudp). Unused by the
	 * recvmmsg backend. */
	uint32_t rx_buffers;
	/** Nonzero (default 1): with the io_uring backend, consecutive datagrams
	 * of one flush to the same peer with the same length (a window of equal
	 * messages, the fragments of a large one) go to the kernel as one UDP
	 * GSO send (UDP_SEGMENT), which routes and builds them once and splits
	 * them at the end; a shorter datagram may close such a run. The kernel
	 * needs IORING_FEAT_SUBMIT_STABLE (5.5+); when it refuses a GSO send
	 * (a device that cannot segment, a path MTU below the datagrams) the
	 * host sends one by one from then on. 0 never coalesces. The mmsg
	 * backend always sends one by one. */
	int udp_gso;
	/** Nonzero (default 1): with the io_uring backend the socket asks for
	 * UDP GRO (UDP_GRO), so a run of equal datagrams from one sender (a
	 * librudp peer's GSO send, which loopback delivers unsplit; a burst a
	 * NIC coalesced) is read as one completion of up to 64 KiB and split
	 * back into datagrams without copying. The kernel's per-datagram
	 * receive work is then paid once per run. Each receive buffer is then
	 * 68 KiB of address space, of which only the pages written become
	 * memory (docs/tuning.md). 0 keeps one datagram per buffer. The mmsg
	 * backend never asks for GRO. */
	int udp_gro;
	/** Microseconds a host may watch for input before it sleeps, when a
	 * call has nothing to do but wait (both backends: io_uring looks at
	 * shared memory, the recvmmsg backend asks the kernel with a poll
	 * that does not block). Input that comes within it is taken
	 * without the sleep and wake-up, which cost several microseconds each
	 * (more in a VM, where waking a CPU traps to the hypervisor): in a
	 * stream of messages the next batch is often that close, and a
	 * ping-pong whose answers come within it never sleeps (its thread
	 * stays busy while it lasts). A host whose watches keep ending empty
	 * (a slower ping-pong, a quiet server) stops watching for a while
	 * (after 4 empty watches in a row, the next 64 waits sleep at once),
	 * so this costs little CPU where it does not help. The default
	 * covers a lockstep exchange whose other side works for a few tens
	 * of microseconds (a 64-message window of small messages echoed
	 * back), where sleeping put a wake-up on the path of every round: on
	 * a 2-CPU VM that was a third of the time. 0 always sleeps at once
	 * (a host that shares its core with other busy threads); at most
	 * 1000; default 50 (docs/tuning.md). */
	uint32_t wait_spin_us;
	/** Socket buffer sizes to request (SO_RCVBUF / SO_SNDBUF) for every
	 * socket of the host; 0 keeps the system default. Default 4 MiB each.
	 * They are here because they size the same path as batch and
	 * rx_buffers: what the kernel holds between two reads. */
	uint32_t socket_rcvbuf, socket_sndbuf;
} rudp_io_config;

/** Host configuration. Always start with rudp_config_init(), then change
 * fields.
 *
 * How it grows without breaking programs built against an older header:
 * fields are only ever appended at the end, never removed, reordered or
 * resized (the embedded rudp_io_config and rudp_sim_config never change
 * either), and the struct never ends in padding (a field that would start
 * inside the old tail padding comes after it), so every older layout is a
 * prefix of the current one. rudp_config_init() stamps struct_size with
 * sizeof(rudp_config) as the program was compiled; rudp_host_create()
 * starts from the library's defaults and takes only the caller's first
 * struct_size bytes, so the fields the program does not know keep their
 * defaults. docs/api.md, "ABI and soname", has the whole rule. */
typedef struct rudp_config {
	/** Bytes of this struct the caller knows: set by rudp_config_init(),
	 * never by hand. rudp_host_create() returns RUDP_E_INVALID when it is
	 * 0 (a config not made with rudp_config_init()), smaller than the first
	 * published layout (librudp 0.2) or larger than this library's
	 * struct (a program built against a newer header). */
	size_t struct_size;
	/** Address to bind, "IPv4:port" or "[IPv6]:port"; NULL or "" for an
	 * ephemeral client socket (dual-stack IPv6 when available). Port 0
	 * picks a free port. An address another socket holds is refused
	 * (RUDP_E_SYSTEM, errno EADDRINUSE) unless reuse_port is set on
	 * both. Default NULL. */
	const char *bind_address;
	/** Peers (incoming plus outgoing) the host will hold. Default 1024. */
	uint32_t max_peers;
	/** Largest RakNet MTU offered or accepted (counts 28 B of IPv4/UDP
	 * header, as RakNet does). 576..1500, default 1492. */
	uint16_t mtu;
	/** RakNet protocol version sent by connecting clients. Servers accept
	 * protocol_min..protocol_max. Default 11, range 6..11. */
	uint8_t protocol_version;
	uint8_t protocol_min; /**< oldest protocol a server accepts, default 6 */
	uint8_t protocol_max; /**< newest protocol a server accepts, default 11 */
	/** This host's RakNet GUID; 0 picks a random one. Default 0. */
	uint64_t guid;
	/** Reliable frames in flight per peer. 1..4096, default 64. */
	uint32_t window_frames;
	/** Messages coalesced into one datagram. 1..64, default 8. */
	uint32_t max_frames_per_datagram;
	/** Largest message accepted for sending or receiving. Default 4 MiB. */
	uint32_t max_message_size;
	/** Bytes a peer may hold queued and unacknowledged. Default 32 MiB. */
	uint32_t max_queue_bytes;
	/** Fragments one incoming message may declare. Default 8192. */
	uint32_t max_split_count;
	/** Incomplete incoming split messages per peer. Default 32. */
	uint32_t max_split_ids;
	/** Bytes reserved for incomplete incoming split messages per peer. Default 8 MiB. */
	uint32_t max_reassembly_bytes;
	/** Out-of-order messages held per channel while waiting for a gap. Default 4096. */
	uint32_t max_order_hold;
	/** ACK/NACK records processed from one datagram. Default 256. */
	uint32_t max_ack_ranges;
	uint32_t rto_min_ms; /**< retransmission timeout floor, default 30 */
	uint32_t rto_max_ms; /**< retransmission timeout ceiling, default 2000 */
	uint32_t rto_initial_ms; /**< before any RTT sample, default 200 */
	uint32_t keepalive_ms; /**< connected ping after this long idle, default 2000 */
	uint32_t timeout_ms; /**< peer declared dead after this long silent, default 10000 */
	uint32_t connect_timeout_ms; /**< whole handshake must finish in this, default 5000 */
	uint32_t disconnect_linger_ms; /**< local disconnect waits this long for acks, default 2000 */
	/** I/O backend and its buffers; see rudp_io_config. */
	rudp_io_config io;
	/** Events queued inside the host before the oldest messages must be
	 * collected; receiving pauses beyond. Default 65536. See also
	 * max_pending_event_bytes. */
	uint32_t max_pending_events;
	/** Optional log sink (level: 0 error, 1 warning, 2 info, 3 debug). */
	void (*log)(void *userdata, int level, const char *message);
	void *log_userdata;
	/** Smallest level not logged; default 3 (debug is dropped). */
	int log_level_max;
	/** Nonzero sets SO_REUSEPORT on a bound socket so several hosts (one
	 * per thread) can share bind_address; the kernel spreads clients over
	 * them by address hash. Default 0. */
	int reuse_port;
	/* Hostile-input limits (docs/security.md lists them all with their
	 * reasons). Incoming handshakes are "pending" from open connection
	 * request 2 until the online handshake finishes. */
	/** Pending incoming handshakes, host-wide. When full, the oldest
	 * pending handshake is dropped for the new one. At least 1; more than
	 * max_peers acts as max_peers. Default 256. */
	uint32_t max_pending_handshakes;
	/** Pending incoming handshakes from one IP address (any port; an IPv6
	 * /64 counts as one address); more are refused with "no free incoming
	 * connections". At least 1, default 8. */
	uint32_t max_pending_per_address;
	/** A pending incoming handshake that has not finished in this long is
	 * dropped (silently: the application never saw it). Default 3000. */
	uint32_t handshake_timeout_ms;
	/** Offline requests (unconnected pings, open connection requests)
	 * answered per source IP address per second, with a burst of the same
	 * size; the rest are dropped unanswered (an IPv6 /64 counts as one
	 * address). 0 disables; at most 1000000. Default 64. */
	uint32_t offline_rate_per_address;
	/** Nonzero: open connection reply 1 sets RakNet's security flag with a
	 * stateless cookie (keyed hash of the client's address and a 10 s time
	 * bucket) that request 2 must echo, so spoofed sources never get a
	 * pending handshake. Needs clients that answer the flag (librudp and
	 * RakNet's C++ client do; many third-party clients do not). Default 0. */
	int handshake_cookies;
	/** Nonzero lets an unconnected pong carry the pong data even when that
	 * makes it larger than the ping that asked (a reflection amplifier).
	 * Default 0: a pong is never larger than its ping; when the data does
	 * not fit, the pong goes out without it. rudp_ping() pads its ping so
	 * librudp servers always fit their data; vanilla Bedrock clients send
	 * 33-byte pings, so a Bedrock-facing server that wants its MOTD listed
	 * sets this (offline_rate_per_address still bounds the traffic). */
	int pong_amplification;
	/** Nonzero: every rudp_connect() on this host opens a UDP socket of
	 * its own (the host socket's family and IP address, a port the kernel
	 * picks), closed when the peer is freed. RakNet knows a connection by
	 * its address and port, so a process that opens many connections to
	 * one server (a load generator, a bot swarm, a gateway) needs a port
	 * per connection; with this they all share one host: one io_uring
	 * ring and one pool of receive buffers, one send area, one event
	 * queue and timer heap, instead of a host (and a pool) each. The
	 * host's own socket still serves incoming connections and rudp_ping();
	 * a connection's socket accepts only its server's datagrams. On
	 * io_uring the shared pool may grow to two receive buffers per
	 * connection, rounded up to a power of two (unless io.rx_buffers caps
	 * it; 1.7 KiB each, resident once used), and UDP_GRO stays off.
	 * max_peers bounds the sockets too (each is a file descriptor: mind
	 * RLIMIT_NOFILE). Default 0: connections share the host's socket (one
	 * per remote address). */
	int socket_per_connect;
	/** An rudp_congestion_control: what limits how fast each peer sends.
	 * RUDP_CC_RATE (default) estimates each path's bottleneck bandwidth
	 * and minimum RTT from what the ACKs say was delivered, and paces
	 * every datagram carrying frames (reliable or not) at that rate, with
	 * at most about two bandwidth-delay products in flight: it keeps a
	 * bottleneck's queue short, shares it evenly with other such flows,
	 * and does not slow down for random loss (Wi-Fi) or for an RTT that
	 * rises because the endpoints are short of CPU. New reliable and
	 * unreliable frames take turns at the pacing, so neither kind waits
	 * for the other's backlog. RUDP_CC_NONE keeps only window_frames
	 * reliable frames in flight: on a path the sender cannot fill (a LAN,
	 * loopback) it is as fast, but on a narrower path it sends a whole
	 * window at once and a router's queue drops what it cannot hold
	 * (every drop is resent). RUDP_CC_AIMD holds reliable
	 * frames to a TCP-style window that shrinks on loss with a rising
	 * RTT; it lowers throughput when endpoints are CPU-bound. ACKs and
	 * tail-loss probes are never held back. docs/tuning.md says how to
	 * choose and what rudp_peer_stats then shows. */
	int congestion_control;
	/** Bytes of received messages queued inside the host, not yet
	 * collected by the application, before receiving pauses (as at
	 * max_pending_events): what the peers send meanwhile waits in the
	 * socket's kernel buffer, and what that drops is resent. A pause
	 * starts between two reads of up to io.batch datagrams, so the queue
	 * may pass the limit by one read's messages (a message larger than
	 * the limit still comes, alone). Why: max_pending_events counts
	 * messages, and a host whose application falls behind peers that send
	 * large messages would otherwise hold up to max_pending_events of
	 * them (each up to max_message_size). At least 1; default 64 MiB. */
	uint32_t max_pending_event_bytes;
	/** How far ahead of the highest datagram sequence number seen so far
	 * a peer's next datagram may be. One further ahead (forged from the
	 * peer's address, or corrupted on the path) is dropped and not
	 * adopted, so the genuine datagrams after it are not taken for old
	 * ones; a peer that really skipped that far (a long outage while it
	 * streamed) is followed again after three datagrams that go on from
	 * there. 64..4194304, default 1024. */
	uint32_t max_datagram_seq_jump;
	/** Pings started with rudp_ping_start() (and rudp_ping()) that may be
	 * outstanding at once, waiting for their pong or timeout; one more is
	 * refused with RUDP_E_PINGS_FULL. Each costs about 200 bytes while the
	 * host lives, allocated at the first ping. 1..65536, default 256 (a
	 * server browser pinging a list of servers at once). */
	uint32_t max_pings;
	/** The network simulator; all zero (default): off. See rudp_sim_config. */
	rudp_sim_config sim;
	/** Host-wide memory budget, bytes: what all peers' send queues (the
	 * send policy's staged messages included), split reassembly, received
	 * messages held for their turn on an ordered channel and the host's
	 * queue of received messages not yet collected hold together, kept as
	 * a running total (no scan). A send queue counts its messages' bytes
	 * and a record per queued frame; a rudp_send_many() body is counted
	 * once, however many peers' queues share it. At or past the budget
	 * (it is soft: below it one more message of any size is taken):
	 * - rudp_send() and the calls built on it return RUDP_E_WOULD_BLOCK
	 *   and queue nothing; once the total is below the budget again the
	 *   host returns exactly one RUDP_EVENT_WRITABLE for each peer so
	 *   refused (a peer the send policy refused too may get one from each);
	 * - new incoming connections are refused with RakNet's "no free
	 *   incoming connections" (a librudp client sees
	 *   RUDP_REASON_SERVER_FULL), and rudp_connect() returns RUDP_E_NOMEM
	 *   and starts nothing;
	 * - nothing already accepted is dropped: received data is still
	 *   acknowledged, reassembled and delivered, ACKs and resends go on.
	 * Per-peer limits (max_queue_bytes, max_reassembly_bytes,
	 * max_pending_event_bytes) still apply. 0: no limit. Default 256 MiB. */
	uint64_t max_host_memory;
	/** ACK thinning: a peer's data datagrams are acknowledged once this
	 * many have come since the last ACK, or ack_delay_us after the first
	 * of them, whichever is first (TCP's delayed ACK, QUIC's
	 * max_ack_delay). A gap in the peer's sequence, a late or repeated
	 * datagram and the handshake are answered at once, and NACKs are
	 * never held back, so loss recovery is not slowed. On a bottleneck
	 * carrying data both ways (an echo, a file both ways) an ACK per
	 * datagram costs about a tenth of the link; RakNet's own peers
	 * acknowledge on their update tick, so fewer ACKs are wire-legal.
	 * The peer is taken to do the same: tail-loss probes and the RTO
	 * wait ack_delay_us longer. 1 (or ack_delay_us 0): an ACK per
	 * datagram. 1..64, default 1 (off): with RUDP_CC_RATE, 2 gave 2-7 %
	 * more bulk goodput on a bottleneck but a longer standing queue for
	 * traffic beside the bulk (docs/tuning.md). */
	uint32_t ack_every;
	/** See ack_every: the longest an ACK waits, microseconds (the host
	 * wakes for it as for its other timers). Thinning applies only on
	 * paths whose RTT is at least four times this. 0..100000, default
	 * 2000. */
	uint32_t ack_delay_us;
	/* New fields go here, at the end (see above). */
} rudp_config;

/** Values of rudp_config.congestion_control. */
enum rudp_congestion_control {
	RUDP_CC_NONE = 0, /**< only window_frames limits reliable data in flight */
	RUDP_CC_AIMD = 1, /**< congestion window over reliable frames, TCP-style */
	RUDP_CC_RATE = 2, /**< paced at the path's estimated bandwidth (BBR-style; default) */
};

/** Values of rudp_config.io.backend. */
enum rudp_io_backend {
	RUDP_IO_AUTO = 0, /**< io_uring if usable, else mmsg */
	RUDP_IO_MMSG = 1, /**< recvmmsg/sendmmsg */
	RUDP_IO_URING = 2, /**< io_uring (multishot recvmsg, batched sendmsg) */
};

/** Fills the first size bytes of cfg with the defaults documented on each
 * field and sets cfg->struct_size to size; bytes past what this library
 * knows are zeroed. Call it through rudp_config_init(), which passes the
 * sizeof(rudp_config) the program was compiled with. NULL, or a size
 * smaller than struct_size itself, is a no-op. */
RUDP_API void rudp_config_init_sized(rudp_config *cfg, size_t size);

/** Fills cfg with the defaults documented on each field and stamps
 * cfg->struct_size. NULL is a no-op. */
static inline void rudp_config_init(rudp_config *cfg)
{
	rudp_config_init_sized(cfg, sizeof(rudp_config));
}

/** Creates a host and its socket. On success stores it in *out and returns
 * 0; on failure returns RUDP_E_INVALID (a field out of range, those of
 * rudp_config.io and rudp_config.sim included, or a struct_size this
 * library does not accept: see rudp_config), RUDP_E_ADDRESS, RUDP_E_SYSTEM
 * or RUDP_E_NOMEM and leaves *out NULL. */
RUDP_API int rudp_host_create(const rudp_config *cfg, rudp_host **out);

/** Closes the socket and frees the host and every peer (without telling
 * them: call rudp_disconnect() and service first for a graceful close).
 * NULL is a no-op. */
RUDP_API void rudp_host_destroy(rudp_host *host);

/** A descriptor for the application's own poll/epoll loop: when it is
 * readable, call rudp_service() with timeout 0. Timers still need a service
 * call by rudp_host_next_timeout_ms(). With the mmsg backend it is the UDP
 * socket; with io_uring it is the ring's fd, readable when completions
 * (received datagrams) wait. With io_uring a wait on it may end early with
 * EINTR when a datagram arrives (the kernel runs the ring's work): retry
 * or call rudp_service(). Do not read from or write to it. Returns the
 * descriptor (>= 0), or RUDP_E_INVALID for a NULL host. */
RUDP_API int rudp_host_fd(const rudp_host *host);

/** Milliseconds until the host's earliest timer (connections, pings
 * outstanding, and datagrams the network simulator (rudp_config.sim)
 * holds, at their release), shaped for poll(): 0 when work is due now
 * (including events queued and datagrams not yet handed to the kernel),
 * -1 when no timer is set (wait for input alone). A NULL host returns 0,
 * so a loop goes on to rudp_service(), which reports RUDP_E_INVALID,
 * instead of waiting forever; rudp_host_next_timeout() tells an invalid
 * argument apart. */
RUDP_API int rudp_host_next_timeout_ms(rudp_host *host);

/** rudp_host_next_timeout_ms() with the error apart: stores in
 * *timeout_ms the milliseconds until the earliest timer (0 when work is
 * due now, -1 when no timer is set) and returns 0; returns
 * RUDP_E_INVALID (storing nothing) when host or timeout_ms is NULL. */
RUDP_API int rudp_host_next_timeout(rudp_host *host, int *timeout_ms);

/** rudp_host_next_timeout() in microseconds, for a loop that can wait
 * that finely (epoll_pwait2(), ppoll(), a timerfd): the milliseconds are
 * rounded up, and a connection's timers (a tail-loss probe a few hundred
 * microseconds after the round trip) then fire up to a millisecond late.
 * Stores in *timeout_us the microseconds until the earliest timer (0 when
 * work is due now, -1 when no timer is set) and returns 0; returns
 * RUDP_E_INVALID (storing nothing) when host or timeout_us is NULL. After
 * such a wait call rudp_service() with timeout 0. */
RUDP_API int rudp_host_next_timeout_us(rudp_host *host, int64_t *timeout_us);

/** Writes the bound local address as text ("127.0.0.1:19132",
 * "[::1]:19132") into buf. Returns 0, or RUDP_E_INVALID (NULL host or
 * buf, or the buffer is too small). */
RUDP_API int rudp_host_local_address(const rudp_host *host, char *buf, size_t len);

/** Sets the opaque bytes returned in unconnected pongs (RakNet "offline
 * ping response"; Bedrock servers put their MOTD string there). Copied.
 * At most 1400 bytes; default empty. Returns 0, RUDP_E_INVALID (NULL
 * host, NULL data with len > 0, len > 1400) or RUDP_E_NOMEM (the old
 * data is kept). */
RUDP_API int rudp_host_set_pong_data(rudp_host *host, const void *data, size_t len);

/** Starts connecting to address ("host:port", "[v6]:port"; names are
 * resolved, blocking). The peer handle is stored in *out at once;
 * RUDP_EVENT_CONNECT or RUDP_EVENT_DISCONNECT (reason
 * RUDP_REASON_CONNECT_FAILED and others) follows from rudp_service().
 * Returns 0, or (with *out NULL, nothing started):
 * - RUDP_E_INVALID: host, address or out is NULL;
 * - RUDP_E_ADDRESS: address cannot be parsed or resolved, or the host's
 *   socket cannot reach its family (an IPv6 address from an IPv4 host);
 * - RUDP_E_ALREADY_CONNECTED: the host has a peer (connecting, connected
 *   or disconnecting) at that address already; RakNet knows a connection
 *   by address, so a second one needs rudp_config.socket_per_connect;
 * - RUDP_E_PEERS_FULL: max_peers peers exist;
 * - RUDP_E_NOMEM: out of memory, or the host is at
 *   rudp_config.max_host_memory (retry once its queues have drained);
 * - RUDP_E_SYSTEM: with socket_per_connect, the connection's socket could
 *   not be opened (errno says why: EMFILE past RLIMIT_NOFILE, ...). */
RUDP_API int rudp_connect(rudp_host *host, const char *address, rudp_peer **out);

/** Queues one message to a connected peer. reliability is an
 * rudp_reliability; channel (0..31) orders ordered and sequenced messages
 * independently and is ignored for the others. Messages longer than one
 * datagram are split and reassembled. The data is copied; nothing is sent
 * until rudp_service() or rudp_flush(). The first byte must not be a RakNet
 * control id (0x00, 0x03, 0x09, 0x10, 0x13, 0x15): RUDP_E_RESERVED_ID.
 * Returns 0, RUDP_E_INVALID, RUDP_E_NOT_CONNECTED, RUDP_E_TOO_LARGE,
 * RUDP_E_QUEUE_FULL (nothing queued), RUDP_E_RESERVED_ID or RUDP_E_NOMEM;
 * RUDP_E_WOULD_BLOCK (nothing queued) when the host is at
 * rudp_config.max_host_memory, or with a send policy on the peer over its
 * budget (see "Send policy" below); the message gets RUDP_PRIORITY_MEDIUM. */
RUDP_API int rudp_send(rudp_peer *peer, const void *data, size_t len, int reliability, int channel);

/*
 * Unreliable messages and the reliable window. Unreliable and
 * unreliable-sequenced messages never wait for the reliable window or the
 * congestion window: a flush puts them out in turn with the reliable
 * frames that may go, and alone when the reliable window is full. What
 * can hold them is the pacing of RUDP_CC_RATE (the next datagram waits
 * for its time; they get at least half of it while reliable frames wait
 * too) and a socket that takes nothing more; they then wait in the
 * peer's queue, counted in max_queue_bytes with the reliable ones (a full
 * queue makes rudp_send() return RUDP_E_QUEUE_FULL). With a send policy
 * on the peer they wait in its unreliable reserve instead, which drops
 * the oldest beyond its size. Give them a lifetime (rudp_send_expiring())
 * so that what waited too long is dropped rather than sent stale.
 */

/** Defined when rudp_send_expiring() and rudp_send_many() exist. */
#define RUDP_HAVE_SEND_MANY 1

/** rudp_send() of an RUDP_UNRELIABLE or RUDP_UNRELIABLE_SEQUENCED message
 * that may wait at most lifetime_ms (1..3,600,000; 0: no lifetime, as
 * rudp_send()): a flush that finds it still unsent later drops it and
 * counts it in rudp_peer_stats.unreliable_expired. A message larger than
 * one datagram is sent reliably (as any split unreliable message) and
 * then keeps no lifetime. With a send policy on the peer the lifetime is
 * not applied: the policy's unreliable reserve bounds what waits there.
 * Returns what rudp_send() does; RUDP_E_INVALID also for a reliable kind
 * with a lifetime, or a lifetime out of range. */
RUDP_API int rudp_send_expiring(rudp_peer *peer, const void *data, size_t len, int reliability, int channel,
				uint32_t lifetime_ms);

/** Queues one message to each of peers[0..n-1] (all of host), as n
 * rudp_send_expiring() calls would, but copies it once: the peers' queues
 * share one reference-counted body from a pool of the host, released when
 * the last of them has sent it (unreliable) or had it acknowledged
 * (reliable), dropped it at its lifetime or closed. Exceptions, each
 * copying the message for that peer as rudp_send() does: a peer with a
 * send policy (the policy stages its own copy, and keeps no lifetime),
 * and a message larger than one datagram (its fragments are copied).
 * lifetime_ms as for rudp_send_expiring() (0: none). errors, when not
 * NULL, receives n codes: errors[i] is what queueing on peers[i] returned
 * (0, or an rudp_send() error; RUDP_E_INVALID for a NULL peer or one of
 * another host). Returns the number of peers the message was queued on
 * (0..n), or RUDP_E_INVALID (NULL host, NULL peers with n > 0, n >
 * INT32_MAX; errors then untouched). An argument error common to all
 * (bad reliability, channel or lifetime, empty message, reserved first
 * byte, out of memory for the body) is given in every errors[i] and the
 * return is 0. */
RUDP_API int rudp_send_many(rudp_host *host, rudp_peer *const *peers, size_t n, const void *data, size_t len,
			    int reliability, int channel, uint32_t lifetime_ms, int *errors);

/** Sends now what is queued on every peer of the host, without reading or
 * waiting. Returns the number of datagrams handed to the kernel (0 or
 * more), or RUDP_E_INVALID for a NULL host. */
RUDP_API int rudp_flush(rudp_host *host);

/** Event kinds returned by rudp_service(). */
enum rudp_event_type {
	RUDP_EVENT_CONNECT = 1, /**< handshake finished (either role) */
	RUDP_EVENT_RECEIVE = 2, /**< a message arrived: data, len, reliability, channel */
	RUDP_EVENT_DISCONNECT = 3, /**< the peer is gone: reason */
	RUDP_EVENT_WRITABLE =
		4, /**< a peer refused with RUDP_E_WOULD_BLOCK may send again (below the budget) */
	/** An answer to rudp_ping_start(): ping_id, address, guid, rtt_us,
	 * and the server's pong data in data/len. peer is NULL. */
	RUDP_EVENT_PONG = 5,
	/** No answer to rudp_ping_start() within its timeout: ping_id and
	 * address. peer is NULL. Exactly one of PONG or PING_TIMEOUT follows
	 * each ping started. */
	RUDP_EVENT_PING_TIMEOUT = 6,
};

/** Why a peer disconnected. */
enum rudp_disconnect_reason {
	RUDP_REASON_LOCAL = 1, /**< rudp_disconnect() completed */
	RUDP_REASON_REMOTE = 2, /**< the other side disconnected */
	RUDP_REASON_TIMEOUT = 3, /**< nothing heard for timeout_ms, or data never acknowledged */
	RUDP_REASON_CONNECT_FAILED = 4, /**< no answer to the handshake within connect_timeout_ms */
	RUDP_REASON_PROTOCOL = 5, /**< the other side broke the protocol */
	RUDP_REASON_INCOMPATIBLE = 6, /**< the server refused our protocol version */
	RUDP_REASON_SERVER_FULL = 7, /**< the server has no free connection slots */
	RUDP_REASON_REJECTED = 8, /**< already connected, banned or too soon */
};

/** Returns a static English name for a disconnect reason. Never NULL. */
RUDP_API const char *rudp_reason_string(int reason);

/** One event. Fields that do not apply to its type are 0 or NULL. data
 * and address point into the host's buffers (see lifetimes above). */
typedef struct rudp_event {
	int type; /**< an rudp_event_type */
	/** CONNECT, RECEIVE, DISCONNECT, WRITABLE: the peer. NULL for PONG and
	 * PING_TIMEOUT. */
	rudp_peer *peer;
	/** RECEIVE: the message. PONG: the pong data the server set (RakNet's
	 * offline ping response; NULL when it sent none). */
	const uint8_t *data;
	size_t len; /**< RECEIVE, PONG: bytes at data */
	uint8_t reliability; /**< RECEIVE only: an rudp_reliability */
	uint8_t channel; /**< RECEIVE only: the order channel (0..31) */
	int reason; /**< DISCONNECT only: an rudp_disconnect_reason */
	/** PONG, PING_TIMEOUT: the id rudp_ping_start() stored for the ping. */
	uint32_t ping_id;
	/** PONG: microseconds from the sending of the ping datagram this pong
	 * answers (the first or a resend: each carries its own time field) to
	 * the pong's arrival. */
	uint32_t rtt_us;
	/** PONG: the server's RakNet GUID, as its pong says. */
	uint64_t guid;
	/** PONG, PING_TIMEOUT: the pinged address in numeric form
	 * ("127.0.0.1:19132", "[::1]:19132"; a name given to rudp_ping_start()
	 * appears resolved), NUL-terminated. */
	const char *address;
} rudp_event;

/** Does all due work (receive, timers, send) and returns up to max events
 * in events. Waits up to timeout_ms (0: do not wait; -1: wait until an
 * event) when no event is ready. Returns the number of events, or a
 * negative error: RUDP_E_INVALID (NULL host, NULL events with max > 0,
 * max < 0) or RUDP_E_SYSTEM (the socket failed). Messages of data events
 * stay valid until the next call; events not returned stay queued.
 *
 * What the call sends: first everything queued since the last call, then
 * what its own work produces (ACKs, resends). With the io_uring backend
 * the queued datagrams go out before any waiting; when nothing has
 * arrived and the call is about to wait, they go in the wait's own system
 * call (one instead of two). On both backends a call that returns only
 * RUDP_EVENT_RECEIVE events leaves the datagrams it produced itself (the
 * ACKs of what it read, mostly; with recvmmsg only those of its last
 * read, as earlier reads of the same call send theirs before the next
 * read) for the next
 * rudp_service(), rudp_recv_batch() or rudp_flush() on the host, which
 * sends them in one system call together with the application's answers;
 * meanwhile rudp_host_next_timeout_ms() returns 0. So call again soon
 * after handling the messages (the normal loop, or "service until it
 * returns 0" once per tick), or call rudp_flush() before turning to
 * something slow. Any other call (no event, or a connect, disconnect,
 * writable, pong or ping timeout event among them) leaves nothing
 * unsent. */
RUDP_API int rudp_service(rudp_host *host, rudp_event *events, int max, int timeout_ms);

/** Starts a graceful disconnect: queued messages are delivered first,
 * then RUDP_EVENT_DISCONNECT (reason RUDP_REASON_LOCAL) is returned. Safe
 * to call twice. Returns 0 or RUDP_E_INVALID. */
RUDP_API int rudp_disconnect(rudp_peer *peer);

/** Drops the connection at once without telling the other side; no event
 * follows (queued events of the peer are discarded) and the handle is
 * invalid after the call. NULL is a no-op. */
RUDP_API void rudp_peer_reset(rudp_peer *peer);

/** Per-peer statistics. */
typedef struct rudp_peer_stats {
	uint64_t bytes_sent, bytes_received; /**< UDP payload bytes */
	uint64_t datagrams_sent, datagrams_received;
	uint64_t messages_sent, messages_received;
	uint64_t frames_retransmitted;
	uint64_t acks_received, nacks_received; /**< records */
	uint64_t datagrams_dropped; /**< malformed or unwanted input */
	uint64_t duplicates_dropped;
	uint32_t rtt_us, rtt_var_us, rto_us; /**< smoothed RTT, its variance, current RTO */
	uint32_t window_in_use, window_frames; /**< reliable frames in flight / allowed */
	uint32_t send_queue_bytes; /**< queued and unacknowledged payload bytes */
	uint32_t reassembly_bytes; /**< reserved by incomplete split messages */
	uint16_t mtu; /**< negotiated RakNet MTU */
	uint8_t protocol_version;
	int state; /**< 0 connecting, 1 connected, 2 disconnecting, 3 closed */
	/** Congestion window, bytes: with RUDP_CC_AIMD of reliable frames,
	 * with RUDP_CC_RATE of datagrams carrying frames (about twice the
	 * bandwidth-delay product); 0 with RUDP_CC_NONE. */
	uint32_t congestion_window;
	/** Bytes sent and neither acknowledged nor declared lost: with
	 * RUDP_CC_RATE the UDP payload of every datagram carrying frames;
	 * otherwise the encoded reliable frames (counted with RUDP_CC_NONE too). */
	uint32_t bytes_in_flight;
	/** RUDP_CC_AIMD: times loss or a retransmission timeout shrank the
	 * window. RUDP_CC_RATE: round trips judged congested (loss with a
	 * standing queue, or heavy loss), each of which capped the flight. */
	uint64_t congestion_reductions;
	/** frames_retransmitted by cause. resent_nack: the peer reported the
	 * datagram missing. resent_inferred: a later datagram was acknowledged
	 * and this one was not, long enough after to call it lost. resent_probe:
	 * a tail-loss probe (the oldest frame unacknowledged about a round trip
	 * after its send, and no ACK progress meanwhile, with the other frames
	 * of its datagram still unacknowledged). resent_timeout: the
	 * frame's retransmission timeout (the oldest frame that ran out, and
	 * those of its datagram that ran out with it). Probes and timeouts whose first copy
	 * had arrived show up as duplicates_dropped at the peer: many of them
	 * mean acknowledgements are queued behind an overload (or
	 * rudp_config.rto_min_ms is shorter than the path's worst round
	 * trips); NACKs and inferences mean loss. */
	uint64_t resent_nack, resent_inferred, resent_probe, resent_timeout;
	/** Resends shown to be unneeded: the peer acknowledged the datagram of
	 * an earlier copy of the frame after the frame had been sent again (the
	 * copy was late, not lost; like TCP's D-SACK). Counted at most once per
	 * frame, and only when that ACK comes before any ACK naming the resent
	 * copy (an ACK naming both counts as the resend's), so it is a lower
	 * bound. A large share of frames_retransmitted means the
	 * loss detection fires on delay: see docs/tuning.md. */
	uint64_t resent_spurious;
	/** RUDP_CC_RATE's model of the path (all 0 with the other settings,
	 * and before the first ACK): the bottleneck bandwidth estimate (the
	 * largest delivery rate of the last ten round trips) and the pacing
	 * rate now (about the estimate; twice it while starting up), in UDP
	 * payload bytes a second, and the minimum RTT of the last five
	 * seconds in microseconds (rtt_us above includes queueing; this does
	 * not). */
	uint64_t bandwidth_estimate;
	uint64_t pacing_rate;
	uint32_t min_rtt_us;
	/** Redundant copies sent (rudp_peer_set_redundant_channels()): not
	 * resends, so not in frames_retransmitted; the peer counts the copy
	 * that arrives second in its duplicates_dropped. */
	uint64_t frames_copied;
	/** Unreliable messages dropped unsent at the end of their lifetime
	 * (rudp_send_expiring(), rudp_send_many()). */
	uint64_t unreliable_expired;
} rudp_peer_stats;

/** rudp_peer_stats_get() with the size of *out as the program knows it:
 * writes the first size bytes of the library's rudp_peer_stats (all of it
 * when size is larger), so the struct can grow at its end without breaking
 * programs built against an older header. Returns 0, or RUDP_E_INVALID
 * (NULL peer or out, size 0). */
RUDP_API int rudp_peer_stats_get_sized(const rudp_peer *peer, rudp_peer_stats *out, size_t size);

/** Fills *out with the peer's statistics. Returns 0 or RUDP_E_INVALID. */
static inline int rudp_peer_stats_get(const rudp_peer *peer, rudp_peer_stats *out)
{
	return rudp_peer_stats_get_sized(peer, out, sizeof(*out));
}

/** Defined when rudp_peer_status_get() exists. */
#define RUDP_HAVE_PEER_STATUS 1

/** A peer's live status (rudp_peer_status_get()): what a game server looks
 * at every tick. "Recent" figures cover window_us: from the start of the
 * previous 1 s interval to now (1..2 s on a live connection, so a figure
 * never drops to 0 just after an interval ends; longer after an idle spell
 * with nothing received or sent, shorter on a connection not 1 s old).
 * Fields are only ever appended (the struct never has padding).
 * rudp_peer_stats stays the full set of counters for diagnostics. */
typedef struct rudp_peer_status {
	/** Recent UDP payload bytes sent and received a second (ACKs and
	 * resends included). */
	uint64_t send_rate, receive_rate;
	/** RUDP_CC_RATE's bottleneck bandwidth estimate, UDP payload bytes a
	 * second; 0 with the other congestion controls and before the first
	 * ACK. */
	uint64_t bandwidth_estimate;
	/** Bytes waiting to be sent for the first time: reliable (encoded, frame
	 * headers included, plus message bytes the send policy holds) and
	 * unreliable (the same). */
	uint64_t pending_reliable_bytes, pending_unreliable_bytes;
	/** Encoded reliable bytes sent and neither acknowledged nor declared
	 * lost. */
	uint64_t in_flight_bytes;
	/** Queue time: microseconds since the oldest message still waiting to
	 * be sent for the first time was queued (by rudp_send() or held by the
	 * send policy); 0 when nothing waits. */
	uint64_t queue_time_us;
	/** Length of the recent window, microseconds. */
	uint64_t window_us;
	/** Smoothed RTT and its variance, microseconds (as rudp_peer_stats). */
	uint32_t rtt_us, rtt_var_us;
	/** Recent loss, percent (0..100). Send: datagrams carrying reliable
	 * frames that the peer reported missing (NACK) or that later ACKs showed
	 * lost, taken back when the datagram is acknowledged after all
	 * (reordering). It reads a little low, as losses at the tail of a
	 * burst (repaired by a probe or a timeout, never NACKed) are not
	 * counted, and a little high when ACKs are lost too (a datagram that
	 * arrived but whose ACK never came counts as lost); traffic of
	 * unreliable messages alone is not seen. Receive: gaps in
	 * the peer's datagram sequence numbers not filled later (a jump counts
	 * at most 512 missing, so a forged sequence number cannot inflate it). */
	float send_loss_percent, receive_loss_percent;
	/** As rudp_peer_stats.state: 0 connecting, 1 connected, 2
	 * disconnecting, 3 closed. */
	int32_t state;
	uint32_t reserved; /**< 0 */
} rudp_peer_status;

/** rudp_peer_status_get() with the size of *out as the program knows it:
 * fills the first min(size, sizeof(rudp_peer_status)) bytes. O(1), no
 * allocation, no system call; figures are as of the host's last call
 * (rudp_service(), rudp_flush(), ...). Returns 0; RUDP_E_INVALID (NULL
 * peer or out, size 0), storing nothing; or RUDP_E_NOT_CONNECTED for a
 * peer whose connection has closed (out then holds zeros and state 3; its
 * final counters stay in rudp_peer_stats_get()). A peer still in the
 * offline handshake returns 0 with zeros and state 0. */
RUDP_API int rudp_peer_status_get_sized(const rudp_peer *peer, rudp_peer_status *out, size_t size);

/** Fills *out with the peer's live status; see rudp_peer_status_get_sized()
 * for the return codes. Cheap enough to call for every peer every tick. */
static inline int rudp_peer_status_get(const rudp_peer *peer, rudp_peer_status *out)
{
	return rudp_peer_status_get_sized(peer, out, sizeof(*out));
}

/** Host-wide counters. */
typedef struct rudp_host_stats {
	uint64_t datagrams_received, datagrams_sent;
	uint64_t bytes_received, bytes_sent;
	uint64_t datagrams_dropped; /**< malformed, unknown source, or over a limit */
	uint64_t handshakes_refused; /**< full, bad protocol, or bad request */
	uint64_t syscalls_recv, syscalls_send;
	/** Sends that carried two or more datagrams as one UDP GSO request and
	 * that the kernel accepted (rudp_config.io.udp_gso; io_uring only). */
	uint64_t gso_sends;
	/** Reads that brought a run of two or more datagrams at once
	 * (rudp_config.io.udp_gro; io_uring only). */
	uint64_t gro_receives;
	uint32_t peers; /**< peers in the table now */
	const char *io_backend; /**< "mmsg" or "uring" */
	/** io_uring: receives posted again after they ended, nearly always
	 * because the receive buffers ran out. With a socket per connection
	 * (rudp_config.socket_per_connect) each costs about a system call's
	 * worth of kernel work; a count growing nearly as fast as
	 * datagrams_received says the host does not keep up with what arrives
	 * (docs/io.md). */
	uint64_t rx_rearms;
	/** Datagrams dropped on their way out (reliable data among them is
	 * resent): refused by the kernel (ENOBUFS, EPERM from a firewall
	 * rule, EMSGSIZE past the path's MTU, ...) or built for a socket that
	 * had been closed meanwhile. A count that grows says the host sends
	 * into a wall: check the firewall and io.socket_sndbuf. */
	uint64_t send_errors;
	/** Events queued in the host and not yet returned to the application,
	 * the bytes of their messages, and the most such bytes held at once
	 * since the host was made. */
	uint32_t events_pending;
	uint64_t event_bytes_pending, event_bytes_peak;
	/** Reads the host left for later because the application was behind:
	 * max_pending_events or max_pending_event_bytes reached. A count that
	 * keeps growing says the application does not keep up with its peers
	 * (their data waits in the socket's kernel buffer meanwhile). */
	uint64_t receive_pauses;
	/** The network simulator (rudp_config.sim), both directions: datagrams
	 * it dropped at random (loss_percent); dropped because the rate
	 * limit's queue or the store of held datagrams was full; delivered
	 * twice; held back to be overtaken; and held for a later release
	 * (delayed: latency, jitter, rate, reordering, or behind another
	 * held datagram). All zero while the simulator is off. */
	uint64_t sim_dropped, sim_overflowed, sim_duplicated, sim_reordered, sim_delayed;
	/** Unconnected pongs dropped because no ping outstanding matched them:
	 * from an address not pinged, with a time field the ping did not carry
	 * (forged), a second answer to a ping already answered or timed out,
	 * or malformed. Also counted in datagrams_dropped. */
	uint64_t pongs_dropped;
} rudp_host_stats;

/** rudp_host_stats_get() with the size of *out as the program knows it (as
 * rudp_peer_stats_get_sized()). Returns 0, or RUDP_E_INVALID (NULL host or
 * out, size 0). */
RUDP_API int rudp_host_stats_get_sized(const rudp_host *host, rudp_host_stats *out, size_t size);

/** Fills *out with the host's counters. Returns 0 or RUDP_E_INVALID. */
static inline int rudp_host_stats_get(const rudp_host *host, rudp_host_stats *out)
{
	return rudp_host_stats_get_sized(host, out, sizeof(*out));
}

/** Writes the peer's address as text into buf. Returns 0, or
 * RUDP_E_INVALID (NULL peer or buf, or the buffer is too small). */
RUDP_API int rudp_peer_address(const rudp_peer *peer, char *buf, size_t len);

/** The peer's RakNet GUID (0 until known, and for a NULL peer). */
RUDP_API uint64_t rudp_peer_guid(const rudp_peer *peer);

/** Application pointer attached to a peer (NULL by default). A NULL peer
 * is a no-op. */
RUDP_API void rudp_peer_set_userdata(rudp_peer *peer, void *userdata);
/** Returns what rudp_peer_set_userdata() stored (NULL for a NULL peer). */
RUDP_API void *rudp_peer_get_userdata(const rudp_peer *peer);

/** Redundancy, for traffic where latency matters more than bytes: every
 * reliable-ordered or reliable-sequenced message sent to this peer on an
 * ordering channel whose bit is set in channel_mask (bit n: channel n) is
 * sent twice, the second copy in a later datagram of the same flush,
 * before any acknowledgement could come. Both copies carry the same
 * reliable message index, so the receiver (librudp or a RakNet peer)
 * delivers the message once and drops the other copy: nothing new on the
 * wire. A lost datagram then costs no round trip when the other copy
 * arrives; the cost is about twice the bytes for those channels
 * (docs/benchmarks.md). Resends are not copied. 0 (the default) turns it
 * off. May be called at any time, also before the peer is connected; it
 * applies to messages flushed afterwards. Returns 0, or RUDP_E_INVALID for
 * a NULL peer. */
RUDP_API int rudp_peer_set_redundant_channels(rudp_peer *peer, uint32_t channel_mask);

/** Result of rudp_ping(). */
typedef struct rudp_pong {
	uint64_t server_guid; /**< the server's RakNet GUID */
	uint32_t rtt_us; /**< as rudp_event.rtt_us */
	size_t data_len; /**< bytes at data */
	const uint8_t *data; /**< the pong data; valid until the next call on the host */
} rudp_pong;

/** Defined when rudp_ping_start() and the PONG / PING_TIMEOUT events exist. */
#define RUDP_HAVE_ASYNC_PING 1

/** Starts an unconnected ping (RakNet 0x01) to address ("ip:port",
 * "[v6]:port"; a name is resolved here, blocking) and returns at once.
 * The answer comes from rudp_service() (or alone from rudp_recv_batch())
 * as one RUDP_EVENT_PONG, or as one RUDP_EVENT_PING_TIMEOUT once
 * timeout_ms (1..600000) has passed without one; both carry the ping's id
 * and address. Many pings may be outstanding at once, to different
 * addresses or the same one, up to rudp_config.max_pings.
 *
 * The ping goes to the kernel before the call returns (the RTT counts
 * from then). On a lossy path one lost datagram should not cost the
 * answer, so the ping is sent again at a third and at two thirds of the
 * timeout while no pong has come (three datagrams at most, never two
 * within 100 ms); the RTT counts from the sending of the copy the pong
 * answers. Each ping is padded so a librudp server's pong data always
 * fits (servers never answer with more bytes than the ping had).
 *
 * The ping's time field carries a value chosen for that ping and copy,
 * which RakNet servers echo: a pong counts only when it comes from the
 * pinged address and echoes it; anything else is dropped and counted in
 * rudp_host_stats.pongs_dropped. The first matching pong ends the ping;
 * later copies are dropped the same way.
 *
 * Stores the ping's id (never 0; unique among the host's outstanding
 * pings) in *ping_id when ping_id is not NULL, and returns 0; or returns
 * RUDP_E_INVALID (NULL host or address, timeout_ms out of range),
 * RUDP_E_ADDRESS (address cannot be parsed or resolved, or this host's
 * socket cannot reach its family), RUDP_E_PINGS_FULL (max_pings
 * outstanding: wait for an event and retry) or RUDP_E_NOMEM; then no
 * ping was started and no event will follow. */
RUDP_API int rudp_ping_start(rudp_host *host, const char *address, int timeout_ms, uint32_t *ping_id);

/** Pings address as rudp_ping_start() does and waits up to timeout_ms for
 * the pong, servicing the host meanwhile (other events stay queued, and
 * the answer to this ping is not queued as an event). Returns 0 and fills
 * *out (data valid until the next call on the host), RUDP_E_INVALID (NULL
 * argument, timeout_ms negative or over 600000), RUDP_E_ADDRESS,
 * RUDP_E_PINGS_FULL, RUDP_E_NOMEM, RUDP_E_SYSTEM (the socket failed while
 * waiting), or RUDP_E_NOT_CONNECTED when no pong came in time (also for
 * timeout_ms 0). */
RUDP_API int rudp_ping(rudp_host *host, const char *address, int timeout_ms, rudp_pong *out);

/* ------------------------------------------------------------------ */
/* Batch API                                                           */
/* ------------------------------------------------------------------ */

/** Defined when rudp_send_batch() and rudp_recv_batch() exist. */
#define RUDP_HAVE_BATCH_API 1

/** One message for rudp_send_batch(). */
typedef struct rudp_message {
	const void *data;
	size_t len;
	uint8_t reliability; /**< an rudp_reliability */
	uint8_t channel; /**< 0..31, for ordered and sequenced messages */
} rudp_message;

/** Queues msgs[0..n-1] to peer in order, exactly as n rudp_send() calls
 * would, then flushes the host's queued output into datagrams once (a
 * batch of small messages is coalesced as tightly as the MTU allows). The
 * datagrams go to the kernel with the next rudp_service(), rudp_recv_batch()
 * or rudp_flush() on the host, in the same system call as everything else
 * that call sends (or earlier, once io.batch datagrams wait); call
 * rudp_flush() to send at once.
 *
 * Partial acceptance: queueing stops at the first message that cannot be
 * queued. The return value is how many messages were queued (0..n), always
 * a prefix of msgs; that message and the ones after it are not queued at
 * all (never half of a split message). *first_error (may be NULL) gets 0
 * when all n were queued, else the rudp_send() error of msgs[return value]
 * (RUDP_E_QUEUE_FULL: service the host and retry the rest;
 * RUDP_E_NOT_CONNECTED, RUDP_E_TOO_LARGE, RUDP_E_RESERVED_ID, RUDP_E_INVALID
 * for that message's reliability or channel, RUDP_E_NOMEM). The queued
 * prefix is flushed in every case. Returns RUDP_E_INVALID, queueing
 * nothing, when peer is NULL, msgs is NULL with n > 0, or n > INT32_MAX. */
RUDP_API int rudp_send_batch(rudp_peer *peer, const rudp_message *msgs, size_t n, int *first_error);

/** Like rudp_service() (reads, timers, sends, waits up to timeout_ms when
 * nothing is queued, and leaves its ACKs for the next call in the same
 * way), but hands out messages in pure batches: it returns
 * up to max RUDP_EVENT_RECEIVE events in arrival order and stops before
 * the first event of another kind. When such an event (CONNECT,
 * DISCONNECT, WRITABLE, PONG, PING_TIMEOUT) is first in the queue it is
 * returned alone (the result is 1 and events[0].type says which), so no
 * event is skipped or reordered and the two calls can be mixed freely.
 * Returns the count, 0 when nothing arrived in time, or RUDP_E_INVALID
 * (NULL host or events, max <= 0) / RUDP_E_SYSTEM. Lifetimes are those
 * of rudp_service(): data stays valid until the next rudp_service() or
 * rudp_recv_batch() on this host.
 *
 * The server pattern, "drain a batch, echo a batch":
 * @code
 * rudp_event in[64];
 * rudp_message out[64];
 * int n = rudp_recv_batch(host, in, 64, 10);
 * if (n == 1 && in[0].type != RUDP_EVENT_RECEIVE) {
 *         handle_connect_or_disconnect(&in[0]);
 * } else {
 *         for (int i = 0; i < n;) {        // one rudp_send_batch per run of one peer
 *                 int k = 0;
 *                 rudp_peer *p = in[i].peer;
 *                 for (; i < n && in[i].peer == p; i++, k++)
 *                         out[k] = (rudp_message){in[i].data, in[i].len, in[i].reliability, in[i].channel};
 *                 int err, q = rudp_send_batch(p, out, (size_t)k, &err);
 *                 if (q < k) { ... out[q..k-1] not queued because of err ... }
 *         }
 * }
 * @endcode
 * Messages are copied by rudp_send_batch(), so echoing straight from the
 * received events is safe. */
RUDP_API int rudp_recv_batch(rudp_host *host, rudp_event *events, int max, int timeout_ms);

/* ------------------------------------------------------------------ */
/* Send policy                                                         */
/* ------------------------------------------------------------------ */

/*
 * An optional scheduler between rudp_send() and the wire (meson option
 * send_policy; RUDP_HAVE_SEND_POLICY in rudp_version.h says whether this
 * library has it). It is off until a peer asks for it: with
 * rudp_peer_set_send_options(), or rudp_host_set_send_options() for peers
 * created afterwards. Then, for that peer:
 *
 * - Backpressure: while the reliable queue (reliable bytes waiting to be
 *   sent for the first time) is at or above reliable_soft_budget, sending a
 *   reliable message returns RUDP_E_WOULD_BLOCK and queues nothing. Once the
 *   queue is below the budget again the host returns one
 *   RUDP_EVENT_WRITABLE for the peer; the next send then succeeds (the
 *   budget is soft: a queue below it accepts one more message of any size).
 * - Unreliable messages wait in a reserve of unreliable_reserve bytes; a
 *   new one beyond it evicts the oldest (any priority), counted in
 *   rudp_send_stats.dropped[RUDP_DROP_UNRELIABLE_RESERVE], never silently.
 * - Priorities (rudp_send_ex()): what enters the reliable window, and the
 *   order of unreliable messages, is chosen highest priority first; a class
 *   passed over starvation_limit times goes next, so the oldest message of
 *   any class waits at most starvation_limit + 3 picks. A reliable message
 *   that nothing waits ahead of, sent while the window and the limits below
 *   are at most half used with it, enters the window at once (no wait, no
 *   extra copy): half of each limit stays for what comes next. Ordered channels
 *   keep send order whatever the priorities: give different priorities
 *   different channels. RUDP_PRIORITY_IMMEDIATE also flushes the host at
 *   once instead of waiting for the next rudp_service() / rudp_flush().
 * - max_in_flight_bytes bounds encoded bytes sent and not yet released by
 *   ACKs (queueing in the network); flush_budget bounds the datagram bytes
 *   one peer puts out in one flush, so one busy peer cannot starve the
 *   others of the same host.
 *
 * Without the module (-Dsend_policy=false) the setters and the stats getter
 * return RUDP_E_UNSUPPORTED, rudp_send_ex() ignores the priority (except
 * that IMMEDIATE still flushes at once) and RUDP_HAVE_SEND_POLICY_API is
 * not defined. docs/policy.md explains tuning, with measurements.
 */

#if RUDP_HAVE_SEND_POLICY
/** Defined (to 1) when the send-policy functions below work in this build. */
#define RUDP_HAVE_SEND_POLICY_API 1
#endif

/** Message priorities, as RakNet's. */
enum rudp_priority {
	RUDP_PRIORITY_IMMEDIATE = 0, /**< first, and flushed before rudp_send_ex() returns */
	RUDP_PRIORITY_HIGH = 1,
	RUDP_PRIORITY_MEDIUM = 2, /**< what rudp_send() uses */
	RUDP_PRIORITY_LOW = 3,
};
/** Number of priorities. */
#define RUDP_PRIORITIES 4

/** Send-policy limits of a peer. Always start with rudp_send_options_init(). */
typedef struct rudp_send_options {
	/** Encoded bytes (frame headers included) in the reliable window:
	 * sent and not yet released by ACKs. A reliable message enters the
	 * window only if it fits under the cap, or when the window is empty
	 * (so a cap below one message never stalls). >= 1, default 64 MiB. */
	uint32_t max_in_flight_bytes;
	/** Reliable bytes waiting to be sent for the first time at or above
	 * which sends of reliable messages return RUDP_E_WOULD_BLOCK.
	 * >= 1, default 256 KiB. */
	uint32_t reliable_soft_budget;
	/** Unreliable bytes held waiting; beyond it the oldest are dropped.
	 * >= 8192, default 64 KiB. */
	uint32_t unreliable_reserve;
	/** Datagram bytes (ACKs excepted) the peer may put out in one flush;
	 * at least one datagram always goes. >= 1, default 256 KiB. */
	uint32_t flush_budget;
	/** Picks a waiting priority class may be passed over before it goes
	 * next. 1..65535, default 16. */
	uint32_t starvation_limit;
} rudp_send_options;

/** Fills opts with the defaults documented on each field. NULL is a no-op. */
RUDP_API void rudp_send_options_init(rudp_send_options *opts);

/** Turns the send policy on for peer with opts (copied), or changes its
 * limits; opts NULL turns it off (messages it holds move to the plain
 * queue, in priority order; nothing is lost). Works in any peer state; a
 * peer still connecting gets it when its connection starts. Returns 0,
 * RUDP_E_INVALID (NULL peer, a field out of range), RUDP_E_NOT_CONNECTED
 * (the peer has closed), RUDP_E_NOMEM, or RUDP_E_UNSUPPORTED when the
 * module is not built. */
RUDP_API int rudp_peer_set_send_options(rudp_peer *peer, const rudp_send_options *opts);

/** Sets the send policy given to peers the host creates from now on
 * (outgoing and incoming); NULL: none (the default). Peers that exist keep
 * theirs. Returns 0, RUDP_E_INVALID or RUDP_E_UNSUPPORTED. */
RUDP_API int rudp_host_set_send_options(rudp_host *host, const rudp_send_options *opts);

/** rudp_send() with a priority (an rudp_priority). Same errors, plus
 * RUDP_E_INVALID for a priority out of range. */
RUDP_API int rudp_send_ex(rudp_peer *peer, const void *data, size_t len, int reliability, int channel,
			  int priority);

/** Why the send policy dropped a message. */
enum rudp_drop_reason {
	RUDP_DROP_UNRELIABLE_RESERVE = 0, /**< unreliable, evicted (oldest first) beyond the reserve */
	RUDP_DROP_CLOSED = 1, /**< still held by the policy when the connection closed */
};
/** Number of drop reasons. */
#define RUDP_DROP_REASONS 2

/** Send-policy statistics of a peer. Byte gauges are current values. */
typedef struct rudp_send_stats {
	int enabled; /**< 1 when the peer has a send policy */
	/** Bytes held by the policy per priority, not yet in the window. */
	uint64_t reliable_queued_bytes[RUDP_PRIORITIES];
	uint64_t unreliable_queued_bytes[RUDP_PRIORITIES];
	/** What the soft budget counts: reliable bytes not yet sent once
	 * (held by the policy, plus encoded frames queued in the window). */
	uint64_t reliable_queue_bytes;
	uint64_t unreliable_queue_bytes; /**< what the reserve counts */
	uint64_t in_flight_bytes; /**< encoded, sent and not yet released by ACKs */
	uint64_t dropped[RUDP_DROP_REASONS]; /**< messages, per rudp_drop_reason */
	uint64_t sends_refused; /**< RUDP_E_WOULD_BLOCK returned */
	uint64_t writable_events; /**< RUDP_EVENT_WRITABLE produced */
	uint64_t flushes_budget_limited; /**< flushes stopped by flush_budget */
	/** Highest values the gauges above reached (in_flight: at flush ends). */
	uint64_t peak_reliable_queue_bytes, peak_unreliable_queue_bytes, peak_in_flight_bytes;
} rudp_send_stats;

/** rudp_peer_send_stats_get() with the size of *out as the program knows it
 * (as rudp_peer_stats_get_sized()); same return codes, RUDP_E_INVALID also
 * for size 0. */
RUDP_API int rudp_peer_send_stats_get_sized(const rudp_peer *peer, rudp_send_stats *out, size_t size);

/** Fills *out (all zero, enabled 0, for a peer without a policy; the last
 * values while its DISCONNECT event is handled). Returns 0,
 * RUDP_E_INVALID or RUDP_E_UNSUPPORTED. */
static inline int rudp_peer_send_stats_get(const rudp_peer *peer, rudp_send_stats *out)
{
	return rudp_peer_send_stats_get_sized(peer, out, sizeof(*out));
}

#ifdef __cplusplus
}
#endif
#endif
