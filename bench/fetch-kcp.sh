#!/bin/sh
# Fetches the C KCP core that node-kcp 1.0.13 carries (src/kcp/ikcp.c and
# ikcp.h) with `npm pack`, checks the tarball against a pinned sha256 and
# extracts the two files into OUTDIR. Never committed: run at configure time.
# Exit 0 with the files in place, or non-zero with the reason on stderr.
#   fetch-kcp.sh OUTDIR
set -eu
out=$1
pin=a907a52c2faca034128d53890acaec49fa0e8123431f2a94308d299898cac3e0
if [ -f "$out/ikcp.c" ] && [ -f "$out/ikcp.h" ] && [ -f "$out/node-kcp.sha256" ] &&
	[ "$(cat "$out/node-kcp.sha256")" = "$pin" ]; then
	exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "npm not found" >&2; exit 1; }
mkdir -p "$out/npm"
cd "$out/npm"
rm -f node-kcp-1.0.13.tgz
if ! timeout 120 npm pack node-kcp@1.0.13 --silent >/dev/null 2>npm.log; then
	echo "npm pack node-kcp@1.0.13 failed: $(tail -n 1 npm.log)" >&2
	exit 1
fi
got=$(sha256sum node-kcp-1.0.13.tgz | cut -d' ' -f1)
if [ "$got" != "$pin" ]; then
	echo "node-kcp-1.0.13.tgz sha256 $got, expected $pin" >&2
	exit 1
fi
tar -xzf node-kcp-1.0.13.tgz package/src/kcp/ikcp.c package/src/kcp/ikcp.h
cp package/src/kcp/ikcp.c package/src/kcp/ikcp.h ..
echo "$pin" >../node-kcp.sha256
