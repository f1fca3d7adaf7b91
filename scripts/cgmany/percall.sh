#!/bin/bash
# percall.sh PROFILE FN...: inclusive instructions per call of each function (calls summed over its callers)
f=$1; shift
callgrind_annotate --auto=no --inclusive=yes --tree=caller $f 2>/dev/null > /tmp/percall.txt
for fn in "$@"; do
awk -v fn="$fn" '
$0 ~ "< .*:"fn" " {next}
$0 ~ "\\*  .*:"fn" " {x=$1; gsub(",","",x); tot=x; found=1; exit}
{ if ($0 ~ /^ *[0-9,]+ .*< /) { for(i=1;i<=NF;i++) if ($i ~ /^\([0-9,]+x\)$/) { c=$i; gsub(/[(x),]/,"",c); buf+=c } } else if ($0 ~ /^$/) buf=0 }
END { if (found) printf "%-32s %12d instr %9d calls %7.1f per call\n", fn, tot, buf, buf?tot/buf:0 }' /tmp/percall.txt
done
