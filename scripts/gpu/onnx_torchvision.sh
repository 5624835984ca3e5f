#!/bin/bash
# onnx_torchvision.sh: torchvision's alexnet, vgg16, resnet18 and googlenet (no aux heads) through
# ONNX into netc, trained on a GPU, and back out to onnxruntime; netc's mnist and cifar10_tf out to
# onnxruntime after a short training (issue 16). Two halves, as the GPU machine has torch,
# torchvision, onnx and onnxruntime but only a runtime-only netc (no LLVM):
#
#   here (with the compiler):  scripts/gpu/onnx_torchvision.sh prepare [DIR]
#     DIR (default .device/onnx): the ONNX kit (scripts/onnx_kit.sh) in DIR/kit; each torchvision
#     model as defined in scripts/gpu/torchvision_models.py (torch 1.13 here, no torchvision)
#     exported to ONNX and imported as DIR/MODEL.net, compiled at batch BATCH (default 16) for host
#     and ARCH (default sm_90; empty: the host only) into DIR/MODEL.bundle; models/mnist.net and models/cifar10_tf.net
#     copied and compiled at their own batch. MODELS and SMALL_MODELS choose the models.
#   on the GPU machine:        scripts/gpu/onnx_torchvision.sh run [DIR]
#     builds a runtime-only netc with the kit (in $RT, default /tmp/netc-onnx), then for each
#     torchvision model: exports torchvision's own (random weights, seed 0, evaluation mode) with
#     torch.onnx.export, imports it there (the weights), checks the .net text equals DIR/MODEL.net,
#     compares netc eval of the imported weights on DEVICE (default cuda) with onnxruntime on the
#     exported file, trains STEPS (default 20) steps on DEVICE from those weights, exports the
#     trained checkpoint with `netc export DIR/MODEL.net`, and compares onnxruntime on the export
#     with netc eval on the same N(0, 1) images (one batch): max abs and relative difference,
#     argmax agreement. mnist and cifar10_tf: trained SMALL_STEPS (default 100) steps from fresh
#     weights, then the same export comparison. Only figures are printed (files over 15 MB cannot
#     come back); the large files stay in $WORK (default /tmp/onnx_tv). Exit status 0 when every
#     comparison is within TOL (default 1e-4 of the largest |y|).
#
# Checked on the CPU with the local definitions and the NumPy reference standing in for
# torchvision and onnxruntime: LOCAL=1 DEVICE=cpu NETC=build/netc MODELS=resnet18 ... run DIR.
set -euo pipefail

cmd=${1:-}
dir=${2:-.device/onnx}
here=$(cd "$(dirname "$0")" && pwd)
models=${MODELS:-alexnet vgg16 resnet18 googlenet}
small_models=${SMALL_MODELS:-mnist cifar10_tf}
python=${PYTHON:-python3}

prepare() {
	local netc=${NETC:-build/netc} arch=${ARCH-sm_90} batch=${BATCH:-16}
	mkdir -p "$dir"
	"$here/../onnx_kit.sh" "$(dirname "$netc")" "$dir/kit"
	tmp=$(mktemp -d) # global: the trap runs after prepare returns
	trap 'rm -rf "$tmp"' EXIT
	for m in $models; do
		"$python" "$here/torchvision_models.py" "$m" "$tmp/$m.onnx" --local 2>/dev/null
		"$netc" import "$tmp/$m.onnx" -o "$dir/$m.net" --checkpoint "$tmp/$m.st" --quiet
		rm -f "$tmp/$m.onnx" "$tmp/$m.st"
		"$netc" compile "$dir/$m.net" --batch "$batch" --target "host${arch:+,$arch}" -o "$dir/$m.bundle" --quiet
		echo "$batch" > "$dir/$m.batch"
		echo "prepared $m: $dir/$m.net, $dir/$m.bundle (batch $batch, host ${arch:+and $arch})"
	done
	for m in $small_models; do
		cp "$here/../../models/$m.net" "$dir/$m.net"
		"$netc" compile "$dir/$m.net" --target "host${arch:+,$arch}" -o "$dir/$m.bundle" --quiet
		sed -n 's/^[[:space:]]*batch *= *\([0-9]*\).*/\1/p' "$dir/$m.net" > "$dir/$m.batch"
		echo "prepared $m: $dir/$m.net, $dir/$m.bundle (batch $(cat "$dir/$m.batch"), host ${arch:+and $arch})"
	done
	du -sh "$dir"
}

# The images of one batch of model M as "N,C,H,W": the batch prepare compiled it for (a
# runtime-only netc has no `netc info`), the shape of the .net file's input.
image_shape() {
	local rest
	rest=$(sed -n 's/^[[:space:]]*input [^:]*: *f32\[batch, *\([0-9, ]*\)\].*/\1/p' "$dir/$1.net" | head -n 1 | tr -d ' ')
	echo "$(cat "$dir/$1.batch"),$rest"
}

