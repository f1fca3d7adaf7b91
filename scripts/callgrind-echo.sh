#!/usr/bin/env bash
# Instructions per message of a rudp-echo exchange, counted by callgrind: a
# way to compare two builds' CPU cost without the timing noise of a shared
# machine. One side runs under callgrind, the other natively.
#   scripts/callgrind-echo.sh BUILD [BUILD2]   e.g. build-rel /tmp/old/build-rel
# With two builds they alternate (BUILD, BUILD2, BUILD, ...) RUNS times each.
# Environment: RUNS (3), SIDE=client|server (client: the side measured),
# CLIENT_ARGS (--count 20000 --size 800 --window 64), PORT (19460),
# OUT (a directory for the callgrind files; a temporary one by default).
# Counted: the library's work in the public calls the side makes per
# message (rudp_service, rudp_send...). The count is close to deterministic, not exact: how many datagrams and ACKs
# carry the messages depends on timing. Use release builds.
set -euo pipefail

[ $# -ge 1 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
builds=("$@")
runs=${RUNS:-3}
side=${SIDE:-client}
port=${PORT:-19460}
args=${CLIENT_ARGS:---count 20000 --size 800 --window 64}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
count=$(sed -n 's/.*--count \([0-9]*\).*/\1/p' <<<"$args")
count=${count:-20000}
case $side in client | server) ;; *) echo "SIDE: client or server" >&2; exit 2 ;; esac
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 2; }
for b in "${builds[@]}"; do
	[ -x "$b/examples/rudp-echo" ] || { echo "$b/examples/rudp-echo: not built" >&2; exit 2; }
done

# Only what the library does for the exchange is counted: the public calls
# the side makes per message, with all they call (not the example's own
# filling and checking of payloads, nor set-up). A toggle turns counting off
# when a toggled function is entered again from inside another, so
# rudp_send, which rudp_send_batch calls, is toggled only where it is the
# call the side makes.
if [ "$side" = server ]; then
	calls="rudp_service rudp_recv_batch rudp_send_batch"
elif [[ " $args " == *" --batch "* ]]; then
	calls="rudp_service rudp_send_batch"
else
	calls="rudp_service rudp_send"
fi
cg="valgrind --tool=callgrind --dump-instr=no --compress-strings=no"
for c in $calls; do
	cg+=" --toggle-collect=$c"
done
server_pid=

stop_server() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=
	fi
}
trap stop_server EXIT

# Prints the instructions per message of one run of build $1 (run tag $2).
one_run() {
	local echo=$1/examples/rudp-echo file=$out/callgrind.$2.out srv cli=
	srv=("$echo" server --bind "127.0.0.1:$port" --io mmsg --once)
	# shellcheck disable=SC2086,SC2206 # CLIENT_ARGS is a list of words
	cli=("$echo" client --connect "127.0.0.1:$port" --io mmsg --timeout 60000 $args)
	if [ "$side" = server ]; then
		$cg --callgrind-out-file="$file" "${srv[@]}" >/dev/null 2>&1 &
		server_pid=$!
		sleep 2
		"${cli[@]}" >/dev/null
	else
		"${srv[@]}" >/dev/null 2>&1 &
		server_pid=$!
		sleep 0.3
		$cg --callgrind-out-file="$file" "${cli[@]}" >/dev/null 2>&1
	fi
	# --once: the server leaves after its client; stop it if it did not.
	sleep 0.2
	stop_server
	# Also the datagrams the conn took in (ACK datagrams among them) per
	# message: where two runs' counts differ, these usually differ too.
	awk -v n="$count" '
		/^summary:/ { ir = $2 }
		/^cfn=/ { fn = substr($0, 5) }
		/^calls=/ && fn == "rudp_conn_on_datagram" { dg += $2 }
		/^calls=/ && fn == "rudp_wire_decode_ack" { acks += $2 }
		END { printf "%.0f\t%.2f\t%.2f\n", ir / n, dg / n, acks / n }' FS='[= ]' "$file"
}

printf '%s\n' "side $side, ${args}, io mmsg, loopback; per message:" \
	"build	instructions	datagrams in	ACK datagrams in"
for ((r = 1; r <= runs; r++)); do
	i=0
	for b in "${builds[@]}"; do
		printf '%s\t%s\n' "$b" "$(one_run "$b" "$r.$i")"
		i=$((i + 1))
	done
done
echo "callgrind files: $out"
