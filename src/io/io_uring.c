/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend, set-up and teardown: the backend's creation and its
 * ops table, the ring made (and made again in a forked child), sockets
 * added and removed, and destroy, which first lets what is still in the
 * kernel finish. The datagrams themselves move in io_uring_recv.c and
 * io_uring_send.c; io_uring_internal.h says how the parts fit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_uring_internal.h"

/* How long destroy waits for sends still in the kernel before the memory
 * they point at is freed (and remove_socket for a cancelled receive). */
#define DESTROY_DRAIN_MS 200

volatile unsigned uring_fork_generation;

/* Queues a cancel of socket i's receive. */
static void cancel_recv(struct io_ring *r, uint32_t i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (!sqe) {
		uring_submit(r);
		sqe = io_uring_get_sqe(&r->ring);
	}
	if (!sqe)
		return;
	io_uring_prep_cancel64(sqe, RECV_TAG_BASE + i, 0);
	io_uring_sqe_set_data64(sqe, CANCEL_TAG);
}

static void uring_destroy(struct rudp_io *io)
{
	struct io_ring *r = (struct io_ring *)io;
	if (r->ring_ready && r->fork_gen != uring_fork_generation) {
		/* Inherited from the parent, which still owns the ring's requests
		 * and buffers: drop only this process's mapping and fd. */
		io_uring_queue_exit(&r->ring);
	} else if (r->ring_ready) {
		uring_submit(r);
		/* A posted receive holds a reference to its socket, and the
		 * kernel tears a ring down in the background: without a cancel
		 * the port stays bound for a while after the host is gone, and a
		 * server restarted at once fails with EADDRINUSE. */
		for (uint32_t i = 0; i < r->socks.n; i++) {
			r->socks.slot[i].live = false;
			if (r->socks.slot[i].armed)
				cancel_recv(r, i);
		}
		uring_submit(r);
		/* Sends still in the kernel point into tx.area: let them finish;
		 * and wait for the receives' last completions. */
		uint64_t give_up = rudp_io_now_ns() + DESTROY_DRAIN_MS * 1000000ull;
		uring_reap(r);
		while (uring_tx_inflight(&r->tx) > 0 || r->socks.armed > 0) {
			struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000000};
			struct io_uring_cqe *cqe;
			io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
			uring_reap(r);
			if (rudp_io_now_ns() > give_up)
				break;
		}
		if (r->buffers_registered)
			io_uring_unregister_buf_ring(&r->ring, BUF_GROUP);
		io_uring_queue_exit(&r->ring);
	}
	uring_rx_free(&r->rx);
	uring_tx_free(&r->tx);
	free(r->socks.slot);
	free(r->socks.rearm);
	free(r);
}

/* Doubles the socket table (to at most 2^24 slots). Returns 0 or -errno. */
static int socks_grow(struct uring_socks *s)
{
	if (s->cap >= (1u << 24))
		return -EMFILE;
	uint32_t cap = s->cap * 2;
	struct ring_sock *slot = realloc(s->slot, cap * sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	s->slot = slot;
	uint32_t *rearm = malloc(2 * (size_t)cap * sizeof(*rearm));
	if (!rearm)
		return -ENOMEM;
	/* The queues wrap at the old size: unwrap them into the new. */
	for (uint32_t q = 0; q < 2; q++) {
		for (uint32_t k = 0; k < s->rearm_qlen[q]; k++)
			rearm[q * cap + k] = s->rearm[q * s->cap + (s->rearm_head[q] + k) % s->cap];
		s->rearm_head[q] = 0;
	}
	free(s->rearm);
	s->rearm = rearm;
	s->cap = cap;
	return 0;
}

/* One more socket on this ring: its receive draws from the same buffers,
 * so a host with a socket per connection holds one pool, not one each. */
static int uring_add_socket(struct rudp_io *io, int fd)
{
	struct io_ring *r = (struct io_ring *)io;
	int c = uring_ring_check(r);
	if (c < 0)
		return c;
	/* The ring, not the socket, decides whether an operation waits (see
	 * uring_create). */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return -errno;
	uring_rx_prepare_socket(&r->rx, fd);
	uint32_t i = 1;
	while (i < r->socks.n && (r->socks.slot[i].fd >= 0 || r->socks.slot[i].zombie))
		i++;
	if (i == r->socks.cap) {
		int e = socks_grow(&r->socks);
		if (e < 0)
			return e;
	}
	if (i == r->socks.n) {
		r->socks.n++;
		r->socks.slot[i].on_rearm = false;
	}
	/* A removed socket's index may still be on the rearm queue: it stays
	 * there once, for the new socket. */
	bool queued = r->socks.slot[i].on_rearm;
	r->socks.slot[i] = (struct ring_sock){.fd = fd, .live = true, .on_rearm = queued};
	uring_socks_push_rearm(&r->socks, i, true); /* armed by the next recv call */
	/* A buffer per socket at least: a starved pool ends the receive of
	 * every socket that gets data meanwhile. */
	uring_rx_provide_at_least(&r->rx, &io->stats, r->socks.n);
	return (int)i;
}

/* Stops reading socket i and forgets it. Sends committed to it go to the
 * kernel first (which holds the file from then on); its receive is
 * cancelled and waited for (so the caller may close the fd and a new
 * socket may take the index); its datagrams not yet handed out are
 * dropped. */
static void uring_remove_socket(struct rudp_io *io, uint32_t i)
{
	struct io_ring *r = (struct io_ring *)io;
	if (i == 0 || i >= r->socks.n || !r->socks.slot[i].live)
		return;
	struct ring_sock *so = &r->socks.slot[i];
	so->live = false;
	if (uring_ring_check(r) == 0) {
		uring_submit(r);
		if (so->armed) {
			cancel_recv(r, i);
			uring_submit(r);
			uint64_t give_up = rudp_io_now_ns() + DESTROY_DRAIN_MS * 1000000ull;
			uring_reap(r);
			while (so->armed) {
				struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000000};
				struct io_uring_cqe *cqe;
				io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
				uring_reap(r);
				if (rudp_io_now_ns() > give_up)
					break;
			}
		}
	}
	uring_rx_drop_socket(&r->rx, i);
	/* A receive that did not end in time may still post: never reuse. */
	so->zombie = so->armed;
	so->fd = -1;
}

