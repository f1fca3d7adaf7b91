/* SPDX-License-Identifier: MIT */
/*
 * rudp_conn_send_shared_prepared against rudp_conn_send_shared: two conns
 * in the same state (the same simulated run twice) are given the same
 * sends, one way each; every result, every queued frame record and the
 * conn's send counters must come out the same, for each reliability kind,
 * channels, lifetimes, a message that must be split, a full queue, a
 * message over max_message_size and a conn that is not connected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/shared_body.h"
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

/* The pools of a's and b's bodies: they must outlive the conns, which
 * give their references back when destroyed. */
static struct shared_body_pool pa, pb;

/* One send each way, same arguments; the results must match, and are
 * returned. */
static int send_both(struct sim *a, struct sim *b, uint32_t len, uint8_t rel, uint8_t ch, uint64_t expire_us,
		     uint64_t now_us)
{
	uint8_t *buf = malloc(len);
	struct rudp_conn_shared_send m;

	assert_non_null(buf);
	sim_make_message(buf, len, rel, ch, (uint32_t)a->ep[0].c->messages_sent);
	struct shared_body *ba = shared_body_new(&pa, buf, len);
	struct shared_body *bb = shared_body_new(&pb, buf, len);
	assert_non_null(ba);
	assert_non_null(bb);
	int ra = rudp_conn_send_shared(a->ep[0].c, ba, rel, ch, RUDP_CONN_PRIO_MEDIUM, now_us, expire_us);
	int rb = rudp_conn_shared_send_init(&m, bb, rel, ch, RUDP_CONN_PRIO_MEDIUM, now_us, expire_us);
	assert_int_equal(rb, 0);
	uint64_t before = rudp_conn_memory_bytes(b->ep[0].c), grew = 0;
	rb = rudp_conn_send_shared_prepared(b->ep[0].c, &m, &grew);
	assert_int_equal(ra, rb);
	if (rb == 0)
		assert_int_equal(grew, rudp_conn_memory_bytes(b->ep[0].c) - before);
	same_conn(a->ep[0].c, b->ep[0].c);
	/* The queues hold their own references (a split message: none). */
	shared_body_release(ba);
	shared_body_release(bb);
	free(buf);
	return ra;
}

static void test_same_as_send_shared(void **state)
{
	static const uint8_t kinds[] = {RUDP_WIRE_UNRELIABLE,         RUDP_WIRE_UNRELIABLE_SEQUENCED,
					RUDP_WIRE_RELIABLE,           RUDP_WIRE_RELIABLE_ORDERED,
					RUDP_WIRE_RELIABLE_SEQUENCED, RUDP_WIRE_RELIABLE_ORDERED_ACK_RECEIPT};
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
			/* Split: copied, the general path. */
			assert_int_equal(send_both(a, b, ca->frag_body_max + 1, kinds[k], ch, 0, now), 0);
		}
	}
	/* Over max_message_size, yet in one frame. A conn's cfg is set when
	 * it is made: changed here, the send path's copies are taken again. */
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
	/* Not connected. */
	rudp_conn_disconnect(ca, now);
	rudp_conn_disconnect(cb, now);
	assert_int_equal(send_both(a, b, 50, RUDP_WIRE_RELIABLE, 0, 0, now), RUDP_CONN_E_STATE);
	/* Unlike rudp_conn_send_shared, it leaves such a conn's clock alone
	 * (as rudp_send_many always did: it did not call the conn then). */
	uint8_t msg[50] = {0x86};
	struct shared_body *body = shared_body_new(&pb, msg, sizeof(msg));
	struct rudp_conn_shared_send m;
	assert_int_equal(rudp_conn_shared_send_init(&m, body, RUDP_WIRE_RELIABLE, 0, 1, now + 1, 0), 0);
	uint64_t grew;
	assert_int_equal(rudp_conn_send_shared_prepared(cb, &m, &grew), RUDP_CONN_E_STATE);
	assert_int_equal(cb->now_us, now);
	shared_body_release(body);
	sim_free(a);
	sim_free(b);
	free(a);
	free(b);
	assert_int_equal(pa.live, 0);
	assert_int_equal(pb.live, 0);
	shared_body_pool_destroy(&pa);
	shared_body_pool_destroy(&pb);
}

