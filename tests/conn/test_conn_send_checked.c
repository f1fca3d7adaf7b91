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

#include "conn_compare.h"

#define MS 1000ull

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
	compare_same_conn(a->ep[0].c, b->ep[0].c);
	free(buf);
	return ra;
}

static void test_same_as_send_expiring(void **state)
{
	static const uint8_t kinds[] = {RUDP_WIRE_UNRELIABLE, RUDP_WIRE_UNRELIABLE_SEQUENCED,
					RUDP_WIRE_RELIABLE, RUDP_WIRE_RELIABLE_ORDERED,
					RUDP_WIRE_RELIABLE_SEQUENCED};
	struct sim *a = compare_connected_sim(), *b = compare_connected_sim();
	struct rudp_conn *cb = b->ep[0].c;

	(void)state;
	uint64_t now = compare_common_sends(a, b, kinds, sizeof(kinds), 3, send_both);
	/* Not connected: refused, the clock advanced all the same. */
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
	struct sim *a = compare_connected_sim();
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
