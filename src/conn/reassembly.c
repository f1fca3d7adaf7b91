/* SPDX-License-Identifier: MIT */
/*
 * Split messages: fragments in, whole messages out, within fixed limits.
 *
 * A split set gets one buffer of split_count * stride bytes, where stride is
 * the largest fragment body a peer can fit in a datagram at this MTU, so each
 * fragment lands at index * stride whatever order it comes in; the (usually
 * shorter) last fragment and any short middle ones are closed up with one pass
 * of memmove at the end. The whole split_count * stride is reserved against
 * max_reassembly_bytes at the first fragment, so a peer cannot declare a small
 * set and grow it later.
 *
 * A set whose declared size can never fit is refused: its fragments are
 * dropped and counted, its split id is remembered for a while so its other
 * fragments do not open a new slot, and if it was ordered, its order index is
 * skipped so the channel keeps flowing. A reliable set that could fit but not
 * right now (slots or bytes in use, or no memory for its buffer) is
 * deferred: its fragment is not acknowledged and the peer sends it again
 * later.
 */
#include <stdlib.h>
#include <string.h>

#include "conn/reassembly.h"

/* Smallest split frame header: flags, bit length, split fields (unreliable). */
#define REASM_MIN_SPLIT_HEADER 13u
/* Buffers up to this size are kept for the next split message. */
#define REASM_CACHE_MAX (256u * 1024u)

int reasm_init(struct reassembly *r, uint32_t payload_max, const struct reasm_limits *lim)
{
	/* The slots come with the first split message (reasm_free_slot): most
	 * connections never receive one, and max_split_ids slots cost about
	 * 1.8 KiB each of them. */
	memset(r, 0, sizeof(*r));
	r->stride = payload_max - RUDP_WIRE_DGRAM_HEADER_LEN - REASM_MIN_SPLIT_HEADER;
	r->lim = *lim;
	return 0;
}

void reasm_free(struct reassembly *r)
{
	for (uint32_t i = 0; i < r->nslots; i++)
		free(r->slots[i].buf);
	free(r->slots);
	free(r->cached_buf);
	memset(r, 0, sizeof(*r));
}

static struct reasm_slot *reasm_find(const struct reassembly *r, uint16_t split_id)
{
	for (uint32_t i = 0; i < r->nslots; i++) {
		if (r->slots[i].used && r->slots[i].split_id == split_id)
			return &r->slots[i];
	}
	return NULL;
}

/* NULL when every slot is taken, or when the slots cannot be made (out of
 * memory): either way the fragment waits, unacknowledged, for a resend. */
static struct reasm_slot *reasm_free_slot(struct reassembly *r)
{
	if (!r->slots) {
		r->slots = calloc(r->lim.max_split_ids, sizeof(*r->slots));
		if (!r->slots)
			return NULL;
		r->nslots = r->lim.max_split_ids;
	}
	for (uint32_t i = 0; i < r->nslots; i++) {
		if (!r->slots[i].used)
			return &r->slots[i];
	}
	return NULL;
}

/*
 * An unreliable split message may never complete: a lost fragment is not
 * sent again. When its slot or its bytes are wanted, the oldest such set is
 * given up (counted as dropped) rather than leaving every later split
 * message deferred for good, reliable ones included, which would stall
 * their channel. RakNet peers and librudp send split messages reliably, so
 * this only matters with peers that do not.
 */
static void reasm_drop_unreliable(struct reassembly *r, uint64_t need)
{
	while (r->slots) {
		struct reasm_slot *oldest = NULL;
		bool slot_free = false;

		for (uint32_t i = 0; i < r->nslots; i++) {
			struct reasm_slot *s = &r->slots[i];

			if (!s->used)
				slot_free = true;
			else if (!rudp_wire_is_reliable(s->reliability) &&
				 (!oldest || s->started_us < oldest->started_us))
				oldest = s;
		}
		if ((slot_free && r->reserved_bytes + need <= r->lim.max_bytes) || !oldest)
			return;
		r->frames_dropped++;
		reasm_release(r, oldest);
	}
}

/* A free slot, with room for need more bytes: made by giving up stale
 * unreliable sets when needed. NULL when there is none. */
