/* SPDX-License-Identifier: MIT */
/*
 * Out of memory in the protocol core. The test is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc, so every allocation the
 * conn objects make comes through the __wrap_ functions below, which fail
 * on demand. A scripted conversation between two conns (every reliability,
 * order channels 0, 3 and 31, split messages, loss, reordering and
 * duplication on the link) runs once to count its allocations, then once
 * per allocation with that one failing, then again with every allocation
 * failing for a spell of virtual time from that one on.
 *
 * Whatever fails: each public call returns 0 or RUDP_CONN_E_NOMEM, and
 * NOMEM only when an allocation did fail; nothing leaks (ASan, valgrind);
 * and once memory is back the conversation completes: every reliable
 * message arrives exactly once and intact, ordered ones in order on their
 * channel. Running out of memory may delay data (a frame the receiver
 * cannot take now goes unacknowledged and comes again), never lose it. A
 * send refused with NOMEM queued nothing: the script sends it again later.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conn/conn_internal.h"
#include "test_alloc_fail.h"
#include "test_heap.h"
#include "test_rng.h"

#define MS 1000ull
#define SEC 1000000ull

/* ---- the fail-point ---- */

#define FP_MAX_SITES 64

static struct {
	bool armed; /* count, and fail on demand (the harness itself allocates nothing) */
	uint64_t calls; /* allocations asked for since armed */
	uint64_t fail_at; /* the first one to fail; UINT64_MAX: none */
	/* 0: only that one fails. Otherwise every allocation fails until the
	 * virtual clock has moved this far past the first failure. */
	uint64_t spell_us;
	uint64_t spell_end;
	uint64_t failed;
	uint64_t now; /* the harness's clock */
	/* The call sites (return addresses) seen while armed: failing every
	 * allocation of a run in turn fails each of them at least once. */
	const void *sites[FP_MAX_SITES];
	uint32_t nsites;
} fp = {.fail_at = UINT64_MAX};

bool test_alloc_should_fail(const void *site)
{
	uint64_t i;
	uint32_t s;

	if (!fp.armed)
		return false;
	for (s = 0; s < fp.nsites && fp.sites[s] != site; s++)
		;
	if (s == fp.nsites && s < FP_MAX_SITES)
		fp.sites[fp.nsites++] = site;
	i = fp.calls++;
	if (i < fp.fail_at)
		return false;
	if (i == fp.fail_at)
		fp.spell_end = fp.now + fp.spell_us;
	else if (fp.now >= fp.spell_end)
		return false;
	fp.failed++;
	return true;
}

static void fp_arm(uint64_t fail_at, uint64_t spell_us)
{
	fp.calls = 0;
	fp.failed = 0;
	fp.nsites = 0;
	fp.fail_at = fail_at;
	fp.spell_us = spell_us;
	fp.spell_end = 0;
	fp.armed = true;
}

/* ---- the script: what each side sends, and when ---- */

#define RELS 5
#define SCRIPT_MAX 1024
#define MSG_HEADER 12
#define MSG_MARK 0xa7 /* not a control id: an application message */
#define MSG_MAX (24u * 1024u)
#define SEQ_MAX 1024 /* messages per (reliability, channel) stream */

struct script_msg {
	uint64_t at_us; /* after the sender is connected */
	uint8_t rel, ch;
	uint32_t len;
	uint32_t seq; /* within its (rel, ch) stream */
};

struct script {
	struct script_msg msgs[SCRIPT_MAX];
	uint32_t count;
	uint32_t streams[RELS][CONN_CHANNELS]; /* next seq per stream while building */
};

static void script_add(struct script *s, uint64_t at_us, uint8_t rel, uint8_t ch, uint32_t len)
{
	struct script_msg *m;

	assert_true(s->count < SCRIPT_MAX);
	m = &s->msgs[s->count++];
	if (rel != RUDP_WIRE_UNRELIABLE_SEQUENCED && rel != RUDP_WIRE_RELIABLE_ORDERED &&
	    rel != RUDP_WIRE_RELIABLE_SEQUENCED)
		ch = 0;
	*m = (struct script_msg){.at_us = at_us, .rel = rel, .ch = ch, .len = len};
	m->seq = s->streams[rel][ch]++;
	assert_true(m->seq < SEQ_MAX);
}

/* A small message of any kind (ordered_pct % of them reliable ordered), on
 * the channels the test covers: 0 and 31 are the ends of the array of order
 * channels made on first use, 3 one in between. Sequenced messages share
 * the channels with ordered ones. */
