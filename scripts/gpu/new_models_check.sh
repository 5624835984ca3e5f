#!/bin/sh
# new_models_check.sh: the models and ops of issue 17 on a GPU against the CPU. The models use
# every new op between them (depthwise convolutions through dwconv2d, its input gradient and the
# fused sum of dwconv2d_wterms; grouped convolutions through unfold and fold, batch
# norm, layer_norm, matmul, bmm, transpose, permute, softmax, gelu, parameter, conv_transpose2d,
# bilinear upsampling, concat, mse_loss, relu6). Two halves, as the GPU machine has only a
# runtime-only netc:
#
#   here (with the compiler):  scripts/gpu/new_models_check.sh compile DIR [ARCH [MODEL...]]
#     compiles models/MODEL.net at batch BATCH (default 8) for host and ARCH (default sm_90) into
#     DIR/MODEL.bundle (default models: resnet18 resnet50 mobilenet_v2 resnet20 vit unet);
#   on the GPU machine:        scripts/gpu/new_models_check.sh run DIR [NETC]
#     trains every bundle for STEPS (default 3) steps on one repeated batch (--overfit-batch, the
#     same seed) on the CPU and on DEVICE (default cuda), every step logged, and compares the
#     losses: the first step's within 1e-3 of the CPU's (relative; the same weights and batch, only
#     the order of float additions differs), later ones within 1e-2; then times DEVICE with netc
#     bench and prints ms/step (the figures for docs/performance.md). Exit status 0 when every
#     model passes. resnet18, resnet50 and mobilenet_v2 take synthetic data (their files name a folder).
set -eu

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 compile DIR [ARCH [MODEL...]] | run DIR [NETC]" >&2; exit 2; }

case $cmd in
compile)
	arch=${3:-sm_90}
	[ $# -ge 3 ] && shift 3 || shift $#
	models=${*:-resnet18 resnet50 mobilenet_v2 resnet20 vit unet}
	netc=${NETC:-build/netc}
	mkdir -p "$dir"
	for m in $models; do
		"$netc" compile "models/$m.net" --batch "${BATCH:-8}" --target "host,$arch" -o "$dir/$m.bundle" --quiet
		echo "compiled $m for host,$arch: $dir/$m.bundle"
	done
	;;
run)
	netc=${3:-build/netc}
	steps=${STEPS:-3}
	device=${DEVICE:-cuda}
	seed=${SEED:-7}
	fail=0
	for b in "$dir"/*.bundle; do
		[ -e "$b" ] || { echo "$dir: no *.bundle (run '$0 compile $dir' where netc can compile)" >&2; exit 1; }
		m=$(basename "$b" .bundle)
		data=""
		case $m in resnet18 | resnet50 | mobilenet_v2) data="--data synthetic" ;; esac
		for d in cpu "$device"; do
			# shellcheck disable=SC2086
			"$netc" train "$b" --device "$d" --steps "$steps" --seed "$seed" --log-every 1 --overfit-batch $data \
				> "$dir/$m.$d.log"
		done
		"$netc" bench "$b" --device "$device" > "$dir/$m.bench.log"
		python3 - "$m" "$dir/$m.cpu.log" "$dir/$m.$device.log" "$dir/$m.bench.log" <<'PY' || fail=1
import re, sys
model, cpu_log, dev_log, bench_log = sys.argv[1:]
def losses(path):
	return [float(x) for x in re.findall(r"^step\s.*?\bloss\s+([0-9.]+)", open(path).read(), re.M)]
cpu, dev = losses(cpu_log), losses(dev_log)
ms = re.search(r"ms/step: ([0-9.]+)", open(bench_log).read())
ok = len(cpu) == len(dev) and len(cpu) > 0
for i, (a, b) in enumerate(zip(cpu, dev)):
	tol = 1e-3 if i == 0 else 1e-2
	ok = ok and abs(a - b) <= tol * max(abs(a), 1e-3)
print("%-13s %s  cpu %s  gpu %s  %s ms/step" % (model, "ok  " if ok else "FAIL", cpu, dev, ms.group(1) if ms else "?"))
sys.exit(0 if ok else 1)
PY
	done
	exit $fail
	;;
*)
	echo "usage: $0 compile DIR [ARCH [MODEL...]] | run DIR [NETC]" >&2
	exit 2
	;;
esac
