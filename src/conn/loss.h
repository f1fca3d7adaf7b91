/* SPDX-License-Identifier: MIT */
/*
 * The loss and RTT engine: what we sent and what became of it. It keeps
 * the sent history (which reliable frames each recent datagram carried),
 * takes incoming ACK and NACK datagrams and gives verdicts (frames acked,
 * frames lost, and the bytes that left the flight, for the congestion
 * controller), infers losses, keeps the RTO and tail-probe deadlines, and
 * owns the RTT estimator (rtt.h, a leaf it calls).
 *
 * A part of the conn (conn_internal.h): it owns struct loss_engine and
 * calls no other part. Its per-frame state lives in the reliable send
 * queue's frame records (struct sendq_frame), which it is handed as a
 * view: the queue and how many of its frames were sent (rel_sent), read
 * and written through sendq.h's inline accessors only. The per-frame
 * steps of a flush are static inline here, so splitting them out of the
 * datagram builder added no call per frame.
 */
#ifndef RUDP_CONN_LOSS_H
#define RUDP_CONN_LOSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn/reorder.h"
#include "conn/rtt.h"
#include "conn/sendq.h"
#include "wire/wire.h"

/* Why a frame was marked for resend before its RTO: counted per reason in
 * the conn's stats, so tests and the simulator benchmark can tell the
 * recovery paths apart. */
enum conn_resend_why {
	RESEND_NACK,
	RESEND_INFERRED,
	RESEND_PROBE,
	RESEND_TIMEOUT, /* its retransmission timer expired */
};

/*
 * Which reliable frames each recent datagram carried (RakNet keeps the same):
 * an ACK for any copy of a frame finishes it, not only for its latest copy.
 * Without this, a frame resent after a spurious NACK (reordering) stays
 * unacked when only the first copy's ACK comes back, and is sent a third time.
 *
 * A slot per recent datagram names a run in one shared ring of reliable
 * indexes, written in send order, rather than max_frames_per_datagram
 * entries per datagram: a datagram of 800 B messages carries one frame, and
 * the fixed layout cost 8 KiB per connection for the seven unused entries.
 * The ring holds as many frame copies as there are slots; when it wraps
 * first (datagrams of many small frames), a datagram's run is partly
 * overwritten and those frames fall back, like datagrams older than the
 * history, to matching the frame's last_dgram_seq.
 *
 * Both hold four times the frames in flight: 64 at first, doubled (up to
 * four windows) when more are in flight, or when a slot about to be
 * reused still waits for its datagram's ACK (loss or delay) and names a
 * frame not yet acknowledged; a lost datagram whose frames arrived in
 * later copies is no reason to grow. A connection
 * with a few messages out at a time on a clean path keeps 0.8 KiB, not
 * the 3.3 KiB four windows take.
 */
struct sent_history {
	uint32_t *tag; /* seq | SENT_HISTORY_VALID per slot */
	uint32_t *first; /* per slot: ring position of its first reliable index */
	uint8_t *count; /* reliable frames recorded per slot */
	/* per slot: its datagram's send time (low 32 bits of the µs clock).
	 * An ACK names datagrams, and every copy of a frame goes in a new
	 * one, so the ACK of any datagram times that datagram alone: no
	 * retransmission ambiguity (Karn's) to avoid. */
	uint32_t *sent_us;
	uint32_t *ring; /* reliable indexes, at position & (size - 1) */
	uint32_t ring_head; /* next position written (wraps at 2^32, harmlessly) */
	/* Slots whose tag is valid: an ACK (which names again up to
	 * CONN_ACK_REPEAT_SPAN recent datagrams) stops looking once it has
	 * cleared them all. */
	uint32_t valid;
	/* No slot for a seq older than this is valid (a lower bound, kept
	 * within size of next_dgram_seq): with a window in flight some slot
	 * is always valid, so without it every ACK walked all the recent seqs
	 * it names again, cleared long ago (an eighth of a bulk sender's ACK
	 * work). */
	uint32_t oldest_valid;
	uint32_t size; /* slots, and ring entries: a power of two */
	uint32_t max_size; /* four windows */
	/* Whether a frame in flight may have its latest copy in a datagram
	 * the history gave up while it still waited (its slot reused, or
	 * dropped by a resize), and the newest such seq. Only such frames,
	 * and those whose ring entry was overwritten (which the ACK's walk
	 * of the history sees), need an ACK's match by last_dgram_seq over
	 * all frames in flight: on a clean path no ACK walks them. Cleared
	 * by that walk once no frame in flight is that old. */
	bool untracked;
	uint32_t untracked_seq;
};
#define SENT_HISTORY_MIN 64u
/* (Re)makes the history with size slots (a power of two, larger than
 * now), keeping what it holds; 0 or RUDP_CONN_E_NOMEM (unchanged). */
