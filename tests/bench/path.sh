#!/bin/sh
# Proves rudp-bench's path rows and the link emulator under them (root
# only: namespaces; skipped otherwise):
#  1. link-check: the emulator's rate, queue, delay and loss are those asked
#     for, on the links of path rows a and c;
#  2. the smoke path rows (--smoke --workload path) verify on every reliable
#     column built here, and runs.json has each run's path figures: goodput,
#     resent and its source, the probe's queueing delay, Jain's index and
#     the share beside the TCP flow (bulk row), the game streams (game row)
#     and the link's drop counters; raw UDP is not run; report.md has the
#     Paths section;
#  3. --resume of that folder copies every path run, figures and all;
#  4. bench/targets reads the file; --rate and --queue-ms set a row's link;
#  5. bad values are refused; SIGINT in the middle of a path run leaves no
#     namespace of that run behind.
#   path.sh PATH/TO/rudp-bench PATH/TO/bench/targets
set -u
bench=$1
targets=$2
if [ "$(id -u)" -ne 0 ]; then
	echo "skipped: path rows need root (namespaces)"
	exit 77
fi
. "$(dirname "$0")/harness.sh"

# 1. the emulator against the links of rows a and c. A delay percentile or
# the emulator's lateness can miss on a virtual machine that stalls for
# tens of milliseconds (in its slow state, twice running), so a link gets
# three tries; a wrong emulator fails them all (its counts and rates do not
# depend on timing luck).
for link in "--rate 5 --queue-ms 30 --delay 20" "--rate 20 --queue-ms 60 --delay 60 --loss 0.5"; do
	passed=0
	for try in 1 2 3; do
		# shellcheck disable=SC2086
		if "$bench" link-check $link --seconds 1.5 >"$tmp/lc.log" 2>&1; then
			passed=$try
			break
		fi
		[ "$try" -lt 3 ] && echo "try $try of link-check $link failed:" && cat "$tmp/lc.log"
	done
	if [ "$passed" -gt 0 ]; then
		ok "link-check $link (try $passed): $(tail -n 1 "$tmp/lc.log")"
	else
		fail "link-check $link:"
		cat "$tmp/lc.log"
	fi
done

# 2. the smoke path rows
if ! "$bench" --smoke --workload path --json "$tmp/P.json" --out "$tmp/D" >"$tmp/p.log" 2>&1; then
	echo "FAIL: the smoke path rows failed:"
	cat "$tmp/p.log"
	exit 1
