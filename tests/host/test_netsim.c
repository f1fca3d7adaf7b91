/* SPDX-License-Identifier: MIT */
/*
 * The network simulator (rudp_config.sim): its decisions on their own
 * (seeded, ordered, rate limited, bounded), then over real sockets on
 * loopback: latency shows in round trips, the host wakes for a delayed
 * datagram (to the microsecond), loss, duplicates and reordering leave
 * reliable ordered delivery exact, a rate limit bounds a transfer, and a
 * host without it counts nothing.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "host/netsim.h"
#include "rudp.h"
#include "test_backend.h"
#include "test_fork_server.h"
#include "test_clock.h"
#include "test_host_pair.h"

/* ---- the simulator alone ---- */

static const struct sockaddr_in test_to = {.sin_family = AF_INET, .sin_port = 0x3412};

static enum netsim_verdict out_at(struct netsim *s, uint64_t now_us, uint32_t sock, size_t len)
{
	uint8_t data[1500];
	memset(data, (int)(len & 0xff), len);
	return netsim_outgoing(s, now_us, sock, data, len, (const struct sockaddr *)&test_to,
			       sizeof(test_to));
}

static void test_config_ranges(void **state)
{
	(void)state;
	rudp_config c;
	rudp_host *h = (rudp_host *)1;
	rudp_config_init(&c);
	assert_false(netsim_config_enabled(&c.sim));
	assert_true(netsim_config_valid(&c.sim));
	c.sim.seed = 7;
	c.sim.max_held_datagrams = 100;
	assert_false(netsim_config_enabled(&c.sim)); /* a seed or a limit alone is not a simulation */

	const rudp_sim_config good = {.loss_percent = 100,
				      .latency_ms = 10000,
				      .jitter_ms = 10000,
				      .duplicate_percent = 100,
				      .reorder_percent = 100,
				      .rate_kbps = 100000000,
				      .rate_queue_bytes = 1536,
				      .max_held_datagrams = 16};
	assert_true(netsim_config_valid(&good));
	rudp_sim_config bad[10];
	for (int i = 0; i < 10; i++)
		bad[i] = good;
	bad[0].loss_percent = 100.5f;
	bad[1].loss_percent = -1;
	bad[2].duplicate_percent = NAN;
	bad[3].reorder_percent = 101;
	bad[4].latency_ms = 10001;
	bad[5].jitter_ms = 10001;
	bad[6].rate_kbps = 100000001;
	bad[7].rate_queue_bytes = 1535;
	bad[8].rate_queue_bytes = (64u << 20) + 1;
	bad[9].max_held_datagrams = 15;
	for (int i = 0; i < 10; i++) {
		rudp_config_init(&c);
		c.sim = bad[i];
		assert_false(netsim_config_valid(&c.sim));
		assert_int_equal(rudp_host_create(&c, &h), RUDP_E_INVALID);
		assert_null(h);
	}
	rudp_config_init(&c);
	c.sim = good;
	c.sim.latency_ms = 1;
	assert_int_equal(rudp_host_create(&c, &h), 0);
	rudp_host_destroy(h);
}

/* The same seed and the same calls give the same outcomes; another seed
 * does not. */
static void run_sequence(uint64_t seed, uint8_t *verdicts, uint64_t *releases, int n)
{
	rudp_sim_config c = {.loss_percent = 20,
			     .latency_ms = 5,
			     .jitter_ms = 20,
			     .duplicate_percent = 10,
			     .reorder_percent = 10,
			     .seed = seed};
	struct netsim *s;
	assert_int_equal(netsim_init(&s, &c), 0);
	for (int i = 0; i < n; i++)
		verdicts[i] = (uint8_t)out_at(s, 1000000 + (uint64_t)i * 100, 0, 100 + (size_t)i);
	int k = 0;
	enum netsim_dir dir;
	struct rudp_io_datagram d;
	while (netsim_release_due(s, UINT64_MAX - 1, &dir, &d))
		releases[k++] = d.len;
	for (; k < 2 * n; k++)
		releases[k] = 0;
	netsim_free(s);
}

