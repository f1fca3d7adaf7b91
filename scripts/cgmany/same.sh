#!/bin/bash
# same.sh BUILD: md5 of the task's behaviour outputs (sim_bench runs, test_cc_rate, test_conn_bottleneck)
b=$1; t=$b/tests/conn
{
$t/sim_bench cc=2 n=10000 delay=5000 | md5sum
$t/sim_bench cc=2 loss=0 delay=10000 tx=0 rate=625000 qms=30 n=6000 size=1000 outstanding=1024 game_hz=60 jitter=300 seed=2 | md5sum
$t/sim_bench cc=2 cpu=3 tx=0 loss=0 n=20000 | md5sum
$t/sim_bench cc=0 loss=1 | md5sum
$t/test_cc_rate 2>&1 | md5sum
$t/test_conn_bottleneck 2>&1 | md5sum
} 2>&1
