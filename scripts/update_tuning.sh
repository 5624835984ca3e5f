#!/bin/sh
# update_tuning.sh SHIPPED NEW ABOUT: NEW's entries into the tuning file SHIPPED, in place
# (docs/tuning.md): a line of SHIPPED whose key NEW has is replaced where it stands, NEW's other
# keys are appended, and ABOUT goes in as a comment after the file's notes at the top (before its
# first entry or "# from" section). For keys tuned again (scripts/gpu/tune.sh on one model, a new
# epilogue, more candidates) without reordering or dropping the rest of the shipped file, as
# scripts/merge_tuning.sh would.
set -eu
[ $# -eq 3 ] || { echo "usage: $0 SHIPPED NEW ABOUT" >&2; exit 2; }
shipped=$1 new=$2 about=$3
tmp=$(mktemp) copy=$(mktemp)
trap 'rm -f "$tmp" "$copy"' EXIT
# NEW read once (it may be a pipe), and its entries told apart by file name: an empty NEW must not
# make the shipped file's lines look like its own
cat "$new" > "$copy"
# check FILE NAME: FILE (read as NAME) starts as a tuning file does
check() {
	head -1 "$1" | grep -qx 'netc-tuning 1' || { echo "$0: $2: not a tuning file (its first line is not 'netc-tuning 1')" >&2; exit 1; }
}
check "$shipped" "$shipped"
check "$copy" "$new"
awk -F ' : ' -v about="# $about" '
	function entry(line) { return line !~ /^#/ && line !~ /^netc-tuning/ && line ~ / : / }
	FILENAME == ARGV[1] { if (entry($0) && !($1 in line)) { line[$1] = $0; order[++nkeys] = $1 } next }
	!said && FNR > 1 && ($0 !~ /^#/ || $0 ~ /^# from /) { print about; said = 1 }
	entry($0) && ($1 in line) { print line[$1]; used[$1] = 1; replaced++; next }
	{ print }
	END {
		if (!said) print about
		for (i = 1; i <= nkeys; i++) if (!(order[i] in used)) { print line[order[i]]; added++ }
		printf "%d lines replaced, %d added\n", replaced, added > "/dev/stderr"
	}' "$copy" "$shipped" > "$tmp"
cat "$tmp" > "$shipped"
