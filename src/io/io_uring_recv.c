/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend, receive: multishot recvmsg over a provided-buffer
 * ring, the buffers grown as the traffic asks, UDP GRO runs split back
 * into datagrams.
 *
 * One multishot recvmsg per socket draws buffers from a provided-buffer
 * ring, so every datagram the kernel reads becomes a completion (CQE) that
 * names the buffer holding [io_uring_recvmsg_out | source address |
 * payload]. Reaping completions is a read of shared memory, not a system
 * call. A buffer handed to the host stays out of the ring until the next
 * recv call (the io contract: data valid until the next receive), then
 * goes back. The kernel ends a multishot (a CQE without IORING_CQE_F_MORE)
 * when it runs out of buffers or hits an error; it is re-armed once
 * buffers are back. A datagram that finds no buffer stays in the socket
 * queue, so ENOBUFS loses nothing.
 *
 * Receive buffers are handed to the kernel as the traffic asks for them: a
 * host starts with a few and doubles them (up to rx.count) each time the
 * kernel runs out (the ENOBUFS that ends a multishot). They live in one
 * mapping reserved for the whole pool but faulted in page by page, so a
 * buffer never provided costs address space only, and a provided one only
 * as many pages as the kernel has written into it. A client or a quiet peer
 * keeps a few dozen KiB; a busy server grows to the full pool within its
 * first bursts. Every provided buffer becomes resident (the ring hands them
 * out in turn), which is why they are not all provided at once.
 *
 * UDP GRO (rudp_config.io.udp_gro): the socket asks for UDP_GRO, so a run of
 * equal datagrams from one sender (the GSO run of a librudp peer, which on
 * loopback reaches the socket unsplit; a burst a NIC coalesced) arrives as
 * one completion holding up to 64 KiB, with a control message that gives
 * the segment size. recv splits it back into datagrams, without copying:
 * each points into the buffer. The kernel's per-datagram receive work
 * (queueing, wakeups, one completion each) is then paid per run, which is
 * what lets a single connection approach a TCP stream's rate. Such a buffer
 * must hold the largest UDP payload (a shorter one would truncate a run:
 * data lost), so GRO buffers are 64 KiB each; a host starts with
 * RX_INITIAL_GRO of them, and their pages become resident only as deep as
 * the runs written into them. A completion with more datagrams than the
 * batch is handed out over several recv calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io_uring_internal.h"

/* Source address space in each receive buffer: our sockets are AF_INET or
 * AF_INET6, and a sockaddr_storage holds either. */
#define NAME_SPACE ((unsigned)sizeof(struct sockaddr_storage))
#define RX_STRIDE (sizeof(struct io_uring_recvmsg_out) + NAME_SPACE + RUDP_IO_SLOT_SIZE)
/* With UDP_GRO: room for the segment size's control message, and for the
 * largest UDP payload (65,527 bytes over IPv6, 65,507 over IPv4), rounded
 * up to a whole number of pages (gro_stride()), so each buffer starts on
 * its own page and a run touches only the pages it fills. */
#define GRO_CONTROL_SPACE CMSG_SPACE(sizeof(int))
#define GRO_PAYLOAD_SPACE 65536u
#define GRO_BYTES (sizeof(struct io_uring_recvmsg_out) + NAME_SPACE + GRO_CONTROL_SPACE + GRO_PAYLOAD_SPACE)

static uint8_t *rx_buf(const struct uring_rx *rx, uint32_t bid)
{
	return rx->mem + (size_t)bid * rx->stride;
}

/* The kernel ran out of buffers: double them (up to rx.count) and hand the
 * new ones to the buffer ring. */
