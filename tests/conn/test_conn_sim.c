/* SPDX-License-Identifier: MIT */
/*
 * conn against conn over a simulated network (see sim.h): handshake, every
 * reliability under loss / reordering / duplication at several MTUs, large
 * split messages, counter wrap, graceful disconnect, dead peers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define MS 1000ull
#define SEC 1000000ull

static const struct sim_link clean_link = {.delay_us = 10 * MS, .jitter_us = 0};

static struct rudp_conn_config test_config(uint16_t mtu)
{
	struct rudp_conn_config cfg;

	rudp_conn_config_init(&cfg);
	cfg.mtu = mtu;
	return cfg;
}

static struct sim *sim_new(uint64_t seed, const struct rudp_conn_config *cfg, const struct sim_link *link)
{
	struct sim *s = malloc(sizeof(*s));

	assert_non_null(s);
	sim_init(s, seed, cfg, link);
	return s;
}

static void connect_pair(struct sim *s)
{
	sim_start(s);
	assert_true(sim_run(s, sim_both_connected, 30 * SEC));
	assert_int_equal(s->ep[0].connected_calls, 1);
	assert_int_equal(s->ep[1].connected_calls, 1);
}

static void test_handshake(void **state)
{
	struct rudp_conn_config cfg = test_config(1492);
	struct sim *s = sim_new(1, &cfg, &clean_link);
	struct rudp_conn_stats st;

	(void)state;
	sim_start(s);
	assert_int_equal(rudp_conn_state(s->ep[0].c), RUDP_CONN_STATE_CONNECTING);
	assert_int_equal(rudp_conn_state(s->ep[1].c), RUDP_CONN_STATE_CONNECTING);
	/* Not connected yet: the app may not send. */
	assert_int_equal(rudp_conn_send(s->ep[0].c, (const uint8_t *)"\xfe", 1, 3, 0, s->now),
			 RUDP_CONN_E_STATE);
	assert_true(sim_run(s, sim_both_connected, 5 * SEC));
	/* 0x09 out, 0x10 back, 0x13 out: 10 ms each way, nothing lost. */
	assert_int_equal(s->now, 1000000 + 30 * MS);
	assert_int_equal(s->ep[0].connected_calls, 1);
	assert_int_equal(s->ep[1].connected_calls, 1);

	/* Settle the ACKs, then look at the books. */
	s->ep[0].work.count = 0;
	sim_run(s, sim_all_delivered, 0);
	for (int i = 0; i < 100 && s->heap_n; i++)
		sim_step(s);
	rudp_conn_get_stats(s->ep[0].c, &st);
	assert_int_equal(st.window_in_use, 0);
	assert_int_equal(st.frames_retransmitted, 0);
	assert_int_equal(st.datagrams_dropped, 0);
	assert_int_equal(st.messages_received, 0); /* control messages are not app messages */
	assert_true(st.rtt_us >= 20 * MS && st.rtt_us <= 21 * MS);
	rudp_conn_get_stats(s->ep[1].c, &st);
	assert_int_equal(st.window_in_use, 0);
	assert_int_equal(st.frames_retransmitted, 0);
	sim_delete(s);
}

static void test_send_errors(void **state)
{
	struct rudp_conn_config cfg = test_config(1492);
	struct sim *s;
	struct rudp_conn *c;
	static uint8_t big[(4u << 20) + 1];

	(void)state;
	cfg.max_queue_bytes = 64 * 1024;
	s = sim_new(2, &cfg, &clean_link);
	connect_pair(s);
	c = s->ep[0].c;
	memset(big, 0xfe, sizeof(big));
	assert_int_equal(rudp_conn_send(c, big, 0, 3, 0, s->now), RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_send(c, NULL, 5, 3, 0, s->now), RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_send(c, big, 5, 8, 0, s->now), RUDP_CONN_E_ARG);
	assert_int_equal(rudp_conn_send(c, big, 5, 3, 32, s->now), RUDP_CONN_E_ARG);
	/* channel is ignored for unordered reliabilities */
	assert_int_equal(rudp_conn_send(c, big, 5, 2, 200, s->now), 0);
	for (uint8_t id = 0; id < 0x20; id++) {
		uint8_t m[2] = {id, 1};

		assert_int_equal(rudp_conn_send(c, m, 2, 2, 0, s->now),
				 rudp_wire_is_control_id(id) ? RUDP_CONN_E_ARG : 0);
	}
	assert_int_equal(rudp_conn_send(c, big, sizeof(big), 3, 0, s->now), RUDP_CONN_E_TOO_LARGE);
	assert_int_equal(rudp_conn_send(c, big, 65 * 1024, 3, 0, s->now), RUDP_CONN_E_QUEUE_FULL);
	assert_int_equal(rudp_conn_send(c, big, 60 * 1024, 3, 0, s->now), 0);
	assert_int_equal(rudp_conn_send(c, big, 4 * 1024, 3, 0, s->now), RUDP_CONN_E_QUEUE_FULL);
	sim_delete(s);
}

/* The main proof: mixed reliabilities on several channels both ways. */
static bool rate_flight_empty(struct sim *s)
{
	for (int i = 0; i < 2; i++) {
		struct rudp_conn_stats st;

		rudp_conn_get_stats(s->ep[i].c, &st);
		if (st.in_flight_bytes > 0)
			return false;
	}
	return true;
}

