/* SPDX-License-Identifier: MIT */
/*
 * Reassembly of split messages: fragments in, whole messages out, within
 * fixed limits. A part of the conn (conn_internal.h): it owns struct
 * reassembly and calls no other part; the conn passes the verdicts on
 * (a refused ordered set's order index to the ordering, drops to stats).
 */
#ifndef RUDP_CONN_REASSEMBLY_H
#define RUDP_CONN_REASSEMBLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

struct reasm_slot {
	bool used;
	uint16_t split_id;
	uint8_t reliability;
	uint8_t channel;
	uint32_t count;
	uint32_t received;
	uint32_t order_index;
	uint32_t sequenced_index;
	uint64_t reserved; /* bytes counted against max_bytes */
	uint64_t started_us;
	/* Opened by a connecting client: the whole message's room among the
	 * early messages was set aside then (conn_reserve_early). */
	bool early;
	uint8_t *buf; /* count * stride bytes, then count uint16 fragment lengths */
	size_t buf_cap;
};

struct reasm_refused {
	uint16_t split_id;
	uint32_t count;
	uint64_t last_us;
};

#define REASM_REFUSED_MEMORY 16

/* The limits, from the conn's config (struct rudp_conn_config). */
struct reasm_limits {
	uint32_t max_split_ids; /* slots */
	uint32_t max_split_count;
	uint32_t max_bytes; /* max_reassembly_bytes */
	uint32_t max_message_size;
	uint64_t refused_memory_us; /* how long a refused split id is remembered */
};

struct reassembly {
	struct reasm_slot *slots;
	uint32_t nslots;
	uint32_t stride; /* largest fragment body a peer can send at this MTU */
	uint64_t reserved_bytes;
	struct reasm_refused refused[REASM_REFUSED_MEMORY];
	uint32_t refused_next;
	uint8_t *cached_buf; /* one freed buffer kept for the next split message */
	size_t cached_cap;
	struct reasm_limits lim;
	uint64_t frames_dropped; /* fragments dropped as bad or refused (the conn's stats add them) */
};

enum reasm_result {
	REASM_INCOMPLETE, /* stored, or dropped as bad (counted) */
	REASM_COMPLETE, /* *slot_out holds the whole message */
	REASM_DEFER, /* no room right now: do not mark the frame received */
	/* Refused or dropped whole, and reliable ordered: its order index
	 * (*skip_out) must be passed over so the channel keeps flowing. */
	REASM_SKIP_ORDER,
};

/* Where a refused ordered set sat in its channel (REASM_SKIP_ORDER). */
struct reasm_skip {
	uint8_t channel;
	uint32_t order_index;
};

/* payload_max: UDP payload bytes per datagram. Makes nothing yet (the slots
 * come with the first split message); returns 0. */
int reasm_init(struct reassembly *r, uint32_t payload_max, const struct reasm_limits *lim);
void reasm_free(struct reassembly *r);
/* Admission check before the frame is marked received: REASM_DEFER when the
 * split set is acceptable but does not fit now, else REASM_INCOMPLETE. */
enum reasm_result reasm_admit(struct reassembly *r, const struct rudp_wire_frame *f);
/* Stores fragment f. early: a set it opens is a connecting client's early
 * message (struct reasm_slot.early). REASM_COMPLETE: *slot_out, *len_out
 * give the message, to release with reasm_release; REASM_SKIP_ORDER:
 * *skip_out says which order index to pass over, and *slot_out, when it
 * is set (not NULL), is a dropped set to release after that;
 * REASM_INCOMPLETE. *slot_out is only written for these two. */
enum reasm_result reasm_on_fragment(struct reassembly *r, const struct rudp_wire_frame *f, uint64_t now_us,
				    bool early, struct reasm_slot **slot_out, size_t *len_out,
				    struct reasm_skip *skip_out);
/* Frees the slot, and its buffer unless that is kept for the next set or
 * was handed over (buf NULL, buf_cap 0). */
void reasm_release(struct reassembly *r, struct reasm_slot *s);
/* Whether fragment f may end its set now: complete it (*bytes: at most
 * the message's size), or be the first of a set that may be refused
 * (*bytes 0), which passes its order index over. False: f only adds to
 * an open set. */
bool reasm_may_end_set(const struct reassembly *r, const struct rudp_wire_frame *f, uint64_t *bytes);
/* Whether a set with this split id is being reassembled. */
bool reasm_is_open(const struct reassembly *r, uint16_t split_id);
/* Messages and bytes set aside among the early messages by the slots
 * opened while connecting (struct reasm_slot.early). */
void reasm_early_reserved(const struct reassembly *r, uint32_t *msgs, uint64_t *bytes);
/* Upper bound of the bytes of a set of count fragments. */
static inline uint64_t reasm_need(const struct reassembly *r, uint32_t count)
{
	return (uint64_t)count * r->stride;
}

#endif
