/* SPDX-License-Identifier: MIT */
/*
 * A server conn fed by a hand-driven fake client: the handshake, then bad and
 * hostile input, each checked to be counted and dropped while the
 * connection keeps working. Counts are exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conn/conn_internal.h"

struct fake {
	struct rudp_conn *c; /* the server under test */
	uint64_t now;
	uint32_t seq; /* our next datagram seq */
	uint32_t ri; /* our next reliable index */
	uint32_t oi[CONN_CHANNELS];
	uint16_t split_id;
	/* what the server sent */
	int acks, nacks, data_dgrams;
	uint32_t last_data_seq;
	struct rudp_wire_range last_ack;
	struct rudp_wire_range ranges[64]; /* every record of the last ACK or NACK */
	size_t nranges;
	/* what it delivered */
	int delivered;
	uint8_t msg[70000];
	size_t msg_len;
	int connected, closed;
	/* reserve_delivery calls (fake_reserve), when a test installs it */
	int reserves;
	uint32_t reserve_messages[16];
	uint64_t reserve_bytes[16];
	uint32_t refuse_above; /* refuse asks for more messages than this (0: none) */
};

static int fake_send(void *ud, const uint8_t *data, size_t len)
{
	struct fake *fk = ud;
	struct rudp_wire_dgram_header h;
	size_t count = 0, dropped = 0;
	bool nack;

	if (data[0] & RUDP_DGRAM_ACK || data[0] & RUDP_DGRAM_NACK) {
		assert_int_equal(rudp_wire_decode_ack(data, len, fk->ranges, 64, &count, &dropped, &nack), 0);
		assert_true(count > 0 && dropped == 0);
		fk->nranges = count;
		/* The newest range: ACKs also repeat older acknowledged seqs. */
		fk->last_ack = fk->ranges[count - 1];
		if (nack)
			fk->nacks++;
		else
			fk->acks++;
		return 0;
	}
	assert_int_equal(rudp_wire_decode_dgram_header(data, len, &h), 4);
	assert_int_equal(h.flags, 0x84);
	fk->data_dgrams++;
	fk->last_data_seq = h.seq;
	return 0;
}

static void fake_deliver(void *ud, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel)
{
	struct fake *fk = ud;

	(void)reliability;
	(void)channel;
	fk->delivered++;
	assert_true(len <= sizeof(fk->msg));
	memcpy(fk->msg, data, len);
	fk->msg_len = len;
}

static bool fake_reserve(void *ud, uint32_t messages, uint64_t bytes)
{
	struct fake *fk = ud;

	if (fk->reserves < 16) {
		fk->reserve_messages[fk->reserves] = messages;
		fk->reserve_bytes[fk->reserves] = bytes;
	}
	fk->reserves++;
	return fk->refuse_above == 0 || messages <= fk->refuse_above;
}

static void fake_connected(void *ud)
{
	((struct fake *)ud)->connected++;
}

static void fake_closed(void *ud, enum rudp_conn_close_reason reason)
{
	(void)reason;
	((struct fake *)ud)->closed++;
}

/* A frame from the fake client, with its next indexes. */
static struct rudp_wire_frame fake_frame(struct fake *fk, uint8_t rel, uint8_t ch, const uint8_t *body,
					 uint16_t len)
{
	struct rudp_wire_frame f;

	memset(&f, 0, sizeof(f));
	f.reliability = rel;
	f.body = body;
	f.body_len = len;
	if (rudp_wire_is_reliable(rel))
		f.reliable_index = fk->ri++;
	if (rel == 3) {
		f.order_channel = ch;
		f.order_index = fk->oi[ch]++;
	}
	return f;
}

static int fake_push_raw(struct fake *fk, const uint8_t *p, size_t n)
{
	fk->now += 1000;
	return rudp_conn_on_datagram(fk->c, p, n, fk->now);
}

static int fake_push(struct fake *fk, const struct rudp_wire_frame *frames, int n)
{
	static uint8_t buf[70000];
	struct rudp_wire_dgram_header h = {.flags = 0x84, .seq = fk->seq};
	size_t off;

	fk->seq = rudp_u24_add(fk->seq, 1);
	off = (size_t)rudp_wire_encode_dgram_header(buf, sizeof(buf), &h);
	for (int i = 0; i < n; i++) {
		int w = rudp_wire_encode_frame(buf + off, sizeof(buf) - off, &frames[i]);

		assert_true(w > 0);
		off += (size_t)w;
	}
	return fake_push_raw(fk, buf, off);
}

static void fake_flush(struct fake *fk)
{
	rudp_conn_flush(fk->c, fk->now);
}

static struct rudp_conn_stats stats_of(struct fake *fk)
{
	struct rudp_conn_stats st;

	rudp_conn_get_stats(fk->c, &st);
	return st;
}

/* The last ACK or NACK datagram named seq. */
static bool fake_named(const struct fake *fk, uint32_t seq)
{
	for (size_t i = 0; i < fk->nranges; i++) {
		if (rudp_u24_diff(seq, fk->ranges[i].start) >= 0 &&
		    rudp_u24_diff(fk->ranges[i].end, seq) >= 0)
			return true;
	}
	return false;
}

/* An ACK (or NACK) naming one of the server's datagram seqs. */
static int fake_ack_seq(struct fake *fk, uint32_t seq, bool nack)
{
	uint8_t d[] = {nack ? 0xa0 : 0xc0, 0, 1, 1, (uint8_t)seq, (uint8_t)(seq >> 8), (uint8_t)(seq >> 16)};

	return fake_push_raw(fk, d, sizeof(d));
}

/* An ACK (or NACK) naming a range of the server's datagram seqs, start..end. */
static int fake_ack_range(struct fake *fk, uint32_t start, uint32_t end, bool nack)
{
	uint8_t d[] = {nack ? 0xa0 : 0xc0,
		       0,
		       1,
		       0,
		       (uint8_t)start,
		       (uint8_t)(start >> 8),
		       (uint8_t)(start >> 16),
		       (uint8_t)end,
		       (uint8_t)(end >> 8),
		       (uint8_t)(end >> 16)};

	return fake_push_raw(fk, d, sizeof(d));
}

static void fake_setup(struct fake *fk, struct rudp_conn_config *cfg)
{
	struct rudp_conn_callbacks cb = {
		.ud = fk,
		.send_datagram = fake_send,
		.deliver = fake_deliver,
		.connected = fake_connected,
		.closed = fake_closed,
	};
	struct rudp_conn_identity id = {.local_guid = 7};
	struct rudp_wire_connection_request req = {.client_guid = 42, .time = 5};
	struct rudp_wire_new_incoming_connection nic;
	struct rudp_wire_frame f;
	uint8_t body[600];
	int len;

	memset(fk, 0, sizeof(*fk));
	fk->now = 5000000;
	id.remote_addr.version = 4;
	fk->c = rudp_conn_create(cfg, &cb, RUDP_CONN_SERVER, &id, fk->now);
	assert_non_null(fk->c);

	len = rudp_wire_encode_connection_request(body, sizeof(body), &req);
	f = fake_frame(fk, RUDP_WIRE_RELIABLE, 0, body, (uint16_t)len);
	assert_int_equal(fake_push(fk, &f, 1), 0);
	fake_flush(fk);
	assert_int_equal(fk->acks, 1);
	assert_int_equal(fk->data_dgrams, 1); /* the 0x10 */
	assert_int_equal(fk->connected, 0);

	memset(&nic, 0, sizeof(nic));
	nic.server_addr.version = 4;
	nic.n_internal = 10;
	for (int i = 0; i < 10; i++)
		nic.internal[i].version = 4;
	len = rudp_wire_encode_new_incoming_connection(body, sizeof(body), &nic);
	assert_true(len > 0);
	f = fake_frame(fk, RUDP_WIRE_RELIABLE_ORDERED, 0, body, (uint16_t)len);
	assert_int_equal(fake_push(fk, &f, 1), 0);
	assert_int_equal(fk->connected, 1);
	assert_int_equal(rudp_conn_state(fk->c), RUDP_CONN_STATE_CONNECTED);
	assert_int_equal(fk->c->id.remote_guid, 42);
}

static void expect_app_message_works(struct fake *fk, uint8_t ch)
{
	static const uint8_t hello[] = {0xfe, 'h', 'i'};
	struct rudp_wire_frame f = fake_frame(fk, RUDP_WIRE_RELIABLE_ORDERED, ch, hello, sizeof(hello));
	int before = fk->delivered;

	assert_int_equal(fake_push(fk, &f, 1), 0);
	assert_int_equal(fk->delivered, before + 1);
	assert_int_equal(fk->msg_len, sizeof(hello));
	assert_memory_equal(fk->msg, hello, sizeof(hello));
}

/* The server's 0x10, sent with reliability rel on channel 0. */
static void accept_connect(struct fake *fk, uint8_t rel)
{
	struct rudp_wire_connection_accepted acc;
	static uint8_t body[600];
	struct rudp_wire_frame f;
	int len;

	memset(&acc, 0, sizeof(acc));
	acc.client_addr.version = 4;
	acc.n_internal = 10;
	for (int i = 0; i < 10; i++)
		acc.internal[i].version = 4;
	len = rudp_wire_encode_connection_accepted(body, sizeof(body), &acc);
	assert_true(len > 0);
	f = fake_frame(fk, rel, 0, body, (uint16_t)len);
	assert_int_equal(fake_push(fk, &f, 1), 0);
}

/* A client conn that has sent its connection request. */
static void client_setup(struct fake *fk, struct rudp_conn_callbacks *cb)
{
	struct rudp_conn_config cfg;
	struct rudp_conn_identity id = {.local_guid = 42, .remote_guid = 7};

	rudp_conn_config_init(&cfg);
	memset(fk, 0, sizeof(*fk));
	fk->now = 5000000;
	id.remote_addr.version = 4;
	cb->ud = fk;
	fk->c = rudp_conn_create(&cfg, cb, RUDP_CONN_CLIENT, &id, fk->now);
	assert_non_null(fk->c);
	fake_flush(fk); /* our connection request */
}

