/* SPDX-License-Identifier: MIT */
/*
 * Unconnected pings: rudp_ping_start() and the blocking rudp_ping() over
 * the same table of pings outstanding. A ping is sent, resent on a lossy
 * path, matched with its pong (offline.c hands pongs here) or timed out by
 * the service loop's timer round; the answer becomes a PONG or
 * PING_TIMEOUT event, or, for rudp_ping(), is kept for the caller.
 *
 * Matching: a pong counts only from a pinged address; from any other it is
 * counted and dropped. Each datagram's time field carries a value drawn for
 * its ping (low bits: which copy), which RakNet's own servers echo: such a
 * pong is matched to the copy it answers. Some servers (rust-raknet's)
 * put their own clock there instead, so a pong from the pinged address
 * whose time matches no copy still answers the ping, timed from the
 * latest copy. The table is a small array scanned linearly: pongs and
 * ping timers are rare next to connection traffic.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "host_internal.h"

#define PING_TIMEOUT_MAX_MS 600000
/* Resends come at a third and two thirds of the timeout, never closer
 * than this: a shorter timeout gets fewer copies. */
#define PING_RESEND_MIN_US 100000u
/* Servers never answer with a pong larger than the ping (no reflection
 * amplification, docs/security.md), so pings are padded to the largest
 * pong: 33 bytes of header plus the 1400 of rudp_host_set_pong_data(). */
#define PING_DATAGRAM_LEN (33 + 1400)
/* The low bits of a time field number the copy (PING_SENDS <= 4). */
#define TOKEN_COPY_MASK 3u

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int table_alloc(struct rudp_host *h)
{
	struct ping_table *t = &h->pings;
	if (t->slots)
		return 0;
	t->slots = calloc(h->cfg.max_pings, sizeof(*t->slots));
	if (!t->slots)
		return RUDP_E_NOMEM;
	t->cap = h->cfg.max_pings;
	t->next_due_us = UINT64_MAX;
	if (getrandom(&t->token_state, sizeof(t->token_state), 0) != (ssize_t)sizeof(t->token_state))
		t->token_state = rudp_now_us() ^ (uint64_t)(uintptr_t)t->slots;
	return 0;
}

void ping_table_free(struct ping_table *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static bool id_in_use(const struct ping_table *t, uint32_t id)
{
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->slots[i].used && t->slots[i].id == id)
			return true;
	return false;
}

static void recompute_due(struct ping_table *t)
{
	uint64_t due = UINT64_MAX;
	for (uint32_t i = 0; i < t->cap && t->count; i++) {
		const struct ping_slot *s = &t->slots[i];
		if (!s->used)
			continue;
		if (s->deadline_us < due)
			due = s->deadline_us;
		if (s->sends < PING_SENDS && s->next_send_us < due)
			due = s->next_send_us;
	}
	t->next_due_us = due;
}

static void slot_free(struct ping_table *t, struct ping_slot *s)
{
	s->used = false;
	t->count--;
}

/* Sends copy number s->sends and schedules the next one, if any. */
static void slot_send(struct rudp_host *h, struct ping_slot *s, uint64_t interval_us)
{
	uint8_t buf[PING_DATAGRAM_LEN];
	struct rudp_wire_unconnected_ping ping = {.id = RUDP_ID_UNCONNECTED_PING,
						  .time = (int64_t)(s->token + s->sends),
						  .client_guid = (int64_t)h->guid};
	int n = rudp_wire_encode_unconnected_ping(buf, sizeof(buf), &ping);
	if (n > 0) {
		memset(buf + n, 0, sizeof(buf) - (size_t)n);
		host_send_raw(h, NULL, &s->addr, buf, sizeof(buf));
	}
	s->sent_us[s->sends++] = h->now_us;
	s->next_send_us = h->now_us + interval_us;
}

