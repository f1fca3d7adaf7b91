#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from its committed seeds:
#   run_fuzz.sh TARGET_BINARY SEED_DIR SECONDS
# New inputs go to a scratch corpus (the committed seeds are never written);
# a crash leaves its reproducer in the scratch directory, printed on failure.
set -euo pipefail
bin=$1
seeds=$2
secs=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
rc=0
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" "$seeds" 2>"$work/log" || rc=$?
grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$work/log" || true
if [ $rc -ne 0 ]; then
	tail -n 60 "$work/log"
	for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
		[ -e "$f" ] || continue
		echo "reproducer $f:"
		od -An -tx1 "$f" | head -n 40
	done
fi
exit $rc
