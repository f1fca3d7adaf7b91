/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure on demand, for a test linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc and test_alloc_fail.c:
 * every malloc, calloc and realloc asks the test's own
 * test_alloc_should_fail whether it fails (then it returns NULL; a failed
 * realloc leaves the old block as it was, as the real one does).
 */
#ifndef RUDP_TEST_COMMON_ALLOC_FAIL_H
#define RUDP_TEST_COMMON_ALLOC_FAIL_H

#include <stdbool.h>

/* Defined by the test. site: the caller's return address, for a test that
 * tells call sites apart. */
bool test_alloc_should_fail(const void *site);

#endif
