/* SPDX-License-Identifier: MIT */
/*
 * rudp-api-cost: the CPU one message to many peers costs through
 * rudp_send_many() against one rudp_send() per peer. One process holds a
 * server host and a client host (socket_per_connect) with N connections
 * over loopback; per round the server queues one message of S bytes to
 * every peer, one way or the other (alternating, so both see the same
 * machine state), and the thread's CPU time of that is taken; the "+flush"
 * rows include the rudp_flush() that sends it. Between rounds, untimed,
 * both hosts are serviced until every client has its copy and the ACKs
 * are in. Prints the median per round of each way and their ratio, for
 * unreliable-sequenced and reliable-ordered messages.
 *
 *   rudp-api-cost [--peers N] [--rounds R] [--size S]
 *
 * Defaults: 1,000 peers, 100 rounds, 200 bytes. Exits 0, 1 on a failure
 * (printed), 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rudp.h"
#include "tool_args.h"

#define EVENTS 512
/* Not an rudp error: the wait for connections or copies ran out. */
#define TIMED_OUT (-1000)

struct world {
	rudp_host *srv, *cli;
	rudp_peer **speers;
	long peers, nspeers, connected, received;
};

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Services both hosts once; a disconnect is a failure. */
static int service_both(struct world *w, int wait_ms)
{
	rudp_event ev[EVENTS];
	int k = rudp_service(w->srv, ev, EVENTS, 0);

	if (k < 0)
		return k;
	for (int i = 0; i < k; i++) {
		if (ev[i].type == RUDP_EVENT_CONNECT)
			w->speers[w->nspeers++] = ev[i].peer;
		if (ev[i].type == RUDP_EVENT_DISCONNECT)
			return RUDP_E_NOT_CONNECTED;
	}
	k = rudp_service(w->cli, ev, EVENTS, wait_ms);
	if (k < 0)
		return k;
	for (int i = 0; i < k; i++) {
		if (ev[i].type == RUDP_EVENT_CONNECT)
			w->connected++;
		else if (ev[i].type == RUDP_EVENT_RECEIVE)
			w->received++;
		else if (ev[i].type == RUDP_EVENT_DISCONNECT)
			return RUDP_E_NOT_CONNECTED;
	}
	return 0;
}

static int setup(struct world *w, long peers)
{
	char addr[64];
	rudp_config sc, cc;
	int r;

	memset(w, 0, sizeof(*w));
	w->peers = peers;
	w->speers = calloc((size_t)peers, sizeof(*w->speers));
	if (!w->speers)
		return RUDP_E_NOMEM;
	rudp_config_init(&sc);
	sc.bind_address = "127.0.0.1:0";
	sc.max_peers = (uint32_t)peers + 16;
	/* Every client is on 127.0.0.1: the per-address limits would refuse them. */
	sc.max_pending_handshakes = (uint32_t)peers + 16;
	sc.max_pending_per_address = (uint32_t)peers + 16;
	sc.offline_rate_per_address = 0;
	if ((r = rudp_host_create(&sc, &w->srv)) != 0 ||
	    (r = rudp_host_local_address(w->srv, addr, sizeof(addr))) != 0)
		return r;
	rudp_config_init(&cc);
	cc.socket_per_connect = 1;
	cc.max_peers = (uint32_t)peers + 16;
	if ((r = rudp_host_create(&cc, &w->cli)) != 0)
		return r;
	for (long i = 0; i < peers; i++) {
		rudp_peer *p;

		if ((r = rudp_connect(w->cli, addr, &p)) != 0)
			return r;
	}
	for (double deadline = tool_now_s() + 30; w->connected < peers || w->nspeers < peers;) {
		if ((r = service_both(w, 1)) != 0)
			return r;
		if (tool_now_s() > deadline)
			return TIMED_OUT;
	}
	return 0;
}

/* Untimed: every client has its copy of the round (unreliable ones may be
 * lost; give up on them after a while) and the server has read the ACKs. */
static int settle(struct world *w, long want, bool reliable)
{
	int r;

	for (double deadline = tool_now_s() + (reliable ? 10.0 : 0.2); w->received < want;) {
		if ((r = service_both(w, 1)) != 0)
			return r;
		if (tool_now_s() > deadline)
			return reliable ? TIMED_OUT : 0;
	}
	for (int i = 0; i < 3; i++)
		if ((r = service_both(w, 1)) != 0)
			return r;
	return 0;
}

