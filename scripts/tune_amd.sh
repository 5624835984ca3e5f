#!/bin/sh
# tune_amd.sh [ARCH...]: the shipped tuning files of AMD architectures (default gfx803 gfx900 gfx906
# gfx1030: the chips without matrix units, whose GEMMs run on the SIMT template), tuning/ARCH.tune,
# picked by the tile cost model (`netc tune --cost-model`, docs/tuning.md): no AMD GPU is
# reachable here, so nothing is timed. The models of MODELS (default: the documented ones) are
# tuned together in each precision of PRECISIONS (default "fp32 fp16 bf16": a key's cost summed over
# every kernel that has it, in every model), and the precisions' files of one architecture merged
# (scripts/merge_tuning.sh). With KEEP=1 the entries tuning/ARCH.tune has already are kept (the
# new precisions' keys added to them); with KEEP=new they are kept where the new files have no line
# for their key (the keys tuned again take the new tiles). OPTIONS are more options for netc tune (--packed-half: the
# packed tiles' keys, f16x2). NETC names the netc (default build/netc). Rebuild netc
# afterwards: the files are built into it. The kernel cache should hold every candidate of an
# architecture (NETC_CACHE_MAX_MB: the default 2 GiB evicts them between precisions).
set -eu
cd "$(dirname "$0")/.."
netc=${NETC:-build/netc}
archs=${*:-gfx803 gfx900 gfx906 gfx1030}
models=${MODELS:-mnist cifar_simple cifar10_tf nature_cnn alexnet_bench alexnet vgg16 googlenet resnet18 resnet50 mobilenet_v2 resnet20 vit unet}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for arch in $archs; do
	files=
	kept=
	last=
	if [ -n "${KEEP:-}" ] && [ -f "tuning/$arch.tune" ]; then
		cp "tuning/$arch.tune" "$tmp/$arch.kept.tune"
		if [ "$KEEP" = new ]; then
			last="$tmp/$arch.kept.tune"
			kept=" (before the entries of the file before)"
		else
			files="$tmp/$arch.kept.tune"
			kept=" (added to the entries of the file before)"
		fi
	fi
	for p in ${PRECISIONS:-fp32 fp16 bf16}; do
		out="$tmp/$arch.$p.tune"
		paths=
		for m in $models; do
			paths="$paths models/$m.net"
		done
		# shellcheck disable=SC2086
		"$netc" tune $paths --target "$arch" --precision "$p" ${OPTIONS:-} --cost-model -o "$out" > "$tmp/log" ||
			{ cat "$tmp/log" >&2; exit 1; }
		files="$files $out"
		echo "$arch $p: $(tail -1 "$tmp/log")"
	done
	# shellcheck disable=SC2086
	scripts/merge_tuning.sh "tuning/$arch.tune" "scripts/tune_amd.sh: netc tune --cost-model ${OPTIONS:-}, $(date +%F); precisions: ${PRECISIONS:-fp32 fp16 bf16}$kept; models: $models" $files $last
	echo "wrote tuning/$arch.tune: $(grep -vc '^#' "tuning/$arch.tune") lines"
done