static void rx_grow(struct uring_rx *rx, struct rudp_io_stats *stats)
{
	uint32_t first = rx->ready;
	rx->ready = rx->ready * 2 < rx->count ? rx->ready * 2 : rx->count;
	uint32_t mask = (uint32_t)io_uring_buf_ring_mask(rx->count);
	int offset = 0;
	for (uint32_t bid = first; bid < rx->ready; bid++)
		io_uring_buf_ring_add(rx->br, rx_buf(rx, bid), (unsigned)rx->stride, (unsigned short)bid,
				      (int)mask, offset++);
	io_uring_buf_ring_advance(rx->br, offset);
	stats->rx_buffer_grows += offset > 0;
}

void uring_rx_provide_at_least(struct uring_rx *rx, struct rudp_io_stats *stats, uint32_t want)
{
	while (rx->ready < rx->count && rx->ready < want)
		rx_grow(rx, stats);
}

void uring_socks_push_rearm(struct uring_socks *socks, uint32_t i, bool starved)
{
	struct ring_sock *so = &socks->slot[i];
	if (so->on_rearm)
		return;
	so->on_rearm = true;
	uint32_t q = starved ? 0 : 1;
	socks->rearm[q * socks->cap + (socks->rearm_head[q] + socks->rearm_qlen[q]++) % socks->cap] = i;
	socks->rearm_len++;
}

void uring_rx_on_cqe(struct uring_rx *rx, struct uring_socks *socks, uint64_t i,
		     const struct io_uring_cqe *cqe)
{
	if (i >= socks->n)
		return; /* not ours: cannot happen */
	struct ring_sock *so = &socks->slot[i];
	if (cqe->flags & IORING_CQE_F_BUFFER)
		so->got = true;
	if (!(cqe->flags & IORING_CQE_F_MORE) && so->armed) {
		so->armed = false;
		socks->armed--;
		if (so->live)
			uring_socks_push_rearm(socks, (uint32_t)i, !so->got);
	}
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		uint32_t bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		if (!so->live) {
			/* A socket being removed: its data goes, the buffer goes
			 * back to the ring at the next recv call. */
			rx->held[rx->held_len++] = bid;
			return;
		}
		struct rx_done *d = &rx->q[(rx->q_head + rx->q_len) % rx->count];
		d->bid = bid;
		d->sock = (uint32_t)i;
		d->len = cqe->res;
		d->taken = 0;
		rx->q_len++;
		rx->completions++;
		return;
	}
	if (!so->live)
		return;
	switch (-cqe->res) {
	case ENOBUFS:
		/* Every buffer is out: the datagram waits in the socket, and
		 * the next recv makes more buffers before re-arming. */
		rx->starved = true;
		break;
	case EINTR:
	case EAGAIN:
	/* ICMP errors reported on the socket say nothing about it. */
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ECANCELED: break;
	default:
		if (cqe->res < 0)
			rx->error = cqe->res;
	}
}

bool uring_rx_arm(struct io_ring *r, uint32_t i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return false;
	io_uring_prep_recvmsg_multishot(sqe, r->socks.slot[i].fd, &r->rx.msg, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BUF_GROUP;
	io_uring_sqe_set_data64(sqe, RECV_TAG_BASE + i);
	r->socks.slot[i].armed = true;
	r->socks.slot[i].got = false;
	r->socks.armed++;
	r->base.stats.rx_rearms++;
	return true;
}

/* Arms up to budget sockets of the rearm queues, the first queue first,
 * oldest first, submitting whenever the SQ fills (a host with a socket per
 * connection can have thousands to re-arm after the buffers ran out). */
static void arm_all(struct io_ring *r, uint32_t budget)
{
	while (r->socks.rearm_len > 0 && budget-- > 0) {
		uint32_t q = r->socks.rearm_qlen[0] > 0 ? 0 : 1;
		uint32_t i = r->socks.rearm[q * r->socks.cap + r->socks.rearm_head[q]];
		struct ring_sock *so = &r->socks.slot[i];
		if (so->live && !so->armed && !uring_rx_arm(r, i)) {
			uring_submit(r);
			if (!uring_rx_arm(r, i))
				return; /* a broken ring: the next call tries again */
		}
		so->on_rearm = false;
		r->socks.rearm_head[q] = (r->socks.rearm_head[q] + 1) % r->socks.cap;
		r->socks.rearm_qlen[q]--;
		r->socks.rearm_len--;
	}
}

/* The segment size of a GRO run (its UDP_GRO control message), or 0 when
 * the completion holds one plain datagram. */
static size_t gro_segment_size(struct io_uring_recvmsg_out *o, struct msghdr *msg)
{
	for (struct cmsghdr *cm = io_uring_recvmsg_cmsg_firsthdr(o, msg); cm;
	     cm = io_uring_recvmsg_cmsg_nexthdr(o, msg, cm)) {
		if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int seg;
			memcpy(&seg, CMSG_DATA(cm), sizeof(seg));
			return seg > 0 ? (size_t)seg : 0;
		}
	}
	return 0;
}

