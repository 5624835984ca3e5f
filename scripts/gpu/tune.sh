#!/bin/sh
# tune.sh: tuned GEMM tiles for an NVIDIA (or any) GPU architecture, tuning/ARCH.tune (docs/tuning.md).
# Two halves, because the GPU machine has only a runtime-only netc (-DNETC_RUNTIME_ONLY=ON):
#
#   here (with the compiler):  scripts/gpu/tune.sh compile DIR [ARCH [MODEL[:PRECISION]...]]
#     for every model (default: those of tuning/sm_90.tune, docs/tuning.md; MODEL:tf32 compiles
#     it with --precision tf32 into DIR/MODEL.tf32/) writes the
#     candidate bundles of ARCH (default sm_90) and their manifest into DIR/MODEL/
#     (`netc tune --emit-candidates`), at most MAX candidate indices each (default 12: every
#     bundle holds the whole step's code, and DIR travels to the GPU machine);
#   on the GPU machine:        scripts/gpu/tune.sh run DIR [NETC]
#     times every candidate bundle kernel by kernel on DEVICE (default cuda; medians of REPEATS,
#     default 5) into DIR/MODEL.tune (`netc tune --candidates`), then merges them into
#     DIR/ARCH.tune, the first model's line winning where two models share a key.
#
# Copy DIR/ARCH.tune to tuning/ARCH.tune (or, for some keys tuned again, put it in with
# scripts/update_tuning.sh) and rebuild: netc then uses it for ARCH by default
# (`--tuning none` turns it off). `netc info MODEL.net --target ARCH` shows each kernel's tiles.
set -eu

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 compile DIR [ARCH [MODEL[:PRECISION]...]] | run DIR [NETC]" >&2; exit 2; }

case $cmd in
compile)
	arch=${3:-sm_90}
	[ $# -ge 3 ] && shift 3 || shift $#
	models=${*:-vgg16 alexnet alexnet_bench googlenet mobilenet_v2 resnet18 nature_cnn cifar10_tf mnist \
		vgg16:tf32 vgg16:bf16 alexnet:tf32 alexnet:bf16 alexnet_bench:tf32 alexnet_bench:bf16 \
		resnet50:tf32 resnet50:bf16 googlenet:tf32 googlenet:bf16 resnet18:tf32 mobilenet_v2:tf32 \
		resnet50 resnet20 resnet18:bf16 mobilenet_v2:bf16}
	netc=${NETC:-build/netc}
	mkdir -p "$dir"
	for spec in $models; do
		m=${spec%%:*} p= sub=${spec%%:*}
		case $spec in *:*) p=${spec#*:} sub=$m.${spec#*:} ;; esac
		"$netc" tune "models/$m.net" --target "$arch" ${p:+--precision "$p"} --max-candidates "${MAX:-12}" \
			--emit-candidates "$dir/$sub"
	done
	echo "$arch" > "$dir/arch"
	du -sh "$dir"
	;;
run)
	netc=${3:-build/netc}
	[ -e "$dir/arch" ] || { echo "$dir: no candidates (run '$0 compile $dir' where netc can compile)" >&2; exit 1; }
	files=
	for manifest in "$dir"/*/manifest.tune; do
		m=$(basename "$(dirname "$manifest")")
		"$netc" tune --candidates "$dir/$m" --device "${DEVICE:-cuda}" --repeats "${REPEATS:-5}" -o "$dir/$m.tune"
		files="$files $dir/$m.tune"
	done
	# shellcheck disable=SC2086
	"$(dirname "$0")/../merge_tuning.sh" "$dir/merged.tune" \
		"scripts/gpu/tune.sh on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), $(date +%F)" $files
	# named by its keys' architecture (the host's names its CPU: host-znver4)
	arch=$(grep -v '^#' "$dir/merged.tune" | grep -v '^netc-tuning' | awk 'NR == 1 { print $1 }')
	mv "$dir/merged.tune" "$dir/${arch:-$(cat "$dir/arch")}.tune"
	arch=${arch:-$(cat "$dir/arch")}
	echo "wrote $dir/$arch.tune: $(grep -vc '^#' "$dir/$arch.tune") lines; copy it to tuning/$arch.tune, or put it in with scripts/update_tuning.sh"
	;;
*)
	echo "usage: $0 compile DIR [ARCH [MODEL...]] | run DIR [NETC]" >&2
	exit 2
	;;
esac
