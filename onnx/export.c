/* export.c: a forward graph and its weights as an ONNX model.
 *
 * The exporter walks the nodes the output depends on in their order and writes one ONNX node per
 * layer: a conv2d or dwconv2d (a depthwise conv2d: Conv with one group per channel), or
 * conv2d_grad_input (a conv_transpose2d), and the bias_add after it become one Conv
 * (ConvTranspose), a matmul with a parameter and its bias_add one Gemm, the nodes a
 * batch_norm2d layer made (found through Graph.eval_swap, which names its running statistics) one
 * BatchNormalization, and the layers the frontend builds of several nodes (layer_norm, grouped
 * conv2d, matmul of stacks) one node each, recognised by the nodes' pattern; the rest map one to
 * one. Values keep the
 * graph's names; parameters and running statistics become initializers holding the checkpoint's
 * tensors; the batch dimension is the symbol "batch". The messages built as protobuf-c structs
 * live in one arena, freed when the file is written. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "onnx/onnx.h"
#include "onnx/proto.h"

typedef struct {
	const Graph *g;
	const RtTensors *w;
	const char *source; /* where w came from */
	char *err;
	size_t errlen;
	bool failed;
	int64_t opset;
	bool *needed;   /* the output depends on the node */
	bool *inside;   /* a node a layer's ONNX node stands for (a Conv's conv2d, a batch norm's pieces) */
	int *uses;      /* readers of each node */
	bool *made;     /* leaves already made initializers */
	Onnx__NodeProto **nodes;
	int nnodes, capnodes;
	Onnx__TensorProto **inits;
	int ninits, capinits;
	void **allocs;  /* everything below, freed at the end */
	int nallocs, capallocs;
} Exporter;

static bool fail(Exporter *e, const char *fmt, ...)
{
	if (e->failed)
		return false;
	e->failed = true;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->err, e->errlen, fmt, ap);
	va_end(ap);
	return false;
}

static void *grow(void *p, int *cap, int n, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? 2 * *cap : 32;
	p = realloc(p, (size_t)*cap * size);
	if (!p)
		abort();
	return p;
}

static void *alloc(Exporter *e, size_t size)
{
	void *p = calloc(1, size ? size : 1);
	if (!p)
		abort();
	e->allocs = grow(e->allocs, &e->capallocs, e->nallocs, sizeof *e->allocs);
	e->allocs[e->nallocs++] = p;
	return p;
}

static char *str(Exporter *e, const char *s)
{
	char *p = alloc(e, strlen(s) + 1);
	return strcpy(p, s);
}

/* ---- nodes and attributes ---- */

/* A node with one output named as itself; make_node leaves it out of the graph's list. */
static Onnx__NodeProto *make_node(Exporter *e, const char *op, const char *name, int nin, const char *const *in)
{
	Onnx__NodeProto *n = alloc(e, sizeof *n);
	onnx__node_proto__init(n);
	n->op_type = str(e, op);
	n->name = str(e, name);
	n->n_input = (size_t)nin;
	n->input = alloc(e, (size_t)nin * sizeof *n->input);
	for (int i = 0; i < nin; i++)
		n->input[i] = str(e, in[i]);
	n->n_output = 1;
	n->output = alloc(e, sizeof *n->output);
	n->output[0] = str(e, name);
	return n;
}

static void append_node(Exporter *e, Onnx__NodeProto *n)
{
	e->nodes = grow(e->nodes, &e->capnodes, e->nnodes, sizeof *e->nodes);
	e->nodes[e->nnodes++] = n;
}

static Onnx__NodeProto *add_node(Exporter *e, const char *op, const char *name, int nin, const char *const *in)
{
	Onnx__NodeProto *n = make_node(e, op, name, nin, in);
	append_node(e, n);
	return n;
}

static Onnx__AttributeProto *add_attr(Exporter *e, Onnx__NodeProto *n, const char *name,
				      Onnx__AttributeProto__AttributeType type)
{
	Onnx__AttributeProto *a = alloc(e, sizeof *a);
	onnx__attribute_proto__init(a);
	a->name = str(e, name);
	a->has_type = true;
	a->type = type;
	Onnx__AttributeProto **list = alloc(e, (n->n_attribute + 1) * sizeof *list);
	if (n->n_attribute)
		memcpy(list, n->attribute, n->n_attribute * sizeof *list);
	list[n->n_attribute++] = a;
	n->attribute = list;
	return a;
}

static void attr_int(Exporter *e, Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = add_attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	a->has_i = true, a->i = v;
}

static void attr_float(Exporter *e, Onnx__NodeProto *n, const char *name, double v)
{
	Onnx__AttributeProto *a = add_attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = true, a->f = (float)v;
}