/* Hands out the datagrams of one completion from d->taken on, into rx.out
 * from index *n on (advanced), as many as the batch has room for (a GRO run
 * may need more than one call); at least one, so an empty datagram is
 * reported too. Returns whether the completion is now wholly handed out. */
static bool take_datagrams(struct uring_rx *rx, struct rudp_io *io, struct rx_done *d,
			   struct io_uring_recvmsg_out *o, int *n)
{
	uint8_t *payload = io_uring_recvmsg_payload(o, &rx->msg);
	size_t total = io_uring_recvmsg_payload_length(o, d->len, &rx->msg);
	size_t seg = rx->gro ? gro_segment_size(o, &rx->msg) : 0;
	if (seg == 0 || seg > total)
		seg = total;
	socklen_t nl = o->namelen < NAME_SPACE ? o->namelen : NAME_SPACE;
	do {
		size_t len = total - d->taken < seg ? total - d->taken : seg;
		struct rudp_io_datagram *dg = &rx->out[(*n)++];
		memcpy(&dg->addr, io_uring_recvmsg_name(o), nl);
		if (nl < sizeof(sa_family_t))
			dg->addr.ss_family = AF_UNSPEC; /* no source: nothing stale to match */
		dg->addrlen = nl;
		dg->sock = d->sock;
		dg->data = payload + d->taken;
		dg->len = len;
		d->taken += (uint32_t)len;
		/* Only a run's last datagram can have been cut short. */
		dg->truncated = (o->flags & MSG_TRUNC) != 0 && d->taken >= total;
		io->stats.bytes_received += len;
	} while (d->taken < total && (uint32_t)*n < io->batch);
	bool whole = d->taken >= total;
	if (seg < total)
		io->stats.gro_receives += whole;
	return whole;
}

/* Whether running out of buffers just now is reason to make more. Plain
 * buffers are cheap (1.7 KiB) and hold one datagram: every starvation doubles
 * them. A GRO buffer can become 64 KiB of memory and holds a run; running out
 * costs a re-arm (the datagrams wait in the socket, which holds them anyway).
 * A ring whose completions carry runs already moves many datagrams per
 * re-arm, and more buffers only made a client host hold more of what the
 * kernel already holds: more memory, and many client hosts in one process
 * were slower with them. So a GRO ring grows only when its completions are
 * mostly single datagrams (fewer than two per completion since the last
 * starvation; a server whose peers each send alone), and it runs out again
 * before it has gone round GRO_STARVE_LAPS times (not a one-off, such as a
 * handshake). nsocks: the ring's sockets; datagrams_received: the stat. */
#define GRO_STARVE_LAPS 8u
static bool worth_growing(struct uring_rx *rx, uint32_t nsocks, uint64_t datagrams_received)
{
	if (!rx->gro)
		return true;
	/* Several sockets: every starvation costs a re-arm per socket that got
	 * data meanwhile, so running out again soon is reason enough. */
	if (nsocks > 1) {
		bool soon = rx->last_starved != UINT64_MAX &&
			    rx->completions - rx->last_starved < (uint64_t)GRO_STARVE_LAPS * rx->ready;
		rx->last_starved = rx->completions;
		return soon;
	}
	uint64_t completions = rx->completions - rx->last_starved;
	uint64_t datagrams = datagrams_received - rx->datagrams_at_starve;
	bool soon = rx->last_starved != UINT64_MAX && completions < (uint64_t)GRO_STARVE_LAPS * rx->ready;
	rx->last_starved = rx->completions;
	rx->datagrams_at_starve = datagrams_received;
	return soon && datagrams < 2 * completions;
}