/* A client whose server sends data before the client has handled the
 * server's 0x10 (raknet-node does, when the 0x10 is a resend): the message
 * is acknowledged with its datagram, so it must be held and delivered right
 * after the connect, in order, not dropped. Bounded: beyond the hold's
 * limits messages are counted as dropped. */
static void test_client_holds_data_before_accept(void **state)
{
	struct fake fk;
	struct rudp_conn_callbacks cb = {
		.send_datagram = fake_send,
		.deliver = fake_deliver,
		.connected = fake_connected,
		.closed = fake_closed,
	};
	static const uint8_t first[] = {0xfe, 'o', 'n', 'e'}, second[] = {0xfe, 't', 'w', 'o', '!'};
	struct rudp_wire_frame f[2];

	(void)state;
	client_setup(&fk, &cb);
	assert_int_equal(fk.data_dgrams, 1);

	/* Two messages on channel 0, then (in a later datagram) the 0x10. */
	f[0] = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 0, first, sizeof(first));
	f[1] = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 0, second, sizeof(second));
	assert_int_equal(fake_push(&fk, f, 2), 0);
	assert_int_equal(fk.delivered, 0);
	assert_int_equal(fk.connected, 0);

	accept_connect(&fk, RUDP_WIRE_RELIABLE);
	assert_int_equal(fk.connected, 1);
	assert_int_equal(fk.delivered, 2);
	assert_int_equal(fk.msg_len, sizeof(second)); /* in order: the last one is "two!" */
	assert_memory_equal(fk.msg, second, sizeof(second));
	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	rudp_conn_destroy(fk.c);

	/* The hold is bounded: of 9 early messages 8 are kept, and the 9th is
	 * not acknowledged (kept nowhere, it would be lost): the server sends
	 * it again, and it arrives after the connect, in order. */
	client_setup(&fk, &cb);
	struct rudp_wire_frame ninth;
	uint32_t eighth_seq = 0, ninth_seq = 0;
	for (int i = 0; i < 9; i++) {
		f[0] = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 0, i == 8 ? second : first,
				  i == 8 ? sizeof(second) : sizeof(first));
		if (i == 7)
			eighth_seq = fk.seq;
		if (i == 8) {
			ninth = f[0];
			ninth_seq = fk.seq;
		}
		assert_int_equal(fake_push(&fk, f, 1), 0);
	}
	fake_flush(&fk);
	assert_true(fake_named(&fk, eighth_seq));
	assert_false(fake_named(&fk, ninth_seq));
	/* An ordered message ahead of its turn is not taken either: it would
	 * wait in the order hold and come out beyond what was reserved. */
	struct rudp_wire_frame ahead = ninth;
	ahead.reliable_index = fk.ri++;
	ahead.order_index = fk.oi[0]++;
	uint32_t ahead_seq = fk.seq;
	assert_int_equal(fake_push(&fk, &ahead, 1), 0);
	fake_flush(&fk);
	assert_false(fake_named(&fk, ahead_seq));
	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	accept_connect(&fk, RUDP_WIRE_RELIABLE);
	assert_int_equal(fk.connected, 1);
	assert_int_equal(fk.delivered, 8);
	assert_int_equal(fake_push(&fk, &ahead, 1), 0); /* resent: held, the 9th is missing */
	assert_int_equal(fk.delivered, 8);
	assert_int_equal(fake_push(&fk, &ninth, 1), 0); /* resent */
	assert_int_equal(fk.delivered, 10);
	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	/* Destroying a conn that still holds early messages frees them (ASan). */
	rudp_conn_destroy(fk.c);
	client_setup(&fk, &cb);
	f[0] = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 0, first, sizeof(first));
	assert_int_equal(fake_push(&fk, f, 1), 0);
	rudp_conn_destroy(fk.c);
}

/* Fragment index of a reliable ordered split message (split id 9) on channel 0. */
static struct rudp_wire_frame split_fragment(struct fake *fk, const uint8_t *msg, uint32_t frag_len,
					     uint32_t count, uint32_t index, uint32_t order_index)
{
	struct rudp_wire_frame f =
		fake_frame(fk, RUDP_WIRE_RELIABLE, 0, msg + index * frag_len, (uint16_t)frag_len);

	f.reliability = RUDP_WIRE_RELIABLE_ORDERED;
	f.order_channel = 0;
	f.order_index = order_index;
	f.split = true;
	f.split_count = count;
	f.split_id = 9;
	f.split_index = index;
	return f;
}

/* A connecting client and a server's split message ahead of its 0x10 on
 * one ordered channel (raknet-node's server, busy, queues its
 * application's first message before its 0x10; its window can then keep
 * the 0x10 back until the split message is acknowledged). Found by the
 * interop suite under CPU load: the client deferred every fragment and the
 * 0x10 waited behind them in the order hold, so it timed out while the
 * server saw it connected. */
static void test_client_split_before_accept(void **state)
{
	struct fake fk;
	struct rudp_conn_callbacks cb = {
		.send_datagram = fake_send,
		.deliver = fake_deliver,
		.connected = fake_connected,
		.closed = fake_closed,
	};
	static uint8_t big[5000];
	static const uint8_t after[] = {0xfe, 'n', 'e', 'x', 't'};
	struct rudp_wire_frame frag[50], f;
	uint32_t frag_seq[50], split_order, seq;

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 13 + 5);
	big[0] = 0xfe;

	/* Within the early bounds: the fragments are taken (acknowledged) while
	 * connecting, and the message comes right after the connect, before
	 * what follows it. */
	client_setup(&fk, &cb);
	split_order = fk.oi[0]++;
	for (uint32_t i = 0; i < 3; i++) {
		frag[i] = split_fragment(&fk, big, 1000, 3, i, split_order);
		frag_seq[i] = fk.seq;
		assert_int_equal(fake_push(&fk, &frag[i], 1), 0);
	}
	fake_flush(&fk);
	for (int i = 0; i < 3; i++)
		assert_true(fake_named(&fk, frag_seq[i]));
	assert_int_equal(fk.delivered, 0);
	accept_connect(&fk, RUDP_WIRE_RELIABLE_ORDERED);
	assert_int_equal(fk.connected, 1);
	assert_int_equal(fk.delivered, 1);
	assert_int_equal(fk.msg_len, 3000);
	assert_memory_equal(fk.msg, big, 3000);
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 0, after, sizeof(after));
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fk.delivered, 2);
	assert_memory_equal(fk.msg, after, sizeof(after));
	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	expect_app_message_works(&fk, 0);
	rudp_conn_destroy(fk.c);

	/* Beyond them (50 fragments of up to 1,447 bytes could be 72 KB, above
	 * 64 KiB): deferred, not acknowledged. The 0x10 behind it is handled
	 * as it arrives, and the message, sent again, comes out in order. */
	client_setup(&fk, &cb);
	split_order = fk.oi[0]++;
	for (uint32_t i = 0; i < 2; i++) {
		frag[i] = split_fragment(&fk, big, 100, 50, i, split_order);
		frag_seq[i] = fk.seq;
		assert_int_equal(fake_push(&fk, &frag[i], 1), 0);
	}
	accept_connect(&fk, RUDP_WIRE_RELIABLE_ORDERED);
	assert_int_equal(fk.connected, 1);
	assert_int_equal(fk.delivered, 0);
	fake_flush(&fk);
	for (int i = 0; i < 2; i++)
		assert_false(fake_named(&fk, frag_seq[i]));
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 0, after, sizeof(after));
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fk.delivered, 0); /* waits for the split message */
	for (uint32_t i = 0; i < 50; i++) {
		if (i >= 2)
			frag[i] = split_fragment(&fk, big, 100, 50, i, split_order);
		assert_int_equal(fake_push(&fk, &frag[i], 1), 0);
		if (i == 48)
			assert_int_equal(fk.delivered, 0);
	}
	assert_int_equal(fk.delivered, 2);
	assert_memory_equal(fk.msg, after, sizeof(after));
	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	assert_int_equal(stats_of(&fk).messages_received, 2);
	rudp_conn_destroy(fk.c);

	/* A sequenced split message is not taken early (only reliable and
	 * reliable ordered sets get room among the early messages). */
	client_setup(&fk, &cb);
	f = split_fragment(&fk, big, 1000, 3, 0, fk.oi[0]);
	f.reliability = RUDP_WIRE_RELIABLE_SEQUENCED;
	seq = fk.seq;
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	fake_flush(&fk);
	assert_false(fake_named(&fk, seq));
	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	rudp_conn_destroy(fk.c);

	/* A connection destroyed while a set it took early is incomplete, or
	 * with a reassembled one still among the early messages, frees both
	 * (ASan). */
	client_setup(&fk, &cb);
	split_order = fk.oi[0]++;
	frag[0] = split_fragment(&fk, big, 1000, 3, 0, split_order);
	assert_int_equal(fake_push(&fk, &frag[0], 1), 0);
	rudp_conn_destroy(fk.c);
	client_setup(&fk, &cb);
	split_order = fk.oi[0]++;
	for (uint32_t i = 0; i < 3; i++) {
		frag[i] = split_fragment(&fk, big, 1000, 3, i, split_order);
		assert_int_equal(fake_push(&fk, &frag[i], 1), 0);
	}
	assert_int_equal(fk.delivered, 0);
	rudp_conn_destroy(fk.c);
}

static void test_handshake_and_data(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	expect_app_message_works(&fk, 0);
	expect_app_message_works(&fk, 5);
	/* Application bodies with low first bytes are delivered unchanged. */
	{
		static const uint8_t low[] = {0x01, 0x02};
		struct rudp_wire_frame f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, low, sizeof(low));

		assert_int_equal(fake_push(&fk, &f, 1), 0);
		assert_int_equal(fk.delivered, 3);
		assert_memory_equal(fk.msg, low, 2);
	}
	assert_int_equal(stats_of(&fk).datagrams_dropped, 0);
	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	rudp_conn_destroy(fk.c);
}

