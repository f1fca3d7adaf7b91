/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "hostile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define HS_ASAN 1
#endif
#ifdef HS_ASAN
#include <sanitizer/allocator_interface.h>
#endif

uint64_t hs_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

size_t hs_allocated_bytes(void)
{
#ifdef HS_ASAN
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
#endif
}

uint64_t hs_slow(void)
{
	const char *s = getenv("RUDP_TEST_SLOW");
	long v = s ? strtol(s, NULL, 10) : 1;
	return v > 1 ? (uint64_t)v : 1;
}

/* ---- the world: an echo server and an honest client ---- */

void hs_world_init(struct hs_world *w, rudp_config *cfg)
{
	memset(w, 0, sizeof(*w));
	cfg->bind_address = "127.0.0.1:0";
	assert_int_equal(rudp_host_create(cfg, &w->server), 0);
	assert_int_equal(rudp_host_local_address(w->server, w->server_addr, sizeof(w->server_addr)), 0);
	w->server_sa.sin_family = AF_INET;
	w->server_sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	w->server_sa.sin_port = ((struct sockaddr_in *)&w->server->local_addr)->sin_port;
	w->echo = true;
}

void hs_world_free(struct hs_world *w)
{
	rudp_host_destroy(w->client);
	rudp_host_destroy(w->server);
	memset(w, 0, sizeof(*w));
}

void hs_world_step(struct hs_world *w)
{
	rudp_event ev[64];
	int n = rudp_service(w->server, ev, 64, 0);

	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		switch (ev[i].type) {
		case RUDP_EVENT_CONNECT:
			w->server_connects++;
			w->last_connected = ev[i].peer;
			break;
		case RUDP_EVENT_RECEIVE:
			w->server_received++;
			if (w->echo)
				rudp_send(ev[i].peer, ev[i].data, ev[i].len, ev[i].reliability,
					  ev[i].channel);
			break;
		case RUDP_EVENT_DISCONNECT:
			w->server_disconnects++;
			w->last_disconnect_reason = ev[i].reason;
			if (ev[i].peer == w->last_connected)
				w->last_connected = NULL;
			break;
		}
	}
	if (!w->client)
		return;
	n = rudp_service(w->client, ev, 64, 0);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].type == RUDP_EVENT_CONNECT)
			w->client_connected = true;
		else if (ev[i].type == RUDP_EVENT_RECEIVE)
			w->client_echoes++;
		else if (ev[i].type == RUDP_EVENT_DISCONNECT) {
			w->client_connected = false;
			w->client_disconnect_reason = ev[i].reason;
			w->client_peer = NULL;
		}
	}
}

int hs_client_connect(struct hs_world *w, uint32_t timeout_ms, void (*extra)(void *), void *ud,
		      bool cookies_cfg)
{
	rudp_config cfg;
	uint64_t start, until;

	(void)cookies_cfg; /* a librudp client answers cookies whatever its own config */
	rudp_config_init(&cfg);
	if (!w->client)
		assert_int_equal(rudp_host_create(&cfg, &w->client), 0);
	w->client_disconnect_reason = 0;
	start = hs_now_ms();
	until = start + timeout_ms * hs_slow();
	assert_int_equal(rudp_connect(w->client, w->server_addr, &w->client_peer), 0);
	while (!w->client_connected && hs_now_ms() < until && !w->client_disconnect_reason) {
		if (extra)
			extra(ud);
		hs_world_step(w);
	}
	return w->client_connected ? (int)(hs_now_ms() - start) : -1;
}

bool hs_client_echo(struct hs_world *w, int n, size_t size, uint32_t timeout_ms)
{
	uint8_t buf[2048];
	uint64_t want = w->client_echoes + (uint64_t)n;
	uint64_t until = hs_now_ms() + timeout_ms * hs_slow();

	assert_true(size >= 1 && size <= sizeof(buf));
	if (!w->client_peer)
		return false;
	memset(buf, 0x42, size);
	buf[0] = 0xfe;
	for (int i = 0; i < n; i++) {
		if (rudp_send(w->client_peer, buf, size, RUDP_RELIABLE_ORDERED, 1) != 0)
			return false;
		w->client_sent++;
	}
	while (w->client_echoes < want && hs_now_ms() < until)
		hs_world_step(w);
	return w->client_echoes >= want;
}

/* ---- the evil client ---- */

static int evil_cb_send(void *ud, const uint8_t *data, size_t len)
{
	struct hs_evil *e = ud;
	hs_evil_send(e, data, len);
	return 0;
}

