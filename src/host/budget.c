/* SPDX-License-Identifier: MIT */
/*
 * The host-wide memory budget (rudp_config.max_host_memory): a running
 * total of what every peer's queues, reassembly and order hold keep, plus
 * the host's queue of received messages and the rudp_send_many bodies
 * (counted once in their pool, not in each queue that shares them), so a
 * few peers cannot decide the process's memory. Nothing is scanned: each
 * peer's share is read again (O(1): the conn's memory gauge, the policy's
 * staged bytes) after each call that may change it, and the difference
 * goes into the total. Past the budget, sends are refused, incoming
 * handshakes turned away and no new peer made (send.c, offline.c,
 * peer_life.c); what was accepted still flows, which is what brings the
 * total down again.
 */
#include "host_internal.h"
#if RUDP_HAVE_SEND_POLICY
#include "policy/policy.h"
#endif

static uint64_t peer_bytes(const struct rudp_peer *p)
{
	uint64_t b = p->conn ? rudp_conn_memory_bytes(p->conn) : 0;
#if RUDP_HAVE_SEND_POLICY
	if (p->policy && p->conn)
		b += rudp_policy_staged_bytes(p->policy);
#endif
	return b;
}

void budget_peer_update(struct rudp_host *h, struct rudp_peer *p)
{
	uint64_t now = peer_bytes(p);

	h->budget.peers_bytes += now - p->budget_bytes; /* wraps back when it shrank */
	p->budget_bytes = now;
}

static void refused_unlink(struct rudp_host *h, struct rudp_peer *p)
{
	if (!p->budget_refused)
		return;
	if (p->refused_prev)
		p->refused_prev->refused_next = p->refused_next;
	else
		h->budget.refused_head = p->refused_next;
	if (p->refused_next)
		p->refused_next->refused_prev = p->refused_prev;
	p->refused_prev = p->refused_next = NULL;
	p->budget_refused = false;
}

void budget_peer_forget(struct rudp_host *h, struct rudp_peer *p)
{
	h->budget.peers_bytes -= p->budget_bytes;
	p->budget_bytes = 0;
	refused_unlink(h, p);
}

void budget_refuse(struct rudp_host *h, struct rudp_peer *p)
{
	if (p->budget_refused)
		return;
	p->budget_refused = true;
	p->refused_prev = NULL;
	p->refused_next = h->budget.refused_head;
	if (p->refused_next)
		p->refused_next->refused_prev = p;
	h->budget.refused_head = p;
}

void budget_signal_writable(struct rudp_host *h)
{
	while (h->budget.refused_head && !budget_over(h)) {
		struct rudp_peer *p = h->budget.refused_head;
		struct pending_event e = {.type = RUDP_EVENT_WRITABLE, .peer = p};

		if (event_queue_push(&h->events, &e, NULL) != 0)
			return; /* no memory for the event: try at the next call */
		refused_unlink(h, p);
	}
}
