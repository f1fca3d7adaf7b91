/* SPDX-License-Identifier: MIT */
/*
 * The loss and RTT engine: what the sent history records (its storage is
 * sent_history.c), incoming ACKs and NACKs, loss inference, the RTO and
 * tail-probe deadlines, and the RTT samples.
 *
 * ACK records name datagrams, not frames. Walking a record's seqs could be
 * 2^23 steps for one hostile record, so instead each in-flight frame (at most
 * a window's worth) looks its last datagram seq up in the sorted records,
 * and the sent history is walked only over the seqs it holds.
 */
#include <stdlib.h>
#include <string.h>

#include "conn/conn.h"
#include "conn/loss.h"

/* Datagrams acknowledged after a frame's latest copy that make it lost
 * (while the path shows no reordering: reorder.h). */
#define INFER_DGRAM_THRESHOLD 3
/* Records the ACK decode scratch starts with. */
#define ACK_SCRATCH_INITIAL 16u

static int dgram_log_resize(struct dgram_log *d, uint32_t size);

int loss_init(struct loss_engine *l, const struct loss_config *cfg)
{
	memset(l, 0, sizeof(*l));
	l->window_frames = cfg->window_frames;
	l->max_ack_ranges = cfg->max_ack_ranges;
	l->probe_margin_us = cfg->probe_margin_us;
	rtt_init(&l->rtt, cfg->rto_initial_us, cfg->rto_min_us, cfg->rto_max_us);
	/* A peer that thins its ACKs answers the last datagram of a stream
	 * up to its ACK delay late: the RTO waits for that too (the probe:
	 * probe_ack_delay reads the same field). */
	l->rtt.ack_delay_us = cfg->peer_ack_delay_us;
	reorder_init(&l->reorder);
	/* Up to four windows of datagrams and of frame copies: ACKs come back
	 * within about one. */
	l->sent.max_size = SENT_HISTORY_MIN;
	while (l->sent.max_size < 4 * cfg->window_frames)
		l->sent.max_size <<= 1;
	if (sent_history_resize(&l->sent, SENT_HISTORY_MIN) < 0 || loss_scratch_grow(l, 1) < 0)
		return RUDP_CONN_E_NOMEM;
	if (cfg->dgram_log && dgram_log_resize(&l->dlog, LOSS_DGRAM_LOG_MIN) < 0)
		return RUDP_CONN_E_NOMEM;
	return 0;
}

void loss_free(struct loss_engine *l)
{
	free(l->sent.tag);
	free(l->sent.first);
	free(l->sent.count);
	free(l->sent.sent_us);
	free(l->sent.ring);
	free(l->ack_scratch);
	free(l->ack_keys);
	free(l->dlog.recs);
	free(l->dlog.verdicts);
	memset(l, 0, sizeof(*l));
}

int loss_scratch_grow(struct loss_engine *l, size_t want)
{
	uint32_t cap = l->ack_cap ? l->ack_cap : ACK_SCRATCH_INITIAL;

	while (cap < want && cap < l->max_ack_ranges)
		cap *= 2;
	if (cap > l->max_ack_ranges)
		cap = l->max_ack_ranges;
	if (cap <= l->ack_cap)
		return 0;
	struct rudp_wire_range *s = realloc(l->ack_scratch, cap * sizeof(*s));
	if (!s)
		return RUDP_CONN_E_NOMEM;
	l->ack_scratch = s;
	struct ack_key_range *k = realloc(l->ack_keys, cap * sizeof(*k));
	if (!k)
		return RUDP_CONN_E_NOMEM;
	l->ack_keys = k;
	l->ack_cap = cap;
	return 0;
}

/* ---- the sent history (sent_history.c keeps its storage) ---- */

uint32_t loss_dgram_begin_any(struct loss_engine *l, const struct sendq *rel, uint32_t rel_sent, uint32_t seq,
			      uint64_t now_us, uint32_t new_frames)
{
	struct sent_history *h = &l->sent;
	uint32_t slot;

	/* Four copies' room per frame in flight, and room for every datagram
	 * whose frames still wait: a slot about to be reused that names an
	 * unacknowledged frame means loss or delay outran the history (on a
	 * clean path its ACK cleared it long ago), and under loss is when
	 * first-copy matches save resends. Out of memory keeps the smaller
	 * history, which only loses such matches. */
	slot = seq & (h->size - 1);
	if (h->size < h->max_size &&
	    (4 * (l->rel_unacked + new_frames) > h->size ||
	     sent_history_slot_in_use(h, rel, rel_sent, slot)) &&
	    sent_history_resize(h, h->size * 2) == 0)
		slot = seq & (h->size - 1);

	if (h->valid == 0) {
		h->oldest_valid = seq;
	} else if (rudp_u24_diff(seq, h->oldest_valid) >= (int32_t)h->size) {
		/* Older slots were reused, and ACKs no longer look below. */
		sent_history_note_untracked(h, rudp_u24_add(seq, 0u - h->size));
		h->oldest_valid = rudp_u24_add(seq, 1u - h->size);
	}
	if (h->tag[slot] & SENT_HISTORY_VALID)
		sent_history_note_untracked(h, h->tag[slot] & RUDP_WIRE_U24_MASK);
	h->valid += !(h->tag[slot] & SENT_HISTORY_VALID);
	return sent_history_write(h, slot, seq, now_us);
}

