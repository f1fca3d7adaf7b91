#!/usr/bin/env bash
# Installs what is missing, builds librudp with warnings as errors, and runs
# every test suite (wire, conn, host, interop).
#   scripts/test.sh               the normal build in build/
#   scripts/test.sh --sanitize    an ASan+UBSan build (clang) in build-asan/; it also
#                                 runs the libFuzzer targets (suite fuzz) for 15 s each
#   scripts/test.sh --valgrind    the protocol core (suites wire and conn), the host and
#                                 its I/O layer (suites host and io, fewer messages, on
#                                 recvmmsg/sendmmsg: the io_uring runs skip) and the
#                                 integration tests over real sockets (suite hostile,
#                                 without the soaks and scripts) under valgrind memcheck,
#                                 zero errors and zero leaks, in build-valgrind/
#   scripts/test.sh --no-policy   a build without the send-policy module (-Dsend_policy=false)
#                                 in build-nopolicy/: everything compiles, and every suite
#                                 but interop passes (policy checks "not supported"; the
#                                 bench scripts expect only the columns that build has)
#   scripts/test.sh --no-uring    a build without liburing (-Dio_uring=disabled) in
#                                 build-nouring/: everything compiles, and the wire, conn,
#                                 io and host suites pass on recvmmsg/sendmmsg alone
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-normal}
if [ "$mode" = --sanitize ]; then
	RUDP_WITH_CLANG=1 scripts/install-deps.sh
elif [ "$mode" = --valgrind ]; then
	RUDP_WITH_VALGRIND=1 scripts/install-deps.sh
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
elif [ "$mode" = --valgrind ]; then
	dir=build-valgrind
	[ -d "$dir" ] || meson setup "$dir" -Dbuildtype=debug -Dwerror=true >/dev/null
	meson compile -C "$dir"
	meson test -C "$dir" --setup valgrind --suite wire --suite conn --suite host --suite io \
		--suite hostile --no-suite soak --no-suite script --print-errorlogs
	exit 0
elif [ "$mode" = --no-policy ]; then
	dir=build-nopolicy
	[ -d "$dir" ] || meson setup "$dir" -Dbuildtype=debugoptimized -Dwerror=true -Dsend_policy=false \
		-Dinterop=disabled >/dev/null
	meson compile -C "$dir"
	# Every suite, so that no test comes to assume the module unnoticed.
	meson test -C "$dir" --print-errorlogs
	exit 0
elif [ "$mode" = --no-uring ]; then
	dir=build-nouring
	[ -d "$dir" ] || meson setup "$dir" -Dbuildtype=debugoptimized -Dwerror=true -Dio_uring=disabled \
		-Dinterop=disabled >/dev/null
	meson compile -C "$dir"
	meson test -C "$dir" --suite wire --suite conn --suite io --suite host --print-errorlogs
	exit 0
else
	dir=build
	[ -d "$dir" ] || meson setup "$dir" -Dbuildtype=debugoptimized -Dwerror=true >/dev/null
fi
meson compile -C "$dir"
meson test -C "$dir" --print-errorlogs
