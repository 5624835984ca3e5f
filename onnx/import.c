/* import.c: an ONNX model to .net source and weights.
 *
 * The importer walks the graph's nodes in their (topological) order and writes one .net statement
 * per node through its row in the operator table (import_ops.c), every tensor input named, so the
 * text reads like a hand-written file and the frontend checks it like one. It keeps each value's
 * shape (dim 0 is the batch) only to decide what the text says (a Reshape's dimensions, a Concat's
 * axis); the frontend infers the shapes that count. Initializers become the weights of the layers
 * that read them, under the layer's name (conv1.weight), in the order and layout netc keeps. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import.h"

#define MAX_MODEL_BYTES ((size_t)2 << 30) /* protobuf's own limit for one message */

/* ---- name tables ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The slot of key: where it is, or the empty slot where it would go. */
static int table_slot(const NameTable *t, const char *key)
{
	int i = (int)(hash_str(key) & (uint64_t)(t->cap - 1));
	while (t->key[i] && strcmp(t->key[i], key))
		i = (i + 1) & (t->cap - 1);
	return i;
}

static int table_get(const NameTable *t, const char *key)
{
	if (!t->cap)
		return -1;
	int i = table_slot(t, key);
	return t->key[i] ? t->val[i] : -1;
}

static void table_put(NameTable *t, const char *key, int val)
{
	if (2 * (t->n + 1) > t->cap) {
		NameTable g = {.cap = t->cap ? 2 * t->cap : 64};
		g.key = calloc((size_t)g.cap, sizeof *g.key);
		g.val = calloc((size_t)g.cap, sizeof *g.val);
		if (!g.key || !g.val)
			abort();
		for (int i = 0; i < t->cap; i++)
			if (t->key[i])
				table_put(&g, t->key[i], t->val[i]);
		free(t->key);
		free(t->val);
		*t = g;
	}
	int i = table_slot(t, key);
	if (!t->key[i])
		t->n++;
	t->key[i] = key;
	t->val[i] = val;
}

static void table_free(NameTable *t)
{
	free(t->key);
	free(t->val);
}

/* ---- messages ---- */

const Onnx__NodeProto *im_current(const Importer *im)
{
	return im->node >= 0 ? im->graph->node[im->node] : NULL;
}

bool im_fail(Importer *im, const char *fmt, ...)
{
	if (im->failed)
		return false;
	im->failed = true;
	const Onnx__NodeProto *n = im_current(im);
	size_t at = (size_t)snprintf(im->err, im->errlen, "%s: ", im->file);
	if (n && at < im->errlen)
		at += (size_t)snprintf(im->err + at, im->errlen - at, "node '%s' (%s, opset %lld): ",
				       onnx_str(n->name)[0] ? n->name : onnx_str(n->n_output ? n->output[0] : ""),
				       onnx_str(n->op_type), (long long)im->opset);
	if (at < im->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(im->err + at, im->errlen - at, fmt, ap);
		va_end(ap);
	}
	return false;
}

