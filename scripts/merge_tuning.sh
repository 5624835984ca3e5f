#!/bin/sh
# merge_tuning.sh OUT ABOUT FILE...: the tuning files FILE... as one, OUT (docs/tuning.md): the
# header, ABOUT as a comment, then each file's entries under a comment naming it, the first file's
# line winning where two files share a key. scripts/gpu/tune.sh and scripts/tune_amd.sh merge the
# files of several models with it.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 OUT ABOUT FILE..." >&2; exit 2; }
out=$1 about=$2
shift 2
{
	echo "netc-tuning 1"
	echo "# $about"
	for f in "$@"; do
		echo "# from $(basename "$f")"
		grep -v '^#' "$f" | grep -v '^netc-tuning'
	done
} | awk -F ' : ' '/^#/ || /^netc-tuning/ || !seen[$1]++' > "$out"
