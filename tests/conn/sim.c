/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"
#include "test_heap.h"
#include "test_rng.h"

/* ---- the link: a min-heap of datagrams by delivery time ---- */

static bool pkt_before(const void *a, const void *b)
{
	const struct sim_packet *x = a, *y = b;

	return x->deliver_at < y->deliver_at || (x->deliver_at == y->deliver_at && x->serial < y->serial);
}

static void heap_push(struct sim *s, struct sim_packet *p)
{
	if (s->heap_n == s->heap_cap) {
		s->heap_cap = s->heap_cap ? s->heap_cap * 2 : 256;
		s->heap = realloc(s->heap, s->heap_cap * sizeof(*s->heap));
		assert_non_null(s->heap);
	}
	test_heap_push(s->heap, &s->heap_n, p, pkt_before);
}

static struct sim_packet *heap_pop(struct sim *s)
{
	return test_heap_pop(s->heap, &s->heap_n, pkt_before);
}

static const struct sim_packet *heap_top(const struct sim *s)
{
	return s->heap[0];
}

static void link_send(struct sim *s, int to, const uint8_t *data, size_t len)
{
	uint32_t copies = 1;
	uint64_t start = s->now;

	if (s->cpu_us) {
		start = s->send_clock;
		s->send_clock += s->cpu_us;
	}
	s->dgrams_sent++;
	if (len > 0 && (data[0] & RUDP_DGRAM_VALID) && (data[0] & (RUDP_DGRAM_ACK | RUDP_DGRAM_NACK))) {
		/* RakNet peers walk a record from start up to end: none may run
		 * across the wrap (the encoder splits such a range in two). */
		static struct rudp_wire_range r[1024];
		size_t n = 0, dropped = 0;
		bool nack;

		assert_int_equal(rudp_wire_decode_ack(data, len, r, 1024, &n, &dropped, &nack), 0);
		for (size_t i = 0; i < n; i++) {
			assert_true(r[i].start <= r[i].end);
			if (i + 1 < n && r[i].end == RUDP_WIRE_U24_MASK && r[i + 1].start == 0)
				s->ack_wrap_splits++;
		}
	}
	if (s->link.tx_us) {
		/* A full queue drops the datagram before it costs the link anything. */
		if (s->link.queue_max && s->link_free[to] > start &&
		    (s->link_free[to] - start) / s->link.tx_us >= s->link.queue_max) {
			s->dgrams_lost++;
			s->dgrams_queue_dropped++;
			return;
		}
		/* Charged before the loss decision: a dropped datagram cost its
		 * sender as much as a delivered one. */
		if (s->link_free[to] > start)
			start = s->link_free[to];
		start += s->link.tx_us;
		s->link_free[to] = start;
	}
	if (s->link.rate_bps) {
		uint64_t wire = len + s->cfg.ip_udp_overhead, rate = s->link.rate_bps;
		uint64_t wait = s->rate_free[to] > start ? s->rate_free[to] - start : 0;

		/* What waits ahead of it, in bytes: the queue's fill. */
		if (s->link.queue_bytes && wait * rate / 1000000 + wire > s->link.queue_bytes) {
			s->dgrams_lost++;
			s->dgrams_queue_dropped++;
			return;
		}
		s->rate_dgrams[to]++;
		s->rate_wait_us[to] += wait;
		if (wait > s->rate_wait_max_us[to])
			s->rate_wait_max_us[to] = wait;
		start += wait + (wire * 1000000 + rate - 1) / rate;
		s->rate_free[to] = start;
	}
	if (len > 0 && !(data[0] & (RUDP_DGRAM_ACK | RUDP_DGRAM_NACK)) && s->drop_data_next[1 - to] > 0) {
		if (s->drop_data_skip[1 - to] > 0) {
			s->drop_data_skip[1 - to]--;
		} else {
			s->drop_data_next[1 - to]--;
			s->data_dropped_at[1 - to] = s->now;
			s->dgrams_lost++;
			return;
		}
	}
	if (len > 0 && (data[0] & RUDP_DGRAM_VALID) && (data[0] & s->drop_ctl_flags[1 - to]) &&
	    s->now < s->drop_ctl_until[1 - to]) {
		s->dgrams_lost++;
		return;
	}
	if (s->silent || rng_below(&s->rng, 1000) < s->link.loss_pm ||
	    (s->link.ack_loss_pm && len > 0 && (data[0] & RUDP_DGRAM_ACK) &&
	     rng_below(&s->rng, 1000) < s->link.ack_loss_pm)) {
		s->dgrams_lost++;
		return;
	}
	if (rng_below(&s->rng, 1000) < s->link.dup_pm) {
		copies = 2;
		s->dgrams_duplicated++;
	}
	for (uint32_t i = 0; i < copies; i++) {
		struct sim_packet *p = malloc(sizeof(*p));

		assert_non_null(p);
		p->deliver_at =
			start + s->link.delay_us + rng_below(&s->rng, (uint32_t)s->link.jitter_us + 1);
		if (rng_below(&s->rng, 1000) < s->link.reorder_pm)
			p->deliver_at += rng_below(&s->rng, (uint32_t)s->link.reorder_us + 1);
		/* Late hosts delay what queues behind too: in order. */
		if (s->link.late_us || s->link.host_queue_us) {
			if (s->link.late_us &&
			    (!s->link.late_pm || rng_below(&s->rng, 1000) < s->link.late_pm))
				p->deliver_at += rng_below(&s->rng, (uint32_t)s->link.late_us + 1);
			if (s->link.host_queue_us && s->now >= s->host_queue_until[to]) {
				uint64_t span = s->link.host_queue_us - s->link.host_queue_min_us;

				s->host_queue_now[to] =
					s->link.host_queue_min_us + rng_below(&s->rng, (uint32_t)span + 1);
				s->host_queue_until[to] = s->now + s->link.host_queue_step_us;
			}
			p->deliver_at += s->host_queue_now[to];
			if (p->deliver_at < s->late_last[to])
				p->deliver_at = s->late_last[to];
			s->late_last[to] = p->deliver_at;
		}
		p->serial = s->serial++;
		p->to = to;
		p->len = (uint16_t)len;
		memcpy(p->data, data, len);
		heap_push(s, p);
	}
}