static void test_seeded_repeatable(void **state)
{
	(void)state;
	enum { N = 200 };
	uint8_t va[N], vb[N], vc[N];
	uint64_t ra[2 * N], rb[2 * N], rc[2 * N];
	run_sequence(7, va, ra, N);
	run_sequence(7, vb, rb, N);
	run_sequence(8, vc, rc, N);
	assert_memory_equal(va, vb, sizeof(va));
	assert_memory_equal(ra, rb, sizeof(ra));
	assert_true(memcmp(va, vc, sizeof(va)) != 0 || memcmp(ra, rc, sizeof(ra)) != 0);
	int dropped = 0;
	for (int i = 0; i < N; i++)
		dropped += va[i] == NETSIM_DROPPED;
	assert_in_range(dropped, 20, 70); /* 20 % of 200, loosely */
}

/* Latency and jitter delay every datagram by latency..latency+jitter
 * beyond the previous one's release, and never reorder on their own. */
static void test_jitter_keeps_order(void **state)
{
	(void)state;
	rudp_sim_config c = {.latency_ms = 30, .jitter_ms = 20, .seed = 3};
	struct netsim *s;
	assert_int_equal(netsim_init(&s, &c), 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(out_at(s, 1000000 + (uint64_t)i * 1000, 0, 10 + (size_t)i), NETSIM_HELD);
	assert_int_equal(netsim_next_release_us(s) >= 1030000, 1);
	assert_true(netsim_next_release_us(s) <= 1050000);
	enum netsim_dir dir;
	struct rudp_io_datagram d;
	assert_false(netsim_release_due(s, 1029999, &dir, &d));
	uint64_t t = 1000000;
	for (int i = 0; i < 100; i++) {
		t = netsim_next_release_us(s);
		assert_true(t >= 1030000 + (uint64_t)i * 1000 && t <= 1050000 + (uint64_t)i * 1000 + 20000);
		assert_true(netsim_release_due(s, t, &dir, &d));
		assert_int_equal(dir, NETSIM_OUT);
		assert_int_equal(d.len, 10 + (size_t)i); /* first in, first out */
		assert_int_equal(d.data[0], (10 + i) & 0xff);
		assert_memory_equal(&d.addr, &test_to, sizeof(test_to));
	}
	assert_int_equal(netsim_next_release_us(s), UINT64_MAX);
	rudp_host_stats st;
	netsim_stats(s, &st);
	assert_int_equal(st.sim_delayed, 100);
	assert_int_equal(st.sim_dropped + st.sim_duplicated + st.sim_reordered + st.sim_overflowed, 0);
	netsim_free(s);
}

/* 1000 kbit/s: a 1000-byte datagram takes 8 ms; the queue holds 4000
 * bytes, the fifth datagram sent at once is dropped. */
static void test_rate_limit_queue(void **state)
{
	(void)state;
	rudp_sim_config c = {.rate_kbps = 1000, .rate_queue_bytes = 4000};
	struct netsim *s;
	assert_int_equal(netsim_init(&s, &c), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(out_at(s, 1000000, 0, 1000), NETSIM_HELD);
	assert_int_equal(out_at(s, 1000000, 0, 1000), NETSIM_DROPPED);
	enum netsim_dir dir;
	struct rudp_io_datagram d;
	for (int i = 1; i <= 4; i++) {
		assert_int_equal(netsim_next_release_us(s), 1000000 + (uint64_t)i * 8000);
		assert_true(netsim_release_due(s, 1000000 + (uint64_t)i * 8000, &dir, &d));
	}
	/* Later, the link is idle: a small datagram waits only its own time. */
	assert_int_equal(out_at(s, 2000000, 0, 125), NETSIM_HELD);
	assert_int_equal(netsim_next_release_us(s), 2001000);
	rudp_host_stats st;
	netsim_stats(s, &st);
	assert_int_equal(st.sim_overflowed, 1);
	assert_int_equal(st.sim_delayed, 5);
	netsim_free(s);
}

/* The store holds max_held_datagrams; beyond, datagrams are dropped and
 * counted. Forgetting a socket drops its datagrams and keeps the rest in
 * order. Datagrams due at once with nothing held pass without a copy. */
static void test_store_bound_and_forget(void **state)
{
	(void)state;
	rudp_sim_config c = {.latency_ms = 10, .max_held_datagrams = 16};
	struct netsim *s;
	assert_int_equal(netsim_init(&s, &c), 0);
	for (int i = 0; i < 16; i++)
		assert_int_equal(out_at(s, 1000000, (uint32_t)(i % 2), 100 + (size_t)i), NETSIM_HELD);
	assert_int_equal(out_at(s, 1000000, 0, 100), NETSIM_DROPPED);
	rudp_host_stats st;
	netsim_stats(s, &st);
	assert_int_equal(st.sim_overflowed, 1);
	netsim_forget_socket(s, 1);
	enum netsim_dir dir;
	struct rudp_io_datagram d;
	for (int i = 0; i < 16; i += 2) {
		assert_true(netsim_release_due(s, 1010000, &dir, &d));
		assert_int_equal(d.len, 100 + (size_t)i);
		assert_int_equal(d.sock, 0);
	}
	assert_false(netsim_release_due(s, UINT64_MAX - 1, &dir, &d));
	netsim_free(s);

	rudp_sim_config lossy = {.loss_percent = 1, .seed = 1};
	assert_int_equal(netsim_init(&s, &lossy), 0);
	int passed = 0;
	for (int i = 0; i < 100; i++)
		passed += out_at(s, 1000000, 0, 100) == NETSIM_PASS;
	assert_true(passed >= 90);
	assert_int_equal(netsim_next_release_us(s), UINT64_MAX);
	netsim_free(s);
}

/* ---- over sockets ---- */

struct pair {
	rudp_host *server, *client;
	rudp_peer *peer; /* the client's */
	uint32_t server_next; /* id the server expects next (exactly once, in order) */
	uint32_t client_next; /* echo id the client expects next */
	uint32_t sent; /* ids the client has sent */
	uint64_t server_received;
};

static void service_server(struct pair *p, int timeout_ms)
{
	rudp_event ev[64];
	int n = rudp_service(p->server, ev, 64, timeout_ms);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].type != RUDP_EVENT_RECEIVE)
			continue;
		assert_int_equal(test_msg_id(ev[i].data), p->server_next);
		p->server_next++;
		p->server_received += ev[i].len;
		assert_int_equal(
			rudp_send(ev[i].peer, ev[i].data, ev[i].len, ev[i].reliability, ev[i].channel), 0);
	}
}