static void script_add_small(struct script *s, uint64_t *rng, uint64_t at_us, uint32_t max_len,
			     uint32_t ordered_pct)
{
	static const uint8_t chans[] = {0, 3, 31};
	uint32_t len = MSG_HEADER + rng_below(rng, max_len - MSG_HEADER + 1);
	uint8_t ch = chans[rng_below(rng, 3)];
	uint32_t r;

	if (rng_below(rng, 100) < ordered_pct) {
		script_add(s, at_us, RUDP_WIRE_RELIABLE_ORDERED, ch, len);
		return;
	}
	r = rng_below(rng, 100);
	if (r < 55)
		script_add(s, at_us, RUDP_WIRE_RELIABLE, 0, len);
	else if (r < 70)
		script_add(s, at_us, RUDP_WIRE_RELIABLE_SEQUENCED, ch, len);
	else if (r < 85)
		script_add(s, at_us, RUDP_WIRE_UNRELIABLE_SEQUENCED, ch, len);
	else
		script_add(s, at_us, RUDP_WIRE_UNRELIABLE, 0, len);
}

/*
 * The conversation. A burst first: hundreds of small messages at once, so
 * the send queue and the sent history grow, and with the storm on the link
 * (every other datagram lost) the receiver holds messages out of order
 * (hold arrays and blocks), sees reliable indexes far ahead of a hole (the
 * dedup ring grows) and gaps in many places at once (the ACK and NACK
 * queues grow). Mostly unordered, or holding would make most of the
 * allocations, and the runs. Then split messages on every kind of stream,
 * reassembled at the other end, and a trickle of mixed traffic, some of it
 * split too.
 */
static void script_conversation(struct script *s, uint64_t seed, uint32_t burst)
{
	uint64_t rng = seed;

	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < burst; i++)
		script_add_small(s, &rng, 0, 120, 20);
	script_add(s, 40 * MS, RUDP_WIRE_RELIABLE_ORDERED, 3, 5000);
	script_add(s, 40 * MS, RUDP_WIRE_RELIABLE, 0, 6000);
	script_add(s, 40 * MS, RUDP_WIRE_RELIABLE_ORDERED, 0, 4000);
	script_add(s, 40 * MS, RUDP_WIRE_UNRELIABLE, 0, 3000); /* split: travels reliably */
	script_add(s, 40 * MS, RUDP_WIRE_RELIABLE_SEQUENCED, 31, 2500);
	script_add(s, 40 * MS, RUDP_WIRE_RELIABLE_ORDERED, 31, 1200);
	for (uint32_t i = 0; i < 40; i++) {
		uint64_t at = 60 * MS + i * 5 * MS;

		if (i % 8 == 7)
			script_add(s, at, RUDP_WIRE_RELIABLE_ORDERED, (uint8_t)(i % 16 == 7 ? 0 : 31), 1500);
		else
			script_add_small(s, &rng, at, 300, 50);
	}
}

/* The handshake's test: a little data each way once connected. */
static void script_hello(struct script *s, uint64_t seed)
{
	uint64_t rng = seed;

	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < 6; i++)
		script_add_small(s, &rng, i * MS, 100, 50);
	script_add(s, 10 * MS, RUDP_WIRE_RELIABLE_ORDERED, 0, 2000);
}

/* Byte i of a message is seed + 11 i + i / 256: a shifted, dropped or
 * repeated piece of any message shows. */
static uint32_t pattern_seed(int side, const struct script_msg *m)
{
	return m->seq * 151u + m->rel * 29u + m->ch * 3u + (uint32_t)side * 101u;
}

static void make_message(uint8_t *buf, int side, const struct script_msg *m)
{
	uint32_t seed = pattern_seed(side, m), len = m->len;

	buf[0] = MSG_MARK;
	buf[1] = (uint8_t)side;
	buf[2] = m->rel;
	buf[3] = m->ch;
	memcpy(buf + 4, &m->seq, 4);
	memcpy(buf + 8, &m->len, 4);
	for (uint32_t i = MSG_HEADER; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 11u + (i >> 8));
}

/* ---- two conns over a simulated link ---- */

#define MTU 576
#define PKT_MAX 600
#define MAX_PKTS 4096
#define LINK_DELAY_US (5 * MS)
/* This many per mille are delayed up to LINK_REORDER_US more: reordering. */
#define LINK_REORDER_PM 150
#define LINK_REORDER_US (12 * MS)
#define LINK_LOSS_PM 100
/* Datagrams arrive in batches, as a host reads them: a burst's gaps then
 * pile up in the ACK and NACK queues before the next flush. */
#define LINK_BATCH_US (4 * MS)
#define LINK_DUP_PM 20
/* With an allocation failing, a conn may want a flush it cannot do yet (no
 * datagram buffer): the harness polls again this much later, as a host
 * waiting in whole milliseconds would. */
#define POLL_US (1 * MS)
/* A send refused with NOMEM is tried again this much later. */
#define SEND_RETRY_US (5 * MS)

struct pkt {
	uint64_t at;
	uint64_t serial; /* FIFO among equal times */
	uint16_t len;
	uint8_t to;
	uint8_t data[PKT_MAX];
};

struct stream_rx {
	uint32_t next_ordered;
	int64_t last_sequenced;
	uint32_t delivered;
	uint8_t got[SEQ_MAX / 8]; /* bit per seq: exactly once */
};

