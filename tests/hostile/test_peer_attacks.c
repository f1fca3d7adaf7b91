/* SPDX-License-Identifier: MIT */
/*
 * Attacks from a peer that completed the real handshake (so its datagrams
 * reach the connection engine), and from addresses with no connection.
 * Each test hits a per-peer limit, asserts the stated bound, and shows the
 * server still serving an honest client on the same host.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "hostile.h"

#define MiB (1024u * 1024u)

struct scene {
	struct hs_world w;
	struct hs_evil e;
	rudp_peer *evil_peer; /* the server's handle for the attacker */
	size_t base_alloc;
};

static void scene_start(struct scene *s, rudp_config *cfg)
{
	hs_world_init(&s->w, cfg);
	assert_true(hs_client_connect(&s->w, 1000, NULL, NULL, false) >= 0);
	hs_evil_open(&s->e, "127.0.0.21");
	assert_true(hs_evil_connect(&s->e, &s->w, 1000));
	s->evil_peer = hs_server_peer_of(&s->w, &s->e);
	assert_non_null(s->evil_peer);
	assert_int_equal(s->w.server_connects, 2);
	s->base_alloc = hs_allocated_bytes();
}

static void scene_end(struct scene *s)
{
	hs_evil_close(&s->e);
	hs_world_free(&s->w);
}

static void server_conn_stats(struct scene *s, struct rudp_conn_stats *st)
{
	s->evil_peer = hs_server_peer_of(&s->w, &s->e);
	assert_non_null(s->evil_peer);
	rudp_conn_get_stats(s->evil_peer->conn, st);
}

static void steps(struct scene *s, int n)
{
	for (int i = 0; i < n; i++) {
		hs_evil_step(&s->e);
		hs_world_step(&s->w);
	}
}

/* ---- split bomb ---- */

static void split_frame(struct scene *s, uint16_t id, uint32_t count, uint32_t index, uint16_t len)
{
	static uint8_t body[1400];
	struct rudp_wire_frame f = {.reliability = RUDP_WIRE_RELIABLE,
				    .split = true,
				    .split_id = id,
				    .split_count = count,
				    .split_index = index,
				    .body = body,
				    .body_len = len};
	memset(body, 0xfe, len);
	hs_evil_send_frame(&s->e, &f, true);
}

static void test_split_bomb(void **state)
{
	(void)state;
	struct scene s;
	rudp_config cfg;
	struct rudp_conn_stats st;
	size_t peak = 0;

	rudp_config_init(&cfg);
	cfg.max_split_count = 256;
	cfg.max_split_ids = 8;
	cfg.max_reassembly_bytes = 256 * 1024;
	cfg.max_message_size = 128 * 1024;
	scene_start(&s, &cfg);
	uint64_t received_before = s.w.server_received;

	/* 1. A split count of 2^31 - 1, and one just over max_split_count:
	 * refused at the first fragment, nothing reserved. */
	split_frame(&s, 1, 0x7fffffffu, 0, 100);
	split_frame(&s, 2, 257, 0, 100);
	/* 2. A set whose reservation exceeds max_reassembly_bytes (200 x 1400). */
	split_frame(&s, 3, 200, 0, 1400);
	steps(&s, 20);
	server_conn_stats(&s, &st);
	assert_int_equal(st.reassembly_bytes, 0);
	assert_true(st.frames_dropped >= 3);
	/* 3. A complete set of 100 x 1400 = 140,000 bytes > max_message_size:
	 * reassembled, then refused, never delivered. */
	for (uint32_t i = 0; i < 100; i++) {
		split_frame(&s, 4, 100, i, 1400);
		if (i % 16 == 0)
			steps(&s, 2);
	}
	steps(&s, 20);
	server_conn_stats(&s, &st);
	assert_int_equal(st.reassembly_bytes, 0);
	assert_int_equal(s.w.server_received, received_before);
	/* 4. Four sets of 64 fragments (92 KiB reserved each: the third and
	 * fourth do not fit in max_reassembly_bytes), then 5,000 more split ids
	 * of 2 fragments, each opening a set it never finishes (the slots run
	 * out at max_split_ids). */
	for (uint32_t id = 100; id < 104; id++)
		split_frame(&s, (uint16_t)id, 64, 0, 1000);
	for (uint32_t id = 200; id < 5200; id++) {
		split_frame(&s, (uint16_t)id, 2, 0, 1000);
		if (id % 64 == 0) {
			steps(&s, 1);
			server_conn_stats(&s, &st);
			/* Bound: reserved bytes never pass max_reassembly_bytes. */
			assert_true(st.reassembly_bytes <= cfg.max_reassembly_bytes);
			size_t a = hs_allocated_bytes();
			if (a > peak)
				peak = a;
		}
	}
	steps(&s, 20);
	server_conn_stats(&s, &st);
	printf("split bomb: %u bytes reserved (limit %u), %llu frames dropped, peak memory +%zu KiB\n",
	       st.reassembly_bytes, cfg.max_reassembly_bytes, (unsigned long long)st.frames_dropped,
	       (peak > s.base_alloc ? peak - s.base_alloc : 0) / 1024);
	assert_true(st.reassembly_bytes <= cfg.max_reassembly_bytes);
	/* Bound: max_split_ids (8) sets open at once, and no more. */
	const struct reassembly *ra = &s.evil_peer->conn->reasm;
	uint32_t used = 0;
	for (uint32_t i = 0; i < ra->nslots; i++)
		used += ra->slots[i].used;
	assert_int_equal(ra->nslots, cfg.max_split_ids);
	assert_int_equal(used, cfg.max_split_ids);
	/* Bound: the whole bomb costs under 2 MiB of server memory. */
	assert_true(peak < s.base_alloc + 2 * MiB);
	assert_true(hs_client_echo(&s.w, 50, 1000, 2000));
	scene_end(&s);
}

