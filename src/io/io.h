/* SPDX-License-Identifier: MIT */
/*
 * io: moves batches of UDP datagrams between one socket and the host.
 *
 * The host sees only this interface, so a backend (recvmmsg/sendmmsg today,
 * io_uring later) is chosen once at host creation and never leaks upward.
 * Receive hands out a batch of datagrams that stay valid until the next
 * receive; send is two-step (take a slot, commit it) so the conn layer can
 * write a datagram straight into the batch that goes to the kernel.
 */
#ifndef RUDP_IO_H
#define RUDP_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A datagram slot is this large: RakNet MTUs stop at 1500, and anything
 * longer is truncated by the kernel (MSG_TRUNC) and dropped. */
#define RUDP_IO_SLOT_SIZE 2048

struct rudp_io_datagram {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint8_t *data;
	size_t len;
	bool truncated; /* longer than the slot: never processed */
};

struct rudp_io_stats {
	uint64_t recv_calls, send_calls;
	uint64_t datagrams_received, datagrams_sent;
	uint64_t bytes_received, bytes_sent;
	uint64_t send_errors; /* datagrams the kernel refused (dropped; reliability resends) */
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
	/* Commits len bytes of the last slot to addr. */
	void (*tx_commit)(struct rudp_io *io, size_t len, const struct sockaddr *addr, socklen_t addrlen);
	/* Hands every committed datagram to the kernel. Returns datagrams sent
	 * or -errno; a datagram the kernel refuses is counted and dropped. */
	int (*flush)(struct rudp_io *io);
	void (*destroy)(struct rudp_io *io);
};

struct rudp_io {
	const struct rudp_io_ops *ops;
	int fd;
	uint32_t batch;
	struct rudp_io_stats stats;
};

/* The recvmmsg/sendmmsg backend over an already bound non-blocking fd. */
struct rudp_io *rudp_io_mmsg_create(int fd, uint32_t batch);

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
	io->ops->tx_commit(io, len, a, alen);
}
static inline int rudp_io_flush(struct rudp_io *io)
{
	return io->ops->flush(io);
}
static inline void rudp_io_destroy(struct rudp_io *io)
{
	if (io)
		io->ops->destroy(io);
}

#endif
