#!/bin/sh
# Proves rudp-bench --resume on the smoke plan (and, on its first run, that
# librudp runs carry their client's resend counts):
#  1. resuming from a complete folder copies every run and makes none, and
#     the new runs.json holds the same runs;
#  2. from a copy with one run removed and one marked unverified, exactly
#     those two are made again and the set is complete;
#  3. a runs.json from another commit is refused with exit 2, and so is
#     one made with another --wait-spin-us or --cc (meta says which it was), and
#     out-of-range --wait-spin-us values are refused by both modes;
#  4. a librudp run whose resend counts are negative or not numbers is not
#     copied but made again, and every other run is copied as it was.
# The plan holds only the columns this rudp-bench was built with (a
# -Dsend_policy=false build has no policy columns); the checks ask it
# with --list which those are.
#   resume.sh PATH/TO/rudp-bench
set -u
bench=$1
. "$(dirname "$0")/harness.sh"
# The columns built here: the rest read "n/a" in --list and make no runs.
built=$(built_columns "$bench")
is_built() { # column
	echo "$built" | grep -qx "$1"
}
# The bench, given the arguments after the first three, refuses them: exit
# 2, the message in its output (the log) and no run started.
refused() { # what message log bench-args...
	what=$1 msg=$2 log=$3
	shift 3
	"$bench" "$@" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "$msg" "$log" && ! grep -q '^\[[0-9]*/' "$log"; then
		ok "$what refused (exit 2)"
	else
		fail "$what: exit $rc:"
		cat "$log"
	fi
}

if ! "$bench" --smoke --json "$tmp/A.json" --out "$tmp/D1" >"$tmp/1.log" 2>&1; then
	echo "FAIL: the first smoke run failed:"
	cat "$tmp/1.log"
	exit 1
fi
d1=$(ls -d "$tmp"/D1/*_*)
total=$(grep -c '"verified": true' "$tmp/A.json")
[ "$total" -gt 0 ] || fail "the first smoke run verified no run"

# 0. librudp runs say what their client resent; other columns do not
if grep -q '"column": "rudp-send", .*"client_resent": [0-9][0-9]*, "client_dups": [0-9][0-9]*, ' "$tmp/A.json" &&
	! grep '"column": "tcp", ' "$tmp/A.json" | grep -q client_resent; then
	ok "librudp runs carry client_resent and client_dups, TCP runs do not"
else
	fail "client_resent / client_dups missing from librudp runs (or present in TCP's)"
fi
if grep -q '"column": "rudp-send", .*"client_resent_nack": [0-9]*, "client_resent_inferred": [0-9]*, "client_resent_probe": [0-9]*, "client_resent_timeout": [0-9]*, "client_resent_spurious": [0-9]*, ' "$tmp/A.json"; then
	ok "librudp runs carry their resends by cause and the unneeded ones"
else
	fail "client_resent_{nack,inferred,probe,timeout,spurious} missing from librudp runs"
fi

# 0b. and the report shows them, for librudp columns only
if grep -A3 '^librudp resends, per run' "$d1/report.md" | grep -q '^| case | rudp (send) |' &&
	! grep -A3 '^librudp resends, per run' "$d1/report.md" | grep -q 'TCP'; then
	ok "report.md has the librudp resend table"
else
	fail "report.md lacks the librudp resend table (or it names TCP):"
	cat "$d1/report.md"
fi

# 1. everything copied
if "$bench" --smoke --resume "$d1" --json "$tmp/B.json" --out "$tmp/D2" >"$tmp/2.log" 2>&1 &&
	grep -q "^resumed from $d1: $total of $total runs copied, 0 to run$" "$tmp/2.log" &&
	! grep -q '^\[[0-9]*/' "$tmp/2.log" &&
	grep -q "\"resumed_runs\": $total" "$tmp/B.json" &&
	[ "$(grep -c '"verified": true' "$tmp/B.json")" -eq "$total" ] &&
	grep '"column"' "$tmp/A.json" >"$tmp/a.runs" && grep '"column"' "$tmp/B.json" >"$tmp/b.runs" &&
	cmp -s "$tmp/a.runs" "$tmp/b.runs" &&
	grep -q "^Resumed from $d1: $total verified runs copied" "$(ls -d "$tmp"/D2/*_*)/report.md"; then
	ok "--resume of a complete folder: $total of $total runs copied, none made"
else
	fail "--resume of a complete folder:"
	cat "$tmp/2.log"
fi

# 2. one run absent, one unverified: those two are made
mkdir "$tmp/C"
sed -e '/"column": "tcp", "workload": "many"/d' \
	-e '/"column": "raw-udp", "workload": "single"/s/"verified": true/"verified": false/' \
	"$d1/runs.json" >"$tmp/C/runs.json"
if "$bench" --smoke --resume "$tmp/C" --json "$tmp/C.json" >"$tmp/3.log" 2>&1 &&
	grep -q "^resumed from $tmp/C: $((total - 2)) of $total runs copied, 2 to run$" "$tmp/3.log" &&
	[ "$(grep -c '^\[[0-9]*/2\]' "$tmp/3.log")" -eq 2 ] &&
	grep -q '^\[[0-9]/2\] many .* · tcp · ' "$tmp/3.log" &&
	grep -q '^\[[0-9]/2\] single .* · raw-udp · ' "$tmp/3.log" &&
	[ "$(grep -c '"verified": true' "$tmp/C.json")" -eq "$total" ]; then
	ok "--resume with one run absent and one unverified: exactly those 2 made, $total verified"
else
	fail "--resume with one run absent and one unverified:"
	cat "$tmp/3.log"
fi

# 3. another commit
mkdir "$tmp/E"
sed 's/"commit": "[^"]*"/"commit": "0000000000"/' "$d1/runs.json" >"$tmp/E/runs.json"
refused "--resume of another commit's folder" "made by another commit" "$tmp/4.log" --smoke --resume "$tmp/E"

# 3b. another --wait-spin-us: the meta says it, and resuming across it is refused
if grep -q '"meta": {.*"wait_spin_us": "default"' "$d1/runs.json"; then
	ok "runs.json meta names librudp's default watch"
else
	fail "runs.json meta lacks \"wait_spin_us\": \"default\""
fi
refused "--resume with another --wait-spin-us" "made with another --wait-spin-us" "$tmp/4b.log" \
	--smoke --wait-spin-us 0 --resume "$d1"

# 3b'. another --cc: the meta names the congestion control the rudp
# columns ran with (librudp's default resolved), and resuming across it is refused
cc_made=$(sed -n 's/.*"meta": {.*"congestion_control": "\([a-z]*\)".*/\1/p' "$d1/runs.json")
case "$cc_made" in
none | aimd | rate) ok "runs.json meta names the congestion control ($cc_made)" ;;
*) fail "runs.json meta lacks \"congestion_control\" (got '$cc_made')" ;;
esac
cc_other=none
[ "$cc_made" = none ] && cc_other=aimd
refused "--resume with another --cc" "made with another congestion control" "$tmp/4cc.log" \
	--smoke --cc "$cc_other" --resume "$d1"

