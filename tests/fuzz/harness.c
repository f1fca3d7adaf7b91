/* SPDX-License-Identifier: MIT */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fz_fail(const char *what)
{
	fprintf(stderr, "fuzz invariant broken: %s\n", what);
	abort();
}

static int cb_send(void *ud, const uint8_t *data, size_t len)
{
	struct fz_side *s = ud;
	struct fz_dgram *d;

	if (len > FZ_DGRAM)
		fz_fail("conn emitted a datagram above 1500 bytes");
	if (s->q_count == FZ_QUEUE)
		return 0; /* a full link drops, like a real one */
	d = &s->q[(s->q_head + s->q_count++) % FZ_QUEUE];
	d->len = (uint16_t)len;
	memcpy(d->data, data, len);
	return 0;
}

static void cb_deliver(void *ud, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel)
{
	struct fz_side *s = ud;

	(void)channel;
	if (len == 0)
		fz_fail("empty message delivered");
	s->delivered++;
	s->delivered_bytes += len;
	if (s->on_message)
		s->on_message(s->hook_ud, data, len, reliability);
}

static void cb_connected(void *ud)
{
	((struct fz_side *)ud)->connected++;
}

static void cb_closed(void *ud, enum rudp_conn_close_reason reason)
{
	(void)reason;
	((struct fz_side *)ud)->closed++;
}

void fz_feed(struct fz_pair *p, int i, const uint8_t *data, size_t len)
{
	struct fz_side *s = &p->side[i];

	if (rudp_conn_state(s->c) == RUDP_CONN_STATE_CLOSED)
		return;
	rudp_conn_on_datagram(s->c, data, len, p->now);
	fz_check_invariants(p, i);
}

void fz_pair_exchange(struct fz_pair *p, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 2; i++) {
			if (rudp_conn_state(p->side[i].c) != RUDP_CONN_STATE_CLOSED)
				rudp_conn_flush(p->side[i].c, p->now);
		}
		for (int i = 0; i < 2; i++) {
			struct fz_side *from = &p->side[i];

			while (from->q_count) {
				struct fz_dgram *d = &from->q[from->q_head];

				from->q_head = (from->q_head + 1) % FZ_QUEUE;
				from->q_count--;
				fz_feed(p, 1 - i, d->data, d->len);
			}
		}
		p->now += 1000;
	}
}

bool fz_pair_start(struct fz_pair *p, const struct rudp_conn_config *cfg)
{
	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	p->now = 1000000;
	for (int i = 0; i < 2; i++) {
		struct rudp_conn_callbacks cb = {.ud = &p->side[i],
						 .send_datagram = cb_send,
						 .deliver = cb_deliver,
						 .connected = cb_connected,
						 .closed = cb_closed};
		struct rudp_conn_identity id = {.local_guid = 7000 + i};

		id.local_addr.version = 4;
		id.local_addr.port = (uint16_t)(19132 + i);
		id.remote_addr.version = 4;
		id.remote_addr.port = (uint16_t)(19133 - i);
		p->side[i].c = rudp_conn_create(&p->cfg, &cb, i == 0 ? RUDP_CONN_CLIENT : RUDP_CONN_SERVER,
						&id, p->now);
		if (!p->side[i].c)
			fz_fail("conn create failed");
	}
	for (int r = 0; r < 20; r++) {
		fz_pair_exchange(p, 1);
		if (rudp_conn_state(p->side[0].c) == RUDP_CONN_STATE_CONNECTED &&
		    rudp_conn_state(p->side[1].c) == RUDP_CONN_STATE_CONNECTED)
			return true;
	}
	return false;
}

void fz_pair_free(struct fz_pair *p)
{
	for (int i = 0; i < 2; i++)
		rudp_conn_destroy(p->side[i].c);
}

void fz_check_invariants(const struct fz_pair *p, int i)
{
	const struct rudp_conn *c = p->side[i].c;
	struct rudp_conn_stats st;

	rudp_conn_get_stats(c, &st);
	if (c->reasm.reserved_bytes > c->cfg.max_reassembly_bytes)
		fz_fail("reassembly bytes above max_reassembly_bytes");
	if (c->loss.rel_unacked > c->cfg.window_frames || c->rel_sent > c->cfg.window_frames)
		fz_fail("more reliable frames in flight than the window");
	if (c->rx.chans_count > CONN_CHANNELS)
		fz_fail("more order channels than there are");
	for (uint32_t ch = 0; ch < c->rx.chans_count; ch++) {
		if (c->rx.chans[ch].held > c->cfg.max_order_hold)
			fz_fail("more held messages than max_order_hold");
	}
	if (c->acktr.acks.count > c->acktr.acks.cap || c->acktr.nacks.count > c->acktr.nacks.cap)
		fz_fail("ack queue over capacity");
	if (p->side[i].closed > 1)
		fz_fail("closed() called twice");
}
