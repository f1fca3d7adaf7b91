/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend: receives stay posted, sends go out one flush per
 * io_uring_enter, and in steady state no system call is made per datagram.
 *
 * Receive: one multishot recvmsg draws buffers from a provided-buffer ring,
 * so every datagram the kernel reads becomes a completion (CQE) that names
 * the buffer holding [io_uring_recvmsg_out | source address | payload].
 * Reaping completions is a read of shared memory, not a system call. A
 * buffer handed to the host stays out of the ring until the next recv call
 * (the io contract: data valid until the next receive), then goes back. The
 * kernel ends a multishot (a CQE without IORING_CQE_F_MORE) when it runs out
 * of buffers or hits an error; it is re-armed once buffers are back. A
 * datagram that finds no buffer stays in the socket queue, so ENOBUFS loses
 * nothing.
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
 * UDP GRO (rudp_config.udp_gro): the socket asks for UDP_GRO, so a run of
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
 *
 * Send: each datagram is a sendmsg SQE over its own slot (iovec, msghdr,
 * address), and flush submits them all with one io_uring_enter. The
 * datagrams' bytes are packed one after another in one area (each takes
 * its length, not a 1.5 KiB slot's worth), which starts again at 0 once
 * nothing is queued or in the kernel: after every flush whose sends
 * completed at once, so a flush writes only the pages it sends from. A
 * slot, and the area, are reusable only once their CQEs have come back: a
 * send the kernel could not do at once (socket buffer full) finishes
 * later, from the ring, so the socket must be blocking as far as io_uring
 * is concerned (see create).
 *
 * Completions of both kinds share one CQ; they are reaped together, send
 * CQEs free their slot at once and receive CQEs queue in rx.q (bounded: at
 * most one per provided buffer) until recv hands them out.
 *
 * UDP GSO: consecutive datagrams of one flush to the same peer with the
 * same length (a window of 800 B messages, the fragments of a large one)
 * become one sendmsg with a UDP_SEGMENT control message, so the kernel
 * routes, builds and checksums the run once and splits it at the end:
 * the per-datagram part of the send path goes. A shorter datagram may end
 * a run, as GSO allows. The run's iovec array lives in scratch space that
 * is reused after the submit, which IORING_FEAT_SUBMIT_STABLE permits;
 * without that feature, or after the kernel refused a GSO send (a device
 * that cannot segment, a path MTU below the datagram), each datagram goes
 * alone again.
 *
 * ACKs ride along: the host commits ACK and NACK datagrams as movable
 * (they carry no sequence number, so their order among data does not
 * matter). One is held until the GSO run to its peer closes and becomes
 * its last segment, or, when the run has no room or another peer comes
 * first, goes in a send of its own ahead of the run. A server's ACK of a
 * request, built when the request arrives, thus leaves in one send with
 * the answer built after it: one send and one delivery (one wake-up) per
 * direction instead of two. When it cannot ride, it goes ahead of the
 * data, where it frees the peer's window soonest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "io.h"

/* user_data: a send request carries its slot index (< tx.cap), socket i's
 * receive RECV_TAG_BASE + i, wake-up timer i WAKE_TAG_BASE + i, a cancel
 * CANCEL_TAG. */
#define RECV_TAG_BASE (UINT64_C(1) << 62)
#define CANCEL_TAG UINT64_MAX
/* Wake-up timers kept in the kernel (see uring_wait): one would do for a
 * host whose deadlines only move later; the second lets a nearer deadline
 * be armed while a far one is still pending. */
#define WAKE_TIMERS 2
#define WAKE_UPDATE_TAG (CANCEL_TAG - 1)
#define WAKE_TAG_BASE (WAKE_UPDATE_TAG - WAKE_TIMERS)
#define BUF_GROUP 0
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
/* How many receive buffers a ring starts with: plain buffers hold one
 * datagram each; a GRO buffer holds a whole run, so a few suffice until the
 * traffic shows otherwise (each is 68 KiB of address space). 8 and not 4:
 * one connection's window of 64 at 800 B comes as two runs and their ACKs,
 * which 4 leaves short; 8 was faster both for one connection and for many
 * client hosts in one process. */
#define RX_INITIAL 16u
#define RX_INITIAL_GRO 8u
/* How long destroy waits for sends still in the kernel before the memory
 * they point at is freed. */
#define DESTROY_DRAIN_MS 200

struct rx_done {
	uint32_t bid;
	uint32_t sock; /* the socket it came in on */
	int32_t len; /* bytes the kernel wrote into the buffer */
	uint32_t taken; /* payload bytes already handed out (a GRO run split over recv calls) */
};

/* The kernel's limits for one GSO send: segments (UDP_MAX_SEGMENTS on
 * every kernel with io_uring multishot) and bytes (one IP packet's worth
 * of UDP payload, before the split). */
#define GSO_MAX_SEGMENTS 64
#define GSO_MAX_BYTES 65000

struct tx_slot {
	struct msghdr hdr;
	struct iovec iov;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint32_t sock; /* the socket it goes out on */
	uint32_t next; /* the next datagram of the same GSO run, or UINT32_MAX */
	union { /* UDP_SEGMENT, when this slot heads a run */
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} control;
};

struct ring_sock {
	int fd; /* -1: a free slot */
	bool live; /* in use: removed sockets are not re-armed; their data is dropped */
	bool armed; /* its multishot receive is posted */
	bool on_rearm; /* on a rearm queue */
	bool got; /* a buffer came in since its receive was armed */
	bool zombie; /* removed while its receive could still post: never reused */
};

/* The receive side: the provided buffers, the completions waiting to be
 * handed out and the datagrams the last recv call handed out. */
struct uring_rx {
	struct io_uring_buf_ring *br;
	size_t br_bytes;
	bool br_registered;
	uint8_t *mem; /* count buffers of stride bytes, faulted in as written */
	size_t mem_bytes;
	size_t stride;
	bool gro; /* UDP_GRO is on: buffers of gro_stride(), runs split in recv */
	uint32_t count; /* most buffers ever provided (the buffer ring's size), a power of two */
	uint32_t ready; /* buffers provided so far (ids 0..ready-1) */
	bool starved; /* the kernel ran out of buffers since the last grow */
	uint64_t completions; /* buffers the kernel has filled, ever */
	uint64_t last_starved; /* completions at the last starvation, or UINT64_MAX */
	uint64_t datagrams_at_starve; /* stats.datagrams_received then */
	struct msghdr msg; /* the multishot template: name space, control space with GRO */
	struct rx_done *q; /* ring of count */
	uint32_t q_head, q_len;
	uint32_t *held; /* buffers the last recv handed out */
	uint32_t held_len;
	struct rudp_io_datagram *out;
	int error; /* a receive error to report from the next recv call */
};

/* The sockets (slot[0] is base.fd), each with its own multishot receive
 * drawing from the one buffer ring. A receive that ended (a CQE without
 * F_MORE) puts its socket on the rearm queue; the next recv call re-arms
 * them all once buffers are back. */
struct uring_socks {
	struct ring_sock *slot;
	uint32_t n, cap; /* slots in use (live or not), allocated */
	/* Live sockets whose receive is not armed, in two FIFO rings of cap
	 * each (rearm[0..cap) and rearm[cap..2 cap)): those whose receive
	 * ended before it got a buffer, then those it served. Re-armed in that
	 * order, so that when the pool runs dry the sockets that found none go
	 * first next time, in the order they ended, and a socket that always
	 * has data cannot take every buffer round after round. (A stack
	 * re-armed the same sockets first each round, and those in its middle
	 * starved until their connections timed out.) */
	uint32_t *rearm;
	uint32_t rearm_head[2], rearm_qlen[2];
	uint32_t rearm_len; /* both */
	uint32_t armed; /* receives posted (live sockets or ones being cancelled) */
};

