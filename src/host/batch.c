/* SPDX-License-Identifier: MIT */
/*
 * The batch API: many messages per call in both directions, so a server
 * can drain a batch and echo a batch with one flush to the kernel.
 */
#include <stdint.h>

#include "host_internal.h"

int rudp_send_batch(rudp_peer *p, const rudp_message *msgs, size_t n, int *first_error)
{
	if (first_error)
		*first_error = 0;
	if (!p || (!msgs && n) || n > INT32_MAX)
		return RUDP_E_INVALID;
	size_t queued = 0;
	int err = 0;
	/* rudp_send() either queues a whole message or nothing, so stopping
	 * at the first refusal leaves exactly a prefix queued. */
	for (; queued < n; queued++) {
		const rudp_message *m = &msgs[queued];
		err = rudp_send(p, m->data, m->len, m->reliability, m->channel);
		if (err != 0)
			break;
	}
	if (first_error)
		*first_error = err;
	/* Packing now coalesces the whole batch into as few datagrams as the
	 * MTU allows. Handing them to the kernel waits for the next service,
	 * receive or flush call, which sends them together with the ACKs that
	 * call produces: one system call instead of two per loop. */
	if (queued > 0) {
		struct rudp_host *h = p->host;
		h->now_us = rudp_now_us();
		host_flush_dirty(h);
	}
	return (int)queued;
}

int rudp_recv_batch(rudp_host *h, rudp_event *events, int max, int timeout_ms)
{
	if (!h || !events || max <= 0)
		return RUDP_E_INVALID;
	int r = host_service_run(h, timeout_ms, true);
	if (r < 0)
		return r;
	struct event_queue *q = &h->events;
	if (q->count == 0)
		return 0;
	/* A connect or disconnect goes out alone, so a batch is all messages
	 * and the order of events is the order rudp_service() would give. */
	if (q->items[q->head].type != RUDP_EVENT_RECEIVE)
		return event_queue_pop(q, events, 1);
	int k = 0;
	while (k < max && (uint32_t)k < q->count &&
	       q->items[(q->head + (uint32_t)k) & (q->cap - 1)].type == RUDP_EVENT_RECEIVE)
		k++;
	return event_queue_pop(q, events, k);
}
