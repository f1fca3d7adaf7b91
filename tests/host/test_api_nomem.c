/* SPDX-License-Identifier: MIT */
/*
 * Out of memory in the public calls that allocate: each says
 * RUDP_E_NOMEM, changes nothing, and works once memory is back. Linked
 * with --wrap for the allocator; the test turns failure on around a call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rudp.h"
#include "test_alloc_fail.h"

static bool fail_alloc;

bool test_alloc_should_fail(const void *site)
{
	(void)site;
	return fail_alloc;
}

static void test_calls_report_nomem(void **state)
{
	(void)state;
	rudp_config c;
	rudp_host *h = NULL;
	rudp_config_init(&c);
	c.bind_address = "127.0.0.1:0";
	assert_int_equal(rudp_host_create(&c, &h), 0);
	rudp_host_stats st;

	/* rudp_connect: no peer is made, *out stays NULL. */
	rudp_peer *peer = (rudp_peer *)h;
	fail_alloc = true;
	int r = rudp_connect(h, "127.0.0.1:9", &peer);
	fail_alloc = false;
	assert_int_equal(r, RUDP_E_NOMEM);
	assert_null(peer);
	assert_int_equal(rudp_host_stats_get(h, &st), 0);
	assert_int_equal(st.peers, 0);
	assert_int_equal(rudp_connect(h, "127.0.0.1:9", &peer), 0);
	assert_non_null(peer);

	/* rudp_ping_start: the table of pings is made at the first ping. */
	uint32_t id = 77;
	fail_alloc = true;
	r = rudp_ping_start(h, "127.0.0.1:9", 100, &id);
	fail_alloc = false;
	assert_int_equal(r, RUDP_E_NOMEM);
	assert_int_equal(id, 77);
	int ms;
	assert_int_equal(rudp_host_next_timeout(h, &ms), 0);
	assert_int_equal(rudp_ping_start(h, "127.0.0.1:9", 100, &id), 0);

	/* rudp_host_set_pong_data keeps the old data. */
	assert_int_equal(rudp_host_set_pong_data(h, "abc", 3), 0);
	fail_alloc = true;
	r = rudp_host_set_pong_data(h, "defg", 4);
	fail_alloc = false;
	assert_int_equal(r, RUDP_E_NOMEM);
	rudp_host_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_report_nomem),
	};
	return cmocka_run_group_tests_name("api-nomem", tests, NULL, NULL);
}
