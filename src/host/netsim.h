/* SPDX-License-Identifier: MIT */
/*
 * netsim: the built-in network simulator (rudp_config.sim). It decides the
 * fate of each datagram the host sends or receives (lost, delayed, rate
 * limited, duplicated, reordered) and holds the delayed ones until the
 * host's service loop releases them at their time. It knows nothing of
 * peers or connections: datagrams, times and a seeded generator.
 */
#ifndef RUDP_HOST_NETSIM_H
#define RUDP_HOST_NETSIM_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "io/io.h"
#include "rudp.h"

enum netsim_dir {
	NETSIM_OUT = 0, /* handed over by the host, on its way to the socket */
	NETSIM_IN = 1, /* read from the socket, on its way into the host */
};

enum netsim_verdict {
	NETSIM_PASS, /* handle it now as if there were no simulator */
	NETSIM_HELD, /* copied into the simulator; netsim_release_due hands it back */
	NETSIM_DROPPED, /* lost (counted) */
};

/* A held datagram's bookkeeping; its bytes are in netsim.data at the same
 * index. Addresses are IPv4 or IPv6 only (what the host's sockets use). */
struct netsim_held {
	uint64_t release_us;
	uint64_t order; /* ties of release_us go first in, first out */
	union {
		struct sockaddr sa;
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} addr;
	socklen_t addrlen;
	uint32_t sock;
	uint16_t len;
	uint8_t dir;
};

/* One direction of the simulated path. */
struct netsim_link {
	uint64_t busy_until_ns; /* the rate limit: when the link has sent what it queued */
	uint64_t last_release_us; /* latest release of an in-order datagram: jitter never reorders */
	uint32_t held; /* datagrams of this direction held now */
};

struct netsim {
	rudp_sim_config cfg; /* with the zero limits resolved to their defaults */
	uint64_t rng;
	uint64_t next_order;
	/* The store: held[i] and data[i * RUDP_IO_SLOT_SIZE] for i < cap; free
	 * indices on a stack; a binary min-heap of held indices by
	 * (release_us, order). Grows by doubling up to max_held_datagrams. */
	struct netsim_held *held;
	uint8_t *data;
	uint32_t *heap, *free_stack;
	uint32_t cap, count, free_count;
	struct netsim_link link[2];
	uint64_t dropped, overflowed, duplicated, reordered, delayed;
	uint8_t released[RUDP_IO_SLOT_SIZE]; /* the datagram netsim_release_due handed out last */
};

/* Whether cfg asks for any simulation (a seed or limits alone do not). */
bool netsim_config_enabled(const rudp_sim_config *cfg);
/* Whether every field of cfg is in its documented range (rudp.h). */
bool netsim_config_valid(const rudp_sim_config *cfg);

/* Makes a simulator for a valid cfg. Returns 0 or RUDP_E_NOMEM. */
int netsim_init(struct netsim **out, const rudp_sim_config *cfg);
void netsim_free(struct netsim *s);

/* A datagram the host is about to commit to io socket sock for to. PASS:
 * commit it now (a duplicate may have been held besides); HELD: it was
 * copied, do not commit it; DROPPED: do not commit it. */
enum netsim_verdict netsim_outgoing(struct netsim *s, uint64_t now_us, uint32_t sock, const uint8_t *data,
				    size_t len, const struct sockaddr *to, socklen_t tolen);
/* A datagram io has just read. PASS: process it now; HELD: it was copied
 * (d may be reused); DROPPED: forget it. */
enum netsim_verdict netsim_incoming(struct netsim *s, uint64_t now_us, const struct rudp_io_datagram *d);

/* When the next held datagram is due, or UINT64_MAX when none is held. */
uint64_t netsim_next_release_us(const struct netsim *s);
/* Takes the earliest held datagram if it is due at now_us: fills *dir and
 * *out (addr, addrlen, sock, len; data points into s and stays valid until
 * the next call) and returns true. Returns false when none is due. */
bool netsim_release_due(struct netsim *s, uint64_t now_us, enum netsim_dir *dir,
			struct rudp_io_datagram *out);
/* Drops what is held for or from io socket sock (it is being closed, and
 * its index may be given to another socket). */
void netsim_forget_socket(struct netsim *s, uint32_t sock);
/* Fills the sim_* counters of *out. */
void netsim_stats(const struct netsim *s, rudp_host_stats *out);

#endif
