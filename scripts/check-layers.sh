#!/usr/bin/env bash
# Checks the layering of src/ (wire, conn, policy, host, io): each rule
# names a directory and a pattern none of its C files may contain (a grep
# -E pattern, matched line by line). A new rule is one more `rule` line.
#
# Inside src/conn, the parts (each owning a struct: sendq, acktr, loss, cc,
# recv, reassembly, rtt) call no other file of src/conn but the declared
# leaves, and no two files call each other; the orchestrator files (conn.c,
# conn_*.c) are the only ones that call across the parts. These rules read
# the symbols of the built objects (nm -A -P on BUILD/librudp_core.a's
# src/conn members), so a call through a macro or a header counts too, and
# a static inline helper in a part's header does not.
#
#   scripts/check-layers.sh [ROOT [BUILD]]    0 when no rule is broken; the
#                                             symbol rules run when BUILD
#                                             is given: the meson build dir,
#                                             or a file of nm -A -P output
#   scripts/check-layers.sh --every-rule DIR  0 when every rule is broken
#                                             in DIR (the rules' own test,
#                                             tests/layers/violations; the
#                                             symbol rules read its
#                                             conn-objects.nm)
# Run by `meson test --suite layers`.
set -euo pipefail

every_rule=0
if [ "${1:-}" = --every-rule ]; then
	every_rule=1
	shift
fi
root=${1:-$(dirname "$0")/..}
build=${2:-}
inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*"'

broken=0
rules=0
# report WHAT HITS: one rule checked, broken when HITS (its findings, a
# line each) is not empty; they are printed, except with --every-rule,
# which wants every rule broken and says which one was not.
report() {
	local what=$1 hits=$2
	rules=$((rules + 1))
	if [ -n "$hits" ]; then
		broken=$((broken + 1))
		[ "$every_rule" = 1 ] && return
		echo "layers: $what:"
		printf '%s\n' "$hits" | sed 's/^/  /'
	elif [ "$every_rule" = 1 ]; then
		echo "layers: the rule \"$what\" found nothing in $root"
	fi
}
# rule WHAT DIR PATTERN [FILES]: FILES is a glob of the files in DIR the
# rule reads (extglob; default all its C files).
shopt -s extglob
rule() {
	local what=$1 dir=$2 pattern=$3 files=${4:-*.[ch]} hits
	# shellcheck disable=SC2086 # $files is a glob, expanded on purpose
	hits=$(cd "$root" && grep -EnH -- "$pattern" "$dir"/$files 2>/dev/null || true)
	report "$what" "$hits"
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
# The parts of the conn (all its files but conn.c, conn_*.c, conn.h and
# defaults.h) see only their own structs: not struct rudp_conn.
rule "a part of conn includes conn_internal.h" src/conn "${inc}(conn/)?conn_internal\\.h\"" '!(conn|conn_*|defaults).[ch]'

# ---- symbol rules on the objects of src/conn ----

# A leaf: a file of src/conn that parts may call, with the reason it may
# be. It must itself call no other file of src/conn (the part rule holds
# for it too).
leaves=""
leaf() {
	leaves="$leaves $1"
}
leaf sent_history.c "the sent history's storage (slots, growth): struct sent_history, which the loss and RTT engine owns and fills (loss.h)"
leaf rtt.c "the RTT estimator: a pure computation over struct rtt_estimator, which the loss and RTT engine owns and calls (loss.h)"

# Prints "FILE TYPE SYMBOL" for every symbol of the src/conn objects, FILE
# being the source (loss.c for src_conn_loss.c.o).
conn_symbols() {
	local listing
	if [ -f "$build" ]; then
		listing=$(cat "$build")
	else
		listing=$(nm -A -P "$build/librudp_core.a")
	fi
	printf '%s\n' "$listing" | awk '
		{
			file = $1
			sub(/^.*[[\/]src_conn_/, "", file)
			if (file == $1)
				next
			sub(/\.o\]?:$/, "", file)
			print file, $3, $2
		}'
}

# symbol_rules: runs both rules, as rule() does, over conn_symbols.
symbol_rules() {
	local symbols edges hits
	symbols=$(conn_symbols)
	if [ -z "$symbols" ]; then
		echo "layers: no src/conn objects found (build dir: ${build:-none})"
		broken=$((broken + 1))
		return
	fi
	# "FROM TO SYMBOL": FROM references SYMBOL, which TO defines.
	edges=$(printf '%s\n' "$symbols" | awk '
		$2 ~ /^[TDBRVW]$/ { def[$3] = $1 }
		$2 == "U" { n++; from[n] = $1; sym[n] = $3 }
		END {
			for (i = 1; i <= n; i++)
				if ((sym[i] in def) && def[sym[i]] != from[i])
					print from[i], def[sym[i]], sym[i]
		}' | sort -u)

	hits=$(printf '%s\n' "$edges" | awk -v leaves="$leaves" '
		BEGIN { split(leaves, l, " "); for (i in l) leaf[l[i]] = 1 }
		NF == 3 && $1 != "conn.c" && $1 !~ /^conn_/ && !($2 in leaf) {
			print $1 " calls " $2 " (" $3 ")"
		}')
	report "a part of src/conn calls another file of src/conn (not a declared leaf)" "$hits"

	hits=$(printf '%s\n' "$edges" | awk '
		NF == 3 { pair[$1 " " $2] = $3 }
		END {
			for (p in pair) {
				split(p, f, " ")
				if (f[1] < f[2] && ((f[2] " " f[1]) in pair))
					print f[1] " and " f[2] " (" pair[p] ", " pair[f[2] " " f[1]] ")"
			}
		}' | sort)
	report "two files of src/conn call each other" "$hits"
}

if [ "$every_rule" = 1 ] && [ -z "$build" ]; then
	build=$root/conn-objects.nm
fi
if [ -n "$build" ]; then
	symbol_rules
fi

if [ "$every_rule" = 1 ]; then
	[ "$broken" = "$rules" ]
	exit
fi
[ "$broken" = 0 ]
