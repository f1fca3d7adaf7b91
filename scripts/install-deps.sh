#!/usr/bin/env bash
# Installs the Debian packages librudp needs to build, test and benchmark,
# skipping what is already there. Safe to run again. Needs root (or sudo).
set -euo pipefail

packages=(gcc pkg-config meson ninja-build liburing-dev libcmocka-dev libxxhash-dev
	nftables iproute2 python3)
# rudp-bench baselines: ENet, quic-go (built offline with Debian's Go) and charts.
packages+=(libenet-dev golang-go golang-github-lucas-clemente-quic-go-dev gnuplot-nox)
# clang and its runtime are used by the sanitizer and fuzz builds.
if [ "${RUDP_WITH_CLANG:-0}" = 1 ]; then
	packages+=(clang libclang-rt-14-dev)
fi
# valgrind runs the memcheck pass (scripts/test.sh --valgrind).
if [ "${RUDP_WITH_VALGRIND:-0}" = 1 ]; then
	packages+=(valgrind)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node and npm run the interop peers; any node >= 18 will do, wherever it came from.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	missing+=(nodejs npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "installing: ${missing[*]}" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