fi
d=$(ls -d "$tmp"/D/*_*)
# rudp-send-redundant runs on stream rows only, unless --columns names it.
cols=$("$bench" --list | awk '$0 !~ /n\/a/ && $1 != "raw-udp" && $1 != "rudp-send-redundant" {print $1}')
for col in $cols; do
	n=$(grep -c "\"column\": \"$col\", \"workload\": \"path\", .*\"verified\": true" "$tmp/P.json")
	[ "$n" -eq 2 ] || fail "$col: $n verified path runs, want 2"
done
if grep -q '"column": "raw-udp", "workload": "path"' "$tmp/P.json"; then
	fail "raw UDP ran a path row"
fi
python3 - "$tmp/P.json" >"$tmp/figs.log" 2>&1 <<'EOF'
import json, sys
runs = [r for r in json.load(open(sys.argv[1]))["runs"] if r["workload"] == "path"]
bad = []
def num(r, k, lo=0):
    v = r.get(k)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v < lo:
        bad.append("%s %s: %s = %r" % (r["column"], r["path_case"], k, v))
for r in runs:
    for k in ("goodput_share", "resent_share", "queue_base_ms", "queue_p50_ms", "queue_p99_ms",
              "probes_sent", "probes_echoed", "link_up_packets", "link_down_packets",
              "link_up_queue_drops", "link_down_random_drops", "link_late_max_us"):
        num(r, k)
    if not 0 < r.get("goodput_share", 0) < 1.2:
        bad.append("%s %s: goodput_share %r" % (r["column"], r["path_case"], r.get("goodput_share")))
    if r.get("resent_source") not in ("own", "link drops"):
        bad.append("%s: resent_source %r" % (r["column"], r.get("resent_source")))
    own = r["column"] not in ("enet", "quic-go")
    if own != (r.get("resent_source") == "own"):
        bad.append("%s: resent_source %r" % (r["column"], r.get("resent_source")))
    if r["rate_mbit"] != 20 or r["queue_ms"] != 20:
        bad.append("%s: link %r Mbit/s, %r ms" % (r["column"], r["rate_mbit"], r["queue_ms"]))
    if r["path_case"] == "s":
        num(r, "jain")
        n_bad = len(bad)
        num(r, "tcp_share")
        num(r, "tcp_flow_mbit")
        if len(bad) > n_bad:
            bad.append("%s s: the run took %r s at goodput share %r" %
                       (r["column"], r.get("seconds"), r.get("goodput_share")))
        if r["link_up_random_drops"] + r["link_down_random_drops"] == 0:
            bad.append("%s s: no random drops at 0.5 %% loss" % r["column"])
    else:
        for k in ("game_unreliable_p50_ms", "game_unreliable_p99_ms", "game_reliable_p50_ms",
                  "game_reliable_p99_ms", "game_base_ms"):
            num(r, k)
        num(r, "game_reliable_sent", 1)
        num(r, "game_unreliable_echoed", 1)
        if r["game_unreliable_echoed"] > r["game_unreliable_sent"]:
            bad.append("%s: more unreliable echoes than sent" % r["column"])
print("\n".join(bad) if bad else "all figures present")
sys.exit(1 if bad else 0)
EOF
if [ $? -eq 0 ]; then
	ok "every path run has its figures"
else
	fail "path figures:"
	cat "$tmp/figs.log"
fi
if grep -q '^### Paths: bottleneck rows' "$d/report.md" && grep -q '^Sharing: Jain' "$d/report.md" &&
	grep -q '^Game stream beside bulk' "$d/report.md" && grep -q '^| s: 2 x 1,000 B + TCP flow, 20 Mbit/s' "$d/report.md" &&
	grep -q 'tun-emulator: 20 Mbit/s, 20 ms drop-tail buffer (50000 B), 10 ms each way' "$d/report.md"; then
	ok "report.md has the Paths section with each row's link"
else
	fail "report.md lacks the Paths section:"
	cat "$d/report.md"
fi

# 3. resume copies the path runs, figures and all
total=$(grep -c '"verified": true' "$tmp/P.json")
if "$bench" --smoke --workload path --resume "$d" --json "$tmp/R.json" >"$tmp/r.log" 2>&1 &&
	grep -q "^resumed from $d: $total of $total runs copied, 0 to run$" "$tmp/r.log" &&
	grep '"column"' "$tmp/P.json" >"$tmp/a.runs" && grep '"column"' "$tmp/R.json" >"$tmp/b.runs" &&
	cmp -s "$tmp/a.runs" "$tmp/b.runs"; then
	ok "--resume copies all $total path runs with their figures"
else
	fail "--resume of the path runs:"
	cat "$tmp/r.log"
fi

# 4. targets reads it; --rate / --queue-ms set the link
if python3 "$targets" --json "$tmp/P.json" >"$tmp/t.log" 2>&1 && grep -q '^| path a: ' "$tmp/t.log"; then
	ok "bench/targets reads the path runs"
else
	fail "bench/targets on the path runs:"
	cat "$tmp/t.log"
fi
if "$bench" --smoke --workload path --case t: --columns rudp-send --rate 10 --queue-ms 25 --json "$tmp/S.json" \
	>"$tmp/s.log" 2>&1 && grep -q '"rate_mbit": 10, "queue_ms": 25, "case": "t: game 60 Hz x 200 B + bulk, 10 Mbit/s, 20 ms RTT, 25 ms buffer"' "$tmp/S.json" &&
	grep -q 'tun-emulator: 10 Mbit/s, 25 ms drop-tail buffer (31250 B)' "$tmp/S.json"; then
	ok "--rate 10 --queue-ms 25 set the row's link"
else
	fail "--rate / --queue-ms:"
	cat "$tmp/s.log"
fi

# 5. bad values; SIGINT cleans up
for args in "--rate 0" "--rate x" "--queue-ms -1" "--queue-ms 30" "--tcp-cc ''"; do
	# shellcheck disable=SC2086
	eval "\"$bench\" --smoke $args" >"$tmp/bad.log" 2>&1
	rc=$?
	if [ "$rc" -eq 2 ]; then
		ok "--smoke $args refused (exit 2)"
	else
		fail "--smoke $args: exit $rc"
		cat "$tmp/bad.log"
	fi
done
for args in "" "--rate 0.5" "--rate 5 --loss 20" "--rate 5 --bogus 1"; do
	# shellcheck disable=SC2086
	"$bench" link-check $args >"$tmp/bad.log" 2>&1
	rc=$?
	[ "$rc" -eq 2 ] && ok "link-check $args refused (exit 2)" || fail "link-check $args: exit $rc"
done
"$bench" --workload path --case a: --columns tcp --rounds 1 --out "$tmp/I" >"$tmp/i.log" 2>&1 &
pid=$!
sleep 4
kill -INT "$pid"
wait "$pid"
rc=$?
sleep 0.5
left=$(ip netns list | grep -c "^rudpb-$pid-")
if [ "$rc" -ne 0 ] && [ "$left" -eq 0 ] && grep -q "interrupted; namespaces and processes cleaned up" "$tmp/i.log"; then
	ok "SIGINT during a path run: exit $rc, no namespace of it left"
else
	fail "SIGINT during a path run: exit $rc, $left namespaces left:"
	cat "$tmp/i.log"
fi

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