# 3c. bad --wait-spin-us values are refused before anything runs
for bad in 1001 -1 x ""; do
	"$bench" --smoke --wait-spin-us "$bad" --out "$tmp/bad" >"$tmp/4c.log" 2>&1
	rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "--wait-spin-us wants 0..1000" "$tmp/4c.log" && [ ! -d "$tmp/bad" ]; then
		ok "--smoke --wait-spin-us '$bad' refused (exit 2)"
	else
		fail "--smoke --wait-spin-us '$bad': exit $rc:"
		cat "$tmp/4c.log"
	fi
	"$bench" client --column rudp-send --connect 127.0.0.1:9 --wait-spin-us "$bad" >"$tmp/4c.log" 2>&1
	rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "bad value for --wait-spin-us" "$tmp/4c.log"; then
		ok "client --wait-spin-us '$bad' refused (exit 2)"
	else
		fail "client --wait-spin-us '$bad': exit $rc:"
		cat "$tmp/4c.log"
	fi
done

# same_runs_but A B PATTERN: the runs of A and B not matching PATTERN are
# the same lines in the same order (a trailing comma aside), and there is
# at least one
same_runs_but() {
	grep '"column"' "$1" | grep -v "$3" | sed 's/,$//' >"$tmp/same.a"
	grep '"column"' "$2" | grep -v "$3" | sed 's/,$//' >"$tmp/same.b"
	[ -s "$tmp/same.a" ] && cmp -s "$tmp/same.a" "$tmp/same.b"
}

# 4. bad resend counts: the run is made again, not copied; every other
# run is copied as it was, librudp runs with their resend causes
mkdir "$tmp/F"
sed -e '/"column": "rudp-send", "workload": "single"/s/"client_resent": [0-9]*/"client_resent": -5/' \
	-e '/"column": "rudp-batch", "workload": "single"/s/"client_dups": [0-9]*/"client_dups": "many"/' \
	-e '/"column": "rudp-send", "workload": "many"/s/"client_resent_spurious": [0-9]*/"client_resent_spurious": -5/' \
	-e '/"column": "rudp-batch", "workload": "many"/s/"client_resent_probe": [0-9]*/"client_resent_probe": "many"/' \
	"$d1/runs.json" >"$tmp/F/runs.json"
bad='"client_resent": -5\|"client_dups": "many"\|"client_resent_spurious": -5\|"client_resent_probe": "many"'
if [ "$(grep -c "$bad" "$tmp/F/runs.json")" -eq 4 ] &&
	"$bench" --smoke --resume "$tmp/F" --json "$tmp/F.json" >"$tmp/5.log" 2>&1 &&
	grep -q "^resumed from $tmp/F: $((total - 4)) of $total runs copied, 4 to run$" "$tmp/5.log" &&
	grep -q '^\[[0-9]/4\] single .* · rudp-send · ' "$tmp/5.log" &&
	grep -q '^\[[0-9]/4\] single .* · rudp-batch · ' "$tmp/5.log" &&
	grep -q '^\[[0-9]/4\] many .* · rudp-send · ' "$tmp/5.log" &&
	grep -q '^\[[0-9]/4\] many .* · rudp-batch · ' "$tmp/5.log" &&
	! grep -q "$bad" "$tmp/F.json" &&
	same_runs_but "$tmp/A.json" "$tmp/F.json" \
		'"column": "rudp-\(send\|batch\)", "workload": "\(single\|many\)"' &&
	{ ! is_built rudp-send-policy ||
		grep -q '"column": "rudp-send-policy", "workload": "many", .*"client_resent_spurious": [0-9]' "$tmp/F.json"; }; then
	ok "--resume with negative and non-numeric resend counts: those 4 runs made again, the others copied as they were"
else
	fail "--resume with bad resend counts:"
	cat "$tmp/5.log"
fi

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$passes" -gt 0 ]
