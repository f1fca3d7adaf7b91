/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous unconnected pings (rudp_ping_start) over loopback: a server
 * browser pinging many servers at once gets each one's GUID and pong data;
 * a ping nobody answers ends in exactly one timeout event, after its
 * resends; pongs that answer no ping (another source, a time field the
 * ping did not carry, a second answer) are counted and dropped; the limit
 * on pings outstanding holds. Run once per I/O backend (RUDP_IO).
 */
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
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "rudp.h"
#include "test_backend.h"
#include "wire/wire.h"
#include "test_clock.h"

static rudp_host *make_host(const char *bind, uint32_t max_pings)
{
	rudp_config c;
	rudp_host *h = NULL;
	rudp_config_init(&c);
	c.bind_address = bind;
	if (max_pings)
		c.max_pings = max_pings;
	assert_int_equal(rudp_host_create(&c, &h), 0);
	return h;
}

/* A plain UDP socket on loopback that the test drives by hand (a server
 * that never answers, or one that answers what the test chooses). */
static int raw_socket(char *addr, size_t len, struct sockaddr_in *sa)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(s >= 0);
	*sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(*sa);
	assert_int_equal(bind(s, (struct sockaddr *)sa, sl), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)sa, &sl), 0);
	snprintf(addr, len, "127.0.0.1:%u", ntohs(sa->sin_port));
	return s;
}

/* Reads one ping from s (waiting up to 1 s) and returns its time field;
 * *from gets its source. */
static int64_t read_ping(int s, struct sockaddr_in *from)
{
	uint8_t buf[2048];
	struct pollfd pfd = {.fd = s, .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 1000), 1);
	socklen_t fl = sizeof(*from);
	ssize_t n = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)from, &fl);
	assert_true(n > 0);
	struct rudp_wire_unconnected_ping ping;
	assert_true(rudp_wire_decode_unconnected_ping(buf, (size_t)n, &ping) >= 0);
	assert_int_equal(ping.id, RUDP_ID_UNCONNECTED_PING);
	return ping.time;
}

static void send_pong(int s, const struct sockaddr_in *to, int64_t time, uint64_t guid, const char *data)
{
	uint8_t buf[256];
	struct rudp_wire_unconnected_pong pong = {.time = time,
						  .server_guid = (int64_t)guid,
						  .data = (const uint8_t *)data,
						  .data_len = strlen(data)};
	int n = rudp_wire_encode_unconnected_pong(buf, sizeof(buf), &pong);
	assert_true(n > 0);
	assert_int_equal(sendto(s, buf, (size_t)n, 0, (const struct sockaddr *)to, sizeof(*to)), n);
}

static uint64_t pongs_dropped(rudp_host *h)
{
	rudp_host_stats st;
	assert_int_equal(rudp_host_stats_get(h, &st), 0);
	return st.pongs_dropped;
}

/* A client host that has pinged a server the test drives by hand
 * (raw_socket), and the ping as that server read it: where the tests of
 * what a pong may answer start. */
struct ping_rig {
	char addr[64]; /* the server's */
	struct sockaddr_in sa, client_sa;
	int server;
	rudp_host *client;
	uint32_t id;
	int64_t time; /* the ping's time field */
};

static void ping_rig_start(struct ping_rig *r)
{
	r->server = raw_socket(r->addr, sizeof(r->addr), &r->sa);
	r->client = make_host("127.0.0.1:0", 0);
	assert_int_equal(rudp_ping_start(r->client, r->addr, 2000, &r->id), 0);
	r->time = read_ping(r->server, &r->client_sa);
}

/* ev is the PONG that answers ping id, from the server whose GUID is guid. */
static void check_pong(const rudp_event *ev, uint32_t id, uint64_t guid)
{
	assert_int_equal(ev->type, RUDP_EVENT_PONG);
	assert_int_equal(ev->ping_id, id);
	assert_true(ev->guid == guid);
}

/* Services h for ms milliseconds; stores up to max events in out and
 * returns how many came. */
static int collect(rudp_host *h, int ms, rudp_event *out, int max)
{
	int got = 0;
	rudp_event ev[16];
	for (uint64_t until = now_ms() + (uint64_t)ms; now_ms() < until;) {
		int n = rudp_service(h, ev, 16, 1);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			assert_true(got < max);
			out[got++] = ev[i];
		}
	}
	return got;
}

