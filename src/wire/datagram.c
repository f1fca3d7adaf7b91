/* SPDX-License-Identifier: MIT */
/*
 * Online datagrams: the frame-set header, the frames inside it, and ACK/NACK
 * datagrams. The first byte always has RUDP_DGRAM_VALID set; 0x40 marks an
 * ACK, otherwise 0x20 marks a NACK, otherwise it is a frame set.
 */
#include <string.h>

#include "codec.h"

/* On an ACK, 0x20 is not "NACK" but RakNet's "has B and AS": a float (the
 * data arrival rate) follows the flags. Nobody acts on it; we skip it. */
#define WIRE_ACK_HAS_B_AND_AS 0x20
#define WIRE_ACK_B_AND_AS_LEN 4

#define WIRE_FRAME_SPLIT 0x10
/* Bit length is a uint16, so a frame body holds at most 8191 whole bytes. */
#define WIRE_FRAME_BODY_MAX (UINT16_MAX / 8)

/* ---- frame-set header ---- */

int rudp_wire_decode_dgram_header(const uint8_t *p, size_t n, struct rudp_wire_dgram_header *out)
{
	struct wire_reader r = rd_init(p, n);
	uint8_t flags;

	flags = rd_u8(&r);
	if (r.short_read)
		return RUDP_WIRE_TRUNCATED;
	if (!(flags & RUDP_DGRAM_VALID) || (flags & (RUDP_DGRAM_ACK | RUDP_DGRAM_NACK)))
		return RUDP_WIRE_BAD_ID;
	out->flags = flags;
	out->seq = rd_u24le(&r);
	return rd_done(&r);
}

int rudp_wire_encode_dgram_header(uint8_t *p, size_t cap, const struct rudp_wire_dgram_header *in)
{
	struct wire_writer w = wr_init(p, cap);

	/* A frame set carrying the ACK or NACK bit would be read as one. */
	if (in->flags & (RUDP_DGRAM_ACK | RUDP_DGRAM_NACK))
		return RUDP_WIRE_BAD_VALUE;
	wr_u8(&w, in->flags | RUDP_DGRAM_VALID);
	wr_u24le(&w, in->seq);
	return wr_done(&w);
}

/* ---- frames ---- */

size_t rudp_wire_frame_header_len(const struct rudp_wire_frame *f)
{
	return rudp_wire_frame_header_len_of(rudp_wire_plain_reliability(f->reliability), f->split);
}

static inline uint32_t load_u24le(const uint8_t *q)
{
	return (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16);
}

static inline uint32_t load_u32be(const uint8_t *q)
{
	return ((uint32_t)q[0] << 24) | ((uint32_t)q[1] << 16) | ((uint32_t)q[2] << 8) | q[3];
}

/* Every frame of every datagram passes here, so the header's length is
 * known from its first byte and checked once, and the fields are read at
 * fixed offsets (the results and statuses are those of reading them one
 * by one, each bounds-checked). */
int rudp_wire_decode_frame(const uint8_t *p, size_t n, struct rudp_wire_frame *out)
{
	uint8_t flags, rel;
	uint16_t bits;
	size_t hdr, off = 3;

	if (!p || n < 3)
		return RUDP_WIRE_TRUNCATED;
	flags = p[0];
	bits = (uint16_t)((p[1] << 8) | p[2]);
	if (bits == 0)
		return RUDP_WIRE_BAD_VALUE;

	memset(out, 0, sizeof(*out));
	rel = rudp_wire_plain_reliability((uint8_t)(flags >> 5));
	out->reliability = rel;
	out->split = flags & WIRE_FRAME_SPLIT;
	hdr = rudp_wire_frame_header_len_of(rel, out->split);
	if (n < hdr)
		return RUDP_WIRE_TRUNCATED;
	if (rudp_wire_is_reliable(rel)) {
		out->reliable_index = load_u24le(p + off);
		off += 3;
	}
	if (rudp_wire_is_sequenced(rel)) {
		out->sequenced_index = load_u24le(p + off);
		off += 3;
	}
	if (rudp_wire_is_ordered_or_sequenced(rel)) {
		out->order_index = load_u24le(p + off);
		out->order_channel = p[off + 3];
		off += 4;
		if (out->order_channel >= RUDP_WIRE_ORDER_CHANNELS)
			return RUDP_WIRE_BAD_VALUE;
	}
	if (out->split) {
		out->split_count = load_u32be(p + off);
		out->split_id = (uint16_t)((p[off + 4] << 8) | p[off + 5]);
		out->split_index = load_u32be(p + off + 6);
		if (out->split_count == 0 || out->split_index >= out->split_count)
			return RUDP_WIRE_BAD_VALUE;
	}

	/* RakNet counts the body in bits; a partial last byte is still sent. */
	out->body_len = (uint16_t)((bits + 7u) / 8u);
	if (n - hdr < out->body_len)
		return RUDP_WIRE_TRUNCATED;
	out->body = p + hdr;
	return (int)(hdr + out->body_len);
}