/* Services both until the client holds count echoes (or timeout_ms). */
static int service_client(struct pair *p, int timeout_ms)
{
	rudp_event ev[64];
	int n = rudp_service(p->client, ev, 64, timeout_ms);
	assert_true(n >= 0);
	int got = 0;
	for (int i = 0; i < n; i++) {
		assert_int_not_equal(ev[i].type, RUDP_EVENT_DISCONNECT);
		if (ev[i].type != RUDP_EVENT_RECEIVE)
			continue;
		assert_int_equal(test_msg_id(ev[i].data), p->client_next);
		p->client_next++;
		got++;
	}
	return got;
}

static void serve_once(void *p)
{
	service_server(p, 0);
}

/* A server on defaults and a client with sim, connected. */
static void pair_connect(struct pair *p, const rudp_sim_config *client_sim)
{
	rudp_config sc, cc;
	rudp_config_init(&sc);
	rudp_config_init(&cc);
	if (client_sim)
		cc.sim = *client_sim;
	*p = (struct pair){0};
	test_host_pair_start(sc, &cc, &p->server, &p->client, &p->peer);
	test_host_pair_wait_connect(p->client, serve_once, p);
}

static void pair_free(struct pair *p)
{
	test_host_pair_destroy(p->server, p->client);
}

/* Sends reliable ordered messages of size bytes until count were sent since
 * the connection began, at most window
 * unechoed at once, and services both until every echo is back (each
 * checked exactly once and in order at both ends). Returns the ms taken. */
