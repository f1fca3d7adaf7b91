/* SPDX-License-Identifier: MIT */
/*
 * raw-udp column: one plain datagram per message through recvmmsg/sendmmsg
 * batches, no reliability and no GSO. It measures what moving the same
 * datagrams costs without a protocol; a lost datagram stalls the run, which
 * then fails (it is never reported as a figure). The server runs
 * o->workers threads, each with its own SO_REUSEPORT socket on the port.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#define UDP_BATCH 64
#define UDP_MAX_DGRAM 65536
/* One worker: its own socket (SO_REUSEPORT when there are several) that
 * echoes every datagram it reads to its sender. */
static int udp_worker_run(struct bench_worker *bw)
{
	int fd = *(int *)bw->drv;
	uint8_t *bufs = malloc((size_t)UDP_BATCH * UDP_MAX_DGRAM);
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	struct sockaddr_in from[UDP_BATCH];
	bw->conns = UINT64_MAX; /* no connections: flows are only 4-tuples */
	if (!bufs) {
		bench_fail("udp server: out of memory");
		return 1;
	}
	while (!bench_stop) {
		for (int i = 0; i < UDP_BATCH; i++) {
			iov[i].iov_base = bufs + (size_t)i * UDP_MAX_DGRAM;
			iov[i].iov_len = UDP_MAX_DGRAM;
			memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &from[i];
			msgs[i].msg_hdr.msg_namelen = sizeof from[i];
		}
		/* Block for the first datagram, then take what else is queued. */
		int n = recvmmsg(fd, msgs, UDP_BATCH, MSG_WAITFORONE, NULL);
		if (n <= 0)
			continue;
		for (int i = 0; i < n; i++)
			iov[i].iov_len = msgs[i].msg_len;
		int off = 0;
		while (off < n) {
			int s = sendmmsg(fd, msgs + off, (unsigned)(n - off), 0);
			if (s < 0) {
				if (errno == EINTR || errno == EAGAIN || errno == ENOBUFS)
					continue;
				break;
			}
			off += s;
		}
		bw->echoes += (uint64_t)off;
	}
	free(bufs);
	return 0;
}

int udp_server(const char *column, const struct drv_server_opts *o)
{
	(void)column;
	struct sockaddr_in sin;
	if (bench_parse_addr(o->bind, &sin) < 0) {
		bench_fail("bad --bind %s (want IPv4:port)", o->bind);
		return 2;
	}
	unsigned nw = o->workers ? o->workers : 1;
	int fds[BENCH_MAX_WORKERS];
	struct bench_worker bw[BENCH_MAX_WORKERS];
	memset(bw, 0, sizeof bw);
	unsigned made = 0;
	int rc = 1;
	for (; made < nw; made++) {
		fds[made] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[made] < 0)
			break;
		if ((nw > 1 && bench_reuseport(fds[made]) < 0) ||
		    bind(fds[made], (struct sockaddr *)&sin, sizeof sin) < 0) {
			close(fds[made]);
			break;
		}
		bench_udp_buffers(fds[made]);
		struct timeval tv = {0, 200000};
		setsockopt(fds[made], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		bw[made].drv = &fds[made];
	}
	if (made < nw) {
		bench_fail("udp server: cannot bind %s (worker %u of %u): %s", o->bind, made + 1, nw,
			   strerror(errno));
	} else {
		bench_signal_ready(o->ready_fd);
		rc = bench_run_workers(bw, nw, udp_worker_run);
		bench_server_summary(o->ready_fd, bw, nw);
	}
	for (unsigned i = 0; i < made; i++)
		close(fds[i]);
	return rc;
}

int udp_client(const char *column, const struct drv_client_opts *o, struct wl *w)
{
	(void)column;
	struct sockaddr_in sin;
	if (bench_parse_addr(o->connect, &sin) < 0) {
		snprintf(w->err, sizeof w->err, "bad --connect %s (want IPv4:port)", o->connect);
		return -1;
	}
	uint32_t nc = w->p.conns;
	int *fds = calloc(nc, sizeof *fds);
	uint8_t *rbuf = malloc((size_t)UDP_BATCH * (w->p.size + 1));
	int ep = epoll_create1(0);
	int rc = -1;
	for (uint32_t c = 0; c < nc; c++)
		fds[c] = -1;
	for (uint32_t c = 0; c < nc; c++) {
		/* One connected socket per connection: the kernel demultiplexes. */
		fds[c] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		if (fds[c] < 0 || connect(fds[c], (struct sockaddr *)&sin, sizeof sin) < 0) {
			snprintf(w->err, sizeof w->err, "udp socket: %s", strerror(errno));
			goto out;
		}
		bench_udp_buffers(fds[c]);
		struct epoll_event e = {.events = EPOLLIN, .data.u32 = c};
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[c], &e);
	}
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	struct epoll_event evs[256];
	while (!wl_finished(w)) {
		int c;
		while ((c = wl_pop_ready(w)) >= 0) {
			int n = 0;
			uint8_t *slot;
			while (n < UDP_BATCH && (slot = wl_next(w, (uint32_t)c)) != NULL) {
				iov[n].iov_base = slot + 4;
				iov[n].iov_len = w->p.size;
				memset(&msgs[n].msg_hdr, 0, sizeof msgs[n].msg_hdr);
				msgs[n].msg_hdr.msg_iov = &iov[n];
				msgs[n].msg_hdr.msg_iovlen = 1;
				n++;
			}
			int off = 0;
			while (off < n) {
				int s = sendmmsg(fds[c], msgs + off, (unsigned)(n - off), 0);
				if (s < 0) {
					if (errno == EINTR || errno == EAGAIN || errno == ENOBUFS)
						continue;
					snprintf(w->err, sizeof w->err, "sendmmsg: %s", strerror(errno));
					goto out;
				}
				off += s;
			}
		}
		int ne = epoll_wait(ep, evs, 256, 10);
		for (int i = 0; i < ne; i++) {
			uint32_t k = evs[i].data.u32;
			for (;;) {
				for (int j = 0; j < UDP_BATCH; j++) {
					iov[j].iov_base = rbuf + (size_t)j * (w->p.size + 1);
					iov[j].iov_len = w->p.size + 1; /* +1: a longer datagram shows */
					memset(&msgs[j].msg_hdr, 0, sizeof msgs[j].msg_hdr);
					msgs[j].msg_hdr.msg_iov = &iov[j];
					msgs[j].msg_hdr.msg_iovlen = 1;
				}
				int n = recvmmsg(fds[k], msgs, UDP_BATCH, 0, NULL);
				if (n <= 0)
					break;
				for (int j = 0; j < n; j++)
					if (wl_deliver(w, k, iov[j].iov_base, msgs[j].msg_len) < 0)
						goto out;
				if (n < UDP_BATCH)
					break;
			}
		}
		if (wl_check_stall(w) < 0)
			goto out;
	}
	rc = 0;
out:
	for (uint32_t c = 0; c < nc; c++)
		if (fds[c] >= 0)
			close(fds[c]);
	free(fds);
	free(rbuf);
	close(ep);
	return rc;
}
