/* SPDX-License-Identifier: MIT */
/*
 * The send policy: staging FIFOs per (kind, priority), admission against the
 * soft budget and the unreliable reserve, feeding the conn by priority with
 * the anti-starvation rule, the writable signal, and statistics. policy.h
 * states the rules; this file keeps them. It sees the conn only through
 * conn.h: the room left (window, unsent bytes, congestion, pacing) and queueing
 * with indexes taken at send time.
 *
 * Staged messages live in one byte ring per class (bodies never wrap, as in
 * sendq.c), so steady traffic allocates nothing once the rings have grown
 * to the budgets; rings only grow, and only as far as the budgets allow.
 */
#include <stdlib.h>
#include <string.h>

#include "common/body_ring.h"
#include "conn/conn.h"
#include "policy/policy.h"

#define STAGE_MIN_MSGS 64u

struct staged_msg {
	uint64_t pos; /* body position in the class's byte ring */
	uint64_t age; /* staging serial: smaller is older, across classes */
	uint64_t queued_us; /* when staged (rudp_policy_get_pending) */
	uint32_t len;
	uint32_t order_index;
	uint32_t sequenced_index;
	uint8_t reliability; /* effective: split unreliable messages are staged as reliable */
	uint8_t channel;
};

struct stage_class {
	struct staged_msg *msgs;
	uint32_t cap; /* power of two */
	uint32_t head;
	uint32_t count;
	struct body_ring ring; /* the bodies; its times are the owner's (policy_trim_idle) */
	uint64_t body_bytes;
	uint32_t passed; /* picks that went elsewhere while this class waited */
};

enum { KIND_REL = 0, KIND_UNREL = 1 };

struct send_policy {
	struct rudp_policy_config cfg;
	struct rudp_conn *conn; /* the conn it serves, NULL when detached */
	uint64_t now_us; /* latest time the owner passed in */
	struct stage_class cls[2][RUDP_CONN_PRIORITIES];
	uint32_t staged_msgs[2];
	uint64_t staged_bytes[2];
	uint8_t nonempty[2]; /* bit i: class i of the kind has messages */
	uint64_t next_age;
	bool refused; /* a send was refused and the writable signal is still owed */
	uint64_t trim_checked_us; /* conn time policy_trim_idle last looked at the classes */
	struct rudp_policy_stats st; /* counters and peaks; byte gauges are computed */
	bool have_final;
	struct rudp_policy_stats final_st;
};

void rudp_policy_config_init(struct rudp_policy_config *cfg)
{
	/* 64 MiB in flight leaves the window (64 frames by default) as the
	 * usual limit; the cap matters for large windows and slow links. */
	cfg->max_in_flight_bytes = 64u << 20;
	/* 256 KiB waiting: about 180 full datagrams, several flushes' worth at
	 * any rate a game connection sees, yet small next to max_queue_bytes. */
	cfg->reliable_soft_budget = 256u << 10;
	cfg->unreliable_reserve = 64u << 10;
	cfg->flush_budget = 256u << 10;
	cfg->starvation_limit = 16;
}

int rudp_policy_config_check(const struct rudp_policy_config *cfg)
{
	if (!cfg || cfg->max_in_flight_bytes == 0 || cfg->reliable_soft_budget == 0 ||
	    cfg->flush_budget == 0 || cfg->unreliable_reserve < RUDP_POLICY_MIN_RESERVE ||
	    cfg->starvation_limit == 0 || cfg->starvation_limit > RUDP_POLICY_MAX_STARVATION)
		return RUDP_CONN_E_ARG;
	return 0;
}

struct send_policy *rudp_policy_create(const struct rudp_policy_config *cfg)
{
	struct send_policy *p;

	if (rudp_policy_config_check(cfg) < 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p)
		p->cfg = *cfg;
	return p;
}

void rudp_policy_destroy(struct send_policy *p)
{
	if (!p)
		return;
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < RUDP_CONN_PRIORITIES; i++) {
			free(p->cls[k][i].msgs);
			body_ring_free(&p->cls[k][i].ring);
		}
	}
	free(p);
}

int rudp_policy_reconfigure(struct send_policy *p, const struct rudp_policy_config *cfg)
{
	if (!p || rudp_policy_config_check(cfg) < 0)
		return RUDP_CONN_E_ARG;
	p->cfg = *cfg;
	return 0;
}

/* ---- staging FIFOs ---- */

