#!/usr/bin/env bash
# Installs what is missing, builds librudp with warnings as errors, and runs
# every test suite (wire, conn, host, interop).
#   scripts/test.sh               the normal build in build/
#   scripts/test.sh --sanitize    an ASan+UBSan build (clang) in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-normal}
if [ "$mode" = --sanitize ]; then
	RUDP_WITH_CLANG=1 scripts/install-deps.sh
else
	scripts/install-deps.sh
fi

# The interop peers come from npm, pinned by the lock file.
(cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)

if [ "$mode" = --sanitize ]; then
	dir=build-asan
	[ -d "$dir" ] || CC=clang meson setup "$dir" -Dbuildtype=debug -Dwerror=true \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
	dir=build
	[ -d "$dir" ] || meson setup "$dir" -Dbuildtype=debugoptimized -Dwerror=true >/dev/null
fi
meson compile -C "$dir"
meson test -C "$dir" --print-errorlogs
