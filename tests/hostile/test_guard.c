/* SPDX-License-Identifier: MIT */
/*
 * guard.c on its own: token-bucket arithmetic, the pending-handshake counts
 * (insert and delete in any order, with the table's backward-shift delete
 * checked against a plain array; the table growing with the addresses),
 * IPv6 /64 grouping, cookie periods.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/host_internal.h"

static struct sockaddr_storage v4(uint32_t ip, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;
	memset(&ss, 0, sizeof(ss));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(ip);
	a->sin_port = htons(port);
	return ss;
}

static struct sockaddr_storage v6(uint64_t prefix, uint64_t iid)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
	memset(&ss, 0, sizeof(ss));
	a->sin6_family = AF_INET6;
	for (int i = 0; i < 8; i++) {
		a->sin6_addr.s6_addr[i] = (uint8_t)(prefix >> (56 - 8 * i));
		a->sin6_addr.s6_addr[8 + i] = (uint8_t)(iid >> (56 - 8 * i));
	}
	a->sin6_port = htons(5);
	return ss;
}

static void guard_with(struct host_guard *g, uint32_t rate, uint32_t pending, uint32_t per_addr)
{
	rudp_config cfg;
	rudp_config_init(&cfg);
	cfg.offline_rate_per_address = rate;
	cfg.max_pending_handshakes = pending;
	cfg.max_pending_per_address = per_addr;
	assert_int_equal(guard_init(g, &cfg, 12345, 678), 0);
}

static void test_rate_bucket(void **state)
{
	(void)state;
	struct host_guard g;
	struct sockaddr_storage a = v4(0x0a000001, 1), b = v4(0x0a000002, 1);
	uint64_t t = 1000000;
	int ok = 0;

	guard_with(&g, 10, 16, 4);
	for (int i = 0; i < 100; i++)
		ok += guard_offline_allowed(&g, &a, t);
	assert_int_equal(ok, 10); /* the burst */
	assert_int_equal(g.rate_limited, 90);
	assert_true(guard_offline_allowed(&g, &b, t)); /* another address */
	/* 10 per second: after 250 ms, two tokens (2.5, rounded down). */
	t += 250000;
	ok = 0;
	for (int i = 0; i < 10; i++)
		ok += guard_offline_allowed(&g, &a, t);
	assert_int_equal(ok, 2);
	/* An hour later the bucket is full again, not fuller. */
	t += 3600ull * 1000000;
	ok = 0;
	for (int i = 0; i < 100; i++)
		ok += guard_offline_allowed(&g, &a, t);
	assert_int_equal(ok, 10);
	guard_free(&g);
	/* 0 disables the limit. */
	guard_with(&g, 0, 16, 4);
	for (int i = 0; i < 1000; i++)
		assert_true(guard_offline_allowed(&g, &a, t));
	guard_free(&g);
}

static void test_pending_counts_match_a_model(void **state)
{
	(void)state;
	enum { N = 200 };
	struct host_guard g;
	static struct rudp_peer peers[N];
	int model_live[N] = {0};
	uint64_t rng = 99;

	guard_with(&g, 0, 64, 1000);
	memset(peers, 0, sizeof(peers));
	/* 40 addresses, 5 ports each; random adds and removes. */
	for (int i = 0; i < N; i++)
		peers[i].addr = v4(0x7f000100u + (uint32_t)(i % 40), (uint16_t)i);
	for (int step = 0; step < 20000; step++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		int i = (int)((rng >> 33) % N);
		if (model_live[i]) {
			guard_pending_remove(&g, &peers[i]);
			model_live[i] = 0;
		} else if (g.pending < 64) {
			assert_true(guard_pending_add(&g, &peers[i], (uint64_t)step));
			model_live[i] = 1;
		}
		if (step % 97 == 0) {
			uint32_t total = 0;
			for (int a = 0; a < 40; a++) {
				uint32_t want = 0;
				for (int k = a; k < N; k += 40)
					want += (uint32_t)model_live[k];
				total += want;
				assert_int_equal(guard_pending_for(&g, &peers[a].addr), want);
			}
			assert_int_equal(total, g.pending);
		}
	}
	/* The FIFO gives the oldest first. */
	for (int i = 0; i < N; i++)
		if (model_live[i])
			guard_pending_remove(&g, &peers[i]);
	assert_int_equal(g.pending, 0);
	assert_null(guard_oldest_pending(&g));
	for (int i = 0; i < 3; i++)
		guard_pending_add(&g, &peers[i], (uint64_t)i);
	assert_ptr_equal(guard_oldest_pending(&g), &peers[0]);
	guard_pending_remove(&g, &peers[0]);
	assert_ptr_equal(guard_oldest_pending(&g), &peers[1]);
	guard_free(&g);
}

/* The pending-count table starts small and doubles as distinct addresses
 * come, at most half full, never past twice max_pending; counts stay right
 * across every growth, and removing everything leaves it empty. */
