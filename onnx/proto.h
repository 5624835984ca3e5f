/* proto.h: the generated protobuf-c types of onnx.proto, and the checked readers of what the
 * importer takes from them (tensors' elements, value types). */
#ifndef NETC_ONNX_PROTO_H
#define NETC_ONNX_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

#define ONNX_MAX_NUMEL ((int64_t)1 << 40) /* what netc holds any tensor to */

/* s, or "" for an absent string field. */
const char *onnx_str(const char *s);

/* The element count of t's dims, false when a dim is negative or the count passes ONNX_MAX_NUMEL
 * (a reason in why). */
bool onnx_tensor_numel(const Onnx__TensorProto *t, int64_t *n, char *why, size_t len);
/* t's n elements (FLOAT, DOUBLE, INT32 or INT64, inline or raw) as floats or as integers; false
 * with a reason in why when it has another type, external data, or not n elements. */
bool onnx_tensor_floats(const Onnx__TensorProto *t, float *out, int64_t n, char *why, size_t len);
bool onnx_tensor_ints(const Onnx__TensorProto *t, int64_t *out, int64_t n, char *why, size_t len);
/* The name of a TensorProto data type ("float", "int64", ...; "type N" for others). */
const char *onnx_type_name(int32_t data_type, char *buf, size_t len);

#endif