const char *im_shape_str(const Value *v, char *buf, size_t len)
{
	if (v->tensor || v->rank == 0)
		return rt_shape_text(v->rank, v->dim, buf, len);
	size_t n = (size_t)snprintf(buf, len, "[batch");
	for (int d = 1; d < v->rank && n < len; d++)
		n += (size_t)snprintf(buf + n, len - n, ", %lld", (long long)v->dim[d]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
	return buf;
}

const char *im_float_str(float x, char *buf, size_t len)
{
	for (int digits = 6; digits <= 9; digits++) {
		snprintf(buf, len, "%.*g", digits, (double)x);
		if (strtof(buf, NULL) == x)
			break;
	}
	return buf;
}

/* ---- values and names ---- */

static int add_value(Importer *im, const char *onnx)
{
	if (im->nv == im->capv) {
		im->capv = im->capv ? 2 * im->capv : 64;
		im->v = realloc(im->v, (size_t)im->capv * sizeof *im->v);
		if (!im->v)
			abort();
	}
	im->v[im->nv] = (Value){.onnx = onnx, .user = -1};
	table_put(&im->by_onnx, onnx, im->nv);
	return im->nv++;
}

static Value *value_of(Importer *im, const char *onnx)
{
	int i = table_get(&im->by_onnx, onnx);
	return i < 0 ? NULL : &im->v[i];
}

static bool reserved(const char *s)
{
	static const char *const words[] = {"network", "train", "input", "const", "loss", "true", "false", "batch", NULL};
	for (int i = 0; words[i]; i++)
		if (!strcmp(s, words[i]))
			return true;
	return false;
}

const char *im_take_name(Importer *im, const char *hint, char *out)
{
	char base[IM_NAME - 8];
	size_t n = 0;
	for (const char *p = hint; *p && n + 1 < sizeof base; p++) {
		bool word = isalnum((unsigned char)*p) || *p == '_';
		if (word)
			base[n++] = *p;
		else if (n && base[n - 1] != '_')
			base[n++] = '_';
	}
	while (n && base[n - 1] == '_')
		n--;
	base[n] = 0;
	if (!n || isdigit((unsigned char)base[0])) {
		n = n + 3 > sizeof base ? sizeof base - 3 : n;
		memmove(base + 2, base, n);
		base[0] = 'v', base[1] = '_', base[n + 2] = 0;
	}
	snprintf(out, IM_NAME, "%s", base);
	/* a taken name gets _2, _3, ...: the base cut so that the number always fits (else a long
	 * name would come out the same at every k) */
	for (int k = 2; reserved(out) || table_get(&im->net_names, out) >= 0; k++)
		snprintf(out, IM_NAME, "%.*s_%d", (int)IM_NAME - 13, base, k);
	char *copy = strdup(out);
	char **pool = realloc(im->pool, (size_t)(im->npool + 1) * sizeof *pool);
	if (!copy || !pool)
		abort();
	im->pool = pool;
	im->pool[im->npool++] = copy;
	table_put(&im->net_names, copy, 1);
	return out;
}

/* PyTorch names a node after its module's path and its operator: "/layer1/layer1.0/conv1/Conv"
 * is module layer1.0.conv1 (the last component with a dot is the path so far, the ones after it
 * go on it), whose parameters PyTorch names layer1.0.conv1.weight. */
static const char *node_hint(const Onnx__NodeProto *n, char *buf, size_t len)
{
	const char *name = onnx_str(n->name), *op = onnx_str(n->op_type);
	if (!*name)
		return n->n_output ? onnx_str(n->output[0]) : "v";
	const char *last = strrchr(name, '/');
	if (name[0] != '/' || !last || last == name || strncmp(last + 1, op, strlen(op)))
		return name;
	const char *from = name + 1; /* the start of the path: after the last component with a dot */
	for (const char *c = name + 1; c < last; c = strchr(c, '/') + 1) {
		const char *end = strchr(c, '/');
		if (memchr(c, '.', (size_t)(end - c)))
			from = c;
	}
	size_t k = (size_t)(last - from) < len ? (size_t)(last - from) : len - 1;
	memcpy(buf, from, k);
	buf[k] = 0;
	for (char *p = buf; *p; p++)
		if (*p == '/')
			*p = '.';
	return buf;
}

const char *im_layer_hint(Importer *im, const Onnx__TensorProto *weight, char *buf, size_t len)
{
	const char *w = weight ? onnx_str(weight->name) : "";
	size_t k = strlen(w);
	if (k > 7 && !strcmp(w + k - 7, ".weight")) {
		snprintf(buf, len, "%.*s", (int)(k - 7), w);
		return buf;
	}
	const char *hint = node_hint(im_current(im), buf, len);
	if (hint != buf) /* callers read buf */
		snprintf(buf, len, "%s", hint);
	return buf;
}

/* ---- the current node's inputs and attributes ---- */

int im_ninputs(const Importer *im)
{
	const Onnx__NodeProto *n = im_current(im);
	int k = (int)n->n_input;
	while (k > 0 && !onnx_str(n->input[k - 1])[0])
		k--;
	return k;
}

Value *im_in(Importer *im, int i)
{
	const Onnx__NodeProto *n = im_current(im);
	if (i >= im_ninputs(im) || !onnx_str(n->input[i])[0]) {
		im_fail(im, "input %d is missing", i + 1);
		return NULL;
	}
	return value_of(im, n->input[i]); /* the driver checked that every input is defined */
}

Value *im_act(Importer *im, int i)
{
	Value *v = im_in(im, i);
	if (!v)
		return NULL;
	if (v->tensor) {
		im_fail(im, "input '%s' is a constant; netc computes this operator on computed values only (constants "
			"are the weights of conv, dense and batch-norm layers)", v->onnx);
		return NULL;
	}
	if (v->padded && strcmp(onnx_str(im_current(im)->op_type), "Conv")) {
		im_fail(im, "input '%s' comes from a Pad; netc folds a Pad only into the Conv that reads it", v->onnx);
		return NULL;
	}
	return v;
}

const Onnx__TensorProto *im_const(Importer *im, int i, bool optional)
{
	if (optional && i >= im_ninputs(im))
		return NULL;
	const Onnx__NodeProto *n = im_current(im);
	if (optional && !onnx_str(n->input[i])[0])
		return NULL;
	Value *v = im_in(im, i);
	if (v && !v->tensor)
		im_fail(im, "input %d ('%s') is computed; netc needs a constant there (an initializer or a Constant node)",
			i + 1, v->onnx);
	return v && v->tensor ? v->tensor : NULL;
}

static const Onnx__AttributeProto *find_attr(const Onnx__NodeProto *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (!strcmp(onnx_str(n->attribute[i]->name), name))
			return n->attribute[i];
	return NULL;
}

static bool attr_type(Importer *im, const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType want,
		      const char *what)
{
	if (a->type == want)
		return true;
	return im_fail(im, "attribute '%s' is not %s", onnx_str(a->name), what);
}

bool im_attr_int(Importer *im, const char *name, int64_t def, int64_t *v)
{
	const Onnx__AttributeProto *a = find_attr(im_current(im), name);
	*v = def;
	if (!a)
		return true;
	if (!attr_type(im, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, "an integer"))
		return false;
	*v = a->i;
	return true;
}

bool im_attr_float(Importer *im, const char *name, float def, float *v)
{
	const Onnx__AttributeProto *a = find_attr(im_current(im), name);
	*v = def;
	if (!a)
		return true;
	if (!attr_type(im, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "a float"))
		return false;
	*v = a->f;
	if (!(*v == *v) || *v > 3.4e38f || *v < -3.4e38f)
		return im_fail(im, "attribute '%s' is not a finite number", name);
	return true;
}

int im_attr_ints(Importer *im, const char *name, int64_t *v, int max)
{
	const Onnx__AttributeProto *a = find_attr(im_current(im), name);
	if (!a)
		return 0;
	if (!attr_type(im, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, "a list of integers"))
		return -1;
	if (a->n_ints > (size_t)max)
		return im_fail(im, "attribute '%s' has %zu values; netc reads at most %d", name, a->n_ints, max), -1;
	if (a->n_ints) /* an empty list may have no array */
		memcpy(v, a->ints, a->n_ints * sizeof *v);
	return (int)a->n_ints;
}

bool im_attr_string(Importer *im, const char *name, const char *def, char *buf, size_t len)
{
	const Onnx__AttributeProto *a = find_attr(im_current(im), name);
	snprintf(buf, len, "%s", def);
	if (!a)
		return true;
	if (!attr_type(im, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, "a string"))
		return false;
	if (a->s.len >= len || (a->s.len && memchr(a->s.data, 0, a->s.len)))
		return im_fail(im, "attribute '%s' is not a value netc knows", name);
	if (a->s.len)
		memcpy(buf, a->s.data, a->s.len);
	buf[a->s.len] = 0;
	return true;
}

bool im_const_numel(Importer *im, const Onnx__TensorProto *t, int64_t *n)
{
	char why[256];
	if (!onnx_tensor_numel(t, n, why, sizeof why))
		return im_fail(im, "constant '%s' %s", onnx_str(t->name), why);
	return true;
}

bool im_const_ints(Importer *im, const Onnx__TensorProto *t, int64_t *v, int64_t n)
{
	char why[256];
	if (!onnx_tensor_ints(t, v, n, why, sizeof why))
		return im_fail(im, "constant '%s' %s", onnx_str(t->name), why);
	return true;
}

/* ---- outputs, statements and weights ---- */

/* Value v takes its uses from the table count_uses made. */
static void set_uses(const Importer *im, Value *v)
{
	const Onnx__GraphProto *g = im->graph;
	int at = table_get(&im->uses, v->onnx);
	v->uses = at < 0 ? 0 : im->use_count[at];
	v->user = at < 0 ? -1 : im->last_user[at];
	for (size_t i = 0; i < g->n_output; i++)
		if (!strcmp(onnx_str(g->output[i]->name), v->onnx))
			v->uses++, v->user = -1;
}

static Value *define(Importer *im, const char *onnx)
{
	if (value_of(im, onnx)) {
		im_fail(im, "its output '%s' is defined twice in the graph", onnx);
		return NULL;
	}
	int k = add_value(im, onnx);
	Value *v = &im->v[k];
	set_uses(im, v);
	return v;
}

Value *im_out(Importer *im, const char *hint, int rank, const int64_t *dim)
{
	const Onnx__NodeProto *n = im_current(im);
	int64_t count = 1;
	for (int d = 0; d < rank; d++)
		if (dim[d] <= 0 || __builtin_mul_overflow(count, dim[d], &count) || count > ONNX_MAX_NUMEL) {
			char buf[160];
			im_fail(im, "its result would be %s, %s", rt_shape_text(rank, dim, buf, sizeof buf),
				dim[d] <= 0 ? "which has an empty dimension" : "more than 2^40 elements");
			return NULL;
		}
	Value *v = define(im, n->output[0]);
	if (!v)
		return NULL;
	char buf[64];
	im_take_name(im, hint ? hint : node_hint(n, buf, sizeof buf), v->net);
	v->rank = rank;
	memcpy(v->dim, dim, (size_t)rank * sizeof *dim);
	return v;
}

bool im_alias(Importer *im, const Value *src)
{
	Value copy = *src; /* src may move when define grows the table */
	Value *v = define(im, im_current(im)->output[0]);
	if (!v)
		return false;
	copy.onnx = v->onnx, copy.uses = v->uses, copy.user = v->user;
	*v = copy;
	return true;
}

void im_stmt(Importer *im, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputc('\t', im->body);
	vfprintf(im->body, fmt, ap);
	va_end(ap);
	/* the node's name where the value's had to be made from it (the name has other characters
	 * than a .net name's, which include no line end) */
	const Onnx__NodeProto *n = im_current(im);
	const char *name = n ? onnx_str(n->name) : "";
	if (name[0] && name[strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")])
		fprintf(im->body, "  # %s", name);
	fputc('\n', im->body);
}

RtTensor *im_weight(Importer *im, const char *layer, const char *suffix, const Onnx__TensorProto *t, int rank,
		    const int64_t *dim)
{
	int64_t n, want = 1;
	char why[256], name[160], a[96], b[96];
	if (!im_const_numel(im, t, &n))
		return NULL;
	for (int d = 0; d < rank; d++)
		want *= dim[d];
	if (n != want) {
		im_fail(im, "'%s' has dims %s; netc needs %s", onnx_str(t->name),
			rt_shape_text((int)t->n_dims, t->dims, a, sizeof a), rt_shape_text(rank, dim, b, sizeof b));
		return NULL;
	}
	snprintf(name, sizeof name, "%s.%s", layer, suffix);
	RtTensor *w = rt_tensors_add(im->weights, name, rank, dim);
	if (!w) {
		im_fail(im, "out of memory for '%s'", onnx_str(t->name));
		return NULL;
	}
	if (!onnx_tensor_floats(t, w->data, n, why, sizeof why)) {
		im_fail(im, "'%s' %s", onnx_str(t->name), why);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++)
		if (!(w->data[i] - w->data[i] == 0)) {
			im_fail(im, "'%s' holds NaN or Inf at element %lld", onnx_str(t->name), (long long)i);
			return NULL;
		}
	return w;
}

int im_sole_user(const Importer *im, const Value *v)
{
	return v->uses == 1 ? v->user : -1;
}

bool im_fold(Importer *im, int i)
{
	im->folded[i] = true;
	return true;
}

/* ---- the model ---- */

static bool check_opset(Importer *im, const Onnx__ModelProto *m)
{
	im->opset = -1;
	for (size_t i = 0; i < m->n_opset_import; i++) {
		const char *d = onnx_str(m->opset_import[i]->domain);
		if (!*d || !strcmp(d, "ai.onnx"))
			im->opset = m->opset_import[i]->version;
	}
	if (im->opset < 0)
		return im_fail(im, "the model imports no default-domain operator set (opset_import)");
	if (im->opset < ONNX_OPSET_MIN || im->opset > ONNX_OPSET_MAX)
		return im_fail(im, "the model is of opset %lld; netc reads opsets %d to %d (onnx.version_converter "
			       "converts a model)", (long long)im->opset, ONNX_OPSET_MIN, ONNX_OPSET_MAX);
	return true;
}

static DType input_dtype(int32_t elem)
{
	switch (elem) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return DT_F32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return DT_F16;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return DT_BF16;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return DT_F64;
	default: return DT_COUNT;
	}
}

/* The one graph input that is not an initializer: the images, [batch, ...] with static sizes
 * after the batch. */
static const Onnx__ValueInfoProto *data_input(Importer *im)
{
	const Onnx__GraphProto *g = im->graph;
	const Onnx__ValueInfoProto *found = NULL;
	for (size_t i = 0; i < g->n_input; i++) {
		Value *v = value_of(im, onnx_str(g->input[i]->name));
		if (v && v->tensor)
			continue; /* older exporters list the initializers as inputs too */
		if (found) {
			im_fail(im, "the graph has inputs '%s' and '%s'; netc models take one (the images)",
				onnx_str(found->name), onnx_str(g->input[i]->name));
			return NULL;
		}
		found = g->input[i];
	}
	if (!found)
		im_fail(im, "the graph has no input besides its initializers");
	return found;
}

static bool define_input(Importer *im, const Onnx__ValueInfoProto *in, DType *dtype, int *rank, int64_t *dim)
{
	const char *name = onnx_str(in->name);
	const Onnx__TypeProto *t = in->type;
	if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
	    (*dtype = input_dtype(t->tensor_type->elem_type)) == DT_COUNT)
		return im_fail(im, "input '%s' is not a tensor of float, float16, bfloat16 or double", name);
	const Onnx__TensorShapeProto *s = t->tensor_type->shape;
	if (!s || s->n_dim < 1 || s->n_dim > IR_MAX_DIMS)
		return im_fail(im, "input '%s' has %s; netc needs 1 to %d dimensions, the batch first", name,
			       s ? "another rank" : "no shape", IR_MAX_DIMS);
	*rank = (int)s->n_dim;
	int64_t count = 1;
	for (int d = 0; d < *rank; d++) {
		const Onnx__TensorShapeProto__Dimension *x = s->dim[d];
		bool known = x->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && x->dim_value > 0;
		if (d == 0) {
			dim[0] = known ? x->dim_value : 1; /* a symbolic batch: 1 stands for it */
			continue;
		}
		if (!known)
			return im_fail(im, "input '%s' has no static size at axis %d; netc's shapes are static but for the "
				       "batch (axis 0)", name, d);
		dim[d] = x->dim_value;
		if (__builtin_mul_overflow(count, dim[d], &count) || count > ONNX_MAX_NUMEL)
			return im_fail(im, "input '%s' has more than 2^40 elements per example", name);
	}
	int k = add_value(im, name);
	Value *v = &im->v[k];
	im_take_name(im, name, v->net);
	v->rank = *rank;
	memcpy(v->dim, dim, (size_t)*rank * sizeof *dim);
	return true;
}

static bool define_initializers(Importer *im)
{
	const Onnx__GraphProto *g = im->graph;
	if (g->n_sparse_initializer)
		return im_fail(im, "the graph has sparse initializers, which netc does not read");
	for (size_t i = 0; i < g->n_initializer; i++) {
		const char *name = onnx_str(g->initializer[i]->name);
		if (!*name || value_of(im, name))
			return im_fail(im, "initializer '%s' is %s", name, *name ? "defined twice" : "nameless");
		int k = add_value(im, name);
		im->v[k].tensor = g->initializer[i];
	}
	return true;
}

/* Uses of every name, before any node is imported: folding needs to know a value's readers. */
static void count_uses(Importer *im)
{
	const Onnx__GraphProto *g = im->graph;
	int cap = 0;
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_input; k++) {
			const char *name = onnx_str(g->node[i]->input[k]);
			if (!*name)
				continue;
			int at = table_get(&im->uses, name);
			if (at < 0) {
				at = im->uses.n;
				if (at == cap) {
					cap = cap ? 2 * cap : 64;
					im->use_count = realloc(im->use_count, (size_t)cap * sizeof *im->use_count);
					im->last_user = realloc(im->last_user, (size_t)cap * sizeof *im->last_user);
					if (!im->use_count || !im->last_user)
						abort();
				}
				im->use_count[at] = 0;
				table_put(&im->uses, name, at);
			}
			im->use_count[at]++;
			im->last_user[at] = (int)i;
		}
}