static uint64_t echo_messages(struct pair *p, uint32_t count, size_t size, uint32_t window, int timeout_ms)
{
	uint8_t msg[1200];
	assert_true(size >= 5 && size <= sizeof(msg));
	uint64_t start = now_ms(), until = start + (uint64_t)timeout_ms;
	while (p->client_next < count) {
		assert_true(now_ms() < until);
		while (p->sent < count && p->sent - p->client_next < window) {
			test_msg_fill(msg, size, p->sent);
			assert_int_equal(rudp_send(p->peer, msg, size, RUDP_RELIABLE_ORDERED, 0), 0);
			p->sent++;
		}
		service_server(p, 0);
		service_client(p, 1);
	}
	assert_int_equal(p->server_next, count);
	return now_ms() - start;
}

static void host_stats(rudp_host *h, rudp_host_stats *st)
{
	assert_int_equal(rudp_host_stats_get(h, st), 0);
}

/* Off by default: the same traffic, and nothing counted. */
static void test_off_by_default(void **state)
{
	(void)state;
	struct pair p;
	pair_connect(&p, NULL);
	echo_messages(&p, 200, 300, 32, 5000);
	rudp_host_stats st;
	host_stats(p.client, &st);
	assert_int_equal(st.sim_dropped + st.sim_overflowed + st.sim_duplicated + st.sim_reordered +
				 st.sim_delayed,
			 0);
	host_stats(p.server, &st);
	assert_int_equal(st.sim_dropped + st.sim_overflowed + st.sim_duplicated + st.sim_reordered +
				 st.sim_delayed,
			 0);
	pair_free(&p);
}

/* A plain non-blocking UDP socket on a loopback port of its own; its
 * "127.0.0.1:port" in addr. */
static int loopback_socket(char *addr, size_t len)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t salen = sizeof(sa);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, salen), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &salen), 0);
	snprintf(addr, len, "127.0.0.1:%u", ntohs(sa.sin_port));
	return fd;
}

/* A datagram held for latency L goes out L after it was made, not with the
 * next timer: rudp_host_next_timeout_ms says so and rudp_service wakes for
 * it. The first datagram of a connect (open connection request 1, the
 * offline path) goes to a plain socket that notes when it arrived; the
 * host's own next timer (the request's resend) is 250 ms away. */
