/* SPDX-License-Identifier: MIT */
/* Network namespaces, loss rules and the TUN delay emulator (netns.c). */
#ifndef RUDP_BENCH_NETNS_H
#define RUDP_BENCH_NETNS_H

#include <sys/types.h>

#define EMU_CLIENT_IP "10.77.0.1"
#define EMU_SERVER_IP "10.77.0.2"

/* Runs argv (PATH lookup), feeding input on stdin when not NULL; stdout is
 * discarded. Returns 0 when it exits 0. */
int run_cmd(char *const argv[], const char *input);
/* Creates namespace `name` with lo up at MTU 1500. */
int ns_create(const char *name);
void ns_delete(const char *name);
/* Drops pct % of the packets entering the namespace (nftables numgen). */
int ns_add_loss(const char *name, double pct);
/* Moves the calling thread into namespace `name`. */
int ns_enter(const char *name);
/* Udp RcvbufErrors of namespace `name` (NULL: the current one), -1 if unknown. */
long ns_rcvbuf_errors(const char *name);
/* Starts the forwarder joining ns_client (EMU_CLIENT_IP) and ns_server
 * (EMU_SERVER_IP); returns its pid or -1. SIGTERM stops it. */
pid_t emu_start(const char *ns_client, const char *ns_server, double delay_ms_oneway, double loss_pct);

#endif
