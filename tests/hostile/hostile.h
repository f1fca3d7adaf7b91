/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the attack tests: a server host that echoes, an honest client
 * host, an "evil" client that does the real handshake by hand over its own
 * socket (so it can then send whatever it likes on a live connection),
 * spoofed-source datagrams through a raw socket, and a count of the bytes
 * the process has allocated (the memory bounds are stated in those).
 */
#ifndef RUDP_TEST_HOSTILE_H
#define RUDP_TEST_HOSTILE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn/conn_internal.h"
#include "host/host_internal.h"
#include "rudp.h"

uint64_t hs_now_ms(void);
/* Bytes currently allocated by this process (ASan's count under ASan,
 * glibc's mallinfo2 otherwise). */
size_t hs_allocated_bytes(void);
/* Time limits are multiplied by this under valgrind (RUDP_TEST_SLOW=N). */
uint64_t hs_slow(void);

struct hs_world {
	rudp_host *server;
	char server_addr[64];
	struct sockaddr_in server_sa;
	/* honest client */
	rudp_host *client;
	rudp_peer *client_peer;
	bool client_connected;
	int client_disconnect_reason;
	uint64_t client_echoes; /* echoed messages the client got back */
	uint64_t client_sent;
	/* server side */
	int server_connects, server_disconnects;
	int last_disconnect_reason;
	rudp_peer *last_connected; /* latest server-side peer that connected */
	uint64_t server_received;
	bool echo;
};

/* Starts a server on 127.0.0.1 with cfg (bind_address set here). */
void hs_world_init(struct hs_world *w, rudp_config *cfg);
void hs_world_free(struct hs_world *w);
/* Services the server and the client (if any) once, without waiting. */
void hs_world_step(struct hs_world *w);
/* Creates the honest client and connects it; waits up to timeout_ms.
 * Returns the milliseconds it took, or -1. extra is called every step
 * (an attack running meanwhile); may be NULL. */
int hs_client_connect(struct hs_world *w, uint32_t timeout_ms, void (*extra)(void *), void *ud,
		      bool cookies_cfg);
/* The honest client sends n messages and waits for their echoes; true when
 * all came back within timeout_ms. */
bool hs_client_echo(struct hs_world *w, int n, size_t size, uint32_t timeout_ms);

/* The evil client: real handshake over its own socket, then raw control. */
struct hs_evil {
	int fd;
	struct sockaddr_in local;
	struct rudp_conn *c;
	uint64_t now_us;
	bool reading; /* false: stops reading its socket */
	bool connected;
	int closed;
	uint64_t dgrams_in; /* datagrams it received */
	uint64_t bytes_in;
};
/* Opens a socket bound to bind_ip (e.g. "127.0.0.9") port 0. */
void hs_evil_open(struct hs_evil *e, const char *bind_ip);
void hs_evil_close(struct hs_evil *e);
/* Offline + online handshake to the world's server, servicing it meanwhile. */
bool hs_evil_connect(struct hs_evil *e, struct hs_world *w, uint32_t timeout_ms);
/* Reads its socket (when reading) and flushes its conn. */
void hs_evil_step(struct hs_evil *e);
void hs_evil_send(struct hs_evil *e, const uint8_t *data, size_t len);
/* Receives raw datagrams without a conn; returns how many (bytes in *bytes). */
int hs_drain(int fd, size_t *bytes);
/* Sends one frame set holding f (reliable index, seq filled in from the
 * evil conn's own counters when fill is true). */
void hs_evil_send_frame(struct hs_evil *e, struct rudp_wire_frame *f, bool fill_indexes);
/* The server-side peer for the evil client's address (NULL when none). */
rudp_peer *hs_server_peer_of(struct hs_world *w, const struct hs_evil *e);

/* Raw IPv4/UDP with any source address (needs CAP_NET_RAW). */
int hs_spoof_open(void); /* -1 when not permitted */
void hs_spoof_send(int raw, uint32_t src_ip_host, uint16_t src_port, const struct sockaddr_in *dst,
		   const uint8_t *data, size_t len);

#endif
