#!/bin/sh
# onnx_kit.sh BUILD KIT: the files a runtime-only build needs for `netc import` and `netc export`
# on a machine without flex, bison or protobuf-c, into the folder KIT (docs/onnx.md): the parser
# and lexer bison and flex generated in the full build BUILD, the onnx.pb-c sources protoc-c
# generated there, and libprotobuf-c's header and static library (it calls only malloc, free and
# the mem/str functions of libc, so it links against any glibc). Then on the other machine:
#   cmake -S . -B /tmp/rt -DNETC_RUNTIME_ONLY=ON -DNETC_ONNX_KIT=KIT && cmake --build /tmp/rt
set -eu
build=${1:-}
kit=${2:-}
[ -n "$build" ] && [ -n "$kit" ] || { echo "usage: $0 BUILD KIT" >&2; exit 2; }
for f in frontend/parser.c frontend/parser.h frontend/lexer.c frontend/lexer.h onnx/onnx.pb-c.c onnx/onnx.pb-c.h; do
	[ -f "$build/$f" ] || { echo "$0: $build/$f is missing: build netc in $build first (a full build)" >&2; exit 1; }
done
lib=$(find /usr/lib /usr/lib64 /usr/local/lib -name libprotobuf-c.a 2>/dev/null | head -n 1)
header=$(find /usr/include /usr/local/include -path '*protobuf-c/protobuf-c.h' 2>/dev/null | grep -v google | head -n 1)
[ -n "$lib" ] && [ -n "$header" ] || { echo "$0: no libprotobuf-c.a or protobuf-c.h (apt-get install libprotobuf-c-dev)" >&2; exit 1; }
rm -rf "$kit"
mkdir -p "$kit/protobuf-c"
cp "$build"/frontend/parser.c "$build"/frontend/parser.h "$build"/frontend/lexer.c "$build"/frontend/lexer.h "$kit/"
cp "$build"/onnx/onnx.pb-c.c "$build"/onnx/onnx.pb-c.h "$kit/"
cp "$lib" "$kit/libprotobuf-c.a"
cp "$header" "$kit/protobuf-c/protobuf-c.h"
echo "wrote $kit ($(du -sk "$kit" | cut -f1) KiB): cmake -DNETC_RUNTIME_ONLY=ON -DNETC_ONNX_KIT=$kit"
