/* SPDX-License-Identifier: MIT */
/*
 * The conn's side for a send scheduler above it (conn.h, the section "for a
 * send scheduler layered above the conn"): the room queries, indexes taken
 * at send time and used later, and a flush in two steps with limits. Two
 * conns joined by a lossless in-memory link; src/policy is the real user
 * of these calls, tested in tests/policy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "conn/conn_internal.h"

#define MAX_PACKETS 256
#define MAX_LOG 64

struct side {
	struct rudp_conn *c;
	struct pair *pair;
	int idx;
	int connected;
	char log[MAX_LOG]; /* second byte of each delivered message, in order */
	size_t nlog;
};

struct packet {
	int to;
	size_t len;
	uint8_t data[1500];
};

struct pair {
	uint64_t now;
	struct side side[2]; /* 0 client, 1 server */
	struct packet packets[MAX_PACKETS];
	size_t npackets;
};

static int cb_send(void *ud, const uint8_t *data, size_t len)
{
	struct side *s = ud;
	struct packet *p;

	assert_true(s->pair->npackets < MAX_PACKETS);
	assert_true(len <= sizeof(p->data));
	p = &s->pair->packets[s->pair->npackets++];
	p->to = 1 - s->idx;
	p->len = len;
	memcpy(p->data, data, len);
	return 0;
}

static void cb_deliver(void *ud, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel)
{
	struct side *s = ud;

	(void)reliability;
	(void)channel;
	assert_true(len >= 2 && s->nlog < MAX_LOG);
	s->log[s->nlog++] = (char)data[1];
}

static void cb_connected(void *ud)
{
	((struct side *)ud)->connected++;
}

/* Hands every datagram in flight to its conn (in send order). */
static void deliver_all(struct pair *p)
{
	while (p->npackets > 0) {
		struct packet pk = p->packets[0];

		memmove(p->packets, p->packets + 1, (p->npackets - 1) * sizeof(p->packets[0]));
		p->npackets--;
		rudp_conn_on_datagram(p->side[pk.to].c, pk.data, pk.len, p->now);
	}
}

/* Flushes both sides and delivers until nothing moves. */
static void settle(struct pair *p)
{
	for (int round = 0; round < 50; round++) {
		p->now += 1000;
		rudp_conn_flush(p->side[0].c, p->now);
		rudp_conn_flush(p->side[1].c, p->now);
		if (p->npackets == 0)
			return;
		deliver_all(p);
	}
	fail_msg("the pair did not settle");
}

/* Both conns with congestion control cc (an enum rudp_conn_cc). */
static void pair_init_cc(struct pair *p, uint8_t cc)
{
	struct rudp_conn_config cfg;

	memset(p, 0, sizeof(*p));
	p->now = 1000000;
	rudp_conn_config_init(&cfg);
	cfg.congestion_control = cc;
	for (int i = 0; i < 2; i++) {
		struct rudp_conn_callbacks cb = {.ud = &p->side[i],
						 .send_datagram = cb_send,
						 .deliver = cb_deliver,
						 .connected = cb_connected};
		struct rudp_conn_identity id = {.local_guid = 10 + i};

		id.local_addr.version = 4;
		id.remote_addr.version = 4;
		p->side[i].pair = p;
		p->side[i].idx = i;
		p->side[i].c = rudp_conn_create(&cfg, &cb, i == 0 ? RUDP_CONN_CLIENT : RUDP_CONN_SERVER, &id,
						p->now);
		assert_non_null(p->side[i].c);
	}
	settle(p);
	assert_int_equal(p->side[0].connected, 1);
	assert_int_equal(p->side[1].connected, 1);
}

static void pair_init(struct pair *p)
{
	struct rudp_conn_config cfg;

	rudp_conn_config_init(&cfg);
	pair_init_cc(p, cfg.congestion_control);
}

static void pair_free(struct pair *p)
{
	rudp_conn_destroy(p->side[0].c);
	rudp_conn_destroy(p->side[1].c);
}

static void make_msg(uint8_t *buf, size_t len, char tag)
{
	memset(buf, 0x33, len);
	buf[0] = 0xfe; /* not a control id */
	buf[1] = (uint8_t)tag;
}

