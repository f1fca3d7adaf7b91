/* SPDX-License-Identifier: MIT */
/*
 * Bounds-checked cursors shared by the wire codecs (internal, not installed).
 *
 * The reader is sticky: once a read would run past n it sets short_read,
 * returns zeros and never touches memory again, so a decoder can read a whole
 * fixed layout and check once. The writer does the same against cap, so an
 * encoder cannot write past the caller's buffer whatever its inputs are.
 */
#ifndef RUDP_WIRE_CODEC_H
#define RUDP_WIRE_CODEC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire.h"

struct wire_reader {
	const uint8_t *p;
	size_t n;
	size_t off;
	bool short_read;
};

static inline struct wire_reader rd_init(const uint8_t *p, size_t n)
{
	struct wire_reader r = {.p = p, .n = p ? n : 0, .off = 0, .short_read = false};
	return r;
}

static inline size_t rd_left(const struct wire_reader *r)
{
	return r->n - r->off;
}

static inline bool rd_need(struct wire_reader *r, size_t k)
{
	if (r->short_read || rd_left(r) < k) {
		r->short_read = true;
		return false;
	}
	return true;
}

/* Returns a pointer to the next k bytes and consumes them, or NULL. */
static inline const uint8_t *rd_take(struct wire_reader *r, size_t k)
{
	const uint8_t *q;

	if (!rd_need(r, k))
		return NULL;
	q = r->p + r->off;
	r->off += k;
	return q;
}

static inline uint8_t rd_u8(struct wire_reader *r)
{
	const uint8_t *q = rd_take(r, 1);
	return q ? q[0] : 0;
}

/* RakNet bools are a whole byte; accept any non-zero as true because RakNet's
 * own bit-packed bools arrive as 0x80, everyone else's as 0x01. */
static inline bool rd_bool(struct wire_reader *r)
{
	return rd_u8(r) != 0;
}

static inline uint16_t rd_u16be(struct wire_reader *r)
{
	const uint8_t *q = rd_take(r, 2);
	return q ? (uint16_t)((q[0] << 8) | q[1]) : 0;
}

static inline uint16_t rd_u16le(struct wire_reader *r)
{
	const uint8_t *q = rd_take(r, 2);
	return q ? (uint16_t)(q[0] | (q[1] << 8)) : 0;
}

static inline uint32_t rd_u24le(struct wire_reader *r)
{
	const uint8_t *q = rd_take(r, 3);
	return q ? (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16) : 0;
}

static inline uint32_t rd_u32be(struct wire_reader *r)
{
	const uint8_t *q = rd_take(r, 4);
	return q ? ((uint32_t)q[0] << 24) | ((uint32_t)q[1] << 16) | ((uint32_t)q[2] << 8) | q[3] : 0;
}

static inline uint64_t rd_u64be(struct wire_reader *r)
{
	const uint8_t *q = rd_take(r, 8);
	uint64_t v = 0;

	if (!q)
		return 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | q[i];
	return v;
}

static inline int64_t rd_i64(struct wire_reader *r)
{
	return (int64_t)rd_u64be(r);
}

/* 0 when the magic is there, else TRUNCATED or BAD_MAGIC. */
static inline int rd_magic(struct wire_reader *r)
{
	const uint8_t *q = rd_take(r, RUDP_WIRE_MAGIC_LEN);

	if (!q)
		return RUDP_WIRE_TRUNCATED;
	return memcmp(q, rudp_wire_magic, RUDP_WIRE_MAGIC_LEN) ? RUDP_WIRE_BAD_MAGIC : 0;
}

/* Decodes an address from the rest of the input, leaving `reserve` bytes
 * untouched (used where a fixed tail follows a variable-length list). */
static inline int rd_addr(struct wire_reader *r, size_t reserve, struct rudp_wire_addr *a)
{
	int len;

	if (r->short_read || !r->p || rd_left(r) < reserve) {
		r->short_read = true;
		return RUDP_WIRE_TRUNCATED;
	}
	len = rudp_wire_decode_addr(r->p + r->off, rd_left(r) - reserve, a);
	if (len < 0)
		return len;
	r->off += (size_t)len;
	return 0;
}

