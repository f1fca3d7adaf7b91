/* SPDX-License-Identifier: MIT */
/*
 * io: moves batches of UDP datagrams between one socket and the host.
 *
 * The host sees only this interface, so a backend (recvmmsg/sendmmsg, or
 * io_uring) is chosen once at host creation (io_select.c) and never leaks
 * upward. Receive hands out a batch of datagrams that stay valid until the
 * next receive; send is two-step (take a slot, commit it) so the conn layer
 * can write a datagram straight into the batch that goes to the kernel.
 * Waiting also goes through the backend, because io_uring waits on its
 * completion queue, not on the socket.
 */
#ifndef RUDP_IO_H
#define RUDP_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

/* A datagram slot is this large: RakNet MTUs stop at 1500 (IP and UDP
 * headers included), and anything longer is truncated by the kernel
 * (MSG_TRUNC) and dropped. Every receive buffer is one slot, so the size
 * is memory: 1536 rather than 2048 takes a quarter off each buffer. */
#define RUDP_IO_SLOT_SIZE 1536

struct rudp_io_datagram {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint8_t *data;
	size_t len;
	uint32_t sock; /* the socket it came in on: 0 the first, others from add_socket */
	bool truncated; /* longer than the slot: never processed */
};

struct rudp_io_stats {
	uint64_t recv_calls, send_calls;
	uint64_t datagrams_received, datagrams_sent;
	uint64_t bytes_received, bytes_sent;
	/* Datagrams dropped on the way out (reliability resends them): refused
	 * by the kernel, or committed to a socket already removed (a
	 * connection's socket closed with datagrams still being built) or
	 * otherwise unsendable. */
	uint64_t send_errors;
	uint64_t gso_sends; /* send requests that carried two or more datagrams */
	uint64_t direct_sends; /* io_uring: send requests made with a plain sendmsg (uring_tx_flush_direct) */
	uint64_t rx_buffer_grows; /* io_uring: times the receive buffers were doubled */
	uint64_t gro_receives; /* io_uring: receive completions that carried a run of two or more datagrams */
	uint64_t rx_rearms; /* io_uring: receives posted again after they ended (mostly for want of a buffer)
			     */
	uint64_t wake_timers; /* io_uring: wake-up timers armed or moved in the kernel (see uring_wait) */
	uint64_t wait_spins, wait_spin_hits; /* waits that watched for input first; those it ended */
};

struct rudp_io;

struct rudp_io_ops {
	const char *name;
	/* Reads up to the batch size of datagrams without blocking. Returns the
	 * count (0 when nothing is waiting) or -errno. *out points at an array
	 * valid until the next recv call. */
	int (*recv)(struct rudp_io *io, struct rudp_io_datagram **out);
	/* A buffer of RUDP_IO_SLOT_SIZE bytes for the next outgoing datagram;
	 * flushes first when the batch is full. Never NULL. */
	uint8_t *(*tx_slot)(struct rudp_io *io);
	/* Commits len bytes of the last slot to addr, to go out on socket
	 * sock (0, or an index from add_socket). */
	void (*tx_commit)(struct rudp_io *io, uint32_t sock, size_t len, const struct sockaddr *addr,
			  socklen_t addrlen);
	/* tx_commit for a datagram whose place among the others committed
	 * does not matter (a RakNet ACK or NACK: no sequence number). The
	 * backend may send it later than datagrams committed after it, but
	 * in the same flush: io_uring holds it until the peer's GSO run
	 * closes and makes it the run's last segment, so an ACK and the
	 * answer built after it leave in one send. NULL: tx_commit. */
	void (*tx_commit_movable)(struct rudp_io *io, uint32_t sock, size_t len, const struct sockaddr *addr,
				  socklen_t addrlen);
	/* Hands every committed datagram to the kernel. Returns datagrams sent
	 * or -errno; a datagram the kernel refuses is counted and dropped. */
	int (*flush)(struct rudp_io *io);
	/* Hands committed datagrams to the kernel, then waits up to
	 * timeout_us (0: not at all) until input may be waiting. Microseconds,
	 * not milliseconds: the conn's timers (a tail probe at srtt plus a
	 * few hundred microseconds) would otherwise fire up to a millisecond
	 * late. A wait shorter than a millisecond sleeps that long, never
	 * spins. Returns 0 (also on a timeout or a signal) or -errno. */
	int (*wait)(struct rudp_io *io, uint64_t timeout_us);
	/* Datagrams committed but not yet handed to the kernel. */
	uint32_t (*pending)(const struct rudp_io *io);
	/* Whether input may be waiting, found without a system call; NULL
	 * when a backend cannot tell (then the answer is always yes). A false
	 * answer can be stale by the time it is used: it only decides whether
	 * pending sends go out now or with the wait that follows. */
	bool (*input_waiting)(struct rudp_io *io);
	/* Serves one more bound socket (the io does not own it; it clears
	 * O_NONBLOCK with io_uring). Returns its index (>= 1, the sock of its
	 * datagrams and of commits that go out on it) or -errno. An index is
	 * reused only after remove_socket. */
	int (*add_socket)(struct rudp_io *io, int fd);
	/* Stops serving socket sock (>= 1): sends committed to it go out first,
	 * its datagrams not yet handed out are dropped; afterwards the owner
	 * may close the fd. */
	void (*remove_socket)(struct rudp_io *io, uint32_t sock);
	void (*destroy)(struct rudp_io *io);
};

