#!/bin/bash
# marg.sh SIDE BUILD TAG [RUNS] [extra]: marginal instr/msg between 20k and 60k message runs, RUNS pairs
side=$1; b=$2; t=$3; r=${4:-3}; shift 4
for i in $(seq $r); do
	a=$("$(dirname "$0")"/cgmany.sh $side $b /tmp/mg-$t-$i-20 1024 20000 "$@" | awk '{print $1}')
	c=$("$(dirname "$0")"/cgmany.sh $side $b /tmp/mg-$t-$i-60 1024 60000 "$@" | awk '{print $1}')
	echo "$t run$i: 20k $a 60k $c marginal $(( (c*60000 - a*20000) / 40000 ))"
done