static void test_wakes_for_release(void **state)
{
	(void)state;
	char addr[64];
	int fd = loopback_socket(addr, sizeof(addr));

	rudp_config cc;
	rudp_config_init(&cc);
	cc.sim.latency_ms = 100;
	rudp_host *client;
	assert_int_equal(rudp_host_create(&cc, &client), 0);
	rudp_peer *peer;
	assert_int_equal(rudp_connect(client, addr, &peer), 0);
	int t = rudp_host_next_timeout_ms(client);
	assert_in_range(t, 0, 100); /* not the resend's 250 */
	char buf[2048];
	assert_true(recv(fd, buf, sizeof(buf), 0) < 0); /* not yet */
	rudp_event ev[4];
	assert_int_equal(rudp_service(client, ev, 4, 180), 0); /* no event: it waits the whole time */
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	assert_true(n > 0);
	assert_int_equal((uint8_t)buf[0], 0x05); /* open connection request 1 */
	rudp_host_stats st;
	host_stats(client, &st);
	assert_int_equal(st.sim_delayed, 1);
	rudp_host_destroy(client);

	/* When it left: a forked child makes the host, connects, tells this
	 * process through a pipe when it began (the monotonic clock is the
	 * same in both), and sleeps in one rudp_service call
	 * while this process watches the socket. Timed from the child's own
	 * clock reading, a parent scheduled late cannot shorten the wait. */
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	if (pid == 0) {
		rudp_host *c2;
		/* Before the host reads its clock: its release time is later. */
		uint64_t began = now_ms();
		close(fds[0]);
		if (rudp_host_create(&cc, &c2) != 0 || rudp_connect(c2, addr, &peer) != 0 ||
		    write(fds[1], &began, sizeof(began)) != sizeof(began))
			_exit(1);
		rudp_service(c2, ev, 4, 400);
		rudp_host_destroy(c2);
		_exit(0);
	}
	close(fds[1]);
	uint64_t start;
	assert_int_equal(read(fds[0], &start, sizeof(start)), sizeof(start));
	close(fds[0]);
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 1000), 1);
	uint64_t arrived = now_ms() - start;
	assert_true(recv(fd, buf, sizeof(buf), 0) > 0);
	fork_child_wait(pid);
	/* 100 ms of latency (a millisecond less for the clock's rounding);
	 * well before the resend timer (250 ms) or the end of the child's
	 * call (400 ms). */
	assert_true(arrived >= 99);
	assert_true(arrived < 200);
	close(fd);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The host waits to the microsecond, not the millisecond: a datagram the
 * simulator holds for 300 us (a rate limit that takes that long to send
 * an unconnected ping) leaves about 300 us after it was made, where a
 * wait rounded up to a millisecond sent it a millisecond later, and the
 * host sleeps until then (a few waits per call, not a spin). A plain
 * socket notes when each ping came (the kernel's receive stamp); the
 * medians of some rounds keep it robust on a loaded machine.
 * rudp_host_next_timeout_us() reports the hold. */
static void test_wakes_for_release_sub_ms(void **state)
{
	(void)state;
	enum { ROUNDS = 15, HOLD_US = 300 };
	char addr[64];
	int fd = loopback_socket(addr, sizeof(addr));
	int on = 1;
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)), 0);
	uint8_t buf[2048];

	/* A ping's size, from a host without the simulator: the rate is
	 * set so that one takes HOLD_US to send. */
	rudp_config cc;
	rudp_config_init(&cc);
	cc.io.wait_spin_us = 0; /* every wait sleeps: its system calls count the wake-ups */
	rudp_host *h;
	assert_int_equal(rudp_host_create(&cc, &h), 0);
	assert_int_equal(rudp_ping_start(h, addr, 10000, NULL), 0);
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 1000), 1);
	ssize_t len = recv(fd, buf, sizeof(buf), 0);
	assert_true(len > 0);
	rudp_host_destroy(h);
	cc.sim.rate_kbps = (uint32_t)((uint64_t)len * 8000 / HOLD_US);
	assert_int_equal(rudp_host_create(&cc, &h), 0);

	/* rudp_host_next_timeout_us() says when, where the milliseconds say
	 * 1 (the rate's rounding may add a microsecond to the hold); and it
	 * tells an invalid argument from "no timer". A slow build (ASan) may
	 * take the whole hold between the ping and the question: a few
	 * tries. */
	bool quick = getenv("RUDP_TEST_QUICK") != NULL;
	int64_t us = 12345;
	assert_int_equal(rudp_host_next_timeout_us(NULL, &us), RUDP_E_INVALID);
	assert_int_equal(rudp_host_next_timeout_us(h, NULL), RUDP_E_INVALID);
	assert_int_equal(us, 12345);
	assert_int_equal(rudp_host_next_timeout_us(h, &us), 0);
	assert_int_equal(us, -1);
	rudp_event ev[4];
	for (int i = 0; i < 5 && us <= 0; i++) {
		assert_int_equal(rudp_ping_start(h, addr, 10000, NULL), 0);
		assert_int_equal(rudp_host_next_timeout_us(h, &us), 0);
		assert_in_range(us, 0, HOLD_US + 1);
		assert_in_range(rudp_host_next_timeout_ms(h), 0, 1);
		assert_int_equal(rudp_service(h, ev, 4, 2), 0);
		assert_int_equal(poll(&pfd, 1, 1000), 1);
		assert_true(recv(fd, buf, sizeof(buf), 0) > 0);
	}
	if (!quick)
		assert_true(us > 0);

	uint64_t late_us[ROUNDS], wakes[ROUNDS];
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	uint64_t wall0 = now_ms();
	for (int i = 0; i < ROUNDS; i++) {
		rudp_host_stats st;
		host_stats(h, &st);
		uint64_t calls = st.syscalls_recv;
		struct timespec t0;
		clock_gettime(CLOCK_REALTIME, &t0);
		assert_int_equal(rudp_ping_start(h, addr, 10000, NULL), 0);
		assert_int_equal(rudp_service(h, ev, 4, 3), 0); /* no event: it waits the whole time */
		host_stats(h, &st);
		wakes[i] = st.syscalls_recv - calls;

		char ctl[CMSG_SPACE(sizeof(struct timespec))];
		struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
		assert_true(recvmsg(fd, &mh, 0) > 0);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		assert_non_null(c);
		assert_int_equal(c->cmsg_type, SCM_TIMESTAMPNS);
		struct timespec at;
		memcpy(&at, CMSG_DATA(c), sizeof(at));
		int64_t sent_us =
			(int64_t)(at.tv_sec - t0.tv_sec) * 1000000 + (at.tv_nsec - t0.tv_nsec) / 1000;
		assert_true(sent_us >= HOLD_US - 10); /* never before the rate allows */
		late_us[i] = (uint64_t)sent_us;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	uint64_t wall_ms = now_ms() - wall0;
	uint64_t cpu_us = (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000 + (c1.tv_nsec - c0.tv_nsec) / 1000);
	rudp_host_destroy(h);
	close(fd);
	qsort(late_us, ROUNDS, sizeof(late_us[0]), cmp_u64);
	qsort(wakes, ROUNDS, sizeof(wakes[0]), cmp_u64);
	print_message(
		"held %u us: sent after min %llu us, median %llu us, max %llu us; waits per call median "
		"%llu, max %llu; cpu %llu us in %llu ms\n",
		HOLD_US, (unsigned long long)late_us[0], (unsigned long long)late_us[ROUNDS / 2],
		(unsigned long long)late_us[ROUNDS - 1], (unsigned long long)wakes[ROUNDS / 2],
		(unsigned long long)wakes[ROUNDS - 1], (unsigned long long)cpu_us,
		(unsigned long long)wall_ms);
	/* Two or three pump rounds, each a wait and a read (one system call
	 * each on recvmmsg); a spin, or waits that end early and loop, would
	 * make hundreds (io_uring reads without one: there the CPU shows it). */
	assert_true(wakes[ROUNDS / 2] <= 12);
	/* Under valgrind (RUDP_TEST_QUICK) every step costs some fifty times
	 * as much: the bounds would measure valgrind. */
	if (quick)
		return;
	assert_true(late_us[ROUNDS / 2] < 850);
	assert_true(cpu_us < wall_ms * 1000 / 8);
}