int rudp_wire_encode_frame(uint8_t *p, size_t cap, const struct rudp_wire_frame *f)
{
	struct wire_writer w = wr_init(p, cap);
	uint8_t rel;

	if (f->reliability > RUDP_WIRE_RELIABLE_ORDERED_ACK_RECEIPT)
		return RUDP_WIRE_BAD_VALUE;
	if (f->body_len == 0 || f->body_len > WIRE_FRAME_BODY_MAX || !f->body)
		return RUDP_WIRE_BAD_VALUE;
	rel = rudp_wire_plain_reliability(f->reliability);
	if (rudp_wire_is_ordered_or_sequenced(rel) && f->order_channel >= RUDP_WIRE_ORDER_CHANNELS)
		return RUDP_WIRE_BAD_VALUE;
	if (f->split && (f->split_count == 0 || f->split_index >= f->split_count))
		return RUDP_WIRE_BAD_VALUE;
	if (cap < rudp_wire_frame_header_len(f) + f->body_len)
		return RUDP_WIRE_NO_SPACE;

	wr_u8(&w, (uint8_t)(rel << 5 | (f->split ? WIRE_FRAME_SPLIT : 0)));
	wr_u16be(&w, (uint16_t)(f->body_len * 8u));
	if (rudp_wire_is_reliable(rel))
		wr_u24le(&w, f->reliable_index);
	if (rudp_wire_is_sequenced(rel))
		wr_u24le(&w, f->sequenced_index);
	if (rudp_wire_is_ordered_or_sequenced(rel)) {
		wr_u24le(&w, f->order_index);
		wr_u8(&w, f->order_channel);
	}
	if (f->split) {
		wr_u32be(&w, f->split_count);
		wr_u16be(&w, f->split_id);
		wr_u32be(&w, f->split_index);
	}
	wr_bytes(&w, f->body, f->body_len);
	return wr_done(&w);
}

/* ---- ACK / NACK ---- */

int rudp_wire_decode_ack(const uint8_t *p, size_t n, struct rudp_wire_range *out, size_t max_ranges,
			 size_t *count, size_t *dropped, bool *nack)
{
	struct wire_reader r = rd_init(p, n);
	size_t stored = 0, skipped = 0;
	uint16_t records;
	uint8_t flags;
	bool is_nack;

	flags = rd_u8(&r);
	if (r.short_read)
		return RUDP_WIRE_TRUNCATED;
	if (!(flags & RUDP_DGRAM_VALID))
		return RUDP_WIRE_BAD_ID;
	if (flags & RUDP_DGRAM_ACK) {
		is_nack = false;
		if (flags & WIRE_ACK_HAS_B_AND_AS)
			rd_take(&r, WIRE_ACK_B_AND_AS_LEN);
	} else if (flags & RUDP_DGRAM_NACK) {
		is_nack = true;
	} else {
		return RUDP_WIRE_BAD_ID;
	}

	records = rd_u16be(&r);
	for (uint32_t i = 0; i < records && !r.short_read; i++) {
		bool single = rd_bool(&r);
		uint32_t start = rd_u24le(&r);
		uint32_t end = single ? start : rd_u24le(&r);

		if (r.short_read)
			break;
		/* Ranges are inclusive and may cross the 2^24 wrap, but never run
		 * backwards. */
		if (rudp_u24_diff(end, start) < 0)
			return RUDP_WIRE_BAD_VALUE;
		if (out && stored < max_ranges) {
			out[stored].start = start;
			out[stored].end = end;
			stored++;
		} else {
			skipped++;
		}
	}
	if (r.short_read)
		return RUDP_WIRE_TRUNCATED;
	/* ACKs travel alone in their datagram; leftovers mean we misread it. */
	if (rd_left(&r))
		return RUDP_WIRE_TRAILING;
	if (count)
		*count = stored;
	if (dropped)
		*dropped = skipped;
	if (nack)
		*nack = is_nack;
	return 0;
}

/* One record; start <= end as plain numbers. */
static void write_record(struct wire_writer *w, uint32_t start, uint32_t end)
{
	wr_bool(w, start == end);
	wr_u24le(w, start);
	if (start != end)
		wr_u24le(w, end);
}

int rudp_wire_encode_ack(uint8_t *p, size_t cap, bool nack, const struct rudp_wire_range *ranges,
			 size_t count, size_t *encoded)
{
	struct wire_writer w = wr_init(p, cap);
	size_t done = 0;

	if (encoded)
		*encoded = 0;
	if (count == 0 || !ranges)
		return RUDP_WIRE_BAD_VALUE;
	for (size_t i = 0; i < count; i++)
		if (rudp_u24_diff(ranges[i].end, ranges[i].start) < 0)
			return RUDP_WIRE_BAD_VALUE;

	wr_u8(&w, nack ? RUDP_DGRAM_VALID | RUDP_DGRAM_NACK : RUDP_DGRAM_VALID | RUDP_DGRAM_ACK);
	wr_u16be(&w, 0); /* record count, patched below */
	if (w.overflow)
		return RUDP_WIRE_NO_SPACE;
	size_t records = 0;
	while (done < count) {
		struct rudp_wire_range r = {ranges[done].start & RUDP_WIRE_U24_MASK,
					    ranges[done].end & RUDP_WIRE_U24_MASK};
		size_t nrec = rudp_wire_range_records(&r);

		if (w.cap - w.off < rudp_wire_range_len(&r) || records + nrec > UINT16_MAX)
			break;
		if (nrec == 2) {
			write_record(&w, r.start, RUDP_WIRE_U24_MASK);
			write_record(&w, 0, r.end);
		} else {
			write_record(&w, r.start, r.end);
		}
		records += nrec;
		done++;
	}
	if (done == 0)
		return RUDP_WIRE_NO_SPACE;
	p[1] = (uint8_t)(records >> 8);
	p[2] = (uint8_t)records;
	if (encoded)
		*encoded = done;
	return wr_done(&w);
}
