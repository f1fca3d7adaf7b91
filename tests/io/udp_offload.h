/* SPDX-License-Identifier: MIT */
/*
 * What this kernel does with UDP segmentation offload on loopback, asked
 * once with two plain sockets: whether it sends a GSO run (UDP_SEGMENT)
 * and whether it hands such a run whole to a socket that asked for
 * UDP_GRO. Tests that count GSO sends or GRO reads expect them only where
 * the kernel has the feature, so a kernel without it fails no correct
 * build, and one with it still catches a backend that stopped using it.
 */
#ifndef RUDP_TEST_UDP_OFFLOAD_H
#define RUDP_TEST_UDP_OFFLOAD_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

struct udp_offload {
	bool gso; /* a two-datagram GSO send to loopback is accepted */
	bool gro; /* and it arrives as one read with its segment size */
};

/* Sends buf as one UDP GSO request of seg-byte segments (the last may be
 * shorter); sendmsg's result. The control buffer is zeroed whole, padding
 * too, so memcheck sees no uninitialised bytes go to the kernel. */
static inline ssize_t udp_send_gso(int tx, const struct sockaddr *to, socklen_t tolen, const void *buf,
				   size_t len, uint16_t seg)
{
	struct iovec iov = {(void *)buf, len};
	union {
		char b[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl;
	memset(&ctl, 0, sizeof(ctl));
	struct msghdr m = {.msg_name = (void *)to,
			   .msg_namelen = tolen,
			   .msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl.b,
			   .msg_controllen = sizeof(ctl.b)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
	return sendmsg(tx, &m, 0);
}

static inline struct udp_offload udp_offload_probe(void)
{
	enum { SEG = 100 };
	struct udp_offload found = {false, false};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	int tx = socket(AF_INET, SOCK_DGRAM, 0);
	int one = 1;
	bool gro_asked = false;
	if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&a, alen) != 0 ||
	    getsockname(rx, (struct sockaddr *)&a, &alen) != 0)
		goto out;
	gro_asked = setsockopt(rx, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0;

	uint8_t run[2 * SEG];
	memset(run, 0x5a, sizeof(run));
	found.gso = udp_send_gso(tx, (const struct sockaddr *)&a, alen, run, sizeof(run), SEG) ==
		    (ssize_t)sizeof(run);
	if (!found.gso || !gro_asked)
		goto out;

	struct pollfd p = {.fd = rx, .events = POLLIN};
	if (poll(&p, 1, 1000) != 1)
		goto out;
	uint8_t got[4 * SEG];
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} rctl;
	struct iovec iov = {got, sizeof(got)};
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = rctl.b, .msg_controllen = sizeof(rctl.b)};
	if (recvmsg(rx, &m, 0) != (ssize_t)sizeof(run))
		goto out;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		int size;
		if (cm->cmsg_level != SOL_UDP || cm->cmsg_type != UDP_GRO ||
		    cm->cmsg_len < CMSG_LEN(sizeof(size)))
			continue;
		memcpy(&size, CMSG_DATA(cm), sizeof(size));
		found.gro = size == SEG;
	}
out:
	if (rx >= 0)
		close(rx);
	if (tx >= 0)
		close(tx);
	return found;
}

#endif
