/* SPDX-License-Identifier: MIT */
/* The allocator wrappers of test_alloc_fail.h. */
#include <stddef.h>

#include "test_alloc_fail.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t nmemb, size_t size);
void *__real_realloc(void *ptr, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t nmemb, size_t size);
void *__wrap_realloc(void *ptr, size_t size);

void *__wrap_malloc(size_t size)
{
	return test_alloc_should_fail(__builtin_return_address(0)) ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t nmemb, size_t size)
{
	return test_alloc_should_fail(__builtin_return_address(0)) ? NULL : __real_calloc(nmemb, size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
	return test_alloc_should_fail(__builtin_return_address(0)) ? NULL : __real_realloc(ptr, size);
}
