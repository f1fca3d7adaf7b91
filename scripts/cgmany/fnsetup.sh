#!/bin/bash
# fnsetup.sh A20 B60: per-function self instructions of the fixed part (the 20k run minus its messages at the marginal rate), in thousands
. "$(dirname "$0")/fnlist.sh"
join -t$'\t' -a1 -a2 -e0 -o 0,1.2,2.2 <(fn_self $1 a | sort -t$'\t' -k1,1) <(fn_self $2 b | sort -t$'\t' -k1,1) |
	awk -F'\t' '{d=($2-($3-$2)/2)/1000; if (d>100 || d<-100) printf "%8.0f %s\n", d, $1}' | sort -rn