static void test_malformed_datagrams(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	int acks;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	fake_flush(&fk);
	acks = fk.acks;

	/* Truncated frame: claims 100 bytes, carries 10. */
	{
		uint8_t d[] = {0x84, 0x10, 0, 0, 2 << 5, 0x03, 0x20, 9, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

		assert_int_equal(fake_push_raw(&fk, d, sizeof(d)), RUDP_WIRE_TRUNCATED);
		assert_int_equal(stats_of(&fk).datagrams_dropped, 1);
	}
	/* Split index beyond the split count. */
	{
		uint8_t d[] = {0x84, 0x11, 0, 0, (2 << 5) | 0x10,
			       0x00, 0x08, 9, 0, 0, /* reliable index */
			       0,    0,    0, 2, 0,
			       1,    0,    0, 0, 5,
			       0xfe}; /* count 2, id 1, index 5 */

		assert_int_equal(fake_push_raw(&fk, d, sizeof(d)), RUDP_WIRE_BAD_VALUE);
		assert_int_equal(stats_of(&fk).datagrams_dropped, 2);
	}
	/* Not online (no 0x80), empty, frame set with a zero-length frame. */
	{
		uint8_t a[] = {0x05, 1, 2, 3};
		uint8_t b[] = {0x84, 0x12, 0, 0, 0x00, 0x00, 0x00};

		assert_int_equal(fake_push_raw(&fk, a, sizeof(a)), RUDP_WIRE_BAD_ID);
		assert_int_equal(fake_push_raw(&fk, a, 0), RUDP_WIRE_TRUNCATED);
		assert_true(fake_push_raw(&fk, b, sizeof(b)) < 0);
		assert_int_equal(stats_of(&fk).datagrams_dropped, 5);
	}
	/* None of it was acknowledged, and nothing bad was delivered. */
	fake_flush(&fk);
	assert_int_equal(fk.acks, acks);
	assert_int_equal(fk.delivered, 0);
	expect_app_message_works(&fk, 0);
	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	rudp_conn_destroy(fk.c);
}

/* A datagram may carry more frames than the receive path keeps from its
 * checking pass (16): those past it are decoded again from the right place,
 * in order, and a bad one among them still drops the whole datagram. */
static void test_many_frames_in_one_datagram(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	struct rudp_wire_frame frames[40];
	uint8_t bodies[40][2];

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	for (int i = 0; i < 40; i++) {
		bodies[i][0] = 0x01;
		bodies[i][1] = (uint8_t)i;
		frames[i] = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, bodies[i], 2);
	}
	assert_int_equal(fake_push(&fk, frames, 40), 0);
	assert_int_equal(fk.delivered, 40);
	assert_int_equal(fk.msg_len, 2);
	assert_int_equal(fk.msg[1], 39);

	/* 20 good frames, then one that claims more body than it has. */
	{
		static uint8_t buf[256];
		struct rudp_wire_dgram_header h = {.flags = 0x84, .seq = fk.seq};
		size_t off;

		fk.seq = rudp_u24_add(fk.seq, 1);
		off = (size_t)rudp_wire_encode_dgram_header(buf, sizeof(buf), &h);
		for (int i = 0; i < 20; i++) {
			struct rudp_wire_frame f = fake_frame(&fk, RUDP_WIRE_UNRELIABLE, 0, bodies[i], 2);
			int w = rudp_wire_encode_frame(buf + off, sizeof(buf) - off, &f);

			assert_true(w > 0);
			off += (size_t)w;
		}
		buf[off++] = 0x00; /* unreliable */
		buf[off++] = 0x00;
		buf[off++] = 0x40; /* 8 bytes of body, none follow */
		assert_int_equal(fake_push_raw(&fk, buf, off), RUDP_WIRE_TRUNCATED);
		assert_int_equal(fk.delivered, 40);
		assert_int_equal(stats_of(&fk).datagrams_dropped, 1);
	}
	rudp_conn_destroy(fk.c);
}

/* The room for what a datagram's frames deliver is asked of the owner
 * once for the datagram, not once per reliable frame, when each frame
 * delivers its own body alone; a frame that releases held messages asks
 * for them itself, and so does every frame after it in that datagram;
 * refused for the whole datagram, each frame asks for itself. */
static void test_delivery_room_once_per_datagram(void **state)
{
	static const uint8_t b[8][3] = {{0xfe, 0}, {0xfe, 1, 1}, {0xfe, 2}, {0xfe, 3, 3},
					{0xfe, 4}, {0xfe, 5, 5}, {0xfe, 6}, {0xfe, 7, 7}};
	struct rudp_conn_config cfg;
	struct fake fk;
	struct rudp_wire_frame f[8];
	uint32_t seq;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	fk.c->cb.reserve_delivery = fake_reserve;

	/* Eight frames, reliable and not, ordered and not: one ask for all. */
	for (int i = 0; i < 8; i++)
		f[i] = fake_frame(&fk,
				  i % 3 == 0   ? RUDP_WIRE_RELIABLE_ORDERED
				  : i % 3 == 1 ? RUDP_WIRE_RELIABLE
					       : RUDP_WIRE_UNRELIABLE,
				  0, b[i], (uint16_t)(2 + i % 2));
	assert_int_equal(fake_push(&fk, f, 8), 0);
	assert_int_equal(fk.delivered, 8);
	assert_int_equal(fk.reserves, 1);
	assert_int_equal(fk.reserve_messages[0], 8);
	assert_int_equal(fk.reserve_bytes[0], 4 * 2 + 4 * 3);

	/* A message ahead of its turn is held; the frame in turn that comes
	 * with it later releases it, so asks for both, and the frame after
	 * it asks for itself. */
	struct rudp_wire_frame ahead = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 1, b[1], 3);
	struct rudp_wire_frame in_turn = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 1, b[0], 2);

	ahead.order_index = 1;
	in_turn.order_index = 0;
	assert_int_equal(fake_push(&fk, &ahead, 1), 0); /* held */
	assert_int_equal(fk.delivered, 8);
	fk.reserves = 0;
	f[0] = in_turn;
	f[1] = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, b[2], 2);
	f[2] = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, b[3], 3);
	assert_int_equal(fake_push(&fk, f, 3), 0);
	assert_int_equal(fk.delivered, 12);
	assert_int_equal(fk.reserves, 4);
	assert_int_equal(fk.reserve_messages[0], 3); /* the datagram */
	assert_int_equal(fk.reserve_messages[1], 2); /* its turn and the held one */
	assert_int_equal(fk.reserve_bytes[1], 3 + 2);
	assert_int_equal(fk.reserve_messages[2], 1);
	assert_int_equal(fk.reserve_messages[3], 1);

	/* The whole datagram refused: each frame asks, and all are taken. */
	fk.reserves = 0;
	fk.refuse_above = 1;
	for (int i = 0; i < 4; i++)
		f[i] = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, b[i], 2);
	seq = fk.seq;
	assert_int_equal(fake_push(&fk, f, 4), 0);
	assert_int_equal(fk.delivered, 16);
	assert_int_equal(fk.reserves, 5);
	fake_flush(&fk);
	assert_true(fake_named(&fk, seq));

	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	rudp_conn_destroy(fk.c);
}

static void test_hostile_acks(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	uint32_t next, sent_seq;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	/* The server's 0x10 is in flight, never acked by us. */
	assert_int_equal(stats_of(&fk).window_in_use, 1);
	sent_seq = fk.last_data_seq;
	next = fk.c->next_dgram_seq;
	assert_int_equal(next, rudp_u24_add(sent_seq, 1));

	/* A range covering all 2^24 seqs: the wire rejects it outright. */
	{
		uint8_t d[] = {0xc0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff};

		assert_int_equal(fake_push_raw(&fk, d, sizeof(d)), RUDP_WIRE_BAD_VALUE);
		assert_int_equal(stats_of(&fk).datagrams_dropped, 1);
	}
	/* The widest range the wire allows, all of it naming seqs never sent:
	 * accepted, cheap, acks nothing. */
	{
		assert_int_equal(fake_ack_range(&fk, next, rudp_u24_add(next, 0x7fffff), false), 0);
		assert_int_equal(stats_of(&fk).acks_received, 1);
		assert_int_equal(stats_of(&fk).window_in_use, 1);
	}
	/* NACK for seqs never sent: ignored. */
	{
		int data_before = fk.data_dgrams;

		assert_int_equal(fake_ack_range(&fk, rudp_u24_add(next, 10), rudp_u24_add(next, 20), true),
				 0);
		fake_flush(&fk);
		assert_int_equal(stats_of(&fk).nacks_received, 1);
		assert_int_equal(stats_of(&fk).frames_retransmitted, 0);
		assert_int_equal(fk.data_dgrams, data_before);
	}
	/* NACK for the real datagram: resent once; the same NACK again does nothing. */
	{
		uint8_t d[] = {0xa0,
			       0,
			       1,
			       1,
			       (uint8_t)sent_seq,
			       (uint8_t)(sent_seq >> 8),
			       (uint8_t)(sent_seq >> 16)};
		int data_before = fk.data_dgrams;

		assert_int_equal(fake_push_raw(&fk, d, sizeof(d)), 0);
		fake_flush(&fk);
		assert_int_equal(stats_of(&fk).frames_retransmitted, 1);
		assert_int_equal(stats_of(&fk).resent_nack, 1);
		assert_int_equal(stats_of(&fk).resent_timeout + stats_of(&fk).resent_probe, 0);
		assert_int_equal(fk.data_dgrams, data_before + 1);
		assert_int_equal(fake_push_raw(&fk, d, sizeof(d)), 0);
		fake_flush(&fk);
		assert_int_equal(stats_of(&fk).frames_retransmitted, 1);
		assert_int_equal(fk.data_dgrams, data_before + 1);
	}
	/* An ACK for the first copy finishes the frame (sent history). */
	{
		uint8_t d[] = {0xc0,
			       0,
			       1,
			       1,
			       (uint8_t)sent_seq,
			       (uint8_t)(sent_seq >> 8),
			       (uint8_t)(sent_seq >> 16)};

		assert_int_equal(fake_push_raw(&fk, d, sizeof(d)), 0);
		assert_int_equal(stats_of(&fk).window_in_use, 0);
		assert_int_equal(stats_of(&fk).send_queue_bytes, 0);
	}
	assert_int_equal(stats_of(&fk).datagrams_dropped, 1);
	expect_app_message_works(&fk, 0);
	assert_int_equal(rudp_conn_send(fk.c, (const uint8_t *)"\xfe", 1, 3, 0, fk.now), 0);
	rudp_conn_destroy(fk.c);
}

