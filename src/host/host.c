/* SPDX-License-Identifier: MIT */
/* The host: socket set-up, the service loop, and the API calls that drive them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "host_internal.h"

_Static_assert((int)RUDP_CC_NONE == (int)RUDP_CONN_CC_NONE && (int)RUDP_CC_AIMD == (int)RUDP_CONN_CC_AIMD &&
		       (int)RUDP_CC_RATE == (int)RUDP_CONN_CC_RATE,
	       "rudp_config.congestion_control goes to the conn as it is");

/* Receive batches handled before timers and sends get their turn, so a
 * flood on the socket cannot starve retransmission and ACKs. */
#define RECV_BATCHES_PER_ROUND 16

uint64_t rudp_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t random_u64(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = rudp_now_us() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&v;
	return v;
}

/* Re-arms the peer's timer and finishes a close the conn asked for. Call
 * after every conn call that may have changed state. */
static void after_conn_call(struct rudp_host *h, struct rudp_peer *p)
{
	if (p->closing_pending) {
		p->closing_pending = false;
		host_peer_close(h, p, p->close_reason);
		return;
	}
	budget_peer_update(h, p);
	host_peer_touch(h, p);
}

void host_peer_touch(struct rudp_host *h, struct rudp_peer *p)
{
	uint64_t d;
	if (p->stage == PEER_DEAD)
		return;
	if (p->stage == PEER_ONLINE)
		d = rudp_conn_next_deadline(p->conn);
	else
		d = p->next_attempt_us;
	/* A deadline already due would spin the loop if flush could not act
	 * on it; one millisecond later is soon enough and cannot spin. */
	if (d != UINT64_MAX && d <= h->now_us)
		d = h->now_us + 1000;
	timer_heap_set(&h->timers, p, d);
}

void host_mark_dirty_push(struct rudp_host *h, struct rudp_peer *p)
{
	if (p->dirty || p->stage == PEER_DEAD)
		return;
	p->dirty = true;
	p->dirty_next = h->dirty_head;
	h->dirty_head = p;
}

void host_flush_dirty(struct rudp_host *h)
{
	while (h->dirty_head) {
		struct rudp_peer *p = h->dirty_head;
		h->dirty_head = p->dirty_next;
		p->dirty = false;
		p->dirty_next = NULL;
		if (p->stage != PEER_ONLINE)
			continue;
		host_peer_flush(h, p);
		after_conn_call(h, p);
	}
}

static void on_datagram(struct rudp_host *h, const struct rudp_io_datagram *d)
{
	struct sockaddr_storage from;
	if (d->truncated || d->len == 0) {
		h->stats.datagrams_dropped++;
		return;
	}
	rudp_addr_normalize((const struct sockaddr *)&d->addr, &from);
	if (from.ss_family != AF_INET && from.ss_family != AF_INET6) {
		h->stats.datagrams_dropped++;
		return;
	}
	if (!(d->data[0] & RUDP_DGRAM_VALID)) {
		offline_on_datagram(h, &from, d);
		return;
	}
	struct rudp_peer *p =
		peer_table_find(&h->table, &from, d->sock, peer_table_hash(&h->table, &from, d->sock));
	if (!p || p->stage != PEER_ONLINE) {
		h->stats.datagrams_dropped++;
		return;
	}
	if (rudp_conn_on_datagram(p->conn, d->data, d->len, h->now_us) < 0)
		h->stats.datagrams_dropped++;
	if (p->closing_pending) {
		after_conn_call(h, p);
		return;
	}
	host_mark_dirty(h, p);
}

/* A batch io has read. With the simulator on, each datagram is first
 * dropped, held for later (release_simulated) or passed by it. */
static void on_batch(struct rudp_host *h, struct rudp_io_datagram *dg, int n)
{
	if (h->sim) {
		for (int i = 0; i < n; i++) {
			if (netsim_incoming(h->sim, h->now_us, &dg[i]) == NETSIM_PASS)
				on_datagram(h, &dg[i]);
		}
		return;
	}
	for (int i = 0; i < n; i++)
		on_datagram(h, &dg[i]);
}

/* Hands on what the simulator holds and is due: incoming datagrams to
 * processing, outgoing ones to io (with the destination and socket they
 * were built for). */