static void run_mixed_cc(uint64_t seed, uint16_t mtu, uint32_t loss_pm, uint32_t count, uint32_t max_size,
			 bool perfect_link, uint8_t cc)
{
	struct rudp_conn_config cfg = test_config(mtu);
	struct sim_link link = {
		.loss_pm = loss_pm,
		.dup_pm = 20,
		.reorder_pm = 100,
		.delay_us = 15 * MS,
		.jitter_us = 10 * MS,
		.reorder_us = 40 * MS,
	};
	struct sim *s;

	if (perfect_link)
		link = (struct sim_link){.delay_us = 15 * MS};
	struct rudp_conn_stats st[2];

	/* Lossy links need patience: at 30 % loss both ways a frame and its ACK
	 * get through together half the time. */
	cfg.timeout_us = 120 * SEC;
	cfg.congestion_control = cc;
	s = sim_new(seed, &cfg, &link);
	for (int i = 0; i < 2; i++) {
		s->ep[i].work = (struct sim_workload){
			.count = count,
			.min_size = SIM_MSG_HEADER,
			.max_size = max_size,
			.big_every = 97,
			.big_size = 20000,
			.rel_mask = 0x1f,
			.channels = 4,
		};
	}
	connect_pair(s);
	if (!sim_run(s, sim_all_delivered, 600 * SEC)) {
		fail_msg("seed %llu mtu %u loss %u: not delivered by t=%llu (sent %u/%u, rx %llu/%llu) %s %s",
			 (unsigned long long)seed, mtu, loss_pm, (unsigned long long)s->now, s->ep[0].sent,
			 s->ep[1].sent, (unsigned long long)s->ep[0].rx_messages,
			 (unsigned long long)s->ep[1].rx_messages, s->ep[0].first_error,
			 s->ep[1].first_error);
	}
	sim_assert_complete(s, 0);
	sim_assert_complete(s, 1);
	for (int i = 0; i < 2; i++) {
		rudp_conn_get_stats(s->ep[i].c, &st[i]);
		assert_int_equal(rudp_conn_state(s->ep[i].c), RUDP_CONN_STATE_CONNECTED);
		assert_int_equal(st[i].datagrams_dropped, 0);
		assert_int_equal(st[i].frames_dropped, 0);
		assert_true(s->ep[i].max_dgram_seen <= (size_t)mtu - 28);
		assert_int_equal(st[i].messages_received, s->ep[i].rx_messages);
		/* Order channels are made as messages use them: the four of
		 * the workload, not all 32. */
		assert_int_equal(s->ep[i].c->rx.chans_count, 4);
		/* Without loss or reordering nothing is ever sent twice. */
		if (perfect_link)
			assert_int_equal(st[i].frames_retransmitted, 0);
		else if (loss_pm > 0)
			assert_true(st[i].frames_retransmitted > 0);
	}
	/* Every message was accepted by send and counted once. */
	assert_int_equal(st[0].messages_sent, count);
	assert_int_equal(st[1].messages_sent, count);
	/* The rate controller heard of every datagram exactly once, acked or
	 * lost, whatever the link did: nothing stays counted in flight. */
	if (cc == RUDP_CONN_CC_RATE)
		assert_true(sim_run(s, rate_flight_empty, 10 * SEC));
	sim_delete(s);
}

static void run_mixed(uint64_t seed, uint16_t mtu, uint32_t loss_pm, uint32_t count, uint32_t max_size,
		      bool perfect_link)
{
	run_mixed_cc(seed, mtu, loss_pm, count, max_size, perfect_link, RUDP_CONN_CC_NONE);
}

static void test_mixed_clean_1492(void **state)
{
	(void)state;
	run_mixed(11, 1492, 0, 3000, 3000, true);
}

static void test_mixed_loss5_1200(void **state)
{
	(void)state;
	run_mixed(12, 1200, 50, 3000, 3000, false);
}

static void test_mixed_loss15_576(void **state)
{
	(void)state;
	run_mixed(13, 576, 150, 2000, 1500, false);
}

static void test_mixed_loss30_1492(void **state)
{
	(void)state;
	run_mixed(14, 1492, 300, 1500, 2000, false);
}

/* The same with the rate controller: pacing and its window hold nothing
 * up for good, on a clean link and through loss, duplicates and reordering. */
static void test_mixed_rate(void **state)
{
	(void)state;
	run_mixed_cc(21, 1492, 0, 3000, 3000, true, RUDP_CONN_CC_RATE);
	run_mixed_cc(22, 1200, 50, 3000, 3000, false, RUDP_CONN_CC_RATE);
	run_mixed_cc(23, 576, 150, 2000, 1500, false, RUDP_CONN_CC_RATE);
	run_mixed_cc(24, 1492, 300, 1500, 2000, false, RUDP_CONN_CC_RATE);
}

static void test_mixed_many_seeds(void **state)
{
	static const uint16_t mtus[] = {576, 1200, 1492};

	(void)state;
	for (uint64_t seed = 100; seed < 112; seed++)
		run_mixed(seed, mtus[seed % 3], (uint32_t)(seed % 4) * 100, 400, 2500, false);
}

static bool quiet(struct sim *s)
{
	for (int i = 0; i < 2; i++) {
		struct rudp_conn_stats st;

		rudp_conn_get_stats(s->ep[i].c, &st);
		if (st.send_queue_bytes > 0)
			return false;
	}
	return s->heap_n == 0 && sim_all_delivered(s);
}

/* Large messages, split and reassembled, checked byte for byte. */
static void run_large(uint64_t seed, uint16_t mtu, uint32_t loss_pm, uint32_t size, uint32_t count,
		      uint8_t rel_mask)
{
	struct rudp_conn_config cfg = test_config(mtu);
	struct sim_link link = {
		.loss_pm = loss_pm,
		.dup_pm = 10,
		.reorder_pm = 50,
		.delay_us = 5 * MS,
		.jitter_us = 5 * MS,
		.reorder_us = 20 * MS,
	};
	struct sim *s;
	struct rudp_conn_stats st;

	cfg.timeout_us = 120 * SEC;
	s = sim_new(seed, &cfg, &link);
	s->ep[0].work = (struct sim_workload){
		.count = count,
		.min_size = SIM_MSG_HEADER,
		.max_size = 200,
		.big_every = 2,
		.big_size = size,
		.rel_mask = rel_mask,
		.channels = 2,
	};
	connect_pair(s);
	assert_true(sim_run(s, quiet, 3000 * SEC));
	sim_assert_complete(s, 1);
	assert_true(s->ep[1].rx_bytes >= (uint64_t)size * (count / 2));
	rudp_conn_get_stats(s->ep[1].c, &st);
	assert_int_equal(st.reassembly_bytes, 0);
	assert_int_equal(st.frames_dropped, 0);
	sim_delete(s);
}