/* One ACK datagram naming 40 separate datagrams: every record counts (the
 * decode scratch grows past the 16 it starts with), and with
 * max_ack_ranges 20 only the first 20 do. */
static void test_ack_with_many_records(void **state)
{
	static const uint8_t body[] = {0xfe, 1, 2, 3};

	(void)state;
	for (int limit = 0; limit < 2; limit++) {
		struct rudp_conn_config cfg;
		struct fake fk;
		uint8_t d[3 + 40 * 4];

		rudp_conn_config_init(&cfg);
		cfg.max_frames_per_datagram = 1;
		if (limit)
			cfg.max_ack_ranges = 20;
		fake_setup(&fk, &cfg);
		fake_flush(&fk);
		assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0);
		assert_int_equal(stats_of(&fk).window_in_use, 0);
		int before = fk.data_dgrams;
		for (int i = 0; i < 40; i++)
			assert_int_equal(
				rudp_conn_send(fk.c, body, sizeof(body), RUDP_WIRE_RELIABLE, 0, fk.now), 0);
		fake_flush(&fk);
		assert_int_equal(fk.data_dgrams, before + 40);
		assert_int_equal(stats_of(&fk).window_in_use, 40);

		uint32_t first = rudp_u24_add(fk.last_data_seq, (uint32_t)-39);
		d[0] = 0xc0;
		d[1] = 0;
		d[2] = 40;
		for (uint32_t i = 0; i < 40; i++) {
			uint32_t seq = rudp_u24_add(first, i);

			d[3 + 4 * i] = 1;
			d[4 + 4 * i] = (uint8_t)seq;
			d[5 + 4 * i] = (uint8_t)(seq >> 8);
			d[6 + 4 * i] = (uint8_t)(seq >> 16);
		}
		assert_int_equal(fake_push_raw(&fk, d, sizeof(d)), 0);
		assert_int_equal(stats_of(&fk).window_in_use, limit ? 20 : 0);
		assert_int_equal(stats_of(&fk).acks_received, limit ? 21 : 41);
		rudp_conn_destroy(fk.c);
	}
}

static void test_window_and_duplicates(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	static const uint8_t body[] = {0xfe, 1, 2, 3};
	struct rudp_wire_frame f;
	int acks;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	fake_flush(&fk);

	/* Duplicate reliable frame (same reliable index again): dropped, acked. */
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fk.delivered, 1);
	assert_int_equal(stats_of(&fk).duplicates_dropped, 1);
	acks = fk.acks;
	fake_flush(&fk);
	assert_int_equal(fk.acks, acks + 1);
	assert_true(rudp_u24_diff(fk.last_ack.start, rudp_u24_add(fk.seq, (uint32_t)-2)) <= 0);
	assert_int_equal(fk.last_ack.end, rudp_u24_add(fk.seq, (uint32_t)-1));

	/* A reliable index beyond the receive window: dropped and not acked. */
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	fk.ri--;
	f.reliable_index = rudp_u24_add(fk.ri, cfg.recv_window);
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(stats_of(&fk).frames_dropped, 1);
	assert_int_equal(fk.delivered, 1);
	acks = fk.acks;
	fake_flush(&fk);
	assert_int_equal(fk.acks, acks);

	/* An ordered message beyond max_order_hold: dropped, not acked. */
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 3, body, sizeof(body));
	fk.oi[3]--;
	fk.ri--;
	f.order_index = fk.oi[3] + cfg.max_order_hold + 1;
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(stats_of(&fk).frames_dropped, 2);
	fake_flush(&fk);
	assert_int_equal(fk.acks, acks);

	/* Ordered out of order within the hold: held, then delivered in order. */
	{
		struct rudp_wire_frame a = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 3,
						      (const uint8_t *)"\xfe"
								       "a",
						      2);
		struct rudp_wire_frame b = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 3,
						      (const uint8_t *)"\xfe"
								       "b",
						      2);

		assert_int_equal(fake_push(&fk, &b, 1), 0);
		assert_int_equal(fk.delivered, 1);
		assert_int_equal(fake_push(&fk, &a, 1), 0);
		assert_int_equal(fk.delivered, 3);
		assert_int_equal(fk.msg[1], 'b');
	}
	/* The gap in our seqs (the not-acked datagrams were fine to skip: they
	 * were received) produced no NACK; skipping one now does. */
	fk.seq = rudp_u24_add(fk.seq, 1);
	expect_app_message_works(&fk, 0);
	fake_flush(&fk);
	assert_int_equal(fk.nacks, 1);
	assert_int_equal(fk.last_ack.start, rudp_u24_add(fk.seq, (uint32_t)-2));
	rudp_conn_destroy(fk.c);
}

static void test_split_limits(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	static uint8_t big[3000];
	uint32_t stride;
	struct rudp_wire_frame f;

	(void)state;
	rudp_conn_config_init(&cfg);
	cfg.max_split_count = 64;
	cfg.max_reassembly_bytes = 64 * 1024;
	fake_setup(&fk, &cfg);
	stride = fk.c->reasm.stride;
	assert_int_equal(stride, 1492 - 28 - 4 - 13);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 1);
	big[0] = 0xfe;

	/* More fragments than max_split_count, ordered on channel 0: refused and
	 * counted, and channel 0 moves past its order index. */
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 0, big, 100);
	f.split = true;
	f.split_count = 65;
	f.split_id = 1;
	f.split_index = 0;
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(stats_of(&fk).frames_dropped, 1);
	assert_int_equal(stats_of(&fk).reassembly_bytes, 0);
	expect_app_message_works(&fk, 0);

	/* count * stride above max_reassembly_bytes: refused; its later
	 * fragments are dropped too without opening a slot. */
	for (uint32_t i = 0; i < 2; i++) {
		f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, big, 100);
		f.split = true;
		f.split_count = 50;
		f.split_id = 2;
		f.split_index = i;
		assert_int_equal(fake_push(&fk, &f, 1), 0);
		assert_int_equal(stats_of(&fk).frames_dropped, 2 + i);
		assert_int_equal(stats_of(&fk).reassembly_bytes, 0);
	}

	/* A good split set, ordered on channel 2, with bad fragments mixed in. */
	{
		uint32_t oi = fk.oi[2]++;
		uint32_t sizes[3] = {1000, 1000, 500};
		uint32_t offs[3] = {0, 1000, 2000};

		for (int i = 0; i < 3; i++) {
			f = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 2, big + offs[i], (uint16_t)sizes[i]);
			fk.oi[2]--;
			f.order_index = oi;
			f.split = true;
			f.split_count = 3;
			f.split_id = 3;
			f.split_index = (uint32_t)(2 - i); /* last first */
			f.body = big + offs[2 - i];
			f.body_len = (uint16_t)sizes[2 - i];
			assert_int_equal(fake_push(&fk, &f, 1), 0);
			if (i == 0) {
				uint64_t dropped = stats_of(&fk).frames_dropped;
				struct rudp_wire_frame bad = f;

				assert_int_equal(stats_of(&fk).reassembly_bytes, 3 * stride);
				/* same id, different count */
				bad = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 2, big, 10);
				fk.oi[2]--;
				bad.order_index = oi;
				bad.split = true;
				bad.split_count = 4;
				bad.split_id = 3;
				bad.split_index = 1;
				assert_int_equal(fake_push(&fk, &bad, 1), 0);
				/* duplicate index with a new reliable index */
				bad.split_count = 3;
				bad.split_index = 2;
				bad.reliable_index = fk.ri++;
				assert_int_equal(fake_push(&fk, &bad, 1), 0);
				/* fragment larger than any this MTU allows */
				bad.split_index = 0;
				bad.body_len = (uint16_t)(stride + 1);
				bad.reliable_index = fk.ri++;
				assert_int_equal(fake_push(&fk, &bad, 1), 0);
				assert_int_equal(stats_of(&fk).frames_dropped, dropped + 3);
			}
		}
		assert_int_equal(fk.msg_len, 2500);
		assert_memory_equal(fk.msg, big, 2500);
		assert_int_equal(stats_of(&fk).reassembly_bytes, 0);
	}
	assert_int_equal(stats_of(&fk).datagrams_dropped, 0);
	expect_app_message_works(&fk, 2);
	rudp_conn_destroy(fk.c);
}

/* Unreliable split sets whose fragments were lost never complete; they must
 * not keep the slots for good, or every reliable split message after them
 * would be deferred (never acknowledged) and its channel would stall. */
static void test_split_unreliable_sets_give_way(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	static uint8_t body[1000];
	struct rudp_wire_frame f;
	uint32_t seq;

	(void)state;
	rudp_conn_config_init(&cfg);
	cfg.max_split_ids = 2;
	fake_setup(&fk, &cfg);
	fake_flush(&fk);
	memset(body, 0xfe, sizeof(body));

	/* Two unreliable sets, each missing its second fragment. */
	for (uint16_t id = 1; id <= 2; id++) {
		f = fake_frame(&fk, RUDP_WIRE_UNRELIABLE, 0, body, sizeof(body));
		f.split = true;
		f.split_count = 2;
		f.split_id = id;
		assert_int_equal(fake_push(&fk, &f, 1), 0);
	}
	uint64_t dropped = stats_of(&fk).frames_dropped;
	/* A reliable set takes the oldest one's slot: acknowledged and delivered. */
	for (uint32_t i = 0; i < 2; i++) {
		f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
		f.split = true;
		f.split_count = 2;
		f.split_id = 3;
		f.split_index = i;
		seq = fk.seq;
		assert_int_equal(fake_push(&fk, &f, 1), 0);
		fake_flush(&fk);
		assert_true(fake_named(&fk, seq));
	}
	assert_int_equal(fk.delivered, 1);
	assert_int_equal(fk.msg_len, 2000);
	assert_int_equal(stats_of(&fk).frames_dropped, dropped + 1);
	/* Set 2 is still there and can complete. */
	f = fake_frame(&fk, RUDP_WIRE_UNRELIABLE, 0, body, sizeof(body));
	f.split = true;
	f.split_count = 2;
	f.split_id = 2;
	f.split_index = 1;
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fk.delivered, 2);
	rudp_conn_destroy(fk.c);
}