static void attr_ints(Exporter *e, Onnx__NodeProto *n, const char *name, int count, const int64_t *v)
{
	Onnx__AttributeProto *a = add_attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	a->n_ints = (size_t)count;
	a->ints = alloc(e, (size_t)count * sizeof *a->ints);
	memcpy(a->ints, v, (size_t)count * sizeof *v);
}

static void attr_string(Exporter *e, Onnx__NodeProto *n, const char *name, const char *v)
{
	Onnx__AttributeProto *a = add_attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	a->has_s = true;
	a->s.len = strlen(v);
	a->s.data = (uint8_t *)str(e, v);
}

/* A Constant node holding c copies of v as a [c] float tensor: a fixed operand that is no weight. */
static const char *const_node(Exporter *e, const char *name, int64_t c, float v)
{
	Onnx__NodeProto *n = add_node(e, "Constant", name, 0, NULL);
	Onnx__AttributeProto *a = add_attr(e, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	Onnx__TensorProto *t = alloc(e, sizeof *t);
	onnx__tensor_proto__init(t);
	t->has_data_type = true;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	t->n_dims = 1;
	t->dims = alloc(e, sizeof *t->dims);
	t->dims[0] = c;
	float *f = alloc(e, (size_t)c * sizeof *f);
	for (int64_t i = 0; i < c; i++)
		f[i] = v;
	t->has_raw_data = true;
	t->raw_data.len = (size_t)c * sizeof *f;
	t->raw_data.data = (uint8_t *)f;
	a->t = t;
	return n->output[0];
}

/* ---- initializers ---- */

static Onnx__TensorProto *add_init(Exporter *e, const char *name, int32_t type, int rank, const int64_t *dim,
				   const void *data, size_t bytes)
{
	Onnx__TensorProto *t = alloc(e, sizeof *t);
	onnx__tensor_proto__init(t);
	t->name = str(e, name);
	t->has_data_type = true;
	t->data_type = type;
	t->n_dims = (size_t)rank;
	t->dims = alloc(e, (size_t)rank * sizeof *t->dims);
	memcpy(t->dims, dim, (size_t)rank * sizeof *dim);
	t->has_raw_data = true;
	t->raw_data.len = bytes;
	t->raw_data.data = (uint8_t *)data; /* the weight set's, or the arena's: alive until written */
	e->inits = grow(e->inits, &e->capinits, e->ninits, sizeof *e->inits);
	e->inits[e->ninits++] = t;
	return t;
}

/* A float scalar or int64 list of the exporter's own. */
static const char *const_float(Exporter *e, const char *name, double v)
{
	float *f = alloc(e, sizeof *f);
	*f = (float)v;
	add_init(e, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, f, sizeof *f);
	return name;
}

static const char *const_ints(Exporter *e, const char *name, int count, const int64_t *v)
{
	int64_t *p = alloc(e, (size_t)count * sizeof *p), dim = count;
	memcpy(p, v, (size_t)count * sizeof *v);
	add_init(e, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, &dim, p, (size_t)count * sizeof *p);
	return name;
}

/* The ONNX name of node id as an operand: a parameter or state becomes an initializer holding
 * the checkpoint's tensor (once), a constant a scalar initializer. */
static const char *operand(Exporter *e, int id)
{
	const Node *n = &e->g->node[id];
	if (e->made[id] || !ir_is_leaf(n->op) || n->op == OP_input)
		return n->name;
	if (n->op == OP_const) {
		e->made[id] = true;
		return const_float(e, n->name, ir_const_value(n));
	}
	if (n->op != OP_param && n->op != OP_state)
		return fail(e, "'%s' is a runtime value, which has no ONNX form", n->name), n->name;
	const RtTensor *t = rt_tensors_find(e->w, n->name);
	char a[96], b[96];
	bool same = t && t->rank == n->shape.rank;
	for (int d = 0; same && d < t->rank; d++)
		same = t->dim[d] == n->shape.dim[d];
	if (!t)
		return fail(e, "%s: no tensor '%s' (a parameter of model '%s')", e->source, n->name, e->g->name), n->name;
	if (!same) {
		Shape s = shape_make(t->rank, t->dim);
		return fail(e, "%s: tensor '%s' has shape %s; the model's is %s", e->source, n->name, shape_str(&s, a, sizeof a),
			    shape_str(&n->shape, b, sizeof b)), n->name;
	}
	e->made[id] = true;
	add_init(e, n->name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, t->rank, t->dim, t->data,
		 (size_t)rt_tensor_numel(t) * sizeof(float));
	return n->name;
}

/* ---- layers ---- */

static const char *in_name(Exporter *e, const Node *n, int i) { return operand(e, n->in[i]); }

/* conv2d(x, W) [+ bias]: Conv at the node that ends the layer (out). */
static void export_conv(Exporter *e, const Node *conv, const Node *out, int bias)
{
	const char *in[3] = {in_name(e, conv, 0), in_name(e, conv, 1), bias >= 0 ? operand(e, bias) : NULL};
	Onnx__NodeProto *n = add_node(e, "Conv", out->name, bias >= 0 ? 3 : 2, in);
	ConvGeom c = ir_conv_geom(conv);
	const Shape *w = &e->g->node[conv->in[1]].shape;
	attr_ints(e, n, "kernel_shape", 2, w->dim + 2);
	attr_ints(e, n, "strides", 2, (int64_t[]){c.sh, c.sw});
	attr_ints(e, n, "pads", 4, (int64_t[]){c.ph, c.pw, c.ph, c.pw});
	attr_ints(e, n, "dilations", 2, (int64_t[]){c.dh, c.dw});
	/* a depthwise convolution's weight is [C, 1, kh, kw]: one group per channel */
	if (conv->op == OP_dwconv2d)
		attr_int(e, n, "group", w->dim[0]);
}

/* conv2d_grad_input(x, W) [+ bias], a conv_transpose2d of weight W [Cin, Cout, kh, kw]:
 * ConvTranspose, the output size given by output_padding. */
static void export_conv_transpose(Exporter *e, const Node *ct, const Node *out, int bias)
{
	const char *in[3] = {in_name(e, ct, 0), in_name(e, ct, 1), bias >= 0 ? operand(e, bias) : NULL};
	Onnx__NodeProto *n = add_node(e, "ConvTranspose", out->name, bias >= 0 ? 3 : 2, in);
	ConvGeom c = ir_conv_geom(ct);
	const Shape *w = &e->g->node[ct->in[1]].shape, *x = &e->g->node[ct->in[0]].shape;
	int64_t s[2] = {c.sh, c.sw}, p[2] = {c.ph, c.pw}, d[2] = {c.dh, c.dw}, op[2];
	for (int a = 0; a < 2; a++)
		op[a] = ct->shape.dim[2 + a] - ((x->dim[2 + a] - 1) * s[a] - 2 * p[a] + d[a] * (w->dim[2 + a] - 1) + 1);
	attr_ints(e, n, "kernel_shape", 2, w->dim + 2);
	attr_ints(e, n, "strides", 2, s);
	attr_ints(e, n, "pads", 4, (int64_t[]){c.ph, c.pw, c.ph, c.pw});
	attr_ints(e, n, "dilations", 2, d);
	if (op[0] || op[1])
		attr_ints(e, n, "output_padding", 2, op);
}

/* matmul(x, W^T) [+ bias] of a parameter W [out, in]: Gemm with transB; a matmul of two matrices
 * neither read transposed: MatMul. */
static void export_dense(Exporter *e, const Node *mm, const Node *out, int bias)
{
	MatmulFlags f = ir_matmul_flags(mm);
	const char *in[3] = {in_name(e, mm, 0), in_name(e, mm, 1), bias >= 0 ? operand(e, bias) : NULL};
	if (!f.ta && !f.tb && bias < 0) {
		add_node(e, "MatMul", out->name, 2, in);
		return;
	}
	if (f.ta || !f.tb || e->g->node[mm->in[1]].op != OP_param) {
		fail(e, "'%s': a matmul reading %s transposed has no ONNX export yet", mm->name, f.ta ? "its first operand"
		     : "a computed second operand");
		return;
	}
	Onnx__NodeProto *n = add_node(e, "Gemm", out->name, bias >= 0 ? 3 : 2, in);
	attr_int(e, n, "transB", 1);
}

static void export_pool(Exporter *e, const Node *x)
{
	PoolGeom p = ir_pool_geom(x);
	const Shape *s = &e->g->node[x->in[0]].shape;
	const char *in[1] = {in_name(e, x, 0)};
	bool max = x->op == OP_max_pool2d;
	if (!max && p.kh == s->dim[2] && p.kw == s->dim[3] && !p.ph && !p.pw) {
		add_node(e, "GlobalAveragePool", x->name, 1, in);
		return;
	}
	Onnx__NodeProto *n = add_node(e, max ? "MaxPool" : "AveragePool", x->name, 1, in);
	attr_ints(e, n, "kernel_shape", 2, (int64_t[]){p.kh, p.kw});
	attr_ints(e, n, "strides", 2, (int64_t[]){p.sh, p.sw});
	attr_ints(e, n, "pads", 4, (int64_t[]){p.ph, p.pw, p.ph, p.pw});
	if (p.ceil_mode)
		attr_int(e, n, "ceil_mode", 1);
	if (!max)
		attr_int(e, n, "count_include_pad", p.count_include_pad);
}

/* reshape that keeps the batch first: Flatten to [batch, rest], else Reshape to [-1, ...]. */
static void export_reshape(Exporter *e, const Node *x)
{
	const Shape *in = &e->g->node[x->in[0]].shape, *out = &x->shape;
	const char *names[2] = {in_name(e, x, 0), NULL};
	if (in->rank < 1 || out->rank < 1 || in->dim[0] != e->g->batch || out->dim[0] != e->g->batch) {
		fail(e, "'%s': a reshape that moves the batch dimension has no ONNX form with a symbolic batch", x->name);
		return;
	}
	if (out->rank == 2 && in->rank >= 2) {
		attr_int(e, add_node(e, "Flatten", x->name, 1, names), "axis", 1);
		return;
	}
	int64_t dim[IR_MAX_DIMS];
	memcpy(dim, out->dim, sizeof dim);
	dim[0] = -1;
	char shape[160];
	snprintf(shape, sizeof shape, "%s.shape", x->name);
	names[1] = const_ints(e, str(e, shape), out->rank, dim);
	add_node(e, "Reshape", x->name, 2, names);
}

/* One node of the op's ONNX name and its attributes. */
static void export_node(Exporter *e, const Node *x)
{
	static const struct {
		OpId op;
		const char *onnx;
	} same[] = {{OP_relu, "Relu"}, {OP_sigmoid, "Sigmoid"}, {OP_tanh, "Tanh"}, {OP_exp, "Exp"}, {OP_log, "Log"},
		    {OP_sqrt, "Sqrt"}, {OP_neg, "Neg"}, {OP_add, "Add"}, {OP_sub, "Sub"}, {OP_mul, "Mul"},
		    {OP_div, "Div"}, {OP_maximum, "Max"}, {OP_minimum, "Min"}, {OP_concat2, "Concat"},
		    {OP_concat3, "Concat"}, {OP_concat4, "Concat"}, {OP_softmax, "Softmax"},
		    {OP_log_softmax, "LogSoftmax"}, {OP_copy, "Identity"}};
	const char *in[IR_MAX_INPUTS];
	for (size_t i = 0; i < sizeof same / sizeof *same; i++)
		if (same[i].op == x->op) {
			for (int k = 0; k < x->nin; k++)
				in[k] = in_name(e, x, k);
			Onnx__NodeProto *n = add_node(e, same[i].onnx, x->name, x->nin, in);
			if (strstr(same[i].onnx, "oftmax") || !strcmp(same[i].onnx, "Concat"))
				attr_int(e, n, "axis", ir_axis(x));
			return;
		}
	in[0] = x->nin ? in_name(e, x, 0) : NULL;
	char extra[160];
	switch (x->op) {
	case OP_leaky_relu:
		attr_float(e, add_node(e, "LeakyRelu", x->name, 1, in), "alpha", ir_leaky_relu_slope(x));
		return;
	case OP_gelu: {
		Onnx__NodeProto *n = add_node(e, "Gelu", x->name, 1, in);
		if (ir_gelu_is_tanh(x))
			attr_string(e, n, "approximate", "tanh");
		return;
	}
	case OP_silu: { /* x * sigmoid(x) */
		snprintf(extra, sizeof extra, "%s.sigmoid", x->name);
		add_node(e, "Sigmoid", extra, 1, in);
		in[1] = e->nodes[e->nnodes - 1]->output[0];
		add_node(e, "Mul", x->name, 2, in);
		return;
	}
	case OP_dropout:
		snprintf(extra, sizeof extra, "%s.ratio", x->name);
		in[1] = const_float(e, str(e, extra), ir_dropout_params(x).p);
		add_node(e, "Dropout", x->name, 2, in);
		return;
	case OP_lrn: {
		LrnParams p = ir_lrn_params(x);
		int64_t size = 2 * p.depth_radius + 1;
		Onnx__NodeProto *n = add_node(e, "LRN", x->name, 1, in);
		attr_int(e, n, "size", size);
		attr_float(e, n, "alpha", p.alpha * (double)size); /* ONNX divides alpha by the window */
		attr_float(e, n, "beta", p.beta);
		attr_float(e, n, "bias", p.bias);
		return;
	}
	case OP_cast:
		attr_int(e, add_node(e, "Cast", x->name, 1, in), "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
		return;
	case OP_max_pool2d:
	case OP_avg_pool2d: export_pool(e, x); return;
	case OP_reshape: export_reshape(e, x); return;
	case OP_transpose: {
		int perm[IR_MAX_DIMS];
		int64_t p[IR_MAX_DIMS];
		int rank = ir_transpose_perm(e->g, x, perm);
		for (int d = 0; d < rank; d++)
			p[d] = perm[d];
		attr_ints(e, add_node(e, "Transpose", x->name, 1, in), "perm", rank, p);
		return;
	}
	case OP_conv2d:
	case OP_dwconv2d: export_conv(e, x, x, -1); return;
	case OP_conv2d_grad_input: export_conv_transpose(e, x, x, -1); return;
	case OP_matmul: export_dense(e, x, x, -1); return;
	case OP_bias_add:
		fail(e, "'%s': a bias_add that ends no conv or dense layer has no ONNX export yet", x->name);
		return;
	default:
		fail(e, "'%s': op %s has no ONNX export yet", x->name, ir_ops[x->op].name);
	}
}

/* ---- layers made of several nodes ---- */

/* Marks the nodes that out depends on up to the layer's inputs in[0..nin) (exclusive) as inside
 * out; each is marked when first reached, so the stack holds a node at most once. */
static void mark_inside(Exporter *e, const int *in, int nin, int out)
{
	int *stack = malloc((size_t)e->g->nnodes * sizeof *stack), top = 0;
	if (!stack)
		abort();
	stack[top++] = out;
	e->inside[out] = true;
	while (top) {
		const Node *n = &e->g->node[stack[--top]];
		for (int k = 0; k < n->nin; k++) {
			int id = n->in[k];
			bool input = false;
			for (int i = 0; i < nin; i++)
				input |= in[i] == id;
			if (!input && !e->inside[id] && !ir_is_leaf(e->g->node[id].op)) {
				e->inside[id] = true;
				stack[top++] = id;
			}
		}
	}
	free(stack);
	e->inside[out] = false; /* out stands for the layer */
}

/* The const input of an `op` node that reads `from`, as that node's other operand; NAN if none. */
static double const_operand(const Graph *g, OpId op, int from)
{
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (n->op == op && n->nin == 2 && n->in[0] == from && g->node[n->in[1]].op == OP_const)
			return ir_const_value(&g->node[n->in[1]]);
	}
	return 0.0 / 0.0;
}

/* Batch norm layers: each made eval_swap entries for its batch mean and variance (in that order);
 * its output is the node named as the layer, the prefix of its running statistics' names. The
 * BatchNormalization node (NULL after an error) goes where the walk reaches that output, *out. */
static Onnx__NodeProto *export_batch_norm(Exporter *e, int k, int *out)
{
	const Graph *g = e->g;
	const Node *mean = &g->node[g->eval_swap[k].node], *var = &g->node[g->eval_swap[k + 1].node];
	const char *rm = g->node[g->eval_swap[k].state].name;
	size_t len = strlen(rm), suffix = strlen(".running_mean");
	char layer[128], w[160], b[160];
	snprintf(layer, sizeof layer, "%.*s", (int)(len > suffix ? len - suffix : 0), rm);
	snprintf(w, sizeof w, "%s.weight", layer);
	snprintf(b, sizeof b, "%s.bias", layer);
	*out = ir_find(g, layer);
	int wi = ir_find(g, w), bi = ir_find(g, b);
	double eps = const_operand(g, OP_add, var->id), keep = const_operand(g, OP_mul, g->eval_swap[k].state);
	if (*out < 0 || g->node[*out].op != OP_bias_add || eps != eps || keep != keep || wi < 0 || bi < 0) {
		fail(e, "'%s': a batch-norm layer not as the frontend builds it", layer);
		return NULL;
	}
	mark_inside(e, &mean->in[0], 1, *out);
	const char *in[5] = {operand(e, mean->in[0]), operand(e, wi), operand(e, bi), operand(e, g->eval_swap[k].state),
			     operand(e, g->eval_swap[k + 1].state)};
	Onnx__NodeProto *n = make_node(e, "BatchNormalization", g->node[*out].name, 5, in);
	attr_float(e, n, "epsilon", eps);
	attr_float(e, n, "momentum", keep); /* ONNX's momentum weighs the running statistic */
	return n;
}

/* The node id when it is of op and read by one node (a piece of a layer); else NULL. */
static const Node *piece(const Exporter *e, int id, OpId op)
{
	const Node *n = &e->g->node[id];
	return n->op == op && e->uses[id] == 1 ? n : NULL;
}

/* The bias_add of a parameter that is the sole reader of y, ending its layer; -1 when none. */
static int bias_after(const Exporter *e, const Node *y)
{
	if (e->uses[y->id] != 1)
		return -1;
	for (int i = y->id + 1; i < e->g->nnodes; i++) {
		const Node *b = &e->g->node[i];
		if (b->op == OP_bias_add && b->in[0] == y->id)
			return e->g->node[b->in[1]].op == OP_param ? i : -1;
	}
	return -1;
}

/* Node id is a parameter of shape [c]. */
static bool is_vector_param(const Graph *g, int id, int64_t c)
{
	const Node *n = &g->node[id];
	return n->op == OP_param && n->shape.rank == 1 && n->shape.dim[0] == c;
}

/* layer_norm: d = x - mean(x), y = d / sqrt(mean(d d) + eps) over the last axis, then times
 * NAME.weight plus NAME.bias, ending at y's or the sum's node: LayerNormalization, Scale and B
 * Constant nodes of ones and zeros when there are no parameters. y is the div node. */
static Onnx__NodeProto *export_layer_norm(Exporter *e, const Node *y, int *out)
{
	const Graph *g = e->g;
	if (y->op != OP_div)
		return NULL;
	const Node *d = &g->node[y->in[0]], *sq = piece(e, y->in[1], OP_sqrt);
	const Node *sum = sq ? piece(e, sq->in[0], OP_add) : NULL;
	const Node *var = sum ? piece(e, sum->in[0], OP_mean) : NULL;
	const Node *dd = var ? piece(e, var->in[0], OP_mul) : NULL;
	if (!dd || d->op != OP_sub || dd->in[0] != d->id || dd->in[1] != d->id || e->uses[d->id] != 3 ||
	    g->node[sum->in[1]].op != OP_const)
		return NULL;
	const Node *mean = piece(e, d->in[1], OP_mean);
	int x = d->in[0], rank = g->node[x].shape.rank;
	unsigned last = 1u << (rank - 1);
	if (!mean || mean->in[0] != x || ir_reduce_axes(mean) != last || ir_reduce_axes(var) != last)
		return NULL;
	/* the affine part: mul by a [C] parameter, then add of one, as the frontend builds it */
	const char *in[3] = {NULL, NULL, NULL};
	*out = y->id;
	int64_t c = g->node[x].shape.dim[rank - 1];
	const Node *mul = NULL, *add = NULL;
	for (int i = y->id + 1; i < g->nnodes && e->uses[y->id] == 1 && !mul; i++)
		if (g->node[i].op == OP_mul && g->node[i].in[0] == y->id && is_vector_param(g, g->node[i].in[1], c))
			mul = &g->node[i];
	for (int i = mul ? mul->id + 1 : g->nnodes; i < g->nnodes && e->uses[mul->id] == 1 && !add; i++)
		if (g->node[i].op == OP_add && g->node[i].in[0] == mul->id && is_vector_param(g, g->node[i].in[1], c))
			add = &g->node[i];
	char name[160];
	if (add) {
		*out = add->id;
		in[1] = operand(e, mul->in[1]), in[2] = operand(e, add->in[1]);
	} else {
		snprintf(name, sizeof name, "%s.scale", g->node[*out].name);
		in[1] = const_node(e, str(e, name), c, 1);
	}
	mark_inside(e, &x, 1, *out);
	in[0] = operand(e, x);
	Onnx__NodeProto *n = make_node(e, "LayerNormalization", g->node[*out].name, add ? 3 : 2, in);
	attr_int(e, n, "axis", -1);
	attr_float(e, n, "epsilon", ir_const_value(&g->node[sum->in[1]]));
	return n;
}

/* A grouped conv2d: unfold(x) as [N, G, 1, Cin/G kh kw, L] times the weight W as
 * [1, G, Cout/G, Cin/G kh kw, 1], summed over the window axis, reshaped to [N, Cout, oh, ow]
 * (r), then maybe a bias_add: Conv with group G. */
static Onnx__NodeProto *export_grouped_conv(Exporter *e, const Node *r, int *out)
{
	const Graph *g = e->g;
	const Node *sum = r->op == OP_reshape ? piece(e, r->in[0], OP_sum) : NULL;
	const Node *mul = sum && ir_reduce_axes(sum) == 8 ? piece(e, sum->in[0], OP_mul) : NULL;
	const Node *cols = mul ? piece(e, mul->in[0], OP_reshape) : NULL, *wv = mul ? piece(e, mul->in[1], OP_reshape) : NULL;
	const Node *unfold = cols ? piece(e, cols->in[0], OP_unfold) : NULL;
	if (!unfold || !wv || g->node[wv->in[0]].op != OP_param || cols->shape.rank != 5)
		return NULL;
	UnfoldGeom u = ir_unfold_geom(g, unfold);
	int64_t want[4] = {u.n, g->node[wv->in[0]].shape.dim[0], u.oh, u.ow};
	Shape conv = shape_make(4, want);
	if (!shape_eq(&conv, &r->shape))
		return NULL;
	int x = unfold->in[0], bias = bias_after(e, r);
	*out = bias >= 0 ? bias : r->id;
	mark_inside(e, &x, 1, *out);
	const char *in[3] = {operand(e, x), operand(e, wv->in[0]), bias >= 0 ? operand(e, g->node[bias].in[1]) : NULL};
	Onnx__NodeProto *n = make_node(e, "Conv", g->node[*out].name, bias >= 0 ? 3 : 2, in);
	attr_int(e, n, "group", cols->shape.dim[1]);
	attr_ints(e, n, "kernel_shape", 2, (int64_t[]){u.kh, u.kw});
	attr_ints(e, n, "strides", 2, (int64_t[]){u.sh, u.sw});
	attr_ints(e, n, "pads", 4, (int64_t[]){u.ph, u.pw, u.ph, u.pw});
	attr_ints(e, n, "dilations", 2, (int64_t[]){u.dh, u.dw});
	return n;
}

/* matmul of activations beyond two matrices, reshaped back (r): a stack [..., m, k] times a matrix
 * (one matmul of the stack's rows) or two stacks (a product broadcast over [B, m, k, n] summed
 * over k): MatMul of the layer's two inputs. */
static Onnx__NodeProto *export_stacked_matmul(Exporter *e, const Node *r, int *out)
{
	const Graph *g = e->g;
	if (r->op != OP_reshape)
		return NULL;
	int in[2] = {-1, -1};
	const Node *mm = piece(e, r->in[0], OP_matmul), *sum = piece(e, r->in[0], OP_sum);
	if (mm) {
		MatmulFlags f = ir_matmul_flags(mm);
		const Node *rows = piece(e, mm->in[0], OP_reshape);
		if (f.ta || f.tb || !rows || g->node[rows->in[0]].shape.rank < 3)
			return NULL;
		in[0] = rows->in[0], in[1] = mm->in[1];
	} else if (sum && ir_reduce_axes(sum) == 4) {
		const Node *mul = piece(e, sum->in[0], OP_mul);
		const Node *a = mul ? piece(e, mul->in[0], OP_reshape) : NULL, *b = mul ? piece(e, mul->in[1], OP_reshape) : NULL;
		if (!a || !b || a->shape.rank != 4 || a->shape.dim[3] != 1 || b->shape.rank != 4 || b->shape.dim[1] != 1 ||
		    g->node[a->in[0]].op == OP_unfold)
			return NULL;
		in[0] = a->in[0], in[1] = b->in[0];
	} else {
		return NULL;
	}
	/* the layer's result is numpy's matmul of its inputs: [..., m, k] by [k, n] or by [..., k, n] */
	const Shape *a = &g->node[in[0]].shape, *b = &g->node[in[1]].shape;
	Shape want = *a;
	bool ok = a->rank >= 3 && (b->rank == 2 || b->rank == a->rank) && a->dim[a->rank - 1] == b->dim[b->rank - 2];
	for (int d = 0; ok && b->rank > 2 && d < a->rank - 2; d++)
		ok = a->dim[d] == b->dim[d];
	want.dim[want.rank - 1] = b->dim[b->rank - 1];
	if (!ok || !shape_eq(&want, &r->shape))
		return NULL;
	*out = r->id;
	mark_inside(e, in, 2, *out);
	const char *names[2] = {operand(e, in[0]), operand(e, in[1])};
	return make_node(e, "MatMul", r->name, 2, names);
}

/* ---- the model ---- */

static Onnx__ValueInfoProto *value_info(Exporter *e, const Node *n, int32_t type)
{
	Onnx__ValueInfoProto *v = alloc(e, sizeof *v);
	onnx__value_info_proto__init(v);
	v->name = str(e, n->name);
	Onnx__TypeProto *t = alloc(e, sizeof *t);
	onnx__type_proto__init(t);
	Onnx__TypeProto__Tensor *tt = alloc(e, sizeof *tt);
	onnx__type_proto__tensor__init(tt);
	tt->has_elem_type = true;
	tt->elem_type = type;
	Onnx__TensorShapeProto *s = alloc(e, sizeof *s);
	onnx__tensor_shape_proto__init(s);
	s->n_dim = (size_t)n->shape.rank;
	s->dim = alloc(e, s->n_dim * sizeof *s->dim);
	for (int d = 0; d < n->shape.rank; d++) {
		Onnx__TensorShapeProto__Dimension *x = alloc(e, sizeof *x);
		onnx__tensor_shape_proto__dimension__init(x);
		if (d == 0) {
			x->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			x->dim_param = str(e, "batch");
		} else {
			x->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			x->dim_value = n->shape.dim[d];
		}
		s->dim[d] = x;
	}
	tt->shape = s;
	t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	t->tensor_type = tt;
	v->type = t;
	return v;
}

static int32_t onnx_type(DType t)
{
	switch (t) {
	case DT_F16: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
	case DT_BF16: return ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
	case DT_F64: return ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
	default: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	}
}

/* A bias_add that ends a conv or dense layer: of a parameter, onto a conv2d or matmul read by
 * nothing else. */
static bool ends_layer(const Exporter *e, const Node *x)
{
	const Graph *g = e->g;
	if (x->op != OP_bias_add || g->node[x->in[1]].op != OP_param)
		return false;
	const Node *y = &g->node[x->in[0]];
	return e->uses[y->id] == 1 && (y->op == OP_conv2d || y->op == OP_dwconv2d || y->op == OP_conv2d_grad_input ||
					(y->op == OP_matmul && ir_matmul_flags(y).tb));
}

/* The nodes of every layer, in graph order. */
static void export_nodes(Exporter *e)
{
	const Graph *g = e->g;
	Onnx__NodeProto **at = calloc((size_t)g->nnodes, sizeof *at); /* batch norms, by output */
	if (!at)
		abort();
	for (int k = 0; k + 1 < g->neval_swaps && !e->failed; k += 2) {
		int out;
		if (!e->needed[g->eval_swap[k].node])
			continue;
		Onnx__NodeProto *n = export_batch_norm(e, k, &out);
		if (n)
			at[out] = n;
	}
	/* the layers of several nodes, found from their last node back */
	for (int i = g->nnodes - 1; i >= 0 && !e->failed; i--) {
		const Node *x = &g->node[i];
		int out = -1;
		Onnx__NodeProto *n = NULL;
		if (!e->needed[i] || e->inside[i] || ir_is_leaf(x->op))
			continue;
		if (!(n = export_layer_norm(e, x, &out)) && !(n = export_grouped_conv(e, x, &out)))
			n = export_stacked_matmul(e, x, &out);
		if (n)
			at[out] = n;
	}
	for (int i = 0; i < g->nnodes; i++)
		if (e->needed[i] && ends_layer(e, &g->node[i]))
			e->inside[g->node[i].in[0]] = true;
	for (int i = 0; i < g->nnodes && !e->failed; i++) {
		const Node *x = &g->node[i];
		if (!e->needed[i] || e->inside[i] || ir_is_leaf(x->op))
			continue;
		if (at[i])
			append_node(e, at[i]);
		else if (ends_layer(e, x) && (g->node[x->in[0]].op == OP_conv2d || g->node[x->in[0]].op == OP_dwconv2d))
			export_conv(e, &g->node[x->in[0]], x, x->in[1]);
		else if (ends_layer(e, x) && g->node[x->in[0]].op == OP_conv2d_grad_input)
			export_conv_transpose(e, &g->node[x->in[0]], x, x->in[1]);
		else if (ends_layer(e, x))
			export_dense(e, &g->node[x->in[0]], x, x->in[1]);
		else
			export_node(e, x);
	}
	free(at);
}

static void mark_needed(Exporter *e, int out)
{
	const Graph *g = e->g;
	e->needed[out] = true;
	for (int i = out; i >= 0; i--)
		if (e->needed[i])
			for (int k = 0; k < g->node[i].nin; k++)
				e->needed[g->node[i].in[k]] = true;
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->node[i].nin; k++)
			e->uses[g->node[i].in[k]]++;
}