static const struct rudp_io_ops uring_ops = {
	.name = "uring",
	.recv = uring_recv,
	.tx_slot = uring_tx_slot,
	.tx_commit = uring_tx_commit,
	.tx_commit_movable = uring_tx_commit_movable,
	.flush = uring_flush,
	.wait = uring_wait,
	.pending = uring_pending,
	.input_waiting = uring_input_waiting,
	.add_socket = uring_add_socket,
	.remove_socket = uring_remove_socket,
	.destroy = uring_destroy,
};

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

/* Makes the ring, registers the provided buffers (all of them back in the
 * ring) and arms the receive. Returns 0 or a positive errno. */
static int ring_start(struct io_ring *r)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	/* The CQ holds every completion that can be outstanding at once (one
	 * per buffer and per send slot, plus the re-arm), so it never
	 * overflows and multishot is never ended by overflow. */
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = pow2_at_least(r->rx.count + r->tx.cap + 4 + WAKE_TIMERS + r->max_socks);
	/* Cooperative task running: a datagram that arrives while this thread
	 * runs in user space no longer interrupts it (by default the kernel
	 * forces it into the kernel at once to run the receive, a large share
	 * of a single-connection client's time); the work runs at the
	 * thread's next system call, and TASKRUN_FLAG tells uring_reap() when
	 * to make one. A thread asleep (in the ring's wait or in poll on
	 * rudp_host_fd()) is still woken. Kernels before 5.19 refuse the
	 * flags; they also lack multishot recvmsg, so the retry without them
	 * only reaches the usual EINVAL fallback. */
	p.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	int e = io_uring_queue_init_params(pow2_at_least(r->tx.cap + 2), &r->ring, &p);
	if (e == -EINVAL) {
		p.flags &= ~(unsigned)(IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
		e = io_uring_queue_init_params(pow2_at_least(r->tx.cap + 2), &r->ring, &p);
	}
	if (e < 0)
		return -e;
	r->ring_ready = true;
	r->base.poll_fd = r->ring.ring_fd;

	e = uring_rx_start(&r->rx, &r->ring);
	if (e < 0)
		return -e; /* EINVAL before 5.19 */
	r->buffers_registered = true;
	uring_tx_start(&r->tx, (p.features & IORING_FEAT_SUBMIT_STABLE) != 0);
	memset(r->wake.at_ns, 0, sizeof(r->wake.at_ns));

	/* A new ring has no receive posted (after fork the old ones were
	 * cancelled): the first socket's is posted and checked here, the
	 * others' at the next recv call. */
	r->socks.armed = 0;
	r->socks.rearm_head[0] = r->socks.rearm_head[1] = r->socks.rearm_qlen[0] = r->socks.rearm_qlen[1] =
		r->socks.rearm_len = 0;
	for (uint32_t i = 0; i < r->socks.n; i++) {
		r->socks.slot[i].armed = r->socks.slot[i].on_rearm = r->socks.slot[i].zombie = false;
		if (r->socks.slot[i].fd < 0)
			r->socks.slot[i].live = false;
	}
	uring_rx_arm(r, 0);
	e = uring_submit_counted(r, &r->base.stats.recv_calls);
	if (e < 0)
		return -e;
	/* A kernel without multishot recvmsg (before 6.0) rejects the request
	 * at once, so its CQE is already here. */
	uring_reap(r);
	if (!r->socks.slot[0].armed || r->rx.error)
		return r->rx.error ? -r->rx.error : EINVAL;
	for (uint32_t i = 1; i < r->socks.n; i++)
		if (r->socks.slot[i].live)
			uring_socks_push_rearm(&r->socks, i, true);
	r->fork_gen = uring_fork_generation;
	return 0;
}

/* A ring belongs to the process that made it: its requests run in that
 * process and write received data into that process's memory. A forked
 * child that services the host (the parent leaving it alone) cancels the
 * inherited receive, so the parent's ring stops taking datagrams, and makes
 * its own ring. */