static void test_split_deferred_when_full(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	static uint8_t body[1000];
	struct rudp_wire_frame f;
	int acks;

	(void)state;
	rudp_conn_config_init(&cfg);
	cfg.max_split_ids = 1;
	fake_setup(&fk, &cfg);
	fake_flush(&fk);
	memset(body, 0xfe, sizeof(body));

	/* Set 1 opens the only slot. */
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	f.split = true;
	f.split_count = 2;
	f.split_id = 1;
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	fake_flush(&fk);
	acks = fk.acks;
	/* Set 2 fits the limits but not now: deferred, not acked, not counted as received. */
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	f.split = true;
	f.split_count = 2;
	f.split_id = 2;
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	fake_flush(&fk);
	assert_int_equal(fk.acks, acks);
	/* Set 1 completes; set 2's fragment, sent again, is now taken. */
	{
		struct rudp_wire_frame g = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));

		g.split = true;
		g.split_count = 2;
		g.split_id = 1;
		g.split_index = 1;
		assert_int_equal(fake_push(&fk, &g, 1), 0);
		assert_int_equal(fk.delivered, 1);
		assert_int_equal(fk.msg_len, 2000);
	}
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	f.reliable_index = fk.ri++;
	f.split_index = 1;
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fk.delivered, 2);
	assert_int_equal(stats_of(&fk).duplicates_dropped, 0);
	rudp_conn_destroy(fk.c);
}

static void test_garbage_fuzz(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	uint64_t x = 12345;
	uint8_t d[1500];

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	for (int i = 0; i < 20000; i++) {
		size_t n;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		n = 1 + x % 300;
		for (size_t k = 0; k < n; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			d[k] = (uint8_t)x;
		}
		/* Mostly plausible headers, so the fuzz gets past the first byte. */
		if (i % 4 != 0)
			d[0] = (uint8_t)(0x84 | (i % 3 == 0 ? 0x40 : 0) | (i % 5 == 0 ? 0x20 : 0));
		fake_push_raw(&fk, d, n);
		if (i % 64 == 0)
			fake_flush(&fk);
		if (rudp_conn_state(fk.c) == RUDP_CONN_STATE_CLOSED)
			break;
	}
	assert_true(stats_of(&fk).datagrams_dropped > 10000);
	rudp_conn_destroy(fk.c);
}

static void test_remote_disconnect_acks_first(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	uint8_t dc = RUDP_ID_DISCONNECTION_NOTIFICATION;
	struct rudp_wire_frame f;
	int acks;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	fake_flush(&fk);
	acks = fk.acks;
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE_ORDERED, 0, &dc, 1);
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fk.closed, 1);
	assert_int_equal(fk.acks, acks + 1); /* the ACK went out before closed() */
	assert_int_equal(rudp_conn_state(fk.c), RUDP_CONN_STATE_CLOSED);
	rudp_conn_destroy(fk.c);
}

/* Every ACK repeats the recently acknowledged seqs, so one lost ACK
 * datagram costs the peer nothing; never a seq it did not acknowledge. */
static void test_ack_repeats_recent(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	static const uint8_t body[] = {0xfe, 1, 2, 3};
	struct rudp_wire_frame f;
	uint32_t first, deferred, skipped;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	fake_flush(&fk);
	first = fk.seq;
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	fake_flush(&fk); /* this ACK is "lost": the test ignores it */
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	fake_flush(&fk);
	assert_true(fake_named(&fk, first));
	assert_true(fake_named(&fk, rudp_u24_add(first, 1)));

	/* Not acknowledged (beyond the receive window), then a gap: neither is
	 * named by the repeats. */
	deferred = fk.seq;
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	fk.ri--;
	f.reliable_index = rudp_u24_add(fk.ri, cfg.recv_window);
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	skipped = rudp_u24_add(fk.seq, 1);
	fk.seq = rudp_u24_add(fk.seq, 2);
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	fake_flush(&fk);
	assert_true(fk.nacks > 0);
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	fake_flush(&fk);
	assert_true(fake_named(&fk, first));
	assert_false(fake_named(&fk, deferred));
	assert_false(fake_named(&fk, skipped));
	assert_true(fake_named(&fk, rudp_u24_add(skipped, 1)));
	assert_true(fake_named(&fk, rudp_u24_add(skipped, 2)));

	/* Bounded: many gaps give at most CONN_ACK_REPEAT_RANGES repeated runs
	 * (plus the new one), and seqs older than the span are not repeated. */
	for (int i = 0; i < 40; i++) {
		fk.seq = rudp_u24_add(fk.seq, 1);
		f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
		assert_int_equal(fake_push(&fk, &f, 1), 0);
	}
	fake_flush(&fk);
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	fake_flush(&fk);
	assert_true(fk.nranges <= CONN_ACK_REPEAT_RANGES + 1);
	for (uint32_t i = 0; i < CONN_ACK_REPEAT_SPAN; i++) {
		f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
		assert_int_equal(fake_push(&fk, &f, 1), 0);
	}
	fake_flush(&fk);
	assert_int_equal(fk.nranges, 1);
	assert_int_equal(rudp_u24_diff(fk.last_ack.end, fk.last_ack.start), CONN_ACK_REPEAT_SPAN - 1);
	assert_int_equal(stats_of(&fk).datagrams_dropped, 0);
	rudp_conn_destroy(fk.c);
}

/* The repeated runs read the acknowledged bitmap a word at a time; they
 * must be exactly what a walk bit by bit finds: runs crossing word
 * boundaries and the bitmap's wrap, the span's end, the run limit. */
static void reference_repeats(const uint64_t *bits, uint32_t highest, struct rudp_wire_range *out,
			      uint32_t *n)
{
	*n = 0;
	for (uint32_t k = 0; k < CONN_ACK_REPEAT_SPAN && *n < CONN_ACK_REPEAT_RANGES; k++) {
		uint32_t i = (highest - k) % CONN_DGRAM_HISTORY;
		uint32_t end = (highest - k) & RUDP_WIRE_U24_MASK;

		if (!((bits[i / 64] >> (i % 64)) & 1))
			continue;
		while (k + 1 < CONN_ACK_REPEAT_SPAN) {
			uint32_t j = (highest - k - 1) % CONN_DGRAM_HISTORY;
			if (!((bits[j / 64] >> (j % 64)) & 1))
				break;
			k++;
		}
		out[*n].start = (highest - k) & RUDP_WIRE_U24_MASK;
		out[*n].end = end;
		(*n)++;
	}
}

static void test_ack_repeats_match_bitwise_walk(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	struct rudp_wire_range want[CONN_ACK_REPEAT_RANGES];
	uint64_t rng = 0x9e3779b97f4a7c15u;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	for (int round = 0; round < 4000; round++) {
		struct rudp_conn *c = fk.c;
		/* Bit patterns from all-set to sparse, runs of every length. */
		for (uint32_t w = 0; w < CONN_DGRAM_HISTORY / 64; w++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			uint64_t r = rng;
			switch (round % 5) {
			case 0: c->acktr.dgram_acked[w] = ~(uint64_t)0; break;
			case 1: c->acktr.dgram_acked[w] = r; break;
			case 2: c->acktr.dgram_acked[w] = r & (r >> 1) & (r >> 2); break; /* sparse */
			case 3: c->acktr.dgram_acked[w] = r | (r << 1) | (r << 2); break; /* dense */
			default: c->acktr.dgram_acked[w] = (r & 1) ? ~(uint64_t)0 : 0; break;
			}
		}
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		c->acktr.have_highest_dgram = true;
		/* Near the 24-bit wrap now and then, at any bit of a word. */
		c->acktr.highest_dgram_seq =
			(uint32_t)(round % 7 == 0 ? (rng % 300) : rng) & RUDP_WIRE_U24_MASK;
		c->acktr.acks.count = 0;
		acktr_repeat_recent_acks(&c->acktr);
		uint32_t n;
		reference_repeats(c->acktr.dgram_acked, c->acktr.highest_dgram_seq, want, &n);
		assert_int_equal(c->acktr.acks.count, n);
		for (uint32_t i = 0; i < n; i++) {
			assert_int_equal(c->acktr.acks.ranges[i].start, want[i].start);
			assert_int_equal(c->acktr.acks.ranges[i].end, want[i].end);
		}
	}
	fk.c->acktr.acks.count = 0;
	memset(fk.c->acktr.dgram_acked, 0, sizeof(fk.c->acktr.dgram_acked));
	rudp_conn_destroy(fk.c);
}

/* A NACK is taken once half the path's minimum RTT has passed since the
 * send, even when the smoothed RTT is much larger (queues built by our own
 * bursts inflate it, and drain while a loss stalls the window). */
static void test_nack_guard_uses_min_rtt(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	static const uint8_t msg[] = {0xfe, 'x'};
	uint64_t retx;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	fk.now += 10000;
	assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0); /* the 0x10 */
	/* One sample of 4 ms, then eight of 50 ms: srtt ~ 33 ms, minimum 4 ms
	 * (each push adds 1 ms). */
	for (int i = 0; i < 9; i++) {
		assert_int_equal(rudp_conn_send(fk.c, msg, sizeof(msg), RUDP_WIRE_RELIABLE, 0, fk.now), 0);
		fake_flush(&fk);
		fk.now += i > 0 ? 49000 : 3000;
		assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0);
	}
	assert_true(stats_of(&fk).rtt_us > 25000);
	assert_int_equal(stats_of(&fk).window_in_use, 0);
	retx = stats_of(&fk).frames_retransmitted;
	assert_int_equal(retx, 0);

	/* Lost; the NACK comes back 5 ms after the send. */
	assert_int_equal(rudp_conn_send(fk.c, msg, sizeof(msg), RUDP_WIRE_RELIABLE, 0, fk.now), 0);
	fake_flush(&fk);
	fk.now += 4000;
	assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, true), 0);
	fake_flush(&fk);
	assert_int_equal(stats_of(&fk).frames_retransmitted, 1);
	/* A NACK naming the resend 1 ms later, faster than the path allows, is
	 * not taken. */
	assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, true), 0);
	fake_flush(&fk);
	assert_int_equal(stats_of(&fk).frames_retransmitted, 1);
	rudp_conn_destroy(fk.c);
}

