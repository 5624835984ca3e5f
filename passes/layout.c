/* layout.c: the layout pass. With PassOptions.layout LAYOUT_NHWC it rewrites the forward graph so
 * that convolutions run in NHWC with OHWI weights (TVM's ConvertLayout, in small):
 *
 * - conv2d takes layout NHWC; elementwise ops, bias_add over channels, scalar-broadcast binaries,
 *   LRN and max/avg pooling whose inputs are NHWC stay NHWC (the TRAIT_LAYOUT_FREE_* ops of
 *   ir/ops.def and the ops with a layout attribute), so a chain of them has no transform inside;
 * - a transpose to NHWC goes before a conv whose input is NCHW (the image, which the data loaders
 *   write NCHW, or the output of a layer that stays NCHW), and a transpose back to NCHW before the
 *   first reader that needs NCHW order (flatten before dense, batch norm, dropout:
 *   its Philox mask is tied to the public element index, so it stays NCHW and nhwc runs draw the
 *   same masks as nchw ones);
 * - a conv weight that is a param only convolutions read is stored OHWI: the leaf gets the new
 *   shape and Node.perm, which the bundle carries so checkpoints and init keep OIHW; no transform
 *   runs for it, and its gradient and optimizer state come out OHWI by themselves;
 * - where the first target copies NHWC channel runs into its matrix unit (run_channels: half
 *   precision on NVIDIA sm_80+, tf32 on sm_90), a conv whose input channels are no multiple of a
 *   16-byte run (8 halves, 4 floats) reads input and weight with zero channels appended (concat2
 *   with a broadcast zero: the weight's gradient is the concat gradient's slice).
 *
 * It runs before make-eval and autodiff, so the evaluation program and the backward pass follow
 * the forward layout. LAYOUT_NCHW leaves the graph alone; LAYOUT_AUTO picks NHWC when strided
 * convolutions do most of the conv work (choose_layout). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/rebuild.h"
#include "ir/ops.h"
#include "passes/passes.h"

static const double to_nhwc[IR_MAX_ATTRS] = {0, 2, 3, 1}; /* NCHW -> NHWC, OIHW -> OHWI */
static const double to_nchw[IR_MAX_ATTRS] = {0, 3, 1, 2}; /* NHWC -> NCHW */

typedef struct {
	int pad;      /* conv inputs get zero channels up to a multiple of this (run_channels; 0: none) */
	int *map;     /* old id -> the dst id readers read (NHWC for NHWC nodes); kept by the callback */
	bool *nhwc;   /* old id -> whether map[id] is NHWC */
	int *nchw;    /* old id -> its transpose back to NCHW in dst, -1 until made */
	int *tonhwc;  /* old id (NCHW, 4-D) -> its transpose to NHWC in dst, -1 until made */
	bool *ohwi;   /* old id -> a param stored OHWI */
} Layout;

/* Whether a param is read by convolutions as their weight and by nothing else. */
static bool conv_weight_only(const Graph *g, int p)
{
	bool used = false;
	for (int i = p + 1; i < g->nnodes; i++)
		for (int k = 0; k < g->node[i].nin; k++)
			if (g->node[i].in[k] == p) {
				if (g->node[i].op != OP_conv2d || k != 1)
					return false;
				used = true;
			}
	return used;
}

/* Whether node id, whose inputs are already decided, computes in NHWC. */
static bool goes_nhwc(const Graph *g, const Layout *L, int id)
{
	const Node *n = &g->node[id];
	if (n->op == OP_conv2d)
		return true;
	if (ir_ops[n->op].traits & TRAIT_LAYOUT_FREE_UNARY)
		return L->nhwc[n->in[0]];
	if (n->op == OP_bias_add)
		return L->nhwc[n->in[0]] && n->shape.rank == 4 && ir_axis(n) == 1;
	if (n->op == OP_lrn || n->op == OP_max_pool2d || n->op == OP_avg_pool2d)
		return L->nhwc[n->in[0]];
	if (ir_ops[n->op].traits & TRAIT_LAYOUT_FREE_BINARY) {
		const Node *a = &g->node[n->in[0]], *b = &g->node[n->in[1]];
		bool sa = shape_numel(&a->shape) == 1, sb = shape_numel(&b->shape) == 1;
		bool na = L->nhwc[a->id], nb = L->nhwc[b->id];
		return (na && nb) || (na && sb) || (nb && sa);
	}
	return false;
}

/* Names dst node id after node x with a suffix ("conv1.nchw") so IR dumps read well, where the
 * name is free; returns id. */
static int named_after(Graph *dst, int id, int x, const char *suffix)
{
	char name[160];
	snprintf(name, sizeof name, "%.120s.%s", dst->node[x].name, suffix);
	if (ir_find(dst, name) < 0)
		ir_set_name(dst, id, name);
	return id;
}

