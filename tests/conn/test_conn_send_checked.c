/* SPDX-License-Identifier: MIT */
/*
 * rudp_conn_send_checked (the host's send, its arguments checked above)
 * against rudp_conn_send_expiring: two conns in the same state (the same
 * simulated run twice) are given the same sends, one way each; every
 * result, every queued frame record and the send counters must come out
 * the same, and the growth it reports must be what
 * rudp_conn_send_memory_bytes grew by: for each kind the host sends,
 * channels, lifetimes, a split message, a full queue, a message over
 * max_message_size and a conn that is not connected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define MS 1000ull
#define SEC 1000000ull

static const struct sim_link clean_link = {.delay_us = 10 * MS};

static struct sim *connected_sim(void)
{
	struct rudp_conn_config cfg;
	struct sim *s = malloc(sizeof(*s));

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	sim_init(s, 42, &cfg, &clean_link);
	s->ep[0].work.count = 0;
	s->ep[1].work.count = 0;
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 5 * SEC));
	return s;
}

static void same_frame(const struct sendq_frame *a, const struct sendq_frame *b)
{
	assert_int_equal(a->body_pos, b->body_pos);
	assert_int_equal(a->first_send_us, b->first_send_us);
	assert_int_equal(a->last_send_us, b->last_send_us);
	assert_int_equal(a->deadline_us, b->deadline_us);
	assert_int_equal(a->reliable_index, b->reliable_index);
	assert_int_equal(a->sequenced_index, b->sequenced_index);
	assert_int_equal(a->order_index, b->order_index);
	assert_int_equal(a->last_dgram_seq, b->last_dgram_seq);
	assert_int_equal(a->split_id, b->split_id);
	assert_int_equal(a->body_len, b->body_len);
	assert_int_equal(a->reliability, b->reliability);
	assert_int_equal(a->channel, b->channel);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->transmissions, b->transmissions);
	assert_int_equal(a->backoff, b->backoff);
	assert_int_equal(a->hdr_len, b->hdr_len);
	assert_int_equal(a->resend_why, b->resend_why);
	assert_int_equal(a->split, b->split);
	if (a->split) {
		assert_int_equal(a->split_count, b->split_count);
		assert_int_equal(a->split_index, b->split_index);
	}
	assert_int_equal(sendq_frame_shared(a) != NULL, sendq_frame_shared(b) != NULL);
	if (sendq_frame_shared(a))
		assert_memory_equal(a->shared->bytes, b->shared->bytes, a->body_len);
}

static void same_queue(const struct sendq *a, const struct sendq *b)
{
	assert_int_equal(a->frames_count, b->frames_count);
	assert_int_equal(a->body_bytes, b->body_bytes);
	assert_int_equal(a->wire_bytes, b->wire_bytes);
	assert_int_equal(a->ring.head, b->ring.head);
	for (uint32_t i = 0; i < a->frames_count; i++)
		same_frame(sendq_at(a, i), sendq_at(b, i));
}

static void same_conn(const struct rudp_conn *a, const struct rudp_conn *b)
{
	same_queue(&a->rel, &b->rel);
	same_queue(&a->unrel, &b->unrel);
	assert_int_equal(a->now_us, b->now_us);
	assert_int_equal(a->messages_sent, b->messages_sent);
	assert_int_equal(a->rel_unsent_wire, b->rel_unsent_wire);
	assert_int_equal(a->unrel_expiry_min, b->unrel_expiry_min);
	assert_int_equal(a->next_reliable_index, b->next_reliable_index);
	assert_int_equal(a->next_split_id, b->next_split_id);
	assert_int_equal(a->queued.records, (uint64_t)a->rel.frames_count + a->unrel.frames_count);
	assert_int_equal(a->queued.body_bytes, a->rel.body_bytes + a->unrel.body_bytes);
	assert_int_equal(b->queued.records, (uint64_t)b->rel.frames_count + b->unrel.frames_count);
	assert_int_equal(b->queued.body_bytes, b->rel.body_bytes + b->unrel.body_bytes);
	assert_memory_equal(a->chan_write, b->chan_write, sizeof(a->chan_write));
}

/* One send each way, same arguments; the results must match, and are
 * returned. */