static void test_large_1mib_loss10(void **state)
{
	(void)state;
	run_large(21, 1200, 100, 1u << 20, 4, 0x0c); /* reliable + reliable ordered */
}

static void test_large_split_unreliable(void **state)
{
	(void)state;
	/* Split unreliable messages go reliably: every big one arrives even at 5 % loss. */
	run_large(22, 576, 50, 100000, 10, 0x01);
}

static void test_large_4mib_defaults(void **state)
{
	(void)state;
	run_large(23, 576, 0, 4u << 20, 2, 0x08);
}

/* Counters start just below 2^24 so datagram seqs, reliable and order
 * indexes and split ids all wrap during the run. */
static void test_counter_wrap(void **state)
{
	struct rudp_conn_config cfg = test_config(1200);
	struct sim_link link = {
		.loss_pm = 100,
		.dup_pm = 20,
		.reorder_pm = 100,
		.delay_us = 10 * MS,
		.jitter_us = 5 * MS,
		.reorder_us = 30 * MS,
	};
	struct sim *s;

	(void)state;
	cfg.timeout_us = 120 * SEC;
	s = sim_new(31, &cfg, &link);
	for (int i = 0; i < 2; i++) {
		s->ep[i].work = (struct sim_workload){
			.count = 2500,
			.min_size = SIM_MSG_HEADER,
			.max_size = 2500,
			.big_every = 50,
			.big_size = 30000,
			.rel_mask = 0x1f,
			.channels = 3,
		};
	}
	sim_start(s);
	for (int i = 0; i < 2; i++)
		rudp_conn_test_set_counters(s->ep[i].c, 0xffff00, 0xffff80, 0xfffff0, 0xfff0);
	assert_true(sim_run(s, sim_both_connected, 30 * SEC));
	assert_true(sim_run(s, sim_all_delivered, 600 * SEC));
	sim_assert_complete(s, 0);
	sim_assert_complete(s, 1);
	for (int i = 0; i < 2; i++) {
		struct rudp_conn *c = s->ep[i].c;

		/* really wrapped */
		assert_true(c->next_dgram_seq < 0x800000);
		/* and ACKed across the wrap as two records (link_send checks that
		 * no record runs backwards) */
		assert_true(s->ack_wrap_splits > 0);
		assert_true(c->next_reliable_index < 0x800000);
		assert_true(c->chan_write[0].order < 0x800000 || c->chan_write[1].order < 0x800000);
		assert_true(c->next_split_id < 0x8000);
	}
	sim_delete(s);
}

static void run_disconnect(int initiator, uint32_t loss_pm)
{
	struct rudp_conn_config cfg = test_config(1492);
	struct sim_link link = {.loss_pm = loss_pm, .delay_us = 10 * MS, .jitter_us = 2 * MS};
	struct sim *s;
	struct sim_endpoint *a, *b;

	cfg.timeout_us = 60 * SEC;
	cfg.disconnect_linger_us = 30 * SEC;
	s = sim_new(41 + (uint64_t)initiator, &cfg, &link);
	a = &s->ep[initiator];
	b = &s->ep[1 - initiator];
	a->work = (struct sim_workload){
		.count = 300, .min_size = 20, .max_size = 3000, .rel_mask = 0x0c, .channels = 3};
	connect_pair(s);
	/* Queue the data, then disconnect at once: the data must still arrive. */
	sim_step(s);
	assert_int_equal(a->sent, 300);
	rudp_conn_disconnect(a->c, s->now);
	assert_int_equal(rudp_conn_state(a->c), RUDP_CONN_STATE_DISCONNECTING);
	assert_int_equal(rudp_conn_send(a->c, (const uint8_t *)"\xfe", 1, 3, 0, s->now), RUDP_CONN_E_STATE);
	rudp_conn_disconnect(a->c, s->now); /* no-op */
	assert_true(sim_run(s, sim_both_closed, 60 * SEC));
	assert_int_equal(a->closed_calls, 1);
	assert_int_equal(b->closed_calls, 1);
	assert_int_equal(a->reason, RUDP_CONN_CLOSE_LOCAL);
	assert_int_equal(b->reason, RUDP_CONN_CLOSE_REMOTE);
	sim_assert_complete(s, 1 - initiator);
	if (loss_pm == 0) {
		/* The initiator closed on the ACK of its 0x15, not on the linger. */
		assert_true(a->closed_at < b->closed_at + 20 * MS);
	}
	/* Closed conns stay quiet and refuse work. */
	assert_int_equal(rudp_conn_next_deadline(a->c), UINT64_MAX);
	assert_int_equal(rudp_conn_flush(a->c, s->now + SEC), 0);
	assert_int_equal(rudp_conn_send(b->c, (const uint8_t *)"\xfe", 1, 3, 0, s->now), RUDP_CONN_E_STATE);
	sim_delete(s);
}

static void test_disconnect_by_client(void **state)
{
	(void)state;
	run_disconnect(0, 0);
}

static void test_disconnect_by_server(void **state)
{
	(void)state;
	run_disconnect(1, 0);
}

static void test_disconnect_lossy(void **state)
{
	(void)state;
	run_disconnect(0, 150);
	run_disconnect(1, 150);
}

static bool both_closed_or_timeout(struct sim *s)
{
	return sim_both_closed(s);
}

