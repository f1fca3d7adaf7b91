/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psim.h"
#include "test_heap.h"
#include "test_rng.h"

/* ---- packets in flight: a min-heap by arrival time ---- */

static bool before(const void *a, const void *b)
{
	const struct psim_packet *x = a, *y = b;

	return x->at < y->at || (x->at == y->at && x->serial < y->serial);
}

static void heap_push(struct psim *s, struct psim_packet *p)
{
	if (s->heap_n == s->heap_cap) {
		s->heap_cap = s->heap_cap ? s->heap_cap * 2 : 256;
		s->heap = realloc(s->heap, s->heap_cap * sizeof(*s->heap));
		assert_non_null(s->heap);
	}
	test_heap_push(s->heap, &s->heap_n, p, before);
}

static struct psim_packet *heap_pop(struct psim *s)
{
	return test_heap_pop(s->heap, &s->heap_n, before);
}

static const struct psim_packet *heap_top(const struct psim *s)
{
	return s->heap[0];
}

/* ---- callbacks ---- */

static int cb_send(void *ud, const uint8_t *data, size_t len)
{
	struct psim_endpoint *e = ud;
	struct psim *s = e->sim;
	const struct psim_link *l = &s->link[e->idx];
	struct psim_packet *p;
	uint64_t start;

	assert_true(len <= PSIM_MAX_DGRAM);
	e->dgrams_out++;
	e->bytes_out += len;
	if (l->loss_pm && rng_next(&s->rng) % 1000 < l->loss_pm)
		return 0;
	start = s->busy_until[e->idx] > s->now ? s->busy_until[e->idx] : s->now;
	if (l->rate_bytes_per_s && l->queue_bytes &&
	    (start - s->now) * l->rate_bytes_per_s / 1000000u + len > l->queue_bytes) {
		s->queue_drops[e->idx]++;
		return 0;
	}
	p = malloc(sizeof(*p));
	assert_non_null(p);
	if (l->rate_bytes_per_s) {
		uint64_t backlog = (start - s->now) * l->rate_bytes_per_s / 1000000u;

		s->queued_dgrams[e->idx]++;
		s->queue_wait_us[e->idx] += start - s->now;
		if (backlog > s->max_backlog_bytes[e->idx])
			s->max_backlog_bytes[e->idx] = backlog;
		s->busy_until[e->idx] =
			start + (len * 1000000u + l->rate_bytes_per_s - 1) / l->rate_bytes_per_s;
		p->at = s->busy_until[e->idx] + l->delay_us;
	} else {
		p->at = s->now + l->delay_us;
	}
	p->serial = s->serial++;
	p->to = 1 - e->idx;
	p->len = (uint16_t)len;
	memcpy(p->data, data, len);
	heap_push(s, p);
	return 0;
}

static void cb_deliver(void *ud, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel)
{
	struct psim_endpoint *e = ud;
	struct psim_delivery *d;

	assert_true(len >= PSIM_MSG_HEADER);
	assert_int_equal(data[0], 0xfe);
	if (e->nlog == e->caplog) {
		e->caplog = e->caplog ? e->caplog * 2 : 1024;
		e->log = realloc(e->log, e->caplog * sizeof(*e->log));
		assert_non_null(e->log);
	}
	d = &e->log[e->nlog++];
	d->tag = data[1];
	memcpy(&d->sent_us, data + 2, 8);
	memcpy(&d->seq, data + 10, 4);
	d->len = (uint32_t)len;
	d->reliability = reliability;
	d->channel = channel;
	d->recv_us = e->sim->now;
	for (size_t i = PSIM_MSG_HEADER; i < len; i++)
		assert_int_equal(data[i], (uint8_t)(d->seq + i));
}

static void cb_connected(void *ud)
{
	((struct psim_endpoint *)ud)->connected++;
}

static void cb_closed(void *ud, enum rudp_conn_close_reason reason)
{
	struct psim_endpoint *e = ud;

	e->closed++;
	e->reason = reason;
}

/* ---- the simulation ---- */

void psim_init(struct psim *s, const struct rudp_conn_config *cfg, const struct psim_link *c2s,
	       const struct psim_link *s2c, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->now = 1000000;
	s->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	s->cfg = *cfg;
	s->link[0] = *c2s;
	s->link[1] = *s2c;
	s->app_wakeup = UINT64_MAX;
	for (int i = 0; i < 2; i++) {
		s->ep[i].sim = s;
		s->ep[i].idx = i;
	}
}

static bool both_connected(struct psim *s)
{
	return s->ep[0].connected && s->ep[1].connected;
}

void psim_connect(struct psim *s)
{
	for (int i = 0; i < 2; i++) {
		struct rudp_conn_callbacks cb = {.ud = &s->ep[i],
						 .send_datagram = cb_send,
						 .deliver = cb_deliver,
						 .connected = cb_connected,
						 .closed = cb_closed};
		struct rudp_conn_identity id = {.local_guid = (s->guid ? s->guid : 77) + i};

		id.local_addr.version = 4;
		id.remote_addr.version = 4;
		s->ep[i].c = rudp_conn_create(&s->cfg, &cb, i == 0 ? RUDP_CONN_CLIENT : RUDP_CONN_SERVER, &id,
					      s->now);
		assert_non_null(s->ep[i].c);
	}
	assert_true(psim_run(s, both_connected, 10000000));
	psim_settle(s, 10000000);
}

