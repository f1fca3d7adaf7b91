#!/bin/bash
# fnmarg.sh A B N: per-function self instructions (B - A) / N, i.e. the marginal
# cost per message between a short run A and a long run B that differ by N messages.
f() { callgrind_annotate --auto=no --inclusive=${INCL:-no} --threshold=100 "$1" 2>/dev/null | grep -E "^ *[0-9,]+ \(" | sed -E 's/^ *([0-9,]+) \([^)]*\) +\*? *//; s/ \[.*//; s/^.*\.\.\///' | awk '{print}' > /tmp/fnm.$2.raw; callgrind_annotate --auto=no --inclusive=${INCL:-no} --threshold=100 "$1" 2>/dev/null | grep -E "^ *[0-9,]+ \(" | sed -E 's/^ *([0-9,]+) .*/\1/; s/,//g' > /tmp/fnm.$2.num; paste -d'\t' /tmp/fnm.$2.raw /tmp/fnm.$2.num; }
join -t$'\t' -a1 -a2 -e0 -o 0,1.2,2.2 <(f $1 a | sort -t$'\t' -k1,1) <(f $2 b | sort -t$'\t' -k1,1) | awk -F'\t' -v n=$3 '{d=($3-$2)/n; if (d>5 || d<-5) printf "%8.1f %s\n", d, $1}' | sort -rn