static const char *why(int r)
{
	return r == TIMED_OUT ? "timed out" : rudp_strerror(r);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One round one way: queues msg to every peer (many: one rudp_send_many
 * call), flushing inside the timing when asked. CPU ns, or 0 on failure. */
static uint64_t round_cost(struct world *w, const uint8_t *msg, long size, int rel, bool many, bool flush)
{
	uint64_t t0 = cpu_ns();
	long queued = 0;

	if (many) {
		queued = rudp_send_many(w->srv, w->speers, (size_t)w->peers, msg, (size_t)size, rel, 0, 0,
					NULL);
	} else {
		for (long i = 0; i < w->peers; i++)
			queued += rudp_send(w->speers[i], msg, (size_t)size, rel, 0) == 0;
	}
	if (flush)
		rudp_flush(w->srv);
	uint64_t t = cpu_ns() - t0;
	if (!flush)
		rudp_flush(w->srv);
	if (queued != w->peers) {
		fprintf(stderr, "rudp-api-cost: %ld of %ld queued\n", queued, w->peers);
		return 0;
	}
	return t > 0 ? t : 1;
}

int main(int argc, char **argv)
{
	long peers = 1000, rounds = 100, size = 200;

	/* Every option takes a value: they come in pairs. */
	for (int i = 1; i < argc; i += 2) {
		long v;

		if (!strcmp(argv[i], "--peers") && i + 1 < argc &&
		    tool_parse_long(argv[i + 1], 1, 10000, &v) == 0)
			peers = v;
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc &&
			 tool_parse_long(argv[i + 1], 1, 100000, &v) == 0)
			rounds = v;
		else if (!strcmp(argv[i], "--size") && i + 1 < argc &&
			 tool_parse_long(argv[i + 1], 2, 1000, &v) == 0)
			size = v;
		else {
			fprintf(stderr,
				"rudp-api-cost: bad argument '%s'\n"
				"usage: rudp-api-cost [--peers N] [--rounds R] [--size S]\n",
				argv[i]);
			return 2;
		}
	}

	struct world w;
	int r = setup(&w, peers);
	if (r != 0) {
		fprintf(stderr, "rudp-api-cost: setup: %s (%ld of %ld connected)\n", why(r), w.connected,
			peers);
		return 1;
	}
	uint8_t *msg = malloc((size_t)size);
	uint64_t *many = malloc((size_t)rounds * sizeof(uint64_t));
	uint64_t *each = malloc((size_t)rounds * sizeof(uint64_t));
	if (!msg || !many || !each)
		return 1;
	memset(msg, 0x5a, (size_t)size);
	msg[0] = 0x86; /* an application id, above RakNet's own */

	static const struct {
		int rel;
		const char *name;
	} kinds[] = {{RUDP_UNRELIABLE_SEQUENCED, "unreliable-sequenced"},
		     {RUDP_RELIABLE_ORDERED, "reliable-ordered"}};
	printf("rudp-api-cost: %ld peers, %ld B, %ld rounds; CPU per round (median), thread time\n", peers,
	       size, rounds);
	printf("%-22s %-7s %14s %14s %7s\n", "kind", "flush", "send_many us", "N x send us", "ratio");
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (int flush = 0; flush < 2; flush++) {
			bool reliable = kinds[k].rel == RUDP_RELIABLE_ORDERED;

			for (long i = 0; i < 2 * rounds; i++) {
				bool use_many = i % 2 == 0;
				uint64_t t = round_cost(&w, msg, size, kinds[k].rel, use_many, flush);

				if (t == 0)
					return 1;
				(use_many ? many : each)[i / 2] = t;
				w.received = 0;
				if ((r = settle(&w, peers, reliable)) != 0) {
					fprintf(stderr, "rudp-api-cost: settle: %s\n", why(r));
					return 1;
				}
			}
			uint64_t m = median(many, rounds), e = median(each, rounds);
			printf("%-22s %-7s %14.1f %14.1f %7.2f\n", kinds[k].name, flush ? "+flush" : "queue",
			       (double)m / 1e3, (double)e / 1e3, (double)m / (double)e);
		}
	}
	rudp_host_destroy(w.cli);
	rudp_host_destroy(w.srv);
	free(w.speers);
	free(msg);
	free(many);
	free(each);
	return 0;
}