/* The send side: the slots, the area their datagrams are packed in, and
 * the GSO run being built. */
struct uring_tx {
	struct tx_slot *slot;
	/* Datagram bytes, packed: each committed datagram takes its length
	 * from area_used, back to back with the one before (no padding), so
	 * the segments of a GSO run are usually one vector of the sendmsg
	 * (chain_hdr) instead of one per datagram: the kernel then imports
	 * and walks one iovec, not one per segment. The area starts again at
	 * 0 whenever nothing is queued or in the kernel, which with sends that
	 * complete at once is after every flush. cap slots of
	 * RUDP_IO_SLOT_SIZE bytes, plus one more at the end as scratch for a
	 * broken ring (written, never sent). */
	uint8_t *area;
	size_t area_used;
	size_t cur_off; /* where the cur slot's datagram is being written */
	uint32_t cap;
	uint32_t *free; /* stack of free slot indexes */
	uint32_t free_len;
	uint32_t cur; /* slot given by tx_slot and not yet committed, or UINT32_MAX */
	uint32_t queued; /* datagrams committed, not yet submitted */
	uint32_t inflight; /* datagrams submitted, CQE not yet reaped */
	uint32_t sqes_queued, sqes_inflight; /* the same in send requests (a GSO run is one) */
	/* The run being built: datagrams committed but not yet in an SQE. */
	uint32_t run_first, run_last, run_segs;
	size_t run_len;
	/* A committed datagram whose place does not matter (tx_commit_movable:
	 * an ACK), held until the run closes: it then ends the run as its last
	 * segment when it can, else goes in a send of its own just before the
	 * run. UINT32_MAX when none. An open run is always to its peer. */
	uint32_t movable;
	bool gso; /* runs of more than one datagram allowed */
	struct iovec *iovs; /* scratch iovecs of the runs prepared since the last submit */
	uint32_t iovs_used;
};

/* Wake-up timers in the kernel (IORING_OP_TIMEOUT, CLOCK_MONOTONIC
 * absolute): each one's deadline in ns, 0 when free (fired, or never
 * armed). The timespec is read when the request is submitted. */
struct uring_wake {
	uint64_t at_ns[WAKE_TIMERS];
	struct __kernel_timespec ts[WAKE_TIMERS];
};

struct io_ring {
	struct rudp_io base;
	struct io_uring ring;
	bool ring_ready;
	struct uring_rx rx;
	struct uring_socks socks;
	uint32_t max_socks; /* sockets the owner expects to add: room in the CQ for their receives' ends */
	struct uring_tx tx;
	struct uring_wake wake;
	unsigned fork_gen; /* fork_generation when the ring was made */
	int broken; /* errno of a failed rebuild after fork: every call fails */
};

/* Bumped in the child after every fork(); a ring made before it belongs to
 * the parent. A counter, not getpid(), so the check costs no system call. */
static volatile unsigned fork_generation;
static int adopt_after_fork(struct io_ring *r);

/* Every entry point starts here. Returns 0 or -errno. */
static int ring_check(struct io_ring *r)
{
	if (r->broken)
		return -r->broken;
	if (r->fork_gen != fork_generation)
		return adopt_after_fork(r);
	return 0;
}

static uint8_t *rx_buf(struct io_ring *r, uint32_t bid)
{
	return r->rx.mem + (size_t)bid * r->rx.stride;
}

/* The kernel ran out of buffers: double them (up to rx.count) and hand the
 * new ones to the buffer ring. */
static void rx_grow(struct io_ring *r)
{
	uint32_t first = r->rx.ready;
	r->rx.ready = r->rx.ready * 2 < r->rx.count ? r->rx.ready * 2 : r->rx.count;
	uint32_t mask = (uint32_t)io_uring_buf_ring_mask(r->rx.count);
	int offset = 0;
	for (uint32_t bid = first; bid < r->rx.ready; bid++)
		io_uring_buf_ring_add(r->rx.br, rx_buf(r, bid), (unsigned)r->rx.stride, (unsigned short)bid,
				      (int)mask, offset++);
	io_uring_buf_ring_advance(r->rx.br, offset);
	r->base.stats.rx_buffer_grows += offset > 0;
}

/* Puts socket i at the back of a rearm queue (once): the first if it
 * found no buffer last time, else the second. */
static void push_rearm(struct io_ring *r, uint32_t i, bool starved)
{
	struct ring_sock *so = &r->socks.slot[i];
	if (so->on_rearm)
		return;
	so->on_rearm = true;
	uint32_t q = starved ? 0 : 1;
	r->socks.rearm[q * r->socks.cap +
		       (r->socks.rearm_head[q] + r->socks.rearm_qlen[q]++) % r->socks.cap] = i;
	r->socks.rearm_len++;
}

/* Gives the slots of a send request's chain back; returns how many. */
static uint32_t free_chain(struct io_ring *r, uint32_t first)
{
	uint32_t segs = 0;
	for (uint32_t i = first; i != UINT32_MAX && segs < r->tx.cap; i = r->tx.slot[i].next) {
		r->tx.free[r->tx.free_len++] = i;
		segs++;
	}
	return segs;
}

/* Accounts for a finished send request of segs datagrams (res: bytes sent,
 * or -errno), whether it went through the ring or directly. */
static void send_done(struct io_ring *r, uint32_t segs, int res)
{
	if (res < 0) {
		r->base.stats.send_errors += segs; /* dropped; reliability resends */
		/* A kernel or device that cannot do this GSO send will not do
		 * the next one either: send one by one from now on. */
		if (segs > 1 && (res == -EIO || res == -EINVAL || res == -EOPNOTSUPP))
			r->tx.gso = false;
	} else {
		r->base.stats.bytes_sent += (uint64_t)res;
		if (segs > 1)
			r->base.stats.gso_sends++;
	}
}

static void on_cqe(struct io_ring *r, const struct io_uring_cqe *cqe)
{
	uint64_t ud = io_uring_cqe_get_data64(cqe);
	if (ud == CANCEL_TAG)
		return;
	if (ud >= WAKE_TAG_BASE) {
		/* A wake-up timer fired (-ETIME) or was cancelled with the
		 * ring: free again. (An update's own completion says nothing:
		 * if it came too late, the timer's completion follows.) */
		if (ud < WAKE_TAG_BASE + WAKE_TIMERS)
			r->wake.at_ns[ud - WAKE_TAG_BASE] = 0;
		return;
	}
	if (ud < RECV_TAG_BASE) {
		uint32_t segs = 0;
		if (ud < r->tx.cap) {
			segs = free_chain(r, (uint32_t)ud);
			r->tx.inflight -= segs;
			r->tx.sqes_inflight--;
		}
		send_done(r, segs, cqe->res);
		return;
	}
	uint64_t i = ud - RECV_TAG_BASE;
	if (i >= r->socks.n)
		return; /* not ours: cannot happen */
	struct ring_sock *so = &r->socks.slot[i];
	if (cqe->flags & IORING_CQE_F_BUFFER)
		so->got = true;
	if (!(cqe->flags & IORING_CQE_F_MORE) && so->armed) {
		so->armed = false;
		r->socks.armed--;
		if (so->live)
			push_rearm(r, (uint32_t)i, !so->got);
	}
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		uint32_t bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		if (!so->live) {
			/* A socket being removed: its data goes, the buffer goes
			 * back to the ring at the next recv call. */
			r->rx.held[r->rx.held_len++] = bid;
			return;
		}
		struct rx_done *d = &r->rx.q[(r->rx.q_head + r->rx.q_len) % r->rx.count];
		d->bid = bid;
		d->sock = (uint32_t)i;
		d->len = cqe->res;
		d->taken = 0;
		r->rx.q_len++;
		r->rx.completions++;
		return;
	}
	if (!so->live)
		return;
	switch (-cqe->res) {
	case ENOBUFS:
		/* Every buffer is out: the datagram waits in the socket, and
		 * the next recv makes more buffers before re-arming. */
		r->rx.starved = true;
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
			r->rx.error = cqe->res;
	}
}