static int send_both(struct sim *a, struct sim *b, uint32_t len, uint8_t rel, uint8_t ch, uint64_t expire_us,
		     uint64_t now_us)
{
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	sim_make_message(buf, len, rel, ch, (uint32_t)a->ep[0].c->messages_sent);
	int ra = rudp_conn_send_expiring(a->ep[0].c, buf, len, rel, ch, RUDP_CONN_PRIO_MEDIUM, now_us,
					 expire_us);
	uint64_t before = rudp_conn_send_memory_bytes(b->ep[0].c), grew = 0;
	int rb = rudp_conn_send_checked(b->ep[0].c, buf, len, rel, ch, now_us, expire_us, &grew);
	assert_int_equal(ra, rb);
	if (rb == 0)
		assert_int_equal(grew, rudp_conn_send_memory_bytes(b->ep[0].c) - before);
	else
		assert_int_equal(rudp_conn_send_memory_bytes(b->ep[0].c), before);
	same_conn(a->ep[0].c, b->ep[0].c);
	free(buf);
	return ra;
}

static void test_same_as_send_expiring(void **state)
{
	static const uint8_t kinds[] = {RUDP_WIRE_UNRELIABLE, RUDP_WIRE_UNRELIABLE_SEQUENCED,
					RUDP_WIRE_RELIABLE, RUDP_WIRE_RELIABLE_ORDERED,
					RUDP_WIRE_RELIABLE_SEQUENCED};
	struct sim *a = connected_sim(), *b = connected_sim();
	struct rudp_conn *ca = a->ep[0].c, *cb = b->ep[0].c;
	uint64_t now = a->now;

	(void)state;
	same_conn(ca, cb);
	for (int round = 0; round < 3; round++) {
		for (size_t k = 0; k < sizeof(kinds); k++) {
			uint8_t ch = (uint8_t)((k * 7 + (size_t)round) % CONN_CHANNELS);
			bool unrel = kinds[k] == RUDP_WIRE_UNRELIABLE ||
				     kinds[k] == RUDP_WIRE_UNRELIABLE_SEQUENCED;

			now += 100;
			assert_int_equal(send_both(a, b, 200, kinds[k], ch, unrel ? now + 50 * MS : 0, now),
					 0);
			/* An earlier clock than the conn's: it keeps its own. */
			assert_int_equal(send_both(a, b, 120, kinds[k], ch, 0, now - 50), 0);
			/* Split into two and into three fragments. */
			assert_int_equal(send_both(a, b, ca->frag_body_max + 1, kinds[k], ch, 0, now), 0);
			assert_int_equal(send_both(a, b, 2 * ca->frag_body_max + 7, kinds[k], ch, 0, now), 0);
		}
	}
	/* Over max_message_size, yet in one frame. */
	ca->cfg.max_message_size = cb->cfg.max_message_size = 100;
	conn_send_init(ca);
	conn_send_init(cb);
	assert_int_equal(send_both(a, b, 101, RUDP_WIRE_RELIABLE_ORDERED, 0, 0, now), RUDP_CONN_E_TOO_LARGE);
	assert_int_equal(send_both(a, b, 100, RUDP_WIRE_RELIABLE_ORDERED, 0, 0, now), 0);
	ca->cfg.max_message_size = cb->cfg.max_message_size = 1u << 20;
	/* A full queue, by bytes. */
	uint64_t held = ca->rel.body_bytes + ca->unrel.body_bytes;
	ca->cfg.max_queue_bytes = cb->cfg.max_queue_bytes = held + 150;
	conn_send_init(ca);
	conn_send_init(cb);
	assert_int_equal(send_both(a, b, 100, RUDP_WIRE_UNRELIABLE, 0, 0, now), 0);
	assert_int_equal(send_both(a, b, 100, RUDP_WIRE_UNRELIABLE, 0, 0, now), RUDP_CONN_E_QUEUE_FULL);
	assert_int_equal(send_both(a, b, 100, RUDP_WIRE_RELIABLE, 0, 0, now), RUDP_CONN_E_QUEUE_FULL);
	/* Not connected: refused, the clock advanced all the same. */
	rudp_conn_disconnect(ca, now);
	rudp_conn_disconnect(cb, now);
	assert_int_equal(send_both(a, b, 50, RUDP_WIRE_RELIABLE, 0, 0, now + 10), RUDP_CONN_E_STATE);
	assert_int_equal(cb->now_us, now + 10);
	sim_free(a);
	sim_free(b);
	free(a);
	free(b);
}

