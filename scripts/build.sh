#!/bin/sh
# Configures and builds netc in build/ (extra arguments go to cmake).
set -e
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