/* ---- ACK and NACK abuse ---- */

static void send_ranges(struct scene *s, bool nack, const struct rudp_wire_range *r, size_t n)
{
	uint8_t buf[1500];
	size_t enc = 0, done = 0;

	while (done < n) {
		int len = rudp_wire_encode_ack(buf, 1400, nack, r + done, n - done, &enc);
		assert_true(len > 0);
		hs_evil_send(&s->e, buf, (size_t)len);
		done += enc;
	}
}

static void server_send_to_evil(struct scene *s, int n)
{
	uint8_t msg[1000];
	memset(msg, 0xfe, sizeof(msg));
	for (int i = 0; i < n; i++)
		assert_int_equal(rudp_send(s->evil_peer, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0), 0);
}

static void test_ack_ranges_cover_2_24(void **state)
{
	(void)state;
	struct scene s;
	rudp_config cfg;
	struct rudp_conn_stats st0, st;
	struct rudp_wire_range r[1024];

	rudp_config_init(&cfg);
	cfg.max_ack_ranges = 64;
	scene_start(&s, &cfg);
	/* Frames in flight that the attacker never received. */
	s.e.reading = false;
	server_send_to_evil(&s, 32);
	steps(&s, 5);
	server_conn_stats(&s, &st0);
	/* 256 ranges of 65,536 seqs: all 2^24 seqs, 4 datagrams of 64 records
	 * each; then 200 datagrams of 199 single records (over max_ack_ranges). */
	for (uint32_t k = 0; k < 256; k++) {
		r[k].start = k << 16;
		r[k].end = (k << 16) | 0xffffu;
	}
	uint64_t t0 = hs_now_ms();
	for (int rep = 0; rep < 50; rep++) {
		for (int part = 0; part < 4; part++)
			send_ranges(&s, false, r + part * 64, 64);
		steps(&s, 1);
	}
	for (uint32_t k = 0; k < 199; k++)
		r[k].start = r[k].end = k * 3;
	for (int rep = 0; rep < 200; rep++) {
		send_ranges(&s, false, r, 199);
		if (rep % 20 == 0)
			steps(&s, 1);
	}
	steps(&s, 10);
	uint64_t took = hs_now_ms() - t0;
	server_conn_stats(&s, &st);
	uint64_t records = st.acks_received - st0.acks_received;
	printf("ACKs over all 2^24 seqs: 400 datagrams, %llu records processed in %llu ms\n",
	       (unsigned long long)records, (unsigned long long)took);
	/* Bound: at most max_ack_ranges (64) records per datagram are looked
	 * at: 200 + 200 datagrams -> at most 25,600 records, and all of it is
	 * handled within 2 s of wall time. */
	assert_true(records <= 400u * 64u);
	assert_true(records >= 200u * 64u);
	assert_true(took <= 2000 * hs_slow());
	s.e.reading = true;
	assert_true(hs_client_echo(&s.w, 50, 500, 2000));
	scene_end(&s);
}