static void test_dead_peer_timeout(void **state)
{
	struct rudp_conn_config cfg = test_config(1200);
	struct sim *s = sim_new(51, &cfg, &clean_link);
	uint64_t silent_at;

	(void)state;
	connect_pair(s);
	/* Idle but alive: keepalive pings keep both sides up well past timeout_us. */
	s->ep[0].work = (struct sim_workload){.count = 0};
	{
		uint64_t until = s->now + 3 * cfg.timeout_us;

		while (s->now < until)
			sim_step(s);
	}
	assert_true(sim_both_connected(s));
	/* Now the link dies. */
	s->silent = true;
	silent_at = s->now;
	assert_true(sim_run(s, both_closed_or_timeout, 2 * cfg.timeout_us));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(s->ep[i].reason, RUDP_CONN_CLOSE_TIMEOUT);
		assert_true(s->ep[i].closed_at <= silent_at + cfg.timeout_us + cfg.keepalive_us);
		assert_true(s->ep[i].closed_at >= silent_at + cfg.timeout_us - cfg.keepalive_us - 20 * MS);
	}
	sim_delete(s);
}

static void test_unacked_data_timeout(void **state)
{
	struct rudp_conn_config cfg = test_config(1200);
	struct sim_link link = clean_link;
	struct sim *s;
	uint8_t msg[100];

	(void)state;
	cfg.timeout_us = 5 * SEC;
	s = sim_new(52, &cfg, &link);
	connect_pair(s);
	/* Only client->server dies; the server keeps pinging, so the client hears
	 * from it, but its data is never acked. */
	s->silent = true;
	sim_make_message(msg, sizeof(msg), 3, 0, 0);
	assert_int_equal(rudp_conn_send(s->ep[0].c, msg, sizeof(msg), 3, 0, s->now), 0);
	assert_true(sim_run(s, both_closed_or_timeout, 20 * SEC));
	assert_int_equal(s->ep[0].reason, RUDP_CONN_CLOSE_TIMEOUT);
	sim_delete(s);
}

static void test_connect_timeout(void **state)
{
	struct rudp_conn_config cfg = test_config(1492);
	struct sim *s = sim_new(53, &cfg, &clean_link);

	(void)state;
	s->silent = true;
	sim_start(s);
	assert_true(sim_run(s, sim_both_closed, 2 * cfg.connect_timeout_us));
	assert_int_equal(s->ep[0].reason, RUDP_CONN_CLOSE_CONNECT_FAILED);
	assert_int_equal(s->ep[1].reason, RUDP_CONN_CLOSE_CONNECT_FAILED);
	assert_int_equal(s->ep[0].closed_at, 1000000 + cfg.connect_timeout_us);
	assert_int_equal(s->ep[0].connected_calls, 0);
	sim_delete(s);
}

/* Lost ACKs: the data arrived, but the sender hears nothing for some frames.
 * Later ACKs show that frames sent after them got through, so the sender
 * resends them at once instead of stalling its window until the RTO (1 s
 * here). With congestion control cc (an enum rudp_conn_cc). */
static void lost_acks_inferred(uint8_t cc)
{
	struct rudp_conn_config cfg = test_config(1492);
	struct sim_link link = {.delay_us = 10 * MS, .ack_loss_pm = 100};
	struct sim *s;
	uint64_t start;

	cfg.congestion_control = cc;
	cfg.rto_min_us = SEC;
	cfg.rto_initial_us = SEC;
	s = sim_new(31, &cfg, &link);
	s->ep[0].work = (struct sim_workload){
		.count = 3000,
		.min_size = 600,
		.max_size = 1000,
		.rel_mask = 1u << RUDP_WIRE_RELIABLE_ORDERED,
		.channels = 1,
	};
	connect_pair(s);
	start = s->now;
	assert_true(sim_run(s, sim_all_delivered, 600 * SEC));
	sim_assert_complete(s, 1);
	/* One channel in use, one made (plus none on the sender, which
	 * received nothing ordered). */
	assert_int_equal(s->ep[1].c->rx.chans_count, 1);
	assert_int_equal(s->ep[0].c->rx.chans_count, 0);
	print_message("3000 messages with 10 %% ACK loss, cc %u: %.3f s of virtual time\n", cc,
		      (double)(s->now - start) / SEC);
	/* Measured: 1.28 s; without the inference (probes and RTO only) 2.96 s.
	 * Before ACKs repeated recent ranges 1.02 s, but that is this seed's
	 * luck: this link delivers a window at one instant, so one ACK covers
	 * it and its loss waits for a tail probe either way; over seeds 31-42
	 * the median went from 1.23 to 1.10 s. */
	assert_true(s->now - start < 2 * SEC);
	{
		struct rudp_conn_stats st;

		rudp_conn_get_stats(s->ep[0].c, &st);
		print_message("  resent: nack %" PRIu64 ", inferred %" PRIu64 ", probe %" PRIu64
			      ", timeout %" PRIu64 "\n",
			      st.resent_nack, st.resent_inferred, st.resent_probe, st.resent_timeout);
		/* Only ACKs are lost: no NACK, and nothing waits for the RTO. */
		assert_int_equal(st.resent_nack, 0);
		assert_int_equal(st.resent_timeout, 0);
		assert_int_equal(st.frames_retransmitted,
				 st.resent_nack + st.resent_inferred + st.resent_probe + st.resent_timeout);
		/* Without pacing this link delivers a window at one instant, so
		 * one ACK covers it and its loss leaves nothing later to infer
		 * from: what is resent goes as tail probes (measured: 9, no
		 * other cause). */
		if (cc == RUDP_CONN_CC_NONE)
			assert_true(st.resent_probe > 0);
	}
	sim_delete(s);
}

static void test_lost_acks_inferred(void **state)
{
	(void)state;
	lost_acks_inferred(RUDP_CONN_CC_NONE);
	lost_acks_inferred(RUDP_CONN_CC_RATE);
}

/* The last datagram of a burst is lost: nothing after it can reveal the gap,
 * so only a tail-loss probe (about two RTTs) recovers it before the RTO.
 * With the RTO floor at 1 s, delivery within 200 ms proves the probe. */