static struct reasm_slot *reasm_room(struct reassembly *r, uint64_t need)
{
	struct reasm_slot *s = reasm_free_slot(r);

	if (!s || r->reserved_bytes + need > r->lim.max_bytes) {
		reasm_drop_unreliable(r, need);
		s = reasm_free_slot(r);
	}
	return s && r->reserved_bytes + need <= r->lim.max_bytes ? s : NULL;
}

static bool reasm_never_fits(const struct reassembly *r, const struct rudp_wire_frame *f)
{
	return f->split_count > r->lim.max_split_count || reasm_need(r, f->split_count) > r->lim.max_bytes;
}

/* Refused split ids are forgotten after timeout_us without a fragment: ids
 * are only 16 bits and come round again. */
static bool reasm_is_refused(struct reassembly *r, const struct rudp_wire_frame *f, uint64_t now_us)
{
	for (uint32_t i = 0; i < REASM_REFUSED_MEMORY; i++) {
		struct reasm_refused *x = &r->refused[i];

		if (x->count != 0 && x->split_id == f->split_id && x->count == f->split_count &&
		    now_us - x->last_us < r->lim.refused_memory_us) {
			x->last_us = now_us;
			return true;
		}
	}
	return false;
}

/* REASM_SKIP_ORDER (with *skip) when the refused set was ordered. */
static enum reasm_result reasm_refuse(struct reassembly *r, const struct rudp_wire_frame *f, uint64_t now_us,
				      struct reasm_skip *skip)
{
	struct reasm_refused *x = &r->refused[r->refused_next];

	r->refused_next = (r->refused_next + 1) % REASM_REFUSED_MEMORY;
	x->split_id = f->split_id;
	x->count = f->split_count;
	x->last_us = now_us;
	r->frames_dropped++;
	if (f->reliability != RUDP_WIRE_RELIABLE_ORDERED)
		return REASM_INCOMPLETE;
	skip->channel = f->order_channel;
	skip->order_index = f->order_index;
	return REASM_SKIP_ORDER;
}

/* A split set's buffer: its fragments at index * stride, then their lengths. */
static size_t reasm_buf_cap(const struct reassembly *r, uint32_t count)
{
	return (size_t)reasm_need(r, count) + (size_t)count * sizeof(uint16_t);
}

enum reasm_result reasm_admit(struct reassembly *r, const struct rudp_wire_frame *f)
{
	size_t cap;

	if (!rudp_wire_is_reliable(f->reliability) || reasm_find(r, f->split_id) || reasm_never_fits(r, f))
		return REASM_INCOMPLETE;
	if (!reasm_room(r, reasm_need(r, f->split_count)))
		return REASM_DEFER;
	/* The buffer is made now, as the cached one reasm_open takes: once the
	 * frame counts as received, failing to make it would refuse the set
	 * (and skip its order index), losing a reliable message for want of
	 * memory. Deferred, the fragment comes again. */
	cap = reasm_buf_cap(r, f->split_count);
	if (!r->cached_buf || r->cached_cap < cap) {
		uint8_t *buf = malloc(cap);

		if (!buf)
			return REASM_DEFER;
		free(r->cached_buf);
		r->cached_buf = buf;
		r->cached_cap = cap;
	}
	return REASM_INCOMPLETE;
}

static struct reasm_slot *reasm_open(struct reassembly *r, const struct rudp_wire_frame *f, uint64_t now_us,
				     bool early)
{
	uint64_t need = reasm_need(r, f->split_count);
	size_t cap = reasm_buf_cap(r, f->split_count);
	struct reasm_slot *s = reasm_room(r, need);

	if (!s)
		return NULL;
	if (r->cached_buf && r->cached_cap >= cap) {
		s->buf = r->cached_buf;
		s->buf_cap = r->cached_cap;
		r->cached_buf = NULL;
		r->cached_cap = 0;
	} else {
		s->buf = malloc(cap);
		s->buf_cap = cap;
		if (!s->buf)
			return NULL;
	}
	memset(s->buf + need, 0, (size_t)f->split_count * sizeof(uint16_t));
	s->used = true;
	s->split_id = f->split_id;
	s->reliability = f->reliability;
	s->channel = f->order_channel;
	s->count = f->split_count;
	s->received = 0;
	s->order_index = f->order_index;
	s->sequenced_index = f->sequenced_index;
	s->reserved = need;
	s->started_us = now_us;
	s->early = early;
	r->reserved_bytes += need;
	return s;
}