int sent_history_resize(struct sent_history *h, uint32_t size);
/* The history gave up seq's slot while it still waited (sent_history.untracked). */
void sent_history_note_untracked(struct sent_history *h, uint32_t seq);
/* Whether slot still waits for its ACK with a reliable frame of it unacknowledged. */
bool sent_history_slot_in_use(const struct sent_history *h, const struct sendq *rel, uint32_t rel_sent,
			      uint32_t slot);
#define SENT_HISTORY_VALID 0x80000000u
/* In a valid tag: the datagram was counted in dgrams_lost (declare_lost);
 * an ACK for it after all takes the count back (it was late, not lost). */
#define SENT_HISTORY_LOST 0x40000000u

/* An incoming ACK's records, normalized: distances from next_dgram_seq,
 * negative for sent seqs. */
struct ack_key_range {
	int32_t lo;
	int32_t hi;
};

/*
 * Per-datagram records for a rate-based congestion controller
 * (loss_config.dgram_log): every datagram carrying frames, reliable or not,
 * its wire bytes and opaque data the conn gives it (the controller's
 * snapshot), until the datagram is resolved exactly once: acknowledged,
 * or lost (NACKed, inferred, timed out, or its record reused unresolved).
 * Separate from the sent history, whose slots stay valid while frames
 * wait and are cleared by any copy's ACK: a controller needs a verdict
 * per datagram, not per frame. The verdicts of one call are listed
 * (loss_dgram_verdicts) for the conn to forward; the engine calls no one.
 */
#define LOSS_DGRAM_DATA_WORDS 5 /* opaque data per record: 20 bytes */
#define LOSS_DGRAM_LOG_MIN 64u
#define LOSS_DGRAM_LOG_MAX 4096u
#define LOSS_DGRAM_LOST 0x80000000u /* in a verdict: lost, not acknowledged */
struct dgram_rec {
	uint32_t tag; /* seq | SENT_HISTORY_VALID while unresolved; seq once resolved */
	uint32_t bytes;
	uint32_t sent_us; /* low 32 bits */
	uint32_t data[LOSS_DGRAM_DATA_WORDS];
};
struct dgram_log {
	struct dgram_rec *recs; /* NULL: off */
	uint32_t *verdicts; /* slot | LOSS_DGRAM_LOST, of the last call */
	uint32_t size; /* a power of two */
	uint32_t pending; /* unresolved records */
	uint32_t oldest; /* no unresolved record is older than this seq */
	uint32_t nverdicts;
};
/* A record reused before its datagram was resolved: lost. */
struct dgram_evicted {
	bool any;
	uint32_t bytes;
	uint32_t data[LOSS_DGRAM_DATA_WORDS];
};

struct loss_config {
	uint32_t window_frames; /* NACKs and inference pull at most two windows of resends */
	uint32_t max_ack_ranges; /* most ACK records decoded from one datagram */
	uint64_t rto_initial_us, rto_min_us, rto_max_us;
	uint64_t probe_margin_us; /* tail-loss probe slack (loss.c) */
	/* how long the peer may hold an ACK back (its ACK thinning): added to
	 * the probe margin and the RTO */
	uint64_t peer_ack_delay_us;
	bool dgram_log; /* keep per-datagram records (struct dgram_log) */
};

