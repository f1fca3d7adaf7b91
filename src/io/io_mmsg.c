/* SPDX-License-Identifier: MIT */
/* recvmmsg/sendmmsg backend: one system call moves a whole batch. With more
 * than one socket (add_socket) an epoll set says which have input: the
 * host's poll fd becomes the epoll fd, and each recv call reads the ready
 * sockets in turn until the batch is full. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Ready sockets taken from the epoll set per epoll_wait. */
#define READY_MAX 64

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
	uint32_t *tx_sock; /* the socket each committed datagram goes out on */
	uint32_t tx_count;
	/* sockets: fds[0] is base.fd; -1 marks a free index */
	int *fds;
	uint32_t nfds, fds_cap;
	int ep; /* the epoll set, made when the second socket comes; else -1 */
	struct epoll_event *ready; /* from the last epoll_wait, [ready_pos, ready_len) not yet drained */
	uint32_t ready_pos, ready_len;
};

/* Hands out datagrams [first, first + n) of the receive arrays as read from
 * socket sock. */
static void took(struct io_mmsg *m, uint32_t first, int n, uint32_t sock)
{
	for (uint32_t i = first; i < first + (uint32_t)n; i++) {
		struct rudp_io_datagram *d = &m->rx_out[i];
		d->addrlen = m->rx_hdrs[i].msg_hdr.msg_namelen;
		d->data = m->rx_buf + (size_t)i * RUDP_IO_SLOT_SIZE;
		d->len = m->rx_hdrs[i].msg_len;
		d->sock = sock;
		d->truncated = (m->rx_hdrs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
		m->base.stats.bytes_received += d->len;
	}
}

/* An error that says nothing about our socket: nothing to read, or an ICMP
 * error (port unreachable from a peer that went away), which Linux reports
 * on the next read. */
static bool recv_error_harmless(int e)
{
	return e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNREFUSED || e == EHOSTUNREACH ||
	       e == ENETUNREACH;
}

/* Several sockets: reads the ready ones in turn into the batch. A socket
 * that filled the rest of the batch may hold more and stays first for the
 * next call. */
static int recv_ready(struct io_mmsg *m)
{
	struct rudp_io *io = &m->base;
	uint32_t n = 0;
	if (m->ready_pos == m->ready_len) {
		int k = epoll_wait(m->ep, m->ready, READY_MAX, 0);
		io->stats.recv_calls++;
		if (k < 0)
			return errno == EINTR ? 0 : -errno;
		m->ready_pos = 0;
		m->ready_len = (uint32_t)k;
	}
	while (n < io->batch && m->ready_pos < m->ready_len) {
		uint32_t sock = m->ready[m->ready_pos].data.u32;
		int fd = sock < m->nfds ? m->fds[sock] : -1;
		if (fd < 0) {
			m->ready_pos++; /* removed since */
			continue;
		}
		int k = recvmmsg(fd, m->rx_hdrs + n, io->batch - n, MSG_DONTWAIT, NULL);
		io->stats.recv_calls++;
		if (k < 0) {
			int e = errno;
			if (recv_error_harmless(e) || sock != 0) {
				/* An error on a connection's own socket is that
				 * connection's: its peer times out, the host goes on. */
				m->ready_pos++;
				continue;
			}
			if (n > 0)
				break;
			m->ready_pos++;
			return -e;
		}
		took(m, n, k, sock);
		n += (uint32_t)k;
		if (n < io->batch)
			m->ready_pos++; /* drained */
	}
	return (int)n;
}

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
	int n;
	if (m->ep >= 0) {
		n = recv_ready(m);
		if (n < 0)
			return n;
	} else {
		n = recvmmsg(io->fd, m->rx_hdrs, io->batch, MSG_DONTWAIT, NULL);
		io->stats.recv_calls++;
		if (n < 0)
			return recv_error_harmless(errno) ? 0 : -errno;
		took(m, 0, n, 0);
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
		/* One sendmmsg per run of datagrams for the same socket. */
		uint32_t sock = m->tx_sock[done], end = done + 1;
		while (end < m->tx_count && m->tx_sock[end] == sock)
			end++;
		int fd = sock < m->nfds ? m->fds[sock] : -1;
		if (fd < 0) {
			io->stats.send_errors += end - done; /* cannot happen: remove flushes first */
			done = end;
			continue;
		}
		int n = sendmmsg(fd, m->tx_hdrs + done, end - done, MSG_DONTWAIT);
		io->stats.send_calls++;
		if (n > 0) {
			for (int i = 0; i < n; i++)
				io->stats.bytes_sent += m->tx_hdrs[done + (uint32_t)i].msg_len;
			done += (uint32_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) && waits < 20) {
			waits++;
			wait_writable(fd);
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

static void mmsg_tx_commit(struct rudp_io *io, uint32_t sock, size_t len, const struct sockaddr *addr,
			   socklen_t addrlen)
{
	struct io_mmsg *m = (struct io_mmsg *)io;
	uint32_t i = m->tx_count;
	if (len > RUDP_IO_SLOT_SIZE || addrlen > sizeof(m->tx_addr[i]) || sock >= m->nfds ||
	    m->fds[sock] < 0) {
		io->stats.send_errors++;
		return;
	}
	m->tx_sock[i] = sock;
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

/* Sends what is pending, then waits up to timeout_us for input. Like
 * io_uring's wait it may first watch for input, for up to wait_spin_ns
 * (rudp_io_watch_*): a sleep and its wake-up cost several microseconds
 * (more in a VM, where waking a CPU traps to the hypervisor), and in a
 * ping-pong or a stream the next datagram is often closer than that.
 * Without shared memory to look at, the watch asks the kernel with
 * poll(0), one system call per look (each counted in recv_calls, as
 * the poll that sleeps is: rudp_host_stats.syscalls_recv), which still
 * costs less than a sleep and its wake-up when input comes soon. The
 * sleep is ppoll's, whose timespec keeps a sub-millisecond deadline (a
 * tail probe's) that poll's milliseconds would round up. */
static int mmsg_wait(struct rudp_io *io, uint64_t timeout_us)
{
	mmsg_flush(io);
	if (timeout_us == 0)
		return 0;
	struct pollfd p = {.fd = io->poll_fd, .events = POLLIN};
	if (rudp_io_watch_allowed(io)) {
		uint64_t end = rudp_io_watch_start(io, timeout_us);
		bool input = false;
		do {
			int k = poll(&p, 1, 0);
			io->stats.recv_calls++;
			if (k < 0 && errno != EINTR)
				return -errno;
			input = k > 0;
		} while (!input && rudp_io_now_ns() < end);
		rudp_io_watch_ended(io, input);
		if (input)
			return 0;
	}
	struct timespec ts = {.tv_sec = (time_t)(timeout_us / 1000000u),
			      .tv_nsec = (long)(timeout_us % 1000000u) * 1000};
	int k = ppoll(&p, 1, &ts, NULL);
	io->stats.recv_calls++;
	if (k < 0 && errno != EINTR)
		return -errno;
	return 0;
}

static uint32_t mmsg_pending(const struct rudp_io *io)
{
	return ((const struct io_mmsg *)io)->tx_count;
}

static int mmsg_add_socket(struct rudp_io *io, int fd)
{
	struct io_mmsg *m = (struct io_mmsg *)io;
	if (m->ep < 0) {
		int ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0)
			return -errno;
		struct epoll_event e = {.events = EPOLLIN, .data.u32 = 0};
		if (!m->ready)
			m->ready = calloc(READY_MAX, sizeof(*m->ready));
		if (!m->ready || epoll_ctl(ep, EPOLL_CTL_ADD, io->fd, &e) < 0) {
			int err = m->ready ? errno : ENOMEM;
			close(ep);
			return -err;
		}
		m->ep = ep;
		io->poll_fd = ep;
	}
	uint32_t i = 1;
	while (i < m->nfds && m->fds[i] >= 0)
		i++;
	if (i == m->fds_cap) {
		if (m->fds_cap >= (1u << 24))
			return -EMFILE;
		int *fds = realloc(m->fds, (size_t)m->fds_cap * 2 * sizeof(*fds));
		if (!fds)
			return -ENOMEM;
		m->fds = fds;
		m->fds_cap *= 2;
	}
	struct epoll_event e = {.events = EPOLLIN, .data.u32 = i};
	if (epoll_ctl(m->ep, EPOLL_CTL_ADD, fd, &e) < 0)
		return -errno;
	if (i == m->nfds)
		m->nfds++;
	m->fds[i] = fd;
	return (int)i;
}

static void mmsg_remove_socket(struct rudp_io *io, uint32_t sock)
{
	struct io_mmsg *m = (struct io_mmsg *)io;
	if (sock == 0 || sock >= m->nfds || m->fds[sock] < 0)
		return;
	mmsg_flush(io);
	epoll_ctl(m->ep, EPOLL_CTL_DEL, m->fds[sock], NULL);
	m->fds[sock] = -1;
}

static void mmsg_destroy(struct rudp_io *io)
{
	struct io_mmsg *m = (struct io_mmsg *)io;
	if (m->ep >= 0)
		close(m->ep);
	free(m->fds);
	free(m->ready);
	free(m->tx_sock);
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
	.add_socket = mmsg_add_socket,
	.remove_socket = mmsg_remove_socket,
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
	m->tx_sock = calloc(batch, sizeof(*m->tx_sock));
	m->ep = -1;
	m->fds = malloc(sizeof(*m->fds));
	if (m->fds) {
		m->fds[0] = fd;
		m->nfds = m->fds_cap = 1;
	}
	if (!m->rx_hdrs || !m->rx_iov || !m->rx_out || !m->rx_buf || !m->tx_hdrs || !m->tx_iov ||
	    !m->tx_addr || !m->tx_buf || !m->tx_sock || !m->fds) {
		mmsg_destroy(&m->base);
		return NULL;
	}
	for (uint32_t i = 0; i < batch; i++) {
		m->rx_iov[i].iov_base = m->rx_buf + (size_t)i * RUDP_IO_SLOT_SIZE;
		m->rx_iov[i].iov_len = RUDP_IO_SLOT_SIZE;
	}
	return &m->base;
}