static void test_room_queries(void **state)
{
	static uint8_t msg[3000];
	struct pair p;
	struct rudp_conn *c;
	uint64_t rel100, unrel50, room;

	(void)state;
	/* The queries without a congestion limit (test_congestion_room_with_rate has one). */
	pair_init_cc(&p, RUDP_CONN_CC_NONE);
	c = p.side[0].c;
	make_msg(msg, sizeof(msg), 'q');
	assert_int_equal(rudp_conn_window_frames(c), 64);
	assert_int_equal(rudp_conn_window_frames_used(c), 0);
	assert_int_equal(rudp_conn_reliable_bytes(c), 0);
	assert_int_equal(rudp_conn_reliable_unsent_bytes(c), 0);
	assert_int_equal(rudp_conn_unreliable_bytes(c), 0);
	room = rudp_conn_queue_room(c);
	assert_int_equal(room, c->cfg.max_queue_bytes);

	/* Sizes as queued: one frame, or split (split unreliable goes reliably). */
	assert_int_equal(rudp_conn_message_frames(c, 100), 1);
	assert_int_equal(rudp_conn_message_frames(c, 3000), (3000 + c->frag_body_max - 1) / c->frag_body_max);
	assert_true(rudp_conn_message_frames(c, 3000) > 1);
	assert_int_equal(rudp_conn_effective_reliability(c, 100, RUDP_WIRE_UNRELIABLE), RUDP_WIRE_UNRELIABLE);
	assert_int_equal(rudp_conn_effective_reliability(c, 3000, RUDP_WIRE_UNRELIABLE), RUDP_WIRE_RELIABLE);
	rel100 = rudp_conn_message_encoded_bytes(c, 100, RUDP_WIRE_RELIABLE);
	unrel50 = rudp_conn_message_encoded_bytes(c, 50, RUDP_WIRE_UNRELIABLE);
	assert_true(rel100 > 100 && unrel50 > 50 && unrel50 - 50 < rel100 - 100);

	for (int i = 0; i < 3; i++)
		assert_int_equal(rudp_conn_send(c, msg, 100, RUDP_WIRE_RELIABLE, 0, p.now), 0);
	assert_int_equal(rudp_conn_send(c, msg, 50, RUDP_WIRE_UNRELIABLE, 0, p.now), 0);
	assert_int_equal(rudp_conn_window_frames_used(c), 3);
	assert_int_equal(rudp_conn_reliable_unsent_bytes(c), 3 * rel100);
	assert_int_equal(rudp_conn_reliable_bytes(c), 3 * rel100);
	assert_int_equal(rudp_conn_unreliable_bytes(c), unrel50);
	assert_int_equal(rudp_conn_queue_room(c), room - 350);
	/* Congestion control off: no congestion limit. */
	assert_true(rudp_conn_congestion_allows(c, UINT32_MAX));
	assert_true(rudp_conn_congestion_half_free(c, UINT32_MAX));

	/* Sent: nothing unsent, the frames in flight until acknowledged. */
	p.now += 1000;
	rudp_conn_flush(c, p.now);
	assert_int_equal(rudp_conn_reliable_unsent_bytes(c), 0);
	assert_int_equal(rudp_conn_reliable_bytes(c), 3 * rel100);
	assert_int_equal(rudp_conn_window_frames_used(c), 3);
	assert_int_equal(rudp_conn_unreliable_bytes(c), 0);
	deliver_all(&p);
	settle(&p);
	assert_int_equal(rudp_conn_window_frames_used(c), 0);
	assert_int_equal(rudp_conn_reliable_bytes(c), 0);
	assert_int_equal(rudp_conn_queue_room(c), room);
	pair_free(&p);
}

/* With RUDP_CC_RATE the room queries answer from the rate controller's
 * window (the AIMD window is off then, and would always say yes). */