struct loss_engine {
	struct sent_history sent;
	struct dgram_log dlog;
	struct rtt_estimator rtt;
	uint32_t window_frames;
	uint32_t max_ack_ranges;
	uint64_t probe_margin_us;
	uint32_t rel_unacked; /* sent frames not acked yet */
	uint8_t probes_without_ack; /* tail-loss probes sent since the last ACK progress */
	uint32_t nack_resends_since_ack; /* frames NACKs or loss inference marked for resend since then */
	uint64_t ack_progress_us; /* when an ACK last acknowledged a reliable frame (loss_rto_deadline) */
	/* What lets a flush and the deadline skip their walks over the frames
	 * in flight (five per flush with its deadline; with a window of 64 and
	 * a dozen messages per flush they were a twentieth of a busy client's
	 * CPU). resend_pending: some sent frame may be FRAME_NACKED; set
	 * wherever a frame is marked, cleared by a flush walk that left none.
	 * rto_due_us: the earliest loss_rto_deadline of the frames in flight,
	 * set by every walk (the flush's, and loss_note_rto_due after an ACK,
	 * whose progress restarts the timers) and lowered by every send
	 * (loss_frame_sent); 0 before the first flush. */
	bool resend_pending;
	uint64_t rto_due_us;
	/* Decoded records of one incoming ACK and the same normalized: ack_cap
	 * of each, grown on demand (doubling) up to max_ack_ranges. */
	struct rudp_wire_range *ack_scratch;
	struct ack_key_range *ack_keys;
	uint32_t ack_cap;
	/* Send loss (conn_status.c): datagrams sent carrying reliable frames,
	 * and those of them NACKed or inferred lost, each counted once (marked
	 * in the sent history; past it, by the seq of the last one counted)
	 * and taken back when an ACK names the datagram after all (reordering).
	 * Tail losses that only a probe or the RTO repairs are not counted,
	 * nor frames inferred lost older than all the inferring ACK names
	 * (declare_lost), so the figure reads a little low. */
	uint64_t dgrams_reliable;
	uint64_t dgrams_lost;
	uint32_t lost_last_seq;
	bool lost_last_valid;
	struct reorder_tracker reorder; /* reordering on the path (reorder.h) */
};

/* Up to four windows of datagrams and of frame copies in the history.
 * 0 or RUDP_CONN_E_NOMEM (then loss_free it). */
int loss_init(struct loss_engine *l, const struct loss_config *cfg);
void loss_free(struct loss_engine *l);
/* Makes the ACK decode scratch hold at least want records (at most
 * max_ack_ranges). 0 or RUDP_CONN_E_NOMEM. */
int loss_scratch_grow(struct loss_engine *l, size_t want);

/* Datagrams (their seqs) whose frames were declared lost by one call:
 * the oldest and the newest, which is all a congestion controller that
 * reacts once per episode needs to know. */
struct loss_seqs {
	bool any;
	uint32_t oldest, newest;
	int32_t oldest_key, newest_key; /* distances from next_dgram_seq */
};

/* The newest datagram an ACK names, and its round trip when known. */
struct ack_sample {
	bool have;
	uint64_t rtt_us; /* when have: the newest named datagram's round trip */
	uint64_t newest_acked_send_us; /* of the copies named, for loss inference */
	int32_t newest_key; /* the newest datagram the ACK names (see normalize_records) */
	int32_t oldest_key; /* and the oldest (what an inference may count) */
};

/* What an ACK or NACK datagram did (loss_on_ack_datagram, loss_ack_end). */
struct loss_verdict {
	bool nack;
	bool named; /* it names a datagram we sent: false, nothing else to do */
	size_t records; /* ACK or NACK records in it (stats) */
	uint32_t acked_bytes; /* wire bytes of the frames it acknowledged */
	uint32_t left_bytes; /* wire bytes that left the flight (acknowledged or lost) */
	uint64_t resent_spurious; /* frames acknowledged through a copy older than their resend */
	struct loss_seqs lost; /* frames declared lost */
	struct loss_seqs lost_resent; /* those of them whose lost copy was itself a resend */
	struct ack_sample sample;
};

/* Decodes an incoming ACK or NACK datagram (p, n) and applies it to the
 * frames sent, rel[0, rel_sent): an ACK acknowledges frames, a NACK marks
 * frames for resend. Returns < 0 for a datagram that does not decode
 * (nothing changed), else 0 with *v. A NACK is done then (rto_due_us set
 * again); for an ACK that names something (v->named), the conn tells the
 * congestion controller of v->left_bytes and v->acked_bytes, then calls
 * loss_ack_end and loss_ack_sample. */
int loss_on_ack_datagram(struct loss_engine *l, struct sendq *rel, uint32_t rel_sent, uint32_t next_dgram_seq,
			 const uint8_t *p, size_t n, uint64_t now_us, struct loss_verdict *v);
/* The rest of an ACK: loss inference (v->left_bytes, v->lost and
 * v->lost_resent anew, for the frames it declared lost) and rto_due_us. */
void loss_ack_end(struct loss_engine *l, struct sendq *rel, uint32_t rel_sent, uint32_t next_dgram_seq,
		  uint64_t now_us, struct loss_verdict *v);
/* Last, the ACK's RTT sample, if it gave one: the conn reads the RTT
 * before it (what the losses mean to the congestion controller). */