struct endpoint {
	int idx;
	struct rudp_conn *c;
	const struct script *script;
	uint32_t next_send;
	bool started;
	uint64_t t0; /* when its script started: connected, and the test under way */
	uint64_t retry_at; /* after a refused send: not before then */
	uint32_t sent[RELS][CONN_CHANNELS]; /* accepted by rudp_conn_send, per stream */
	struct stream_rx rx[RELS][CONN_CHANNELS];
	int connected_calls, closed_calls;
	enum rudp_conn_close_reason reason;
};

struct net {
	uint64_t now;
	uint64_t rng;
	uint64_t serial;
	/* struct pkt *: a fixed array, so the harness allocates nothing */
	void *heap[MAX_PKTS];
	size_t heap_n;
	struct pkt *spare[MAX_PKTS];
	uint32_t spare_n;
	struct endpoint ep[2]; /* 0 client, 1 server */
	bool talking; /* the scripts run */
	bool closing; /* the disconnect has begun: closed callbacks are expected */
	/* Per direction: datagrams still to go through the storm, which drops
	 * every other one (set when the conversation starts). */
	uint32_t storm[2];
	uint64_t steps;
	uint32_t errors;
	char error[240];
};

static struct pkt pkt_pool[MAX_PKTS];
static struct net net;
static uint8_t msg_buf[MSG_MAX];
static const struct script_msg *msg_buf_holds; /* built once, however many tries */

static void net_error(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (net.errors++ > 0)
		return;
	n = snprintf(net.error, sizeof(net.error), "t=%llu ms: ", (unsigned long long)(net.now / MS));
	va_start(ap, fmt);
	vsnprintf(net.error + n, sizeof(net.error) - (size_t)n, fmt, ap);
	va_end(ap);
}

static bool pkt_before(const void *a, const void *b)
{
	const struct pkt *x = a, *y = b;

	return x->at < y->at || (x->at == y->at && x->serial < y->serial);
}

/* Never full: there are only MAX_PKTS datagrams (pkt_pool). */
static void heap_push(struct pkt *p)
{
	test_heap_push(net.heap, &net.heap_n, p, pkt_before);
}

static struct pkt *heap_pop(void)
{
	return test_heap_pop(net.heap, &net.heap_n, pkt_before);
}

static const struct pkt *heap_top(void)
{
	return net.heap[0];
}

static int cb_send(void *ud, const uint8_t *data, size_t len)
{
	struct endpoint *e = ud;
	uint32_t copies = 1;

	if (len == 0 || len > (size_t)MTU - RUDP_WIRE_UDP_IP_OVERHEAD) {
		net_error("ep%d sent a datagram of %zu bytes", e->idx, len);
		return 0;
	}
	if (net.storm[e->idx] > 0 && net.storm[e->idx]-- % 2 == 1)
		return 0;
	if (rng_below(&net.rng, 1000) < LINK_LOSS_PM)
		return 0;
	if (rng_below(&net.rng, 1000) < LINK_DUP_PM)
		copies = 2;
	for (uint32_t i = 0; i < copies; i++) {
		struct pkt *p;

		if (net.spare_n == 0) {
			net_error("the link holds %u datagrams", MAX_PKTS);
			return 0;
		}
		p = net.spare[--net.spare_n];
		p->at = net.now + LINK_DELAY_US;
		if (rng_below(&net.rng, 1000) < LINK_REORDER_PM)
			p->at += rng_below(&net.rng, LINK_REORDER_US + 1);
		p->at = (p->at + LINK_BATCH_US - 1) / LINK_BATCH_US * LINK_BATCH_US;
		p->serial = net.serial++;
		p->len = (uint16_t)len;
		p->to = (uint8_t)(1 - e->idx);
		memcpy(p->data, data, len);
		heap_push(p);
	}
	return 0;
}

static bool stream_got(struct stream_rx *rx, uint32_t seq)
{
	bool had = (rx->got[seq / 8] >> (seq % 8)) & 1u;

	rx->got[seq / 8] |= (uint8_t)(1u << (seq % 8));
	return had;
}

