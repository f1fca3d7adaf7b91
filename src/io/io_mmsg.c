/* SPDX-License-Identifier: MIT */
/* recvmmsg/sendmmsg backend: one system call moves a whole batch. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "io.h"

struct io_mmsg {
	struct rudp_io base;
	/* receive side */
	struct mmsghdr *rx_hdrs;
	struct iovec *rx_iov;
	struct rudp_io_datagram *rx_out;
	uint8_t *rx_buf;
	/* send side */
	struct mmsghdr *tx_hdrs;
	struct iovec *tx_iov;
	struct sockaddr_storage *tx_addr;
	uint8_t *tx_buf;
	uint32_t tx_count;
};

static int mmsg_recv(struct rudp_io *io, struct rudp_io_datagram **out)
{
	struct io_mmsg *m = (struct io_mmsg *)io;
	for (uint32_t i = 0; i < io->batch; i++) {
		struct msghdr *h = &m->rx_hdrs[i].msg_hdr;
		h->msg_name = &m->rx_out[i].addr;
		h->msg_namelen = sizeof(m->rx_out[i].addr);
		h->msg_iov = &m->rx_iov[i];
		h->msg_iovlen = 1;
		h->msg_control = NULL;
		h->msg_controllen = 0;
		h->msg_flags = 0;
	}
	int n = recvmmsg(io->fd, m->rx_hdrs, io->batch, MSG_DONTWAIT, NULL);
	io->stats.recv_calls++;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return 0;
		/* ICMP errors (port unreachable from a peer that went away) surface
		 * here on Linux; they say nothing about our socket. */
		if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH)
			return 0;
		return -errno;
	}
	for (int i = 0; i < n; i++) {
		struct rudp_io_datagram *d = &m->rx_out[i];
		d->addrlen = m->rx_hdrs[i].msg_hdr.msg_namelen;
		d->data = m->rx_buf + (size_t)i * RUDP_IO_SLOT_SIZE;
		d->len = m->rx_hdrs[i].msg_len;
		d->truncated = (m->rx_hdrs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
		io->stats.bytes_received += d->len;
	}
	io->stats.datagrams_received += (uint64_t)n;
	*out = m->rx_out;
	return n;
}

/* Waits briefly for room in the socket buffer: a full send buffer is
 * momentary on a healthy host, and waiting beats dropping a whole batch. */
static bool wait_writable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	return poll(&p, 1, 5) > 0;
}

static int mmsg_flush(struct rudp_io *io)
{
	struct io_mmsg *m = (struct io_mmsg *)io;
	uint32_t done = 0;
	int waits = 0;
	while (done < m->tx_count) {
		int n = sendmmsg(io->fd, m->tx_hdrs + done, m->tx_count - done, MSG_DONTWAIT);
		io->stats.send_calls++;
		if (n > 0) {
			for (int i = 0; i < n; i++)
				io->stats.bytes_sent += m->tx_hdrs[done + (uint32_t)i].msg_len;
			done += (uint32_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) && waits < 20) {
			waits++;
			wait_writable(io->fd);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		/* The kernel refused this datagram (unreachable, too big, buffer
		 * still full): drop it and go on; lost reliable frames are resent. */
		io->stats.send_errors++;
		done++;
	}
	io->stats.datagrams_sent += m->tx_count;
	int sent = (int)m->tx_count;
	m->tx_count = 0;
	return sent;
}

static uint8_t *mmsg_tx_slot(struct rudp_io *io)
{
	struct io_mmsg *m = (struct io_mmsg *)io;
	if (m->tx_count == io->batch)
		mmsg_flush(io);
	return m->tx_buf + (size_t)m->tx_count * RUDP_IO_SLOT_SIZE;
}

static void mmsg_tx_commit(struct rudp_io *io, size_t len, const struct sockaddr *addr, socklen_t addrlen)
{
	struct io_mmsg *m = (struct io_mmsg *)io;
	uint32_t i = m->tx_count;
	if (len > RUDP_IO_SLOT_SIZE || addrlen > sizeof(m->tx_addr[i]))
		return;
	memcpy(&m->tx_addr[i], addr, addrlen);
	m->tx_iov[i].iov_base = m->tx_buf + (size_t)i * RUDP_IO_SLOT_SIZE;
	m->tx_iov[i].iov_len = len;
	struct msghdr *h = &m->tx_hdrs[i].msg_hdr;
	memset(h, 0, sizeof(*h));
	h->msg_name = &m->tx_addr[i];
	h->msg_namelen = addrlen;
	h->msg_iov = &m->tx_iov[i];
	h->msg_iovlen = 1;
	m->tx_count++;
}

static int mmsg_wait(struct rudp_io *io, int timeout_ms)
{
	mmsg_flush(io);
	if (timeout_ms <= 0)
		return 0;
	struct pollfd p = {.fd = io->fd, .events = POLLIN};
	if (poll(&p, 1, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

static uint32_t mmsg_pending(const struct rudp_io *io)
{
	return ((const struct io_mmsg *)io)->tx_count;
}

static void mmsg_destroy(struct rudp_io *io)
{
	struct io_mmsg *m = (struct io_mmsg *)io;
	free(m->rx_hdrs);
	free(m->rx_iov);
	free(m->rx_out);
	free(m->rx_buf);
	free(m->tx_hdrs);
	free(m->tx_iov);
	free(m->tx_addr);
	free(m->tx_buf);
	free(m);
}

static const struct rudp_io_ops mmsg_ops = {
	.name = "mmsg",
	.recv = mmsg_recv,
	.tx_slot = mmsg_tx_slot,
	.tx_commit = mmsg_tx_commit,
	.flush = mmsg_flush,
	.wait = mmsg_wait,
	.pending = mmsg_pending,
	.destroy = mmsg_destroy,
};

struct rudp_io *rudp_io_mmsg_create(int fd, uint32_t batch)
{
	if (batch == 0)
		return NULL;
	struct io_mmsg *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->base.ops = &mmsg_ops;
	m->base.fd = fd;
	m->base.poll_fd = fd;
	m->base.batch = batch;
	m->rx_hdrs = calloc(batch, sizeof(*m->rx_hdrs));
	m->rx_iov = calloc(batch, sizeof(*m->rx_iov));
	m->rx_out = calloc(batch, sizeof(*m->rx_out));
	m->rx_buf = malloc((size_t)batch * RUDP_IO_SLOT_SIZE);
	m->tx_hdrs = calloc(batch, sizeof(*m->tx_hdrs));
	m->tx_iov = calloc(batch, sizeof(*m->tx_iov));
	m->tx_addr = calloc(batch, sizeof(*m->tx_addr));
	m->tx_buf = malloc((size_t)batch * RUDP_IO_SLOT_SIZE);
	if (!m->rx_hdrs || !m->rx_iov || !m->rx_out || !m->rx_buf || !m->tx_hdrs || !m->tx_iov ||
	    !m->tx_addr || !m->tx_buf) {
		mmsg_destroy(&m->base);
		return NULL;
	}
	for (uint32_t i = 0; i < batch; i++) {
		m->rx_iov[i].iov_base = m->rx_buf + (size_t)i * RUDP_IO_SLOT_SIZE;
		m->rx_iov[i].iov_len = RUDP_IO_SLOT_SIZE;
	}
	return &m->base;
}