static void test_nacks_for_never_sent(void **state)
{
	(void)state;
	struct scene s;
	rudp_config cfg;
	struct rudp_conn_stats st0, st;
	struct rudp_wire_range r[256];

	rudp_config_init(&cfg);
	scene_start(&s, &cfg);
	steps(&s, 10);
	server_conn_stats(&s, &st0);
	hs_drain(s.e.fd, NULL);
	s.e.reading = false;
	/* Nothing in flight to the attacker: NACKs of all 2^24 seqs, 500 times. */
	for (uint32_t k = 0; k < 256; k++) {
		r[k].start = k << 16;
		r[k].end = (k << 16) | 0xffffu;
	}
	for (int rep = 0; rep < 500; rep++) {
		send_ranges(&s, true, r, 256);
		if (rep % 10 == 0)
			steps(&s, 1);
	}
	steps(&s, 10);
	server_conn_stats(&s, &st);
	size_t bytes = 0;
	int back = hs_drain(s.e.fd, &bytes);
	printf("NACKs for never-sent seqs: %llu records; server retransmitted %llu frames, sent back %d "
	       "datagrams\n",
	       (unsigned long long)(st.nacks_received - st0.nacks_received),
	       (unsigned long long)(st.frames_retransmitted - st0.frames_retransmitted), back);
	/* Bound: nothing is retransmitted and at most a keepalive comes back. */
	assert_int_equal(st.frames_retransmitted, st0.frames_retransmitted);
	assert_true(back <= 2);

	/* Now with 32 frames in flight (the attacker reads nothing): NACKs
	 * naming every seq, 200 datagrams over about 200 ms. */
	server_send_to_evil(&s, 32);
	steps(&s, 5);
	server_conn_stats(&s, &st0);
	uint64_t t0 = hs_now_ms();
	for (int rep = 0; rep < 200; rep++) {
		send_ranges(&s, true, r, 16);
		steps(&s, 1);
		usleep(1000);
	}
	steps(&s, 5);
	server_conn_stats(&s, &st);
	uint64_t retx = st.frames_retransmitted - st0.frames_retransmitted;
	printf("NACK flood with 32 frames in flight: %llu retransmissions in %llu ms (rtt %u us)\n",
	       (unsigned long long)retx, (unsigned long long)(hs_now_ms() - t0), st.rtt_us);
	/* Bound: NACKs without ACK progress may mark at most two windows
	 * (2 x 64) of frames for resend; after that only the RTO (with backoff:
	 * 30, 60, 120 ms, so at most 4 rounds of 32 in these ~220 ms) and two
	 * tail probes resend: not one window per NACK datagram (32 x 200 = 6,400
	 * before this limit). */
	assert_true(retx <= 2u * 64u + 4u * 32u + 2u);
	s.e.reading = true;
	assert_true(hs_client_echo(&s.w, 50, 500, 2000));
	scene_end(&s);
}

/* ---- datagrams from addresses with no connection ---- */

static void test_unknown_source_datagrams(void **state)
{
	(void)state;
	struct scene s;
	rudp_config cfg;
	struct hs_evil stranger;
	uint8_t buf[1500];
	uint64_t seed = 0x1234567;

	rudp_config_init(&cfg);
	scene_start(&s, &cfg);
	hs_evil_open(&stranger, "127.0.0.22");
	uint64_t dropped0 = s.w.server->stats.datagrams_dropped;
	int sent = 0;
	/* Every first byte with random bytes after it, lengths 1..1400, plus
	 * well-formed frame sets, ACKs and NACKs: 4096 datagrams. */
	for (int i = 0; i < 4096; i++) {
		size_t len = 1 + (size_t)(i * 37) % 1400;
		for (size_t k = 0; k < len; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			buf[k] = (uint8_t)(seed >> 56);
		}
		buf[0] = (uint8_t)i;
		if (i % 4 == 1) {
			buf[0] = 0x84;
		} else if (i % 4 == 2) {
			struct rudp_wire_range r = {0, 100};
			len = (size_t)rudp_wire_encode_ack(buf, sizeof(buf), i % 8 == 2, &r, 1, NULL);
		}
		sendto(stranger.fd, buf, len, 0, (struct sockaddr *)&s.w.server_sa, sizeof(s.w.server_sa));
		sent++;
		if (i % 64 == 0)
			steps(&s, 1);
	}
	steps(&s, 20);
	size_t bytes = 0;
	int back = hs_drain(stranger.fd, &bytes);
	uint64_t dropped = s.w.server->stats.datagrams_dropped - dropped0;
	printf("%d datagrams from a stranger: %llu counted dropped, %d replies (%zu bytes)\n", sent,
	       (unsigned long long)dropped, back, bytes);
	/* Bound: no state (peer count unchanged), and garbage gets no reply:
	 * only random bytes that happen to form a valid request could, and
	 * without the magic none do. */
	assert_int_equal(back, 0);
	assert_int_equal(s.w.server->peer_count, 2);
	assert_true(dropped >= (uint64_t)sent - 16);
	assert_true(hs_client_echo(&s.w, 50, 500, 2000));
	hs_evil_close(&stranger);
	scene_end(&s);
}

/* ---- a peer that stops reading ---- */

