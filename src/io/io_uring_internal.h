/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend internals: struct io_ring, the sub-structs of its parts
 * and the functions the backend's files share. Not seen outside src/io/;
 * the host sees only io.h.
 *
 * The backend keeps receives posted and sends a whole flush with one
 * io_uring_enter, so in steady state no system call is made per datagram.
 * Completions of both kinds share one CQ; they are reaped together, send
 * CQEs free their slot at once and receive CQEs queue in rx.q (bounded: at
 * most one per provided buffer) until recv hands them out.
 *
 * One idea per file:
 *   io_uring.c       set-up and teardown: ring creation (again after fork),
 *                    sockets added and removed, destroy and its drain
 *   io_uring_recv.c  receive: provided-buffer ring, multishot recvmsg, GRO runs
 *   io_uring_send.c  send: slots, the packed send area, GSO runs, direct sends
 *   io_uring_wait.c  submit, reap, and wait: the watch for input, wake-up timers
 *
 * Each part owns its sub-struct (uring_rx, uring_tx, uring_wake) and
 * changes another's only through that part's functions. The socket table
 * (uring_socks) is shared: set-up adds and removes sockets, receive arms
 * them, send reads their fds. Sizes fixed at creation (rx.count, tx.cap)
 * may be read anywhere.
 */
#ifndef RUDP_IO_URING_INTERNAL_H
#define RUDP_IO_URING_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

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
/* The provided-buffer ring's group id: the ring has one. */
#define BUF_GROUP 0

/* ---- io_uring_recv.c ---- */

/* How many receive buffers a ring starts with: plain buffers hold one
 * datagram each; a GRO buffer holds a whole run, so a few suffice until the
 * traffic shows otherwise (each is 68 KiB of address space). 8 and not 4:
 * one connection's window of 64 at 800 B comes as two runs and their ACKs,
 * which 4 leaves short; 8 was faster both for one connection and for many
 * client hosts in one process. RX_INITIAL is also the fewest buffers an
 * owner may ask for. */
#define RX_INITIAL 16u
#define RX_INITIAL_GRO 8u

/* A receive completion waiting in rx.q to be handed out. */
struct rx_done {
	uint32_t bid;
	uint32_t sock; /* the socket it came in on */
	int32_t len; /* bytes the kernel wrote into the buffer */
	uint32_t taken; /* payload bytes already handed out (a GRO run split over recv calls) */
};

/* The receive side: the provided buffers, the completions waiting to be
 * handed out and the datagrams the last recv call handed out. */