/* ---- per-datagram records ---- */

/* A record resolved: its seq stays readable (the send time of the newest
 * datagram an ACK names, for loss inference), but it waits for nothing. */
#define DGRAM_RESOLVED 0x40000000u

/* (Re)makes the records with size slots (a power of two, larger than
 * now), keeping the unresolved ones; 0 or RUDP_CONN_E_NOMEM (unchanged). */
static int dgram_log_resize(struct dgram_log *d, uint32_t size)
{
	struct dgram_rec *recs = calloc(size, sizeof(*recs));
	uint32_t *verdicts = malloc(size * sizeof(*verdicts));

	if (!recs || !verdicts) {
		free(recs);
		free(verdicts);
		return RUDP_CONN_E_NOMEM;
	}
	for (uint32_t i = 0; i < d->size; i++) {
		if (d->recs[i].tag & SENT_HISTORY_VALID)
			recs[(d->recs[i].tag & RUDP_WIRE_U24_MASK) & (size - 1)] = d->recs[i];
	}
	free(d->recs);
	free(d->verdicts);
	d->recs = recs;
	d->verdicts = verdicts;
	d->size = size;
	d->nverdicts = 0;
	return 0;
}

static void dgram_resolve(struct dgram_log *d, uint32_t slot, bool lost)
{
	d->recs[slot].tag = (d->recs[slot].tag & RUDP_WIRE_U24_MASK) | DGRAM_RESOLVED;
	d->pending--;
	d->verdicts[d->nverdicts++] = slot | (lost ? LOSS_DGRAM_LOST : 0);
}

/* Moves oldest past resolved records, up to seq `upto` at most. */
static void dgram_advance_oldest(struct dgram_log *d, uint32_t upto)
{
	if (d->pending == 0) {
		d->oldest = upto;
		return;
	}
	/* In locals: each store to oldest made the compiler load the rest again. */
	const struct dgram_rec *recs = d->recs;
	const uint32_t size = d->size, mask = size - 1;
	uint32_t oldest = d->oldest;

	for (uint32_t n = 0;
	     n < size && oldest != upto && recs[oldest & mask].tag != (oldest | SENT_HISTORY_VALID); n++)
		oldest = rudp_u24_add(oldest, 1);
	d->oldest = oldest;
}

/* loss_dgram_record's rare case, out of line so that the common one inlines small. */
uint32_t *loss_dgram_record_taken(struct loss_engine *l, uint32_t seq, uint32_t bytes, uint64_t now_us,
				  struct dgram_evicted *ev)
{
	struct dgram_log *d = &l->dlog;
	struct dgram_rec *r;

	/* More datagrams unresolved than records: grow (out of memory keeps
	 * the smaller log, and the datagram the record held counts as lost). */
	if (d->size < LOSS_DGRAM_LOG_MAX)
		dgram_log_resize(d, d->size * 2);
	r = &d->recs[seq & (d->size - 1)];
	if (r->tag & SENT_HISTORY_VALID) {
		ev->any = true;
		ev->bytes = r->bytes;
		memcpy(ev->data, r->data, sizeof(ev->data));
		d->pending--;
	}
	loss_dgram_write(d, r, seq, bytes, now_us);
	if (ev->any)
		dgram_advance_oldest(d, seq);
	return r->data;
}

void loss_dgram_expire(struct loss_engine *l, uint32_t seq, uint32_t next_dgram_seq)
{
	struct dgram_log *d = &l->dlog;
	int32_t last = rudp_u24_diff(seq, next_dgram_seq);

	d->nverdicts = 0;
	if (!d->recs)
		return;
	for (uint32_t s = d->oldest;
	     d->pending > 0 && s != next_dgram_seq && rudp_u24_diff(s, next_dgram_seq) <= last;
	     s = rudp_u24_add(s, 1)) {
		uint32_t slot = s & (d->size - 1);

		if (d->recs[slot].tag == (s | SENT_HISTORY_VALID))
			dgram_resolve(d, slot, true);
	}
	dgram_advance_oldest(d, next_dgram_seq);
}

uint32_t loss_dgram_expire_aged(struct loss_engine *l, uint64_t now_us, uint32_t next_dgram_seq)
{
	struct dgram_log *d = &l->dlog;

	d->nverdicts = 0;
	if (!d->recs)
		return 0;
	for (uint32_t s = d->oldest; d->pending > 0 && s != next_dgram_seq; s = rudp_u24_add(s, 1)) {
		uint32_t slot = s & (d->size - 1);

		if (d->recs[slot].tag != (s | SENT_HISTORY_VALID))
			continue;
		if (loss_dgram_sent_us(&d->recs[slot], now_us) + l->rtt.rto_us > now_us)
			break;
		dgram_resolve(d, slot, true);
	}
	dgram_advance_oldest(d, next_dgram_seq);
	return d->nverdicts;
}

/* ---- tail-loss probe, RTO deadline ---- */

