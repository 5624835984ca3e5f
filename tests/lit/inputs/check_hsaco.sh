#!/bin/sh
# check_hsaco.sh FILE ARCH WAVE: FILE is an AMDGPU code object for ARCH whose every kernel runs
# WAVE-wide waves, with no undefined symbols, that llvm-objdump disassembles.
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
undefined=$(llvm-nm -u "$file")
[ -z "$undefined" ] || fail "undefined symbols: $undefined"
llvm-objdump -d "$file" | grep -q s_endpgm || fail "llvm-objdump finds no s_endpgm"
echo "$file: $arch, $kernels kernels, wave$wave"
