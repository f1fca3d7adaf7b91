#!/usr/bin/env bash
# rudp-echo server --threads 2 on one port (SO_REUSEPORT) serves 256
# connections, each from its own socket; every echo is verified by
# many_clients, and both threads must have served some of them.
#   threads_echo.sh RUDP_ECHO MANY_CLIENTS BACKEND
set -euo pipefail
echo_bin=$1 clients_bin=$2 io=$3
# RUDP_IO beats --io: a run made with another backend named there (the
# valgrind setup's mmsg) would test the wrong one.
if [ -n "${RUDP_IO:-}" ] && [ "$RUDP_IO" != auto ] && [ "$RUDP_IO" != "$io" ]; then
	echo "skipped: RUDP_IO=$RUDP_IO in the environment, this run is for $io" >&2
	exit 77
fi
conns=256 msgs=20
log=$(mktemp)
trap 'kill "$srv" 2>/dev/null || true; rm -f "$log"' EXIT
"$echo_bin" server --bind 127.0.0.1:0 --threads 2 --io "$io" --max-clients 1024 >"$log" 2>&1 &
srv=$!
for _ in $(seq 100); do grep -q '^listening on' "$log" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on \([^ ]*\) .*/\1/p' "$log")
[ -n "$addr" ] || { echo "server did not start:"; cat "$log"; exit 1; }
grep -q "io backend $io" "$log" || { echo "server is not on backend $io:"; cat "$log"; exit 1; }
"$clients_bin" "$addr" "$conns" "$msgs"
kill -INT "$srv"
wait "$srv" || { echo "server failed:"; cat "$log"; exit 1; }
cat "$log"
# "thread I: echoed E messages for C clients"
read -r c0 e0 < <(sed -n 's/^thread 0: echoed \([0-9]*\) messages for \([0-9]*\) clients/\2 \1/p' "$log")
read -r c1 e1 < <(sed -n 's/^thread 1: echoed \([0-9]*\) messages for \([0-9]*\) clients/\2 \1/p' "$log")
[ "$((c0 + c1))" -eq "$conns" ] || { echo "FAIL: threads saw $c0 + $c1 clients, expected $conns"; exit 1; }
[ "$((e0 + e1))" -eq "$((conns * msgs))" ] || { echo "FAIL: echoed $e0 + $e1, expected $((conns * msgs))"; exit 1; }
[ "$c0" -gt 0 ] && [ "$c1" -gt 0 ] || { echo "FAIL: one thread served every client ($c0 / $c1)"; exit 1; }
echo "ok: $conns connections over 2 threads ($c0 / $c1), $((e0 + e1)) echoes verified"