static void test_tail_loss_probe(void **state)
{
	struct rudp_conn_config cfg = test_config(1492);
	struct sim *s;
	struct rudp_conn_stats st;
	uint8_t msg[50];
	uint64_t start, sent_before;

	(void)state;
	cfg.rto_min_us = SEC;
	cfg.rto_initial_us = SEC;
	s = sim_new(77, &cfg, &clean_link);
	connect_pair(s);
	for (int i = 0; i < 50; i++)
		sim_step(s);
	rudp_conn_get_stats(s->ep[0].c, &st);
	sent_before = st.datagrams_sent;
	s->silent = true;
	start = s->now;
	sim_make_message(msg, sizeof(msg), 2, 0, 0);
	assert_int_equal(rudp_conn_send(s->ep[0].c, msg, sizeof(msg), 2, 0, s->now), 0);
	s->ep[0].sent = 1;
	s->ep[0].tx_next[2][0] = 1;
	while (st.datagrams_sent == sent_before) {
		sim_step(s);
		rudp_conn_get_stats(s->ep[0].c, &st);
	}
	s->silent = false;
	assert_true(sim_run(s, sim_all_delivered, 10 * SEC));
	assert_true(s->now - start < 200 * 1000);
	rudp_conn_get_stats(s->ep[0].c, &st);
	assert_int_equal(st.frames_retransmitted, 1);
	assert_int_equal(st.resent_probe, 1);
	sim_delete(s);
}

static void send_burst(struct sim *s, uint32_t n, uint32_t len)
{
	uint8_t msg[1000];

	assert_true(len <= sizeof(msg));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t seq = s->ep[0].tx_next[RUDP_WIRE_RELIABLE_ORDERED][0]++;

		sim_make_message(msg, len, RUDP_WIRE_RELIABLE_ORDERED, 0, seq);
		assert_int_equal(rudp_conn_send(s->ep[0].c, msg, len, RUDP_WIRE_RELIABLE_ORDERED, 0, s->now),
				 0);
		s->ep[0].sent++;
	}
	s->ep[0].work.count = s->ep[0].sent;
}

static bool never_done(struct sim *s)
{
	(void)s;
	return false;
}

static bool client_all_acked(struct sim *s)
{
	return s->ep[0].c->rel.frames_count == 0;
}

/* The send ring a burst grew is given back once the connection has been
 * idle (everything acknowledged) for a second, through the flushes an idle
 * connection still makes (keepalive), and the next burst grows it again
 * with every message delivered intact. */
static void test_idle_send_ring_shrinks(void **state)
{
	struct rudp_conn_config cfg = test_config(1492);
	struct sim *s;

	(void)state;
	s = sim_new(5, &cfg, &clean_link);
	connect_pair(s);
	for (int burst = 0; burst < 2; burst++) {
		uint64_t start = s->now;

		send_burst(s, 60, 1000);
		assert_int_equal(s->ep[0].c->rel.ring.cap, 65536);
		assert_true(sim_run(s, sim_all_delivered, 10 * SEC));
		assert_true(sim_run(s, client_all_acked, 10 * SEC));
		/* Acknowledged, but grown under a second ago: kept. */
		assert_true(s->now - start < SEC);
		assert_int_equal(s->ep[0].c->rel.ring.cap, 65536);
		sim_run(s, never_done, 3 * SEC);
		assert_int_equal(s->ep[0].c->rel.ring.cap, 16384);
	}
	sim_assert_complete(s, 1);
	sim_delete(s);
}

static void test_retransmit_backoff(void **state)
{
	struct rudp_conn_config cfg = test_config(1492);
	struct sim *s = sim_new(54, &cfg, &clean_link);
	struct rudp_conn_stats st;
	uint8_t msg[50];
	uint64_t start;

	(void)state;
	cfg.timeout_us = 60 * SEC;
	connect_pair(s);
	for (int i = 0; i < 50; i++)
		sim_step(s);
	rudp_conn_get_stats(s->ep[0].c, &st);
	assert_int_equal(st.frames_retransmitted, 0);
	/* Drop everything for a while: retransmissions back off (RTO doubles each
	 * time, capped), so only a handful happen in 5 s. */
	s->silent = true;
	start = s->now;
	sim_make_message(msg, sizeof(msg), 2, 0, 0);
	assert_int_equal(rudp_conn_send(s->ep[0].c, msg, sizeof(msg), 2, 0, s->now), 0);
	while (s->now < start + 5 * SEC)
		sim_step(s);
	rudp_conn_get_stats(s->ep[0].c, &st);
	/* Two tail-loss probes (about 2 RTT apart, then no more without an ACK),
	 * then the RTO ~ 50 ms floor (RTT 20 ms): 50, 100, 200, 400, 800, 1600,
	 * then 2000-capped. */
	assert_true(st.frames_retransmitted >= 7 && st.frames_retransmitted <= 10);
	s->silent = false;
	assert_true(sim_run(s, sim_all_delivered, 10 * SEC));
	{
		uint64_t until = s->now + SEC;

		while (s->now < until)
			sim_step(s);
	}
	assert_int_equal(s->ep[1].rx[2][0].delivered, 1);
	rudp_conn_get_stats(s->ep[0].c, &st);
	assert_int_equal(st.window_in_use, 0);
	sim_delete(s);
}

/* The conn config a host with rudp_config_init's RTO defaults gives its
 * conns, with the congestion window on or off. */
static struct rudp_conn_config host_like_config(uint8_t cc)
{
	struct rudp_conn_config cfg = test_config(1492);

	cfg.rto_min_us = 30 * MS;
	cfg.rto_initial_us = 200 * MS;
	cfg.congestion_control = cc;
	return cfg;
}

/* rudp-bench's echo: the client keeps 64 reliable-ordered messages of
 * `size` bytes awaiting their echo, the server sends each straight back. */
static void set_echo_workload(struct sim *s, uint32_t count, uint32_t size)
{
	s->ep[0].work = (struct sim_workload){
		.count = count,
		.min_size = size,
		.max_size = size,
		.rel_mask = 1u << RUDP_WIRE_RELIABLE_ORDERED,
		.channels = 1,
		.max_outstanding = 64,
	};
	s->ep[1].work = (struct sim_workload){.echo = true};
}

