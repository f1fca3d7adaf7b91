/* SPDX-License-Identifier: MIT */
/*
 * Two conns compared record by record, for tests that give a second way
 * of sending the same sends as the general one: the same connected
 * simulated run built twice, and assertions that two conns' send queues,
 * frame records and send counters are the same.
 */
#ifndef RUDP_TEST_CONN_COMPARE_H
#define RUDP_TEST_CONN_COMPARE_H

#include "sim.h"

/* A clean link: 10 ms each way, no loss. */
extern const struct sim_link compare_clean_link;

/* A simulated pair, connected over compare_clean_link with seed 42 and
 * the default config, its endpoints' work generators idle. Every call
 * gives the same state. Free with sim_free() and free(). */
struct sim *compare_connected_sim(void);

/* Asserts that a and b hold the same send queues (every frame record,
 * shared bodies by content) and the same send counters and indexes. */
void compare_same_conn(const struct rudp_conn *a, const struct rudp_conn *b);

/* Gives a's and b's client conns the same send, one way each; returns
 * the result, which must be the same both ways. */
typedef int (*compare_send_fn)(struct sim *a, struct sim *b, uint32_t len, uint8_t rel, uint8_t ch,
			       uint64_t expire_us, uint64_t now_us);

/* The sends every such test makes through send_both, starting at a's
 * clock: each kind of kinds (n of them) three times on rotating channels,
 * with and without a lifetime, with a clock earlier than the conn's, split
 * into 2 .. max_fragments fragments; a message over max_message_size; a
 * full queue. Then both conns are disconnected; returns the clock of the
 * last send. */
uint64_t compare_common_sends(struct sim *a, struct sim *b, const uint8_t *kinds, size_t n,
			      uint32_t max_fragments, compare_send_fn send_both);

#endif
