#!/bin/sh
# ab_bench.sh: the bundles of two compilers (a commit and the one before it, say) timed side by
# side on one GPU and their training losses compared: how docs/performance.md's before/after
# tables are measured. Two halves, because the GPU machine has only a runtime-only netc
# (-DNETC_RUNTIME_ONLY=ON):
#
#   here (with the compilers):  scripts/gpu/ab_bench.sh compile DIR OLD_NETC NEW_NETC MODEL:PRECISION...
#     compiles models/MODEL.net with each netc for ARCH (default sm_90) in PRECISION into
#     DIR/before/MODEL.PRECISION.bundle and DIR/after/..., and says which pairs came out byte for
#     byte the same (those need no timing);
#   on the GPU machine:         scripts/gpu/ab_bench.sh run DIR [NETC]
#     ROUNDS rounds (default 2), each timing every pair before then after with `netc bench
#     --device DEVICE --repeats 5 --steps STEPS` (defaults cuda and 10), interleaved so that both
#     sides of a pair see the same clocks; then trains each pair TRAIN_STEPS steps (default 30;
#     0: none) from the same seed and prints both sides' losses every 10 steps and whether they
#     agree (a change that reorders float sums may move them; one that only moves data should not).
# Exit status 0 when every run worked.
set -eu

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || {
	echo "usage: $0 compile DIR OLD_NETC NEW_NETC MODEL:PRECISION... | run DIR [NETC]" >&2
	exit 2
}

case $cmd in
compile)
	[ $# -ge 5 ] || { echo "usage: $0 compile DIR OLD_NETC NEW_NETC MODEL:PRECISION..." >&2; exit 2; }
	old=$3 new=$4
	shift 4
	mkdir -p "$dir/before" "$dir/after"
	for spec in "$@"; do
		m=${spec%%:*} p=${spec#*:}
		[ "$p" != "$spec" ] || p=fp32
		for side in before after; do
			netc=$old
			[ $side = after ] && netc=$new
			"$netc" compile "models/$m.net" --target "${ARCH:-sm_90}" --precision "$p" --quiet \
				-o "$dir/$side/$m.$p.bundle"
		done
		if cmp -s "$dir/before/$m.$p.bundle" "$dir/after/$m.$p.bundle"; then
			echo "$m $p: the same bundle"
		else
			echo "$m $p: bundles differ"
		fi
	done
	du -sh "$dir"
	;;
run)
	netc=${3:-build/netc}
	device=${DEVICE:-cuda}
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true
	round=1
	while [ "$round" -le "${ROUNDS:-2}" ]; do
		for b in "$dir"/before/*.bundle; do
			name=$(basename "$b" .bundle)
			for side in before after; do
				ms=$("$netc" bench "$dir/$side/$name.bundle" --device "$device" --repeats 5 \
					--steps "${STEPS:-10}" | grep 'ms/step')
				echo "round $round $name $side: $ms"
			done
		done
		round=$((round + 1))
	done
	[ "${TRAIN_STEPS:-30}" -gt 0 ] || exit 0
	for b in "$dir"/before/*.bundle; do
		name=$(basename "$b" .bundle)
		for side in before after; do
			"$netc" train "$dir/$side/$name.bundle" --device "$device" --steps "${TRAIN_STEPS:-30}" \
				--log-every 10 | grep -o 'step .*loss [0-9.]*' > "$dir/$name.$side.losses"
			echo "$name $side losses: $(sed 's/.*loss //' "$dir/$name.$side.losses" | tr '\n' ' ')"
		done
		if cmp -s "$dir/$name.before.losses" "$dir/$name.after.losses"; then
			echo "$name: the same losses"
		else
			echo "$name: the losses differ"
		fi
	done
	;;
*)
	echo "$0: unknown command '$cmd' (compile or run)" >&2
	exit 2
	;;
esac