/* ---- messages ---- */

static uint8_t pattern_byte(uint8_t rel, uint8_t ch, uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131u + i * 7u + rel * 13u + ch + (i >> 8) * 3u);
}

void sim_make_message(uint8_t *buf, uint32_t len, uint8_t rel, uint8_t ch, uint32_t seq)
{
	buf[0] = SIM_MARK;
	buf[1] = rel;
	buf[2] = ch;
	memcpy(buf + 3, &seq, 4);
	memcpy(buf + 7, &len, 4);
	for (uint32_t i = SIM_MSG_HEADER; i < len; i++)
		buf[i] = pattern_byte(rel, ch, seq, i);
}

static void ep_error(struct sim_endpoint *e, const char *what, uint32_t a, uint32_t b)
{
	if (e->errors++ == 0)
		snprintf(e->first_error, sizeof(e->first_error), "ep%d t=%llu: %s (%u, %u)", e->idx,
			 (unsigned long long)e->sim->now, what, a, b);
}

/* ---- callbacks ---- */

static int cb_send(void *ud, const uint8_t *data, size_t len)
{
	struct sim_endpoint *e = ud;

	if (len > e->max_dgram_seen)
		e->max_dgram_seen = len;
	if (len > (size_t)e->sim->cfg.mtu - e->sim->cfg.ip_udp_overhead)
		ep_error(e, "datagram above MTU", (uint32_t)len, e->sim->cfg.mtu);
	if (len > 0 && (data[0] & RUDP_DGRAM_ACK)) {
		e->ack_dgrams_sent++;
		e->last_ack_at = e->sim->now;
	} else if (len > 0 && (data[0] & RUDP_DGRAM_NACK)) {
		e->nack_dgrams_sent++;
		e->last_nack_at = e->sim->now;
	}
	link_send(e->sim, 1 - e->idx, data, len);
	return 0;
}