/* The success value of a decoder: bytes parsed (trailing bytes not counted). */
static inline int rd_done(const struct wire_reader *r)
{
	if (r->short_read)
		return RUDP_WIRE_TRUNCATED;
	if (r->off > INT_MAX)
		return RUDP_WIRE_BAD_VALUE;
	return (int)r->off;
}

struct wire_writer {
	uint8_t *p;
	size_t cap;
	size_t off;
	bool overflow;
};

static inline struct wire_writer wr_init(uint8_t *p, size_t cap)
{
	struct wire_writer w = {.p = p, .cap = p ? cap : 0, .off = 0, .overflow = false};
	return w;
}

/* Reserves k bytes and returns where to put them, or NULL. */
static inline uint8_t *wr_take(struct wire_writer *w, size_t k)
{
	uint8_t *q;

	if (w->overflow || w->cap - w->off < k) {
		w->overflow = true;
		return NULL;
	}
	q = w->p + w->off;
	w->off += k;
	return q;
}

static inline void wr_u8(struct wire_writer *w, uint8_t v)
{
	uint8_t *q = wr_take(w, 1);
	if (q)
		q[0] = v;
}

static inline void wr_bool(struct wire_writer *w, bool v)
{
	wr_u8(w, v ? 1 : 0);
}

static inline void wr_u16be(struct wire_writer *w, uint16_t v)
{
	uint8_t *q = wr_take(w, 2);
	if (q) {
		q[0] = (uint8_t)(v >> 8);
		q[1] = (uint8_t)v;
	}
}

static inline void wr_u16le(struct wire_writer *w, uint16_t v)
{
	uint8_t *q = wr_take(w, 2);
	if (q) {
		q[0] = (uint8_t)v;
		q[1] = (uint8_t)(v >> 8);
	}
}

/* 24-bit counters wrap; only the low 24 bits go on the wire. */
static inline void wr_u24le(struct wire_writer *w, uint32_t v)
{
	uint8_t *q = wr_take(w, 3);
	if (q) {
		q[0] = (uint8_t)v;
		q[1] = (uint8_t)(v >> 8);
		q[2] = (uint8_t)(v >> 16);
	}
}

static inline void wr_u32be(struct wire_writer *w, uint32_t v)
{
	uint8_t *q = wr_take(w, 4);
	if (q) {
		q[0] = (uint8_t)(v >> 24);
		q[1] = (uint8_t)(v >> 16);
		q[2] = (uint8_t)(v >> 8);
		q[3] = (uint8_t)v;
	}
}

static inline void wr_u64be(struct wire_writer *w, uint64_t v)
{
	uint8_t *q = wr_take(w, 8);
	if (q)
		for (int i = 7; i >= 0; i--, v >>= 8)
			q[i] = (uint8_t)v;
}

static inline void wr_i64(struct wire_writer *w, int64_t v)
{
	wr_u64be(w, (uint64_t)v);
}

static inline void wr_bytes(struct wire_writer *w, const void *src, size_t k)
{
	uint8_t *q = wr_take(w, k);
	if (q && k)
		memcpy(q, src, k);
}

static inline void wr_zeros(struct wire_writer *w, size_t k)
{
	uint8_t *q = wr_take(w, k);
	if (q && k)
		memset(q, 0, k);
}

static inline void wr_magic(struct wire_writer *w)
{
	wr_bytes(w, rudp_wire_magic, RUDP_WIRE_MAGIC_LEN);
}

/* 0, or BAD_VALUE for an address that has no encoding (overflow is sticky). */
static inline int wr_addr(struct wire_writer *w, const struct rudp_wire_addr *a)
{
	int len;

	if (a->version != 4 && a->version != 6)
		return RUDP_WIRE_BAD_VALUE;
	if (w->overflow || !w->p) {
		w->overflow = true;
		return 0;
	}
	len = rudp_wire_encode_addr(w->p + w->off, w->cap - w->off, a);
	if (len == RUDP_WIRE_NO_SPACE) {
		w->overflow = true;
		return 0;
	}
	if (len < 0)
		return len;
	w->off += (size_t)len;
	return 0;
}

static inline int wr_done(const struct wire_writer *w)
{
	if (w->overflow)
		return RUDP_WIRE_NO_SPACE;
	if (w->off > INT_MAX)
		return RUDP_WIRE_BAD_VALUE;
	return (int)w->off;
}

#endif
