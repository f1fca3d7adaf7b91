#!/bin/sh
# Proves rudp-bench's stream rows (--workload stream: one connection's
# reliable-ordered messages at a fixed rate over the link emulator):
#  1. a stream client refuses what is not a stream (no rate, more than one
#     connection), whoever runs it;
#  2. (root only: namespaces) the smoke stream row verifies on every
#     reliable column built here, raw UDP is not run; each run's echo RTT
#     p50 / p95 / p99 is at least the link's 20 ms round trip and in order;
#     the columns that can count their bytes on the wire give them per
#     message (at least the 400 B message), quic-go does not; report.md has
#     the Stream section; bench/targets reads the file.
#   stream.sh PATH/TO/rudp-bench PATH/TO/bench/targets
set -u
bench=$1
targets=$2
. "$(dirname "$0")/harness.sh"

# 1. what is not a stream is refused before any connection
for bad in "--messages 30" "--game-hz 60 --connections 2 --messages 30" "--game-hz 60 --messages 0"; do
	# shellcheck disable=SC2086
	"$bench" client --column rudp-send --connect 127.0.0.1:9 --workload stream $bad >"$tmp/o" 2>&1
	rc=$?
	if [ "$rc" -eq 2 ]; then ok "stream client $bad: refused"; else fail "stream client $bad: exit $rc, want 2"; fi
done

if [ "$(id -u)" -ne 0 ]; then
	echo "$passes passed, $fails failed (the stream rows need root: namespaces; not run)"
	[ "$fails" -eq 0 ]
	exit
fi

# 2. the smoke stream row
if ! "$bench" --smoke --workload stream --json "$tmp/S.json" --out "$tmp/D" >"$tmp/s.log" 2>&1; then
	echo "FAIL: the smoke stream row failed:"
	cat "$tmp/s.log"
	exit 1
fi
cols=$("$bench" --list | awk '$0 !~ /n\/a/ && $1 != "raw-udp" {print $1}')
python3 - "$tmp/S.json" $cols >"$tmp/figs.log" 2>&1 <<'PY'
import json, sys
runs = [r for r in json.load(open(sys.argv[1]))["runs"] if r["workload"] == "stream"]
bad = []
for col in sys.argv[2:]:
    mine = [r for r in runs if r["column"] == col and r.get("verified") is True]
    if len(mine) != 1:
        bad.append("%s: %d verified stream runs, want 1" % (col, len(mine)))
        continue
    r = mine[0]
    p = [r.get(k) for k in ("rtt_p50_us", "rtt_p95_us", "rtt_p99_us")]
    if not all(isinstance(v, (int, float)) for v in p) or not 20000 <= p[0] <= p[1] <= p[2]:
        bad.append("%s: echo RTT p50/p95/p99 %r (want >= 20 ms, in order)" % (col, p))
    w = r.get("wire_bytes_per_msg")
    if col == "quic-go":
        if w is not None:
            bad.append("quic-go: wire_bytes_per_msg %r, but it cannot count them" % w)
    elif not isinstance(w, (int, float)) or w < 400:
        bad.append("%s: wire_bytes_per_msg %r (want >= 400)" % (col, w))
if any(r["column"] == "raw-udp" for r in runs):
    bad.append("raw UDP ran a stream row")
print("\n".join(bad) if bad else "%d stream runs with their figures" % len(runs))
sys.exit(1 if bad else 0)
PY
if [ $? -eq 0 ]; then ok "$(cat "$tmp/figs.log")"; else fail "stream figures:"; cat "$tmp/figs.log"; fi
d=$(ls -d "$tmp"/D/*_*)
if grep -q "^### Stream:" "$d/report.md"; then ok "report.md has the Stream section"; else fail "report.md has no Stream section"; fi
if python3 "$targets" --json "$tmp/S.json" >"$tmp/t.log" 2>&1 && grep -q "^| stream, " "$tmp/t.log"; then
	ok "bench/targets reads the stream runs"
else
	fail "bench/targets on the stream runs:"
	cat "$tmp/t.log"
fi
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$passes" -gt 0 ]
