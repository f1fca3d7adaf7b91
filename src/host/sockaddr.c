/* SPDX-License-Identifier: MIT */
/* Socket addresses: parsing, printing, and the v4-in-v6 mapping of dual-stack sockets. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host_internal.h"

int rudp_addr_parse(const char *text, struct sockaddr_storage *out, socklen_t *outlen)
{
	if (!text || !out || !outlen)
		return RUDP_E_INVALID;
	size_t n = strlen(text);
	if (n == 0 || n > 300)
		return RUDP_E_ADDRESS;
	char host[300];
	const char *port_text;
	if (text[0] == '[') {
		const char *close = strchr(text, ']');
		if (!close || close[1] != ':')
			return RUDP_E_ADDRESS;
		size_t hl = (size_t)(close - text - 1);
		memcpy(host, text + 1, hl);
		host[hl] = '\0';
		port_text = close + 2;
	} else {
		const char *colon = strrchr(text, ':');
		if (!colon || strchr(text, ':') != colon) /* bare v6 without brackets is ambiguous */
			return RUDP_E_ADDRESS;
		size_t hl = (size_t)(colon - text);
		memcpy(host, text, hl);
		host[hl] = '\0';
		port_text = colon + 1;
	}
	char *end;
	long port = strtol(port_text, &end, 10);
	if (*port_text == '\0' || *end != '\0' || port < 0 || port > 65535)
		return RUDP_E_ADDRESS;

	memset(out, 0, sizeof(*out));
	struct sockaddr_in *v4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
	if (host[0] == '\0' || inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		*outlen = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		*outlen = sizeof(*v6);
		return 0;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM};
	struct addrinfo *res = NULL;
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
		return RUDP_E_ADDRESS;
	memcpy(out, res->ai_addr, res->ai_addrlen);
	*outlen = res->ai_addrlen;
	freeaddrinfo(res);
	if (out->ss_family == AF_INET)
		v4->sin_port = htons((uint16_t)port);
	else if (out->ss_family == AF_INET6)
		v6->sin6_port = htons((uint16_t)port);
	else
		return RUDP_E_ADDRESS;
	return 0;
}

void rudp_addr_normalize(const struct sockaddr *in, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (in->sa_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)in;
		if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
			struct sockaddr_in *v4 = (struct sockaddr_in *)out;
			v4->sin_family = AF_INET;
			v4->sin_port = v6->sin6_port;
			memcpy(&v4->sin_addr, &v6->sin6_addr.s6_addr[12], 4);
			return;
		}
		struct sockaddr_in6 *o6 = (struct sockaddr_in6 *)out;
		o6->sin6_family = AF_INET6;
		o6->sin6_port = v6->sin6_port;
		o6->sin6_addr = v6->sin6_addr;
		o6->sin6_scope_id = v6->sin6_scope_id;
		return;
	}
	if (in->sa_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)in;
		struct sockaddr_in *o4 = (struct sockaddr_in *)out;
		o4->sin_family = AF_INET;
		o4->sin_port = v4->sin_port;
		o4->sin_addr = v4->sin_addr;
	}
}

bool rudp_addr_for_socket(const struct sockaddr_storage *in, int sock_family, struct sockaddr_storage *out,
			  socklen_t *outlen)
{
	memset(out, 0, sizeof(*out));
	if (in->ss_family == sock_family) {
		*outlen = sock_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
		memcpy(out, in, *outlen);
		return true;
	}
	if (in->ss_family == AF_INET && sock_family == AF_INET6) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)in;
		struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
		v6->sin6_family = AF_INET6;
		v6->sin6_port = v4->sin_port;
		v6->sin6_addr.s6_addr[10] = 0xff;
		v6->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&v6->sin6_addr.s6_addr[12], &v4->sin_addr, 4);
		*outlen = sizeof(*v6);
		return true;
	}
	return false;
}

bool rudp_addr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const struct sockaddr_in *)a,
					 *y = (const struct sockaddr_in *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)a, *y = (const struct sockaddr_in6 *)b;
	return x->sin6_port == y->sin6_port && memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0 &&
	       x->sin6_scope_id == y->sin6_scope_id;
}

int rudp_addr_format(const struct sockaddr *sa, char *buf, size_t len)
{
	struct sockaddr_storage n;
	char ip[INET6_ADDRSTRLEN];
	int w;
	if (!sa || !buf || len == 0)
		return RUDP_E_INVALID;
	rudp_addr_normalize(sa, &n);
	if (n.ss_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)&n;
		inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof(ip));
		w = snprintf(buf, len, "%s:%u", ip, ntohs(v4->sin_port));
	} else if (n.ss_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&n;
		inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof(ip));
		w = snprintf(buf, len, "[%s]:%u", ip, ntohs(v6->sin6_port));
	} else {
		return RUDP_E_INVALID;
	}
	return (w < 0 || (size_t)w >= len) ? RUDP_E_INVALID : 0;
}

void rudp_addr_to_wire(const struct sockaddr_storage *n, struct rudp_wire_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (n->ss_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)n;
		out->version = 4;
		out->port = ntohs(v4->sin_port);
		memcpy(out->ip, &v4->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)n;
		out->version = 6;
		out->family = AF_INET6;
		out->port = ntohs(v6->sin6_port);
		memcpy(out->ip, &v6->sin6_addr, 16);
		out->flowinfo = ntohl(v6->sin6_flowinfo);
		out->scope_id = v6->sin6_scope_id;
	}
}

unsigned rudp_addr_route_mtu(const struct sockaddr_storage *n)
{
	int fam = n->ss_family;
	if (fam != AF_INET && fam != AF_INET6)
		return 0;
	int fd = socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	/* Connecting a UDP socket only looks the route up; nothing is sent. */
	socklen_t len = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int mtu = 0;
	socklen_t ml = sizeof(mtu);
	if (connect(fd, (const struct sockaddr *)n, len) != 0 ||
	    getsockopt(fd, fam == AF_INET ? IPPROTO_IP : IPPROTO_IPV6, fam == AF_INET ? IP_MTU : IPV6_MTU,
		       &mtu, &ml) != 0)
		mtu = 0;
	close(fd);
	return mtu > 0 ? (unsigned)mtu : 0;
}