static int submit_counted(struct io_ring *r, uint64_t *calls);
static int submit_prepared(struct io_ring *r, uint64_t *calls);

static void reap(struct io_ring *r)
{
	struct io_uring_cqe *cqes[64];
	bool ran = false;
	for (;;) {
		unsigned n = io_uring_peek_batch_cqe(&r->ring, cqes, 64);
		if (n == 0) {
			/* With COOP_TASKRUN, receives the kernel has queued as
			 * task work post their completions only when this thread
			 * enters the kernel: do so once when the flag says there
			 * is such work (one system call, only when data came). */
			if (ran || !(IO_URING_READ_ONCE(*r->ring.sq.kflags) & IORING_SQ_TASKRUN))
				return;
			ran = true;
			/* Any entry runs the work, so one that also submits what
			 * the host left queued (replies and ACKs of the last call)
			 * does both jobs. */
			if (io_uring_sq_ready(&r->ring) > 0) {
				submit_counted(r, &r->base.stats.send_calls);
			} else {
				io_uring_get_events(&r->ring);
				r->base.stats.recv_calls++;
			}
			continue;
		}
		for (unsigned i = 0; i < n; i++)
			on_cqe(r, cqes[i]);
		io_uring_cq_advance(&r->ring, n);
	}
}

/* Queues socket i's multishot receive; returns false when no SQE was free
 * (the caller submits and tries again). */
static bool arm_recv(struct io_ring *r, uint32_t i)
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

static int submit(struct io_ring *r);

/* Arms up to budget sockets of the rearm queues, the first queue first,
 * oldest first, submitting whenever the SQ fills (a host with a socket per
 * connection can have thousands to re-arm after the buffers ran out). */
static void arm_all(struct io_ring *r, uint32_t budget)
{
	while (r->socks.rearm_len > 0 && budget-- > 0) {
		uint32_t q = r->socks.rearm_qlen[0] > 0 ? 0 : 1;
		uint32_t i = r->socks.rearm[q * r->socks.cap + r->socks.rearm_head[q]];
		struct ring_sock *so = &r->socks.slot[i];
		if (so->live && !so->armed && !arm_recv(r, i)) {
			submit(r);
			if (!arm_recv(r, i))
				return; /* a broken ring: the next call tries again */
		}
		so->on_rearm = false;
		r->socks.rearm_head[q] = (r->socks.rearm_head[q] + 1) % r->socks.cap;
		r->socks.rearm_qlen[q]--;
		r->socks.rearm_len--;
	}
}

/* Queues a cancel of socket i's receive. */
static void cancel_recv(struct io_ring *r, uint32_t i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (!sqe) {
		submit(r);
		sqe = io_uring_get_sqe(&r->ring);
	}
	if (!sqe)
		return;
	io_uring_prep_cancel64(sqe, RECV_TAG_BASE + i, 0);
	io_uring_sqe_set_data64(sqe, CANCEL_TAG);
}

static bool same_peer(const struct tx_slot *a, const struct tx_slot *b)
{
	return a->sock == b->sock && a->addrlen == b->addrlen && memcmp(&a->addr, &b->addr, a->addrlen) == 0;
}

/* Whether a datagram of len bytes to the open run's peer may join it as
 * its next segment: GSO on, room in the kernel's limits, and no shorter
 * segment in it yet (only the last may be shorter). */
static bool run_takes(const struct io_ring *r, size_t len)
{
	return r->tx.gso && !r->base.gso_off && r->tx.run_segs > 0 && len <= r->tx.run_len &&
	       r->tx.slot[r->tx.run_last].iov.iov_len == r->tx.run_len && r->tx.run_segs < GSO_MAX_SEGMENTS &&
	       (r->tx.run_segs + 1) * r->tx.run_len <= GSO_MAX_BYTES;
}

/* Links committed datagram i behind the open run (run_takes said yes). */
static void run_append(struct io_ring *r, uint32_t i)
{
	r->tx.slot[r->tx.run_last].next = i;
	r->tx.run_last = i;
	r->tx.run_segs++;
}

/* Whether the held movable datagram can end the open run (same peer,
 * and room for it as the last segment). */
static bool movable_joins_run(const struct io_ring *r)
{
	uint32_t m = r->tx.movable;
	return m != UINT32_MAX && r->tx.run_segs > 0 &&
	       same_peer(&r->tx.slot[r->tx.run_first], &r->tx.slot[m]) &&
	       run_takes(r, r->tx.slot[m].iov.iov_len);
}

/* Fills in the msghdr of a chain of segs committed datagrams from first
 * (GSO with segment size seg_len when segs > 1, its iovecs taken from the
 * scratch array, which has room: the caller checked). */
static struct msghdr *chain_hdr(struct io_ring *r, uint32_t first, uint32_t segs, size_t seg_len)
{
	struct tx_slot *t = &r->tx.slot[first];
	memset(&t->hdr, 0, sizeof(t->hdr));
	t->hdr.msg_name = &t->addr;
	t->hdr.msg_namelen = t->addrlen;
	if (segs == 1) {
		t->hdr.msg_iov = &t->iov;
		t->hdr.msg_iovlen = 1;
	} else {
		struct iovec *v = r->tx.iovs + r->tx.iovs_used;
		uint32_t k = 0;
		for (uint32_t i = first; i != UINT32_MAX; i = r->tx.slot[i].next) {
			const struct iovec *d = &r->tx.slot[i].iov;
			/* Segments that lie back to back in the send area go
			 * as one vector. */
			if (k > 0 &&
			    (uint8_t *)v[k - 1].iov_base + v[k - 1].iov_len == (uint8_t *)d->iov_base)
				v[k - 1].iov_len += d->iov_len;
			else
				v[k++] = *d;
		}
		r->tx.iovs_used += k;
		t->hdr.msg_iov = v;
		t->hdr.msg_iovlen = k;
		t->hdr.msg_control = t->control.buf;
		t->hdr.msg_controllen = sizeof(t->control.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&t->hdr);
		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = UDP_SEGMENT;
		cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		uint16_t seg = (uint16_t)seg_len;
		memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
	}
	return &t->hdr;
}

static void queue_chain(struct io_ring *r, uint32_t first, uint32_t segs, size_t seg_len);

/* Turns the open run into one sendmsg SQE: a single datagram as is, two
 * or more as a GSO send. A held movable datagram ends the run when it
 * can, else goes first in a send of its own. */
static void close_run(struct io_ring *r)
{
	if (r->tx.movable != UINT32_MAX) {
		uint32_t m = r->tx.movable;
		if (movable_joins_run(r)) {
			run_append(r, m);
		} else {
			queue_chain(r, m, 1, r->tx.slot[m].iov.iov_len);
		}
		r->tx.movable = UINT32_MAX;
	}
	if (r->tx.run_segs == 0)
		return;
	queue_chain(r, r->tx.run_first, r->tx.run_segs, r->tx.run_len);
	r->tx.run_segs = 0;
}

