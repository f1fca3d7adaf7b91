#!/usr/bin/env bash
# A server process killed (SIGKILL, no goodbye) and restarted on the same
# port: the client must see the disconnect within its timeout (+500 ms of
# the last message it heard) and reconnect, then carry verified traffic.
#   server_restart.sh SOAK_PEER
set -euo pipefail
peer=$(readlink -f "$1")
port=$((20000 + $$ % 20000))
addr="127.0.0.1:$port"
timeout_ms=2000
slog=$(mktemp)
clog=$(mktemp)
spid=""
cpid=""
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null || true
	[ -n "$cpid" ] && kill "$cpid" 2>/dev/null || true
	rm -f "$slog" "$clog"
}
trap cleanup EXIT
start_server() {
	"$peer" server "$addr" >"$slog" 2>&1 &
	spid=$!
	for _ in $(seq 50); do
		grep -q listening "$slog" && return 0
		sleep 0.1
	done
	echo "server did not start" >&2
	return 1
}
start_server
"$peer" restart "$addr" "$timeout_ms" >"$clog" 2>&1 &
cpid=$!
for _ in $(seq 50); do
	grep -q connected "$clog" && break
	sleep 0.1
done
sleep 1.5
kill -9 "$spid"
wait "$spid" 2>/dev/null || true
echo "server killed"
sleep 1
start_server
echo "server restarted"
rc=0
wait "$cpid" || rc=$?
cpid=""
cat "$clog"
exit $rc