/* A connected fake whose RTT estimate settled at about 100 ms: eight
 * messages each acknowledged 100 ms after its send (RTO about 127 ms, tail
 * probe about an RTT after the oldest frame's send). */
/* rtt_fake_setup with congestion control cc (an enum rudp_conn_cc). */
static void rtt_fake_setup_cc(struct fake *fk, struct rudp_conn_config *cfg, uint8_t cc)
{
	static const uint8_t msg[] = {0xfe, 'r'};

	rudp_conn_config_init(cfg);
	cfg->congestion_control = cc;
	fake_setup(fk, cfg);
	fk->now += 98000; /* the 0x10 left 1 ms ago; + 1 ms in the push */
	assert_int_equal(fake_ack_seq(fk, fk->last_data_seq, false), 0);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(rudp_conn_send(fk->c, msg, sizeof(msg), RUDP_WIRE_RELIABLE, 0, fk->now), 0);
		fake_flush(fk);
		fk->now += 99000; /* + 1 ms in the push */
		assert_int_equal(fake_ack_seq(fk, fk->last_data_seq, false), 0);
	}
	assert_int_equal(stats_of(fk).window_in_use, 0);
	assert_true(stats_of(fk).rtt_us >= 95000 && stats_of(fk).rtt_us <= 105000);
	assert_true(stats_of(fk).rto_us < 150000);
	assert_int_equal(stats_of(fk).frames_retransmitted, 0);
}

static void rtt_fake_setup(struct fake *fk, struct rudp_conn_config *cfg)
{
	struct rudp_conn_config defaults;

	rudp_conn_config_init(&defaults);
	rtt_fake_setup_cc(fk, cfg, defaults.congestion_control);
}

/* The ACK of a resent frame's datagram is an RTT sample: the datagram has a
 * sequence number of its own, so nothing is ambiguous. Skipping resent
 * frames (Karn's rule, as for TCP) kept a burst's spurious timeouts from
 * ever raising the estimate. */
static void test_rtt_sample_from_resend(void **state)
{
	static const uint8_t msg[] = {0xfe, 's'};
	struct rudp_conn_config cfg;
	struct fake fk;

	(void)state;
	rtt_fake_setup(&fk, &cfg);
	assert_int_equal(rudp_conn_send(fk.c, msg, sizeof(msg), RUDP_WIRE_RELIABLE, 0, fk.now), 0);
	fake_flush(&fk);
	/* Nothing comes back: the frame goes again when its timer expires. */
	fk.now = rudp_conn_next_deadline(fk.c);
	fake_flush(&fk);
	assert_int_equal(stats_of(&fk).frames_retransmitted, 1);
	/* The resend's datagram is acknowledged 500 ms after it left: the
	 * estimate moves by an eighth of the difference. */
	fk.now += 499000;
	assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0);
	assert_int_equal(stats_of(&fk).window_in_use, 0);
	assert_true(stats_of(&fk).rtt_us >= 145000);
	rudp_conn_destroy(fk.c);
}

/* RFC 6298's restart: an ACK that acknowledges something restarts the
 * retransmission timer of the frames still in flight. A frame sent just
 * before one that is acknowledged (too close for loss inference) is not
 * resent at its own RTO after its send, only when the ACKs stop. */
static void rto_restarts_on_ack_progress(uint8_t cc)
{
	static const uint8_t msg[] = {0xfe, 't'};
	struct rudp_conn_config cfg;
	struct fake fk;
	uint64_t t0, rto;

	rtt_fake_setup_cc(&fk, &cfg, cc);
	/* The RTO alone: the tail probe (about an RTT after the send) would
	 * otherwise resend A first. */
	fk.c->loss.probe_margin_us = 10000000;
	rto = stats_of(&fk).rto_us;
	t0 = fk.now;
	assert_int_equal(rudp_conn_send(fk.c, msg, sizeof(msg), RUDP_WIRE_RELIABLE, 0, fk.now), 0);
	fake_flush(&fk); /* frame A */
	fk.now += 1000;
	assert_int_equal(rudp_conn_send(fk.c, msg, sizeof(msg), RUDP_WIRE_RELIABLE, 0, fk.now), 0);
	fake_flush(&fk); /* frame B, a datagram of its own */
	assert_int_equal(stats_of(&fk).window_in_use, 2);
	fk.now = t0 + 99000;
	assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0); /* B, at t0 + 100 ms */
	assert_int_equal(stats_of(&fk).window_in_use, 1);
	/* Past A's RTO from its send: still waiting. (The rate controller
	 * wakes there to count A's datagram out of its flight, an RTO old:
	 * its own bookkeeping, which resends nothing.) */
	fk.now = t0 + rto + 5000;
	if (cc != RUDP_CONN_CC_RATE)
		assert_true(rudp_conn_next_deadline(fk.c) > fk.now);
	fake_flush(&fk);
	assert_int_equal(stats_of(&fk).frames_retransmitted, 0);
	/* With no ACK after that, A goes again at its RTO from the ACK. */
	fk.now = rudp_conn_next_deadline(fk.c);
	assert_true(fk.now <= t0 + 100000 + rto);
	fake_flush(&fk);
	assert_int_equal(stats_of(&fk).frames_retransmitted, 1);
	assert_int_equal(stats_of(&fk).resent_timeout, 1);
	rudp_conn_destroy(fk.c);
}

static void test_rto_restarts_on_ack_progress(void **state)
{
	(void)state;
	rto_restarts_on_ack_progress(RUDP_CONN_CC_NONE);
	rto_restarts_on_ack_progress(RUDP_CONN_CC_RATE);
}

/* The sent history with eight frames per datagram: an ACK for a first copy
 * finishes all eight; once the shared ring of reliable indexes has wrapped
 * past a datagram's run, an ACK for that datagram finishes nothing through
 * it (the run now names other frames), and every frame still ends acked
 * through the ACKs of its latest copy. */
static void sent_history_shared_ring(uint32_t ring_start)
{
	static const uint8_t body[] = {0xfe, 1, 2, 3};
	struct rudp_conn_config cfg;
	struct fake fk;
	uint32_t d0, d1, d1_end;

	rudp_conn_config_init(&cfg);
	/* A timeout resends one frame (RFC 6298): wrapping the ring takes
	 * hundreds of them, backed off to the 2 s cap, far past the 10 s after
	 * which the fake's silence would close the conn. */
	cfg.timeout_us = 3600000000u;
	fake_setup(&fk, &cfg);
	fk.c->loss.sent.ring_head += ring_start;
	assert_int_equal(cfg.window_frames, 64);
	assert_int_equal(cfg.max_frames_per_datagram, 8);
	assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0); /* the 0x10 */
	assert_int_equal(stats_of(&fk).window_in_use, 0);
	fake_flush(&fk); /* whatever control traffic is due goes first */

	for (int i = 0; i < 64; i++)
		assert_int_equal(rudp_conn_send(fk.c, body, sizeof(body), RUDP_WIRE_RELIABLE, 0, fk.now), 0);
	int before = fk.data_dgrams;
	d1_end = fk.c->loss.sent.ring_head + 16; /* one past d1's run */
	fake_flush(&fk);
	assert_int_equal(fk.data_dgrams, before + 8);
	assert_int_equal(stats_of(&fk).window_in_use, 64);
	d0 = rudp_u24_add(fk.last_data_seq, (uint32_t)-7);
	d1 = rudp_u24_add(d0, 1);

	/* d0 reported lost: its eight frames go out again; then the ACK of
	 * the first copy comes after all and finishes them. */
	assert_int_equal(fake_ack_seq(&fk, d0, true), 0);
	fake_flush(&fk);
	assert_int_equal(stats_of(&fk).frames_retransmitted, 8);
	assert_int_equal(fake_ack_seq(&fk, d0, false), 0);
	assert_int_equal(stats_of(&fk).window_in_use, 56);

	/* Timeouts resend the other 56, oldest first, until the ring has
	 * wrapped past d1's run. */
	assert_int_equal(fk.c->loss.sent.size, 256); /* grown from 64: four windows */
	while (fk.c->loss.sent.ring_head - d1_end <= fk.c->loss.sent.size) {
		uint64_t due = rudp_conn_next_deadline(fk.c);

		assert_true(due > fk.now && due - fk.now < cfg.timeout_us);
		fk.now = due;
		fake_flush(&fk);
	}
	assert_int_equal(stats_of(&fk).window_in_use, 56);
	assert_int_equal(rudp_conn_state(fk.c), RUDP_CONN_STATE_CONNECTED);
	/* d1's frames were all resent since; its run must not be read. */
	assert_int_equal(fake_ack_seq(&fk, d1, false), 0);
	assert_int_equal(stats_of(&fk).window_in_use, 56);
	/* Every latest copy acknowledged: the window empties. */
	assert_int_equal(fake_ack_range(&fk, d1, fk.last_data_seq, false), 0);
	assert_int_equal(stats_of(&fk).window_in_use, 0);
	assert_int_equal(stats_of(&fk).send_queue_bytes, 0);
	rudp_conn_destroy(fk.c);
}

static void test_sent_history_shared_ring(void **state)
{
	(void)state;
	sent_history_shared_ring(0);
	/* The ring's positions wrap past 2^32 while the history grows from
	 * 64 to 256: the copy must take the newest entries from the top. */
	sent_history_shared_ring(UINT32_MAX - 30);
}

/* A connected conn that sends one frame per datagram, for the sent
 * history's tests. */