static void test_congestion_room_with_rate(void **state)
{
	static uint8_t msg[1000];
	struct pair p;
	struct rudp_conn *c;
	uint64_t cwnd, in_flight;

	(void)state;
	pair_init_cc(&p, RUDP_CONN_CC_RATE);
	c = p.side[0].c;
	make_msg(msg, sizeof(msg), 'r');
	p.npackets = 0;
	/* Nothing in flight: anything may start, but not past half the window. */
	assert_int_equal(cc_rate_in_flight(&c->rate), 0);
	cwnd = cc_rate_cwnd(&c->rate);
	assert_true(cwnd > 0);
	assert_true(rudp_conn_congestion_allows(c, UINT32_MAX));
	assert_true(rudp_conn_congestion_half_free(c, cwnd / 2));
	assert_false(rudp_conn_congestion_half_free(c, cwnd / 2 + 1));

	/* More than the window: the flush fills it and stops. */
	for (int i = 0; i < 60; i++)
		assert_int_equal(rudp_conn_send(c, msg, sizeof(msg), RUDP_WIRE_RELIABLE, 0, p.now), 0);
	p.now += 1000;
	rudp_conn_flush(c, p.now);
	in_flight = cc_rate_in_flight(&c->rate);
	cwnd = cc_rate_cwnd(&c->rate);
	assert_true(in_flight > 0);
	assert_true(rudp_conn_reliable_unsent_bytes(c) > 0);
	assert_false(rudp_conn_congestion_allows(c, UINT32_MAX));
	if (in_flight < cwnd) {
		assert_true(rudp_conn_congestion_allows(c, cwnd - in_flight));
		assert_false(rudp_conn_congestion_allows(c, cwnd - in_flight + 1));
	} else {
		assert_false(rudp_conn_congestion_allows(c, 1));
	}
	/* Unsent bytes count toward the half: the queue is over it. */
	assert_false(rudp_conn_congestion_half_free(c, 0));

	/* All acknowledged: the room is back. */
	deliver_all(&p);
	for (int round = 0; round < 200 && rudp_conn_reliable_bytes(c) > 0; round++) {
		p.now += 1000;
		rudp_conn_flush(c, p.now);
		rudp_conn_flush(p.side[1].c, p.now);
		deliver_all(&p);
	}
	settle(&p);
	assert_int_equal(rudp_conn_reliable_bytes(c), 0);
	assert_int_equal(cc_rate_in_flight(&c->rate), 0);
	assert_true(rudp_conn_congestion_allows(c, UINT32_MAX));
	assert_true(rudp_conn_congestion_half_free(c, 1));
	pair_free(&p);
}

static void test_check_send(void **state)
{
	static const uint8_t ok[] = {0xfe, 'a'};
	static const uint8_t control[] = {0x15};
	struct pair p;
	struct rudp_conn *c;

	(void)state;
	pair_init(&p);
	c = p.side[0].c;
	assert_int_equal(rudp_conn_check_send(c, ok, sizeof(ok), RUDP_WIRE_RELIABLE_ORDERED, 0, p.now), 0);
	assert_int_equal(
		rudp_conn_check_send(c, ok, sizeof(ok), RUDP_WIRE_RELIABLE_ORDERED, CONN_CHANNELS, p.now),
		RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_check_send(c, control, sizeof(control), RUDP_WIRE_RELIABLE, 0, p.now),
			 RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_check_send(c, ok, 0, RUDP_WIRE_RELIABLE, 0, p.now), RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_check_size(c, c->cfg.max_message_size), 0);
	assert_int_equal(rudp_conn_check_size(c, c->cfg.max_message_size + 1u), RUDP_CONN_E_TOO_LARGE);
	/* Nothing was queued or counted. */
	assert_int_equal(rudp_conn_window_frames_used(c), 0);
	assert_int_equal(c->messages_sent, 0);
	rudp_conn_disconnect(c, p.now);
	assert_int_equal(rudp_conn_check_send(c, ok, sizeof(ok), RUDP_WIRE_RELIABLE, 0, p.now),
			 RUDP_CONN_E_STATE);
	pair_free(&p);
}

/* rudp_conn_check_message: the single queries' answers for the message,
 * and their errors in rudp_conn_send_ex's order. */
static void expect_view(struct rudp_conn *c, const uint8_t *msg, size_t len, uint8_t rel, uint8_t channel)
{
	struct rudp_conn_send_view v;
	struct rudp_conn_window_room room;
	uint64_t mem = rudp_conn_memory_bytes(c);
	uint8_t eff = rudp_conn_effective_reliability(c, len, rel);

	memset(&v, 0xa5, sizeof(v));
	assert_int_equal(
		rudp_conn_check_message(c, msg, len, rel, channel, RUDP_CONN_PRIO_LOW, c->now_us, &v), 0);
	assert_int_equal(v.reliability, eff);
	assert_int_equal(v.channel, rudp_wire_is_ordered_or_sequenced(eff) ? channel : 0);
	assert_int_equal(v.frames, rudp_conn_message_frames(c, len));
	assert_int_equal(v.encoded_bytes, rudp_conn_message_encoded_bytes(c, len, eff));
	assert_int_equal(v.queue_room, rudp_conn_queue_room(c));
	assert_int_equal(v.room.reliable_bytes, rudp_conn_reliable_bytes(c));
	assert_int_equal(v.room.reliable_unsent_bytes, rudp_conn_reliable_unsent_bytes(c));
	assert_int_equal(v.room.window_frames, rudp_conn_window_frames(c));
	assert_int_equal(v.room.window_frames_used, rudp_conn_window_frames_used(c));
	memset(&room, 0xa5, sizeof(room));
	rudp_conn_get_window_room(c, &room);
	assert_memory_equal(&room, &v.room, sizeof(room));
	/* What queueing it adds to the memory gauge. */
	assert_int_equal(rudp_conn_queue_indexed(c, msg, len, rel, channel, NULL), 0);
	assert_int_equal(rudp_conn_memory_bytes(c) - mem, v.memory_bytes);
}