static void release_simulated(struct rudp_host *h)
{
	enum netsim_dir dir;
	struct rudp_io_datagram d;
	while (netsim_release_due(h->sim, h->now_us, &dir, &d)) {
		if (dir == NETSIM_IN) {
			on_datagram(h, &d);
			continue;
		}
		uint8_t *slot = rudp_io_tx_slot(h->io);
		memcpy(slot, d.data, d.len);
		rudp_io_tx_commit_on(h->io, d.sock, d.len, (const struct sockaddr *)&d.addr, d.addrlen);
	}
}

/* Reads what the socket holds (bounded), then flushes the replies. */
static int receive_round(struct rudp_host *h)
{
	int total = 0;
	for (int b = 0; b < RECV_BATCHES_PER_ROUND; b++) {
		if (h->events.count >= h->events.max || h->events.bytes >= h->cfg.max_pending_event_bytes) {
			/* The application is behind; let the kernel hold the rest. */
			h->stats.receive_pauses++;
			break;
		}
		struct rudp_io_datagram *dg;
		int n = rudp_io_recv(h->io, &dg);
		if (n < 0) {
			host_log(h, 0, "receive failed: %s", strerror(-n));
			return n;
		}
		if (n == 0)
			break;
		h->now_us = rudp_now_us();
		on_batch(h, dg, n);
		total += n;
		host_flush_dirty(h);
		if ((uint32_t)n < h->io->batch)
			break;
		/* Another read follows: ACKs and replies for this batch go out
		 * before it, unless reading costs no system call (io_uring): then
		 * the end of the call sends everything with one. */
		if (!h->io->recv_is_free)
			rudp_io_flush(h->io);
	}
	return total;
}

uint64_t host_next_deadline_us(const struct rudp_host *h)
{
	struct rudp_peer *top = timer_heap_top(&h->timers);
	uint64_t d = top ? top->deadline_us : UINT64_MAX;
	if (h->pings.count && h->pings.next_due_us < d)
		d = h->pings.next_due_us;
	if (h->sim) {
		uint64_t release = netsim_next_release_us(h->sim);
		if (release < d)
			d = release;
	}
	return d;
}

static void run_timers(struct rudp_host *h)
{
	uint32_t budget = h->timers.count;
	struct rudp_peer *p;
	while (budget-- && (p = timer_heap_top(&h->timers)) && p->deadline_us <= h->now_us) {
		if (p->stage == PEER_ONLINE) {
			host_peer_flush(h, p);
			after_conn_call(h, p);
		} else if (p->stage == PEER_OFFLINE_1 || p->stage == PEER_OFFLINE_2) {
			offline_client_timer(h, p);
		} else {
			timer_heap_set(&h->timers, p, UINT64_MAX);
		}
	}
	ping_run_timers(h);
}

/* One round of all due work; waits up to wait_us first when wait_us > 0
 * and nothing is pending. The output is left committed: the caller's next
 * wait (which hands it over first, on both backends) or its final flush
 * sends it, so what a call leaves for the next one is the same whatever
 * the backend. *waited (if not NULL) is set when the round waited, which
 * also handed every pending datagram to the kernel. Returns < 0 on a
 * socket failure. */
static int pump_round(struct rudp_host *h, uint64_t wait_us, bool *waited)
{
	if (wait_us > 0) {
		/* Measured from now, not from the round's start: the flush that
		 * ended the last round may have taken a while, and the wait is
		 * to the microsecond, so that time would make every timer late. */
		uint64_t deadline = host_next_deadline_us(h);
		if (deadline != UINT64_MAX) {
			uint64_t now = rudp_now_us();
			uint64_t until = deadline > now ? deadline - now : 0;
			if (until < wait_us)
				wait_us = until;
		}
		if (wait_us > 0) {
			/* The backend waits, to the microsecond (a tail probe
			 * due in 300 us fires then, not at the next millisecond):
			 * io_uring on its completion queue, and it submits
			 * pending sends in the same system call. */
			if (rudp_io_wait(h->io, wait_us) < 0)
				return RUDP_E_SYSTEM;
			if (waited)
				*waited = true;
		}
	}
	h->now_us = rudp_now_us();
	int r = receive_round(h);
	if (r < 0)
		return RUDP_E_SYSTEM;
	h->now_us = rudp_now_us();
	if (h->sim)
		release_simulated(h);
	run_timers(h);
	host_flush_dirty(h);
	return 0;
}