static struct staged_msg *class_at(const struct stage_class *q, uint32_t i)
{
	return &q->msgs[(q->head + i) & (q->cap - 1)];
}

static const uint8_t *class_body(const struct stage_class *q, const struct staged_msg *m)
{
	return body_ring_at(&q->ring, m->pos);
}

/* Room for one more message of len bytes; 0 or RUDP_CONN_E_NOMEM (nothing
 * changed). The use, and a growth, are stamped with now_us for
 * policy_trim_idle. */
static int class_reserve(struct stage_class *q, uint32_t len, uint64_t now_us)
{
	/* A body that would wrap skips to the ring's start, wasting less than len. */
	uint64_t need = q->ring.head - q->ring.tail + 2ull * len;

	body_ring_mark_used(&q->ring, now_us);
	if (q->count == q->cap) {
		uint32_t cap = q->cap ? q->cap * 2 : STAGE_MIN_MSGS;
		struct staged_msg *msgs = malloc((size_t)cap * sizeof(*msgs));

		if (!msgs)
			return RUDP_CONN_E_NOMEM;
		for (uint32_t i = 0; i < q->count; i++)
			msgs[i] = *class_at(q, i);
		free(q->msgs);
		q->msgs = msgs;
		q->cap = cap;
		q->head = 0;
	}
	if (need > q->ring.cap && !body_ring_fits(q->ring.cap, q->ring.tail, q->ring.head, len)) {
		uint64_t cap = body_ring_cap_for(need);
		uint64_t base;

		/* In place where the block allows (common/body_ring.h). */
		if (body_ring_grow(&q->ring, cap, now_us, &base) != 0)
			return RUDP_CONN_E_NOMEM;
		for (uint32_t i = 0; i < q->count; i++)
			class_at(q, i)->pos -= base;
	}
	return 0;
}

static void class_push(struct stage_class *q, const struct staged_msg *tmpl, const uint8_t *data)
{
	uint64_t pos = body_ring_push(&q->ring, data, tmpl->len);
	struct staged_msg *m;

	m = &q->msgs[(q->head + q->count) & (q->cap - 1)];
	*m = *tmpl;
	m->pos = pos;
	q->count++;
	q->body_bytes += tmpl->len;
}

static void class_pop(struct stage_class *q)
{
	q->body_bytes -= class_at(q, 0)->len;
	q->head = (q->head + 1) & (q->cap - 1);
	q->count--;
	if (q->count == 0) {
		body_ring_reset(&q->ring);
		/* Waiting starts again from zero when the class has more to send. */
		q->passed = 0;
	} else {
		q->ring.tail = class_at(q, 0)->pos;
	}
}

static void pop_head(struct send_policy *p, int kind, int prio)
{
	struct stage_class *q = &p->cls[kind][prio];

	p->staged_msgs[kind]--;
	p->staged_bytes[kind] -= class_at(q, 0)->len;
	class_pop(q);
	if (q->count == 0)
		p->nonempty[kind] &= (uint8_t) ~(1u << prio);
}

/*
 * The next class to serve among the four of one kind (the caller knows one
 * is non-empty): a class passed over starvation_limit times first (the most
 * passed, then the higher priority), otherwise the highest non-empty one.
 */
static int peek_class(const struct send_policy *p, int kind)
{
	const struct stage_class *cls = p->cls[kind];
	unsigned nonempty = p->nonempty[kind];
	int best = -1;

	/* One class waiting: whatever its count, it is the one. */
	if ((nonempty & (nonempty - 1)) == 0)
		return __builtin_ctz(nonempty);
	for (int i = 0; i < RUDP_CONN_PRIORITIES; i++) {
		if (cls[i].count && cls[i].passed >= p->cfg.starvation_limit &&
		    (best < 0 || cls[i].passed > cls[best].passed))
			best = i;
	}
	if (best < 0) {
		for (int i = 0; i < RUDP_CONN_PRIORITIES && best < 0; i++) {
			if (cls[i].count)
				best = i;
		}
	}
	return best;
}

/* The pick of best (peek_class's) counts: the others waiting are passed
 * over once. */
static int pick_peeked(struct send_policy *p, int kind, int best)
{
	struct stage_class *cls = p->cls[kind];

	/* Alone, best has no one to pass over and resets its own count: the
	 * usual case when one priority is in use. */
	if (p->nonempty[kind] == 1u << best) {
		cls[best].passed = 0;
		return best;
	}
	for (int i = 0; i < RUDP_CONN_PRIORITIES; i++) {
		if (i != best && cls[i].count && cls[i].passed < UINT32_MAX)
			cls[i].passed++;
	}
	cls[best].passed = 0;
	return best;
}

