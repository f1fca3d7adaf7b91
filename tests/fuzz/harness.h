/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: two conns (client, server) joined by an in-memory link with
 * no loss, driven through the real online handshake before the fuzzer's
 * bytes are fed in, so the input reaches the connected state's code paths
 * (dedup, ordering, reassembly, ACK processing) and not only the handshake.
 * No cmocka, no aborts on expected input: a failed invariant calls
 * fz_fail(), which aborts so libFuzzer records the input.
 */
#ifndef RUDP_FUZZ_HARNESS_H
#define RUDP_FUZZ_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn/conn_internal.h"

#define FZ_QUEUE 256
#define FZ_DGRAM 1500

struct fz_dgram {
	uint16_t len;
	uint8_t data[FZ_DGRAM];
};

struct fz_side {
	struct rudp_conn *c;
	/* datagrams this side sent, waiting for the other side */
	struct fz_dgram q[FZ_QUEUE];
	uint32_t q_head, q_count;
	uint64_t delivered, delivered_bytes;
	int connected, closed;
	/* optional per-message hook (the reassembly target checks content) */
	void (*on_message)(void *ud, const uint8_t *data, size_t len, uint8_t reliability);
	void *hook_ud;
};

struct fz_pair {
	struct rudp_conn_config cfg;
	struct fz_side side[2]; /* 0 client, 1 server */
	uint64_t now;
};

/* Creates both conns with cfg and runs the handshake; false if it did not
 * finish (a bug: the link is perfect). */
bool fz_pair_start(struct fz_pair *p, const struct rudp_conn_config *cfg);
void fz_pair_free(struct fz_pair *p);
/* Flushes both sides and delivers what they sent, `rounds` times. */
void fz_pair_exchange(struct fz_pair *p, int rounds);
/* Feeds one datagram to side i as if it came from the other side. */
void fz_feed(struct fz_pair *p, int i, const uint8_t *data, size_t len);
/* Checks the limits the conn promises to keep; aborts when one is broken. */
void fz_check_invariants(const struct fz_pair *p, int i);
void fz_fail(const char *what) __attribute__((noreturn));

#endif