static void cb_deliver(void *ud, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel)
{
	struct sim_endpoint *e = ud;
	struct sim_stream_rx *rx;
	uint32_t seq, mlen;
	uint8_t rel, ch;

	if (len < SIM_MSG_HEADER || data[0] != SIM_MARK) {
		ep_error(e, "not a test message", (uint32_t)len, len ? data[0] : 0);
		return;
	}
	rel = data[1];
	ch = data[2];
	memcpy(&seq, data + 3, 4);
	memcpy(&mlen, data + 7, 4);
	if (rel >= SIM_RELS || ch >= CONN_CHANNELS || mlen != len || seq >= SIM_MAX_MSGS) {
		ep_error(e, "bad header", mlen, (uint32_t)len);
		return;
	}
	for (uint32_t i = SIM_MSG_HEADER; i < len; i++) {
		if (data[i] != pattern_byte(rel, ch, seq, i)) {
			ep_error(e, "content mismatch", seq, i);
			return;
		}
	}
	/* A split unreliable message travels reliably (and says so). */
	if (reliability != rel && !(rel == 0 && reliability == 2) && !(rel == 1 && reliability == 4))
		ep_error(e, "reliability changed", rel, reliability);
	if ((rel == 1 || rel == 3 || rel == 4) && channel != ch)
		ep_error(e, "channel changed", ch, channel);

	rx = &e->rx[rel][ch];
	switch (rel) {
	case 0:
	case 2:
		if (rx->got[seq])
			ep_error(e, rel ? "reliable duplicate" : "unreliable duplicate", seq, rel);
		rx->got[seq] = 1;
		break;
	case 3:
		if (seq != rx->next_ordered)
			ep_error(e, "out of order", seq, rx->next_ordered);
		rx->next_ordered = seq + 1;
		break;
	default:
		if ((int64_t)seq <= rx->last_sequenced)
			ep_error(e, "sequenced went backwards", seq, (uint32_t)rx->last_sequenced);
		rx->last_sequenced = seq;
		break;
	}
	rx->delivered++;
	e->last_rx_at = e->sim->now;
	e->rx_messages++;
	e->rx_bytes += len;
	if (e->work.echo) {
		/* The same bytes back: the client checks them as the next message
		 * of the same stream. */
		assert_int_equal(rudp_conn_send(e->c, data, len, rel, ch, e->sim->now), 0);
		e->tx_next[rel][ch]++;
		e->tx_bytes += len;
	}
}

static void cb_connected(void *ud)
{
	struct sim_endpoint *e = ud;

	e->connected_calls++;
}

static void cb_closed(void *ud, enum rudp_conn_close_reason reason)
{
	struct sim_endpoint *e = ud;

	e->closed_calls++;
	e->reason = reason;
	e->closed_at = e->sim->now;
}

/* ---- workload ---- */

/* Every message the sim's senders build, up to the workload's largest. */
static uint8_t message_buf[8u << 20];

/* Queues the next message of e's (rel, ch) stream now; counts it as sent
 * only if the conn took it. */
static int send_next(struct sim_endpoint *e, uint32_t len, uint8_t rel, uint8_t ch)
{
	int rc;

	assert_true(len <= sizeof(message_buf));
	sim_make_message(message_buf, len, rel, ch, e->tx_next[rel][ch]);
	rc = rudp_conn_send(e->c, message_buf, len, rel, ch, e->sim->now);
	if (rc == 0) {
		e->tx_next[rel][ch]++;
		e->sent++;
		e->tx_bytes += len;
	}
	return rc;
}

int sim_send_next(struct sim_endpoint *e, uint32_t len, uint8_t rel, uint8_t ch)
{
	int rc = send_next(e, len, rel, ch);

	if (rc == 0)
		e->work.count++;
	return rc;
}

static void pump(struct sim *s, struct sim_endpoint *e)
{
	struct sim_workload *w = &e->work;

	while (e->sent < w->count && rudp_conn_state(e->c) == RUDP_CONN_STATE_CONNECTED &&
	       (!w->max_outstanding || e->sent - e->rx_messages < w->max_outstanding)) {
		uint8_t rel, ch = 0;
		uint32_t len;
		int rc;

		do
			rel = (uint8_t)rng_below(&s->work_rng, SIM_RELS);
		while (!(w->rel_mask & (1u << rel)));
		if (rel == 1 || rel == 3 || rel == 4)
			ch = (uint8_t)rng_below(&s->work_rng, w->channels);
		if (w->big_every && (e->sent + 1) % w->big_every == 0)
			len = w->big_size;
		else
			len = w->min_size + rng_below(&s->work_rng, w->max_size - w->min_size + 1);
		rc = send_next(e, len, rel, ch);
		if (rc == RUDP_CONN_E_QUEUE_FULL)
			break;
		assert_int_equal(rc, 0);
	}
}

/* ---- the simulation ---- */

void sim_init(struct sim *s, uint64_t seed, const struct rudp_conn_config *cfg, const struct sim_link *link)
{
	memset(s, 0, sizeof(*s));
	s->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	s->work_rng = seed * 0xc2b2ae3d27d4eb4full + 7;
	s->cfg = *cfg;
	s->link = *link;
	s->now = 1000000; /* not zero: catches "0 means unset" mistakes */
	for (int i = 0; i < 2; i++) {
		struct sim_endpoint *e = &s->ep[i];

		e->sim = s;
		e->idx = i;
		for (int r = 0; r < SIM_RELS; r++) {
			for (int ch = 0; ch < CONN_CHANNELS; ch++) {
				e->rx[r][ch].last_sequenced = -1;
				if ((r == 0 || r == 2) && ch == 0) {
					e->rx[r][ch].got = calloc(SIM_MAX_MSGS, 1);
					assert_non_null(e->rx[r][ch].got);
				}
			}
		}
	}
}