void loss_ack_sample(struct loss_engine *l, const struct loss_verdict *v, uint64_t now_us);

/* ---- per-datagram records (loss_config.dgram_log) ---- */

/* The record r of datagram seq, written. */
static inline uint32_t *loss_dgram_write(struct dgram_log *d, struct dgram_rec *r, uint32_t seq,
					 uint32_t bytes, uint64_t now_us)
{
	if (d->pending == 0)
		d->oldest = seq;
	r->tag = seq | SENT_HISTORY_VALID;
	r->bytes = bytes;
	r->sent_us = (uint32_t)now_us;
	d->pending++;
	return r->data;
}
/* loss_dgram_record when seq's slot holds an unresolved record. */
uint32_t *loss_dgram_record_taken(struct loss_engine *l, uint32_t seq, uint32_t bytes, uint64_t now_us,
				  struct dgram_evicted *ev);
/* Records datagram seq of `bytes` sent at now_us; returns its opaque data
 * for the conn to fill. *ev: the record it reuses, when that was still
 * unresolved (the history grows first, up to LOSS_DGRAM_LOG_MAX, so this
 * is rare): that datagram counts as lost. Once per datagram sent: inline. */
static inline uint32_t *loss_dgram_record(struct loss_engine *l, uint32_t seq, uint32_t bytes,
					  uint64_t now_us, struct dgram_evicted *ev)
{
	struct dgram_log *d = &l->dlog;
	struct dgram_rec *r = &d->recs[seq & (d->size - 1)];

	ev->any = false;
	if (r->tag & SENT_HISTORY_VALID)
		return loss_dgram_record_taken(l, seq, bytes, now_us, ev);
	return loss_dgram_write(d, r, seq, bytes, now_us);
}
/* Resolves as lost every unresolved record up to and including seq (a
 * retransmission timeout: nothing sent before it will be answered now).
 * Replaces the verdict list. */
void loss_dgram_expire(struct loss_engine *l, uint32_t seq, uint32_t next_dgram_seq);
/* Resolves as lost the unresolved records sent an RTO or more before
 * now_us: a datagram whose frames all went again in others and got
 * through, or one with only unreliable frames, is never answered once
 * nothing is sent after it, and must not stay in flight. Replaces the
 * verdict list; returns its length. */
uint32_t loss_dgram_expire_aged(struct loss_engine *l, uint64_t now_us, uint32_t next_dgram_seq);
/* The full send time of a record, from its low 32 bits. */
static inline uint64_t loss_dgram_sent_us(const struct dgram_rec *r, uint64_t now_us)
{
	return now_us - (uint32_t)((uint32_t)now_us - r->sent_us);
}
/* When loss_dgram_expire_aged next has something to do (UINT64_MAX: no
 * record waits). Asked at every deadline: inline. */
static inline uint64_t loss_dgram_aged_due(const struct loss_engine *l, uint64_t now_us)
{
	const struct dgram_log *d = &l->dlog;
	const struct dgram_rec *r;

	if (d->pending == 0)
		return UINT64_MAX;
	r = &d->recs[d->oldest & (d->size - 1)];
	if (r->tag != (d->oldest | SENT_HISTORY_VALID))
		return now_us; /* not found at once: a walk will */
	return loss_dgram_sent_us(r, now_us) + l->rtt.rto_us;
}
/* The verdicts of the last loss_on_ack_datagram + loss_ack_end, or of
 * loss_dgram_expire(_aged): count, and each one's record. */
static inline uint32_t loss_dgram_verdicts(const struct loss_engine *l)
{
	return l->dlog.nverdicts;
}
static inline bool loss_dgram_verdict_lost(const struct loss_engine *l, uint32_t i)
{
	return (l->dlog.verdicts[i] & LOSS_DGRAM_LOST) != 0;
}
static inline const struct dgram_rec *loss_dgram_verdict_rec(const struct loss_engine *l, uint32_t i)
{
	return &l->dlog.recs[l->dlog.verdicts[i] & ~LOSS_DGRAM_LOST];
}

/* Sets rto_due_us to the earliest loss_rto_deadline of the frames in
 * flight (UINT64_MAX: none), by a walk. */
void loss_note_rto_due(struct loss_engine *l, const struct sendq *rel, uint32_t rel_sent);
/* When a tail-loss probe is due (UINT64_MAX: none). */
uint64_t loss_probe_deadline(const struct loss_engine *l, const struct sendq *rel, uint32_t rel_sent);
/* When a tail-loss probe is due at now_us: marks the oldest frame in
 * flight for resend as a probe, and the other frames still in flight
 * whose latest copy went in the same datagram; returns how many (0: no
 * probe due) and sets *bytes to their wire bytes, which leave the flight. */