/* Connects, runs until every message arrived, checks both sides'
 * reception; returns the virtual time the workload took. */
static uint64_t run_workload(struct sim *s)
{
	uint64_t start;

	connect_pair(s);
	start = s->now;
	assert_true(sim_run(s, sim_all_delivered, 600 * SEC));
	sim_assert_complete(s, 0);
	sim_assert_complete(s, 1);
	return s->now - start;
}

/*
 * rudp-bench's single-connection echo (64 messages awaiting their echo,
 * reliable ordered) on a loopback-like path with random loss both ways:
 * each side one thread spending 3 us per datagram, reading what arrived
 * meanwhile as one batch, with millisecond timers as the host's wait.
 * Recovery has to come from ACKs and NACKs within about an RTT: any wait
 * for a timer costs a millisecond, hundreds of datagram times.
 */
static uint64_t run_echo(uint8_t cc, uint64_t seed, uint32_t loss_pm, uint32_t size, uint32_t count,
			 uint64_t delay_us, uint64_t *retx, uint64_t *lost)
{
	struct rudp_conn_config cfg = host_like_config(cc);
	struct sim_link link = {.loss_pm = loss_pm, .delay_us = delay_us};
	struct rudp_conn_stats st;
	struct sim *s;
	uint64_t took;

	s = sim_new(seed, &cfg, &link);
	s->cpu_us = 3;
	s->timer_granularity_us = MS;
	set_echo_workload(s, count, size);
	took = run_workload(s);
	*retx = 0;
	for (int i = 0; i < 2; i++) {
		rudp_conn_get_stats(s->ep[i].c, &st);
		*retx += st.frames_retransmitted;
	}
	*lost = s->dgrams_lost;
	print_message(
		"echo%s %u x %u B, %u per mille each way, %llu us one way, seed %llu: %.4f s, %llu resends, "
		"%llu datagrams lost\n",
		cc == RUDP_CONN_CC_RATE ? " (rate)"
		: cc                    ? ""
					: " (no cc)",
		count, size, loss_pm, (unsigned long long)delay_us, (unsigned long long)seed,
		(double)took / SEC, (unsigned long long)*retx, (unsigned long long)*lost);
	sim_delete(s);
	return took;
}

static void test_echo_loss_recovery(void **state)
{
	uint64_t retx, lost, clean;

	(void)state;
	/* Recovery itself, without the congestion window (cc on:
	 * test_echo_loss_with_cc). */
	clean = run_echo(false, 61, 0, 800, 10000, 25, &retx, &lost);
	assert_int_equal(retx, 0);
	/* Measured: 0.063 s without loss; at 5 % 0.075-0.077 s (seeds 61-63),
	 * where the code before ACK-count loss inference, repeated ACK ranges
	 * and the minimum-RTT NACK guard took 0.31-0.33 s (recovery waited for
	 * 2 ms tail probes after lost ACKs and NACKs). Bound: under
	 * twice the clean time. */
	for (uint64_t seed = 61; seed < 64; seed++) {
		assert_true(run_echo(false, seed, 50, 800, 10000, 25, &retx, &lost) < 2 * clean);
		/* One frame per datagram here: a lost ACK costs no resend, so
		 * there are fewer resends than lost datagrams (before: 1.6x). */
		assert_true(retx <= lost);
	}
	/* Eight 64 B messages per datagram: 0.029 s at 5 % (before: 0.148 s). */
	assert_true(run_echo(false, 64, 50, 64, 10000, 25, &retx, &lost) < 60 * MS);
	/* A 10 ms RTT: each loss stalls ordered delivery for about one RTT,
	 * nothing more: 1 % loss costs 1.47x the clean time (before the
	 * recovery work: 1.83x). */
	clean = run_echo(false, 65, 0, 800, 2000, 5 * MS, &retx, &lost);
	assert_true(run_echo(false, 65, 10, 800, 2000, 5 * MS, &retx, &lost) < clean * 3 / 2);
}

/*
 * A bottleneck with a router's queue: 10,000 datagrams a second, 20 ms
 * RTT (a bandwidth-delay product of 200 datagrams), 50 datagrams of queue,
 * drop-tail. The sender's reliable window (1,024 frames of 1,000 B, one
 * per datagram) is four times what the path holds. Without congestion
 * control the window overfills the queue round after round and the drops
 * and their resends eat the link; with it the window settles around what
 * the path carries.
 */
static uint64_t run_bottleneck(bool cc, uint32_t queue, uint64_t *queue_drops, uint64_t *retx,
			       uint32_t *reductions)
{
	struct rudp_conn_config cfg = host_like_config(cc);
	struct sim_link link = {.delay_us = 10 * MS, .tx_us = 100, .queue_max = queue};
	struct rudp_conn_stats st;
	struct sim *s;
	uint64_t took;

	cfg.window_frames = 1024;
	cfg.recv_window = 4096;
	s = sim_new(71, &cfg, &link);
	s->timer_granularity_us = MS;
	s->ep[0].work = (struct sim_workload){
		.count = 20000,
		.min_size = 1000,
		.max_size = 1000,
		.rel_mask = 1u << RUDP_WIRE_RELIABLE_ORDERED,
		.channels = 1,
	};
	s->ep[1].work = (struct sim_workload){.count = 0};
	took = run_workload(s);
	rudp_conn_get_stats(s->ep[0].c, &st);
	*queue_drops = s->dgrams_queue_dropped;
	*retx = st.frames_retransmitted;
	*reductions = (uint32_t)st.cc_reductions;
	print_message(
		"bottleneck%s, queue %u: 20000 x 1000 B in %.3f s (line rate 2.000 s), %llu queue drops, "
		"%llu resends, %u window reductions, final window %u B\n",
		cc ? "" : " (no cc)", queue, (double)took / SEC, (unsigned long long)*queue_drops,
		(unsigned long long)*retx, *reductions, st.cwnd_bytes);
	sim_delete(s);
	return took;
}

