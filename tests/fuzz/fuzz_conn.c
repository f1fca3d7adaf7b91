/* SPDX-License-Identifier: MIT */
/*
 * A connected pair of conns (the handshake really ran) and a script of
 * operations read from the input: raw datagrams to either side, time jumps,
 * link rounds, application sends. Limits are set small so the fuzzer reaches
 * them; the harness checks after every datagram that none is exceeded.
 */
#include <string.h>

#include "harness.h"

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
	static uint8_t msg[4096];
	struct rudp_conn_config cfg;

	rudp_conn_config_init(&cfg);
	cfg.mtu = 576;
	cfg.window_frames = 16;
	cfg.max_split_count = 64;
	cfg.max_split_ids = 4;
	cfg.max_reassembly_bytes = 16u << 10;
	cfg.max_message_size = 12u << 10;
	cfg.max_queue_bytes = 64u << 10;
	cfg.max_order_hold = 32;
	cfg.recv_window = 64;
	cfg.max_ack_ranges = 8;
	if (!fz_pair_start(&pair, &cfg))
		fz_fail("handshake over a perfect link did not finish");

	for (int ops = 0; n > 0 && ops < 512; ops++) {
		uint8_t op = take(&p, &n);

		switch (op % 6) {
		case 0:
		case 1: {
			size_t len = take(&p, &n);
			len |= (size_t)(take(&p, &n) & 0x07) << 8;
			if (len > n)
				len = n;
			fz_feed(&pair, op % 2, p, len);
			p += len;
			n -= len;
			break;
		}
		case 2: pair.now += (uint64_t)take(&p, &n) * 7000u; break;
		case 3: fz_pair_exchange(&pair, 1 + take(&p, &n) % 4); break;
		case 4:
		case 5: {
			size_t len = 1 + take(&p, &n) * 16u;
			uint8_t rel = take(&p, &n) % 5, ch = take(&p, &n) % 32;
			struct rudp_conn *c = pair.side[op % 2].c;

			memset(msg, 0x5a, len);
			msg[0] = 0xfe;
			if (rudp_conn_state(c) == RUDP_CONN_STATE_CONNECTED)
				rudp_conn_send(c, msg, len, rel, ch, pair.now);
			break;
		}
		}
	}
	/* Let timers, retransmission and the close path run. */
	for (int r = 0; r < 40; r++) {
		pair.now += 50000;
		fz_pair_exchange(&pair, 1);
	}
	fz_check_invariants(&pair, 0);
	fz_check_invariants(&pair, 1);
	fz_pair_free(&pair);
	return 0;
}