/* Latency L on the client, each way: an unconnected ping's round trip is
 * about 2L. The server runs in a forked child. */
static void test_ping_rtt_twice_latency(void **state)
{
	(void)state;
	rudp_config sc;
	struct fork_server srv;
	rudp_config_init(&sc);
	sc.bind_address = "127.0.0.1:0";
	fork_server_start(&srv, &sc, NULL, 1500);
	rudp_config cc;
	rudp_config_init(&cc);
	cc.sim.latency_ms = 60;
	rudp_host *client;
	assert_int_equal(rudp_host_create(&cc, &client), 0);
	rudp_pong pong;
	assert_int_equal(rudp_ping(client, srv.addr, 1000, &pong), 0);
	assert_true(pong.rtt_us >= 120000);
	assert_true(pong.rtt_us < 120000 + 150000);
	rudp_host_stats st;
	host_stats(client, &st);
	assert_int_equal(st.sim_delayed, 2); /* the ping out, the pong in */
	rudp_host_destroy(client);
	fork_server_wait(&srv);
}

/* The same for connected traffic: one message's echo takes about 2L, and
 * the connection's RTT estimate agrees. */
static void test_echo_rtt_twice_latency(void **state)
{
	(void)state;
	rudp_sim_config sim = {.latency_ms = 40};
	struct pair p;
	pair_connect(&p, &sim);
	for (uint32_t i = 0; i < 5; i++) {
		uint64_t ms = echo_messages(&p, i + 1, 50, 1, 2000);
		assert_true(ms >= 79);
		assert_true(ms < 80 + 150);
	}
	rudp_peer_stats ps;
	assert_int_equal(rudp_peer_stats_get(p.peer, &ps), 0);
	assert_true(ps.rtt_us >= 75000 && ps.rtt_us < 80000 + 150000);
	pair_free(&p);
}

