#!/bin/sh
# amd_gemm_report.sh [ARCH...]: what the GEMM kernels of the documented models cost on AMD targets
# without a GPU (docs/performance.md): per architecture (default gfx803 gfx900 gfx906 gfx1030) and
# precision (PRECISIONS, default "fp32 fp16 bf16"), over MODELS (default every documented model), the
# GEMM kernels `netc info MODEL --target ARCH` lists, how many spill (scratch or spilled
# registers) and how many are starved (fewer than 4 waves per SIMD where their grid would fill
# more), with the heuristic's tiles (--tuning none) and with the shipped tuning files (the tile
# cost model's, docs/tuning.md); and the tuned kernels' VGPRs. OPTIONS are more options for netc
# info (--packed-half). NETC names the netc (default build/netc).
set -eu
cd "$(dirname "$0")/.."
netc=${NETC:-build/netc}
archs=${*:-gfx803 gfx900 gfx906 gfx1030}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=${MODELS:-mnist cifar_simple cifar10_tf nature_cnn alexnet_bench alexnet vgg16 googlenet resnet18 resnet50 mobilenet_v2 resnet20 vit unet}
echo "| target | precision | GEMM kernels | spilling: heuristic | spilling: tuned | starved: heuristic | starved: tuned | VGPRs (tuned) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for arch in $archs; do
	for p in ${PRECISIONS:-fp32 fp16 bf16}; do
		for tuning in none default; do
			opt=
			[ "$tuning" = none ] && opt="--tuning none"
			for m in $models; do
				# shellcheck disable=SC2086
				"$netc" info "models/$m.net" --target "$arch" --precision "$p" $opt ${OPTIONS:-} | grep "^    $arch: block"
			done > "$tmp/$tuning"
		done
		awk -v arch="$arch" -v p="$p" '
			FILENAME ~ /\/none$/ { n++; if (/B scratch/) s0++; if (/starved/) w0++ }
			FILENAME ~ /\/default$/ {
				if (/B scratch/) s1++; if (/starved/) w1++
				v = $0; sub(/.*block [0-9]+, /, "", v); v += 0
				if (lo == "" || v < lo) lo = v; if (v > hi) hi = v
			}
			END { printf "| %s | %s | %d | %d | %d | %d | %d | %d-%d |\n", arch, p, n, s0, s1, w0, w1, lo, hi }
		' "$tmp/none" "$tmp/default"
	done
done
