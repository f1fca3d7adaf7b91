# shellcheck shell=sh
# The shared start of the bench test scripts, sourced by each: a temporary
# folder ($tmp), removed on exit together with the server the script
# started ($server, when it set one), and the pass and failure counts that
# ok and fail keep. Each script prints its own verdict from them.
tmp=$(mktemp -d)
server=
harness_cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap harness_cleanup EXIT INT TERM
fails=0
passes=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
ok() {
	echo "ok: $*"
	passes=$((passes + 1))
}
# The columns this rudp-bench was built with (the rest read "n/a" in --list).
built_columns() { # bench
	"$1" --list | awk '$0 !~ /n\/a/ {print $1}'
}