/* The attributes of node n that row does not read: an error, since one netc ignored could change
 * what the network computes. */
static bool check_attrs(Importer *im, const Onnx__NodeProto *n, const OpRow *row)
{
	for (size_t i = 0; i < n->n_attribute; i++) {
		const char *a = onnx_str(n->attribute[i]->name);
		size_t k = strlen(a);
		const char *p = row->attrs;
		bool known = false;
		while (*p && !known) {
			size_t len = strcspn(p, ",");
			known = len == k && !strncmp(p, a, k);
			p += len + (p[len] == ',');
		}
		if (!known)
			return im_fail(im, "attribute '%s' is not one netc reads for %s (it reads: %s)", a, row->op,
				       *row->attrs ? row->attrs : "none");
	}
	return true;
}

static bool import_node(Importer *im, int i)
{
	const Onnx__NodeProto *n = im->graph->node[i];
	im->node = i;
	if (!n->n_output || !onnx_str(n->output[0])[0])
		return im_fail(im, "the node has no output");
	for (size_t k = 0; k < n->n_input; k++) {
		const char *name = onnx_str(n->input[k]);
		if (*name && !value_of(im, name))
			return im_fail(im, "input '%s' is defined by no node, graph input or initializer before it", name);
	}
	const char *domain = onnx_str(n->domain);
	const OpRow *row = *domain && strcmp(domain, "ai.onnx") ? NULL : im_op_lookup(onnx_str(n->op_type));
	if (!row)
		return im_fail(im, "netc has no mapping for operator '%s%s%s'; it imports %s", domain, *domain ? "." : "",
			       onnx_str(n->op_type), onnx_supported_ops());
	for (size_t k = (size_t)row->outputs; k < n->n_output; k++) {
		int at = table_get(&im->uses, onnx_str(n->output[k]));
		bool graph_output = false;
		for (size_t o = 0; o < im->graph->n_output; o++)
			graph_output |= !strcmp(onnx_str(im->graph->output[o]->name), onnx_str(n->output[k]));
		if ((at >= 0 && im->use_count[at] > 0) || graph_output)
			return im_fail(im, "its output %zu ('%s') is used; netc computes only the first %d", k + 1,
				       n->output[k], row->outputs);
	}
	if (!check_attrs(im, n, row))
		return false;
	if (im->folded[i]) {
		/* an earlier node took this one in: its output is that node's (the driver's caller
		 * aliased it) */
		return true;
	}
	if (!row->fn(im, n))
		return false;
	if (!value_of(im, n->output[0]))
		return im_fail(im, "internal error: the importer defined no output");
	return true;
}