/* Prepares one sendmsg SQE for a chain of segs committed datagrams from
 * first (GSO with segment size seg_len when segs > 1). The caller still
 * counts the chain as unsubmitted (run_segs or movable) until this
 * returns, so a submit made here to free an SQE counts it right. */
static void queue_chain(struct io_ring *r, uint32_t first, uint32_t segs, size_t seg_len)
{
	int fd = r->socks.slot[r->tx.slot[first].sock].fd;
	struct io_uring_sqe *sqe = fd >= 0 ? io_uring_get_sqe(&r->ring) : NULL;
	if (!sqe && fd >= 0) {
		/* The SQ holds tx.cap + 2 entries, so only pending re-arms can
		 * make it full; submitting what is prepared makes room. */
		submit_prepared(r, &r->base.stats.send_calls);
		sqe = io_uring_get_sqe(&r->ring);
	}
	if (!sqe) {
		/* Cannot happen short of a broken ring (or a socket removed
		 * with sends of its own still open, which remove prevents): drop
		 * the run (reliability resends) and give its slots back. */
		free_chain(r, first);
		r->tx.queued -= segs;
		r->base.stats.send_errors += segs;
		return;
	}
	if (segs > 1 && r->tx.iovs_used + segs > r->tx.cap)
		submit_prepared(r, &r->base.stats.send_calls); /* not reached: submits empty the SQ */
	struct msghdr *hdr = chain_hdr(r, first, segs, seg_len);
	io_uring_prep_sendmsg(sqe, fd, hdr, 0);
	io_uring_sqe_set_data64(sqe, first);
	r->tx.sqes_queued++;
}

/* Bookkeeping once the kernel has taken every prepared SQE. */
static void submitted(struct io_ring *r)
{
	/* Counted when handed to the kernel, as the mmsg backend does; the
	 * open run (if any) is not in an SQE yet. */
	uint32_t handed = r->tx.queued - r->tx.run_segs - (r->tx.movable != UINT32_MAX);
	r->base.stats.datagrams_sent += handed;
	r->tx.inflight += handed;
	r->tx.queued -= handed;
	r->tx.sqes_inflight += r->tx.sqes_queued;
	r->tx.sqes_queued = 0;
	/* SUBMIT_STABLE: the kernel has copied the iovecs it was given. */
	if (io_uring_sq_ready(&r->ring) == 0)
		r->tx.iovs_used = 0;
}

/* One io_uring_enter for what is prepared, without closing the open run;
 * *calls counts it. */
static int submit_prepared(struct io_ring *r, uint64_t *calls)
{
	if (io_uring_sq_ready(&r->ring) == 0)
		return 0;
	int n;
	do {
		n = io_uring_submit(&r->ring);
		(*calls)++;
	} while (n == -EINTR);
	if (n < 0)
		return n;
	submitted(r);
	return n;
}

/* One io_uring_enter for everything committed; *calls counts it. */
static int submit_counted(struct io_ring *r, uint64_t *calls)
{
	close_run(r);
	return submit_prepared(r, calls);
}

