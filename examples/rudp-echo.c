/* SPDX-License-Identifier: MIT */
/*
 * rudp-echo: an echo server and a verifying client over librudp.
 *
 *   rudp-echo server [--bind ADDR:PORT] [--max-clients N] [--threads N] [--io B]
 *                    [--cc C] [--once] [--stats] [--sim-* ...]
 *   rudp-echo client --connect ADDR:PORT [--count N] [--size BYTES] [--window W]
 *                    [--batch B] [--io B] [--cc C] [--protocol V] [--channel C]
 *                    [--timeout MS] [--stats] [--sim-* ...]
 *
 * The server drains received messages with rudp_recv_batch() and echoes
 * each peer's run of them with one rudp_send_batch(). With --threads N it
 * runs N hosts, one per thread, on one port (SO_REUSEPORT): each client is
 * served by one thread only, so the threads share nothing. --io picks the
 * backend (uring, mmsg, auto; RUDP_IO in the environment overrides it).
 * --cc picks rudp_config.congestion_control (none, aimd, rate; without it
 * rudp_config_init's default).
 * The --sim-* options turn on librudp's network simulator (sim_options.h)
 * on either side.
 *
 * Every client message is 0xfe (the id Bedrock games use, so any RakNet echo
 * server passes it on), a 4-byte little-endian message id, then bytes derived
 * from the id. The client checks each echo's id (in order) and the XXH3 of
 * the whole message against what it sent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "rudp.h"
#include "sim_options.h"

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rudp-echo server [--bind ADDR:PORT] [--max-clients N] [--threads N] [--io B]\n"
		"                        [--cc C] [--once] [--stats] [--sim-* ...]\n"
		"       rudp-echo client --connect ADDR:PORT [--count N] [--size BYTES] [--window W]\n"
		"                        [--batch B] [--io B] [--cc C] [--protocol V] [--channel C]\n"
		"                        [--timeout MS] [--stats] [--sim-* ...]\n"
		"  --io B       io backend: uring, mmsg or auto (default; RUDP_IO overrides)\n"
		"  --cc C       congestion control: none, aimd or rate (default: the library's)\n"
		"  --threads N  server: N hosts on one port, one per thread (SO_REUSEPORT)\n"
		"  --batch B    client: send with rudp_send_batch, at most B messages per "
		"call\n" SIM_OPTIONS_USAGE);
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static void print_peer_stats(const char *who, rudp_peer *peer)
{
	rudp_peer_stats s;
	if (rudp_peer_stats_get(peer, &s) != 0)
		return;
	printf("%s stats: rtt %.3f ms (var %.3f) rto %.1f ms, mtu %u, sent %" PRIu64 " msgs / %" PRIu64
	       " datagrams / %" PRIu64 " B, received %" PRIu64 " msgs / %" PRIu64 " datagrams / %" PRIu64
	       " B, retransmitted %" PRIu64 " frames, nacks %" PRIu64 ", dropped %" PRIu64
	       ", duplicates %" PRIu64 ", window %u/%u\n",
	       who, s.rtt_us / 1000.0, s.rtt_var_us / 1000.0, s.rto_us / 1000.0, s.mtu, s.messages_sent,
	       s.datagrams_sent, s.bytes_sent, s.messages_received, s.datagrams_received, s.bytes_received,
	       s.frames_retransmitted, s.nacks_received, s.datagrams_dropped, s.duplicates_dropped,
	       s.window_in_use, s.window_frames);
	/* The controller's view: all 0 where it keeps none (RUDP_CC_NONE). */
	printf("%s congestion: window %u B, in flight %u B, reductions %" PRIu64
	       ", bandwidth estimate %.3f Mbit/s"
	       ", pacing %.3f Mbit/s, min rtt %.3f ms, resent nack %" PRIu64 " / inferred %" PRIu64
	       " / probe %" PRIu64 " / timeout %" PRIu64 " (spurious %" PRIu64 ")\n",
	       who, s.congestion_window, s.bytes_in_flight, s.congestion_reductions,
	       (double)s.bandwidth_estimate * 8 / 1e6, (double)s.pacing_rate * 8 / 1e6, s.min_rtt_us / 1000.0,
	       s.resent_nack, s.resent_inferred, s.resent_probe, s.resent_timeout, s.resent_spurious);
}