# netc eval of BUNDLE with weights CKPT on X against onnxruntime on ONNX; one line named NAME.
compare() {
	local name=$1 bundle=$2 ckpt=$3 onnx=$4 x=$5
	local y=$work/${name// /_}.y.npy
	if ! "$netc" eval "$bundle" --checkpoint "$ckpt" --input "$x" -o "$y" --device "$device" --quiet; then
		echo "$name FAIL: netc eval failed"
		return 1
	fi
	"$python" "$here/onnx_compare.py" "$name" "$onnx" "$x" "$y"
}

# STEPS of training from CKPT (empty: fresh weights) into OUT; prints the first and last loss.
train() {
	local name=$1 bundle=$2 ckpt=$3 steps=$4 out=$5 data=${6:-} log=$work/$1.train.log
	# shellcheck disable=SC2086
	if ! "$netc" train "$bundle" --device "$device" ${ckpt:+--init "$ckpt"} --steps "$steps" --seed 1 $data \
		--log "$work/$name.csv" --log-every 1 --save "$out" > "$log" 2>&1; then
		echo "$name FAIL: netc train failed:"
		tail -n 5 "$log"
		return 1
	fi
	awk -F, -v n="$name" -v s="$steps" 'NR == 2 { first = $3 } NR > 1 { last = $3 }
		END { printf "%-22s trained %d steps: loss %s -> %s\n", n, s, first, last }' "$work/$name.csv"
}

run() {
	work=${WORK:-/tmp/onnx_tv}
	device=${DEVICE:-cuda}
	local steps=${STEPS:-20} small_steps=${SMALL_STEPS:-100} fail=0 shape local_flag=""
	[ -n "${LOCAL:-}" ] && local_flag=--local
	mkdir -p "$work"
	[ -d "$dir/kit" ] || { echo "$dir/kit: missing (run '$0 prepare $dir' where netc can compile)" >&2; exit 1; }
	if [ -z "${NETC:-}" ]; then
		local rt=${RT:-/tmp/netc-onnx}
		cmake -S "$here/../.." -B "$rt" -DCMAKE_BUILD_TYPE=Release -DNETC_RUNTIME_ONLY=ON \
			-DNETC_ONNX_KIT="$(cd "$dir/kit" && pwd)" > "$work/cmake.log"
		cmake --build "$rt" -j"$(nproc)" --target netc > "$work/build.log"
		netc=$rt/netc
	else
		netc=$NETC
	fi
	"$python" -c "import torch; print('torch', torch.__version__)" || true
	for m in $models; do
		local b=$dir/$m.bundle
		[ -e "$b" ] || { echo "$b: missing (run '$0 prepare $dir')" >&2; exit 1; }
		if ! "$python" "$here/torchvision_models.py" "$m" "$work/$m.onnx" $local_flag 2> "$work/$m.export.log"; then
			echo "$m FAIL: torch.onnx.export failed:"
			tail -n 5 "$work/$m.export.log"
			fail=1
			continue
		fi
		"$netc" import "$work/$m.onnx" -o "$work/$m.net" --checkpoint "$work/$m.st" --quiet
		if ! diff <(sed 1d "$dir/$m.net") <(sed 1d "$work/$m.net") > "$work/$m.diff"; then
			echo "$m FAIL: the .net imported here differs from $dir/$m.net:"
			head -n 20 "$work/$m.diff"
			fail=1
			continue
		fi
		echo "$m: the imported .net is the one compiled ($(grep -c ' = ' "$work/$m.net") statements)"
		shape=$(image_shape "$m")
		"$python" "$here/onnx_compare.py" "$work/$m.x.npy" --random "$shape"
		compare "$m imported" "$b" "$work/$m.st" "$work/$m.onnx" "$work/$m.x.npy" || fail=1
		train "$m" "$b" "$work/$m.st" "$steps" "$work/$m.trained.st" "--data synthetic" || { fail=1; continue; }
		"$netc" export "$dir/$m.net" --checkpoint "$work/$m.trained.st" -o "$work/$m.trained.onnx" --quiet
		compare "$m trained" "$b" "$work/$m.trained.st" "$work/$m.trained.onnx" "$work/$m.x.npy" || fail=1
	done
	for m in $small_models; do
		local b=$dir/$m.bundle
		[ -e "$b" ] || { echo "$b: missing (run '$0 prepare $dir')" >&2; exit 1; }
		shape=$(image_shape "$m")
		"$python" "$here/onnx_compare.py" "$work/$m.x.npy" --random "$shape"
		train "$m" "$b" "" "$small_steps" "$work/$m.trained.st" || { fail=1; continue; }
		"$netc" export "$dir/$m.net" --checkpoint "$work/$m.trained.st" -o "$work/$m.trained.onnx" --quiet
		compare "$m trained" "$b" "$work/$m.trained.st" "$work/$m.trained.onnx" "$work/$m.x.npy" || fail=1
	done
	exit $fail
}

case $cmd in
prepare) prepare ;;
run) run ;;
*)
	echo "usage: $0 prepare [DIR] | run [DIR]" >&2
	exit 2
	;;
esac
