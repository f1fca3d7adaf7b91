#!/bin/bash
# cgmany.sh SIDE BUILD OUT [CONNS] [MSGS] [extra args for both halves]:
# one half (SIDE = client or server) of the bench's many row under callgrind,
# the other half native; prints instructions per message of the collected calls.
side=$1; b=$2; o=$3; n=${4:-1024}; m=${5:-20000}; shift 5
port=$((19500 + RANDOM % 400))
vg="valgrind --tool=callgrind ${CGX} --dump-instr=${DUMPI:-no} --compress-strings=no ${TOGGLES---toggle-collect=rudp_service --toggle-collect=rudp_send --toggle-collect=rudp_send_batch --toggle-collect=rudp_recv_batch --toggle-collect=rudp_flush --toggle-collect=rudp_connect} --callgrind-out-file=$o"
srv="$b/bench/rudp-bench server --column rudp-send --bind 127.0.0.1:$port --mtu 1400 --conns $n --workers 1 $*"
cli="$b/bench/rudp-bench client --column rudp-send --connect 127.0.0.1:$port --workload many --size 800 --connections $n --window 16 --warmup 20 --samples 0 --messages $m --mtu 1400 --stall-ms 120000 $*"
if [ "$side" = server ]; then
	$vg $srv > $o.server.txt 2>&1 &
	sp=$!
	sleep 3
	$cli > $o.client.txt 2>&1
	sleep 1
	kill -INT $sp 2>/dev/null; sleep 2; kill $sp 2>/dev/null; wait $sp 2>/dev/null
else
	$srv >/dev/null 2>&1 &
	sp=$!
	sleep 0.5
	$vg $cli > $o.client.txt 2>&1
	kill $sp 2>/dev/null; wait $sp 2>/dev/null
fi
callgrind_annotate $o 2>/dev/null | grep -m1 TOTALS | awk -v m=$m '{gsub(",","",$1); printf "%.0f instr/msg\n", $1/m}'
