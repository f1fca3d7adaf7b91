#!/usr/bin/env bash
# Reliable-ordered soak over real sockets in a private network namespace
# whose loopback loses and duplicates datagrams (nftables): 3 % of UDP
# packets dropped on input (numgen), 1 % duplicated on ingress (netdev dup,
# the copy arrives after the original, so some order is scrambled too).
#   netns_soak.sh SOAK_PEER SECONDS
# Passes only when the client verified every message: zero lost,
# duplicated, misordered or corrupt. Needs root, nft and ip (exit 77 without).
set -euo pipefail
peer=$(readlink -f "$1")
secs=$2
if [ "$(id -u)" -ne 0 ] || ! command -v nft >/dev/null || ! command -v ip >/dev/null; then
	echo "skipped: needs root, nft and ip to build a lossy namespace" >&2
	exit 77
fi
ns="rudp-soak-$$"
cleanup() {
	ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" nft -f - <<NFT
table inet rudp_soak {
	chain input {
		type filter hook input priority 0; policy accept;
		meta l4proto udp numgen random mod 1000 < 30 counter drop
	}
}
table netdev rudp_soak_dup {
	chain ingress {
		type filter hook ingress device lo priority 0; policy accept;
		meta l4proto udp numgen random mod 1000 < 10 counter dup to lo
	}
}
NFT
log=$(mktemp)
ip netns exec "$ns" "$peer" server 127.0.0.1:19140 >"$log" 2>&1 &
for _ in $(seq 50); do
	grep -q listening "$log" && break
	sleep 0.1
done
rc=0
ip netns exec "$ns" "$peer" client 127.0.0.1:19140 "$secs" || rc=$?
echo "--- nftables counters (drop 3 %, duplicate 1 %) ---"
ip netns exec "$ns" nft list ruleset | grep -o 'counter packets [0-9]* bytes [0-9]* [a-z]*' || true
rm -f "$log"
exit $rc
