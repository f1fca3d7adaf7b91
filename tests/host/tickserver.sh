#!/bin/sh
# SPDX-License-Identifier: MIT
# rudp-tickserver in CI: a server for a few seconds and a client playing 20
# players against it through the built-in simulator (100 ms each way, 2 %
# loss each way, on the client's host). Fails unless every player got every
# reliable event exactly once and in order, and the server every chat line.
# Usage: tickserver.sh PATH-TO-rudp-tickserver (RUDP_IO picks the backend).
set -u
bin=$1
dir=$(mktemp -d)
trap 'kill "$spid" 2>/dev/null; rm -rf "$dir"' EXIT
"$bin" server --bind 127.0.0.1:0 --seconds 4 >"$dir/server.log" 2>&1 &
spid=$!
addr=
for _ in $(seq 50); do
	addr=$(sed -n 's/^listening on //p' "$dir/server.log")
	[ -n "$addr" ] && break
	sleep 0.1
done
if [ -z "$addr" ]; then
	echo "server did not start"; cat "$dir/server.log"; exit 1
fi
"$bin" client --connect "$addr" --players 20 --timeout 10 --sim-latency 100 --sim-loss 2 --sim-seed 47
crc=$?
wait "$spid"
src=$?
cat "$dir/server.log"
echo "client exit $crc, server exit $src"
[ "$crc" -eq 0 ] && [ "$src" -eq 0 ]