/* A transpose of dst node x. */
static int transposed(Graph *dst, int x, const double *perm)
{
	return named_after(dst, ir_emit(dst, OP_transpose, &x, perm), x, perm == to_nhwc ? "nhwc" : "nchw");
}

/* The NCHW value of old node x in dst (a transpose back, made once). */
static int as_nchw(Graph *dst, Layout *L, int x)
{
	if (!L->nhwc[x])
		return L->map[x];
	if (L->nchw[x] < 0)
		L->nchw[x] = transposed(dst, L->map[x], to_nchw);
	return L->nchw[x];
}

/* The NHWC value of old node x in dst (itself, the OHWI param, or a transpose made once). */
static int as_nhwc(Graph *dst, Layout *L, int x)
{
	if (L->nhwc[x] || L->ohwi[x])
		return L->map[x];
	if (L->tonhwc[x] < 0)
		L->tonhwc[x] = transposed(dst, L->map[x], to_nhwc);
	return L->tonhwc[x];
}

/* A conv weight param stored OHWI: the same leaf with the stored shape and its perm. */
static int copy_ohwi(Graph *dst, const Graph *src, int id)
{
	const Node *n = &src->node[id];
	Shape s = n->shape;
	for (int d = 0; d < 4; d++)
		s.dim[d] = n->shape.dim[(int)to_nhwc[d]];
	int nid = ir_leaf(dst, n->op, n->name, s, n->dtype, n->attr);
	dst->node[nid].loc = n->loc;
	for (int d = 0; d < 4; d++)
		dst->node[nid].perm[d] = (int8_t)to_nhwc[d];
	return nid;
}

/* x (NHWC activations or an OHWI weight) with zero channels appended up to a multiple of `multiple`. */
static int pad_channels(Graph *dst, int x, int multiple)
{
	Shape z = dst->node[x].shape;
	z.dim[3] = (z.dim[3] + multiple - 1) / multiple * multiple - z.dim[3];
	double shape[IR_MAX_ATTRS] = {0}, axis[IR_MAX_ATTRS] = {3};
	op_shape_attrs(&z, shape);
	int zeros = ir_emit(dst, OP_broadcast_to, (int[]){ir_const(dst, 0.0)}, shape);
	char suffix[16];
	snprintf(suffix, sizeof suffix, "pad%d", multiple % 100);
	return named_after(dst, ir_emit(dst, OP_concat2, (int[]){x, zeros}, axis), x, suffix); /* image.nhwc.pad8 */
}

/* Copies node id reading in[k] for its inputs (the NCHW or NHWC values the caller chose), with
 * the attributes it is given. */
static int copy_with(Graph *dst, const Graph *src, int id, const int *in, const double *attr)
{
	const Node *n = &src->node[id];
	char err[256];
	int nid = ir_add(dst, n->op, in, attr, n->name, err, sizeof err);
	if (nid < 0) {
		fprintf(stderr, "netc: internal error: layout: %s: %s\n", n->name, err);
		abort();
	}
	dst->node[nid].loc = n->loc;
	return nid;
}

static int rewrite(Graph *dst, const Graph *src, int id, const int *map, void *ctx)
{
	Layout *L = ctx;
	const Node *n = &src->node[id];
	int in[IR_MAX_INPUTS], nid;
	double attr[IR_MAX_ATTRS];
	memcpy(attr, n->attr, sizeof attr);
	(void)map;
	if (L->ohwi[id]) {
		nid = copy_ohwi(dst, src, id);
	} else if (ir_is_leaf(n->op)) {
		nid = ir_rebuild_copy(dst, src, id, L->map);
	} else if ((L->nhwc[id] = goes_nhwc(src, L, id))) {
		for (int k = 0; k < n->nin; k++) /* 4-D inputs in NHWC; a bias or a scalar as it is */
			in[k] = src->node[n->in[k]].shape.rank == 4 ? as_nhwc(dst, L, n->in[k]) : L->map[n->in[k]];
		if (n->op == OP_conv2d && L->pad && dst->node[in[0]].shape.dim[3] % L->pad)
			in[0] = pad_channels(dst, in[0], L->pad), in[1] = pad_channels(dst, in[1], L->pad);
		if (n->op == OP_bias_add)
			attr[ir_attr_index(OP_bias_add, "axis")] = 3;
		int layout = ir_attr_index(n->op, "layout"); /* conv, lrn, pooling */
		if (layout >= 0)
			attr[layout] = LAYOUT_NHWC;
		nid = copy_with(dst, src, id, in, attr);
	} else {
		for (int k = 0; k < n->nin; k++)
			in[k] = as_nchw(dst, L, n->in[k]);
		nid = copy_with(dst, src, id, in, attr);
	}
	dst->node[nid].programs = n->programs;
	L->map[id] = nid;
	return nid;
}

