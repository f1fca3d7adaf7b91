/* SPDX-License-Identifier: MIT */
/*
 * The tests' seeded PRNG, xorshift64*: small and the same sequence on every
 * machine, so a failing seed reproduces and the simulators' figures can be
 * compared between builds. The state must not be 0 (it would stay 0).
 */
#ifndef RUDP_TEST_COMMON_RNG_H
#define RUDP_TEST_COMMON_RNG_H

#include <stdint.h>

static inline uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Below n (modulo bias does not matter here); n == 0 gives 0 and draws
 * nothing, so a caller's sequence does not depend on empty ranges. */
static inline uint32_t rng_below(uint64_t *state, uint32_t n)
{
	return n ? (uint32_t)(rng_next(state) % n) : 0;
}

#endif