static void cb_deliver(void *ud, const uint8_t *data, size_t len, uint8_t reliability, uint8_t channel)
{
	struct endpoint *e = ud;
	const struct endpoint *peer = &net.ep[1 - e->idx];
	struct script_msg m;
	struct stream_rx *rx;
	uint32_t seed;

	if (len < MSG_HEADER || data[0] != MSG_MARK || data[1] != peer->idx || data[2] >= RELS ||
	    data[3] >= CONN_CHANNELS) {
		net_error("ep%d: not a message of the peer's (%zu bytes)", e->idx, len);
		return;
	}
	m.rel = data[2];
	m.ch = data[3];
	memcpy(&m.seq, data + 4, 4);
	memcpy(&m.len, data + 8, 4);
	/* Only what a send accepted may arrive: a send refused with NOMEM
	 * must have queued nothing. */
	if (m.len != len || m.seq >= peer->sent[m.rel][m.ch]) {
		net_error("ep%d: rel %u ch %u seq %u (%u bytes) was never sent", e->idx, m.rel, m.ch, m.seq,
			  m.len);
		return;
	}
	seed = pattern_seed(peer->idx, &m);
	for (uint32_t i = MSG_HEADER; i < len; i++) {
		if (data[i] != (uint8_t)(seed + i * 11u + (i >> 8))) {
			net_error("ep%d: rel %u ch %u seq %u damaged at byte %u", e->idx, m.rel, m.ch, m.seq,
				  i);
			return;
		}
	}
	/* A split unreliable message travels reliably, and says so. */
	if (reliability != m.rel && !(m.rel == RUDP_WIRE_UNRELIABLE && reliability == RUDP_WIRE_RELIABLE) &&
	    !(m.rel == RUDP_WIRE_UNRELIABLE_SEQUENCED && reliability == RUDP_WIRE_RELIABLE_SEQUENCED))
		net_error("ep%d: rel %u arrived as %u", e->idx, m.rel, reliability);
	if (rudp_wire_is_ordered_or_sequenced(m.rel) && channel != m.ch)
		net_error("ep%d: channel %u arrived on %u", e->idx, m.ch, channel);

	rx = &e->rx[m.rel][m.ch];
	switch (m.rel) {
	case RUDP_WIRE_RELIABLE_ORDERED:
		if (m.seq != rx->next_ordered)
			net_error("ep%d: ch %u seq %u delivered when %u was next", e->idx, m.ch, m.seq,
				  rx->next_ordered);
		rx->next_ordered = m.seq + 1;
		break;
	case RUDP_WIRE_UNRELIABLE_SEQUENCED:
	case RUDP_WIRE_RELIABLE_SEQUENCED:
		if ((int64_t)m.seq <= rx->last_sequenced)
			net_error("ep%d: sequenced rel %u ch %u went back to %u", e->idx, m.rel, m.ch, m.seq);
		rx->last_sequenced = m.seq;
		break;
	default:
		if (stream_got(rx, m.seq))
			net_error("ep%d: rel %u seq %u delivered twice", e->idx, m.rel, m.seq);
		break;
	}
	rx->delivered++;
}

static void cb_connected(void *ud)
{
	((struct endpoint *)ud)->connected_calls++;
}

static void cb_closed(void *ud, enum rudp_conn_close_reason reason)
{
	struct endpoint *e = ud;

	e->closed_calls++;
	e->reason = reason;
	if (!net.closing)
		net_error("ep%d closed (reason %d) in the middle of the conversation", e->idx, (int)reason);
}

static void net_init(const struct script *client, const struct script *server)
{
	memset(&net, 0, sizeof(net));
	msg_buf_holds = NULL;
	net.now = 1 * SEC;
	net.rng = 0x452821e638d01377ull;
	for (uint32_t i = 0; i < MAX_PKTS; i++)
		net.spare[net.spare_n++] = &pkt_pool[i];
	for (int i = 0; i < 2; i++) {
		net.ep[i].idx = i;
		net.ep[i].script = i == 0 ? client : server;
		for (int r = 0; r < RELS; r++) {
			for (int ch = 0; ch < CONN_CHANNELS; ch++)
				net.ep[i].rx[r][ch].last_sequenced = -1;
		}
	}
	fp.now = net.now;
}

/* The congestion control the conns get; -1: the default. */
static int net_cc = -1;

static struct rudp_conn_config net_config(void)
{
	struct rudp_conn_config cfg;

	rudp_conn_config_init(&cfg);
	if (net_cc >= 0)
		cfg.congestion_control = (uint8_t)net_cc;
	/* Small datagrams: more of them, and more fragments per message. */
	cfg.mtu = MTU;
	/* A window wider than the dedup ring's first 256 bits, so a hole with
	 * a burst behind it makes the receiver grow the ring. */
	cfg.window_frames = 512;
	return cfg;
}

/* Both conns; false when one could not be made. */
static bool net_create(void)
{
	struct rudp_conn_config cfg = net_config();

	for (int i = 0; i < 2; i++) {
		struct endpoint *e = &net.ep[i];
		struct rudp_conn_callbacks cb = {
			.ud = e,
			.send_datagram = cb_send,
			.deliver = cb_deliver,
			.connected = cb_connected,
			.closed = cb_closed,
		};
		struct rudp_conn_identity id = {.local_guid = 500 + i};

		id.local_addr.version = 4;
		id.local_addr.port = (uint16_t)(19132 + i);
		id.remote_addr.version = 4;
		id.remote_addr.port = (uint16_t)(19133 - i);
		e->c = rudp_conn_create(&cfg, &cb, i == 0 ? RUDP_CONN_CLIENT : RUDP_CONN_SERVER, &id,
					net.now);
		if (!e->c)
			return false;
	}
	return true;
}

static void net_destroy(void)
{
	for (int i = 0; i < 2; i++) {
		rudp_conn_destroy(net.ep[i].c);
		net.ep[i].c = NULL;
	}
	while (net.heap_n > 0)
		net.spare[net.spare_n++] = heap_pop();
}