/* "none", "aimd", "rate": an rudp_congestion_control. */
static int parse_cc(const char *s, int *out)
{
	if (!strcmp(s, "none"))
		*out = RUDP_CC_NONE;
	else if (!strcmp(s, "aimd"))
		*out = RUDP_CC_AIMD;
	else if (!strcmp(s, "rate"))
		*out = RUDP_CC_RATE;
	else
		return -1;
	return 0;
}

static int parse_io(const char *s, int *out)
{
	if (!strcmp(s, "auto"))
		*out = RUDP_IO_AUTO;
	else if (!strcmp(s, "mmsg"))
		*out = RUDP_IO_MMSG;
	else if (!strcmp(s, "uring"))
		*out = RUDP_IO_URING;
	else
		return -1;
	return 0;
}

static void print_host_stats(const char *who, rudp_host *host)
{
	rudp_host_stats s;
	if (rudp_host_stats_get(host, &s) != 0)
		return;
	printf("%s host: io backend %s, datagrams received %" PRIu64 " (%" PRIu64
	       " GRO reads) / sent %" PRIu64 " (%" PRIu64 " GSO sends), io syscalls recv %" PRIu64
	       " / send %" PRIu64 ", receive re-arms %" PRIu64 ", dropped %" PRIu64 "\n",
	       who, s.io_backend, s.datagrams_received, s.gro_receives, s.datagrams_sent, s.gso_sends,
	       s.syscalls_recv, s.syscalls_send, s.rx_rearms, s.datagrams_dropped);
	print_sim_stats(who, &s);
}

