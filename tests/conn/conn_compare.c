/* SPDX-License-Identifier: MIT */
/*
 * Two conns compared record by record (conn_compare.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "conn_compare.h"

#define MS 1000ull
#define SEC 1000000ull

const struct sim_link compare_clean_link = {.delay_us = 10 * MS};

struct sim *compare_connected_sim(void)
{
	struct rudp_conn_config cfg;
	struct sim *s = malloc(sizeof(*s));

	assert_non_null(s);
	rudp_conn_config_init(&cfg);
	sim_init(s, 42, &cfg, &compare_clean_link);
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

void compare_same_conn(const struct rudp_conn *a, const struct rudp_conn *b)
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

uint64_t compare_common_sends(struct sim *a, struct sim *b, const uint8_t *kinds, size_t n,
			      uint32_t max_fragments, compare_send_fn send_both)
{
	struct rudp_conn *ca = a->ep[0].c, *cb = b->ep[0].c;
	uint64_t now = a->now;

	compare_same_conn(ca, cb);
	for (int round = 0; round < 3; round++) {
		for (size_t k = 0; k < n; k++) {
			uint8_t ch = (uint8_t)((k * 7 + (size_t)round) % CONN_CHANNELS);
			bool unrel = kinds[k] == RUDP_WIRE_UNRELIABLE ||
				     kinds[k] == RUDP_WIRE_UNRELIABLE_SEQUENCED;

			now += 100;
			assert_int_equal(send_both(a, b, 200, kinds[k], ch, unrel ? now + 50 * MS : 0, now),
					 0);
			/* An earlier clock than the conn's: it keeps its own. */
			assert_int_equal(send_both(a, b, 120, kinds[k], ch, 0, now - 50), 0);
			for (uint32_t f = 2; f <= max_fragments; f++)
				assert_int_equal(send_both(a, b, (f - 1) * ca->frag_body_max + f - 1,
							   kinds[k], ch, 0, now),
						 0);
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
	rudp_conn_disconnect(ca, now);
	rudp_conn_disconnect(cb, now);
	return now;
}
