/* SPDX-License-Identifier: MIT */
/*
 * Out of memory where a received message is handed to the application.
 * Linked with --wrap for the allocator and for the host's event queue
 * calls (event_queue_push, event_queue_push_receive, event_queue_grow,
 * which event_queue_reserve calls when the room is not there yet): while the host queues an
 * event or makes room for one, two allocations in three fail. A client
 * sends reliable messages (ordered on four channels, some split, and
 * unordered) to a server whose application reads a few events per call,
 * so its event queue keeps growing. Every message must still arrive
 * exactly once, ordered ones in order: the server acknowledges a frame
 * only once the room for what it delivers is made, and a frame it cannot
 * take comes again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "host/host_internal.h"
#include "rudp.h"
#include "test_alloc_fail.h"
#include "test_backend.h"
#include "test_clock.h"

/* ---- the fail-point ---- */

int __real_event_queue_push(struct event_queue *q, const struct pending_event *e, const uint8_t *data);
int __wrap_event_queue_push(struct event_queue *q, const struct pending_event *e, const uint8_t *data);
int __real_event_queue_push_receive(struct event_queue *q, struct rudp_peer *peer, const uint8_t *data,
				    size_t len, uint8_t reliability, uint8_t channel);
int __wrap_event_queue_push_receive(struct event_queue *q, struct rudp_peer *peer, const uint8_t *data,
				    size_t len, uint8_t reliability, uint8_t channel);
int __real_event_queue_grow(struct event_queue *q, uint32_t events, uint64_t bytes);
int __wrap_event_queue_grow(struct event_queue *q, uint32_t events, uint64_t bytes);

static struct {
	bool in_delivery; /* inside an event queue call */
	uint64_t calls; /* allocations asked for there */
	uint64_t failed;
} fp;

static bool fail_now(void)
{
	return fp.in_delivery && fp.calls++ % 3 != 2 && ++fp.failed;
}

bool test_alloc_should_fail(const void *site)
{
	(void)site;
	return fail_now();
}

int __wrap_event_queue_push(struct event_queue *q, const struct pending_event *e, const uint8_t *data)
{
	fp.in_delivery = true;
	int r = __real_event_queue_push(q, e, data);
	fp.in_delivery = false;
	return r;
}

int __wrap_event_queue_push_receive(struct event_queue *q, struct rudp_peer *peer, const uint8_t *data,
				    size_t len, uint8_t reliability, uint8_t channel)
{
	fp.in_delivery = true;
	int r = __real_event_queue_push_receive(q, peer, data, len, reliability, channel);
	fp.in_delivery = false;
	return r;
}

int __wrap_event_queue_grow(struct event_queue *q, uint32_t events, uint64_t bytes)
{
	fp.in_delivery = true;
	int r = __real_event_queue_grow(q, events, bytes);
	fp.in_delivery = false;
	return r;
}

/* ---- the transfer ---- */

#define CHANNELS 4
#define PER_CHANNEL 600
#define UNORDERED 600
#define HEADER 9 /* 0xfe, stream, seq (4), length check (3) */

/* Sizes from a few bytes to four datagrams' worth (split). */
static size_t message_size(uint32_t stream, uint32_t seq)
{
	uint32_t x = (seq * 2654435761u) ^ (stream * 40503u);
	return HEADER + (x % 13 == 0 ? 3000 + x % 3000 : x % 700);
}

static void make_message(uint8_t *buf, uint32_t stream, uint32_t seq, size_t len)
{
	buf[0] = 0xfe;
	buf[1] = (uint8_t)stream;
	memcpy(buf + 2, &seq, 4);
	buf[6] = (uint8_t)len;
	buf[7] = (uint8_t)(len >> 8);
	buf[8] = (uint8_t)(len >> 16);
	for (size_t i = HEADER; i < len; i++)
		buf[i] = (uint8_t)(seq * 31 + i * 7 + stream);
}

struct receiver {
	uint32_t next[CHANNELS]; /* ordered: next seq expected */
	uint8_t unordered_seen[UNORDERED];
	uint32_t received;
};

