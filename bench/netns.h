/* SPDX-License-Identifier: MIT */
/* Network namespaces, loss rules and UDP counters (netns.c). */
#ifndef RUDP_BENCH_NETNS_H
#define RUDP_BENCH_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

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
/* Moves the calling thread into namespace `name` and opens an IPv4 socket
 * of type there (it stays in that namespace); -1 on failure. */
int ns_socket(const char *name, int type);
/* In a forked helper (emulator, probe, competing flow): closes every
 * descriptor from 3 up but keep. A helper that held the write end of a
 * run's pipe would keep its reader from ever seeing the end. */
void close_inherited_fds(int keep);
/* Memory a helper and the parent both see (its counters and results):
 * size bytes, zeroed, shared across fork; NULL when it cannot be had.
 * helper_shared_free(NULL, n) does nothing. */
void *helper_shared_alloc(size_t size);
void helper_shared_free(void *p, size_t size);
/* Starts a helper process (emulator, probe, competing flow) that reports
 * its set-up over a pipe. Returns 0 in the child, which keeps only the
 * pipe's write end (*ready_fd) of the parent's descriptors and dies with
 * the parent; the child's pid in the parent (*ready_fd the read end); -1
 * when it cannot start. */
pid_t helper_fork(int *ready_fd);
/* Child: tells the parent whether its set-up worked, and exits if not. */
void helper_ready(int ready_fd, bool ok);
/* Parent: the child's word; false when its set-up failed or it died (the
 * child is then killed and reaped). */
bool helper_started(pid_t pid, int ready_fd);
/* Puts the calling helper at SCHED_FIFO priority 10 (the link emulator and
 * the probe: a link keeps its timing whatever else the CPUs run; both
 * sleep between packets). Returns whether it could. */
bool helper_realtime(void);
/* Udp RcvbufErrors of namespace `name` (NULL: the current one), -1 if unknown. */
long ns_rcvbuf_errors(const char *name);

#endif
