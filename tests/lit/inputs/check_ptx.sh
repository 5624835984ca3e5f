#!/bin/sh
# check_ptx.sh FILE ARCH: the PTX declares ARCH (or its architecture-specific form, as sm_90a for
# sm_90: wgmma) and ptxas assembles it for that, where ptxas is installed (PATH, then
# /usr/local/cuda/bin); without it the check is skipped with a message.
file=$1 arch=$2
[ -s "$file" ] || { echo "check_ptx: $file: missing or empty" >&2; exit 1; }
target=$(sed -n 's/^\.target \([a-z0-9_]*\).*/\1/p' "$file" | head -1)
[ "$target" = "$arch" ] || [ "$target" = "${arch}a" ] || { echo "check_ptx: $file: no '.target $arch'" >&2; exit 1; }
ptxas=$(command -v ptxas || true)
[ -z "$ptxas" ] && [ -x /usr/local/cuda/bin/ptxas ] && ptxas=/usr/local/cuda/bin/ptxas
if [ -z "$ptxas" ]; then
	echo "check_ptx: ptxas not found: skipped assembling $file"
	exit 0
fi
"$ptxas" -arch="$target" "$file" -o "$file.cubin" || { echo "check_ptx: ptxas rejects $file" >&2; exit 1; }
echo "$file: ptxas -arch=$target accepts it"