static uint64_t resend_interval(const struct ping_slot *s)
{
	uint64_t i = (s->deadline_us - s->sent_us[0]) / 3;
	return i < PING_RESEND_MIN_US ? PING_RESEND_MIN_US : i;
}

/* Starts a ping; the first datagram is committed to the io, not flushed. */
static int ping_start(struct rudp_host *h, const char *address, int timeout_ms, bool blocking,
		      struct ping_slot **out)
{
	struct sockaddr_storage addr, norm, probe;
	socklen_t alen, plen;
	if (!address || timeout_ms < 1 || timeout_ms > PING_TIMEOUT_MAX_MS)
		return RUDP_E_INVALID;
	int r = rudp_addr_parse(address, &addr, &alen);
	if (r != 0)
		return r;
	rudp_addr_normalize((const struct sockaddr *)&addr, &norm);
	if (!rudp_addr_for_socket(&norm, h->family, &probe, &plen))
		return RUDP_E_ADDRESS;
	r = table_alloc(h);
	if (r != 0)
		return r;
	struct ping_table *t = &h->pings;
	struct ping_slot *s = NULL;
	for (uint32_t i = 0; i < t->cap && t->count < t->cap && !s; i++)
		if (!t->slots[i].used)
			s = &t->slots[i];
	if (!s)
		return RUDP_E_PINGS_FULL;
	memset(s, 0, sizeof(*s));
	do {
		s->id = ++t->last_id;
	} while (s->id == 0 || id_in_use(t, s->id));
	s->used = true;
	s->blocking = blocking;
	t->count++;
	s->addr = norm;
	s->token = splitmix64(&t->token_state) & ~(uint64_t)TOKEN_COPY_MASK & (uint64_t)INT64_MAX;
	h->now_us = rudp_now_us();
	s->deadline_us = h->now_us + (uint64_t)timeout_ms * 1000;
	s->sent_us[0] = h->now_us;
	slot_send(h, s, resend_interval(s));
	if (s->next_send_us < t->next_due_us)
		t->next_due_us = s->next_send_us;
	if (s->deadline_us < t->next_due_us)
		t->next_due_us = s->deadline_us;
	*out = s;
	return 0;
}

int rudp_ping_start(rudp_host *h, const char *address, int timeout_ms, uint32_t *ping_id)
{
	if (!h)
		return RUDP_E_INVALID;
	struct ping_slot *s;
	int r = ping_start(h, address, timeout_ms, false, &s);
	if (r != 0)
		return r;
	if (ping_id)
		*ping_id = s->id;
	rudp_io_flush(h->io);
	return 0;
}

/* Queues the PONG or PING_TIMEOUT event of s: its body is the head, the
 * address text and the pong data. Returns 0 or RUDP_E_NOMEM. */
static int push_event(struct rudp_host *h, const struct ping_slot *s, uint8_t type, uint64_t guid,
		      uint32_t rtt_us, const uint8_t *data, size_t len)
{
	uint8_t body[sizeof(struct ping_event_head) + 64 + RUDP_IO_SLOT_SIZE];
	struct ping_event_head head = {.guid = guid, .rtt_us = rtt_us, .ping_id = s->id};
	char *text = (char *)body + sizeof(head);
	memcpy(body, &head, sizeof(head));
	if (rudp_addr_format((const struct sockaddr *)&s->addr, text, 64) != 0)
		text[0] = '\0';
	size_t head_len = sizeof(head) + strlen(text) + 1;
	if (len > RUDP_IO_SLOT_SIZE)
		return RUDP_E_INVALID;
	if (len)
		memcpy(body + head_len, data, len);
	struct pending_event e = {.type = type, .head_len = (uint8_t)head_len, .len = head_len + len};
	return event_queue_push(&h->events, &e, body);
}

static void count_dropped(struct rudp_host *h)
{
	h->stats.pongs_dropped++;
	h->stats.datagrams_dropped++;
}

