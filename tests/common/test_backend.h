/* SPDX-License-Identifier: MIT */
/*
 * Which I/O backend a host test runs on. meson runs such a program once per
 * backend with the backend's name as its argument; the program sets
 * RUDP_IO (which beats the config field) from it, unless the environment
 * already names another backend: the valgrind setup sets RUDP_IO=mmsg,
 * because memcheck cannot see the kernel write io_uring's buffers, and a
 * test's own environment would otherwise override it. That run is then
 * skipped rather than made on a backend it did not ask for. Include it after
 * cmocka.h.
 */
#ifndef RUDP_TEST_BACKEND_H
#define RUDP_TEST_BACKEND_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 0 to go on; 77 (meson: skipped) when the run is not for this environment. */
static inline int test_backend_from_args(int argc, char **argv)
{
	if (argc < 2)
		return 0;
	const char *env = getenv("RUDP_IO");
	if (env && strcmp(env, "auto") != 0 && strcmp(env, argv[1]) != 0) {
		printf("RUDP_IO=%s in the environment: the %s run is skipped\n", env, argv[1]);
		return 77;
	}
	setenv("RUDP_IO", argv[1], 1);
	return 0;
}

/* A per-backend program's main: the group run on the backend argv[1] names,
 * or test_backend_from_args' 77 when that run is not for this environment.
 * The _name form names the group, as cmocka_run_group_tests_name does. */
static inline int test_backend_run(int argc, char **argv, const char *name, const struct CMUnitTest *tests,
				   size_t count)
{
	int skip = test_backend_from_args(argc, argv);
	if (skip)
		return skip;
	return _cmocka_run_group_tests(name, tests, count, NULL, NULL);
}

#define test_backend_run_group_name(argc, argv, name, tests)                                                 \
	test_backend_run((argc), (argv), (name), (tests), sizeof(tests) / sizeof((tests)[0]))
#define test_backend_run_group(argc, argv, tests) test_backend_run_group_name(argc, argv, #tests, tests)

#endif
