#!/usr/bin/env bash
# librudp installed, as a user gets it: `meson install` of the build into a
# temporary directory, then
#   (a) librudp.so has the soname of docs/api.md ("ABI and soname") and
#       exports exactly the functions include/rudp.h marks
#       RUDP_API: no internal symbol, no io_uring_* of a linked-in liburing;
#   (b) the README's example (its ```c block, extracted here so the two
#       cannot drift), built with `pkg-config --cflags --libs librudp`,
#       gets its echo from rudp-echo server;
#   (c) so does the example linked with librudp.a and the flags of
#       `pkg-config --static --libs librudp`;
# and librudp.pc requires liburing (privately) exactly when the library
# was built with it, and nothing else.
#   install.sh SOURCE_ROOT BUILD_ROOT RUDP_ECHO
# CC is the build's compiler, RUDP_EXTRA_FLAGS what the build's objects
# need at link time (sanitizers, coverage). Exits 77 (meson's "skip") when
# a tool it needs is missing.
set -euo pipefail
src=$1 build=$2 echo_bin=$3
cc=${CC:-cc}
read -r -a extra <<<"${RUDP_EXTRA_FLAGS:-}"

for tool in meson pkg-config nm readelf ldd; do
	command -v "$tool" >/dev/null || { echo "skipped: $tool not found" >&2; exit 77; }
done

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

tmp=$(mktemp -d)
srv=
cleanup() {
	[ -z "$srv" ] || kill "$srv" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# --no-rebuild: meson test has built everything, and a ninja run here would
# race the other tests.
root=$tmp/root
meson install -C "$build" --no-rebuild --quiet --destdir "$root" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "meson install"; }

# The only file of its name under the staging root, or fail.
installed() {
	local found
	found=$(find "$root" -name "$1")
	if [ -z "$found" ] || [ "$(wc -l <<<"$found")" -ne 1 ]; then
		fail "installed $1: '${found:-none}'"
	fi
	echo "$found"
}
header=$(installed rudp.h)
version_h=$(installed rudp_version.h)
shared=$(installed librudp.so)
installed librudp.a >/dev/null
pc=$(installed librudp.pc)
libdir=$(dirname "$shared")

# (a) The exports against the header.
grep -q '^RUDP_API ' "$header" || fail "no RUDP_API declaration in $header"
api=$(sed -n 's/^RUDP_API [^(]*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$header" | sort -u)
[ "$(wc -l <<<"$api")" -eq "$(grep -c '^RUDP_API ' "$header")" ] ||
	fail "could not read a name from every RUDP_API declaration in $header"
exported=$(nm -D --defined-only "$shared" | awk '{ sub(/@.*/, "", $NF); print $NF }' | sort -u)
missing=$(comm -23 <(echo "$api") <(echo "$exported"))
unexpected=$(comm -13 <(echo "$api") <(echo "$exported"))
[ -z "$missing" ] || fail "librudp.so does not export: ${missing//$'\n'/ }"
[ -z "$unexpected" ] || fail "librudp.so exports what is not RUDP_API: ${unexpected//$'\n'/ }"
echo "ok: librudp.so exports the $(wc -l <<<"$api") RUDP_API functions and nothing else"

# pkg-config reads the staged file as if installed (the sysroot is prefixed
# to its -I and -L paths), and finds librudp there first.
PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
export PKG_CONFIG_SYSROOT_DIR=$root
[ "$(pkg-config --path librudp)" = "$pc" ] || fail "pkg-config finds $(pkg-config --path librudp), not $pc"
public=$(pkg-config --print-requires librudp)
private=$(pkg-config --print-requires-private librudp | awk 'NF { printf "%s%s", sep, $1; sep = " " }')
[ -z "$public" ] || fail "librudp.pc requires $public (Requires:)"
want=
if grep -q '^#define RUDP_HAVE_IO_URING 1' "$version_h"; then
	want=liburing
fi
[ "$private" = "$want" ] || fail "librudp.pc's Requires.private is '$private', not '$want'"
echo "ok: librudp.pc requires ${private:-nothing} (privately)"

awk '/^## Using it/ { section = 1 } section && /^```c$/ { code = 1; next } code && /^```$/ { exit } code' \
	"$src/README.md" >"$tmp/hello.c"
grep -q 'int main' "$tmp/hello.c" || fail "no \`\`\`c block with a main() under \"## Using it\" in README.md"

"$echo_bin" server --bind 127.0.0.1:0 >"$tmp/server.log" 2>&1 &
srv=$!
for _ in $(seq 100); do grep -q '^listening on' "$tmp/server.log" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on \([^ ]*\) .*/\1/p' "$tmp/server.log")
[ -n "$addr" ] || { cat "$tmp/server.log"; fail "rudp-echo server did not start"; }

# run NAME [ENV...]: runs the example against the server; it must print the echo.
run() {
	local out rc=0
	out=$(env "${@:2}" "$tmp/$1" "$addr" 2>&1) || rc=$?
	[ "$rc" -eq 0 ] || fail "$1 exited with $rc: $out"
	[[ $out == *hello* ]] || fail "$1 printed no echo: $out"
	echo "ok: $1: $out"
}

# (b) Shared: `-lrudp` must resolve to the staged librudp.so.
read -r -a flags <<<"$(pkg-config --cflags --libs librudp)"
"$cc" -Wall -Wextra -Werror "${extra[@]}" -o "$tmp/hello-shared" "$tmp/hello.c" "${flags[@]}" ||
	fail "the README example does not build with: ${flags[*]}"
deps=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/hello-shared")
# The soname carries major.minor before 1.0 and the major alone after
# (docs/api.md, "ABI and soname").
major=$(sed -n 's/^#define RUDP_VERSION_MAJOR \([0-9]*\)$/\1/p' "$version_h")
minor=$(sed -n 's/^#define RUDP_VERSION_MINOR \([0-9]*\)$/\1/p' "$version_h")
[ -n "$major" ] && [ -n "$minor" ] || fail "no version numbers in $version_h"
soname=librudp.so.$major
[ "$major" != 0 ] || soname=$soname.$minor
[[ $(readelf -d "$shared") == *"Library soname: [$soname]"* ]] || fail "librudp.so's soname is not $soname"
[[ $deps == *"$soname => $libdir/"* ]] || fail "hello-shared does not load the staged $soname: $deps"
run hello-shared "LD_LIBRARY_PATH=$libdir"

# (c) Static: librudp.a with what pkg-config --static adds (liburing, -pthread).
flags=()
for flag in $(pkg-config --cflags --static --libs librudp); do
	if [ "$flag" = -lrudp ]; then
		flags+=("-Wl,-Bstatic" -lrudp "-Wl,-Bdynamic")
	else
		flags+=("$flag")
	fi
done
"$cc" -Wall -Wextra -Werror "${extra[@]}" -o "$tmp/hello-static" "$tmp/hello.c" "${flags[@]}" ||
	fail "the README example does not link statically with: ${flags[*]}"
[[ $(readelf -d "$tmp/hello-static") != *librudp.so* ]] || fail "hello-static needs librudp.so"
run hello-static
