#!/usr/bin/env bash
# rudp-echo through a private network namespace whose loopback drops a
# given share of every packet in both directions (nftables numgen on the
# input hook: every datagram, data and ACKs alike, passes input once).
#   netns_loss.sh RUDP_ECHO LOSS_PERMILLE COUNT SIZE [WINDOW]
# Needs root, nftables and iproute2; exits 77 (meson's "skip") without them
# and says why.
set -euo pipefail
echo_bin=$(readlink -f "$1")
permille=$2
count=$3
size=$4
window=${5:-64}

if [ "$(id -u)" -ne 0 ] || ! command -v nft >/dev/null || ! command -v ip >/dev/null; then
	echo "skipped: needs root, nft and ip to build a lossy namespace" >&2
	exit 77
fi

ns="rudp-loss-$$"
cleanup() {
	ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo mtu 1500 up
ip netns exec "$ns" nft -f - <<NFT
table inet rudp_loss {
	chain input {
		type filter hook input priority 0; policy accept;
		meta l4proto udp numgen random mod 1000 < $permille counter drop
	}
}
NFT

port=19132
log=$(mktemp)
ip netns exec "$ns" "$echo_bin" server --bind "127.0.0.1:$port" >"$log" 2>&1 &
for _ in $(seq 50); do
	grep -q listening "$log" && break
	sleep 0.1
done
rc=0
ip netns exec "$ns" "$echo_bin" client --connect "127.0.0.1:$port" --count "$count" --size "$size" \
	--window "$window" --timeout 240000 --stats || rc=$?
echo "--- nftables drop counter (loss $permille/1000 on input) ---"
ip netns exec "$ns" nft list chain inet rudp_loss input | grep -o 'counter packets [0-9]* bytes [0-9]*' || true
rm -f "$log"
exit $rc