/*
 * rudp-bench's echo (64 messages awaiting their echo) over a 4 ms RTT
 * path with a 20-datagram queue at 20 us per datagram each way, and 1 %
 * random loss: the queue holds 0.4 ms, too little to raise the RTT by the
 * 2 ms that counts as queueing, so nothing tells its overflow from the
 * random loss.
 */
static uint64_t run_shallow_echo(bool cc, uint64_t *queue_drops, uint32_t *reductions)
{
	struct rudp_conn_config cfg = host_like_config(cc);
	struct sim_link link = {.loss_pm = 10, .delay_us = 2 * MS, .tx_us = 20, .queue_max = 20};
	struct rudp_conn_stats st;
	struct sim *s;
	uint64_t took;

	s = sim_new(1, &cfg, &link);
	s->timer_granularity_us = MS;
	set_echo_workload(s, 5000, 800);
	took = run_workload(s);
	rudp_conn_get_stats(s->ep[0].c, &st);
	*queue_drops = s->dgrams_queue_dropped;
	*reductions = (uint32_t)st.cc_reductions;
	print_message(
		"shallow queue echo%s: 5000 x 800 B in %.3f s, %llu queue drops, %u window reductions\n",
		cc ? "" : " (no cc)", (double)took / SEC, (unsigned long long)*queue_drops, *reductions);
	sim_delete(s);
	return took;
}

static void test_congestion_bottleneck(void **state)
{
	uint64_t drops_cc, retx_cc, drops_plain, retx_plain, t_cc, t_plain;
	uint32_t red_cc, red_plain;

	(void)state;
	t_cc = run_bottleneck(true, 50, &drops_cc, &retx_cc, &red_cc);
	t_plain = run_bottleneck(false, 50, &drops_plain, &retx_plain, &red_plain);
	/* Measured: 2.10 s, 143 drops, 121 resends, 2 reductions with the
	 * window; 8.39 s and 97,484 drops (each resent) without. */
	assert_true(red_cc > 0 && red_plain == 0);
	assert_true(drops_cc <= 200 && retx_cc <= 2 * drops_cc + 50);
	assert_true(drops_plain > 20 * drops_cc);
	assert_true(t_cc < 4 * SEC && t_cc * 2 < t_plain);
	/* A queue of five datagrams (0.5 ms, too shallow to raise the RTT
	 * past the 2 ms it must rise by): what says "congestion" is resends
	 * lost again, which random loss rarely does. */
	t_cc = run_bottleneck(true, 5, &drops_cc, &retx_cc, &red_cc);
	t_plain = run_bottleneck(false, 5, &drops_plain, &retx_plain, &red_plain);
	/* Measured: 4.27 s, 26 drops, 1 reduction with the window (it sits
	 * below the path's 200 datagrams for a while after it); 83.6 s and
	 * 1,037,085 drops without. When the retransmission timer ran from
	 * each frame's send, timeouts during loss recovery were the signal
	 * here (4.77 s, 53 drops); with it restarted on ACK progress and no
	 * lost-resend rule the window never shrank (67.9 s, 855,612 drops). */
	assert_true(red_cc > 0 && drops_cc <= 200 && retx_cc <= 2 * drops_cc + 50);
	assert_true(drops_plain > 100 * drops_cc);
	assert_true(t_cc < 6 * SEC && t_cc * 4 < t_plain);
	/* A queue too shallow to raise the RTT past its threshold, with 1 %
	 * random loss besides: only lost resends tell its overflow (measured:
	 * 0.882 s, 1,032 drops, 11 reductions, against 1.186 s and 3,435
	 * without the window; 1.117 s and 3,270 drops before resends lost
	 * again counted). What is checked: no worse than without the window. */
	t_cc = run_shallow_echo(true, &drops_cc, &red_cc);
	t_plain = run_shallow_echo(false, &drops_plain, &red_plain);
	assert_true(t_cc <= t_plain && drops_cc <= drops_plain);
}

/*
 * The same echo with the congestion window on (RUDP_CC_AIMD). The loss
 * here is random: the RTT never rises above the path's minimum, so no
 * loss reads as congestion (cc_queue_is_building) and the echo keeps its
 * pace; without loss the window never limits.
 */
static void test_echo_loss_with_cc(void **state)
{
	uint64_t retx, lost, clean, plain;

	(void)state;
	clean = run_echo(true, 61, 0, 800, 10000, 25, &retx, &lost);
	plain = run_echo(false, 61, 0, 800, 10000, 25, &retx, &lost);
	/* Measured: 0.0628 s with the window, 0.0629 s without. */
	assert_true(clean <= plain + plain / 50);
	/* Measured at 5 %: 0.076-0.077 s (without the window 0.075-0.077 s;
	 * 0.118-0.128 s when every loss shrank the window); at 1 %: 0.067 s. */
	for (uint64_t seed = 61; seed < 64; seed++) {
		plain = run_echo(false, seed, 50, 800, 10000, 25, &retx, &lost);
		assert_true(run_echo(true, seed, 50, 800, 10000, 25, &retx, &lost) < plain + plain / 10);
		assert_true(run_echo(true, seed, 10, 800, 10000, 25, &retx, &lost) < 5 * clean / 4);
	}
	/* A 10 ms RTT at 1 %: 0.47 s (without the window 0.43 s; 0.90 s when
	 * every loss shrank it). */
	plain = run_echo(false, 65, 10, 800, 2000, 5 * MS, &retx, &lost);
	assert_true(run_echo(true, 65, 10, 800, 2000, 5 * MS, &retx, &lost) < plain * 5 / 4);
}

/*
 * The same echo with the rate controller (RUDP_CC_RATE). An echo is
 * application-limited (64 messages out at a time): unless the controller
 * is told so, its rate samples measure the echo, not the path, and it
 * paces the echo at its own pace. Random loss does not slow it either.
 */