static void evil_cb_deliver(void *ud, const uint8_t *d, size_t len, uint8_t rel, uint8_t ch)
{
	(void)ud, (void)d, (void)len, (void)rel, (void)ch;
}

static void evil_cb_connected(void *ud)
{
	((struct hs_evil *)ud)->connected = true;
}

static void evil_cb_closed(void *ud, enum rudp_conn_close_reason r)
{
	(void)r;
	((struct hs_evil *)ud)->closed++;
}

void hs_evil_open(struct hs_evil *e, const char *bind_ip)
{
	socklen_t len = sizeof(e->local);
	int big = 4 << 20;

	memset(e, 0, sizeof(*e));
	e->reading = true;
	e->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(e->fd >= 0);
	setsockopt(e->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	e->local.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, bind_ip, &e->local.sin_addr), 1);
	assert_int_equal(bind(e->fd, (struct sockaddr *)&e->local, sizeof(e->local)), 0);
	assert_int_equal(getsockname(e->fd, (struct sockaddr *)&e->local, &len), 0);
}

void hs_evil_close(struct hs_evil *e)
{
	if (e->c)
		rudp_conn_destroy(e->c);
	if (e->fd >= 0)
		close(e->fd);
	memset(e, 0, sizeof(*e));
	e->fd = -1;
}

static struct sockaddr_in evil_server;

void hs_evil_send(struct hs_evil *e, const uint8_t *data, size_t len)
{
	sendto(e->fd, data, len, 0, (const struct sockaddr *)&evil_server, sizeof(evil_server));
}