/* The folded node i's output 0 is the value of the node that took it in (its first input is that
 * node's output, by how folding is done). */
static bool alias_folded(Importer *im, int i)
{
	const Onnx__NodeProto *n = im->graph->node[i];
	im->node = i;
	for (size_t k = 0; k < n->n_input; k++) {
		Value *v = value_of(im, onnx_str(n->input[k]));
		if (v && !v->tensor)
			return im_alias(im, v);
	}
	return im_fail(im, "internal error: a folded node reads no computed value");
}

/* ---- the text around the statements ---- */

static const char *dataset_for(int rank, const int64_t *dim)
{
	if (rank == 4 && dim[1] == 1 && dim[2] == 28 && dim[3] == 28)
		return "mnist";
	if (rank == 4 && dim[1] == 3 && dim[2] <= 32 && dim[3] <= 32)
		return "cifar10";
	return "synthetic";
}

static const char *base_name(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	const char *b = slash ? slash + 1 : path;
	size_t k = strcspn(b, ".");
	snprintf(buf, len, "%.*s", (int)(k < len ? k : len - 1), b);
	return buf;
}

/* The loss: nll_loss of log-probabilities (LogSoftmax), cross_entropy of the logits a Softmax
 * reads, else cross_entropy of the output as logits. */
static bool write_loss(Importer *im, FILE *f, const Value *out, const char *label, const char *out_op,
		       const Value *softmax_in)
{
	char buf[96];
	im->node = -1;
	if (out->tensor || out->rank != 2)
		return im_fail(im, "the graph output '%s' is %s; netc trains classifiers, whose output is [batch, classes]",
			       out->onnx, out->tensor ? "a constant" : im_shape_str(out, buf, sizeof buf));
	if (out_op && !strcmp(out_op, "LogSoftmax"))
		fprintf(f, "\tloss nll_loss(%s, %s)\n", out->net, label);
	else if (softmax_in)
		fprintf(f, "\tloss cross_entropy(%s, %s)  # the logits the output's Softmax reads\n", softmax_in->net, label);
	else
		fprintf(f, "\tloss cross_entropy(%s, %s)\n", out->net, label);
	return true;
}