static void test_check_message(void **state)
{
	static uint8_t msg[3000];
	static const uint8_t control[] = {0x15};
	struct rudp_conn_send_view v;
	struct pair p;
	struct rudp_conn *c;

	(void)state;
	pair_init(&p);
	c = p.side[0].c;
	make_msg(msg, sizeof(msg), 'v');
	expect_view(c, msg, 100, RUDP_WIRE_RELIABLE_ORDERED, 3);
	expect_view(c, msg, 50, RUDP_WIRE_UNRELIABLE, 2);
	expect_view(c, msg, 3000, RUDP_WIRE_UNRELIABLE_SEQUENCED, 1);
	expect_view(c, msg, 3000, RUDP_WIRE_RELIABLE_ORDERED_ACK_RECEIPT, 0);
	p.now += 1000;
	rudp_conn_flush(c, p.now);
	expect_view(c, msg, 700, RUDP_WIRE_RELIABLE, 0);
	assert_true(rudp_conn_reliable_bytes(c) > rudp_conn_reliable_unsent_bytes(c));

	/* The errors, in order: arguments, then priority, then size. */
	assert_int_equal(rudp_conn_check_message(c, control, sizeof(control), RUDP_WIRE_RELIABLE, 0,
						 RUDP_CONN_PRIORITIES, p.now, &v),
			 RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_check_message(c, msg, c->cfg.max_message_size + 1u, RUDP_WIRE_RELIABLE, 0,
						 RUDP_CONN_PRIORITIES, p.now, &v),
			 RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_check_message(c, msg, c->cfg.max_message_size + 1u, RUDP_WIRE_RELIABLE, 0,
						 RUDP_CONN_PRIO_LOW, p.now, &v),
			 RUDP_CONN_E_TOO_LARGE);
	rudp_conn_disconnect(c, p.now);
	assert_int_equal(rudp_conn_check_message(c, msg, c->cfg.max_message_size + 1u, RUDP_WIRE_RELIABLE, 0,
						 RUDP_CONN_PRIORITIES, p.now, &v),
			 RUDP_CONN_E_STATE);
	pair_free(&p);
}

/* Indexes taken in send order and queued in another order: the ordered
 * channel still delivers in send order. */
static void test_indexes_taken_at_send(void **state)
{
	uint8_t a[40], b[40], n[40];
	struct rudp_conn_msg_indexes ia, ib;
	struct pair p;
	struct rudp_conn *c;

	(void)state;
	pair_init(&p);
	c = p.side[0].c;
	make_msg(a, sizeof(a), 'A');
	make_msg(b, sizeof(b), 'B');
	make_msg(n, sizeof(n), 'N');
	rudp_conn_take_indexes(c, RUDP_WIRE_RELIABLE_ORDERED, 2, &ia);
	rudp_conn_take_indexes(c, RUDP_WIRE_RELIABLE_ORDERED, 2, &ib);
	assert_int_equal(ib.order_index, ia.order_index + 1);
	/* A message counts as sent when its indexes are taken. */
	assert_int_equal(c->messages_sent, 2);
	assert_int_equal(rudp_conn_queue_indexed(c, b, sizeof(b), RUDP_WIRE_RELIABLE_ORDERED, 2, &ib), 0);
	settle(&p);
	assert_int_equal(p.side[1].nlog, 0); /* B waits for A */
	assert_int_equal(rudp_conn_queue_indexed(c, a, sizeof(a), RUDP_WIRE_RELIABLE_ORDERED, 2, &ia), 0);
	/* Without indexes it takes the next ones now, and counts the message. */
	assert_int_equal(rudp_conn_queue_indexed(c, n, sizeof(n), RUDP_WIRE_RELIABLE_ORDERED, 2, NULL), 0);
	assert_int_equal(c->messages_sent, 3);
	settle(&p);
	assert_int_equal(p.side[1].nlog, 3);
	assert_memory_equal(p.side[1].log, "ABN", 3);
	pair_free(&p);
}

/* One reliable and one unreliable message, each too large to share a
 * datagram; a flush limited to one datagram sends the first in order. */