/* pump_round() that always leaves nothing unsent. */
int host_pump(struct rudp_host *h, uint64_t wait_us)
{
	int r = pump_round(h, wait_us, NULL);
	rudp_io_flush(h->io);
	return r;
}

int rudp_service(rudp_host *h, rudp_event *events, int max, int timeout_ms)
{
	if (!h || (max > 0 && !events) || max < 0)
		return RUDP_E_INVALID;
	int r = host_service_run(h, timeout_ms, max > 0);
	if (r < 0)
		return r;
	return event_queue_pop(&h->events, events, max);
}

int host_service_run(struct rudp_host *h, int timeout_ms, bool want_events)
{
	h->now_us = rudp_now_us();
	host_flush_dirty(h);
	/* Hand over what the application queued since the last call and what
	 * that call left (see the end). When this call may wait and nothing
	 * has arrived (io_uring sees that without a system call), the wait
	 * hands them over in its own io_uring_enter: one system call for both.
	 * Input already there means work before any wait, so send first; a
	 * backend that cannot tell (recvmmsg) always says input may wait. */
	bool sent_first = !(want_events && timeout_ms != 0 && !rudp_io_input_waiting(h->io));
	if (sent_first)
		rudp_io_flush(h->io);
	host_free_seen_dead(h);
	event_queue_release(&h->events, h->now_us);

	uint64_t start = h->now_us;
	uint64_t limit = timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)timeout_ms * 1000;
	uint64_t wait = 0;
	bool waited = false;
	for (;;) {
		int r = pump_round(h, wait, &waited);
		if (r < 0)
			return r;
		if (h->events.count > 0 || h->now_us >= limit || !want_events)
			break;
		wait = limit == UINT64_MAX ? 1000000 : limit - h->now_us;
	}
	/* A call that hands out messages and nothing else may leave their
	 * ACKs queued: the application's next call sends them with its
	 * answers in one system call (io_uring_enter or sendmmsg), one
	 * wake-up for the peer; rudp_host_next_timeout_ms() says 0 meanwhile.
	 * Both backends do this, so an application sees the same behaviour
	 * whichever it gets. Any other
	 * call sends everything: after a connect or disconnect, or with nothing
	 * to hand over, the application may turn to other work for long. What
	 * it queued before this call is never left: if the first flush was
	 * saved for a wait that did not happen, it goes now. */
	budget_signal_writable(h);
	bool leave_own =
		want_events && h->events.count > 0 && h->events.non_receive == 0 && (sent_first || waited);
	if (!leave_own)
		rudp_io_flush(h->io);
	return 0;
}

int rudp_flush(rudp_host *h)
{
	if (!h)
		return RUDP_E_INVALID;
	h->now_us = rudp_now_us();
	uint64_t before = h->io->stats.datagrams_sent;
	host_flush_dirty(h);
	rudp_io_flush(h->io);
	return (int)(h->io->stats.datagrams_sent - before);
}

int rudp_host_next_timeout_us(rudp_host *h, int64_t *timeout_us)
{
	if (!h || !timeout_us)
		return RUDP_E_INVALID;
	if (h->events.count || h->dirty_head || rudp_io_pending(h->io)) {
		*timeout_us = 0;
		return 0;
	}
	uint64_t deadline = host_next_deadline_us(h);
	uint64_t now = rudp_now_us();
	if (deadline == UINT64_MAX)
		*timeout_us = -1;
	else if (deadline <= now)
		*timeout_us = 0;
	else if (deadline - now > (uint64_t)INT64_MAX)
		*timeout_us = INT64_MAX;
	else
		*timeout_us = (int64_t)(deadline - now);
	return 0;
}

int rudp_host_next_timeout(rudp_host *h, int *timeout_ms)
{
	int64_t us;
	if (!timeout_ms || rudp_host_next_timeout_us(h, &us) != 0)
		return RUDP_E_INVALID;
	/* Rounded up: a poll() that ends before the timer is due wakes for
	 * nothing and has to wait again. */
	if (us < 0)
		*timeout_ms = -1;
	else if ((us + 999) / 1000 > INT32_MAX)
		*timeout_ms = INT32_MAX;
	else
		*timeout_ms = (int)((us + 999) / 1000);
	return 0;
}

