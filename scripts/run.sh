#!/usr/bin/env bash
# The main job: installs what is missing, makes a release build, then echoes
# messages over loopback with rudp-echo and prints what was verified.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
dir=build-release
[ -d "$dir" ] || meson setup "$dir" -Dbuildtype=release >/dev/null
meson compile -C "$dir" >/dev/null

echo=$dir/examples/rudp-echo
port=${RUDP_PORT:-19132}
"$echo" server --bind "127.0.0.1:$port" --stats &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 0.3
echo "== 100,000 x 800 B reliable-ordered, window 64, loopback (MTU 1492, no loss)"
"$echo" client --connect "127.0.0.1:$port" --count 100000 --size 800 --window 64 --stats
echo "== 1,000 x 100 KiB reliable-ordered (split), window 16, loopback"
"$echo" client --connect "127.0.0.1:$port" --count 1000 --size 102400 --window 16 --stats
kill -TERM $server
wait $server || true
trap - EXIT

# The quick rudp-bench comparison (a few rows, one round, about two minutes):
# every transport on the same verified echo workloads, each run in a fresh
# network namespace when we are root.
echo "== rudp-bench quick comparison"
"$dir/bench/rudp-bench" --out bench-results