static void test_peer_stops_reading(void **state)
{
	(void)state;
	struct scene s;
	rudp_config cfg;
	uint8_t msg[1000];
	size_t peak = 0;

	rudp_config_init(&cfg);
	cfg.max_message_size = 256 * 1024;
	cfg.max_queue_bytes = 1 * MiB;
	cfg.timeout_ms = 1500;
	scene_start(&s, &cfg);
	s.e.reading = false; /* no reads, no ACKs: the socket buffer fills, then drops */
	memset(msg, 0xfe, sizeof(msg));
	int queued = 0, full = 0;
	uint64_t t0 = hs_now_ms();
	while (hs_now_ms() - t0 < 3000 * hs_slow() && s.w.server_disconnects == 0) {
		if (s.w.last_connected || hs_server_peer_of(&s.w, &s.e)) {
			rudp_peer *p = hs_server_peer_of(&s.w, &s.e);
			for (int i = 0; p && i < 50; i++) {
				int r = rudp_send(p, msg, sizeof(msg), RUDP_RELIABLE_ORDERED, 0);
				if (r == RUDP_E_QUEUE_FULL) {
					full++;
					break;
				}
				if (r == 0)
					queued++;
			}
			if (p) {
				rudp_peer_stats ps;
				rudp_peer_stats_get(p, &ps);
				/* Bound: queued bytes never pass max_queue_bytes (1 MiB). */
				assert_true(ps.send_queue_bytes <= cfg.max_queue_bytes);
			}
		}
		/* The honest client keeps echoing while the stuck peer fills up. */
		if (s.w.client_peer && hs_now_ms() - t0 < 1000)
			assert_true(hs_client_echo(&s.w, 1, 200, 500));
		hs_world_step(&s.w);
		size_t a = hs_allocated_bytes();
		if (a > peak)
			peak = a;
	}
	uint64_t took = hs_now_ms() - t0;
	printf("stopped reader: %d messages queued, QUEUE_FULL %d times, disconnected after %llu ms (reason "
	       "%s), "
	       "peak memory +%zu KiB\n",
	       queued, full, (unsigned long long)took, rudp_reason_string(s.w.last_disconnect_reason),
	       (peak - s.base_alloc) / 1024);
	assert_true(full > 0);
	assert_true((size_t)queued * sizeof(msg) <= cfg.max_queue_bytes + 64 * 1024);
	/* Bound: dead after timeout_ms (1.5 s) of silence, within 1 s of slack. */
	assert_int_equal(s.w.server_disconnects, 1);
	assert_int_equal(s.w.last_disconnect_reason, RUDP_REASON_TIMEOUT);
	assert_true(took <= 2500 * hs_slow());
	/* Bound: the stuck peer cost under 4 MiB (its 1 MiB queue plus copies). */
	assert_true(peak - s.base_alloc <= 4 * MiB);
	assert_true(hs_client_echo(&s.w, 50, 500, 2000));
	scene_end(&s);
}

/* ---- order hold ---- */

static void test_order_hold_limit(void **state)
{
	(void)state;
	struct scene s;
	rudp_config cfg;
	struct rudp_conn_stats st0, st;
	uint8_t body[100];

	rudp_config_init(&cfg);
	cfg.max_order_hold = 16;
	scene_start(&s, &cfg);
	server_conn_stats(&s, &st0);
	memset(body, 0xfe, sizeof(body));
	uint32_t base = recv_channel(&s.evil_peer->conn->rx, 3)->expected_order;
	/* Messages 1..40 ahead of a gap that never fills, on channel 3. */
	for (uint32_t k = 1; k <= 40; k++) {
		struct rudp_wire_frame f = {.reliability = RUDP_WIRE_RELIABLE_ORDERED,
					    .order_channel = 3,
					    .order_index = base + k,
					    .body = body,
					    .body_len = sizeof(body)};
		hs_evil_send_frame(&s.e, &f, true);
		steps(&s, 1);
	}
	steps(&s, 10);
	server_conn_stats(&s, &st);
	uint32_t held = recv_channel(&s.evil_peer->conn->rx, 3)->held;
	printf("order hold: %u held (limit %u), %llu frames refused\n", held, cfg.max_order_hold,
	       (unsigned long long)(st.frames_dropped - st0.frames_dropped));
	/* Bound: at most max_order_hold messages held; the rest refused unacked. */
	assert_true(held <= cfg.max_order_hold);
	assert_true(st.frames_dropped - st0.frames_dropped >= 40 - cfg.max_order_hold);
	assert_true(hs_client_echo(&s.w, 50, 500, 2000));
	scene_end(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unknown_source_datagrams), cmocka_unit_test(test_split_bomb),
		cmocka_unit_test(test_ack_ranges_cover_2_24),    cmocka_unit_test(test_nacks_for_never_sent),
		cmocka_unit_test(test_order_hold_limit),         cmocka_unit_test(test_peer_stops_reading),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