int uring_adopt_after_fork(struct io_ring *r)
{
	for (uint32_t i = 0; i < r->socks.n; i++) {
		if (!r->socks.slot[i].armed)
			continue;
		struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
		if (!sqe) {
			io_uring_submit(&r->ring);
			sqe = io_uring_get_sqe(&r->ring);
		}
		if (!sqe)
			break;
		io_uring_prep_cancel64(sqe, RECV_TAG_BASE + i, 0);
		io_uring_sqe_set_data64(sqe, CANCEL_TAG);
	}
	io_uring_submit(&r->ring);
	/* Only this process's mapping and fd go; the parent keeps its ring. */
	io_uring_queue_exit(&r->ring);
	r->ring_ready = false;
	r->buffers_registered = false;
	int e = ring_start(r);
	if (e != 0) {
		r->broken = e;
		return -e;
	}
	return 0;
}

static void note_fork(void)
{
	uring_fork_generation++;
}

static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, note_fork);
}

static struct rudp_io *uring_create(int fd, uint32_t batch, uint32_t rx_buffers, bool gro,
				    uint32_t more_sockets, int *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, register_fork_handler);
	*err = 0;
	if (batch == 0 || batch > 1024 || more_sockets > (1u << 24) ||
	    (rx_buffers != 0 && (rx_buffers < RX_INITIAL || rx_buffers > 32768))) {
		*err = EINVAL;
		return NULL;
	}
	struct io_ring *r = calloc(1, sizeof(*r));
	if (!r) {
		*err = ENOMEM;
		return NULL;
	}
	r->base.ops = &uring_ops;
	r->base.fd = fd;
	r->base.batch = batch;
	r->base.recv_is_free = true;
	r->max_socks = more_sockets;
	/* The first socket; more come with add_socket (arrays grown then). */
	r->socks.slot = calloc(1, sizeof(*r->socks.slot));
	r->socks.rearm = calloc(2, sizeof(*r->socks.rearm));
	r->socks.cap = 1;
	r->socks.n = 1;
	if (r->socks.slot)
		r->socks.slot[0] = (struct ring_sock){.fd = fd, .live = true};
	/* At most two batches of receive buffers: the host holds one while
	 * the kernel fills the other. More would only be memory, since a burst
	 * beyond them waits in the socket's receive buffer (multishot ends
	 * with ENOBUFS and is re-armed). 64 at least so small batches still
	 * absorb a window, 32768 at most (buffer ids are 16 bits). They are
	 * provided as needed, RX_INITIAL or RX_INITIAL_GRO first (see
	 * io_uring_recv.c). The owner may cap them lower (rx_buffers): a client
	 * among hundreds in one process rarely needs a window's worth at once. */
	uint32_t rx_count = pow2_at_least(rx_buffers ? rx_buffers : batch * 2 < 64 ? 64 : batch * 2);
	/* Sockets added later share the pool. By default it may grow to two
	 * buffers per socket, rounded up to a power of two (the ring's size):
	 * a starved pool ends the receive of every socket that gets data
	 * meanwhile, and each must be re-armed; 2 per socket moves as much
	 * as 4 or 8 with less memory. Without UDP_GRO, whether or not the
	 * owner caps the pool: a GRO buffer is 68 KiB, and a connection's
	 * share of the traffic seldom has a run to coalesce, so GRO would
	 * multiply the pool's memory for nothing. */
	if (more_sockets > 0) {
		uint64_t want = ((uint64_t)more_sockets + 1) * 2;
		if (!rx_buffers)
			rx_count = pow2_at_least(want < 32768 ? (uint32_t)want : 32768);
		gro = false;
	}
	bool rx_ok = uring_rx_alloc(&r->rx, fd, rx_count, gro, batch);
	bool tx_ok = uring_tx_alloc(&r->tx, batch);
	if (!rx_ok || !tx_ok || !r->socks.slot || !r->socks.rearm) {
		*err = ENOMEM;
		uring_destroy(&r->base);
		return NULL;
	}

	/* A non-blocking socket would make io_uring fail a send with EAGAIN
	 * instead of finishing it when the buffer drains, and could end the
	 * multishot receive whenever the queue is empty. Nothing else reads or
	 * writes this socket directly. */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		*err = errno;
		uring_destroy(&r->base);
		return NULL;
	}
	int e = ring_start(r);
	if (e != 0) {
		*err = e;
		fcntl(fd, F_SETFL, fl);
		uring_destroy(&r->base);
		return NULL;
	}
	return &r->base;
}

struct rudp_io *rudp_io_uring_create(int fd, uint32_t batch, uint32_t rx_buffers, bool gro,
				     uint32_t more_sockets, int *err)
{
	struct rudp_io *io = uring_create(fd, batch, rx_buffers, gro, more_sockets, err);
	/* The socket may go on to the mmsg backend, whose buffers hold one
	 * datagram each: a failure leaves UDP_GRO off. */
	if (!io && gro)
		uring_set_gro(fd, false);
	return io;
}