static int pick_class(struct send_policy *p, int kind)
{
	return pick_peeked(p, kind, peek_class(p, kind));
}

/* Moves the head of one class into the conn's queues. */
static int move_head(struct rudp_conn *c, struct send_policy *p, int kind, int prio)
{
	struct stage_class *q = &p->cls[kind][prio];
	const struct staged_msg *m = class_at(q, 0);
	struct rudp_conn_msg_indexes ix = {.order_index = m->order_index,
					   .sequenced_index = m->sequenced_index};
	int rc = rudp_conn_queue_indexed(c, class_body(q, m), m->len, m->reliability, m->channel, &ix);

	if (rc < 0)
		return rc;
	pop_head(p, kind, prio);
	return 0;
}

/* ---- gauges ---- */

static uint64_t reliable_queue_bytes(const struct rudp_conn *c, const struct send_policy *p)
{
	return p->staged_bytes[KIND_REL] + rudp_conn_reliable_unsent_bytes(c);
}

static uint64_t in_flight_bytes(const struct rudp_conn *c)
{
	return rudp_conn_reliable_bytes(c) - rudp_conn_reliable_unsent_bytes(c);
}

static void raise_peak(uint64_t *peak, uint64_t v)
{
	if (v > *peak)
		*peak = v;
}

/* ---- sending ---- */

/* Drops the oldest staged unreliable message of any priority. */
static void evict_oldest_unreliable(struct send_policy *p)
{
	int oldest = -1;

	for (int i = 0; i < RUDP_CONN_PRIORITIES; i++) {
		const struct stage_class *q = &p->cls[KIND_UNREL][i];

		if (q->count &&
		    (oldest < 0 || class_at(q, 0)->age < class_at(&p->cls[KIND_UNREL][oldest], 0)->age))
			oldest = i;
	}
	pop_head(p, KIND_UNREL, oldest);
	p->st.dropped[RUDP_POLICY_DROP_RESERVE]++;
}

/*
 * May a reliable message skip the stage and enter the conn's queue at once?
 * Staging exists to let priority choose what enters the window when room is
 * short; it costs a copy of every message and a ring per class that keeps
 * its largest burst, which with thousands of connections is most of a
 * client's memory (docs/policy.md gives the cost). So a message goes
 * straight in when nothing reliable waits staged (FIFO and priority order
 * among waiting messages stay whole) and, with it, each limit feed()
 * checks is still at most half used: the window's frames, the unsent bytes
 * against the flush budget, the bytes in flight against their cap, and the
 * congestion window. Such a message would have entered at the next flush
 * anyway, unless more urgent messages sent before that flush needed its
 * room; the half rule keeps at least half of every limit for them. Its
 * indexes are taken after the queue has room, as when staged.
 */
static bool goes_straight_in(const struct rudp_conn *c, const struct send_policy *p,
			     const struct rudp_conn_send_view *v)
{
	uint64_t wire = v->encoded_bytes;

	if (p->staged_msgs[KIND_REL] != 0 ||
	    (uint64_t)v->room.window_frames_used + v->frames > v->room.window_frames / 2)
		return false;
	return v->room.reliable_unsent_bytes + wire <= p->cfg.flush_budget / 2 &&
	       v->room.reliable_bytes + wire <= p->cfg.max_in_flight_bytes / 2 &&
	       rudp_conn_congestion_half_free(c, wire);
}

static void advance_clock(struct send_policy *p, uint64_t now_us)
{
	if (now_us > p->now_us)
		p->now_us = now_us;
}

/* Admission and staging of one message the conn checked (v: its view of
 * it). *grew: what the policy's and the conn's queues took together,
 * wrapping when evictions freed more (the host's memory budget). */