void ping_on_pong(struct rudp_host *h, const struct sockaddr_storage *from, const uint8_t *p, size_t n)
{
	struct ping_table *t = &h->pings;
	struct rudp_wire_unconnected_pong pong;
	if (rudp_wire_decode_unconnected_pong(p, n, &pong) < 0 || pong.data_len > RUDP_IO_SLOT_SIZE) {
		count_dropped(h);
		return;
	}
	struct ping_slot *s = NULL, *by_address = NULL;
	uint64_t copy = 0;
	for (uint32_t i = 0; i < t->cap && t->count && !s; i++) {
		struct ping_slot *c = &t->slots[i];
		if (!c->used || !rudp_addr_equal(from, &c->addr))
			continue;
		copy = (uint64_t)pong.time - c->token;
		if (copy < c->sends)
			s = c;
		else if (!by_address)
			by_address = c;
	}
	if (!s && by_address) {
		s = by_address;
		copy = s->sends - 1;
	}
	if (!s) {
		count_dropped(h);
		return;
	}
	uint64_t rtt = h->now_us - s->sent_us[copy];
	uint32_t rtt_us = rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
	if (s->blocking) {
		memcpy(t->blocking_data, pong.data, pong.data_len);
		t->blocking_result = (rudp_pong){.server_guid = (uint64_t)pong.server_guid,
						 .rtt_us = rtt_us,
						 .data_len = pong.data_len,
						 .data = t->blocking_data};
		t->blocking_got = true;
		t->blocking_done = true;
	} else if (push_event(h, s, RUDP_EVENT_PONG, (uint64_t)pong.server_guid, rtt_us, pong.data,
			      pong.data_len) != 0) {
		/* No memory for the event: as if the pong were lost; a resend
		 * may bring another, else the ping times out. */
		host_log(h, 1, "out of memory queueing a pong; dropped");
		return;
	}
	slot_free(t, s);
	recompute_due(t);
}

void ping_run_timers(struct rudp_host *h)
{
	struct ping_table *t = &h->pings;
	if (h->now_us < t->next_due_us)
		return;
	for (uint32_t i = 0; i < t->cap && t->count; i++) {
		struct ping_slot *s = &t->slots[i];
		if (!s->used)
			continue;
		if (h->now_us >= s->deadline_us) {
			if (s->blocking) {
				t->blocking_done = true;
			} else if (push_event(h, s, RUDP_EVENT_PING_TIMEOUT, 0, 0, NULL, 0) != 0) {
				/* Exactly one timeout event per ping: try again soon. */
				s->deadline_us = h->now_us + 1000;
				continue;
			}
			slot_free(t, s);
		} else if (s->sends < PING_SENDS && h->now_us >= s->next_send_us) {
			slot_send(h, s, resend_interval(s));
		}
	}
	recompute_due(t);
}

int rudp_ping(rudp_host *h, const char *address, int timeout_ms, rudp_pong *out)
{
	if (!h || !address || !out || timeout_ms < 0 || timeout_ms > PING_TIMEOUT_MAX_MS)
		return RUDP_E_INVALID;
	if (timeout_ms == 0)
		return RUDP_E_NOT_CONNECTED;
	struct ping_table *t = &h->pings;
	struct ping_slot *s;
	t->blocking_done = false;
	t->blocking_got = false;
	int r = ping_start(h, address, timeout_ms, true, &s);
	if (r != 0)
		return r;
	uint64_t deadline = s->deadline_us;
	rudp_io_flush(h->io);
	while (!t->blocking_done) {
		uint64_t now = rudp_now_us();
		r = host_pump(h, deadline > now ? deadline - now : 0);
		if (r < 0) {
			/* The slot is still ours: end it without an answer. */
			if (!t->blocking_done) {
				slot_free(t, s);
				recompute_due(t);
			}
			return r;
		}
	}
	if (!t->blocking_got)
		return RUDP_E_NOT_CONNECTED;
	*out = t->blocking_result;
	return 0;
}