/* 5 % loss each way: every message still arrives once and in order, and
 * the losses show up as simulator drops and as resends. */
static void test_loss_echo_completes(void **state)
{
	(void)state;
	rudp_sim_config sim = {.loss_percent = 5, .seed = 11};
	struct pair p;
	pair_connect(&p, &sim);
	/* One message per datagram: about 600 datagrams and their ACKs. */
	echo_messages(&p, 300, 1100, 32, 8000);
	rudp_host_stats st;
	host_stats(p.client, &st);
	print_message("sim_dropped %llu\n", (unsigned long long)st.sim_dropped);
	assert_true(st.sim_dropped > 20);
	rudp_peer_stats ps;
	assert_int_equal(rudp_peer_stats_get(p.peer, &ps), 0);
	assert_true(ps.frames_retransmitted > 0);
	pair_free(&p);
}

/* Duplicates and reordering each way (with a little jitter): delivery of
 * reliable ordered messages stays exactly once and in order (checked at
 * both ends by echo_messages), and the simulator did what it was asked. */
static void test_duplicates_and_reorder_keep_order(void **state)
{
	(void)state;
	rudp_sim_config sim = {.duplicate_percent = 10, .reorder_percent = 10, .jitter_ms = 3, .seed = 5};
	struct pair p;
	pair_connect(&p, &sim);
	echo_messages(&p, 400, 200, 32, 8000);
	rudp_host_stats st;
	host_stats(p.client, &st);
	assert_true(st.sim_duplicated > 10);
	assert_true(st.sim_reordered > 10);
	assert_true(st.sim_delayed >= st.sim_reordered);
	pair_free(&p);
}

/* 1000 kbit/s: sending B bytes of messages takes at least B x 8 / rate
 * (their datagrams carry more than B), and the transfer still completes. */
static void test_rate_limit_bounds_throughput(void **state)
{
	(void)state;
	rudp_sim_config sim = {.rate_kbps = 1000};
	struct pair p;
	pair_connect(&p, &sim);
	const uint32_t count = 50;
	const size_t size = 1000;
	uint64_t ms = echo_messages(&p, count, size, 64, 8000);
	uint64_t min_ms = (uint64_t)count * size * 8 / 1000; /* bits / (kbit/s) = ms */
	/* Both ways: the echoes cross the client's incoming link too, but the
	 * two directions overlap; one direction's time is the bound. */
	assert_true(ms >= min_ms);
	assert_true(ms < 6000);
	assert_int_equal(p.server_received, (uint64_t)count * size);
	pair_free(&p);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_ranges),
		cmocka_unit_test(test_seeded_repeatable),
		cmocka_unit_test(test_jitter_keeps_order),
		cmocka_unit_test(test_rate_limit_queue),
		cmocka_unit_test(test_store_bound_and_forget),
		cmocka_unit_test(test_off_by_default),
		cmocka_unit_test(test_wakes_for_release),
		cmocka_unit_test(test_wakes_for_release_sub_ms),
		cmocka_unit_test(test_ping_rtt_twice_latency),
		cmocka_unit_test(test_echo_rtt_twice_latency),
		cmocka_unit_test(test_loss_echo_completes),
		cmocka_unit_test(test_duplicates_and_reorder_keep_order),
		cmocka_unit_test(test_rate_limit_bounds_throughput),
	};
	return test_backend_run_group(argc, argv, tests);
}
