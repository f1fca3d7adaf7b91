/* SPDX-License-Identifier: MIT */
/*
 * The defaults of every limit and timer a connection has, in one place:
 * rudp_config_init (the public API, src/host/api.c) and
 * rudp_conn_config_init (a conn made directly, as the tests and tools do)
 * both take their values from here, so a conn behaves the same whoever
 * made it. Times in milliseconds, as the public config has them.
 */
#ifndef RUDP_CONN_DEFAULTS_H
#define RUDP_CONN_DEFAULTS_H

/* RakNet's usual MTU; the handshake negotiates down from it. */
#define RUDP_DEFAULT_MTU 1492u
#define RUDP_DEFAULT_PROTOCOL_VERSION 11u
#define RUDP_DEFAULT_WINDOW_FRAMES 64u
#define RUDP_DEFAULT_MAX_FRAMES_PER_DATAGRAM 8u
/* 32 MiB: a 4 MiB message plus plenty of ordinary traffic behind it. */
#define RUDP_DEFAULT_MAX_QUEUE_BYTES (32u << 20)
/* 8192 fragments carry 4 MiB even at MTU 576 (521-byte fragments). */
#define RUDP_DEFAULT_MAX_SPLIT_COUNT 8192u
/* Half the window: near-MTU messages split in two could otherwise fill
 * every slot with one window of traffic. */
#define RUDP_DEFAULT_MAX_SPLIT_IDS 32u
/* One 4 MiB message reserves about 4.2 MiB (count * largest fragment). */
#define RUDP_DEFAULT_MAX_REASSEMBLY_BYTES (8u << 20)
#define RUDP_DEFAULT_MAX_MESSAGE_SIZE (4u << 20)
#define RUDP_DEFAULT_MAX_ORDER_HOLD 4096u
#define RUDP_DEFAULT_MAX_ACK_RANGES 256u
#define RUDP_DEFAULT_MAX_DGRAM_SEQ_JUMP 1024u
/* Reliable-index dedup window; the host widens it to four windows. */
#define RUDP_DEFAULT_RECV_WINDOW 8192u
#define RUDP_DEFAULT_RTO_INITIAL_MS 200u
#define RUDP_DEFAULT_RTO_MIN_MS 30u
#define RUDP_DEFAULT_RTO_MAX_MS 2000u
/* Microseconds: the slack a tail-loss probe allows an ACK on top of the
 * RTT estimate (loss.c): the ACK's scheduling delay at the peer, a little
 * more than a host that waits to the microsecond takes to wake. */
#define RUDP_DEFAULT_PROBE_MARGIN_US 250u
/* ACK thinning (acktr.h): a received data datagram is acknowledged once
 * this many wait, or this many microseconds after the first of them came,
 * whichever is first (a gap, a late datagram or the handshake at once).
 * Off by default (an ACK per datagram): with RUDP_CC_RATE it raised the
 * standing queue a game stream beside bulk waits in (docs/tuning.md). */
#define RUDP_DEFAULT_ACK_EVERY 1u
#define RUDP_DEFAULT_ACK_DELAY_US 2000u
#define RUDP_DEFAULT_KEEPALIVE_MS 2000u
#define RUDP_DEFAULT_TIMEOUT_MS 10000u
#define RUDP_DEFAULT_CONNECT_TIMEOUT_MS 5000u
#define RUDP_DEFAULT_DISCONNECT_LINGER_MS 2000u
/* enum rudp_conn_cc, the same values as enum rudp_congestion_control: the
 * rate controller, since a path narrower than the sender is the common case
 * on the Internet and the window alone floods its queue (include/rudp.h). */
#define RUDP_DEFAULT_CONGESTION_CONTROL 2u

#endif