int rudp_host_next_timeout_ms(rudp_host *h)
{
	int ms;
	/* A NULL host says "now": the service call that follows reports the
	 * error, where -1 (which is also RUDP_E_INVALID) would wait forever. */
	if (rudp_host_next_timeout(h, &ms) != 0)
		return 0;
	return ms;
}

/* ---- creation ---- */

static int bind_check(int fd, const struct sockaddr_storage *addr, socklen_t len)
{
	return bind(fd, (const struct sockaddr *)addr, len);
}

static uint16_t sockaddr_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return ntohs(((const struct sockaddr_in *)a)->sin_port);
}

/* Root may exceed net.core.rmem_max with the FORCE variants; others get
 * what the system allows. Large buffers absorb bursts of a whole window for
 * many peers. */
static void set_socket_buffers(const struct rudp_host *h, int fd)
{
	if (h->cfg.io.socket_rcvbuf) {
		int v = (int)h->cfg.io.socket_rcvbuf;
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) != 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	if (h->cfg.io.socket_sndbuf) {
		int v = (int)h->cfg.io.socket_sndbuf;
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) != 0)
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	}
}

static int open_socket(struct rudp_host *h)
{
	struct sockaddr_storage addr;
	socklen_t alen;
	const char *bind = h->cfg.bind_address;
	int one = 1, zero = 0;

	if (!bind || !*bind) {
		/* An ephemeral client socket: dual-stack IPv6 reaches both families. */
		struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&addr;
		memset(&addr, 0, sizeof(addr));
		v6->sin6_family = AF_INET6;
		alen = sizeof(*v6);
		h->fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (h->fd >= 0) {
			setsockopt(h->fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			if (bind_check(h->fd, &addr, alen) != 0) {
				close(h->fd);
				h->fd = -1;
			}
		}
		if (h->fd < 0) {
			struct sockaddr_in *v4 = (struct sockaddr_in *)&addr;
			memset(&addr, 0, sizeof(addr));
			v4->sin_family = AF_INET;
			alen = sizeof(*v4);
			h->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (h->fd < 0 || bind_check(h->fd, &addr, alen) != 0)
				return RUDP_E_SYSTEM;
		}
	} else {
		int r = rudp_addr_parse(bind, &addr, &alen);
		if (r != 0)
			return r;
		h->fd = socket(addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (h->fd < 0)
			return RUDP_E_SYSTEM;
		if (addr.ss_family == AF_INET6)
			setsockopt(h->fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		/* No SO_REUSEADDR: UDP has no TIME_WAIT for it to skip, and it
		 * lets sockets that all carry it share one address. The kernel
		 * then hands the same ephemeral port to several port 0 binds, and
		 * the server's replies to one of those clients reach another. */
		bool ephemeral = sockaddr_port(&addr) == 0;
		/* One host per thread on one port: the kernel hashes each client
		 * to one of the sockets, so no host ever sees another's peers. A
		 * port 0 bind joins the group only after bind, for the same
		 * reason: a port is picked that no other SO_REUSEPORT socket holds. */
		if (h->cfg.reuse_port && !ephemeral &&
		    setsockopt(h->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
			return RUDP_E_SYSTEM;
		if (bind_check(h->fd, &addr, alen) != 0)
			return RUDP_E_SYSTEM;
		if (h->cfg.reuse_port && ephemeral &&
		    setsockopt(h->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
			return RUDP_E_SYSTEM;
	}
	h->family = addr.ss_family;
	set_socket_buffers(h, h->fd);
	h->local_addrlen = sizeof(h->local_addr);
	getsockname(h->fd, (struct sockaddr *)&h->local_addr, &h->local_addrlen);
	return 0;
}

/* rudp_config.socket_per_connect: a socket for one outgoing connection, of
 * the host socket's family and on its IP address, with a port of its own
 * (RakNet knows a connection by address and port), served by the host's io
 * from then on. Returns 0 or RUDP_E_SYSTEM (errno says why). */
static int open_peer_socket(struct rudp_host *h, int *fd_out, uint32_t *sock_out)
{
	int zero = 0;
	struct sockaddr_storage addr = h->local_addr;
	if (addr.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&addr)->sin6_port = 0;
	else
		((struct sockaddr_in *)&addr)->sin_port = 0;
	int fd = socket(h->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RUDP_E_SYSTEM;
	if (h->family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind_check(fd, &addr, h->local_addrlen) != 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return RUDP_E_SYSTEM;
	}
	set_socket_buffers(h, fd);
	int sock = rudp_io_add_socket(h->io, fd);
	if (sock < 0) {
		close(fd);
		errno = -sock;
		return RUDP_E_SYSTEM;
	}
	*fd_out = fd;
	*sock_out = (uint32_t)sock;
	return 0;
}

static int validate_config(const rudp_config *c)
{
	if (c->max_peers == 0 || c->max_peers > (1u << 24))
		return RUDP_E_INVALID;
	if (c->mtu < 576 || c->mtu > 1500)
		return RUDP_E_INVALID;
	if (c->protocol_min < 6 || c->protocol_max > 11 || c->protocol_min > c->protocol_max ||
	    c->protocol_version < 6 || c->protocol_version > 11)
		return RUDP_E_INVALID;
	if (c->window_frames == 0 || c->window_frames > 4096)
		return RUDP_E_INVALID;
	if (c->max_frames_per_datagram == 0 || c->max_frames_per_datagram > 64)
		return RUDP_E_INVALID;
	if (c->max_message_size == 0 || c->max_queue_bytes < c->max_message_size / 2 ||
	    c->max_split_count == 0 || c->max_split_ids == 0 || c->max_order_hold == 0 ||
	    c->max_ack_ranges == 0)
		return RUDP_E_INVALID;
	if (c->rto_min_ms == 0 || c->rto_min_ms > c->rto_max_ms || c->rto_initial_ms == 0)
		return RUDP_E_INVALID;
	if (c->timeout_ms == 0 || c->connect_timeout_ms == 0 || c->keepalive_ms == 0)
		return RUDP_E_INVALID;
	if (c->io.batch == 0 || c->io.batch > 1024 || c->max_pending_events == 0 ||
	    c->max_pending_event_bytes == 0)
		return RUDP_E_INVALID;
	if (c->io.rx_buffers != 0 && (c->io.rx_buffers < 16 || c->io.rx_buffers > 32768))
		return RUDP_E_INVALID;
	if (c->max_pending_handshakes == 0 || c->max_pending_per_address == 0 ||
	    c->handshake_timeout_ms == 0 || c->offline_rate_per_address > 1000000)
		return RUDP_E_INVALID;
	if (c->io.backend < RUDP_IO_AUTO || c->io.backend > RUDP_IO_URING)
		return RUDP_E_INVALID;
	if (c->congestion_control < RUDP_CC_NONE || c->congestion_control > RUDP_CC_RATE)
		return RUDP_E_INVALID;
	if (c->io.wait_spin_us > 1000)
		return RUDP_E_INVALID;
	if (c->max_datagram_seq_jump < 64 || c->max_datagram_seq_jump > (1u << 22))
		return RUDP_E_INVALID;
	if (!netsim_config_valid(&c->sim))
		return RUDP_E_INVALID;
	if (c->max_pings == 0 || c->max_pings > 65536)
		return RUDP_E_INVALID;
	if (c->ack_every == 0 || c->ack_every > 64 || c->ack_delay_us > 100000)
		return RUDP_E_INVALID;
	return 0;
}

static void make_conn_config(const rudp_config *c, struct rudp_conn_config *cc)
{
	rudp_conn_config_init(cc);
	cc->mtu = c->mtu;
	cc->window_frames = c->window_frames;
	cc->max_frames_per_datagram = c->max_frames_per_datagram;
	cc->max_queue_bytes = c->max_queue_bytes;
	cc->max_split_count = c->max_split_count;
	cc->max_split_ids = c->max_split_ids;
	cc->max_reassembly_bytes = c->max_reassembly_bytes;
	cc->max_message_size = c->max_message_size;
	cc->max_order_hold = c->max_order_hold;
	cc->max_ack_ranges = c->max_ack_ranges;
	cc->max_dgram_seq_jump = c->max_datagram_seq_jump;
	cc->rto_initial_us = (uint64_t)c->rto_initial_ms * 1000;
	cc->rto_min_us = (uint64_t)c->rto_min_ms * 1000;
	cc->rto_max_us = (uint64_t)c->rto_max_ms * 1000;
	cc->keepalive_us = (uint64_t)c->keepalive_ms * 1000;
	cc->timeout_us = (uint64_t)c->timeout_ms * 1000;
	cc->connect_timeout_us = (uint64_t)c->connect_timeout_ms * 1000;
	cc->disconnect_linger_us = (uint64_t)c->disconnect_linger_ms * 1000;
	cc->protocol_version = c->protocol_version;
	cc->congestion_control = (uint8_t)c->congestion_control;
	cc->ack_every = c->ack_every;
	cc->ack_delay_us = c->ack_delay_us;
	/* The dedup window must cover whatever a peer may have in flight. */
	if (cc->recv_window < c->window_frames * 4)
		cc->recv_window = c->window_frames * 4;
}

int rudp_host_create(const rudp_config *caller_cfg, rudp_host **out)
{
	if (!out)
		return RUDP_E_INVALID;
	*out = NULL;
	if (!caller_cfg)
		return RUDP_E_INVALID;
	/* From here on only the full copy is read: the caller's struct may be
	 * an older, shorter one. */
	rudp_config full;
	int r = host_config_take(caller_cfg, RUDP_CONFIG_SIZE_FIRST, &full);
	if (r != 0)
		return r;
	const rudp_config *cfg = &full;
	r = validate_config(cfg);
	if (r != 0)
		return r;
	struct rudp_host *h = calloc(1, sizeof(*h));
	if (!h)
		return RUDP_E_NOMEM;
	h->cfg = *cfg;
	h->fd = -1;
	h->cfg.bind_address = NULL; /* not kept: the caller owns the string */
	make_conn_config(cfg, &h->conn_cfg);
	h->guid = cfg->guid ? cfg->guid : random_u64();
	h->now_us = rudp_now_us();
	event_queue_init(&h->events, cfg->max_pending_events);
	if (peer_table_init(&h->table, cfg->max_peers < 1024 ? cfg->max_peers : 1024, random_u64()) != 0 ||
	    timer_heap_init(&h->timers, 64) != 0 ||
	    guard_init(&h->guard, cfg, random_u64(), random_u64()) != 0 ||
	    (netsim_config_enabled(&cfg->sim) && netsim_init(&h->sim, &cfg->sim) != 0)) {
		rudp_host_destroy(h);
		return RUDP_E_NOMEM;
	}
	h->cfg.bind_address = cfg->bind_address;
	r = open_socket(h);
	h->cfg.bind_address = NULL;
	if (r != 0) {
		int saved = errno;
		rudp_host_destroy(h);
		errno = saved;
		return r;
	}
	char note[200] = "";
	int note_level = 2;
	h->io = rudp_io_open(h->fd, cfg->io.batch, cfg->io.rx_buffers, cfg->io.udp_gro != 0,
			     cfg->socket_per_connect ? cfg->max_peers : 0, cfg->io.backend, getenv("RUDP_IO"),
			     note, sizeof(note), &note_level, &r);
	/* The choice (and a fallback's reason) is logged once, here. */
	if (note[0])
		host_log(h, note_level, "%s", note);
	if (!h->io) {
		int saved = errno;
		rudp_host_destroy(h);
		errno = saved;
		return r;
	}
	h->io->gso_off = cfg->io.udp_gso == 0;
	h->io->wait_spin_ns = cfg->io.wait_spin_us * 1000u;
	h->stats.io_backend = h->io->ops->name;
	*out = h;
	return 0;
}

void rudp_host_destroy(rudp_host *h)
{
	if (!h)
		return;
	/* The io first: it cancels every socket's receive at once, and the
	 * peers' own sockets close after it. */
	if (h->io)
		rudp_io_flush(h->io);
	rudp_io_destroy(h->io);
	h->io = NULL;
	for (uint32_t i = 0; h->table.slots && i < h->table.cap; i++) {
		struct rudp_peer *p = h->table.slots[i];
		if (p && (uintptr_t)p != 1)
			host_peer_free(h, p);
	}
	while (h->dead_head) {
		struct rudp_peer *p = h->dead_head;
		h->dead_head = p->dead_next;
		host_peer_free(h, p);
	}
	peer_table_free(&h->table);
	timer_heap_free(&h->timers);
	event_queue_free(&h->events);
	ping_table_free(&h->pings);
	guard_free(&h->guard);
	netsim_free(h->sim);
	/* Every conn, and so every reference to a shared body, is gone. */
	shared_body_pool_destroy(&h->shared_bodies);
	if (h->fd >= 0)
		close(h->fd);
	free(h->pong_data);
	free(h);
}

int rudp_host_fd(const rudp_host *h)
{
	if (!h)
		return RUDP_E_INVALID;
	return h->io ? h->io->poll_fd : h->fd;
}

int rudp_host_local_address(const rudp_host *h, char *buf, size_t len)
{
	if (!h)
		return RUDP_E_INVALID;
	return rudp_addr_format((const struct sockaddr *)&h->local_addr, buf, len);
}

int rudp_host_set_pong_data(rudp_host *h, const void *data, size_t len)
{
	if (!h || (len && !data) || len > 1400)
		return RUDP_E_INVALID;
	uint8_t *copy = NULL;
	if (len) {
		copy = malloc(len);
		if (!copy)
			return RUDP_E_NOMEM;
		memcpy(copy, data, len);
	}
	free(h->pong_data);
	h->pong_data = copy;
	h->pong_len = len;
	return 0;
}

int rudp_connect(rudp_host *h, const char *address, rudp_peer **out)
{
	struct sockaddr_storage addr, norm;
	socklen_t alen;
	if (out)
		*out = NULL;
	if (!h || !address || !out)
		return RUDP_E_INVALID;
	int r = rudp_addr_parse(address, &addr, &alen);
	if (r != 0)
		return r;
	rudp_addr_normalize((const struct sockaddr *)&addr, &norm);
	struct sockaddr_storage reach;
	socklen_t reachlen;
	if (!rudp_addr_for_socket(&norm, h->family, &reach, &reachlen))
		return RUDP_E_ADDRESS; /* e.g. IPv6 from an IPv4 socket */
	if (!h->cfg.socket_per_connect &&
	    peer_table_find(&h->table, &norm, 0, peer_table_hash(&h->table, &norm, 0)))
		return RUDP_E_ALREADY_CONNECTED; /* one connection per remote address and socket */
	if (h->peer_count >= h->cfg.max_peers)
		return RUDP_E_PEERS_FULL;
	h->now_us = rudp_now_us();
	int own_fd = -1;
	uint32_t sock = 0;
	if (h->cfg.socket_per_connect) {
		r = open_peer_socket(h, &own_fd, &sock);
		if (r != 0)
			return r;
	}
	struct rudp_peer *p = host_peer_new(h, &norm, sock, true);
	if (!p) {
		if (own_fd >= 0) {
			rudp_io_remove_socket(h->io, sock);
			close(own_fd);
		}
		return RUDP_E_NOMEM; /* reachability was checked above */
	}
	p->own_fd = own_fd;
	offline_client_start(h, p);
	rudp_io_flush(h->io);
	*out = p;
	return 0;
}

int rudp_disconnect(rudp_peer *p)
{
	if (!p)
		return RUDP_E_INVALID;
	struct rudp_host *h = p->host;
	h->now_us = rudp_now_us();
	if (p->stage == PEER_DEAD)
		return 0;
	if (p->stage != PEER_ONLINE) {
		host_peer_close(h, p, RUDP_REASON_LOCAL);
		return 0;
	}
	host_peer_disconnect(p);
	host_mark_dirty(h, p);
	after_conn_call(h, p);
	return 0;
}

void rudp_peer_reset(rudp_peer *p)
{
	if (!p)
		return;
	struct rudp_host *h = p->host;
	/* Unlink from the dirty list so nothing refers to it after the free. */
	for (struct rudp_peer **link = &h->dirty_head; *link; link = &(*link)->dirty_next) {
		if (*link == p) {
			*link = p->dirty_next;
			break;
		}
	}
	p->dirty = false;
	event_queue_forget_peer(&h->events, p);
	if (p->stage != PEER_DEAD) {
		p->silent_close = true;
		host_peer_close(h, p, RUDP_REASON_LOCAL);
	} else {
		p->silent_close = true;
	}
}