struct uring_rx {
	struct io_uring_buf_ring *br;
	size_t br_bytes;
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

struct ring_sock {
	int fd; /* -1: a free slot */
	bool live; /* in use: removed sockets are not re-armed; their data is dropped */
	bool armed; /* its multishot receive is posted */
	bool on_rearm; /* on a rearm queue */
	bool got; /* a buffer came in since its receive was armed */
	bool zombie; /* removed while its receive could still post: never reused */
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

/* ---- io_uring_send.c ---- */

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

/* ---- io_uring_wait.c ---- */

/* Wake-up timers in the kernel (IORING_OP_TIMEOUT, CLOCK_MONOTONIC
 * absolute): each one's deadline in ns, 0 when free (fired, or never
 * armed). The timespec is read when the request is submitted. */
struct uring_wake {
	uint64_t at_ns[WAKE_TIMERS];
	struct __kernel_timespec ts[WAKE_TIMERS];
};

/* ---- io_uring.c: the backend ---- */

struct io_ring {
	struct rudp_io base;
	struct io_uring ring;
	bool ring_ready;
	bool buffers_registered; /* rx.br is registered with the ring */
	struct uring_rx rx;
	struct uring_socks socks;
	uint32_t max_socks; /* sockets the owner expects to add: room in the CQ for their receives' ends */
	struct uring_tx tx;
	struct uring_wake wake;
	unsigned fork_gen; /* uring_fork_generation when the ring was made */
	int broken; /* errno of a failed rebuild after fork: every call fails */
};

/* Bumped in the child after every fork(); a ring made before it belongs to
 * the parent. A counter, not getpid(), so the check costs no system call. */
extern volatile unsigned uring_fork_generation;

/* A ring inherited through fork: cancels the parent's receives and makes
 * this process's own ring. Returns 0 or -errno (the ring is then broken). */
int uring_adopt_after_fork(struct io_ring *r);

/* Every entry point starts here. Returns 0 or -errno. */
static inline int uring_ring_check(struct io_ring *r)
{
	if (r->broken)
		return -r->broken;
	if (r->fork_gen != uring_fork_generation)
		return uring_adopt_after_fork(r);
	return 0;
}

/* ---- io_uring_recv.c ---- */

/* Allocates the receive side for count buffers (a power of two) and
 * batch output datagrams; asks socket fd for UDP_GRO when gro. Returns
 * whether everything was allocated; uring_rx_free frees what was, either
 * way. */
bool uring_rx_alloc(struct uring_rx *rx, int fd, uint32_t count, bool gro, uint32_t batch);
void uring_rx_free(struct uring_rx *rx);
/* Registers the buffer ring with a new ring, provides the buffers made so
 * far and forgets every completion. Returns 0 or -errno (EINVAL before
 * 5.19). */
int uring_rx_start(struct uring_rx *rx, struct io_uring *ring);
/* Turns UDP_GRO on or off on socket fd; returns whether it is now on. */
bool uring_set_gro(int fd, bool on);
/* Readies socket fd, about to join the ring, for its receives: UDP_GRO
 * when the ring reads runs. */
void uring_rx_prepare_socket(const struct uring_rx *rx, int fd);
/* Provides buffers until there are at least want (or all count). */
void uring_rx_provide_at_least(struct uring_rx *rx, struct rudp_io_stats *stats, uint32_t want);
/* Drops socket sock's completions not yet handed out (their buffers go
 * back to the ring at the next recv call). */
void uring_rx_drop_socket(struct uring_rx *rx, uint32_t sock);
/* Takes a completion of socket i's receive. */
void uring_rx_on_cqe(struct uring_rx *rx, struct uring_socks *socks, uint64_t i,
		     const struct io_uring_cqe *cqe);
/* Puts socket i at the back of a rearm queue (once): the first if it
 * found no buffer last time, else the second. */
void uring_socks_push_rearm(struct uring_socks *socks, uint32_t i, bool starved);
/* Queues socket i's multishot receive; returns false when no SQE was free
 * (the caller submits and tries again). */
bool uring_rx_arm(struct io_ring *r, uint32_t i);
/* rudp_io_ops.recv. */
int uring_recv(struct rudp_io *io, struct rudp_io_datagram **out);

/* Whether the next recv call has work without asking the kernel:
 * completions to hand out, an error to report, or sockets to re-arm. */
static inline bool uring_rx_has_work(const struct io_ring *r)
{
	return r->rx.q_len > 0 || r->rx.error || r->socks.rearm_len > 0;
}

/* ---- io_uring_send.c ---- */

/* Allocates the send side: 2 x batch slots. Returns whether everything
 * was allocated; uring_tx_free frees what was, either way. */
bool uring_tx_alloc(struct uring_tx *tx, uint32_t batch);
void uring_tx_free(struct uring_tx *tx);
/* Every slot free, nothing queued; gso: the ring allows GSO runs. */
void uring_tx_start(struct uring_tx *tx, bool gso);
/* Takes the completion of send request ud (res: bytes sent or -errno). */
void uring_tx_on_cqe(struct uring_tx *tx, struct rudp_io_stats *stats, uint64_t ud, int res);
/* Bookkeeping once the kernel has taken every prepared SQE; sq_empty:
 * none is left in the SQ. */
void uring_tx_submitted(struct uring_tx *tx, struct rudp_io_stats *stats, bool sq_empty);
/* Turns the open run (and a held movable datagram) into send SQEs. */
void uring_tx_close_run(struct io_ring *r);
/* Sends a flush of one short send request with a plain sendmsg; returns
 * whether the flush is done. */
bool uring_tx_flush_direct(struct io_ring *r);
/* rudp_io_ops.tx_slot, tx_commit, tx_commit_movable, flush and pending. */
uint8_t *uring_tx_slot(struct rudp_io *io);
void uring_tx_commit(struct rudp_io *io, uint32_t sock, size_t len, const struct sockaddr *addr,
		     socklen_t addrlen);
void uring_tx_commit_movable(struct rudp_io *io, uint32_t sock, size_t len, const struct sockaddr *addr,
			     socklen_t addrlen);
int uring_flush(struct rudp_io *io);
uint32_t uring_pending(const struct rudp_io *io);

/* Datagrams submitted whose completion has not been reaped. */
static inline uint32_t uring_tx_inflight(const struct uring_tx *tx)
{
	return tx->inflight;
}

/* Send requests prepared and not yet submitted, and submitted and not yet
 * complete. */
static inline uint32_t uring_tx_requests_queued(const struct uring_tx *tx)
{
	return tx->sqes_queued;
}
static inline uint32_t uring_tx_requests_inflight(const struct uring_tx *tx)
{
	return tx->sqes_inflight;
}

/* ---- io_uring_wait.c ---- */

/* Takes every completion in the CQ (entering the kernel once when it
 * holds receive work for this thread). */
void uring_reap(struct io_ring *r);
/* One io_uring_enter for what is prepared, without closing the open run;
 * *calls counts it. Returns SQEs submitted or -errno. */
int uring_submit_prepared(struct io_ring *r, uint64_t *calls);
/* One io_uring_enter for everything committed; *calls counts it. */
int uring_submit_counted(struct io_ring *r, uint64_t *calls);
/* The same, counted in send_calls. */
int uring_submit(struct io_ring *r);
/* rudp_io_ops.wait and input_waiting. */
int uring_wait(struct rudp_io *io, uint64_t timeout_us);
bool uring_input_waiting(struct rudp_io *io);

#endif