/* Sends the script's messages that are due, in order; a send refused for
 * want of memory is tried again a little later, before any later one, so
 * each stream's messages are accepted in script order. */
static void pump(struct endpoint *e)
{
	if (!net.talking || net.closing || rudp_conn_state(e->c) != RUDP_CONN_STATE_CONNECTED ||
	    net.now < e->retry_at)
		return;
	if (!e->started) {
		e->started = true;
		e->t0 = net.now;
	}
	while (e->next_send < e->script->count) {
		const struct script_msg *m = &e->script->msgs[e->next_send];
		uint64_t failed = fp.failed;
		int rc;

		if (e->t0 + m->at_us > net.now)
			break;
		if (msg_buf_holds != m) {
			make_message(msg_buf, e->idx, m);
			msg_buf_holds = m;
		}
		rc = rudp_conn_send(e->c, msg_buf, m->len, m->rel, m->ch, net.now);
		if (rc == RUDP_CONN_E_NOMEM && fp.failed > failed) {
			e->retry_at = net.now + SEND_RETRY_US;
			break;
		}
		if (rc != 0) {
			net_error("ep%d: rudp_conn_send returned %d (allocations failed in it: %llu)", e->idx,
				  rc, (unsigned long long)(fp.failed - failed));
			e->next_send = e->script->count;
			break;
		}
		if (m->seq != e->sent[m->rel][m->ch])
			net_error("ep%d: script out of step", e->idx);
		e->sent[m->rel][m->ch]++;
		e->next_send++;
	}
}

static void net_step(void)
{
	uint64_t t = net.heap_n ? heap_top()->at : UINT64_MAX;

	net.steps++;
	for (int i = 0; i < 2; i++) {
		struct endpoint *e = &net.ep[i];
		uint64_t d = rudp_conn_next_deadline(e->c);

		if (d < t)
			t = d;
		if (e->started && e->next_send < e->script->count) {
			uint64_t at = e->t0 + e->script->msgs[e->next_send].at_us;

			at = at > e->retry_at ? at : e->retry_at;
			t = at < t ? at : t;
		}
	}
	/* Everything due now was done at the last step: what is still due
	 * waits for memory (a flush with no buffer to build in). */
	if (t <= net.now && net.steps > 1)
		t = net.now + POLL_US;
	if (t > net.now)
		net.now = t;
	fp.now = net.now;
	while (net.heap_n > 0 && heap_top()->at <= net.now) {
		struct pkt *p = heap_pop();
		int rc = rudp_conn_on_datagram(net.ep[p->to].c, p->data, p->len, net.now);

		/* Every datagram is well formed: out of memory is no reason to
		 * call one bad. */
		if (rc != 0)
			net_error("ep%u: rudp_conn_on_datagram returned %d", p->to, rc);
		net.spare[net.spare_n++] = p;
	}
	for (int i = 0; i < 2; i++)
		pump(&net.ep[i]);
	for (int i = 0; i < 2; i++) {
		int rc = rudp_conn_flush(net.ep[i].c, net.now);

		if (rc < 0)
			net_error("ep%d: rudp_conn_flush returned %d", i, rc);
	}
}

/* Runs until done() or for max_us of virtual time; true when done. */
static bool net_run(bool (*done)(void), uint64_t max_us)
{
	uint64_t limit = net.now + max_us;

	while (!done()) {
		if (net.now > limit || net.errors > 0)
			return false;
		net_step();
	}
	return true;
}

static bool both_connected(void)
{
	return rudp_conn_state(net.ep[0].c) == RUDP_CONN_STATE_CONNECTED &&
	       rudp_conn_state(net.ep[1].c) == RUDP_CONN_STATE_CONNECTED;
}

static bool both_closed(void)
{
	return rudp_conn_state(net.ep[0].c) == RUDP_CONN_STATE_CLOSED &&
	       rudp_conn_state(net.ep[1].c) == RUDP_CONN_STATE_CLOSED;
}

/* Nothing queued or unacknowledged on either side, nothing on the link. */
static bool settled(void)
{
	for (int i = 0; i < 2; i++) {
		struct rudp_conn_stats st;

		rudp_conn_get_stats(net.ep[i].c, &st);
		if (st.window_in_use != 0 || st.send_queue_bytes != 0)
			return false;
	}
	return net.heap_n == 0;
}

static bool all_delivered(void)
{
	for (int i = 0; i < 2; i++) {
		const struct endpoint *tx = &net.ep[i], *rx = &net.ep[1 - i];

		if (tx->next_send < tx->script->count)
			return false;
		for (int ch = 0; ch < CONN_CHANNELS; ch++) {
			if (rx->rx[RUDP_WIRE_RELIABLE][ch].delivered != tx->sent[RUDP_WIRE_RELIABLE][ch] ||
			    rx->rx[RUDP_WIRE_RELIABLE_ORDERED][ch].delivered !=
				    tx->sent[RUDP_WIRE_RELIABLE_ORDERED][ch])
				return false;
		}
	}
	return true;
}