/* The node that defines ONNX name v, or NULL for graph inputs and initializers. */
static const Onnx__NodeProto *producer(const Onnx__GraphProto *g, const char *v)
{
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_output; k++)
			if (!strcmp(onnx_str(g->node[i]->output[k]), v))
				return g->node[i];
	return NULL;
}

static bool assemble(Importer *im, const Onnx__ModelProto *m, const Value *in, DType dtype, OnnxImport *out)
{
	const Onnx__GraphProto *g = im->graph;
	im->node = -1;
	if (g->n_output != 1)
		return im_fail(im, "the graph has %zu outputs; netc trains a model of one output (the class scores)",
			       g->n_output);
	const Value *o = value_of(im, onnx_str(g->output[0]->name));
	if (!o)
		return im_fail(im, "the graph output '%s' is defined by no node", onnx_str(g->output[0]->name));
	const Onnx__NodeProto *p = producer(g, o->onnx);
	const Value *softmax_in = NULL;
	if (p && !strcmp(onnx_str(p->op_type), "Softmax") && p->n_input)
		softmax_in = value_of(im, onnx_str(p->input[0]));
	char label[IM_NAME], name[64], dims[160];
	im_take_name(im, "label", label);
	FILE *f = open_memstream(&out->text, &out->len);
	if (!f)
		abort();
	fprintf(f, "# imported from %s by netc import (ONNX IR version %lld, opset %lld%s%s%s%s)\n", im->file,
		(long long)m->ir_version, (long long)im->opset, onnx_str(m->producer_name)[0] ? ", made by " : "",
		onnx_str(m->producer_name), onnx_str(m->producer_version)[0] ? " " : "", onnx_str(m->producer_version));
	fprintf(f, "network %s {\n", im_take_name(im, base_name(im->file, name, sizeof name), (char[IM_NAME]){0}));
	rt_shape_text(in->rank - 1, in->dim + 1, dims, sizeof dims);
	fprintf(f, "\tinput %s: %s[batch%s%s\n", in->net, dtype_name(dtype), in->rank > 1 ? ", " : "]",
		in->rank > 1 ? dims + 1 : "");
	fprintf(f, "\tinput %s: i32[batch]\n", label);
	fwrite(im->body_text, 1, im->body_len, f);
	bool ok = write_loss(im, f, o, label, p ? onnx_str(p->op_type) : NULL, softmax_in);
	fprintf(f, "}\n\ntrain {\n\t# defaults: set the optimizer, batch and data of your run\n");
	fprintf(f, "\toptimizer = sgd(lr=0.01)\n\tbatch = %lld\n\tepochs = 1\n\tdata = %s\n}\n",
		(long long)(in->dim[0] > 1 ? in->dim[0] : 64), dataset_for(in->rank, in->dim));
	fclose(f);
	return ok;
}

