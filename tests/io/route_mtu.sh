#!/usr/bin/env bash
# A link whose MTU (1300) is below RakNet's 1492: the kernel fragments the
# handshake's 1492-byte probe locally, so the probe arrives and both sides
# agree on 1492. librudp must still send datagrams no larger than the
# route allows (the host clamps the connection's MTU to the route's):
# otherwise every full datagram becomes IP fragments, and a UDP GSO run of
# them is lost (before the clamp: 3,000 x 1,400 B echoes needed 106,000
# datagrams and 6.4 s). Checks, in a private namespace whose loopback has
# MTU 1300, on io_uring with GSO: every echo arrives, the connection
# reports MTU 1300, almost nothing is retransmitted, and runs of equal
# datagrams still go out as GSO sends.
#   route_mtu.sh RUDP_ECHO
# Needs root and iproute2; exits 77 (meson's "skip") without them.
set -euo pipefail
echo_bin=$(readlink -f "$1")

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
	echo "skipped: needs root and ip to build a namespace" >&2
	exit 77
fi
# RUDP_IO beats --io: another backend named there (the valgrind setup's
# mmsg) has no GSO to check.
if [ -n "${RUDP_IO:-}" ] && [ "$RUDP_IO" != auto ] && [ "$RUDP_IO" != uring ]; then
	echo "skipped: RUDP_IO=$RUDP_IO in the environment, this test needs io_uring" >&2
	exit 77
fi

ns="rudp-mtu-$$"
cleanup() {
	ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo mtu 1300 up

# run SIZE PORT: echoes 3000 messages of SIZE bytes; prints the client's output.
run() {
	local log out
	log=$(mktemp)
	ip netns exec "$ns" "$echo_bin" server --bind "127.0.0.1:$2" --io uring >"$log" 2>&1 &
	for _ in $(seq 50); do
		grep -q listening "$log" && break
		sleep 0.1
	done
	out=$(ip netns exec "$ns" "$echo_bin" client --connect "127.0.0.1:$2" --io uring --count 3000 \
		--size "$1" --window 64 --timeout 60000 --stats) || { echo "$out"; rm -f "$log"; return 1; }
	rm -f "$log"
	echo "$out"
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

port=19140
for size in 1000 1400; do
	port=$((port + 1))
	out=$(run "$size" "$port")
	echo "$out"
	grep -q "verified 3000/3000" <<<"$out" || fail "$size B: echoes missing"
	grep -q "mtu 1300," <<<"$out" || fail "$size B: the connection's MTU is not the route's 1300"
	retx=$(sed -n 's/.*retransmitted \([0-9]*\) frames.*/\1/p' <<<"$out" | head -1)
	[ -n "$retx" ] && [ "$retx" -lt 100 ] || fail "$size B: ${retx:-?} frames retransmitted on a loss-free link"
	gso=$(sed -n 's/.*(\([0-9]*\) GSO sends).*/\1/p' <<<"$out" | head -1)
	[ -n "$gso" ] && [ "$gso" -gt 0 ] || fail "$size B: no GSO sends"
done
echo "ok: MTU clamped to the route (1300), GSO in use, nothing lost"
