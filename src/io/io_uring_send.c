/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend, send: datagrams written into slots packed in one send
 * area, coalesced into UDP GSO runs, and handed to the kernel a flush at a
 * time (or, for a lone short flush, with a plain sendmsg).
 *
 * Each datagram is a sendmsg SQE over its own slot (iovec, msghdr,
 * address), and flush submits them all with one io_uring_enter. The
 * datagrams' bytes are packed one after another in one area (each takes
 * its length, not a 1.5 KiB slot's worth), which starts again at 0 once
 * nothing is queued or in the kernel: after every flush whose sends
 * completed at once, so a flush writes only the pages it sends from. A
 * slot, and the area, are reusable only once their CQEs have come back: a
 * send the kernel could not do at once (socket buffer full) finishes
 * later, from the ring, so the socket must be blocking as far as io_uring
 * is concerned (see uring_create).
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
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>

#include "io_uring_internal.h"

/* The kernel's limits for one GSO send: segments (UDP_MAX_SEGMENTS on
 * every kernel with io_uring multishot) and bytes (one IP packet's worth
 * of UDP payload, before the split). */
#define GSO_MAX_SEGMENTS 64
#define GSO_MAX_BYTES 65000

/* Gives the slots of a send request's chain back; returns how many. */
static uint32_t free_chain(struct uring_tx *tx, uint32_t first)
{
	uint32_t segs = 0;
	for (uint32_t i = first; i != UINT32_MAX && segs < tx->cap; i = tx->slot[i].next) {
		tx->free[tx->free_len++] = i;
		segs++;
	}
	return segs;
}

/* Accounts for a finished send request of segs datagrams (res: bytes sent,
 * or -errno), whether it went through the ring or directly. */
static void send_done(struct uring_tx *tx, struct rudp_io_stats *stats, uint32_t segs, int res)
{
	if (res < 0) {
		stats->send_errors += segs; /* dropped; reliability resends */
		/* A kernel or device that cannot do this GSO send will not do
		 * the next one either: send one by one from now on. */
		if (segs > 1 && (res == -EIO || res == -EINVAL || res == -EOPNOTSUPP))
			tx->gso = false;
	} else {
		stats->bytes_sent += (uint64_t)res;
		if (segs > 1)
			stats->gso_sends++;
	}
}

void uring_tx_on_cqe(struct uring_tx *tx, struct rudp_io_stats *stats, uint64_t ud, int res)
{
	uint32_t segs = 0;
	if (ud < tx->cap) {
		segs = free_chain(tx, (uint32_t)ud);
		tx->inflight -= segs;
		tx->sqes_inflight--;
	}
	send_done(tx, stats, segs, res);
}

static bool same_peer(const struct tx_slot *a, const struct tx_slot *b)
{
	return a->sock == b->sock && a->addrlen == b->addrlen && memcmp(&a->addr, &b->addr, a->addrlen) == 0;
}

/* Whether a datagram of len bytes to the open run's peer may join it as
 * its next segment: GSO on (and not turned off by the owner: gso_off),
 * room in the kernel's limits, and no shorter segment in it yet (only the
 * last may be shorter). */
static bool run_takes(const struct uring_tx *tx, bool gso_off, size_t len)
{
	return tx->gso && !gso_off && tx->run_segs > 0 && len <= tx->run_len &&
	       tx->slot[tx->run_last].iov.iov_len == tx->run_len && tx->run_segs < GSO_MAX_SEGMENTS &&
	       (tx->run_segs + 1) * tx->run_len <= GSO_MAX_BYTES;
}

/* Links committed datagram i behind the open run (run_takes said yes). */
static void run_append(struct uring_tx *tx, uint32_t i)
{
	tx->slot[tx->run_last].next = i;
	tx->run_last = i;
	tx->run_segs++;
}

/* Whether the held movable datagram can end the open run (same peer,
 * and room for it as the last segment). */