static char first_sent(bool unreliable_first)
{
	static uint8_t r[1000], u[1000];
	struct rudp_conn_flush_limits limits = {.max_bytes = 1, .unreliable_first = unreliable_first};
	struct pair p;
	struct rudp_conn *c;
	bool data_next = false, spent = false;
	char first;

	pair_init(&p);
	c = p.side[0].c;
	make_msg(r, sizeof(r), 'R');
	make_msg(u, sizeof(u), 'U');
	assert_int_equal(rudp_conn_send(c, r, sizeof(r), RUDP_WIRE_RELIABLE, 0, p.now), 0);
	assert_int_equal(rudp_conn_send(c, u, sizeof(u), RUDP_WIRE_UNRELIABLE, 0, p.now), 0);
	p.now += 1000;
	rudp_conn_flush_control(c, p.now, &data_next);
	assert_true(data_next);
	/* A budget below one datagram still lets exactly one out. */
	assert_int_equal(rudp_conn_flush_data(c, p.now, &limits, &spent), 1);
	assert_true(spent);
	assert_true(rudp_conn_wants_flush(c));
	deliver_all(&p);
	assert_int_equal(p.side[1].nlog, 1);
	first = p.side[1].log[0];
	/* Without limits the rest goes. */
	p.now += 1000;
	rudp_conn_flush_control(c, p.now, &data_next);
	assert_true(data_next);
	assert_int_equal(rudp_conn_flush_data(c, p.now, NULL, &spent), 1);
	assert_false(spent);
	settle(&p);
	assert_int_equal(p.side[1].nlog, 2);
	pair_free(&p);
	return first;
}

static void test_flush_limits(void **state)
{
	(void)state;
	assert_int_equal(first_sent(false), 'R');
	assert_int_equal(first_sent(true), 'U');
}

static void test_flush_budget_in_bytes(void **state)
{
	static uint8_t m[1000];
	struct rudp_conn_flush_limits limits = {.max_bytes = 4096, .unreliable_first = false};
	struct pair p;
	struct rudp_conn *c;
	bool data_next = false, spent = false;
	uint64_t before;

	(void)state;
	pair_init(&p);
	c = p.side[0].c;
	make_msg(m, sizeof(m), 'm');
	for (int i = 0; i < 20; i++)
		assert_int_equal(rudp_conn_send(c, m, sizeof(m), RUDP_WIRE_RELIABLE, 0, p.now), 0);
	before = c->stats.bytes_sent;
	p.now += 1000;
	rudp_conn_flush_control(c, p.now, &data_next);
	assert_true(data_next);
	rudp_conn_flush_data(c, p.now, &limits, &spent);
	assert_true(spent);
	assert_true(c->stats.bytes_sent - before <= 4096);
	assert_true(c->stats.bytes_sent - before >= 3000);
	settle(&p);
	assert_int_equal(p.side[1].nlog, 20);
	pair_free(&p);
}

/* A scheduler that still holds reliable messages (more_staged) leaves a
 * conn that sent all it had at its window, not out of data: the rate
 * controller must not open a burst for the next data. */
static bool out_of_data_after_flush(bool more_staged)
{
	static uint8_t m[1000];
	struct rudp_conn_flush_limits limits = {.max_bytes = UINT64_MAX, .more_staged = more_staged};
	struct pair p;
	struct rudp_conn *c;
	bool data_next = false, spent = false, out;

	pair_init(&p);
	c = p.side[0].c;
	assert_true(c->rate_on);
	make_msg(m, sizeof(m), 's');
	for (int i = 0; i < 3; i++)
		assert_int_equal(rudp_conn_send(c, m, sizeof(m), RUDP_WIRE_RELIABLE_ORDERED, 0, p.now), 0);
	p.now += 1000;
	rudp_conn_flush_control(c, p.now, &data_next);
	assert_true(data_next);
	assert_true(rudp_conn_flush_data(c, p.now, &limits, &spent) > 0);
	assert_int_equal(c->rel_sent, c->rel.frames_count);
	assert_int_not_equal(c->rate.app_limited_until, 0);
	out = c->rate.out_of_data;
	settle(&p);
	pair_free(&p);
	return out;
}

static void test_flush_more_staged(void **state)
{
	(void)state;
	assert_true(out_of_data_after_flush(false));
	assert_false(out_of_data_after_flush(true));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_room_queries),      cmocka_unit_test(test_check_send),
		cmocka_unit_test(test_check_message),     cmocka_unit_test(test_indexes_taken_at_send),
		cmocka_unit_test(test_flush_limits),      cmocka_unit_test(test_flush_budget_in_bytes),
		cmocka_unit_test(test_flush_more_staged), cmocka_unit_test(test_congestion_room_with_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