/* The watch before a wait (both backends): after RUDP_IO_SPIN_MISSES_MAX
 * watches in a row that ended empty, the next RUDP_IO_SPIN_PAUSE_WAITS
 * waits (every one, with sends to hand over or not) sleep at once: a
 * ping-pong's answer or a quiet peer's next message is further off than
 * any watch, and then a watch is only CPU. */
#define RUDP_IO_SPIN_MISSES_MAX 4
#define RUDP_IO_SPIN_PAUSE_WAITS 64

struct rudp_io {
	const struct rudp_io_ops *ops;
	int fd; /* the UDP socket */
	int poll_fd; /* readable when input is waiting: the socket (mmsg) or the ring (uring) */
	uint32_t batch;
	/* Reading costs no system call (io_uring reaps completions from shared
	 * memory), so the host may read everything before it sends. */
	bool recv_is_free;
	/* Set by the owner: never coalesce datagrams into GSO sends. */
	bool gso_off;
	/* Set by the owner (rudp_config.io.wait_spin_us): how long a wait may
	 * watch for input before it sleeps. */
	uint32_t wait_spin_ns;
	/* The watch's bookkeeping (rudp_io_watch_*): watches in a row that
	 * ended empty, and waits left in a pause that follows too many. */
	uint32_t spin_misses, spin_pause_left;
	struct rudp_io_stats stats;
};

