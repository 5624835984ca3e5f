#!/bin/sh
# nccl_single_rank.sh: the data-parallel path on one NVIDIA GPU through NCCL, against a plain run.
# Two halves, because the GPU machine has only a runtime-only netc (-DNETC_RUNTIME_ONLY=ON):
#
#   here (with the compiler):  scripts/gpu/nccl_single_rank.sh compile DIR [ARCH]
#     compiles for ARCH (default sm_90), with --data-parallel, into DIR: mnist (batch 64),
#     alexnet (batch 128) and vgg16 (batch 64);
#   on the GPU machine:        scripts/gpu/nccl_single_rank.sh run DIR [NETC]
#     1. `netc devices` must list NCCL (libnccl.so.2; NETC_NCCL_LIBRARY=/path/libnccl.so.2 names
#        another file, e.g. from pip's nvidia-nccl-cu12 wheel);
#     2. exactness: mnist trains STEPS steps (default 50, every loss logged) plainly and as one
#        NCCL rank three ways: torchrun's variables with the all-reduce on the second stream,
#        the same with NETC_DP_OVERLAP=0 (on the main stream), and `--gpus 1` (netc's own
#        launcher); every loss line must equal the plain run's, character for character (the
#        mean over one rank is the identity, and the step graph replays with the collectives in it);
#     3. cost: alexnet and vgg16 timed by netc bench plainly, as one NCCL rank with the second
#        stream, and with NETC_DP_OVERLAP=0; prints ms/step and the overhead against the plain
#        run (the issue's bar: under 3%).
#   Exit status 0 when the losses match and every run worked.
set -eu

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
	echo "usage: $0 compile DIR [ARCH] | run DIR [NETC]" >&2
	exit 2
fi

case $cmd in
compile)
	arch=${3:-sm_90}
	netc=${NETC:-build/netc}
	mkdir -p "$dir"
	for mb in mnist:64 alexnet:128 vgg16:64; do
		m=${mb%:*} b=${mb#*:}
		"$netc" compile "models/$m.net" --target "$arch" --batch "$b" --data-parallel -o "$dir/$m.bundle" --quiet
		"$netc" info "$dir/$m.bundle" | grep data-parallel | sed "s/^/$m: /"
	done
	;;
run)
	netc=${3:-build/netc}
	steps=${STEPS:-50}
	fail=0
	"$netc" devices | tee "$dir/devices.txt"
	grep -q '^nccl (cuda ranks): .*(version' "$dir/devices.txt" || { echo "no NCCL: set NETC_NCCL_LIBRARY" >&2; exit 1; }
	# netc plainly; one NCCL rank by torchrun's variables, the all-reduce on the second stream
	# (nccl2) or on the main one (nccl1)
	# shellcheck disable=SC2317 # called through mnist()
	plain() { "$netc" "$@"; }
	rank() { overlap=$1; shift; env NETC_DP_OVERLAP="$overlap" WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 \
		MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 "$netc" "$@"; }
	nccl2() { rank 1 "$@"; }
	nccl1() { rank 0 "$@"; }
	losses() { grep -o 'loss [0-9.e+-]*' "$1" | head -n "$steps"; }
	mnist() { runner=$1; shift; "$runner" train "$dir/mnist.bundle" --steps "$steps" --seed 7 --log-every 1 "$@"; }

	mnist plain --device cuda > "$dir/plain.log"
	mnist nccl2 --device cuda > "$dir/nccl.log"
	mnist nccl1 --device cuda > "$dir/nccl_one_stream.log"
	mnist plain --gpus 1 > "$dir/nccl_launcher.log"
	losses "$dir/plain.log" > "$dir/plain.losses"
	[ "$(wc -l < "$dir/plain.losses")" -eq "$steps" ] || { echo "the plain run logged no losses" >&2; exit 1; }
	for v in nccl nccl_one_stream nccl_launcher; do
		grep -q 'ranks: 1 (nccl)' "$dir/$v.log" || { echo "$v: did not run as an NCCL rank" >&2; fail=1; }
		losses "$dir/$v.log" > "$dir/$v.losses"
		if cmp -s "$dir/plain.losses" "$dir/$v.losses"; then
			echo "mnist $v: $steps losses equal to the plain run's"
		else
			echo "mnist $v: losses differ from the plain run's:" >&2
			diff "$dir/plain.losses" "$dir/$v.losses" | head -5 >&2
			fail=1
		fi
	done

	ms() { sed -n 's/^ms\/step: \([0-9.]*\).*/\1/p' "$1"; }
	echo "model      plain ms  nccl ms (2 streams)  nccl ms (1 stream)"
	for m in alexnet vgg16; do
		"$netc" bench "$dir/$m.bundle" --device cuda > "$dir/$m.plain.bench"
		nccl2 bench "$dir/$m.bundle" --device cuda > "$dir/$m.nccl.bench"
		nccl1 bench "$dir/$m.bundle" --device cuda > "$dir/$m.nccl1.bench"
		grep -q 'ranks: 1 (nccl)' "$dir/$m.nccl.bench" || { echo "$m: bench did not run as an NCCL rank" >&2; fail=1; }
		python3 - "$m" "$(ms "$dir/$m.plain.bench")" "$(ms "$dir/$m.nccl.bench")" "$(ms "$dir/$m.nccl1.bench")" <<'EOF'
import sys
m, plain, two, one = sys.argv[1], *map(float, sys.argv[2:])
print(f"{m:<10} {plain:8.3f}  {two:8.3f} ({100 * (two / plain - 1):+.1f}%)  {one:8.3f} ({100 * (one / plain - 1):+.1f}%)")
EOF
	done
	exit $fail
	;;
*)
	echo "usage: $0 compile DIR [ARCH] | run DIR [NETC]" >&2
	exit 2
	;;
esac
