/* SPDX-License-Identifier: MIT */
/*
 * A path row's figures, worked out once its run is over: from the client's
 * RESULT line (its burst, Jain's index, the game stream, what its driver
 * resent), the server's summary (what it resent), the queueing probe, the
 * competing TCP flow and the link emulator's counters.
 *
 * Base RTTs are those of an idle path: the propagation round trip plus
 * serialising the message (its UDP and IPv4 headers included) at the
 * link's rate once each way. Queueing delay and the game stream's delay
 * are what their echoes took above that base.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "report.h"
#include "side.h"

const char *const path_fig_key[PF_COUNT] = {
	[PF_GOODPUT_SHARE] = "goodput_share",
	[PF_RESENT_SHARE] = "resent_share",
	[PF_RESENT_BYTES] = "resent_bytes",
	[PF_QUEUE_BASE_MS] = "queue_base_ms",
	[PF_QUEUE_P50_MS] = "queue_p50_ms",
	[PF_QUEUE_P99_MS] = "queue_p99_ms",
	[PF_PROBES_SENT] = "probes_sent",
	[PF_PROBES_ECHOED] = "probes_echoed",
	[PF_JAIN] = "jain",
	[PF_TCP_MBIT] = "tcp_flow_mbit",
	[PF_TCP_SHARE] = "tcp_share",
	[PF_TCP_RETRANS_BYTES] = "tcp_flow_retrans_bytes",
	[PF_GAME_BASE_MS] = "game_base_ms",
	[PF_GAME_U_P50_MS] = "game_unreliable_p50_ms",
	[PF_GAME_U_P99_MS] = "game_unreliable_p99_ms",
	[PF_GAME_U_SENT] = "game_unreliable_sent",
	[PF_GAME_U_ECHOED] = "game_unreliable_echoed",
	[PF_GAME_R_P50_MS] = "game_reliable_p50_ms",
	[PF_GAME_R_P99_MS] = "game_reliable_p99_ms",
	[PF_GAME_R_SENT] = "game_reliable_sent",
	[PF_EMU_UP_QUEUE_DROPS] = "link_up_queue_drops",
	[PF_EMU_UP_RANDOM_DROPS] = "link_up_random_drops",
	[PF_EMU_UP_OVERFLOW_DROPS] = "link_up_overflow_drops",
	[PF_EMU_UP_PACKETS] = "link_up_packets",
	[PF_EMU_DOWN_QUEUE_DROPS] = "link_down_queue_drops",
	[PF_EMU_DOWN_RANDOM_DROPS] = "link_down_random_drops",
	[PF_EMU_DOWN_OVERFLOW_DROPS] = "link_down_overflow_drops",
	[PF_EMU_DOWN_PACKETS] = "link_down_packets",
	[PF_EMU_MAIN_DROPPED_BYTES] = "link_flow_dropped_bytes",
	[PF_EMU_QUEUE_PEAK_BYTES] = "link_queue_peak_bytes",
	[PF_EMU_LATE_MAX_US] = "link_late_max_us",
	[PF_EMU_LATE_OVER_1MS] = "link_late_over_1ms",
};

/* The value of " key=" on the first line of s, or -1. */
static double field(const char *s, const char *key)
{
	if (!s)
		return -1;
	const char *eol = strchr(s, '\n');
	char pat[64];
	snprintf(pat, sizeof pat, " %s=", key);
	const char *p = strstr(s, pat);
	if (!p || (eol && p > eol))
		return -1;
	char *end;
	double v = strtod(p + strlen(pat), &end);
	return end == p + strlen(pat) ? -1 : v;
}

double path_base_rtt_ms(const struct row *row, uint32_t udp_payload)
{
	double ser = row->rate_mbit > 0 ? (udp_payload + 28) * 8 / (row->rate_mbit * 1e3) : 0;
	return row->delay_ms + 2 * ser;
}

void path_describe(const struct row *row, const char *tcp_cc, char *buf, size_t n)
{
	if (row->rate_mbit <= 0) {
		/* Delay and loss only: as these rows always read. */
		snprintf(buf, n, "tun-emulator: %.1f ms each way, %.2g %% drop each way; MTU %d",
			 row->delay_ms / 2.0, row->loss_pct, EMU_MTU);
		return;
	}
	snprintf(buf, n,
		 "tun-emulator: %g Mbit/s, %g ms drop-tail buffer (%llu B), %g ms each way, %g %% drop each "
		 "way; "
		 "MTU %d; TCP %s",
		 row->rate_mbit, row->queue_ms,
		 (unsigned long long)emu_queue_bytes(row->rate_mbit, row->queue_ms), row->delay_ms / 2.0,
		 row->loss_pct, EMU_MTU, tcp_cc ? tcp_cc : "at the kernel's default");
}

static double game_fig(const char *result, const char *key, double base_ms)
{
	double us = field(result, key);
	return us < 0 ? -1 : us / 1000 - base_ms;
}