static void history_fake_setup(struct fake *fk)
{
	struct rudp_conn_config cfg;

	rudp_conn_config_init(&cfg);
	cfg.max_frames_per_datagram = 1;
	/* A timeout resends one frame (RFC 6298), so 57 of them, backed off to
	 * the 2 s cap, bring eight unanswered frames to 65 datagrams: longer
	 * than the 10 s after which the fake's silence would close the conn. */
	cfg.timeout_us = 600000000;
	fake_setup(fk, &cfg);
	assert_int_equal(fake_ack_seq(fk, fk->last_data_seq, false), 0); /* the 0x10 */
	fake_flush(fk);
}

/* Eight in flight and nothing acknowledged, one resent on every timeout:
 * the history stays at 64 until more than 64 datagrams are out unanswered,
 * then doubles. */
static void history_doubles_while_unacked(struct fake *fk, const uint8_t *body, size_t len)
{
	for (int i = 0; i < 8; i++)
		assert_int_equal(rudp_conn_send(fk->c, body, len, RUDP_WIRE_RELIABLE, 0, fk->now), 0);
	uint32_t first = fk->c->next_dgram_seq;
	fake_flush(fk);
	while (rudp_u24_diff(fk->c->next_dgram_seq, first) <= 64) {
		assert_int_equal(fk->c->loss.sent.size, 64);
		fk->now = rudp_conn_next_deadline(fk->c);
		fake_flush(fk);
	}
	assert_int_equal(fk->c->loss.sent.size, 128);
	assert_int_equal(rudp_conn_state(fk->c), RUDP_CONN_STATE_CONNECTED);
}

/* The sent history stays small while ACKs keep up, and grows when
 * datagrams go unacknowledged for longer than it covers (loss): eight
 * messages in flight, one per datagram, resent on every timeout. */
static void test_sent_history_grows_under_loss(void **state)
{
	static const uint8_t body[] = {0xfe, 9};
	struct fake fk;

	(void)state;
	history_fake_setup(&fk);
	/* Acknowledged as they go: 200 datagrams, the history stays at 64. */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(rudp_conn_send(fk.c, body, sizeof(body), RUDP_WIRE_RELIABLE, 0, fk.now), 0);
		fake_flush(&fk);
		assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0);
	}
	assert_int_equal(stats_of(&fk).window_in_use, 0);
	assert_int_equal(fk.c->loss.sent.size, 64);
	/* Unreliable datagrams, acknowledged when nothing reliable is in
	 * flight: their slots are cleared all the same, no growth. */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(rudp_conn_send(fk.c, body, sizeof(body), RUDP_WIRE_UNRELIABLE, 0, fk.now),
				 0);
		fake_flush(&fk);
		assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0);
	}
	assert_int_equal(fk.c->loss.sent.size, 64);
	history_doubles_while_unacked(&fk, body, sizeof(body));
	rudp_conn_destroy(fk.c);
}

/* On a history_fake_setup conn: eight frames sent in eight datagrams
 * (the first seq in *first), then deadlines followed until the first
 * timeout resend. Returns the datagrams that last flush sent. */
static int eight_frames_until_timeout(struct fake *fk, uint32_t *first)
{
	static const uint8_t body[] = {0xfe, 11};

	for (int i = 0; i < 8; i++)
		assert_int_equal(rudp_conn_send(fk->c, body, sizeof(body), RUDP_WIRE_RELIABLE, 0, fk->now),
				 0);
	*first = rudp_u24_add(fk->last_data_seq, 1);
	int before = fk->data_dgrams;
	fake_flush(fk);
	assert_int_equal(fk->data_dgrams - before, 8);
	for (int tries = 0; stats_of(fk).resent_timeout == 0; tries++) {
		assert_true(tries < 10);
		fk->now = rudp_conn_next_deadline(fk->c);
		before = fk->data_dgrams;
		fake_flush(fk);
	}
	return fk->data_dgrams - before;
}

/* Eight frames in eight datagrams, nothing acknowledged: after the tail
 * probes, the RTO runs out on the rest at once, and only the oldest goes
 * again (RFC 6298 5.4); the others wait a backed-off RTO more. */
static void test_timeout_resends_oldest_frame_only(void **state)
{
	struct fake fk;
	uint32_t first;

	(void)state;
	history_fake_setup(&fk);
	assert_int_equal(eight_frames_until_timeout(&fk, &first), 1);
	assert_int_equal(stats_of(&fk).resent_timeout, 1);
	rudp_conn_destroy(fk.c);
}

/* The RTO ran out on a frame that was only late: its first copy's ACK comes
 * after the resend. That ACK dates the frame at its first copy, not at the
 * resend, so the seven frames sent in the datagrams after it (not named,
 * and none sent a reordering window before it) are not taken for lost.
 * Dated at the resend, all seven were inferred lost and went again. */
static void test_late_first_copy_ack_infers_nothing(void **state)
{
	struct fake fk;
	uint32_t first;

	(void)state;
	history_fake_setup(&fk);
	eight_frames_until_timeout(&fk, &first);
	struct rudp_conn_stats st = stats_of(&fk);
	assert_int_equal(st.resent_inferred, 0);
	uint64_t resent = st.frames_retransmitted;
	fk.now += 1000;
	assert_int_equal(fake_ack_seq(&fk, first, false), 0);
	fake_flush(&fk);
	st = stats_of(&fk);
	assert_int_equal(st.resent_inferred, 0);
	assert_int_equal(st.resent_nack, 0);
	/* The ACK's progress re-arms the tail probe, and the newest frame
	 * went long ago: one probe may go, nothing more. */
	assert_true(st.frames_retransmitted - resent <= 1);
	assert_int_equal(st.window_in_use, 7);
	rudp_conn_destroy(fk.c);
}

/* A resend is counted unneeded when an older copy's datagram is
 * acknowledged after it: once per frame however many copies went (the
 * oldest frame was probed twice before the next one timed out), and not
 * again when a resent copy's own ACK follows. */
static void test_older_copy_ack_counts_spurious_resend(void **state)
{
	struct fake fk;
	uint32_t first;

	(void)state;
	history_fake_setup(&fk);
	eight_frames_until_timeout(&fk, &first);
	uint32_t timeout_copy = fk.last_data_seq;
	assert_int_equal(stats_of(&fk).resent_probe, 2);
	assert_int_equal(stats_of(&fk).resent_spurious, 0);
	/* The probed frame's first copy: two resends, one count. */
	assert_int_equal(fake_ack_seq(&fk, first, false), 0);
	assert_int_equal(stats_of(&fk).resent_spurious, 1);
	assert_int_equal(fake_ack_seq(&fk, rudp_u24_add(first, 8), false), 0);
	assert_int_equal(fake_ack_seq(&fk, rudp_u24_add(first, 9), false), 0);
	assert_int_equal(stats_of(&fk).resent_spurious, 1);
	/* The timed-out frame through its resend, then its first copy. */
	assert_int_equal(fake_ack_seq(&fk, timeout_copy, false), 0);
	assert_int_equal(stats_of(&fk).resent_spurious, 1);
	assert_int_equal(fake_ack_seq(&fk, rudp_u24_add(first, 1), false), 0);
	assert_int_equal(stats_of(&fk).resent_spurious, 1);
	/* Frames sent once are never counted. */
	for (uint32_t k = 2; k < 8; k++)
		assert_int_equal(fake_ack_seq(&fk, rudp_u24_add(first, k), false), 0);
	assert_int_equal(stats_of(&fk).resent_spurious, 1);
	assert_int_equal(stats_of(&fk).window_in_use, 0);
	rudp_conn_destroy(fk.c);
}

/* The first copy was lost: the resend's ACK comes, and the first copy's
 * datagram is never named. Nothing was unneeded. */
static void test_resent_copy_ack_is_not_spurious(void **state)
{
	struct fake fk;
	uint32_t first;

	(void)state;
	history_fake_setup(&fk);
	eight_frames_until_timeout(&fk, &first);
	assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0);
	assert_int_equal(stats_of(&fk).resent_spurious, 0);
	/* Named late, the first copy finds the frame done: still nothing.
	 * The timeout took the second frame: the oldest, probed, restarted
	 * its timer with each probe. */
	assert_int_equal(fake_ack_seq(&fk, rudp_u24_add(first, 1), false), 0);
	assert_int_equal(stats_of(&fk).resent_spurious, 0);
	rudp_conn_destroy(fk.c);
}

/* A lost datagram whose frames then arrive in their resent copies is never
 * acknowledged itself: its slot stays valid but names only finished
 * frames, so reusing it is no reason to grow. Eight messages at a time,
 * every first copy lost and every resend acknowledged, over 320
 * datagrams: the history stays at 64 (it doubled at the 65th datagram
 * while such slots counted as waiting). */
static void test_sent_history_ignores_finished_losses(void **state)
{
	static const uint8_t body[] = {0xfe, 10};
	struct fake fk;

	(void)state;
	history_fake_setup(&fk);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 8; i++)
			assert_int_equal(
				rudp_conn_send(fk.c, body, sizeof(body), RUDP_WIRE_RELIABLE, 0, fk.now), 0);
		int before = fk.data_dgrams;
		fake_flush(&fk); /* eight first copies, all lost */
		assert_int_equal(fk.data_dgrams - before, 8);
		uint32_t lost_end = fk.last_data_seq;
		/* Every resend acknowledged as it goes out, never a first copy. */
		for (int tries = 0; stats_of(&fk).window_in_use > 0; tries++) {
			assert_true(tries < 50);
			fk.now = rudp_conn_next_deadline(fk.c);
			before = fk.data_dgrams;
			fake_flush(&fk);
			if (fk.data_dgrams > before)
				assert_int_equal(fake_ack_range(&fk, rudp_u24_add(lost_end, 1),
								fk.last_data_seq, false),
						 0);
		}
		assert_int_equal(stats_of(&fk).window_in_use, 0);
		assert_int_equal(fk.c->loss.sent.size, 64);
	}
	/* Still grows when a reused slot names a frame that waits. */
	history_doubles_while_unacked(&fk, body, sizeof(body));
	rudp_conn_destroy(fk.c);
}

/* Reliable frames far ahead of the lowest missing index: the dedup ring
 * grows to take them, a repeat is still a duplicate, and an index whose
 * bit would alias one received in the smaller ring is new. */
