#!/bin/sh
# tf32_check.sh: --precision tf32 (mma.sync m16n8k8 in the conv and dense kernels) against fp32
# on an NVIDIA sm_80+ GPU. Two halves, because the GPU machine has only a runtime-only netc
# (-DNETC_RUNTIME_ONLY=ON: train and bench, no compiler):
#
#   here (with the compiler):  scripts/gpu/tf32_check.sh compile DIR [ARCH [MODEL...]]
#     compiles models/MODEL.net for ARCH (default sm_90) in fp32 and tf32 into DIR/MODEL.P.bundle
#     (default models: mnist cifar10_tf alexnet_bench);
#   on the GPU machine:        scripts/gpu/tf32_check.sh run DIR [NETC]
#     for every pair in DIR: trains both from the same seed on the built-in data (STEPS, default
#     200, every step logged) and times both with netc bench; then compares:
#       - the first step's loss (the same weights and batch; only the products differ): within
#         1% of fp32's (a wrong fragment or accumulator mapping gives another loss altogether);
#       - the mean loss of the last 20 steps: within 10% of fp32's plus 0.02;
#       - the held-out accuracy after the run: at most 1 point below fp32's.
#     and prints ms/step of both. Exit status 0 when every model passes. DEVICE (default cuda)
#     picks the device: DEVICE=cpu with bundles compiled for `host` tries the script anywhere
#     (tf32 is exactly fp32 there).
#
# The numeric check on the GPU is this loss trajectory (netc check needs the compiler); the
# kernels' numerics against float64 are tested in emulation (tests/unit/test_cg_tf32.c).
set -eu

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 compile DIR [ARCH [MODEL...]] | run DIR [NETC]" >&2; exit 2; }

case $cmd in
compile)
	arch=${3:-sm_90}
	[ $# -ge 3 ] && shift 3 || shift $#
	models=${*:-mnist cifar10_tf alexnet_bench}
	netc=${NETC:-build/netc}
	mkdir -p "$dir"
	for m in $models; do
		for p in fp32 tf32; do
			"$netc" compile "models/$m.net" --target "$arch" --precision "$p" -o "$dir/$m.$p.bundle" --quiet
		done
		echo "compiled $m for $arch: $dir/$m.fp32.bundle $dir/$m.tf32.bundle"
	done
	;;
run)
	netc=${3:-build/netc}
	steps=${STEPS:-200}
	device=${DEVICE:-cuda}
	seed=${SEED:-7}
	fail=0
	for fp32 in "$dir"/*.fp32.bundle; do
		[ -e "$fp32" ] || { echo "$dir: no *.fp32.bundle (run '$0 compile $dir' where netc can compile)" >&2; exit 1; }
		m=$(basename "$fp32" .fp32.bundle)
		tf32="$dir/$m.tf32.bundle"
		for p in fp32 tf32; do
			"$netc" train "$dir/$m.$p.bundle" --device "$device" --steps "$steps" --seed "$seed" --log-every 1 \
				> "$dir/$m.$p.train.log"
			"$netc" bench "$dir/$m.$p.bundle" --device "$device" > "$dir/$m.$p.bench.log"
		done
		python3 - "$m" "$dir/$m.fp32.train.log" "$dir/$m.tf32.train.log" "$dir/$m.fp32.bench.log" \
			"$dir/$m.tf32.bench.log" <<'EOF' || fail=1
import re, sys
model, f_log, t_log, f_bench, t_bench = sys.argv[1:]
def losses(path):
    return [float(x) for x in re.findall(r"^step\s.*?\bloss\s+([0-9.]+|nan|inf)", open(path).read(), re.M)]
def accuracy(path):
    acc = re.findall(r"^eval:.*?accuracy\s+([0-9.]+)%", open(path).read(), re.M)
    return float(acc[-1]) if acc else None
def ms(path):
    m = re.search(r"ms/step: ([0-9.]+)", open(path).read())
    return m.group(1) if m else "?"
f, t = losses(f_log), losses(t_log)
fa, ta = accuracy(f_log), accuracy(t_log)
ok = len(f) == len(t) and len(f) >= 20
first = abs(t[0] - f[0]) / abs(f[0]) if ok else float("inf")
tail_f = sum(f[-20:]) / 20 if ok else 0
tail_t = sum(t[-20:]) / 20 if ok else float("inf")
checks = [
    ("first-step loss within 1%", first <= 0.01),
    ("last-20 mean loss within 10% + 0.02", tail_t <= 1.1 * tail_f + 0.02),
    ("held-out accuracy at most 1 point below", fa is None or (ta is not None and ta >= fa - 1.0)),
]
print(f"{model}: first loss fp32 {f[0] if f else '?'} tf32 {t[0] if t else '?'} (relative {first:.2e}); "
      f"last-20 mean fp32 {tail_f:.4f} tf32 {tail_t:.4f}; accuracy fp32 {fa} tf32 {ta}; "
      f"ms/step fp32 {ms(f_bench)} tf32 {ms(t_bench)}")
for what, good in checks:
    print(f"  {'ok  ' if good else 'FAIL'} {what}")
sys.exit(0 if all(g for _, g in checks) else 1)
EOF
	done
	[ $fail -eq 0 ] && echo "tf32_check: every model passes" || echo "tf32_check: FAILED"
	exit $fail
	;;
*)
	echo "usage: $0 compile DIR [ARCH [MODEL...]] | run DIR [NETC]" >&2
	exit 2
	;;
esac
