#!/bin/sh
# The whole test suite on a fresh machine: install, build (warnings are errors), run every test,
# then build again with AddressSanitizer/UBSan and run the unit and parser-corpus tests again, and
# fuzz every reader for 15 seconds from its seeds, two at a time (scripts/fuzz.sh; docs/testing.md).
set -e
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DNETC_WERROR=ON
(cd build && ctest --output-on-failure -j2)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DNETC_SANITIZE=ON -DNETC_WERROR=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j2 -L 'unit|parser')
scripts/fuzz.sh 15