void sim_start(struct sim *s)
{
	for (int i = 0; i < 2; i++) {
		struct sim_endpoint *e = &s->ep[i];
		struct rudp_conn_callbacks cb = {
			.ud = e,
			.send_datagram = cb_send,
			.deliver = cb_deliver,
			.connected = cb_connected,
			.closed = cb_closed,
		};
		struct rudp_conn_identity id = {.local_guid = 1000 + i, .remote_guid = 0};

		id.local_addr.version = 4;
		id.local_addr.port = (uint16_t)(19132 + i);
		id.remote_addr.version = 4;
		id.remote_addr.port = (uint16_t)(19133 - i);
		e->c = rudp_conn_create(&s->cfg, &cb, i == 0 ? RUDP_CONN_CLIENT : RUDP_CONN_SERVER, &id,
					s->now);
		assert_non_null(e->c);
	}
}

void sim_free(struct sim *s)
{
	for (int i = 0; i < 2; i++) {
		rudp_conn_destroy(s->ep[i].c);
		for (int r = 0; r < SIM_RELS; r++)
			free(s->ep[i].rx[r][0].got);
	}
	while (s->heap_n)
		free(heap_pop(s));
	free(s->heap);
}

void sim_delete(struct sim *s)
{
	sim_free(s);
	free(s);
}

/* When endpoint i's host would wake for its timers: rounded up to the
 * granularity from the moment it went idle. */
static uint64_t timer_wake(const struct sim *s, int i)
{
	uint64_t d = rudp_conn_next_deadline(s->ep[i].c);
	uint64_t base = s->busy_until[i], g = s->timer_granularity_us;

	if (d == UINT64_MAX)
		return d;
	if (d <= base)
		return base;
	if (g)
		d = base + (d - base + g - 1) / g * g;
	return d;
}

static void sim_step_cpu(struct sim *s)
{
	struct sim_packet *later[1024];
	uint32_t nlater = 0, nread[2] = {0, 0};
	uint64_t t = s->heap_n ? heap_top(s)->deliver_at : UINT64_MAX, wake[2];

	for (int i = 0; i < 2; i++) {
		wake[i] = timer_wake(s, i);
		if (wake[i] < t)
			t = wake[i];
	}
	if (s->wake_at > s->now && s->wake_at < t)
		t = s->wake_at;
	if (t == UINT64_MAX) {
		s->stuck = true;
		return;
	}
	if (t > s->now)
		s->now = t;
	while (s->heap_n && heap_top(s)->deliver_at <= s->now) {
		struct sim_packet *p = heap_pop(s);
		int to = p->to;

		if (s->busy_until[to] > s->now) {
			/* Waits in the socket for the reader; keeps its order. */
			if (nlater == sizeof(later) / sizeof(later[0])) {
				p->deliver_at = s->busy_until[to];
				p->serial = s->serial++;
				heap_push(s, p);
				continue;
			}
			later[nlater++] = p;
			continue;
		}
		s->send_clock = s->now + s->cpu_us * ++nread[to];
		rudp_conn_on_datagram(s->ep[to].c, p->data, p->len, s->now);
		free(p);
	}
	for (uint32_t k = 0; k < nlater; k++) {
		later[k]->deliver_at = s->busy_until[later[k]->to];
		later[k]->serial = s->serial++;
		heap_push(s, later[k]);
	}
	for (int i = 0; i < 2; i++) {
		if (s->busy_until[i] > s->now || (nread[i] == 0 && wake[i] > s->now))
			continue;
		s->send_clock = s->now + s->cpu_us * nread[i];
		pump(s, &s->ep[i]);
		rudp_conn_flush(s->ep[i].c, s->now);
		s->busy_until[i] = s->send_clock;
	}
}