static bool conversation_done(void)
{
	return both_connected() && all_delivered() && settled();
}

/* Which reliable stream is short, for the failure message. */
static void describe_missing(void)
{
	for (int i = 0; i < 2; i++) {
		const struct endpoint *tx = &net.ep[i], *rx = &net.ep[1 - i];

		if (tx->next_send < tx->script->count) {
			net_error("ep%d sent %u of its %u messages", i, tx->next_send, tx->script->count);
			return;
		}
		for (int r = RUDP_WIRE_RELIABLE; r <= RUDP_WIRE_RELIABLE_ORDERED; r++) {
			for (int ch = 0; ch < CONN_CHANNELS; ch++) {
				if (rx->rx[r][ch].delivered != tx->sent[r][ch]) {
					net_error("ep%d received %u of ep%d's %u messages of rel %d ch %d",
						  1 - i, rx->rx[r][ch].delivered, i, tx->sent[r][ch], r, ch);
					return;
				}
			}
		}
	}
	net_error("not settled: data still unacknowledged or on the link");
}

/* Nothing left half-done inside either conn once the conversation is over. */
static void check_quiet_state(void)
{
	for (int i = 0; i < 2; i++) {
		const struct rudp_conn *c = net.ep[i].c;

		for (uint32_t ch = 0; ch < c->rx.chans_count; ch++) {
			if (c->rx.chans[ch].held != 0)
				net_error("ep%d still holds %u messages on ch %u", i, c->rx.chans[ch].held,
					  ch);
		}
		if (c->reasm.reserved_bytes != 0)
			net_error("ep%d still reserves %llu reassembly bytes", i,
				  (unsigned long long)c->reasm.reserved_bytes);
		if (!recv_no_reliable_gaps(&c->rx))
			net_error("ep%d still misses reliable frames", i);
		if (c->rel.frames_count != 0 || c->unrel.frames_count != 0 || c->rel_sent != 0)
			net_error("ep%d still has frames queued", i);
	}
}

/* The client closes gracefully; both ends must close, for the right reason. */
static void disconnect_both(void)
{
	net.closing = true;
	rudp_conn_disconnect(net.ep[0].c, net.now);
	/* Without memory for its 0x15 the client still lingers, and queues it
	 * once memory is back (test_disconnect_without_memory). */
	if (rudp_conn_state(net.ep[0].c) != RUDP_CONN_STATE_DISCONNECTING)
		net_error("client in state %d after rudp_conn_disconnect", (int)rudp_conn_state(net.ep[0].c));
	if (!net_run(both_closed, 30 * SEC)) {
		net_error("the disconnect did not finish");
		return;
	}
	if (net.ep[0].closed_calls != 1 || net.ep[0].reason != RUDP_CONN_CLOSE_LOCAL)
		net_error("client closed %d times, reason %d", net.ep[0].closed_calls, (int)net.ep[0].reason);
	if (net.ep[1].closed_calls != 1 || net.ep[1].reason != RUDP_CONN_CLOSE_REMOTE)
		net_error("server closed %d times, reason %d", net.ep[1].closed_calls, (int)net.ep[1].reason);
}

/* ---- one run of a scenario ---- */

struct scenario {
	const struct script *client, *server;
	/* Arm the fail-point right after the conns are made (the handshake is
	 * under test), or once they are connected and settled. */
	bool arm_at_create;
	uint32_t storm; /* datagrams each way through the storm, from arming on */
	/* Check that the run grew every structure meant to grow (the baseline). */
	void (*check_growth)(void);
};

struct run_result {
	uint64_t allocs; /* allocations asked for while armed */
	uint32_t sites; /* from this many call sites */
	uint64_t failed;
	uint64_t steps;
	uint64_t virtual_us;
	bool ok;
	char error[240];
};

static void run_scenario(const struct scenario *sc, uint64_t fail_at, uint64_t spell_us,
			 struct run_result *out)
{
	uint64_t start;

	net_init(sc->client, sc->server);
	start = net.now;
	if (!net_create())
		fail_msg("a conn could not be made with no allocation failing");
	if (!sc->arm_at_create && (!net_run(both_connected, 10 * SEC) || !net_run(settled, 10 * SEC)))
		fail_msg("no handshake with no allocation failing: %s", net.error);
	fp_arm(fail_at, spell_us);
	net.storm[0] = net.storm[1] = sc->storm;
	net.talking = true;
	for (int i = 0; i < 2; i++) {
		struct endpoint *e = &net.ep[i];

		if (rudp_conn_state(e->c) == RUDP_CONN_STATE_CONNECTED) {
			e->started = true;
			e->t0 = net.now;
		}
	}
	if (!net_run(conversation_done, 120 * SEC) && net.errors == 0)
		describe_missing();
	if (net.errors == 0)
		check_quiet_state();
	if (net.errors == 0 && sc->check_growth && fail_at == UINT64_MAX)
		sc->check_growth();
	if (net.errors == 0)
		disconnect_both();
	fp.armed = false;
	net_destroy();