void psim_attach_policy(struct psim *s, int ep, const struct rudp_policy_config *cfg)
{
	struct psim_endpoint *e = &s->ep[ep];

	e->policy = rudp_policy_create(cfg);
	assert_non_null(e->policy);
	assert_int_equal(rudp_policy_attach(e->policy, e->c), 0);
}

/* The policy is above the conn: while attached, the owner goes through it. */
static bool has_policy(const struct psim_endpoint *e)
{
	return e->policy && rudp_policy_conn(e->policy);
}

void psim_flush(struct psim *s, int ep)
{
	struct psim_endpoint *e = &s->ep[ep];
	bool writable;

	if (!has_policy(e)) {
		rudp_conn_flush(e->c, s->now);
		return;
	}
	rudp_policy_flush(e->policy, s->now, &writable);
	if (writable)
		e->writable++;
}

void psim_disconnect(struct psim *s, int ep)
{
	struct psim_endpoint *e = &s->ep[ep];

	if (has_policy(e))
		rudp_policy_disconnect(e->policy, s->now);
	else
		rudp_conn_disconnect(e->c, s->now);
}

void psim_free(struct psim *s)
{
	for (int i = 0; i < 2; i++) {
		if (has_policy(&s->ep[i]))
			rudp_policy_conn_closing(s->ep[i].policy);
		rudp_conn_destroy(s->ep[i].c);
		rudp_policy_destroy(s->ep[i].policy);
		free(s->ep[i].log);
	}
	while (s->heap_n)
		free(heap_pop(s));
	free(s->heap);
}

void psim_step(struct psim *s)
{
	uint64_t t = s->app_wakeup;

	if (s->heap_n && heap_top(s)->at < t)
		t = heap_top(s)->at;
	for (int i = 0; i < 2; i++) {
		uint64_t d = rudp_conn_next_deadline(s->ep[i].c);

		if (d < t)
			t = d;
	}
	assert_true(t != UINT64_MAX);
	if (t > s->now)
		s->now = t;
	if (s->now != s->last_now) {
		s->last_now = s->now;
		s->same_time_steps = 0;
	} else if (++s->same_time_steps > 100000) {
		fail_msg("no progress at t=%llu", (unsigned long long)s->now);
	}
	while (s->heap_n && heap_top(s)->at <= s->now) {
		struct psim_packet *p = heap_pop(s);

		rudp_conn_on_datagram(s->ep[p->to].c, p->data, p->len, s->now);
		free(p);
	}
	if (s->app)
		s->app(s, s->app_ud);
	for (int i = 0; i < 2; i++)
		psim_flush(s, i);
}

bool psim_run(struct psim *s, bool (*done)(struct psim *s), uint64_t max_us)
{
	uint64_t limit = s->now + max_us;

	while (!done(s)) {
		if (s->now > limit)
			return false;
		psim_step(s);
	}
	return true;
}

static bool busy(const struct psim_endpoint *e)
{
	struct rudp_policy_stats st;

	if (rudp_conn_wants_flush(e->c) || e->c->rel.frames_count)
		return true;
	if (!has_policy(e))
		return false;
	rudp_policy_get_stats(e->policy, &st);
	return st.reliable_queue_bytes || st.unreliable_queue_bytes;
}

void psim_settle(struct psim *s, uint64_t max_us)
{
	uint64_t limit = s->now + max_us;

	while (s->now <= limit && (s->heap_n || busy(&s->ep[0]) || busy(&s->ep[1])))
		psim_step(s);
}

void psim_make_message(uint8_t *buf, uint32_t len, uint8_t tag, uint32_t seq, uint64_t now)
{
	buf[0] = 0xfe;
	buf[1] = tag;
	memcpy(buf + 2, &now, 8);
	memcpy(buf + 10, &seq, 4);
	for (uint32_t i = PSIM_MSG_HEADER; i < len; i++)
		buf[i] = (uint8_t)(seq + i);
}

int psim_send(struct psim *s, int ep, uint32_t len, uint8_t tag, uint32_t seq, uint8_t rel, uint8_t ch,
	      uint8_t prio)
{
	static uint8_t buf[1u << 20];

	assert_true(len >= PSIM_MSG_HEADER && len <= sizeof(buf));
	psim_make_message(buf, len, tag, seq, s->now);
	if (has_policy(&s->ep[ep])) {
		struct psim_endpoint *e = &s->ep[ep];
		uint64_t before = rudp_conn_memory_bytes(e->c) + rudp_policy_staged_bytes(e->policy);
		uint64_t grew = 0;
		int rc = rudp_policy_send(e->policy, buf, len, rel, ch, prio, s->now, &grew);

		/* The growth the host's memory budget adds instead of reading both again. */
		if (rc == 0)
			assert_true(rudp_conn_memory_bytes(e->c) + rudp_policy_staged_bytes(e->policy) -
					    before ==
				    grew);
		return rc;
	}
	return rudp_conn_send_ex(s->ep[ep].c, buf, len, rel, ch, prio, s->now);
}
