/* SPDX-License-Identifier: MIT */
/*
 * The sent history's storage: which reliable frames each datagram carried
 * and when it went, in slots by datagram seq, grown by doubling, and the
 * note that a slot was given up while it still waited. The loss and RTT
 * engine (loss.c) owns struct sent_history and fills and reads it; this
 * file calls no other file of src/conn.
 */
#include <stdlib.h>
#include <string.h>

#include "conn/conn.h"
#include "conn/loss.h"

/* The history gives up seq's slot while it still waits for its ACK: the
 * frames whose latest copy went in it are matched by last_dgram_seq alone
 * from now on (sent_history.untracked). */
void sent_history_note_untracked(struct sent_history *h, uint32_t seq)
{
	if (!h->untracked || rudp_u24_diff(seq, h->untracked_seq) > 0)
		h->untracked_seq = seq;
	h->untracked = true;
}

int sent_history_resize(struct sent_history *h, uint32_t size)
{
	uint32_t *tag = calloc(size, sizeof(*tag));
	uint32_t *first = malloc(size * sizeof(*first));
	uint8_t *count = malloc(size * sizeof(*count));
	/* Zeroed: probe_ack_delay reads the slot before a datagram's, which
	 * may never have been written (0 reads as long before: no delay). */
	uint32_t *sent_us = calloc(size, sizeof(*sent_us));
	uint32_t *ring = calloc(size, sizeof(*ring));

	if (!tag || !first || !count || !sent_us || !ring) {
		free(tag);
		free(first);
		free(count);
		free(sent_us);
		free(ring);
		return RUDP_CONN_E_NOMEM;
	}
	/* Slots move to their seq's place in the larger table, unless part of
	 * their run was overwritten already (not copied below: it would read
	 * as valid in the larger ring). */
	uint32_t valid = 0;
	for (uint32_t i = 0; i < h->size; i++) {
		uint32_t seq = h->tag[i] & ~SENT_HISTORY_VALID;
		uint32_t j = seq & (size - 1);

		if (!(h->tag[i] & SENT_HISTORY_VALID))
			continue;
		if (h->ring_head - h->first[i] > h->size) {
			sent_history_note_untracked(h, h->tag[i] & RUDP_WIRE_U24_MASK);
			continue;
		}
		valid++;
		tag[j] = h->tag[i];
		first[j] = h->first[i];
		count[j] = h->count[i];
		sent_us[j] = h->sent_us[i];
	}
	/* All of the old ring (zeros where never written), positions taken
	 * modulo 2^32 like ring_head: after ring_head wraps, the newest
	 * entries sit at the top of the position space. */
	for (uint32_t k = 0; k < h->size; k++) {
		uint32_t pos = h->ring_head - 1 - k;

		ring[pos & (size - 1)] = h->ring[pos & (h->size - 1)];
	}
	free(h->tag);
	free(h->first);
	free(h->count);
	free(h->sent_us);
	free(h->ring);
	h->tag = tag;
	h->first = first;
	h->count = count;
	h->sent_us = sent_us;
	h->ring = ring;
	h->size = size;
	h->valid = valid;
	return 0;
}

/* Whether a slot still says something an ACK could use: it waits for its
 * datagram's ACK and one of the reliable frames it carried is still
 * unacknowledged. A lost datagram whose frames were since acknowledged
 * through other copies is never acked itself, so its slot stays valid for
 * ever; taking that for "loss outran the history" grew every connection
 * that saw any loss to four windows (3.3 KiB) for no match it could make. */
bool sent_history_slot_in_use(const struct sent_history *h, const struct sendq *rel, uint32_t rel_sent,
			      uint32_t slot)
{
	uint32_t oldest;

	if (!(h->tag[slot] & SENT_HISTORY_VALID) || rel_sent == 0)
		return false;
	oldest = sendq_at(rel, 0)->reliable_index;
	for (uint32_t j = 0; j < h->count[slot]; j++) {
		uint32_t pos = h->first[slot] + j;
		int32_t i;
		const struct sendq_frame *f;

		if (h->ring_head - pos > h->size)
			continue; /* overwritten: matched by last_dgram_seq alone */
		i = rudp_u24_diff(h->ring[pos & (h->size - 1)], oldest);
		if (i < 0 || (uint32_t)i >= rel_sent)
			continue; /* acknowledged and released */
		f = sendq_at(rel, (uint32_t)i);
		if (f->state == FRAME_IN_FLIGHT || f->state == FRAME_NACKED)
			return true;
	}
	return false;
}
