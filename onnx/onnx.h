/* onnx.h: ONNX models in and out (docs/onnx.md). An imported model becomes .net source, which the
 * frontend reads like any file, and its initializers the weights netc starts from; an exported
 * one is the evaluation graph with trained weights. The protobuf is read and written by the C code
 * protoc-c generates from ONNX's own onnx.proto. */
#ifndef NETC_ONNX_H
#define NETC_ONNX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "runtime/rt.h"

/* The default-domain operator sets netc reads and the one it writes. */
#define ONNX_OPSET_MIN 13
#define ONNX_OPSET_MAX 21
#define ONNX_OPSET_EXPORT 17

typedef struct {
	char *text;        /* the .net file, NUL-terminated */
	size_t len;
	RtTensors weights; /* the initializers under netc's names (conv1.weight, bn1.running_mean) */
} OnnxImport;

/* An ONNX model (size bytes of data; name says where it came from, and its file name without the
 * extension names the network) as .net source and weights. False with one message in err, which
 * names the file and, where one is to blame, the node, its operator and the opset. */
bool onnx_import(const char *name, const uint8_t *data, size_t size, OnnxImport *out, char *err, size_t errlen);
/* The same for the file at path. */
bool onnx_import_file(const char *path, OnnxImport *out, char *err, size_t errlen);
void onnx_import_free(OnnxImport *m);

/* The operators the importer maps, comma-separated (for messages and docs). */
const char *onnx_supported_ops(void);

/* Writes g's evaluation graph (g straight from the frontend: the forward graph) with the weights
 * of its parameters and state from w (read from the file source, which messages name), as an ONNX model of opset ONNX_OPSET_EXPORT (or the first
 * that has an operator it needs) with a symbolic batch dimension. False with one message in err
 * (an op that has no ONNX form, a weight missing from w). */
bool onnx_export(const Graph *g, const RtTensors *w, const char *source, const char *path, char *err,
		 size_t errlen);

#endif
