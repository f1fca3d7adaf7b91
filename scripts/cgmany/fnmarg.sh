#!/bin/bash
# fnmarg.sh A B N: per-function self instructions (B - A) / N, i.e. the marginal
# cost per message between a short run A and a long run B that differ by N messages.
. "$(dirname "$0")/fnlist.sh"
join -t$'\t' -a1 -a2 -e0 -o 0,1.2,2.2 <(fn_self $1 a | sort -t$'\t' -k1,1) <(fn_self $2 b | sort -t$'\t' -k1,1) |
	awk -F'\t' -v n=$3 '{d=($3-$2)/n; if (d>5 || d<-5) printf "%8.1f %s\n", d, $1}' | sort -rn
