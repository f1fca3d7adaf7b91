#!/bin/sh
# Proves the server's worker set (one thread and one SO_REUSEPORT socket per
# worker) for every column built here:
#  1. the orchestrator with --workers 2 on the smoke many row: every run
#     verifies, and runs.json records 2 workers (enet 1: libenet cannot share
#     a port) with what each worker served;
#  2. `server --workers 2` against a 64-connection many client on host
#     loopback: every echo verifies, each worker served at least one
#     connection (the kernel hashes each flow to a socket: all 64 on one
#     worker has odds of 2^-63), and the workers' echoes add up to the
#     client's verified messages.
#   workers.sh PATH/TO/rudp-bench
set -u
bench=$1
. "$(dirname "$0")/harness.sh"

# rudp-send-redundant runs on stream rows only, unless --columns names it.
columns=$(built_columns "$bench" | grep -vx rudp-send-redundant)
ncols=$(echo "$columns" | wc -w)

# 1. orchestrator
if "$bench" --smoke --workload many --workers 2 --json "$tmp/runs.json" >"$tmp/smoke" 2>&1; then
	runs=$(grep -c '"workload": "many"' "$tmp/runs.json")
	two=$(grep '"workload": "many"' "$tmp/runs.json" | grep -v '"column": "enet"' |
		grep -c '"verified": true, .*"server_workers": 2, "worker_connections": \[[0-9nul]*, [0-9nul]*\], "worker_echoes": \[[0-9]*, [0-9]*\]')
	one=$(grep '"column": "enet"' "$tmp/runs.json" |
		grep -c '"verified": true, .*"server_workers": 1, "worker_connections": \[[0-9]*\], "worker_echoes": \[[0-9]*\]')
	want_two=$ncols
	echo "$columns" | grep -qx enet && want_two=$((ncols - 1))
	if [ "$runs" -eq "$ncols" ] && [ "$two" -eq "$want_two" ] && [ $((two + one)) -eq "$ncols" ]; then
		echo "ok: rudp-bench --smoke --workload many --workers 2: $runs runs verified, workers recorded"
		passes=$((passes + 1))
	else
		fail "runs.json: $runs many runs, $two with 2 workers, $one enet with 1 (want $ncols)"
		grep '"workload": "many"' "$tmp/runs.json"
	fi
else
	fail "rudp-bench --smoke --workload many --workers 2 failed:"
	cat "$tmp/smoke"
fi

# 2. each column's server with two workers, 64 connections
port=$((26000 + $$ % 5000))
conns=64
warmup=2
messages=2048
want=$((conns * warmup + messages))
for col in $columns; do
	port=$((port + 1))
	: >"$tmp/ready"
	"$bench" server --column "$col" --bind "127.0.0.1:$port" --conns $conns --workers 2 --ready-fd 3 \
		3>>"$tmp/ready" 2>"$tmp/serr" &
	server=$!
	i=0
	while ! grep -q '^ready$' "$tmp/ready" && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if ! grep -q '^ready$' "$tmp/ready"; then
		fail "$col: server did not start: $(cat "$tmp/serr")"
		kill "$server" 2>/dev/null
		wait "$server" 2>/dev/null
		server=
		continue
	fi
	"$bench" client --column "$col" --connect "127.0.0.1:$port" --workload many --connections $conns \
		--window 16 --warmup $warmup --samples 0 --messages $messages --mtu 1400 --stall-ms 10000 \
		>"$tmp/out" 2>"$tmp/err"
	crc=$?
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
	server=
	served=$(grep '^served ' "$tmp/ready")
	if [ $crc -ne 0 ] || ! grep -q "^RESULT verified=$want messages=$want " "$tmp/out"; then
		fail "$col: the client did not verify $want echoes: $(cat "$tmp/err")"
		continue
	fi
	nw=2
	[ "$col" = enet ] && nw=1
	# served workers=2 conns=30,34 echoes=1900,2324 (conns "-": raw UDP has none)
	if ! echo "$served" | awk -v nw=$nw -v want=$want '
		{
			for (i = 2; i <= NF; i++) {
				split($i, kv, "=")
				f[kv[1]] = kv[2]
			}
			if (f["workers"] != nw)
				exit 1
			nc = split(f["conns"], c, ",")
			ne = split(f["echoes"], e, ",")
			if (nc != nw || ne != nw)
				exit 1
			sum = 0
			for (i = 1; i <= nw; i++) {
				if (c[i] != "-" && c[i] < 1)
					exit 1
				if (e[i] < 1)
					exit 1
				sum += e[i]
			}
			exit sum == want ? 0 : 1
		}'; then
		fail "$col: workers did not all serve, or echoes do not add up to $want: '$served'"
		continue
	fi
	echo "ok: $col --workers 2: $served"
	passes=$((passes + 1))
done
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$passes" -gt 1 ]