static int stage(struct send_policy *p, struct rudp_conn *c, const uint8_t *data, size_t len,
		 const struct rudp_conn_send_view *v, uint8_t priority, uint64_t *grew)
{
	uint8_t eff = v->reliability;
	int kind = rudp_wire_is_reliable(eff) ? KIND_REL : KIND_UNREL;
	struct stage_class *q = &p->cls[kind][priority];
	uint64_t staged_before = p->staged_bytes[KIND_REL] + p->staged_bytes[KIND_UNREL];
	struct rudp_conn_msg_indexes ix;
	struct staged_msg m;
	int rc;

	if (kind == KIND_REL) {
		/* Soft: a queue below the budget takes one more message whatever its
		 * size, so a message larger than the budget can still be sent, and
		 * "writable" (queue below the budget) means the next send succeeds. */
		if (p->staged_bytes[KIND_REL] + v->room.reliable_unsent_bytes >=
		    p->cfg.reliable_soft_budget) {
			p->refused = true;
			p->st.sends_refused++;
			return RUDP_POLICY_E_WOULD_BLOCK;
		}
		/* The hard per-connection limit (max_queue_bytes) still holds with
		 * a policy. */
		if (staged_before + len > v->queue_room)
			return RUDP_CONN_E_QUEUE_FULL;
		if (goes_straight_in(c, p, v)) {
			rc = rudp_conn_queue_indexed(c, data, len, eff, v->channel, NULL);
			if (rc < 0)
				return rc;
			p->st.straight_in++;
			/* The conn's unsent bytes grew by the message's encoded bytes. */
			raise_peak(&p->st.peak_reliable_queue_bytes, p->staged_bytes[KIND_REL] +
									     v->room.reliable_unsent_bytes +
									     v->encoded_bytes);
			*grew = v->memory_bytes;
			return 0;
		}
	}
	rc = class_reserve(q, (uint32_t)len, p->now_us);
	if (rc < 0)
		return rc;
	if (kind == KIND_UNREL) {
		/* The newest unreliable message is the one worth sending: make room
		 * by dropping the oldest (len <= one frame body < the reserve). */
		while (p->staged_bytes[KIND_UNREL] + len > p->cfg.unreliable_reserve)
			evict_oldest_unreliable(p);
	}
	rudp_conn_take_indexes(c, eff, v->channel, &ix);
	memset(&m, 0, sizeof(m));
	m.age = p->next_age++;
	m.queued_us = p->now_us;
	m.len = (uint32_t)len;
	m.order_index = ix.order_index;
	m.sequenced_index = ix.sequenced_index;
	m.reliability = eff;
	m.channel = v->channel;
	class_push(q, &m, data);
	p->nonempty[kind] |= (uint8_t)(1u << priority);
	p->staged_msgs[kind]++;
	p->staged_bytes[kind] += len;
	if (kind == KIND_REL)
		raise_peak(&p->st.peak_reliable_queue_bytes,
			   p->staged_bytes[KIND_REL] + v->room.reliable_unsent_bytes);
	else
		raise_peak(&p->st.peak_unreliable_queue_bytes, p->staged_bytes[KIND_UNREL]);
	*grew = p->staged_bytes[KIND_REL] + p->staged_bytes[KIND_UNREL] - staged_before;
	return 0;
}

int rudp_policy_send(struct send_policy *p, const uint8_t *data, size_t len, uint8_t reliability,
		     uint8_t channel, uint8_t priority, uint64_t now_us, uint64_t *grew)
{
	struct rudp_conn *c = p->conn;
	struct rudp_conn_send_view v;
	int rc;

	if (!c)
		return RUDP_CONN_E_STATE;
	advance_clock(p, now_us);
	rc = rudp_conn_check_message(c, data, len, reliability, channel, priority, now_us, &v);
	if (rc < 0)
		return rc;
	return stage(p, c, data, len, &v, priority, grew);
}

/* ---- flushing ---- */

/* Moves what may go out now into the conn's queues (start of the data
 * part of a flush). */