/* One client pings 20 servers at once; each answers with its own GUID and
 * pong data, and the client matches every pong to its ping. */
static void test_ping_many_servers(void **state)
{
	(void)state;
	enum { SERVERS = 20 };
	rudp_host *server[SERVERS];
	char addr[SERVERS][64], motd[SERVERS][32];
	for (int i = 0; i < SERVERS; i++) {
		rudp_config c;
		rudp_config_init(&c);
		c.bind_address = "127.0.0.1:0";
		c.guid = 0x5e4e400000000000ull + (uint64_t)i;
		assert_int_equal(rudp_host_create(&c, &server[i]), 0);
		assert_int_equal(rudp_host_local_address(server[i], addr[i], sizeof(addr[i])), 0);
		snprintf(motd[i], sizeof(motd[i]), "MCPE;server %d;", i);
		assert_int_equal(rudp_host_set_pong_data(server[i], motd[i], strlen(motd[i])), 0);
	}
	rudp_host *client = make_host(NULL, 0);
	uint32_t id[SERVERS];
	for (int i = 0; i < SERVERS; i++) {
		assert_int_equal(rudp_ping_start(client, addr[i], 2000, &id[i]), 0);
		assert_int_not_equal(id[i], 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(id[i], id[j]);
	}
	int answered[SERVERS] = {0}, total = 0;
	rudp_event ev[8];
	for (uint64_t until = now_ms() + 3000; now_ms() < until && total < SERVERS;) {
		for (int i = 0; i < SERVERS; i++)
			assert_true(rudp_service(server[i], ev, 8, 0) >= 0);
		int n = rudp_service(client, ev, 8, 1);
		assert_true(n >= 0);
		for (int e = 0; e < n; e++) {
			assert_int_equal(ev[e].type, RUDP_EVENT_PONG);
			assert_null(ev[e].peer);
			int i = 0;
			while (i < SERVERS && id[i] != ev[e].ping_id)
				i++;
			assert_true(i < SERVERS);
			assert_int_equal(answered[i], 0);
			answered[i] = 1;
			total++;
			assert_true(ev[e].guid == 0x5e4e400000000000ull + (uint64_t)i);
			assert_string_equal(ev[e].address, addr[i]);
			assert_int_equal(ev[e].len, strlen(motd[i]));
			assert_memory_equal(ev[e].data, motd[i], strlen(motd[i]));
			assert_true(ev[e].rtt_us > 0 && ev[e].rtt_us < 3000000);
		}
	}
	assert_int_equal(total, SERVERS);
	/* Every ping ended: the client has no timer left, and no timeout
	 * event comes later. */
	assert_int_equal(rudp_host_next_timeout_ms(client), -1);
	assert_int_equal(pongs_dropped(client), 0);
	for (int i = 0; i < SERVERS; i++)
		rudp_host_destroy(server[i]);
	rudp_host_destroy(client);
}

/* A ping to a socket that never answers: sent three times (at 0, a third
 * and two thirds of the timeout), each copy with its own time field, then
 * exactly one timeout event. A port with nothing bound ends the same way. */
static void test_ping_unanswered_times_out_once(void **state)
{
	(void)state;
	char addr[64];
	struct sockaddr_in sa, from;
	int s = raw_socket(addr, sizeof(addr), &sa);
	rudp_host *client = make_host(NULL, 0);
	uint32_t id;
	uint64_t start = now_ms();
	assert_int_equal(rudp_ping_start(client, addr, 600, &id), 0);
	rudp_event ev[8];
	int got = 0;
	int64_t times[3];
	int copies = 0;
	for (uint64_t until = start + 1200; now_ms() < until;) {
		int n = rudp_service(client, ev + got, 8 - got, 5);
		assert_true(n >= 0);
		if (n > 0 && got == 0)
			assert_true(now_ms() - start >= 600);
		got += n;
		struct pollfd pfd = {.fd = s, .events = POLLIN};
		while (poll(&pfd, 1, 0) == 1) {
			assert_true(copies < 3);
			times[copies++] = read_ping(s, &from);
		}
	}
	assert_int_equal(got, 1);
	assert_int_equal(ev[0].type, RUDP_EVENT_PING_TIMEOUT);
	assert_int_equal(ev[0].ping_id, id);
	assert_string_equal(ev[0].address, addr);
	assert_null(ev[0].peer);
	assert_null(ev[0].data);
	assert_int_equal(ev[0].len, 0);
	assert_int_equal(copies, 3);
	assert_true(times[0] != times[1] && times[1] != times[2] && times[0] != times[2]);

	/* Nothing bound at all. */
	close(s);
	assert_int_equal(rudp_ping_start(client, addr, 200, &id), 0);
	got = collect(client, 600, ev, 8);
	assert_int_equal(got, 1);
	assert_int_equal(ev[0].type, RUDP_EVENT_PING_TIMEOUT);
	assert_int_equal(ev[0].ping_id, id);
	rudp_host_destroy(client);
}

/* Pongs that answer no ping are dropped and counted: from a socket that
 * was not pinged, malformed, and a second answer after the first; the
 * genuine one gets through. A pong from the pinged address whose time
 * field no copy carried answers too (servers such as rust-raknet's send
 * their own clock there): test_pong_without_echoed_time. */
static void test_forged_pongs_dropped(void **state)
{
	(void)state;
	char other_addr[64];
	struct sockaddr_in other_sa;
	int other = raw_socket(other_addr, sizeof(other_addr), &other_sa);
	struct ping_rig r;
	ping_rig_start(&r);
	rudp_event ev[8];

	send_pong(other, &r.client_sa, r.time, 1, "forged");
	assert_int_equal(collect(r.client, 50, ev, 8), 0);
	assert_int_equal(pongs_dropped(r.client), 1);
	send_pong(other, &r.client_sa, r.time + 3, 3, "forged");
	assert_int_equal(collect(r.client, 50, ev, 8), 0);
	assert_int_equal(pongs_dropped(r.client), 2);
	const uint8_t shorty[] = {RUDP_ID_UNCONNECTED_PONG, 1, 2, 3};
	assert_int_equal(sendto(r.server, shorty, sizeof(shorty), 0, (struct sockaddr *)&r.client_sa,
				sizeof(r.client_sa)),
			 (ssize_t)sizeof(shorty));
	assert_int_equal(collect(r.client, 50, ev, 8), 0);
	assert_int_equal(pongs_dropped(r.client), 3);

	send_pong(r.server, &r.client_sa, r.time, 0xabcdef, "genuine");
	assert_int_equal(collect(r.client, 50, ev, 8), 1);
	check_pong(&ev[0], r.id, 0xabcdef);
	assert_int_equal(ev[0].len, 7);
	assert_memory_equal(ev[0].data, "genuine", 7);
	assert_int_equal(pongs_dropped(r.client), 3);
	/* The ping has ended: the same pong again is dropped. */
	send_pong(r.server, &r.client_sa, r.time, 0xabcdef, "genuine");
	assert_int_equal(collect(r.client, 50, ev, 8), 0);
	assert_int_equal(pongs_dropped(r.client), 4);
	close(r.server);
	close(other);
	rudp_host_destroy(r.client);
}

/* A server that puts its own clock in the pong's time field (rust-raknet
 * does) still answers the ping: matched by its address, timed from the
 * latest copy; a second such pong finds the ping ended and is dropped. */
static void test_pong_without_echoed_time(void **state)
{
	(void)state;
	struct ping_rig r;
	ping_rig_start(&r);
	rudp_event ev[8];
	send_pong(r.server, &r.client_sa, r.time ^ 0x7fffffff00, 9, "own clock");
	assert_int_equal(collect(r.client, 50, ev, 8), 1);
	check_pong(&ev[0], r.id, 9);
	assert_true(ev[0].rtt_us < 2000000);
	assert_memory_equal(ev[0].data, "own clock", 9);
	assert_int_equal(pongs_dropped(r.client), 0);
	send_pong(r.server, &r.client_sa, r.time ^ 0x7fffffff00, 9, "own clock");
	assert_int_equal(collect(r.client, 50, ev, 8), 0);
	assert_int_equal(pongs_dropped(r.client), 1);
	close(r.server);
	rudp_host_destroy(r.client);
}

/* max_pings bounds the pings outstanding; one that ends makes room. */
static void test_ping_limit_and_arguments(void **state)
{
	(void)state;
	char addr[64];
	struct sockaddr_in sa;
	int s = raw_socket(addr, sizeof(addr), &sa);
	rudp_config c;
	rudp_host *h = NULL;
	rudp_config_init(&c);
	assert_int_equal(c.max_pings, 256);
	c.max_pings = 0;
	assert_int_equal(rudp_host_create(&c, &h), RUDP_E_INVALID);
	c.max_pings = 65537;
	assert_int_equal(rudp_host_create(&c, &h), RUDP_E_INVALID);

	rudp_host *client = make_host("127.0.0.1:0", 4);
	uint32_t id[5];
	assert_int_equal(rudp_ping_start(client, addr, 100, &id[0]), 0);
	for (int i = 1; i < 4; i++)
		assert_int_equal(rudp_ping_start(client, addr, 5000, &id[i]), 0);
	assert_int_equal(rudp_ping_start(client, addr, 5000, &id[4]), RUDP_E_PINGS_FULL);
	assert_string_equal(rudp_strerror(RUDP_E_PINGS_FULL),
			    "max_pings pings are outstanding; wait for their answers");
	/* The first times out; its slot takes a new ping. */
	rudp_event ev[8];
	assert_int_equal(collect(client, 300, ev, 8), 1);
	assert_int_equal(ev[0].type, RUDP_EVENT_PING_TIMEOUT);
	assert_int_equal(ev[0].ping_id, id[0]);
	assert_int_equal(rudp_ping_start(client, addr, 5000, NULL), 0);
	assert_int_equal(rudp_ping_start(client, addr, 5000, NULL), RUDP_E_PINGS_FULL);

	assert_int_equal(rudp_ping_start(NULL, addr, 100, NULL), RUDP_E_INVALID);
	assert_int_equal(rudp_ping_start(client, NULL, 100, NULL), RUDP_E_INVALID);
	assert_int_equal(rudp_ping_start(client, addr, 0, NULL), RUDP_E_INVALID);
	assert_int_equal(rudp_ping_start(client, addr, 600001, NULL), RUDP_E_INVALID);
	assert_int_equal(rudp_ping_start(client, "127.0.0.1", 100, NULL), RUDP_E_ADDRESS);
	/* An IPv4 host cannot reach an IPv6 address. */
	assert_int_equal(rudp_ping_start(client, "[::1]:9", 100, NULL), RUDP_E_ADDRESS);
	rudp_pong pong;
	assert_int_equal(rudp_ping(client, addr, 100, &pong), RUDP_E_PINGS_FULL);
	assert_int_equal(rudp_ping(client, addr, -1, &pong), RUDP_E_INVALID);
	rudp_host_destroy(client);
	close(s);
}

/* The blocking rudp_ping() shares the table: its answer (here, none) is
 * not queued as an event, while an asynchronous ping's is; and
 * rudp_recv_batch() hands a PONG out alone. */
static void test_blocking_ping_beside_async(void **state)
{
	(void)state;
	char silent_addr[64];
	struct sockaddr_in silent_sa;
	int silent = raw_socket(silent_addr, sizeof(silent_addr), &silent_sa);
	struct ping_rig r;
	ping_rig_start(&r);
	send_pong(r.server, &r.client_sa, r.time, 42, "x");
	rudp_pong pong;
	uint64_t start = now_ms();
	assert_int_equal(rudp_ping(r.client, silent_addr, 300, &pong), RUDP_E_NOT_CONNECTED);
	assert_true(now_ms() - start >= 300);
	rudp_event ev[8];
	int n = rudp_recv_batch(r.client, ev, 8, 0);
	assert_int_equal(n, 1);
	check_pong(&ev[0], r.id, 42);
	assert_int_equal(collect(r.client, 50, ev, 8), 0);
	assert_int_equal(rudp_host_next_timeout_ms(r.client), -1);
	close(r.server);
	close(silent);
	rudp_host_destroy(r.client);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_many_servers),
		cmocka_unit_test(test_ping_unanswered_times_out_once),
		cmocka_unit_test(test_forged_pongs_dropped),
		cmocka_unit_test(test_pong_without_echoed_time),
		cmocka_unit_test(test_ping_limit_and_arguments),
		cmocka_unit_test(test_blocking_ping_beside_async),
	};
	return test_backend_run_group_name(argc, argv, "ping", tests);
}
