/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend, the ring's traffic with the kernel: submitting what is
 * prepared, reaping completions, and waiting for input. A wait first
 * watches shared memory for a while, then sleeps in the kernel with the
 * wake-up of a timer request left there rather than a timeout of its own,
 * so that an idle host's waits program no timer each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "io_uring_internal.h"

/* Takes one completion: a send's to the send side, a receive's to the
 * receive side; a timer's frees its slot. */
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
		uring_tx_on_cqe(&r->tx, &r->base.stats, ud, cqe->res);
		return;
	}
	uring_rx_on_cqe(&r->rx, &r->socks, ud - RECV_TAG_BASE, cqe);
}

void uring_reap(struct io_ring *r)
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
				uring_submit_counted(r, &r->base.stats.send_calls);
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

int uring_submit_prepared(struct io_ring *r, uint64_t *calls)
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
	uring_tx_submitted(&r->tx, &r->base.stats, io_uring_sq_ready(&r->ring) == 0);
	return n;
}

int uring_submit_counted(struct io_ring *r, uint64_t *calls)
{
	uring_tx_close_run(r);
	return uring_submit_prepared(r, calls);
}

int uring_submit(struct io_ring *r)
{
	return uring_submit_counted(r, &r->base.stats.send_calls);
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
static bool spin_for_input(struct rudp_io *io, struct io_uring *ring, uint64_t timeout_us)
{
	uint64_t end = rudp_io_watch_start(io, timeout_us);
	do {
		if (io_uring_cq_ready(ring) > 0 ||
		    (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_TASKRUN)) {
			rudp_io_watch_ended(io, true);
			return true;
		}
		cpu_relax();
	} while (rudp_io_now_ns() < end);
	rudp_io_watch_ended(io, false);
	return false;
}

/* Makes sure a wake-up timer in the kernel fires within timeout_us from
 * now, and returns how many completions the requests this queues will post
 * at once (0 or 1, an update's), or -1 when it cannot (both timers armed
 * for later, or no SQE free): the caller then waits with a timeout of its
 * own. A timer armed for that moment or earlier serves; one that would
 * fire within the next quarter of the wait is moved to the new deadline
 * instead (in a ping-pong the deadline moves later with every round trip,
 * and moving a timer costs less than its firing and the needless wake-up
 * that follows); else a free one is armed. */
static int wake_timer_within(struct uring_wake *w, struct io_uring *ring, struct rudp_io_stats *stats,
			     uint64_t timeout_us)
{
	uint64_t now = rudp_io_now_ns();
	uint64_t horizon = timeout_us * 1000u;
	uint64_t due = now + horizon;
	int free_slot = -1, soon = -1;
	for (int i = 0; i < WAKE_TIMERS; i++) {
		uint64_t at = w->at_ns[i];
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
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return soon >= 0 ? 0 : -1;
	w->ts[slot].tv_sec = (long long)(due / 1000000000u);
	w->ts[slot].tv_nsec = (long long)(due % 1000000000u);
	w->at_ns[slot] = due;
	stats->wake_timers++;
	if (soon >= 0) {
		/* If it has fired meanwhile, the update fails and the
		 * timer's own completion frees the slot. */
		io_uring_prep_timeout_update(sqe, &w->ts[slot], WAKE_TAG_BASE + (uint64_t)slot,
					     IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(sqe, WAKE_UPDATE_TAG);
		return 1;
	}
	/* No completion count: a pure timer, which ends only by firing. */
	io_uring_prep_timeout(sqe, &w->ts[slot], 0, IORING_TIMEOUT_ABS);
	io_uring_sqe_set_data64(sqe, WAKE_TAG_BASE + (uint64_t)slot);
	return 0;
}

int uring_wait(struct rudp_io *io, uint64_t timeout_us)
{
	struct io_ring *r = (struct io_ring *)io;
	int c = uring_ring_check(r);
	if (c < 0)
		return c;
	uring_reap(r);
	if (timeout_us == 0 || uring_rx_has_work(r)) {
		uring_flush(io);
		return 0;
	}
	/* A lone send leaves directly, as in a flush (uring_tx_flush_direct):
	 * a plain sendmsg and then the wait took less time than one enter
	 * doing both. Otherwise the pending sends are submitted on their own
	 * before a watch (below), or by the enter that waits. Sends on
	 * loopback complete during the submit and their CQEs would end the
	 * wait at once, so wait for one completion more than there are sends
	 * outstanding. */
	uring_tx_flush_direct(r);
	uring_tx_close_run(r);
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
	if (uring_tx_requests_queued(&r->tx) > 0 && watch) {
		(void)uring_submit(r);
		uring_reap(r);
		if (uring_rx_has_work(r))
			return 0;
	}
	unsigned want = uring_tx_requests_inflight(&r->tx) + uring_tx_requests_queued(&r->tx) + 1;
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
	if (want == 1 && watch && spin_for_input(io, &r->ring, timeout_us)) {
		uring_reap(r);
		return 0;
	}
	int own = want == 1 ? wake_timer_within(&r->wake, &r->ring, &io->stats, timeout_us) : -1;
	if (own >= 0) {
		e = io_uring_submit_and_wait(&r->ring, 1 + (unsigned)own);
	} else {
		struct __kernel_timespec ts = {.tv_sec = (long long)(timeout_us / 1000000u),
					       .tv_nsec = (long long)(timeout_us % 1000000u) * 1000};
		struct io_uring_cqe *cqe = NULL;
		e = io_uring_submit_and_wait_timeout(&r->ring, &cqe, want, &ts, NULL);
	}
	io->stats.recv_calls++;
	if (e >= 0 || e == -ETIME || e == -EINTR)
		uring_tx_submitted(&r->tx, &io->stats, io_uring_sq_ready(&r->ring) == 0);
	uring_reap(r);
	if (e < 0 && e != -ETIME && e != -EINTR && e != -EAGAIN && e != -EBUSY)
		return e;
	return 0;
}

/* Completions in the CQ, receives queued, or task work the kernel holds
 * for this thread (COOP_TASKRUN): all visible in shared memory. */
bool uring_input_waiting(struct rudp_io *io)
{
	struct io_ring *r = (struct io_ring *)io;
	if (r->fork_gen != uring_fork_generation || r->broken)
		return true; /* let the next call find out */
	return uring_rx_has_work(r) || io_uring_cq_ready(&r->ring) > 0 ||
	       (IO_URING_READ_ONCE(*r->ring.sq.kflags) & IORING_SQ_TASKRUN);
}
