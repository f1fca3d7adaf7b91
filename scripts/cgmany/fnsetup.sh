#!/bin/bash
# fnsetup.sh A20 B60: per-function self instructions of the fixed part (the 20k run minus its messages at the marginal rate), in thousands
f() { callgrind_annotate --auto=no --inclusive=${INCL:-no} --threshold=100 "$1" 2>/dev/null | grep -E "^ *[0-9,]+ \(" | sed -E 's/^ *([0-9,]+) \([^)]*\) +\*? *//; s/ \[.*//; s/^.*\.\.\///' > /tmp/fns.$2.raw; callgrind_annotate --auto=no --inclusive=${INCL:-no} --threshold=100 "$1" 2>/dev/null | grep -E "^ *[0-9,]+ \(" | sed -E 's/^ *([0-9,]+) .*/\1/; s/,//g' > /tmp/fns.$2.num; paste -d'\t' /tmp/fns.$2.raw /tmp/fns.$2.num; }
join -t$'\t' -a1 -a2 -e0 -o 0,1.2,2.2 <(f $1 a | sort -t$'\t' -k1,1) <(f $2 b | sort -t$'\t' -k1,1) | awk -F'\t' '{d=($2-($3-$2)/2)/1000; if (d>100 || d<-100) printf "%8.0f %s\n", d, $1}' | sort -rn