static void importer_free(Importer *im)
{
	table_free(&im->by_onnx);
	table_free(&im->net_names);
	table_free(&im->uses);
	free(im->use_count);
	free(im->last_user);
	for (int i = 0; i < im->npool; i++)
		free(im->pool[i]);
	free(im->pool);
	for (int i = 0; i < im->nowned; i++)
		free(im->owned[i]);
	free(im->owned);
	free(im->v);
	free(im->folded);
	if (im->body)
		fclose(im->body);
	free(im->body_text);
}

static bool import_graph(Importer *im, const Onnx__ModelProto *m, OnnxImport *out)
{
	if (!m->graph)
		return im_fail(im, "the model has no graph");
	im->graph = m->graph;
	if (!check_opset(im, m) || !define_initializers(im))
		return false;
	const Onnx__ValueInfoProto *input = data_input(im);
	DType dtype;
	int rank;
	int64_t dim[IR_MAX_DIMS];
	if (!input || !define_input(im, input, &dtype, &rank, dim))
		return false;
	count_uses(im);
	for (int k = 0; k < im->nv; k++)
		set_uses(im, &im->v[k]);
	im->folded = calloc(im->graph->n_node + 1, sizeof *im->folded);
	im->body = open_memstream(&im->body_text, &im->body_len);
	if (!im->folded || !im->body)
		abort();
	bool ok = true;
	for (size_t i = 0; ok && i < im->graph->n_node; i++) {
		ok = import_node(im, (int)i);
		if (ok && im->folded[i])
			ok = alias_folded(im, (int)i);
	}
	fclose(im->body);
	im->body = NULL;
	const Value *in = value_of(im, onnx_str(input->name));
	return ok && assemble(im, m, in, dtype, out);
}