static bool write_model(Exporter *e, const char *path)
{
	const Graph *g = e->g;
	Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
	graph.name = (char *)g->name;
	graph.n_node = (size_t)e->nnodes, graph.node = e->nodes;
	graph.n_initializer = (size_t)e->ninits, graph.initializer = e->inits;
	Onnx__ValueInfoProto *in = value_info(e, &g->node[g->image], onnx_type(g->node[g->image].dtype));
	Onnx__ValueInfoProto *out = value_info(e, &g->node[g->output], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	graph.n_input = 1, graph.input = &in;
	graph.n_output = 1, graph.output = &out;
	Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsets = &opset;
	opset.domain = "";
	opset.has_version = true, opset.version = e->opset;
	Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
	m.has_ir_version = true;
	m.ir_version = e->opset >= 19 ? 9 : 8; /* the IR version of ONNX releases with that opset */
	m.n_opset_import = 1, m.opset_import = &opsets;
	m.producer_name = "netc";
	m.graph = &graph;
	size_t size = onnx__model_proto__get_packed_size(&m);
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return fail(e, "%s: out of memory for %zu bytes", path, size);
	onnx__model_proto__pack(&m, buf);
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(buf, 1, size, f) == size;
	if (f && fclose(f) != 0)
		ok = false;
	free(buf);
	return ok || fail(e, "cannot write %s", path);
}

bool onnx_export(const Graph *g, const RtTensors *w, const char *source, const char *path, char *err,
		 size_t errlen)
{
	Exporter e = {.g = g, .w = w, .source = source, .err = err, .errlen = errlen, .opset = ONNX_OPSET_EXPORT};
	e.needed = calloc((size_t)g->nnodes, sizeof *e.needed);
	e.inside = calloc((size_t)g->nnodes, sizeof *e.inside);
	e.made = calloc((size_t)g->nnodes, sizeof *e.made);
	e.uses = calloc((size_t)g->nnodes, sizeof *e.uses);
	if (!e.needed || !e.inside || !e.made || !e.uses)
		abort();
	for (int i = 0; i < g->nnodes; i++)
		if (g->node[i].op == OP_gelu)
			e.opset = 20; /* Gelu is an operator from opset 20 on */
	bool ok = g->output >= 0 && g->image >= 0;
	if (!ok)
		fail(&e, "%s: the model has no output to export", path);
	if (ok) {
		mark_needed(&e, g->output);
		export_nodes(&e);
		ok = !e.failed && write_model(&e, path);
	}
	for (int i = 0; i < e.nallocs; i++)
		free(e.allocs[i]);
	free(e.allocs);
	free(e.nodes);
	free(e.inits);
	free(e.needed);
	free(e.inside);
	free(e.made);
	free(e.uses);
	return ok;
}