static bool movable_joins_run(const struct uring_tx *tx, bool gso_off)
{
	uint32_t m = tx->movable;
	return m != UINT32_MAX && tx->run_segs > 0 && same_peer(&tx->slot[tx->run_first], &tx->slot[m]) &&
	       run_takes(tx, gso_off, tx->slot[m].iov.iov_len);
}

/* Fills in the msghdr of a chain of segs committed datagrams from first
 * (GSO with segment size seg_len when segs > 1, its iovecs taken from the
 * scratch array, which has room: the caller checked). */
static struct msghdr *chain_hdr(struct uring_tx *tx, uint32_t first, uint32_t segs, size_t seg_len)
{
	struct tx_slot *t = &tx->slot[first];
	memset(&t->hdr, 0, sizeof(t->hdr));
	t->hdr.msg_name = &t->addr;
	t->hdr.msg_namelen = t->addrlen;
	if (segs == 1) {
		t->hdr.msg_iov = &t->iov;
		t->hdr.msg_iovlen = 1;
	} else {
		struct iovec *v = tx->iovs + tx->iovs_used;
		uint32_t k = 0;
		for (uint32_t i = first; i != UINT32_MAX; i = tx->slot[i].next) {
			const struct iovec *d = &tx->slot[i].iov;
			/* Segments that lie back to back in the send area go
			 * as one vector. */
			if (k > 0 &&
			    (uint8_t *)v[k - 1].iov_base + v[k - 1].iov_len == (uint8_t *)d->iov_base)
				v[k - 1].iov_len += d->iov_len;
			else
				v[k++] = *d;
		}
		tx->iovs_used += k;
		t->hdr.msg_iov = v;
		t->hdr.msg_iovlen = k;
		/* Zeroed whole: the kernel reads the padding after the
		 * segment size too (memcheck saw it uninitialised). */
		memset(&t->control, 0, sizeof(t->control));
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

/* Prepares one sendmsg SQE for a chain of segs committed datagrams from
 * first (GSO with segment size seg_len when segs > 1). The caller still
 * counts the chain as unsubmitted (run_segs or movable) until this
 * returns, so a submit made here to free an SQE counts it right. */
static void queue_chain(struct io_ring *r, uint32_t first, uint32_t segs, size_t seg_len)
{
	struct uring_tx *tx = &r->tx;
	int fd = r->socks.slot[tx->slot[first].sock].fd;
	struct io_uring_sqe *sqe = fd >= 0 ? io_uring_get_sqe(&r->ring) : NULL;
	if (!sqe && fd >= 0) {
		/* The SQ holds tx.cap + 2 entries, so only pending re-arms can
		 * make it full; submitting what is prepared makes room. */
		uring_submit_prepared(r, &r->base.stats.send_calls);
		sqe = io_uring_get_sqe(&r->ring);
	}
	if (!sqe) {
		/* Cannot happen short of a broken ring (or a socket removed
		 * with sends of its own still open, which remove prevents): drop
		 * the run (reliability resends) and give its slots back. */
		free_chain(tx, first);
		tx->queued -= segs;
		r->base.stats.send_errors += segs;
		return;
	}
	if (segs > 1 && tx->iovs_used + segs > tx->cap)
		uring_submit_prepared(r, &r->base.stats.send_calls); /* not reached: submits empty the SQ */
	struct msghdr *hdr = chain_hdr(tx, first, segs, seg_len);
	io_uring_prep_sendmsg(sqe, fd, hdr, 0);
	io_uring_sqe_set_data64(sqe, first);
	tx->sqes_queued++;
}

/* A single datagram goes as is, a run of two or more as a GSO send. A
 * held movable datagram ends the run when it can, else goes first in a
 * send of its own. */
void uring_tx_close_run(struct io_ring *r)
{
	struct uring_tx *tx = &r->tx;
	if (tx->movable != UINT32_MAX) {
		uint32_t m = tx->movable;
		if (movable_joins_run(tx, r->base.gso_off)) {
			run_append(tx, m);
		} else {
			queue_chain(r, m, 1, tx->slot[m].iov.iov_len);
		}
		tx->movable = UINT32_MAX;
	}
	if (tx->run_segs == 0)
		return;
	queue_chain(r, tx->run_first, tx->run_segs, tx->run_len);
	tx->run_segs = 0;
}

void uring_tx_submitted(struct uring_tx *tx, struct rudp_io_stats *stats, bool sq_empty)
{
	/* Counted when handed to the kernel, as the mmsg backend does; the
	 * open run (if any) is not in an SQE yet. */
	uint32_t handed = tx->queued - tx->run_segs - (tx->movable != UINT32_MAX);
	stats->datagrams_sent += handed;
	tx->inflight += handed;
	tx->queued -= handed;
	tx->sqes_inflight += tx->sqes_queued;
	tx->sqes_queued = 0;
	/* SUBMIT_STABLE: the kernel has copied the iovecs it was given. */
	if (sq_empty)
		tx->iovs_used = 0;
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
 * (EAGAIN) takes the ring's way, which waits for it.
 */
bool uring_tx_flush_direct(struct io_ring *r)
{
	struct uring_tx *tx = &r->tx;
	if (io_uring_sq_ready(&r->ring) != 0 || tx->sqes_inflight != 0)
		return false;
	uint32_t m = tx->movable;
	bool lone_movable = m != UINT32_MAX && tx->run_segs == 0;
	if (m != UINT32_MAX && !lone_movable) {
		if (!movable_joins_run(tx, r->base.gso_off))
			return false; /* two requests */
		run_append(tx, m); /* as uring_tx_close_run would */
		tx->movable = UINT32_MAX;
	}
	if (!lone_movable && tx->run_segs == 0)
		return false;
	uint32_t first = lone_movable ? m : tx->run_first;
	uint32_t segs = lone_movable ? 1 : tx->run_segs;
	if (segs > DIRECT_MAX_SEGMENTS)
		return false;
	size_t seg_len = lone_movable ? tx->slot[m].iov.iov_len : tx->run_len;
	int fd = r->socks.slot[tx->slot[first].sock].fd;
	if (fd < 0)
		return false;
	ssize_t n;
	tx->iovs_used = 0; /* nothing prepared uses the scratch iovecs */
	do {
		n = sendmsg(fd, chain_hdr(tx, first, segs, seg_len), MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	int res = n < 0 ? -errno : (int)n;
	tx->iovs_used = 0;
	if (res == -EAGAIN || res == -EWOULDBLOCK)
		return false;
	if (lone_movable)
		tx->movable = UINT32_MAX;
	else
		tx->run_segs = 0;
	r->base.stats.send_calls++;
	r->base.stats.direct_sends++;
	r->base.stats.datagrams_sent += segs;
	tx->queued -= free_chain(tx, first);
	send_done(tx, &r->base.stats, segs, res);
	return true;
}

int uring_flush(struct rudp_io *io)
{
	struct io_ring *r = (struct io_ring *)io;
	int c = uring_ring_check(r);
	if (c < 0)
		return c;
	uint32_t queued = r->tx.queued;
	int s = uring_tx_flush_direct(r) ? 0 : uring_submit(r);
	uring_reap(r);
	if (s < 0) {
		/* The ring refused the batch (it should not: SQEs were checked
		 * when prepared). Count the datagrams as lost: reliability resends. */
		io->stats.send_errors += queued;
		return s;
	}
	return (int)queued;
}

/* The scratch datagram buffer: never in a send. */
static uint8_t *tx_scratch(const struct uring_tx *tx)
{
	return tx->area + (size_t)tx->cap * RUDP_IO_SLOT_SIZE;
}

/* Submits and waits until every send is back from the kernel, so the
 * packed area can start again at 0. Rare: sends nearly always complete at
 * once, and the area is reset between flushes (see uring_tx_slot). */
static bool drain_sends(struct io_ring *r)
{
	uring_submit(r);
	uring_reap(r);
	while (r->tx.inflight > 0) {
		struct io_uring_cqe *cqe;
		int e = io_uring_wait_cqe(&r->ring, &cqe);
		r->base.stats.send_calls++;
		if (e < 0 && e != -EINTR)
			return false; /* cannot happen short of a broken ring */
		uring_reap(r);
	}
	return r->tx.queued == 0;
}

/* Submits and waits until at least one send slot is free again. */
static void wait_for_slot(struct io_ring *r)
{
	uring_submit(r);
	uring_reap(r);
	while (r->tx.free_len == 0) {
		struct io_uring_cqe *cqe;
		int e = io_uring_wait_cqe(&r->ring, &cqe);
		r->base.stats.send_calls++;
		if (e < 0 && e != -EINTR)
			return; /* cannot happen short of a broken ring; tx_slot copes */
		uring_reap(r);
	}
}

uint8_t *uring_tx_slot(struct rudp_io *io)
{
	struct io_ring *r = (struct io_ring *)io;
	struct uring_tx *tx = &r->tx;
	if (uring_ring_check(r) < 0)
		return tx_scratch(tx); /* commit drops it */
	if (tx->cur == UINT32_MAX) {
		/* Hand the kernel a full batch before taking more slots: rudp_config.io.batch
		 * datagrams per enter, as with sendmmsg. */
		if (tx->queued >= io->batch || tx->free_len == 0)
			wait_for_slot(r);
		if (tx->free_len == 0)
			return tx_scratch(tx); /* broken ring: commit will drop it */
		/* Nothing queued or in the kernel: the area is free again, so
		 * the pages written stay the few a flush needs (a window of
		 * 800-byte datagrams takes 53 KB instead of 64 slots' 96 KiB). */
		if (tx->queued == 0 && tx->inflight == 0)
			tx->area_used = 0;
		if (tx->area_used + RUDP_IO_SLOT_SIZE > (size_t)tx->cap * RUDP_IO_SLOT_SIZE) {
			if (!drain_sends(r))
				return tx_scratch(tx); /* broken ring: commit will drop it */
			tx->area_used = 0;
		}
		tx->cur = tx->free[--tx->free_len];
		tx->cur_off = tx->area_used;
	}
	return tx->area + tx->cur_off;
}

/* Fills in the slot tx_slot gave (tx.cur) and counts it committed.
 * Returns its index, or UINT32_MAX when there is none or the commit is
 * invalid (then the slot stays taken by tx.cur and is reused). */
static uint32_t tx_take(struct uring_tx *tx, const struct uring_socks *socks, uint32_t sock, size_t len,
			const struct sockaddr *addr, socklen_t addrlen)
{
	uint32_t i = tx->cur;
	if (i == UINT32_MAX)
		return UINT32_MAX;
	struct tx_slot *t = &tx->slot[i];
	if (len == 0 || len > RUDP_IO_SLOT_SIZE || addrlen > sizeof(t->addr) || sock >= socks->n ||
	    !socks->slot[sock].live)
		return UINT32_MAX;
	memcpy(&t->addr, addr, addrlen);
	t->addrlen = addrlen;
	t->sock = sock;
	t->iov.iov_base = tx->area + tx->cur_off;
	t->iov.iov_len = len;
	tx->area_used = tx->cur_off + len;
	t->next = UINT32_MAX;
	tx->cur = UINT32_MAX;
	tx->queued++;
	return i;
}

void uring_tx_commit(struct rudp_io *io, uint32_t sock, size_t len, const struct sockaddr *addr,
		     socklen_t addrlen)
{
	struct io_ring *r = (struct io_ring *)io;
	struct uring_tx *tx = &r->tx;
	uint32_t i = tx_take(tx, &r->socks, sock, len, addr, addrlen);
	if (i == UINT32_MAX) {
		io->stats.send_errors++;
		return;
	}
	/* A held movable datagram waits only for its own peer's run. */
	if (tx->movable != UINT32_MAX && !same_peer(&tx->slot[tx->movable], &tx->slot[i]))
		uring_tx_close_run(r);
	if (tx->run_segs > 0) {
		if (same_peer(&tx->slot[tx->run_first], &tx->slot[i]) && run_takes(tx, io->gso_off, len)) {
			run_append(tx, i);
			if (len < tx->run_len)
				uring_tx_close_run(r); /* only the last segment may be shorter */
			return;
		}
		uring_tx_close_run(r);
	}
	tx->run_first = tx->run_last = i;
	tx->run_segs = 1;
	tx->run_len = len;
}

/* A datagram whose place among the others does not matter (an ACK): it
 * joins the open run to its peer as the last segment, or is held
 * (movable) until that peer's run closes, so that an answer queued after
 * it still carries it (see uring_tx_close_run). */
void uring_tx_commit_movable(struct rudp_io *io, uint32_t sock, size_t len, const struct sockaddr *addr,
			     socklen_t addrlen)
{
	struct io_ring *r = (struct io_ring *)io;
	struct uring_tx *tx = &r->tx;
	if (!tx->gso || io->gso_off) {
		uring_tx_commit(io, sock, len, addr, addrlen);
		return;
	}
	uint32_t i = tx_take(tx, &r->socks, sock, len, addr, addrlen);
	if (i == UINT32_MAX) {
		io->stats.send_errors++;
		return;
	}
	bool to_run = tx->run_segs > 0 && same_peer(&tx->slot[tx->run_first], &tx->slot[i]);
	if (to_run && tx->movable == UINT32_MAX && run_takes(tx, io->gso_off, len)) {
		run_append(tx, i);
		uring_tx_close_run(r);
		return;
	}
	/* One held at a time; a run to another peer goes now. */
	if (tx->movable != UINT32_MAX || (tx->run_segs > 0 && !to_run))
		uring_tx_close_run(r);
	tx->movable = i;
}

uint32_t uring_pending(const struct rudp_io *io)
{
	return ((const struct io_ring *)io)->tx.queued;
}

bool uring_tx_alloc(struct uring_tx *tx, uint32_t batch)
{
	/* Two batches of send slots: one being filled while the last one's
	 * completions, nearly always immediate, come back. */
	tx->cap = batch * 2;
	tx->cur = UINT32_MAX;
	/* malloc, not calloc: every field of a send slot is written before it
	 * is read (tx_commit and uring_tx_close_run fill a slot), so only the
	 * slots in use become resident, and the free stack hands out the same
	 * few again and again. */
	tx->slot = malloc(tx->cap * sizeof(*tx->slot));
	tx->area = malloc((size_t)(tx->cap + 1) * RUDP_IO_SLOT_SIZE);
	tx->free = calloc(tx->cap, sizeof(*tx->free));
	tx->iovs = calloc(tx->cap, sizeof(*tx->iovs));
	return tx->slot && tx->area && tx->free && tx->iovs;
}

void uring_tx_free(struct uring_tx *tx)
{
	free(tx->slot);
	free(tx->area);
	free(tx->free);
	free(tx->iovs);
}

void uring_tx_start(struct uring_tx *tx, bool gso)
{
	for (uint32_t i = 0; i < tx->cap; i++)
		tx->free[i] = tx->cap - 1 - i;
	tx->free_len = tx->cap;
	tx->cur = UINT32_MAX;
	tx->area_used = 0;
	tx->queued = tx->inflight = 0;
	tx->sqes_queued = tx->sqes_inflight = 0;
	tx->run_segs = 0;
	tx->movable = UINT32_MAX;
	tx->iovs_used = 0;
	tx->gso = gso;
}