int hs_drain(int fd, size_t *bytes)
{
	uint8_t buf[2048];
	int n = 0;
	ssize_t r;

	while ((r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
		n++;
		if (bytes)
			*bytes += (size_t)r;
	}
	return n;
}

/* Waits for an offline packet with id `want`, servicing the server. */
static int evil_wait_offline(struct hs_evil *e, struct hs_world *w, uint8_t want, uint8_t *buf, size_t cap,
			     uint64_t until)
{
	while (hs_now_ms() < until) {
		hs_world_step(w);
		ssize_t r = recv(e->fd, buf, cap, MSG_DONTWAIT);
		if (r > 0 && buf[0] == want)
			return (int)r;
		if (r > 0 &&
		    (buf[0] == RUDP_ID_NO_FREE_INCOMING_CONNECTIONS || buf[0] == RUDP_ID_ALREADY_CONNECTED ||
		     buf[0] == RUDP_ID_INCOMPATIBLE_PROTOCOL_VERSION))
			return -2; /* refused: no point waiting */
	}
	return -1;
}

bool hs_evil_connect(struct hs_evil *e, struct hs_world *w, uint32_t timeout_ms)
{
	uint8_t buf[1600];
	uint64_t until = hs_now_ms() + timeout_ms * hs_slow();
	struct rudp_wire_open_request_1 r1 = {.protocol = 11, .mtu = 1492};
	struct rudp_wire_open_reply_1 rep1;
	struct rudp_wire_open_reply_2 rep2;
	int n;

	evil_server = w->server_sa;
	n = rudp_wire_encode_open_request_1(buf, sizeof(buf), &r1);
	hs_evil_send(e, buf, (size_t)n);
	n = evil_wait_offline(e, w, RUDP_ID_OPEN_CONNECTION_REPLY_1, buf, sizeof(buf), until);
	if (n < 0 || rudp_wire_decode_open_reply_1(buf, (size_t)n, &rep1) < 0)
		return false;
	struct rudp_wire_open_request_2 r2 = {.has_cookie = rep1.security,
					      .cookie = rep1.cookie,
					      .mtu = rep1.mtu,
					      .client_guid =
						      (int64_t)(0x5eed0000u + ntohs(e->local.sin_port))};
	r2.server_addr.version = 4;
	memcpy(r2.server_addr.ip, &w->server_sa.sin_addr, 4);
	r2.server_addr.port = ntohs(w->server_sa.sin_port);
	n = rudp_wire_encode_open_request_2(buf, sizeof(buf), &r2);
	hs_evil_send(e, buf, (size_t)n);
	n = evil_wait_offline(e, w, RUDP_ID_OPEN_CONNECTION_REPLY_2, buf, sizeof(buf), until);
	if (n < 0 || rudp_wire_decode_open_reply_2(buf, (size_t)n, &rep2) < 0)
		return false;

	struct rudp_conn_config cc;
	struct rudp_conn_callbacks cb = {.ud = e,
					 .send_datagram = evil_cb_send,
					 .deliver = evil_cb_deliver,
					 .connected = evil_cb_connected,
					 .closed = evil_cb_closed};
	struct rudp_conn_identity id = {.local_guid = r2.client_guid, .remote_addr = r2.server_addr};
	rudp_conn_config_init(&cc);
	cc.mtu = rep2.mtu;
	id.local_addr.version = 4;
	memcpy(id.local_addr.ip, &e->local.sin_addr, 4);
	id.local_addr.port = ntohs(e->local.sin_port);
	e->now_us = now_us();
	e->c = rudp_conn_create(&cc, &cb, RUDP_CONN_CLIENT, &id, e->now_us);
	assert_non_null(e->c);
	while (!e->connected && hs_now_ms() < until) {
		hs_evil_step(e);
		hs_world_step(w);
	}
	/* The server connects on our 0x13: let it arrive. */
	for (int i = 0; i < 20; i++) {
		hs_evil_step(e);
		hs_world_step(w);
	}
	return e->connected;
}

void hs_evil_step(struct hs_evil *e)
{
	uint8_t buf[2048];
	ssize_t r;

	e->now_us = now_us();
	while (e->reading && (r = recv(e->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		e->dgrams_in++;
		e->bytes_in += (size_t)r;
		if (e->c && (buf[0] & RUDP_DGRAM_VALID))
			rudp_conn_on_datagram(e->c, buf, (size_t)r, e->now_us);
	}
	if (e->c && e->reading && rudp_conn_state(e->c) != RUDP_CONN_STATE_CLOSED)
		rudp_conn_flush(e->c, e->now_us);
}

void hs_evil_send_frame(struct hs_evil *e, struct rudp_wire_frame *f, bool fill_indexes)
{
	uint8_t buf[1600];
	struct rudp_wire_dgram_header h = {.flags = RUDP_DGRAM_VALID, .seq = e->c->next_dgram_seq};
	int off, len;

	e->c->next_dgram_seq = rudp_u24_add(e->c->next_dgram_seq, 1);
	if (fill_indexes && rudp_wire_is_reliable(f->reliability)) {
		f->reliable_index = e->c->next_reliable_index;
		e->c->next_reliable_index = rudp_u24_add(e->c->next_reliable_index, 1);
	}
	off = rudp_wire_encode_dgram_header(buf, sizeof(buf), &h);
	len = rudp_wire_encode_frame(buf + off, sizeof(buf) - (size_t)off, f);
	assert_true(len > 0);
	hs_evil_send(e, buf, (size_t)(off + len));
}

rudp_peer *hs_server_peer_of(struct hs_world *w, const struct hs_evil *e)
{
	struct sockaddr_storage norm;

	rudp_addr_normalize((const struct sockaddr *)&e->local, &norm);
	return peer_table_find(&w->server->table, &norm, 0, peer_table_hash(&w->server->table, &norm, 0));
}

/* ---- spoofed sources ---- */

int hs_spoof_open(void)
{
	int one = 1;
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);

	if (fd < 0)
		return -1;
	if (setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

void hs_spoof_send(int raw, uint32_t src_ip_host, uint16_t src_port, const struct sockaddr_in *dst,
		   const uint8_t *data, size_t len)
{
	uint8_t pkt[1600];
	struct iphdr *ip = (struct iphdr *)pkt;
	struct udphdr *udp = (struct udphdr *)(pkt + sizeof(*ip));

	assert_true(len + sizeof(*ip) + sizeof(*udp) <= sizeof(pkt));
	memset(pkt, 0, sizeof(*ip) + sizeof(*udp));
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = htonl(src_ip_host);
	ip->daddr = dst->sin_addr.s_addr;
	ip->tot_len = htons((uint16_t)(sizeof(*ip) + sizeof(*udp) + len)); /* the kernel fills the checksum */
	udp->source = htons(src_port);
	udp->dest = dst->sin_port;
	udp->len = htons((uint16_t)(sizeof(*udp) + len));
	udp->check = 0; /* optional over IPv4 */
	memcpy(pkt + sizeof(*ip) + sizeof(*udp), data, len);
	sendto(raw, pkt, sizeof(*ip) + sizeof(*udp) + len, 0, (const struct sockaddr *)dst, sizeof(*dst));
}
