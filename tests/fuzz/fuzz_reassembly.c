/* SPDX-License-Identifier: MIT */
/*
 * Split reassembly through a connected server conn. The input is a list of
 * fragment records (split id, count, index, body length, reliability); the
 * harness frames them with valid, increasing datagram seqs and reliable
 * indexes so they pass dedup and reach reassembly.c. Every fragment body is
 * filled with a byte naming its index, so a delivered message must be runs
 * of 0x80, 0x81, ... in order, one run per fragment: any gap, overlap or
 * misplacement shows.
 */
#include <string.h>

#include "harness.h"

struct check {
	uint64_t messages;
};

static void on_message(void *ud, const uint8_t *data, size_t len, uint8_t reliability)
{
	struct check *ck = ud;
	uint32_t run = 0;
	size_t i = 0;

	(void)reliability;
	while (i < len) {
		uint8_t want = (uint8_t)(0x80u + run);

		if (data[i] != want)
			fz_fail("reassembled message has a fragment out of place");
		while (i < len && data[i] == want)
			i++;
		run++;
	}
	ck->messages++;
}

static uint8_t take(const uint8_t **p, size_t *n)
{
	uint8_t v = 0;

	if (*n) {
		v = **p;
		(*p)++;
		(*n)--;
	}
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *p, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *p, size_t n)
{
	static struct fz_pair pair;
	static uint8_t dgram[FZ_DGRAM], body[FZ_DGRAM];
	struct check ck = {0};
	struct rudp_conn_config cfg;
	uint32_t seq = 0, ri, oi = 0, si = 0;

	rudp_conn_config_init(&cfg);
	cfg.mtu = 576;
	cfg.max_split_count = 48;
	cfg.max_split_ids = 3;
	cfg.max_reassembly_bytes = 40u << 10;
	cfg.max_message_size = 16u << 10;
	cfg.recv_window = 256;
	if (!fz_pair_start(&pair, &cfg))
		fz_fail("handshake over a perfect link did not finish");
	pair.side[1].on_message = on_message;
	pair.side[1].hook_ud = &ck;
	/* Continue the client's own counters so our frames are the next ones. */
	seq = pair.side[0].c->next_dgram_seq;
	ri = pair.side[0].c->next_reliable_index;

	while (n >= 6) {
		struct rudp_wire_dgram_header h = {.flags = RUDP_DGRAM_VALID, .seq = seq};
		struct rudp_wire_frame f;
		uint8_t a = take(&p, &n), b = take(&p, &n), c = take(&p, &n), d = take(&p, &n);
		uint8_t e = take(&p, &n), g = take(&p, &n);
		int off, len;

		memset(&f, 0, sizeof(f));
		f.split = true;
		f.split_id = a % 8;
		/* mostly small counts, sometimes absurd ones */
		f.split_count = (b & 0x80) ? ((uint32_t)b << 24 | (uint32_t)c << 8 | 1u) : 1u + b % 64u;
		f.split_index = c % f.split_count;
		f.body_len = (uint16_t)(1 + (d | (e & 0x01) << 8) % 520);
		f.reliability = (uint8_t[]){RUDP_WIRE_RELIABLE, RUDP_WIRE_RELIABLE_ORDERED,
					    RUDP_WIRE_UNRELIABLE, RUDP_WIRE_RELIABLE_SEQUENCED}[g % 4];
		if (rudp_wire_is_reliable(f.reliability))
			f.reliable_index = (g & 0x10) ? ri - 1u : ri++; /* sometimes a duplicate */
		f.order_index = f.reliability == RUDP_WIRE_RELIABLE_ORDERED ? oi++ : oi;
		f.sequenced_index = si++;
		f.order_channel = (uint8_t)(e >> 3) % 4;
		memset(body, (uint8_t)(0x80u + f.split_index), f.body_len);
		f.body = body;
		f.reliable_index &= RUDP_WIRE_U24_MASK;
		off = rudp_wire_encode_dgram_header(dgram, sizeof(dgram), &h);
		len = rudp_wire_encode_frame(dgram + off, sizeof(dgram) - (size_t)off, &f);
		if (len < 0)
			continue;
		seq = (seq + 1) & RUDP_WIRE_U24_MASK;
		fz_feed(&pair, 1, dgram, (size_t)(off + len));
		if (g & 0x20)
			fz_pair_exchange(&pair, 1);
	}
	fz_pair_exchange(&pair, 4);
	fz_check_invariants(&pair, 1);
	fz_pair_free(&pair);
	return 0;
}