static void test_pending_table_grows_with_addresses(void **state)
{
	(void)state;
	enum { N = 1024 };
	struct host_guard g;
	static struct rudp_peer peers[2 * N];

	guard_with(&g, 0, N, 2);
	assert_int_equal(g.count_cap, 16);
	memset(peers, 0, sizeof(peers));
	for (int i = 0; i < 2 * N; i++)
		peers[i].addr = v4(0x0a000000u + (uint32_t)(i % N) * 977u, (uint16_t)(i + 1));
	for (int i = 0; i < N; i++) {
		assert_true(guard_pending_add(&g, &peers[i], (uint64_t)i));
		assert_true(2 * g.count_used <= g.count_cap);
		assert_true(g.count_cap <= 2 * N);
	}
	assert_int_equal(g.count_used, N);
	assert_int_equal(g.count_cap, 2 * N);
	/* A second handshake from each address: no new slots. */
	for (int i = N; i < 2 * N; i++)
		assert_true(guard_pending_add(&g, &peers[i], (uint64_t)i));
	assert_int_equal(g.count_cap, 2 * N);
	for (int i = 0; i < N; i++)
		assert_int_equal(guard_pending_for(&g, &peers[i].addr), 2);
	for (int i = 0; i < N; i++)
		guard_pending_remove(&g, &peers[i]);
	for (int i = 0; i < N; i++)
		assert_int_equal(guard_pending_for(&g, &peers[i].addr), 1);
	for (int i = N; i < 2 * N; i++)
		guard_pending_remove(&g, &peers[i]);
	assert_int_equal(g.count_used, 0);
	assert_int_equal(g.pending, 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(guard_pending_for(&g, &peers[i].addr), 0);
	guard_free(&g);
}

static void test_admission(void **state)
{
	(void)state;
	struct host_guard g;
	static struct rudp_peer p[6];

	guard_with(&g, 0, 4, 2);
	for (int i = 0; i < 6; i++)
		p[i].addr = v4(0x0a000001u + (uint32_t)(i / 2), (uint16_t)i);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(guard_admit_pending(&g, &p[i].addr), GUARD_ADMIT_OK);
		guard_pending_add(&g, &p[i], 0);
	}
	assert_int_equal(guard_admit_pending(&g, &p[0].addr), GUARD_ADMIT_ADDR_FULL);
	for (int i = 2; i < 4; i++)
		guard_pending_add(&g, &p[i], 0);
	assert_int_equal(guard_admit_pending(&g, &p[4].addr), GUARD_ADMIT_EVICT);
	guard_free(&g);
}

static void test_ipv6_counts_by_prefix(void **state)
{
	(void)state;
	struct host_guard g;
	struct sockaddr_storage a = v6(0x20010db800000001ull, 1), b = v6(0x20010db800000001ull, 99999),
				c = v6(0x20010db800000002ull, 1);
	int ok = 0;

	guard_with(&g, 5, 16, 4);
	for (int i = 0; i < 10; i++) {
		ok += guard_offline_allowed(&g, &a, 1000000);
		ok += guard_offline_allowed(&g, &b, 1000000);
	}
	assert_int_equal(ok, 5); /* one /64, one bucket */
	assert_true(guard_offline_allowed(&g, &c, 1000000));
	/* Cookies still tell the two apart. */
	assert_int_not_equal(guard_cookie(&g, &a, 1000000), guard_cookie(&g, &b, 1000000));
	guard_free(&g);
}

static void test_cookie_periods(void **state)
{
	(void)state;
	struct host_guard g, other;
	struct sockaddr_storage a = v4(0x0a000001, 7), a2 = v4(0x0a000001, 8);
	uint64_t t = 50 * (uint64_t)GUARD_COOKIE_PERIOD_US + 1;
	rudp_config cfg;

	guard_with(&g, 0, 16, 4);
	uint32_t c = guard_cookie(&g, &a, t);
	assert_true(guard_cookie_valid(&g, &a, c, t));
	assert_true(guard_cookie_valid(&g, &a, c, t + GUARD_COOKIE_PERIOD_US)); /* next period */
	assert_false(guard_cookie_valid(&g, &a, c, t + 2 * GUARD_COOKIE_PERIOD_US));
	assert_false(guard_cookie_valid(&g, &a2, c, t)); /* another port */
	assert_false(guard_cookie_valid(&g, &a, c ^ 1, t));
	/* Another host's secret gives another cookie. */
	rudp_config_init(&cfg);
	assert_int_equal(guard_init(&other, &cfg, 12345, 679), 0);
	assert_false(guard_cookie_valid(&other, &a, c, t));
	guard_free(&other);
	guard_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate_bucket),
		cmocka_unit_test(test_pending_counts_match_a_model),
		cmocka_unit_test(test_pending_table_grows_with_addresses),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_ipv6_counts_by_prefix),
		cmocka_unit_test(test_cookie_periods),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