static void check_message(struct receiver *r, const rudp_event *ev)
{
	uint8_t want[HEADER + 6000];
	uint32_t stream, seq;

	assert_true(ev->len >= HEADER);
	stream = ev->data[1];
	memcpy(&seq, ev->data + 2, 4);
	assert_true(stream <= CHANNELS);
	assert_int_equal(ev->len, message_size(stream, seq));
	make_message(want, stream, seq, ev->len);
	assert_memory_equal(ev->data, want, ev->len);
	if (stream < CHANNELS) {
		assert_int_equal(ev->reliability, RUDP_RELIABLE_ORDERED);
		assert_int_equal(ev->channel, stream);
		/* In order, and exactly once. */
		assert_int_equal(seq, r->next[stream]);
		r->next[stream]++;
	} else {
		assert_true(seq < UNORDERED);
		assert_int_equal(r->unordered_seen[seq], 0);
		r->unordered_seen[seq] = 1;
	}
	r->received++;
}

static void run_transfer(void)
{
	rudp_config sc, cc;
	rudp_host *server, *client;
	rudp_peer *peer;
	char addr[64];
	struct receiver rx = {0};
	uint32_t sent[CHANNELS + 1] = {0};
	const uint32_t total = CHANNELS * PER_CHANNEL + UNORDERED;
	uint8_t buf[HEADER + 6000];
	rudp_event ev[64];
	uint64_t deadline;
	bool connected = false;

	rudp_config_init(&sc);
	sc.bind_address = "127.0.0.1:0";
	assert_int_equal(rudp_host_create(&sc, &server), 0);
	assert_int_equal(rudp_host_local_address(server, addr, sizeof(addr)), 0);
	rudp_config_init(&cc);
	assert_int_equal(rudp_host_create(&cc, &client), 0);
	assert_int_equal(rudp_connect(client, addr, &peer), 0);

	deadline = now_ms() + 60000;
	while (rx.received < total && now_ms() < deadline) {
		int n = rudp_service(client, ev, 64, 0);

		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			assert_int_not_equal(ev[i].type, RUDP_EVENT_DISCONNECT);
			connected |= ev[i].type == RUDP_EVENT_CONNECT;
		}
		/* Keep a few hundred messages queued on the client. */
		for (int k = 0; connected && k < 40; k++) {
			uint32_t stream = (sent[0] + sent[1] + sent[2] + sent[3] + sent[4]) % (CHANNELS + 1);
			uint32_t limit = stream < CHANNELS ? PER_CHANNEL : UNORDERED;
			size_t len;

			if (sent[stream] == limit)
				continue;
			len = message_size(stream, sent[stream]);
			make_message(buf, stream, sent[stream], len);
			int r = rudp_send(peer, buf, len,
					  stream < CHANNELS ? RUDP_RELIABLE_ORDERED : RUDP_RELIABLE,
					  (uint8_t)(stream < CHANNELS ? stream : 0));
			if (r == RUDP_E_QUEUE_FULL)
				break;
			assert_int_equal(r, 0);
			sent[stream]++;
		}
		/* The server's application reads a few events per call: its
		 * queue grows, and with it the allocations that fail. */
		n = rudp_service(server, ev, 4, 1);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			assert_int_not_equal(ev[i].type, RUDP_EVENT_DISCONNECT);
			if (ev[i].type == RUDP_EVENT_RECEIVE)
				check_message(&rx, &ev[i]);
		}
	}
	print_message("%u of %u messages, %llu of %llu allocations in the delivery step failed\n",
		      rx.received, total, (unsigned long long)fp.failed, (unsigned long long)fp.calls);
	assert_int_equal(rx.received, total);
	for (int ch = 0; ch < CHANNELS; ch++)
		assert_int_equal(rx.next[ch], PER_CHANNEL);
	/* The failure did happen, again and again. */
	assert_true(fp.failed >= 10);
	rudp_host_destroy(client);
	rudp_host_destroy(server);
}

static void test_deliver_nomem(void **state)
{
	(void)state;
	run_transfer();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deliver_nomem),
	};

	return test_backend_run_group(argc, argv, tests);
}
