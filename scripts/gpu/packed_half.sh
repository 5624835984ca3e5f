#!/bin/sh
# packed_half.sh: half precision on the vector units of an NVIDIA sm_80+ GPU, with and without
# --packed-half, against float32 (docs/codegen.md, "Packed half FMAs without matrix units").
# --no-matrix-units keeps every GEMM off the tensor cores, so the GPU stands in for one without
# them. Two halves, as the GPU machine has only a runtime-only netc:
#
#   here (with the compiler):  scripts/gpu/packed_half.sh compile DIR [ARCH]
#     compiles into DIR/MODEL.VARIANT.bundle for ARCH (default sm_90): fp32 (the default
#     pipeline: matrix units are not used in fp32 on NVIDIA), and bf16 and fp16 with
#     --no-matrix-units, each in f32 registers (.bf16 .fp16) and with --packed-half (.bf16pk
#     .fp16pk); MODELS (default "vgg16 alexnet_bench cifar10_tf mnist");
#   on the GPU machine:        scripts/gpu/packed_half.sh run DIR [NETC]
#     times every bundle (netc bench, median of REPEATS x STEPS, defaults 5 x 20; vgg16 10 steps),
#     then trains every cifar10_tf and mnist bundle TRAIN steps (default 300) from seed 7 on the
#     built-in data and prints its first logged loss and held-out accuracy beside fp32's.
set -eu

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 compile DIR [ARCH] | run DIR [NETC]" >&2; exit 2; }
models=${MODELS:-vgg16 alexnet_bench cifar10_tf mnist}

case $cmd in
compile)
	arch=${3:-sm_90}
	netc=${NETC:-build/netc}
	mkdir -p "$dir"
	for m in $models; do
		"$netc" compile "models/$m.net" --target "$arch" -o "$dir/$m.fp32.bundle" --quiet
		for p in bf16 fp16; do
			"$netc" compile "models/$m.net" --target "$arch" --precision $p --no-matrix-units -o "$dir/$m.$p.bundle" --quiet
			"$netc" compile "models/$m.net" --target "$arch" --precision $p --no-matrix-units --packed-half \
				-o "$dir/$m.${p}pk.bundle" --quiet
		done
		echo "compiled $m for $arch: $dir/$m.{fp32,bf16,bf16pk,fp16,fp16pk}.bundle"
	done
	;;
run)
	netc=${3:-build/netc}
	for m in $models; do
		steps=${STEPS:-20}
		[ "$m" = vgg16 ] && steps=10
		for v in fp32 bf16 bf16pk fp16 fp16pk; do
			b="$dir/$m.$v.bundle"
			[ -e "$b" ] || continue
			ms=$("$netc" bench "$b" --device cuda --repeats "${REPEATS:-5}" --steps "$steps" --warmup 3 |
				sed -n 's/^ms\/step: \([0-9.]*\).*/\1/p')
			echo "bench $m $v: $ms ms/step"
		done
	done
	for m in $models; do
		case $m in cifar10_tf | mnist) ;; *) continue ;; esac
		for v in fp32 bf16pk fp16pk bf16; do
			b="$dir/$m.$v.bundle"
			[ -e "$b" ] || continue
			"$netc" train "$b" --device cuda --steps "${TRAIN:-300}" --seed 7 --log "$dir/$m.$v.csv" > "$dir/$m.$v.log" 2>&1 ||
				{ cat "$dir/$m.$v.log"; continue; }
			first=$(sed -n '2p' "$dir/$m.$v.csv" | cut -d, -f1,3)
			echo "train $m $v: (step,loss) $first; $(grep "^done:" "$dir/$m.$v.log" | tail -1)"
		done
	done
	;;
*)
	echo "usage: $0 compile DIR [ARCH] | run DIR [NETC]" >&2
	exit 2
	;;
esac
