#!/bin/sh
# meson test for bench/targets: the fixture's ratios, PASS/FAIL/n/a rows and
# exit codes must stay as recorded, so the check cannot silently break.
#   targets-test.sh PYTHON bench/targets bench/targets-fixture.json bench/targets-expected.md
set -u
py=$1 targets=$2 fixture=$3 expected=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# The first line names the file path, which differs between build trees.
"$py" "$targets" --json "$fixture" >"$tmp/out"
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: exit $rc without --strict"; fail=1; }
sed 1d "$tmp/out" >"$tmp/table"
diff -u "$expected" "$tmp/table" || { echo "FAIL: table differs from $expected"; fail=1; }
"$py" "$targets" --json "$fixture" --strict >/dev/null
rc=$?
[ "$rc" -eq 1 ] || { echo "FAIL: --strict with FAIL rows exited $rc, want 1"; fail=1; }
"$py" "$targets" --json "$tmp/missing.json" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: missing file exited $rc, want 2"; fail=1; }
echo '{"meta": {}}' >"$tmp/bad.json"
"$py" "$targets" --json "$tmp/bad.json" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: file without runs exited $rc, want 2"; fail=1; }
[ "$fail" -eq 0 ] && echo "bench/targets: fixture table, --strict, missing and malformed files as expected"
exit "$fail"
