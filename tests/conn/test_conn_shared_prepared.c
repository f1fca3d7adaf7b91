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
#include "conn_compare.h"

#define MS 1000ull

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
	compare_same_conn(a->ep[0].c, b->ep[0].c);
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
	struct sim *a = compare_connected_sim(), *b = compare_connected_sim();
	struct rudp_conn *cb = b->ep[0].c;

	(void)state;
	/* Split messages are copied: the general path. */
	uint64_t now = compare_common_sends(a, b, kinds, sizeof(kinds), 2, send_both);
	/* Not connected. */
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
		sim_init(s, (uint64_t)i, &cfg, &compare_clean_link);
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