int uring_recv(struct rudp_io *io, struct rudp_io_datagram **out)
{
	struct io_ring *r = (struct io_ring *)io;
	struct uring_rx *rx = &r->rx;
	int c = uring_ring_check(r);
	if (c < 0)
		return c;
	uint32_t mask = (uint32_t)io_uring_buf_ring_mask(rx->count);
	for (uint32_t i = 0; i < rx->held_len; i++)
		io_uring_buf_ring_add(rx->br, rx_buf(rx, rx->held[i]), (unsigned)rx->stride,
				      (unsigned short)rx->held[i], (int)mask, (int)i);
	io_uring_buf_ring_advance(rx->br, (int)rx->held_len);
	rx->held_len = 0;

	uring_reap(r);
	if (rx->error) {
		int e = rx->error;
		rx->error = 0;
		return e;
	}
	/* Re-arm once buffers are back; rare (ENOBUFS or an error ended the
	 * last one), so submitting at once costs nothing in steady state. Not
	 * while every buffer still waits in rx.q to be handed out: the receive
	 * would end at once with ENOBUFS, a system call for nothing and a false
	 * sign of starvation; a later call, once the host has taken some, does. */
	if (rx->starved && r->socks.rearm_len > 0) {
		rx->starved = false;
		if (rx->ready < rx->count && worth_growing(rx, r->socks.n, io->stats.datagrams_received))
			rx_grow(rx, &io->stats);
	}
	if (r->socks.rearm_len > 0 && rx->q_len < rx->ready) {
		/* With several sockets, no more of them than there are buffers
		 * in the ring: each one armed takes a buffer at once if it has
		 * data waiting, and the rest would end with ENOBUFS, each a
		 * wasted re-arm (sockets left over go first next time). */
		arm_all(r, r->socks.n > 1 ? rx->ready - rx->q_len : UINT32_MAX);
		int s = uring_submit_counted(r, &io->stats.recv_calls);
		if (s < 0)
			return s;
	}

	int n = 0;
	while ((uint32_t)n < io->batch && rx->q_len) {
		struct rx_done *d = &rx->q[rx->q_head];
		struct io_uring_recvmsg_out *o =
			io_uring_recvmsg_validate(rx_buf(rx, d->bid), d->len, &rx->msg);
		if (!o || take_datagrams(rx, io, d, o, &n)) {
			/* Done with this buffer: it goes back at the next call. */
			rx->q_head = (rx->q_head + 1) % rx->count;
			rx->q_len--;
			rx->held[rx->held_len++] = d->bid;
		}
	}
	io->stats.datagrams_received += (uint64_t)n;
	*out = rx->out;
	return n;
}

void uring_rx_drop_socket(struct uring_rx *rx, uint32_t sock)
{
	uint32_t kept = 0;
	for (uint32_t k = 0; k < rx->q_len; k++) {
		struct rx_done d = rx->q[(rx->q_head + k) % rx->count];
		if (d.sock == sock)
			rx->held[rx->held_len++] = d.bid; /* back to the ring at the next call */
		else
			rx->q[(rx->q_head + kept++) % rx->count] = d;
	}
	rx->q_len = kept;
}

bool uring_set_gro(int fd, bool on)
{
	int v = on;
	return setsockopt(fd, SOL_UDP, UDP_GRO, &v, sizeof(v)) == 0 && on;
}

