/* import.h: what the importer's driver (import.c) and its operator table (import_ops.c) share. */
#ifndef NETC_ONNX_IMPORT_H
#define NETC_ONNX_IMPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "ir/ir.h"
#include "onnx/onnx.h"
#include "onnx/proto.h"

#define IM_NAME 65 /* a netc name and its NUL (the language allows 64 characters) */

/* One ONNX value: an activation netc computes (a named .net value), or a constant. */
typedef struct {
	const char *onnx;                /* its ONNX name */
	char net[IM_NAME];               /* activations: the .net name */
	const Onnx__TensorProto *tensor; /* constants: initializer or Constant node; NULL for activations */
	int rank;
	int64_t dim[IR_MAX_DIMS];        /* dim[0] is the batch (the model's own size for it) */
	int64_t pad[4];                  /* a zero Pad a Conv absorbs: top, left, bottom, right */
	bool padded;
	int uses;                        /* nodes and graph outputs that read it */
	int user;                        /* the last node that reads it; -1 when none */
} Value;

/* A string -> index table (open addressing), for ONNX names and the .net names in use. */
typedef struct {
	const char **key;
	int *val;
	int cap, n;
} NameTable;

/* A tensor made for a Constant node's scalar or list attribute, pointing at the attribute's
 * numbers; dim is its one dimension's size for a list. */
typedef struct {
	Onnx__TensorProto t;
	int64_t dim;
} OwnedTensor;

typedef struct {
	const char *file;                 /* for messages */
	const Onnx__GraphProto *graph;
	int64_t opset;
	Value *v;
	int nv, capv;
	NameTable by_onnx;                /* ONNX name -> index in v */
	NameTable net_names;              /* .net names taken (strings owned by the table's pool) */
	NameTable uses;                   /* ONNX name -> index in use_count and last_user */
	int *use_count, *last_user;       /* the nodes that read a name, and the last of them */
	char **pool;                      /* copies of the .net names */
	int npool;
	FILE *body;                       /* the network's statements */
	char *body_text;
	size_t body_len;
	RtTensors *weights;
	int node;                         /* index of the node being imported; -1 outside nodes */
	bool *folded;                     /* nodes an earlier node took in (a bias Add after a MatMul) */
	OwnedTensor **owned;              /* tensors made for Constant nodes' attributes */
	int nowned;
	char *err;
	size_t errlen;
	bool failed;
} Importer;

/* Imports node n (im->node); false after im_fail. One row per operator in import_ops.c. */
typedef bool (*OpImport)(Importer *im, const Onnx__NodeProto *n);

typedef struct {
	const char *op;       /* ONNX op_type */
	OpImport fn;
	const char *attrs;    /* the attributes it reads, comma-separated: any other is an error */
	int outputs;          /* outputs it defines; others must be absent or unused */
} OpRow;

/* The operator table (import_ops.c). */
const OpRow *im_op_lookup(const char *op);
int im_op_count(void);
const OpRow *im_op_row(int i);

/* ---- what the operators call (import.c) ---- */

/* "FILE: node 'NAME' (OP, opset N): message" in im->err; returns false. */
bool im_fail(Importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const Onnx__NodeProto *im_current(const Importer *im);
/* Input i of the current node: any value; an activation; a constant (NULL and no error when
 * optional and absent). */
Value *im_in(Importer *im, int i);
Value *im_act(Importer *im, int i);
const Onnx__TensorProto *im_const(Importer *im, int i, bool optional);
/* The node's inputs, counting absent trailing ones as absent. */
int im_ninputs(const Importer *im);
/* Attributes of the current node, with the default when absent; false after an error (another
 * type, too many values). im_attr_ints returns the count (0: absent), or -1 after an error. */
bool im_attr_int(Importer *im, const char *name, int64_t def, int64_t *v);
bool im_attr_float(Importer *im, const char *name, float def, float *v);
int im_attr_ints(Importer *im, const char *name, int64_t *v, int max);
bool im_attr_string(Importer *im, const char *name, const char *def, char *buf, size_t len);
/* The elements of a constant, checked (int64 for shapes and axes, float for weights); n must be
 * its element count. */
bool im_const_ints(Importer *im, const Onnx__TensorProto *t, int64_t *v, int64_t n);
bool im_const_numel(Importer *im, const Onnx__TensorProto *t, int64_t *n);
/* Output 0 of the current node as a new activation named after hint (NULL: the node), of the
 * given shape; NULL after an error (a result larger than a tensor may be). */
Value *im_out(Importer *im, const char *hint, int rank, const int64_t *dim);
/* Output 0 of the current node is the value src (Identity, a folded node). */
bool im_alias(Importer *im, const Value *src);
/* The name a layer with parameters gets: the initializer's prefix (PyTorch's "features.0" of
 * "features.0.weight" as features_0), else the node's, else its output's. */
const char *im_layer_hint(Importer *im, const Onnx__TensorProto *weight, char *buf, size_t len);
/* hint as a .net name in out (IM_NAME bytes): [A-Za-z_][A-Za-z0-9_]*, runs of other characters
 * one '_', unique (a suffix _2, _3, ... when taken), and recorded as taken. */
const char *im_take_name(Importer *im, const char *hint, char *out);
/* One statement of the network (a tab and the text, a line end). */
void im_stmt(Importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Constant t as the weight LAYER.suffix of shape dim (its element count must be t's); NULL
 * after an error. */
RtTensor *im_weight(Importer *im, const char *layer, const char *suffix, const Onnx__TensorProto *t, int rank,
		    const int64_t *dim);
/* A float as short as it can be written and still read back as the same float. */
const char *im_float_str(float x, char *buf, size_t len);
/* An activation's shape as "[batch, 3, 224, 224]" (a constant's as its dims). */
const char *im_shape_str(const Value *v, char *buf, size_t len);
/* "[N, 3, 224, 224]" */
/* The index of node `node`'s sole reader of value v when it has exactly one, else -1. */
int im_sole_user(const Importer *im, const Value *v);
/* Marks node i as taken in by the current one: its outputs alias the current node's output 0. */
bool im_fold(Importer *im, int i);

#endif
