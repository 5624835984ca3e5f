#!/bin/sh
# Installs what netc needs to build and test on Debian/Ubuntu, skipping what is already there.
set -e
need=""
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
# libjpeg62-turbo-dev and libpng-dev: image-folder data sets (data = folder); python3-pil makes the
# images their test decodes
# libamdhip64-5: the HIP runtime's loader, so the tests see the hip backend load and find no GPU;
# clang-19 and libclang-rt-19-dev: libFuzzer and the sanitizers' runtimes for scripts/fuzz.sh;
# libprotobuf-c-dev, protobuf-c-compiler and libonnx-dev (its onnx.proto): the ONNX reader and
# writer (onnx/); python3-onnx: the ONNX tests build their models with its helper API;
# openmpi-bin and libopenmpi-dev: mpirun and libmpi.so.40 for the data-parallel tests;
# chromium: the headless browser that loads bench --report's page (tests/lit/cli/bench_report.test)
for p in cmake make gcc flex bison llvm-19-dev llvm-19-tools lld-19 zlib1g-dev libmsgpack-dev \
	libjpeg62-turbo-dev libpng-dev python3-pil \
	libamdhip64-5 python3 clang-19 libclang-rt-19-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev \
	python3-onnx openmpi-bin libopenmpi-dev chromium; do
	have_pkg "$p" || need="$need $p"
done
[ -z "$need" ] && exit 0
echo "netc: installing$need"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
