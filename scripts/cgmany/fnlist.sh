#!/bin/bash
# fnlist.sh PROFILE TAG: sourced by fnmarg.sh and fnsetup.sh; fn_self PROFILE TAG prints
# "function<TAB>self instructions" for every function of a callgrind profile
# (INCL=yes: inclusive), using /tmp/fnl.TAG.* as scratch.
fn_self() {
	callgrind_annotate --auto=no --inclusive=${INCL:-no} --threshold=100 "$1" 2>/dev/null |
		grep -E "^ *[0-9,]+ \(" > /tmp/fnl.$2.lines
	sed -E 's/^ *([0-9,]+) \([^)]*\) +\*? *//; s/ \[.*//; s/^.*\.\.\///' /tmp/fnl.$2.lines > /tmp/fnl.$2.raw
	sed -E 's/^ *([0-9,]+) .*/\1/; s/,//g' /tmp/fnl.$2.lines > /tmp/fnl.$2.num
	paste -d'\t' /tmp/fnl.$2.raw /tmp/fnl.$2.num
}