/* The record of a message in one frame (written in place, queue_frames)
 * holds what the encoder and the loss engine read, and nothing else. */
static void test_one_frame_record(void **state)
{
	struct sim *a = connected_sim();
	struct rudp_conn *c = a->ep[0].c;
	uint64_t now = a->now + 100, grew;
	uint8_t msg[300];
	const struct sendq_frame *f;

	(void)state;
	memset(msg, 0x86, sizeof(msg));
	uint32_t ri = c->next_reliable_index;
	uint64_t unsent = c->rel_unsent_wire, wire = c->rel.wire_bytes;
	uint32_t base = c->rel.frames_count;
	assert_int_equal(rudp_conn_send_checked(c, msg, 10, RUDP_WIRE_RELIABLE_ORDERED, 5, now, 0, &grew), 0);
	assert_int_equal(rudp_conn_send_checked(c, msg, 20, RUDP_WIRE_RELIABLE_ORDERED, 5, now, 0, &grew), 0);
	assert_int_equal(rudp_conn_send_checked(c, msg, 30, RUDP_WIRE_RELIABLE_SEQUENCED, 5, now, 0, &grew),
			 0);
	assert_int_equal(rudp_conn_send_checked(c, msg, 40, RUDP_WIRE_RELIABLE, 7, now, 0, &grew), 0);
	assert_int_equal(c->rel.frames_count, base + 4);
	f = sendq_at(&c->rel, base + 1);
	assert_int_equal(f->reliable_index, ri + 1);
	assert_int_equal(f->reliability, RUDP_WIRE_RELIABLE_ORDERED);
	assert_int_equal(f->channel, 5);
	assert_int_equal(f->order_index, 1);
	assert_int_equal(f->sequenced_index, 0);
	assert_int_equal(f->body_len, 20);
	assert_int_equal(f->body_pos, sendq_at(&c->rel, base)->body_pos + 10);
	assert_int_equal(f->hdr_len, 10);
	assert_int_equal(f->first_send_us, now);
	assert_int_equal(f->state, FRAME_QUEUED);
	assert_int_equal(f->deadline_us, 0);
	assert_int_equal(f->transmissions, 0);
	assert_false(f->split);
	assert_null(sendq_frame_shared(f));
	assert_int_equal(f->split_id, 0);
	assert_memory_equal(sendq_body(&c->rel, f), msg, 20);
	f = sendq_at(&c->rel, base + 2);
	assert_int_equal(f->order_index, 2); /* the next ordered one's */
	assert_int_equal(f->sequenced_index, 0);
	assert_int_equal(f->hdr_len, 13);
	f = sendq_at(&c->rel, base + 3);
	assert_int_equal(f->channel, 0);
	assert_int_equal(f->order_index, 0);
	assert_int_equal(f->hdr_len, 6);
	assert_int_equal(c->rel_unsent_wire, unsent + 100 + 10 + 10 + 13 + 6);
	assert_int_equal(c->rel.wire_bytes, wire + 100 + 10 + 10 + 13 + 6);
	/* Unreliable with a lifetime, on a channel it does not use. */
	assert_int_equal(rudp_conn_send_checked(c, msg, 50, RUDP_WIRE_UNRELIABLE, 9, now, now + 5000, &grew),
			 0);
	f = sendq_at(&c->unrel, c->unrel.frames_count - 1);
	assert_int_equal(f->deadline_us, now + 5000);
	assert_int_equal(c->unrel_expiry_min, now + 5000);
	assert_int_equal(f->reliable_index, 0);
	assert_int_equal(f->channel, 0);
	assert_int_equal(f->hdr_len, 3);
	assert_int_equal(c->rel_unsent_wire, unsent + 100 + 39);
	sim_free(a);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_send_expiring),
		cmocka_unit_test(test_one_frame_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