void uring_rx_prepare_socket(const struct uring_rx *rx, int fd)
{
	/* The socket reads runs whole if the buffers can hold them (without
	 * UDP_GRO the kernel splits them: still correct). */
	if (rx->gro)
		uring_set_gro(fd, true);
}

/* A GRO buffer's stride: GRO_BYTES rounded up to the page size of this
 * machine (4 KiB on x86-64, 16 or 64 KiB on some arm64 kernels), read at
 * run time so a buffer never shares a page with its neighbour there. */
static size_t gro_stride(void)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t p = page > 0 ? (size_t)page : 4096u;
	return (GRO_BYTES + p - 1) / p * p;
}

bool uring_rx_alloc(struct uring_rx *rx, int fd, uint32_t count, bool gro, uint32_t batch)
{
	rx->count = count;
	rx->br_bytes = (size_t)rx->count * sizeof(struct io_uring_buf);
	void *br = mmap(NULL, rx->br_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	/* A kernel without UDP_GRO (before 5.0; io_uring multishot needs 6.0,
	 * so not expected) leaves the buffers one datagram each. */
	rx->gro = gro && uring_set_gro(fd, true);
	rx->stride = rx->gro ? gro_stride() : RX_STRIDE;
	rx->ready = rx->gro ? RX_INITIAL_GRO : RX_INITIAL;
	if (rx->ready > rx->count)
		rx->ready = rx->count;
	/* Address space for the whole pool, reserved but not committed
	 * (NORESERVE): pages become memory when the kernel writes a datagram
	 * into them. No huge pages: one would make 2 MiB resident at the first
	 * write into a pool of 64 KiB buffers. */
	rx->mem_bytes = (size_t)rx->count * rx->stride;
	void *mem = mmap(NULL, rx->mem_bytes, PROT_READ | PROT_WRITE,
			 MAP_ANONYMOUS | MAP_PRIVATE | MAP_NORESERVE, -1, 0);
	if (mem != MAP_FAILED) {
		rx->mem = mem;
		madvise(mem, rx->mem_bytes, MADV_NOHUGEPAGE);
	}
	rx->q = calloc(rx->count, sizeof(*rx->q));
	rx->held = calloc(rx->count, sizeof(*rx->held));
	/* malloc, not calloc: every field of an output datagram is written
	 * before it is read, so only the entries in use become resident. */
	rx->out = malloc(batch * sizeof(*rx->out));
	if (br != MAP_FAILED)
		rx->br = br;
	return rx->br && rx->mem && rx->q && rx->held && rx->out;
}

void uring_rx_free(struct uring_rx *rx)
{
	if (rx->br)
		munmap(rx->br, rx->br_bytes);
	if (rx->mem)
		munmap(rx->mem, rx->mem_bytes);
	free(rx->q);
	free(rx->held);
	free(rx->out);
}

int uring_rx_start(struct uring_rx *rx, struct io_uring *ring)
{
	struct io_uring_buf_reg reg;
	memset(&reg, 0, sizeof(reg));
	reg.ring_addr = (uint64_t)(uintptr_t)rx->br;
	reg.ring_entries = rx->count;
	reg.bgid = BUF_GROUP;
	int e = io_uring_register_buf_ring(ring, &reg, 0);
	if (e < 0)
		return e;
	io_uring_buf_ring_init(rx->br);
	uint32_t mask = (uint32_t)io_uring_buf_ring_mask(rx->count);
	for (uint32_t i = 0; i < rx->ready; i++)
		io_uring_buf_ring_add(rx->br, rx_buf(rx, i), (unsigned)rx->stride, (unsigned short)i,
				      (int)mask, (int)i);
	io_uring_buf_ring_advance(rx->br, (int)rx->ready);
	rx->starved = false;
	rx->last_starved = UINT64_MAX;
	rx->q_head = rx->q_len = rx->held_len = 0;
	rx->error = 0;
	rx->msg.msg_namelen = NAME_SPACE;
	rx->msg.msg_controllen = rx->gro ? GRO_CONTROL_SPACE : 0;
	return 0;
}