static void log_to_stderr(void *ud, int level, const char *msg)
{
	(void)ud;
	static const char *names[] = {"error", "warning", "info", "debug"};
	fprintf(stderr, "rudp %s: %s\n", names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

/* ---- server ---- */

struct server_thread {
	pthread_t tid;
	int index;
	rudp_host *host;
	int once, stats;
	uint64_t echoed, failed;
	int clients_seen;
	int rc;
};

/* Echoes one peer's run of received messages with one send batch. */
static void echo_run(struct server_thread *t, rudp_peer *peer, const rudp_event *in, int k, rudp_message *out)
{
	for (int i = 0; i < k; i++)
		out[i] = (rudp_message){in[i].data, in[i].len, in[i].reliability, in[i].channel};
	int err = 0;
	int q = rudp_send_batch(peer, out, (size_t)k, &err);
	if (q < 0) {
		t->failed += (uint64_t)k;
		fprintf(stderr, "rudp-echo: echo failed: %s\n", rudp_strerror(q));
		return;
	}
	t->echoed += (uint64_t)q;
	if (q < k) {
		t->failed += (uint64_t)(k - q);
		fprintf(stderr, "rudp-echo: %d of %d echoes not queued: %s\n", k - q, k, rudp_strerror(err));
	}
}

/* One host's loop: drain a batch, echo a batch. The host and its peers are
 * touched by this thread only. */
static void *server_loop(void *arg)
{
	struct server_thread *t = arg;
	rudp_event in[256];
	rudp_message out[256];
	while (!stop_requested) {
		int n = rudp_recv_batch(t->host, in, 256, 100);
		if (n < 0) {
			fprintf(stderr, "rudp-echo: service failed: %s\n", rudp_strerror(n));
			t->rc = 1;
			stop_requested = 1;
			break;
		}
		if (n == 1 && in[0].type != RUDP_EVENT_RECEIVE) {
			if (in[0].type == RUDP_EVENT_CONNECT) {
				t->clients_seen++;
			} else if (in[0].type == RUDP_EVENT_DISCONNECT) {
				if (t->stats)
					print_peer_stats("server", in[0].peer);
				if (t->once)
					stop_requested = 1;
			}
			continue;
		}
		for (int i = 0; i < n;) {
			int j = i;
			while (j < n && in[j].peer == in[i].peer)
				j++;
			echo_run(t, in[i].peer, in + i, j - i, out);
			i = j;
		}
	}
	return NULL;
}

static int run_server(int argc, char **argv)
{
	const char *bind = "0.0.0.0:19132";
	uint32_t max_clients = 1024, threads = 1;
	int once = 0, stats = 0, io = RUDP_IO_AUTO, cc = -1;
	rudp_sim_config sim = {0};
	for (int i = 0; i < argc; i++) {
		int is_sim = sim_option(argc, argv, &i, &sim);
		if (is_sim < 0)
			return usage(), 2;
		if (is_sim)
			continue;
		if (!strcmp(argv[i], "--bind") && i + 1 < argc) {
			bind = argv[++i];
		} else if (!strcmp(argv[i], "--max-clients") && i + 1 < argc) {
			if (parse_u32(argv[++i], 1, 1u << 20, &max_clients) != 0)
				return usage(), 2;
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			if (parse_u32(argv[++i], 1, 256, &threads) != 0)
				return usage(), 2;
		} else if (!strcmp(argv[i], "--io") && i + 1 < argc) {
			if (parse_io(argv[++i], &io) != 0)
				return usage(), 2;
		} else if (!strcmp(argv[i], "--cc") && i + 1 < argc) {
			if (parse_cc(argv[++i], &cc) != 0)
				return usage(), 2;
		} else if (!strcmp(argv[i], "--once")) {
			once = 1;
		} else if (!strcmp(argv[i], "--stats")) {
			stats = 1;
		} else {
			usage();
			return 2;
		}
	}
	struct server_thread *th = calloc(threads, sizeof(*th));
	if (!th) {
		fprintf(stderr, "rudp-echo: out of memory\n");
		return 1;
	}
	rudp_config cfg;
	rudp_config_init(&cfg);
	cfg.bind_address = bind;
	cfg.max_peers = max_clients;
	cfg.io.backend = io;
	cfg.reuse_port = threads > 1;
	if (cc >= 0)
		cfg.congestion_control = cc;
	cfg.sim = sim;
	cfg.log = log_to_stderr;
	cfg.log_level_max = 2;
	char local[64] = "";
	int r = 0;
	uint32_t made = 0;
	for (; made < threads; made++) {
		/* Port 0 asks the kernel for a port once; the other hosts join it. */
		if (made == 1)
			cfg.bind_address = local;
		r = rudp_host_create(&cfg, &th[made].host);
		if (r != 0)
			break;
		if (made == 0)
			rudp_host_local_address(th[0].host, local, sizeof(local));
	}
	if (r != 0) {
		fprintf(stderr, "rudp-echo: cannot create server %u on %s: %s%s%s\n", made, cfg.bind_address,
			rudp_strerror(r), r == RUDP_E_SYSTEM || r == RUDP_E_UNSUPPORTED ? ": " : "",
			r == RUDP_E_SYSTEM || r == RUDP_E_UNSUPPORTED ? strerror(errno) : "");
		for (uint32_t i = 0; i < made; i++)
			rudp_host_destroy(th[i].host);
		free(th);
		return 1;
	}
	rudp_host_stats hs;
	rudp_host_stats_get(th[0].host, &hs);
	printf("listening on %s (%u thread%s, io backend %s)\n", local, threads, threads > 1 ? "s" : "",
	       hs.io_backend);
	fflush(stdout);

	for (uint32_t i = 0; i < threads; i++) {
		th[i].index = (int)i;
		th[i].once = once;
		th[i].stats = stats;
	}
	uint32_t started = 0;
	for (; started + 1 < threads; started++) {
		if (pthread_create(&th[started + 1].tid, NULL, server_loop, &th[started + 1]) != 0) {
			fprintf(stderr, "rudp-echo: cannot start thread %u\n", started + 1);
			stop_requested = 1;
			break;
		}
	}
	server_loop(&th[0]); /* the main thread serves host 0 */
	for (uint32_t i = 1; i <= started; i++)
		pthread_join(th[i].tid, NULL);

	uint64_t echoed = 0, failed = 0;
	int clients = 0, rc = 0;
	for (uint32_t i = 0; i < threads; i++) {
		echoed += th[i].echoed;
		failed += th[i].failed;
		clients += th[i].clients_seen;
		rc |= th[i].rc;
		if (threads > 1)
			printf("thread %u: echoed %" PRIu64 " messages for %d clients\n", i, th[i].echoed,
			       th[i].clients_seen);
		if (stats) {
			char who[32];
			snprintf(who, sizeof(who), "server %u", i);
			print_host_stats(who, th[i].host);
		}
		rudp_host_destroy(th[i].host);
	}
	printf("server echoed %" PRIu64 " messages (%" PRIu64 " failed) for %d clients\n", echoed, failed,
	       clients);
	free(th);
	return failed || rc ? 1 : 0;
}

/* ---- client ---- */

/* Fills a message for id: 0xfe, id (LE), then a byte pattern of the id. */
static void fill_message(uint8_t *buf, size_t size, uint32_t id)
{
	buf[0] = 0xfe;
	for (size_t i = 1; i < 5 && i < size; i++)
		buf[i] = (uint8_t)(id >> (8 * (i - 1)));
	uint64_t x = 0x9e3779b97f4a7c15ull * (id + 1);
	for (size_t i = 5; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

static int run_client(int argc, char **argv)
{
	const char *target = NULL;
	uint32_t count = 1000, size = 64, window = 16, protocol = 11, channel = 0, timeout_ms = 60000;
	uint32_t batch = 0;
	int stats = 0, io = RUDP_IO_AUTO, cc = -1;
	rudp_sim_config sim = {0};
	for (int i = 0; i < argc; i++) {
		int bad = 0, is_sim = sim_option(argc, argv, &i, &sim);
		if (is_sim < 0)
			return usage(), 2;
		if (is_sim)
			continue;
		if (!strcmp(argv[i], "--connect") && i + 1 < argc)
			target = argv[++i];
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			bad = parse_u32(argv[++i], 1, UINT32_MAX, &count);
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			bad = parse_u32(argv[++i], 5, 4u << 20, &size);
		else if (!strcmp(argv[i], "--window") && i + 1 < argc)
			bad = parse_u32(argv[++i], 1, 1u << 20, &window);
		else if (!strcmp(argv[i], "--protocol") && i + 1 < argc)
			bad = parse_u32(argv[++i], 6, 11, &protocol);
		else if (!strcmp(argv[i], "--channel") && i + 1 < argc)
			bad = parse_u32(argv[++i], 0, RUDP_CHANNELS - 1, &channel);
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			bad = parse_u32(argv[++i], 1, UINT32_MAX, &timeout_ms);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			bad = parse_u32(argv[++i], 1, 1024, &batch);
		else if (!strcmp(argv[i], "--io") && i + 1 < argc)
			bad = parse_io(argv[++i], &io);
		else if (!strcmp(argv[i], "--cc") && i + 1 < argc)
			bad = parse_cc(argv[++i], &cc);
		else if (!strcmp(argv[i], "--stats"))
			stats = 1;
		else
			bad = 1;
		if (bad) {
			fprintf(stderr, "rudp-echo: bad argument '%s'\n", argv[i]);
			usage();
			return 2;
		}
	}
	if (!target) {
		usage();
		return 2;
	}

	rudp_config cfg;
	rudp_config_init(&cfg);
	cfg.protocol_version = (uint8_t)protocol;
	cfg.io.backend = io;
	if (cc >= 0)
		cfg.congestion_control = cc;
	cfg.sim = sim;
	cfg.log = log_to_stderr;
	cfg.log_level_max = 1;
	rudp_host *host;
	int r = rudp_host_create(&cfg, &host);
	if (r != 0) {
		fprintf(stderr, "rudp-echo: cannot create client: %s%s%s\n", rudp_strerror(r),
			r == RUDP_E_UNSUPPORTED ? ": " : "", r == RUDP_E_UNSUPPORTED ? strerror(errno) : "");
		return 1;
	}
	rudp_peer *peer;
	r = rudp_connect(host, target, &peer);
	if (r != 0) {
		fprintf(stderr, "rudp-echo: cannot connect to %s: %s\n", target, rudp_strerror(r));
		rudp_host_destroy(host);
		return 1;
	}

	/* One buffer per message of a batch: rudp_send_batch() copies them. */
	uint32_t slots = batch ? batch : 1;
	uint8_t *msg = malloc((size_t)size * slots), *expect = malloc(size);
	rudp_message *out = calloc(slots, sizeof(*out));
	if (!msg || !expect || !out) {
		fprintf(stderr, "rudp-echo: out of memory\n");
		return 1;
	}
	uint32_t sent = 0, verified = 0;
	int connected = 0, done = 0, rc = 1;
	const char *failure = NULL;
	char why[160];
	uint64_t start = now_ms(), t_connected = 0;
	rudp_event ev[256];
	while (!done && !stop_requested) {
		if (now_ms() - start > timeout_ms) {
			snprintf(why, sizeof(why), "timed out after %u ms (%u sent, %u verified)", timeout_ms,
				 sent, verified);
			failure = why;
			break;
		}
		/* Batch mode sends what the window allows now, at most batch per
		 * call: it never waits for a batch to fill. */
		while (batch && connected && sent < count && sent - verified < window) {
			uint32_t k = 0;
			while (k < batch && sent + k < count && sent + k - verified < window) {
				uint8_t *m = msg + (size_t)k * size;
				fill_message(m, size, sent + k);
				out[k] = (rudp_message){m, size, RUDP_RELIABLE_ORDERED, (uint8_t)channel};
				k++;
			}
			int err = 0;
			int q = rudp_send_batch(peer, out, k, &err);
			if (q > 0)
				sent += (uint32_t)q;
			if (q < 0 || (q < (int)k && err != RUDP_E_QUEUE_FULL)) {
				snprintf(why, sizeof(why), "send batch failed: %s",
					 rudp_strerror(q < 0 ? q : err));
				failure = why;
				done = 1;
			}
			if (q < (int)k)
				break; /* queue full: service first */
		}
		while (!batch && connected && sent < count && sent - verified < window) {
			fill_message(msg, size, sent);
			r = rudp_send(peer, msg, size, RUDP_RELIABLE_ORDERED, (int)channel);
			if (r == RUDP_E_QUEUE_FULL)
				break;
			if (r != 0) {
				snprintf(why, sizeof(why), "send failed: %s", rudp_strerror(r));
				failure = why;
				done = 1;
				break;
			}
			sent++;
		}
		if (done)
			break;
		int n = rudp_service(host, ev, 256, 50);
		if (n < 0) {
			snprintf(why, sizeof(why), "service failed: %s", rudp_strerror(n));
			failure = why;
			break;
		}
		for (int i = 0; i < n && !done; i++) {
			switch (ev[i].type) {
			case RUDP_EVENT_CONNECT:
				connected = 1;
				t_connected = now_ms();
				break;
			case RUDP_EVENT_RECEIVE: {
				uint32_t id = verified;
				if (ev[i].len != size || ev[i].len < 5) {
					snprintf(why, sizeof(why), "echo %u has %zu bytes, expected %u", id,
						 ev[i].len, size);
					failure = why;
					done = 1;
					break;
				}
				uint32_t got = (uint32_t)ev[i].data[1] | (uint32_t)ev[i].data[2] << 8 |
					       (uint32_t)ev[i].data[3] << 16 | (uint32_t)ev[i].data[4] << 24;
				if (got != id) {
					snprintf(why, sizeof(why),
						 "echo out of order: got id %u, expected %u", got, id);
					failure = why;
					done = 1;
					break;
				}
				fill_message(expect, size, id);
				if (XXH3_64bits(ev[i].data, ev[i].len) != XXH3_64bits(expect, size)) {
					snprintf(why, sizeof(why), "echo %u payload differs (XXH3 mismatch)",
						 id);
					failure = why;
					done = 1;
					break;
				}
				verified++;
				if (verified == count)
					done = 1;
				break;
			}
			case RUDP_EVENT_DISCONNECT:
				snprintf(why, sizeof(why), "disconnected: %s (%u sent, %u verified)",
					 rudp_reason_string(ev[i].reason), sent, verified);
				failure = why;
				peer = NULL;
				done = 1;
				break;
			}
		}
	}
	uint64_t elapsed = now_ms() - (t_connected ? t_connected : start);
	if (!failure && verified == count) {
		rc = 0;
		double secs = elapsed ? (double)elapsed / 1000.0 : 0.001;
		printf("verified %u/%u messages (%u B each) in %.3f s, %.2f MiB/s each way\n", verified,
		       count, size, secs, (double)verified * size / 1048576.0 / secs);
	} else {
		fprintf(stderr, "rudp-echo: %s\n", failure ? failure : "interrupted");
		printf("verified %u/%u messages\n", verified, count);
	}
	if (peer && stats)
		print_peer_stats("client", peer);
	if (stats)
		print_host_stats("client", host);
	if (peer) {
		/* Say goodbye properly, but do not hang on a dead server. */
		rudp_disconnect(peer);
		uint64_t until = now_ms() + 3000;
		int gone = 0;
		while (!gone && now_ms() < until) {
			int n = rudp_service(host, ev, 256, 50);
			for (int i = 0; i < n; i++)
				if (ev[i].type == RUDP_EVENT_DISCONNECT)
					gone = 1;
			if (n < 0)
				break;
		}
	}
	free(msg);
	free(expect);
	free(out);
	rudp_host_destroy(host);
	return rc;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		usage();
		return 2;
	}
	if (!strcmp(argv[1], "server"))
		return run_server(argc - 2, argv + 2);
	if (!strcmp(argv[1], "client"))
		return run_client(argc - 2, argv + 2);
	if (!strcmp(argv[1], "--version")) {
		printf("rudp-echo %s\n", RUDP_VERSION_STRING);
		return 0;
	}
	usage();
	return 2;
}
