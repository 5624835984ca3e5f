#!/bin/sh
# The main job on a fresh machine: install, build, and train the MNIST CNN on the CPU with the
# built-in data set (extra arguments go to `netc train`, e.g. --epochs 3 or --data DIR).
set -e
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/netc train models/mnist.net --epochs 1 "$@"
