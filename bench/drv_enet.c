/* SPDX-License-Identifier: MIT */
/*
 * enet column: libenet reliable packets on channel 0 with the library's
 * default settings. One client host holds every connection (ENet tells its
 * peers apart by peer id, not by address). Its sockets get the kernel
 * buffers every UDP column gets (bench_udp_buffers): with libenet's own
 * 256 KiB, 256 connections' windows overflowed them and ENet disconnected
 * a peer whose resends kept being lost, in every round; with 4 MiB that
 * row passes. (At 2,048 connections its one server socket still
 * overflows and peers are dropped.) The server has one worker:
 * enet_host_create() creates and binds its socket in one call, so libenet's
 * API leaves no point at which SO_REUSEPORT could be set before bind.
 *
 * A game stream (path rows) goes on channels of their own: unreliable
 * (which ENet delivers sequenced) on 1, reliable on 2; ENet has no message
 * priorities. The server echoes each packet on the channel it came on,
 * with its flags.
 *
 * libenet is opened with dlopen() when an enet half starts, not linked:
 * a linked libenet.so would be mapped (and partly resident) in every
 * rudp-bench process, and the peak RSS of the librudp, TCP and KCP halves
 * would carry another library's pages.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#if defined(BENCH_HAVE_ENET)
#include <enet/enet.h>

/* The libenet functions this file calls, resolved by enet_load(). The
 * macros below send every call through this table; the prototypes come
 * from enet.h, so the types are checked as with a linked libenet. */
#define ENET_FUNCTIONS(X)                                                                                    \
	X(enet_initialize)                                                                                   \
	X(enet_deinitialize)                                                                                 \
	X(enet_address_set_host_ip)                                                                          \
	X(enet_host_create)                                                                                  \
	X(enet_host_destroy)                                                                                 \
	X(enet_host_connect)                                                                                 \
	X(enet_host_service)                                                                                 \
	X(enet_host_check_events)                                                                            \
	X(enet_host_flush)                                                                                   \
	X(enet_peer_send)                                                                                    \
	X(enet_packet_create)                                                                                \
	X(enet_packet_destroy)

static struct {
#define ENET_POINTER(name) __typeof__(name) *name;
	ENET_FUNCTIONS(ENET_POINTER)
#undef ENET_POINTER
} enet_api;

/* Opens libenet and resolves the table once per process. Returns NULL or
 * the reason it could not. */
static const char *enet_load(void)
{
	static char why[256];
	static bool loaded;
	if (loaded)
		return NULL;
	void *lib = dlopen(BENCH_ENET_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(why, sizeof why, "cannot load %s: %s", BENCH_ENET_SONAME, dlerror());
		return why;
	}
#define ENET_RESOLVE(name)                                                                                   \
	*(void **)&enet_api.name = dlsym(lib, #name);                                                        \
	if (!enet_api.name) {                                                                                \
		snprintf(why, sizeof why, "%s has no %s", BENCH_ENET_SONAME, #name);                         \
		return why;                                                                                  \
	}
	ENET_FUNCTIONS(ENET_RESOLVE)
#undef ENET_RESOLVE
	loaded = true;
	return NULL;
}

#define enet_initialize (*enet_api.enet_initialize)
#define enet_deinitialize (*enet_api.enet_deinitialize)
#define enet_address_set_host_ip (*enet_api.enet_address_set_host_ip)
#define enet_host_create (*enet_api.enet_host_create)
#define enet_host_destroy (*enet_api.enet_host_destroy)
#define enet_host_connect (*enet_api.enet_host_connect)
#define enet_host_service (*enet_api.enet_host_service)
#define enet_host_check_events (*enet_api.enet_host_check_events)
#define enet_host_flush (*enet_api.enet_host_flush)
#define enet_peer_send (*enet_api.enet_peer_send)
#define enet_packet_create (*enet_api.enet_packet_create)
#define enet_packet_destroy (*enet_api.enet_packet_destroy)

/* Channels: 0 the workload's, 1 and 2 the game stream's. */
#define ENET_CHANNELS 3
#define CHANNEL_GAME_UNRELIABLE 1
#define CHANNEL_GAME_RELIABLE 2

static int parse_enet_addr(const char *s, ENetAddress *a)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof host)
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	a->port = (enet_uint16)atoi(colon + 1);
	return enet_address_set_host_ip(a, host) == 0 && a->port ? 0 : -1;
}

int enet_server_drv(const char *column, const struct drv_server_opts *o)
{
	(void)column;
	const char *why = enet_load();
	if (why) {
		bench_fail("enet server: %s", why);
		return 2;
	}
	ENetAddress a;
	if (enet_initialize() != 0 || parse_enet_addr(o->bind, &a) < 0) {
		bench_fail("enet server: bad --bind %s or enet_initialize failed", o->bind);
		return 2;
	}
	if (o->workers > 1)
		bench_fail("enet server: %s; running 1 worker, not %u", BENCH_ENET_ONE_WORKER, o->workers);
	size_t peers = o->conns_hint + 64 > 1024 ? o->conns_hint + 64 : 1024;
	if (peers > ENET_PROTOCOL_MAXIMUM_PEER_ID)
		peers = ENET_PROTOCOL_MAXIMUM_PEER_ID;
	ENetHost *h = enet_host_create(&a, peers, ENET_CHANNELS, 0, 0);
	if (!h) {
		bench_fail("enet server: cannot bind %s", o->bind);
		return 1;
	}
	bench_udp_buffers(h->socket);
	bench_signal_ready(o->ready_fd);
	struct bench_worker bw = {.resent_bytes = -1}; /* libenet keeps no count of its resends */
	ENetEvent ev;
	while (!bench_stop) {
		int r = enet_host_service(h, &ev, 50);
		bool echoed = false;
		while (r > 0) {
			if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
				/* Send the received packet back as it is: ENet owns it then. */
				if (enet_peer_send(ev.peer, ev.channelID, ev.packet) < 0) {
					bench_fail("enet server: enet_peer_send failed");
					enet_packet_destroy(ev.packet);
				}
				echoed = true;
				bw.echoes++;
			} else if (ev.type == ENET_EVENT_TYPE_CONNECT) {
				bw.conns++;
			}
			r = enet_host_check_events(h, &ev);
		}
		if (echoed)
			enet_host_flush(h);
	}
	bench_server_summary(o->ready_fd, &bw, 1);
	enet_host_destroy(h);
	enet_deinitialize();
	return 0;
}

