#!/usr/bin/env bash
# One cell of the interop matrix: librudp (interop_rudp) against a RakNet
# library nobody here wrote (peer.js: jsp-raknet or raknet-node).
#
#   run_cell.sh INTEROP_RUDP PEER DIRECTION SCENARIO
#     PEER       jsp | rknode
#     DIRECTION  peer-client (the peer connects to a librudp server) or
#                rudp-client (librudp connects to the peer's server)
#     SCENARIO   ping handshake bulk unreliable keepalive disc-rudp disc-peer kill
#
# The server binds 127.0.0.1:0 and prints "listening PORT GUID", so no port
# is guessed. Both processes are killed (by the pids started here) on any
# exit. Exit 0: both halves passed; 77: the cell cannot run (reason printed);
# anything else: failure. Both logs are printed either way.
# INTEROP_RUDP_EXTRA adds options to interop_rudp (for experiments by hand).
set -uo pipefail

rudp_bin=$1 peer=$2 direction=$3 scenario=$4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
server_pid= client_pid=

cleanup() {
	for pid in $client_pid $server_pid; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

skip() {
	echo "SKIP: $*"
	exit 77
}

command -v node >/dev/null || skip "node is not installed"
if [ ! -d "$here/node_modules/jsp-raknet" ] || [ ! -d "$here/node_modules/raknet-node" ]; then
	# scripts/test.sh runs `npm ci` before meson test; a hand-run meson test
	# gets it here, once (the lock keeps parallel cells from racing).
	(
		flock 9
		[ -d "$here/node_modules/raknet-node" ] ||
			(cd "$here" && npm ci --no-audit --no-fund --loglevel=error) >&2
	) 9>"$here/.npm-ci.lock" || skip "npm ci failed in $here"
fi

# Per-cell settings. jsp-raknet's server accepts protocol 10 only; raknet-node
# speaks 10 and 11, so librudp offers its default 11 there.
rudp_args=(${INTEROP_RUDP_EXTRA:-}) peer_args=()
# librudp's timeout for the keepalive and kill cells is short so they stay
# quick, but not below what the peer needs: a jsp-raknet client is silent
# for ~1.5 s in its handshake (it handles 0x10 only after its MTU-probe
# sleep), and a librudp server counts that silence against timeout_ms.
case $peer in
jsp) protocol=10 timeout=2000 node_flags=() ;;
rknode)
	protocol=11 timeout=1000
	# raknet-node 0.5.0's prebuilt binding corrupts V8's heap under load on
	# Node 20 ("Check failed: Heap::InFromPage" during a scavenge, also with
	# raknet-node on both ends and no librudp involved). Serial GC and a young
	# generation big enough for few scavenges avoid it (30,000 messages in
	# 8 of 8 runs, against 1 of 5 without).
	node_flags=(--single-threaded-gc --max-semi-space-size=64 --min-semi-space-size=64)
	;;
*) echo "unknown peer $peer" >&2; exit 2 ;;
esac
[ "$direction" = rudp-client ] && rudp_args+=(--protocol "$protocol")
case $scenario in
handshake)
	# librudp's MTU is set below what the peer probes, so agreeing is work:
	# both sides must settle on librudp's value.
	if [ "$direction" = peer-client ]; then
		rudp_args+=(--mtu 1200 --expect-mtu 1200)
	else
		rudp_args+=(--mtu 1300 --expect-mtu 1300)
	fi
	;;
bulk)
	# jsp-raknet acknowledges only on its 10 ms tick, after handling at
	# most 4 queued datagrams, so its ack delay grows with its queue. With
	# librudp's default 30 ms RTO floor nearly every frame is sent twice,
	# which deepens that queue (measured: 8,904 retransmitted frames, 14 s);
	# a 100 ms floor keeps the cell at ~8 s with ~170.
	[ "$peer" = jsp ] && rudp_args+=(--rto-min 100)
	;;