static void test_dedup_grows_ahead(void **state)
{
	static const uint8_t body[] = {0xfe, 7};
	struct rudp_conn_config cfg;
	struct fake fk;
	struct rudp_wire_frame f;
	uint32_t base;
	int delivered;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	assert_true(cfg.recv_window >= 1024);
	base = fk.ri;
	delivered = fk.delivered;
	f = fake_frame(&fk, RUDP_WIRE_RELIABLE, 0, body, sizeof(body));
	f.reliable_index = rudp_u24_add(base, 300);
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fk.delivered, delivered + 1);
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fk.delivered, delivered + 1);
	assert_int_equal(stats_of(&fk).duplicates_dropped, 1);
	/* 300 + 512: the same bit as 300 in a ring of 512. */
	f.reliable_index = rudp_u24_add(base, 812);
	assert_int_equal(fake_push(&fk, &f, 1), 0);
	assert_int_equal(fk.delivered, delivered + 2);
	assert_int_equal(stats_of(&fk).duplicates_dropped, 1);
	/* Everything in between, twice: each delivered once. */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < 812; k++) {
			if (k == 300)
				continue;
			f.reliable_index = rudp_u24_add(base, k);
			assert_int_equal(fake_push(&fk, &f, 1), 0);
		}
	}
	assert_int_equal(fk.delivered, delivered + 813);
	assert_int_equal(stats_of(&fk).duplicates_dropped, 1 + 811);
	assert_true(recv_no_reliable_gaps(&fk.c->rx));
	assert_int_equal(stats_of(&fk).frames_dropped, 0);
	fk.ri = rudp_u24_add(base, 813);
	expect_app_message_works(&fk, 0);
	rudp_conn_destroy(fk.c);
}

/* The congestion window (cc.c) holds new reliable frames back: the first
 * flush sends what ten datagrams' worth of bytes allows, a held-back conn
 * does not ask to be flushed (that would spin), ACKs open the window by
 * what they acknowledge, a NACK shrinks it when the RTT says a queue is
 * building. Off, the whole reliable window goes at once. */
static void test_congestion_window_holds_frames(void **state)
{
	static uint8_t body[1000];
	struct rudp_conn_config cfg;
	struct fake fk;
	uint32_t frame_bytes, cwnd, first;
	int before;

	(void)state;
	memset(body, 0x33, sizeof(body));
	for (int on = 1; on >= 0; on--) {
		rudp_conn_config_init(&cfg);
		cfg.congestion_control = on;
		fake_setup(&fk, &cfg);
		assert_int_equal(fake_ack_seq(&fk, fk.last_data_seq, false), 0); /* the 0x10 */
		assert_int_equal(stats_of(&fk).in_flight_bytes, 0);
		for (int i = 0; i < 64; i++)
			assert_int_equal(rudp_conn_send(fk.c, body, sizeof(body), RUDP_WIRE_RELIABLE_ORDERED,
							0, fk.now),
					 0);
		frame_bytes = sizeof(body) + sendq_at(&fk.c->rel, 0)->hdr_len;
		cwnd = stats_of(&fk).cwnd_bytes;
		assert_int_equal(cwnd, on ? 10 * fk.c->payload_max : 0); /* 0: off */
		before = fk.data_dgrams;
		first = fk.c->next_dgram_seq;
		fake_flush(&fk);
		if (!on) {
			assert_int_equal(fk.data_dgrams - before, 64);
			rudp_conn_destroy(fk.c);
			continue;
		}
		/* One 1,000 B message per datagram. */
		assert_int_equal(fk.data_dgrams - before, cwnd / frame_bytes);
		assert_int_equal(stats_of(&fk).in_flight_bytes, (cwnd / frame_bytes) * frame_bytes);
		assert_false(rudp_conn_wants_flush(fk.c));
		assert_true(rudp_conn_next_deadline(fk.c) > fk.now);
		/* Four acknowledged: slow start adds their bytes to the window and
		 * they left the flight, so eight more go. */
		assert_int_equal(fake_ack_range(&fk, first, (first + 3) & RUDP_WIRE_U24_MASK, false), 0);
		assert_int_equal(stats_of(&fk).cwnd_bytes, cwnd + 4 * frame_bytes);
		before = fk.data_dgrams;
		fake_flush(&fk);
		assert_int_equal(fk.data_dgrams - before,
				 (cwnd + 4 * frame_bytes) / frame_bytes - (cwnd / frame_bytes - 4));
		/* A NACK with the RTT at its minimum (random loss): the window stays. */
		cwnd = stats_of(&fk).cwnd_bytes;
		assert_int_equal(fake_ack_seq(&fk, (first + 5) & RUDP_WIRE_U24_MASK, true), 0);
		assert_int_equal(stats_of(&fk).cwnd_bytes, cwnd);
		assert_int_equal(stats_of(&fk).cc_reductions, 0);
		/* With a queue building (RTT 40 ms over a 20 ms minimum): the
		 * window to 0.7 of itself, once for that flight. */
		fk.c->loss.rtt.min_us = 20000;
		fk.c->loss.rtt.srtt_us = 40000;
		fk.now += 20000; /* a genuine NACK takes at least half the minimum RTT */
		assert_int_equal(fake_ack_seq(&fk, (first + 6) & RUDP_WIRE_U24_MASK, true), 0);
		assert_int_equal(fake_ack_seq(&fk, (first + 7) & RUDP_WIRE_U24_MASK, true), 0);
		assert_int_equal(stats_of(&fk).cwnd_bytes, (uint32_t)((uint64_t)cwnd * 7 / 10));
		assert_int_equal(stats_of(&fk).cc_reductions, 1);
		rudp_conn_destroy(fk.c);
	}
}

/* An unreliable message in a datagram of its own; true when it was delivered. */
static bool fake_unreliable_arrives(struct fake *fk)
{
	static const uint8_t msg[] = {0xfe, 'u'};
	struct rudp_wire_frame f = fake_frame(fk, RUDP_WIRE_UNRELIABLE, 0, msg, sizeof(msg));
	int before = fk->delivered;

	fake_push(fk, &f, 1);
	return fk->delivered == before + 1;
}

/* A peer that really skipped far ahead (a long outage while it streamed)
 * is followed once it goes on from there; a lone far datagram, or one that
 * genuine ones nearer by interrupt, is not adopted. */
static void test_datagram_seq_jump_followed(void **state)
{
	struct rudp_conn_config cfg;
	struct fake fk;
	uint32_t genuine;

	(void)state;
	rudp_conn_config_init(&cfg);
	fake_setup(&fk, &cfg);
	assert_true(fake_unreliable_arrives(&fk));

	/* One far datagram, then the genuine stream: the far one is dropped
	 * and the stream goes on as before. */
	genuine = fk.seq;
	fk.seq = rudp_u24_add(genuine, cfg.max_dgram_seq_jump + 1);
	assert_false(fake_unreliable_arrives(&fk));
	assert_int_equal(stats_of(&fk).datagrams_dropped, 1);
	fk.seq = genuine;
	assert_true(fake_unreliable_arrives(&fk));

	/* Two far datagrams, a genuine one between them, then a third far
	 * one: the genuine one breaks the run, so nothing is adopted. */
	genuine = fk.seq;
	fk.seq = rudp_u24_add(genuine, 5000);
	assert_false(fake_unreliable_arrives(&fk));
	assert_false(fake_unreliable_arrives(&fk));
	uint32_t far = fk.seq;
	fk.seq = genuine;
	assert_true(fake_unreliable_arrives(&fk));
	fk.seq = far;
	assert_false(fake_unreliable_arrives(&fk));
	assert_int_equal(stats_of(&fk).datagrams_dropped, 4);

	/* The peer goes on from the far seq: the third datagram in a row is
	 * taken, and so is everything after it. */
	assert_false(fake_unreliable_arrives(&fk));
	assert_true(fake_unreliable_arrives(&fk));
	assert_true(fake_unreliable_arrives(&fk));
	assert_int_equal(fk.c->acktr.highest_dgram_seq, rudp_u24_add(fk.seq, (uint32_t)-1));
	assert_int_equal(stats_of(&fk).datagrams_dropped, 5);
	expect_app_message_works(&fk, 0);
	rudp_conn_destroy(fk.c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake_and_data),
		cmocka_unit_test(test_client_holds_data_before_accept),
		cmocka_unit_test(test_client_split_before_accept),
		cmocka_unit_test(test_malformed_datagrams),
		cmocka_unit_test(test_many_frames_in_one_datagram),
		cmocka_unit_test(test_delivery_room_once_per_datagram),
		cmocka_unit_test(test_hostile_acks),
		cmocka_unit_test(test_ack_with_many_records),
		cmocka_unit_test(test_window_and_duplicates),
		cmocka_unit_test(test_split_limits),
		cmocka_unit_test(test_split_deferred_when_full),
		cmocka_unit_test(test_split_unreliable_sets_give_way),
		cmocka_unit_test(test_garbage_fuzz),
		cmocka_unit_test(test_remote_disconnect_acks_first),
		cmocka_unit_test(test_ack_repeats_recent),
		cmocka_unit_test(test_ack_repeats_match_bitwise_walk),
		cmocka_unit_test(test_nack_guard_uses_min_rtt),
		cmocka_unit_test(test_rtt_sample_from_resend),
		cmocka_unit_test(test_rto_restarts_on_ack_progress),
		cmocka_unit_test(test_sent_history_shared_ring),
		cmocka_unit_test(test_dedup_grows_ahead),
		cmocka_unit_test(test_congestion_window_holds_frames),
		cmocka_unit_test(test_datagram_seq_jump_followed),
		cmocka_unit_test(test_sent_history_grows_under_loss),
		cmocka_unit_test(test_timeout_resends_oldest_frame_only),
		cmocka_unit_test(test_late_first_copy_ack_infers_nothing),
		cmocka_unit_test(test_older_copy_ack_counts_spurious_resend),
		cmocka_unit_test(test_resent_copy_ack_is_not_spurious),
		cmocka_unit_test(test_sent_history_ignores_finished_losses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