void path_figures(struct run *r, const struct path_inputs *in_)
{
	const struct row *row = r->row;
	double *f = r->path;
	/* The figures are on the RESULT line (a BURST line comes first) and
	 * the server's "served" line. */
	struct path_inputs lines = *in_, *in = &lines;
	lines.result = in_->result ? strstr(in_->result, "RESULT ") : NULL;
	lines.served = in_->served ? strstr(in_->served, "served ") : NULL;
	for (int i = 0; i < PF_COUNT; i++)
		f[i] = -1;
	r->resent_source = RESENT_NONE;
	double start = field(in->result, "burst_start_ns"), end = field(in->result, "burst_end_ns");
	double bytes_per_s = r->throughput >= 0 ? r->throughput * 1048576.0 : -1;
	if (bytes_per_s >= 0 && row->rate_mbit > 0)
		f[PF_GOODPUT_SHARE] = bytes_per_s * 8 / (row->rate_mbit * 1e6);

	/* Delivered: every verified message, both ways (the warm-up too:
	 * the resend counts cover the whole run). */
	double game_sent = field(in->result, "game_r_sent"), game_u = field(in->result, "game_u_echoed");
	double delivered =
		2.0 * ((double)r->verified_msgs * row->size +
		       ((game_sent > 0 ? game_sent : 0) + (game_u > 0 ? game_u : 0)) * row->game_size);
	double mine = field(in->result, "resent_bytes"), theirs = field(in->served, "resent_bytes");
	struct emu_counters flow = {0};
	if (in->emu) {
		flow = emu_total(in->emu, EMU_FLOW_MAIN, -1);
		f[PF_EMU_MAIN_DROPPED_BYTES] = (double)flow.dropped_bytes;
	}
	if (mine >= 0 && theirs >= 0) {
		f[PF_RESENT_BYTES] = mine + theirs;
		r->resent_source = RESENT_OWN;
	} else if (in->emu) {
		f[PF_RESENT_BYTES] = (double)flow.dropped_bytes;
		r->resent_source = RESENT_LINK;
	}
	if (f[PF_RESENT_BYTES] >= 0 && delivered > 0)
		f[PF_RESENT_SHARE] = f[PF_RESENT_BYTES] / delivered;

	if (in->probe && start > 0 && end > start) {
		struct probe_figures pf;
		probe_window(in->probe, (uint64_t)start, (uint64_t)end, &pf);
		f[PF_QUEUE_BASE_MS] = path_base_rtt_ms(row, PATH_PROBE_SIZE);
		f[PF_PROBES_SENT] = pf.sent;
		f[PF_PROBES_ECHOED] = pf.echoed;
		if (pf.echoed) {
			f[PF_QUEUE_P50_MS] = pf.p50_ms - f[PF_QUEUE_BASE_MS];
			f[PF_QUEUE_P99_MS] = pf.p99_ms - f[PF_QUEUE_BASE_MS];
		}
	}
	if (row->conns > 1)
		f[PF_JAIN] = field(in->result, "jain");
	if (in->comp && start > 0 && end > start) {
		double tcp = competitor_rate(in->comp, (uint64_t)start, (uint64_t)end);
		/* A flow that verified nothing in the burst has a rate of 0 and
		 * no share (the report says so rather than dividing by 0). */
		if (tcp >= 0)
			f[PF_TCP_MBIT] = tcp * 8 / 1e6;
		if (tcp > 0 && bytes_per_s >= 0)
			f[PF_TCP_SHARE] = bytes_per_s / tcp;
		f[PF_TCP_RETRANS_BYTES] = (double)in->comp->retrans_bytes;
	}
	if (row->game_hz) {
		double base = path_base_rtt_ms(row, row->game_size);
		f[PF_GAME_BASE_MS] = base;
		f[PF_GAME_U_P50_MS] = game_fig(in->result, "game_u_p50_us", base);
		f[PF_GAME_U_P99_MS] = game_fig(in->result, "game_u_p99_us", base);
		f[PF_GAME_U_SENT] = field(in->result, "game_u_sent");
		f[PF_GAME_U_ECHOED] = game_u;
		f[PF_GAME_R_P50_MS] = game_fig(in->result, "game_r_p50_us", base);
		f[PF_GAME_R_P99_MS] = game_fig(in->result, "game_r_p99_us", base);
		f[PF_GAME_R_SENT] = game_sent;
	}
	if (in->emu) {
		struct emu_counters up = emu_total(in->emu, -1, EMU_UP),
				    down = emu_total(in->emu, -1, EMU_DOWN);
		f[PF_EMU_UP_QUEUE_DROPS] = (double)up.queue_drops;
		f[PF_EMU_UP_RANDOM_DROPS] = (double)up.random_drops;
		f[PF_EMU_UP_OVERFLOW_DROPS] = (double)up.overflow_drops;
		f[PF_EMU_UP_PACKETS] = (double)up.packets;
		f[PF_EMU_DOWN_QUEUE_DROPS] = (double)down.queue_drops;
		f[PF_EMU_DOWN_RANDOM_DROPS] = (double)down.random_drops;
		f[PF_EMU_DOWN_OVERFLOW_DROPS] = (double)down.overflow_drops;
		f[PF_EMU_DOWN_PACKETS] = (double)down.packets;
		uint64_t peak = in->emu->queue_peak_bytes[EMU_UP] > in->emu->queue_peak_bytes[EMU_DOWN]
					? in->emu->queue_peak_bytes[EMU_UP]
					: in->emu->queue_peak_bytes[EMU_DOWN];
		f[PF_EMU_QUEUE_PEAK_BYTES] = (double)peak;
		uint64_t late = in->emu->late_max_ns[EMU_UP] > in->emu->late_max_ns[EMU_DOWN]
					? in->emu->late_max_ns[EMU_UP]
					: in->emu->late_max_ns[EMU_DOWN];
		f[PF_EMU_LATE_MAX_US] = (double)late / 1000;
		f[PF_EMU_LATE_OVER_1MS] =
			(double)(in->emu->late_over_1ms[EMU_UP] + in->emu->late_over_1ms[EMU_DOWN]);
	}
}