uint32_t loss_take_probe(struct loss_engine *l, struct sendq *rel, uint32_t rel_sent, uint64_t now_us,
			 uint32_t *bytes);
/* The first sent frame not acknowledged yet (acknowledged ones at the
 * front are normally released at once), or NULL. Asked at every flush and
 * deadline: inline. */
static inline const struct sendq_frame *loss_oldest_unacked(const struct sendq *rel, uint32_t rel_sent)
{
	for (uint32_t i = 0; i < rel_sent; i++) {
		const struct sendq_frame *f = sendq_at(rel, i);

		if (f->state != FRAME_ACKED)
			return f;
	}
	return NULL;
}
/* Slot of the history now datagram seq's (loss_dgram_begin). */
static inline uint32_t sent_history_write(struct sent_history *h, uint32_t slot, uint32_t seq,
					  uint64_t now_us)
{
	h->tag[slot] = seq | SENT_HISTORY_VALID;
	h->first[slot] = h->ring_head;
	h->count[slot] = 0;
	h->sent_us[slot] = (uint32_t)now_us;
	return slot;
}
/* loss_dgram_begin when the history may grow or a slot it passes or takes
 * is in use. */
uint32_t loss_dgram_begin_any(struct loss_engine *l, const struct sendq *rel, uint32_t rel_sent, uint32_t seq,
			      uint64_t now_us, uint32_t new_frames);
/* Before the reliable frames of datagram seq are recorded
 * (loss_dgram_add): its slot in the history, which grows first when it
 * should. new_frames: frames in it never sent before. Returns the slot.
 * Once per datagram sent: inline, the rare cases apart. */
static inline uint32_t loss_dgram_begin(struct loss_engine *l, const struct sendq *rel, uint32_t rel_sent,
					uint32_t seq, uint64_t now_us, uint32_t new_frames)
{
	struct sent_history *h = &l->sent;
	uint32_t slot = seq & (h->size - 1);

	/* The common case: grown, nothing to note untracked. */
	if (h->size < h->max_size || h->valid == 0 ||
	    rudp_u24_diff(seq, h->oldest_valid) >= (int32_t)h->size || (h->tag[slot] & SENT_HISTORY_VALID))
		return loss_dgram_begin_any(l, rel, rel_sent, seq, now_us, new_frames);
	h->valid++;
	return sent_history_write(h, slot, seq, now_us);
}

/*
 * When a frame in flight times out: its RTO (backed off) after its send, or
 * after the last ACK that acknowledged anything, whichever is later (RFC
 * 6298 5.3 restarts the timer on such an ACK). While ACKs make progress the
 * peer is alive and reading, and a frame lost meanwhile is found by the
 * NACK or loss inference that the later datagrams' ACKs bring; a timer
 * from the send alone fired whenever the round trip grew past an RTO
 * learnt before, and under a burst's queues that was most frames (a
 * resend of each, which lengthened the queues). The RTO is left for what
 * it is for: the peer or the path gone quiet.
 */
static inline uint64_t loss_rto_deadline(const struct loss_engine *l, const struct sendq_frame *f)
{
	uint64_t restarted = l->ack_progress_us + (f->deadline_us - f->last_send_us);

	return restarted > f->deadline_us ? restarted : f->deadline_us;
}

/* Records a reliable frame (by its index) as carried by the datagram in
 * slot (loss_dgram_begin). */
static inline void loss_dgram_add(struct loss_engine *l, uint32_t slot, uint32_t reliable_index)
{
	struct sent_history *h = &l->sent;

	h->ring[h->ring_head++ & (h->size - 1)] = reliable_index;
	l->dgrams_reliable += h->count[slot] == 0;
	h->count[slot]++;
}

/* A copy of f went out in datagram seq. */
static inline void loss_frame_sent(struct loss_engine *l, struct sendq_frame *f, uint32_t seq,
				   uint64_t now_us)
{
	f->state = FRAME_IN_FLIGHT;
	f->last_dgram_seq = seq;
	f->last_send_us = now_us;
	f->deadline_us = now_us + rtt_backed_off_rto(&l->rtt, f->backoff);
	if (f->deadline_us < l->rto_due_us)
		l->rto_due_us = f->deadline_us;
}

