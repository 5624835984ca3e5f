#!/bin/sh
# check_ptx.sh FILE ARCH: the PTX declares ARCH (or its architecture-specific form, as sm_90a for
# sm_90: wgmma) and ptxas assembles it for that, where ptxas is installed (PATH, then
# /usr/local/cuda/bin) without serializing wgmma (its performance advisory C7514 and kin: the
# pipeline of codegen/gemm_gpu.c lost); without ptxas the check is skipped with a message.
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
out=$("$ptxas" -arch="$target" "$file" -o "$file.cubin" 2>&1) || { echo "$out" >&2; echo "check_ptx: ptxas rejects $file" >&2; exit 1; }
case "$out" in
*"wgmma.mma_async instructions are serialized"*)
	echo "$out" >&2
	echo "check_ptx: ptxas serializes wgmma in $file" >&2
	exit 1
	;;
esac
echo "$file: ptxas -arch=$target accepts it"
