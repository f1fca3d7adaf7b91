#!/usr/bin/env bash
# Interop smoke: a jsp-raknet client (protocol 10, an implementation nobody
# here wrote) connects to `rudp-echo server`, echoes reliable-ordered
# messages, checks every one, and disconnects.
#   run_jsp_smoke.sh RUDP_ECHO_BINARY [COUNT] [SIZE]
set -euo pipefail
echo_bin=$1
count=${2:-100}
size=${3:-64}
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -d "$here/node_modules/jsp-raknet" ]; then
	# The README's test command runs `npm ci` here; do it now if it did not.
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

# A free UDP port: let the kernel choose, then hand it to the server.
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
	|| node -e 'const d=require("dgram").createSocket("udp4");d.bind(0,"127.0.0.1",()=>{console.log(d.address().port);d.close()})')

log=$(mktemp)
"$echo_bin" server --bind "127.0.0.1:$port" --stats >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 50); do
	grep -q listening "$log" && break
	sleep 0.1
done

rc=0
JSP_TIMEOUT_MS=${JSP_TIMEOUT_MS:-30000} node "$here/jsp_client.js" 127.0.0.1 "$port" "$count" "$size" || rc=$?
sleep 0.5
kill -TERM $server 2>/dev/null || true
wait $server 2>/dev/null || true
echo "--- rudp-echo server log ---"
cat "$log"
exit $rc