/*
 * Tail-loss probe. When the last datagrams of a burst are lost, nothing
 * later reaches the peer to reveal the gap (no NACK) and nothing later is
 * acknowledged (no inferred loss), so only the RTO would recover, and an
 * application waiting for those messages sends nothing meanwhile. Nor
 * does a stream slower than the round trip (a game's 60 Hz at 20 ms):
 * the next message reveals the gap only a tick later, and the RTO's floor
 * is longer still. So when the oldest frame in flight was sent an RTT plus
 * a margin ago (srtt + max(2 * rttvar, probe_margin_us); see
 * probe_variance_wait) and is not acknowledged, resend it, and with it the
 * other frames of its datagram still in flight: they were lost with it if
 * it was lost, and they fit one datagram again. The probe's ACK lets
 * inference mark any others at once. A timer can do no better than RTT +
 * margin + RTT for a lost message. Resending only the oldest frame left
 * its datagram's other frames an RTT later (inferred from the probe's
 * ACK), and on a host that is busy with many connections each of them
 * then came back in a small datagram of its own.
 *
 * It also waits srtt / 4 + the margin after the last ACK that made
 * progress: while ACKs keep coming the flight is moving, only slower
 * than srtt says (a queue building at a shared bottleneck), and a probe
 * then would be spurious. At most two probes go out per ACK progress, so
 * a dead peer is left to the RTO's backoff.
 *
 * The margin only covers an ACK leaving the peer a little late (RTT
 * samples already include a peer's usual ACK delay), and probe_ack_delay
 * a peer that thins its ACKs; a spurious probe costs one datagram, a late
 * one a whole wait of the stream behind it.
 */
#define LOSS_MAX_PROBES 2

/*
 * How far past srtt the probe waits for the RTT's spread. Twice rttvar
 * where the RTT stays near its minimum (a path, even behind a drop-tail
 * buffer it fills), so a lost game message comes back about RTT + margin
 * late. Four times rttvar, the RTO's and QUIC's PTO term, behind a host's
 * queue (RTT_HOST_QUEUE_FACTOR): its round trips have a heavy tail, and
 * twice rttvar there made most probes spurious and cost throughput.
 */
static uint64_t probe_variance_wait(const struct rtt_estimator *r)
{
	bool host_queue = r->min_us > 0 && r->srtt_us > RTT_HOST_QUEUE_FACTOR * r->min_us;

	return (host_queue ? 4 : 2) * r->rttvar_us;
}

/*
 * What a thinning peer may add to f's ACK: its ACK delay when f's datagram
 * went out within that delay of the datagram before it, as the peer holds
 * only a stream's ACKs and answers a lone datagram at once (acktr.h,
 * acktr_note_queued). A lone message's probe, the one a game waits for,
 * is then not delayed. The datagram before is read from the history's
 * send times, which ACKs do not clear: a slot written again since reads
 * as a later time, so the delay is left out (at worst a spurious probe).
 */
static uint64_t probe_ack_delay(const struct loss_engine *l, const struct sendq_frame *f)
{
	const struct sent_history *h = &l->sent;
	uint64_t delay = l->rtt.ack_delay_us;
	uint32_t prev;

	if (!rtt_ack_delay_applies(&l->rtt, delay) || !h->sent_us)
		return 0;
	prev = h->sent_us[((f->last_dgram_seq - 1) & RUDP_WIRE_U24_MASK) & (h->size - 1)];
	return (uint32_t)f->last_send_us - prev <= delay ? delay : 0;
}

void loss_note_rto_due(struct loss_engine *l, const struct sendq *rel, uint32_t rel_sent)
{
	l->rto_due_us = UINT64_MAX;
	for (uint32_t i = 0; i < rel_sent; i++) {
		const struct sendq_frame *f = sendq_at(rel, i);

		if (f->state == FRAME_IN_FLIGHT && loss_rto_deadline(l, f) < l->rto_due_us)
			l->rto_due_us = loss_rto_deadline(l, f);
	}
}

/* The queue position of the first frame in queue order still in flight
 * (rel_sent: none): frames first go out in that order and are
 * acknowledged mostly in it, so this is normally the front one (no walk),
 * and the one longest unanswered unless it was resent since (then the
 * probe comes later, never early). */
static uint32_t oldest_in_flight(const struct sendq *rel, uint32_t rel_sent)
{
	uint32_t i = 0;

	while (i < rel_sent && sendq_at(rel, i)->state != FRAME_IN_FLIGHT)
		i++;
	return i;
}

uint64_t loss_probe_deadline(const struct loss_engine *l, const struct sendq *rel, uint32_t rel_sent)
{
	const struct sendq_frame *f;
	uint64_t pto, due, quiet, wait;
	uint32_t i;

	if (l->rel_unacked == 0 || l->probes_without_ack >= LOSS_MAX_PROBES)
		return UINT64_MAX;
	i = oldest_in_flight(rel, rel_sent);
	if (i == rel_sent)
		return UINT64_MAX;
	f = sendq_at(rel, i);
	if (!l->rtt.has_sample)
		return f->last_send_us + l->rtt.rto_us;
	pto = probe_variance_wait(&l->rtt);
	if (pto < l->probe_margin_us)
		pto = l->probe_margin_us;
	wait = probe_ack_delay(l, f);
	due = f->last_send_us + l->rtt.srtt_us + pto + wait;
	quiet = l->ack_progress_us + l->rtt.srtt_us / 4 + l->probe_margin_us;
	return due > quiet ? due : quiet;
}

