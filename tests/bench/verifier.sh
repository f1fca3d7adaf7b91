#!/bin/sh
# Proves the rudp-bench verifier: for each column built here, a clean run
# passes, and a client whose delivery path corrupts one byte, reorders two
# messages or drops one fails with the matching error. Host loopback, no
# namespaces, a few hundred messages per run.
#   verifier.sh PATH/TO/rudp-bench
set -u
bench=$1
. "$(dirname "$0")/harness.sh"
port=$((21000 + $$ % 5000))

start_server() { # column port
	rm -f "$tmp/ready"
	mkfifo "$tmp/ready"
	"$bench" server --column "$1" --bind "127.0.0.1:$2" --ready-fd 3 3>"$tmp/ready" &
	server=$!
	if ! timeout 20 head -n 1 "$tmp/ready" >/dev/null; then
		echo "FAIL: $1 server did not start"
		return 1
	fi
}

stop_server() {
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
	server=
}

columns=$(built_columns "$bench")
for col in $columns; do
	port=$((port + 1))
	start_server "$col" "$port" || { fails=$((fails + 1)); continue; }
	args="--column $col --connect 127.0.0.1:$port --size 200 --warmup 5 --samples 5 --messages 200 --window 16 --stall-ms 3000"
	if "$bench" client $args >"$tmp/out" 2>"$tmp/err" && grep -q "^RESULT verified=210 messages=210" "$tmp/out"; then
		passes=$((passes + 1))
	else
		echo "FAIL: $col: a clean run did not verify: $(cat "$tmp/err")"
		fails=$((fails + 1))
	fi
	for fault in corrupt reorder drop; do
		case $fault in
		corrupt) want="payload hash mismatch" ;;
		*) want="arrived where" ;;
		esac
		if "$bench" client $args --inject-fault $fault >"$tmp/out" 2>"$tmp/err"; then
			echo "FAIL: $col: --inject-fault $fault was not detected"
			fails=$((fails + 1))
		elif grep -q "RESULT" "$tmp/out"; then
			echo "FAIL: $col: --inject-fault $fault still printed a figure"
			fails=$((fails + 1))
		elif ! grep -q "$want" "$tmp/err"; then
			echo "FAIL: $col: --inject-fault $fault failed for another reason: $(cat "$tmp/err")"
			fails=$((fails + 1))
		else
			echo "ok: $col --inject-fault $fault: $(grep -o 'FAILED.*' "$tmp/err")"
			passes=$((passes + 1))
		fi
	done
	stop_server
done
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$passes" -gt 0 ]