static inline uint64_t rudp_io_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* rudp_io_wait caps a wait at an hour, so a backend may turn it into
 * nanoseconds without overflow; no caller waits that long in one go (the
 * host's longest single wait is a second). */
#define RUDP_IO_WAIT_MAX_US (3600ull * 1000000u)

/* Whether the wait being made may watch for input before it sleeps:
 * wait_spin_ns is set and no pause is on. Every wait counts towards a
 * pause's end, whether it watches or not and whether it carries sends or
 * not: counted only in waits that could watch, a stream in which every
 * wait hands over answers never watched again once paused. */
static inline bool rudp_io_watch_allowed(struct rudp_io *io)
{
	bool watch = io->wait_spin_ns > 0 && io->spin_pause_left == 0;
	if (io->spin_pause_left > 0)
		io->spin_pause_left--;
	return watch;
}

/* Starts a watch in a wait of timeout_us (> 0) and returns the time, in
 * ns, at which it ends: wait_spin_ns from now, but never most of the
 * wait. */
static inline uint64_t rudp_io_watch_start(struct rudp_io *io, uint64_t timeout_us)
{
	uint64_t spin = io->wait_spin_ns;
	if (spin > timeout_us * 500u)
		spin = timeout_us * 500u;
	io->stats.wait_spins++;
	return rudp_io_now_ns() + spin;
}

/* Records how a watch ended: with input (the run of empty ones ends), or
 * empty (RUDP_IO_SPIN_MISSES_MAX in a row start a pause). */
static inline void rudp_io_watch_ended(struct rudp_io *io, bool input)
{
	if (input) {
		io->spin_misses = 0;
		io->stats.wait_spin_hits++;
	} else if (++io->spin_misses >= RUDP_IO_SPIN_MISSES_MAX) {
		io->spin_misses = 0;
		io->spin_pause_left = RUDP_IO_SPIN_PAUSE_WAITS;
	}
}

/* The recvmmsg/sendmmsg backend over an already bound non-blocking fd. */
struct rudp_io *rudp_io_mmsg_create(int fd, uint32_t batch);

/* The io_uring backend over an already bound fd (it clears O_NONBLOCK: the
 * ring, not the socket, decides whether an operation waits). On failure
 * returns NULL and stores a positive errno in *err: ENOSYS (not built, or
 * no kernel support), EPERM (io_uring_disabled, seccomp), EINVAL (a kernel
 * too old for multishot recvmsg or provided-buffer rings), ENOMEM.
 * rx_buffers caps the receive buffers (rudp_config.io.rx_buffers: 0 for
 * 2 x batch, at least 64; else 16..32768, rounded up to a power of two).
 * gro asks the socket for UDP_GRO (rudp_config.io.udp_gro): runs of equal
 * datagrams arrive as one read and recv splits them; each receive buffer is
 * then 68 KiB of address space. On failure UDP_GRO is left off.
 * more_sockets: how many sockets the owner may add (add_socket), so the
 * completion queue has room for all their receives at once. */
struct rudp_io *rudp_io_uring_create(int fd, uint32_t batch, uint32_t rx_buffers, bool gro,
				     uint32_t more_sockets, int *err);

/* Which backend the caller asked for (rudp_config.io.backend values). */
enum rudp_io_choice {
	RUDP_IO_CHOICE_AUTO = 0,
	RUDP_IO_CHOICE_MMSG = 1,
	RUDP_IO_CHOICE_URING = 2,
};

/* Picks and creates the backend (io_select.c). env is the RUDP_IO
 * environment value or NULL; "uring"/"mmsg" in it override choice, "auto"
 * or empty defer to choice. Writes one line for the host log into note
 * (which backend and why) with its log level in *note_level (0 error, 1
 * warning for a fallback, 2 info). Returns NULL with *err = RUDP_E_INVALID
 * (a bad env value), RUDP_E_UNSUPPORTED (uring forced but unusable; errno
 * says why) or RUDP_E_NOMEM. */
struct rudp_io *rudp_io_open(int fd, uint32_t batch, uint32_t rx_buffers, bool gro, uint32_t more_sockets,
			     int choice, const char *env, char *note, size_t note_len, int *note_level,
			     int *err);

static inline int rudp_io_recv(struct rudp_io *io, struct rudp_io_datagram **out)
{
	return io->ops->recv(io, out);
}
static inline uint8_t *rudp_io_tx_slot(struct rudp_io *io)
{
	return io->ops->tx_slot(io);
}
static inline void rudp_io_tx_commit(struct rudp_io *io, size_t len, const struct sockaddr *a, socklen_t alen)
{
	io->ops->tx_commit(io, 0, len, a, alen);
}
static inline void rudp_io_tx_commit_on(struct rudp_io *io, uint32_t sock, size_t len,
					const struct sockaddr *a, socklen_t alen)
{
	io->ops->tx_commit(io, sock, len, a, alen);
}
static inline void rudp_io_tx_commit_movable_on(struct rudp_io *io, uint32_t sock, size_t len,
						const struct sockaddr *a, socklen_t alen)
{
	if (io->ops->tx_commit_movable)
		io->ops->tx_commit_movable(io, sock, len, a, alen);
	else
		io->ops->tx_commit(io, sock, len, a, alen);
}
static inline int rudp_io_add_socket(struct rudp_io *io, int fd)
{
	return io->ops->add_socket(io, fd);
}
static inline void rudp_io_remove_socket(struct rudp_io *io, uint32_t sock)
{
	io->ops->remove_socket(io, sock);
}
static inline int rudp_io_flush(struct rudp_io *io)
{
	return io->ops->flush(io);
}
static inline int rudp_io_wait(struct rudp_io *io, uint64_t timeout_us)
{
	return io->ops->wait(io, timeout_us < RUDP_IO_WAIT_MAX_US ? timeout_us : RUDP_IO_WAIT_MAX_US);
}
static inline uint32_t rudp_io_pending(const struct rudp_io *io)
{
	return io->ops->pending(io);
}
static inline bool rudp_io_input_waiting(struct rudp_io *io)
{
	return io->ops->input_waiting ? io->ops->input_waiting(io) : true;
}
static inline void rudp_io_destroy(struct rudp_io *io)
{
	if (io)
		io->ops->destroy(io);
}

#endif