bool onnx_import(const char *name, const uint8_t *data, size_t size, OnnxImport *out, char *err, size_t errlen)
{
	*out = (OnnxImport){0};
	Importer im = {.file = name, .err = err, .errlen = errlen, .node = -1};
	if (size > MAX_MODEL_BYTES) {
		im_fail(&im, "the file is larger than 2 GiB, protobuf's limit; models that large keep their weights in "
			"external data files, which netc does not read");
		return false;
	}
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
	if (!m) {
		im_fail(&im, "not an ONNX model (the protobuf does not parse as a ModelProto: truncated, or another kind "
			"of file)");
		return false;
	}
	im.weights = &out->weights;
	bool ok = import_graph(&im, m, out);
	importer_free(&im);
	onnx__model_proto__free_unpacked(m, NULL);
	if (!ok)
		onnx_import_free(out);
	return ok;
}

bool onnx_import_file(const char *path, OnnxImport *out, char *err, size_t errlen)
{
	*out = (OnnxImport){0};
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		return false;
	}
	uint8_t *data = NULL;
	size_t size = 0, cap = 0;
	for (;;) {
		if (size == cap) {
			cap = cap ? 2 * cap : 1 << 20;
			uint8_t *grown = cap <= MAX_MODEL_BYTES + (1 << 20) ? realloc(data, cap) : NULL;
			if (!grown)
				break;
			data = grown;
		}
		size_t k = fread(data + size, 1, cap - size, f);
		size += k;
		if (k == 0)
			break;
	}
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		free(data);
		snprintf(err, errlen, "%s: cannot read it", path);
		return false;
	}
	bool ok = onnx_import(path, data ? data : (const uint8_t *)"", size, out, err, errlen);
	free(data);
	return ok;
}

void onnx_import_free(OnnxImport *m)
{
	free(m->text);
	rt_tensors_free(&m->weights);
	*m = (OnnxImport){0};
}