	out->allocs = fp.calls;
	out->sites = fp.nsites;
	out->failed = fp.failed;
	out->steps = net.steps;
	out->virtual_us = net.now - start;
	out->ok = net.errors == 0;
	memcpy(out->error, net.error, sizeof(out->error));
}

/*
 * The baseline first: N allocations, none failing. Then for k < N the
 * same run with allocation k failing alone (pass 1), and with every
 * allocation from k on failing for spell_us of virtual time (pass 2). The
 * runs are identical up to allocation k, so each allocation the baseline
 * makes is failed once in each pass. Every failing run is counted; the
 * first few are described.
 */
static void run_all_failure_points(const char *name, const struct scenario *sc, uint64_t spell_us)
{
	struct run_result base, r;
	uint32_t broken = 0;

	run_scenario(sc, UINT64_MAX, 0, &base);
	if (!base.ok)
		fail_msg("%s: the baseline failed: %s", name, base.error);
	assert_int_equal(base.failed, 0);
	assert_true(base.allocs > 0);
	print_message("%s: N = %llu allocations after set-up, from %u call sites (%llu steps, %.3f s of "
		      "virtual time)\n",
		      name, (unsigned long long)base.allocs, base.sites, (unsigned long long)base.steps,
		      (double)base.virtual_us / SEC);
	for (int pass = 0; pass < 2; pass++) {
		uint64_t spell = pass == 0 ? 0 : spell_us;

		for (uint64_t k = 0; k < base.allocs; k++) {
			run_scenario(sc, k, spell, &r);
			/* The run is the baseline's up to k: allocation k was made. */
			if (r.failed == 0) {
				r.ok = false;
				snprintf(r.error, sizeof(r.error), "allocation %llu never came",
					 (unsigned long long)k);
			}
			if (!r.ok && broken++ < 10)
				print_message("%s: allocation %llu failing%s: %s (%llu failed)\n", name,
					      (unsigned long long)k, spell ? " for a spell" : "", r.error,
					      (unsigned long long)r.failed);
		}
	}
	print_message("%s: %llu failure points run, each alone and as a spell of %llu ms\n", name,
		      (unsigned long long)base.allocs, (unsigned long long)(spell_us / MS));
	if (broken > 0)
		fail_msg("%s: %u of %llu runs with a failed allocation broke the conversation", name, broken,
			 (unsigned long long)(2 * base.allocs));
}

/* ---- tests ---- */

/* Creation fails cleanly: NULL for any allocation failing (ASan and
 * valgrind see nothing leak), and a conn once none does. */
static void test_create(void **state)
{
	struct rudp_conn_config cfg = net_config();
	struct rudp_conn_callbacks cb = {.send_datagram = cb_send};

	(void)state;
	for (int role = RUDP_CONN_CLIENT; role <= RUDP_CONN_SERVER; role++) {
		uint64_t k;

		for (k = 0;; k++) {
			struct rudp_conn *c;

			fp_arm(k, 0);
			c = rudp_conn_create(&cfg, &cb, (enum rudp_conn_role)role, NULL, 0);
			fp.armed = false;
			if (fp.failed == 0) {
				assert_non_null(c);
				rudp_conn_destroy(c);
				break;
			}
			assert_null(c);
		}
		/* Besides the conn itself: the sent history, the ACK queues and
		 * scratch, the dedup ring... and a client's connection request. */
		assert_true(k >= 8);
		print_message("%s: %llu allocations, each failed once\n",
			      role == RUDP_CONN_CLIENT ? "client" : "server", (unsigned long long)k);
	}
}

static struct script hello_client, hello_server;
static struct script conv_client, conv_server;

/* The handshake and the first messages, allocations failing from right
 * after both conns are made. */
static void test_handshake(void **state)
{
	const struct scenario sc = {.client = &hello_client, .server = &hello_server, .arm_at_create = true};

	(void)state;
	script_hello(&hello_client, 11);
	script_hello(&hello_server, 12);
	run_all_failure_points("handshake", &sc, 200 * MS);
}

/* The baseline conversation reaches every growth path (on one side or the
 * other), or failing its allocations would test less than it claims. */
