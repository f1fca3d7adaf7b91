/* SPDX-License-Identifier: MIT */
/*
 * A binary min-heap of pointers, for the simulated links' datagrams in
 * flight. The caller owns the array and its growth (the simulators
 * realloc; test_conn_nomem uses a fixed array, so that the harness makes no
 * allocation its wrapped malloc would count). The simulators order by
 * delivery time, then by serial, so equal times come out first in, first
 * out, and a seed gives the same delivery order on every run: keep the
 * sift code as it is, or recorded figures change.
 */
#ifndef RUDP_TEST_COMMON_HEAP_H
#define RUDP_TEST_COMMON_HEAP_H

#include <stdbool.h>
#include <stddef.h>

/* Whether a comes out before b. */
typedef bool (*test_heap_before_fn)(const void *a, const void *b);

/* Adds p to the heap v[0..*n); v must have room for *n + 1. */
static inline void test_heap_push(void **v, size_t *n, void *p, test_heap_before_fn before)
{
	size_t i = (*n)++;

	v[i] = p;
	while (i > 0 && before(v[i], v[(i - 1) / 2])) {
		void *t = v[i];

		v[i] = v[(i - 1) / 2];
		v[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

/* Removes and returns the first of v[0..*n), which must not be empty. */
static inline void *test_heap_pop(void **v, size_t *n, test_heap_before_fn before)
{
	void *top = v[0];
	size_t i = 0;

	v[0] = v[--*n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < *n && before(v[l], v[m]))
			m = l;
		if (r < *n && before(v[r], v[m]))
			m = r;
		if (m == i)
			break;
		void *t = v[i];
		v[i] = v[m];
		v[m] = t;
		i = m;
	}
	return top;
}

#endif