static int submit(struct io_ring *r)
{
	return submit_counted(r, &r->base.stats.send_calls);
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

/* Hands out the datagrams of one completion from d->taken on, into rx_out
 * from index *n on (advanced), as many as the batch has room for (a GRO run
 * may need more than one call); at least one, so an empty datagram is
 * reported too. Returns whether the completion is now wholly handed out. */
static bool take_datagrams(struct io_ring *r, struct rx_done *d, struct io_uring_recvmsg_out *o, int *n)
{
	uint8_t *payload = io_uring_recvmsg_payload(o, &r->rx.msg);
	size_t total = io_uring_recvmsg_payload_length(o, d->len, &r->rx.msg);
	size_t seg = r->rx.gro ? gro_segment_size(o, &r->rx.msg) : 0;
	if (seg == 0 || seg > total)
		seg = total;
	socklen_t nl = o->namelen < NAME_SPACE ? o->namelen : NAME_SPACE;
	do {
		size_t len = total - d->taken < seg ? total - d->taken : seg;
		struct rudp_io_datagram *dg = &r->rx.out[(*n)++];
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
		r->base.stats.bytes_received += len;
	} while (d->taken < total && (uint32_t)*n < r->base.batch);
	bool whole = d->taken >= total;
	if (seg < total)
		r->base.stats.gro_receives += whole;
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
 * handshake). */
#define GRO_STARVE_LAPS 8u
static bool worth_growing(struct io_ring *r)
{
	if (!r->rx.gro)
		return true;
	/* Several sockets: every starvation costs a re-arm per socket that got
	 * data meanwhile, so running out again soon is reason enough. */
	if (r->socks.n > 1) {
		bool soon = r->rx.last_starved != UINT64_MAX &&
			    r->rx.completions - r->rx.last_starved < (uint64_t)GRO_STARVE_LAPS * r->rx.ready;
		r->rx.last_starved = r->rx.completions;
		return soon;
	}
	uint64_t completions = r->rx.completions - r->rx.last_starved;
	uint64_t datagrams = r->base.stats.datagrams_received - r->rx.datagrams_at_starve;
	bool soon = r->rx.last_starved != UINT64_MAX && completions < (uint64_t)GRO_STARVE_LAPS * r->rx.ready;
	r->rx.last_starved = r->rx.completions;
	r->rx.datagrams_at_starve = r->base.stats.datagrams_received;
	return soon && datagrams < 2 * completions;
}

static int uring_recv(struct rudp_io *io, struct rudp_io_datagram **out)
{
	struct io_ring *r = (struct io_ring *)io;
	int c = ring_check(r);
	if (c < 0)
		return c;
	uint32_t mask = (uint32_t)io_uring_buf_ring_mask(r->rx.count);
	for (uint32_t i = 0; i < r->rx.held_len; i++)
		io_uring_buf_ring_add(r->rx.br, rx_buf(r, r->rx.held[i]), (unsigned)r->rx.stride,
				      (unsigned short)r->rx.held[i], (int)mask, (int)i);
	io_uring_buf_ring_advance(r->rx.br, (int)r->rx.held_len);
	r->rx.held_len = 0;

	reap(r);
	if (r->rx.error) {
		int e = r->rx.error;
		r->rx.error = 0;
		return e;
	}
	/* Re-arm once buffers are back; rare (ENOBUFS or an error ended the
	 * last one), so submitting at once costs nothing in steady state. Not
	 * while every buffer still waits in rx.q to be handed out: the receive
	 * would end at once with ENOBUFS, a system call for nothing and a false
	 * sign of starvation; a later call, once the host has taken some, does. */
	if (r->rx.starved && r->socks.rearm_len > 0) {
		r->rx.starved = false;
		if (r->rx.ready < r->rx.count && worth_growing(r))
			rx_grow(r);
	}
	if (r->socks.rearm_len > 0 && r->rx.q_len < r->rx.ready) {
		/* With several sockets, no more of them than there are buffers
		 * in the ring: each one armed takes a buffer at once if it has
		 * data waiting, and the rest would end with ENOBUFS, each a
		 * wasted re-arm (sockets left over go first next time). */
		arm_all(r, r->socks.n > 1 ? r->rx.ready - r->rx.q_len : UINT32_MAX);
		int s = submit_counted(r, &io->stats.recv_calls);
		if (s < 0)
			return s;
	}

	int n = 0;
	while ((uint32_t)n < io->batch && r->rx.q_len) {
		struct rx_done *d = &r->rx.q[r->rx.q_head];
		struct io_uring_recvmsg_out *o =
			io_uring_recvmsg_validate(rx_buf(r, d->bid), d->len, &r->rx.msg);
		if (!o || take_datagrams(r, d, o, &n)) {
			/* Done with this buffer: it goes back at the next call. */
			r->rx.q_head = (r->rx.q_head + 1) % r->rx.count;
			r->rx.q_len--;
			r->rx.held[r->rx.held_len++] = d->bid;
		}
	}
	io->stats.datagrams_received += (uint64_t)n;
	*out = r->rx.out;
	return n;
}

/* The longest run a flush sends directly (an answer and its ACK). */
#define DIRECT_MAX_SEGMENTS 2

/*
 * A flush that comes to one send request of at most DIRECT_MAX_SEGMENTS
 * datagrams, on a ring with nothing else to submit and no send in the
 * kernel, goes out with a plain sendmsg: the same one system call as the
 * enter it replaces, without the request's way through the ring (a request
 * allocated, the msghdr copied in, a completion posted and reaped). That
 * is the usual flush of a game connection, one answer or one update (with
 * its ACK riding in the same GSO send), and the saving is latency
 * (uring_wait sends such a flush the same way before its enter). A flush
 * of several requests (several peers, or an ACK that cannot ride) still takes
 * one enter for all, and so does a longer run (a window's worth of bulk
 * data), where the ring's way measured no slower. A socket without room
 * (EAGAIN) takes the ring's way, which waits for it. Returns whether the
 * flush is done.
 */
static bool flush_direct(struct io_ring *r)
{
	if (io_uring_sq_ready(&r->ring) != 0 || r->tx.sqes_inflight != 0)
		return false;
	uint32_t m = r->tx.movable;
	bool lone_movable = m != UINT32_MAX && r->tx.run_segs == 0;
	if (m != UINT32_MAX && !lone_movable) {
		if (!movable_joins_run(r))
			return false; /* two requests */
		run_append(r, m); /* as close_run would */
		r->tx.movable = UINT32_MAX;
	}
	if (!lone_movable && r->tx.run_segs == 0)
		return false;
	uint32_t first = lone_movable ? m : r->tx.run_first;
	uint32_t segs = lone_movable ? 1 : r->tx.run_segs;
	if (segs > DIRECT_MAX_SEGMENTS)
		return false;
	size_t seg_len = lone_movable ? r->tx.slot[m].iov.iov_len : r->tx.run_len;
	int fd = r->socks.slot[r->tx.slot[first].sock].fd;
	if (fd < 0)
		return false;
	ssize_t n;
	r->tx.iovs_used = 0; /* nothing prepared uses the scratch iovecs */
	do {
		n = sendmsg(fd, chain_hdr(r, first, segs, seg_len), MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	int res = n < 0 ? -errno : (int)n;
	r->tx.iovs_used = 0;
	if (res == -EAGAIN || res == -EWOULDBLOCK)
		return false;
	if (lone_movable)
		r->tx.movable = UINT32_MAX;
	else
		r->tx.run_segs = 0;
	r->base.stats.send_calls++;
	r->base.stats.direct_sends++;
	r->base.stats.datagrams_sent += segs;
	r->tx.queued -= free_chain(r, first);
	send_done(r, segs, res);
	return true;
}

static int uring_flush(struct rudp_io *io)
{
	struct io_ring *r = (struct io_ring *)io;
	int c = ring_check(r);
	if (c < 0)
		return c;
	uint32_t queued = r->tx.queued;
	int s = flush_direct(r) ? 0 : submit(r);
	reap(r);
	if (s < 0) {
		/* The ring refused the batch (it should not: SQEs were checked
		 * when prepared). Count the datagrams as lost: reliability resends. */
		io->stats.send_errors += queued;
		return s;
	}
	return (int)queued;
}

/* The scratch datagram buffer: never in a send. */
static uint8_t *tx_scratch(struct io_ring *r)
{
	return r->tx.area + (size_t)r->tx.cap * RUDP_IO_SLOT_SIZE;
}

/* Submits and waits until every send is back from the kernel, so the
 * packed area can start again at 0. Rare: sends nearly always complete at
 * once, and the area is reset between flushes (see tx_slot). */
static bool drain_sends(struct io_ring *r)
{
	submit(r);
	reap(r);
	while (r->tx.inflight > 0) {
		struct io_uring_cqe *cqe;
		int e = io_uring_wait_cqe(&r->ring, &cqe);
		r->base.stats.send_calls++;
		if (e < 0 && e != -EINTR)
			return false; /* cannot happen short of a broken ring */
		reap(r);
	}
	return r->tx.queued == 0;
}

/* Submits and waits until at least one send slot is free again. */
static void wait_for_slot(struct io_ring *r)
{
	submit(r);
	reap(r);
	while (r->tx.free_len == 0) {
		struct io_uring_cqe *cqe;
		int e = io_uring_wait_cqe(&r->ring, &cqe);
		r->base.stats.send_calls++;
		if (e < 0 && e != -EINTR)
			return; /* cannot happen short of a broken ring; tx_slot copes */
		reap(r);
	}
}

static uint8_t *uring_tx_slot(struct rudp_io *io)
{
	struct io_ring *r = (struct io_ring *)io;
	if (ring_check(r) < 0)
		return tx_scratch(r); /* commit drops it */
	if (r->tx.cur == UINT32_MAX) {
		/* Hand the kernel a full batch before taking more slots: io_batch
		 * datagrams per enter, as with sendmmsg. */
		if (r->tx.queued >= io->batch || r->tx.free_len == 0)
			wait_for_slot(r);
		if (r->tx.free_len == 0)
			return tx_scratch(r); /* broken ring: commit will drop it */
		/* Nothing queued or in the kernel: the area is free again, so
		 * the pages written stay the few a flush needs (a window of
		 * 800-byte datagrams takes 53 KB instead of 64 slots' 96 KiB). */
		if (r->tx.queued == 0 && r->tx.inflight == 0)
			r->tx.area_used = 0;
		if (r->tx.area_used + RUDP_IO_SLOT_SIZE > (size_t)r->tx.cap * RUDP_IO_SLOT_SIZE) {
			if (!drain_sends(r))
				return tx_scratch(r); /* broken ring: commit will drop it */
			r->tx.area_used = 0;
		}
		r->tx.cur = r->tx.free[--r->tx.free_len];
		r->tx.cur_off = r->tx.area_used;
	}
	return r->tx.area + r->tx.cur_off;
}

/* Fills in the slot tx_slot gave (tx.cur) and counts it committed.
 * Returns its index, or UINT32_MAX when there is none or the commit is
 * invalid (then the slot stays taken by tx.cur and is reused). */
static uint32_t tx_take(struct io_ring *r, uint32_t sock, size_t len, const struct sockaddr *addr,
			socklen_t addrlen)
{
	uint32_t i = r->tx.cur;
	if (i == UINT32_MAX)
		return UINT32_MAX;
	struct tx_slot *t = &r->tx.slot[i];
	if (len == 0 || len > RUDP_IO_SLOT_SIZE || addrlen > sizeof(t->addr) || sock >= r->socks.n ||
	    !r->socks.slot[sock].live)
		return UINT32_MAX;
	memcpy(&t->addr, addr, addrlen);
	t->addrlen = addrlen;
	t->sock = sock;
	t->iov.iov_base = r->tx.area + r->tx.cur_off;
	t->iov.iov_len = len;
	r->tx.area_used = r->tx.cur_off + len;
	t->next = UINT32_MAX;
	r->tx.cur = UINT32_MAX;
	r->tx.queued++;
	return i;
}

static void uring_tx_commit(struct rudp_io *io, uint32_t sock, size_t len, const struct sockaddr *addr,
			    socklen_t addrlen)
{
	struct io_ring *r = (struct io_ring *)io;
	uint32_t i = tx_take(r, sock, len, addr, addrlen);
	if (i == UINT32_MAX) {
		io->stats.send_errors++;
		return;
	}
	/* A held movable datagram waits only for its own peer's run. */
	if (r->tx.movable != UINT32_MAX && !same_peer(&r->tx.slot[r->tx.movable], &r->tx.slot[i]))
		close_run(r);
	if (r->tx.run_segs > 0) {
		if (same_peer(&r->tx.slot[r->tx.run_first], &r->tx.slot[i]) && run_takes(r, len)) {
			run_append(r, i);
			if (len < r->tx.run_len)
				close_run(r); /* only the last segment may be shorter */
			return;
		}
		close_run(r);
	}
	r->tx.run_first = r->tx.run_last = i;
	r->tx.run_segs = 1;
	r->tx.run_len = len;
}

/* A datagram whose place among the others does not matter (an ACK): it
 * joins the open run to its peer as the last segment, or is held
 * (movable) until that peer's run closes, so that an answer queued after
 * it still carries it (see close_run). */
static void uring_tx_commit_movable(struct rudp_io *io, uint32_t sock, size_t len,
				    const struct sockaddr *addr, socklen_t addrlen)
{
	struct io_ring *r = (struct io_ring *)io;
	if (!r->tx.gso || io->gso_off) {
		uring_tx_commit(io, sock, len, addr, addrlen);
		return;
	}
	uint32_t i = tx_take(r, sock, len, addr, addrlen);
	if (i == UINT32_MAX) {
		io->stats.send_errors++;
		return;
	}
	bool to_run = r->tx.run_segs > 0 && same_peer(&r->tx.slot[r->tx.run_first], &r->tx.slot[i]);
	if (to_run && r->tx.movable == UINT32_MAX && run_takes(r, len)) {
		run_append(r, i);
		close_run(r);
		return;
	}
	/* One held at a time; a run to another peer goes now. */
	if (r->tx.movable != UINT32_MAX || (r->tx.run_segs > 0 && !to_run))
		close_run(r);
	r->tx.movable = i;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Watches shared memory for input (a completion, or receive work the
 * kernel holds for this thread) for up to io.wait_spin_ns before the
 * caller sleeps; true when some came. In a VM a sleep and its wake-up
 * cost several microseconds of traps, and in a stream the next batch is
 * often closer than that: sleeping at once costs single-connection
 * throughput that a watch of a few microseconds wins back. */
static bool spin_for_input(struct io_ring *r, int timeout_ms)
{
	uint64_t end = rudp_io_watch_start(&r->base, timeout_ms);
	do {
		if (io_uring_cq_ready(&r->ring) > 0 ||
		    (IO_URING_READ_ONCE(*r->ring.sq.kflags) & IORING_SQ_TASKRUN)) {
			rudp_io_watch_ended(&r->base, true);
			return true;
		}
		cpu_relax();
	} while (rudp_io_now_ns() < end);
	rudp_io_watch_ended(&r->base, false);
	return false;
}

/* Makes sure a wake-up timer in the kernel fires within timeout_ms from
 * now, and returns how many completions the requests this queues will post
 * at once (0 or 1, an update's), or -1 when it cannot (both timers armed
 * for later, or no SQE free): the caller then waits with a timeout of its
 * own. A timer armed for that moment or earlier serves; one that would
 * fire within the next quarter of the wait is moved to the new deadline
 * instead (in a ping-pong the deadline moves later with every round trip,
 * and moving a timer costs less than its firing and the needless wake-up
 * that follows); else a free one is armed. */
static int wake_timer_within(struct io_ring *r, int timeout_ms)
{
	uint64_t now = rudp_io_now_ns();
	uint64_t horizon = (uint64_t)timeout_ms * 1000000u;
	uint64_t due = now + horizon;
	int free_slot = -1, soon = -1;
	for (int i = 0; i < WAKE_TIMERS; i++) {
		uint64_t at = r->wake.at_ns[i];
		if (at == 0)
			free_slot = i;
		else if (at <= due && at > now + horizon / 4)
			return 0;
		else if (at <= due)
			soon = i;
	}
	int slot = soon >= 0 ? soon : free_slot;
	if (slot < 0)
		return -1;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return soon >= 0 ? 0 : -1;
	r->wake.ts[slot].tv_sec = (long long)(due / 1000000000u);
	r->wake.ts[slot].tv_nsec = (long long)(due % 1000000000u);
	r->wake.at_ns[slot] = due;
	r->base.stats.wake_timers++;
	if (soon >= 0) {
		/* If it has fired meanwhile, the update fails and the
		 * timer's own completion frees the slot. */
		io_uring_prep_timeout_update(sqe, &r->wake.ts[slot], WAKE_TAG_BASE + (uint64_t)slot,
					     IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(sqe, WAKE_UPDATE_TAG);
		return 1;
	}
	/* No completion count: a pure timer, which ends only by firing. */
	io_uring_prep_timeout(sqe, &r->wake.ts[slot], 0, IORING_TIMEOUT_ABS);
	io_uring_sqe_set_data64(sqe, WAKE_TAG_BASE + (uint64_t)slot);
	return 0;
}

static int uring_wait(struct rudp_io *io, int timeout_ms)
{
	struct io_ring *r = (struct io_ring *)io;
	int c = ring_check(r);
	if (c < 0)
		return c;
	reap(r);
	if (timeout_ms <= 0 || r->rx.q_len > 0 || r->rx.error || r->socks.rearm_len > 0) {
		uring_flush(io);
		return 0;
	}
	/* A lone send leaves directly, as in a flush (flush_direct): a plain
	 * sendmsg and then the wait took less time than one enter doing both.
	 * Otherwise the pending sends are submitted on their own before a
	 * watch (below), or by the enter that waits. Sends on
	 * loopback complete during the submit and their CQEs would end the
	 * wait at once, so wait for one completion more than there are sends
	 * outstanding. */
	flush_direct(r);
	close_run(r);
	/* Whether this wait watches (spin_for_input). Counted in every wait,
	 * this one ends a pause in time even when every wait carries sends
	 * (counted only in waits that could watch, a server whose every wait
	 * carried answers stayed paused and slept in most of them). */
	bool watch = rudp_io_watch_allowed(io);
	/* Sends to hand over and a watch to come: submit them on their own
	 * first. UDP sends complete during the submit, so the wait below can
	 * watch instead of sleeping in the enter that would have carried
	 * them. When the input comes within the watch that is one system call
	 * either way; a watch that ends empty costs a second one. (A bulk
	 * sender has its window's sends queued here on every wait, and slept
	 * in every one before.) A refusal (it should not happen) leaves them
	 * queued for the wait's own enter below, which reports it. */
	if (r->tx.sqes_queued > 0 && watch) {
		(void)submit(r);
		reap(r);
		if (r->rx.q_len > 0 || r->rx.error || r->socks.rearm_len > 0)
			return 0;
	}
	unsigned want = r->tx.sqes_inflight + r->tx.sqes_queued + 1;
	int e;
	/* With nothing of ours in the kernel, first watch for input a few
	 * microseconds (spin_for_input), then sleep without a timeout of the
	 * wait's own: a wait's timeout is a timer the kernel starts and
	 * cancels on every wait, and in a VM, where reprogramming the timer
	 * device traps to the hypervisor, that costs microseconds per wake-up
	 * on each side of a ping-pong. A host's deadline (a tail probe, the
	 * caller's timeout) is mostly a millisecond or more away and moves
	 * later with every round trip, so a timer request left in the kernel
	 * serves many waits (wake_timer_within). Sends in flight keep the
	 * wait's own timeout: their completions count towards want, and one
	 * the kernel holds (socket buffer full) could otherwise keep the wait
	 * past its deadline. */
	if (want == 1 && watch && spin_for_input(r, timeout_ms)) {
		reap(r);
		return 0;
	}
	int own = want == 1 ? wake_timer_within(r, timeout_ms) : -1;
	if (own >= 0) {
		e = io_uring_submit_and_wait(&r->ring, 1 + (unsigned)own);
	} else {
		struct __kernel_timespec ts = {.tv_sec = timeout_ms / 1000,
					       .tv_nsec = (long long)(timeout_ms % 1000) * 1000000};
		struct io_uring_cqe *cqe = NULL;
		e = io_uring_submit_and_wait_timeout(&r->ring, &cqe, want, &ts, NULL);
	}
	io->stats.recv_calls++;
	if (e >= 0 || e == -ETIME || e == -EINTR)
		submitted(r);
	reap(r);
	if (e < 0 && e != -ETIME && e != -EINTR && e != -EAGAIN && e != -EBUSY)
		return e;
	return 0;
}

static uint32_t uring_pending(const struct rudp_io *io)
{
	return ((const struct io_ring *)io)->tx.queued;
}

/* Completions in the CQ, receives queued, or task work the kernel holds
 * for this thread (COOP_TASKRUN): all visible in shared memory. */
static bool uring_input_waiting(struct rudp_io *io)
{
	struct io_ring *r = (struct io_ring *)io;
	if (r->fork_gen != fork_generation || r->broken)
		return true; /* let the next call find out */
	return r->rx.q_len > 0 || r->rx.error || r->socks.rearm_len > 0 || io_uring_cq_ready(&r->ring) > 0 ||
	       (IO_URING_READ_ONCE(*r->ring.sq.kflags) & IORING_SQ_TASKRUN);
}

static void uring_destroy(struct rudp_io *io)
{
	struct io_ring *r = (struct io_ring *)io;
	if (r->ring_ready && r->fork_gen != fork_generation) {
		/* Inherited from the parent, which still owns the ring's requests
		 * and buffers: drop only this process's mapping and fd. */
		io_uring_queue_exit(&r->ring);
	} else if (r->ring_ready) {
		submit(r);
		/* A posted receive holds a reference to its socket, and the
		 * kernel tears a ring down in the background: without a cancel
		 * the port stays bound for a while after the host is gone, and a
		 * server restarted at once fails with EADDRINUSE. */
		for (uint32_t i = 0; i < r->socks.n; i++) {
			r->socks.slot[i].live = false;
			if (r->socks.slot[i].armed)
				cancel_recv(r, i);
		}
		submit(r);
		/* Sends still in the kernel point into tx.area: let them finish;
		 * and wait for the receives' last completions. */
		uint64_t give_up = rudp_io_now_ns() + DESTROY_DRAIN_MS * 1000000ull;
		reap(r);
		while (r->tx.inflight > 0 || r->socks.armed > 0) {
			struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000000};
			struct io_uring_cqe *cqe;
			io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
			reap(r);
			if (rudp_io_now_ns() > give_up)
				break;
		}
		if (r->rx.br_registered)
			io_uring_unregister_buf_ring(&r->ring, BUF_GROUP);
		io_uring_queue_exit(&r->ring);
	}
	if (r->rx.br)
		munmap(r->rx.br, r->rx.br_bytes);
	if (r->rx.mem)
		munmap(r->rx.mem, r->rx.mem_bytes);
	free(r->rx.q);
	free(r->rx.held);
	free(r->rx.out);
	free(r->tx.slot);
	free(r->tx.area);
	free(r->tx.free);
	free(r->tx.iovs);
	free(r->socks.slot);
	free(r->socks.rearm);
	free(r);
}

static bool set_gro(int fd, bool on);

/* One more socket on this ring: its receive draws from the same buffers,
 * so a host with a socket per connection holds one pool, not one each. */
static int uring_add_socket(struct rudp_io *io, int fd)
{
	struct io_ring *r = (struct io_ring *)io;
	int c = ring_check(r);
	if (c < 0)
		return c;
	/* The ring, not the socket, decides whether an operation waits (see
	 * create); and the socket reads runs whole if the buffers can hold
	 * them (without UDP_GRO the kernel splits them: still correct). */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return -errno;
	if (r->rx.gro)
		set_gro(fd, true);
	uint32_t i = 1;
	while (i < r->socks.n && (r->socks.slot[i].fd >= 0 || r->socks.slot[i].zombie))
		i++;
	if (i == r->socks.cap) {
		if (r->socks.cap >= (1u << 24))
			return -EMFILE;
		uint32_t cap = r->socks.cap * 2;
		struct ring_sock *socks = realloc(r->socks.slot, cap * sizeof(*socks));
		if (!socks)
			return -ENOMEM;
		r->socks.slot = socks;
		uint32_t *rearm = malloc(2 * (size_t)cap * sizeof(*rearm));
		if (!rearm)
			return -ENOMEM;
		/* The queues wrap at the old size: unwrap them into the new. */
		for (uint32_t q = 0; q < 2; q++) {
			for (uint32_t k = 0; k < r->socks.rearm_qlen[q]; k++)
				rearm[q * cap + k] =
					r->socks.rearm[q * r->socks.cap +
						       (r->socks.rearm_head[q] + k) % r->socks.cap];
			r->socks.rearm_head[q] = 0;
		}
		free(r->socks.rearm);
		r->socks.rearm = rearm;
		r->socks.cap = cap;
	}
	if (i == r->socks.n) {
		r->socks.n++;
		r->socks.slot[i].on_rearm = false;
	}
	/* A removed socket's index may still be on the rearm queue: it stays
	 * there once, for the new socket. */
	bool queued = r->socks.slot[i].on_rearm;
	r->socks.slot[i] = (struct ring_sock){.fd = fd, .live = true, .on_rearm = queued};
	push_rearm(r, i, true); /* armed by the next recv call */
	/* A buffer per socket at least: a starved pool ends the receive of
	 * every socket that gets data meanwhile. */
	while (r->rx.ready < r->rx.count && r->rx.ready < r->socks.n)
		rx_grow(r);
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
	if (ring_check(r) == 0) {
		submit(r);
		if (so->armed) {
			cancel_recv(r, i);
			submit(r);
			uint64_t give_up = rudp_io_now_ns() + DESTROY_DRAIN_MS * 1000000ull;
			reap(r);
			while (so->armed) {
				struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000000};
				struct io_uring_cqe *cqe;
				io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
				reap(r);
				if (rudp_io_now_ns() > give_up)
					break;
			}
		}
	}
	uint32_t kept = 0;
	for (uint32_t k = 0; k < r->rx.q_len; k++) {
		struct rx_done d = r->rx.q[(r->rx.q_head + k) % r->rx.count];
		if (d.sock == i)
			r->rx.held[r->rx.held_len++] = d.bid; /* back to the ring at the next call */
		else
			r->rx.q[(r->rx.q_head + kept++) % r->rx.count] = d;
	}
	r->rx.q_len = kept;
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

/* A GRO buffer's stride: GRO_BYTES rounded up to the page size of this
 * machine (4 KiB on x86-64, 16 or 64 KiB on some arm64 kernels), read at
 * run time so a buffer never shares a page with its neighbour there. */
static size_t gro_stride(void)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t p = page > 0 ? (size_t)page : 4096u;
	return (GRO_BYTES + p - 1) / p * p;
}

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
	 * thread's next system call, and TASKRUN_FLAG tells reap() when to
	 * make one. A thread asleep (in the ring's wait or in poll on
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

	struct io_uring_buf_reg reg;
	memset(&reg, 0, sizeof(reg));
	reg.ring_addr = (uint64_t)(uintptr_t)r->rx.br;
	reg.ring_entries = r->rx.count;
	reg.bgid = BUF_GROUP;
	e = io_uring_register_buf_ring(&r->ring, &reg, 0);
	if (e < 0)
		return -e; /* EINVAL before 5.19 */
	r->rx.br_registered = true;
	io_uring_buf_ring_init(r->rx.br);
	uint32_t mask = (uint32_t)io_uring_buf_ring_mask(r->rx.count);
	for (uint32_t i = 0; i < r->rx.ready; i++)
		io_uring_buf_ring_add(r->rx.br, rx_buf(r, i), (unsigned)r->rx.stride, (unsigned short)i,
				      (int)mask, (int)i);
	io_uring_buf_ring_advance(r->rx.br, (int)r->rx.ready);
	r->rx.starved = false;
	r->rx.last_starved = UINT64_MAX;
	r->rx.q_head = r->rx.q_len = r->rx.held_len = 0;
	for (uint32_t i = 0; i < r->tx.cap; i++)
		r->tx.free[i] = r->tx.cap - 1 - i;
	r->tx.free_len = r->tx.cap;
	r->tx.cur = UINT32_MAX;
	r->tx.area_used = 0;
	r->tx.queued = r->tx.inflight = 0;
	r->tx.sqes_queued = r->tx.sqes_inflight = 0;
	r->tx.run_segs = 0;
	r->tx.movable = UINT32_MAX;
	r->tx.iovs_used = 0;
	r->tx.gso = (p.features & IORING_FEAT_SUBMIT_STABLE) != 0;
	r->rx.error = 0;
	memset(r->wake.at_ns, 0, sizeof(r->wake.at_ns));

	r->rx.msg.msg_namelen = NAME_SPACE;
	r->rx.msg.msg_controllen = r->rx.gro ? GRO_CONTROL_SPACE : 0;
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
	arm_recv(r, 0);
	e = submit_counted(r, &r->base.stats.recv_calls);
	if (e < 0)
		return -e;
	/* A kernel without multishot recvmsg (before 6.0) rejects the request
	 * at once, so its CQE is already here. */
	reap(r);
	if (!r->socks.slot[0].armed || r->rx.error)
		return r->rx.error ? -r->rx.error : EINVAL;
	for (uint32_t i = 1; i < r->socks.n; i++)
		if (r->socks.slot[i].live)
			push_rearm(r, i, true);
	r->fork_gen = fork_generation;
	return 0;
}

/* A ring belongs to the process that made it: its requests run in that
 * process and write received data into that process's memory. A forked
 * child that services the host (the parent leaving it alone) cancels the
 * inherited receive, so the parent's ring stops taking datagrams, and makes
 * its own ring. */
static int adopt_after_fork(struct io_ring *r)
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
	r->rx.br_registered = false;
	int e = ring_start(r);
	if (e != 0) {
		r->broken = e;
		return -e;
	}
	return 0;
}

static void note_fork(void)
{
	fork_generation++;
}

static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, note_fork);
}

