#!/usr/bin/env bash
# Checks the layering of src/ (wire, conn, policy, host, io): each rule
# names a directory and a pattern none of its C files may contain (a grep
# -E pattern, matched line by line). A new rule is one more `rule` line.
#
#   scripts/check-layers.sh [ROOT]            0 when no rule is broken
#   scripts/check-layers.sh --every-rule DIR  0 when every rule is broken
#                                             in DIR (the rules' own test,
#                                             tests/layers/violations)
# Run by `meson test --suite layers`.
set -euo pipefail

every_rule=0
if [ "${1:-}" = --every-rule ]; then
	every_rule=1
	shift
fi
root=${1:-$(dirname "$0")/..}
inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*"'

broken=0
rules=0
# rule WHAT DIR PATTERN
rule() {
	local what=$1 dir=$2 pattern=$3 hits
	rules=$((rules + 1))
	hits=$(cd "$root" && grep -EnH -- "$pattern" "$dir"/*.[ch] 2>/dev/null || true)
	if [ -n "$hits" ]; then
		broken=$((broken + 1))
		[ "$every_rule" = 1 ] && return
		echo "layers: $what:"
		printf '%s\n' "$hits" | sed 's/^/  /'
	elif [ "$every_rule" = 1 ]; then
		echo "layers: the rule \"$what\" found nothing in $root"
	fi
}

# The conn knows nothing of the send policy above it.
rule "conn includes a policy header" src/conn "${inc}policy/"
rule "conn tests RUDP_HAVE_SEND_POLICY" src/conn 'RUDP_HAVE_SEND_POLICY'
# The policy sees the conn through conn.h only.
rule "policy includes conn_internal.h" src/policy "${inc}(conn/)?conn_internal\\.h\""
# No layer includes the headers of the layers above it.
rule "wire includes an upper layer's header" src/wire "${inc}(conn|policy|host|io)/"
rule "conn includes a host or io header" src/conn "${inc}(host|io)/"
rule "policy includes a host or io header" src/policy "${inc}(host|io)/"
rule "io includes a conn, policy or host header" src/io "${inc}(conn|policy|host)/"

if [ "$every_rule" = 1 ]; then
	[ "$broken" = "$rules" ]
	exit
fi
[ "$broken" = 0 ]
