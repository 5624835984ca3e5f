#!/bin/sh
# check_hsaco.sh FILE ARCH WAVE: FILE is an AMDGPU code object for ARCH whose every kernel runs
# WAVE-wide waves, with no undefined symbols, that llvm-objdump disassembles; it has one metadata
# note (loaders read only the first) that lists every kernel descriptor (.kd symbol) of the file.
set -e
file=$1 arch=$2 wave=$3
fail() { echo "check_hsaco: $file: $*" >&2; exit 1; }
[ -s "$file" ] || fail "missing or empty"
notes=$(llvm-readelf --notes "$file") || fail "llvm-readelf cannot read it"
echo "$notes" | grep -Eq "amdhsa.target: *'?amdgcn-amd-amdhsa--$arch('|:|\$)" ||
	fail "amdhsa.target is not $arch: $(echo "$notes" | grep amdhsa.target)"
kernels=$(echo "$notes" | grep -c '\.wavefront_size:' || true)
right=$(echo "$notes" | grep -c "\.wavefront_size: *$wave\$" || true)
[ "$kernels" -gt 0 ] || fail "no kernels in the metadata"
[ "$kernels" -eq "$right" ] || fail "$right of $kernels kernels have .wavefront_size $wave"
metadata=$(echo "$notes" | grep -c 'NT_AMDGPU_METADATA' || true)
[ "$metadata" -eq 1 ] || fail "$metadata NT_AMDGPU_METADATA notes, not 1"
descriptors=$(llvm-nm "$file" | grep -c '\.kd$' || true)
[ "$kernels" -eq "$descriptors" ] || fail "the metadata lists $kernels kernels, the file has $descriptors descriptors"
undefined=$(llvm-nm -u "$file")
[ -z "$undefined" ] || fail "undefined symbols: $undefined"
llvm-objdump -d "$file" | grep -q s_endpgm || fail "llvm-objdump finds no s_endpgm"
echo "$file: $arch, $kernels kernels, wave$wave"