/* Turns UDP_GRO on or off on the socket; returns whether it is now on. */
static bool set_gro(int fd, bool on)
{
	int v = on;
	return setsockopt(fd, SOL_UDP, UDP_GRO, &v, sizeof(v)) == 0 && on;
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
	r->tx.cur = UINT32_MAX;
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
	 * provided as needed, RX_INITIAL or RX_INITIAL_GRO first (see the top
	 * of this file). The owner may cap them lower (rx_buffers): a client
	 * among hundreds in one process rarely needs a window's worth at once. */
	r->rx.count = pow2_at_least(rx_buffers ? rx_buffers : batch * 2 < 64 ? 64 : batch * 2);
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
			r->rx.count = pow2_at_least(want < 32768 ? (uint32_t)want : 32768);
		gro = false;
	}
	/* Two batches of send slots: one being filled while the last one's
	 * completions, nearly always immediate, come back. */
	r->tx.cap = batch * 2;

	r->rx.br_bytes = (size_t)r->rx.count * sizeof(struct io_uring_buf);
	void *br = mmap(NULL, r->rx.br_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	/* A kernel without UDP_GRO (before 5.0; io_uring multishot needs 6.0,
	 * so not expected) leaves the buffers one datagram each. */
	r->rx.gro = gro && set_gro(fd, true);
	r->rx.stride = r->rx.gro ? gro_stride() : RX_STRIDE;
	r->rx.ready = r->rx.gro ? RX_INITIAL_GRO : RX_INITIAL;
	if (r->rx.ready > r->rx.count)
		r->rx.ready = r->rx.count;
	/* Address space for the whole pool, reserved but not committed
	 * (NORESERVE): pages become memory when the kernel writes a datagram
	 * into them. No huge pages: one would make 2 MiB resident at the first
	 * write into a pool of 64 KiB buffers. */
	r->rx.mem_bytes = (size_t)r->rx.count * r->rx.stride;
	void *rx_mem = mmap(NULL, r->rx.mem_bytes, PROT_READ | PROT_WRITE,
			    MAP_ANONYMOUS | MAP_PRIVATE | MAP_NORESERVE, -1, 0);
	if (rx_mem != MAP_FAILED) {
		r->rx.mem = rx_mem;
		madvise(rx_mem, r->rx.mem_bytes, MADV_NOHUGEPAGE);
	}
	r->rx.q = calloc(r->rx.count, sizeof(*r->rx.q));
	r->rx.held = calloc(r->rx.count, sizeof(*r->rx.held));
	/* malloc, not calloc: every field of an output datagram and of a send
	 * slot is written before it is read (tx_commit and close_run fill a
	 * slot), so only the slots in use become resident, and the free stack
	 * below hands out the same few again and again. */
	r->rx.out = malloc(batch * sizeof(*r->rx.out));
	r->tx.slot = malloc(r->tx.cap * sizeof(*r->tx.slot));
	r->tx.area = malloc((size_t)(r->tx.cap + 1) * RUDP_IO_SLOT_SIZE);
	r->tx.free = calloc(r->tx.cap, sizeof(*r->tx.free));
	r->tx.iovs = calloc(r->tx.cap, sizeof(*r->tx.iovs));
	if (br != MAP_FAILED)
		r->rx.br = br;
	if (!r->rx.br || !r->rx.mem || !r->rx.q || !r->rx.held || !r->rx.out || !r->tx.slot || !r->tx.area ||
	    !r->tx.free || !r->tx.iovs || !r->socks.slot || !r->socks.rearm) {
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
		set_gro(fd, false);
	return io;
}