static void feed(struct send_policy *p, struct rudp_conn *c)
{
	/* Nothing is sent while feeding: the pacing's room stays as it is. */
	uint64_t pacing_room = rudp_conn_pacing_room(c, p->now_us);

	/* Reliable: only what can enter the window now, so the order in which
	 * frames get reliable indexes (and go out) is the priority order. The
	 * unsent test keeps at most about one flush of frames committed ahead. */
	while (p->staged_msgs[KIND_REL] > 0) {
		struct rudp_conn_window_room r;
		int prio;

		rudp_conn_get_window_room(c, &r);
		if (r.window_frames_used >= r.window_frames)
			break;
		if (r.reliable_unsent_bytes >= p->cfg.flush_budget)
			break;
		/* Nor more than the congestion control sends now: a frame waiting
		 * in the queue has its place in the send order already, ahead of
		 * anything more urgent staged later. The rate controller's window
		 * is about two BDPs, but its pacing sends about one: fed up to the
		 * window, a BDP of frames would wait in the queue (a round trip
		 * ahead of a message staged a moment later), so the pacing's room
		 * bounds them too: what it sends now and a quantum more, which
		 * the flush leaves queued for the pacer's next send. */
		if (r.reliable_unsent_bytes > 0 && (r.reliable_unsent_bytes >= pacing_room ||
						    !rudp_conn_congestion_allows(c, r.reliable_unsent_bytes)))
			break;
		prio = peek_class(p, KIND_REL);
		/* The in-flight cap: a message enters only when it fits under the
		 * cap with everything sent and not yet released, or alone (a cap
		 * below one message must not stall the connection). Its encoded
		 * bytes are asked for only when a bound on them (every byte its
		 * own frame) does not fit. */
		const struct staged_msg *head = class_at(&p->cls[KIND_REL][prio], 0);
		if (r.window_frames_used > 0 &&
		    r.reliable_bytes + (uint64_t)head->len * (1 + RUDP_WIRE_FRAME_HEADER_MAX) >
			    p->cfg.max_in_flight_bytes &&
		    r.reliable_bytes + rudp_conn_message_encoded_bytes(c, head->len, head->reliability) >
			    p->cfg.max_in_flight_bytes)
			break;
		if (move_head(c, p, KIND_REL, pick_peeked(p, KIND_REL, prio)) < 0)
			break;
	}
	/* Unreliable: about one flush's worth; the rest waits staged, where a
	 * newer message can still evict it. */
	while (p->staged_msgs[KIND_UNREL] > 0 && rudp_conn_unreliable_bytes(c) < p->cfg.flush_budget) {
		if (move_head(c, p, KIND_UNREL, pick_class(p, KIND_UNREL)) < 0)
			break;
	}
}