/* A redundant copy of f (rudp_conn_set_redundant_channels) went out in
 * datagram seq, in the same flush as its first copy: not a resend (no
 * transmission counted, the timers unchanged). The copy's datagram is
 * the one a NACK or loss inference goes by: the first copy's may be lost
 * while this one arrives, and the sent history acknowledges the frame
 * through either. */
static inline void loss_frame_copied(struct sendq_frame *f, uint32_t seq)
{
	f->last_dgram_seq = seq;
}

#define LOSS_MAX_BACKOFF 30

/* f's first copy went out in datagram seq. */
static inline void loss_frame_sent_first(struct loss_engine *l, struct sendq_frame *f, uint32_t seq,
					 uint64_t now_us)
{
	f->first_send_us = now_us;
	f->transmissions = 1;
	f->backoff = 0;
	loss_frame_sent(l, f, seq, now_us);
	l->rel_unacked++;
}

/* f went out again in datagram seq; timeout: resent for its RTO. */
static inline void loss_frame_sent_again(struct loss_engine *l, struct sendq_frame *f, uint32_t seq,
					 uint64_t now_us, bool timeout)
{
	/* Back off only on timeouts: a NACK proves the path still works. */
	if (timeout && f->backoff < LOSS_MAX_BACKOFF)
		f->backoff++;
	if (f->transmissions < UINT8_MAX)
		f->transmissions++;
	loss_frame_sent(l, f, seq, now_us);
}

/* A flush's walk over the frames sent: whether one is needed (a resend
 * may be pending, or a timer is due). When it is, rto_due_us is set
 * again by the walk (loss_walk_frame) and the sends after it. */
static inline bool loss_walk_begin(struct loss_engine *l, uint64_t now_us)
{
	bool walk = l->resend_pending || now_us >= l->rto_due_us;

	if (walk)
		l->rto_due_us = UINT64_MAX;
	return walk;
}

/* What one walk remembers of the timeouts it took. */
struct loss_walk {
	bool timeout_taken; /* a frame timed out in this walk */
	uint32_t timeout_dgram_seq; /* that frame's latest datagram */
};

/*
 * One frame of the walk. One datagram per timeout, the oldest frame's
 * (RFC 6298 5.4-5.6 resends one segment): the frames that timed out with
 * it in the same datagram go too: lost with it if it was lost, they fit
 * one datagram again, and left behind they would wait a round trip more
 * for the resend's ACK. Frames of other datagrams that ran out with it
 * wait a backed-off RTO more. Why: the RTO runs out on every
 * frame of a flight at once when ACKs are late rather than lost (a peer's
 * queue behind an overload, where most such resends are duplicates at the
 * peer), and resending the whole flight adds to the queue that delayed
 * it. A real loss among the others costs a round trip more at most: the
 * resent frames' ACK lets inference mark the frames sent before them
 * lost at once, and NACKs still act.
 *
 * True when f timed out now: declared lost like a NACKed frame, it left
 * the flight (the conn tells the congestion controller) and its resend
 * waits for the window. w: the walk's state, zeroed before its first
 * frame.
 */
static inline bool loss_walk_frame(struct loss_engine *l, struct loss_walk *w, struct sendq_frame *f,
				   uint64_t now_us)
{
	bool timed_out = f->state == FRAME_IN_FLIGHT && loss_rto_deadline(l, f) <= now_us;
	bool taken = false;

	if (timed_out && w->timeout_taken && f->last_dgram_seq != w->timeout_dgram_seq) {
		if (f->backoff < LOSS_MAX_BACKOFF)
			f->backoff++;
		f->deadline_us = now_us + rtt_backed_off_rto(&l->rtt, f->backoff);
	} else if (timed_out) {
		w->timeout_taken = true;
		w->timeout_dgram_seq = f->last_dgram_seq;
		taken = true;
		f->state = FRAME_NACKED;
		f->resend_why = RESEND_TIMEOUT;
	}
	if (f->state == FRAME_IN_FLIGHT) {
		uint64_t due = loss_rto_deadline(l, f);

		if (due < l->rto_due_us)
			l->rto_due_us = due;
	}
	return taken;
}

/* The walk went through all frames sent; nacked_left: a resend was held
 * back (by the congestion window), so one is still pending. */
static inline void loss_walk_end(struct loss_engine *l, bool nacked_left)
{
	l->resend_pending = nacked_left;
}

/* Some resend may be left undone (a flush stopped early). */
static inline void loss_note_resend_pending(struct loss_engine *l)
{
	l->resend_pending = true;
}

#endif