bool reasm_may_end_set(const struct reassembly *r, const struct rudp_wire_frame *f, uint64_t *bytes)
{
	const struct reasm_slot *s = reasm_find(r, f->split_id);

	*bytes = 0;
	if (s && s->received + 1 < s->count)
		return false;
	/* The last fragment of an open set, a set of one, or a first
	 * fragment that may be refused (which passes its order index over). */
	if (s || f->split_count <= 1)
		*bytes = reasm_need(r, s ? s->count : 1);
	return true;
}

bool reasm_is_open(const struct reassembly *r, uint16_t split_id)
{
	return reasm_find(r, split_id) != NULL;
}

void reasm_early_reserved(const struct reassembly *r, uint32_t *msgs, uint64_t *bytes)
{
	*msgs = 0;
	*bytes = 0;
	for (uint32_t i = 0; i < r->nslots; i++) {
		if (r->slots[i].used && r->slots[i].early) {
			(*msgs)++;
			*bytes += r->slots[i].reserved;
		}
	}
}

void reasm_release(struct reassembly *r, struct reasm_slot *s)
{
	r->reserved_bytes -= s->reserved;
	if (s->buf_cap <= REASM_CACHE_MAX && s->buf_cap > r->cached_cap) {
		free(r->cached_buf);
		r->cached_buf = s->buf;
		r->cached_cap = s->buf_cap;
	} else {
		free(s->buf);
	}
	memset(s, 0, sizeof(*s));
}

/* The fragment length table sits after the data area, at an offset that may
 * be odd: go through memcpy rather than a uint16_t pointer. 0 = not received. */
static uint16_t lens_get(const struct reasm_slot *s, uint64_t data_bytes, uint32_t i)
{
	uint16_t v;

	memcpy(&v, s->buf + data_bytes + (size_t)i * sizeof(v), sizeof(v));
	return v;
}

static void lens_set(struct reasm_slot *s, uint64_t data_bytes, uint32_t i, uint16_t v)
{
	memcpy(s->buf + data_bytes + (size_t)i * sizeof(v), &v, sizeof(v));
}

enum reasm_result reasm_on_fragment(struct reassembly *r, const struct rudp_wire_frame *f, uint64_t now_us,
				    bool early, struct reasm_slot **slot_out, size_t *len_out,
				    struct reasm_skip *skip_out)
{
	struct reasm_slot *s = reasm_find(r, f->split_id);
	uint64_t total = 0;

	if (!s) {
		if (reasm_is_refused(r, f, now_us)) {
			r->frames_dropped++;
			return REASM_INCOMPLETE;
		}
		if (reasm_never_fits(r, f) || !(s = reasm_open(r, f, now_us, early)))
			return reasm_refuse(r, f, now_us, skip_out);
	}
	if (f->split_count != s->count || f->split_index >= s->count || f->reliability != s->reliability ||
	    f->body_len > r->stride || lens_get(s, s->reserved, f->split_index) != 0) {
		r->frames_dropped++;
		return REASM_INCOMPLETE;
	}
	memcpy(s->buf + (size_t)f->split_index * r->stride, f->body, f->body_len);
	lens_set(s, s->reserved, f->split_index, f->body_len);
	s->received++;
	if (s->received < s->count)
		return REASM_INCOMPLETE;

	for (uint32_t i = 0; i < s->count; i++) {
		uint16_t len = lens_get(s, s->reserved, i);
		size_t from = (size_t)i * r->stride;

		if (total != from)
			memmove(s->buf + total, s->buf + from, len);
		total += len;
	}
	if (total > r->lim.max_message_size) {
		r->frames_dropped++;
		if (s->reliability != RUDP_WIRE_RELIABLE_ORDERED) {
			reasm_release(r, s);
			return REASM_INCOMPLETE;
		}
		/* Released by the caller once the index is passed over. */
		skip_out->channel = s->channel;
		skip_out->order_index = s->order_index;
		*slot_out = s;
		return REASM_SKIP_ORDER;
	}
	*slot_out = s;
	*len_out = (size_t)total;
	return REASM_COMPLETE;
}
