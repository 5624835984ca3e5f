#!/bin/sh
# check_ptx.sh FILE ARCH: ptxas assembles the PTX for ARCH, where ptxas is installed (PATH, then
# /usr/local/cuda/bin); without it the check is skipped with a message.
file=$1 arch=$2
[ -s "$file" ] || { echo "check_ptx: $file: missing or empty" >&2; exit 1; }
grep -q "^\.target $arch" "$file" || { echo "check_ptx: $file: no '.target $arch'" >&2; exit 1; }
ptxas=$(command -v ptxas || true)
[ -z "$ptxas" ] && [ -x /usr/local/cuda/bin/ptxas ] && ptxas=/usr/local/cuda/bin/ptxas
if [ -z "$ptxas" ]; then
	echo "check_ptx: ptxas not found: skipped assembling $file"
	exit 0
fi
"$ptxas" -arch="$arch" "$file" -o "$file.cubin" || { echo "check_ptx: ptxas rejects $file" >&2; exit 1; }
echo "$file: ptxas -arch=$arch accepts it"
