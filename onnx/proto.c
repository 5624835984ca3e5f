/* proto.c: reading tensors out of the generated TensorProto, every count checked against its dims,
 * since a file's fields may say anything. */
#include <stdio.h>
#include <string.h>

#include "onnx/proto.h"

const char *onnx_str(const char *s) { return s ? s : ""; }

const char *onnx_type_name(int32_t data_type, char *buf, size_t len)
{
	switch (data_type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return "float";
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return "double";
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return "float16";
	case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return "bfloat16";
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return "int32";
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return "int64";
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return "int8";
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return "uint8";
	case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return "bool";
	case ONNX__TENSOR_PROTO__DATA_TYPE__STRING: return "string";
	default: snprintf(buf, len, "type %d", (int)data_type); return buf;
	}
}

bool onnx_tensor_numel(const Onnx__TensorProto *t, int64_t *n, char *why, size_t len)
{
	*n = 1;
	for (size_t d = 0; d < t->n_dims; d++) {
		if (t->dims[d] < 0) {
			snprintf(why, len, "has a negative dimension (%lld)", (long long)t->dims[d]);
			return false;
		}
		if (__builtin_mul_overflow(*n, t->dims[d], n) || *n > ONNX_MAX_NUMEL) {
			snprintf(why, len, "has more than 2^40 elements");
			return false;
		}
	}
	return true;
}

/* Where t's elements are: the typed field or raw_data, and how many each holds. */
typedef struct {
	const void *p;
	int64_t count;
	int size;  /* bytes per element in raw data; 0: the typed field */
	int type;
} Source;

static bool source_of(const Onnx__TensorProto *t, int64_t n, Source *s, char *why, size_t len)
{
	char tn[32];
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		snprintf(why, len, "keeps its data in an external file; netc reads models whose tensors are inside "
			 "the .onnx file (onnx.save_model(m, path, save_as_external_data=False))");
		return false;
	}
	*s = (Source){.type = t->data_type};
	int raw_size = 0;
	switch (t->data_type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: s->p = t->float_data, s->count = (int64_t)t->n_float_data, raw_size = 4; break;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: s->p = t->double_data, s->count = (int64_t)t->n_double_data, raw_size = 8; break;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: s->p = t->int32_data, s->count = (int64_t)t->n_int32_data, raw_size = 4; break;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: s->p = t->int64_data, s->count = (int64_t)t->n_int64_data, raw_size = 8; break;
	default:
		snprintf(why, len, "is of type %s; netc reads float, double, int32 and int64 tensors",
			 onnx_type_name(t->data_type, tn, sizeof tn));
		return false;
	}
	if (t->has_raw_data && t->raw_data.len > 0) {
		s->p = t->raw_data.data;
		s->size = raw_size;
		s->count = (int64_t)(t->raw_data.len / (size_t)raw_size);
		if (t->raw_data.len % (size_t)raw_size)
			s->count = -1;
	}
	if (s->count < 0) {
		snprintf(why, len, "has %zu bytes of raw data, not a whole number of %s elements", t->raw_data.len,
			 onnx_type_name(t->data_type, tn, sizeof tn));
		return false;
	}
	if (s->count != n) {
		snprintf(why, len, "holds %lld elements where its dims make %lld", (long long)s->count, (long long)n);
		return false;
	}
	return true;
}

/* Element i as a double: raw data are little-endian, as ONNX stores them (and the host is). */
static double element(const Source *s, int64_t i)
{
	const unsigned char *raw = s->p;
	switch (s->type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: {
		float v;
		memcpy(&v, s->size ? raw + 4 * i : (const unsigned char *)((const float *)s->p + i), 4);
		return v;
	}
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: {
		double v;
		memcpy(&v, s->size ? raw + 8 * i : (const unsigned char *)((const double *)s->p + i), 8);
		return v;
	}
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: {
		int32_t v;
		memcpy(&v, s->size ? raw + 4 * i : (const unsigned char *)((const int32_t *)s->p + i), 4);
		return v;
	}
	default: {
		int64_t v;
		memcpy(&v, s->size ? raw + 8 * i : (const unsigned char *)((const int64_t *)s->p + i), 8);
		return (double)v;
	}
	}
}

bool onnx_tensor_floats(const Onnx__TensorProto *t, float *out, int64_t n, char *why, size_t len)
{
	Source s;
	if (!source_of(t, n, &s, why, len))
		return false;
	if (s.type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && n)
		memcpy(out, s.p, (size_t)n * sizeof *out); /* a weight's common case, and its bulk */
	else
		for (int64_t i = 0; i < n; i++)
			out[i] = (float)element(&s, i);
	return true;
}

bool onnx_tensor_ints(const Onnx__TensorProto *t, int64_t *out, int64_t n, char *why, size_t len)
{
	Source s;
	if (!source_of(t, n, &s, why, len))
		return false;
	for (int64_t i = 0; i < n; i++) {
		if (s.type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
			memcpy(&out[i], s.size ? (const unsigned char *)s.p + 8 * i : (const unsigned char *)((const int64_t *)s.p + i), 8);
			continue;
		}
		double v = element(&s, i);
		if (!(v >= -9.2e18 && v <= 9.2e18)) { /* NaN and what no int64 holds */
			snprintf(why, len, "holds %g where an integer is needed", v);
			return false;
		}
		out[i] = (int64_t)v;
	}
	return true;
}