/* Whether the graph has a convolution (nothing to do otherwise). */
static bool has_conv(const Graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (g->node[i].op == OP_conv2d)
			return true;
	return false;
}

/* Whether the graph has ops whose NCHW forms would need transposes around them at every use in an
 * NHWC graph: concatenations and grouped or depthwise convolutions (unfold, dwconv2d). */
static bool has_nchw_joins(const Graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		OpId op = g->node[i].op;
		if (op == OP_concat2 || op == OP_concat3 || op == OP_concat4 || op == OP_unfold || op == OP_dwconv2d)
			return true;
	}
	return false;
}

/* The channels of one 16-byte run where the first target copies NHWC channel runs of the graph's
 * precision into its matrix unit (8 halves in fp16 and bf16 on NVIDIA sm_80+, 4 floats in tf32 on
 * sm_90, whose wgmma reads float32 from LDS), else 0: there a convolution whose input channels
 * are no multiple of the run (the RGB image) runs faster on zero channels added to input and
 * weight, whose windows are whole 16-byte runs, than on element gathers. */
static int run_channels(const Graph *g, const PassOptions *o)
{
	PrecisionKind p = g->train.precision;
	if (o->copies_first && (p == PREC_FP16 || p == PREC_BF16))
		return 8;
	return o->f32_copies_first && p == PREC_TF32 ? 4 : 0;
}

/* Measured 2026-11-21 on the host and an H200 (docs/architecture.md, "Layout"): NHWC pays when
 * most convolution FLOPs are in strided convs (nature_cnn: 2x on the CPU, 10% on the H200), whose
 * NCHW window gathers element by element, and loses on stride-1 nets (mnist, cifar10_tf,
 * alexnet_bench), whose NCHW windows load whole rows; the same on both, so one rule serves every
 * target. Half precision on a first target that copies its NHWC channel runs into the matrix unit
 * (run_channels) takes NHWC too, where no concatenation or grouped convolution needs NCHW:
 * on an H100 in bf16 (2026-11-25, docs/performance.md) vgg16's step 52.3 -> 41.7 ms, resnet18
 * 10.3 -> 9.0, resnet50 30.4 -> 29.5, but googlenet 10.8 -> 11.4, mobilenet_v2 18.6 -> 19.5 and
 * unet 0.670 -> 0.694 (the transposes around their concatenations and depthwise convolutions).
 * tf32 stays with the rule: on an H200 (2026-12-02) NHWC put its forward convolutions on wgmma
 * but its gradients stayed on mma.sync without Winograd (their operands run along m or n, which
 * wgmma's tf32 forms cannot read), vgg16's step 45.9 -> 73.0 ms, alexnet_bench 6.05 -> 8.52. */
static int choose_layout(const Graph *g, const PassOptions *o)
{
	if (run_channels(g, o) && g->train.precision != PREC_TF32 && !has_nchw_joins(g))
		return LAYOUT_NHWC;
	double all = 0, strided = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->node[i];
		if (n->op != OP_conv2d)
			continue;
		double f = ir_ops[OP_conv2d].flops(g, n);
		all += f;
		ConvGeom c = ir_conv_geom(n);
		if (c.sh > 1 || c.sw > 1)
			strided += f;
	}
	return strided > 0.5 * all ? LAYOUT_NHWC : LAYOUT_NCHW;
}

bool pass_layout(Graph *g, const PassOptions *o, Diag *d)
{
	(void)d;
	if (!o || !has_conv(g))
		return true;
	int layout = o->layout == LAYOUT_AUTO ? choose_layout(g, o) : o->layout;
	if (layout != LAYOUT_NHWC)
		return true;
	int n = g->nnodes;
	Layout L = {run_channels(g, o), calloc((size_t)n, sizeof(int)), calloc((size_t)n, sizeof(bool)), malloc((size_t)n * sizeof(int)),
		    malloc((size_t)n * sizeof(int)), calloc((size_t)n, sizeof(bool))};
	if (!L.map || !L.nhwc || !L.nchw || !L.tonhwc || !L.ohwi)
		abort();
	for (int i = 0; i < n; i++) {
		L.nchw[i] = L.tonhwc[i] = -1;
		L.ohwi[i] = g->node[i].op == OP_param && g->node[i].shape.rank == 4 && conv_weight_only(g, i);
	}
	ir_rebuild(g, rewrite, &L);
	free(L.map), free(L.nhwc), free(L.nchw), free(L.tonhwc), free(L.ohwi);
	return true;
}