static int handle(struct wl *w, ENetEvent *ev, uint32_t *connected)
{
	uint32_t c = (uint32_t)(uintptr_t)ev->peer->data;
	switch (ev->type) {
	case ENET_EVENT_TYPE_CONNECT:
		wl_connected(w, c);
		(*connected)++;
		return 0;
	case ENET_EVENT_TYPE_RECEIVE: {
		int r = wl_deliver(w, c, ev->packet->data, ev->packet->dataLength);
		enet_packet_destroy(ev->packet);
		return r;
	}
	case ENET_EVENT_TYPE_DISCONNECT:
		snprintf(w->err, sizeof w->err, "connection %u: disconnected", c);
		return -1;
	default: return 0;
	}
}

int enet_client_drv(const char *column, const struct drv_client_opts *o, struct wl *w)
{
	(void)column;
	const char *why = enet_load();
	if (why) {
		snprintf(w->err, sizeof w->err, "enet: %s", why);
		return -1;
	}
	ENetAddress a;
	if (enet_initialize() != 0 || parse_enet_addr(o->connect, &a) < 0) {
		snprintf(w->err, sizeof w->err, "bad --connect %s or enet_initialize failed", o->connect);
		return -1;
	}
	uint32_t nc = w->p.conns;
	if (nc > ENET_PROTOCOL_MAXIMUM_PEER_ID) {
		snprintf(w->err, sizeof w->err, "enet: at most %d connections",
			 ENET_PROTOCOL_MAXIMUM_PEER_ID);
		return -1;
	}
	size_t channels = w->p.game_hz ? ENET_CHANNELS : 1;
	ENetHost *h = enet_host_create(NULL, nc, channels, 0, 0);
	ENetPeer **peer = calloc(nc, sizeof *peer);
	int rc = -1;
	if (!h || !peer) {
		snprintf(w->err, sizeof w->err, "enet_host_create failed");
		goto out;
	}
	bench_udp_buffers(h->socket);
	for (uint32_t c = 0; c < nc; c++) {
		w->c[c].connect_start_ns = bench_now_ns();
		peer[c] = enet_host_connect(h, &a, channels, c);
		if (!peer[c]) {
			snprintf(w->err, sizeof w->err, "enet_host_connect failed");
			goto out;
		}
		peer[c]->data = (void *)(uintptr_t)c;
	}
	enet_host_flush(h);
	uint32_t connected = 0;
	ENetEvent ev;
	while (connected < nc || !wl_finished(w)) {
		if (connected == nc) {
			int c;
			bool sent = false;
			uint8_t *slot;
			enum wl_stream st;
			while ((slot = wl_game_next(w, &st)) != NULL) {
				bool reliable = st == WL_STREAM_GAME_RELIABLE;
				ENetPacket *p = enet_packet_create(slot + 4, w->p.game_size,
								   reliable ? ENET_PACKET_FLAG_RELIABLE : 0);
				if (!p ||
				    enet_peer_send(peer[0],
						   reliable ? CHANNEL_GAME_RELIABLE : CHANNEL_GAME_UNRELIABLE,
						   p) < 0) {
					snprintf(w->err, sizeof w->err, "enet: game send failed");
					goto out;
				}
				sent = true;
			}
			while ((c = wl_pop_ready(w)) >= 0)
				while ((slot = wl_next(w, (uint32_t)c)) != NULL) {
					ENetPacket *p = enet_packet_create(slot + 4, w->p.size,
									   ENET_PACKET_FLAG_RELIABLE);
					if (!p || enet_peer_send(peer[c], 0, p) < 0) {
						snprintf(w->err, sizeof w->err, "enet: send failed");
						goto out;
					}
					sent = true;
				}
			if (sent)
				enet_host_flush(h);
			if (wl_finished(w))
				break;
		}
		int r = enet_host_service(h, &ev, (enet_uint32)wl_wait_ms(w, 2));
		while (r > 0) {
			if (handle(w, &ev, &connected) < 0)
				goto out;
			r = enet_host_check_events(h, &ev);
		}
		if (r < 0) {
			snprintf(w->err, sizeof w->err, "enet_host_service failed");
			goto out;
		}
		if (wl_check_stall(w) < 0)
			goto out;
	}
	rc = 0;
out:
	free(peer);
	/* UDP payload bytes; a 32-bit count that wraps past 4 GiB, so only the
	 * stream rows' (a few MB) are told. */
	if (h && w->p.kind == WL_STREAM)
		w->wire_bytes = h->totalSentData;
	if (h)
		enet_host_destroy(h);
	enet_deinitialize();
	return rc;
}

#else

int enet_server_drv(const char *column, const struct drv_server_opts *o)
{
	(void)o;
	bench_fail("%s: not built (libenet-dev was missing)", column);
	return 2;
}

int enet_client_drv(const char *column, const struct drv_client_opts *o, struct wl *w)
{
	(void)o;
	snprintf(w->err, sizeof w->err, "%s: not built (libenet-dev was missing)", column);
	return -1;
}

#endif