void sim_step(struct sim *s)
{
	uint64_t t = UINT64_MAX;

	s->steps++;
	if (s->cpu_us) {
		sim_step_cpu(s);
		return;
	}
	if (s->heap_n)
		t = heap_top(s)->deliver_at;
	for (int i = 0; i < 2; i++) {
		uint64_t d = rudp_conn_next_deadline(s->ep[i].c);

		if (d < t)
			t = d;
	}
	if (t == UINT64_MAX && s->wake_at <= s->now) {
		s->stuck = true;
		return;
	}
	if (t != UINT64_MAX && s->timer_granularity_us && t > s->now &&
	    (!s->heap_n || t < heap_top(s)->deliver_at)) {
		/* A timer wake-up: rounded up to the granularity, unless a datagram
		 * arrives first. */
		uint64_t g = s->timer_granularity_us;

		t = s->now + (t - s->now + g - 1) / g * g;
		if (s->heap_n && heap_top(s)->deliver_at < t)
			t = heap_top(s)->deliver_at;
	}
	/* The test's own wake-up is exact, as an application's tick. */
	if (s->wake_at > s->now && s->wake_at < t)
		t = s->wake_at;
	if (t > s->now)
		s->now = t;
	while (s->heap_n && heap_top(s)->deliver_at <= s->now) {
		struct sim_packet *p = heap_pop(s);

		rudp_conn_on_datagram(s->ep[p->to].c, p->data, p->len, s->now);
		free(p);
	}
	for (int i = 0; i < 2; i++)
		pump(s, &s->ep[i]);
	for (int i = 0; i < 2; i++)
		rudp_conn_flush(s->ep[i].c, s->now);
}

bool sim_run(struct sim *s, bool (*done)(struct sim *s), uint64_t max_us)
{
	uint64_t limit = s->now + max_us;
	uint64_t last_now = s->now, same_time_steps = 0;

	while (!done(s)) {
		if (s->now > limit || s->stuck)
			return false;
		sim_step(s);
		if (s->now == last_now) {
			/* Something claims work at this instant but never finishes it. */
			if (++same_time_steps > 100000)
				fail_msg("no progress at t=%llu", (unsigned long long)s->now);
		} else {
			same_time_steps = 0;
			last_now = s->now;
		}
	}
	return true;
}

void sim_run_until(struct sim *s, uint64_t t)
{
	uint64_t saved = s->wake_at;

	s->wake_at = t;
	while (s->now < t && !s->stuck)
		sim_step(s);
	s->wake_at = saved;
}

bool sim_both_connected(struct sim *s)
{
	return rudp_conn_state(s->ep[0].c) == RUDP_CONN_STATE_CONNECTED &&
	       rudp_conn_state(s->ep[1].c) == RUDP_CONN_STATE_CONNECTED;
}

bool sim_both_closed(struct sim *s)
{
	return rudp_conn_state(s->ep[0].c) == RUDP_CONN_STATE_CLOSED &&
	       rudp_conn_state(s->ep[1].c) == RUDP_CONN_STATE_CLOSED;
}

static bool stream_complete(const struct sim_endpoint *rx_ep, const struct sim_endpoint *tx_ep)
{
	for (int ch = 0; ch < CONN_CHANNELS; ch++) {
		if (rx_ep->rx[2][ch].delivered != tx_ep->tx_next[2][ch])
			return false;
		if (rx_ep->rx[3][ch].delivered != tx_ep->tx_next[3][ch])
			return false;
		/* Reliable sequenced: not "the newest always arrives": a newer
		 * unreliable sequenced message on the channel, or an ordered one
		 * delivered first, makes it stale, as in RakNet. Only checked for
		 * never going backwards. */
	}
	return true;
}

bool sim_all_delivered(struct sim *s)
{
	for (int i = 0; i < 2; i++) {
		if (s->ep[i].sent < s->ep[i].work.count)
			return false;
	}
	return stream_complete(&s->ep[0], &s->ep[1]) && stream_complete(&s->ep[1], &s->ep[0]);
}

void sim_assert_complete(struct sim *s, int receiver)
{
	struct sim_endpoint *rx = &s->ep[receiver], *tx = &s->ep[1 - receiver];

	if (rx->errors)
		fail_msg("%s", rx->first_error);
	for (int ch = 0; ch < CONN_CHANNELS; ch++) {
		assert_int_equal(rx->rx[2][ch].delivered, tx->tx_next[2][ch]);
		assert_int_equal(rx->rx[3][ch].delivered, tx->tx_next[3][ch]);
		assert_true(rx->rx[0][ch].delivered <= tx->tx_next[0][ch]);
		assert_true(rx->rx[1][ch].delivered <= tx->tx_next[1][ch]);
		assert_true(rx->rx[4][ch].delivered <= tx->tx_next[4][ch]);
	}
	for (uint32_t i = 0; i < tx->tx_next[2][0]; i++)
		assert_int_equal(rx->rx[2][0].got[i], 1);
}