/* init refuses what rudp_conn_send_shared refuses as arguments. */
static void test_init_checks_arguments(void **state)
{
	struct shared_body_pool pool = {0};
	struct rudp_conn_shared_send m;
	uint8_t ok[8] = {0x86}, control[8] = {0x10};
	struct shared_body *b = shared_body_new(&pool, ok, sizeof(ok));
	struct shared_body *bc = shared_body_new(&pool, control, sizeof(control));

	(void)state;
	assert_int_equal(rudp_conn_shared_send_init(&m, b, RUDP_WIRE_RELIABLE_ORDERED, 3, 1, 0, 0), 0);
	assert_int_equal(m.channel, 3);
	assert_int_equal(m.len, sizeof(ok));
	assert_int_equal(rudp_conn_shared_send_init(&m, b, RUDP_WIRE_RELIABLE, 3, 1, 0, 0), 0);
	assert_int_equal(m.channel, 0);
	assert_int_equal(rudp_conn_shared_send_init(&m, NULL, RUDP_WIRE_RELIABLE, 0, 1, 0, 0),
			 RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_shared_send_init(&m, bc, RUDP_WIRE_RELIABLE, 0, 1, 0, 0), RUDP_CONN_E_ARG);
	assert_int_equal(
		rudp_conn_shared_send_init(&m, b, RUDP_WIRE_RELIABLE_ORDERED_ACK_RECEIPT + 1, 0, 1, 0, 0),
		RUDP_CONN_E_ARG);
	assert_int_equal(
		rudp_conn_shared_send_init(&m, b, RUDP_WIRE_RELIABLE_ORDERED, CONN_CHANNELS, 1, 0, 0),
		RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_shared_send_init(&m, b, RUDP_WIRE_RELIABLE, 0, RUDP_CONN_PRIORITIES, 0, 0),
			 RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_shared_send_init(&m, b, RUDP_WIRE_RELIABLE, 0, 1, 0, 5), RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_shared_send_init(&m, b, RUDP_WIRE_UNRELIABLE, 0, 1, 0, 5), 0);
	shared_body_release(b);
	shared_body_release(bc);
	shared_body_pool_destroy(&pool);
}

/* A conn and its two queues start on cache lines, whatever malloc gives
 * (conn_internal.h lays the send fields out by line), and its send
 * path's limits come from its config: a message over max_message_size,
 * though it fits one frame, is refused by the path as by the general one. */
static void test_conn_on_lines(void **state)
{
	struct rudp_conn_config cfg;

	(void)state;
	rudp_conn_config_init(&cfg);
	cfg.max_message_size = 100;
	cfg.max_queue_bytes = 5000;
	for (int i = 0; i < 8; i++) {
		struct sim *s = malloc(sizeof(*s));

		assert_non_null(s);
		sim_init(s, (uint64_t)i, &cfg, &clean_link);
		s->ep[0].work.count = 0;
		s->ep[1].work.count = 0;
		sim_start(s);
		for (int e = 0; e < 2; e++) {
			const struct rudp_conn *c = s->ep[e].c;

			assert_int_equal((uintptr_t)c % 64, 0);
			assert_int_equal((uintptr_t)&c->state % 64, 0);
			assert_int_equal((uintptr_t)&c->rel % 64, 0);
			assert_int_equal((uintptr_t)&c->unrel % 64, 0);
			assert_int_equal(c->one_frame_max, 100);
			assert_int_equal(c->queue_max_bytes, 5000);
		}
		sim_delete(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_send_shared),
		cmocka_unit_test(test_init_checks_arguments),
		cmocka_unit_test(test_conn_on_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