keepalive)
	rudp_args+=(--timeout $timeout --idle $((3 * timeout)))
	peer_args+=(--idle $((3 * timeout)))
	;;
kill)
	rudp_args+=(--timeout $timeout --pid-file "$tmp/peer.pid")
	;;
unreliable)
	[ "$peer" = rknode ] &&
		rudp_args+=(--peer-no-unreliable "raknet-node's send() always sends ReliableOrdered (RaknetClient.send in its binding); only librudp -> raknet-node is tested")
	;;
esac

# Starts "$@" in the background with its output in $tmp/$1.{out,err}.
start() {
	local name=$1
	shift
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
}

show_logs() {
	for f in server client; do
		[ -f "$tmp/$f.out" ] || continue
		echo "--- $f stdout ---"
		cat "$tmp/$f.out"
		echo "--- $f stderr ---"
		cat "$tmp/$f.err"
	done
}

# 1. the server
if [ "$direction" = peer-client ]; then
	start server "$rudp_bin" server "$scenario" "${rudp_args[@]}"
else
	start server node "${node_flags[@]}" "$here/peer.js" "$peer" server "$scenario" "${peer_args[@]}"
fi
server_pid=$!
[ "$direction" = rudp-client ] && echo "$server_pid" >"$tmp/peer.pid"
port= guid=
for _ in $(seq 200); do
	word=
	[ -s "$tmp/server.out" ] && read -r word port guid <"$tmp/server.out"
	[ "$word" = listening ] && [ -n "$port" ] && break
	port=
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.05
done
if [ -z "$port" ]; then
	echo "FAIL: the server did not start"
	show_logs
	exit 1
fi

# 2. the client
if [ "$direction" = peer-client ]; then
	extra=()
	[ "$scenario" = ping ] && extra=(--expect-pong "librudp interop server" --expect-guid "$guid")
	start client node "${node_flags[@]}" "$here/peer.js" "$peer" client "$scenario" "$port" "${peer_args[@]}" "${extra[@]}"
	client_pid=$!
	echo "$client_pid" >"$tmp/peer.pid.tmp" && mv "$tmp/peer.pid.tmp" "$tmp/peer.pid"
else
	extra=()
	if [ "$scenario" = ping ]; then
		if [ "$peer" = jsp ]; then
			extra=(--expect-pong "jsp-raknet interop peer" --expect-guid "$guid")
		else
			# rust-raknet answers with its built-in MOTD: raknet-node's
			# setmotd() changes a copy its listener no longer reads.
			extra=(--expect-pong "Rust Raknet Server")
		fi
	fi
	start client "$rudp_bin" client "$scenario" "$port" "${rudp_args[@]}" "${extra[@]}"
	client_pid=$!
fi

# 3. wait for the client (bounded), then for the server to finish on its own
wait_for() { # pid seconds -> exit status, or 124 after the time
	local pid=$1 left=$(($2 * 20))
	while kill -0 "$pid" 2>/dev/null; do
		((left-- > 0)) || return 124
		sleep 0.05
	done
	wait "$pid"
}
wait_for "$client_pid" 90
client_rc=$?
client_pid=
if [ "$scenario" = ping ]; then
	kill -TERM "$server_pid" 2>/dev/null
fi
wait_for "$server_pid" 10
server_rc=$?
server_pid=

show_logs
# In "kill" librudp SIGKILLs the peer: 137 from the peer is the plan.
if [ "$scenario" = kill ]; then
	if [ "$direction" = peer-client ]; then
		[ $client_rc = 137 ] && client_rc=0
	else
		[ $server_rc = 137 ] && server_rc=0
	fi
fi
echo "=== $peer $direction $scenario: server exit $server_rc, client exit $client_rc"
if [ $server_rc = 77 ] || [ $client_rc = 77 ]; then
	grep -h '^SKIP\|SKIP:' "$tmp"/*.out "$tmp"/*.err
	exit 77
fi
[ $server_rc = 0 ] && [ $client_rc = 0 ] && exit 0
exit 1