uint32_t loss_take_probe(struct loss_engine *l, struct sendq *rel, uint32_t rel_sent, uint64_t now_us,
			 uint32_t *bytes)
{
	uint32_t first, dgram_seq, frames = 0;

	*bytes = 0;
	if (loss_probe_deadline(l, rel, rel_sent) > now_us)
		return 0;
	first = oldest_in_flight(rel, rel_sent);
	dgram_seq = sendq_at(rel, first)->last_dgram_seq;
	for (uint32_t i = first; i < rel_sent; i++) {
		struct sendq_frame *f = sendq_at(rel, i);

		if (f->state != FRAME_IN_FLIGHT || f->last_dgram_seq != dgram_seq)
			continue;
		f->state = FRAME_NACKED;
		f->resend_why = RESEND_PROBE;
		*bytes += sendq_frame_wire_bytes(f);
		frames++;
	}
	l->probes_without_ack++;
	l->resend_pending = true;
	return frames;
}

/* ---- incoming ACKs and NACKs ---- */

static int compare_key_range(const void *a, const void *b)
{
	const struct ack_key_range *x = a, *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Turns records into disjoint, sorted ranges of distances from next_dgram_seq
 * (sent seqs are at -1, -2, ...). Records that run backwards or span half the
 * seq space or more are meaningless and skipped; parts naming seqs not sent
 * yet are cut off. */
static uint32_t normalize_records(struct loss_engine *l, uint32_t next_dgram_seq,
				  const struct rudp_wire_range *recs, size_t count)
{
	struct ack_key_range *keys = l->ack_keys;
	uint32_t n = 0, out = 0;

	for (size_t i = 0; i < count; i++) {
		uint32_t span = (recs[i].end - recs[i].start) & RUDP_WIRE_U24_MASK;
		int64_t lo = rudp_u24_diff(recs[i].start, next_dgram_seq);
		int64_t hi = lo + span;

		if (span >= 0x800000u || lo >= 0)
			continue;
		if (hi > -1)
			hi = -1;
		keys[n].lo = (int32_t)lo;
		keys[n].hi = (int32_t)hi;
		n++;
	}
	if (n > 1)
		qsort(keys, n, sizeof(*keys), compare_key_range);
	for (uint32_t i = 0; i < n; i++) {
		if (out > 0 && keys[i].lo <= keys[out - 1].hi + 1) {
			if (keys[i].hi > keys[out - 1].hi)
				keys[out - 1].hi = keys[i].hi;
			continue;
		}
		keys[out++] = keys[i];
	}
	return out;
}

static bool key_in_ranges(const struct ack_key_range *keys, uint32_t n, int32_t key)
{
	uint32_t lo = 0, hi = n;

	/* Most frames in flight were sent after the newest datagram named. */
	if (key > keys[n - 1].hi || key < keys[0].lo)
		return false;
	/* last range with lo <= key */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (keys[mid].lo <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && key <= keys[lo - 1].hi;
}

/* What one call works on: the engine, the frames sent, rel[0, rel_sent),
 * the seq the next datagram will carry, the time, and the verdict. */
struct loss_ctx {
	struct loss_engine *l;
	struct sendq *rel;
	uint32_t rel_sent;
	uint32_t next_dgram_seq;
	uint64_t now_us;
	struct loss_verdict *v;
	/* The history's walk passed over a frame copy whose ring entry was
	 * overwritten: the ACK matches frames by last_dgram_seq too. */
	bool overwritten;
};

static void note_lost_seq(struct loss_seqs *s, uint32_t seq, int32_t key)
{
	if (!s->any || key < s->oldest_key) {
		s->oldest = seq;
		s->oldest_key = key;
	}
	if (!s->any || key > s->newest_key) {
		s->newest = seq;
		s->newest_key = key;
	}
	s->any = true;
}

/* Counts datagram seq lost once (loss_engine.dgrams_lost). */
static void count_lost_dgram(struct loss_engine *l, uint32_t seq)
{
	uint32_t *tag = &l->sent.tag[seq & (l->sent.size - 1)];

	if (*tag == (seq | SENT_HISTORY_VALID)) {
		*tag |= SENT_HISTORY_LOST;
		l->dgrams_lost++;
	} else if (*tag != (seq | SENT_HISTORY_VALID | SENT_HISTORY_LOST) &&
		   (!l->lost_last_valid || l->lost_last_seq != seq)) {
		/* Out of the history: frames of one datagram come together. */
		l->dgrams_lost++;
		l->lost_last_seq = seq;
		l->lost_last_valid = true;
	}
}

/* NACKed or inferred lost: out of the flight, and for the conn a
 * congestion signal when a queue shows in the RTT, or when the copy lost
 * was itself a resend (see cc.c: what a shallow queue's overflow looks
 * like): v->lost and v->lost_resent. */
static void declare_lost(struct loss_ctx *x, struct sendq_frame *f, enum conn_resend_why why)
{
	int32_t key = rudp_u24_diff(f->last_dgram_seq, x->next_dgram_seq);

	f->state = FRAME_NACKED;
	f->resend_why = (uint8_t)why;
	/* An inference counts only within the seqs the ACK names: a peer
	 * names again just its newest runs (acktr_repeat_recent_acks), so an
	 * older datagram it leaves out may have arrived with its ACK lost.
	 * That is what the ACK of a tail probe sent after a wide flight's ACK
	 * was lost infers for most of the flight. It is resent all the same. */
	if (why != RESEND_INFERRED || key >= x->v->sample.oldest_key)
		count_lost_dgram(x->l, f->last_dgram_seq);
	x->l->resend_pending = true;
	x->l->nack_resends_since_ack++;
	x->v->left_bytes += sendq_frame_wire_bytes(f);
	note_lost_seq(&x->v->lost, f->last_dgram_seq, key);
	if (f->transmissions > 1)
		note_lost_seq(&x->v->lost_resent, f->last_dgram_seq, key);
}

/* copy_send_us: when the acknowledged copy of f was sent, which is not
 * f->last_send_us when an older copy's datagram is the one named. */
static void ack_frame(struct loss_ctx *x, struct sendq_frame *f, uint64_t copy_send_us)
{
	struct loss_engine *l = x->l;
	struct ack_sample *sample = &x->v->sample;

	/* A frame declared lost left the flight already. */
	if (f->state == FRAME_IN_FLIGHT)
		x->v->left_bytes += sendq_frame_wire_bytes(f);
	x->v->acked_bytes += sendq_frame_wire_bytes(f);
	f->state = FRAME_ACKED;
	l->rel_unacked--;
	l->probes_without_ack = 0;
	l->nack_resends_since_ack = 0;
	l->ack_progress_us = x->now_us;
	if (copy_send_us > sample->newest_acked_send_us)
		sample->newest_acked_send_us = copy_send_us;
	/* The newest datagram named, when the history no longer holds its
	 * send time: this frame's latest copy went in it, so its time is the
	 * datagram's (see ack_from_history). */
	if (!sample->have && rudp_u24_diff(f->last_dgram_seq, x->next_dgram_seq) == sample->newest_key) {
		sample->rtt_us = x->now_us > f->last_send_us ? x->now_us - f->last_send_us : 0;
		sample->have = true;
	}
}

/* Acks every frame any acked datagram carried, through the sent history.
 * Only seqs inside the history are visited, so this is bounded by its size
 * however wide the records are. */
static void ack_from_history(struct loss_ctx *x, uint32_t nkeys)
{
	struct loss_engine *l = x->l;
	struct ack_sample *sample = &x->v->sample;
	struct sent_history *h = &l->sent;
	int32_t floor = -(int32_t)h->size;
	int32_t oldest_valid_key = rudp_u24_diff(h->oldest_valid, x->next_dgram_seq);
	/* Visited even with nothing in flight: the slots of acknowledged
	 * datagrams are cleared, or the history would take them for
	 * datagrams still waiting and grow (builder_commit). */
	uint32_t oldest = x->rel_sent > 0 ? sendq_at(x->rel, 0)->reliable_index : 0;
	/* In locals: the stores of a match (to frames, whose uint8_t fields
	 * may alias anything) made the compiler load them again for every
	 * seq, and most seqs an ACK names were cleared by the ACKs before. */
	const uint32_t *tag = h->tag;
	const uint32_t mask = h->size - 1, next_dgram_seq = x->next_dgram_seq;

	/* Newest first, and no further once no slot is valid: an ACK names
	 * again every datagram acknowledged among the last 128, and on a
	 * path without loss all but the newest few were cleared by earlier
	 * ACKs (walking them all was a seventh of a small echo's
	 * instructions). A lost datagram whose frames went again in others
	 * keeps its slot valid until it is reused: then the walk goes on.
	 * Nor below the oldest seq that may still be valid. */
	if (oldest_valid_key > floor)
		floor = oldest_valid_key;
	for (uint32_t r = nkeys; r-- > 0 && h->valid > 0 && l->ack_keys[r].hi >= floor;) {
		int32_t lo = l->ack_keys[r].lo < floor ? floor : l->ack_keys[r].lo;

		for (int32_t k = l->ack_keys[r].hi; h->valid > 0; k--) {
			uint32_t seq, slot;

			/* Past the seqs whose slots are cleared, in a loop of its own. */
			while (k >= lo && (tag[(next_dgram_seq + (uint32_t)k) & mask] & ~SENT_HISTORY_LOST) !=
						  (((next_dgram_seq + (uint32_t)k) & RUDP_WIRE_U24_MASK) |
						   SENT_HISTORY_VALID))
				k--;
			if (k < lo)
				break;
			seq = (next_dgram_seq + (uint32_t)k) & RUDP_WIRE_U24_MASK;
			slot = seq & mask;
			/* Counted lost, yet it arrived: late, not lost. */
			reorder_on_first_named(&l->reorder, seq, h->tag[slot] & SENT_HISTORY_LOST, x->now_us);
			l->dgrams_lost -= (h->tag[slot] & SENT_HISTORY_LOST) && l->dgrams_lost > 0;
			h->tag[slot] = 0;
			h->valid--;
			/* The send time of this datagram, not of the frames' latest
			 * copies: after a timeout resend, the first copy's ACK
			 * coming late (the RTO was spurious: queues, not loss)
			 * would otherwise date it at the resend, and loss inference
			 * would take every frame sent before the resend for lost. */
			uint64_t dgram_send_us =
				x->now_us - (uint32_t)((uint32_t)x->now_us - h->sent_us[slot]);
			/* Only the newest datagram named is timed, and only the
			 * first time it is named: the others may be named again
			 * because their first ACK was lost (the peer repeats
			 * recent ranges) and would measure how long that took.
			 * Any copy of a frame may be in it: each copy has a
			 * datagram of its own, so unlike TCP there is no
			 * ambiguity to skip (Karn's rule). Skipping resent
			 * frames starved the estimate exactly when it mattered:
			 * when a burst's queues pushed the round trip past an
			 * RTO learnt before it, every frame timed out, every
			 * ACK then named a resent frame, no sample came, and the
			 * RTO stayed too small (about a million spurious resends
			 * for 1.4 million messages at 1,024 connections). */
			if (k == sample->newest_key) {
				sample->rtt_us = (uint32_t)x->now_us - h->sent_us[slot];
				sample->have = true;
			}
			/* In locals: ack_frame's stores may alias the history. */
			for (uint32_t j = 0, n = x->rel_sent ? h->count[slot] : 0, first = h->first[slot];
			     j < n; j++) {
				uint32_t pos = first + j;
				int32_t i;
				struct sendq_frame *f;

				/* Overwritten since: left to the last_dgram_seq match. */
				if (h->ring_head - pos > h->size) {
					x->overwritten = true;
					continue;
				}
				i = rudp_u24_diff(h->ring[pos & (h->size - 1)], oldest);
				if (i < 0 || (uint32_t)i >= x->rel_sent)
					continue;
				f = sendq_at(x->rel, (uint32_t)i);
				if (f->state != FRAME_IN_FLIGHT && f->state != FRAME_NACKED)
					continue;
				/* An older copy arrived after the frame went again:
				 * that resend was not needed. */
				if (f->transmissions > 1 && f->last_dgram_seq != seq)
					x->v->resent_spurious++;
				ack_frame(x, f, dgram_send_us);
			}
		}
	}
	/* Past the slots cleared now; each seq is passed once. */
	if (h->valid == 0) {
		h->oldest_valid = x->next_dgram_seq;
	} else {
		while (h->oldest_valid != x->next_dgram_seq &&
		       (h->tag[h->oldest_valid & (h->size - 1)] & ~SENT_HISTORY_LOST) !=
			       (h->oldest_valid | SENT_HISTORY_VALID))
			h->oldest_valid = rudp_u24_add(h->oldest_valid, 1);
	}
}

/* The datagrams an ACK acknowledges, or a NACK reports lost, among the
 * unresolved records: only seqs the records can hold are visited, newest
 * first, and none once no record waits. A NACK, as for frames, counts
 * only half a minimum RTT after the send. */
static void dgram_log_on_records(struct loss_ctx *x, uint32_t nkeys, bool nack)
{
	struct dgram_log *d = &x->l->dlog;
	int32_t floor = -(int32_t)d->size;
	int32_t oldest_key = rudp_u24_diff(d->oldest, x->next_dgram_seq);
	/* In locals: each store to a tag (uint32_t, as the counts) reloaded them. */
	struct dgram_rec *const recs = d->recs;
	uint32_t *const verdicts = d->verdicts;
	const struct ack_key_range *const keys = x->l->ack_keys;
	const uint32_t mask = d->size - 1, next_dgram_seq = x->next_dgram_seq;
	const uint32_t verdict_flag = nack ? LOSS_DGRAM_LOST : 0;
	uint32_t pending = d->pending, nverdicts = d->nverdicts;
	/* An ACK's walk down to the oldest resolved all up to here: no second walk. */
	int32_t resolved_to = INT32_MIN;

	if (!recs || pending == 0)
		return;
	if (oldest_key > floor)
		floor = oldest_key;
	for (uint32_t r = nkeys; r-- > 0 && pending > 0 && keys[r].hi >= floor;) {
		int32_t lo = keys[r].lo < floor ? floor : keys[r].lo, k;

		for (k = keys[r].hi; k >= lo && pending > 0; k--) {
			uint32_t seq = (next_dgram_seq + (uint32_t)k) & RUDP_WIRE_U24_MASK;
			uint32_t slot = seq & mask;

			if (recs[slot].tag != (seq | SENT_HISTORY_VALID))
				continue;
			if (nack && (uint32_t)x->now_us - recs[slot].sent_us < x->l->rtt.min_us / 2)
				continue;
			/* With reordering, left to the time rule (dgram_log_infer). */
			if (nack && reorder_seen(&x->l->reorder, x->now_us))
				continue;
			recs[slot].tag = seq | DGRAM_RESOLVED; /* as dgram_resolve does */
			pending--;
			verdicts[nverdicts++] = slot | verdict_flag;
		}
		if (!nack && lo == oldest_key && k < lo)
			resolved_to = keys[r].hi;
	}
	d->pending = pending;
	d->nverdicts = nverdicts;
	if (resolved_to != INT32_MIN)
		d->oldest = (next_dgram_seq + (uint32_t)resolved_to + 1) & RUDP_WIRE_U24_MASK;
	dgram_advance_oldest(d, next_dgram_seq);
}

/* Loss inference for datagrams, by the rules frames follow (below): an
 * unresolved datagram INFER_DGRAM_THRESHOLD or more older than the newest
 * the ACK names (by_count: no reordering seen), or sent more than the
 * reorder window before it, is lost.
 * Both hold for every older datagram once they hold for one, so the walk
 * from the oldest stops at the first that is not. */
static void dgram_log_infer(struct loss_ctx *x, uint64_t window, bool by_count)
{
	struct dgram_log *d = &x->l->dlog;
	int32_t newest_key = x->v->sample.newest_key;
	uint32_t newest = (x->next_dgram_seq + (uint32_t)newest_key) & RUDP_WIRE_U24_MASK;
	const struct dgram_rec *nr = NULL;
	bool timed = false;

	if (!d->recs || d->pending == 0 || !x->v->named)
		return;
	for (uint32_t s = d->oldest; d->pending > 0 && rudp_u24_diff(s, x->next_dgram_seq) < newest_key;
	     s = rudp_u24_add(s, 1)) {
		uint32_t slot = s & (d->size - 1);
		const struct dgram_rec *r = &d->recs[slot];

		if (r->tag != (s | SENT_HISTORY_VALID))
			continue;
		if (!(by_count &&
		      newest_key - rudp_u24_diff(s, x->next_dgram_seq) >= INFER_DGRAM_THRESHOLD)) {
			/* Looked up only now: on most ACKs no older record waits. */
			if (!nr) {
				nr = &d->recs[newest & (d->size - 1)];
				timed = (nr->tag & RUDP_WIRE_U24_MASK) == newest &&
					(nr->tag & (SENT_HISTORY_VALID | DGRAM_RESOLVED));
			}
			if (!(timed && (int32_t)(nr->sent_us - r->sent_us) > (int32_t)window))
				break;
		}
		dgram_resolve(d, slot, true);
	}
	dgram_advance_oldest(d, x->next_dgram_seq);
}

/*
 * Loss inference: a frame still unacked although the peer acknowledged a
 * datagram sent clearly after it was lost, or its ACK was (and the peer's
 * ACKs repeat recent ranges, so rarely that). Either way waiting for the
 * RTO, or for a tail probe, only stalls the window: the peer NACKs a lost
 * datagram once, and that NACK may be lost too. Resending early costs a
 * duplicate the receiver drops by reliable index.
 *
 * "Clearly after" is either of two tests. By count, as TCP's duplicate
 * ACK threshold: at least INFER_DGRAM_THRESHOLD datagrams newer than the
 * frame's latest copy were acknowledged. This is what recovers within one
 * RTT of the loss on a fast path, where a whole window leaves in less than
 * any sane time threshold. By time, as TCP's RACK: a frame sent more than a
 * quarter of the RTT (at least 1 ms) after it was acknowledged; this covers
 * frames with too few datagrams after them to count. Both leave room for
 * some reordering on the path.
 *
 * Like NACKs, inferences without ACK progress share the budget of two
 * windows: an ACK that only names datagrams already acknowledged must not
 * pull resends again and again.
 */
/*
 * The same walk also sets rto_due_us (as loss_note_rto_due would after it:
 * the ACK progress restarted the timers), over the frames it leaves in
 * flight; it goes on past the budget for that.
 */
static void infer_losses_note_rto_due(struct loss_ctx *x, uint64_t newest_acked_send_us,
				      int32_t newest_acked_key)
{
	struct loss_engine *l = x->l;
	uint64_t window = reorder_window(&l->reorder, l->rtt.srtt_us, x->now_us);
	bool by_count = !reorder_seen(&l->reorder, x->now_us);
	uint64_t sent_before = 0;
	uint64_t due = UINT64_MAX;
	/* What the walk reads of the queue and the call, in locals: a store
	 * to a frame (its uint8_t fields may alias anything) made the
	 * compiler load them again for every frame. */
	const struct sendq q = *x->rel;
	const uint32_t rel_sent = x->rel_sent, next_dgram_seq = x->next_dgram_seq;
	const uint32_t budget = 2 * l->window_frames;

	dgram_log_infer(x, window, by_count);
	if (newest_acked_send_us > window)
		sent_before = newest_acked_send_us - window;
	for (uint32_t i = 0; i < rel_sent; i++) {
		struct sendq_frame *f = sendq_at(&q, i);
		int32_t key;

		if (f->state != FRAME_IN_FLIGHT)
			continue;
		key = rudp_u24_diff(f->last_dgram_seq, next_dgram_seq);
		if ((f->last_send_us < sent_before ||
		     (by_count && newest_acked_key - key >= INFER_DGRAM_THRESHOLD)) &&
		    l->nack_resends_since_ack < budget) {
			declare_lost(x, f, RESEND_INFERRED);
			continue;
		}
		if (loss_rto_deadline(l, f) < due)
			due = loss_rto_deadline(l, f);
	}
	l->rto_due_us = due;
}

int loss_on_ack_datagram(struct loss_engine *l, struct sendq *rel, uint32_t rel_sent, uint32_t next_dgram_seq,
			 const uint8_t *p, size_t n, uint64_t now_us, struct loss_verdict *v)
{
	struct loss_ctx x = {l, rel, rel_sent, next_dgram_seq, now_us, v, false};
	struct sent_history *h = &l->sent;
	size_t count = 0, dropped = 0;
	bool nack = false, untracked_left = false;
	uint32_t nkeys;
	int rc;

	memset(v, 0, sizeof(*v));
	l->dlog.nverdicts = 0;
	rc = rudp_wire_decode_ack(p, n, l->ack_scratch, l->ack_cap, &count, &dropped, &nack);
	if (rc < 0)
		return rc;
	/* More records than the scratch holds: grow it (up to max_ack_ranges,
	 * at most log2(max / initial) times per connection) and decode again. */
	if (dropped > 0 && l->ack_cap < l->max_ack_ranges && loss_scratch_grow(l, count + dropped) == 0)
		rudp_wire_decode_ack(p, n, l->ack_scratch, l->ack_cap, &count, &dropped, &nack);
	v->nack = nack;
	v->records = count;

	nkeys = normalize_records(l, next_dgram_seq, l->ack_scratch, count);
	if (nkeys == 0)
		return 0;
	v->named = true;
	v->sample.newest_key = l->ack_keys[nkeys - 1].hi;
	v->sample.oldest_key = l->ack_keys[0].lo;
	if (!nack) {
		ack_from_history(&x, nkeys);
		reorder_on_ack(&l->reorder,
			       (next_dgram_seq + (uint32_t)v->sample.newest_key) & RUDP_WIRE_U24_MASK);
	}
	dgram_log_on_records(&x, nkeys, nack);
	/* Frames whose latest copy is older than the history, and NACKs. For
	 * an ACK, the history acknowledged every frame whose latest copy it
	 * still tracks; the rest are in a datagram it gave up (no newer than
	 * untracked_seq) or behind an overwritten ring entry. */
	if (!nack && !x.overwritten &&
	    !(h->untracked && l->ack_keys[0].lo <= rudp_u24_diff(h->untracked_seq, next_dgram_seq)))
		return 0;
	for (uint32_t i = 0; i < rel_sent; i++) {
		struct sendq_frame *f = sendq_at(rel, i);

		if (f->state != FRAME_IN_FLIGHT && f->state != FRAME_NACKED)
			continue;
		if (!key_in_ranges(l->ack_keys, nkeys, rudp_u24_diff(f->last_dgram_seq, next_dgram_seq))) {
			untracked_left |= rudp_u24_diff(f->last_dgram_seq, h->untracked_seq) <= 0;
			continue;
		}
		if (nack) {
			untracked_left |= rudp_u24_diff(f->last_dgram_seq, h->untracked_seq) <= 0;
			/* Only the copy in that datagram was lost; a NACK for an older copy
			 * does not match because last_dgram_seq moved on when it was resent.
			 * A genuine NACK cannot come back sooner than about half the
			 * path's minimum RTT after the send. Not half the smoothed RTT:
			 * that includes the queues our own bursts build, which drain
			 * while a loss stalls the window, so genuine NACKs came back
			 * faster than srtt / 2 and were ignored. NACKs alone (with no
			 * ACK progress) may pull at most two windows of resends; after
			 * that the RTO and its backoff decide. A peer NACKing every seq
			 * it can name must not get the window once per NACK datagram.
			 * A frame already marked (by loss inference) is not counted
			 * twice. On a path that reorders, the gap may only be a late
			 * datagram: the time rule of loss inference decides. */
			if (f->state == FRAME_IN_FLIGHT && now_us - f->last_send_us >= l->rtt.min_us / 2 &&
			    l->nack_resends_since_ack < 2 * l->window_frames &&
			    !reorder_seen(&l->reorder, now_us))
				declare_lost(&x, f, RESEND_NACK);
			continue;
		}
		/* Matched by last_dgram_seq: the latest copy is the one named. */
		ack_frame(&x, f, f->last_send_us);
	}
	/* The frames left in flight are all newer than what was given up. */
	if (!untracked_left)
		h->untracked = false;
	if (nack)
		loss_note_rto_due(l, rel, rel_sent);
	return 0;
}

void loss_ack_end(struct loss_engine *l, struct sendq *rel, uint32_t rel_sent, uint32_t next_dgram_seq,
		  uint64_t now_us, struct loss_verdict *v)
{
	struct loss_ctx x = {l, rel, rel_sent, next_dgram_seq, now_us, v, false};

	v->left_bytes = 0;
	memset(&v->lost, 0, sizeof(v->lost));
	memset(&v->lost_resent, 0, sizeof(v->lost_resent));
	/* Frames left the flight and the ACK progress restarted the timers. */
	infer_losses_note_rto_due(&x, v->sample.newest_acked_send_us, v->sample.newest_key);
}

void loss_ack_sample(struct loss_engine *l, const struct loss_verdict *v, uint64_t now_us)
{
	/* One sample per ACK datagram, from the freshest frame it covers: many
	 * samples from one ACK would shrink rttvar without new information. */
	if (v->sample.have) {
		rtt_on_sample(&l->rtt, v->sample.rtt_us);
		rtt_note_min(&l->rtt, v->sample.rtt_us, now_us);
	}
}