static void test_echo_with_rate(void **state)
{
	uint64_t retx, lost, plain;

	(void)state;
	plain = run_echo(RUDP_CONN_CC_NONE, 61, 0, 800, 10000, 25, &retx, &lost);
	assert_true(run_echo(RUDP_CONN_CC_RATE, 61, 0, 800, 10000, 25, &retx, &lost) <= plain + plain / 20);
	for (uint64_t seed = 61; seed < 64; seed++) {
		plain = run_echo(RUDP_CONN_CC_NONE, seed, 50, 800, 10000, 25, &retx, &lost);
		assert_true(run_echo(RUDP_CONN_CC_RATE, seed, 50, 800, 10000, 25, &retx, &lost) <
			    plain + plain / 10);
	}
	plain = run_echo(RUDP_CONN_CC_NONE, 65, 10, 800, 2000, 5 * MS, &retx, &lost);
	assert_true(run_echo(RUDP_CONN_CC_RATE, 65, 10, 800, 2000, 5 * MS, &retx, &lost) < plain * 5 / 4);
}

static bool server_got_half(struct sim *s)
{
	return s->ep[1].rx_messages >= s->ep[0].work.count / 2;
}

/*
 * One transfer of unreliable, unreliable-sequenced and reliable-ordered
 * messages on a clean link; with forge, a datagram from the client's
 * address whose seq lies far ahead reaches the server halfway through.
 * Returns when the last message arrived.
 */
static uint64_t run_forged_seq(bool forge, struct rudp_conn_stats st[2], uint32_t unrel_rx[2])
{
	struct rudp_conn_config cfg = test_config(1492);
	struct sim *s = sim_new(71, &cfg, &clean_link);
	uint64_t done_at;

	s->ep[0].work = (struct sim_workload){
		.count = 20000,
		.min_size = SIM_MSG_HEADER,
		.max_size = 600,
		.rel_mask = 0x0b, /* unreliable, unreliable-sequenced, reliable-ordered */
		.channels = 2,
	};
	connect_pair(s);
	assert_true(sim_run(s, server_got_half, 600 * SEC));
	if (forge) {
		/* A connected ping (0x00), unreliable: well formed in every way but its seq. */
		uint8_t dgram[64], ping[9] = {0x00};
		struct rudp_wire_dgram_header h = {
			.flags = 0x84, .seq = rudp_u24_add(s->ep[1].c->acktr.highest_dgram_seq, 100000)};
		struct rudp_wire_frame f = {.reliability = 0, .body = ping, .body_len = sizeof(ping)};
		int off = rudp_wire_encode_dgram_header(dgram, sizeof(dgram), &h);

		assert_true(off > 0);
		off += rudp_wire_encode_frame(dgram + off, sizeof(dgram) - (size_t)off, &f);
		assert_int_equal(rudp_conn_on_datagram(s->ep[1].c, dgram, (size_t)off, s->now),
				 RUDP_WIRE_BAD_VALUE);
	}
	assert_true(sim_run(s, sim_all_delivered, 600 * SEC));
	done_at = s->now;
	sim_assert_complete(s, 1);
	for (int i = 0; i < 2; i++)
		rudp_conn_get_stats(s->ep[i].c, &st[i]);
	for (int r = 0; r < 2; r++) {
		unrel_rx[r] = 0;
		for (int ch = 0; ch < 2; ch++)
			unrel_rx[r] += s->ep[1].rx[r][ch].delivered;
	}
	sim_delete(s);
	return done_at;
}

/* A datagram with a sequence number far ahead (forged from the peer's
 * address, or corrupted) is dropped, not adopted: the genuine datagrams
 * after it are not taken for old ones, so their unreliable frames still
 * arrive, ACKs still flow, and the transfer takes exactly as long. */
static void test_datagram_seq_jump(void **state)
{
	struct rudp_conn_stats plain[2], forged[2];
	uint32_t plain_unrel[2], forged_unrel[2];
	uint64_t plain_time, forged_time;

	(void)state;
	plain_time = run_forged_seq(false, plain, plain_unrel);
	forged_time = run_forged_seq(true, forged, forged_unrel);
	assert_int_equal(forged_time, plain_time);
	assert_int_equal(forged[1].datagrams_dropped, plain[1].datagrams_dropped + 1);
	assert_int_equal(forged_unrel[0], plain_unrel[0]);
	assert_int_equal(forged_unrel[1], plain_unrel[1]);
	assert_true(forged_unrel[0] > 0 && forged_unrel[1] > 0);
	/* The client heard about every datagram as before: nothing resent. */
	assert_int_equal(forged[0].acks_received, plain[0].acks_received);
	assert_int_equal(forged[0].frames_retransmitted, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_send_errors),
		cmocka_unit_test(test_mixed_clean_1492),
		cmocka_unit_test(test_mixed_loss5_1200),
		cmocka_unit_test(test_mixed_loss15_576),
		cmocka_unit_test(test_mixed_loss30_1492),
		cmocka_unit_test(test_mixed_rate),
		cmocka_unit_test(test_mixed_many_seeds),
		cmocka_unit_test(test_large_1mib_loss10),
		cmocka_unit_test(test_large_split_unreliable),
		cmocka_unit_test(test_large_4mib_defaults),
		cmocka_unit_test(test_counter_wrap),
		cmocka_unit_test(test_disconnect_by_client),
		cmocka_unit_test(test_disconnect_by_server),
		cmocka_unit_test(test_disconnect_lossy),
		cmocka_unit_test(test_dead_peer_timeout),
		cmocka_unit_test(test_unacked_data_timeout),
		cmocka_unit_test(test_connect_timeout),
		cmocka_unit_test(test_retransmit_backoff),
		cmocka_unit_test(test_tail_loss_probe),
		cmocka_unit_test(test_idle_send_ring_shrinks),
		cmocka_unit_test(test_lost_acks_inferred),
		cmocka_unit_test(test_echo_loss_recovery),
		cmocka_unit_test(test_echo_loss_with_cc),
		cmocka_unit_test(test_echo_with_rate),
		cmocka_unit_test(test_congestion_bottleneck),
		cmocka_unit_test(test_datagram_seq_jump),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