static void check_conversation_growth(void)
{
	uint32_t frames = 0, history = 0, dedup = 0, acks = 0, nacks = 0, scratch = 0, chans = 0, hold = 0;
	bool reasm = true;

	for (int i = 0; i < 2; i++) {
		const struct rudp_conn *c = net.ep[i].c;

		frames = c->rel.frames_cap > frames ? c->rel.frames_cap : frames;
		history = c->loss.sent.size > history ? c->loss.sent.size : history;
		dedup = c->rx.dedup.nbits > dedup ? c->rx.dedup.nbits : dedup;
		acks = c->acktr.acks.cap > acks ? c->acktr.acks.cap : acks;
		nacks = c->acktr.nacks.cap > nacks ? c->acktr.nacks.cap : nacks;
		scratch = c->loss.ack_cap > scratch ? c->loss.ack_cap : scratch;
		chans = c->rx.chans_count > chans ? c->rx.chans_count : chans;
		for (uint32_t ch = 0; ch < c->rx.chans_count; ch++)
			hold = c->rx.chans[ch].hold_cap > hold ? c->rx.chans[ch].hold_cap : hold;
		reasm = reasm && c->reasm.slots != NULL;
	}
	/* Beyond the first sizes: 16 records (sendq.c), SENT_HISTORY_MIN, 256
	 * dedup bits (recv.c), 16 ranges (acktr.c), 16 held messages. */
	if (frames <= 16 || history <= SENT_HISTORY_MIN || dedup <= 256 || acks <= 16 || nacks <= 16 ||
	    scratch <= 16 || chans != CONN_CHANNELS || hold <= 16 || !reasm)
		net_error(
			"the conversation did not grow everything: frames %u, history %u, dedup %u, acks %u, "
			"nacks %u, ack scratch %u, chans %u, hold %u, reassembly %d",
			frames, history, dedup, acks, nacks, scratch, chans, hold, reasm);
}

static void test_conversation(void **state)
{
	const struct scenario sc = {
		.client = &conv_client,
		.server = &conv_server,
		.arm_at_create = false,
		.storm = 120,
		.check_growth = check_conversation_growth,
	};

	(void)state;
	/* Without congestion control the whole window goes at once, which
	 * is what grows every structure (check_conversation_growth). */
	net_cc = RUDP_CONN_CC_NONE;
	script_conversation(&conv_client, 21, 400);
	script_conversation(&conv_server, 22, 200);
	run_all_failure_points("conversation", &sc, 300 * MS);
	net_cc = -1;
}

/* The same conversation with the rate controller (the default), whose
 * per-datagram records grow on demand: every allocation failing once, and failing for
 * a spell. Its pacing keeps the flight small, so not every structure the
 * baseline above grows is grown here (no growth check). */
static void test_conversation_rate(void **state)
{
	const struct scenario sc = {
		.client = &conv_client,
		.server = &conv_server,
		.arm_at_create = false,
		.storm = 120,
	};

	(void)state;
	net_cc = RUDP_CONN_CC_RATE;
	script_conversation(&conv_client, 23, 400);
	script_conversation(&conv_server, 24, 200);
	run_all_failure_points("conversation (rate)", &sc, 300 * MS);
	net_cc = -1;
}

/* A graceful disconnect whose 0x15 finds no memory: the client's record
 * ring is full (16 messages queued, not yet acknowledged), so queueing the
 * 0x15 needs it to grow, and every allocation fails for 50 ms. The client
 * must not close at once (that threw the queued messages away and left
 * the server to find out by its timeout): it lingers, queues the 0x15 once
 * memory is back, behind the 16, and both ends close for the right reason
 * with every message delivered. */
static void test_disconnect_without_memory(void **state)
{
	static struct script quiet, queued;
	struct rudp_conn *c;
	uint32_t room;

	(void)state;
	memset(&quiet, 0, sizeof(quiet));
	memset(&queued, 0, sizeof(queued));
	net_init(&queued, &quiet);
	assert_true(net_create());
	assert_true(net_run(both_connected, 10 * SEC) && net_run(settled, 10 * SEC));
	c = net.ep[0].c;
	room = c->rel.frames_cap - c->rel.frames_count;
	assert_true(room > 0 && room < SCRIPT_MAX);
	for (uint32_t i = 0; i < room; i++)
		script_add(&queued, 0, RUDP_WIRE_RELIABLE_ORDERED, 0, 40);
	net.talking = true;
	pump(&net.ep[0]);
	assert_int_equal(net.ep[0].next_send, room);
	assert_int_equal(c->rel.frames_count, c->rel.frames_cap);

	fp_arm(0, 50 * MS);
	net.closing = true;
	rudp_conn_disconnect(c, net.now);
	assert_true(fp.failed > 0);
	assert_int_equal(rudp_conn_state(c), RUDP_CONN_STATE_DISCONNECTING);
	assert_int_equal(net.ep[0].closed_calls, 0);
	if (!net_run(both_closed, 30 * SEC))
		fail_msg("the disconnect did not finish: %s", net.error);
	fp.armed = false;
	assert_int_equal(net.errors, 0);
	assert_int_equal(net.ep[0].reason, RUDP_CONN_CLOSE_LOCAL);
	assert_int_equal(net.ep[1].reason, RUDP_CONN_CLOSE_REMOTE);
	assert_int_equal(net.ep[1].closed_calls, 1);
	assert_int_equal(net.ep[1].rx[RUDP_WIRE_RELIABLE_ORDERED][0].delivered, room);
	net_destroy();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_conversation),
		cmocka_unit_test(test_conversation_rate),
		cmocka_unit_test(test_disconnect_without_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
