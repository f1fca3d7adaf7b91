#!/usr/bin/env bash
# The example programs against independent RakNet peers.
#
#   run_tools.sh ping SERVER RUDP_PING [RUDP_ECHO]
#       rudp-ping against SERVER: jsp or rknode (peer.js servers) or
#       rudp-echo; checks the guid, the time and the pong data it prints.
#   run_tools.sh echo PEER RUDP_ECHO
#       `rudp-echo server` with PEER's client (peer.js bulk: 10,000 messages
#       (2,000 for jsp) of 1 B .. 64 KiB, every echo verified in order).
#
# Servers bind 127.0.0.1:0 and print their port; everything started here is
# killed by pid on exit. Exit 0 pass, 1 fail, 77 skip (reason printed).
set -uo pipefail
mode=$1 kind=$2 tool=$3 echo_bin=${4:-$3}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
command -v node >/dev/null || { echo "SKIP: node is not installed"; exit 77; }
[ -d "$here/node_modules/raknet-node" ] || { echo "SKIP: run npm ci in $here first"; exit 77; }
# See run_cell.sh: raknet-node's binding needs serial GC on Node 20.
rk_flags=(--single-threaded-gc --max-semi-space-size=64 --min-semi-space-size=64)

server=$kind
[ "$mode" = echo ] && server=rudp-echo
case $server in
jsp) node "$here/peer.js" jsp server ping >"$tmp/server.out" 2>&1 & ;;
rknode) node "${rk_flags[@]}" "$here/peer.js" rknode server ping >"$tmp/server.out" 2>&1 & ;;
rudp-echo) "$echo_bin" server --bind 127.0.0.1:0 >"$tmp/server.out" 2>&1 & ;;
*) echo "unknown server $server" >&2; exit 2 ;;
esac
server_pid=$!
port= guid=
for _ in $(seq 200); do
	line=$(grep -m1 '^listening' "$tmp/server.out" 2>/dev/null)
	if [ -n "$line" ]; then
		# "listening PORT GUID" (peer.js) or "listening on ADDR:PORT" (rudp-echo)
		set -- $line
		if [ "$2" = on ]; then port=${3##*:}; else port=$2 guid=${3:-}; fi
		break
	fi
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.05
done
[ -n "$port" ] || { echo "FAIL: server did not start"; cat "$tmp/server.out"; exit 1; }

rc=0
if [ "$mode" = ping ]; then
	"$tool" "127.0.0.1:$port" --count 3 --timeout 3000 >"$tmp/ping.out" 2>&1 || rc=$?
	cat "$tmp/ping.out"
	check() { grep -q -- "$1" "$tmp/ping.out" || { echo "FAIL: rudp-ping output lacks: $1"; rc=1; }; }
	check "3/3 pings answered"
	check "time [0-9]*\.[0-9]* ms"
	case $kind in
	jsp)
		check "guid $guid "
		check 'data: "MCPE;jsp-raknet interop peer;'
		;;
	rknode) check 'data: "MCPE;Rust Raknet Server;' ;;
	rudp-echo) check "guid [1-9]" ;;
	esac
	# A port nobody answers on: a clear "no pong" and exit 1.
	if "$tool" 127.0.0.1:9 --timeout 300 >"$tmp/none.out" 2>&1; then
		echo "FAIL: rudp-ping succeeded against a silent port"
		rc=1
	fi
	grep -q "no pong from 127.0.0.1:9 within 300 ms" "$tmp/none.out" || { echo "FAIL: no 'no pong' line"; rc=1; }
else
	# The full 10,000 run each way is in the matrix (jsp/peer-client/bulk);
	# here rudp-echo's own loop is what is checked, so jsp-raknet (which
	# handles 4 datagrams per 10 ms tick) gets a shorter stream.
	flags=() count=10000
	[ "$kind" = rknode ] && flags=("${rk_flags[@]}")
	[ "$kind" = jsp ] && count=2000
	timeout 100 node "${flags[@]}" "$here/peer.js" "$kind" client bulk "$port" --count $count || rc=$?
fi
kill -TERM "$server_pid" 2>/dev/null
wait "$server_pid" 2>/dev/null
server_pid=
echo "--- server output ---"
cat "$tmp/server.out"
exit $rc