static int drain(struct rudp_conn *c, struct send_policy *p)
{
	for (int kind = 0; kind < 2; kind++) {
		while (p->staged_msgs[kind] > 0) {
			int rc = move_head(c, p, kind, pick_class(p, kind));

			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* Stage rings follow the conn's send rings' idle rule (body_ring_trim_idle,
 * as sendq_trim_idle): empty and a second past their last growth they
 * shrink back to 16 KiB, and a second past their last use they give all
 * their pages back. The stage can hold up to the soft budget (256 KiB by
 * default) per class. */
static void policy_trim_idle(struct send_policy *p, uint64_t now_us)
{
	for (int kind = 0; kind < 2; kind++) {
		for (int i = 0; i < RUDP_CONN_PRIORITIES; i++) {
			struct stage_class *q = &p->cls[kind][i];

			if (q->count == 0)
				body_ring_trim_idle(&q->ring, now_us);
		}
	}
}

/* End of flush: bookkeeping; true when the writable signal is due. */
static bool after_flush(struct send_policy *p, struct rudp_conn *c, bool budget_spent)
{
	/* Not on every flush: looking at eight classes each time showed on
	 * the one-connection policy columns, and a few times a second is
	 * enough for a rule that waits a second. */
	if (p->now_us - p->trim_checked_us >= BODY_RING_TRIM_AFTER_US / 4) {
		p->trim_checked_us = p->now_us;
		policy_trim_idle(p, p->now_us);
	}
	if (budget_spent)
		p->st.flushes_budget_limited++;
	raise_peak(&p->st.peak_in_flight_bytes, in_flight_bytes(c));
	if (p->refused && reliable_queue_bytes(c, p) < p->cfg.reliable_soft_budget) {
		p->refused = false;
		p->st.writable_signals++;
		return true;
	}
	return false;
}

int rudp_policy_flush(struct send_policy *p, uint64_t now_us, bool *writable)
{
	struct rudp_conn *c = p->conn;
	struct rudp_conn_flush_limits limits;
	bool data_next, budget_spent;
	int emitted;

	*writable = false;
	if (!c)
		return 0;
	advance_clock(p, now_us);
	/* What a failed drain at the disconnect left staged goes ahead of the
	 * 0x15 the conn may queue again in this flush (out of memory only). */
	if (rudp_conn_state(c) == RUDP_CONN_STATE_DISCONNECTING)
		drain(c, p);
	emitted = rudp_conn_flush_control(c, now_us, &data_next);
	if (!data_next)
		return emitted;
	feed(p, c);
	/* Unreliable frames before new reliable ones: they are worthless late,
	 * and the unreliable reserve keeps them from taking a whole flush. */
	limits.max_bytes = p->cfg.flush_budget;
	limits.unreliable_first = true;
	limits.more_staged = p->staged_msgs[KIND_REL] > 0;
	emitted += rudp_conn_flush_data(c, now_us, &limits, &budget_spent);
	*writable = after_flush(p, c, budget_spent);
	return emitted;
}

void rudp_policy_disconnect(struct send_policy *p, uint64_t now_us)
{
	struct rudp_conn *c = p->conn;

	if (!c)
		return;
	/* The 0x15 must go behind everything the application sent, including
	 * what is still staged. Out of memory here leaves the rest staged
	 * (rudp_policy_flush tries again); the close then counts it. */
	if (rudp_conn_state(c) == RUDP_CONN_STATE_CONNECTED)
		drain(c, p);
	rudp_conn_disconnect(c, now_us);
}

/* ---- attach, detach, stats ---- */

int rudp_policy_attach(struct send_policy *p, struct rudp_conn *c)
{
	if (!c || (p->conn && p->conn != c))
		return RUDP_CONN_E_ARG;
	if (p->conn != c) {
		p->conn = c;
		p->have_final = false;
	}
	return 0;
}

int rudp_policy_detach(struct send_policy *p)
{
	int rc;

	if (!p->conn)
		return 0;
	rc = drain(p->conn, p);
	if (rc < 0)
		return rc;
	p->conn = NULL;
	return 0;
}

struct rudp_conn *rudp_policy_conn(const struct send_policy *p)
{
	return p->conn;
}

void rudp_policy_get_stats(const struct send_policy *p, struct rudp_policy_stats *out)
{
	const struct rudp_conn *c = p->conn;

	if (!c && p->have_final) {
		*out = p->final_st;
		return;
	}
	*out = p->st;
	for (int i = 0; i < RUDP_CONN_PRIORITIES; i++) {
		out->reliable_staged_bytes[i] = p->cls[KIND_REL][i].body_bytes;
		out->unreliable_staged_bytes[i] = p->cls[KIND_UNREL][i].body_bytes;
	}
	out->reliable_queue_bytes = p->staged_bytes[KIND_REL] + (c ? rudp_conn_reliable_unsent_bytes(c) : 0);
	out->unreliable_queue_bytes = p->staged_bytes[KIND_UNREL];
	out->in_flight_bytes = c ? in_flight_bytes(c) : 0;
	out->stage_ring_bytes = 0;
	for (int kind = 0; kind < 2; kind++) {
		for (int i = 0; i < RUDP_CONN_PRIORITIES; i++)
			out->stage_ring_bytes += p->cls[kind][i].ring.cap;
	}
}

void rudp_policy_conn_closing(struct send_policy *p)
{
	if (!p->conn)
		return;
	/* Whatever is still staged will never be sent: say so in the stats. */
	p->st.dropped[RUDP_POLICY_DROP_CLOSED] += p->staged_msgs[KIND_REL] + p->staged_msgs[KIND_UNREL];
	/* The final figures show what was held at the close. */
	rudp_policy_get_stats(p, &p->final_st);
	for (int kind = 0; kind < 2; kind++) {
		for (int i = 0; i < RUDP_CONN_PRIORITIES; i++) {
			while (p->cls[kind][i].count)
				pop_head(p, kind, i);
		}
	}
	p->have_final = true;
	p->refused = false;
	p->conn = NULL;
}

void rudp_policy_get_pending(const struct send_policy *p, struct rudp_policy_pending *out)
{
	uint64_t oldest = 0;

	out->reliable_bytes = p->staged_bytes[KIND_REL];
	out->unreliable_bytes = p->staged_bytes[KIND_UNREL];
	for (int kind = 0; kind < 2; kind++) {
		for (int prio = 0; prio < RUDP_CONN_PRIORITIES; prio++) {
			const struct stage_class *q = &p->cls[kind][prio];
			uint64_t t;

			if (q->count == 0)
				continue;
			t = class_at(q, 0)->queued_us;
			if (oldest == 0 || t < oldest)
				oldest = t;
		}
	}
	out->oldest_queued_us = oldest;
}

uint64_t rudp_policy_staged_bytes(const struct send_policy *p)
{
	return p->staged_bytes[KIND_REL] + p->staged_bytes[KIND_UNREL];
}
